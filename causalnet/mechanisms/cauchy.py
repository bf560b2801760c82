"""Cauchy-stable linear mechanisms: ``x = a(pa) + Σ W_p · p + scale ⊙ eps``.

A :class:`CauchyLinear` node is linear in its *linear parents* and adds its
own standard-Cauchy noise ``eps ~ Cauchy(0, 1)`` (independent per component)
times a non-negative scale. The location offset ``a`` and the scale may come
from deterministic parents (``loc_parent``, ``scale_parent``), so an
abduction network — any deterministic function of the context — can feed
the node, as in the CausalQwen head (``U = loc_U + scale_U ⊙ eps``).

Because a linear map of independent Cauchy variables is Cauchy, a subgraph
of such nodes has closed-form marginals; :mod:`causalnet.inference.cauchy`
computes them exactly, also when parents share noise sources.

Weights act on the *last* axis of a parent, like ``torch.nn.Linear``:

=============  ==================  ======================================
weight         parent shape        contribution (shape)
=============  ==================  ======================================
scalar ``w``   ``(..., j)``        ``w * p``  (``(..., j)``)
``(j,)``       ``(..., j)``        ``p @ w``  (``(...)``, last axis summed)
``(k, j)``     ``(..., j)``        ``p @ W.T`` (``(..., k)``)
=============  ==================  ======================================

Every contribution must have the node's shape (no broadcasting between
parents); the constant ``loc`` and ``scale`` broadcast to it.

Symbols: ``n`` batch, ``d`` width of the last axis.

Examples
--------
>>> import numpy as np
>>> from causalnet.model import CausalModel
>>> from causalnet.mechanisms.cauchy import CauchyLinear
>>> m = CausalModel({
...     "U": CauchyLinear(shape=(2,)),
...     "S": CauchyLinear(["U"], [np.array([[1.0, -2.0]])], loc=0.5, scale=0.0),
... })
>>> m.spec("S").shape
(1,)
>>> m.forward({"U": [[1.0, 1.0]]})["S"]
array([[-0.5]])
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import ModelError, ShapeError
from .base import DISCRETE, REAL, TENSOR, Mechanism, Spec, as_real_array, as_shape, check_finite_output

__all__ = ["CauchyLinear", "CAUCHY"]

CAUCHY = "cauchy"
_LOG_PI = float(np.log(np.pi))
_ONE = np.ones(())
_ONE.setflags(write=False)


def _rows(shape) -> str:
    """Batch-first shape text: ``(n,)``, ``(n, 3)``, ``(n, ?, 4)``."""
    return "(n" + "".join(", ?" if s is None else f", {s}" for s in shape) + ("," if not shape else "") + ")"


def _as_weight(w, who: str) -> np.ndarray:
    a = as_real_array(w, who, "weights")
    if a.ndim > 2:
        raise ModelError(f"{who}: a weight is a scalar, a (j,) vector or a (k, j) matrix; got shape {a.shape}")
    if a.size == 0:
        raise ModelError(f"{who}: a weight must not be empty, got shape {a.shape}")
    return a


def _fits(small: tuple, big: tuple) -> bool:
    """Whether an array of shape `small` broadcasts to `big` without changing it (``x += y`` in place)."""
    return len(small) <= len(big) and all(s in (1, b) for s, b in zip(small[::-1], big[::-1]))


def apply_weight(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Apply a CauchyLinear weight to a parent value on its last axis.

    Parameters
    ----------
    w : ndarray of shape (), (j,) or (k, j)
    x : ndarray of shape (n, ..., j)

    Returns
    -------
    ndarray of shape (n, ..., j), (n, ...) or (n, ..., k)
    """
    if w.ndim == 0:
        return w * x
    if w.ndim == 1:
        return x @ w                       # (n, ..., j) -> (n, ...)
    return x @ w.T                         # (n, ..., j) -> (n, ..., k)


def weight_out_shape(w: np.ndarray, shape: tuple) -> tuple | None:
    """Per-row shape of ``apply_weight(w, x)`` for x of per-row `shape`; None if it does not fit."""
    if w.ndim == 0:
        return tuple(shape)
    if not shape or (shape[-1] is not None and shape[-1] != w.shape[-1]):
        return None
    return tuple(shape[:-1]) if w.ndim == 1 else tuple(shape[:-1]) + (w.shape[0],)


