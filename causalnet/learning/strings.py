"""String columns as integer codes: one vectorised factorisation per column, never a Python loop per value.

Data read from CSV files arrive as strings — pandas ``str`` / ``StringDtype``
columns (stored in Arrow buffers or as Python objects) or plain ``object``
columns — not as categoricals. :func:`string_codes` turns such a column into
integer ``codes`` ``(n,)`` (``-1`` where the cell is missing) and its distinct
strings in order of first appearance, at the cost of one hash pass over the
column:

- an Arrow-backed column (pandas ``str`` under pandas 3, ``string[pyarrow]``)
  is dictionary-encoded by Arrow itself (:func:`dictionary_codes`, C++; no
  copy of the strings into Python objects), or read straight from its offsets
  and bytes by a compiled kernel (:func:`arrow_codes`) when the ``strings``
  kernel family's backend says so (:mod:`causalnet.runtime`: ``"auto"``
  compiles once this process has spent :data:`AUTO_SECONDS` dictionary-encoding
  columns of at least :data:`KERNEL_MIN_ROWS` rows, so a one-off fit never
  waits for numba to load);
- every other string column goes through ``pandas.factorize``
  (:func:`reference_codes`, the reference the others are tested against;
  missing cells — None, NaN, pd.NA — become ``-1``).

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

import numpy as np

from ..runtime import get_backend, jit, numba_available

__all__ = ["string_codes", "reference_codes", "dictionary_codes", "arrow_codes", "arrow_buffers",
           "kernel_wanted", "KERNEL_MIN_ROWS", "KERNEL_MAX_UNIQUES", "AUTO_SECONDS", "codes_kernel"]

#: The compiled kernel reads Arrow columns of at least this many rows (shorter ones: Arrow's dictionary encoding).
KERNEL_MIN_ROWS = 20_000
#: Under the ``"auto"`` backend the kernel is compiled once dictionary encoding has taken this long in the process.
AUTO_SECONDS = 1.0
#: The kernel compares each cell with every distinct string seen so far; past this many it hands over to pandas.
KERNEL_MAX_UNIQUES = 64


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


def arrow_buffers(values) -> tuple[np.ndarray, np.ndarray] | None:
    """``(offsets (n+1,), bytes)`` of an Arrow-backed string column without missing cells, else None.

    Read through public interfaces only (``__arrow_array__`` and
    ``pyarrow.Array.buffers``); no copy unless the column is chunked.
    """
    array = getattr(values, "array", values)
    to_arrow = getattr(array, "__arrow_array__", None)
    if to_arrow is None:
        return None
    import pyarrow as pa  # present whenever a column is stored in Arrow

    arr = to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    _, off_buf, data_buf = arr.buffers()
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=width)[arr.offset: arr.offset + len(arr) + 1]          # (n+1,)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


_njit = jit(nogil=True)


# Long by design: one pass whose state (the distinct strings so far) lives in three small arrays.
@_njit
def codes_kernel(offsets, data, max_uniques):  # pragma: no cover - compiled
    """Codes of the strings ``data[offsets[i]:offsets[i+1]]`` in order of first appearance.

    Each string is keyed by its length and first 7 bytes (exact for strings
    of up to 7 bytes; longer ones are compared byte by byte with the stored
    string whose key matches).

    Parameters
    ----------
    offsets : int32 or int64 array of shape (n+1,)
    data : uint8 array
        The UTF-8 bytes of the column.
    max_uniques : int
        Give up (return empty arrays) past this many distinct strings.

    Returns
    -------
    codes : int64 array of shape (n,)
    starts, lengths : int64 arrays of shape (k,)
        Where each distinct string first appears in `data`, and its length.
    """
    n = len(offsets) - 1
    codes = np.empty(n, np.int64)
    starts = np.empty(max_uniques, np.int64)
    lengths = np.empty(max_uniques, np.int64)
    keys = np.empty(max_uniques, np.uint64)
    k = 0
    for i in range(n):
        s = np.int64(offsets[i])
        m = np.int64(offsets[i + 1]) - s
        key = np.uint64(m)
        for b in range(min(m, 7)):
            key = (key << np.uint64(8)) | np.uint64(data[s + b])
        found = -1
        for j in range(k):
            if keys[j] == key and lengths[j] == m:
                if m <= 7:
                    found = j
                    break
                u = starts[j]
                same = True
                for b in range(7, m):
                    if data[s + b] != data[u + b]:
                        same = False
                        break
                if same:
                    found = j
                    break
        if found < 0:
            if k == max_uniques:
                return codes[:0], starts[:0], lengths[:0]
            starts[k] = s
            lengths[k] = m
            keys[k] = key
            found = k
            k += 1
        codes[i] = found
    return codes, starts[:k].copy(), lengths[:k].copy()


def arrow_codes(values) -> tuple[np.ndarray, list] | None:
    """:func:`string_codes` of an Arrow-backed column without missing cells, by :func:`codes_kernel`.

    Returns None when the column is not such a column or has more than
    :data:`KERNEL_MAX_UNIQUES` distinct strings (the caller then uses
    :func:`dictionary_codes`).
    """
    bufs = arrow_buffers(values)
    if bufs is None:
        return None
    offsets, data = bufs
    codes, starts, lengths = codes_kernel(offsets, data, KERNEL_MAX_UNIQUES)          # (n,), (k,), (k,)
    if len(codes) != len(offsets) - 1:
        return None
    uniques = [data[s: s + m].tobytes().decode("utf-8") for s, m in zip(starts.tolist(), lengths.tolist())]
    return codes, uniques


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


#: seconds this process has spent dictionary-encoding Arrow columns long enough for the kernel
_spent = [0.0]


def kernel_wanted(n: int) -> bool:
    """Whether an Arrow column of `n` rows goes to the compiled kernel (the ``strings`` backend decides).

    ``"numba"``: always (numba installed); ``"numpy"``: never; ``"auto"``:
    for columns of at least :data:`KERNEL_MIN_ROWS` rows once Arrow's
    dictionary encoding of such columns has taken :data:`AUTO_SECONDS` in
    this process (loading numba and the kernel costs about a second, more
    than a one-off fit saves).
    """
    backend = get_backend("strings")
    if backend == "numpy" or not numba_available():
        return False
    return backend == "numba" or (n >= KERNEL_MIN_ROWS and _spent[0] >= AUTO_SECONDS)


def _arrow_string_codes(values) -> tuple[np.ndarray, list] | None:
    """An Arrow-backed string column by the kernel or by Arrow's dictionary encoding (None: not Arrow)."""
    n = len(values)
    if kernel_wanted(n):
        fast = arrow_codes(values)
        if fast is not None:
            return fast
    start = time.perf_counter()
    out = dictionary_codes(values)
    if n >= KERNEL_MIN_ROWS:
        _spent[0] += time.perf_counter() - start
    return out


