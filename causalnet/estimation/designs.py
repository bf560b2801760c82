r"""Effects identified by a study design: difference-in-differences and sharp regression discontinuity.

These methods do not adjust for a set read off the graph: the design supplies
the identifying assumption, which the result's ``.estimand`` states.

**Difference-in-differences** (``method="did"``): `treatment` is the
treated-group indicator G, ``time=`` the post-period indicator P (a column
with two values, the larger is "post"). The effect is the coefficient of G·P
in the least-squares fit ``Y ~ 1 + G + P + G·P``, i.e.
``(Ȳ_{G=1,P=1} − Ȳ_{G=1,P=0}) − (Ȳ_{G=0,P=1} − Ȳ_{G=0,P=0})``, the ATT under
parallel trends. Standard errors are clustered by ``unit=`` (the
Liang–Zeger sandwich with the small-sample factor ``G/(G−1) · (N−1)/(N−K)``,
statsmodels' ``cov_type="cluster"``), HC1 without `unit`. With
``ci="bootstrap"`` whole units are resampled (the cluster bootstrap).

**Sharp regression discontinuity** (``method="rdd"``): `treatment` is the 0/1
treatment indicator, ``running=`` the score and ``cutoff=`` the threshold,
with treatment exactly ``1{score ≥ cutoff}`` (or exactly ``1{score < cutoff}``).
The effect at the cutoff is the jump of a local linear regression with the
triangular kernel ``K = max(0, 1 − |X − c| / h)``: the coefficient of
``1{X ≥ c}`` in the weighted fit ``Y ~ 1 + 1{X≥c} + (X − c) + 1{X≥c}(X − c)``
(separate slopes on each side), its standard error the HC1 sandwich of that
weighted fit at the chosen bandwidth (bandwidth treated as fixed). The
bandwidth ``h`` is ``bandwidth=`` or the Imbens–Kalyanaraman (2012)
MSE-optimal rule for the triangular kernel (:func:`ik_bandwidth`).

References
----------
.. [1] G. Imbens, K. Kalyanaraman, "Optimal bandwidth choice for the
       regression discontinuity estimator", Review of Economic Studies 79(3), 2012.
.. [2] M. Bertrand, E. Duflo, S. Mullainathan, "How much should we trust
       differences-in-differences estimates?", QJE 119(1), 2004.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.uniform(-1, 1, 4000)
>>> y = 0.5 * x + 1.0 * (x >= 0) + rng.normal(scale=0.3, size=4000)
>>> h = ik_bandwidth(x, y, 0.0)
>>> bool(0.05 < h < 1.0)
True
"""

from __future__ import annotations

import numpy as np

from ..errors import EvidenceError, ModelError
from .estimators import Estimator, is_data
from .linear import weighted_least_squares

__all__ = ["DifferenceInDifferences", "RegressionDiscontinuity", "ik_bandwidth", "sandwich_cov"]

#: The Imbens–Kalyanaraman constant of the triangular kernel.
_C_TRIANGULAR = 3.4375


