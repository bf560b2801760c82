"""Decomposable structure scores: a DAG's score is a sum of **local scores**, one per family.

``score(G, data) = Σ_v local(v, parents_G(v))``. Because every local score
depends on one family only, a search that changes one edge rescores one or two
families, and a :class:`Score` caches every local score it has computed.

Discrete scores read the family counts ``N[j, k]`` (parent configuration j,
state k; ``N_j = Σ_k N[j, k]``, q configurations, r states, n rows):

- ``"loglik"``: ``Σ N[j,k] log(N[j,k] / N_j)``
- ``"bic"``: loglik − ½ log(n) · q(r − 1)
- ``"aic"``: loglik − q(r − 1)
- ``"bdeu"``: the log marginal likelihood under BDeu with equivalent sample
  size α: ``Σ_j [lnΓ(α/q) − lnΓ(N_j + α/q)] + Σ_jk [lnΓ(N_jk + α/(qr)) − lnΓ(α/(qr))]``
  Optional ``structure_prior`` s adds a binomial prior on each parent set
  (each of the m − 1 other columns is a parent with probability p = s/(m − 1),
  so s is the expected number of parents): ``|Pa| log p + (m − 1 − |Pa|) log(1 − p)``
  per family. It costs every edge ``log((1 − p)/p)`` nats, depends only on the
  number of edges (so it stays score-equivalent), and with s = 1 it is
  causal-learn's ``local_score_BDeu`` default.
- ``"k2"``: the same with every pseudo-count 1.

Continuous scores fit the node on its parents by least squares (intercept
included; ML noise variance σ̂² = RSS/n): loglik ``−n/2 (log(2π σ̂²) + 1)``;
``"bic-g"`` subtracts ``(p + 2)/2 · log(n)`` for p parents (pgmpy's BICGauss).

Conditional Gaussian scores (``"loglik-cg"``, ``"bic-cg"``, ``"aic-cg"``) take
mixed columns. A discrete node (discrete parents only) scores as ``"loglik"``
with ``k = q(r − 1)`` parameters; a real node with discrete parents D (``q``
configurations, counting every declared state) and p real parents is fitted by
least squares in each configuration (:mod:`causalnet.learning.conditional`),
loglik ``Σ_k −n_k/2 (log(2π σ̂²_k) + 1)`` with the **maximum-likelihood**
variance ``σ̂²_k = RSS_k / n_k`` (the maximised likelihood), and
``k = q(p + 2)`` parameters. The penalties are bnlearn's: ``"bic-cg"``
subtracts ``k/2 · log(n)``, ``"aic-cg"`` subtracts ``k``. (bnlearn's own
``loglik-cg`` plugs in the unbiased ``RSS_k / (n_k − p − 1)``; pgmpy's
``LogLikelihoodCondGauss`` uses ddof-1 covariances, ``RSS_k / (n_k − 1)``, a
1e-8 floor on the parents' density and counts only observed states: on the same
data the three differ by these constants, see tests/learning/test_cg_learning.py.)
A discrete node with a real parent is outside CG models: an error naming both.
A configuration with rows but too few to fit (``n_k < p + 2``) or an exact fit
makes the local score ``−inf`` in a search, and an error naming the node in
:func:`score`.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"A": list("aabb"), "B": list("xyyy")})
>>> round(score("A -> B", df, score="loglik"), 6)
-4.158883
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from math import lgamma, log, pi

import numpy as np

from ..errors import ModelError
from .conditional import describe_config, family_moments
from .data import Table, as_table, family_counts
from .problem import as_dag

__all__ = ["Score", "CountScore", "LogLikelihood", "BIC", "AIC", "BDeuScore", "K2Score", "GaussianLogLikelihood",
           "BICGauss", "ConditionalGaussianLogLikelihood", "BICCondGauss", "AICCondGauss", "SCORES", "make_score",
           "score"]


class Score:
    """A decomposable score over a :class:`~causalnet.learning.data.Table`, with a cache of local scores.

    Subclasses implement :meth:`compute` for one family; :meth:`local` caches it.
    """

    name = "score"
    discrete = True

    def __init__(self, table: Table) -> None:
        self.table = table
        self.n = table.n
        self._pos = {v: i for i, v in enumerate(table.names)}
        self._cache: dict = {}
        self.evaluations = 0

    def local(self, child: Hashable, parents: Sequence[Hashable]) -> float:
        """The local score of `child` given `parents` (order does not matter)."""
        ps = tuple(sorted(parents, key=self._pos.__getitem__))
        key = (child, ps)
        val = self._cache.get(key)
        if val is None:
            self.evaluations += 1
            val = self._cache[key] = float(self.compute(child, ps))
        return val

    def compute(self, child: Hashable, parents: tuple) -> float:
        raise NotImplementedError

    def total(self, dag) -> float:
        """The score of a whole DAG: the sum of its local scores."""
        return float(sum(self.local(v, dag.parents(v)) for v in dag.nodes))


class CountScore(Score):
    """A score computed from the family counts ``N`` (q, r)."""

    def compute(self, child, parents):
        counts = family_counts(self.table, child, parents)                     # (*parent_cards, r)
        r = counts.shape[-1]
        return self.from_counts(counts.reshape(-1, r).astype(np.float64))       # (q, r)

    def from_counts(self, counts: np.ndarray) -> float:
        raise NotImplementedError


def _loglik(counts: np.ndarray) -> float:
    nj = counts.sum(axis=1, keepdims=True)                                     # (q, 1)
    pos = counts > 0
    return float(np.sum(counts[pos] * (np.log(counts[pos]) - np.log(np.broadcast_to(nj, counts.shape)[pos]))))


class LogLikelihood(CountScore):
    name = "loglik"

    def from_counts(self, counts):
        return _loglik(counts)


class BIC(CountScore):
    name = "bic"

    def from_counts(self, counts):
        q, r = counts.shape
        return _loglik(counts) - 0.5 * log(self.n) * q * (r - 1)


class AIC(CountScore):
    name = "aic"

    def from_counts(self, counts):
        q, r = counts.shape
        return _loglik(counts) - q * (r - 1)


def _binomial_prior(structure_prior, others: int) -> tuple[float, float]:
    """(log p, log(1 − p)) for p = structure_prior / others, the chance that a given column is a parent."""
    s = structure_prior
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s) or s <= 0:
        raise ModelError(f"structure_prior must be a finite number > 0 (the expected number of parents), got {s!r}")
    if others == 0:
        return 0.0, 0.0                                            # one column: no parent set but the empty one
    if s >= others:
        raise ModelError(f"structure_prior must be below the number of other columns ({others}), got {s!r}")
    return log(s / others), log(1.0 - s / others)


class BDeuScore(CountScore):
    """BDeu log marginal likelihood, optionally plus a binomial structure prior (see the module docstring).

    Parameters
    ----------
    table : Table
    equivalent_sample_size : float
        α > 0.
    structure_prior : float, optional
        The expected number of parents per node, in (0, m − 1) for m columns;
        ``None`` (default) is the uniform prior over DAGs (no term).
    """

    name = "bdeu"

    def __init__(self, table: Table, equivalent_sample_size: float = 10.0,
                 structure_prior: float | None = None) -> None:
        super().__init__(table)
        ess = equivalent_sample_size
        if isinstance(ess, bool) or not isinstance(ess, (int, float)) or not np.isfinite(ess) or ess <= 0:
            raise ModelError(f"equivalent_sample_size must be a finite number > 0, got {ess!r}")
        self.ess = float(ess)
        self.structure_prior = structure_prior
        others = max(len(table.names) - 1, 0)
        self._others = others
        self._log_p, self._log_q = (0.0, 0.0) if structure_prior is None else _binomial_prior(structure_prior, others)

    def compute(self, child, parents):
        prior = len(parents) * self._log_p + (self._others - len(parents)) * self._log_q
        return super().compute(child, parents) + prior

    def from_counts(self, counts):
        from scipy.special import gammaln  # loaded on first use, not by ``import causalnet``
        q, r = counts.shape
        a, b = self.ess / q, self.ess / (q * r)
        return float(np.sum(gammaln(counts + b)) - q * r * lgamma(b)
                     - np.sum(gammaln(counts.sum(axis=1) + a)) + q * lgamma(a))


class K2Score(CountScore):
    name = "k2"

    def from_counts(self, counts):
        from scipy.special import gammaln  # loaded on first use, not by ``import causalnet``
        q, r = counts.shape
        return float(np.sum(gammaln(counts + 1)) - np.sum(gammaln(counts.sum(axis=1) + r)) + q * lgamma(r))


class GaussianLogLikelihood(Score):
    """Linear-Gaussian log-likelihood of a continuous node on its parents (least squares)."""

    name = "loglik-g"
    discrete = False

    def loglik(self, child, parents) -> float:
        y = self.table.column(child).values
        design = np.column_stack([np.ones(self.n), *(self.table.column(p).values for p in parents)])   # (n, 1+p)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        rss = float(np.sum((y - design @ coef) ** 2))
        if rss <= 0:
            raise ModelError(f"node {child!r} is an exact linear function of {list(parents)}; its Gaussian "
                             f"log-likelihood is infinite")
        return -0.5 * self.n * (log(2 * pi * rss / self.n) + 1.0)

    def compute(self, child, parents):
        return self.loglik(child, parents)


class BICGauss(GaussianLogLikelihood):
    name = "bic-g"

    def compute(self, child, parents):
        return self.loglik(child, parents) - 0.5 * (len(parents) + 2) * log(self.n)


class ConditionalGaussianLogLikelihood(Score):
    """The maximised conditional Gaussian log-likelihood of a family (mixed columns; see the module)."""

    name = "loglik-cg"
    discrete = None                      # either kind of column
    strict = False                       # True: a degenerate family raises instead of scoring -inf

    def parameters(self, child, parents) -> int:
        """bnlearn's parameter count: q(r − 1) for a discrete node, q(p + 2) for a real one."""
        col = self.table.column(child)
        q = int(np.prod([self.table.column(p).card for p in parents if self.table.column(p).is_discrete]))
        if col.is_discrete:
            return q * (col.card - 1)
        return q * (sum(not self.table.column(p).is_discrete for p in parents) + 2)

    def loglik(self, child, parents) -> float:
        col = self.table.column(child)
        if col.is_discrete:
            real = [p for p in parents if not self.table.column(p).is_discrete]
            if real:
                raise ModelError(f"node {child!r} is discrete but its parent {real[0]!r} is continuous: outside "
                                 f"conditional Gaussian models (the CG restriction)")
            counts = family_counts(self.table, child, parents)                      # (*parent_cards, r)
            return self.from_counts_loglik(counts.reshape(-1, counts.shape[-1]).astype(np.float64))
        mo, disc, real, cards = family_moments(self.table, child, parents)
        _, _, var = mo.solve(child)
        bad = mo.degenerate(var)
        if bad.any():
            if not self.strict:
                return -np.inf
            k = int(np.flatnonzero(bad)[0])
            where = describe_config(disc, [self.table.column(d).states for d in disc], k, cards) or "all rows"
            raise ModelError(f"node {child!r}: in the configuration {where} of its discrete parents it has "
                             f"{mo.weight[k]:g} row(s) for {len(real) + 2} parameters, or is an exact linear "
                             f"function of {list(real)}: its conditional Gaussian likelihood is unbounded")
        return mo.loglik(var)

    @staticmethod
    def from_counts_loglik(counts: np.ndarray) -> float:
        """A discrete family's maximised log-likelihood from its counts (q, r)."""
        return _loglik(counts)

    def penalty(self, child, parents) -> float:
        return 0.0

    def compute(self, child, parents):
        return self.loglik(child, parents) - self.penalty(child, parents)