class CauchyLinear(Mechanism):
    """A real (scalar or tensor) node, linear in its parents, with Cauchy noise.

    ``x = loc + [loc_parent] + Σ_p W_p · p + scale · [scale_parent] ⊙ eps`` with
    ``eps ~ Cauchy(0, 1)`` independent per component.

    Parameters
    ----------
    parents : sequence of node names
        The linear parents.
    weights : sequence or mapping, optional
        One weight per linear parent (a scalar, a ``(j,)`` vector or a
        ``(k, j)`` matrix acting on the parent's last axis; see the module
        docstring), as a list in parent order or a mapping parent -> weight.
        A single ndarray is taken as the weight of a single parent. Default:
        1 for every parent.
    loc : float or array_like, default 0
        Constant location offset, broadcast to the node's shape.
    scale : float or array_like, default 1
        Constant noise scale (>= 0), broadcast to the node's shape; it
        multiplies the value of `scale_parent` when that is given. A scale of
        0 with no `scale_parent` makes the node deterministic (an exact linear
        combination of its parents, e.g. the CausalQwen decision scores).
    loc_parent : node name, optional
        A parent whose value is added to the location (weight 1).
    scale_parent : node name, optional
        A parent whose value (finite, >= 0) scales the noise componentwise.
    shape : tuple, optional
        Per-row shape of the node; inferred from the parents, `loc` and
        `scale` when omitted.

    Raises
    ------
    ModelError
        Weights that are not finite or of more than 2 axes, the wrong number
        of weights, a negative or non-finite scale, a non-finite loc.

    Examples
    --------
    >>> CauchyLinear(["X"], [2.0], loc=1.0, scale=0.5).scale
    array(0.5)
    """

    kind = CAUCHY
    can_abduct = True

    def __init__(self, parents: Sequence[Hashable] = (), weights=None, *, loc=0.0, scale=1.0,
                 loc_parent: Hashable | None = None, scale_parent: Hashable | None = None,
                 shape: tuple | None = None) -> None:
        if isinstance(parents, (str, bytes)):
            parents = (parents,)
        linear = tuple(parents)
        extra = tuple(p for p in (loc_parent, scale_parent) if p is not None)
        super().__init__(linear + extra)
        who = f"CauchyLinear over {list(linear)}"
        if weights is None:
            ws = [1.0] * len(linear)
        elif isinstance(weights, Mapping):
            unknown = [k for k in weights if k not in linear]
            if unknown:
                raise ModelError(f"{who}: weights given for {unknown}, which are not linear parents")
            ws = [weights.get(p, 1.0) for p in linear]
        elif isinstance(weights, np.ndarray) and len(linear) == 1 and weights.ndim >= 1:
            ws = [weights]
        else:
            ws = list(weights)
        if len(ws) != len(linear):
            raise ModelError(f"{who}: {len(ws)} weights for {len(linear)} linear parents")
        self.weights = tuple(_as_weight(w, f"{who}, parent {p!r}") for p, w in zip(linear, ws))
        loc_a = as_real_array(loc, who, "loc")
        scale_a = as_real_array(scale, who, "scale", nonnegative=True)
        for name, arr in (("loc", loc_a), ("scale", scale_a)):
            if arr.size == 0 or arr.ndim > 0 and 0 in arr.shape:
                raise ModelError(f"{who}: {name} must not be empty, got shape {arr.shape}")
        self.loc = loc_a
        self.scale = scale_a
        self.linear_parents = linear
        self.loc_parent = loc_parent
        self.scale_parent = scale_parent
        self.shape = as_shape(shape, who)
        self.deterministic = scale_parent is None and not np.any(scale_a > 0)

    # -- structure -------------------------------------------------------------------------

    @property
    def linear_terms(self) -> tuple:
        """``((parent, weight), ...)``: the linear parents, then `loc_parent` with weight 1."""
        terms = tuple(zip(self.linear_parents, self.weights))
        if self.loc_parent is not None:
            terms = terms + ((self.loc_parent, _ONE),)
        return terms

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        cands = []
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind == DISCRETE:
                raise ModelError(f"CauchyLinear {node!r}: parent {p!r} is {ps.describe()}; expected a real or "
                                 f"tensor node")
        for p, w in self.linear_terms:
            ps = parent_specs[p].shape
            out = weight_out_shape(w, ps)
            if out is None:
                raise ShapeError(f"CauchyLinear {node!r}: weight of shape {w.shape} does not fit parent {p!r} of "
                                 f"shape {_rows(ps)}; it acts on the last axis")
            cands.append((f"parent {p!r} through its weight", out))
        if self.scale_parent is not None:
            cands.append((f"scale parent {self.scale_parent!r}", tuple(parent_specs[self.scale_parent].shape)))
        if self.shape is not None:
            cands.append(("shape=", self.shape))
        if cands:
            shape = list(cands[0][1])
            for what, s in cands[1:]:
                if len(s) != len(shape) or any(a is not None and b is not None and a != b for a, b in zip(s, shape)):
                    raise ShapeError(f"CauchyLinear {node!r}: {cands[0][0]} gives shape {_rows(cands[0][1])} "
                                     f"but {what} gives {_rows(s)}")
                shape = [a if a is not None else b for a, b in zip(shape, s)]
            shape = tuple(shape)
        else:
            shape = tuple(np.broadcast_shapes(self.loc.shape, self.scale.shape))
        probe = tuple(1 if s is None else s for s in shape)
        for name, arr in (("loc", self.loc), ("scale", self.scale)):
            try:
                ok = np.broadcast_shapes(arr.shape, probe) == probe
            except ValueError:
                ok = False
            if not ok:
                raise ShapeError(f"CauchyLinear {node!r}: {name} of shape {arr.shape} does not broadcast to the "
                                 f"node's shape {_rows(shape)}")
        return Spec(REAL if shape == () else TENSOR, shape=shape)

    # -- values ------------------------------------------------------------------------------

    def center(self, node, parents: Mapping[Hashable, np.ndarray], spec: Spec, *, n: int | None = None) -> np.ndarray:
        """The node's median given its parents: ``loc + [loc_parent] + Σ W_p · p``, shape (n, ...)."""
        out = None
        for p, w in self.linear_terms:
            c = apply_weight(w, np.asarray(parents[p], dtype=np.float64))
            out = c if out is None else out + c                 # c is a fresh array: add in place below
        if out is None or not _fits(self.loc.shape, out.shape):
            out = self.loc if out is None else out + self.loc
        elif self.loc.any():
            out += self.loc
        out = np.asarray(out, dtype=np.float64)
        if n is not None and out.ndim <= len(spec.shape):
            if any(s is None for s in spec.shape):
                raise ModelError(f"node {node!r} has free shape {spec.shape} and no parent fixes it; give shape=")
            out = np.broadcast_to(out, (n, *spec.shape)).copy()
        return out

    def noise_scale(self, node, parents: Mapping[Hashable, np.ndarray]) -> np.ndarray:
        """Scale of the node's own noise: `scale` times the `scale_parent` value (broadcastable to (n, ...)).

        Raises
        ------
        ModelError
            If the scale parent's value is negative or not finite.
        """
        if self.scale_parent is None:
            return self.scale
        v = np.asarray(parents[self.scale_parent], dtype=np.float64)
        if not np.all(np.isfinite(v)) or (v.size and v.min() < 0):
            bad = v[~np.isfinite(v)] if not np.all(np.isfinite(v)) else v.min()
            raise ModelError(f"node {node!r}: its scale parent {self.scale_parent!r} must be finite and >= 0, "
                             f"got {float(np.ravel(bad)[0])}")
        return self.scale * v

    def sample_noise(self, n, rng, spec):
        if self.deterministic:
            return None
        if any(s is None for s in spec.shape):
            raise ModelError(f"CauchyLinear with free shape {spec.shape} cannot draw its own noise; give shape=")
        return rng.standard_cauchy((n, *spec.shape))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        with np.errstate(over="ignore", invalid="ignore"):
            x = self.center(node, parents, spec, n=n)
            if noise is not None and not self.deterministic:
                x = x + self.noise_scale(node, parents) * np.asarray(noise, dtype=np.float64)
        return check_finite_output(node, x, [noise, *(parents[p] for p in self.parents)])

    def abduct(self, node, value, parents, spec):
        s = np.broadcast_to(self.noise_scale(node, parents), np.shape(value))
        r = np.asarray(value, dtype=np.float64) - self.center(node, parents, spec)
        return np.divide(r, s, out=np.zeros(np.shape(value)), where=s > 0)

    def log_prob(self, node, value, parents, spec):
        if self.deterministic:
            raise ModelError(f"node {node!r} is deterministic (scale 0) and has no density")
        value = np.asarray(value, dtype=np.float64)
        s = np.broadcast_to(self.noise_scale(node, parents), value.shape)
        if np.any(s <= 0):
            raise ModelError(f"node {node!r} has a zero noise scale in some component and no density there")
        z = np.abs(value - self.center(node, parents, spec)) / s
        with np.errstate(over="ignore"):
            l1p = np.where(z > 1e150, 2.0 * np.log(np.maximum(z, 1e-300)), np.log1p(z * z))
        lp = -_LOG_PI - np.log(s) - l1p
        return lp.reshape(lp.shape[0], -1).sum(axis=1) if lp.ndim > 1 else lp

    # -- serialisation ------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {"type": "CauchyLinear", "parents": list(self.linear_parents),
                "weights": [w.tolist() for w in self.weights], "loc": self.loc.tolist(),
                "scale": self.scale.tolist(), "loc_parent": self.loc_parent, "scale_parent": self.scale_parent,
                "shape": None if self.shape is None else list(self.shape)}

    def __repr__(self) -> str:
        ws = [w.tolist() if w.size <= 4 else f"<{w.shape}>" for w in self.weights]
        extra = "".join(f", {k}={v!r}" for k, v in (("loc_parent", self.loc_parent),
                                                     ("scale_parent", self.scale_parent)) if v is not None)
        loc = self.loc.tolist() if self.loc.size <= 4 else f"<{self.loc.shape}>"
        scale = self.scale.tolist() if self.scale.size <= 4 else f"<{self.scale.shape}>"
        return f"CauchyLinear(parents={list(self.linear_parents)}, weights={ws}, loc={loc}, scale={scale}{extra})"
