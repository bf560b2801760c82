"""Node values: the :class:`Samples` and :class:`Trace` containers, and how user values are decoded.

Every node value is batch first (``(n,)`` state indices for a discrete node,
``(n,)`` floats for a real scalar, ``(n, *shape)`` for a tensor). This module
sits below both :mod:`causalnet.model` and :mod:`causalnet.inference`, so the
engines can return samples and check values without importing the model.

Decoding discrete values: one rule for scalars and arrays
--------------------------------------------------------
A value given for a discrete node (evidence, ``do``, ``forward`` inputs) is read
by :func:`decode_states`, element by element, with the *same* rule whether it is
a scalar or an array:

1. a value equal to a state name is that state (names first);
2. otherwise a non-negative ``int`` below the number of states is a state
   index — **unless some state name is itself an integer**: then integers are
   only ever names, so ``1`` cannot mean "state number 1" on one path and "the
   state named 1" on another;
3. anything else (an unknown name, a bool, a float that is no name, a nested
   or ragged array, a dict) raises :class:`~causalnet.errors.EvidenceError`
   naming the node and its states.

Examples
--------
>>> decode_states("X", ("no", "yes"), ["yes", 0, "no"]).tolist()
[1, 0, 0]
>>> int(decode_states("X", (2, 0, 1), 0))         # integer names: 0 is the state named 0
1
>>> decode_states("X", (2, 0, 1), 3)
Traceback (most recent call last):
...
causalnet.errors.EvidenceError: 'X' has no state 3; states: [2, 0, 1] (its state names are integers, so integers are read as names, not indices)
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterator, Mapping

import numpy as np

from .errors import EvidenceError, ModelError
from .mechanisms.base import DISCRETE, Spec

__all__ = ["Samples", "Trace", "decode_states", "check_finite"]


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _decode_one(node: Hashable, states: tuple, lookup: dict, int_names: bool, v, where: str = "") -> int:
    """The state index of one value (see the module docstring for the rule)."""
    v = v.item() if isinstance(v, np.generic) else v
    try:
        i = lookup.get(v)
    except TypeError:
        raise EvidenceError(f"{node!r}: a state must be a name or an index, got {type(v).__name__} {v!r}") from None
    if i is not None and _is_bool(v) == _is_bool(states[i]):
        return i
    if _is_int(v) and not int_names and 0 <= v < len(states):
        return int(v)
    why = " (its state names are integers, so integers are read as names, not indices)" \
        if int_names and _is_int(v) else ""
    raise EvidenceError(f"{node!r} has no state {v!r}{where}; states: {list(states)}{why}")


def decode_states(node: Hashable, states: tuple, value) -> np.ndarray:
    """State indices of `value` (a state, or a 1-d array of states) for a discrete node.

    Returns a 0-d int64 array for a scalar and an ``(n,)`` int64 array for an
    array; scalars and arrays follow one rule (module docstring).

    Raises
    ------
    EvidenceError
        Unknown state, ragged or nested arrays, unhashable values; the message
        names the node.
    """
    states = tuple(states)
    lookup = {s: i for i, s in enumerate(states)}
    int_names = any(_is_int(s) for s in states)
    if isinstance(value, (Mapping, set, frozenset)):
        raise EvidenceError(f"{node!r}: a state must be a name or an index (or a 1-d array of them), "
                            f"got a {type(value).__name__}")
    if isinstance(value, (str, bytes)) or np.isscalar(value) or value is None:
        return np.asarray(_decode_one(node, states, lookup, int_names, value), dtype=np.int64)
    if isinstance(value, (list, tuple)):                    # keep Python types: ["yes", 0] is not ["yes", "0"]
        if not all(isinstance(v, (str, bytes)) or np.isscalar(v) for v in value):
            raise EvidenceError(f"evidence for {node!r} must be a state or a 1-d array of states; got a ragged or "
                                f"nested sequence")
        arr = np.empty(len(value), dtype=object)
        arr[:] = list(value)
        if all(_is_int(v) for v in value):
            arr = np.asarray(value, dtype=np.int64) if value else arr
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError):
            raise EvidenceError(f"evidence for {node!r} must be a state or a 1-d array of states; got a ragged "
                                f"or nested sequence") from None
    if arr.ndim == 0:
        return np.asarray(_decode_one(node, states, lookup, int_names, arr.item()), dtype=np.int64)
    if arr.ndim != 1:
        raise EvidenceError(f"evidence for {node!r} must be a state or a 1-d array of states, got shape {arr.shape}")
    if arr.dtype.kind in "iu" and not int_names:           # indices only: one vectorized range check
        bad = (arr < 0) | (arr >= len(states))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise EvidenceError(f"{node!r} has no state {int(arr[row])!r} (row {row}); states: {list(states)} "
                                f"(indices 0..{len(states) - 1})")
        return arr.astype(np.int64)
    # resolve each distinct value once, then index: no Python loop over rows
    flat = arr.tolist()
    try:
        distinct = set(flat)                               # 1, 1.0 and True would merge here: names only
    except TypeError:                                      # an unhashable value: _key names it below
        distinct = {None}
    if all(type(k) is str for k in distinct):              # (the common case): the values are the keys
        codes = {}
        bad = []
        for k in distinct:
            try:
                codes[k] = _decode_one(node, states, lookup, int_names, k)
            except EvidenceError:
                bad.append(k)
        if bad:                                            # the first bad row names its value (deterministic)
            row = min(flat.index(k) for k in bad)
            _decode_one(node, states, lookup, int_names, flat[row], f" (row {row})")
        if len(flat) < 2 or len(states) > 256:
            return np.fromiter(map(codes.__getitem__, flat), dtype=np.int64, count=len(flat))
        got = bytes(operator.itemgetter(*flat)(codes))     # one C loop of lookups, one of packing (codes < 256)
        return np.frombuffer(got, dtype=np.uint8).astype(np.int64)                  # (n,)
    uniq = list(dict.fromkeys(_key(v) for v in flat))
    codes = {}
    for k in uniq:
        try:
            codes[k] = _decode_one(node, states, lookup, int_names, k[1])
        except EvidenceError:
            row = next(i for i, v in enumerate(flat) if _key(v) == k)
            _decode_one(node, states, lookup, int_names, k[1], f" (row {row})")
    return np.fromiter((codes[_key(v)] for v in flat), dtype=np.int64, count=len(flat))


def _key(v):
    """A hashable key that keeps 1, 1.0 and True apart (they are equal in Python)."""
    if isinstance(v, (list, dict, set)):
        raise EvidenceError(f"a state must be a name or an index, got {type(v).__name__} {v!r}")
    return (type(v).__name__, v)


def check_finite(node: Hashable, values: np.ndarray, what: str = "its mechanism") -> np.ndarray:
    """Raise :class:`ModelError` naming `node` if float `values` hold NaN or inf.

    Engines call it on every real value they compute, so a mechanism (a
    :class:`~causalnet.Function`, a shift intervention) that produces NaN from
    finite input stops with a clear error instead of a NaN answer.
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        bad = "NaN" if np.any(np.isnan(arr)) else "inf"
        raise ModelError(f"node {node!r}: {what} produced {bad} (from finite inputs)")
    return arr


