"""Query results: distribution objects.

:class:`DiscreteDistribution` (``.probs`` batch-first, ``.states``, ``[state]``,
``.map()``), :class:`Gaussian` (``.mean``, ``.cov``) and
:class:`EmpiricalDistribution` (weighted samples with standard errors). Every
result says which engine produced it in ``.method``; counterfactual results
also name the SCM in ``.scm``. (The Cauchy result lives with its engine in
:mod:`causalnet.inference.cauchy`.)

Symbols: ``n`` batch (present only when the evidence was batched), ``K``
states, ``d`` variables.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from .errors import EvidenceError, ModelError

__all__ = ["DiscreteDistribution", "Gaussian", "EmpiricalDistribution", "GaussianMixture"]


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
        ``log P(evidence)`` where the engine computes it.

    Examples
    --------
    >>> d = DiscreteDistribution(("Wet",), [0.3, 0.7], (("dry", "wet"),), method="exact")
    >>> d["wet"], d.map()
    (0.7, 'wet')
    """

    def __init__(self, variables: Sequence[Hashable], probs, states: Sequence[Sequence], *, batched: bool = False,
                 method: str = "exact", std_err=None, scm: str | None = None, log_evidence=None) -> None:
        self.variables = tuple(variables)
        self.probs = np.asarray(probs, dtype=np.float64)
        self._states = tuple(tuple(s) for s in states)
        self.batched = bool(batched)
        self.method = method
        self.std_err = None if std_err is None else np.asarray(std_err)
        self.scm = scm
        self.log_evidence = log_evidence
        want = tuple(len(s) for s in self._states)
        got = self.probs.shape[1:] if self.batched else self.probs.shape
        if got != want:
            raise ModelError(f"internal: probabilities of shape {self.probs.shape} for cards {want}")

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

    def __repr__(self) -> str:
        head = f"{', '.join(map(str, self.variables))}"
        if self.batched:
            return f"<DiscreteDistribution P({head}) batch of {self.probs.shape[0]}, method={self.method!r}>"
        if len(self.variables) == 1:
            body = ", ".join(f"{s}: {p:.4g}" for s, p in zip(self._states[0], self.probs))
            return f"<DiscreteDistribution P({head}) {{{body}}} method={self.method!r}>"
        return f"<DiscreteDistribution P({head}) shape {self.probs.shape}, method={self.method!r}>"


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
    """

    def __init__(self, variables: Sequence[Hashable], mean, cov, *, batched: bool = False, method: str = "exact",
                 scm: str | None = None) -> None:
        self.variables = tuple(variables)
        self.mean = np.asarray(mean, dtype=np.float64)
        self.cov = np.asarray(cov, dtype=np.float64)
        self.batched = bool(batched)
        self.method = method
        self.scm = scm

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
        x = np.asarray(x, dtype=np.float64)
        if len(self.variables) == 1 and x.ndim <= 1 and (x.ndim == 0 or x.shape[-1] != 1):
            x = x[..., None]
        # the covariance is shared by every batch row: one frozen law of the residual
        centred = stats.multivariate_normal(np.zeros(self.cov.shape[0]), self.cov, allow_singular=True)
        return centred.logpdf(x - self.mean)

    def sample(self, size: int, seed=None) -> np.ndarray:
        """``(size, d)`` draws (``(size, n, d)`` when batched)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        d = len(self.variables)
        w, v = np.linalg.eigh((self.cov + self.cov.T) / 2)
        root = v * np.sqrt(np.clip(w, 0, None))
        z = rng.standard_normal((size, *([self.mean.shape[0]] if self.batched else []), d))
        return self.mean + z @ root.T

    def __repr__(self) -> str:
        b = f" batch of {self.mean.shape[0]}," if self.batched else ""
        if len(self.variables) == 1 and not self.batched:
            return (f"<Gaussian {self.variables[0]}: mean {float(self.mean[0]):.4g}, "
                    f"sd {float(self.std[0]):.4g}, method={self.method!r}>")
        return f"<Gaussian over {list(self.variables)}{b} method={self.method!r}>"


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
    """

    def __init__(self, variables, samples: dict, weights, *, batched: bool = False, method: str = "sampling",
                 scm: str | None = None) -> None:
        self.variables = tuple(variables)
        self.samples = samples
        self.weights = np.asarray(weights, dtype=np.float64)
        self.batched = batched
        self.method = method
        self.scm = scm
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

    def __repr__(self) -> str:
        return f"<EmpiricalDistribution over {list(self.variables)}, method={self.method!r}>"


class GaussianMixture:
    """A finite mixture of Gaussians (e.g. an HMM's predictive law of an unobserved X[t]).

    Attributes
    ----------
    weights : ndarray of shape (K,) or (n, K)
    means : ndarray of shape (K, d)
    covs : ndarray of shape (K, d, d)
    method : str
    """

    def __init__(self, variables, weights, means, covs, *, batched: bool = False, method: str = "exact",
                 scm: str | None = None) -> None:
        self.variables = tuple(variables)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.means = np.asarray(means, dtype=np.float64)
        self.covs = np.asarray(covs, dtype=np.float64)
        self.batched = batched
        self.method = method
        self.scm = scm

    @property
    def mean(self) -> np.ndarray:
        """Mixture mean, shape (d,) or (n, d)."""
        return self.weights @ self.means

    @property
    def cov(self) -> np.ndarray:
        """Mixture covariance (law of total variance), shape (d, d) or (n, d, d)."""
        mu = self.mean
        second = np.einsum("...k,kij->...ij", self.weights, self.covs + np.einsum("ki,kj->kij", self.means,
                                                                                   self.means))
        return second - np.einsum("...i,...j->...ij", mu, mu)

    def log_prob(self, x) -> np.ndarray:
        """Log density at `x` of shape (d,) or (m, d) (unbatched)."""
        x = np.asarray(x, dtype=np.float64)
        comps = np.stack([stats.multivariate_normal.logpdf(x, self.means[k], self.covs[k], allow_singular=True)
                          for k in range(len(self.means))], axis=-1)
        with np.errstate(divide="ignore"):
            from scipy.special import logsumexp

            return logsumexp(comps + np.log(self.weights), axis=-1)

    def __repr__(self) -> str:
        return f"<GaussianMixture over {list(self.variables)} with {len(self.means)} components, method={self.method!r}>"
