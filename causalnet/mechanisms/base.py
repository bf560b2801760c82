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

Symbols: ``n`` batch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelError, ShapeError

__all__ = ["Spec", "Mechanism", "DISCRETE", "REAL", "TENSOR", "as_generator"]

DISCRETE = "discrete"
REAL = "real"
TENSOR = "tensor"


@dataclass(frozen=True)
class Spec:
    """What one node holds, per batch row.

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

    kind: str
    states: tuple | None = None
    shape: tuple = ()
    dtype: Any = field(default=np.float64)

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
    when they apply, :meth:`sample_noise`, :meth:`log_prob`, :meth:`abduct`.

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
        if isinstance(parents, (str, bytes)):
            parents = (parents,)
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


def as_generator(seed: Any) -> np.random.Generator:
    """``np.random.default_rng`` that also accepts a Generator (returned as is).

    Every stochastic call in causalnet turns its ``seed=`` into a Generator here.

    Raises
    ------
    ModelError
        If `seed` is neither None, an int, a sequence of ints, a SeedSequence nor a Generator
        (e.g. ``seed="x"`` or ``seed=-1``).
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_, str, bytes, float, np.floating)):
        raise ModelError(f"seed must be None, a non-negative int or a numpy Generator, got {seed!r}")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as e:
        raise ModelError(f"seed must be None, a non-negative int or a numpy Generator, got {seed!r} ({e})") from e
