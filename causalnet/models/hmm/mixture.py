"""Gaussian-mixture emissions: ``X[t] | Z[t] = k ~ sum_m weights_[k, m] N(means_[k, m], covars_[k, m])``.

hmmlearn's ``GMMHMM`` conventions: ``n_mix`` components ``M`` per state,
``weights_`` ``(K, M)``, ``means_`` ``(K, M, d)`` and ``covars_`` stored by
``covariance_type``:

============  ====================
spherical     ``(K, M)``
diag          ``(K, M, d)``
full          ``(K, M, d, d)``
tied          ``(K, d, d)`` (one matrix per state, shared by its components)
============  ====================

The ``K*M`` components run through :mod:`causalnet.models.hmm.covariance`
flattened (tied repeated ``M`` times per state). EM is exact: the E-step
splits each state posterior over its components by their responsibilities;
the M-step is maximum likelihood (Dirichlet ``weights_prior`` on the weights),
with every variance / eigenvalue held at ``min_covar`` or above, which keeps
the log-likelihood non-decreasing (it is the constrained maximiser).

Legend: ``N`` observations, ``K`` states, ``M`` components per state, ``d`` width.

Examples
--------
>>> import numpy as np
>>> e = GMMEmission(n_mix=2, covariance_type="spherical")
>>> p = e.check_params({"weights_": [[0.5, 0.5]], "means_": [[[0.0], [2.0]]], "_covars_": [[1.0, 1.0]]}, 1)
>>> e.logpdf(p, np.array([[1.0]])).shape                   # (N, K)
(1, 1)
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ...errors import ModelError, ShapeError
from .covariance import COVARIANCES
from .emissions import VectorEmission, check_simplex, kmeans, normalize_rows, real_array

__all__ = ["GMMEmission"]


class GMMEmission(VectorEmission):
    """A mixture of ``n_mix`` Gaussians per state.

    Parameters
    ----------
    n_mix : int
        Components ``M`` per state.
    covariance_type : {"spherical", "diag", "full", "tied"}
    min_covar : float
        Floor of the variances / covariance eigenvalues after each M-step, and
        added to the data variance at initialisation.
    weights_prior : float or array_like, default 1.0
        Dirichlet concentration of the weights M-step (1.0 = none).
    n_features : int, optional
    """

    kind = "gmm"
    letters = "mcw"
    attrs = {"m": "means_", "c": "_covars_", "w": "weights_"}

    def __init__(self, n_mix=1, covariance_type="diag", min_covar=1e-3, weights_prior=1.0, n_features=None):
        self.n_mix = n_mix
        self.covariance_type = covariance_type
        self.cov = COVARIANCES["full" if covariance_type == "tied" else covariance_type]
        self.min_covar = min_covar
        self.weights_prior = weights_prior
        self.n_features = n_features

    def width(self, params):
        mu = params.get("means_")
        return np.shape(mu)[2] if mu is not None and np.ndim(mu) == 3 else None

    def stored_shape(self, K, d):
        """hmmlearn's shape of ``covars_`` for this type."""
        M = self.n_mix
        return {"spherical": (K, M), "diag": (K, M, d), "full": (K, M, d, d), "tied": (K, d, d)}[self.covariance_type]

    def check_params(self, params, K, letters=None):
        letters = self.letters if letters is None else letters
        M, out = self.n_mix, {}
        if "w" in letters:
            out["weights_"] = check_simplex("weights_", params["weights_"], (K, M))
        if "m" in letters:
            m = real_array("means_", params["means_"])
            if m.ndim != 3 or m.shape[:2] != (K, M) or not np.isfinite(m).all():
                raise ShapeError(f"means_ must be finite of shape (n_states, n_mix, d) = ({K}, {M}, d); got {m.shape}")
            self.check_width(m.shape[2], "means_")
            out["means_"] = m
        if "c" in letters:
            c = real_array("covars_", params["_covars_"])
            d = self.width(params) or self.n_features or (c.shape[-1] if self.covariance_type != "spherical" else 1)
            want = self.stored_shape(K, d)
            if c.shape != want:
                raise ShapeError(f"covars_ ({self.covariance_type}, n_mix={M}) must have shape {want}; got {c.shape}")
            self.cov.check(self._flat(c, K, d), K * M, d, label=f"covars_ ({self.covariance_type} mixture)")
            out["_covars_"] = c
        return out

    def _flat(self, c, K, d):
        """The stored covariances as the ``K*M`` components' form."""
        M = self.n_mix
        if self.covariance_type == "tied":
            return np.repeat(c, M, axis=0)  # (K*M, d, d)
        return c.reshape((K * M,) + c.shape[2:])

    def _components(self, params, X):
        """(N, d) -> (N, K, M) log of weight times density of each component."""
        w, mu = params["weights_"], params["means_"]
        K, M, d = mu.shape
        comp = self.cov.logpdf(X, mu.reshape(K * M, d), self._flat(params["_covars_"], K, d))  # (N, K*M)
        with np.errstate(divide="ignore"):
            comp += np.log(w).reshape(K * M)
        return comp.reshape(len(X), K, M)

    def check_observations(self, X, params):
        return self._real_observations(X, params, "GMM")

    def logpdf(self, params, X):
        """(N, d) -> (N, K) mixture log-densities."""
        return special.logsumexp(self._components(params, X), axis=2)

    def init(self, params, X, K, rng, letters):
        M, d = self.n_mix, X.shape[1]
        out = {}
        if "w" in letters:
            out["weights_"] = np.full((K, M), 1.0 / M)
        if "m" in letters:
            centres = kmeans(X, K * M, rng)  # (K*M, d)
            out["means_"] = centres[rng.permutation(K * M)].reshape(K, M, d)
        if "c" in letters:
            cv = (np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(d)) + self.min_covar * np.eye(d)
            full = np.broadcast_to(cv, (K, M, d, d))
            out["_covars_"] = {"spherical": lambda: np.full((K, M), np.diag(cv).mean()),
                               "diag": lambda: np.tile(np.diag(cv), (K, M, 1)),
                               "full": lambda: full.copy(),
                               "tied": lambda: full[:, 0].copy()}[self.covariance_type]()
        return out

    def statistics(self, Xp, G, letters, cache, params=None):
        Xf = Xp.reshape(-1, Xp.shape[-1])  # (T*n, d)
        comp = self._components(params, Xf)  # (N, K, M)
        with np.errstate(invalid="ignore"):
            resp = np.exp(comp - special.logsumexp(comp, axis=2, keepdims=True))
        resp = np.nan_to_num(resp, nan=0.0)  # impossible rows (all -inf) carry no posterior mass
        R = (G[:, :, None] * resp).reshape(len(Xf), -1)  # (N, K*M)
        stats = {"r": R.sum(axis=0), "rx": R.T @ Xf}  # (K*M,), (K*M, d)
        if "c" in letters:
            if self.cov.diagonal:
                stats["rxx"] = R.T @ (Xf * Xf)  # (K*M, d)
            else:
                d = Xf.shape[1]
                stats["rxx"] = (R.T @ (Xf[:, :, None] * Xf[:, None, :]).reshape(-1, d * d)).reshape(-1, d, d)
        return stats

    def mstep(self, params, stats, letters):
        K, M, d = np.shape(params["means_"])
        r = stats["r"]  # (K*M,)
        seen = r > 0
        out = {}
        if "w" in letters:
            new = np.maximum(self.weights_prior - 1.0 + r.reshape(K, M), 0.0)
            out["weights_"] = normalize_rows(new, params["weights_"])
        mu = params["means_"].reshape(K * M, d)
        if "m" in letters:
            with np.errstate(invalid="ignore", divide="ignore"):
                mu = np.where(seen[:, None], stats["rx"] / r[:, None], mu)  # (K*M, d)
            out["means_"] = mu.reshape(K, M, d)
        if "c" in letters:
            out["_covars_"] = self._covars_mstep(params["_covars_"], mu, stats, seen, K, d)
        return out

    def _covars_mstep(self, old, mu, stats, seen, K, d):
        M, f, r = self.n_mix, self.min_covar, stats["r"]
        rx = stats["rx"]
        if self.cov.diagonal:
            num = stats["rxx"] - 2 * mu * rx + mu * mu * r[:, None]  # (K*M, d)
            with np.errstate(invalid="ignore", divide="ignore"):
                v = num / r[:, None]
            if self.covariance_type == "spherical":
                v = np.where(seen, v.mean(axis=1), old.reshape(-1))
                return np.maximum(v, f).reshape(K, M)
            return np.maximum(np.where(seen[:, None], v, old.reshape(-1, d)), f).reshape(K, M, d)
        outer = rx[:, :, None] * mu[:, None, :]  # (K*M, d, d)
        num = stats["rxx"] - outer - outer.transpose(0, 2, 1) + r[:, None, None] * mu[:, :, None] * mu[:, None, :]
        if self.covariance_type == "tied":
            num, r, seen, old_c = num.reshape(K, M, d, d).sum(1), r.reshape(K, M).sum(1), None, old
            seen = r > 0
        else:
            old_c = old.reshape(-1, d, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            c = np.where(seen[:, None, None], num / r[:, None, None], old_c)
        out = np.stack([_clip_eigenvalues(m, f) for m in c])
        return out if self.covariance_type == "tied" else out.reshape(K, M, d, d)

    def sample(self, params, Z, rng):
        w, mu = params["weights_"], params["means_"]
        K, M, d = mu.shape
        cdf = np.cumsum(w, axis=1)[Z]  # (N, M)
        m = np.minimum((cdf <= rng.random(len(Z))[:, None] * cdf[:, -1:]).sum(axis=1), M - 1)
        j = Z * M + m  # component index
        L = self.cov.cholesky(self._flat(params["_covars_"], K, d), K * M, d)  # (K*M, d, d)
        eps = rng.standard_normal((len(Z), d))
        return mu.reshape(K * M, d)[j] + np.einsum("nij,nj->ni", L[j], eps)

    def noise_width(self, params):
        return 1 + np.shape(params["means_"])[2]

    def from_noise(self, params, Z, u):
        """Component by inverse CDF of ``u[:, 0]``, then ``mu + L eps`` with ``eps = Phi^-1(u[:, 1:])``."""
        w, mu = params["weights_"], params["means_"]
        K, M, d = mu.shape
        cdf = np.cumsum(w, axis=1)[Z]                                               # (N, M)
        m = np.minimum((cdf <= u[:, :1] * cdf[:, -1:]).sum(axis=1), M - 1)
        j = Z * M + m
        L = self.cov.cholesky(self._flat(params["_covars_"], K, d), K * M, d)      # (K*M, d, d)
        eps = special.ndtri(np.clip(u[:, 1:], 1e-300, 1.0 - 1e-16))                 # (N, d)
        return mu.reshape(K * M, d)[j] + np.einsum("nij,nj->ni", L[j], eps)

    def n_parameters(self, params, K):
        M, d = self.n_mix, np.shape(params["means_"])[2]
        cov = K * d * (d + 1) // 2 if self.covariance_type == "tied" else self.cov.n_parameters(K * M, d)
        return K * (M - 1) + K * M * d + cov

    def check_evidence(self, obs, params):
        self.check_observations(obs.reshape(-1, obs.shape[-1]), params)


def _clip_eigenvalues(c, floor):
    """The symmetric matrix ``c`` with its eigenvalues raised to ``floor`` (unchanged if all are above)."""
    if not np.isfinite(c).all():
        raise ModelError("the M-step gave a non-finite mixture covariance; the data are degenerate")
    w, V = np.linalg.eigh(0.5 * (c + c.T))
    if w[0] >= floor:
        return c
    out = (V * np.maximum(w, floor)) @ V.T
    return 0.5 * (out + out.T)
