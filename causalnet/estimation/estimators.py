r"""The estimators: outcome regression, weighting, doubly robust, plug-in and instruments.

Notation: ``A_t`` indicates the rows with treatment level t, ``e_t(Z) = P(T=t | Z)``
the propensity, ``μ_t(Z) = E[Y | T=t, Z]`` the outcome model, ``r`` the rows
the estimand averages over (all rows for the ATE, the treated for the ATT, the
controls for the ATC) and ``ρ`` their propensity (1, ``e_treated`` or
``e_control``). For each arm t the mean potential outcome over the target is

- regression (g-computation): ``Σ r μ_t(Z) / Σ r``;
- IPW (normalised, Hájek): ``Σ A_t (ρ/e_t) Y / Σ A_t (ρ/e_t)``;
- AIPW (doubly robust): ``Σ [r μ_t(Z) + A_t (ρ/e_t)(Y − μ_t(Z))] / Σ r``.

The effect is the treated arm's mean minus the control arm's. Every
estimator evaluates a whole matrix of row weightings ``W`` of shape (b, n) at
once (:mod:`causalnet.estimation.linear`): the data's own fit is the weighting
of ones, bootstrap replicates are resampling counts.

Analytic standard errors: the regression's from the linear model's
covariance (the logistic one by the delta method), IPW's and AIPW's from their
influence functions with the propensity treated as known (for the IPW ATE
that is conservative, Lunceford & Davidian 2004), two-stage least squares from
its homoskedastic covariance.

References
----------
.. [1] J. K. Lunceford, M. Davidian, "Stratification and weighting via the
       propensity score in estimation of causal treatment effects", Statistics
       in Medicine 23, 2004.
.. [2] V. Chernozhukov et al., "Double/debiased machine learning for treatment
       and structural parameters", Econometrics Journal 21, 2018.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import special

from ..errors import CausalNetWarning, ModelError
from .linear import bootstrap_counts, cross_moments, logistic_regression, solve_batched, weighted_least_squares
from .prepare import Prepared, prepare

__all__ = ["Estimator", "Weighting", "Regression", "IPW", "AIPW", "TwoStageLeastSquares", "Plugin",
           "is_data", "target_mean", "resampled_rows"]


class Estimator:
    """One estimation method on prepared data: :meth:`fit` under many weightings, :meth:`analytic`.

    Attributes
    ----------
    name : str
    flexible : bool
        Whether a scikit-learn model is used (replicates then refit in a loop).
    means : ndarray of shape (2,) or None
        After :meth:`fit` on the data: the target means of Y(treated) and Y(control).
    """

    name = "estimator"
    #: How the graph identifies the effect: "adjustment", "plugin", "instrument", "frontdoor" or "design".
    identification = "adjustment"
    #: The interval ``ci="auto"`` gives.
    default_ci = "bootstrap"
    #: Whether ``.effects`` holds per-row effects (``estimand="cate"``).
    per_row = False
    #: A warning for ``ci="bootstrap"`` when the bootstrap is known to be invalid for the method.
    bootstrap_warning: str | None = None
    #: The estimands the method estimates (None: all of them), and what its effect is, for the error.
    estimands: tuple | None = None
    estimand_scope = ""
    #: Options of this method only, passed to :func:`~causalnet.estimate` as keywords.
    method_options: tuple = ()

    def __init__(self, prep: Prepared, estimand: str, options: dict) -> None:
        if self.estimands is not None and estimand not in self.estimands:
            allowed = " or ".join(f"estimand={e!r}" for e in self.estimands)
            scope = f" ({self.estimand_scope})" if self.estimand_scope else ""
            raise ModelError(f"method {self.name!r} estimates {allowed} only{scope}, got {estimand!r}")
        self.prep, self.estimand, self.options = prep, estimand, dict(options)
        self.r = prep.target(estimand)                                            # (n,)
        self.means = None
        self.effects = None
        self.diagnostics: dict = {}

    def start(self, key: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The logistic fit of `y` on `x` under the weights `w` (n,), computed once: replicates start there."""
        starts = self.__dict__.setdefault("_starts", {})
        if key not in starts:
            starts[key] = logistic_regression(x, y, w[None])[0]
        return starts[key]

    @property
    def flexible(self) -> bool:
        return self.options.get("model") is not None or self.options.get("propensity_model") is not None

    def fit(self, w: np.ndarray) -> np.ndarray:
        """The estimate under each weighting: w (b, n) -> (b,)."""
        raise NotImplementedError

    def bootstrap_weights(self, b: int, rng: np.random.Generator) -> np.ndarray:
        """Resampling counts (b, n) of `b` bootstrap replicates: rows drawn with replacement."""
        return bootstrap_counts(self.prep.n, b, rng)

    @classmethod
    def prepare(cls, frame, treatment, outcome, adjust, modifiers, treated, control, extra) -> Prepared:
        """The arrays of the problem (:func:`~causalnet.estimation.prepare.prepare`; `extra` from identification)."""
        return prepare(frame, treatment, outcome, adjust, modifiers, treated, control)

    @classmethod
    def design_formula(cls, treatment, outcome, options: dict) -> str:
        """The identified quantity of a design-based method (``identification == "design"``)."""
        raise ModelError(f"method {cls.name!r} is identified from the graph, not by its design")

    def analytic(self) -> tuple[float, float]:
        """(estimate, standard error) on the data."""
        raise ModelError(f"method {self.name!r} has no analytic standard error; use ci='bootstrap'")

    @property
    def has_analytic(self) -> bool:
        """Whether :meth:`analytic` gives a standard error for this configuration."""
        return type(self).analytic is not Estimator.analytic


