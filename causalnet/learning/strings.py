"""String columns as integer codes: one vectorised factorisation per column, never a Python loop per value.

Data read from CSV files arrive as strings — pandas ``str`` / ``StringDtype``
columns (stored in Arrow buffers or as Python objects) or plain ``object``
columns — not as categoricals. :func:`string_codes` turns such a column into
integer ``codes`` ``(n,)`` (``-1`` where the cell is missing) and its distinct
strings in order of first appearance, at the cost of one hash pass over the
column:

- an Arrow-backed column (pandas ``str`` under pandas 3, ``string[pyarrow]``)
  is coded by numpy word compares when its strings are few and short
  (:func:`causalnet.learning.string_words.word_codes`: at most 15 bytes,
  at most 16 distinct), else dictionary-encoded by
  Arrow itself (:func:`dictionary_codes`, C++; no
  copy of the strings into Python objects), or read straight from its offsets
  and bytes, zero-copy, by a compiled kernel (:func:`arrow_codes`,
  :func:`causalnet.learning.string_kernel.codes_kernel`: a string of fewer than 8 bytes is one unaligned
  word, masked to its length and looked up in a direct-mapped cache; the
  others, and the cache's misses, are looked up in a small hash table by
  their first word and length and confirmed word by word) when the
  ``strings`` kernel family's backend says so (:mod:`causalnet.runtime`:
  ``"auto"`` compiles once this process has spent :data:`AUTO_SECONDS`
  encoding columns of at least :data:`KERNEL_MIN_ROWS` rows, or
  :data:`WARM_SECONDS` once a compiled kernel has run in the process, so a
  one-off fit never waits for numba to set itself up);
- an ``object`` column is factorised by its objects' addresses
  (:func:`object_codes`: pandas' CSV reader stores one object per distinct
  string), then only its few distinct objects are read — equal strings held
  by different objects are merged there; when the objects are not shared it
  is hashed by ``pandas.factorize`` like every other string column
  (:func:`reference_codes`, the reference the others are tested against;
  missing cells — None, NaN, pd.NA — become ``-1``).

The caller may pass ``seeds`` (a column's declared states: numbered
``0..K-1``, the kernel starts from them) and ``sort=True`` (the other
strings numbered in sorted order): :func:`causalnet.learning.data.as_table`
then takes the codes as they are, with no recoding pass.

A column that is not made of strings only (numbers, a mixture of strings and
numbers, bytes, categoricals) gives ``None``: callers keep their own rule for
it, because a hash table would merge values Python tells apart (``1``,
``1.0`` and ``True`` hash alike).

What the distinct strings *mean* is decided by the caller, on those few
strings only, and the rows are then recoded by one ``take``:
:func:`causalnet.learning.data.as_table` maps them to the column's states
(sorted, or the declared ones), and the DataFrame front door of the queries
(:mod:`causalnet.inference.frames`) decodes them by the one rule of
:func:`causalnet.values.decode_states`.

Symbols: ``n`` rows, ``k`` distinct strings.

Examples
--------
>>> import pandas as pd
>>> codes, uniques = string_codes(pd.Series(["b", "a", None, "b"], dtype="str"))
>>> codes.tolist(), uniques
([0, 1, -1, 0], ['b', 'a'])
>>> string_codes(pd.Series([1, 2])) is None
True
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..runtime import get_backend, numba_available, numba_warm
from .string_kernel import MISSING_BYTE, codes_kernel, remap_kernel
from .string_words import arrow_strings, word_codes

__all__ = ["string_codes", "reference_codes", "dictionary_codes", "arrow_codes",
           "kernel_wanted", "KERNEL_MIN_ROWS", "KERNEL_MAX_UNIQUES", "AUTO_SECONDS", "WARM_SECONDS",
           "object_codes", "string_column", "arrow_column", "expecting", "is_arrow_strings",
           "DICT_SECONDS_PER_CELL", "MAX_OBJECTS", "PROBE_ROWS"]

#: The compiled kernel reads Arrow columns of at least this many rows (shorter ones: Arrow's dictionary encoding).
KERNEL_MIN_ROWS = 20_000
#: Under the ``"auto"`` backend the kernel is compiled once dictionary encoding has taken this long in the process.
AUTO_SECONDS = 0.5
#: ... or this long once a compiled kernel has run in the process (numba set up: the cached kernel loads in ~0.02 s).
WARM_SECONDS = 0.05
#: The kernel's hash table holds this many distinct strings; past them it hands over to Arrow's dictionary encoding.
KERNEL_MAX_UNIQUES = 64
assert KERNEL_MAX_UNIQUES < MISSING_BYTE                  # every code is a byte other than a missing cell's
#: :func:`object_codes` gives up past this many distinct objects in a column (the strings are then hashed).
MAX_OBJECTS = 4096
#: :func:`object_codes` first factorises this many leading rows' objects (a quarter of them distinct: not shared);
#: with ``sort=True`` the kernel numbers the strings of this many leading rows in sorted order, then goes on.
PROBE_ROWS = 4096


def _is_string_dtype(dtype) -> bool:
    """Whether `dtype` is a pandas string dtype (``str``, ``string``, ``string[pyarrow]``, Arrow strings)."""
    import pandas as pd  # optional heavy dependency, imported on use

    if isinstance(dtype, pd.StringDtype):
        return True
    pa_type = getattr(dtype, "pyarrow_dtype", None)
    if pa_type is None:
        return False
    import pyarrow as pa  # present whenever a column is stored in Arrow

    return bool(pa.types.is_string(pa_type) or pa.types.is_large_string(pa_type))


class _Uniques:
    """The kernel's state: the distinct strings met so far (plus the seeds), in arrays of fixed capacity."""

    WORDS = 4096

    def __init__(self, cap: int) -> None:
        words = np.zeros(2 * cap + self.WORDS, np.uint64)                      # two allocations, sliced in seven
        self.key, self.last, self.words = words[:cap], words[cap: 2 * cap], words[2 * cap:]
        size = 1 << max(int(4 * cap - 1).bit_length(), 3)                                             # load <= 1/4
        ints = np.zeros(3 * cap + 1 + size, np.int64)
        self.len, self.wpos = ints[:cap], ints[cap: 2 * cap + 1]
        self.row, self.table = ints[2 * cap + 1: 3 * cap + 1], ints[3 * cap + 1:]
        self.row[:] = -1
        self.k = 0
        self.missing = 0
        self.strings: list = []

    def seed(self, strings) -> bool:
        """Enter `strings` (distinct ``str``) as codes ``0..K-1``; False if they do not fit, repeat or do not encode."""
        strings = list(strings)
        if len(set(strings) | set(self.strings)) != len(strings) + len(self.strings):
            return False
        for text in strings:
            if not isinstance(text, str):
                return False
            try:
                raw = text.encode("utf-8")
            except UnicodeEncodeError:                                 # lone surrogates: never in Arrow data
                return False
            m, k = len(raw), self.k
            words = max((m - 1) // 8 - 1, 0)
            if k == len(self.key) or self.wpos[k] + words > len(self.words):
                return False
            pad = raw + bytes(-m % 8 or (8 if m == 0 else 0))
            u = np.frombuffer(pad, "<u8")                                                      # (ceil(m/8),)
            self.key[k] = u[0] if m else 0
            self.len[k] = m
            if m > 8:
                self.last[k] = np.frombuffer(raw[-8:], "<u8")[0]
                self.words[self.wpos[k]: self.wpos[k] + words] = u[1: 1 + words]
            self.wpos[k + 1] = self.wpos[k] + words
            self.k += 1
            self.strings.append(text)
        return True

    def run(self, arr, small: np.ndarray, row0: int, probe: int = 0) -> bool:
        """Encode one Arrow string array into `small` (n,) uint8; False when the capacity is exceeded.

        With ``probe > 0`` the strings met in its first `probe` rows are numbered in sorted order.
        """
        import pyarrow as pa  # present whenever a column is stored in Arrow

        n = len(arr)
        if n == 0:
            return True
        valid_buf, off_buf, data_buf = arr.buffers()
        width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
        offsets = np.frombuffer(off_buf, dtype=width)[arr.offset: arr.offset + n + 1]                # (n+1,)
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        nbytes = len(data)
        if nbytes < 8:
            data = np.concatenate([data, np.zeros(8 - nbytes, np.uint8)])                  # a window needs 8 bytes
        win = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))       # unaligned words, no copy
        valid = np.frombuffer(valid_buf, np.uint8) if arr.null_count and valid_buf is not None else _NO_BITS
        status, k, missing = codes_kernel(offsets, win, data, nbytes, valid, arr.offset, row0, small,
                                          self.key, self.len, self.last, self.wpos, self.words, self.row, self.k,
                                          self.table, probe)
        if status:
            return False
        self.missing += missing
        for j in range(self.k, k):                                      # decode only the new distinct strings
            self.strings.append(arr[int(self.row[j]) - row0].as_py())
        self.k = k
        return True


