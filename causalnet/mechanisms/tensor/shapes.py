"""Sizes, shapes, dtypes and argument checks shared by every tensor op.

A size is an int (known), None (free) or a str (a free size with a name, used
only for diagram labels). Shape rules work on all three, so one piece of code
checks shapes at build time (free sizes), at run time (ints) and labels
diagrams (names): :func:`join_sizes` is the common value of two sizes that
must agree (raising :class:`SizeClash` when they do not), :func:`fmt_shape`
prints ``(n, ?, 64)``.

The argument checks (:func:`as_int` and :func:`as_real`, which are
:func:`causalnet.arguments.check_int` and :func:`~causalnet.arguments.check_real`
under the names the tensor ops export; :func:`float_dtype`,
:func:`weight_array`) turn every bad size, count, factor or weight into a
:class:`~causalnet.errors.ModelError` naming the argument; the model builders
use them too. :func:`check_size` estimates a tensor before it is allocated and
:func:`check_output` refuses NaN or inf produced from finite input.

Examples
--------
>>> fmt_shape(("n", None, 64)), join_sizes(None, 64)
('(n, ?, 64)', 64)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ... import limits
from ...arguments import check_int, check_real
from ...errors import ModelError, NumericalError, ShapeError

__all__ = ["SizeClash", "join_sizes", "fmt_shape", "mul_sizes", "sum_sizes", "float_dtype", "weight_array", "cast",
           "as_int", "as_real", "check_output", "check_size", "FLOATS"]

FLOATS = (np.float64, np.float32)


class SizeClash(Exception):
    """Two sizes that must agree do not (internal)."""


def join_sizes(a, b):
    """The common value of two sizes that must agree; free sizes agree with anything."""
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            raise SizeClash
        return a
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    return a if a is not None else b


def fmt_shape(shape: Sequence) -> str:
    """``(n, ?, 64)``: None as ``?``, names as themselves."""
    return "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"


def mul_sizes(a, b):
    return a * b if isinstance(a, int) and isinstance(b, int) else None


def sum_sizes(sizes):
    return sum(sizes) if all(isinstance(s, int) for s in sizes) else None


def float_dtype(dtype: Any, what: str) -> np.dtype:
    """`dtype` as ``float64`` or ``float32``; anything else is a ModelError naming `what`."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ModelError(f"{what}: dtype must be float64 or float32, got {dtype!r}") from None
    if dt.type not in FLOATS:
        raise ModelError(f"{what}: dtype must be float64 or float32, got {dt}")
    return dt


def weight_array(value: Any, ndim: int | tuple, what: str, dtype: np.dtype, order: str = "C") -> np.ndarray:
    """A read-only, finite weight array with `ndim` axes, C-contiguous (or Fortran-ordered: ``order="F"``).

    A matrix ``W`` of shape ``(out, in)`` used as ``x @ W.T`` is best stored
    Fortran-ordered: ``W.T`` is then C-contiguous, and BLAS runs its plain
    ``NN`` product (for small products OpenBLAS's ``NT`` kernel, on a
    C-ordered ``W``, was up to 2.5x slower). The values and shape are the same.
    """
    if hasattr(value, "detach"):  # a torch tensor, without importing torch
        try:
            value = value.detach().cpu().numpy()
        except (TypeError, RuntimeError) as e:  # bfloat16 and other dtypes numpy lacks
            raise ModelError(f"{what} cannot be read as a numpy array: {e}") from None
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ModelError(f"{what} is not numeric") from None
    if raw.dtype.kind not in "biuf":
        raise ModelError(f"{what} must hold real numbers, got dtype {raw.dtype}")
    arr = np.array(raw, dtype=dtype, order=order)
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        raise ShapeError(f"{what} must have {' or '.join(map(str, ndims))} axes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} contains NaN or inf")
    arr.setflags(write=False)
    return arr


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x if x.dtype == dtype else x.astype(dtype)


#: The library's argument validators (:mod:`causalnet.arguments`) under the names the tensor ops export.
as_int = check_int
as_real = check_real


def check_output(node: Hashable, op: Any, out: np.ndarray, *, allow_neginf: bool = False) -> np.ndarray:
    """Raise :class:`NumericalError` if `out` holds NaN or inf (``-inf`` allowed when asked).

    Cheap on the normal path: one sum decides; only a non-finite sum looks closer.
    """
    if out.dtype.kind != "f" or math.isfinite(float(np.sum(out))):
        return out
    bad = np.isnan(out) | (np.isinf(out) & ~(allow_neginf & (out < 0)))
    if not bad.any():
        return out
    raise NumericalError(f"node {node!r} ({type(op).__name__}) overflowed {out.dtype}: {int(bad.sum())} of "
                         f"{out.size} entries are NaN or inf although its inputs are finite; rescale the inputs "
                         f"or the weights, or use dtype='float64'")


def check_size(node: Hashable, op: Any, shape: Sequence[int], dtype: Any, what: str = "the value") -> None:
    """Estimate ``prod(shape) * itemsize`` and raise ResourceError past ``limits`` ``max_table_bytes``."""
    nbytes = float(np.dtype(dtype).itemsize)
    for s in shape:
        nbytes *= s
    if nbytes > 2 ** 20:
        limits.check_bytes(nbytes, what=f"{what} of node {node!r} ({type(op).__name__})",
                           cause=f"shape {tuple(shape)} of {np.dtype(dtype)}")
