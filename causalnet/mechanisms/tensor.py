"""Tensor operations as deterministic mechanisms: the nodes of neural networks.

Each class here is the structural equation of one tensor node, ``x = f(parents)``
with no noise of its own (``deterministic = True``, kind ``"tensor"``). A
network is a :class:`~causalnet.model.CausalModel` of such nodes, so a ``do``
on any node is an activation patch and every graph question (ancestors,
d-separation) is asked of the network itself. The transformer builders in
:mod:`causalnet.models.transformer` are made of these ops.

Values are batch-first, ``(n, *shape)``, computed in ``float64`` by default
(``dtype="float32"`` on any op for speed). Weights follow the PyTorch layout
(``Linear`` weight ``(out, in)``, ``Embedding`` weight ``(L, d)``), so a
PyTorch state dict maps onto them without transposes.

Shapes are checked twice: when the model is built (from the shapes the
:class:`Input` roots declare, where ``None`` is a free size such as the
sequence length) and when it runs. A :class:`~causalnet.errors.ShapeError`
names the node, the op, the parent and both shapes, e.g.
``node 'enc.0.attn.Q' (Linear) expects (n, ?, 64) from 'e', got (2, 7, 48)``.

Scaled dot-product attention is two nodes, so the attention weights are a node
of their own: ``P = AttentionWeights(Q, K)`` (scores, scale, masks, softmax)
and ``A = Attention(P, V)``. The fine-grained chain of the Bayesuvius chapter
is available too: ``B = Scores(Q, K)``, ``S = Scale(B)``, ``M = Mask(S)``,
``P = Softmax(M)``. :class:`MultiHeadAttention` is the whole block in one node
(split -> per-head attention -> concat -> output projection).

Masks follow PyTorch: a padding mask is a boolean ``(n, S)`` node that is True
at padding positions (keys that must not be attended to); ``causal=True``
blocks keys after the query. A query row whose keys are all masked gets
all-zero weights (PyTorch gives NaN there).

Symbols: ``n`` batch, ``T`` query positions, ``S`` key positions, ``h``
heads, ``d`` width (``D = h * d_head``), ``L`` vocabulary size.

References
----------
.. [1] Vaswani et al., "Attention is all you need", NeurIPS 2017.
.. [2] R. R. Tucci, "Bayesuvius", chapter "Transformer Networks" (node names
   e, Q, K, V, B, S, M, P, A, O, N, F).

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.mechanisms import tensor as T
>>> rng = np.random.default_rng(0)
>>> m = cn.CausalModel({
...     "e": T.Input((None, 4)),
...     "Q": T.Linear("e", rng.standard_normal((4, 4))),
...     "K": T.Linear("e", rng.standard_normal((4, 4))),
...     "V": T.Linear("e", rng.standard_normal((4, 4))),
...     "P": T.AttentionWeights(["Q", "K"], heads=2, causal=True),
...     "A": T.Attention(["P", "V"], heads=2),
... })
>>> m.spec("P").shape
(2, None, None)
>>> tr = m.forward({"e": rng.standard_normal((3, 5, 4))})
>>> tr["A"].shape, bool(np.allclose(tr["P"].sum(-1), 1.0))
((3, 5, 4), True)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import erf

from .. import limits
from ..errors import ModelError, NumericalError, ShapeError
from .base import TENSOR, Mechanism, Spec

__all__ = [
    "TensorOp",
    "Input",
    "Identity",
    "Linear",
    "Embedding",
    "PositionalEncoding",
    "Scores",
    "Scale",
    "Mask",
    "Softmax",
    "AttentionWeights",
    "Attention",
    "MultiHeadAttention",
    "LayerNorm",
    "ReLU",
    "GELU",
    "Add",
    "Concat",
    "Split",
    "Reshape",
    "Transpose",
    "FeedForward",
    "sinusoidal_encoding",
    "as_int",
    "as_real",
    "float_dtype",
    "check_output",
    "check_size",
]

_FLOATS = (np.float64, np.float32)


# -- shapes ----------------------------------------------------------------------
#
# A size is an int (known), None (free) or a str (a free size with a name, used
# only for diagram labels). `_infer` methods work on all three, so one piece of
# code checks shapes at build time (free sizes), at run time (ints) and labels
# diagrams (names).


class _Clash(Exception):
    """Two sizes that must agree do not (internal)."""


def _join(a, b):
    """The common value of two sizes that must agree; free sizes agree with anything."""
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            raise _Clash
        return a
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    return a if a is not None else b


def _fmt(shape: Sequence) -> str:
    """``(n, ?, 64)``: None as ``?``, names as themselves."""
    return "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"


def _mul(a, b):
    return a * b if isinstance(a, int) and isinstance(b, int) else None


def _sum(sizes):
    return sum(sizes) if all(isinstance(s, int) for s in sizes) else None


def float_dtype(dtype: Any, what: str) -> np.dtype:
    """`dtype` as ``float64`` or ``float32``; anything else is a ModelError naming `what`."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ModelError(f"{what}: dtype must be float64 or float32, got {dtype!r}") from None
    if dt.type not in _FLOATS:
        raise ModelError(f"{what}: dtype must be float64 or float32, got {dt}")
    return dt


