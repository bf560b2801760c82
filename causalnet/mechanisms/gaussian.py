"""Linear-Gaussian mechanisms: ``x = bias + Σ w_i · pa_i + sigma · u``, ``u ~ N(0, 1)``.

Symbols: ``n`` batch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import ModelError
from .base import REAL, Mechanism, Spec

__all__ = ["LinearGaussian"]

_LOG_2PI = float(np.log(2 * np.pi))


class LinearGaussian(Mechanism):
    """A real scalar node, linear in its parents, with Gaussian noise.

    Parameters
    ----------
    parents : sequence of node names
    weights : array_like of shape (len(parents),)
    bias : float
    sigma : float
        Noise standard deviation, > 0 (``sigma = 0`` is allowed and makes the
        node deterministic).

    Examples
    --------
    >>> LinearGaussian(["X"], [2.0], bias=1.0, sigma=0.5).weights
    array([2.])
    """

    kind = REAL
    can_abduct = True

    def __init__(self, parents: Sequence[Hashable] = (), weights=(), bias: float = 0.0, sigma: float = 1.0) -> None:
        super().__init__(parents)
        w = np.array(weights, dtype=np.float64).reshape(-1)
        if w.shape != (len(self.parents),):
            raise ModelError(f"LinearGaussian over parents {list(self.parents)}: {w.shape[0]} weights for "
                             f"{len(self.parents)} parents")
        if not np.all(np.isfinite(w)) or not np.isfinite(bias):
            raise ModelError(f"LinearGaussian over parents {list(self.parents)}: weights and bias must be finite, "
                             f"got weights {w.tolist()} and bias {bias!r}")
        if not np.isfinite(sigma) or sigma < 0:
            raise ModelError(f"LinearGaussian over parents {list(self.parents)}: sigma must be >= 0, got {sigma!r}")
        w.setflags(write=False)
        self.weights = w
        self.bias = float(bias)
        self.sigma = float(sigma)
        self.deterministic = self.sigma == 0.0

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind == "tensor" or (ps.kind == REAL and ps.shape != ()):
                raise ModelError(f"LinearGaussian {node!r}: parent {p!r} is {ps.describe()}; expected a scalar")
        return Spec(REAL)

    def mean(self, parents: Mapping[Hashable, np.ndarray]) -> np.ndarray | float:
        out = self.bias
        for w, p in zip(self.weights, self.parents):
            out = out + w * np.asarray(parents[p], dtype=np.float64)
        return out

    def sample_noise(self, n, rng, spec):
        return rng.standard_normal(n)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        mu = self.mean(parents)
        if noise is None:
            noise = 0.0
        return np.asarray(mu + self.sigma * np.asarray(noise), dtype=np.float64)

    def abduct(self, node, value, parents, spec):
        if self.sigma == 0.0:
            return np.zeros(np.shape(value))
        return (np.asarray(value, dtype=np.float64) - self.mean(parents)) / self.sigma

    def log_prob(self, node, value, parents, spec):
        if self.sigma == 0.0:
            raise ModelError(f"node {node!r} is deterministic (sigma = 0) and has no density")
        z = (np.asarray(value, dtype=np.float64) - self.mean(parents)) / self.sigma
        return -0.5 * z * z - np.log(self.sigma) - 0.5 * _LOG_2PI

    def to_dict(self) -> dict:
        return {"type": "LinearGaussian", "parents": list(self.parents), "weights": self.weights.tolist(),
                "bias": self.bias, "sigma": self.sigma}

    def __repr__(self) -> str:
        return (f"LinearGaussian(parents={list(self.parents)}, weights={self.weights.tolist()}, "
                f"bias={self.bias}, sigma={self.sigma})")
