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

from ..errors import ModelError
from .base import DISCRETE, Mechanism, Spec, as_real_array, check_states

__all__ = ["Categorical", "CPT", "Tabular", "TOL", "check_table", "is_plain_tabular", "TABULAR_KEY"]

#: The model cache's entry of :func:`is_plain_tabular` (a reader that builds CPTs only records it as it builds).
TABULAR_KEY = "all_tabular"

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
    if 0 <= t.min() and t.max() <= 2:               # finite, >= 0 (NaN fails), and no sum can overflow
        sums = t.sum(axis=-1)
    else:
        for bad_mask, what in ((~np.isfinite(t), "entries must be finite"), (t < 0, "probabilities must be >= 0")):
            if bad_mask.any():
                bad = tuple(int(i) for i in np.argwhere(bad_mask)[0])
                raise ModelError(f"{who}: entry {bad} is {float(t[bad])}; {what}{_where(bad[:-1], parents)}")
        with np.errstate(over="ignore"):            # entries near 1e308 sum to inf: still "not 1"
            sums = t.sum(axis=-1)
    off = ~(np.abs(sums - 1.0) <= TOL)
    if off.any():
        row = tuple(int(i) for i in np.argwhere(off)[0])
        where = f"row {row}" if row else "the probabilities"
        raise ModelError(f"{who}: {where} sums to {float(sums[row]):.12g}{_where(row, parents)}, expected 1 "
                         f"(tolerance {TOL:g})")
    return t


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


def is_plain_tabular(model) -> bool:
    """True when every node of `model` is a :class:`Tabular` CPT (cached in ``model.cache``).

    The query front door and the discrete engine ask it of every first query; a
    model's cache is emptied whenever the model changes.
    """
    got = model.cache.get(TABULAR_KEY)
    if got is None:
        got = model.cache[TABULAR_KEY] = all(isinstance(m, Tabular) for m in model.mechanisms.values())
    return got
