"""Short strings as words: codes of an Arrow string column with few distinct values, in numpy alone.

A string of at most 15 UTF-8 bytes is read from the column's byte buffer as
one or two 64-bit words (an unaligned strided view, gathered at the rows'
offsets; no numba, no Python object per row). The bytes past the string's
end are shifted out and its length is stored in the freed low byte, so two
strings give equal keys exactly when they are equal (:func:`row_keys`).
The distinct keys of the leading :data:`PROBE_ROWS` rows are the
candidate strings (decoded from one row each); every row is then coded by
one vectorised compare per candidate, and the column is accepted only when
every present row matched one — otherwise (a longer string, more than
:data:`MAX_WORD_UNIQUES` candidates, a string first met after the probe)
:func:`word_codes` returns None and the caller hashes the column.

It gives ``pandas.factorize``'s grouping (equal strings, equal codes;
missing cells ``-1``) on sliced and chunked arrays with int32 or int64
offsets, and numbers the strings as :func:`causalnet.learning.strings.string_codes`
does (`seeds` first, then the others sorted or in order of first
appearance).

Symbols: ``n`` rows, ``k`` distinct strings.

Examples
--------
>>> import pandas as pd
>>> codes, uniques, small = word_codes(pd.Series(["lo", "hi", "lo", None], dtype="str"), sort=True)
>>> codes.tolist(), uniques, small
([1, 0, 1, -1], ['hi', 'lo'], None)
"""

from __future__ import annotations

import numpy as np

__all__ = ["word_codes", "row_keys", "MAX_WORD_BYTES", "MAX_WORD_UNIQUES", "PROBE_ROWS"]

#: Strings longer than this many UTF-8 bytes send the column to the hash path.
MAX_WORD_BYTES = 15
#: More distinct strings than this among the probed rows send the column to the hash path (one pass each).
MAX_WORD_UNIQUES = 12
#: The candidate strings are the distinct strings of this many leading rows.
PROBE_ROWS = 4096

_PAD = np.zeros(16, np.uint8)


