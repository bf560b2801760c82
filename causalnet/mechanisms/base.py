"""The mechanism interface: one structural equation ``x = f(parents, u)``.

A :class:`Mechanism` is the structural equation of one node. It knows its
parents (in a fixed order), how to draw its exogenous noise ``u``, how to
evaluate the node from parent values and noise, and — where possible — its
density and how to recover the noise from an observed value (abduction).
Mechanisms are immutable and do not know their own node name: the model
passes it in so error messages can name the node.

Every value is batch-first: a discrete node holds ``(n,)`` integer state
indices, a scalar continuous node ``(n,)`` floats, a tensor node
``(n, *shape)``.

A :class:`Spec` describes what a node holds (its kind, states or shape); a
mechanism computes its node's spec from its parents' specs when the model is
built, which is where shapes and cardinalities are checked.

The interface
-------------
Every node kind (tabular, Gaussian, Cauchy, function, tensor op, intervened)
honours one small interface; engines use nothing else:

=========================================================  ===========================================
``kind``, ``deterministic``, ``can_abduct``                 what the node is; no own noise; exact abduction
``spec(node, parent_specs) -> Spec``                        check the parents when the model is built
``sample_noise(n, rng, spec) -> (n, ...) | None``           draw the exogenous ``u`` (None: deterministic)
``evaluate(node, parents, noise, spec, *, n) -> (n, ...)``  the structural equation ``x = f(pa, u)``
``log_prob(node, value, parents, spec) -> (n,)``            density or mass, where there is one
``abduct(node, value, parents, spec) -> u``                 the ``u`` that gives `value` (if `can_abduct`)
``abduct_sample(node, value, parents, spec, rng) -> u``     a draw of ``u`` given `value` (default: abduct)
``to_dict() -> dict``                                       JSON description, read back by ``io.json``
=========================================================  ===========================================

A new kind is a subclass that fills in what applies. Constructors validate and
copy their inputs with the helpers below (:func:`as_real_array`,
:func:`as_real_scalar`, :func:`check_states`, :func:`as_shape`), so a bad
parameter is refused with a :class:`~causalnet.errors.ModelError` before any
model exists, and no caller's array is ever kept or changed:

>>> import numpy as np, causalnet as cn
>>> from causalnet.mechanisms.base import REAL, Mechanism, Spec, as_real_array, as_real_scalar
>>> class LaplaceLinear(Mechanism):         # x = w . pa + scale * u,  u ~ Laplace(0, 1)
...     kind, can_abduct = REAL, True
...     def __init__(self, parents, weights, scale=1.0):
...         super().__init__(parents)
...         self.weights = as_real_array(weights, "LaplaceLinear", "weights", shape=(len(self.parents),))
...         self.scale = as_real_scalar(scale, "LaplaceLinear", "scale", positive=True)
...     def spec(self, node, parent_specs): return Spec(REAL)
...     def sample_noise(self, n, rng, spec): return rng.laplace(size=n)
...     def evaluate(self, node, parents, noise, spec, *, n=None):
...         mu = sum(w * parents[p] for w, p in zip(self.weights, self.parents))
...         return mu + self.scale * (0.0 if noise is None else noise)
...     def abduct(self, node, value, parents, spec):
...         return (value - self.evaluate(node, parents, None, spec)) / self.scale
>>> m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": LaplaceLinear(["X"], [2.0], scale=0.5)})
>>> m.sample(3, seed=0)["Y"].shape
(3,)

Symbols: ``n`` batch.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arguments import as_generator
from ..errors import ModelError, NumericalError, ShapeError
from ..records import Record

__all__ = ["Spec", "Mechanism", "DISCRETE", "REAL", "TENSOR", "as_generator", "as_real_array", "as_real_scalar",
           "check_states", "as_shape", "check_finite_output"]

DISCRETE = "discrete"
REAL = "real"
TENSOR = "tensor"


class Spec(Record):
    """What one node holds, per batch row (immutable, hashable; compares by its fields).

    Attributes
    ----------
    kind : {"discrete", "real", "tensor"}
    states : tuple of str, optional
        State names of a discrete node (its cardinality is ``len(states)``).
    shape : tuple
        Per-row shape; ``()`` for scalars. ``None`` entries are free sizes
        (e.g. a sequence length fixed only when the model runs).
    dtype : numpy dtype
    """

    __slots__ = ("kind", "states", "shape", "dtype")
    __match_args__ = ("kind", "states", "shape", "dtype")

    kind: str
    states: tuple | None
    shape: tuple
    dtype: Any

    def __init__(self, kind: str, states: tuple | None = None, shape: tuple = (), dtype: Any = np.float64) -> None:
        self._set(kind, states, shape, dtype)

    @property
    def card(self) -> int:
        """Number of states (discrete nodes only)."""
        if self.states is None:
            raise ModelError(f"a {self.kind} node has no cardinality")
        return len(self.states)

    @property
    def is_discrete(self) -> bool:
        return self.kind == DISCRETE

    def describe(self) -> str:
        if self.kind == DISCRETE:
            return f"discrete with {len(self.states)} states {list(self.states)}"
        if self.shape == ():
            return "real scalar"
        return f"tensor (n, {', '.join('?' if s is None else str(s) for s in self.shape)})"

    def check_value(self, node: Hashable, value: Any, *, n: int | None = None) -> np.ndarray:
        """Validate a batch of values for this node and return it as an array."""
        arr = np.asarray(value)
        if self.kind == DISCRETE:
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise ShapeError(f"node {node!r} expects (n,) integer state indices, got {arr.dtype} {arr.shape}")
            if arr.size and (arr.min() < 0 or arr.max() >= len(self.states)):
                raise ShapeError(f"node {node!r} has states 0..{len(self.states) - 1}, got values in "
                                 f"[{arr.min()}, {arr.max()}]")
        else:
            want = len(self.shape) + 1
            if arr.ndim != want or any(s is not None and s != a for s, a in zip(self.shape, arr.shape[1:])):
                shp = ", ".join("?" if s is None else str(s) for s in self.shape)
                raise ShapeError(f"node {node!r} expects shape (n{', ' if shp else ''}{shp}), got {arr.shape}")
        if n is not None and arr.shape[0] != n:
            raise ShapeError(f"node {node!r} has {arr.shape[0]} rows, expected the batch size {n}")
        return arr


class Mechanism:
    """Base class of node kinds: the structural equation of one node.

    Subclasses set `kind` and override :meth:`spec`, :meth:`evaluate`, and,
    when they apply, :meth:`sample_noise`, :meth:`log_prob`, :meth:`abduct`
    (the module docstring shows the whole interface and a new kind).

    Parameters
    ----------
    parents : sequence of node names
        In the order the mechanism uses them (a CPT's axes, a weight vector).

    Attributes
    ----------
    deterministic : bool
        True when the node has no noise of its own.
    can_abduct : bool
        True when :meth:`abduct` recovers the noise exactly from a value.
    """

    kind: str = "generic"
    deterministic: bool = False
    can_abduct: bool = False

    def __init__(self, parents: Sequence[Hashable] = ()) -> None:
        if type(parents) in (list, tuple) and set(map(type, parents)) <= {str} and len(set(parents)) == len(parents):
            self._parents = tuple(parents)          # distinct names as strings (every file reader's case)
            return
        if isinstance(parents, (str, bytes)):
            parents = (parents,)
        if not isinstance(parents, Iterable) or isinstance(parents, Mapping):
            raise ModelError(f"{type(self).__name__}: parents must be a list of node names, got {parents!r}")
        parents = tuple(parents)
        seen = set()
        for p in parents:
            try:
                hash(p)
            except TypeError:
                raise ModelError(f"parent {p!r} is not hashable") from None
            if p in seen:
                raise ModelError(f"parent {p!r} is listed twice in {list(parents)}")
            seen.add(p)
        self._parents = parents

    @property
    def parents(self) -> tuple:
        """Parent node names, in the mechanism's order."""
        return self._parents

    def with_parents(self, parents: Sequence[Hashable]) -> Mechanism:
        """The same mechanism over other parent nodes (as many, in the same roles).

        A shallow copy that shares the (read-only) parameters: unrolling one
        mechanism over many steps (``Z[t-1] -> Z[t]``) validates it once.

        Raises
        ------
        ModelError
            If the number of parents differs.
        """
        import copy  # the stdlib module, loaded by the first unrolled model (a BIF read never needs it)

        new = copy.copy(self)
        Mechanism.__init__(new, parents)
        if len(new.parents) != len(self.parents):
            raise ModelError(f"{type(self).__name__}.with_parents: expected {len(self.parents)} parents "
                             f"{list(self.parents)}, got {list(new.parents)}")
        return new

    # -- interface ----------------------------------------------------------------

    def spec(self, node: Hashable, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        """Check the parents' specs and return this node's spec.

        Raises
        ------
        ModelError, ShapeError
            If the parents do not fit this mechanism (naming `node`).
        """
        raise ModelError(f"mechanism {type(self).__name__} of node {node!r} does not define its spec")

    def sample_noise(self, n: int, rng: np.random.Generator, spec: Spec) -> np.ndarray | None:
        """Draw ``n`` rows of exogenous noise; None for deterministic nodes."""
        return None

    def evaluate(self, node: Hashable, parents: Mapping[Hashable, np.ndarray], noise: np.ndarray | None,
                 spec: Spec, *, n: int | None = None) -> np.ndarray:
        """The node's values ``(n, ...)`` from its parents' values and its noise.

        `n` is the batch size (the model always passes it, so root nodes
        without noise, such as constants or positional encodings, know it).
        """
        raise ModelError(f"mechanism {type(self).__name__} of node {node!r} cannot be evaluated")

    def log_prob(self, node: Hashable, value: np.ndarray, parents: Mapping[Hashable, np.ndarray],
                 spec: Spec) -> np.ndarray:
        """``(n,)`` log density (or mass) of `value` given the parents."""
        raise ModelError(f"node {node!r} ({type(self).__name__}) has no density")

    def abduct(self, node: Hashable, value: np.ndarray, parents: Mapping[Hashable, np.ndarray],
               spec: Spec) -> np.ndarray:
        """The noise that makes :meth:`evaluate` return `value` (exact)."""
        raise ModelError(f"node {node!r} ({type(self).__name__}) does not support exact abduction")

    def abduct_sample(self, node: Hashable, value: np.ndarray, parents: Mapping[Hashable, np.ndarray],
                      spec: Spec, rng: np.random.Generator) -> np.ndarray:
        """Draw the noise from its posterior given the node's value and parents.

        The default is exact abduction (a point mass) where the mechanism
        supports it; mechanisms whose noise is not determined by the value
        (a discrete node's ``u`` lies in an interval) override this.
        """
        if self.deterministic:
            return None
        return self.abduct(node, value, parents, spec)

    # -- serialisation ----------------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-ready description; :func:`causalnet.io.json` reads it back."""
        raise ModelError(f"{type(self).__name__} cannot be saved to JSON")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(parents={list(self._parents)})"


# -- validating constructor inputs --------------------------------------------------------
#
# Every mechanism constructor turns its parameters into fresh, read-only float64 arrays
# through these helpers: one wording for every kind, and no caller array is ever kept.


def _describe(value: Any) -> str:
    try:
        shape = np.shape(value)
    except (TypeError, ValueError):
        shape = None
    return f"an array of shape {shape}" if shape not in (None, ()) else repr(value)


def _numeric(value: Any, who: str, name: str) -> np.ndarray:
    """`value` as an array of real numbers (int, uint or float dtype), refusing everything else."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:           # ragged nesting and the like
        raise ModelError(f"{who}: {name} must be an array of real numbers, got {type(value).__name__} ({e})") from None
    if arr.dtype.kind == "O":                      # lists of Fractions, Decimals, or of junk
        flat = arr.ravel().tolist()
        bad = [v for v in flat if isinstance(v, bool) or not isinstance(v, numbers.Real)][:1]
        if bad:
            bad = bad[0]
            raise ModelError(f"{who}: {name} must hold real numbers, got {bad!r} ({type(bad).__name__})")
        try:
            return np.array(flat, dtype=np.float64).reshape(arr.shape)
        except OverflowError:                      # a Python int beyond float64
            raise ModelError(f"{who}: {name} holds a number too large for float64") from None
    if arr.dtype.kind == "c":
        raise ModelError(f"{who}: {name} must be real, got complex values ({_describe(value)})")
    if arr.dtype.kind not in "iuf":
        raise ModelError(f"{who}: {name} must hold real numbers, got dtype {arr.dtype} ({_describe(value)})")
    return arr


def as_real_array(value: Any, who: str, name: str, *, shape: tuple | None = None, ndim: int | None = None,
                  finite: bool = True, nonnegative: bool = False) -> np.ndarray:
    """A fresh, read-only float64 copy of `value`, checked.

    Parameters
    ----------
    value : array_like
        Real numbers: int, unsigned or float dtype, or Python reals. Complex,
        boolean, string and object values are refused.
    who, name : str
        The mechanism (e.g. ``"CPT over parents ['Rain']"``) and the parameter,
        for the message.
    shape, ndim : optional
        Required shape or number of axes.
    finite, nonnegative : bool
        Refuse NaN/inf (default) and negative entries.

    Raises
    ------
    ModelError
        Naming `who`, `name`, what was expected and what was given (the first
        bad entry and its index).

    Examples
    --------
    >>> as_real_array([1, 2], "LinearGaussian", "weights")
    array([1., 2.])
    >>> as_real_array([1j], "LinearGaussian", "weights")
    Traceback (most recent call last):
    ...
    causalnet.errors.ModelError: LinearGaussian: weights must be real, got complex values (an array of shape (1,))
    """
    arr = np.array(_numeric(value, who, name), dtype=np.float64)      # always a copy
    if ndim is not None and arr.ndim != ndim:
        raise ModelError(f"{who}: {name} must have {ndim} axes, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise ModelError(f"{who}: {name} must have shape {tuple(shape)}, got shape {arr.shape}")
    if finite or nonnegative:
        bad_mask = (~np.isfinite(arr) if finite else np.zeros(arr.shape, bool)) | (nonnegative & (arr < 0))
        if bad_mask.any():
            need = " and ".join(w for w, on in (("finite", finite), (">= 0", nonnegative)) if on)
            bad = tuple(int(i) for i in np.argwhere(bad_mask)[0])
            at = f" at {bad}" if bad else ""
            raise ModelError(f"{who}: {name} must be {need}, got {float(arr[bad])}{at}")
    arr.setflags(write=False)
    return arr


def as_real_scalar(value: Any, who: str, name: str, *, nonnegative: bool = False, positive: bool = False) -> float:
    """A finite real number (a 0-d or 1-element array is accepted), checked like :func:`as_real_array`."""
    arr = as_real_array(value, who, name)
    if arr.size != 1:
        raise ModelError(f"{who}: {name} must be a real number, got {_describe(value)}")
    x = float(arr.reshape(()))
    if positive and not x > 0:
        raise ModelError(f"{who}: {name} must be > 0, got {x!r}")
    if nonnegative and x < 0:
        raise ModelError(f"{who}: {name} must be >= 0, got {x!r}")
    return x


def check_states(states: Any, card: int, who: str) -> tuple:
    """The state names of a discrete node as a tuple; ``0..card-1`` when `states` is None.

    Names are hashable, distinct (``1`` and ``1.0`` and ``True`` count as the
    same name, as in a dict), neither None nor NaN.

    Raises
    ------
    ModelError
        A string instead of a list, a wrong count, a duplicate or a bad name.
    """
    if states is None:
        return tuple(range(card))
    if type(states) in (list, tuple) and len(states) == card and set(map(type, states)) == {str}:
        if len(set(states)) == card:                # plain distinct strings (every file reader's case)
            return tuple(states)
    if isinstance(states, (str, bytes)) or not isinstance(states, Iterable) or isinstance(states, Mapping):
        raise ModelError(f"{who}: states must be a list of names, got {states!r}")
    states = tuple(s.item() if isinstance(s, np.generic) and not isinstance(s, np.str_) else s for s in states)
    if len(states) != card:
        raise ModelError(f"{who}: {len(states)} state names {list(states)} for {card} states")
    for s in states:
        try:
            hash(s)
        except TypeError:
            raise ModelError(f"{who}: state name {s!r} is not hashable") from None
        if s is None or (isinstance(s, float) and s != s):
            raise ModelError(f"{who}: state name {s!r} is not allowed (states: {list(states)})")
    if len(set(states)) != len(states):
        seen: set = set()
        dup = next(s for s in states if s in seen or seen.add(s))
        raise ModelError(f"{who}: duplicate state name {dup!r} in {list(states)}")
    return states


def as_shape(shape: Any, who: str) -> tuple | None:
    """A per-row shape: None, an int, or a tuple of positive ints (None entries are free sizes)."""
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
        raise ModelError(f"{who}: shape must be a tuple of positive ints, got {shape!r}")
    out = tuple(shape)
    for s in out:
        if s is not None and (isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or s < 1):
            raise ModelError(f"{who}: shape must be a tuple of positive ints (or None), got {out!r}")
    return tuple(None if s is None else int(s) for s in out)


def check_finite_output(node: Hashable, out: np.ndarray, inputs: Iterable[Any], *, error: type = NumericalError,
                        what: str = "its structural equation") -> np.ndarray:
    """Refuse NaN/inf in a node's values when every input was finite.

    A non-finite input legitimately propagates; a non-finite value from finite
    inputs (an overflow, a user function's NaN) raises `error` naming the node.
    """
    if out.dtype.kind not in "fc" or np.all(np.isfinite(out)):
        return out
    for a in inputs:
        a = np.asarray(a)
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            return out
    bad = np.argwhere(~np.isfinite(out))[0]
    row = f" (row {int(bad[0])})" if out.ndim else ""
    raise error(f"node {node!r}: {what} gave {complex(out[tuple(bad)]).real if out.dtype.kind == 'c' else float(out[tuple(bad)])}{row} "
                f"from finite inputs; expected finite values")
