"""The common BIF dialect in whole-block passes: the quick path of :func:`causalnet.io.bif.read_bif`.

Every file of the bnlearn repository (and every file :func:`~causalnet.io.bif.write_bif`
writes without quoted names or latent nodes) uses a plain subset of BIF: bare names, no
comments, no ``property`` or ``default`` lines, each ``variable`` block a single
``type discrete`` line, each ``probability`` block either one ``table`` line or one row
per parent configuration. :func:`scan_bif` reads that subset with one regular-expression
match per block and no Python work per table entry: a block's body is split into tokens
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

import functools
import math
import re

import numpy as np

from ..errors import CausalNetError
from .tables import check_table_size, fix_rows

__all__ = ["scan_bif", "Parts"]

#: ``(order, states, parents, tables)``: what :func:`causalnet.io.tables.build_discrete_model` takes.
Parts = tuple[list, dict, dict, dict]

_NAME = r'[^\s{}()\[\];|,"/]+'            # a bare name, as the token parser's

# One block: a network block with nothing inside, a variable block of one 'type discrete' line (the token
# parser's quick variable pattern), or a probability block (its body checked by _table below).
_BLOCK = (r"\s*(?:network(?:\s+" + _NAME + r")?\s*\{\s*\}"
          r"|variable\s+(" + _NAME + r")\s*\{\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^{}()\[\];|\"/]*)\}\s*;?\s*\}"
          r"|probability\s*\(([^(){}\[\];\"/]*)\)\s*\{([^{}\"/]*)\})")
_NUMBER_CHARS = r"[0-9.eE+\-]*"           # what a plain probability is made of (no nan, inf, 1_0)


class _Unusual(CausalNetError):
    """The text leaves the common dialect: the token parser reads it (and reports any error)."""


@functools.cache
def _patterns() -> tuple[re.Pattern, re.Pattern]:
    """The block and number patterns, compiled by the first file read (importing compiles nothing)."""
    return re.compile(_BLOCK), re.compile(_NUMBER_CHARS)


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
    if '"' in text or "/" in text:                      # quotes and comments: the token parser
        return None
    block, numbers = _patterns()
    order: list = []
    states: dict = {}
    heads: list = []
    pos = 0
    while (m := block.match(text, pos)) is not None and m.end() > pos:
        pos = m.end()
        name, head = m.group(1), m.group(4)
        if name is not None:
            names = m.group(3).replace(",", " ").split()
            k = int(m.group(2))
            if name in states or not (len(names) == k >= 1) or len(set(names)) != k:
                return None
            order.append(name)
            states[name] = names
        elif head is not None:
            heads.append((head.replace(",", " ").replace("|", " ").split(), m.group(5)))
    if text[pos:].strip() or not order:
        return None
    try:
        for name in order:
            check_table_size([len(states[name])], f"the states of {name!r}")
        parents, tables = _tables(heads, states, tol, numbers)
    except CausalNetError:          # _Unusual, or a limit the token parser reports with the line
        return None
    if len(parents) != len(order):                    # a variable without a probability block
        return None
    return order, states, parents, tables


def _tables(heads: list, states: dict, tol: float, numbers: re.Pattern) -> tuple[dict, dict]:
    """Parents and checked tables of the probability blocks; _Unusual on anything the token parser must see."""
    parents: dict = {}
    tables: dict = {}
    for names, body in heads:
        if not names or names[0] in parents or any(v not in states for v in names):
            raise _Unusual
        child, pnames = names[0], names[1:]
        if child in pnames or len(set(pnames)) != len(pnames):
            raise _Unusual
        table = _table(body, [states[p] for p in pnames], len(states[child]), numbers)
        parents[child] = pnames
        tables[child] = fix_rows(table, tol, _unusual)
    return parents, tables


def _unusual(row: tuple, msg: str) -> None:
    raise _Unusual


def _table(body: str, pstates: list, k: int, numbers: re.Pattern) -> np.ndarray:
    """The ``(*parent_cards, K)`` table of one block body: a 'table' line, or one row per configuration."""
    if "|" in body:
        raise _Unusual
    tokens = body.replace("(", " ( ").replace(")", " ) ").replace(";", " ; ").replace(",", " ").split()
    pcards = [len(s) for s in pstates]
    n_cfg = math.prod(pcards)
    if tokens[:1] == ["table"]:
        vals = tokens[1:-1]
        if tokens[-1] != ";" or len(vals) != n_cfg * k:
            raise _Unusual
        table = _floats(vals, numbers)                                            # (K * prod(pcards),)
        return np.ascontiguousarray(np.moveaxis(table.reshape(k, *pcards), 0, -1)) if pcards else table
    m = len(pcards)
    width = m + k + 3                                                             # ( names ) numbers ;
    if not m or len(tokens) != n_cfg * width:
        raise _Unusual
    grid = np.array(tokens, dtype=object).reshape(n_cfg, width)                   # (R, m + K + 3)
    if not ((grid[:, 0] == "(").all() and (grid[:, m + 1] == ")").all() and (grid[:, -1] == ";").all()):
        raise _Unusual
    flat = np.zeros(n_cfg, dtype=np.intp)                                         # (R,) row position, C order
    for j, (names, stride) in enumerate(zip(pstates, _strides(pcards))):
        lookup = {s: i for i, s in enumerate(names)}
        try:
            idx = np.fromiter(map(lookup.__getitem__, grid[:, 1 + j]), dtype=np.intp, count=n_cfg)
        except KeyError:
            raise _Unusual from None
        flat += idx * stride
    seen = np.zeros(n_cfg, dtype=bool)
    seen[flat] = True
    if not seen.all():                                                            # a row repeated, so one missing
        raise _Unusual
    table = np.empty((n_cfg, k))
    table[flat] = _floats(grid[:, m + 2:-1].ravel().tolist(), numbers).reshape(n_cfg, k)
    return table.reshape(*pcards, k)


def _strides(pcards: list) -> list:
    """C-order strides of the parent axes (last parent fastest)."""
    return [math.prod(pcards[i + 1:]) for i in range(len(pcards))]


def _floats(tokens: list, numbers: re.Pattern) -> np.ndarray:
    """Finite non-negative probabilities from plain number tokens, converted as ``float`` converts them."""
    if numbers.fullmatch("".join(tokens)) is None:
        raise _Unusual
    try:
        vals = np.array(tokens, dtype=np.float64)
    except ValueError:
        raise _Unusual from None
    if not (np.isfinite(vals).all() and (vals >= 0).all()):
        raise _Unusual
    return vals