def _buffers(chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(offsets (n+1,) int64-able, padded bytes, valid (n,) bool or None)`` of one Arrow string array."""
    import pyarrow as pa  # present whenever a column is stored in Arrow

    n = len(chunk)
    valid_buf, off_buf, data_buf = chunk.buffers()
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=width)[chunk.offset: chunk.offset + n + 1]                  # (n+1,)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else _PAD[:0]
    padded = np.concatenate([data[: int(offsets[-1])], _PAD])                      # 16 spare bytes: no bounds test
    valid = None
    if chunk.null_count:
        bits = np.frombuffer(valid_buf, np.uint8)
        valid = np.unpackbits(bits, bitorder="little")[chunk.offset: chunk.offset + n].view(bool)          # (n,)
    return offsets, padded, valid


def _shifted(words: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """`words` (n,) uint64 with only their low `keep` (0..8) bytes, moved to the top; in place.

    Two shifts of at most 32 bits each: numpy's shift by 64 is undefined.
    """
    half = ((8 - keep) * 4).view(np.uint64)                                                         # (n,)
    words <<= half
    words <<= half
    return words


def row_keys(chunk) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """``(key1, key2, valid)`` of one Arrow string array: equal keys exactly for equal strings.

    Parameters
    ----------
    chunk : pyarrow.StringArray or LargeStringArray

    Returns
    -------
    key1 : uint64 ndarray of shape (n,)
        The first ``min(m, 8)`` bytes of a string of ``m`` bytes, at the top
        of the word; for ``m <= 7`` the length in the low byte.
    key2 : uint64 ndarray of shape (n,) or None
        Bytes 8 to ``m - 1`` at the top and ``m`` in the low byte; None when
        no string has over 7 bytes.
    valid : bool ndarray of shape (n,) or None
        False where the cell is missing (None when none is); the keys of a
        missing cell are meaningless.

    None when a present string has more than :data:`MAX_WORD_BYTES` bytes.
    """
    offsets, padded, valid = _buffers(chunk)
    n = len(offsets) - 1
    starts = offsets[:-1].astype(np.int64, copy=False)                                              # (n,)
    lens = (offsets[1:] - offsets[:-1]).astype(np.int64, copy=False)                                # (n,)
    if valid is not None:
        lens = np.where(valid, lens, 0)                                     # a missing cell's bytes are ignored
    longest = int(lens.max()) if n else 0
    if longest > MAX_WORD_BYTES:
        return None
    win = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))       # a word at every byte
    size = lens.view(np.uint64)
    if longest <= 7:
        key1 = _shifted(np.take(win, starts), lens)                                                 # (n,)
        key1 |= size
        return key1, None, valid
    key1 = _shifted(np.take(win, starts), np.minimum(lens, 8))                                      # (n,)
    key2 = _shifted(np.take(win, starts + 8), np.maximum(lens - 8, 0))                            # (n,)
    key2 |= size
    return key1, key2, valid


def _column_keys(arr) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """:func:`row_keys` of an Arrow array or chunked array, the chunks' keys joined (None as there)."""
    import pyarrow as pa  # present whenever a column is stored in Arrow

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    if len(chunks) == 1:
        return row_keys(chunks[0])
    parts = [row_keys(c) for c in chunks if len(c)]
    if any(p is None for p in parts):
        return None
    if not parts:
        return np.zeros(0, np.uint64), None, None
    n_rows = [len(p[0]) for p in parts]
    key2 = None
    if any(p[1] is not None for p in parts):                          # every chunk's keys in the two-word form
        parts = [p if p[1] is not None else (p[0] & ~_LOW, p[0] & _LOW, p[2]) for p in parts]
        key2 = np.concatenate([p[1] for p in parts])                                                  # (n,)
    key1 = np.concatenate([p[0] for p in parts])                                                      # (n,)
    valid = None
    if any(p[2] is not None for p in parts):
        valid = np.concatenate([p[2] if p[2] is not None else np.ones(m, bool) for p, m in zip(parts, n_rows)])
    return key1, key2, valid


#: the low byte of a key: a short string's length (its bytes sit above it)
_LOW = np.uint64(0xFF)


def _candidates(key1, key2, valid) -> tuple[np.ndarray, np.ndarray | None, np.ndarray] | None:
    """The distinct keys of the leading rows and the row where each is first met, in row order."""
    head = slice(0, PROBE_ROWS)
    k1 = key1[head]
    rows = np.arange(len(k1))
    if valid is not None:
        rows = rows[valid[head]]
        k1 = k1[rows]
    if key2 is None:
        distinct = np.unique(k1)                                                                      # (k,)
        if len(distinct) > MAX_WORD_UNIQUES:
            return None
        first = np.array([np.argmax(k1 == u) for u in distinct], dtype=np.int64)         # each one's first row
    else:
        pairs = np.stack([k1, key2[head][rows]], axis=1)                                              # (p, 2)
        _, first = np.unique(pairs, axis=0, return_index=True)                                       # (k,)
    if len(first) > MAX_WORD_UNIQUES:
        return None
    first = np.sort(first)
    return key1[rows[first]], None if key2 is None else key2[rows[first]], rows[first]


def word_codes(values, *, seeds=None, sort: bool = False) -> tuple[np.ndarray, list, np.ndarray | None] | None:
    """Codes of an Arrow-backed string column of few short distinct strings, by word compares.

    Parameters
    ----------
    values : pandas Series or array stored in Arrow strings, or a pyarrow (chunked) string array
    seeds : sequence of str, optional
        Distinct strings numbered ``0..K-1`` whether they occur or not; the
        others follow them.
    sort : bool
        Number the strings that are not seeds in sorted order (else in
        order of first appearance).

    Returns
    -------
    codes : int64 ndarray of shape (n,)
        ``-1`` where the cell is missing.
    uniques : list of str
        The seeds, then the other distinct strings.
    small : uint8 ndarray of shape (n,) or None
        The codes again, written by the same passes; None when a cell is
        missing.

    None when the column is not Arrow strings, holds a string over
    :data:`MAX_WORD_BYTES` bytes, has more than :data:`MAX_WORD_UNIQUES`
    distinct strings in its first :data:`PROBE_ROWS` rows or a string
    first met after them, or when `seeds` and the strings number over 255.
    """
    arr = _arrow_strings(values)
    if arr is None:
        return None
    keys = _column_keys(arr)
    if keys is None:
        return None
    key1, key2, valid = keys
    n = len(key1)
    present = n if valid is None else int(np.count_nonzero(valid))
    found = _candidates(key1, key2, valid) if present else (key1[:0], None, np.zeros(0, np.int64))
    if found is None:
        return None
    cand1, cand2, rows = found
    strings = [arr[int(r)].as_py() for r in rows]                                            # k strings decoded
    head = list(seeds) if seeds is not None else []
    if len(set(head)) != len(head):
        return None
    known = set(head)
    rest = [s for s in strings if s not in known]
    uniques = head + (sorted(rest) if sort else rest)
    if len(uniques) > 255:
        return None
    where = {s: i for i, s in enumerate(uniques)}
    small = np.zeros(n, np.uint8)                                                                          # (n,)
    hits = 0
    for j, text in enumerate(strings):
        eq = key1 == cand1[j]                                                                              # (n,)
        if key2 is not None:
            eq &= key2 == cand2[j]
        if valid is not None:
            eq &= valid
        hits += int(np.count_nonzero(eq))
        if where[text]:
            small += eq.view(np.uint8) * np.uint8(where[text])
    if hits != present:                                                 # a string the probe did not meet
        return None
    codes = small.astype(np.int64)                                                                         # (n,)
    if valid is None:
        return codes, uniques, small
    codes[~valid] = -1
    return codes, uniques, None


def _arrow_strings(values):
    """`values` as a pyarrow string (chunked) array, or None when it is not one."""
    import pyarrow as pa  # present whenever a column is stored in Arrow

    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        array = getattr(values, "array", values)
        to_arrow = getattr(array, "__arrow_array__", None)
        if to_arrow is None:
            return None
        values = to_arrow()
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return None
    return values