def is_data(w: np.ndarray) -> bool:
    """Whether the weighting `w` (b, n) is the data itself (one row of ones), not bootstrap replicates."""
    return w.shape[0] == 1 and bool(np.all(w == 1.0))


def target_mean(w: np.ndarray, r: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Σ_i w r v / Σ_i w r for each weighting: w (b, n), v (b, n) or (n,) -> (b,)."""
    wr = w * r                                                                    # (b, n)
    return (wr * v).sum(axis=1) / np.maximum(wr.sum(axis=1), 1e-300)


def resampled_rows(counts: np.ndarray) -> np.ndarray:
    """The row indices a weighting of bootstrap counts (n,) stands for: row i repeated counts[i] times."""
    return np.repeat(np.arange(len(counts)), counts.astype(np.int64))


class Regression(Estimator):
    """G-computation from one outcome model ``Y ~ 1 + D + Z + D ⊗ M``: linear, logistic (binary Y) or `model=`."""

    name = "regression"
    per_row = True

    def _link(self) -> str:
        link = self.options.get("link", "auto")
        if link == "auto":
            return "logistic" if self.prep.outcome_binary else "linear"
        if link not in ("linear", "logistic"):
            raise ModelError(f"link must be 'auto', 'linear' or 'logistic', got {link!r}")
        if link == "logistic" and not self.prep.outcome_binary:
            raise ModelError(f"link='logistic' needs a 0/1 outcome; {self.prep.outcome!r} is not")
        return link

    def designs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The design as observed, with every row treated, with every row control: (n, k) each, built once."""
        if getattr(self, "_designs", None) is None:
            p = self.prep
            self._designs = (p.design(p.d), p.design(p.d1), p.design(p.d0))
        return self._designs

    def fit(self, w):
        p = self.prep
        x, x1, x0 = self.designs()                                                # (n, k) each
        if self.options.get("model") is not None:
            return self._fit_model(w, x, x1, x0)
        if self._link() == "linear":
            beta = weighted_least_squares(x, p.y, w)                             # (b, k)
            mu1, mu0 = beta @ x1.T, beta @ x0.T                                   # (b, n)
        else:
            start = self.start("y", x, p.y, np.ones(p.n))
            beta = logistic_regression(x, p.y, w, start=start)                    # (b, k)
            mu1, mu0 = special.expit(beta @ x1.T), special.expit(beta @ x0.T)    # (b, n)
        self._store(w, mu1, mu0)
        return target_mean(w, self.r, mu1) - target_mean(w, self.r, mu0)

    def _store(self, w, mu1, mu0) -> None:
        if is_data(w):
            self.means = np.array([target_mean(w, self.r, mu1)[0], target_mean(w, self.r, mu0)[0]])
            self.effects = (mu1 - mu0)[0]

    def _fit_model(self, w, x, x1, x0):
        from sklearn.base import clone  # optional heavy dependency

        out = np.empty(w.shape[0])
        for i, wi in enumerate(w):
            rows = np.repeat(np.arange(self.prep.n), wi.astype(np.int64))        # the resample's rows
            est = clone(self.options["model"]).fit(x[rows, 1:], self.prep.y[rows])
            mu1, mu0 = est.predict(x1[:, 1:])[None], est.predict(x0[:, 1:])[None]  # (1, n)
            self._store(wi[None], mu1, mu0)
            out[i] = target_mean(wi[None], self.r, mu1 - mu0)[0]
        return out

    @property
    def has_analytic(self) -> bool:
        return self.options.get("model") is None

    def analytic(self):
        p = self.prep
        if self.options.get("model") is not None:
            raise ModelError("regression with model= has no analytic standard error; use ci='bootstrap'")
        x, x1, x0 = self.designs()
        rw = self.r / self.r.sum()                                                # (n,)
        value = float(self.fit(np.ones((1, p.n)))[0])
        if self._link() == "linear":
            beta = weighted_least_squares(x, p.y, np.ones((1, p.n)))[0]
            resid = p.y - x @ beta
            sigma2 = resid @ resid / (p.n - np.linalg.matrix_rank(x))
            cov = sigma2 * np.linalg.pinv(x.T @ x)                                # (k, k)
            grad = rw @ (x1 - x0)                                                 # (k,)
        else:
            beta = logistic_regression(x, p.y, np.ones((1, p.n)))[0]
            q = special.expit(x @ beta)
            cov = np.linalg.pinv((x * (q * (1 - q))[:, None]).T @ x)
            q1, q0 = special.expit(x1 @ beta), special.expit(x0 @ beta)
            grad = rw @ ((q1 * (1 - q1))[:, None] * x1 - (q0 * (1 - q0))[:, None] * x0)
        return value, float(np.sqrt(max(grad @ cov @ grad, 0.0)))


class Weighting(Estimator):
    """Shared parts of IPW and AIPW: propensities of the two arms, clipping, the weight check."""

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.kind == "continuous":
            raise ModelError(f"method {self.name!r} needs a discrete treatment; {prep.treatment!r} is continuous "
                             f"(use method='regression')")
        trim = self.options.get("trim") or 0.0
        if not 0.0 <= trim < 0.5:
            raise ModelError(f"trim must be in [0, 0.5), got {trim!r}")
        self.trim = trim

    def propensities(self, w: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(e_treated, e_control), each (b, n), clipped to [trim, 1 − trim]."""
        p = self.prep
        xz = p.covariates()                                                       # (n, 1+kz)
        model = self.options.get("propensity_model")
        if model is not None:
            return self._sklearn_propensities(model, xz, w)
        fits = [special.expit(beta @ xz.T) for beta in self.propensity_coefficients(w)]   # (b, n) each
        e1 = fits[0]
        e0 = 1.0 - e1 if p.kind == "binary" else fits[1]
        return self._clip(e1), self._clip(e0)

    def propensity_coefficients(self, w: np.ndarray) -> list[np.ndarray]:
        """Logistic coefficients (b, 1+kz) of P(treated | Z) (binary), or of both arms (categorical)."""
        p = self.prep
        xz = p.covariates()                                                       # (n, 1+kz)
        out = []
        for a in ((p.a1,) if p.kind == "binary" else (p.a1, p.a0)):
            start = self.start(("e", id(a)), xz, a, np.ones(p.n)) if w.shape[0] > 1 else None
            out.append(logistic_regression(xz, a, w, start=start))                # (b, 1+kz)
        return out

    def _sklearn_propensities(self, model, xz, w):
        from sklearn.base import clone  # optional heavy dependency

        p = self.prep
        out1, out0 = np.empty(w.shape), np.empty(w.shape)
        for i, wi in enumerate(w):
            rows = np.repeat(np.arange(p.n), wi.astype(np.int64))
            est = clone(model).fit(xz[rows, 1:], p.t[rows])
            probs = est.predict_proba(xz[:, 1:])
            cls = list(est.classes_)
            out1[i], out0[i] = probs[:, cls.index(p.treated)], probs[:, cls.index(p.control)]
        return self._clip(out1), self._clip(out0)

    def _clip(self, e: np.ndarray) -> np.ndarray:
        lo = max(self.trim, 1e-12)
        return np.clip(e, lo, 1.0 - lo)

    def ratios(self, e1, e0) -> tuple[np.ndarray, np.ndarray]:
        """The weights ρ/e_t of the treated and control arms, each (b, n)."""
        rho = {"ate": 1.0, "cate": 1.0, "att": e1, "atc": e0}[self.estimand]
        return rho / e1, rho / e0

    def check_weights(self, e1, e0) -> None:
        p = self.prep
        used = np.concatenate([e1[0][p.a1 > 0], e0[0][p.a0 > 0]])
        extreme = int((used < 0.01).sum())
        self.diagnostics["min_propensity"] = float(used.min())
        if extreme:
            warnings.warn(f"{extreme} rows have a propensity below 0.01 for the arm they are in (smallest "
                          f"{used.min():.2g}): their inverse weights dominate the estimate; consider trim= or "
                          f"a different adjustment set", CausalNetWarning, stacklevel=4)


class IPW(Weighting):
    """Inverse propensity weighting: normalised (Hájek) or not (Horvitz–Thompson), optionally on the overlap.

    Options: ``normalize=False`` divides each arm's weighted sum by the size
    of the target instead of by the sum of its weights (Horvitz–Thompson);
    ``overlap=(lo, hi)`` drops the rows whose fitted propensity
    ``e_treated(Z)`` is outside the open interval (Crump et al. 2009 trimming,
    as the Mixtape drops ``pscore <= 0.1 | pscore >= 0.9``), without refitting
    the propensity: the estimand is then that of the overlap population.
    """

    name = "ipw"
    method_options = ("normalize", "overlap")

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        self.normalize = options.get("normalize", True)
        if not isinstance(self.normalize, (bool, np.bool_)):
            raise ModelError(f"normalize must be True or False, got {self.normalize!r}")
        self.overlap = options.get("overlap")
        if self.overlap is not None:
            if prep.kind != "binary":
                raise ModelError(f"overlap= needs a binary treatment; {prep.treatment!r} is {prep.kind}")
            try:
                lo, hi = (float(v) for v in self.overlap)
            except (TypeError, ValueError):
                lo = hi = float("nan")
            if not 0.0 <= lo < hi <= 1.0:
                raise ModelError(f"overlap must be a pair (lo, hi) with 0 <= lo < hi <= 1, got {self.overlap!r}")
            self.overlap = (lo, hi)

    def kept(self, w: np.ndarray, e1: np.ndarray) -> np.ndarray:
        """The weighting `w` (b, n) with the rows outside the overlap interval set to zero."""
        if self.overlap is None:
            return w
        lo, hi = self.overlap
        return w * ((e1 > lo) & (e1 < hi))

    def fit(self, w):
        p = self.prep
        data = is_data(w)
        e1, e0 = self.propensities(w)
        w = self.kept(w, e1)
        if data:
            self.check_weights(e1, e0)
            self.diagnostics["n_in_overlap"] = int((w[0] > 0).sum())
        q1, q0 = self.ratios(e1, e0)
        if self.normalize:
            m1 = target_mean(w, p.a1 * q1, p.y)
            m0 = target_mean(w, p.a0 * q0, p.y)
        else:
            size = np.maximum((w * self.r).sum(axis=1), 1e-300)                   # (b,)
            m1 = (w * p.a1 * q1 * p.y).sum(axis=1) / size
            m0 = (w * p.a0 * q0 * p.y).sum(axis=1) / size
        if data:
            self.means = np.array([m1[0], m0[0]])
        return m1 - m0

    def analytic(self):
        p = self.prep
        ones = np.ones((1, p.n))
        value = float(self.fit(ones)[0])
        e1, e0 = self.propensities(ones)
        k = self.kept(ones, e1)[0]                                                # (n,) 1 in the overlap
        q1, q0 = self.ratios(e1, e0)
        h1, h0 = (k * p.a1 * q1)[0], (k * p.a0 * q0)[0]                           # (n,)
        if self.normalize:
            phi = h1 * (p.y - self.means[0]) / h1.mean() - h0 * (p.y - self.means[1]) / h0.mean()
        else:
            r = k * self.r
            phi = (h1 * p.y - h0 * p.y - value * r) / r.mean()
        return value, float(np.sqrt(np.mean(phi ** 2) / p.n))


class AIPW(Weighting):
    """Augmented IPW (doubly robust); cross-fitted outcome and propensity models when they are flexible."""

    name = "aipw"

    def outcome_models(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(μ_treated, μ_control), each (b, n): arm-wise linear or logistic fits on ``[1, Z]``."""
        p = self.prep
        xz = p.covariates()
        out = []
        for a in (p.a1, p.a0):
            wa = w * a                                                            # (b, n)
            if p.outcome_binary and self.options.get("link", "auto") != "linear":
                start = self.start(("mu", id(a)), xz, p.y, a) if w.shape[0] > 1 else None
                out.append(special.expit(logistic_regression(xz, p.y, wa, start=start) @ xz.T))
            else:
                out.append(weighted_least_squares(xz, p.y, wa) @ xz.T)           # (b, n)
        return out[0], out[1]

    def fit(self, w):
        p = self.prep
        if self.flexible:
            return self._pseudo_mean(w)
        if not is_data(w) and p.kind == "binary" and not (p.outcome_binary and self.options.get("link", "auto")
                                                          != "linear"):
            return self._linear_replicates(w)
        e1, e0 = self.propensities(w)
        mu1, mu0 = self.outcome_models(w)
        if is_data(w):
            self.check_weights(e1, e0)
        q1, q0 = self.ratios(e1, e0)
        s1 = self.r * mu1 + p.a1 * q1 * (p.y - mu1)                               # (b, n)
        s0 = self.r * mu0 + p.a0 * q0 * (p.y - mu0)
        den = np.maximum((w * self.r).sum(axis=1), 1e-300)
        m1, m0 = (w * s1).sum(axis=1) / den, (w * s0).sum(axis=1) / den
        if is_data(w):
            self.means = np.array([m1[0], m0[0]])
            self._scores = (s1[0], s0[0])
        return m1 - m0

    def _linear_replicates(self, w: np.ndarray) -> np.ndarray:
        """Replicates (binary treatment, linear arm models) from sufficient statistics, never forming μ (b, n).

        With ``μ_t = Xβ_t``: ``Σ w r μ_t = β_t·(wr @ X)`` and ``Σ w A_t (ρ/e_t)(Y − μ_t) = u_t @ Y − β_t·(u_t @ X)``
        for ``u_t = w A_t ρ/e_t``; each arm's sums run over its own rows only, and the weights ρ/e_t come
        straight from the propensity's linear predictor η (clipped as the propensity is): ``1/e₁ = 1 + e^(−η)``,
        ``1/e₀ = 1 + e^η``, ``e₁/e₀ = e^η``.
        """
        p = self.prep
        arms = self.__dict__.get("_arms")
        if arms is None:                          # each arm's rows and design, built once (cached outer products)
            xz = p.covariates()
            arms = self._arms = [(i, np.ascontiguousarray(xz[i]), p.y[i])
                                 for i in (np.flatnonzero(p.a1), np.flatnonzero(p.a0))]
        (coef,) = self.propensity_coefficients(w)                                 # (b, 1+kz)
        lo = special.logit(max(self.trim, 1e-12))
        wr = w * self.r                                                           # (b, n)
        g = wr @ p.covariates()                                                   # (b, 1+kz)
        means = []
        for arm, (i, x, y) in enumerate(arms):
            wa = w[:, i]                                                          # (b, n_t)
            beta = weighted_least_squares(x, y, wa)                               # (b, 1+kz)
            eta = np.clip(coef @ x.T, lo, -lo)                                    # (b, n_t)
            sign = {("ate", 0): -1.0, ("ate", 1): 1.0, ("att", 1): 1.0, ("atc", 0): -1.0}.get((self.estimand, arm))
            if sign is None:                                                      # ρ/e_t = 1 on this arm
                u = wa
            else:
                u = np.exp(sign * eta, out=eta)
                if self.estimand == "ate":
                    u += 1.0
                u *= wa                                                           # (b, n_t)
            means.append(np.sum(beta * (g - u @ x), axis=1) + u @ y)              # (b,)
        return (means[0] - means[1]) / np.maximum(wr.sum(axis=1), 1e-300)

    def cross_fit(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-row scores (s1, s0), each (n,), with nuisances fitted on the other folds."""
        from sklearn.base import clone  # optional heavy dependency

        p, k = self.prep, int(self.options.get("folds", 5))
        rng = np.random.default_rng(self.options.get("seed"))
        fold = rng.permutation(p.n) % k                                           # (n,)
        xz = p.covariates()[:, 1:]
        mu1, mu0, e1, e0 = (np.empty(p.n) for _ in range(4))
        model = self.options.get("model")
        for f in range(k):
            train = (fold != f).astype(np.float64)
            test = fold == f
            ef1, ef0 = self.propensities(train[None])
            e1[test], e0[test] = ef1[0, test], ef0[0, test]
            for a, mu in ((p.a1, mu1), (p.a0, mu0)):
                rows = (train * a) > 0
                if model is None:
                    mu[test] = (weighted_least_squares(p.covariates(), p.y, (train * a)[None]) @ p.covariates().T)[0, test]
                else:
                    mu[test] = clone(model).fit(xz[rows], p.y[rows]).predict(xz[test])
        self.check_weights(e1[None], e0[None])
        q1, q0 = self.ratios(e1, e0)
        return self.r * mu1 + p.a1 * q1 * (p.y - mu1), self.r * mu0 + p.a0 * q0 * (p.y - mu0)

    def _pseudo_mean(self, w):
        if getattr(self, "_scores", None) is None:
            self._scores = self.cross_fit()
        s1, s0 = self._scores
        den = np.maximum(w @ self.r, 1e-300)
        m1, m0 = (w @ s1) / den, (w @ s0) / den
        if is_data(w):
            self.means = np.array([m1[0], m0[0]])
        return m1 - m0

    def analytic(self):
        p = self.prep
        value = float(self.fit(np.ones((1, p.n)))[0])
        s1, s0 = self._scores
        rbar = self.r.mean()
        phi = (s1 - s0 - self.r * value) / rbar
        return value, float(np.sqrt(np.mean(phi ** 2) / p.n))


class TwoStageLeastSquares(Estimator):
    """Two-stage least squares ``Y ~ 1 + T + W`` with instruments ``Z`` (and W) for T."""

    name = "iv"
    identification = "instrument"

    estimands = ("ate",)
    estimand_scope = "the local, linear effect"

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        self.zi = np.asarray(options["instrument_matrix"], dtype=np.float64)      # (n, q)
        p = prep
        self.x = np.column_stack([np.ones(p.n), p.d, p.z])                        # (n, k)
        self.zm = np.column_stack([np.ones(p.n), self.zi, p.z])                   # (n, l)
        self.scale = float((p.d1[0] - p.d0[0]).sum()) if p.kind != "categorical" else None
        if p.kind == "categorical":
            raise ModelError("method 'iv' needs a binary or continuous treatment")

    def coefficients(self, w: np.ndarray) -> np.ndarray:
        """2SLS coefficients (b, k) under each weighting."""
        zz = cross_moments(w, self.zm, self.zm)                                   # (b, l, l)
        zx = cross_moments(w, self.zm, self.x)                                    # (b, l, k)
        zy = w @ (self.zm * self.prep.y[:, None])                                 # (b, l)
        zz_inv = np.linalg.pinv(zz)
        a = np.einsum("blk,blm,bmj->bkj", zx, zz_inv, zx)                         # X'Pz X, (b, k, k)
        rhs = np.einsum("blk,blm,bm->bk", zx, zz_inv, zy)                         # X'Pz y, (b, k)
        return solve_batched(a, rhs)

    def fit(self, w):
        beta = self.coefficients(w)
        if is_data(w):
            self._first_stage()
        return beta[:, 1] * self.scale

    def _first_stage(self) -> None:
        p = self.prep
        ones = np.ones((1, p.n))
        t = p.d[:, 0]
        full = weighted_least_squares(self.zm, t, ones)[0]
        restricted = np.column_stack([np.ones(p.n), p.z])
        rss_u = np.sum((t - self.zm @ full) ** 2)
        rss_r = np.sum((t - restricted @ weighted_least_squares(restricted, t, ones)[0]) ** 2)
        q, dof = self.zi.shape[1], p.n - self.zm.shape[1]
        f = ((rss_r - rss_u) / q) / (rss_u / dof)
        self.diagnostics["first_stage_F"] = float(f)
        if f < 10:
            warnings.warn(f"weak instrument: first-stage F = {f:.3g} < 10 (Staiger & Stock); the 2SLS "
                          f"estimate is biased towards OLS and its interval is unreliable", CausalNetWarning,
                          stacklevel=4)

    def analytic(self):
        p = self.prep
        value = float(self.fit(np.ones((1, p.n)))[0])
        beta = self.coefficients(np.ones((1, p.n)))[0]
        resid = p.y - self.x @ beta
        sigma2 = resid @ resid / (p.n - self.x.shape[1])
        xhat = self.zm @ np.linalg.lstsq(self.zm, self.x, rcond=None)[0]         # (n, k)
        cov = sigma2 * np.linalg.pinv(xhat.T @ xhat)
        return value, float(np.sqrt(cov[1, 1]) * abs(self.scale))


class Plugin(Estimator):
    """The identified estimand with empirical frequencies (discrete data): `Estimand.evaluate` on the frame."""

    name = "plugin"
    identification = "plugin"

    estimands = ("ate",)

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        if prep.kind == "continuous":
            raise ModelError(f"method 'plugin' needs discrete data; the treatment {prep.treatment!r} is continuous")
        self.formula = options["formula"]

    def _value(self, frame) -> tuple[float, float]:
        p = self.prep
        out = []
        for level in (p.treated, p.control):
            dist = self.formula.evaluate(frame, do={p.treatment: level})
            states = np.asarray(dist.states[0] if isinstance(dist.states[0], (list, tuple)) else dist.states,
                                dtype=np.float64)
            out.append(float(np.asarray(dist.probs, dtype=np.float64).ravel() @ states))
        return out[0], out[1]

    def fit(self, w):
        p = self.prep
        frame = p.frame
        out = np.empty(w.shape[0])
        for i, wi in enumerate(w):
            rows = np.repeat(np.arange(p.n), wi.astype(np.int64))
            m1, m0 = self._value(frame.iloc[rows])
            if is_data(w):
                self.means = np.array([m1, m0])
            out[i] = m1 - m0
        return out