class Samples(Mapping):
    """Sampled or computed node values: a read-only mapping node -> ``(n, ...)`` array.

    Discrete nodes hold state indices; :meth:`named` and :meth:`to_pandas`
    give state names.

    Attributes
    ----------
    n : int
        Number of rows.
    weights : ndarray of shape (n,) or None
        Importance weights (likelihood weighting), normalised to sum to 1.
    """

    def __init__(self, values: Mapping[Hashable, np.ndarray], specs: Mapping[Hashable, Spec] | None = None,
                 weights: np.ndarray | None = None) -> None:
        self._values = dict(values)
        self._specs = dict(specs or {})
        self.weights = weights
        ns = set()
        for v in self._values.values():
            shape = v.shape if type(v) is np.ndarray else np.shape(v)     # the common case without np.shape's call
            if shape:
                ns.add(shape[0])
        self.n = ns.pop() if len(ns) == 1 else (0 if not ns else -1)

    def __getitem__(self, node: Hashable) -> np.ndarray:
        try:
            return self._values[node]
        except KeyError:
            import difflib  # only on a bad name: kept out of the import

            close = difflib.get_close_matches(str(node), [str(k) for k in self._values], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"no values for node {node!r}{hint}") from None

    def __iter__(self) -> Iterator:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} n={self.n}: {', '.join(map(str, self._values))}>"

    @property
    def specs(self) -> Mapping:
        """node -> :class:`~causalnet.Spec` of the nodes held."""
        return dict(self._specs)

    def named(self, node: Hashable) -> np.ndarray:
        """Values of a discrete node as state names (an object array)."""
        spec = self._specs.get(node)
        vals = self[node]
        if spec is None or spec.kind != DISCRETE:
            return vals
        return np.asarray(spec.states, dtype=object)[vals]

    def to_pandas(self):
        """A pandas DataFrame: one column per scalar node; discrete nodes as Categoricals.

        Tensor nodes are left out (they have no single column).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Samples.to_pandas needs pandas: pip install pandas") from None

        cols = {}
        for k, v in self._values.items():
            spec = self._specs.get(k)
            if np.ndim(v) != 1:
                continue
            if spec is not None and spec.kind == DISCRETE:
                cols[k] = pd.Categorical.from_codes(v, categories=list(spec.states))
            else:
                cols[k] = v
        df = pd.DataFrame(cols)
        if self.weights is not None:
            df["_weight"] = self.weights
        return df


class Trace(Samples):
    """Every node's value from one forward run, plus the noise that produced it.

    Attributes
    ----------
    noise : dict
        node -> the exogenous noise used (stochastic nodes only).
    method : str or None
        The forward engine that computed the values (``"node by node"``,
        ``"tensor plan"``, ``"recurrent loop"``: :mod:`causalnet.inference.forward`).
    """

    def __init__(self, values, specs=None, noise=None, method=None) -> None:
        super().__init__(values, specs)
        self.noise = dict(noise or {})
        self.method = method
