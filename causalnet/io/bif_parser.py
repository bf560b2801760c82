"""The token-by-token BIF parser: every dialect of the format, and every error with its line and column.

:func:`causalnet.io.bif.read_bif` reads the common dialect (every bnlearn file) by the whole-block passes
of :mod:`causalnet.io.bif_scan`; a text that leaves that dialect -- comments, quoted names, properties,
``default`` rows, rows listed piecemeal -- and every text with an error comes here, loaded by the first
such file. :class:`BifParser` reads the text token by token (a variable block and a run of plain rows
take one regular-expression match each), checks everything before anything is built, and raises a
:class:`~causalnet.errors.ModelError` naming the file, the line and column, and what was expected.

Examples
--------
>>> m = BifParser("variable A { type discrete [ 2 ] { a, b }; } /* a comment */ "
...               "probability ( A ) { table 0.25, 0.75; }", "<string>", 1e-6).parse()
>>> m.mechanisms["A"].table.tolist()
[0.25, 0.75]
"""

from __future__ import annotations

import functools
import math
import re
from types import SimpleNamespace
from typing import NoReturn

import numpy as np

from ..errors import ModelError
from ..model import CausalModel
from .tables import build_discrete_model, check_table_size, fix_rows, is_float, is_latent_property, plural

__all__ = ["BifParser"]


@functools.cache
def _patterns() -> SimpleNamespace:
    """The token parser's patterns, compiled when it first runs (importing the module compiles nothing).

    ``row``/``next_row``: a row with no quotes or comments (the second after blanks); ``numbers``:
    plain numbers only (no nan, inf, 1_0, comments); ``variable``: the common variable block in one
    match (bare names, one 'type' line, no property, no comment) -- any other block, and any block
    this one would accept with an error, goes through the token-by-token parser.
    """
    return SimpleNamespace(
        skip=re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S),
        word=re.compile(r'"([^"]*)"|((?:[^\s{}()\[\];|,"/]|/(?![/*]))+)'),
        property=re.compile(r'(?:"[^"]*"|[^;"{}])*'),
        comment=re.compile(r"//[^\n]*|/\*.*?\*/", re.S),
        number_token=re.compile(r"[^\s,]+"),
        numbers=re.compile(r"[\d.eE+\-,\s]*\Z"),
        row=re.compile(r"\(([^()\"/;{}]*)\)\s*([\d.eE+\-,\s]*);"),
        next_row=re.compile(r"\s*\(([^()\"/;{}]*)\)\s*([\d.eE+\-,\s]*);"),
        variable=re.compile(r'\s*([^\s{}()\[\];|,"/]+)\s*\{\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^{}()\[\];|"/]*)\}'
                            r"\s*;?\s*\}"),
        bare=re.compile(r'(?:[^\s{}()\[\];|,"/]|/(?![/*]))+\Z'),
    )


def _plain_numbers(seg: str) -> list[float] | None:
    """Floats of a comma/blank separated list of plain numbers; None if one is malformed or negative."""
    try:
        vals = [float(t) for t in seg.replace(",", " ").split()]
    except ValueError:
        return None
    if "-" in seg and vals and min(vals) < 0:
        return None
    return vals


class _Block:
    """A parsed ``probability`` block, resolved once every variable is known."""

    __slots__ = ("pos", "child", "child_pos", "parents", "table", "default", "rows")

    def __init__(self, pos: int) -> None:
        self.pos = pos
        self.child = None
        self.child_pos = pos
        self.parents: list[tuple[str, int]] = []
        self.table: tuple[list[float], int] | None = None
        self.default: tuple[list[float], int] | None = None
        self.rows: list[tuple[list[str], int, list[float], int]] = []


