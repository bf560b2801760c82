"""Scaled dot-product attention as nodes: weights, mixing, the fine-grained chain, the fused block.

``P = AttentionWeights(Q, K)`` (scores, scale, masks, softmax) and
``A = Attention(P, V)``; the chain of the Bayesuvius chapter ``B = Scores(Q,
K)``, ``S = Scale(B)``, ``M = Mask(S)``, ``P = Softmax(M)``; and
:class:`MultiHeadAttention`, the whole block in one node.

Masks follow PyTorch: a padding mask is a boolean ``(n, S)`` node that is True
at padding positions; ``causal=True`` blocks keys after the query. The
softmax subtracts each row's maximum (no overflow from finite scores); a row
whose keys are all masked gets all-zero weights (PyTorch gives NaN).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...arguments import check_int, check_real
from ...errors import ModelError, ShapeError
from . import fused
from .base import TensorOp
from .shapes import SizeClash, cast, fmt_shape, join_sizes, weight_array

__all__ = ["AttentionWeights", "Attention", "Scores", "Scale", "Mask", "Softmax", "MultiHeadAttention", "MaskedOp",
           "softmax_", "split_heads", "merge_heads", "check_heads", "check_heads_arg"]


def split_heads(x: np.ndarray, heads: int, scale: float | None = None) -> np.ndarray:
    """``(n, T, D) -> (n, h, T, D/h)``, C-contiguous (optionally scaled, in the same pass).

    Contiguous heads matter: numpy's stacked matmul leaves BLAS for strided
    operands and gets ~1000x slower.
    """
    n, t, dd = x.shape
    view = x.reshape(n, t, heads, dd // heads).transpose(0, 2, 1, 3)     # (n, h, T, d) strided
    out = np.empty(view.shape, dtype=x.dtype)
    if scale is None:
        np.copyto(out, view)
    else:
        np.multiply(view, np.asarray(scale, dtype=x.dtype), out=out)
    return out


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``(n, h, T, d) -> (n, T, h*d)`` (a copy)."""
    n, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(n, t, h * d)


