"""The common BIF dialect in whole-block passes: the quick path of :func:`causalnet.io.bif.read_bif`.

Every file of the bnlearn repository (and every file :func:`~causalnet.io.bif.write_bif`
writes without quoted names or latent nodes) uses a plain subset of BIF: bare names (``Asy/Patch``
and ``<5`` included), no comments, no ``property`` or ``default`` lines, each ``variable`` block a single
``type discrete`` line, each ``probability`` block either one ``table`` line or one row
per parent configuration. :func:`scan_bif` reads that subset with string methods (the text is cut
at its braces, no regular expression is compiled) and no Python work per table entry: a block's body is split into tokens
once (``str.replace`` and ``str.split``, in C), its numbers are converted by one
``np.array(..., dtype=float64)`` (the same conversion as ``float``, so the tables are
bit for bit those of the token parser), its parent states mapped to indices by
``dict.__getitem__`` over the column (``np.fromiter``), and the row positions and
their coverage are checked with array operations.

Anything else — a comment, a quote, a property, a ``default`` row, a missing or repeated
row, a malformed number, a row that does not sum to 1 within the tolerance, an unknown
name — makes :func:`scan_bif` return None, and the caller runs the token-by-token
parser of :mod:`causalnet.io.bif`, which accepts the whole format and names the line
and column of every error. The quick path therefore never decides what an error says,
and what it accepts it reads exactly as the token parser does (a property test
compares the two on generated files).

Symbols: ``R`` rows of a block, ``m`` parents, ``K`` child states.

Examples
--------
>>> parts = scan_bif('''
... variable Rain { type discrete [ 2 ] { no, yes }; }
... probability ( Rain ) { table 0.8, 0.2; }
... ''', 1e-6)
>>> order, states, parents, tables = parts
>>> order, states["Rain"], parents["Rain"], tables["Rain"].tolist()
(['Rain'], ['no', 'yes'], [], [0.8, 0.2])
>>> scan_bif("variable Rain { type discrete [ 2 ] { no, yes }; } // a comment", 1e-6) is None
True
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import CausalNetError
from ..mechanisms.tabular import TOL
from .tables import check_table_size, fix_rows

__all__ = ["scan_bif", "Parts"]

#: ``(order, states, parents, tables)``: what :func:`causalnet.io.tables.build_discrete_model` takes.
Parts = tuple[list, dict, dict, dict]

#: Characters a bare name never holds besides blanks and braces (as the token parser's names, in a text
#: without quotes or comments).
_NOT_IN_NAMES = frozenset("()[];|,")
#: What a plain probability is made of (no nan, inf, 1_0, comments).
_NUMBER_CHARS = b"0123456789.eE+-"


class _Unusual(CausalNetError):
    """The text leaves the common dialect: the token parser reads it (and reports any error)."""


def scan_bif(text: str, tol: float) -> Parts | None:
    """The parts of a BIF text in the common dialect, or None when the text leaves it.

    Parameters
    ----------
    text : str
        The whole file.
    tol : float
        Row-sum tolerance, as :func:`causalnet.io.tables.fix_rows` takes it.

    Returns
    -------
    (order, states, parents, tables) or None
        Variables in file order; their state names; their parents in header
        order; tables of shape ``(*parent_cards, K)``, rows within the CPT
        tolerance kept bit for bit and the others rescaled. None when the text
        has anything :func:`causalnet.io.bif.read_bif`'s token parser must read
        (including every error).
    """
    if '"' in text or "//" in text or "/*" in text:   # quotes and comments: the token parser
        return None
    try:
        order, states, heads = _blocks(text)
        check_table_size([max(map(len, states.values()))], "the states of a variable")   # the largest passes: all do
        parents, tables = _tables(heads, states, tol)
    except CausalNetError:          # _Unusual, or a limit the token parser reports with the line
        return None
    if len(parents) != len(order):                    # a variable without a probability block
        return None
    return order, states, parents, tables


def _blocks(text: str) -> tuple[list, dict, list]:
    """Variables in order, their states, and ``(header names, body)`` of each probability block.

    The text is cut at every ``}`` (in C): a network block is one piece (``network [NAME] {`` and blanks),
    a probability block one (``probability ( names ) {`` and its body, which holds no brace), a variable
    block two (``variable NAME { type discrete [ k ] { states`` and ``;`` between blanks); whatever is
    left after the last brace is blank.
    """
    pieces = text.split("}")
    if pieces[-1].strip():
        raise _Unusual
    order: list = []
    states: dict = {}
    heads: list = []
    i, n = 0, len(pieces) - 1
    while i < n:
        head, brace, body = pieces[i].partition("{")
        words = head.split()
        if not brace or not words:
            raise _Unusual
        if words[0] == "probability":
            inside = head.strip()[len("probability"):].lstrip()
            if "{" in body or not (inside[:1] == "(" and inside[-1:] == ")") or "(" in inside[1:-1] \
                    or ")" in inside[1:-1] or not _NOT_IN_NAMES.isdisjoint(inside[1:-1].replace(",", "").replace("|", "")):
                raise _Unusual
            heads.append((inside[1:-1].replace(",", " ").replace("|", " ").split(), body))
            i += 1
        elif words[0] == "variable" and len(words) == 2 and i + 1 < n:
            name = words[1]
            decl, brace, names = body.partition("{")
            decl = decl.replace("[", " [ ").replace("]", " ] ").split()
            if (not brace or name in states or not _NOT_IN_NAMES.isdisjoint(name) or len(decl) != 5
                    or decl[:3] != ["type", "discrete", "["] or decl[4] != "]" or not decl[3].isdecimal()
                    or not _NOT_IN_NAMES.isdisjoint(names.replace(",", "")) or "{" in names
                    or pieces[i + 1].strip() not in ("", ";")):
                raise _Unusual
            names = names.replace(",", " ").split()
            if not (len(names) == int(decl[3]) >= 1) or len(set(names)) != len(names):
                raise _Unusual
            order.append(name)
            states[name] = names
            i += 2
        elif words[0] == "network" and len(words) <= 2 and not body.strip() and _NOT_IN_NAMES.isdisjoint(words[-1]):
            i += 1
        else:
            raise _Unusual
    if not order:
        raise _Unusual
    return order, states, heads


def _tables(heads: list, states: dict, tol: float) -> tuple[dict, dict]:
    """Parents and checked tables of the probability blocks; _Unusual on anything the token parser must see.

    Two passes: every block's body is laid out (list operations only) and its number tokens appended to
    one list; then the numbers of the whole file are converted and checked at once, every row sum taken
    by one ``np.add.reduceat``, and each table is a reshaped view of that one array.
    """
    parents: dict = {}
    blocks: list = []                                        # (child, pcards, K, row-major?, positions, offset)
    tokens: list = []                                        # every number of the file, in block order
    seglens: list = []                                       # one segment per contiguous row (or whole block)
    segblock: list = []                                      # the block of each segment
    for b, (names, body) in enumerate(heads):
        if not names or names[0] in parents or any(v not in states for v in names):
            raise _Unusual
        child, pnames = names[0], names[1:]
        if child in pnames or len(set(pnames)) != len(pnames):
            raise _Unusual
        pstates = [states[p] for p in pnames]
        k, pcards = len(states[child]), [len(x) for x in pstates]
        nums, row_major, positions = _layout(body, pstates, k)
        blocks.append((child, pcards, k, row_major, positions, len(tokens)))
        tokens += nums
        n_rows = len(nums) // k if row_major else 1          # a child-major 'table' line: one segment
        seglens += [k if row_major else len(nums)] * n_rows
        segblock += [b] * n_rows
        parents[child] = pnames
    vals = _floats(tokens)                                                        # (all numbers,)
    exact = _blocks_to_check(vals, seglens, segblock, blocks, tol)
    tables: dict = {}
    for b, (child, pcards, k, row_major, positions, at) in enumerate(blocks):
        n_cfg = math.prod(pcards)
        seg = vals[at:at + n_cfg * k]
        if not row_major:                                                         # (K, *pcards) -> (*pcards, K)
            table = np.ascontiguousarray(np.moveaxis(seg.reshape(k, *pcards), 0, -1))
        elif positions is None:                                                   # rows in C order
            table = seg.reshape(*pcards, k)
        elif isinstance(positions, str):                                          # rows in F order
            m = len(pcards)
            table = np.ascontiguousarray(seg.reshape(*pcards[::-1], k).transpose(*range(m - 1, -1, -1), m))
        else:
            table = np.empty((n_cfg, k))
            table[positions] = seg.reshape(n_cfg, k)
            table = table.reshape(*pcards, k)
        tables[child] = fix_rows(table, tol, _unusual) if b in exact else table
    return parents, tables


def _blocks_to_check(vals: np.ndarray, seglens: list, segblock: list, blocks: list, tol: float) -> set:
    """The blocks whose rows :func:`~causalnet.io.tables.fix_rows` must see (to rescale or to refuse).

    A row whose sum (taken here for the whole file at once, perhaps in another order than ``fix_rows``
    takes it: a few ulps apart) is within half the smaller of `tol` and the CPT tolerance of 1 is kept
    as it is by ``fix_rows`` too; every other row's block goes through ``fix_rows``, which decides.
    """
    cut = min(TOL, tol) / 2
    if not seglens or cut < 1e-12 or max(seglens) * 1e-15 > cut:     # too tight to decide from another sum
        return set(range(len(blocks)))
    starts = np.zeros(len(seglens), dtype=np.intp)                                # (segments,)
    np.cumsum(seglens[:-1], out=starts[1:])
    sums = np.add.reduceat(vals, starts)                                          # (segments,)
    near = np.abs(sums - 1.0) <= cut
    check = {b for b, (_, pcards, _, row_major, _, _) in enumerate(blocks) if not row_major and pcards}
    if not near.all():
        check.update(segblock[i] for i in np.flatnonzero(~near).tolist())
    return check


def _unusual(row: tuple, msg: str) -> None:
    raise _Unusual


def _layout(body: str, pstates: list, k: int) -> tuple[list, bool, np.ndarray | str | None]:
    """``(number tokens, row-major?, row positions)`` of one block body (a 'table' line or one row per configuration).

    Row-major numbers are ``(R, K)`` rows in the file's order; ``positions`` is None when the rows
    list the configurations in C order (last parent fastest), ``"F"`` in Fortran order (first parent
    fastest; bnlearn's files use both), else each row's C-order position. A 'table' line of a node with parents is child-major, ``(K, *parent_cards)``.
    """
    if "|" in body:
        raise _Unusual
    tokens = body.replace("(", " ( ").replace(")", " ) ").replace(";", " ; ").replace(",", " ").split()
    pcards = [len(x) for x in pstates]
    n_cfg = math.prod(pcards)
    if tokens[:1] == ["table"]:
        if tokens[-1] != ";" or len(tokens) - 2 != n_cfg * k:
            raise _Unusual
        return tokens[1:-1], not pcards, None
    m = len(pcards)
    width = m + k + 3                                                             # ( names ) numbers ;
    if not m or len(tokens) != n_cfg * width:
        raise _Unusual
    if not (tokens[0::width].count("(") == tokens[m + 1::width].count(")") == tokens[width - 1::width].count(";")
            == n_cfg):
        raise _Unusual
    columns = [tokens[1 + j::width] for j in range(m)]                            # m lists of (R,) state names
    if all(col == _run(names, stride, n_cfg) for col, names, stride in zip(columns, pstates, _strides(pcards))):
        positions = None
    elif all(col == _run(names, stride, n_cfg) for col, names, stride in zip(columns[::-1], pstates[::-1],
                                                                            _strides(pcards[::-1]))):
        positions = "F"
    else:
        positions = _positions(columns, pstates, pcards)
    nums = tokens[:]                                                              # drop the non-numbers, C-level
    for col in [width - 1, m + 1, *range(m, -1, -1)]:
        del nums[col::width]
        width -= 1
    return nums, True, positions


def _run(names: list, stride: int, n: int) -> list:
    """``(n,)`` state names of a parent whose state changes every `stride` rows (its column in C or F order)."""
    col: list = []
    for s in names:
        col += [s] * stride
    return col * (n // len(col))


def _positions(columns: list, pstates: list, pcards: list) -> np.ndarray:
    """Each row's C-order position, from its parents' state names; _Unusual on an unknown, repeated or missing row."""
    n_cfg = math.prod(pcards)
    flat = np.zeros(n_cfg, dtype=np.intp)                                         # (R,)
    for col, names, stride in zip(columns, pstates, _strides(pcards)):
        lookup = {s: i for i, s in enumerate(names)}
        try:
            flat += np.fromiter(map(lookup.__getitem__, col), dtype=np.intp, count=n_cfg) * stride
        except KeyError:
            raise _Unusual from None
    seen = np.zeros(n_cfg, dtype=bool)
    seen[flat] = True
    if not seen.all():                                                            # a row repeated, so one missing
        raise _Unusual
    return flat


def _strides(pcards: list) -> list:
    """C-order strides of the parent axes (last parent fastest)."""
    return [math.prod(pcards[i + 1:]) for i in range(len(pcards))]


def _floats(tokens: list) -> np.ndarray:
    """Probabilities from plain number tokens, converted as ``float`` converts them: ``(len(tokens),)``.

    Every value is in ``[0, 2]`` (a larger one makes its row sum more than 1 + tol for any tol < 1, an
    error the token parser reports; no sum of them can overflow).
    """
    try:
        if "".join(tokens).encode("ascii").translate(None, _NUMBER_CHARS):      # a character no number holds
            raise _Unusual
        vals = np.array(tokens, dtype=np.float64)
    except (UnicodeEncodeError, ValueError):
        raise _Unusual from None
    if not ((vals >= 0) & (vals <= 2)).all():                                     # NaN fails both
        raise _Unusual
    return vals
