"""Conditional independence tests for constraint-based structure learning (PC).

A test answers ``x ⫫ y | S`` with a p-value; PC removes the edge ``x — y``
when ``p > alpha``.

**Discrete data** — ``"chi2"`` (Pearson) and ``"g2"`` (likelihood ratio,
``G² = 2 Σ O log(O / E)``): the counts ``O`` of ``(S, x, y)`` are split into
the strata of S that occur in the data; in each stratum the expected counts
are ``E = N_x· N_·y / N`` and the statistic is summed over strata. Degrees of
freedom follow Fienberg (*The Analysis of Cross-Classified Categorical Data*,
1980): a stratum with ``r`` non-empty rows and ``c`` non-empty columns adds
``(r − 1)(c − 1)``, so structural zeros of sparse strata do not inflate the
degrees of freedom (and no stratum is thrown away). No degrees of freedom at
all means no evidence of dependence: ``p = 1``. This is the rule of
causal-learn's ``chisq``/``gsq`` and of ``scipy.stats.chi2_contingency`` on a
crosstab, stratum by stratum.

**Continuous data** — ``"fisher_z"``: the partial correlation ``r`` of x and y
given S (from the inverse of the correlation submatrix), ``z = atanh(r) ·
sqrt(n − |S| − 3)``, two-sided normal p-value.

Every test caches its p-values (``x ⫫ y | S`` and ``y ⫫ x | S`` are one
entry), so PC's second visit of an edge costs nothing.
"""

from __future__ import annotations

from collections.abc import Hashable
from math import log, sqrt

import numpy as np

from .data import Table

__all__ = ["CITest", "ChiSquare", "GSquare", "FisherZ", "TESTS", "contingency_statistic"]

#: Above this many cells the (S, x, y) table is counted over the strata that occur, not all of them.
_DENSE_CELLS = 1 << 18


class CITest:
    """A conditional independence test: :meth:`pvalue` of ``x ⫫ y | S``, cached.

    Attributes
    ----------
    calls : int
        Tests actually computed (cache misses).
    """

    name = "test"
    discrete = True

    def __init__(self, table: Table) -> None:
        self.table = table
        self.calls = 0
        self._cache: dict = {}

    def pvalue(self, x: Hashable, y: Hashable, given: tuple) -> float:
        """The p-value of ``x ⫫ y | given`` (large: independent)."""
        key = (frozenset((x, y)), frozenset(given))
        p = self._cache.get(key)
        if p is None:
            self.calls += 1
            p = self._cache[key] = float(self.compute(x, y, tuple(given)))
        return p

    def compute(self, x: Hashable, y: Hashable, given: tuple) -> float:
        raise NotImplementedError


def contingency_statistic(counts: np.ndarray, kind: str = "chi2") -> tuple[float, int]:
    """The statistic and degrees of freedom of stratified counts.

    Parameters
    ----------
    counts : ndarray of shape (q, Kx, Ky)
        Counts of x and y in each of q strata of the conditioning set.
    kind : {"chi2", "g2"}

    Returns
    -------
    statistic : float
        Summed over the non-empty strata.
    dof : int
        ``Σ (non-empty rows − 1)(non-empty columns − 1)`` over the non-empty strata.
    """
    c = np.asarray(counts, dtype=np.float64)
    nx_, ny_ = c.sum(axis=2), c.sum(axis=1)                                      # (q, Kx), (q, Ky)
    n = nx_.sum(axis=1)                                                          # (q,)
    exp = nx_[:, :, None] * ny_[:, None, :] / np.maximum(n, 1.0)[:, None, None]  # (q, Kx, Ky); 0 in empty strata
    safe = np.where(exp > 0, exp, 1.0)                                           # exp = 0 only where c = 0
    if kind == "chi2":
        stat = float(((c - exp) ** 2 / safe).sum())
    else:
        stat = float(2.0 * (c * np.log(np.where(c > 0, c, 1.0) / safe)).sum())
    rows, cols = (nx_ > 0).sum(axis=1), (ny_ > 0).sum(axis=1)                    # (q,), 0 in empty strata
    dof = int(((rows - 1) * (cols - 1))[n > 0].sum())
    return stat, dof


class ChiSquare(CITest):
    """Pearson's χ², stratified over S, with Fienberg's degrees of freedom (see the module)."""

    name = "chi2"

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self._codes = {v: table.column(v).codes.astype(np.int64) for v in table.names}
        self._cards = {v: table.column(v).card for v in table.names}
        self._strata: dict = {}            # given (tuple) -> (stratum index (n,), q), the last few only

    def strata(self, given: tuple) -> tuple[np.ndarray, int]:
        """Each row's stratum of `given` (n,) and the number of strata q (only those that occur, if many)."""
        hit = self._strata.get(given)
        if hit is not None:
            return hit
        q, flat = 1, np.zeros(self.table.n, dtype=np.int64)                      # (n,)
        for v in given:
            flat = flat * self._cards[v] + self._codes[v]
            q *= self._cards[v]
        if q > _DENSE_CELLS // 16:
            flat = np.unique(flat, return_inverse=True)[1]                       # strata that occur only
            q = int(flat.max()) + 1
        if len(self._strata) >= 64:
            self._strata.clear()
        self._strata[given] = (flat, q)
        return flat, q

    def counts(self, x, y, given: tuple) -> np.ndarray:
        """Counts of shape (q, Kx, Ky): the strata of `given` (those that occur, when there are many)."""
        kx, ky = self._cards[x], self._cards[y]
        flat, q = self.strata(tuple(given))
        flat = (flat * kx + self._codes[x]) * ky + self._codes[y]                # (n,)
        return np.bincount(flat, minlength=q * kx * ky).reshape(q, kx, ky)

    def compute(self, x, y, given):
        from scipy import special  # loaded on first use, not by ``import causalnet``
        stat, dof = contingency_statistic(self.counts(x, y, given), self.name)
        return 1.0 if dof <= 0 else float(special.chdtrc(dof, stat))


class GSquare(ChiSquare):
    """The likelihood-ratio G², strata and degrees of freedom as :class:`ChiSquare`."""

    name = "g2"


class FisherZ(CITest):
    """Fisher's z on the partial correlation (from the inverse of the correlation submatrix)."""

    name = "fisher_z"
    discrete = False

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self.names = list(table.names)
        self._pos = {v: i for i, v in enumerate(self.names)}
        x = np.column_stack([table.column(v).values for v in self.names])        # (n, V)
        self.corr = np.corrcoef(x, rowvar=False)                                 # (V, V)

    def compute(self, x, y, given):
        from scipy import special  # loaded on first use, not by ``import causalnet``
        idx = [self._pos[v] for v in (x, y, *given)]
        sub = self.corr[np.ix_(idx, idx)]                                        # (2+|S|, 2+|S|)
        prec = np.linalg.pinv(sub)
        r = -prec[0, 1] / sqrt(prec[0, 0] * prec[1, 1]) if prec[0, 0] * prec[1, 1] > 0 else 0.0
        r = min(max(r, -1 + 1e-12), 1 - 1e-12)
        dof = self.table.n - len(given) - 3
        if dof <= 0:
            return 1.0
        z = 0.5 * log((1 + r) / (1 - r)) * sqrt(dof)
        return float(special.erfc(abs(z) / sqrt(2.0)))


TESTS = {"chi2": ChiSquare, "g2": GSquare, "fisher_z": FisherZ}