class BICCondGauss(ConditionalGaussianLogLikelihood):
    name = "bic-cg"

    def penalty(self, child, parents):
        return 0.5 * log(self.n) * self.parameters(child, parents)


class AICCondGauss(ConditionalGaussianLogLikelihood):
    name = "aic-cg"

    def penalty(self, child, parents):
        return float(self.parameters(child, parents))


SCORES = {"loglik": LogLikelihood, "bic": BIC, "aic": AIC, "bdeu": BDeuScore, "k2": K2Score,
          "bic-g": BICGauss, "loglik-g": GaussianLogLikelihood, "loglik-cg": ConditionalGaussianLogLikelihood,
          "bic-cg": BICCondGauss, "aic-cg": AICCondGauss}


def _check_columns(table: Table, discrete: bool | None, name: str) -> None:
    for v in table.names:
        col = table.column(v)
        if not col.complete:
            raise ModelError(f"column {v!r} has {int(col.missing.sum())} missing cell(s); scores need complete data "
                             f"(drop them with df.dropna())")
        if discrete is not None and col.is_discrete != discrete:
            kind = "discrete" if col.is_discrete else "continuous"
            raise ModelError(f"score {name!r} needs {'discrete' if discrete else 'continuous'} columns, but column "
                             f"{v!r} is {kind}")
    if table.n == 0:
        raise ModelError("the data have no rows")


