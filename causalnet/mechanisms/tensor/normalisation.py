"""Layer normalisation ("add & normalise"), stable for every finite input.

The fast path is PyTorch's formula; rows whose squares overflow are divided by
their largest magnitude first (layer norm is scale invariant, ``eps`` scales
with it), so huge but finite rows still normalise correctly.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...arguments import check_int, check_real
from ...errors import ModelError, ShapeError
from . import fused
from .base import TensorOp, same_shapes
from .shapes import SizeClash, cast, join_sizes, weight_array

__all__ = ["LayerNorm", "normalise_scaled"]


class LayerNorm(TensorOp):
    """Layer normalisation of the sum of the parents over the last axis (PyTorch ``nn.LayerNorm``).

    With several parents this is "add & normalise" (Bayesuvius ``N =
    normalize(e + O)``): the parents are summed, then normalised.

    Parameters
    ----------
    parents : node name or list of node names
        Each ``(n, ..., d)``, all of one shape.
    weight, bias : array_like of shape (d,), optional
        Elementwise affine; default 1 and 0.
    eps : float
    d : int, optional
        Width, required when no weight is given.
    """

    arity = None

    def __init__(self, parents: Hashable | Sequence[Hashable], weight=None, bias=None, *, eps: float = 1e-5,
                 d: int | None = None, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        self.weight = None if weight is None else weight_array(weight, 1, "LayerNorm weight", self.dtype)
        self.bias = None if bias is None else weight_array(bias, 1, "LayerNorm bias", self.dtype)
        widths = {a.shape[0] for a in (self.weight, self.bias) if a is not None}
        if d is not None:
            widths.add(check_int(d, "LayerNorm d", low=1))
        if len(widths) > 1:
            raise ShapeError(f"LayerNorm weight, bias and d disagree on the width: {sorted(widths)}")
        if not widths:
            raise ModelError("LayerNorm needs a weight, a bias or d to know its width")
        self.d = widths.pop()
        self.eps = check_real(eps, "LayerNorm eps", positive=True)

    def infer_shape(self, node, shapes):
        s = same_shapes(self, node, shapes)
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "...", self.d), s)
        try:
            join_sizes(s[-1], self.d)
        except SizeClash:
            raise self._mismatch(node, self.parents[0], (*s[:-1], self.d), shapes[0]) from None
        return s

    def _run(self, *xs):
        x = cast(xs[0], self.dtype)
        if len(xs) > 1:
            x = x + cast(xs[1], self.dtype)                         # a fresh array: normalised in place
            for y in xs[2:]:
                x += cast(y, self.dtype)
        inv_d = 1.0 / x.shape[-1]
        mu = np.add.reduce(x, axis=-1, keepdims=True)              # (n, ..., 1); ufunc calls: little overhead
        mu *= inv_d
        if len(xs) > 1:
            x -= mu
            xc = x                                                 # (n, ..., d)
        else:
            xc = x - mu                                            # (n, ..., d)
        var = np.einsum("...i,...i->...", xc, xc)[..., None]       # (n, ..., 1)
        var *= inv_d
        var += self.eps
        np.sqrt(var, out=var)
        if not math.isfinite(float(np.add.reduce(var, axis=None))):                   # |x| near the overflow: rescale those rows
            return self._affine(normalise_scaled(np.sum([cast(y, self.dtype) for y in xs], axis=0), self.eps))
        xc /= var
        return self._affine(xc)

    def compiled(self, node):
        """``_run`` for the usual "add & norm" of two parents, attribute lookups made once (the same arithmetic).

        Inputs go to :func:`.fused.add_layer_norm` when it is active (its kernel is faster at every size).
        """
        if len(self.parents) != 2:
            return self._run
        dtype, eps, w, b, slow = self.dtype, self.eps, self.weight, self.bias, self._run
        einsum, reduce = np.einsum, np.add.reduce
        w1 = np.ones(self.d, dtype=dtype) if w is None else np.ascontiguousarray(w)     # the kernel's affine
        b1 = np.zeros(self.d, dtype=dtype) if b is None else np.ascontiguousarray(b)

        def run(x0, x1):
            if x0.dtype != dtype or x1.dtype != dtype:
                return slow(x0, x1)
            y = fused.add_layer_norm(x0, x1, w1, b1, eps)                  # small inputs, kernels compiled
            if y is not None:
                return y
            x = x0 + x1                                            # a fresh array: normalised in place
            inv_d = 1.0 / x.shape[-1]
            mu = reduce(x, axis=-1, keepdims=True)                 # (n, ..., 1)
            mu *= inv_d
            x -= mu
            var = einsum("...i,...i->...", x, x)[..., None]        # (n, ..., 1)
            var *= inv_d
            var += eps
            np.sqrt(var, out=var)
            if not math.isfinite(float(reduce(var, axis=None))):   # overflow: the rescaling path
                return slow(x0, x1)
            x /= var
            if w is not None:
                x *= w
            if b is not None:
                x += b
            return x
        return run

    def _affine(self, xc: np.ndarray) -> np.ndarray:
        if self.weight is not None:
            xc *= self.weight
        if self.bias is not None:
            xc += self.bias
        return xc

    def __repr__(self) -> str:
        return f"LayerNorm(parents={list(self.parents)}, d={self.d}, eps={self.eps})"


def normalise_scaled(x: np.ndarray, eps: float) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps)`` over the last axis for rows whose squares overflow.

    Each row is divided by its largest magnitude ``m`` first, which leaves the
    result unchanged (``eps`` becomes ``eps / m**2``); rows that overflow even
    their sum (``x`` itself inf after summing parents) cannot be rescaled and
    stay non-finite, which the caller reports.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        m = np.max(np.abs(x), axis=-1, keepdims=True)               # (n, ..., 1)
        m[~(m > 0)] = 1.0
        y = x / m                                                   # |y| <= 1
        y -= y.mean(axis=-1, keepdims=True)
        var = (y * y).mean(axis=-1, keepdims=True) + eps / (m * m)   # (n, ..., 1)
        var[var == 0] = 1.0                                         # a constant row: y is 0 there
        y /= np.sqrt(var)
    return y