class BifParser:
    """One BIF text read token by token: ``BifParser(text, source, tol).parse()`` is the model.

    Parameters
    ----------
    text : str
    source : str
        The file's name, for messages.
    tol : float
        Row-sum tolerance (see :func:`causalnet.io.tables.fix_rows`).
    """

    def __init__(self, text: str, source: str, tol: float) -> None:
        self.text = text
        self.source = source
        self.tol = tol
        self.pos = 0
        self.order: list[str] = []
        self.states: dict[str, list[str]] = {}
        self.var_pos: dict[str, int] = {}
        self.latent: list[str] = []
        self.blocks: list[_Block] = []
        self.re = _patterns()

    # -- low level ------------------------------------------------------------------

    def fail(self, pos: int, msg: str):
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise ModelError(f"{self.source}, line {line}, column {col}: {msg}")

    def skip(self) -> None:
        text, pos = self.text, self.pos
        if pos < len(text) and text[pos] != "/" and not text[pos].isspace():   # at a token already (most calls)
            return
        self.pos = self.re.skip.match(text, pos).end()
        if self.text.startswith("/*", self.pos):
            self.fail(self.pos, "unterminated /* comment")

    def describe(self) -> str:
        """The next token, for error messages."""
        if self.pos >= len(self.text):
            return "the end of the file"
        m = self.re.word.match(self.text, self.pos)
        tok = m.group(0) if m else self.text[self.pos]
        return repr(tok if len(tok) <= 30 else tok[:27] + "...")

    def here(self) -> int:
        """Position of the next token."""
        self.skip()
        return self.pos

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos:self.pos + 1]

    def expect(self, ch: str, what: str) -> None:
        if self.peek() != ch:
            self.fail(self.pos, f"expected {ch!r} {what}, got {self.describe()}")
        self.pos += 1

    def word(self, what: str) -> str:
        self.skip()
        m = self.re.word.match(self.text, self.pos)
        if not m:
            self.fail(self.pos, f"expected {what}, got {self.describe()}")
        self.pos = m.end()
        return m.group(1) if m.group(1) is not None else m.group(2)

    def words_until(self, close: str, what: str) -> list[tuple[str, int]]:
        """Names up to the closing character (consumed); commas and ``|`` separate."""
        out = []
        while True:
            c = self.peek()
            if c == close:
                self.pos += 1
                return out
            if c in (",", "|"):
                self.pos += 1
                continue
            start = self.pos
            out.append((self.word(f"{what} or {close!r}"), start))

    def numbers(self, what: str) -> tuple[list[float], int]:
        """Probabilities up to ``;`` (consumed), separated by commas or blanks."""
        self.skip()
        start = self.pos
        end = self.text.find(";", start)
        if end < 0:
            self.fail(start, f"expected the probabilities of {what} ending with ';', reached the end of the file")
        seg = self.text[start:end]
        vals = _plain_numbers(seg) if self.re.numbers.match(seg) else None
        if vals is None:
            vals = self._slow_numbers(seg, start, what)
        if not vals:
            self.fail(start, f"expected the probabilities of {what}, got {self.describe()}")
        self.pos = end + 1
        return vals, start

    def _slow_numbers(self, seg: str, start: int, what: str) -> list[float]:
        """Like :meth:`numbers` on a segment with comments or bad tokens: find the culprit."""
        if "/" in seg:
            seg = self.re.comment.sub(lambda m: " " * len(m.group(0)), seg)
        for ch in "{}()":
            k = seg.find(ch)
            if k >= 0:
                self.fail(start + k, f"expected a number or ';' in the probabilities of {what}, got {ch!r}")
        vals = []
        for m in self.re.number_token.finditer(seg):
            tok = m.group(0)
            v = float(tok) if self.re.numbers.match(tok) and is_float(tok) else math.nan
            if not math.isfinite(v):
                self.fail(start + m.start(), f"expected a probability (a finite number) in {what}, got {tok!r}")
            if v < 0:
                self.fail(start + m.start(), f"probability {tok} in {what} is negative")
            vals.append(v)
        return vals

    def property_text(self) -> str:
        self.skip()
        m = self.re.property.match(self.text, self.pos)
        self.pos = m.end()
        if self.text[self.pos:self.pos + 1] != ";":
            self.fail(self.pos, f"expected ';' ending the property, got {self.describe()}")
        self.pos += 1
        return m.group(0).strip()

    # -- blocks ---------------------------------------------------------------------

    def parse(self) -> CausalModel:
        while True:
            self.skip()
            if self.pos >= len(self.text):
                break
            start = self.pos
            kw = self.re.word.match(self.text, self.pos)
            if not kw or kw.group(2) not in ("network", "variable", "probability"):
                self.fail(start, f"expected 'network', 'variable' or 'probability', got {self.describe()}")
            self.pos = kw.end()
            getattr(self, "_" + kw.group(2))(start)
        if not self.order:
            self.fail(self.pos, "no variables: expected 'variable' blocks")
        return self.resolve()

    def _network(self, start: int) -> None:
        if self.peek() != "{":
            self.word("the network's name")
        self.expect("{", "opening the network block")
        while self.peek() != "}":
            if not self.pos < len(self.text):
                self.fail(self.pos, "expected '}' closing the network block, reached the end of the file")
            p = self.here()
            if self.word("'property' or '}'") != "property":
                self.fail(p, "expected 'property' or '}' in the network block")
            self.property_text()
        self.pos += 1

    def _variable(self, start: int) -> None:
        m = self.re.variable.match(self.text, self.pos)
        if m:
            name, k, states = m.group(1), int(m.group(2)), m.group(3).replace(",", " ").split()
            if name not in self.states and len(states) == k >= 1 and len(set(states)) == k:
                check_table_size([k], f"the states of {name!r}")
                self.pos = m.end()
                self.order.append(name)
                self.states[name] = states
                self.var_pos[name] = start
                return
        p = self.here()
        name = self.word("a variable name")
        if name in self.states:
            self.fail(p, f"variable {name!r} is declared twice (first on line "
                         f"{self.text.count(chr(10), 0, self.var_pos[name]) + 1})")
        self.expect("{", f"opening the block of variable {name!r}")
        states = None
        while self.peek() != "}":
            p = self.here()
            kw = self.word(f"'type', 'property' or '}}' in the block of variable {name!r}")
            if kw == "type":
                if states is not None:
                    self.fail(p, f"variable {name!r} has two 'type' lines")
                states = self._type(name)
            elif kw == "property":
                if is_latent_property(self.property_text()):
                    self.latent.append(name)
            else:
                self.fail(p, f"expected 'type', 'property' or '}}' in the block of variable {name!r}, got {kw!r}")
        self.pos += 1
        if states is None:
            self.fail(start, f"variable {name!r} has no 'type discrete [ k ] {{ ... }};' line")
        self.order.append(name)
        self.states[name] = states
        self.var_pos[name] = start

    def _type(self, name: str) -> list[str]:
        p = self.here()
        kind = self.word("a variable type")
        if kind != "discrete":
            self.fail(p, f"variable {name!r} has type {kind!r}; only 'discrete' variables are supported")
        self.expect("[", f"before the number of states of {name!r}")
        p = self.here()
        k = self.word(f"the number of states of {name!r}")
        if not k.isdigit() or int(k) < 1:
            self.fail(p, f"expected the number of states of {name!r} (a positive integer), got {k!r}")
        check_table_size([int(k)], f"the states of {name!r}")
        self.expect("]", f"after the number of states of {name!r}")
        self.expect("{", f"opening the states of {name!r}")
        p = self.here()
        states = self.words_until("}", f"a state name of {name!r}")
        names = [s for s, _ in states]
        if len(names) != int(k):
            self.fail(p, f"variable {name!r} declares {k} states but lists {len(names)}: {names}")
        seen = set()
        for s, sp in states:
            if s in seen:
                self.fail(sp, f"variable {name!r} lists state {s!r} twice")
            seen.add(s)
        if self.peek() == ";":
            self.pos += 1
        return names

    def _probability(self, start: int) -> None:
        block = _Block(start)
        self.expect("(", "after 'probability'")
        p = self.here()
        names = self.words_until(")", "a variable name")
        if not names:
            self.fail(p, "expected a variable name in 'probability ( ... )'")
        (block.child, block.child_pos), block.parents = names[0], names[1:]
        what = f"{block.child!r}"
        self.expect("{", f"opening the probability block of {what}")
        while True:
            c = self.peek()
            if c == "}":
                self.pos += 1
                break
            p = self.here()
            if c == "(":
                m = self.re.row.match(self.text, p)
                vals = _plain_numbers(m.group(2)) if m else None
                if vals:
                    while vals:         # this row and the plain rows after it, one match each
                        cfg = m.group(1).replace(",", " ").replace("|", " ").split()
                        block.rows.append((cfg, p, vals, m.start(2)))
                        self.pos = m.end()
                        m = self.re.next_row.match(self.text, self.pos)
                        if not m:
                            break
                        vals = _plain_numbers(m.group(2))
                        p = m.start(1) - 1
                    continue
                self.pos += 1
                cfg = self.words_until(")", "a parent state")
                vals, vp = self.numbers(f"{what} given ({', '.join(s for s, _ in cfg)})")
                block.rows.append(([s for s, _ in cfg], p, vals, vp))
                continue
            if not c:
                self.fail(p, f"expected '}}' closing the probability block of {what}, reached the end of the file")
            kw = self.word(f"'table', 'default', '(' or '}}' in the probability block of {what}")
            if kw == "table":
                if block.table is not None:
                    self.fail(p, f"the probability block of {what} has two 'table' lines")
                block.table = self.numbers(f"the table of {what}")
            elif kw == "default":
                if block.default is not None:
                    self.fail(p, f"the probability block of {what} has two 'default' lines")
                block.default = self.numbers(f"the default row of {what}")
            elif kw == "property":
                self.property_text()
            else:
                self.fail(p, f"expected 'table', 'default', '(' or '}}' in the probability block of {what}, "
                             f"got {kw!r}")
        self.blocks.append(block)

    # -- tables -----------------------------------------------------------------------

    def resolve(self) -> CausalModel:
        parents: dict[str, list[str]] = {}
        tables: dict[str, np.ndarray] = {}
        where: dict[str, int] = {}
        for b in self.blocks:
            if b.child not in self.states:
                self.fail(b.child_pos, f"probability block for {b.child!r}, which is not declared by a "
                                       f"'variable' block")
            if b.child in parents:
                self.fail(b.pos, f"{b.child!r} has two probability blocks (the first on line "
                                 f"{self.text.count(chr(10), 0, where[b.child]) + 1})")
            seen = set()
            for pa, pp in b.parents:
                if pa not in self.states:
                    self.fail(pp, f"{b.child!r} has parent {pa!r}, which is not declared by a 'variable' block")
                if pa == b.child or pa in seen:
                    self.fail(pp, f"{b.child!r} lists {pa!r} as a parent {'of itself' if pa == b.child else 'twice'}")
                seen.add(pa)
            parents[b.child] = [pa for pa, _ in b.parents]
            where[b.child] = b.pos
            tables[b.child] = self._table(b)
        for name in self.order:
            if name not in parents:
                self.fail(self.var_pos[name], f"variable {name!r} has no probability block")
        return build_discrete_model(self.order, self.states, parents, tables, self.latent, self.source)

    def _table(self, b: _Block) -> np.ndarray:
        """The ``(*parent_cards, K)`` table of block `b`, from a 'table' line or from rows and a default."""
        child = b.child
        pnames = [pa for pa, _ in b.parents]
        pcards = [len(self.states[pa]) for pa in pnames]
        if b.table is not None:
            if b.rows or b.default is not None:
                self.fail(b.table[1], f"the probability block of {child!r} has both a 'table' and "
                                      f"{'rows' if b.rows else 'a default row'}; expected one or the other")
            table, default_pos, row_pos = self._whole_table(b, pnames, pcards), b.table[1], {}
        elif not pnames:
            if b.rows:
                self.fail(b.rows[0][1], f"{child!r} has no parents, so its block needs 'table', not rows")
            if b.default is None:
                self.fail(b.pos, f"the probability block of {child!r} has no 'table'")
            vals, default_pos = b.default
            self._check_row_length(vals, default_pos, f"the default row of {child!r}", child)
            table, row_pos = np.array(vals), {}
        else:
            table, default_pos, row_pos = self._rows_table(b, pnames, pcards)

        def fail_row(row: tuple, msg: str) -> NoReturn:
            if row in row_pos:
                self.fail(row_pos[row], f"row of {child!r}: {msg}")
            label = ", ".join(self.states[pa][i] for pa, i in zip(pnames, row))
            self.fail(default_pos, f"{child!r}" + (f" given ({label})" if label else "") + f": {msg}")

        return fix_rows(table, self.tol, fail_row)

    def _check_row_length(self, vals: list, pos: int, what: str, child: str) -> None:
        k = len(self.states[child])
        if len(vals) != k:
            self.fail(pos, f"{what} has {plural(len(vals), 'number')}; {child!r} has {k} states "
                           f"{self.states[child]}")

    def _whole_table(self, b: _Block, pnames: list, pcards: list) -> np.ndarray:
        child = b.child
        k = len(self.states[child])
        n_cfg = math.prod(pcards)
        vals, vp = b.table
        if len(vals) != n_cfg * k:
            self.fail(vp, f"the table of {child!r} has {plural(len(vals), 'number')}; {child!r} has {k} states"
                          + (f" and its parents {pnames} have {n_cfg} configurations, so expected {n_cfg * k}"
                             if pnames else f", so expected {k}"))
        table = np.moveaxis(np.array(vals).reshape(k, *pcards), 0, -1)                  # (*pcards, k)
        return np.ascontiguousarray(table)

    def _rows_table(self, b: _Block, pnames: list, pcards: list) -> tuple[np.ndarray, int, dict]:
        """Rows ``(cfg) p1, ..., pk;`` over a 'default' row; ``(table, default_pos, row_pos)``."""
        child = b.child
        k = len(self.states[child])
        default_pos = b.pos
        if b.default is not None:
            vals, default_pos = b.default
            self._check_row_length(vals, default_pos, f"the default row of {child!r}", child)
        if b.default is not None or len(b.rows) < math.prod(float(c) for c in pcards):
            # a default row expands, and missing rows are searched for: check before allocating
            check_table_size([*pcards, k], f"the table of {child!r}")
        strides = [math.prod(pcards[i + 1:]) for i in range(len(pcards))]         # C order over the parents
        flat: list = [None] * math.prod(pcards)                                       # (prod(pcards),) rows
        lookups = [{s: i for i, s in enumerate(self.states[pa])} for pa in pnames]
        row_pos: dict[tuple, int] = {}
        for cfg, cp, vals, vp in b.rows:
            idx = self._row_index(child, cfg, cp, pnames, lookups)
            at = sum(i * st for i, st in zip(idx, strides))
            if flat[at] is not None:
                self.fail(cp, f"row ({', '.join(cfg)}) of {child!r} is given twice")
            if len(vals) != k:
                self._check_row_length(vals, vp, f"row ({', '.join(cfg)}) of {child!r}", child)
            flat[at] = vals
            row_pos[idx] = cp
        if b.default is not None:
            flat = [b.default[0] if r is None else r for r in flat]
        elif None in flat:
            miss = np.unravel_index(flat.index(None), pcards)
            cfg = ", ".join(self.states[pa][int(i)] for pa, i in zip(pnames, miss))
            self.fail(b.pos, f"the probability block of {child!r} has no row for ({cfg}) and no 'default' row")
        table = np.array(flat, dtype=np.float64).reshape(*pcards, k)                   # (*pcards, k)
        return table, default_pos, row_pos

    def _row_index(self, child: str, cfg: list, cp: int, pnames: list, lookups: list) -> tuple:
        if len(cfg) != len(pnames):
            self.fail(cp, f"row ({', '.join(cfg)}) of {child!r} names {plural(len(cfg), 'state')}; "
                          f"expected one for each parent {pnames}")
        idx = []
        for s, lk, pa in zip(cfg, lookups, pnames):
            i = lk.get(s)
            if i is None:
                self.fail(cp, f"row ({', '.join(cfg)}) of {child!r}: parent {pa!r} has no state {s!r}; "
                              f"states: {self.states[pa]}")
            idx.append(i)
        return tuple(idx)
