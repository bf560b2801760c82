r"""Targeted maximum likelihood (TMLE) of the ATE, ATT or ATC of a discrete treatment.

The steps (van der Laan & Rose 2011, ch. 4; Gruber & van der Laan 2010 for a
continuous outcome):

1. the outcome is put on [0, 1], ``Y* = (Y − a)/(b − a)`` with ``a, b`` its
   smallest and largest values (a 0/1 outcome is left as it is);
2. an initial outcome model ``Q(T, Z) = E[Y* | T, Z]``: the logistic fit of
   ``Y* ~ 1 + D + Z`` for a 0/1 outcome, else the least-squares fit; either
   way its predictions are clipped to ``[0.005, 0.995]`` (the logistic
   fluctuation needs them inside (0, 1));
3. the propensities ``e_t(Z)`` (logistic, clipped by ``trim=``);
4. the logistic **fluctuation**: with the clever covariate
   ``H(A, Z) = A_treated ρ/e_treated − A_control ρ/e_control`` (``ρ = 1`` for
   the ATE, ``e_treated(Z)`` for the ATT, ``e_control(Z)`` for the ATC: the
   weights of :class:`~causalnet.estimation.estimators.IPW`), the
   one-parameter logistic regression of ``Y*`` on ``H`` with offset
   ``logit Q(T, Z)`` and no intercept gives ε; the updated models are
   ``Q*_treated = expit(logit Q(treated, Z) + ε ρ/e_treated)`` and
   ``Q*_control = expit(logit Q(control, Z) − ε ρ/e_control)``;
5. ``ψ = (b − a) · mean(Q*_treated − Q*_control)`` over the target rows (all
   rows, the treated, or the controls): for the ATT and ATC the distribution
   of Z in the target arm is its empirical one, so only Q needs targeting.

The analytic standard error is that of the efficient influence curve
(Hahn 1998 for the ATT), with ``r`` the target indicator and ``p̂ = mean(r)``:
``D = [H (Y* − Q*(T, Z)) + r (Q*_treated − Q*_control − ψ*)] / p̂``, and
``(b − a) · sd(D) / sqrt(n)`` (sample standard deviation, n − 1). It is the
default interval; ``ci="bootstrap"`` refits every step on each resample, all
replicates at once (each resample's outcome range rescales its own outcome).

References
----------
.. [1] M. J. van der Laan, S. Rose, "Targeted Learning", Springer, 2011.
.. [2] S. Gruber, M. J. van der Laan, "A targeted maximum likelihood estimator
       of a causal effect on a bounded continuous outcome", Int. J. Biostat. 6(1), 2010.
.. [3] J. Hahn, "On the role of the propensity score in efficient
       semiparametric estimation of average treatment effects", Econometrica 66(2), 1998.

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=2000)
>>> t = (rng.random(2000) < 1 / (1 + np.exp(-z))).astype(int)
>>> y = 2.0 * t + z + rng.normal(size=2000)
>>> e = cn.estimate("Z -> T -> Y; Z -> Y", pd.DataFrame({"Z": z, "T": t, "Y": y}), "T", "Y", method="tmle")
>>> e.method, bool(abs(e.value - 2.0) < 3 * e.std_err)
('tmle', True)
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..errors import ModelError
from .estimators import Weighting, is_data, target_mean
from .linear import logistic_regression, weighted_least_squares

__all__ = ["TMLE", "fluctuate"]

#: Bounds of the initial outcome predictions on the [0, 1] scale.
_Q_BOUND = 0.005


def fluctuate(y: np.ndarray, offset: np.ndarray, h: np.ndarray, w: np.ndarray, *, tol: float = 1e-12,
              max_iter: int = 100) -> np.ndarray:
    """ε of the logistic regression of `y` on `h` with `offset` and no intercept, per weighting (Newton).

    Parameters
    ----------
    y : ndarray of shape (n,) or (b, n)
        Outcome in [0, 1].
    offset, h : ndarray of shape (b, n)
    w : ndarray of shape (b, n)

    Returns
    -------
    ndarray of shape (b,)
    """
    eps = np.zeros(w.shape[0])
    for _ in range(max_iter):
        q = special.expit(offset + eps[:, None] * h)                          # (b, n)
        grad = np.sum(w * h * (y - q), axis=1)                                # (b,)
        hess = np.sum(w * h * h * q * (1 - q), axis=1)
        step = grad / np.maximum(hess, 1e-300)
        eps += step
        if not np.all(np.isfinite(eps)) or np.max(np.abs(step)) < tol:
            break
    return eps


class TMLE(Weighting):
    """Targeted maximum likelihood for the ATE, ATT or ATC of a discrete treatment (logistic fluctuation)."""

    name = "tmle"
    default_ci = "analytic"

    estimands = ("ate", "att", "atc")

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if self.flexible:
            raise ModelError("method 'tmle' fits logistic/linear nuisance models; model= and propensity_model= "
                             "are not supported (use method='aipw' for cross-fitted flexible models)")
        if np.ptp(prep.y) == 0:
            raise ModelError(f"the outcome {prep.outcome!r} is constant; there is no effect to estimate")

    def scale(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a, b − a) of each weighting's rows, each (b, 1): the outcome's range ((0, 1) for a 0/1 outcome)."""
        if self.prep.outcome_binary:
            return np.zeros((w.shape[0], 1)), np.ones((w.shape[0], 1))
        y = np.where(w > 0, self.prep.y, np.nan)                              # (b, n)
        lo, hi = np.nanmin(y, axis=1)[:, None], np.nanmax(y, axis=1)[:, None]
        return lo, np.maximum(hi - lo, 1e-300)

    def initial(self, w: np.ndarray, lo: np.ndarray, span: np.ndarray) -> tuple[np.ndarray, ...]:
        """Initial Q at the observed, treated and control levels, each (b, n), inside (0, 1)."""
        p = self.prep
        x, x1, x0 = (np.column_stack([np.ones(p.n), d, p.z]) for d in (p.d, p.d1, p.d0))   # (n, k)
        if p.outcome_binary:
            start = self.start("Q", x, p.y, np.ones(p.n)) if w.shape[0] > 1 else None
            beta = logistic_regression(x, p.y, w, start=start)               # (b, k)
            preds = [special.expit(beta @ m.T) for m in (x, x1, x0)]
        else:
            beta = weighted_least_squares(x, p.y, w)                          # (b, k), on the outcome's scale
            preds = [(beta @ m.T - lo) / span for m in (x, x1, x0)]           # (b, n) on [0, 1]
        qa, q1, q0 = (np.clip(q, _Q_BOUND, 1 - _Q_BOUND) for q in preds)    # (b, n) each
        return qa, q1, q0

    def fit(self, w):
        p = self.prep
        e1, e0 = self.propensities(w)                                         # (b, n) each
        if is_data(w):
            self.check_weights(e1, e0)
        lo, span = self.scale(w)                                              # (b, 1) each
        ys = (p.y - lo) / span                                                # (b, n) in [0, 1]
        qa, q1, q0 = self.initial(w, lo, span)
        h1, h0 = self.ratios(e1, e0)                                          # (b, n) ρ/e_t
        h = p.a1 * h1 - p.a0 * h0                                             # (b, n) clever covariate
        eps = fluctuate(ys, special.logit(qa), h, w)[:, None]                 # (b, 1)
        q1s = special.expit(special.logit(q1) + eps * h1)
        q0s = special.expit(special.logit(q0) - eps * h0)
        m1, m0 = target_mean(w, self.r, q1s), target_mean(w, self.r, q0s)     # (b,) each
        if is_data(w):
            qas = special.expit(special.logit(qa) + eps * h)
            psi = m1[0] - m0[0]
            curve = h * (ys - qas) + self.r * (q1s - q0s - psi)               # (1, n)
            self._curve = span[0, 0] * curve[0] / self.r.mean()               # (n,) influence curve, Y's scale
            self.means = lo[0, 0] + span[0, 0] * np.array([m1[0], m0[0]])
            self.diagnostics["epsilon"] = float(eps[0, 0])
        return span[:, 0] * (m1 - m0)

    def analytic(self):
        value = float(self.fit(np.ones((1, self.prep.n)))[0])
        return value, float(np.std(self._curve, ddof=1) / np.sqrt(self.prep.n))
