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

**Mixed data** — ``"cg-lrt"``, a conditional Gaussian likelihood-ratio test.
When x or y is real, that one is the response r and the other one e:
``G = 2 [ℓ(r | e, S) − ℓ(r | S)]`` where ``ℓ`` is the maximised CG
log-likelihood of a real node given mixed parents (least squares in each
configuration of the discrete parents, ML variance; the local term of the
``"loglik-cg"`` score), with ``k(e, S) − k(S)`` degrees of freedom,
``k = q (p + 2)`` counted over the q configurations that occur. This is the
test of the CG direction (discrete → real): with two real columns it is one
partial-correlation test per configuration of S's discrete columns (and
symmetric in x, y). Rows in a configuration of ``(e, S)``'s discrete columns
with fewer than ``p + 3`` rows (no residual variance to speak of) are left out
of both fits. When x and y are both discrete, the response would be discrete
with real regressors, outside CG families; the test then compares the
saturated CG models (Andrews, Ramsey & Cooper 2018): ``L(A)`` is the maximised
log-likelihood of a table over A's discrete columns and, per configuration, a
multivariate Gaussian of its real columns, with ``P(A)`` free parameters, and
``G = 2 [L(x, y, S) − L(y, S) − L(x, S) + L(S)]`` has
``P(x, y, S) − P(y, S) − P(x, S) + P(S)`` degrees of freedom (G² when S is
discrete too). The p-value is ``scipy.stats.chi2.sf(G, dof)``.

Every test caches its p-values (``x ⫫ y | S`` and ``y ⫫ x | S`` are one
entry), so PC's second visit of an edge costs nothing.
"""

from __future__ import annotations

from collections.abc import Hashable
from math import log, sqrt

import numpy as np

from .conditional import LOG_2PI, Moments, config_index
from .data import Table

__all__ = ["CITest", "ChiSquare", "GSquare", "FisherZ", "ConditionalGaussianLRT", "TESTS", "contingency_statistic"]

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


class ConditionalGaussianLRT(CITest):
    """The conditional Gaussian likelihood-ratio test on mixed columns: regression or saturated (see the module)."""

    name = "cg-lrt"
    discrete = None                      # either kind of column

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self._joint: dict = {}

    def joint(self, names: frozenset) -> tuple[float, int]:
        """``(L(A), P(A))`` of the saturated CG model of the columns `names` (cached)."""
        hit = self._joint.get(names)
        if hit is not None:
            return hit
        order = [v for v in self.table.names if v in names]
        disc = [v for v in order if self.table.column(v).is_discrete]
        real = [v for v in order if not self.table.column(v).is_discrete]
        config, _ = config_index(self.table, disc)
        config = np.unique(config, return_inverse=True)[1].reshape(-1)                # (n,) occurring configs
        q = int(config.max()) + 1 if config.size else 0
        counts = np.bincount(config, minlength=q).astype(np.float64)                  # (q,)
        ll = float(np.sum(counts * np.log(counts / self.table.n)))
        params = q - 1
        d = len(real)
        if d:
            values = np.column_stack([self.table.column(v).values for v in real])      # (n, d)
            mo = Moments.from_rows(config, q, values)
            ok = counts > d
            cov = mo.scatter[ok] / counts[ok, None, None]                              # (q', d, d)
            sign, logdet = np.linalg.slogdet(cov)
            ok_idx = np.flatnonzero(ok)[sign > 0]
            good = sign > 0
            ll += float(np.sum(-0.5 * counts[ok_idx] * (d * LOG_2PI + logdet[good] + d)))
            params += len(ok_idx) * (d + d * (d + 1) // 2)
        self._joint[names] = (ll, params)
        return ll, params

    def regression(self, resp: Hashable, extra: Hashable, given: tuple) -> tuple[float, int]:
        """``(G, dof)`` of adding `extra` to the CG regression of the real column `resp` on `given`."""
        col = self.table.column
        full = (extra, *given)
        disc_full = [v for v in full if col(v).is_discrete]
        real_full = [v for v in full if not col(v).is_discrete]
        real_s = [v for v in given if not col(v).is_discrete]
        cfg, _ = config_index(self.table, disc_full)
        cfg = np.unique(cfg, return_inverse=True)[1].reshape(-1)                       # (n,) occurring configs
        counts = np.bincount(cfg)
        keep = counts[cfg] >= len(real_full) + 3                                        # (n,) rows with residual dof
        if not keep.any():
            return 0.0, 0
        y = col(resp).values[keep]
        ll1, k1 = _cg_regression(cfg[keep], [col(v).values[keep] for v in real_full], y)
        cfg0, _ = config_index(self.table, [v for v in given if col(v).is_discrete], np.flatnonzero(keep))
        ll0, k0 = _cg_regression(np.unique(cfg0, return_inverse=True)[1].reshape(-1),
                                 [col(v).values[keep] for v in real_s], y)
        return 2.0 * (ll1 - ll0), k1 - k0

    def compute(self, x, y, given):
        from scipy.stats import chi2  # loaded on first use, not by ``import causalnet``
        col = self.table.column
        if not (col(x).is_discrete and col(y).is_discrete):
            resp, extra = (y, x) if not col(y).is_discrete else (x, y)
            stat, dof = self.regression(resp, extra, tuple(given))
        else:
            s = frozenset(given)
            lxy, pxy = self.joint(s | {x, y})
            lx, px = self.joint(s | {x})
            ly, py = self.joint(s | {y})
            l0, p0 = self.joint(s)
            stat, dof = 2.0 * (lxy - lx - ly + l0), pxy - px - py + p0
        if dof <= 0:
            return 1.0
        return float(chi2.sf(max(stat, 0.0), dof))


def _cg_regression(config: np.ndarray, xs: list, y: np.ndarray) -> tuple[float, int]:
    """``(maximised log-likelihood, q (p + 2))`` of least squares of `y` on `xs` in each configuration (n,)."""
    q = int(config.max()) + 1
    mo = Moments.from_rows(config, q, np.column_stack([*xs, y]))                        # (q, p + 1) moments
    _, _, var = mo.solve("response")
    var = np.maximum(var, 1e-300)
    return mo.loglik(var), q * (len(xs) + 2)


TESTS = {"chi2": ChiSquare, "g2": GSquare, "fisher_z": FisherZ, "cg-lrt": ConditionalGaussianLRT}
