"""Linear maps, embeddings, positions and the feed-forward net: ops on the last axis.

Weights follow the PyTorch layout (``Linear`` weight ``(out, in)``,
``Embedding`` weight ``(L, d)``), so a state dict maps onto them without
transposes. Matrices used as ``x @ W.T`` are stored Fortran-ordered (same
shape and values; ``W.T`` is C-contiguous, so BLAS runs its faster ``NN``
product), and the checked and compiled paths run the same product.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from ...arguments import check_int, check_real
from ...errors import ModelError, ShapeError
from .activations import ACTIVATIONS, GATES
from .base import TensorOp
from .shapes import SizeClash, cast, join_sizes, weight_array

__all__ = ["Linear", "Affine", "Embedding", "PositionalEncoding", "LearnedPositions", "sinusoidal_encoding", "FeedForward"]


class Linear(TensorOp):
    """``y = x W^T + b`` on the last axis (PyTorch ``nn.Linear``).

    Parameters
    ----------
    parent : node name
        Holds ``(n, ..., d_in)``.
    weight : array_like of shape (d_out, d_in)
    bias : array_like of shape (d_out,), optional
    dtype : {"float64", "float32"}

    Output: ``(n, ..., d_out)``.
    """

    def __init__(self, parent: Hashable, weight, bias=None, *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.weight = weight_array(weight, 2, "Linear weight", self.dtype, order="F")   # .T is C-contiguous
        self.bias = None if bias is None else weight_array(bias, 1, "Linear bias", self.dtype)
        if self.bias is not None and self.bias.shape[0] != self.weight.shape[0]:
            raise ShapeError(f"Linear bias has {self.bias.shape[0]} entries for a weight of shape "
                             f"{self.weight.shape} (d_out, d_in); expected {self.weight.shape[0]}")

    @property
    def d_in(self) -> int:
        return int(self.weight.shape[1])

    @property
    def d_out(self) -> int:
        return int(self.weight.shape[0])

    def infer_shape(self, node, shapes):
        (s,) = shapes
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "...", self.d_in), s)
        try:
            join_sizes(s[-1], self.d_in)
        except SizeClash:
            raise self._mismatch(node, self.parents[0], (*s[:-1], self.d_in), s) from None
        return (*s[:-1], self.d_out)

    def _run(self, x):
        x = cast(x, self.dtype)
        y = x.reshape(-1, x.shape[-1]) @ self.weight.T      # (n * ..., d_out)
        if self.bias is not None:
            y += self.bias
        return y.reshape(*x.shape[:-1], self.d_out)         # (n, ..., d_out)

    def compiled(self, node):
        """``_run`` with the attribute lookups and the transposed view made once (the same products)."""
        wt, b, dtype, d_out = self.weight.T, self.bias, self.dtype, self.d_out

        def run(x):
            if x.dtype != dtype:
                x = x.astype(dtype)
            y = x.reshape(-1, x.shape[-1]) @ wt              # (n * ..., d_out)
            if b is not None:
                y += b
            return y.reshape(*x.shape[:-1], d_out)           # (n, ..., d_out)
        return run

    def __repr__(self) -> str:
        return f"Linear(parents={list(self.parents)}, d_in={self.d_in}, d_out={self.d_out})"


class Affine(TensorOp):
    """``y = act(sum_k x_k W_k^T + b)``: several inputs mapped and summed (a recurrent cell's gate).

    Parameters
    ----------
    parents : list of node names
        Each ``(n, ..., d_k)``.
    weights : list of array_like, shapes (d_out, d_k)
    bias : array_like of shape (d_out,), optional
    activation : {None, "sigmoid", "tanh", "relu"}
    """

    arity = None

    def __init__(self, parents, weights, bias=None, *, activation: str | None = None,
                 dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        if not isinstance(weights, (list, tuple)) or len(weights) != len(self.parents):
            raise ModelError(f"Affine needs one weight per parent ({len(self.parents)}), got {type(weights).__name__}")
        self.weights = [weight_array(w, 2, "Affine weight", self.dtype, order="F") for w in weights]
        outs = {w.shape[0] for w in self.weights}
        if len(outs) != 1:
            raise ShapeError(f"Affine weights disagree on d_out: {[w.shape for w in self.weights]}")
        self.d_out = outs.pop()
        self.bias = None if bias is None else weight_array(bias, 1, "Affine bias", self.dtype)
        if self.bias is not None and self.bias.shape != (self.d_out,):
            raise ShapeError(f"Affine bias must be ({self.d_out},), got {self.bias.shape}")
        if activation not in GATES:
            raise ModelError(f"Affine activation must be one of {list(GATES)}, got {activation!r}")
        self.activation = activation
        self._act = GATES[activation]

    def infer_shape(self, node, shapes):
        for p, s, w in zip(self.parents, shapes, self.weights):
            if len(s) < 2:
                raise self._mismatch(node, p, ("n", "...", w.shape[1]), s)
            try:
                join_sizes(s[-1], w.shape[1])
            except SizeClash:
                raise self._mismatch(node, p, (*s[:-1], w.shape[1]), s) from None
        self._batch(node, shapes)
        return (*shapes[0][:-1], self.d_out)

    def _run(self, *xs):
        y = cast(xs[0], self.dtype) @ self.weights[0].T                  # (n, ..., d_out)
        for x, w in zip(xs[1:], self.weights[1:]):
            y += cast(x, self.dtype) @ w.T
        if self.bias is not None:
            y += self.bias
        return y if self._act is None else self._act(y)

    def __repr__(self) -> str:
        return f"Affine(parents={list(self.parents)}, d_out={self.d_out}, activation={self.activation})"


class Embedding(TensorOp):
    """Rows of a table looked up by integer ids (PyTorch ``nn.Embedding``).

    Parameters
    ----------
    parent : node name
        Integer ids ``(n, ...)``, each in ``[0, L)``.
    weight : array_like of shape (L, d)
    scale : float, optional
        Multiply the rows by this (e.g. ``sqrt(d)`` as in Vaswani et al.).

    Output: ``(n, ..., d)``.

    Raises
    ------
    ShapeError
        At run time, on an id outside ``[0, L)`` (naming the node and the id).
    """

    def __init__(self, parent: Hashable, weight, *, scale: float | None = None, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.weight = weight_array(weight, 2, "Embedding weight", self.dtype)
        self.scale = None if scale is None else check_real(scale, "Embedding scale")

    def _check_dtypes(self, node, dtypes):
        dt = np.dtype(dtypes[0])
        if dt.kind not in "iu":
            raise ModelError(f"node {node!r} (Embedding) needs integer ids from {self.parents[0]!r}, which holds {dt}")

    def infer_shape(self, node, shapes):
        return (*shapes[0], int(self.weight.shape[1]))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        self.check_ids(parents[self.parents[0]], node)
        return super().evaluate(node, parents, noise, spec, n=n)

    def check_ids(self, ids: np.ndarray, node=None) -> None:
        """Raise ModelError / ShapeError unless `ids` are integers in ``[0, L)``."""
        who = "Embedding" if node is None else f"node {node!r} (Embedding)"
        if ids.dtype.kind not in "iu":
            raise ModelError(f"{who} needs integer ids from {self.parents[0]!r}, got {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.weight.shape[0]):
            bad = ids.min() if ids.min() < 0 else ids.max()
            raise ShapeError(f"{who} has {self.weight.shape[0]} rows; {self.parents[0]!r} "
                             f"holds the id {int(bad)}, outside [0, {self.weight.shape[0]})")

    def run_step(self, start, ids):
        self.check_ids(ids)
        return self._run(ids)

    def compiled(self, node):
        def run(ids):
            self.check_ids(ids, node)
            return self._run(ids)
        return run

    def _run(self, ids):
        out = self.weight[ids]                             # (n, ..., d)
        if self.scale is not None:
            out *= self.scale
        return out

    def __repr__(self) -> str:
        return f"Embedding(parents={list(self.parents)}, L={self.weight.shape[0]}, d={self.weight.shape[1]})"


def sinusoidal_encoding(length: int, d: int, base: float = 10000.0, dtype: Any = np.float64) -> np.ndarray:
    """The sinusoidal position table of Vaswani et al., shape ``(length, d)``.

    ``PE[t, 2i] = sin(t / base^(2i/d))`` and ``PE[t, 2i+1] = cos(t / base^(2i/d))``.

    Examples
    --------
    >>> sinusoidal_encoding(3, 4)[1].round(4).tolist()
    [0.8415, 0.5403, 0.01, 1.0]
    """
    length = check_int(length, "sinusoidal_encoding length", low=0)
    d = check_int(d, "sinusoidal_encoding d", low=0)
    base = check_real(base, "sinusoidal_encoding base", positive=True)
    pos = np.arange(length, dtype=np.float64)[:, None]                       # (T, 1)
    freq = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)               # (ceil(d/2),)
    ang = pos * freq                                                          # (T, ceil(d/2))
    pe = np.empty((length, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang[:, : d // 2])
    return pe.astype(dtype, copy=False)


class PositionalEncoding(TensorOp):
    """Sinusoidal positions, added to the parent or on their own.

    Parameters
    ----------
    parent : node name
        ``(n, T, d)`` when ``add=True`` (the output is ``parent + PE``);
        with ``add=False`` any ``(n, T, ...)`` (only its length is read) and
        the output is ``PE`` broadcast to ``(n, T, d_model)``.
    d_model : int, optional
        Width; required when ``add=False``.
    add : bool
    base : float
        10000 in Vaswani et al.
    """

    def __init__(self, parent: Hashable, d_model: int | None = None, *, add: bool = True, base: float = 10000.0,
                 dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if not add and d_model is None:
            raise ModelError("PositionalEncoding(add=False) needs d_model")
        self.d_model = None if d_model is None else check_int(d_model, "PositionalEncoding d_model", low=1)
        self.add = bool(add)
        self.base = check_real(base, "PositionalEncoding base", positive=True)
        self._cache: dict = {}

    def infer_shape(self, node, shapes):
        (s,) = shapes
        if self.add:
            if len(s) != 3:
                raise self._mismatch(node, self.parents[0], ("n", "T", self.d_model or "d"), s)
            if self.d_model is not None:
                try:
                    join_sizes(s[2], self.d_model)
                except SizeClash:
                    raise self._mismatch(node, self.parents[0], ("n", s[1], self.d_model), s) from None
            return s
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "T", "..."), s)
        return (s[0], s[1], self.d_model)

    def table(self, length: int, d: int | None = None) -> np.ndarray:
        """``(length, d)`` positions (the last table is cached)."""
        d = self.d_model if d is None else d
        key = (length, d)
        if key not in self._cache:
            self._cache = {key: sinusoidal_encoding(length, d, self.base, self.dtype)}
        return self._cache[key]

    def _run(self, x):
        return self.run_step(0, x)

    def run_step(self, start, x):
        t = x.shape[1]
        if self.add:
            return cast(x, self.dtype) + self.table(start + t, x.shape[2])[start:]   # (n, T, d)
        return np.broadcast_to(self.table(start + t)[start:], (x.shape[0], t, self.d_model))


class LearnedPositions(TensorOp):
    """Learned absolute positions added to the parent: ``y[:, t] = x[:, t] + W[t]`` (GPT-2 ``wpe``, BERT).

    Parameters
    ----------
    parent : node name
        ``(n, T, d)`` with ``T`` at most the table's length.
    weight : array_like of shape (T_max, d)

    Raises
    ------
    ShapeError
        When the sequence is longer than the table (naming the node and both lengths).
    """

    def __init__(self, parent: Hashable, weight, *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.weight = weight_array(weight, 2, "LearnedPositions weight", self.dtype)

    def infer_shape(self, node, shapes):
        (s,) = shapes
        t_max, d = self.weight.shape
        if len(s) != 3:
            raise self._mismatch(node, self.parents[0], ("n", "T", d), s)
        try:
            join_sizes(s[2], d)
        except SizeClash:
            raise self._mismatch(node, self.parents[0], (s[0], s[1], d), s) from None
        if isinstance(s[1], int) and s[1] > t_max:
            raise ShapeError(f"node {node!r} (LearnedPositions) has {t_max} positions; {self.parents[0]!r} holds "
                             f"{s[1]}")
        return s

    def _run(self, x):
        return self.run_step(0, x)

    def run_step(self, start, x):
        t_max = self.weight.shape[0]
        if start + x.shape[1] > t_max:
            raise ShapeError(f"LearnedPositions has {t_max} positions; the sequence reached {start + x.shape[1]}")
        return cast(x, self.dtype) + self.weight[start:start + x.shape[1]]          # (n, T, d)

    def __repr__(self) -> str:
        return f"LearnedPositions(parents={list(self.parents)}, T_max={self.weight.shape[0]}, d={self.weight.shape[1]})"


class FeedForward(TensorOp):
    """``F = W2 act(W1 x + b1) + b2`` on the last axis (Bayesuvius ``F``).

    Parameters
    ----------
    parent : node name
        ``(n, ..., d)``.
    w1 : array_like of shape (d_ff, d)
    b1 : array_like of shape (d_ff,), optional
    w2 : array_like of shape (d, d_ff)
    b2 : array_like of shape (d,), optional
    activation : {"relu", "gelu"}
    """

    def __init__(self, parent: Hashable, w1, b1=None, w2=None, b2=None, *, activation: str = "relu",
                 dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if w2 is None:
            raise ModelError("FeedForward needs w1 and w2")
        self.w1 = weight_array(w1, 2, "FeedForward w1", self.dtype, order="F")      # .T is C-contiguous
        self.w2 = weight_array(w2, 2, "FeedForward w2", self.dtype, order="F")
        self.b1 = None if b1 is None else weight_array(b1, 1, "FeedForward b1", self.dtype)
        self.b2 = None if b2 is None else weight_array(b2, 1, "FeedForward b2", self.dtype)
        ff, d = self.w1.shape
        if self.w2.shape != (d, ff):
            raise ShapeError(f"FeedForward w2 must be ({d}, {ff}) for w1 of shape {self.w1.shape}, got "
                             f"{self.w2.shape}")
        if self.b1 is not None and self.b1.shape != (ff,):
            raise ShapeError(f"FeedForward b1 must be ({ff},), got {self.b1.shape}")
        if self.b2 is not None and self.b2.shape != (d,):
            raise ShapeError(f"FeedForward b2 must be ({d},), got {self.b2.shape}")
        if not isinstance(activation, str) or activation not in ACTIVATIONS:
            raise ModelError(f"FeedForward activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
        self.activation = activation
        self._act = ACTIVATIONS[activation]
        self.d = d
        self.d_ff = ff

    def infer_shape(self, node, shapes):
        (s,) = shapes
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "...", self.d), s)
        try:
            join_sizes(s[-1], self.d)
        except SizeClash:
            raise self._mismatch(node, self.parents[0], (*s[:-1], self.d), s) from None
        return s

    def _run(self, x):
        x = cast(x, self.dtype)
        h = x.reshape(-1, self.d) @ self.w1.T                   # (n * ..., d_ff)
        if self.b1 is not None:
            h += self.b1
        h = self._act(h)
        y = h @ self.w2.T                                        # (n * ..., d)
        if self.b2 is not None:
            y += self.b2
        return y.reshape(x.shape)

    def compiled(self, node):
        """``_run`` with the attribute lookups and the transposed views made once (the same products)."""
        w1t, b1, w2t, b2, act, d, dtype = self.w1.T, self.b1, self.w2.T, self.b2, self._act, self.d, self.dtype

        def run(x):
            if x.dtype != dtype:
                x = x.astype(dtype)
            h = x.reshape(-1, d) @ w1t                           # (n * ..., d_ff)
            if b1 is not None:
                h += b1
            y = act(h) @ w2t                                     # (n * ..., d)
            if b2 is not None:
                y += b2
            return y.reshape(x.shape)
        return run

    def __repr__(self) -> str:
        return f"FeedForward(parents={list(self.parents)}, d={self.d}, d_ff={self.d_ff}, {self.activation})"