_NO_BITS = np.zeros(0, np.uint8)


def arrow_codes(values, *, seeds=None, sort: bool = False) -> tuple[np.ndarray, list] | None:
    """:func:`string_codes` of an Arrow-backed column by :func:`codes_kernel` (zero-copy on its buffers).

    Parameters
    ----------
    values : pandas Series or array stored in Arrow
    seeds : sequence of str, optional
        Distinct strings given the codes ``0..K-1`` whether they occur or
        not (a column's declared states): the other strings follow them.
    sort : bool
        Number the strings that are not seeds in sorted order (else in
        order of first appearance).

    Returns
    -------
    codes : int64 ndarray of shape (n,)
    uniques : list of str
        The seeds, then the other distinct strings.

    None when the column is not Arrow strings, or has more than
    :data:`KERNEL_MAX_UNIQUES` distinct strings (or seeds); the caller then
    uses :func:`dictionary_codes`.
    """
    out = arrow_column(values, seeds=seeds, sort=sort)
    return None if out is None else _wide(out)


def arrow_column(values, *, seeds=None, sort: bool = False) -> tuple[np.ndarray | None, list, np.ndarray | None] | None:
    """``(codes, uniques, small)`` as :func:`string_column` gives them: the kernel writes the uint8 codes only.

    A complete column gives ``(None, uniques, small)``: its int64 codes are
    ``small`` widened, made by whoever needs them (:func:`_wide`); a column
    with a missing cell gives ``(codes, uniques, None)``.

    With `sort`, the first :data:`PROBE_ROWS` rows are encoded first and the
    strings met there enter the full pass sorted (after the `seeds`), so the
    codes need no renumbering unless a new string turns up later.
    """
    arr = arrow_strings(values)
    if arr is None:
        return None
    state = _Uniques(KERNEL_MAX_UNIQUES)
    if seeds is not None and not state.seed(seeds):
        return None
    n_seeds = state.k
    small = np.empty(len(arr), np.uint8)                                                          # (n,)
    if not _run_chunks(state, arr, small, max(PROBE_ROWS, 1) if sort else 0):
        return None
    uniques = state.strings
    if sort and len(uniques) > n_seeds + 1:
        rest = uniques[n_seeds:]
        order = sorted(range(len(rest)), key=rest.__getitem__)
        if order != list(range(len(rest))):
            lut = np.arange(len(uniques), dtype=np.int64)
            lut[[n_seeds + j for j in order]] = np.arange(n_seeds, len(uniques))
            remap_kernel(small, lut)
            uniques = uniques[:n_seeds] + [rest[j] for j in order]
    if not state.missing:
        return None, uniques, small
    codes = small.astype(np.int64)                                                                # (n,)
    codes[small == MISSING_BYTE] = -1
    return codes, uniques, None


