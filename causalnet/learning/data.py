"""Data adapters: a table of observations as integer codes and real columns.

Learning starts from a table — a pandas DataFrame, a mapping of column arrays,
or (optionally) a Dask DataFrame — and turns each column into one of two
*columns*:

- a :class:`DiscreteColumn`: integer **codes** ``(n,)`` into a tuple of state
  names, ``-1`` where the cell is missing. pandas categoricals keep their
  category order; booleans get ``(False, True)``; strings and small integers get
  their sorted distinct values (as pgmpy does), unless ``states=`` fixes them.
  A complete column of at most :data:`NARROW_MAX` states read from a
  categorical or a string column keeps the uint8 codes its encoder wrote
  (``narrow``) and makes the int64 ``codes`` only when something reads them.
- a :class:`RealColumn`: float64 values ``(n,)``, NaN where missing.

Everything downstream (parameters, scores, structure search) needs only
*sufficient statistics*. For discrete families these are **counts**: the codes
of a child and its parents are flattened to one index (in 8 bits from the
uint8 codes when the configurations number at most :data:`NARROW_MAX`, see
:func:`narrow_config`) and counted, giving a table of shape
``(*parent_cards, card)`` — the same layout as a CPT.

Symbols: ``n`` rows, ``K`` states.

Examples
--------
>>> import pandas as pd
>>> t = as_table(pd.DataFrame({"A": ["x", "y", "y"], "B": [True, False, True]}))
>>> t.states("A"), t.column("B").codes.tolist()
(('x', 'y'), [1, 0, 1])
>>> family_counts(t, "B", ("A",)).tolist()
[[0, 1], [1, 1]]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import limits
from ..arguments import is_dask_collection, is_pandas_frame
from ..errors import ModelError
from .strings import expecting, is_arrow_strings, string_column

__all__ = ["DiscreteColumn", "RealColumn", "Table", "as_table", "family_counts", "narrow_config", "count_codes",
           "MAX_INTEGER_STATES", "NARROW_MAX", "FEW_CODES", "HEAD_ROWS", "head_offset", "is_dask_collection", "is_pandas_frame"]

#: An integer column with more distinct values than this is not taken as state codes.
MAX_INTEGER_STATES = 1000
#: Configuration indices below this fit in 8 bits (:func:`narrow_config`).
NARROW_MAX = 256
#: Up to this many codes are counted by one ``np.count_nonzero(codes == k)`` each (a pass over one byte per row)
#: instead of ``np.bincount`` (which widens the codes to 64 bits and scans them twice).
FEW_CODES = 16


class DiscreteColumn:
    """A discrete column: ``codes`` (n,) int64 into ``states``, -1 where missing.

    Made from its int64 codes, or by :meth:`of_narrow` from the uint8 codes
    of a complete column of at most :data:`NARROW_MAX` states, as the
    categorical and string encoders write them: its int64 codes are then
    made on first use, and a fit that counts by the uint8 codes
    (:func:`family_counts`) never makes them (10^5 rows of int64 codes are
    800 kB of fresh memory a column: their page faults cost more than the
    encoding on some machines). Read-only by convention: its arrays are
    shared by every family that reads the column.
    """

    is_discrete = True

    def __init__(self, codes: np.ndarray, states: tuple) -> None:
        self.__dict__["codes"] = codes
        self.states = states

    @classmethod
    def of_narrow(cls, narrow: np.ndarray, states: tuple) -> DiscreteColumn:
        """The complete column whose codes are `narrow` (n,) uint8 (made read-only here), states `states`."""
        if len(states) > NARROW_MAX:
            raise ModelError(f"internal: {len(states)} states do not fit in uint8 codes")
        col = cls.__new__(cls)
        col.states = states
        narrow.setflags(write=False)                                  # shared by families: never written through
        col.__dict__.update(narrow=narrow, complete=True)
        return col

    @functools.cached_property
    def codes(self) -> np.ndarray:
        """(n,) int64 codes, -1 where missing (made from the uint8 codes, once, for a column built from them)."""
        return self.narrow.astype(np.int64)

    @property
    def card(self) -> int:
        return len(self.states)

    @property
    def n_rows(self) -> int:
        """n: the column's length (read off whichever codes it holds)."""
        return len(self.codes if "codes" in self.__dict__ else self.narrow)

    @property
    def missing(self) -> np.ndarray:
        """(n,) bool: the missing cells (no int64 codes made for a complete column)."""
        return np.zeros(self.n_rows, bool) if self.complete else self.codes < 0

    @functools.cached_property
    def complete(self) -> bool:
        """True when no cell is missing (computed once)."""
        return bool(self.codes.size == 0 or self.codes.min() >= 0)

    @functools.cached_property
    def narrow(self) -> np.ndarray | None:
        """The codes as uint8 (n,) when the column is complete with at most :data:`NARROW_MAX` states, else None
        (computed once, shared by every family that reads the column)."""
        if self.card > NARROW_MAX or not self.complete:
            return None
        small = self.codes.astype(np.uint8)
        small.setflags(write=False)                                  # shared by families: never written through
        return small

    def take(self, rows: np.ndarray) -> DiscreteColumn:
        """The column at `rows` (a boolean mask or indices), by its uint8 codes when it has them."""
        if "codes" not in self.__dict__:
            return DiscreteColumn.of_narrow(self.narrow[rows], self.states)
        return DiscreteColumn(self.codes[rows], self.states)