def make_score(name: str, table: Table, *, equivalent_sample_size: float | None = None,
               structure_prior: float | None = None) -> Score:
    """The :class:`Score` named `name` over `table` (``"loglik"`` picks the Gaussian one for real columns, the
    conditional Gaussian one for mixed columns).

    `equivalent_sample_size` and `structure_prior` are BDeu settings (see :class:`BDeuScore`).
    """
    if isinstance(name, Score):
        return name
    if name not in SCORES:
        raise ModelError(f"score must be one of {sorted(SCORES)}, got {name!r}")
    kinds = {table.column(v).is_discrete for v in table.names}
    if name == "loglik" and kinds and kinds != {True}:
        name = "loglik-g" if kinds == {False} else "loglik-cg"       # all real, or mixed
    cls = SCORES[name]
    _check_columns(table, cls.discrete, name)
    if cls is BDeuScore:
        return cls(table, 10.0 if equivalent_sample_size is None else equivalent_sample_size, structure_prior)
    for key, val in (("equivalent_sample_size", equivalent_sample_size), ("structure_prior", structure_prior)):
        if val is not None:
            raise ModelError(f"{key} is a BDeu setting; score {name!r} does not take it")
    return cls(table)


def score(dag, data, score: str = "bic", *, equivalent_sample_size: float | None = None, states=None,
          structure_prior: float | None = None) -> float:
    """The score of a DAG on complete data (higher is better).

    Parameters
    ----------
    dag : DAG, edge list or graph string
    data : pandas.DataFrame or mapping column -> array
        One column per node of `dag`.
    score : {"bic", "aic", "bdeu", "k2", "loglik", "bic-g", "loglik-g", "bic-cg", "aic-cg", "loglik-cg"}
        Discrete scores need discrete columns; ``"bic-g"`` continuous ones;
        ``"loglik"`` takes either kind (all columns of one kind); the ``-cg``
        scores take mixed columns (conditional Gaussian, see the module).
    equivalent_sample_size : float, optional
        For ``"bdeu"`` (default 10).
    structure_prior : float, optional
        For ``"bdeu"``: the expected number of parents per node of a binomial
        structure prior (default none; 1 reproduces causal-learn's BDeu).

    Raises
    ------
    ModelError
        Naming the column: a node without a column, missing cells, the wrong
        kind of column for the score.
    """
    g = as_dag(dag)
    table = as_table(data, states=states)
    for v in g.nodes:
        if v not in table:
            raise ModelError(f"node {v!r} has no column in the data; columns: {list(table.names)}")
    table = Table({v: table.column(v) for v in g.nodes}, table.n)
    sc = make_score(score, table, equivalent_sample_size=equivalent_sample_size, structure_prior=structure_prior)
    sc.strict = True
    return sc.total(g)