def _wide(coded: tuple) -> tuple[np.ndarray, list]:
    """``(codes, uniques)`` of a :func:`string_column` result, the int64 codes made from the uint8 ones if absent."""
    codes, uniques, small = coded
    return (small.astype(np.int64) if codes is None else codes), uniques


def _run_chunks(state: _Uniques, arr, small: np.ndarray, probe: int = 0) -> bool:
    """Encode an Arrow array or chunked array into `small` (n,) uint8; False past the state's capacity.

    `probe`: rows of the first non-empty chunk whose strings are numbered in sorted order (0: none).
    """
    import pyarrow as pa  # present whenever a column is stored in Arrow

    row = 0
    for chunk in (arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]):
        if not state.run(chunk, small[row: row + len(chunk)], row,
                         probe if row == 0 else 0):
            return False
        row += len(chunk)
    return True


def dictionary_codes(values) -> tuple[np.ndarray, list] | None:
    """:func:`string_codes` of an Arrow-backed column by Arrow's own ``dictionary_encode`` (None if not Arrow).

    The codes are Arrow's int32 indices (``-1`` where missing), viewed without a copy when nothing is missing.
    """
    array = getattr(values, "array", values)
    to_arrow = getattr(array, "__arrow_array__", None)
    if to_arrow is None:
        return None
    import pyarrow as pa  # present whenever a column is stored in Arrow
    import pyarrow.compute as pc

    arr = to_arrow()
    if isinstance(arr, pa.ChunkedArray):                                 # one dictionary for the whole column
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    encoded = pc.dictionary_encode(arr)
    indices = encoded.indices if not encoded.indices.null_count else pc.fill_null(encoded.indices, -1)
    return indices.to_numpy(), encoded.dictionary.to_pylist()                              # (n,) int32, (k,)


