"""Short strings as words: codes of an Arrow string column with few distinct values, in numpy alone.

A string of at most 15 UTF-8 bytes is read from the column's byte buffer as
one or two 64-bit words (an unaligned strided view, gathered at the rows'
offsets; no numba, no Python object per row). The bytes past the string's
end are masked out — and when the column holds a NUL byte, its length is
stored in a freed byte — so two strings give equal keys exactly when they
are equal (:func:`row_keys`).
The distinct strings are found in order of first appearance, one
vectorised compare of every row's key per distinct string (the first row
no string holds yet names the next one, decoded from that row alone), so a
column of ``k`` distinct strings costs ``k`` passes over its keys; past
:data:`MAX_WORD_UNIQUES` distinct strings, or with a string longer than
:data:`MAX_WORD_BYTES` bytes, :func:`word_codes` returns None and the
caller hashes the column.

It gives ``pandas.factorize``'s grouping (equal strings, equal codes;
missing cells ``-1``) on sliced and chunked arrays with int32 or int64
offsets, and numbers the strings as :func:`causalnet.learning.strings.string_codes`
does (`seeds` first, then the others sorted or in order of first
appearance).

Symbols: ``n`` rows, ``k`` distinct strings.

Examples
--------
An Arrow string column (pandas' ``str`` dtype stores its strings in Arrow when
``pyarrow`` is installed; without it there are no Arrow columns to read):

>>> import pyarrow as pa
>>> codes, uniques, small = word_codes(pa.array(["lo", "hi", "lo", None]), sort=True)
>>> codes.tolist(), uniques, small
([1, 0, 1, -1], ['hi', 'lo'], None)
"""

from __future__ import annotations

import numpy as np

__all__ = ["word_codes", "row_keys", "arrow_strings", "MAX_WORD_BYTES", "MAX_WORD_UNIQUES", "BLOCK_ROWS"]

#: Strings longer than this many UTF-8 bytes send the column to the hash path.
MAX_WORD_BYTES = 15
#: More distinct strings than this send the column to the hash path (each costs one pass over the keys).
MAX_WORD_UNIQUES = 16

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


def _words_at(padded: np.ndarray, starts: np.ndarray, skip: int = 0) -> np.ndarray:
    """The 64-bit little-endian words at the byte positions ``starts + skip`` (n,) of `padded`, block by block.

    ``np.take`` copies a strided source whole (a word at every byte) before
    gathering; a block of :data:`BLOCK_ROWS` short strings spans about
    100 kB, so the copy of its words stays in cache (0.31 ms for an alarm
    column of 10^5 rows against 0.40 ms for one take over the column).
    `starts` must be non-decreasing (Arrow offsets are), so every index is
    inside its block's window.
    """
    out = np.empty(len(starts), np.uint64)                                                          # (n,)
    for i0 in range(0, len(starts), BLOCK_ROWS):
        rows = starts[i0: i0 + BLOCK_ROWS]
        first = int(rows[0]) + skip
        win = np.ndarray((int(rows[-1]) + skip - first + 1,), dtype="<u8", buffer=padded, offset=first,
                         strides=(1,))                                                      # a word at every byte
        np.take(win, rows - rows[0], out=out[i0: i0 + len(rows)], mode="clip")        # "raise" buffers `out`
    return out


#: Rows gathered per block by :func:`_words_at`.
BLOCK_ROWS = 16384


