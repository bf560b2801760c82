"""The tensor-op interface, and the two ops without arithmetic: Input and Identity.

A :class:`TensorOp` is a deterministic mechanism whose value is batch-first,
``(n, *shape)``. It implements two small hooks: ``infer_shape(node, shapes)``
(the output's full shape from the parents', raising ShapeError naming the node,
the parent and both shapes) and ``_run(*values)`` (the arithmetic, never
writing into its inputs). ``evaluate`` checks the shapes, estimates the
largest arrays against :mod:`causalnet.limits`, runs, and refuses NaN/inf.

Incremental runs (a growing sequence, as in generation with a key/value cache)
use two more hooks: ``steppable`` says whether the op can compute the new
positions of a sequence from the new positions of its parents (position-wise
ops, attention along a sequence axis), ``key_parents`` names the parents it
needs whole (every position so far: keys, values, padding of the keys), and
``run_step(start, *values)`` computes positions ``start, start+1, ...``;
position-wise ops inherit ``run_step = _run``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import ModelError, ShapeError
from ..base import TENSOR, Mechanism, Spec
from .shapes import SizeClash, check_output, check_size, float_dtype, fmt_shape, join_sizes

__all__ = ["TensorOp", "Input", "Identity", "same_shapes"]


class TensorOp(Mechanism):
    """Base class of tensor ops: deterministic, batch-first, shape-checked.

    Subclasses implement ``infer_shape(node, shapes)``, mapping the parents' full
    shapes (batch axis first) to the output's full shape and raising
    :class:`ShapeError` through :meth:`_mismatch`, and ``_run(*values)``,
    computing the output from the parents' values in declared order. ``_run``
    never writes into its inputs.

    Parameters
    ----------
    parents : node name or sequence of node names
    dtype : {"float64", "float32"}
        The dtype of the output (and of the weights).
    """

    kind = TENSOR
    deterministic = True
    #: number of parents, or None for "one or more"
    arity: int | tuple | None = 1

    def __init__(self, parents: Hashable | Sequence[Hashable], *, dtype: Any = np.float64) -> None:
        if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence):
            parents = (parents,)
        super().__init__(parents)
        name = type(self).__name__
        k = len(self.parents)
        arity = self.arity
        if arity is None and k == 0:
            raise ModelError(f"{name} needs at least one parent")
        if isinstance(arity, int) and k != arity:
            raise ModelError(f"{name} takes {arity} parent{'s' if arity > 1 else ''}, got {list(self.parents)}")
        if isinstance(arity, tuple) and k not in arity:
            raise ModelError(f"{name} takes {' or '.join(map(str, arity))} parents, got {list(self.parents)}")
        self.dtype = float_dtype(dtype, name)

    # -- the Mechanism interface ----------------------------------------------------

    def spec(self, node: Hashable, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        shapes = []
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind != TENSOR:
                raise ModelError(f"node {node!r} ({type(self).__name__}) needs tensor parents; {p!r} is "
                                 f"{ps.describe()}")
            shapes.append(("n", *ps.shape))
        self._check_dtypes(node, [parent_specs[p].dtype for p in self.parents])
        out = self.infer_shape(node, shapes)
        return Spec(TENSOR, shape=tuple(s if isinstance(s, int) else None for s in out[1:]),
                    dtype=self._out_dtype([parent_specs[p].dtype for p in self.parents]))

    #: whether the output may hold -inf by design (masked scores)
    allows_neginf = False
    #: whether run_step can compute new positions from new positions (see the module docstring)
    steppable = True
    #: indices of the parents run_step takes whole (every position so far), e.g. keys and values
    key_parents: tuple = ()
    #: whether new positions never change the value at earlier ones (causal attention; position-wise ops)
    causal_in_keys = True

    def compiled(self, node: Hashable):
        """The function a compiled plan calls for `node` once its shapes were checked: ``_run`` by default.

        Ops with checks that depend on the data, not the shapes (embedding ids),
        return a function that still makes them.
        """
        return self._run

    def run_step(self, start: int, *xs: np.ndarray) -> np.ndarray:
        """The value at positions ``start, start+1, ...`` of the sequence axis.

        Parents in :attr:`key_parents` hold every position so far; the others
        hold the new positions only. Position-wise ops ignore `start`.
        """
        return self._run(*xs)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        xs = [parents[p] for p in self.parents]
        out_shape = self.infer_shape(node, [x.shape for x in xs])
        for shape in self._work_shapes(out_shape, [x.shape for x in xs]):
            check_size(node, self, shape, self.dtype)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # checked by name just below
            out = self._run(*xs)
        return check_output(node, self, out, allow_neginf=self.allows_neginf)

    def _work_shapes(self, out_shape: tuple, in_shapes: list[tuple]) -> list[tuple]:
        """Shapes of the largest arrays `_run` allocates (checked against the limits first)."""
        return [out_shape]

    # -- hooks for subclasses ----------------------------------------------------

    def infer_shape(self, node: Hashable, shapes: list[tuple]) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def _run(self, *xs: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _out_dtype(self, parent_dtypes: list) -> np.dtype:
        return self.dtype

    def _check_dtypes(self, node: Hashable, dtypes: list) -> None:
        for p, dt in zip(self.parents, dtypes):
            if np.dtype(dt).kind not in "fiu":
                raise ModelError(f"node {node!r} ({type(self).__name__}) needs numeric values from {p!r}, "
                                 f"which holds {np.dtype(dt)}")

    # -- helpers --------------------------------------------------------------------

    def _mismatch(self, node: Hashable, parent: Hashable, expected: Sequence, got: Sequence,
                  why: str = "") -> ShapeError:
        extra = f" ({why})" if why else ""
        return ShapeError(f"node {node!r} ({type(self).__name__}) expects {fmt_shape(expected)} from {parent!r}, "
                          f"got {fmt_shape(got)}{extra}")

    def _batch(self, node: Hashable, shapes: list[tuple]):
        """The common batch size of all parents."""
        b = shapes[0][0]
        for s in shapes[1:]:
            try:
                b = join_sizes(b, s[0])
            except SizeClash:
                raise ShapeError(f"node {node!r} ({type(self).__name__}): parents {list(self.parents)} have "
                                 f"batch sizes {[s[0] for s in shapes]}") from None
        return b

    def _min_ndim(self, node: Hashable, shapes: list[tuple], k: int) -> None:
        for p, s in zip(self.parents, shapes):
            if len(s) < k:
                want = ("n", *["?"] * (k - 1))
                raise self._mismatch(node, p, want, s, f"at least {k - 1} axes per row")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(parents={list(self.parents)})"


def same_shapes(op: TensorOp, node, shapes: list[tuple]) -> tuple:
    """All parents must have one shape; returns it (free sizes filled where known)."""
    out = list(shapes[0])
    for p, s in zip(op.parents[1:], shapes[1:]):
        if len(s) != len(out):
            raise op._mismatch(node, p, out, s, f"same shape as {op.parents[0]!r}")
        try:
            out = [join_sizes(a, b) for a, b in zip(out, s)]
        except SizeClash:
            raise op._mismatch(node, p, out, s, f"same shape as {op.parents[0]!r}") from None
    return tuple(out)


class Input(TensorOp):
    """A root tensor node whose value is given when the model runs.

    Parameters
    ----------
    shape : tuple
        Per-row shape; ``None`` (or a name such as ``"T"``, used in diagram
        labels) is a free size fixed only when the model runs.
    dtype : numpy dtype
        Any numpy dtype: ``float64`` / ``float32`` for embeddings, an integer
        dtype for token ids, ``bool`` for masks.

    Examples
    --------
    >>> Input((None, 512)).spec("e", {}).shape
    (None, 512)
    """

    arity = 0

    def __init__(self, shape: Sequence = (), dtype: Any = np.float64) -> None:
        Mechanism.__init__(self, ())
        shape = tuple(shape) if isinstance(shape, Sequence) and not isinstance(shape, str) else None
        if shape is None or not all(s is None or isinstance(s, str) or (isinstance(s, (int, np.integer))
                                                                        and s >= 0) for s in shape):
            raise ModelError(f"Input shape must be a tuple of sizes (int >= 0, None or a name), got {shape!r}")
        self.shape = tuple(int(s) if isinstance(s, (int, np.integer)) else s for s in shape)
        try:
            self.dtype = np.dtype(dtype)
        except TypeError:
            raise ModelError(f"Input dtype {dtype!r} is not a numpy dtype") from None
        if self.dtype.kind not in "biuf":
            raise ModelError(f"Input dtype must be real (float, int or bool), got {self.dtype}")

    def spec(self, node, parent_specs):
        return Spec(TENSOR, shape=tuple(s if isinstance(s, int) else None for s in self.shape), dtype=self.dtype)

    def infer_shape(self, node, shapes):
        return ("n", *self.shape)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        raise ModelError(f"input node {node!r} needs a value: pass forward({{{node!r}: array of shape "
                         f"{fmt_shape(('n', *self.shape))}}})")

    def __repr__(self) -> str:
        return f"Input(shape={self.shape}, dtype={self.dtype})"


class Identity(TensorOp):
    """``x = parent``: a named copy of a value (no arithmetic, no copy in memory)."""

    def infer_shape(self, node, shapes):
        return shapes[0]

    def _out_dtype(self, parent_dtypes):
        return np.dtype(parent_dtypes[0])

    def _check_dtypes(self, node, dtypes):
        return None

    def _run(self, x):
        return x
