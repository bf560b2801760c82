r"""Nearest-neighbour matching with replacement, and the Abadie–Imbens standard error.

Each unit's missing potential outcome is imputed by the mean outcome of its
``M`` nearest neighbours in the other arm (``n_neighbors=M``), drawn with
replacement. "Nearest" is measured on

- the **propensity score** ``e(Z) = P(T = treated | Z)`` (``match_on="propensity"``,
  a logistic fit on the adjustment set), or
- the **covariates** themselves under the Mahalanobis distance of the
  adjustment set (``match_on="covariates"``, the covariance of all rows; the
  metric of Stata's ``teffects nnmatch``).

The ATT averages ``Y_i − Ŷ_i(0)`` over the treated, the ATC ``Ŷ_j(1) − Y_j``
over the controls, the ATE ``Ŷ_i(1) − Ŷ_i(0)`` over all (a unit's own arm is
its observed outcome).

**Ties** (``ties=True``, the default, as Stata's ``teffects``): a unit's match
set ``J(i)`` holds every unit of the other arm as near as its M-th nearest
(distances equal to 1e-12 relative), so it can hold more than M units, each
weighing ``1/#J(i)``. Discrete covariates and propensity scores of identical
covariate rows tie often; ``ties=False`` keeps exactly M, broken by the search
order.

**Bias adjustment** (``bias_adjust=True``; Abadie and Imbens 2011, Stata's
``biasadj``): with ``μ̂_w(z)`` the least-squares fit of ``Y`` on ``[1, Z]``
among the arm-w units used as matches, each weighted by how often it is used,
a match contributes ``Y_j + μ̂_w(Z_i) − μ̂_w(Z_j)`` instead of ``Y_j``: the
linear part of the covariate discrepancy the match leaves is removed. ``Z`` is
the adjustment set, whatever is matched on.

**Standard error.** Abadie and Imbens (2006) population variance, with
``K_i = M Σ_l 1{i ∈ J(l)} / #J(l)`` the (tie-weighted) number of times unit i
is used as a match and the conditional
variance ``σ²(X_i, T_i)`` estimated from the unit's ``J = 2`` nearest
neighbours in its own arm, ``σ̂²_i = J/(J+1) (Y_i − mean of their Y)²`` (with ties:
the ``L ≥ J`` units as near as the J-th, and ``L/(L+1)``):

- ATE: ``V = N⁻² Σ_i [(Ŷ_i(1) − Ŷ_i(0) − τ)² + ((K_i/M)² + (2M−1) K_i / M²) σ̂²_i]``;
- ATT: ``V = N₁⁻² [Σ_{treated} (Y_i − Ŷ_i(0) − τ)² + Σ_{controls} K_j (K_j − 1)/M² σ̂²_j]``;
- ATC: the same with the arms exchanged.

With ``match_on="propensity"`` the score is treated as known (the correction
of Abadie and Imbens 2016 for an estimated score is not applied). This
analytic interval is the default (``ci="auto"``): Abadie and Imbens (2008)
show that the bootstrap is not valid for nearest-neighbour matching with a
fixed number of matches, so ``ci="bootstrap"`` refits every resample but
warns. With a bias adjustment the imputed outcomes in these formulas are
the adjusted ones.

Reproduced: the Mixtape's (Cunningham 2021) propensity matching of the NSW
treated against CPS-1, ``teffects psmatch ..., atet nn(5)``: ATT 1,725.08
(tests/estimation/test_mixtape.py).

References
----------
.. [1] A. Abadie, G. W. Imbens, "Large sample properties of matching
       estimators for average treatment effects", Econometrica 74(1), 2006.
.. [2] A. Abadie, G. W. Imbens, "On the failure of the bootstrap for
       matching estimators", Econometrica 76(6), 2008.
.. [3] A. Abadie, G. W. Imbens, "Bias-corrected matching estimators for
       average treatment effects", J. Business & Economic Statistics 29(1), 2011.

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=1000)
>>> t = (rng.random(1000) < 1 / (1 + np.exp(-z))).astype(int)
>>> y = 2.0 * t + z + rng.normal(size=1000)
>>> e = cn.estimate("Z -> T -> Y; Z -> Y", pd.DataFrame({"Z": z, "T": t, "Y": y}), "T", "Y",
...                 method="matching", estimand="att")
>>> e.ci_method, bool(abs(e.value - 2.0) < 3 * e.std_err)
('analytic', True)
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..errors import ModelError, ResourceError
from .estimators import Estimator, is_data, resampled_rows
from .linear import logistic_regression

__all__ = ["Matching", "nearest_neighbours", "match_sets", "abadie_imbens_variance"]

#: Neighbours in the own arm for the conditional variance (Abadie & Imbens' J).
_J = 2
#: Relative distance within which a pool row ties with the M-th nearest.
_TIE = 1e-12
#: Most (query, match) pairs the tied match sets may hold.
_MAX_PAIRS = 50_000_000


def nearest_neighbours(query: np.ndarray, pool: np.ndarray, m: int, *, exclude_self: bool = False) -> np.ndarray:
    """Indices (q, m) into `pool` of the `m` nearest rows to each row of `query` (Euclidean).

    Parameters
    ----------
    query : ndarray of shape (q, d)
    pool : ndarray of shape (p, d)
    m : int
    exclude_self : bool
        `query` is `pool`: skip each row's own index.
    """
    from scipy.spatial import cKDTree  # heavy import, only here

    k = m + 1 if exclude_self else m
    if k > len(pool):
        raise ModelError(f"matching needs {k} neighbours but the arm has only {len(pool)} rows")
    _, idx = cKDTree(pool).query(query, k=k)
    idx = idx.reshape(len(query), k)                                          # (q, k)
    if exclude_self:
        own = np.arange(len(query))[:, None]
        keep = idx != own                                                     # drop own index (or the last)
        keep[keep.all(axis=1), -1] = False
        idx = idx[keep].reshape(len(query), m)                                # (q, m)
    return idx


def match_sets(query: np.ndarray, pool: np.ndarray, m: int, *, ties: bool = True
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The match sets of the rows of `query` in `pool`, as (query, pool row, weight) triples.

    With ties, identical query rows share one match set, found once: a
    discrete covariate with two values costs two sets, however many rows.

    Parameters
    ----------
    query : ndarray of shape (q, d)
    pool : ndarray of shape (p, d)
    m : int
        Matches per query row.
    ties : bool
        Also every pool row as near as the m-th nearest (see the module); else exactly `m`.

    Returns
    -------
    sets, matches : ndarray of shape (s,), int
        The set (a distinct query row) and the pool index of each pair.
    weights : ndarray of shape (s,)
        ``1/#J``: each set's weights sum to one.
    inverse : ndarray of shape (q,), int
        The set of each query row.
    """
    from scipy.spatial import cKDTree  # heavy import, only here

    if m > len(pool):
        raise ModelError(f"matching needs {m} neighbours but the arm has only {len(pool)} rows")
    tree = cKDTree(pool)
    if not ties:
        _, idx = tree.query(query, k=m)
        q = len(query)
        return np.repeat(np.arange(q), m), np.reshape(idx, (q, m)).ravel(), np.full(q * m, 1.0 / m), np.arange(q)
    distinct, inverse = np.unique(query, axis=0, return_inverse=True)         # (u, d), (q,)
    dist, _ = tree.query(distinct, k=m)
    radius = np.reshape(dist, (len(distinct), m))[:, -1] * (1.0 + _TIE)       # (u,)
    sizes = tree.query_ball_point(distinct, radius, return_length=True)       # (u,)
    if sizes.sum() > _MAX_PAIRS:
        raise ResourceError(f"tied match sets hold {int(sizes.sum()):,} pairs (more than {_MAX_PAIRS:,}); "
                            f"use ties=False")
    found = tree.query_ball_point(distinct, radius)
    sets = np.repeat(np.arange(len(distinct)), sizes)
    matches = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
    return sets, matches, 1.0 / sizes[sets], np.asarray(inverse).ravel()