def reference_codes(values) -> tuple[np.ndarray, list]:
    """:func:`string_codes` by ``pandas.factorize`` (the reference every other path is tested against)."""
    import pandas as pd  # optional heavy dependency, imported on use

    codes, uniques = pd.factorize(values, use_na_sentinel=True)                          # (n,), (k,)
    out = [v.item() if isinstance(v, np.generic) else v for v in np.asarray(uniques, dtype=object).tolist()]
    return np.asarray(codes), out


class _Addresses:
    """An object array's cells read as unsigned integers (the objects' addresses), by the array interface.

    ``np.asarray(_Addresses(a))`` is a zero-copy ``uintp`` view of `a`'s
    buffer that keeps `a` alive; two cells holding the same object read equal.
    """

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr
        self.__array_interface__ = {"shape": arr.shape, "typestr": np.dtype(np.uintp).str, "version": 3,
                                    "data": (arr.__array_interface__["data"][0], True), "strides": arr.strides}


def _missing_scalar(obj) -> bool:
    """Whether `obj` is a missing cell (None, NaN, pd.NA, NaT), as ``pandas.factorize`` reads it."""
    import pandas as pd  # optional heavy dependency, imported on use

    return bool(pd.api.types.is_scalar(obj) and pd.isna(obj))


def object_codes(values) -> tuple[np.ndarray, list] | None | bool:
    """:func:`string_codes` of an ``object`` column by its objects' addresses, then its few distinct objects.

    pandas' CSV reader and ``astype(str)`` store one Python object per
    distinct string, so the column is factorised as integers (the objects'
    addresses, ``pandas.factorize`` on a zero-copy view) and only the
    distinct objects are looked at: strings that are equal but distinct
    objects are merged then, missing cells become ``-1``.

    Returns
    -------
    (codes (n,) int64, distinct strings in order of first appearance); None
    when a present cell is not a ``str`` (or none is present); False when the
    objects are not shared (more than :data:`MAX_OBJECTS` distinct objects, or
    a quarter of the first :data:`PROBE_ROWS` rows): hash the strings instead.
    """
    import pandas as pd  # optional heavy dependency, imported on use

    arr = np.asarray(values)
    n = len(arr)
    if arr.ndim != 1 or arr.dtype != object or n == 0:
        return False
    ptrs = np.asarray(_Addresses(arr))                                                        # (n,) uintp
    if n > PROBE_ROWS and len(pd.unique(ptrs[:PROBE_ROWS])) > PROBE_ROWS // 4:
        return False
    pcodes, distinct = pd.factorize(ptrs)                                                       # (n,), (p,)
    if len(distinct) > MAX_OBJECTS:
        return False
    firsts = np.empty(len(distinct), np.int64)                                                        # (p,)
    firsts[pcodes[::-1]] = np.arange(n - 1, -1, -1)             # the last write wins: each object's first row
    where: dict = {}
    lut = np.empty(len(distinct) + 1, np.int64)                                                        # (p+1,)
    lut[-1] = -1
    for j, obj in enumerate(arr[firsts].tolist()):
        if isinstance(obj, str):
            lut[j] = where.setdefault(str(obj), len(where))
        elif _missing_scalar(obj):
            lut[j] = -1
        else:
            return None
    if not where:
        return None
    codes = pcodes.astype(np.int64, copy=False)
    if len(where) != len(distinct) or not np.array_equal(lut[:-1], np.arange(len(distinct))):
        codes = lut[codes]                                                                              # (n,)
    return codes, list(where)


