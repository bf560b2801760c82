"""Structural ops: sums, concatenation, splits, reshapes and transposes of per-row axes."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...arguments import check_int
from ...errors import ModelError, ShapeError
from .base import TensorOp, same_shapes
from .shapes import SizeClash, cast, fmt_shape, join_sizes, mul_sizes, sum_sizes

__all__ = ["Add", "Mul", "Interpolate", "Zeros", "Concat", "Split", "Reshape", "Transpose", "Take"]


class Add(TensorOp):
    """Elementwise sum of the parents, all of one shape (a residual connection)."""

    arity = None

    def infer_shape(self, node, shapes):
        return same_shapes(self, node, shapes)

    def _run(self, *xs):
        out = cast(xs[0], self.dtype) + cast(xs[1], self.dtype) if len(xs) > 1 else np.array(xs[0], dtype=self.dtype)
        for y in xs[2:]:
            out += cast(y, self.dtype)
        return out


class Mul(TensorOp):
    """Elementwise product of the parents, all of one shape (a gate applied to a value)."""

    arity = None

    def infer_shape(self, node, shapes):
        return same_shapes(self, node, shapes)

    def _run(self, *xs):
        out = cast(xs[0], self.dtype) * cast(xs[1], self.dtype) if len(xs) > 1 else np.array(xs[0], dtype=self.dtype)
        for y in xs[2:]:
            out *= cast(y, self.dtype)
        return out


class Interpolate(TensorOp):
    """``(1 - z) * a + z * b`` elementwise, parents ``[z, a, b]`` of one shape (a GRU's update)."""

    arity = 3

    def infer_shape(self, node, shapes):
        return same_shapes(self, node, shapes)

    def _run(self, z, a, b):
        z = cast(z, self.dtype)
        return (1.0 - z) * cast(a, self.dtype) + z * cast(b, self.dtype)


class Zeros(TensorOp):
    """Zeros of per-row shape ``(d,)``, as many rows as the parent has (an initial recurrent state)."""

    def __init__(self, parent: Hashable, d: int, *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.d = check_int(d, "Zeros d", low=0)

    def _check_dtypes(self, node, dtypes):
        return None

    def infer_shape(self, node, shapes):
        return (shapes[0][0], self.d)

    def _run(self, x):
        return np.zeros((x.shape[0], self.d), dtype=self.dtype)


class Concat(TensorOp):
    """Concatenation of the parents along a per-row axis (the last by default)."""

    arity = None

    def __init__(self, parents: Sequence[Hashable], *, axis: int = -1, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        self.axis = check_int(axis, "Concat axis")

    def infer_shape(self, node, shapes):
        r = len(shapes[0])
        ax = self.axis + r if self.axis < 0 else self.axis + 1
        if not 1 <= ax < r:
            raise ShapeError(f"node {node!r} (Concat): axis {self.axis} is not a per-row axis of "
                             f"{fmt_shape(shapes[0])} from {self.parents[0]!r}")
        out = list(shapes[0])
        for p, s in zip(self.parents[1:], shapes[1:]):
            if len(s) != r:
                raise self._mismatch(node, p, out[:ax] + ["?"] + out[ax + 1:], s)
            try:
                out = [a if i == ax else join_sizes(a, b) for i, (a, b) in enumerate(zip(out, s))]
            except SizeClash:
                raise self._mismatch(node, p, out[:ax] + ["?"] + out[ax + 1:], s,
                                     "sizes off the concatenation axis must agree") from None
        out[ax] = sum_sizes([s[ax] for s in shapes])
        return tuple(out)

    @property
    def steppable(self) -> bool:
        return self.axis == -1

    def _run(self, *xs):
        ax = self.axis if self.axis < 0 else self.axis + 1
        return np.concatenate([cast(x, self.dtype) for x in xs], axis=ax)


class Split(TensorOp):
    """One piece of the parent cut along a per-row axis (e.g. head ``i`` of ``Q``).

    Parameters
    ----------
    parent : node name
    sections : int or sequence of int
        ``k`` equal pieces, or the piece sizes.
    index : int
        Which piece this node holds.
    axis : int
        Per-row axis (default: last).
    """

    def __init__(self, parent: Hashable, sections: int | Sequence[int], index: int, *, axis: int = -1,
                 dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if isinstance(sections, (int, np.integer)):
            self.sections: int | tuple = check_int(sections, "Split sections", low=1)
            k = self.sections
        else:
            if not isinstance(sections, Sequence):
                raise ModelError(f"Split sections must be an int or a sequence of ints, got {sections!r}")
            self.sections = tuple(check_int(s, "Split section size") for s in sections)
            if not self.sections or any(s < 0 for s in self.sections):
                raise ModelError(f"Split sections must be non-negative sizes, got {sections!r}")
            k = len(self.sections)
        index = check_int(index, "Split index")
        if not 0 <= index < k:
            raise ModelError(f"Split index {index} is not in [0, {k})")
        self.index = index
        self.axis = check_int(axis, "Split axis")

    def _bounds(self, size):
        if isinstance(self.sections, int):
            if size is None or not isinstance(size, int):
                return None
            w = size // self.sections
            return self.index * w, (self.index + 1) * w
        start = sum(self.sections[: self.index])
        return start, start + self.sections[self.index]

    def infer_shape(self, node, shapes):
        s = shapes[0]
        r = len(s)
        ax = self.axis + r if self.axis < 0 else self.axis + 1
        if not 1 <= ax < r:
            raise ShapeError(f"node {node!r} (Split): axis {self.axis} is not a per-row axis of {fmt_shape(s)} "
                             f"from {self.parents[0]!r}")
        size = s[ax]
        if isinstance(self.sections, int):
            if isinstance(size, int) and size % self.sections:
                raise ShapeError(f"node {node!r} (Split): {self.sections} equal pieces do not divide the size "
                                 f"{size} of axis {self.axis} of {self.parents[0]!r} {fmt_shape(s)}")
            piece = size // self.sections if isinstance(size, int) else None
        else:
            total = sum(self.sections)
            try:
                join_sizes(size, total)
            except SizeClash:
                want = list(s)
                want[ax] = total
                raise self._mismatch(node, self.parents[0], want, s, f"pieces {list(self.sections)}") from None
            piece = self.sections[self.index]
        out = list(s)
        out[ax] = piece
        return tuple(out)

    @property
    def steppable(self) -> bool:
        return self.axis == -1

    def _run(self, x):
        ax = self.axis if self.axis < 0 else self.axis + 1
        lo, hi = self._bounds(x.shape[ax])
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(lo, hi)
        return cast(x[tuple(idx)], self.dtype)

    def __repr__(self) -> str:
        return f"Split(parents={list(self.parents)}, sections={self.sections}, index={self.index}, axis={self.axis})"


class Reshape(TensorOp):
    """The parent with each row reshaped; one size may be ``-1`` (inferred)."""

    steppable = False

    def __init__(self, parent: Hashable, shape: Sequence[int], *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if not isinstance(shape, Sequence):
            raise ModelError(f"Reshape shape must be a sequence of ints, got {shape!r}")
        shape = tuple(check_int(s, "Reshape size") for s in shape)
        if sum(s == -1 for s in shape) > 1 or any(s < -1 for s in shape):
            raise ModelError(f"Reshape shape may hold one -1 and otherwise sizes >= 0, got {shape}")
        self.shape = shape

    def infer_shape(self, node, shapes):
        s = shapes[0]
        total = 1
        for a in s[1:]:
            total = mul_sizes(total, a)
        known = 1
        for a in self.shape:
            if a != -1:
                known *= a
        if -1 in self.shape:
            if total is not None and (known == 0 or total % known):
                raise self._mismatch(node, self.parents[0], (s[0], *self.shape), s, "sizes do not fit")
            fill = total // known if total is not None else None
            out = tuple(fill if a == -1 else a for a in self.shape)
        else:
            if total is not None and total != known:
                raise self._mismatch(node, self.parents[0], (s[0], *self.shape), s, "sizes do not fit")
            out = self.shape
        return (s[0], *out)

    def _run(self, x):
        return cast(x, self.dtype).reshape(x.shape[0], *self.shape)


class Transpose(TensorOp):
    """The parent with per-row axes permuted (``axes`` indexes the per-row axes)."""

    steppable = False

    def __init__(self, parent: Hashable, axes: Sequence[int], *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if not isinstance(axes, Sequence):
            raise ModelError(f"Transpose axes must be a sequence of ints, got {axes!r}")
        self.axes = tuple(check_int(a, "Transpose axis") for a in axes)
        if sorted(self.axes) != list(range(len(self.axes))):
            raise ModelError(f"Transpose axes must be a permutation of 0..{len(self.axes) - 1}, got {self.axes}")

    def infer_shape(self, node, shapes):
        s = shapes[0]
        if len(s) - 1 != len(self.axes):
            raise self._mismatch(node, self.parents[0], ("n", *["?"] * len(self.axes)), s)
        return (s[0], *(s[1 + a] for a in self.axes))

    def _run(self, x):
        return cast(x, self.dtype).transpose(0, *(1 + a for a in self.axes))


class Take(TensorOp):
    """One entry of a per-row axis, the axis dropped: ``y = x[:, ..., index, ...]`` (BERT's first token).

    Parameters
    ----------
    parent : node name
    index : int
        May be negative (from the end).
    axis : int
        Per-row axis (default 0, the sequence axis of ``(n, T, d)``).
    """

    steppable = False

    def __init__(self, parent: Hashable, index: int, *, axis: int = 0, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.index = check_int(index, "Take index")
        self.axis = check_int(axis, "Take axis")

    def infer_shape(self, node, shapes):
        s = shapes[0]
        r = len(s)
        ax = self.axis + r if self.axis < 0 else self.axis + 1
        if not 1 <= ax < r:
            raise ShapeError(f"node {node!r} (Take): axis {self.axis} is not a per-row axis of {fmt_shape(s)} "
                             f"from {self.parents[0]!r}")
        size = s[ax]
        if isinstance(size, int) and not -size <= self.index < size:
            raise ShapeError(f"node {node!r} (Take): index {self.index} is outside axis {self.axis} of size {size} "
                             f"of {self.parents[0]!r}")
        return (*s[:ax], *s[ax + 1:])

    def _run(self, x):
        ax = self.axis if self.axis < 0 else self.axis + 1
        return cast(np.take(x, self.index, axis=ax), self.dtype)

    def __repr__(self) -> str:
        return f"Take(parents={list(self.parents)}, index={self.index}, axis={self.axis})"
