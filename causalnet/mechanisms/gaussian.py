"""Linear-Gaussian mechanisms: ``x = bias + Σ w_i · pa_i + sigma · u``, ``u ~ N(0, 1)``.

A model of such nodes is jointly Gaussian, so :mod:`causalnet.inference.gaussian`
answers its queries in closed form; the noise is additive, so abduction is
exact: ``u = (x - bias - w · pa) / sigma``.

Symbols: ``n`` batch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import ModelError
from .base import REAL, TENSOR, Mechanism, Spec, as_real_array, as_real_scalar, check_finite_output

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
        Noise standard deviation, >= 0. ``sigma = 0`` makes the node
        deterministic (``x = bias + w · pa``; it then has no density).

    Raises
    ------
    ModelError
        Weights of the wrong count or not real and finite (complex, NaN, inf,
        strings); a bias that is not a finite real number; a negative or
        non-finite sigma.
    NumericalError
        From :meth:`evaluate`, when finite inputs overflow (e.g. ``sigma = 1e308``).

    Examples
    --------
    >>> LinearGaussian(["X"], [2.0], bias=1.0, sigma=0.5).weights
    array([2.])
    """

    kind = REAL
    can_abduct = True

    def __init__(self, parents: Sequence[Hashable] = (), weights=(), bias: float = 0.0, sigma: float = 1.0) -> None:
        super().__init__(parents)
        who = f"LinearGaussian over parents {list(self.parents)}"
        w = as_real_array(weights, who, "weights")
        if w.ndim > 1 or w.size != len(self.parents):
            raise ModelError(f"{who}: {w.size} weights for {len(self.parents)} parents; expected shape "
                             f"({len(self.parents)},), got {w.shape}")
        w = w.reshape(-1)                              # a scalar weight for one parent
        w.setflags(write=False)
        self.weights = w
        self.bias = as_real_scalar(bias, who, "bias")
        self.sigma = as_real_scalar(sigma, who, "sigma", nonnegative=True)
        self.deterministic = self.sigma == 0.0

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind == TENSOR or (ps.kind == REAL and ps.shape != ()):
                raise ModelError(f"LinearGaussian {node!r}: parent {p!r} is {ps.describe()}; expected a scalar")
        return Spec(REAL)

    def mean(self, parents: Mapping[Hashable, np.ndarray]) -> np.ndarray | float:
        out = self.bias
        for w, p in zip(self.weights, self.parents):
            out = out + w * np.asarray(parents[p], dtype=np.float64)
        return out

    def sample_noise(self, n, rng, spec):
        return None if self.deterministic else rng.standard_normal(n)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        if noise is None:
            noise = 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.asarray(self.mean(parents) + self.sigma * np.asarray(noise), dtype=np.float64)
        return check_finite_output(node, out, [noise, *(parents[p] for p in self.parents)])

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