def _arrange(codes: np.ndarray, uniques: list, seeds, sort: bool) -> tuple[np.ndarray, list]:
    """Renumber ``(codes, uniques)``: `seeds` first (codes ``0..K-1``), then the rest, sorted if `sort`."""
    if seeds is None and not sort:
        return codes, uniques
    head = list(seeds) if seeds is not None else []
    known = set(head)
    rest = [u for u in uniques if u not in known]
    new = head + (sorted(rest) if sort else rest)
    where = {u: i for i, u in enumerate(new)}
    lut = np.array([where[u] for u in uniques] + [-1], dtype=np.int64)                        # (k+1,): -1 last
    codes = codes.astype(np.int64, copy=False)             # int64 first: numpy indexes by int32 three times slower
    if np.array_equal(lut[:-1], np.arange(len(uniques))):
        return codes, new
    return lut[codes], new                                                                     # (n,)


#: seconds this process has spent encoding Arrow columns long enough for the kernel without it
_spent = [0.0]
#: seconds the numpy path's encoding would take for the frame being read (:func:`expecting`)
_pending = [0.0]
#: The numpy path (word compares, else Arrow's dictionary encoding) costs about this many seconds per cell: 0.8-0.9 ms
#: per alarm column of 10^5 short strings by word compares (Arrow's dictionary encoding: 1.4 ms). The name is kept.
DICT_SECONDS_PER_CELL = 9e-9


def is_arrow_strings(values) -> bool:
    """Whether `values` is a pandas column of strings stored in Arrow (the kernel's input)."""
    dtype = getattr(values, "dtype", None)
    return (dtype is not None and not isinstance(dtype, np.dtype) and _is_string_dtype(dtype)
            and getattr(dtype, "storage", "pyarrow") == "pyarrow")


@contextmanager
def expecting(cells: int) -> Iterator[None]:
    """Read a frame of `cells` Arrow string cells in the block: ``"auto"`` counts their encoding in advance.

    When encoding them without the kernel would take :data:`AUTO_SECONDS`
    (at :data:`DICT_SECONDS_PER_CELL`), the kernel is used from the frame's first
    long column: loading it costs less than the encoding it saves.
    """
    prev = _pending[0]
    _pending[0] = cells * DICT_SECONDS_PER_CELL
    try:
        yield
    finally:
        _pending[0] = prev


def kernel_wanted(n: int) -> bool:
    """Whether an Arrow column of `n` rows goes to the compiled kernel (the ``strings`` backend decides).

    ``"numba"``: always (numba installed); ``"numpy"``: never; ``"auto"``:
    for columns of at least :data:`KERNEL_MIN_ROWS` rows once the
    encoding of such columns without it has taken :data:`AUTO_SECONDS` in
    this process, or would take that long on the frame being read
    (:func:`expecting`): importing numba (0.15 s of CPU) and the process's
    first compiled kernel (0.3-0.6 s, loaded from the cache: numba sets
    itself up) cost more than a one-off fit of a small frame saves (the
    kernel saves about 0.6 ms per column of 10^5 short strings over the
    word compares, two thirds of their time). Once a compiled kernel of any
    family has run in the process (:func:`causalnet.runtime.numba_warm`),
    this one loads in about 0.02 s, and :data:`WARM_SECONDS` is the bar.
    """
    backend = get_backend("strings")
    if backend == "numpy" or not numba_available():
        return False
    bar = WARM_SECONDS if numba_warm() else AUTO_SECONDS
    return backend == "numba" or (n >= KERNEL_MIN_ROWS and _spent[0] + _pending[0] >= bar)


