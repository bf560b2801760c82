"""The mechanisms of an unrolled HMM that the tabular ones do not cover, and the CDF overlaps of its SCM.

``X = mu[z] + L[z] eps`` with ``eps ~ N(0, I)`` is a Gaussian observation of a
discrete state (abducted exactly: ``eps = L[z]^{-1}(x - mu[z])``). Under the
inverse-CDF SCM of a row-stochastic table ``P`` (K, S), two worlds that share
the exogenous ``u`` land in symbols ``i`` (row ``a``) and ``j`` (row ``b``)
with probability equal to the overlap of the two CDF intervals,
:func:`cdf_overlap`: the twin-chain transitions and the counterfactual
emissions of an HMM both come from it.

>>> import numpy as np
>>> O = cdf_overlap(np.array([[0.5, 0.5], [0.25, 0.75]]))   # (a, b, i, j)
>>> O[0, 1].tolist()
[[0.25, 0.25], [0.0, 0.5]]
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ...errors import ModelError, ShapeError
from ...mechanisms.base import REAL, TENSOR, Mechanism, Spec

__all__ = ["GaussianEmissionMechanism", "EmissionMechanism", "cdf_overlap", "SCM_GAUSS_EMISSION"]

SCM_GAUSS_EMISSION = "Gaussian emission x = mu_z + L_z eps (eps shared between worlds)"


class GaussianEmissionMechanism(Mechanism):
    """``X = mu[z] + L[z] eps``, ``eps ~ N(0, I)``: a Gaussian observation of a discrete parent.

    Parameters
    ----------
    parent : node name (discrete, K states)
    means : array of shape (K, d)
    covars : array of shape (K, d) (diagonal) or (K, d, d) (full)
    """

    kind = REAL
    can_abduct = True

    def __init__(self, parent, means, covars) -> None:
        super().__init__([parent])
        self.means = np.asarray(means, dtype=np.float64)
        cv = np.asarray(covars, dtype=np.float64)
        K, d = self.means.shape
        if cv.shape == (K, d):
            cv = np.stack([np.diag(c) for c in cv])
        if cv.shape != (K, d, d):
            raise ShapeError(f"GaussianEmissionMechanism: covars of shape {cv.shape}; expected ({K}, {d}) or ({K}, {d}, {d})")
        self.covars = cv
        self.chol = np.stack([linalg.cholesky(c, lower=True) for c in cv])     # (K, d, d)

    def spec(self, node, parent_specs) -> Spec:
        ps = parent_specs[self.parents[0]]
        if ps.kind != "discrete" or ps.card != len(self.means):
            raise ModelError(f"GaussianEmission {node!r}: parent needs {len(self.means)} discrete states, "
                             f"got {ps.describe()}")
        d = self.means.shape[1]
        return Spec(TENSOR, shape=(d,)) if d > 1 else Spec(REAL)

    def _d(self):
        return self.means.shape[1]

    def sample_noise(self, n, rng, spec):
        return rng.standard_normal((n, self._d()))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        z = np.asarray(parents[self.parents[0]])
        eps = np.zeros((len(z), self._d())) if noise is None else np.asarray(noise).reshape(len(z), -1)
        x = self.means[z] + np.einsum("nij,nj->ni", self.chol[z], eps)
        return x if spec.shape else x[:, 0]

    def abduct(self, node, value, parents, spec):
        z = np.asarray(parents[self.parents[0]])
        x = np.asarray(value, dtype=np.float64).reshape(len(z), -1)
        out = np.empty_like(x)
        for k in np.unique(z):
            rows = z == k
            out[rows] = linalg.solve_triangular(self.chol[k], (x[rows] - self.means[k]).T, lower=True).T
        return out

    def log_prob(self, node, value, parents, spec):
        eps = self.abduct(node, value, parents, spec)
        z = np.asarray(parents[self.parents[0]])
        logdet = np.log(np.abs(np.diagonal(self.chol, axis1=1, axis2=2))).sum(axis=1)   # (K,)
        d = self._d()
        return -0.5 * np.sum(eps ** 2, axis=1) - logdet[z] - 0.5 * d * np.log(2 * np.pi)


class EmissionMechanism(Mechanism):
    """``X = g_z(u)``, ``u ~ U(0, 1)^m``: an emission kind's inverse-CDF draw given a discrete parent.

    The unrolled node of an emission kind with no mechanism of its own
    (Poisson counts, Gaussian mixtures): the emission gives the draw from
    uniforms (``from_noise``) and the density (``logpdf``), so the unrolled
    model samples, runs forward and answers queries like any other.

    Parameters
    ----------
    parent : node name (discrete, K states)
    emission : Emission
        With ``width``, ``noise_width``, ``from_noise`` and ``logpdf``.
    params : dict
        The HMM's validated parameters.
    n_states : int
    """

    kind = REAL

    def __init__(self, parent, emission, params, n_states) -> None:
        super().__init__([parent])
        self.emission = emission
        self.params = dict(params)
        self.n_states = int(n_states)
        self.width = int(emission.width(params))

    def spec(self, node, parent_specs) -> Spec:
        ps = parent_specs[self.parents[0]]
        if ps.kind != "discrete" or ps.card != self.n_states:
            raise ModelError(f"{self.emission.kind} emission {node!r}: parent needs {self.n_states} discrete states, "
                             f"got {ps.describe()}")
        return Spec(TENSOR, shape=(self.width,)) if self.width > 1 else Spec(REAL)

    def sample_noise(self, n, rng, spec):
        return rng.random((n, self.emission.noise_width(self.params)))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        z = np.asarray(parents[self.parents[0]])
        u = np.full((len(z), self.emission.noise_width(self.params)), 0.5) if noise is None else np.asarray(noise)
        x = self.emission.from_noise(self.params, z, u.reshape(len(z), -1))     # (n, d)
        return x if spec.shape else x[:, 0]

    def log_prob(self, node, value, parents, spec):
        z = np.asarray(parents[self.parents[0]])
        x = np.asarray(value, dtype=np.float64).reshape(len(z), -1)
        return self.emission.logpdf(self.params, x)[np.arange(len(z)), z]


def cdf_overlap(P: np.ndarray) -> np.ndarray:
    """``O[a, b, i, j]`` = length of [F(i-1|a), F(i|a)) ∩ [F(j-1|b), F(j|b)) for a row-stochastic P (K, S)."""
    hi = np.cumsum(P, axis=1)
    hi[:, -1] = 1.0
    lo = hi - P
    lo[:, 0] = 0.0
    top = np.minimum(hi[:, None, :, None], hi[None, :, None, :])        # (K, K, S, S)
    bot = np.maximum(lo[:, None, :, None], lo[None, :, None, :])
    return np.clip(top - bot, 0.0, None)