def sandwich_cov(x: np.ndarray, resid: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Cluster-robust (`groups` given) or HC1 covariance (k, k) of least-squares coefficients.

    Parameters
    ----------
    x : ndarray of shape (n, k)
        The design (already multiplied by sqrt(weights) for weighted least squares).
    resid : ndarray of shape (n,)
        Residuals on the same scale.
    groups : ndarray of shape (n,), optional
        Cluster labels.
    """
    n, k = x.shape
    bread = np.linalg.pinv(x.T @ x)                                           # (k, k)
    score = x * resid[:, None]                                                # (n, k)
    if groups is None:
        meat, factor = score.T @ score, n / (n - k)
    else:
        _, codes = np.unique(groups, return_inverse=True)
        g = int(codes.max()) + 1
        sums = np.zeros((g, k))
        np.add.at(sums, codes, score)                                         # (g, k) per-cluster scores
        meat = sums.T @ sums
        factor = g / (g - 1) * (n - 1) / (n - k)
    return factor * bread @ meat @ bread


def _column(frame, name, role: str) -> np.ndarray:
    if name is None:
        raise ModelError(f"this method needs {role}= (a column of the data)")
    if name not in frame.columns:
        raise EvidenceError(f"{role}={name!r} is not a column of the data; columns: {list(frame.columns)[:20]}")
    col = frame[name]
    if col.isna().any():
        raise EvidenceError(f"the {role} column {name!r} has {int(col.isna().sum())} missing values")
    return col.to_numpy()


class DifferenceInDifferences(Estimator):
    """Two-group, two-period difference-in-differences with unit-clustered errors (see the module)."""

    name = "did"
    identification = "design"
    default_ci = "analytic"

    estimands = ("att", "ate")
    estimand_scope = "the effect on the treated group"

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.kind != "binary":
            raise ModelError(f"method 'did' needs a binary treated-group indicator; {prep.treatment!r} is {prep.kind}")
        time = _column(prep.frame, options.get("time"), "time")
        levels = np.unique(time)
        if len(levels) != 2:
            raise ModelError(f"the time column {options['time']!r} must take two values (pre, post); "
                             f"it takes {len(levels)}")
        post = (time == levels[1]).astype(np.float64)                         # (n,)
        unit = options.get("unit")
        self.groups = None if unit is None else _column(prep.frame, unit, "unit")
        self.x = np.column_stack([np.ones(prep.n), prep.a1, post, prep.a1 * post])   # (n, 4)
        cells = np.bincount((2 * prep.a1 + post).astype(np.int64), minlength=4)
        if cells.min() == 0:
            raise EvidenceError("difference-in-differences needs rows in all four group x period cells; "
                                f"counts (control pre, control post, treated pre, treated post) = {cells.tolist()}")

    @classmethod
    def design_formula(cls, treatment, outcome, options):
        t, y, p = treatment, outcome, options.get("time")
        return (f"(E[{y} | {t}=1, {p}=post] - E[{y} | {t}=1, {p}=pre]) - (E[{y} | {t}=0, {p}=post] - "
                f"E[{y} | {t}=0, {p}=pre]) (difference-in-differences; parallel trends)")

    def fit(self, w):
        beta = weighted_least_squares(self.x, self.prep.y, w)                 # (b, 4)
        if is_data(w):
            self.means = np.array([beta[0, :4].sum(), beta[0, :3].sum()])     # treated-post: with and without
        return beta[:, 3]

    def analytic(self):
        p = self.prep
        beta = weighted_least_squares(self.x, p.y, np.ones((1, p.n)))[0]
        self.fit(np.ones((1, p.n)))
        cov = sandwich_cov(self.x, p.y - self.x @ beta, self.groups)
        if self.groups is not None:
            self.diagnostics["clusters"] = int(len(np.unique(self.groups)))
        return float(beta[3]), float(np.sqrt(cov[3, 3]))

    def bootstrap_weights(self, b, rng):
        if self.groups is None:
            return super().bootstrap_weights(b, rng)
        _, codes = np.unique(self.groups, return_inverse=True)
        g = int(codes.max()) + 1
        draws = rng.integers(0, g, size=(b, g))                               # (b, g) units drawn
        counts = np.stack([np.bincount(d, minlength=g) for d in draws])       # (b, g)
        return counts[:, codes].astype(np.float64)                            # (b, n)


def _local_poly(x: np.ndarray, y: np.ndarray, degree: int) -> np.ndarray:
    design = np.vander(x, degree + 1, increasing=True)                        # (n, degree+1)
    return np.linalg.lstsq(design, y, rcond=None)[0]


def ik_bandwidth(x: np.ndarray, y: np.ndarray, cutoff: float) -> float:
    """The Imbens–Kalyanaraman (2012) bandwidth for local linear RD with the triangular kernel.

    The published algorithm (Review of Economic Studies 79(3), section 4.2),
    with X centred at the cutoff. Step 1: pilot bandwidth
    ``h₁ = 1.84 S_X N^(−1/5)``; the density at the cutoff
    ``f = (N₋ + N₊) / (2 N h₁)`` and the pooled variance ``σ²`` of Y about its
    side's mean within ``h₁`` (divided by ``N₋ + N₊``). Step 2: the third
    derivative ``m₃`` (6 × the cubic coefficient of a global cubic with a
    jump, fitted between the medians of X on each side);
    ``h₂,± = 3.56 (σ² / (f max(m₃², 0.01)))^(1/7) N±^(−1/7)``; the second
    derivatives ``m₂,±`` (2 × the quadratic coefficient of quadratics on each
    side within ``h₂,±``); the regularisers ``r± = 720 σ² / (N₂,± h₂,±⁴)``.
    Step 3: ``h = 3.4375 (2σ² / (f ((m₂,₊ − m₂,₋)² + r₊ + r₋)))^(1/5) N^(−1/5)``.

    Parameters
    ----------
    x : ndarray of shape (n,)
        The running variable.
    y : ndarray of shape (n,)
    cutoff : float

    Returns
    -------
    float

    Raises
    ------
    EvidenceError
        Too few rows near the cutoff on a side.
    """
    x, y = np.asarray(x, np.float64) - cutoff, np.asarray(y, np.float64)
    n = len(x)
    right = x >= 0
    h1 = 1.84 * np.std(x, ddof=1) * n ** (-0.2)
    near_l, near_r = (x < 0) & (x > -h1), right & (x < h1)
    if near_l.sum() < 2 or near_r.sum() < 2:
        raise EvidenceError(f"fewer than 2 rows within the pilot bandwidth {h1:.3g} on a side of the cutoff")
    f = (near_l.sum() + near_r.sum()) / (2 * n * h1)
    s2 = (np.sum((y[near_l] - y[near_l].mean()) ** 2) + np.sum((y[near_r] - y[near_r].mean()) ** 2)) / \
        (near_l.sum() + near_r.sum())
    lo, hi = np.median(x[~right]), np.median(x[right])
    mid = (x >= lo) & (x <= hi)
    cubic = np.column_stack([np.ones(mid.sum()), right[mid], x[mid], x[mid] ** 2, x[mid] ** 3])
    m3 = 6.0 * np.linalg.lstsq(cubic, y[mid], rcond=None)[0][4]
    m2, reg = {}, {}
    for s, side in (("-", ~right), ("+", right)):
        h2 = 3.56 * (s2 / (f * max(m3 ** 2, 0.01))) ** (1 / 7) * side.sum() ** (-1 / 7)
        inside = side & (np.abs(x) <= h2)
        if inside.sum() < 3:
            raise EvidenceError(f"fewer than 3 rows within {h2:.3g} of the cutoff on the {s} side")
        m2[s] = 2.0 * _local_poly(x[inside], y[inside], 2)[2]
        reg[s] = 720 * s2 / (inside.sum() * h2 ** 4)
    ratio = 2 * s2 / (f * ((m2["+"] - m2["-"]) ** 2 + reg["+"] + reg["-"]))
    return float(_C_TRIANGULAR * ratio ** 0.2 * n ** (-0.2))


class RegressionDiscontinuity(Estimator):
    """Sharp regression discontinuity: local linear fits with the triangular kernel (see the module)."""

    name = "rdd"
    identification = "design"
    default_ci = "analytic"

    estimands = ("ate",)
    estimand_scope = "the effect at the cutoff"

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.kind != "binary":
            raise ModelError(f"method 'rdd' needs a 0/1 treatment indicator; {prep.treatment!r} is {prep.kind}")
        cutoff = options.get("cutoff")
        if cutoff is None or not np.isfinite(float(cutoff)):
            raise ModelError(f"method 'rdd' needs a finite cutoff=, got {cutoff!r}")
        x = _column(prep.frame, options.get("running"), "running").astype(np.float64) - float(cutoff)   # (n,)
        above = (x >= 0).astype(np.float64)
        if np.array_equal(prep.a1, above):
            self.sign = 1.0
        elif np.array_equal(prep.a1, 1 - above):
            self.sign = -1.0
        else:
            bad = int(np.sum(prep.a1 != above))
            raise ModelError(f"the design is not sharp: the treatment {prep.treatment!r} differs from "
                             f"1{{{options['running']} >= {cutoff}}} in {bad} rows (and from its complement too)")
        h = options.get("bandwidth")
        h = ik_bandwidth(x, prep.y, 0.0) if h is None else float(h)
        if not h > 0:
            raise ModelError(f"bandwidth must be positive, got {h!r}")
        self.h = h
        self.k = np.maximum(0.0, 1.0 - np.abs(x) / h)                         # (n,) triangular kernel
        inside = self.k > 0
        for side, name in ((above, "above"), (1 - above, "below")):
            if np.sum(inside & (side > 0)) < 3:
                raise EvidenceError(f"fewer than 3 rows within the bandwidth {h:.3g} {name} the cutoff")
        self.x = np.column_stack([np.ones(prep.n), above, x, above * x])       # (n, 4)
        self.diagnostics.update({"bandwidth": h, "rows_in_bandwidth": int(inside.sum())})

    @classmethod
    def design_formula(cls, treatment, outcome, options):
        x, c, y = options.get("running"), options.get("cutoff"), outcome
        return (f"lim_{{{x}↓{c}}} E[{y} | {x}] - lim_{{{x}↑{c}}} E[{y} | {x}] (sharp regression discontinuity: "
                f"potential outcomes continuous at the cutoff; local linear, triangular kernel)")

    def fit(self, w):
        beta = weighted_least_squares(self.x, self.prep.y, w * self.k)        # (b, 4)
        if is_data(w):
            b = beta[0]
            lim = np.array([b[0] + b[1], b[0]])                                # above, below
            self.means = lim if self.sign > 0 else lim[::-1]
        return self.sign * beta[:, 1]

    def analytic(self):
        p = self.prep
        value = float(self.fit(np.ones((1, p.n)))[0])
        inside = self.k > 0
        root = np.sqrt(self.k[inside])[:, None]
        xw, yw = self.x[inside] * root, p.y[inside] * root[:, 0]              # whitened, (m, 4), (m,)
        beta = np.linalg.lstsq(xw, yw, rcond=None)[0]
        cov = sandwich_cov(xw, yw - xw @ beta)
        return value, float(np.sqrt(cov[1, 1]))