@dataclass(frozen=True)
class RealColumn:
    """A continuous column: float64 ``values`` (n,), NaN where missing."""

    values: np.ndarray

    @property
    def missing(self) -> np.ndarray:
        return np.isnan(self.values)

    @functools.cached_property
    def complete(self) -> bool:
        """True when no cell is missing (computed once)."""
        return not bool(np.isnan(self.values).any())

    @functools.cached_property
    def offset(self) -> float:
        """:func:`head_offset` of the values (computed once, shared by every family that reads the column)."""
        return head_offset(self.values)

    is_discrete = False


#: :func:`head_offset` looks at this many leading rows.
HEAD_ROWS = 4096


def head_offset(values: np.ndarray) -> float:
    """The offset to subtract from `values` (n,) before raw moment sums: the mean of the first :data:`HEAD_ROWS`
    rows when it sits more than 10 of their standard deviations from 0, else 0 (a small offset costs < 3 digits).
    """
    head = values[:HEAD_ROWS]
    if head.size == 0:
        return 0.0
    shift = float(head.mean())
    return shift if abs(shift) > 10.0 * float(head.std()) else 0.0


class Table:
    """Columns by name, all of length ``n`` (read-only once built)."""

    def __init__(self, columns: Mapping[Hashable, DiscreteColumn | RealColumn], n: int) -> None:
        self._columns = dict(columns)
        self.n = int(n)

    @property
    def names(self) -> tuple:
        return tuple(self._columns)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def column(self, name: Hashable) -> DiscreteColumn | RealColumn:
        try:
            return self._columns[name]
        except KeyError:
            raise ModelError(f"the data have no column {name!r}; columns: {list(self._columns)}") from None

    def states(self, name: Hashable) -> tuple:
        return self.column(name).states

    def card(self, name: Hashable) -> int:
        return len(self.column(name).states)

    def has_missing(self, names: Sequence[Hashable] | None = None) -> bool:
        return any(not self.column(c).complete for c in (self.names if names is None else names))

    def select(self, rows: np.ndarray) -> Table:
        """The table restricted to `rows` (a boolean mask or indices)."""
        cols = {k: (c.take(rows) if c.is_discrete else RealColumn(c.values[rows]))
                for k, c in self._columns.items()}
        return Table(cols, int(np.count_nonzero(rows)) if np.asarray(rows).dtype == bool else len(rows))


# -- building a table ----------------------------------------------------------------


def _frame_columns(data) -> tuple[dict, int]:
    """``{name: 1-d array or pandas Series}`` and the row count, from a DataFrame or mapping."""
    if hasattr(data, "columns") and hasattr(data, "dtypes") and hasattr(data, "iloc"):
        return {c: data[c] for c in data.columns}, len(data)
    if isinstance(data, Mapping):
        cols, lengths = {}, set()
        for k, v in data.items():
            arr = v if hasattr(v, "dtype") and hasattr(v, "cat") else np.asarray(v)
            if np.ndim(arr) != 1:
                raise ModelError(f"column {k!r} must be 1-d, got shape {np.shape(arr)}")
            cols[k] = arr
            lengths.add(len(arr))
        if len(lengths) > 1:
            raise ModelError(f"columns have different lengths {sorted(lengths)}; every column needs one value per row")
        return cols, lengths.pop() if lengths else 0
    raise ModelError(f"data must be a pandas DataFrame or a mapping of column arrays, got {type(data).__name__}")


