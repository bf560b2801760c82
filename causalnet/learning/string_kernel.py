"""The compiled kernel that codes an Arrow string column: one pass over its offsets and bytes, zero-copy.

:func:`codes_kernel` numbers the distinct strings of a column as first met
(or, with a probe, the first rows' strings in sorted order) and writes each
row's code as one byte: the column's ``narrow`` codes
(:attr:`causalnet.learning.data.DiscreteColumn.narrow`), with
:data:`MISSING_BYTE` where a cell is missing; :mod:`causalnet.learning.strings`
holds the state between chunks and widens the codes where a caller needs
int64 ones. Split from that module so the compiled loop and its helpers
read as one unit.

Symbols: ``n`` rows, ``k`` distinct strings, at most the state's capacity ``cap``
(below :data:`MISSING_BYTE`; :mod:`~causalnet.learning.strings` gives it
:data:`~causalnet.learning.strings.KERNEL_MAX_UNIQUES`).
"""

from __future__ import annotations

import numpy as np

from ..runtime import jit

__all__ = ["codes_kernel", "remap_kernel", "MISSING_BYTE"]

#: the byte code of a missing cell (the kernel's capacity keeps every string's code below it)
MISSING_BYTE = 255

_njit = jit(nogil=True)

#: multiplier of the kernel's hash (Fibonacci hashing); slots are the top bits of ``(word ^ length) * _GOLDEN``
_GOLDEN = 0x9E3779B97F4A7C15