def _array(value: Any, ndim: int | tuple, what: str, dtype: np.dtype) -> np.ndarray:
    """A read-only, finite, C-contiguous weight array with `ndim` axes."""
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
    arr = np.array(raw, dtype=dtype, order="C")
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        raise ShapeError(f"{what} must have {' or '.join(map(str, ndims))} axes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} contains NaN or inf")
    arr.setflags(write=False)
    return arr


def _as(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x if x.dtype == dtype else x.astype(dtype)


def as_int(value: Any, what: str, *, low: int | None = None) -> int:
    """`value` as an int (numpy ints too; bools, floats and complex refused), at least `low` if given.

    Shared by the tensor ops and the model builders: every size, count, index and
    axis they take passes through it, so a bad one is a :class:`ModelError`
    naming the argument.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ModelError(f"{what} must be an int, got {value!r}")
    if low is not None and value < low:
        raise ModelError(f"{what} must be >= {low}, got {value!r}")
    return int(value)


def as_real(value: Any, what: str, *, positive: bool = False) -> float:
    """`value` as a finite float (complex, NaN, inf and non-numbers refused), > 0 if `positive`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ModelError(f"{what} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (positive and v <= 0):
        raise ModelError(f"{what} must be a finite{' positive' if positive else ''} number, got {value!r}")
    return v


def check_output(node: Hashable, op: Mechanism, out: np.ndarray, *, allow_neginf: bool = False) -> np.ndarray:
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


def check_size(node: Hashable, op: Mechanism, shape: Sequence[int], dtype: Any, what: str = "the value") -> None:
    """Estimate ``prod(shape) * itemsize`` and raise ResourceError past ``limits`` ``max_table_bytes``."""
    nbytes = float(np.dtype(dtype).itemsize)
    for s in shape:
        nbytes *= s
    if nbytes > 2 ** 20:
        limits.check_bytes(nbytes, what=f"{what} of node {node!r} ({type(op).__name__})",
                           cause=f"shape {tuple(shape)} of {np.dtype(dtype)}")


# -- base class ----------------------------------------------------------------------


class TensorOp(Mechanism):
    """Base class of tensor ops: deterministic, batch-first, shape-checked.

    Subclasses implement ``_infer(node, shapes)``, mapping the parents' full
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
        out = self._infer(node, shapes)
        return Spec(TENSOR, shape=tuple(s if isinstance(s, int) else None for s in out[1:]),
                    dtype=self._out_dtype([parent_specs[p].dtype for p in self.parents]))

    #: whether the output may hold -inf by design (masked scores)
    allows_neginf = False

    def evaluate(self, node, parents, noise, spec, *, n=None):
        xs = [parents[p] for p in self.parents]
        out_shape = self._infer(node, [x.shape for x in xs])
        for shape in self._work_shapes(out_shape, [x.shape for x in xs]):
            check_size(node, self, shape, self.dtype)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # checked by name just below
            out = self._run(*xs)
        return check_output(node, self, out, allow_neginf=self.allows_neginf)

    def _work_shapes(self, out_shape: tuple, in_shapes: list[tuple]) -> list[tuple]:
        """Shapes of the largest arrays `_run` allocates (checked against the limits first)."""
        return [out_shape]

    # -- hooks for subclasses ----------------------------------------------------

    def _infer(self, node: Hashable, shapes: list[tuple]) -> tuple:  # pragma: no cover - abstract
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
        return ShapeError(f"node {node!r} ({type(self).__name__}) expects {_fmt(expected)} from {parent!r}, "
                          f"got {_fmt(got)}{extra}")

    def _batch(self, node: Hashable, shapes: list[tuple]):
        """The common batch size of all parents."""
        b = shapes[0][0]
        for s in shapes[1:]:
            try:
                b = _join(b, s[0])
            except _Clash:
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


def _same_shapes(op: TensorOp, node, shapes: list[tuple]) -> tuple:
    """All parents must have one shape; returns it (free sizes filled where known)."""
    out = list(shapes[0])
    for p, s in zip(op.parents[1:], shapes[1:]):
        if len(s) != len(out):
            raise op._mismatch(node, p, out, s, f"same shape as {op.parents[0]!r}")
        try:
            out = [_join(a, b) for a, b in zip(out, s)]
        except _Clash:
            raise op._mismatch(node, p, out, s, f"same shape as {op.parents[0]!r}") from None
    return tuple(out)


# -- inputs ---------------------------------------------------------------------------


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

    def _infer(self, node, shapes):
        return ("n", *self.shape)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        raise ModelError(f"input node {node!r} needs a value: pass forward({{{node!r}: array of shape "
                         f"{_fmt(('n', *self.shape))}}})")

    def __repr__(self) -> str:
        return f"Input(shape={self.shape}, dtype={self.dtype})"


class Identity(TensorOp):
    """``x = parent``: a named copy of a value (no arithmetic, no copy in memory)."""

    def _infer(self, node, shapes):
        return shapes[0]

    def _out_dtype(self, parent_dtypes):
        return np.dtype(parent_dtypes[0])

    def _check_dtypes(self, node, dtypes):
        return None

    def _run(self, x):
        return x


# -- linear maps and embeddings -------------------------------------------------------


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
        self.weight = _array(weight, 2, "Linear weight", self.dtype)
        self.bias = None if bias is None else _array(bias, 1, "Linear bias", self.dtype)
        if self.bias is not None and self.bias.shape[0] != self.weight.shape[0]:
            raise ShapeError(f"Linear bias has {self.bias.shape[0]} entries for a weight of shape "
                             f"{self.weight.shape} (d_out, d_in); expected {self.weight.shape[0]}")

    @property
    def d_in(self) -> int:
        return int(self.weight.shape[1])

    @property
    def d_out(self) -> int:
        return int(self.weight.shape[0])

    def _infer(self, node, shapes):
        (s,) = shapes
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "...", self.d_in), s)
        try:
            _join(s[-1], self.d_in)
        except _Clash:
            raise self._mismatch(node, self.parents[0], (*s[:-1], self.d_in), s) from None
        return (*s[:-1], self.d_out)

    def _run(self, x):
        x = _as(x, self.dtype)
        y = x.reshape(-1, x.shape[-1]) @ self.weight.T      # (n * ..., d_out)
        if self.bias is not None:
            y += self.bias
        return y.reshape(*x.shape[:-1], self.d_out)         # (n, ..., d_out)

    def __repr__(self) -> str:
        return f"Linear(parents={list(self.parents)}, d_in={self.d_in}, d_out={self.d_out})"


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
        self.weight = _array(weight, 2, "Embedding weight", self.dtype)
        self.scale = None if scale is None else as_real(scale, "Embedding scale")

    def _check_dtypes(self, node, dtypes):
        dt = np.dtype(dtypes[0])
        if dt.kind not in "iu":
            raise ModelError(f"node {node!r} (Embedding) needs integer ids from {self.parents[0]!r}, which holds {dt}")

    def _infer(self, node, shapes):
        return (*shapes[0], int(self.weight.shape[1]))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        ids = parents[self.parents[0]]
        if ids.dtype.kind not in "iu":
            raise ModelError(f"node {node!r} (Embedding) needs integer ids from {self.parents[0]!r}, got {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.weight.shape[0]):
            bad = ids.min() if ids.min() < 0 else ids.max()
            raise ShapeError(f"node {node!r} (Embedding) has {self.weight.shape[0]} rows; {self.parents[0]!r} "
                             f"holds the id {int(bad)}, outside [0, {self.weight.shape[0]})")
        return super().evaluate(node, parents, noise, spec, n=n)

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
    length = as_int(length, "sinusoidal_encoding length", low=0)
    d = as_int(d, "sinusoidal_encoding d", low=0)
    base = as_real(base, "sinusoidal_encoding base", positive=True)
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
        self.d_model = None if d_model is None else as_int(d_model, "PositionalEncoding d_model", low=1)
        self.add = bool(add)
        self.base = as_real(base, "PositionalEncoding base", positive=True)
        self._cache: dict = {}

    def _infer(self, node, shapes):
        (s,) = shapes
        if self.add:
            if len(s) != 3:
                raise self._mismatch(node, self.parents[0], ("n", "T", self.d_model or "d"), s)
            if self.d_model is not None:
                try:
                    _join(s[2], self.d_model)
                except _Clash:
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
        if self.add:
            return _as(x, self.dtype) + self.table(x.shape[1], x.shape[2])          # (n, T, d)
        return np.broadcast_to(self.table(x.shape[1]), (x.shape[0], x.shape[1], self.d_model))


# -- attention --------------------------------------------------------------------------


def _split_heads(x: np.ndarray, heads: int, scale: float | None = None) -> np.ndarray:
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


def _merge_heads(x: np.ndarray) -> np.ndarray:
    """``(n, h, T, d) -> (n, T, h*d)`` (a copy)."""
    n, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(n, t, h * d)


def _softmax_(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place; rows that are all -inf become zeros.

    The row maximum is subtracted first, so no finite row overflows. A row
    with every entry masked (-inf) gives all-zero weights (PyTorch gives
    NaN); an empty axis (no keys) gives an empty result.
    """
    if s.size == 0:
        return s
    m = s.max(axis=-1, keepdims=True)
    dead = None
    if not np.all(np.isfinite(m)):
        dead = ~np.isfinite(m)
        m[dead] = 0.0
    s -= m
    np.exp(s, out=s)
    z = s.sum(axis=-1, keepdims=True)
    if dead is not None:
        z[dead] = 1.0
    s /= z
    return s


def _check_heads(op: TensorOp, node, parent, width, heads) -> None:
    if heads is not None and isinstance(width, int) and width % heads:
        raise ShapeError(f"node {node!r} ({type(op).__name__}): {heads} heads do not divide the width {width} "
                         f"of {parent!r}")


class _Masked(TensorOp):
    """Shared by ops that apply masks: causal flag and an optional padding parent."""

    def _pad_shape(self, node, pad_parent, s, batch, keys):
        if len(s) != 2:
            raise self._mismatch(node, pad_parent, (batch, keys), s, "a padding mask is (n, S), True at padding")
        try:
            _join(s[0], batch)
            _join(s[1], keys)
        except _Clash:
            raise self._mismatch(node, pad_parent, (batch, keys), s, "a padding mask is (n, S), True at padding") \
                from None

    def _check_dtypes(self, node, dtypes):
        if self._has_pad:
            dt = np.dtype(dtypes[-1])
            if dt.kind != "b":
                raise ModelError(f"node {node!r} ({type(self).__name__}): the padding mask {self.parents[-1]!r} "
                                 f"must be boolean (True at padding), got {dt}")
            dtypes = dtypes[:-1]
        for p, dt in zip(self.parents, dtypes):
            if np.dtype(dt).kind not in "fiu":
                raise ModelError(f"node {node!r} ({type(self).__name__}) needs numeric values from {p!r}, "
                                 f"which holds {np.dtype(dt)}")

    def _bias(self, t: int, s: int, pad: np.ndarray | None, dtype) -> np.ndarray | None:
        """Additive mask ``0 / -inf``: ``(T, S)``, ``(n, 1, S)`` or ``(n, T, S)``; None if nothing is masked."""
        bias = None
        if self.causal:
            bias = np.zeros((t, s), dtype=dtype)
            bias[np.triu_indices(t, k=1, m=s)] = -np.inf                       # key s > query t
        if pad is not None and pad.any():
            pb = np.where(pad, -np.inf, 0.0).astype(dtype)[:, None, :]        # (n, 1, S)
            bias = pb if bias is None else bias + pb                            # (n, T, S)
        return bias


class AttentionWeights(_Masked):
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
        _check_heads_arg(heads)
        self.heads = None if heads is None else int(heads)
        self.causal = bool(causal)
        self.scale = None if scale is None else as_real(scale, "AttentionWeights scale")
        self._has_pad = len(self.parents) == 3

    def _infer(self, node, shapes):
        qs, ks = shapes[0], shapes[1]
        q, k = self.parents[0], self.parents[1]
        if len(qs) != 3:
            raise self._mismatch(node, q, ("n", "T", "D"), qs)
        if len(ks) != 3:
            raise self._mismatch(node, k, ("n", "S", qs[2]), ks)
        batch = self._batch(node, shapes)
        try:
            width = _join(qs[2], ks[2])
        except _Clash:
            raise self._mismatch(node, k, (batch, ks[1], qs[2]), ks, f"the width of {q!r}") from None
        _check_heads(self, node, q, width, self.heads)
        if self._has_pad:
            self._pad_shape(node, self.parents[2], shapes[2], batch, ks[1])
        if self.heads is None:
            return (batch, qs[1], ks[1])
        return (batch, self.heads, qs[1], ks[1])

    def _run(self, q, k, pad=None):
        q = _as(q, self.dtype)
        k = _as(k, self.dtype)
        h = self.heads or 1
        d = q.shape[-1] // h
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(d)
        if self.heads is None:
            s = (q * scale) @ np.ascontiguousarray(k).transpose(0, 2, 1)       # (n, T, S)
        else:
            s = _split_heads(q, h, scale) @ _split_heads(k, h).transpose(0, 1, 3, 2)   # (n, h, T, S)
        bias = self._bias(q.shape[1], k.shape[1], pad, self.dtype)
        if bias is not None:
            s += bias if self.heads is None or bias.ndim == 2 else bias[:, None]  # broadcasts over heads
        return _softmax_(s)

    def __repr__(self) -> str:
        return f"AttentionWeights(parents={list(self.parents)}, heads={self.heads}, causal={self.causal})"


def _check_heads_arg(heads) -> None:
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
        _check_heads_arg(heads)
        self.heads = None if heads is None else int(heads)

    def _infer(self, node, shapes):
        ps, vs = shapes
        p, v = self.parents
        want_p = 3 if self.heads is None else 4
        if len(ps) != want_p:
            exp = ("n", "T", "S") if self.heads is None else ("n", self.heads, "T", "S")
            raise self._mismatch(node, p, exp, ps)
        if self.heads is not None:
            try:
                _join(ps[1], self.heads)
            except _Clash:
                raise self._mismatch(node, p, ("n", self.heads, ps[2], ps[3]), ps) from None
        if len(vs) != 3:
            raise self._mismatch(node, v, ("n", ps[-1], "D"), vs)
        batch = self._batch(node, shapes)
        try:
            _join(vs[1], ps[-1])
        except _Clash:
            raise self._mismatch(node, v, (batch, ps[-1], vs[2]), vs, f"as many positions as keys in {p!r}") \
                from None
        _check_heads(self, node, v, vs[2], self.heads)
        return (batch, ps[-2], vs[2])

    def _run(self, p, v):
        p = _as(p, self.dtype)
        v = _as(v, self.dtype)
        if self.heads is None:
            return p @ np.ascontiguousarray(v)                                      # (n, T, D)
        return _merge_heads(p @ _split_heads(v, self.heads))                         # (n, T, D)

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
        _check_heads_arg(heads)
        self.heads = None if heads is None else int(heads)

    _infer = AttentionWeights._infer
    _has_pad = False

    def _run(self, q, k):
        q = _as(q, self.dtype)
        k = _as(k, self.dtype)
        if self.heads is None:
            return np.ascontiguousarray(q) @ np.ascontiguousarray(k).transpose(0, 2, 1)   # (n, T, S)
        return _split_heads(q, self.heads) @ _split_heads(k, self.heads).transpose(0, 1, 3, 2)  # (n, h, T, S)


class Scale(TensorOp):
    """``y = factor * x`` (Bayesuvius ``S = B / sqrt(d)``)."""

    def __init__(self, parent: Hashable, factor: float, *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.factor = as_real(factor, "Scale factor")

    def _infer(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return _as(x, self.dtype) * self.factor

    def __repr__(self) -> str:
        return f"Scale(parents={list(self.parents)}, factor={self.factor})"


class Mask(_Masked):
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
        self._has_pad = len(self.parents) == 2

    def _infer(self, node, shapes):
        s = shapes[0]
        if len(s) < 3:
            raise self._mismatch(node, self.parents[0], ("n", "T", "S"), s)
        batch = self._batch(node, shapes)
        if self._has_pad:
            self._pad_shape(node, self.parents[1], shapes[1], batch, s[-1])
        return s

    def _run(self, s, pad=None):
        s = _as(s, self.dtype)
        bias = self._bias(s.shape[-2], s.shape[-1], pad, self.dtype)
        if bias is None:
            return s.copy()
        if bias.ndim == 3:  # (n, T, S): align its batch axis with s's first axis
            bias = bias.reshape(bias.shape[0], *([1] * (s.ndim - 3)), *bias.shape[1:])
        return s + bias


class Softmax(TensorOp):
    """Softmax along one axis (the last by default); all ``-inf`` slices give zeros."""

    def __init__(self, parent: Hashable, *, axis: int = -1, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        self.axis = as_int(axis, "Softmax axis")

    def _infer(self, node, shapes):
        s = shapes[0]
        ax = self.axis if self.axis < 0 else self.axis + 1
        if not -len(s) + 1 <= ax <= len(s) - 1 or ax == 0:
            raise ShapeError(f"node {node!r} (Softmax): axis {self.axis} is not a per-row axis of {_fmt(s)} "
                             f"from {self.parents[0]!r}")
        return s

    def _run(self, x):
        x = np.array(x, dtype=self.dtype)          # a copy: softmax runs in place
        if self.axis in (-1, x.ndim - 2):
            return _softmax_(x)
        ax = self.axis if self.axis < 0 else self.axis + 1
        return np.moveaxis(_softmax_(np.ascontiguousarray(np.moveaxis(x, ax, -1))), -1, ax)


class MultiHeadAttention(_Masked):
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
        _check_heads_arg(heads)
        self.heads = int(heads)
        self.causal = bool(causal)
        self._has_pad = bool(padding)
        if self._has_pad and len(self.parents) == 1:
            raise ModelError(f"MultiHeadAttention(padding=True) needs the mask as its last parent, got "
                             f"{list(self.parents)}")
        if not self._has_pad and len(self.parents) == 3:
            raise ModelError(f"MultiHeadAttention takes [x] or [x, m] without padding, got {list(self.parents)}")
        self.cross = len(self.parents) - self._has_pad == 2
        w = _array(in_proj_weight, 2, "MultiHeadAttention in_proj_weight", self.dtype)
        d = w.shape[1]
        if w.shape != (3 * d, d):
            raise ShapeError(f"MultiHeadAttention in_proj_weight must be (3D, D), got {w.shape}")
        if d % self.heads:
            raise ModelError(f"MultiHeadAttention: {self.heads} heads do not divide the width {d}")
        self.in_proj_weight = w
        self.in_proj_bias = None if in_proj_bias is None else _array(in_proj_bias, 1, "in_proj_bias", self.dtype)
        if self.in_proj_bias is not None and self.in_proj_bias.shape != (3 * d,):
            raise ShapeError(f"MultiHeadAttention in_proj_bias must be ({3 * d},), got {self.in_proj_bias.shape}")
        self.out_proj_weight = _array(out_proj_weight, 2, "out_proj_weight", self.dtype)
        if self.out_proj_weight.shape != (d, d):
            raise ShapeError(f"MultiHeadAttention out_proj_weight must be ({d}, {d}), got {self.out_proj_weight.shape}")
        self.out_proj_bias = None if out_proj_bias is None else _array(out_proj_bias, 1, "out_proj_bias", self.dtype)
        if self.out_proj_bias is not None and self.out_proj_bias.shape != (d,):
            raise ShapeError(f"MultiHeadAttention out_proj_bias must be ({d},), got {self.out_proj_bias.shape}")
        self.d_model = d

    def _infer(self, node, shapes):
        d = self.d_model
        xs = shapes[0]
        ms = shapes[1] if self.cross else xs
        for p, s in zip(self.parents[:1 + self.cross], (xs, ms)):
            if len(s) != 3:
                raise self._mismatch(node, p, ("n", "T", d), s)
            try:
                _join(s[2], d)
            except _Clash:
                raise self._mismatch(node, p, (s[0], s[1], d), s) from None
        batch = self._batch(node, shapes)
        if self._has_pad:
            self._pad_shape(node, self.parents[-1], shapes[-1], batch, ms[1])
        return (batch, xs[1], d)

    def _work_shapes(self, out_shape, in_shapes):
        n, t = in_shapes[0][:2]
        s = in_shapes[1][1] if self.cross else t
        return [(n, self.heads, t, s), (n, t, 3 * self.d_model)]

    def _run(self, *xs):
        x = _as(xs[0], self.dtype)
        m = xs[1] if self.cross else None
        pad = xs[-1] if self._has_pad else None
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
            m = _as(m, self.dtype)
            s = m.shape[1]
            q = (x.reshape(n * t, d) @ w[:d].T).reshape(n, t, d)                   # (n, T, D)
            kv = (m.reshape(n * s, d) @ w[d:].T).reshape(n, s, 2 * d)              # (n, S, 2D)
            if b is not None:
                q += b[:d]
                kv += b[d:]
            k, v = kv[..., :d], kv[..., d:]
        scale = 1.0 / math.sqrt(d // h)
        sc = _split_heads(q, h, scale) @ _split_heads(k, h).transpose(0, 1, 3, 2)    # (n, h, T, S)
        bias = self._bias(t, k.shape[1], pad, self.dtype)
        if bias is not None:
            sc += bias if bias.ndim == 2 else bias[:, None]
        p = _softmax_(sc)
        a = _merge_heads(p @ _split_heads(v, h))                                       # (n, T, D)
        o = a.reshape(n * t, d) @ self.out_proj_weight.T                              # (n*T, D)
        if self.out_proj_bias is not None:
            o += self.out_proj_bias
        return o.reshape(n, t, d)

    def __repr__(self) -> str:
        return (f"MultiHeadAttention(parents={list(self.parents)}, d_model={self.d_model}, heads={self.heads}, "
                f"causal={self.causal})")


# -- normalisation and activations -------------------------------------------------------


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
        self.weight = None if weight is None else _array(weight, 1, "LayerNorm weight", self.dtype)
        self.bias = None if bias is None else _array(bias, 1, "LayerNorm bias", self.dtype)
        widths = {a.shape[0] for a in (self.weight, self.bias) if a is not None}
        if d is not None:
            widths.add(as_int(d, "LayerNorm d", low=1))
        if len(widths) > 1:
            raise ShapeError(f"LayerNorm weight, bias and d disagree on the width: {sorted(widths)}")
        if not widths:
            raise ModelError("LayerNorm needs a weight, a bias or d to know its width")
        self.d = widths.pop()
        self.eps = as_real(eps, "LayerNorm eps", positive=True)

    def _infer(self, node, shapes):
        s = _same_shapes(self, node, shapes)
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "...", self.d), s)
        try:
            _join(s[-1], self.d)
        except _Clash:
            raise self._mismatch(node, self.parents[0], (*s[:-1], self.d), shapes[0]) from None
        return s

    def _run(self, *xs):
        x = _as(xs[0], self.dtype)
        if len(xs) > 1:
            x = x + _as(xs[1], self.dtype)                         # a fresh array: normalised in place
            for y in xs[2:]:
                x += _as(y, self.dtype)
        mu = x.mean(axis=-1, keepdims=True)                       # (n, ..., 1)
        if len(xs) > 1:
            x -= mu
            xc = x                                                 # (n, ..., d)
        else:
            xc = x - mu                                            # (n, ..., d)
        var = np.einsum("...i,...i->...", xc, xc)[..., None]       # (n, ..., 1)
        var /= xc.shape[-1]
        var += self.eps
        np.sqrt(var, out=var)
        if not math.isfinite(float(var.sum())):                   # |x| near the overflow: rescale those rows
            return self._affine(_normalise_scaled(np.sum([_as(y, self.dtype) for y in xs], axis=0), self.eps))
        xc /= var
        return self._affine(xc)

    def _affine(self, xc: np.ndarray) -> np.ndarray:
        if self.weight is not None:
            xc *= self.weight
        if self.bias is not None:
            xc += self.bias
        return xc

    def __repr__(self) -> str:
        return f"LayerNorm(parents={list(self.parents)}, d={self.d}, eps={self.eps})"


def _normalise_scaled(x: np.ndarray, eps: float) -> np.ndarray:
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


class ReLU(TensorOp):
    """``max(0, x)`` elementwise."""

    def _infer(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return np.maximum(_as(x, self.dtype), 0)


class GELU(TensorOp):
    """``x Phi(x)`` elementwise (PyTorch ``nn.GELU``; ``approximate="tanh"`` for the tanh form)."""

    def __init__(self, parent: Hashable, *, approximate: str = "none", dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if approximate not in ("none", "tanh"):
            raise ModelError(f"GELU approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def _infer(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return _gelu(_as(x, self.dtype), self.approximate)


def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        c = np.asarray(math.sqrt(2.0 / math.pi), dtype=x.dtype)
        xc = np.clip(x, -20.0, 20.0)                    # tanh is exactly +-1 beyond; x**3 would overflow
        return 0.5 * x * (1.0 + np.tanh(c * (xc + np.asarray(0.044715, dtype=x.dtype) * xc ** 3)))
    return 0.5 * x * (1.0 + erf(x * np.asarray(1.0 / math.sqrt(2.0), dtype=x.dtype)))


_ACTIVATIONS = ("relu", "gelu")


class Add(TensorOp):
    """Elementwise sum of the parents, all of one shape (a residual connection)."""

    arity = None

    def _infer(self, node, shapes):
        return _same_shapes(self, node, shapes)

    def _run(self, *xs):
        out = _as(xs[0], self.dtype) + _as(xs[1], self.dtype) if len(xs) > 1 else np.array(xs[0], dtype=self.dtype)
        for y in xs[2:]:
            out += _as(y, self.dtype)
        return out


class Concat(TensorOp):
    """Concatenation of the parents along a per-row axis (the last by default)."""

    arity = None

    def __init__(self, parents: Sequence[Hashable], *, axis: int = -1, dtype: Any = np.float64) -> None:
        super().__init__(parents, dtype=dtype)
        self.axis = as_int(axis, "Concat axis")

    def _infer(self, node, shapes):
        r = len(shapes[0])
        ax = self.axis + r if self.axis < 0 else self.axis + 1
        if not 1 <= ax < r:
            raise ShapeError(f"node {node!r} (Concat): axis {self.axis} is not a per-row axis of "
                             f"{_fmt(shapes[0])} from {self.parents[0]!r}")
        out = list(shapes[0])
        for p, s in zip(self.parents[1:], shapes[1:]):
            if len(s) != r:
                raise self._mismatch(node, p, out[:ax] + ["?"] + out[ax + 1:], s)
            try:
                out = [a if i == ax else _join(a, b) for i, (a, b) in enumerate(zip(out, s))]
            except _Clash:
                raise self._mismatch(node, p, out[:ax] + ["?"] + out[ax + 1:], s,
                                     "sizes off the concatenation axis must agree") from None
        out[ax] = _sum([s[ax] for s in shapes])
        return tuple(out)

    def _run(self, *xs):
        ax = self.axis if self.axis < 0 else self.axis + 1
        return np.concatenate([_as(x, self.dtype) for x in xs], axis=ax)


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
            self.sections: int | tuple = as_int(sections, "Split sections", low=1)
            k = self.sections
        else:
            if not isinstance(sections, Sequence):
                raise ModelError(f"Split sections must be an int or a sequence of ints, got {sections!r}")
            self.sections = tuple(as_int(s, "Split section size") for s in sections)
            if not self.sections or any(s < 0 for s in self.sections):
                raise ModelError(f"Split sections must be non-negative sizes, got {sections!r}")
            k = len(self.sections)
        index = as_int(index, "Split index")
        if not 0 <= index < k:
            raise ModelError(f"Split index {index} is not in [0, {k})")
        self.index = index
        self.axis = as_int(axis, "Split axis")

    def _bounds(self, size):
        if isinstance(self.sections, int):
            if size is None or not isinstance(size, int):
                return None
            w = size // self.sections
            return self.index * w, (self.index + 1) * w
        start = sum(self.sections[: self.index])
        return start, start + self.sections[self.index]

    def _infer(self, node, shapes):
        s = shapes[0]
        r = len(s)
        ax = self.axis + r if self.axis < 0 else self.axis + 1
        if not 1 <= ax < r:
            raise ShapeError(f"node {node!r} (Split): axis {self.axis} is not a per-row axis of {_fmt(s)} "
                             f"from {self.parents[0]!r}")
        size = s[ax]
        if isinstance(self.sections, int):
            if isinstance(size, int) and size % self.sections:
                raise ShapeError(f"node {node!r} (Split): {self.sections} equal pieces do not divide the size "
                                 f"{size} of axis {self.axis} of {self.parents[0]!r} {_fmt(s)}")
            piece = size // self.sections if isinstance(size, int) else None
        else:
            total = sum(self.sections)
            try:
                _join(size, total)
            except _Clash:
                want = list(s)
                want[ax] = total
                raise self._mismatch(node, self.parents[0], want, s, f"pieces {list(self.sections)}") from None
            piece = self.sections[self.index]
        out = list(s)
        out[ax] = piece
        return tuple(out)

    def _run(self, x):
        ax = self.axis if self.axis < 0 else self.axis + 1
        lo, hi = self._bounds(x.shape[ax])
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(lo, hi)
        return _as(x[tuple(idx)], self.dtype)

    def __repr__(self) -> str:
        return f"Split(parents={list(self.parents)}, sections={self.sections}, index={self.index}, axis={self.axis})"


class Reshape(TensorOp):
    """The parent with each row reshaped; one size may be ``-1`` (inferred)."""

    def __init__(self, parent: Hashable, shape: Sequence[int], *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if not isinstance(shape, Sequence):
            raise ModelError(f"Reshape shape must be a sequence of ints, got {shape!r}")
        shape = tuple(as_int(s, "Reshape size") for s in shape)
        if sum(s == -1 for s in shape) > 1 or any(s < -1 for s in shape):
            raise ModelError(f"Reshape shape may hold one -1 and otherwise sizes >= 0, got {shape}")
        self.shape = shape

    def _infer(self, node, shapes):
        s = shapes[0]
        total = 1
        for a in s[1:]:
            total = _mul(total, a)
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
        return _as(x, self.dtype).reshape(x.shape[0], *self.shape)


class Transpose(TensorOp):
    """The parent with per-row axes permuted (``axes`` indexes the per-row axes)."""

    def __init__(self, parent: Hashable, axes: Sequence[int], *, dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if not isinstance(axes, Sequence):
            raise ModelError(f"Transpose axes must be a sequence of ints, got {axes!r}")
        self.axes = tuple(as_int(a, "Transpose axis") for a in axes)
        if sorted(self.axes) != list(range(len(self.axes))):
            raise ModelError(f"Transpose axes must be a permutation of 0..{len(self.axes) - 1}, got {self.axes}")

    def _infer(self, node, shapes):
        s = shapes[0]
        if len(s) - 1 != len(self.axes):
            raise self._mismatch(node, self.parents[0], ("n", *["?"] * len(self.axes)), s)
        return (s[0], *(s[1 + a] for a in self.axes))

    def _run(self, x):
        return _as(x, self.dtype).transpose(0, *(1 + a for a in self.axes))


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
        self.w1 = _array(w1, 2, "FeedForward w1", self.dtype)
        self.w2 = _array(w2, 2, "FeedForward w2", self.dtype)
        self.b1 = None if b1 is None else _array(b1, 1, "FeedForward b1", self.dtype)
        self.b2 = None if b2 is None else _array(b2, 1, "FeedForward b2", self.dtype)
        ff, d = self.w1.shape
        if self.w2.shape != (d, ff):
            raise ShapeError(f"FeedForward w2 must be ({d}, {ff}) for w1 of shape {self.w1.shape}, got "
                             f"{self.w2.shape}")
        if self.b1 is not None and self.b1.shape != (ff,):
            raise ShapeError(f"FeedForward b1 must be ({ff},), got {self.b1.shape}")
        if self.b2 is not None and self.b2.shape != (d,):
            raise ShapeError(f"FeedForward b2 must be ({d},), got {self.b2.shape}")
        if activation not in _ACTIVATIONS:
            raise ModelError(f"FeedForward activation must be one of {list(_ACTIVATIONS)}, got {activation!r}")
        self.activation = activation
        self.d = d
        self.d_ff = ff

    def _infer(self, node, shapes):
        (s,) = shapes
        if len(s) < 2:
            raise self._mismatch(node, self.parents[0], ("n", "...", self.d), s)
        try:
            _join(s[-1], self.d)
        except _Clash:
            raise self._mismatch(node, self.parents[0], (*s[:-1], self.d), s) from None
        return s

    def _run(self, x):
        x = _as(x, self.dtype)
        h = x.reshape(-1, self.d) @ self.w1.T                   # (n * ..., d_ff)
        if self.b1 is not None:
            h += self.b1
        if self.activation == "relu":
            np.maximum(h, 0, out=h)
        else:
            h = _gelu(h)
        y = h @ self.w2.T                                        # (n * ..., d)
        if self.b2 is not None:
            y += self.b2
        return y.reshape(x.shape)

    def __repr__(self) -> str:
        return f"FeedForward(parents={list(self.parents)}, d={self.d}, d_ff={self.d_ff}, {self.activation})"
