"""Poisson emissions: counts ``X[t, j] | Z[t] = k ~ Poisson(lambdas_[k, j])``, independent over ``j``.

hmmlearn's ``PoissonHMM`` conventions: the rates ``lambdas_`` ``(K, d)``, the
parameter letter ``"l"``, observations ``(N, d)`` of non-negative integer
counts, and a Gamma prior on each rate (``lambdas_prior`` = alpha,
``lambdas_weight`` = beta; 0 and 0 give the maximum-likelihood M-step
``lambda = sum_t gamma_t x_t / sum_t gamma_t``).

Legend: ``N`` observations, ``K`` states, ``d`` counts per observation.

Examples
--------
>>> import numpy as np
>>> e = PoissonEmission()
>>> p = e.check_params({"lambdas_": [[1.0], [4.0]]}, 2)
>>> np.round(np.exp(e.logpdf(p, np.array([[2.0]]))), 4)       # (N, K)
array([[0.1839, 0.1465]])
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ...errors import EvidenceError, ModelError, ShapeError
from .emissions import VectorEmission, real_array

__all__ = ["PoissonEmission"]


class PoissonEmission(VectorEmission):
    """Independent Poisson counts per coordinate.

    Parameters
    ----------
    lambdas_prior, lambdas_weight : float or array_like, default 0.0
        Gamma(alpha, beta) prior of the rates: the M-step gives
        ``(alpha + sum gamma x) / (beta + sum gamma)`` per state.
    n_features : int, optional
        The width ``d``, checked against the parameters and observations.
    """

    kind = "poisson"
    letters = "l"
    attrs = {"l": "lambdas_"}

    def __init__(self, lambdas_prior=0.0, lambdas_weight=0.0, n_features=None):
        self.lambdas_prior = lambdas_prior
        self.lambdas_weight = lambdas_weight
        self.n_features = n_features

    def width(self, params):
        lam = params.get("lambdas_")
        return np.shape(lam)[1] if lam is not None and np.ndim(lam) == 2 else None

    def check_params(self, params, K, letters=None):
        if "l" not in (self.letters if letters is None else letters):
            return {}
        lam = real_array("lambdas_", params["lambdas_"])
        if lam.ndim != 2 or lam.shape[0] != K:
            raise ShapeError(f"lambdas_ must have shape (n_states, d) = ({K}, d); got {lam.shape}")
        bad = ~(lam > 0) | ~np.isfinite(lam)
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise ModelError(f"lambdas_ must be positive and finite; state {k}, count {j} has rate {lam[k, j]}")
        self.check_width(lam.shape[1], "lambdas_")
        return {"lambdas_": lam}

    def check_observations(self, X, params):
        X = self._real_observations(X, params, "Poisson")
        bad = (X < 0) | (X != np.round(X))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise EvidenceError(f"Poisson observations must be non-negative integer counts; row {i}, column {j} "
                                f"is {X[i, j]}")
        return X

    def logpdf(self, params, X):
        """(N, d) counts -> (N, K) log-probabilities."""
        lam = params["lambdas_"]  # (K, d)
        out = X @ np.log(lam).T  # (N, K)
        out -= lam.sum(axis=1)
        out -= special.gammaln(X + 1.0).sum(axis=1, keepdims=True)
        return out

    def init(self, params, X, K, rng, letters):
        if "l" not in letters:
            return {}
        mean, var = X.mean(), X.var()
        if not (mean > 0 and var > 0):  # hmmlearn's method of moments needs spread; fall back to the mean
            return {"lambdas_": np.full((K, X.shape[1]), max(mean, 1e-3))}
        return {"lambdas_": rng.gamma(mean**2 / var, var / mean, size=(K, X.shape[1]))}

    def statistics(self, Xp, G, letters, cache, params=None):
        if "l" not in letters:
            return {}
        Xf = Xp.reshape(-1, Xp.shape[-1])  # (T*n, d)
        return {"post": G.sum(axis=0), "obs": G.T @ Xf}  # (K,), (K, d)

    def mstep(self, params, stats, letters):
        if "l" not in letters:
            return {}
        post = stats["post"]
        with np.errstate(invalid="ignore", divide="ignore"):
            new = (self.lambdas_prior + stats["obs"]) / (self.lambdas_weight + post[:, None])
        keep = ~(new > 0) | ~np.isfinite(new)  # no mass, or a count that never occurred: keep a positive rate
        new = np.where(keep, np.where(stats["obs"] == 0, 1e-10, params["lambdas_"]), new)
        new = np.where((post == 0)[:, None], params["lambdas_"], new)
        return {"lambdas_": new}

    def sample(self, params, Z, rng):
        return rng.poisson(params["lambdas_"][Z]).astype(np.float64)

    def noise_width(self, params):
        return np.shape(params["lambdas_"])[1]

    def from_noise(self, params, Z, u):
        from scipy import stats  # heavy import, on use

        return stats.poisson.ppf(u, params["lambdas_"][Z]).astype(np.float64)       # (N, d)

    def n_parameters(self, params, K):
        return K * np.shape(params["lambdas_"])[1]

    def check_evidence(self, obs, params):
        self.check_observations(obs.reshape(-1, obs.shape[-1]), params)