def row_keys(chunk) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """``(key1, key2, valid)`` of one Arrow string array: equal keys exactly for equal strings.

    When no byte of the strings is NUL, a string of ``m`` bytes keeps its
    first ``min(m, 8)`` bytes in `key1` and the rest in `key2`, zeros above
    them (its length is where the non-zero bytes end). Otherwise the bytes
    sit at the top of the words and the length in the freed low byte
    (``m <= 7`` in `key1`, any ``m`` in `key2`).

    Parameters
    ----------
    chunk : pyarrow.StringArray or LargeStringArray

    Returns
    -------
    key1 : uint64 ndarray of shape (n,)
    key2 : uint64 ndarray of shape (n,) or None
        None when every string fits `key1` alone.
    valid : bool ndarray of shape (n,) or None
        False where the cell is missing (None when none is); a missing
        cell's keys are the empty string's.

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
    used = padded[int(offsets[0]): int(offsets[-1])] if n else padded[:0]
    if np.count_nonzero(used) == len(used):                                      # no NUL byte: mask, no length
        key1 = _words_at(padded, starts)                                                              # (n,)
        key1 &= _MASKS.take(np.minimum(lens, 8) if longest > 8 else lens)
        if longest <= 8:
            return key1, None, valid
        key2 = _words_at(padded, starts, 8)                                                           # (n,)
        key2 &= _MASKS.take(np.clip(lens - 8, 0, 8))
        return key1, key2, valid
    size = lens.view(np.uint64)
    if longest <= 7:
        key1 = _shifted(_words_at(padded, starts), lens)                                            # (n,)
        key1 |= size
        return key1, None, valid
    key1 = _shifted(_words_at(padded, starts), np.minimum(lens, 8))                                 # (n,)
    key2 = _shifted(_words_at(padded, starts, 8), np.maximum(lens - 8, 0))                        # (n,)
    key2 |= size
    return key1, key2, valid


#: ``_MASKS[m]``: the low `m` bytes of a word (m = 0..8)
_MASKS = np.array([(1 << (8 * m)) - 1 for m in range(9)], dtype=np.uint64)


def _column_keys(arr) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """:func:`row_keys` of an Arrow array or chunked array (chunks joined first: one key scheme for all rows)."""
    import pyarrow as pa  # present whenever a column is stored in Arrow

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return row_keys(arr)


def _classes(key1, key2, valid) -> tuple[list, list] | None:
    """The rows' classes of equal keys, found in order of first appearance: ``(first rows, masks (n,) bool)``.

    Each round takes the first row no class holds yet and compares every row
    with it (one vectorised pass); None past :data:`MAX_WORD_UNIQUES` classes.
    """
    taken = np.zeros(len(key1), bool) if valid is None else ~valid                                       # (n,)
    firsts, masks = [], []
    row = int(taken.argmin()) if len(taken) else 0
    while len(taken) and not taken[row]:
        if len(firsts) == MAX_WORD_UNIQUES:
            return None
        eq = key1 == key1[row]                                                                              # (n,)
        if key2 is not None:
            eq &= key2 == key2[row]
        if valid is not None:
            eq &= valid                                                  # a missing cell's keys are the empty string's
        taken |= eq
        firsts.append(row)
        masks.append(eq)
        row = int(taken.argmin())
    return firsts, masks


def word_codes(values, *, seeds=None, sort: bool = False) -> tuple[np.ndarray | None, list, np.ndarray | None] | None:
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
    codes : int64 ndarray of shape (n,), or None
        ``-1`` where the cell is missing; None when no cell is (`small`
        widened are the codes then, for the caller to make if needed).
    uniques : list of str
        The seeds, then the other distinct strings.
    small : uint8 ndarray of shape (n,) or None
        The codes as bytes, written by the same passes; None when a cell is
        missing.

    None when the column is not Arrow strings, holds a string over
    :data:`MAX_WORD_BYTES` bytes or more than :data:`MAX_WORD_UNIQUES`
    distinct strings, or when `seeds` and the strings number over 255.
    """
    arr = arrow_strings(values)
    if arr is None:
        return None
    keys = _column_keys(arr)
    if keys is None:
        return None
    key1, key2, valid = keys
    found = _classes(key1, key2, valid)
    if found is None:
        return None
    firsts, masks = found
    strings = [arr[r].as_py() for r in firsts]                                                 # k strings decoded
    head = list(seeds) if seeds is not None else []
    if len(set(head)) != len(head):
        return None
    known = set(head)
    rest = [s for s in strings if s not in known]
    uniques = head + (sorted(rest) if sort else rest)
    if len(uniques) > 255:
        return None
    where = {s: i for i, s in enumerate(uniques)}
    small = np.zeros(len(key1), np.uint8)                                                                  # (n,)
    for text, eq in zip(strings, masks):
        if where[text]:
            small += eq.view(np.uint8) * np.uint8(where[text])
    if valid is None:
        return None, uniques, small
    codes = small.astype(np.int64)                                                                         # (n,)
    codes[~valid] = -1
    return codes, uniques, None


def arrow_strings(values):
    """`values` (a pandas Series or array, or a pyarrow array or chunked array) as a pyarrow string (chunked)
    array, or None when it is not one (not Arrow-backed, or not ``string`` / ``large_string``)."""
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
