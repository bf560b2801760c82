"""The ops of recurrent attention: stacking states into a memory, scores, and the context vector.

A recurrent decoder attends over the encoder's states ``H`` ``(n, S, d)``
(:class:`Stack` of ``enc.h[0] ... enc.h[S-1]``) with keys ``K = H U^T``
(a :class:`~causalnet.mechanisms.tensor.Linear` node). Per decoder step, a
query ``q`` ``(n, d)`` gives scores ``(n, S)``, the attention weights are their
softmax, and the context is ``c = sum_j a_j H_j`` (:class:`Context`):

* additive (Bahdanau et al. 2015): ``e_j = v . tanh(W q + K_j)``
  (:class:`AdditiveScores`, the query is the previous decoder state);
* multiplicative, "general" (Luong et al. 2015): ``e_j = q . K_j``
  (:class:`DotScores`, the query is the current decoder state).

Symbols: ``n`` batch, ``S`` source steps, ``d`` width.

References
----------
.. [1] Bahdanau, Cho, Bengio, "Neural machine translation by jointly learning
   to align and translate", ICLR 2015.
.. [2] Luong, Pham, Manning, "Effective approaches to attention-based neural
   machine translation", EMNLP 2015.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...errors import ShapeError
from ...mechanisms.tensor import TensorOp, fmt_shape
from ...mechanisms.tensor.shapes import SizeClash, cast, join_sizes, weight_array
from .lengths import check_lengths

__all__ = ["Stack", "AdditiveScores", "DotScores", "Context", "LengthMask"]


class Stack(TensorOp):
    """``(n, d)`` parents stacked along a new axis 1: ``(n, S, d)`` (the encoder's memory)."""

    arity = None
    steppable = False

    def infer_shape(self, node, shapes):
        first = shapes[0]
        for p, s in zip(self.parents[1:], shapes[1:]):
            if len(s) != len(first):
                raise self._mismatch(node, p, first, s, f"same shape as {self.parents[0]!r}")
            try:
                [join_sizes(a, b) for a, b in zip(first[1:], s[1:])]
            except SizeClash:
                raise self._mismatch(node, p, first, s, f"same shape as {self.parents[0]!r}") from None
        return (self._batch(node, shapes), len(shapes), *first[1:])

    def _run(self, *xs):
        return np.stack([cast(x, self.dtype) for x in xs], axis=1)             # (n, S, d)


def _query_keys(op: TensorOp, node: Hashable, shapes: list, d_query: int | None = None) -> tuple:
    q, k = shapes
    if len(q) != 2:
        raise op._mismatch(node, op.parents[0], ("n", d_query or "d"), q)
    if len(k) != 3:
        raise op._mismatch(node, op.parents[1], ("n", "S", "d"), k)
    try:
        join_sizes(q[1], d_query) if d_query is not None else None
    except SizeClash:
        raise op._mismatch(node, op.parents[0], ("n", d_query), q) from None
    return (op._batch(node, shapes), k[1])


class AdditiveScores(TensorOp):
    """``e_j = v . tanh(W q + K_j)`` (Bahdanau); parents ``[q (n, d_q), K (n, S, d)]`` -> ``(n, S)``.

    Parameters
    ----------
    parents : [query, keys]
    weight : array_like of shape (d, d_q)
        The query's projection ``W`` (PyTorch ``nn.Linear(d_q, d, bias=False).weight``).
    v : array_like of shape (d,) or (1, d)
    """

    arity = 2
    steppable = False

    def __init__(self, parents: Sequence[Hashable], weight, v, *, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        self.weight = weight_array(weight, 2, "AdditiveScores weight", self.dtype)
        self.v = weight_array(v, (1, 2), "AdditiveScores v", self.dtype).reshape(-1)
        if self.v.shape[0] != self.weight.shape[0]:
            raise ShapeError(f"AdditiveScores v has {self.v.shape[0]} entries for a weight of shape "
                             f"{self.weight.shape}; expected {self.weight.shape[0]}")

    def infer_shape(self, node, shapes):
        out = _query_keys(self, node, shapes, int(self.weight.shape[1]))
        try:
            join_sizes(shapes[1][2], int(self.weight.shape[0]))
        except SizeClash:
            raise ShapeError(f"node {node!r} (AdditiveScores) expects keys {fmt_shape(('n', 'S', self.v.shape[0]))} "
                             f"from {self.parents[1]!r}, got {fmt_shape(shapes[1])}") from None
        return out

    def _run(self, q, k):
        wq = cast(q, self.dtype) @ self.weight.T                                # (n, d)
        return np.tanh(cast(k, self.dtype) + wq[:, None, :]) @ self.v           # (n, S)


class DotScores(TensorOp):
    """``e_j = q . K_j`` (Luong's "general" score once ``K = H W^T``); parents ``[q (n, d), K (n, S, d)]``."""

    arity = 2
    steppable = False

    def infer_shape(self, node, shapes):
        out = _query_keys(self, node, shapes)
        try:
            join_sizes(shapes[0][1], shapes[1][2])
        except SizeClash:
            raise self._mismatch(node, self.parents[1], ("n", "S", shapes[0][1]), shapes[1]) from None
        return out

    def _run(self, q, k):
        return np.einsum("nsd,nd->ns", cast(k, self.dtype), cast(q, self.dtype))   # (n, S)


class Context(TensorOp):
    """``c = sum_j a_j H_j``; parents ``[a (n, S), H (n, S, d)]`` -> ``(n, d)``."""

    arity = 2
    steppable = False

    def infer_shape(self, node, shapes):
        a, h = shapes
        if len(a) != 2:
            raise self._mismatch(node, self.parents[0], ("n", "S"), a)
        if len(h) != 3:
            raise self._mismatch(node, self.parents[1], ("n", "S", "d"), h)
        try:
            join_sizes(a[1], h[1])
        except SizeClash:
            raise self._mismatch(node, self.parents[1], ("n", a[1], "d"), h) from None
        return (self._batch(node, shapes), h[2])

    def _run(self, a, h):
        return np.einsum("ns,nsd->nd", cast(a, self.dtype), cast(h, self.dtype))   # (n, d)


class LengthMask(TensorOp):
    """Scores with the padding of each row masked: ``-inf`` at ``j >= lengths``; parents ``[e (n, S), lengths (n,)]``.

    The softmax of the masked scores puts no weight on padded source steps.
    """

    arity = 2
    steppable = False
    allows_neginf = True

    def infer_shape(self, node, shapes):
        e, ls = shapes
        if len(e) != 2:
            raise self._mismatch(node, self.parents[0], ("n", "S"), e)
        if len(ls) != 1:
            raise self._mismatch(node, self.parents[1], ("n",), ls, "one length per row")
        return (self._batch(node, shapes), e[1])

    def _run(self, e, lengths):
        lengths = check_lengths(lengths, e.shape[1], self.parents[1])
        pad = np.arange(e.shape[1])[None, :] >= lengths[:, None]                 # (n, S)
        return np.where(pad, -np.inf, cast(e, self.dtype))