def _codes_for(name, values: np.ndarray, missing: np.ndarray, states: tuple) -> np.ndarray:
    lookup = {s: i for i, s in enumerate(states)}
    uniq, inverse = np.unique(values[~missing], return_inverse=True) if values.dtype != object else \
        _unique_objects(values[~missing])
    codes_u = np.empty(len(uniq), dtype=np.int64)
    for j, v in enumerate(uniq.tolist()):
        if v not in lookup:
            raise ModelError(f"column {name!r} has the value {v!r}, which is not among its states {list(states)}")
        codes_u[j] = lookup[v]
    codes = np.full(len(values), -1, dtype=np.int64)
    codes[~missing] = codes_u[inverse.reshape(-1)]
    return codes


def _unique_objects(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        return np.unique(values, return_inverse=True)
    except TypeError:  # unorderable mixture: keep first-seen order
        seen = list(dict.fromkeys(values.tolist()))
        where = {u: i for i, u in enumerate(seen)}
        uniq = np.empty(len(seen), dtype=object)
        uniq[:] = seen
        return uniq, np.fromiter((where[v] for v in values.tolist()), dtype=np.int64, count=len(values))


def _check_card(name, card: int) -> None:
    if card > limits.get("max_states"):
        raise ModelError(f"column {name!r} has {card} distinct values, more than the limit max_states="
                         f"{limits.get('max_states')}: too many states for a discrete node")


def _sorted_values(values: list) -> list:
    """`values` sorted (their first-seen order when they do not compare, as np.unique would fail)."""
    try:
        return sorted(values)
    except TypeError:
        return list(values)


def _coded_column(name, codes: np.ndarray | None, uniques: list, states,
                  narrow: np.ndarray | None = None) -> DiscreteColumn:
    """A column from `codes` (n,) into `uniques` (-1 missing): states sorted, or `states` with each value checked.

    Only the distinct values are looked at (one dict lookup each); the rows are
    recoded by one ``take``, unless `uniques` are the states already. `narrow`:
    the same codes as uint8 (n,), none missing, when the encoder wrote them
    (`codes` may then be None): the column keeps those and makes its int64
    codes only if asked.
    """
    if states is None:
        st = tuple(_sorted_values(uniques))
        _check_card(name, len(st))
    else:
        st = tuple(states)
    few = narrow is not None and len(st) <= NARROW_MAX
    if list(st) == list(uniques):                                           # numbered as the states already (no take)
        if few:
            return DiscreteColumn.of_narrow(narrow, st)
        if codes is not None and codes.dtype == np.int64:
            return DiscreteColumn(codes, st)
    lookup = {s: i for i, s in enumerate(st)}
    lut = np.empty(len(uniques) + 1, dtype=np.int64)                                          # (k+1,): -1 last
    lut[-1] = -1
    for v in _sorted_values(uniques):
        if v not in lookup:
            raise ModelError(f"column {name!r} has the value {v!r}, which is not among its states {list(st)}")
    for j, v in enumerate(uniques):
        lut[j] = lookup[v]
    if few:
        return DiscreteColumn.of_narrow(lut[:-1].astype(np.uint8)[narrow], st)                   # (n,) uint8
    return DiscreteColumn(lut[narrow if codes is None else codes], st)                         # (n,); -1 -> -1


def _categorical_column(name, series, states) -> DiscreteColumn:
    """A categorical column: its codes, the categories as the states (or recoded to `states`).

    With the categories as states and no cell missing, the column keeps
    pandas' narrow codes (int8 for fewer than 127 categories) as its uint8
    ones, copied (pandas' array is never shared), and makes int64 codes only
    if asked (:class:`DiscreteColumn`); otherwise they are widened to int64.
    """
    arr = series.array if hasattr(series.array, "codes") else series.cat       # a Categorical: no Series built
    cats = tuple(arr.categories.tolist())
    raw = np.asarray(arr.codes)                                                  # (n,) int8/16/32, -1 missing
    if states is None or tuple(states) == cats:
        _check_card(name, len(cats))
        if raw.dtype == np.int8 and (raw.size == 0 or int(raw.min()) >= 0):    # complete, fewer than 127 states
            return DiscreteColumn.of_narrow(raw.astype(np.uint8), cats)
        return DiscreteColumn(raw.astype(np.int64), cats)
    codes = raw.astype(np.int64)
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(cats)))          # categories present
    lut = np.full(len(cats) + 1, -1, dtype=np.int64)
    lut[used] = np.arange(len(used))
    return _coded_column(name, lut[codes], [cats[j] for j in used], states)


