"""Batched evidence: each distinct row answered once, in chunks under a memory budget.

Terms
-----
A *batched* query gives some evidence nodes an int array of n states (one
*row* per query) and asks the same question of every row. Real batches
repeat themselves (a data set of 10^4 records over a handful of observed
symptoms has few distinct rows), so :class:`EvidenceRows` first keeps each
distinct row once (the rows are coded as one int each, mixed radix over the
nodes' cards; when there are at most ``max(4 n, 2^16)`` possible codes, a
table of the codes seen finds the distinct ones in two linear passes, else
:func:`numpy.unique` sorts them), answers those d rows, and *scatters* the
answers back to the n rows with the inverse index. Either way the distinct
rows come in increasing code order. An engine holds about ``row_bytes`` per row while it answers (its
batched tables); the d rows go through the engine in chunks of
``limits.get("batch_bytes") // row_bytes`` rows, so a long batch never
needs more than the budget. One row whose tables alone exceed
``limits.get("max_table_bytes")`` is refused with a
:class:`~causalnet.errors.ResourceError` before anything is allocated.

An engine's answer for a chunk of m rows is a *tree* of arrays (a tuple,
list or dict of them, nested), every leaf with a leading axis of m rows,
plus ``z`` of shape (m,), the probability of each row's evidence (its
smallest factor for a forest); rows with ``z <= 0`` are impossible, and the
engine raises for them after the scatter, naming original rows.

Legend: ``n`` rows given, ``d`` distinct rows, ``m`` rows of one chunk.

Examples
--------
>>> import numpy as np
>>> rows = EvidenceRows({0: np.array([1, 0, 1, 1]), 1: 2}, 4, [2, 3])
>>> rows.d, rows.ev[0].tolist()                     # two distinct rows
(2, [0, 1])
>>> out, z = rows.solve(lambda ev, m: ((ev[0] * 10,), np.ones(m)), row_bytes=8, what="a query")
>>> rows.scatter(out)[0].tolist()
[10, 0, 10, 10]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ... import limits

__all__ = ["EvidenceRows"]

_CODE_LIMIT = 2.0**62          # mixed-radix codes stay below this (int64)
_TABLE_CODES = 1 << 16         # up to this many possible codes (or 4 n), distinct rows by a table, not a sort


class EvidenceRows:
    """The distinct rows of batched evidence, their chunks, and the scatter back.

    Parameters
    ----------
    ev : dict of node int -> int or int array of shape (n,)
        Validated evidence (see ``DiscreteNetwork.evidence_indices``).
    n : int
        Number of rows.
    card : sequence of int
        States of each node.

    Attributes
    ----------
    ev : dict
        The evidence of the distinct rows (scalars kept; arrays of shape (d,)).
    d : int
        Number of distinct rows.
    inverse : ndarray of shape (n,) or None
        Distinct row of each given row (None when every row is distinct and in order).
    """

    __slots__ = ("ev", "d", "n", "inverse")

    def __init__(self, ev: dict, n: int, card) -> None:
        self.n = n
        cols = [u for u, x in ev.items() if type(x) is not int]
        self.ev = dict(ev)
        self.d = n
        self.inverse = None
        if n <= 1 or not cols:
            return
        cards = [card[u] for u in cols]
        codes = _row_codes([ev[u] for u in cols], cards)
        if codes is not None and math.prod(cards) <= max(4 * n, _TABLE_CODES):
            uniq, inv = _distinct_codes(codes, math.prod(cards))
            if uniq.shape[0] == n:                          # all distinct: keep the given order
                return
            for u, x in zip(cols, _decode(uniq, cards)):
                self.ev[u] = x                              # (d,)
        else:
            if codes is None:                               # too many joint states for one int64
                uniq, first, inv = np.unique(np.stack([ev[u] for u in cols], axis=1), axis=0,
                                             return_index=True, return_inverse=True)
            else:
                uniq, first, inv = np.unique(codes, return_index=True, return_inverse=True)
            if uniq.shape[0] == n:                          # all distinct: keep the given order
                return
            for u in cols:
                self.ev[u] = ev[u][first]                   # (d,)
        self.d = uniq.shape[0]
        self.inverse = inv.reshape(-1)

    def solve(self, fn: Callable, row_bytes: float, what: str):
        """Answer the distinct rows with ``fn(ev_chunk, m) -> (tree, z)``, in chunks.

        Returns the tree and z over the d distinct rows (concatenated).

        Raises
        ------
        ResourceError
            If one row needs more than ``limits.get("max_table_bytes")``.
        """
        limits.check_bytes(row_bytes, what=f"one evidence row of {what}",
                           cause=f"{row_bytes / 8:.0f} table entries per row, even before batching")
        step = max(1, int(limits.get("batch_bytes") // max(row_bytes, 1.0)))
        d = self.d
        if d <= step:
            tree, z = fn(self.ev, d)
            return tree, np.broadcast_to(z, (d,))
        parts, zs = [], []
        for a in range(0, d, step):
            chunk = {u: (x if type(x) is int else x[a:a + step]) for u, x in self.ev.items()}
            tree, z = fn(chunk, min(step, d - a))
            parts.append(tree)
            zs.append(np.broadcast_to(z, (min(step, d - a),)))
        return _concat(parts), np.concatenate(zs)

    def scatter(self, tree):
        """The answers of the distinct rows (a tree, leading axis d) spread to the n given rows."""
        if self.inverse is None:
            return tree
        return _take(tree, self.inverse)

    def rows_of(self, distinct: np.ndarray) -> np.ndarray:
        """The given rows (sorted) whose distinct row is among `distinct` (bool mask of shape (d,))."""
        if self.inverse is None:
            return np.flatnonzero(distinct)
        return np.flatnonzero(distinct[self.inverse])


def _row_codes(cols: list, cards: list) -> np.ndarray | None:
    """One int64 code per row (mixed radix over `cards`), or None if the codes could overflow."""
    if math.prod(float(k) for k in cards) >= _CODE_LIMIT:
        return None
    code = np.zeros(cols[0].shape[0], dtype=np.int64)
    for x, k in zip(cols, cards):
        code *= k
        code += x
    return code


def _distinct_codes(codes: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct codes in increasing order (d,), index of each row's code among them (n,))``, no sort.

    `codes` ``(n,)`` lie in ``[0, space)``; two passes over a table of `space` entries.
    """
    seen = np.zeros(space, dtype=bool)
    seen[codes] = True
    uniq = np.flatnonzero(seen)                                             # (d,) increasing
    where = np.empty(space, dtype=np.intp)
    where[uniq] = np.arange(uniq.shape[0])
    return uniq, where[codes]                                               # (d,), (n,)


def _decode(codes: np.ndarray, cards: list) -> list[np.ndarray]:
    """The states of each node (``(d,)`` each, in `cards` order) whose mixed-radix code is `codes`."""
    out = []
    rest = codes.astype(np.int64, copy=True)
    for k in reversed(cards):
        out.append((rest % k).astype(np.intp))
        rest //= k
    return out[::-1]


def _concat(parts: list):
    first = parts[0]
    if isinstance(first, dict):
        return {k: _concat([p[k] for p in parts]) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_concat([p[i] for p in parts]) for i in range(len(first)))
    return np.concatenate(parts, axis=0)


def _take(tree, idx: np.ndarray):
    if isinstance(tree, dict):
        return {k: _take(v, idx) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_take(v, idx) for v in tree)
    return tree[idx]
