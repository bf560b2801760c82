"""Covariance types of Gaussian emissions, one class per type, as in hmmlearn.

A Gaussian emission (or each Gaussian of a mixture) has a covariance stored in
one of four forms, hmmlearn's ``covariance_type``. With ``C`` components (the
``K`` states, or the ``K*M`` mixture components) of width ``d``:

============  ===================  ===================================
type          stored form          meaning
============  ===================  ===================================
spherical     ``(C,)``             ``c[k] * I``
diag          ``(C, d)``           ``diag(c[k])``
full          ``(C, d, d)``        ``c[k]``
tied          ``(d, d)``           one matrix shared by every component
============  ===================  ===================================

Each class validates the stored form, expands it to full ``(C, d, d)``, gives
the log-densities of observations ``(N, d) -> (N, C)`` (spherical and diag
without a Cholesky factor), the lower Cholesky factors for sampling, the
parameter count, and floors a covariance an M-step left not positive
definite. The mixture's tied form ``(K, d, d)`` (one matrix per state, shared
by its ``M`` components) is handled by its emission, which repeats it.

Legend: ``C`` components, ``d`` width, ``N`` observations.

Examples
--------
>>> import numpy as np
>>> cov = COVARIANCES["spherical"]
>>> cov.full(np.array([1.0, 4.0]), 2, 2)[1].tolist()
[[4.0, 0.0], [0.0, 4.0]]
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from ...errors import ModelError, ShapeError

__all__ = ["Covariance", "Spherical", "Diag", "Full", "Tied", "COVARIANCES", "floor_matrix"]

_LOG_2PI = math.log(2.0 * math.pi)


def floor_matrix(c, floor, what):
    """A symmetric matrix with its eigenvalues raised to ``floor`` if it is not (numerically) positive definite.

    A positive definite matrix (smallest eigenvalue above 1e-12 of the
    largest) is returned unchanged, so well-posed fits agree with hmmlearn.
    The floor is also relative (condition number <= 1e12) so that a huge
    covariance (a state with almost no mass) survives rounding.
    """
    if not np.isfinite(c).all():
        raise ModelError(f"the M-step gave a non-finite covariance for {what}; the data are degenerate")
    w, V = np.linalg.eigh(0.5 * (c + c.T))  # (d,), (d, d)
    if w[0] > 1e-12 * abs(w[-1]):
        return c
    f = max(floor, 1e-12 * float(np.abs(w).max()))
    out = (V * np.maximum(w, f)) @ V.T
    return 0.5 * (out + out.T)


def _check_pd(c, what):
    if not np.isfinite(c).all() or not np.allclose(c, c.T, rtol=1e-10, atol=1e-12):
        raise ModelError(f"{what} must be finite and symmetric")
    try:
        linalg.cholesky(c, lower=True)
    except linalg.LinAlgError:
        raise ModelError(f"{what} is not positive definite") from None


class Covariance:
    """One covariance type: its stored shape, expansion, densities and floor."""

    name = ""
    diagonal = True  # spherical / diag: the M-step needs sums of squares, not outer products

    def shape(self, C, d):
        """The stored shape for ``C`` components of width ``d``."""
        raise NotImplementedError

    def check(self, c, C, d, label="covars_", unit="component"):
        """``c`` validated (ShapeError / ModelError naming ``label`` and the bad ``unit`` k); the array itself."""
        raise NotImplementedError

    def full(self, c, C, d):
        """``(C, d, d)`` covariance matrices."""
        raise NotImplementedError

    def variances(self, c, C, d):
        """``(C, d)`` variances of a diagonal type (spherical / diag)."""
        raise NotImplementedError

    def n_parameters(self, C, d):
        raise NotImplementedError

    def from_full(self, cv, C):
        """The stored form initialised from one ``(d, d)`` data covariance ``cv``."""
        raise NotImplementedError

    def floor(self, c, floor):
        """``c`` with variances / eigenvalues that are not positive raised to ``floor``."""
        raise NotImplementedError

    def cholesky(self, c, C, d):
        """``(C, d, d)`` lower Cholesky factors."""
        if self.diagonal:
            v = np.sqrt(self.variances(c, C, d))  # (C, d)
            return v[:, :, None] * np.eye(d)
        return np.stack([linalg.cholesky(m, lower=True) for m in self.full(c, C, d)])

    def logpdf(self, X, mu, c):
        """``(N, d)`` observations, means ``(C, d)`` -> ``(N, C)`` log-densities."""
        C, d = mu.shape
        out = np.empty((len(X), C))
        if self.diagonal:
            v = self.variances(c, C, d)  # (C, d)
            prec = 1.0 / v
            for k in range(C):
                diff = X - mu[k]  # (N, d)
                out[:, k] = (diff * diff) @ prec[k]
            out += np.log(v).sum(axis=1)
        else:
            for k, L in enumerate(self.cholesky(c, C, d)):
                sol = linalg.solve_triangular(L, (X - mu[k]).T, lower=True)  # (d, N)
                out[:, k] = (sol * sol).sum(axis=0) + 2.0 * np.log(np.diagonal(L)).sum()
        out += d * _LOG_2PI
        out *= -0.5
        return out


class Spherical(Covariance):
    """One variance per component: ``c[k] * I``, stored ``(C,)``."""

    name = "spherical"

    def shape(self, C, d):
        return (C,)

    def check(self, c, C, d, label="covars_", unit="component"):
        if c.shape != (C,):
            raise ShapeError(f"{label} (spherical) must have shape (n_components,) = ({C},); got {c.shape}")
        bad = ~(c > 0) | ~np.isfinite(c)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ModelError(f"{label} (spherical) must be positive and finite; {unit} {k} has variance {c[k]}")
        return c

    def full(self, c, C, d):
        return c[:, None, None] * np.eye(d)

    def variances(self, c, C, d):
        return np.broadcast_to(c[:, None], (C, d))

    def n_parameters(self, C, d):
        return C

    def from_full(self, cv, C):
        return np.full(C, np.diag(cv).mean())

    def floor(self, c, floor):
        return np.where(~(c > 0) | ~np.isfinite(c), floor, c)


class Diag(Covariance):
    """Independent coordinates: ``diag(c[k])``, stored ``(C, d)``."""

    name = "diag"

    def shape(self, C, d):
        return (C, d)

    def check(self, c, C, d, label="covars_", unit="component"):
        if c.shape != (C, d):
            raise ShapeError(f"{label} (diag) must have shape (n_components, d) = ({C}, {d}); got {c.shape}")
        bad = ~(c > 0) | ~np.isfinite(c)
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise ModelError(f"{label} (diag) must be positive and finite; {unit} {k}, dimension {j} has "
                             f"variance {c[k, j]}")
        return c

    def full(self, c, C, d):
        return c[:, :, None] * np.eye(d)

    def variances(self, c, C, d):
        return c

    def n_parameters(self, C, d):
        return C * d

    def from_full(self, cv, C):
        return np.tile(np.diag(cv), (C, 1))

    def floor(self, c, floor):
        return np.where(~(c > 0) | ~np.isfinite(c), floor, c)


class Full(Covariance):
    """A full matrix per component, stored ``(C, d, d)``."""

    name = "full"
    diagonal = False

    def shape(self, C, d):
        return (C, d, d)

    def check(self, c, C, d, label="covars_", unit="component"):
        if c.shape != (C, d, d):
            raise ShapeError(f"{label} (full) must have shape (n_components, d, d) = ({C}, {d}, {d}); got {c.shape}")
        for k in range(C):
            _check_pd(c[k], f"{label} (full) for {unit} {k}")
        return c

    def full(self, c, C, d):
        return c

    def n_parameters(self, C, d):
        return C * d * (d + 1) // 2

    def from_full(self, cv, C):
        return np.tile(cv, (C, 1, 1))

    def floor(self, c, floor):
        return np.stack([floor_matrix(c[k], floor, f"component {k}") for k in range(len(c))])


class Tied(Covariance):
    """One full matrix shared by every component, stored ``(d, d)``."""

    name = "tied"
    diagonal = False

    def shape(self, C, d):
        return (d, d)

    def check(self, c, C, d, label="covars_", unit="component"):
        if c.shape != (d, d):
            raise ShapeError(f"{label} (tied) must have shape (d, d) = ({d}, {d}); got {c.shape}")
        _check_pd(c, f"{label} (tied)")
        return c

    def full(self, c, C, d):
        return np.broadcast_to(c, (C, d, d)).copy()

    def cholesky(self, c, C, d):
        return np.broadcast_to(linalg.cholesky(c, lower=True), (C, d, d))

    def n_parameters(self, C, d):
        return d * (d + 1) // 2

    def from_full(self, cv, C):
        return cv.copy()

    def floor(self, c, floor):
        return floor_matrix(c, floor, "the tied covariance")


COVARIANCES = {cls.name: cls() for cls in (Spherical, Diag, Full, Tied)}
