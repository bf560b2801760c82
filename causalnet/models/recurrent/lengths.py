"""Variable-length batches: the ops that stop each sequence at its own length.

A batch of sequences of different lengths is padded to ``T`` steps and run
with an input node ``lengths`` ``(n,)`` of integers in ``[1, T]``. Every state
node of step ``t`` (``h[t]``, an LSTM's ``c[t]``) is wrapped in
:class:`Masked`: its cell's value where ``t < lengths`` and zero elsewhere.
That one rule gives PyTorch's packed-sequence semantics in both directions:

* forward: steps ``0 .. len-1`` run as if alone; outputs past the length are
  zero (as ``pad_packed_sequence`` pads them);
* backward: step ``len-1`` sees the zero state of step ``len`` (masked), so
  the backward direction starts at each sequence's own last step.

The forward direction's final state is the state at ``len-1``, a node of its
own, :class:`AtLength` (``l{k}.h_n``, ``l{k}.c_n``); the backward
direction's is ``h[0]``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from ...arguments import check_int
from ...errors import EvidenceError, ShapeError
from ...mechanisms.tensor import TensorOp, fmt_shape

__all__ = ["LENGTHS", "SHAPE", "Masked", "AtLength", "check_lengths"]

#: The name of the input node holding each sequence's length.
LENGTHS = "lengths"

#: ``model.cache`` key under which :func:`causalnet.models.recurrent.build.build` records ``(kind, layers,
#: directions, T)`` of a model built without lengths: the mark the ``recurrent loop`` forward engine
#: (:mod:`causalnet.models.recurrent.fast`) looks for. Kept here, below both, so neither imports the other.
SHAPE = "recurrent: shape"


def check_lengths(lengths: np.ndarray, T: int, node: Hashable = LENGTHS) -> np.ndarray:
    """`lengths` as ``(n,)`` integers in ``[1, T]``, or an EvidenceError naming the input node."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise EvidenceError(f"input {node!r} must have shape (n,), got {lengths.shape}")
    if lengths.dtype.kind not in "iu":
        raise EvidenceError(f"input {node!r} must hold integers, got dtype {lengths.dtype}")
    if lengths.size and (lengths.min() < 1 or lengths.max() > T):
        bad = int(np.flatnonzero((lengths < 1) | (lengths > T))[0])
        raise EvidenceError(f"input {node!r} must hold lengths in [1, {T}]; row {bad} holds {int(lengths[bad])}")
    return lengths


class Masked(TensorOp):
    """The value of `inner` at step `t` where ``t < lengths``, zero elsewhere.

    Parameters
    ----------
    inner : TensorOp
        The state's own equation (its parents come first).
    t : int
        The step this node belongs to.
    T : int
        The padded length (``lengths`` must be in ``[1, T]``).
    lengths : node name
        The ``(n,)`` integer input.
    """

    arity = None
    steppable = False

    def __init__(self, inner: TensorOp, t: int, T: int, lengths: Hashable = LENGTHS, *, dtype: Any = np.float64):
        super().__init__([*inner.parents, lengths], dtype=dtype)
        self.inner = inner
        self.t = check_int(t, "Masked t", low=0)
        self.T = check_int(T, "Masked T", low=1)

    def infer_shape(self, node, shapes):
        ls = shapes[-1]
        if len(ls) != 1:
            raise self._mismatch(node, self.parents[-1], ("n",), ls, "one length per row")
        return self.inner.infer_shape(node, shapes[:-1])

    def _check_dtypes(self, node, dtypes):
        self.inner._check_dtypes(node, dtypes[:-1])

    def _run(self, *xs):
        lengths = check_lengths(xs[-1], self.T, self.parents[-1])
        out = self.inner._run(*xs[:-1])                                  # (n, d)
        return np.where((self.t < lengths)[:, None], out, 0).astype(self.dtype, copy=False)

    def __repr__(self) -> str:
        return f"Masked({self.inner!r}, t={self.t})"


class AtLength(TensorOp):
    """``y[i] = h[len_i - 1][i]``: each row's value at its own last step (parents ``[lengths, h[0], ...]``)."""

    arity = None
    steppable = False

    def infer_shape(self, node, shapes):
        ls, first = shapes[0], shapes[1]
        if len(ls) != 1:
            raise self._mismatch(node, self.parents[0], ("n",), ls, "one length per row")
        for p, s in zip(self.parents[2:], shapes[2:]):
            if len(s) != len(first) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                           for a, b in zip(s[1:], first[1:])):
                raise ShapeError(f"node {node!r} (AtLength): {p!r} has shape {fmt_shape(s)}, "
                                 f"{self.parents[1]!r} has {fmt_shape(first)}")
        self._batch(node, shapes)
        return first

    def _run(self, lengths, *hs):
        lengths = check_lengths(lengths, len(hs), self.parents[0])
        stack = np.stack(hs)                                             # (T, n, d)
        return stack[lengths - 1, np.arange(len(lengths))].astype(self.dtype, copy=False)   # (n, d)