def string_codes(values) -> tuple[np.ndarray, list] | None:
    """``(codes (n,), distinct strings in order of first appearance)``, or None if `values` are not strings.

    Parameters
    ----------
    values : pandas.Series, pandas array or 1-d numpy array
        A pandas string column (``str``, ``string``, Arrow strings), an
        ``object`` column whose present cells are all ``str``, or a numpy
        unicode array.

    Returns
    -------
    codes : integer ndarray of shape (n,)
        Index into the distinct strings; ``-1`` where the cell is missing
        (None, NaN, pd.NA). Its integer width depends on the path (int32
        from Arrow, int64 otherwise): callers index a lookup table with it.
    uniques : list of str
        The distinct strings, in order of first appearance.

    None when the column holds anything but strings (and missing cells), or
    is a categorical (whose codes the caller reads directly).
    """
    dtype = getattr(values, "dtype", None)
    if dtype is None:
        return None
    if getattr(dtype, "kind", None) == "U":
        return reference_codes(np.asarray(values, dtype=object))
    if _is_string_dtype(dtype):
        if getattr(dtype, "storage", "pyarrow") == "pyarrow":                         # not Python objects
            out = _arrow_string_codes(values)
            if out is not None:
                return out
        return reference_codes(values)
    if not isinstance(dtype, np.dtype) or dtype.kind != "O":
        return None
    import pandas as pd  # optional heavy dependency, imported on use

    if pd.api.types.infer_dtype(values, skipna=True) != "string":                    # one C pass over the cells
        return None
    return reference_codes(values)
