r"""The front door for linear models: the product of two regressions.

When a set M satisfies the front-door criterion for (T, Y) — it intercepts
every directed path, no back-door path from T to M is open, and T blocks every
back-door path from M to Y — the effect is identified even with an unobserved
confounder of T and Y. In a linear model it is a product:

- stage 1, ``M_j ~ 1 + T``: the effect ``a_j`` of T on each mediator (no
  back-door path from T to M to adjust for);
- stage 2, ``Y ~ 1 + M + T``: the effects ``b_j`` of the mediators, T blocking
  their back-door paths;
- the effect of T on Y is ``Σ_j a_j b_j`` per unit of T (times
  ``treated − control``).

The analytic standard error is the delta method (Sobel) with the two stages'
OLS covariances: ``Var = bᵀ Σ_a b + aᵀ Σ_b a`` (the stages' estimates are
asymptotically uncorrelated); the bootstrap refits both stages for all
replicates at once.

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(0)
>>> u = rng.normal(size=5000)
>>> t = u + rng.normal(size=5000); m = 0.5 * t + rng.normal(size=5000); y = 2 * m + u + rng.normal(size=5000)
>>> g = cn.DAG.parse("T -> M -> Y; U -> T; U -> Y; U [latent]")
>>> e = cn.estimate(g, pd.DataFrame({"T": t, "M": m, "Y": y}), "T", "Y", method="frontdoor")
>>> sorted(e.adjustment_set), bool(abs(e.value - 1.0) < 3 * e.std_err)
(['M'], True)
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .estimators import Estimator, is_data
from .linear import weighted_least_squares

__all__ = ["FrontDoorLinear"]


class FrontDoorLinear(Estimator):
    """Two-stage linear front-door estimator (see the module); ``prep.z`` holds the front-door set."""

    name = "frontdoor"
    identification = "frontdoor"
    default_ci = "analytic"

    estimands = ("ate",)
    estimand_scope = "linear, homogeneous"

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.d.shape[1] != 1:
            raise ModelError(f"method 'frontdoor' needs a binary or continuous treatment; {prep.treatment!r} "
                             f"is {prep.kind} (one regression column expected, got {prep.d.shape[1]})")
        self.scale = float(prep.d1[0, 0] - prep.d0[0, 0])
        self.x1 = np.column_stack([np.ones(prep.n), prep.d])                 # (n, 2): stage 1
        self.x2 = np.column_stack([np.ones(prep.n), prep.z, prep.d])         # (n, 2+km): stage 2

    def stages(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a, b): effects of T on each mediator (b, km) and of the mediators on Y (b, km)."""
        p = self.prep
        a = np.stack([weighted_least_squares(self.x1, p.z[:, j], w)[:, 1] for j in range(p.z.shape[1])],
                     axis=1)                                                  # (b, km)
        b = weighted_least_squares(self.x2, p.y, w)[:, 1:-1]                 # (b, km)
        return a, b

    def fit(self, w):
        a, b = self.stages(w)
        if is_data(w):
            self.diagnostics.update({"stage1": a[0].tolist(), "stage2": b[0].tolist()})
        return self.scale * np.sum(a * b, axis=1)

    def analytic(self):
        p = self.prep
        ones = np.ones((1, p.n))
        a, b = (v[0] for v in self.stages(ones))
        value = float(self.fit(ones)[0])
        r1 = p.z - self.x1 @ np.linalg.lstsq(self.x1, p.z, rcond=None)[0]    # (n, km) stage-1 residuals
        s1 = r1.T @ r1 / (p.n - 2)                                           # (km, km)
        inv1 = np.linalg.inv(self.x1.T @ self.x1)
        cov_a = s1 * inv1[1, 1]                                              # (km, km)
        beta2 = weighted_least_squares(self.x2, p.y, ones)[0]
        r2 = p.y - self.x2 @ beta2
        cov2 = r2 @ r2 / (p.n - self.x2.shape[1]) * np.linalg.inv(self.x2.T @ self.x2)
        cov_b = cov2[1:-1, 1:-1]
        var = b @ cov_a @ b + a @ cov_b @ a
        return value, float(abs(self.scale) * np.sqrt(var))
