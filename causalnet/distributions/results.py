"""Query results: distribution objects.

:class:`DiscreteDistribution` (``.probs`` batch-first, ``.states``, ``[state]``,
``.map()``), :class:`Gaussian` (``.mean``, ``.cov``),
:class:`EmpiricalDistribution` (weighted samples with standard errors) and
:class:`GaussianMixture`. Every result says which engine produced it in
``.method``; counterfactual results also name the SCM in ``.scm``. (The Cauchy
result lives beside these in :mod:`.cauchy`.)

Every result prints its query (``.query``, e.g. ``P(Wet | do(Sprinkler=on), Rain=yes)``,
set by the front door, :func:`causalnet.inference.dispatch.answer`, from the
validated request; ``P(Wet)`` when none was given); a joint or batched result
prints as a table, rows = evidence rows, columns = states; and ``to_pandas()``
gives the same table as a pandas object (pandas is imported only then) whose
``.attrs["query"]`` holds the question (a Series is also named by it). A result never holds NaN: an engine that would produce one gets a
:class:`~causalnet.errors.NumericalError` from the constructor instead.

>>> d = DiscreteDistribution(("Wet",), [[0.3, 0.7], [0.9, 0.1]], (("dry", "wet"),), batched=True,
...                          query="P(Wet | Rain)")
>>> print(d)
P(Wet | Rain)  method='exact'
   dry  wet
0  0.3  0.7
1  0.9  0.1
>>> d.to_pandas().shape
(2, 2)

Symbols: ``n`` batch (present only when the evidence was batched), ``K``
states, ``d`` variables.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..arguments import as_generator, check_int
from ..errors import EvidenceError, ModelError, NumericalError
from ..limits import check_bytes
from .checks import SUM_TOL, as_points, check_moments, check_probs, float_array, short_repr

__all__ = ["DiscreteDistribution", "Gaussian", "EmpiricalDistribution", "GaussianMixture", "table_text", "result_label"]


# -- shared by every result: its label, the finite check, the table text ---------------------

MAX_ROWS = 10
"""Rows shown when a batched result prints (half from the top, half from the bottom)."""
MAX_COLS = 12
"""Columns shown when a result prints."""


def result_label(query: str | None, variables: tuple) -> str:
    """What a result prints as its question: `query`, or ``P(v1, v2, ...)`` when the engine gave none."""
    return query if query else f"P({', '.join(map(str, variables))})"


def _finite(what: str, variables: tuple, **arrays) -> None:
    """Refuse NaN/inf in a result: the engine that built it went wrong (issue 10)."""
    for name, a in arrays.items():
        if a is not None and a.dtype.kind in "fc" and not np.isfinite(a).all():
            raise NumericalError(f"{what} over {list(variables)}: {name} holds NaN or inf "
                                 f"({int(np.sum(~np.isfinite(a)))} of {a.size} entries)")


def _fmt(x) -> str:
    return f"{x:.4g}" if isinstance(x, (float, np.floating)) else str(x)


def _elide(items: list, limit: int) -> list:
    """The first and last of `items` around a ``...`` when there are more than `limit`."""
    if len(items) <= limit:
        return items
    half = limit // 2
    return items[:half] + [None] + items[-half:]


def table_text(header: str, columns: Sequence, rows: Sequence, cells: np.ndarray) -> str:
    """A plain-text table: a header line, then one line per row (long tables elided).

    Parameters
    ----------
    header : str
    columns : sequence of labels, one per column of `cells`
    rows : sequence of labels, one per row of `cells`
    cells : array of shape (len(rows), len(columns))
    """
    cols = _elide(list(range(len(columns))), MAX_COLS)
    keep = _elide(list(range(len(rows))), MAX_ROWS)
    grid = [[""] + ["..." if j is None else str(columns[j]) for j in cols]]
    for i in keep:
        if i is None:
            grid.append(["..."] + [""] * len(cols))
        else:
            grid.append([str(rows[i])] + ["..." if j is None else _fmt(cells[i, j]) for j in cols])
    widths = [max(len(r[k]) for r in grid) for k in range(len(grid[0]))]
    lines = ["  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in grid]
    return "\n".join([header, *lines])


class DiscreteDistribution:
    """A (joint) distribution over discrete variables.

    Attributes
    ----------
    variables : tuple
        The target nodes, in order.
    probs : ndarray of shape (*cards) or (n, *cards)
        Probabilities, the batch axis first when the evidence was batched.
    states : tuple
        State names: a tuple of names for one variable, a tuple of such
        tuples for a joint.
    batched : bool
    method : str
        The engine that produced the result.
    std_err : ndarray or None
        Standard error of each probability (sampling engines only).
    scm : str or None
        The SCM a counterfactual was computed under.
    log_evidence : float or ndarray or None
        ``log P(evidence)`` where the engine computes it (an engine may pass
        a function of no arguments instead: it is called once, on first
        access).
    query : str or None
        The question answered, e.g. ``"P(Wet | do(Sprinkler=on), Rain=yes)"``;
        printed by ``repr`` (``P(Wet)`` when None).
    converged : bool or None
        Iterative engines (loopy belief propagation): whether every row
        reached the tolerance.
    iterations : int or None
        Iterative engines: the sweeps run.
    diagnostics : dict or None
        Engine diagnostics, e.g. Gibbs sampling's ``"ess"`` and ``"r_hat"``
        (arrays shaped like `probs`), importance sampling's ``"ess"`` per row.

    Raises
    ------
    NumericalError
        If `probs` (or `std_err`) holds NaN or inf.

    Examples
    --------
    >>> d = DiscreteDistribution(("Wet",), [0.3, 0.7], (("dry", "wet"),), method="exact")
    >>> d["wet"], d.map()
    (0.7, 'wet')
    >>> d
    <DiscreteDistribution P(Wet) {dry: 0.3, wet: 0.7} method='exact'>
    >>> d.to_pandas().to_dict()
    {'dry': 0.3, 'wet': 0.7}
    """

    def __init__(self, variables: Sequence[Hashable], probs, states: Sequence[Sequence], *, batched: bool = False,
                 method: str = "exact", std_err=None, scm: str | None = None, log_evidence=None,
                 query: str | None = None, converged: bool | None = None, iterations: int | None = None,
                 diagnostics: dict | None = None) -> None:
        self.converged = converged
        self.iterations = iterations
        self.diagnostics = diagnostics
        self.variables = tuple(variables)
        self.probs = float_array(probs, f"DiscreteDistribution over {list(self.variables)}", "probs")
        self._states = tuple(tuple(s) for s in states)
        self.batched = bool(batched)
        self.method = method
        self.std_err = None if std_err is None else float_array(std_err, "DiscreteDistribution", "std_err")
        self.scm = scm
        self.log_evidence = log_evidence
        self.query = query
        if len(self._states) != len(self.variables):
            raise ModelError(f"DiscreteDistribution over {list(self.variables)}: needs one tuple of states per "
                             f"variable, got {len(self._states)}")
        _finite("DiscreteDistribution", self.variables, probs=self.probs, std_err=self.std_err)
        check_probs(self.variables, self.probs, self.batched, tuple(len(s) for s in self._states))

    @classmethod
    def from_normalized(cls, variables: tuple, probs: np.ndarray, states: tuple, *, method: str,
                        log_evidence=None) -> DiscreteDistribution:
        """An unbatched result whose `probs` its engine has already made a finite, non-negative float64 array
        of shape ``(*cards)`` summing to 1 (``states``: a tuple of state tuples, one per variable), built
        without the constructor's checks. Engines only: anything else goes through the constructor.
        """
        self = cls.__new__(cls)
        self.converged = self.iterations = self.diagnostics = self.std_err = self.scm = self.query = None
        self.variables = variables
        self.probs = probs
        self._states = states
        self.batched = False
        self.method = method
        self._log_evidence = log_evidence
        return self

    @property
    def log_evidence(self):
        got = self._log_evidence
        if callable(got):
            got = self._log_evidence = got()
        return got

    @log_evidence.setter
    def log_evidence(self, value) -> None:
        self._log_evidence = value

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_log_evidence"] = self.log_evidence           # a deferred value is computed, not pickled
        return state

    @property
    def states(self) -> tuple:
        return self._states[0] if len(self._states) == 1 else self._states

    @property
    def cards(self) -> tuple:
        return tuple(len(s) for s in self._states)

    def _index(self, key) -> tuple:
        if len(self.variables) == 1 and not (isinstance(key, tuple) and len(key) == 1):
            key = (key,)
        if not isinstance(key, tuple) or len(key) != len(self.variables):
            raise EvidenceError(f"index with one state per variable {list(self.variables)}, got {key!r}")
        idx = []
        for var, states, k in zip(self.variables, self._states, key):
            if k in states:
                idx.append(states.index(k))
            elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 0 <= k < len(states):
                idx.append(int(k))
            else:
                raise EvidenceError(f"{var!r} has no state {k!r}; states: {list(states)}")
        return tuple(idx)

    def __getitem__(self, key) -> Any:
        """Probability of a state (a tuple of states for a joint); ``(n,)`` when batched."""
        idx = self._index(key)
        out = self.probs[(slice(None), *idx)] if self.batched else self.probs[idx]
        return float(out) if np.ndim(out) == 0 else out

    def prob(self, *states) -> Any:
        """Same as indexing: ``d.prob("wet")`` or ``d.prob("yes", "wet")`` for a joint."""
        return self[states if len(states) != 1 else states[0]]

    def map(self):
        """The most probable state (a tuple of states for a joint); an array of them when batched."""
        flat = self.probs.reshape(self.probs.shape[0], -1) if self.batched else self.probs.reshape(1, -1)
        best = np.argmax(flat, axis=1)
        idx = np.unravel_index(best, self.cards)
        names = [np.asarray(s, dtype=object)[i] for s, i in zip(self._states, idx)]
        if len(self.variables) == 1:
            out = names[0]
        else:
            out = np.empty(len(best), dtype=object)
            out[:] = list(zip(*names))
        return out if self.batched else out[0]

    def marginal(self, variables) -> DiscreteDistribution:
        """The marginal over a subset of the variables."""
        if isinstance(variables, (str, bytes)) or not isinstance(variables, Sequence):
            variables = [variables]
        keep = []
        for v in variables:
            if v not in self.variables:
                raise EvidenceError(f"{v!r} is not one of {list(self.variables)}")
            keep.append(self.variables.index(v))
        off = 1 if self.batched else 0
        drop = tuple(i + off for i in range(len(self.variables)) if i not in keep)
        p = self.probs.sum(axis=drop) if drop else self.probs
        order = sorted(keep)
        perm = [order.index(k) for k in keep]
        p = np.transpose(p, ([0] if self.batched else []) + [i + off for i in perm])
        return DiscreteDistribution([self.variables[k] for k in keep], p, [self._states[k] for k in keep],
                                    batched=self.batched, method=self.method, scm=self.scm)

    def to_dict(self) -> dict:
        """``{state: probability}`` (one variable, unbatched)."""
        if self.batched or len(self.variables) != 1:
            raise EvidenceError("to_dict needs one variable and no batch")
        return {s: float(p) for s, p in zip(self._states[0], self.probs)}

    # -- printing and pandas -------------------------------------------------------------

    @property
    def label(self) -> str:
        """The query this result answers (``P(vars)`` when the engine gave none)."""
        return result_label(self.query, self.variables)

    def _columns(self) -> list:
        """Column labels: the states, or the joint states ``a,b`` of a joint."""
        if len(self._states) == 1:
            return list(self._states[0])
        return [",".join(map(str, c)) for c in itertools.product(*self._states)]

    def _header(self) -> str:
        scm = f"  scm={self.scm!r}" if self.scm else ""
        return f"{self.label}  method={self.method!r}{scm}"

    def __str__(self) -> str:
        if not self.batched and len(self.variables) == 1:
            return repr(self)
        cells = self.probs.reshape(self.probs.shape[0] if self.batched else 1, -1)     # (n, prod(cards))
        rows = range(cells.shape[0]) if self.batched else ["p"]
        return table_text(self._header(), self._columns(), list(rows), cells)

    def __repr__(self) -> str:
        if self.batched or len(self.variables) != 1:
            return str(self)
        body = ", ".join(f"{s}: {p:.4g}" for s, p in zip(self._states[0], self.probs))
        return f"<DiscreteDistribution {self.label} {{{body}}} method={self.method!r}>"

    def to_pandas(self):
        """The probabilities as pandas: a Series over the states (a MultiIndex for a joint);
        when batched, a DataFrame with one row per evidence row and one column per state."""
        import pandas as pd  # optional heavy dependency, imported on use

        if len(self._states) == 1:
            index = pd.Index(list(self._states[0]), name=self.variables[0])
        else:
            index = pd.MultiIndex.from_product([list(s) for s in self._states], names=list(self.variables))
        if not self.batched:
            series = pd.Series(self.probs.reshape(-1), index=index, name=self.label)
            series.attrs["query"] = self.label
            return series
        frame = pd.DataFrame(self.probs.reshape(self.probs.shape[0], -1), columns=index)
        frame.index.name = "row"
        frame.attrs["query"] = self.label
        return frame


class Gaussian:
    """A multivariate normal over real variables.

    Attributes
    ----------
    variables : tuple
    mean : ndarray of shape (d,) or (n, d)
        Batch-first when the evidence was batched (the covariance is then
        shared by every row: it does not depend on the observed values).
    cov : ndarray of shape (d, d)
    method : str
    scm : str or None
    query : str or None
        The question answered, printed by ``repr``.

    Examples
    --------
    >>> g = Gaussian(("X", "Y"), [1.0, 2.0], [[1.0, 0.5], [0.5, 4.0]])
    >>> print(g)
    P(X, Y)  method='exact'
          X  Y
    mean  1  2
    sd    1  2
    >>> g.to_pandas().loc["Y", "sd"]
    np.float64(2.0)
    """

    def __init__(self, variables: Sequence[Hashable], mean, cov, *, batched: bool = False, method: str = "exact",
                 scm: str | None = None, query: str | None = None) -> None:
        self.variables = tuple(variables)
        owner = f"Gaussian over {list(self.variables)}"
        self.mean = float_array(mean, owner, "mean")
        self.cov = float_array(cov, owner, "cov")
        self.batched = bool(batched)
        self.method = method
        self.scm = scm
        self.query = query
        _finite("Gaussian", self.variables, mean=self.mean, cov=self.cov)
        check_moments(owner, self.variables, self.mean, self.cov, self.batched)

    @property
    def var(self) -> np.ndarray:
        """Variances, shape (d,)."""
        return np.diag(self.cov).copy()

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(self.var, 0.0))

    def __getitem__(self, var) -> Gaussian:
        return self.marginal([var])

    def marginal(self, variables) -> Gaussian:
        if isinstance(variables, (str, bytes)) or not isinstance(variables, Sequence):
            variables = [variables]
        idx = []
        for v in variables:
            if v not in self.variables:
                raise EvidenceError(f"{v!r} is not one of {list(self.variables)}")
            idx.append(self.variables.index(v))
        return Gaussian([self.variables[i] for i in idx], self.mean[..., idx], self.cov[np.ix_(idx, idx)],
                        batched=self.batched, method=self.method, scm=self.scm)

    def log_prob(self, x) -> np.ndarray | float:
        """Log density at `x` of shape (d,) or (m, d) (per batch row when batched)."""
        x = as_points(x, f"Gaussian.log_prob over {list(self.variables)}")
        if len(self.variables) == 1 and x.ndim <= 1 and (x.ndim == 0 or x.shape[-1] != 1):
            x = x[..., None]
        from scipy import stats  # loaded by the first density, not by ``import causalnet``

        # the covariance is shared by every batch row: one frozen law of the residual
        centred = stats.multivariate_normal(np.zeros(self.cov.shape[0]), self.cov, allow_singular=True)
        return centred.logpdf(x - self.mean)

    def sample(self, size: int, seed=None) -> np.ndarray:
        """``(size, d)`` draws (``(size, n, d)`` when batched)."""
        size = check_int(size, "Gaussian.sample size", low=0)
        rng = as_generator(seed)
        d = len(self.variables)
        check_bytes(8.0 * size * (self.mean.shape[0] if self.batched else 1) * max(d, 1),
                    what=f"{size} draws of {list(self.variables)}", cause="size x batch x variables x 8 bytes")
        w, v = np.linalg.eigh((self.cov + self.cov.T) / 2)
        root = v * np.sqrt(np.clip(w, 0, None))
        z = rng.standard_normal((size, *([self.mean.shape[0]] if self.batched else []), d))
        return self.mean + z @ root.T

    @property
    def label(self) -> str:
        """The query this result answers (``P(vars)`` when the engine gave none)."""
        return result_label(self.query, self.variables)

    def __str__(self) -> str:
        if len(self.variables) == 1 and not self.batched:
            return repr(self)
        scm = f"  scm={self.scm!r}" if self.scm else ""
        header = f"{self.label}  method={self.method!r}{scm}"
        if not self.batched:
            return table_text(header, self.variables, ["mean", "sd"], np.stack([self.mean, self.std]))
        sd = ", ".join(f"{v}={_fmt(s)}" for v, s in zip(self.variables, self.std))
        return table_text(f"{header}  (means; sd {sd} in every row)", self.variables,
                          list(range(self.mean.shape[0])), self.mean)

    def __repr__(self) -> str:
        if len(self.variables) == 1 and not self.batched:
            return (f"<Gaussian {self.label}: mean {float(self.mean[0]):.4g}, "
                    f"sd {float(self.std[0]):.4g}, method={self.method!r}>")
        return str(self)

    def to_pandas(self):
        """A DataFrame: one row per variable with its mean and sd; when batched, one row per
        evidence row with columns ``("mean", var)`` and ``("sd", var)``."""
        import pandas as pd  # optional heavy dependency, imported on use

        if not self.batched:
            frame = pd.DataFrame({"mean": self.mean, "sd": self.std}, index=pd.Index(self.variables, name="variable"))
        else:
            n = self.mean.shape[0]
            cols = pd.MultiIndex.from_product([["mean", "sd"], list(self.variables)])
            frame = pd.DataFrame(np.hstack([self.mean, np.broadcast_to(self.std, (n, len(self.variables)))]),
                                 columns=cols)
            frame.index.name = "row"
        frame.attrs["query"] = self.label
        return frame


class EmpiricalDistribution:
    """Weighted samples of real (or tensor) targets from a sampling engine.

    Attributes
    ----------
    variables : tuple
    samples : dict node -> ndarray of shape (m, ...) or (n, m, ...) when batched
    weights : ndarray of shape (m,) or (n, m), normalised to 1 per row
    method : str
    scm : str or None
    ess : float or ndarray
        Effective sample size (Kish), per row when batched.
    query : str or None
        The question answered, printed by ``repr``.

    Raises
    ------
    NumericalError
        If the weights hold NaN, inf or negative entries, or a row of them sums to 0.
    ModelError
        If a row of weights does not sum to 1 (within ``SUM_TOL``).

    Examples
    --------
    >>> e = EmpiricalDistribution(("X",), {"X": np.array([0.0, 1.0, 3.0])}, [0.25, 0.25, 0.5])
    >>> float(e.mean()), e.to_pandas().columns.tolist()
    (1.75, ['X', 'weight'])
    """

    def __init__(self, variables, samples: dict, weights, *, batched: bool = False, method: str = "sampling",
                 scm: str | None = None, query: str | None = None) -> None:
        self.variables = tuple(variables)
        self.samples = samples
        self.weights = np.asarray(weights, dtype=np.float64)
        self.batched = batched
        self.method = method
        self.scm = scm
        self.query = query
        _finite("EmpiricalDistribution", self.variables, weights=self.weights)
        total = np.sum(self.weights, axis=-1)
        if np.any(self.weights < 0) or np.any(total <= 0):
            raise NumericalError(f"EmpiricalDistribution over {list(self.variables)}: weights must be >= 0 with a "
                                 f"positive total per row; got min {float(np.min(self.weights, initial=0.0))} and a "
                                 f"smallest total {float(np.min(total, initial=1.0))}")
        off = np.abs(np.atleast_1d(total) - 1.0)
        if off.size and float(off.max()) > SUM_TOL:
            raise ModelError(f"EmpiricalDistribution over {list(self.variables)}: weights must be normalised to 1 "
                             f"per row, got a total {float(np.atleast_1d(total)[int(np.argmax(off))])!r}")
        self.ess = 1.0 / np.sum(self.weights ** 2, axis=-1)

    def _w(self, x: np.ndarray) -> np.ndarray:
        w = self.weights
        return w.reshape(w.shape + (1,) * (x.ndim - w.ndim))

    def mean(self, var=None) -> np.ndarray:
        var = self.variables[0] if var is None else var
        x = self.samples[var]
        axis = 1 if self.batched else 0
        return np.sum(self._w(x) * x, axis=axis)

    def var(self, var=None) -> np.ndarray:
        var = self.variables[0] if var is None else var
        x = self.samples[var]
        axis = 1 if self.batched else 0
        mu = np.expand_dims(self.mean(var), axis)
        return np.sum(self._w(x) * (x - mu) ** 2, axis=axis)

    def std_err(self, var=None) -> np.ndarray:
        """Standard error of :meth:`mean` (from the effective sample size)."""
        ess = self.ess if not self.batched else self.ess.reshape(-1, *([1] * (np.ndim(self.var(var)) - 1)))
        return np.sqrt(self.var(var) / ess)

    def quantile(self, q, var=None) -> np.ndarray:
        """Weighted quantiles of a scalar variable (unbatched)."""
        var = self.variables[0] if var is None else var
        x = self.samples[var]
        if self.batched or x.ndim != 1:
            raise ModelError("quantile needs an unbatched scalar variable")
        order = np.argsort(x)
        cw = np.cumsum(self.weights[order])
        return np.interp(q, cw - self.weights[order] / 2, x[order])

    @property
    def label(self) -> str:
        """The query this result answers (``P(vars)`` when the engine gave none)."""
        return result_label(self.query, self.variables)

    def _scalars(self) -> list:
        axis = 2 if self.batched else 1
        return [v for v in self.variables if np.ndim(self.samples[v]) == axis]

    def __str__(self) -> str:
        scalars = self._scalars()
        if not self.batched or not scalars:
            return repr(self)
        means = np.stack([self.mean(v) for v in scalars], axis=-1)           # (n, d)
        return table_text(f"{self.label}  method={self.method!r}  (weighted means)", scalars,
                          list(range(means.shape[0])), means)

    def __repr__(self) -> str:
        q = f" {self.label}"
        if self.batched and self._scalars():
            return str(self)
        return f"<EmpiricalDistribution{q} over {list(self.variables)}, method={self.method!r}>"

    def to_pandas(self):
        """The weighted draws as a DataFrame: one column per variable (tensor variables
        flattened to ``X[i]``, ``X[i,j]``) and ``weight``; when batched, long form with
        ``row`` and ``draw`` columns first."""
        import pandas as pd  # optional heavy dependency, imported on use

        lead = 2 if self.batched else 1
        cols: dict = {}
        if self.batched:
            n, m = self.weights.shape
            cols["row"] = np.repeat(np.arange(n), m)
            cols["draw"] = np.tile(np.arange(m), n)
        for v in self.variables:
            x = np.asarray(self.samples[v])
            flat = x.reshape(int(np.prod(x.shape[:lead])), -1)                  # (rows * draws, cells)
            if x.ndim == lead:
                cols[v] = flat[:, 0]
                continue
            for j, idx in enumerate(np.ndindex(*x.shape[lead:])):
                cols[f"{v}[{','.join(map(str, idx))}]"] = flat[:, j]
        cols["weight"] = self.weights.reshape(-1)
        frame = pd.DataFrame(cols)
        frame.attrs["query"] = self.label
        return frame


class GaussianMixture:
    """A finite mixture of Gaussians: an HMM's predictive law of an unobserved ``X[t]``, or the
    exact posterior of real targets in a conditional Gaussian (mixed) network.

    Attributes
    ----------
    variables : tuple
    weights : ndarray of shape (K,) or (n, K)
        Component weights, summing to 1 (per row when batched).
    means : ndarray of shape (K, d) or, when batched, (K, d) or (n, K, d)
        Component means (per row when the evidence moves them).
    covs : ndarray of shape (K, d, d)
        Component covariances (shared by every row).
    method, scm, query : str or None
        As for the other results.

    Raises
    ------
    NumericalError
        If an array holds NaN or inf.

    Examples
    --------
    >>> gm = GaussianMixture(("X",), [0.25, 0.75], [[0.0], [2.0]], [[[1.0]], [[1.0]]])
    >>> float(gm.mean[0]), float(gm.var[0]), round(float(gm.cdf(1.0)), 4)
    (1.5, 1.75, 0.3293)
    """

    def __init__(self, variables, weights, means, covs, *, batched: bool = False, method: str = "exact",
                 scm: str | None = None, query: str | None = None, log_evidence=None) -> None:
        self.variables = tuple(variables)
        owner = f"GaussianMixture over {list(self.variables)}"
        self.weights = float_array(weights, owner, "weights")
        self.means = float_array(means, owner, "means")
        self.covs = float_array(covs, owner, "covs")
        self.batched = batched
        self.method = method
        self.scm = scm
        self.query = query
        self.log_evidence = log_evidence
        _finite("GaussianMixture", self.variables, weights=self.weights, means=self.means, covs=self.covs)
        d, K = len(self.variables), (self.covs.shape[0] if self.covs.ndim else 0)
        if (self.covs.shape != (K, d, d) or self.means.shape[-2:] != (K, d) or self.weights.ndim == 0
                or self.weights.shape[-1] != K):
            raise ModelError(f"{owner}: a mixture of K components needs weights (K,) or (n, K), means (K, d) and "
                             f"covs (K, d, d) with d={d}; got weights {self.weights.shape}, means "
                             f"{self.means.shape}, covs {self.covs.shape}")
        if self.weights.size and (float(self.weights.min()) < -SUM_TOL
                                  or float(np.max(np.abs(self.weights.sum(axis=-1) - 1.0))) > SUM_TOL):
            raise ModelError(f"{owner}: weights must be >= 0 and sum to 1 (per row), got totals "
                             f"{short_repr(self.weights.sum(axis=-1).tolist())} and a smallest weight "
                             f"{float(self.weights.min())!r}")
        for k in range(K):
            check_moments(f"{owner}, component {k}", self.variables, self.means.reshape(-1, K, d)[0, k]
                           if self.means.size else np.zeros(d), self.covs[k], False)

    @property
    def label(self) -> str:
        """The query this result answers (``P(vars)`` when the engine gave none)."""
        return result_label(self.query, self.variables)

    @property
    def n_components(self) -> int:
        return self.covs.shape[0]

    @property
    def variances(self) -> np.ndarray:
        """Component variances (the diagonals of `covs`), shape (K, d)."""
        return np.diagonal(self.covs, axis1=1, axis2=2).copy()

    @property
    def mean(self) -> np.ndarray:
        """Mixture mean, shape (d,) or (n, d)."""
        return np.einsum("...k,...kd->...d", self.weights, self.means)

    @property
    def cov(self) -> np.ndarray:
        """Mixture covariance (law of total variance), shape (d, d) or (n, d, d)."""
        mu = self.mean
        outer = np.einsum("...ki,...kj->...kij", self.means, self.means)
        second = np.einsum("...k,...kij->...ij", self.weights, self.covs + outer)
        return second - np.einsum("...i,...j->...ij", mu, mu)

    @property
    def var(self) -> np.ndarray:
        """Mixture variance of each variable, shape (d,) or (n, d)."""
        return np.clip(np.diagonal(self.cov, axis1=-2, axis2=-1), 0.0, None)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)

    def marginal(self, variables) -> GaussianMixture:
        """The mixture of some of the variables (same weights, the components' marginals)."""
        vs = [variables] if isinstance(variables, str) else list(variables)
        missing = [v for v in vs if v not in self.variables]
        if missing:
            raise EvidenceError(f"{missing[0]!r} is not a variable of this mixture; variables: {list(self.variables)}")
        i = [self.variables.index(v) for v in vs]
        return GaussianMixture(vs, self.weights, self.means[..., i], self.covs[:, i][:, :, i], batched=self.batched,
                               method=self.method, scm=self.scm, query=self.query, log_evidence=self.log_evidence)

    def _points(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if len(self.variables) == 1 and (x.ndim == 0 or x.shape[-1] != 1):
            x = x[..., None]
        return x

    def log_prob(self, x) -> np.ndarray:
        """Log density at `x` of shape (d,) or (m, d); batched: (n, d), one point per row."""
        from scipy import stats  # loaded on first use, not by ``import causalnet``
        from scipy.special import logsumexp

        x = self._points(x)
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        comps = []
        for k in range(self.n_components):
            law = stats.multivariate_normal(np.zeros(len(self.variables)), self.covs[k], allow_singular=True)
            comps.append(law.logpdf(x - self.means[..., k, :]))
        return logsumexp(np.stack(comps, axis=-1) + logw, axis=-1)

    def pdf(self, x) -> np.ndarray:
        """Density at `x` (see :meth:`log_prob` for shapes)."""
        return np.exp(self.log_prob(x))

    def cdf(self, x) -> np.ndarray | float:
        """``P(X <= x)`` of a one-variable mixture; `x` of shape (m,) or, batched, (n,) one per row.

        Raises
        ------
        EvidenceError
            For a joint of several variables.
        """
        if len(self.variables) != 1:
            raise EvidenceError(f"cdf needs one variable, this mixture is over {list(self.variables)}")
        from scipy import stats  # loaded on first use, not by ``import causalnet``

        x = np.asarray(x, dtype=np.float64)
        mu, sd = self.means[..., 0], np.sqrt(self.covs[:, 0, 0])          # (..., K), (K,)
        xe = x[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, (xe - mu) / np.where(sd > 0, sd, 1.0), np.where(xe >= mu, np.inf, -np.inf))
        out = np.sum(self.weights * stats.norm.cdf(z), axis=-1)
        return float(out) if out.ndim == 0 else out

    def sample(self, size: int, seed=None) -> np.ndarray:
        """``(size, d)`` draws (``(size, n, d)`` when batched)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        d, K = len(self.variables), self.n_components
        roots = []
        for k in range(K):
            w, v = np.linalg.eigh((self.covs[k] + self.covs[k].T) / 2)
            roots.append(v * np.sqrt(np.clip(w, 0, None)))
        roots = np.stack(roots)                                             # (K, d, d)
        lead = (size, self.weights.shape[0]) if self.batched else (size,)
        cum = np.cumsum(self.weights, axis=-1)
        comp = np.minimum((rng.random(lead)[..., None] > cum / cum[..., -1:]).sum(axis=-1), K - 1)
        z = rng.standard_normal((*lead, d))
        if self.batched and self.means.ndim == 3:
            mu = self.means[np.arange(lead[1])[None, :], comp]
        else:
            mu = self.means[comp]
        return mu + np.einsum("...ij,...j->...i", roots[comp], z)

    def __str__(self) -> str:
        scm = f"  scm={self.scm!r}" if self.scm else ""
        header = f"{self.label}  method={self.method!r}{scm}"
        if self.batched:
            return table_text(f"{header}  (mixture means)", self.variables, list(range(self.weights.shape[0])),
                              self.mean)
        cols = ["weight", *[f"mean {v}" for v in self.variables], *[f"var {v}" for v in self.variables]]
        cells = np.column_stack([self.weights, self.means, self.variances])
        return table_text(f"{header}  mean {[_fmt(m) for m in self.mean]}, var {[_fmt(v) for v in self.var]}",
                          cols, list(range(self.n_components)), cells)

    def to_pandas(self):
        """A DataFrame of the components (``weight`` and one ``mean`` and ``var`` column per variable);
        when batched, the weights only: one row per evidence row, one column per component."""
        import pandas as pd  # optional heavy dependency, imported on use

        if self.batched:
            frame = pd.DataFrame(self.weights, columns=pd.Index(range(self.weights.shape[-1]), name="component"))
            frame.index.name = "row"
            frame.attrs["query"] = self.label
            return frame
        cols = {"weight": self.weights, **{f"mean {v}": self.means[:, i] for i, v in enumerate(self.variables)},
                **{f"var {v}": self.variances[:, i] for i, v in enumerate(self.variables)}}
        frame = pd.DataFrame(cols, index=pd.Index(range(len(self.weights)), name="component"))
        frame.attrs["query"] = self.label
        return frame

    def __repr__(self) -> str:
        q = f" {self.label}"
        return (f"<GaussianMixture{q} over {list(self.variables)} with {self.n_components} components, "
                f"method={self.method!r}>")