def softmax_(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place; rows that are all -inf become zeros.

    The row maximum is subtracted first, so no finite row overflows. A row
    with every entry masked (-inf) gives all-zero weights (PyTorch gives
    NaN); an empty axis (no keys) gives an empty result.
    """
    if s.size == 0:
        return s
    m = s.max(axis=-1, keepdims=True)
    dead = None
    if not math.isfinite(float(np.add.reduce(m, axis=None))):              # one cheap test; rows looked at if it fails
        dead = ~np.isfinite(m)
        m[dead] = 0.0
    s -= m
    np.exp(s, out=s)
    z = s.sum(axis=-1, keepdims=True)
    if dead is not None:
        z[dead] = 1.0
    s /= z
    return s


def check_heads(op: TensorOp, node, parent, width, heads) -> None:
    if heads is not None and isinstance(width, int) and width % heads:
        raise ShapeError(f"node {node!r} ({type(op).__name__}): {heads} heads do not divide the width {width} "
                         f"of {parent!r}")


class MaskedOp(TensorOp):
    """Shared by ops that apply masks: causal flag and an optional padding parent."""

    def _pad_shape(self, node, pad_parent, s, batch, keys):
        if len(s) != 2:
            raise self._mismatch(node, pad_parent, (batch, keys), s, "a padding mask is (n, S), True at padding")
        try:
            join_sizes(s[0], batch)
            join_sizes(s[1], keys)
        except SizeClash:
            raise self._mismatch(node, pad_parent, (batch, keys), s, "a padding mask is (n, S), True at padding") \
                from None

    def _check_dtypes(self, node, dtypes):
        if self.has_padding:
            dt = np.dtype(dtypes[-1])
            if dt.kind != "b":
                raise ModelError(f"node {node!r} ({type(self).__name__}): the padding mask {self.parents[-1]!r} "
                                 f"must be boolean (True at padding), got {dt}")
            dtypes = dtypes[:-1]
        for p, dt in zip(self.parents, dtypes):
            if np.dtype(dt).kind not in "fiu":
                raise ModelError(f"node {node!r} ({type(self).__name__}) needs numeric values from {p!r}, "
                                 f"which holds {np.dtype(dt)}")

    @property
    def causal_in_keys(self) -> bool:
        return self.causal

    def _bias(self, t: int, s: int, pad: np.ndarray | None, dtype, start: int = 0) -> np.ndarray | None:
        """Additive mask ``0 / -inf``: ``(T, S)``, ``(n, 1, S)`` or ``(n, T, S)``; None if nothing is masked.

        Query ``i`` sits at position ``start + i`` (incremental runs).
        """
        bias = None
        if self.causal and s - 1 > start:                                      # some key after some query
            bias = np.zeros((t, s), dtype=dtype)
            bias[np.triu_indices(t, k=1 + start, m=s)] = -np.inf               # key s > query start + t
        if pad is not None and pad.any():
            pb = np.where(pad, -np.inf, 0.0).astype(dtype)[:, None, :]        # (n, 1, S)
            bias = pb if bias is None else bias + pb                            # (n, T, S)
        return bias


class AttentionWeights(MaskedOp):
    """``P = softmax(mask(Q K^T / sqrt(d_head)))``: the attention weights.

    Parameters
    ----------
    parents : [q, k] or [q, k, pad]
        ``q`` holds ``(n, T, D)``, ``k`` ``(n, S, D)``; ``pad`` (optional)
        ``(n, S)`` bool, True at padding keys.
    heads : int, optional
        Number of heads ``h`` dividing ``D``; the output is ``(n, h, T, S)``.
        None (single head) gives ``(n, T, S)``.
    causal : bool
        Query ``t`` sees only keys ``s <= t``.
    scale : float, optional
        Defaults to ``1 / sqrt(D / h)``.

    Notes
    -----
    Each row sums to 1 over the keys (a row with every key masked is all
    zeros). Bayesuvius writes the same quantity column-wise, ``P(alpha' |
    alpha)`` with ``alpha`` the query; here rows are queries.
    """

    arity = (2, 3)

    def __init__(self, parents: Sequence[Hashable], *, heads: int | None = None, causal: bool = False,
                 scale: float | None = None, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        check_heads_arg(heads)
        self.heads = None if heads is None else int(heads)
        self.causal = bool(causal)
        self.scale = None if scale is None else check_real(scale, "AttentionWeights scale")
        self.has_padding = len(self.parents) == 3

    def infer_shape(self, node, shapes):
        qs, ks = shapes[0], shapes[1]
        q, k = self.parents[0], self.parents[1]
        if len(qs) != 3:
            raise self._mismatch(node, q, ("n", "T", "D"), qs)
        if len(ks) != 3:
            raise self._mismatch(node, k, ("n", "S", qs[2]), ks)
        batch = self._batch(node, shapes)
        try:
            width = join_sizes(qs[2], ks[2])
        except SizeClash:
            raise self._mismatch(node, k, (batch, ks[1], qs[2]), ks, f"the width of {q!r}") from None
        check_heads(self, node, q, width, self.heads)
        if self.has_padding:
            self._pad_shape(node, self.parents[2], shapes[2], batch, ks[1])
        if self.heads is None:
            return (batch, qs[1], ks[1])
        return (batch, self.heads, qs[1], ks[1])

    @property
    def key_parents(self) -> tuple:
        return (1, 2) if self.has_padding else (1,)

    def _run(self, q, k, pad=None):
        return self.run_step(0, q, k, pad)

    def run_step(self, start, q, k, pad=None):
        q = cast(q, self.dtype)
        k = cast(k, self.dtype)
        h = self.heads or 1
        d = q.shape[-1] // h
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(d)
        if self.heads is None:
            s = (q * scale) @ np.ascontiguousarray(k).transpose(0, 2, 1)       # (n, T, S)
        else:
            s = split_heads(q, h, scale) @ split_heads(k, h).transpose(0, 1, 3, 2)   # (n, h, T, S)
        bias = self._bias(q.shape[1], k.shape[1], pad, self.dtype, start)
        if bias is not None:
            s += bias if self.heads is None or bias.ndim == 2 else bias[:, None]  # broadcasts over heads
        return softmax_(s)

    def compiled(self, node):
        """Heads and scale resolved once; small inputs go to :func:`.fused.attention_weights` when it is active.

        Without a mask, larger inputs run ``run_step(0, q, k)`` without its
        indirections; with a causal mask, ``run_step`` itself.
        """
        if self.has_padding or self.heads is None:
            return self._run
        h, dtype, fixed, causal, slow = self.heads, self.dtype, self.scale, self.causal, self._run

        def run(q, k):
            if q.dtype != dtype:
                q = q.astype(dtype)
            if k.dtype != dtype:
                k = k.astype(dtype)
            scale = fixed if fixed is not None else 1.0 / math.sqrt(q.shape[-1] // h)
            s = fused.attention_weights(q, k, h, scale, causal)              # small inputs, kernels compiled
            if s is not None:
                return s
            if causal:
                return slow(q, k)
            s = split_heads(q, h, scale) @ split_heads(k, h).transpose(0, 1, 3, 2)   # (n, h, T, S)
            if s.size == 0:
                return s
            # softmax_ without its all-masked-row test: with no mask, a row without a finite
            # maximum comes from an overflow and turns into NaN, which sends the plan to its checked path
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            return s
        return run

    def __repr__(self) -> str:
        return f"AttentionWeights(parents={list(self.parents)}, heads={self.heads}, causal={self.causal})"


def check_heads_arg(heads) -> None:
    if heads is not None and (not isinstance(heads, (int, np.integer)) or isinstance(heads, bool) or heads < 1):
        raise ModelError(f"heads must be a positive int or None, got {heads!r}")


class Attention(TensorOp):
    """``A = P V``: values mixed by attention weights, heads concatenated.

    Parameters
    ----------
    parents : [p, v]
        ``p`` holds weights ``(n, h, T, S)`` (or ``(n, T, S)`` for one head),
        ``v`` values ``(n, S, D)``.
    heads : int, optional
        Must equal ``h`` of ``p``; None for the single-head ``(n, T, S)`` form.

    Output: ``(n, T, D)``, head ``i`` in columns ``i*D/h : (i+1)*D/h``.
    """

    arity = 2

    def __init__(self, parents: Sequence[Hashable], *, heads: int | None = None, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        check_heads_arg(heads)
        self.heads = None if heads is None else int(heads)

    def infer_shape(self, node, shapes):
        ps, vs = shapes
        p, v = self.parents
        want_p = 3 if self.heads is None else 4
        if len(ps) != want_p:
            exp = ("n", "T", "S") if self.heads is None else ("n", self.heads, "T", "S")
            raise self._mismatch(node, p, exp, ps)
        if self.heads is not None:
            try:
                join_sizes(ps[1], self.heads)
            except SizeClash:
                raise self._mismatch(node, p, ("n", self.heads, ps[2], ps[3]), ps) from None
        if len(vs) != 3:
            raise self._mismatch(node, v, ("n", ps[-1], "D"), vs)
        batch = self._batch(node, shapes)
        try:
            join_sizes(vs[1], ps[-1])
        except SizeClash:
            raise self._mismatch(node, v, (batch, ps[-1], vs[2]), vs, f"as many positions as keys in {p!r}") \
                from None
        check_heads(self, node, v, vs[2], self.heads)
        return (batch, ps[-2], vs[2])

    key_parents = (1,)

    def _run(self, p, v):
        p = cast(p, self.dtype)
        v = cast(v, self.dtype)
        if self.heads is None:
            return p @ np.ascontiguousarray(v)                                      # (n, T, D)
        return merge_heads(p @ split_heads(v, self.heads))                         # (n, T, D)

    def compiled(self, node):
        """``_run`` with the attribute lookups made once."""
        if self.heads is None:
            return self._run
        h, dtype = self.heads, self.dtype

        def run(p, v):
            if p.dtype != dtype:
                p = p.astype(dtype)
            if v.dtype != dtype:
                v = v.astype(dtype)
            return merge_heads(p @ split_heads(v, h))                              # (n, T, D)
        return run

    def __repr__(self) -> str:
        return f"Attention(parents={list(self.parents)}, heads={self.heads})"


class Scores(TensorOp):
    """``B = Q K^T``: unscaled attention scores (Bayesuvius ``B``).

    Parameters
    ----------
    parents : [q, k]
        ``(n, T, D)`` and ``(n, S, D)``.
    heads : int, optional
        Output ``(n, h, T, S)``; None gives ``(n, T, S)``.
    """

    arity = 2

    def __init__(self, parents: Sequence[Hashable], *, heads: int | None = None, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        check_heads_arg(heads)
        self.heads = None if heads is None else int(heads)

    infer_shape = AttentionWeights.infer_shape
    has_padding = False
    key_parents = (1,)

    def _run(self, q, k):
        q = cast(q, self.dtype)
        k = cast(k, self.dtype)
        if self.heads is None:
            return np.ascontiguousarray(q) @ np.ascontiguousarray(k).transpose(0, 2, 1)   # (n, T, S)
        return split_heads(q, self.heads) @ split_heads(k, self.heads).transpose(0, 1, 3, 2)  # (n, h, T, S)


class Scale(TensorOp):
    """``y = factor * x`` (Bayesuvius ``S = B / sqrt(d)``)."""

    def __init__(self, parent: Hashable, factor: float, *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.factor = check_real(factor, "Scale factor")

    def infer_shape(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return cast(x, self.dtype) * self.factor

    def __repr__(self) -> str:
        return f"Scale(parents={list(self.parents)}, factor={self.factor})"


class Mask(MaskedOp):
    """``M = mask(S)``: scores with masked entries set to ``-inf``.

    Parameters
    ----------
    parents : [s] or [s, pad]
        Scores ``(n, ..., T, S)``; optional padding ``(n, S)`` bool, True at padding.
    causal : bool
        Mask keys after the query.
    """

    arity = (1, 2)
    allows_neginf = True

    def __init__(self, parents: Hashable | Sequence[Hashable], *, causal: bool = False,
                 dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        self.causal = bool(causal)
        self.has_padding = len(self.parents) == 2

    def infer_shape(self, node, shapes):
        s = shapes[0]
        if len(s) < 3:
            raise self._mismatch(node, self.parents[0], ("n", "T", "S"), s)
        batch = self._batch(node, shapes)
        if self.has_padding:
            self._pad_shape(node, self.parents[1], shapes[1], batch, s[-1])
        return s

    @property
    def key_parents(self) -> tuple:
        return (1,) if self.has_padding else ()

    def _run(self, s, pad=None):
        return self.run_step(0, s, pad)

    def run_step(self, start, s, pad=None):
        s = cast(s, self.dtype)
        bias = self._bias(s.shape[-2], s.shape[-1], pad, self.dtype, start)
        if bias is None:
            return s.copy()
        if bias.ndim == 3:  # (n, T, S): align its batch axis with s's first axis
            bias = bias.reshape(bias.shape[0], *([1] * (s.ndim - 3)), *bias.shape[1:])
        return s + bias


class Softmax(TensorOp):
    """Softmax along one axis (the last by default); all ``-inf`` slices give zeros."""

    def __init__(self, parent: Hashable, *, axis: int = -1, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.axis = check_int(axis, "Softmax axis")

    def infer_shape(self, node, shapes):
        s = shapes[0]
        ax = self.axis if self.axis < 0 else self.axis + 1
        if not -len(s) + 1 <= ax <= len(s) - 1 or ax == 0:
            raise ShapeError(f"node {node!r} (Softmax): axis {self.axis} is not a per-row axis of {fmt_shape(s)} "
                             f"from {self.parents[0]!r}")
        return s

    @property
    def steppable(self) -> bool:
        return self.axis == -1

    def _run(self, x):
        x = np.array(x, dtype=self.dtype)          # a copy: softmax runs in place
        if self.axis in (-1, x.ndim - 2):
            return softmax_(x)
        ax = self.axis if self.axis < 0 else self.axis + 1
        return np.moveaxis(softmax_(np.ascontiguousarray(np.moveaxis(x, ax, -1))), -1, ax)


class MultiHeadAttention(MaskedOp):
    """Multi-head attention in one node (PyTorch ``nn.MultiheadAttention``, ``batch_first``).

    ``Q = x W_q^T + b_q``, ``K = m W_k^T + b_k``, ``V = m W_v^T + b_v``, split
    into ``h`` heads, scaled dot-product attention per head, heads
    concatenated, then ``O = A W_o^T + b_o``.

    Parameters
    ----------
    parents : [x], [x, pad], [x, m] or [x, m, pad]
        Queries ``x`` ``(n, T, D)``; keys and values from ``m`` ``(n, S, D)``
        (from ``x`` itself when there is no ``m``: self-attention); with
        ``padding=True`` the last parent is the padding mask ``(n, S)`` bool.
    heads : int
    in_proj_weight : array_like of shape (3D, D)
    in_proj_bias : array_like of shape (3D,), optional
    out_proj_weight : array_like of shape (D, D)
    out_proj_bias : array_like of shape (D,), optional
    causal : bool
    padding : bool
        Whether the last parent is a padding mask.
    """

    arity = (1, 2, 3)

    def __init__(self, parents: Hashable | Sequence[Hashable], *, heads: int, in_proj_weight, in_proj_bias=None,
                 out_proj_weight, out_proj_bias=None, causal: bool = False, padding: bool = False,
                 dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        check_heads_arg(heads)
        self.heads = int(heads)
        self.causal = bool(causal)
        self.has_padding = bool(padding)
        if self.has_padding and len(self.parents) == 1:
            raise ModelError(f"MultiHeadAttention(padding=True) needs the mask as its last parent, got "
                             f"{list(self.parents)}")
        if not self.has_padding and len(self.parents) == 3:
            raise ModelError(f"MultiHeadAttention takes [x] or [x, m] without padding, got {list(self.parents)}")
        self.cross = len(self.parents) - self.has_padding == 2
        w = weight_array(in_proj_weight, 2, "MultiHeadAttention in_proj_weight", self.dtype, order="F")
        d = w.shape[1]
        if w.shape != (3 * d, d):
            raise ShapeError(f"MultiHeadAttention in_proj_weight must be (3D, D), got {w.shape}")
        if d % self.heads:
            raise ModelError(f"MultiHeadAttention: {self.heads} heads do not divide the width {d}")
        self.in_proj_weight = w
        self.in_proj_bias = None if in_proj_bias is None else weight_array(in_proj_bias, 1, "in_proj_bias", self.dtype)
        if self.in_proj_bias is not None and self.in_proj_bias.shape != (3 * d,):
            raise ShapeError(f"MultiHeadAttention in_proj_bias must be ({3 * d},), got {self.in_proj_bias.shape}")
        self.out_proj_weight = weight_array(out_proj_weight, 2, "out_proj_weight", self.dtype, order="F")
        if self.out_proj_weight.shape != (d, d):
            raise ShapeError(f"MultiHeadAttention out_proj_weight must be ({d}, {d}), got {self.out_proj_weight.shape}")
        self.out_proj_bias = None if out_proj_bias is None else weight_array(out_proj_bias, 1, "out_proj_bias", self.dtype)
        if self.out_proj_bias is not None and self.out_proj_bias.shape != (d,):
            raise ShapeError(f"MultiHeadAttention out_proj_bias must be ({d},), got {self.out_proj_bias.shape}")
        self.d_model = d

    def infer_shape(self, node, shapes):
        d = self.d_model
        xs = shapes[0]
        ms = shapes[1] if self.cross else xs
        for p, s in zip(self.parents[:1 + self.cross], (xs, ms)):
            if len(s) != 3:
                raise self._mismatch(node, p, ("n", "T", d), s)
            try:
                join_sizes(s[2], d)
            except SizeClash:
                raise self._mismatch(node, p, (s[0], s[1], d), s) from None
        batch = self._batch(node, shapes)
        if self.has_padding:
            self._pad_shape(node, self.parents[-1], shapes[-1], batch, ms[1])
        return (batch, xs[1], d)

    def _work_shapes(self, out_shape, in_shapes):
        n, t = in_shapes[0][:2]
        s = in_shapes[1][1] if self.cross else t
        return [(n, self.heads, t, s), (n, t, 3 * self.d_model)]

    @property
    def key_parents(self) -> tuple:
        # self-attention needs the whole x for its keys; run_step takes the new queries from its end
        return tuple(range(len(self.parents))) if not self.cross else (1, 2)[:1 + self.has_padding]

    def _run(self, *xs):
        return self.run_step(0, *xs)

    def run_step(self, start, *xs):
        x = cast(xs[0], self.dtype)
        m = xs[1] if self.cross else None
        pad = xs[-1] if self.has_padding else None
        if m is None and start:
            m, x = x, x[:, start:]                                                  # keys: all; queries: new
        d, h = self.d_model, self.heads
        w, b = self.in_proj_weight, self.in_proj_bias
        n, t, _ = x.shape
        if m is None:
            qkv = x.reshape(n * t, d) @ w.T                                          # (n*T, 3D) fused
            if b is not None:
                qkv += b
            qkv = qkv.reshape(n, t, 3 * d)
            q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
        else:
            m = cast(m, self.dtype)
            s = m.shape[1]
            q = (x.reshape(n * t, d) @ w[:d].T).reshape(n, t, d)                   # (n, T, D)
            kv = (m.reshape(n * s, d) @ w[d:].T).reshape(n, s, 2 * d)              # (n, S, 2D)
            if b is not None:
                q += b[:d]
                kv += b[d:]
            k, v = kv[..., :d], kv[..., d:]
        scale = 1.0 / math.sqrt(d // h)
        sc = split_heads(q, h, scale) @ split_heads(k, h).transpose(0, 1, 3, 2)    # (n, h, T, S)
        bias = self._bias(t, k.shape[1], pad, self.dtype, start)
        if bias is not None:
            sc += bias if bias.ndim == 2 else bias[:, None]
        p = softmax_(sc)
        a = merge_heads(p @ split_heads(v, h))                                       # (n, T, D)
        o = a.reshape(n * t, d) @ self.out_proj_weight.T                              # (n*T, D)
        if self.out_proj_bias is not None:
            o += self.out_proj_bias
        return o.reshape(n, t, d)

    def __repr__(self) -> str:
        return (f"MultiHeadAttention(parents={list(self.parents)}, d_model={self.d_model}, heads={self.heads}, "
                f"causal={self.causal})")