def _is_missing(arr: np.ndarray) -> np.ndarray:
    if arr.dtype == object:
        import pandas as pd

        return np.asarray(pd.isna(arr), dtype=bool)
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    return np.zeros(arr.shape, dtype=bool)


def _to_numpy(series) -> np.ndarray:
    if hasattr(series, "to_numpy"):
        dt = series.dtype
        if getattr(dt, "kind", "O") in "iub" and not hasattr(dt, "na_value"):
            return series.to_numpy()
        if str(dt) in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "boolean"):
            return series.to_numpy(dtype=object, na_value=None)
        if str(dt) in ("Float32", "Float64"):
            return series.to_numpy(dtype=np.float64, na_value=np.nan)
        return series.to_numpy()
    return np.asarray(series)


def _column(name, raw, states=None) -> DiscreteColumn | RealColumn:
    """One column of the table, discrete or real, by its dtype (or by `states` when given)."""
    if str(getattr(raw, "dtype", "")) == "category" and hasattr(raw, "cat"):     # the dtype first: a str column's
        return _categorical_column(name, raw, states)                                 # .cat raises (3 µs)
    seeds = tuple(states) if states is not None else None
    if seeds is not None and (len(set(seeds)) != len(seeds) or not all(type(v) is str for v in seeds)):
        seeds = None                                            # only distinct str states can number the strings
    coded = string_column(raw, seeds=seeds, sort=states is None)
    if coded is not None:                                       # strings: factorised once, never per value
        return _coded_column(name, *coded[:2], states, narrow=coded[2])
    arr = _to_numpy(raw)
    if states is None and arr.dtype.kind in "fc":
        if arr.dtype.kind == "c":
            raise ModelError(f"column {name!r} is complex; learning needs real or discrete columns")
        vals = np.array(arr, dtype=np.float64, copy=arr.dtype != np.float64)   # the frame's own values when float64
        vals.setflags(write=False)                                             # read-only: never written through
        with np.errstate(invalid="ignore"):
            finite = bool(np.isfinite(vals.sum())) or bool(np.isfinite(vals).all())
        if not finite and np.isinf(vals).any():
            raise ModelError(f"column {name!r} has an infinite value at row {int(np.flatnonzero(np.isinf(vals))[0])}")
        col = RealColumn(vals)
        if finite:
            col.__dict__["complete"] = True          # a finite sum: no NaN (the cached property, known already)
        return col
    missing = _is_missing(arr)
    if states is not None:
        states = tuple(states)
        return DiscreteColumn(_codes_for(name, arr, missing, states), states)
    if arr.dtype.kind == "b":
        return DiscreteColumn(arr.astype(np.int64), (False, True))
    present = arr[~missing]
    if present.dtype == object and all(isinstance(v, (float, np.floating)) for v in present.tolist()):
        return _column(name, np.where(missing, np.nan, arr).astype(np.float64))
    uniq, _ = _unique_objects(present) if present.dtype == object else (np.unique(present), None)
    if arr.dtype.kind in "iu" and len(uniq) > MAX_INTEGER_STATES:
        raise ModelError(f"column {name!r} has {len(uniq)} distinct integers, too many states for a discrete node "
                         f"(more than {MAX_INTEGER_STATES}); cast it to float for a continuous node, or pass states=")
    _check_card(name, len(uniq))
    st = tuple(v.item() if isinstance(v, np.generic) else v for v in uniq.tolist())
    return DiscreteColumn(_codes_for(name, arr, missing, st), st)


