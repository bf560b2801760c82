"""Discrete mechanisms: :class:`Categorical` roots and :class:`CPT` tables.

A CPT has shape ``(*parent_cards, card)``: one axis per parent in declared
order, the child last, each row summing to 1 along the last axis.

As a structural equation a discrete node is the monotone inverse-CDF SCM
(DESIGN.md): ``u ~ U(0, 1)`` and ``x = min{k : u < F(k | pa)}`` with ``F``
the cumulative sum of the row. The same ``u`` therefore picks comparable
states under different parent values, which is what makes counterfactuals on
discrete nodes well defined and exactly computable.

Symbols: ``n`` batch, ``K`` states.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import EvidenceError, ModelError
from .base import DISCRETE, Mechanism, Spec, as_real_array, check_states

__all__ = ["Categorical", "CPT", "Tabular", "TOL", "DECODE_RULES", "state_index", "check_table"]

TOL = 1e-9
"""Absolute tolerance on a table row's sum: ``|sum - 1| <= TOL`` (rows are not renormalised)."""


def _where(row: tuple, parents: tuple) -> str:
    """`` (Rain=1, Sprinkler=0)``: the parent indices of a table row, for messages."""
    return f" ({', '.join(f'{p}={i}' for p, i in zip(parents, row))})" if row else ""


def check_table(table, parents: tuple, who: str) -> np.ndarray:
    """A fresh, read-only float64 copy of a probability table, checked.

    The table has one axis per parent and the child's axis last, at least one
    state, finite non-negative real entries, and every row sums to 1 within
    :data:`TOL`.

    Raises
    ------
    ModelError
        Naming `who`, the offending row (with its parent indices), what it sums
        to and what was expected.

    Examples
    --------
    >>> check_table([[0.5, 0.6], [0.5, 0.5]], ("Rain",), "CPT over parents ['Rain']")
    Traceback (most recent call last):
    ...
    causalnet.errors.ModelError: CPT over parents ['Rain']: row (0,) sums to 1.1 (Rain=0), expected 1 (tolerance 1e-09)
    """
    t = as_real_array(table, who, "the table", finite=False)
    if t.ndim != len(parents) + 1:
        raise ModelError(f"{who}: the table has {t.ndim} axes; {len(parents)} parents {parents} and the child "
                         f"need {len(parents) + 1} axes (*parent_cards, card), got shape {t.shape}")
    if t.shape[-1] < 1 or t.size == 0:
        raise ModelError(f"{who}: the table of shape {t.shape} has no states or no rows")
    for bad_mask, what in ((~np.isfinite(t), "entries must be finite"), (t < 0, "probabilities must be >= 0")):
        if np.any(bad_mask):
            bad = tuple(int(i) for i in np.argwhere(bad_mask)[0])
            raise ModelError(f"{who}: entry {bad} is {float(t[bad])}; {what}{_where(bad[:-1], parents)}")
    with np.errstate(over="ignore"):                # entries near 1e308 sum to inf: still "not 1"
        sums = t.sum(axis=-1)
    off = ~(np.abs(sums - 1.0) <= TOL)
    if np.any(off):
        row = tuple(int(i) for i in np.argwhere(off)[0])
        where = f"row {row}" if row else "the probabilities"
        raise ModelError(f"{who}: {where} sums to {float(sums[row]):.12g}{_where(row, parents)}, expected 1 "
                         f"(tolerance {TOL:g})")
    return t


@functools.lru_cache(maxsize=4096)
def _decoder(states: tuple) -> tuple[dict, bool]:
    """``({name: index}, identity)`` for a tuple of state names, built once per distinct tuple.

    `identity` is True when no integral name sits at another position than its
    own value, so that an integer in ``0..K-1`` decodes to itself under every rule.
    """
    lookup = {s: i for i, s in enumerate(states)}
    identity = all(not _is_integral(s) or s == i for i, s in enumerate(states))
    return lookup, identity


def _is_integral(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, (str, bytes)) and np.isreal(v) and \
        np.isfinite(v) and float(np.real(v)) == int(np.real(v))


