"""Conditional linear-Gaussian mechanisms: a real node with discrete and real parents.

For the configuration ``k`` of the node's discrete parents,
``x = intercept[k] + weights[k] · real_parents + sqrt(variance[k]) · u``,
``u ~ N(0, 1)``. A model whose real nodes are all of this kind (or
:class:`~causalnet.mechanisms.gaussian.LinearGaussian`) and whose discrete
nodes have only discrete parents is a conditional Gaussian (CG) network
(Lauritzen): for each discrete configuration the real nodes are jointly
Gaussian, so :mod:`causalnet.inference.conditional_gaussian` answers it exactly.
The noise is the standardised residual ``u = (x - mean_k) / sd_k``.

Which parents are discrete is known once the model is built (from the parents'
specs); the axes of `intercept`, `variance` and `weights` follow the discrete
parents in their declared order, the last axis of `weights` the real parents
in theirs.

Symbols: ``n`` batch, ``r`` real parents.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import ModelError
from .base import DISCRETE, REAL, TENSOR, Mechanism, Spec, as_real_array, check_finite_output

__all__ = ["ConditionalLinearGaussian"]

_LOG_2PI = float(np.log(2 * np.pi))


class ConditionalLinearGaussian(Mechanism):
    """A real scalar node whose linear-Gaussian law depends on its discrete parents' states.

    Parameters
    ----------
    parents : sequence of node names
        Discrete and real parents, in any order.
    intercept : array_like of shape (*discrete_parent_cards,)
        One intercept per configuration of the discrete parents (a scalar when
        there are none).
    weights : array_like of shape (*discrete_parent_cards, r)
        Weights of the real parents, per configuration.
    variance : array_like of shape (*discrete_parent_cards,)
        Noise variances, >= 0 (0 makes that configuration deterministic).

    Attributes
    ----------
    discrete_parents, real_parents : tuple
        Set when the node enters a model (from its parents' specs).

    Raises
    ------
    ModelError
        Shapes that disagree, negative or non-finite numbers; when the model is
        built, discrete parents whose number or cardinalities do not match the
        arrays (the message names the node).

    Examples
    --------
    >>> import causalnet as cn
    >>> m = cn.CausalModel({"T": cn.Categorical([0.5, 0.5]), "A": cn.LinearGaussian(),
    ...                     "Y": ConditionalLinearGaussian(["T", "A"], [0.0, 2.0], [[1.0], [3.0]], [1.0, 0.25])})
    >>> m.mechanisms["Y"].discrete_parents, m.mechanisms["Y"].real_parents
    (('T',), ('A',))
    """

    kind = REAL
    can_abduct = True

    def __init__(self, parents: Sequence[Hashable] = (), intercept=0.0, weights=None, variance=1.0) -> None:
        super().__init__(parents)
        who = f"ConditionalLinearGaussian over parents {list(self.parents)}"
        b = as_real_array(intercept, who, "intercept")
        nd = b.ndim
        n_real = len(self.parents) - nd
        if n_real < 0:
            raise ModelError(f"{who}: intercept has {nd} axes (one per discrete parent) but there are only "
                             f"{len(self.parents)} parents")
        if weights is None:
            weights = np.zeros((*b.shape, n_real))
        w = as_real_array(weights, who, "weights")
        if w.shape != (*b.shape, n_real):
            raise ModelError(f"{who}: weights must have shape (*discrete_parent_cards, n_real_parents) = "
                             f"{(*b.shape, n_real)}, got {w.shape}")
        var = as_real_array(variance, who, "variance")
        if var.shape != b.shape:
            raise ModelError(f"{who}: variance must have shape (*discrete_parent_cards,) = {b.shape}, got {var.shape}")
        if np.any(var < 0):
            raise ModelError(f"{who}: variance must be >= 0, got {float(var.min())}")
        for a in (b, w, var):
            a.setflags(write=False)
        self.intercept, self.weights, self.variance = b, w, var
        self.sd = np.sqrt(var)
        self.sd.setflags(write=False)
        self.deterministic = bool(np.all(var == 0.0))
        self.discrete_parents: tuple | None = None
        self.real_parents: tuple | None = None

    @property
    def cards(self) -> tuple:
        """Cardinalities of the discrete parents, shape of `intercept`."""
        return self.intercept.shape

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        disc, real = [], []
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind == DISCRETE:
                disc.append(p)
            elif ps.kind == TENSOR or ps.shape != ():
                raise ModelError(f"ConditionalLinearGaussian {node!r}: parent {p!r} is {ps.describe()}; expected "
                                 f"a discrete or real scalar parent")
            else:
                real.append(p)
        cards = tuple(parent_specs[p].card for p in disc)
        if cards != self.cards:
            raise ModelError(f"ConditionalLinearGaussian {node!r}: discrete parents {disc} have cards {cards}, but "
                             f"intercept/variance have shape {self.cards} (one axis per discrete parent, in "
                             f"declared order)")
        got = (tuple(disc), tuple(real))
        if self.discrete_parents is not None and got != (self.discrete_parents, self.real_parents):
            raise ModelError(f"ConditionalLinearGaussian {node!r}: this mechanism was already used with discrete "
                             f"parents {list(self.discrete_parents)}; build a new one")
        self.discrete_parents, self.real_parents = got
        return Spec(REAL)

    def _check_built(self, node) -> None:
        if self.discrete_parents is None:
            raise ModelError(f"ConditionalLinearGaussian {node!r}: used before it entered a model (which parents "
                             f"are discrete is not known)")

    def _config(self, parents: Mapping[Hashable, np.ndarray]) -> tuple:
        return tuple(np.asarray(parents[p], dtype=np.int64) for p in self.discrete_parents)

    def moments(self, node, parents: Mapping[Hashable, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the node given its parents' values, each of shape (n,) or ()."""
        self._check_built(node)
        k = self._config(parents)
        w = self.weights[k]                                    # (n, r) or (r,)
        mean = self.intercept[k]
        for j, p in enumerate(self.real_parents):
            mean = mean + w[..., j] * np.asarray(parents[p], dtype=np.float64)
        return np.asarray(mean, dtype=np.float64), np.asarray(self.sd[k])

    def sample_noise(self, n, rng, spec):
        return None if self.deterministic else rng.standard_normal(n)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        mean, sd = self.moments(node, parents)
        if noise is None:
            noise = 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.asarray(mean + sd * np.asarray(noise), dtype=np.float64)
        if n is not None and out.ndim == 0:
            out = np.full(n, float(out))
        return check_finite_output(node, out, [noise, *(parents[p] for p in self.parents)])

    def abduct(self, node, value, parents, spec):
        mean, sd = self.moments(node, parents)
        resid = np.asarray(value, dtype=np.float64) - mean
        safe = np.where(sd > 0, sd, 1.0)
        return np.where(sd > 0, resid / safe, 0.0)

    def log_prob(self, node, value, parents, spec):
        mean, sd = self.moments(node, parents)
        if np.any(sd == 0):
            raise ModelError(f"node {node!r} has variance 0 in some configurations of its discrete parents "
                             f"{list(self.discrete_parents)} and has no density there")
        z = (np.asarray(value, dtype=np.float64) - mean) / sd
        return -0.5 * z * z - np.log(sd) - 0.5 * _LOG_2PI

    def to_dict(self) -> dict:
        return {"type": "ConditionalLinearGaussian", "parents": list(self.parents),
                "intercept": self.intercept.tolist(), "weights": self.weights.tolist(),
                "variance": self.variance.tolist()}

    def __repr__(self) -> str:
        return (f"ConditionalLinearGaussian(parents={list(self.parents)}, intercept={self.intercept.tolist()}, "
                f"weights={self.weights.tolist()}, variance={self.variance.tolist()})")
