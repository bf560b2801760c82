r"""Meta-learners of the conditional average treatment effect (CATE): S-, T- and X-learner.

Features ``X`` are the adjustment set followed by the effect modifiers (each
column once); the per-row effects ``τ(X_i)`` are in ``effect.effects`` and
``effect.value`` is their mean over the target rows (all, the treated or the
controls). The base learners are any objects with scikit-learn's ``fit`` /
``predict`` (``model=``) and ``fit`` / ``predict_proba`` (``propensity_model=``),
cloned before each fit; by default least squares and logistic regression.

- **S-learner**: one model ``μ(X, T)`` fitted on the features
  ``[X, 1 − T, T]`` (the layout of EconML's ``SLearner``);
  ``τ(x) = μ(x, 1) − μ(x, 0)``.
- **T-learner**: one model per arm, ``τ(x) = μ₁(x) − μ₀(x)``.
- **X-learner** (Künzel et al. 2019): the T-learner's arm models impute
  individual effects, ``D₁ = Y − μ₀(X)`` on the treated and
  ``D₀ = μ₁(X) − Y`` on the controls; a model per arm regresses them on X
  (``τ₁``, ``τ₀``, clones of `model`) and the propensity ``g(x) = P(T=1 | x)``
  combines them: ``τ(x) = g(x) τ₀(x) + (1 − g(x)) τ₁(x)``.

Intervals: the bootstrap refits every learner on each resample (there is no
analytic standard error).

References
----------
.. [1] S. R. Künzel, J. S. Sekhon, P. J. Bickel, B. Yu, "Metalearners for
       estimating heterogeneous treatment effects using machine learning",
       PNAS 116(10), 2019.

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=2000)
>>> t = (rng.random(2000) < 1 / (1 + np.exp(-z))).astype(int)
>>> y = (1.0 + z) * t + z + rng.normal(size=2000)
>>> e = cn.estimate("Z -> T -> Y; Z -> Y", pd.DataFrame({"Z": z, "T": t, "Y": y}), "T", "Y",
...                 method="t-learner", estimand="cate", effect_modifiers=["Z"], n_bootstrap=20, seed=0)
>>> e.effects.shape, bool(np.corrcoef(e.effects, 1.0 + z)[0, 1] > 0.99)
((2000,), True)
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..errors import ModelError
from .estimators import Estimator, is_data, resampled_rows, target_mean
from .linear import logistic_regression

__all__ = ["MetaLearner", "SLearner", "TLearner", "XLearner", "LeastSquaresLearner", "LogisticLearner"]


class LeastSquaresLearner:
    """The default base regressor: least squares with an intercept (minimum-norm when collinear)."""

    def fit(self, x: np.ndarray, y: np.ndarray) -> LeastSquaresLearner:
        design = np.column_stack([np.ones(len(x)), x])                            # (n, 1+d)
        self.coef_ = np.linalg.lstsq(design, y, rcond=None)[0]
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.coef_[0] + x @ self.coef_[1:]


class LogisticLearner:
    """The default propensity model: maximum-likelihood logistic regression with an intercept."""

    def fit(self, x: np.ndarray, t: np.ndarray) -> LogisticLearner:
        design = np.column_stack([np.ones(len(x)), x])
        self.classes_ = np.unique(t)
        self.coef_ = logistic_regression(design, (t == self.classes_[-1]).astype(np.float64),
                                         np.ones((1, len(x))))[0]
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        p = special.expit(self.coef_[0] + x @ self.coef_[1:])
        return np.column_stack([1 - p, p])


def _fresh(model, default):
    if model is None:
        return default()
    from sklearn.base import clone  # optional heavy dependency

    return clone(model)


class MetaLearner(Estimator):
    """Shared parts of the meta-learners: features, arms, refitting per resample."""

    per_row = True

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.kind != "binary":
            raise ModelError(f"method {self.name!r} needs a binary treatment; {prep.treatment!r} is {prep.kind}")
        keep = [j for j, nm in enumerate(prep.m_names) if nm not in prep.z_names]
        self.features = np.column_stack([prep.z, prep.m[:, keep]])              # (n, d)
        if self.features.shape[1] == 0:
            raise ModelError(f"method {self.name!r} needs features: the adjustment set and effect_modifiers "
                             f"are both empty")

    def learn(self, x: np.ndarray, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Fit on (x, t, y) and return τ at every data row (n,)."""
        raise NotImplementedError

    def fit(self, w):
        p = self.prep
        out = np.empty(w.shape[0])
        for i, wi in enumerate(w):
            rows = resampled_rows(wi)
            tau = self.learn(self.features[rows], p.a1[rows], p.y[rows])      # (n,)
            out[i] = target_mean(wi[None], self.r, tau)[0]
            if is_data(w):
                self.effects = tau
        return out

    def _arm_models(self, x, t, y):
        m1 = _fresh(self.options.get("model"), LeastSquaresLearner).fit(x[t > 0], y[t > 0])
        m0 = _fresh(self.options.get("model"), LeastSquaresLearner).fit(x[t == 0], y[t == 0])
        return m1, m0


class SLearner(MetaLearner):
    """One outcome model on ``[X, 1 − T, T]``; τ(x) = μ(x, 1) − μ(x, 0)."""

    name = "s-learner"

    def learn(self, x, t, y):
        model = _fresh(self.options.get("model"), LeastSquaresLearner)
        model.fit(np.column_stack([x, 1 - t, t]), y)
        f, n = self.features, self.prep.n
        return model.predict(np.column_stack([f, np.zeros(n), np.ones(n)])) - \
            model.predict(np.column_stack([f, np.ones(n), np.zeros(n)]))


class TLearner(MetaLearner):
    """One outcome model per arm; τ(x) = μ₁(x) − μ₀(x)."""

    name = "t-learner"

    def learn(self, x, t, y):
        m1, m0 = self._arm_models(x, t, y)
        return m1.predict(self.features) - m0.predict(self.features)


class XLearner(MetaLearner):
    """Imputed effects regressed per arm, combined by the propensity (Künzel et al. 2019)."""

    name = "x-learner"

    def learn(self, x, t, y):
        m1, m0 = self._arm_models(x, t, y)
        treated, control = t > 0, t == 0
        tau1 = _fresh(self.options.get("model"), LeastSquaresLearner).fit(x[treated], y[treated] - m0.predict(x[treated]))
        tau0 = _fresh(self.options.get("model"), LeastSquaresLearner).fit(x[control], m1.predict(x[control]) - y[control])
        g = _fresh(self.options.get("propensity_model"), LogisticLearner).fit(x, t)
        g1 = g.predict_proba(self.features)[:, list(g.classes_).index(1)]     # (n,)
        return g1 * tau0.predict(self.features) + (1 - g1) * tau1.predict(self.features)