def _is_index(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


DECODE_RULES = ("names_first", "strict", "names", "indices")


def _decode_one(node, states: tuple, lookup: dict, v, decode: str, row=lambda: "") -> int:
    """One value -> a state index under `decode` (the single rule scalars and arrays share).

    `row` gives the text locating the value, computed only for a message.
    """
    card = len(states)
    try:
        named = lookup.get(v) if decode != "indices" else None
    except TypeError:                       # unhashable value (a dict, a list)
        raise EvidenceError(f"{node!r} has no state {v!r}{row()}; states: {list(states)}") from None
    indexed = int(v) if decode != "names" and _is_index(v) and 0 <= v < card else None
    if decode == "strict" and named is not None and indexed is not None and named != indexed:
        raise EvidenceError(f"{node!r}: {v!r}{row()} is ambiguous: the name of state {named} and the index of state "
                            f"{states[indexed]!r}; states: {list(states)}")
    if named is not None:
        return named
    if indexed is not None:
        return indexed
    how = {"names": "no state named", "indices": "no state index"}.get(decode, "no state")
    raise EvidenceError(f"{node!r} has {how} {v!r}{row()}; states: {list(states)} (indices 0..{card - 1})")


def state_index(node: Hashable, states: tuple, value, *, decode: str = "names_first") -> np.ndarray | int:
    """Map a state name, an index, or an array of either to state indices.

    Scalars and arrays are decoded by one rule, value by value; `decode` names it:

    ``"names_first"`` (default)
        A value equal to a state name means that state; otherwise an int in
        ``0..K-1`` means the state at that index. With states ``(2, 1, 0)``,
        ``2`` means the state named 2 (index 0), never index 2.
    ``"strict"``
        As ``"names_first"``, but a value that is the name of one state and the
        index of another raises :class:`~causalnet.errors.EvidenceError`.
    ``"names"`` / ``"indices"``
        Only names / only integer indices.

    Returns
    -------
    int, or ndarray of int64 of `value`'s shape (1-d)

    Raises
    ------
    EvidenceError
        Naming the node, the bad value (and its row) and the known states.

    Examples
    --------
    >>> state_index("X", ("no", "yes"), ["yes", "no"]).tolist(), state_index("X", ("no", "yes"), 1)
    ([1, 0], 1)
    >>> state_index("X", (2, 1, 0), 2), state_index("X", (2, 1, 0), [2, 0]).tolist()
    (0, [0, 2])
    """
    if decode not in DECODE_RULES:
        raise EvidenceError(f"decode must be one of {list(DECODE_RULES)}, got {decode!r}")
    states = tuple(states)
    lookup, identity = _decoder(states)
    try:
        scalar = isinstance(value, (str, bytes)) or np.ndim(value) == 0
        arr = None if scalar else np.asarray(value)
    except (TypeError, ValueError):
        raise EvidenceError(f"evidence for {node!r} must be a state or a 1-d array of states, got a ragged "
                            f"{type(value).__name__}") from None
    if scalar:
        v = value.item() if isinstance(value, np.generic) else value
        return _decode_one(node, states, lookup, v, decode)
    if arr.ndim != 1:
        raise EvidenceError(f"evidence for {node!r} must be a state or a 1-d array of states, got shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.integer) and (identity or decode == "indices"):
        card = len(states)
        if arr.size and (arr.min() < 0 or arr.max() >= card):
            row = int(np.flatnonzero((arr < 0) | (arr >= card))[0])
            raise EvidenceError(f"{node!r} has no state {int(arr[row])} (row {row}); states: {list(states)} "
                                f"(indices 0..{card - 1})")
        if decode != "names" or all(lookup.get(i) == i for i in range(card)):
            return arr.astype(np.int64)
    return _decode_array(node, states, lookup, arr, decode)


def _decode_array(node, states: tuple, lookup: dict, arr: np.ndarray, decode: str) -> np.ndarray:
    """Decode each distinct value once, then index: no loop over rows."""
    try:
        uniq, inverse = np.unique(arr, return_inverse=True)
    except TypeError:  # unorderable mixture (e.g. str and int): fall back to Python's hashing
        try:
            uniq_list = list(dict.fromkeys(arr.tolist()))
        except TypeError:
            raise EvidenceError(f"evidence for {node!r} holds unhashable values") from None
        where = {u: i for i, u in enumerate(uniq_list)}
        uniq = np.empty(len(uniq_list), dtype=object)
        uniq[:] = uniq_list
        inverse = np.fromiter((where[v] for v in arr.tolist()), dtype=np.int64, count=arr.size)
    inverse = inverse.reshape(arr.shape)
    codes = np.empty(len(uniq), dtype=np.int64)
    for j, v in enumerate(uniq.tolist()):
        codes[j] = _decode_one(node, states, lookup, v, decode,
                               row=lambda j=j: f" (row {int(np.flatnonzero(inverse == j)[0])})")
    return codes[inverse]


class Tabular(Mechanism):
    kind = DISCRETE

    def __init__(self, parents: Sequence[Hashable], table, states=None) -> None:
        super().__init__(parents)
        what = f"{type(self).__name__} over parents {list(self.parents)}" if self.parents else "Categorical"
        self._table = check_table(table, self.parents, what)
        self._states = check_states(states, self._table.shape[-1], what)
        cdf = np.cumsum(self._table, axis=-1)
        cdf[..., -1] = 1.0          # exact top, so u < 1 always lands on a state
        cdf.setflags(write=False)
        self._cdf = cdf

    @property
    def table(self) -> np.ndarray:
        """The probability table, shape ``(*parent_cards, card)`` (read-only)."""
        return self._table

    @property
    def states(self) -> tuple:
        return self._states

    @property
    def card(self) -> int:
        return len(self._states)

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        cards = []
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind != DISCRETE:
                raise ModelError(f"CPT for {node!r}: parent {p!r} is {ps.describe()}; a CPT needs discrete parents")
            cards.append(ps.card)
        want = (*cards, self.card)
        if self._table.shape != want:
            raise ModelError(f"CPT for {node!r} has shape {self._table.shape}; parents {tuple(self.parents)} have "
                             f"cards {tuple(cards)} and {node!r} has {self.card} states, so expected {want}")
        return Spec(DISCRETE, states=self._states, shape=(), dtype=np.int64)

    def sample_noise(self, n, rng, spec):
        return rng.random(n)

    def _rows(self, parents: Mapping[Hashable, np.ndarray], arr: np.ndarray) -> np.ndarray:
        if not self.parents:
            return arr
        return arr[tuple(np.asarray(parents[p]) for p in self.parents)]

    def evaluate(self, node, parents, noise, spec, *, n=None):
        cdf = self._rows(parents, self._cdf)               # (n, K) or (K,)
        u = np.asarray(noise, dtype=np.float64)
        if cdf.ndim == 1:
            return np.searchsorted(cdf, u, side="right").astype(np.int64)
        return (u[:, None] >= cdf).sum(axis=-1).astype(np.int64)   # (n,)

    def noise_interval(self, value, parents) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``: the values of ``u`` that give `value` under the inverse-CDF SCM."""
        cdf = self._rows(parents, self._cdf)
        value = np.asarray(value)
        if cdf.ndim == 1:
            hi = cdf[value]
            lo = np.where(value > 0, cdf[np.maximum(value - 1, 0)], 0.0)
        else:
            hi = np.take_along_axis(cdf, value[:, None], axis=-1)[:, 0]
            lo = np.where(value > 0, np.take_along_axis(cdf, np.maximum(value - 1, 0)[:, None], axis=-1)[:, 0], 0.0)
        return lo, hi

    def abduct_sample(self, node, value, parents, spec, rng):
        lo, hi = self.noise_interval(value, parents)
        return lo + (hi - lo) * rng.random(np.shape(lo))

    def log_prob(self, node, value, parents, spec):
        rows = self._rows(parents, self._table)            # (n, K) or (K,)
        value = np.asarray(value)
        with np.errstate(divide="ignore"):
            if rows.ndim == 1:
                return np.log(rows[value])
            return np.log(np.take_along_axis(rows, value[:, None], axis=-1)[:, 0])

    def to_dict(self) -> dict:
        return {"type": type(self).__name__, "parents": list(self.parents),
                "table": self._table.tolist(), "states": list(self._states)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(parents={list(self.parents)}, states={list(self._states)})"


class Categorical(Tabular):
    """A discrete root node with fixed probabilities.

    Parameters
    ----------
    probs : array_like of shape (K,)
        Non-negative, summing to 1.
    states : sequence of K names, optional
        Defaults to ``0..K-1``.

    Examples
    --------
    >>> Categorical([0.8, 0.2], states=["no", "yes"]).states
    ('no', 'yes')
    """

    def __init__(self, probs, states=None) -> None:
        super().__init__((), probs, states)

    @property
    def probs(self) -> np.ndarray:
        return self._table

    def to_dict(self) -> dict:
        return {"type": "Categorical", "probs": self._table.tolist(), "states": list(self._states)}


class CPT(Tabular):
    """A discrete node given discrete parents, by a conditional probability table.

    Parameters
    ----------
    parents : sequence of node names
        The table's leading axes, in order.
    table : array_like of shape (*parent_cards, K)
        ``table[i, j, k] = P(node = k | parents = (i, j))``.
    states : sequence of K names, optional

    Examples
    --------
    >>> CPT(["Rain"], [[0.6, 0.4], [0.99, 0.01]], states=["off", "on"]).table.shape
    (2, 2)
    """

    def __init__(self, parents: Sequence[Hashable], table, states=None) -> None:
        super().__init__(parents, table, states)