def abadie_imbens_variance(y: np.ndarray, a1: np.ndarray, y1: np.ndarray, y0: np.ndarray, used: np.ndarray,
                           sigma2: np.ndarray, m: int, estimand: str) -> float:
    """The Abadie–Imbens (2006) population variance of the matching estimator (see the module).

    Parameters
    ----------
    y : ndarray of shape (n,)
    a1 : ndarray of shape (n,)
        1 for the treated, 0 for the controls.
    y1, y0 : ndarray of shape (n,)
        Observed or imputed potential outcomes.
    used : ndarray of shape (n,)
        K_i, how many times each unit serves as a match.
    sigma2 : ndarray of shape (n,)
        Conditional variance estimates.
    m : int
    estimand : {"ate", "att", "atc"}
    """
    km = used / m
    if estimand == "ate":
        tau = np.mean(y1 - y0)
        return float(np.sum((y1 - y0 - tau) ** 2 + (km ** 2 + (2 * m - 1) * used / m ** 2) * sigma2) / len(y) ** 2)
    own = a1 > 0 if estimand == "att" else a1 == 0                            # the target arm
    d = (y1 - y0)[own]
    n_t = own.sum()
    other = ~own
    extra = np.sum((used * (used - 1) / m ** 2 * sigma2)[other])
    return float((np.sum((d - d.mean()) ** 2) + extra) / n_t ** 2)


