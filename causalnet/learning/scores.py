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
- ``"k2"``: the same with every pseudo-count 1.

Continuous scores fit the node on its parents by least squares (intercept
included; ML noise variance σ̂² = RSS/n): loglik ``−n/2 (log(2π σ̂²) + 1)``;
``"bic-g"`` subtracts ``(p + 2)/2 · log(n)`` for p parents (pgmpy's BICGauss).

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
from scipy.special import gammaln

from ..errors import ModelError
from .data import Table, as_table, family_counts
from .problem import as_dag

__all__ = ["Score", "CountScore", "LogLikelihood", "BIC", "AIC", "BDeuScore", "K2Score", "GaussianLogLikelihood",
           "BICGauss", "SCORES", "make_score", "score"]


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


class BDeuScore(CountScore):
    name = "bdeu"

    def __init__(self, table: Table, equivalent_sample_size: float = 10.0) -> None:
        super().__init__(table)
        ess = equivalent_sample_size
        if isinstance(ess, bool) or not isinstance(ess, (int, float)) or not np.isfinite(ess) or ess <= 0:
            raise ModelError(f"equivalent_sample_size must be a finite number > 0, got {ess!r}")
        self.ess = float(ess)

    def from_counts(self, counts):
        q, r = counts.shape
        a, b = self.ess / q, self.ess / (q * r)
        return float(np.sum(gammaln(counts + b)) - q * r * lgamma(b)
                     - np.sum(gammaln(counts.sum(axis=1) + a)) + q * lgamma(a))


class K2Score(CountScore):
    name = "k2"

    def from_counts(self, counts):
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


SCORES = {"loglik": LogLikelihood, "bic": BIC, "aic": AIC, "bdeu": BDeuScore, "k2": K2Score,
          "bic-g": BICGauss, "loglik-g": GaussianLogLikelihood}


def _check_columns(table: Table, discrete: bool, name: str) -> None:
    for v in table.names:
        col = table.column(v)
        if col.missing.any():
            raise ModelError(f"column {v!r} has {int(col.missing.sum())} missing cell(s); scores need complete data "
                             f"(drop them with df.dropna())")
        if col.is_discrete != discrete:
            kind = "discrete" if col.is_discrete else "continuous"
            raise ModelError(f"score {name!r} needs {'discrete' if discrete else 'continuous'} columns, but column "
                             f"{v!r} is {kind}")
    if table.n == 0:
        raise ModelError("the data have no rows")


def make_score(name: str, table: Table, *, equivalent_sample_size: float | None = None) -> Score:
    """The :class:`Score` named `name` over `table` (``"loglik"`` picks the Gaussian one for real columns)."""
    if isinstance(name, Score):
        return name
    if name not in SCORES:
        raise ModelError(f"score must be one of {sorted(SCORES)}, got {name!r}")
    if name == "loglik" and table.names and not table.column(table.names[0]).is_discrete:
        name = "loglik-g"
    cls = SCORES[name]
    _check_columns(table, cls.discrete, name)
    if cls is BDeuScore:
        return cls(table, 10.0 if equivalent_sample_size is None else equivalent_sample_size)
    if equivalent_sample_size is not None:
        raise ModelError(f"equivalent_sample_size is a BDeu setting; score {name!r} does not take it")
    return cls(table)


def score(dag, data, score: str = "bic", *, equivalent_sample_size: float | None = None, states=None) -> float:
    """The score of a DAG on complete data (higher is better).

    Parameters
    ----------
    dag : DAG, edge list or graph string
    data : pandas.DataFrame or mapping column -> array
        One column per node of `dag`.
    score : {"bic", "aic", "bdeu", "k2", "loglik", "bic-g"}
        Discrete scores need discrete columns; ``"bic-g"`` continuous ones;
        ``"loglik"`` takes either.
    equivalent_sample_size : float, optional
        For ``"bdeu"`` (default 10).

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
    return make_score(score, table, equivalent_sample_size=equivalent_sample_size).total(g)
