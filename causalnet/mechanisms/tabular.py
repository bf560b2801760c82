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

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import EvidenceError, ModelError
from .base import DISCRETE, Mechanism, Spec

__all__ = ["Categorical", "CPT", "Tabular", "TOL", "state_index"]

TOL = 1e-9


def _check_table(table, parents: tuple, what: str) -> np.ndarray:
    try:
        t = np.array(table, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: the table is not numeric") from None
    if t.ndim != len(parents) + 1:
        raise ModelError(f"{what}: the table has {t.ndim} axes; {len(parents)} parents {parents} and the child "
                         f"need {len(parents) + 1} axes (*parent_cards, card)")
    if t.shape[-1] < 1:
        raise ModelError(f"{what}: the table has no states")
    if not np.all(np.isfinite(t)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(t))[0])
        raise ModelError(f"{what}: entry {bad} is {float(t[bad])}; entries must be finite")
    if np.any(t < 0):
        bad = tuple(int(i) for i in np.argwhere(t < 0)[0])
        raise ModelError(f"{what}: entry {bad} is {float(t[bad])}; probabilities must be >= 0")
    sums = t.sum(axis=-1)
    off = np.abs(sums - 1.0) > TOL
    if np.any(off):
        row = tuple(int(i) for i in np.argwhere(off)[0])
        where = f"row {row}" if row else "the probabilities"
        raise ModelError(f"{what}: {where} sums to {float(sums[row]):.12g}, expected 1 (tolerance {TOL:g})")
    t.setflags(write=False)
    return t


def _check_states(states, card: int, what: str) -> tuple:
    if states is None:
        return tuple(range(card))
    if isinstance(states, (str, bytes)):
        raise ModelError(f"{what}: states must be a list of names, got the string {states!r}")
    states = tuple(states)
    if len(states) != card:
        raise ModelError(f"{what}: {len(states)} state names {list(states)} for {card} states")
    if len(set(states)) != len(states):
        raise ModelError(f"{what}: duplicate state names in {list(states)}")
    return states


_LOOKUPS: dict[tuple, dict] = {}


def _lookup(states: tuple) -> dict:
    """``{state: index}`` for a tuple of state names, built once per distinct tuple."""
    table = _LOOKUPS.get(states)
    if table is None:
        table = _LOOKUPS[states] = {s: i for i, s in enumerate(states)}
    return table


def state_index(node: Hashable, states: tuple, value) -> np.ndarray | int:
    """Map a state name, an index, or an array of either to state indices.

    Raises
    ------
    EvidenceError
        Naming the node, the bad value and the known states.
    """
    card = len(states)
    lookup = _lookup(tuple(states))
    if isinstance(value, (str, int)) or np.ndim(value) == 0:
        v = value.item() if isinstance(value, np.generic) else value
        if v in lookup:
            return lookup[v]
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 <= v < card:
            return int(v)
        raise EvidenceError(f"{node!r} has no state {v!r}; states: {list(states)}")
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise EvidenceError(f"evidence for {node!r} must be a state or a 1-d array of states, got shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.integer) and not all(isinstance(s, (int, np.integer)) and s != i
                                                         for i, s in enumerate(states)):
        if arr.size and (arr.min() < 0 or arr.max() >= card):
            bad = arr[(arr < 0) | (arr >= card)][0]
            raise EvidenceError(f"{node!r} has no state {int(bad)}; states: {list(states)} (indices 0..{card - 1})")
        return arr.astype(np.int64)
    # names (or mixed values): resolve each distinct value once, then index — no loop over rows
    try:
        uniq, inverse = np.unique(arr, return_inverse=True)
    except TypeError:  # unorderable mixture (e.g. str and int): fall back to Python's hashing
        uniq_list = list(dict.fromkeys(arr.tolist()))
        where = {u: i for i, u in enumerate(uniq_list)}
        uniq = np.empty(len(uniq_list), dtype=object)
        uniq[:] = uniq_list
        inverse = np.fromiter((where[v] for v in arr.tolist()), dtype=np.int64, count=arr.size)
    codes = np.empty(len(uniq), dtype=np.int64)
    for j, v in enumerate(uniq.tolist()):
        if v in lookup:
            codes[j] = lookup[v]
        elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < card:
            codes[j] = v
        else:
            row = int(np.flatnonzero(inverse.reshape(-1) == j)[0])
            raise EvidenceError(f"{node!r} has no state {v!r} (row {row}); states: {list(states)}")
    return codes[inverse.reshape(arr.shape)]


class Tabular(Mechanism):
    kind = DISCRETE

    def __init__(self, parents: Sequence[Hashable], table, states=None) -> None:
        super().__init__(parents)
        what = f"{type(self).__name__} over parents {list(self.parents)}" if self.parents else "Categorical"
        self._table = _check_table(table, self.parents, what)
        self._states = _check_states(states, self._table.shape[-1], what)
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