def _arrow_string_codes(values, seeds, sort: bool) -> tuple[np.ndarray | None, list, np.ndarray | None] | None:
    """An Arrow-backed string column by the kernel, the word compares or Arrow's dictionary encoding, as
    :func:`string_column` gives it (None: not Arrow)."""
    n = len(values)
    if kernel_wanted(n):
        fast = arrow_column(values, seeds=seeds, sort=sort)
        if fast is not None:
            return fast
    start = time.perf_counter()
    out = word_codes(values, seeds=seeds, sort=sort)                  # few short strings: numpy word compares
    if out is None:
        coded = dictionary_codes(values)
        out = None if coded is None else (*_arrange(*coded, seeds, sort), None)
    if n >= KERNEL_MIN_ROWS:
        _spent[0] += time.perf_counter() - start
    return out


def string_codes(values, *, seeds=None, sort: bool = False) -> tuple[np.ndarray, list] | None:
    """``(codes (n,), distinct strings)``, or None if `values` are not strings.

    Parameters
    ----------
    values : pandas.Series, pandas array or 1-d numpy array
        A pandas string column (``str``, ``string``, Arrow strings), an
        ``object`` column whose present cells are all ``str``, or a numpy
        unicode array.
    seeds : sequence of str, optional
        Distinct strings numbered ``0..K-1`` whether they occur or not (a
        column's declared states); the column's other strings follow.
    sort : bool
        Number the strings that are not seeds in sorted order; by default
        in order of first appearance.

    Returns
    -------
    codes : integer ndarray of shape (n,)
        Index into `uniques`; ``-1`` where the cell is missing (None, NaN,
        pd.NA). Its integer width depends on the path (int32 from Arrow's
        dictionary encoding, int64 otherwise): callers index a lookup table
        with it.
    uniques : list of str
        The seeds, then the other distinct strings.

    None when the column holds anything but strings (and missing cells), or
    is a categorical (whose codes the caller reads directly).
    """
    out = string_column(values, seeds=seeds, sort=sort)
    return None if out is None else _wide(out)


def string_column(values, *, seeds=None, sort: bool = False) -> tuple[np.ndarray | None, list, np.ndarray | None] | None:
    """``(codes, uniques, small)``: :func:`string_codes`, with the codes as uint8 (n,) as `small` when a pass wrote
    them (the compiled kernel or the word compares, on a column without missing cells and at most 255 distinct
    strings), else None as the third item. When `small` is given, `codes` may be None: the int64 codes are then
    `small` widened, for the caller to make if it needs them (a fit that counts by the uint8 codes never does)."""
    dtype = getattr(values, "dtype", None)
    if dtype is None:
        return None
    if getattr(dtype, "kind", None) == "U":
        return (*_arrange(*reference_codes(np.asarray(values, dtype=object)), seeds, sort), None)
    if _is_string_dtype(dtype):
        if getattr(dtype, "storage", "pyarrow") == "pyarrow":                         # not Python objects
            out = _arrow_string_codes(values, seeds, sort)
            if out is not None:
                return out
        return (*_arrange(*reference_codes(values), seeds, sort), None)
    if not isinstance(dtype, np.dtype) or dtype.kind != "O":
        return None
    out = object_codes(values)
    if out is not False:
        return None if out is None else (*_arrange(*out, seeds, sort), None)
    import pandas as pd  # optional heavy dependency, imported on use

    if pd.api.types.infer_dtype(values, skipna=True) != "string":                    # one C pass over the cells
        return None
    return (*_arrange(*reference_codes(values), seeds, sort), None)