class Matching(Estimator):
    """Nearest-neighbour matching with replacement on the propensity or the covariates (see the module)."""

    name = "matching"
    default_ci = "analytic"
    method_options = ("ties", "bias_adjust")
    bootstrap_warning = ("the bootstrap is not valid for nearest-neighbour matching with a fixed number of "
                         "matches (Abadie & Imbens 2008); ci='analytic' gives the Abadie-Imbens standard error")

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.kind != "binary":
            raise ModelError(f"method 'matching' needs a binary treatment; {prep.treatment!r} is {prep.kind}")
        if estimand == "cate":
            raise ModelError("method 'matching' estimates 'ate', 'att' or 'atc', not per-row effects")
        if prep.z.shape[1] == 0:
            raise ModelError("method 'matching' needs covariates to match on, but the adjustment set is empty; "
                             "with nothing to adjust for, use method='regression'")
        self.m = options.get("n_neighbors", 1)
        if not isinstance(self.m, (int, np.integer)) or self.m < 1:
            raise ModelError(f"n_neighbors must be an int >= 1, got {self.m!r}")
        self.on = options.get("match_on", "propensity")
        if self.on not in ("propensity", "covariates"):
            raise ModelError(f"match_on must be 'propensity' or 'covariates', got {self.on!r}")
        self.ties, self.bias_adjust = options.get("ties", True), options.get("bias_adjust", False)
        for name, value in (("ties", self.ties), ("bias_adjust", self.bias_adjust)):
            if not isinstance(value, (bool, np.bool_)):
                raise ModelError(f"{name} must be True or False, got {value!r}")

    def features(self, rows: np.ndarray) -> np.ndarray:
        """What is matched on, for the given rows: (len(rows), 1) scores or (len(rows), kz) whitened covariates."""
        p = self.prep
        if self.on == "propensity":
            xz = p.covariates()[rows]                                         # (r, 1+kz)
            beta = logistic_regression(xz, p.a1[rows], np.ones((1, len(rows))))[0]
            return special.expit(xz @ beta)[:, None]                          # (r, 1)
        z = p.z[rows]                                                         # (r, kz)
        cov = np.atleast_2d(np.cov(z, rowvar=False))                          # (kz, kz)
        try:
            root = np.linalg.cholesky(np.linalg.inv(cov))                     # Mahalanobis: |L'(z - z')|
        except np.linalg.LinAlgError as err:
            raise ModelError("the adjustment covariates are collinear: the Mahalanobis distance is undefined; "
                             "use match_on='propensity'") from err
        return z @ root                                                       # (r, kz)

    def impute(self, rows: np.ndarray) -> dict:
        """Potential outcomes, match counts K and σ̂² for the rows `rows` (indices into the data, repeats allowed)."""
        p = self.prep
        x, y, a1 = self.features(rows), p.y[rows], p.a1[rows]
        t_idx, c_idx = np.flatnonzero(a1 > 0), np.flatnonzero(a1 == 0)
        y1, y0, used = y.copy(), y.copy(), np.zeros(len(rows))
        need_c = self.estimand in ("ate", "att")                              # treated need control matches
        need_t = self.estimand in ("ate", "atc")
        for own, other, out, needed in ((t_idx, c_idx, y0, need_c), (c_idx, t_idx, y1, need_t)):
            if not needed:
                continue
            u, j, wt, inv = match_sets(x[own], x[other], self.m, ties=self.ties)
            j = other[j]                                                      # pool rows as indices of `rows`
            mult = np.bincount(inv)                                           # query rows per match set
            counts = np.bincount(j, weights=wt * mult[u], minlength=len(rows))   # Σ_l 1{j ∈ J(l)} / #J(l)
            target, shift = y[j], 0.0
            if self.bias_adjust:                                              # Y_j + μ̂(Z_i) − μ̂(Z_j)
                slope = self._bias_slope(rows, other, counts)                 # (kz,)
                z = self.prep.z[rows]
                target, shift = target - z[j] @ slope, z[own] @ slope
            out[own] = np.bincount(u, weights=wt * target, minlength=len(mult))[inv] + shift
            used += self.m * counts
        sigma2 = np.zeros(len(rows))
        for arm in (t_idx, c_idx):
            sigma2[arm] = self._own_variance(x[arm], y[arm])
        return {"y": y, "a1": a1, "y1": y1, "y0": y0, "used": used, "sigma2": sigma2}

    def _own_variance(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """σ̂² (r,) of each unit of one arm from its J nearest others there (with ties: all L as near, L/(L+1))."""
        if not self.ties:
            nb = nearest_neighbours(x, x, _J, exclude_self=True)                 # (r, J)
            return _J / (_J + 1) * (y - y[nb].mean(axis=1)) ** 2
        u, j, _, inv = match_sets(x, x, _J + 1, ties=True)                      # each row is in its own set
        size = np.bincount(u)[inv] - 1.0                                        # L >= J others
        mean = (np.bincount(u, weights=y[j])[inv] - y) / size
        return size / (size + 1) * (y - mean) ** 2

    def _bias_slope(self, rows: np.ndarray, arm: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The slopes (kz,) of μ̂: the least-squares fit of Y on [1, Z] over `arm`, weighted by use."""
        z = self.prep.z[rows]                                                 # (r, kz)
        xz = np.column_stack([np.ones(len(rows)), z])
        w = np.zeros(len(rows))
        w[arm] = counts[arm]
        root = np.sqrt(w)[:, None]
        return np.linalg.lstsq(xz * root, self.prep.y[rows] * root[:, 0], rcond=None)[0][1:]

    def _value(self, parts: dict) -> float:
        own = {"ate": slice(None), "att": parts["a1"] > 0, "atc": parts["a1"] == 0}[self.estimand]
        return float(np.mean((parts["y1"] - parts["y0"])[own]))

    def fit(self, w):
        out = np.empty(w.shape[0])
        for i, wi in enumerate(w):
            rows = resampled_rows(wi)
            parts = self.impute(rows)
            out[i] = self._value(parts)
            if is_data(w):
                self._parts = parts
                sel = {"ate": slice(None), "att": parts["a1"] > 0, "atc": parts["a1"] == 0}[self.estimand]
                self.means = np.array([parts["y1"][sel].mean(), parts["y0"][sel].mean()])
                self.diagnostics["max_times_matched"] = int(parts["used"].max())
        return out

    def analytic(self):
        value = float(self.fit(np.ones((1, self.prep.n)))[0])
        q = self._parts
        var = abadie_imbens_variance(q["y"], q["a1"], q["y1"], q["y0"], q["used"], q["sigma2"], self.m,
                                     self.estimand)
        return value, float(np.sqrt(var))