def as_table(data, *, states: Mapping[Hashable, Sequence] | None = None,
             columns: Sequence[Hashable] | None = None) -> Table:
    """Turn a DataFrame or a mapping of columns into a :class:`Table`.

    Parameters
    ----------
    data : pandas.DataFrame or mapping name -> 1-d array
        A :class:`Table` is returned as it is.
    states : mapping name -> sequence, optional
        Fixed state names (and order) for discrete columns; a value outside them
        is an error naming the column.
    columns : sequence of names, optional
        Keep only these columns (each must exist).

    Raises
    ------
    ModelError
        Naming the column: not 1-d, unequal lengths, a value outside ``states``,
        complex or infinite values, or too many distinct values.
    """
    if isinstance(data, Table):
        return data
    cols, n = _frame_columns(data)
    states = dict(states or {})
    for k in states:
        if k not in cols:
            raise ModelError(f"states= names {k!r}, which is not a column of the data; columns: {list(cols)}")
    keep = list(cols) if columns is None else list(columns)
    missing = [k for k in keep if k not in cols]
    if missing:
        raise ModelError(f"the data have no column {missing[0]!r}; columns: {list(cols)}")
    with expecting(n * sum(is_arrow_strings(cols[k]) for k in keep)):             # the strings kernel plans ahead
        out = {k: _column(k, cols[k], states.get(k)) for k in keep}
    return Table(out, n)


def family_counts(table: Table, child: Hashable, parents: Sequence[Hashable], rows: np.ndarray | None = None,
                  weights: np.ndarray | None = None) -> np.ndarray:
    """Counts of (parents, child) configurations, shape ``(*parent_cards, card)``.

    Rows where any family member is missing are skipped. `weights` (n,) gives
    weighted counts (float) instead of integer counts.
    """
    names = (*parents, child)
    cols = [table.column(v) for v in names]
    cards = tuple(c.card for c in cols)
    size = math.prod(cards)
    limits.check_bytes(8.0 * size, what=f"count table of {child!r} given {list(parents)}", cause=f"cards {cards}")
    if rows is None and weights is None:
        small, _ = narrow_config(table, names)
        if small is not None:
            return count_codes(small, size).reshape(cards)
    codes = [c.codes if rows is None else c.codes[rows] for c in cols]
    flat = codes[0].astype(np.int64)                                                             # (n,)
    for c, k in zip(codes[1:], cards[1:]):
        flat *= k
        flat += c
    if not all(c.complete for c in cols):
        ok = np.ones(flat.shape, dtype=bool)
        for c in codes:
            ok &= c >= 0
        flat = flat[ok]
        weights = None if weights is None else weights[ok]
    out = np.bincount(flat, weights=weights, minlength=size)                                      # (prod cards,)
    return out.reshape(cards)



def narrow_config(table: Table, names: Sequence[Hashable]) -> tuple[np.ndarray | None, tuple]:
    """``(config (n,) uint8 or None, cards)``: each row's C-order configuration of the discrete columns `names`.

    None when a column has a missing cell or the configurations number more
    than :data:`NARROW_MAX` (then use a 64-bit index); the product of the
    cards bounds every partial index, so the 8-bit arithmetic cannot wrap.
    """
    cols = [table.column(v) for v in names]
    cards = tuple(c.card for c in cols)
    if not cols or math.prod(cards) > NARROW_MAX or any(c.narrow is None for c in cols):
        return None, cards
    if len(cols) == 1:
        return cols[0].narrow, cards
    flat = cols[0].narrow * np.uint8(cards[1])                                                     # (n,) new
    flat += cols[1].narrow
    for c, k in zip(cols[2:], cards[2:]):
        flat *= np.uint8(k)
        flat += c.narrow
    return flat, cards


def count_codes(codes: np.ndarray, size: int) -> np.ndarray:
    """(size,) int64 counts of each value of `codes` (n,) (all in ``[0, size)``): one ``np.count_nonzero`` per
    value when ``size <= FEW_CODES``, else ``np.bincount``."""
    if size > FEW_CODES:
        return np.bincount(codes, minlength=size).astype(np.int64, copy=False)
    out = np.empty(size, dtype=np.int64)
    for k in range(size):
        out[k] = np.count_nonzero(codes == k)
    return out