def _tail_equal(win, s, m, last, uwords, p):  # pragma: no cover - compiled (inlined into codes_kernel)
    """Whether the string of `m` > 8 bytes at `s` has the last word `last` and the middle words ``uwords[p:]``."""
    if win[s + m - 8] != last:
        return False
    for t in range(1, (m - 1) // 8):
        if win[s + 8 * t] != uwords[p + t - 1]:
            return False
    return True


_tail_equal = jit(inline="always")(_tail_equal)


#: ``_SHORT_MASKS[m]``: the low `m` bytes of a word (m = 0..7), for the kernel's short-string keys
_SHORT_MASKS = np.array([(1 << (8 * m)) - 1 for m in range(8)], dtype=np.uint64)
#: the kernel's cache of short strings has ``2**_SHORT_BITS`` slots (9 kB of keys and codes: it stays in L1)
_SHORT_BITS = 10
#: marks a short-string key (bit 59: above the 7 bytes and the 3-bit length), so a key is never 0 (an empty slot)
_SHORT_FLAG = 1 << 59


# Long by design: one pass whose state (the distinct strings so far) lives in a few small arrays.
@_njit
def codes_kernel(offsets, win, data, nbytes, valid, vbit, row0, small, ukey, ulen, ulast, uwpos, uwords, urow, k,
                 table, probe):  # pragma: no cover - compiled
    """Codes of the strings ``data[offsets[i]:offsets[i+1]]``: distinct strings numbered as first met.

    A string of fewer than 8 bytes is looked up in a direct-mapped cache:
    its first 8 bytes are read as one unaligned word (``win`` is the byte
    buffer viewed as unaligned 64-bit words, one per byte position), masked
    to its length, and the length and a flag are put in the top byte — a
    key that equals another exactly when the strings are equal — so a hit
    costs one load, one multiply-shift hash and one compare. Every other
    string (8 bytes or more, within 8 bytes of the buffer's end, or missed
    by the cache) goes through :func:`_lookup`: the word and the length pick
    a slot of an open-addressing hash table of the distinct strings and a
    match is confirmed word by word (about ``1 + (m - 1) // 8`` compares
    for ``m`` bytes); a short string found or entered there is then cached.

    With ``probe > 0`` the first `probe` rows are encoded, the strings met
    there (those past the first `k`) are renumbered in sorted order (their
    UTF-8 bytes compared: the order of Python's ``sorted``), and the other
    rows follow: their codes need no renumbering unless a new string turns
    up after the probe.

    Parameters
    ----------
    offsets : int32 or int64 array of shape (n+1,)
    win : uint64 array of shape (nbytes-7,), byte strides
    data : uint8 array of shape (nbytes,)
        The UTF-8 bytes of the column (``win`` views them).
    nbytes : int
    valid : uint8 array
        Arrow's validity bitmap (empty when no cell is missing); row ``i``'s
        bit is ``vbit + i``.
    vbit : int
    row0 : int
        The row number of ``offsets[0]`` in the column (chunked columns).
    small : uint8 array of shape (n,)
        Receives the codes (:data:`MISSING_BYTE` where missing): the
        column's ``narrow`` codes, the only per-row output (int64 codes,
        where a caller needs them, are these widened).
    ukey, ulen, ulast, uwpos, uwords, urow : the distinct strings so far
        First word, length, last 8 bytes (strings over 8 bytes), the range
        of their middle words in ``uwords`` (``uwpos`` of shape (cap+1,)),
        and the row where each was first met (``-1`` for a seed);
        capacity ``cap = len(ukey)`` (at most 255: codes are bytes, and
        :data:`MISSING_BYTE` marks a missing cell), the first `k` filled.
    k : int
    table : int64 array, length a power of two >= 2 * cap
        The hash table (``-1`` empty); rebuilt here from the first `k` strings.
    probe : int
        Rows encoded before the new strings are sorted (0: no sorting).

    Returns
    -------
    status : int
        ``0`` done, ``1`` more than ``cap`` distinct strings (or their bytes
        overflow ``uwords``): `small` is then incomplete.
    k : int
        The number of distinct strings now.
    missing : int
        The number of missing cells.
    """
    n = len(offsets) - 1
    shift = _fill_table(ukey, ulen, k, table)
    cshift = np.uint64(64 - _SHORT_BITS)
    ckey = np.zeros(1 << _SHORT_BITS, np.uint64)                                            # 0: an empty slot
    ccode = np.zeros(1 << _SHORT_BITS, np.uint8)
    kk = np.array([k])
    has_valid = len(valid) > 0
    missing = 0
    end = np.uint64(nbytes)
    stop = min(probe, n) if probe > 0 else n
    for phase in range(2):                                      # rows 0..stop-1, then (after sorting) the rest
        if phase:
            if probe <= 0:
                break
            _sort_new(offsets, data, row0, k, kk[0], ukey, ulen, ulast, uwpos, uwords, urow, small[:stop])
            _fill_table(ukey, ulen, kk[0], table)
            ckey[:] = 0
        first, last = (0, stop) if phase == 0 else (stop, n)
        i, last = np.uint64(first), np.uint64(last)          # unsigned rows: no negative-index arithmetic
        one = np.uint64(1)
        while i < last:
            s = np.uint64(offsets[i])
            while i < last:                                  # the cache's hits: an inner loop with nothing else live
                e = np.uint64(offsets[i + one])
                m = e - s
                if has_valid:
                    bit = vbit + np.int64(i)
                    if not (valid[bit >> 3] >> (bit & 7)) & 1:
                        break
                if m >= np.uint64(8) or s + np.uint64(8) > end:
                    break
                key = (win[s] & _SHORT_MASKS[m]) | (m << np.uint64(56)) | np.uint64(_SHORT_FLAG)
                slot = (key * np.uint64(_GOLDEN)) >> cshift
                if ckey[slot] != key:
                    break
                small[i] = ccode[slot]
                s = e
                i += one
            if i >= last:
                break
            e = np.uint64(offsets[i + one])                  # row i: missing, long, at the buffer's end, or a miss
            m = e - s
            if has_valid:
                bit = vbit + np.int64(i)
                if not (valid[bit >> 3] >> (bit & 7)) & 1:
                    small[i] = MISSING_BYTE
                    missing += 1
                    i += one
                    continue
            j = _lookup(win, data, nbytes, np.int64(s), np.int64(m), row0 + np.int64(i), shift, ukey, ulen, ulast,
                        uwpos, uwords, urow, kk, table)
            if j < 0:
                return 1, kk[0], missing
            if m < np.uint64(8):                                        # cache it (a taken slot stays as it is)
                key = ukey[j] | (m << np.uint64(56)) | np.uint64(_SHORT_FLAG)
                slot = (key * np.uint64(_GOLDEN)) >> cshift
                if ckey[slot] == np.uint64(0):
                    ckey[slot] = key
                    ccode[slot] = j
            small[i] = j
            i += one
    return 0, kk[0], missing


@_njit
def _fill_table(ukey, ulen, k, table):  # pragma: no cover - compiled
    """Enter the first `k` distinct strings in the empty-first hash `table`; returns the hash's shift (64 - bits)."""
    size = len(table)
    bits = 0
    while (1 << bits) < size:
        bits += 1
    shift = np.uint64(64 - bits)
    table[:] = -1
    for j in range(k):
        slot = np.int64(((ukey[j] ^ np.uint64(ulen[j])) * np.uint64(_GOLDEN)) >> shift)
        while table[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        table[slot] = j
    return shift


@_njit
def _bytes_less(data, p, m, q, r):  # pragma: no cover - compiled
    """Whether the `m` bytes at `p` sort before the `r` bytes at `q` (bytewise, a prefix first)."""
    for t in range(min(m, r)):
        if data[p + t] != data[q + t]:
            return data[p + t] < data[q + t]
    return m < r


@_njit
def _sort_new(offsets, data, row0, k0, k, ukey, ulen, ulast, uwpos, uwords, urow,
              small):  # pragma: no cover - compiled
    """Renumber the distinct strings ``k0..k-1`` (all first met in this array) in sorted order, and `small` (the
    rows encoded so far) with them; every array of the state is permuted alike."""
    order = np.arange(k0, k)                                                          # insertion sort (k <= cap)
    for a in range(1, k - k0):
        j = order[a]
        pj, mj = np.int64(offsets[urow[j] - row0]), ulen[j]
        b = a
        while b > 0:
            i = order[b - 1]
            if not _bytes_less(data, pj, mj, np.int64(offsets[urow[i] - row0]), ulen[i]):
                break
            order[b] = i
            b -= 1
        order[b] = j
    lut = np.arange(k)
    for t in range(k - k0):
        lut[order[t]] = k0 + t
    key, length, last, row = ukey[k0:k].copy(), ulen[k0:k].copy(), ulast[k0:k].copy(), urow[k0:k].copy()
    pos, words = uwpos[k0:k + 1].copy(), uwords[uwpos[k0]:uwpos[k]].copy()
    for t in range(k - k0):
        j = order[t] - k0
        ukey[k0 + t], ulen[k0 + t], ulast[k0 + t], urow[k0 + t] = key[j], length[j], last[j], row[j]
        w = pos[j + 1] - pos[j]
        uwords[uwpos[k0 + t]: uwpos[k0 + t] + w] = words[pos[j] - pos[0]: pos[j + 1] - pos[0]]
        uwpos[k0 + t + 1] = uwpos[k0 + t] + w
    for i in range(len(small)):
        c = small[i]
        if k0 <= c < MISSING_BYTE:
            small[i] = lut[c]


@_njit
def _lookup(win, data, nbytes, s, m, row, shift, ukey, ulen, ulast, uwpos, uwords, urow, kk,
            table):  # pragma: no cover - compiled
    """The code of the string of `m` bytes at `s` by the hash table of the distinct strings (entered if new).

    Returns -1 when the string is new and the state is full.
    """
    if s + 8 <= nbytes:
        w = win[s]
    else:                                                    # the last 7 bytes of the buffer: one byte at a time
        w = np.uint64(0)
        for b in range(min(m, nbytes - s)):
            w |= np.uint64(data[s + b]) << np.uint64(8 * b)
    if m < 8:
        w &= (np.uint64(1) << np.uint64(8 * m)) - np.uint64(1)
    slot = np.int64(((w ^ np.uint64(m)) * np.uint64(_GOLDEN)) >> shift)
    j = table[slot]
    if j >= 0 and ukey[j] == w and ulen[j] == m and (m <= 8 or _tail_equal(win, s, m, ulast[j], uwords, uwpos[j])):
        return j
    return _probe(win, s, m, w, slot, row, ukey, ulen, ulast, uwpos, uwords, urow, kk, table)


@_njit
def _probe(win, s, m, w, slot, row, ukey, ulen, ulast, uwpos, uwords, urow, kk, table):  # pragma: no cover
    """The code of the string (`s`, `m`, first word `w`) past its first slot: probe on, or enter it as new.

    Returns -1 when the string is new and the state is full.
    """
    size = len(table)
    while True:
        j = table[slot]
        if j < 0:
            break
        if ukey[j] == w and ulen[j] == m and (m <= 8 or _tail_equal(win, s, m, ulast[j], uwords, uwpos[j])):
            return j
        slot = (slot + 1) & (size - 1)
    k = kk[0]
    words = max((m - 1) // 8 - 1, 0)
    if k == len(ukey) or uwpos[k] + words > len(uwords):
        return -1
    ukey[k] = w
    ulen[k] = m
    urow[k] = row
    p = uwpos[k]
    if m > 8:
        ulast[k] = win[s + m - 8]
        for t in range(1, (m - 1) // 8):
            uwords[p + t - 1] = win[s + 8 * t]
    uwpos[k + 1] = p + words
    table[slot] = k
    kk[0] = k + 1
    return k


@_njit
def remap_kernel(small, lut):  # pragma: no cover - compiled
    """``small[i] = lut[small[i]]`` in place, a missing cell's :data:`MISSING_BYTE` kept (uint8 (n,), lut (k,))."""
    for i in range(len(small)):
        c = small[i]
        if c != MISSING_BYTE:
            small[i] = lut[c]
