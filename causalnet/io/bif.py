"""BIF and XMLBIF files: discrete Bayesian networks as causal models.

BIF is the text format of the bnlearn repository (and pgmpy, JavaBayes,
Hugin exporters); XMLBIF is its XML sibling (version 0.3). Both hold
discrete variables with named states and one conditional probability table
per variable. Our own parsers read them — no pgmpy needed — into a
:class:`~causalnet.model.CausalModel` of :class:`~causalnet.mechanisms.tabular.Categorical`
and :class:`~causalnet.mechanisms.tabular.CPT` nodes, with parents in the
order the file declares them, and writers emit them with ``repr`` precision,
so write-then-read gives back the tables bit for bit.

BIF in brief (the bnlearn dialect, plus the original one's quirks)::

    network unknown {
    }
    variable Rain {
      type discrete [ 2 ] { no, yes };
      property latent = true ;          // any property; this one marks a latent node
    }
    probability ( Rain ) {
      table 0.8, 0.2;
    }
    probability ( Wet | Rain, Sprinkler ) {
      (no, off) 0.9, 0.1;               // one row per parent configuration
      default 0.5, 0.5;                 // rows not listed (optional)
    }

``//`` and ``/* */`` comments, quoted names (``"light-on"``), and commas or
blanks as separators are accepted; ``probability ( A B C )`` (no ``|``) means
``A`` given ``B, C``. A ``table`` line in a conditional block lists the child's
states slowest and the last parent fastest (the order of pgmpy's
``TabularCPD.values``); an XMLBIF ``TABLE`` lists, for each parent
configuration (last ``GIVEN`` fastest), the child's probabilities.

Files print probabilities to limited precision, so rows may sum to 1 only
up to rounding (bnlearn's own files are off by up to 3e-7). Readers accept
a row whose sum is within `tol` of 1 and rescale it when it is off by more
than the CPT tolerance (1e-9); rows already within 1e-9 are kept bit for
bit. Files ending in ``.gz`` (or starting with the gzip magic bytes) are
decompressed transparently.

Every parse error is a :class:`~causalnet.errors.ModelError` naming the
file, the line and column, and what was expected; nothing is built until
the whole file has been checked.

Examples
--------
>>> import causalnet as cn
>>> from causalnet.io.bif import read_bif, to_bif
>>> m = read_bif('''
... variable Rain { type discrete [ 2 ] { no, yes }; }
... variable Wet { type discrete [ 2 ] { dry, wet }; }
... probability ( Rain ) { table 0.8, 0.2; }
... probability ( Wet | Rain ) { (no) 0.9, 0.1; (yes) 0.2, 0.8; }
... ''')
>>> m.mechanisms["Wet"].table.tolist()
[[0.9, 0.1], [0.2, 0.8]]
>>> print(to_bif(m).splitlines()[2])
variable Rain {
"""

from __future__ import annotations

import gzip
import importlib.util
import math
import re
import zlib
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET
from xml.parsers import expat

import numpy as np

from ..errors import GraphError, ModelError
from ..mechanisms.tabular import CPT, TOL, Categorical
from ..model import CausalModel
from ._files import read_bytes

__all__ = [
    "read_bif",
    "write_bif",
    "to_bif",
    "read_xmlbif",
    "write_xmlbif",
    "to_xmlbif",
    "bnlearn_names",
    "bnlearn_path",
]

_DEFAULT_TOL = 1e-6


# -- sources ---------------------------------------------------------------------------


def _read_source(source: Any, looks_like_text: Callable[[str], bool]) -> tuple[str, str]:
    """``(text, name)`` from a path, a text, or bytes; gzip is detected by its magic bytes."""
    if isinstance(source, (bytes, bytearray)):
        return _decode(bytes(source), "<bytes>"), "<bytes>"
    if isinstance(source, str) and looks_like_text(source):
        return source, "<string>"
    if not isinstance(source, (str, Path)):
        raise ModelError(f"expected a path, a text or bytes, got {type(source).__name__}")
    path = Path(source)
    return _decode(read_bytes(path), path.name), path.name


def _decode(data: bytes, name: str) -> str:
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ModelError(f"{name}: not a valid gzip file ({e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _write_text(text: str, path: Any) -> None:
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")


# -- shared checks ---------------------------------------------------------------------


def _fix_rows(table: np.ndarray, tol: float, fail_row: Callable[[tuple, str], None]) -> np.ndarray:
    """Check that every row of `table` (``(*parent_cards, K)``) sums to 1 within `tol`.

    Rows off by more than the CPT tolerance but within `tol` are rescaled;
    rows within the CPT tolerance are kept bit for bit. `fail_row(index,
    message)` raises for a bad row.
    """
    sums = table.sum(axis=-1)                                    # (*parent_cards,)
    off = np.abs(sums - 1.0)
    bad = off > tol
    if np.any(bad):
        row = tuple(int(i) for i in np.argwhere(bad)[0]) if table.ndim > 1 else ()
        fail_row(row, f"the probabilities sum to {float(sums[row])!r}, expected 1 "
                      f"(tolerance {tol:g}; pass a larger tol= to accept and rescale such rows)")
    fix = off > TOL
    if np.any(fix):
        table = table.copy()
        if table.ndim == 1:
            table /= sums
        else:
            table[fix] /= sums[fix][..., None]
    return table


def _check_tol(tol: Any) -> float:
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (0 <= tol < 1):
        raise ModelError(f"tol must be a number in [0, 1), got {tol!r}")
    return float(tol)


def _discrete_parts(model: CausalModel, fmt: str) -> list[tuple[str, tuple, list[str], np.ndarray]]:
    """``(name, parents, states, table)`` per node, for writers; names and states as text."""
    from ..mechanisms.intervened import Intervened

    if not isinstance(model, CausalModel):
        raise ModelError(f"expected a CausalModel to convert to {fmt}, got {type(model).__name__}")
    out = []
    names: dict[str, Hashable] = {}
    for node, mech in model.mechanisms.items():
        if isinstance(mech, Intervened):
            raise ModelError(f"node {node!r} is intervened on (do); {fmt} has no interventions. "
                             f"Save the model with save_json, or write the model before the do")
        if not isinstance(mech, (Categorical, CPT)):
            raise ModelError(f"node {node!r} is a {type(mech).__name__}; {fmt} holds only discrete tables "
                             f"(Categorical and CPT nodes)")
        name = str(node)
        if name in names:
            raise ModelError(f"nodes {names[name]!r} and {node!r} have the same name {name!r} as text")
        names[name] = node
        states = [str(s) for s in mech.states]
        if len(set(states)) != len(states):
            raise ModelError(f"node {node!r}: states {list(mech.states)} are not distinct as text")
        out.append((name, tuple(str(p) for p in mech.parents), states, np.asarray(mech.table)))
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _build(order: list[str], states: dict, parents: dict, tables: dict, latent: list[str],
           source: str) -> CausalModel:
    mechs = {}
    for name in order:
        if parents[name]:
            mechs[name] = CPT(parents[name], tables[name], states=states[name])
        else:
            mechs[name] = Categorical(tables[name], states=states[name])
    try:
        return CausalModel(mechs, latent=latent)
    except GraphError as e:
        raise ModelError(f"{source}: the parents form a cycle: {e}") from None


_LATENT_PROPERTY = re.compile(r"\s*latent\s*=\s*(?:true|yes|1)\s*\Z", re.I)


# -- BIF reading -------------------------------------------------------------------------


_SKIP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_WORD = re.compile(r'"([^"]*)"|((?:[^\s{}()\[\];|,"/]|/(?![/*]))+)')
_PROPERTY = re.compile(r'(?:"[^"]*"|[^;"{}])*')
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_NUMBER_TOKEN = re.compile(r"[^\s,]+")
_NUMBERS = re.compile(r"[\d.eE+\-,\s]*\Z")            # plain numbers only: no nan, inf, 1_0, comments
_ROW = re.compile(r"\(([^()\"/;{}]*)\)\s*([\d.eE+\-,\s]*);")   # a row with no quotes or comments


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


class _BifParser:
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

    # -- low level ------------------------------------------------------------------

    def fail(self, pos: int, msg: str):
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise ModelError(f"{self.source}, line {line}, column {col}: {msg}")

    def skip(self) -> None:
        self.pos = _SKIP.match(self.text, self.pos).end()
        if self.text.startswith("/*", self.pos):
            self.fail(self.pos, "unterminated /* comment")

    def describe(self) -> str:
        """The next token, for error messages."""
        if self.pos >= len(self.text):
            return "the end of the file"
        m = _WORD.match(self.text, self.pos)
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
        m = _WORD.match(self.text, self.pos)
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
        vals = _plain_numbers(seg) if _NUMBERS.match(seg) else None
        if vals is None:
            vals = self._slow_numbers(seg, start, what)
        if not vals:
            self.fail(start, f"expected the probabilities of {what}, got {self.describe()}")
        self.pos = end + 1
        return vals, start

    def _slow_numbers(self, seg: str, start: int, what: str) -> list[float]:
        """Like :meth:`numbers` on a segment with comments or bad tokens: find the culprit."""
        if "/" in seg:
            seg = _COMMENT.sub(lambda m: " " * len(m.group(0)), seg)
        for ch in "{}()":
            k = seg.find(ch)
            if k >= 0:
                self.fail(start + k, f"expected a number or ';' in the probabilities of {what}, got {ch!r}")
        vals = []
        for m in _NUMBER_TOKEN.finditer(seg):
            tok = m.group(0)
            v = float(tok) if _NUMBERS.match(tok) and _is_float(tok) else math.nan
            if not math.isfinite(v):
                self.fail(start + m.start(), f"expected a probability (a finite number) in {what}, got {tok!r}")
            if v < 0:
                self.fail(start + m.start(), f"probability {tok} in {what} is negative")
            vals.append(v)
        return vals

    def property_text(self) -> str:
        self.skip()
        m = _PROPERTY.match(self.text, self.pos)
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
            kw = _WORD.match(self.text, self.pos)
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
                if _LATENT_PROPERTY.match(self.property_text()):
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
                m = _ROW.match(self.text, p)
                vals = _plain_numbers(m.group(2)) if m else None
                if vals:
                    cfg = m.group(1).replace(",", " ").replace("|", " ").split()
                    block.rows.append((cfg, p, vals, m.start(2)))
                    self.pos = m.end()
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
        return _build(self.order, self.states, parents, tables, self.latent, self.source)

    def _table(self, b: _Block) -> np.ndarray:
        child = b.child
        states = self.states[child]
        k = len(states)
        pnames = [pa for pa, _ in b.parents]
        pcards = [len(self.states[pa]) for pa in pnames]
        n_cfg = math.prod(pcards)
        row_pos: dict[tuple, int] = {}
        if b.table is not None:
            if b.rows or b.default is not None:
                self.fail(b.table[1], f"the probability block of {child!r} has both a 'table' and "
                                      f"{'rows' if b.rows else 'a default row'}; expected one or the other")
            vals, vp = b.table
            if len(vals) != n_cfg * k:
                self.fail(vp, f"the table of {child!r} has {_plural(len(vals), 'number')}; {child!r} has {k} states"
                              + (f" and its parents {pnames} have {n_cfg} configurations, so expected {n_cfg * k}"
                                 if pnames else f", so expected {k}"))
            table = np.moveaxis(np.array(vals).reshape(k, *pcards), 0, -1)                  # (*pcards, k)
            table = np.ascontiguousarray(table)
            default_pos = vp
        elif not pnames:
            if b.rows:
                self.fail(b.rows[0][1], f"{child!r} has no parents, so its block needs 'table', not rows")
            if b.default is None:
                self.fail(b.pos, f"the probability block of {child!r} has no 'table'")
            vals, default_pos = b.default
            if len(vals) != k:
                self.fail(default_pos, f"the default row of {child!r} has {_plural(len(vals), 'number')}; expected {k}")
            table = np.array(vals)
        else:
            table = np.empty((*pcards, k))                                         # (*pcards, k)
            filled = np.zeros(pcards, dtype=bool)
            default_pos = b.pos
            if b.default is not None:
                vals, default_pos = b.default
                if len(vals) != k:
                    self.fail(default_pos, f"the default row of {child!r} has {_plural(len(vals), 'number')}; "
                                           f"{child!r} has {k} states {states}")
                table[...] = vals
            lookups = [{s: i for i, s in enumerate(self.states[pa])} for pa in pnames]
            for cfg, cp, vals, vp in b.rows:
                if len(cfg) != len(pnames):
                    self.fail(cp, f"row ({', '.join(cfg)}) of {child!r} names {_plural(len(cfg), 'state')}; "
                                  f"expected one for each parent {pnames}")
                idx = []
                for s, lk, pa in zip(cfg, lookups, pnames):
                    i = lk.get(s)
                    if i is None:
                        self.fail(cp, f"row ({', '.join(cfg)}) of {child!r}: parent {pa!r} has no state {s!r}; "
                                      f"states: {self.states[pa]}")
                    idx.append(i)
                idx = tuple(idx)
                if filled[idx]:
                    self.fail(cp, f"row ({', '.join(cfg)}) of {child!r} is given twice")
                if len(vals) != k:
                    self.fail(vp, f"row ({', '.join(cfg)}) of {child!r} has {_plural(len(vals), 'number')}; "
                                  f"{child!r} has {k} states {states}")
                table[idx] = vals
                filled[idx] = True
                row_pos[idx] = cp
            if b.default is None and not filled.all():
                miss = tuple(int(i) for i in np.argwhere(~filled)[0])
                cfg = ", ".join(self.states[pa][i] for pa, i in zip(pnames, miss))
                self.fail(b.pos, f"the probability block of {child!r} has no row for ({cfg}) and no 'default' row")

        def fail_row(row: tuple, msg: str):
            if row in row_pos:
                self.fail(row_pos[row], f"row of {child!r}: {msg}")
            label = ", ".join(self.states[pa][i] for pa, i in zip(pnames, row))
            self.fail(default_pos, f"{child!r}" + (f" given ({label})" if label else "") + f": {msg}")

        return _fix_rows(table, self.tol, fail_row)


def _looks_like_bif(text: str) -> bool:
    return "{" in text or "\n" in text


def read_bif(source: str | Path | bytes, *, tol: float = _DEFAULT_TOL) -> CausalModel:
    """Read a BIF file (or text) into a discrete causal model.

    Parameters
    ----------
    source : path, str or bytes
        A file path (``.bif`` or gzipped ``.bif.gz``), or the BIF text itself
        (any string containing ``{`` or a newline).
    tol : float, default 1e-6
        Rows whose probabilities sum to 1 within `tol` are accepted; those
        off by more than 1e-9 are rescaled to sum to 1.

    Returns
    -------
    CausalModel
        One :class:`Categorical` or :class:`CPT` node per variable, in the
        file's order; CPT shape ``(*parent_cards, K)`` with parents in the
        order of the ``probability ( child | parents )`` header. State
        names are strings.

    Raises
    ------
    ModelError
        On any syntax or consistency error, naming the line and column and
        what was expected (an unknown parent or state, a row of the wrong
        length, a missing row, a negative probability, parents that form a
        cycle, ...).
    """
    tol = _check_tol(tol)
    text, name = _read_source(source, _looks_like_bif)
    return _BifParser(text, name, tol).parse()


# -- BIF writing --------------------------------------------------------------------------

_BARE = re.compile(r'(?:[^\s{}()\[\];|,"/]|/(?![/*]))+\Z')


def _bif_name(name: str, what: str) -> str:
    if _BARE.match(name):
        return name
    if '"' in name:
        raise ModelError(f"{what} {name!r} contains a double quote, which BIF cannot hold")
    return f'"{name}"'


def to_bif(model: CausalModel, *, name: str = "unknown") -> str:
    """BIF text of a discrete model (see :func:`write_bif`)."""
    parts = _discrete_parts(model, "BIF")
    latent = {str(v) for v in model.latent}
    out = [f"network {_bif_name(str(name), 'network name')} {{", "}"]
    for node, _, states, _ in parts:
        st = ", ".join(_bif_name(s, f"state of {node!r}") for s in states)
        out.append(f"variable {_bif_name(node, 'node name')} {{")
        out.append(f"  type discrete [ {len(states)} ] {{ {st} }};")
        if node in latent:
            out.append("  property latent = true ;")
        out.append("}")
    states_of = {node: states for node, _, states, _ in parts}
    for node, parents, _, table in parts:
        head = _bif_name(node, "node name")
        if not parents:
            out.append(f"probability ( {head} ) {{")
            out.append("  table " + ", ".join(map(repr, table.tolist())) + ";")
        else:
            out.append(f"probability ( {head} | {', '.join(_bif_name(p, 'node name') for p in parents)} ) {{")
            flat = table.reshape(-1, table.shape[-1]).tolist()                    # (prod(pcards), K)
            pstates = [[_bif_name(s, f"state of {p!r}") for s in states_of[p]] for p in parents]
            for idx, row in zip(np.ndindex(*table.shape[:-1]), flat):
                cfg = ", ".join(ps[i] for ps, i in zip(pstates, idx))
                out.append(f"  ({cfg}) " + ", ".join(map(repr, row)) + ";")
        out.append("}")
    return "\n".join(out) + "\n"


def write_bif(model: CausalModel, path: str | Path, *, name: str = "unknown") -> None:
    """Write a discrete model (Categorical and CPT nodes) as a BIF file.

    Probabilities are written with ``repr`` precision, so :func:`read_bif`
    gives back the same tables bit for bit. State and node names are written
    as text (quoted when they hold blanks or punctuation), so integer states
    come back as strings. Latent nodes carry ``property latent = true ;``.
    A path ending in ``.gz`` is gzipped.

    Parameters
    ----------
    model : CausalModel
    path : path
    name : str, default "unknown"
        The network's name.

    Raises
    ------
    ModelError
        If a node is not Categorical/CPT, or is intervened on.
    """
    _write_text(to_bif(model, name=name), path)


# -- XMLBIF -----------------------------------------------------------------------------


class _XNode:
    __slots__ = ("tag", "attrs", "children", "text", "line", "col")

    def __init__(self, tag: str, attrs: dict, line: int, col: int) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[_XNode] = []
        self.text: list[str] = []
        self.line = line
        self.col = col

    def content(self) -> str:
        return "".join(self.text).strip()

    def all(self, *tags: str) -> list[_XNode]:
        return [c for c in self.children if c.tag in tags]


def _parse_xml(text: str, source: str) -> _XNode:
    parser = expat.ParserCreate()
    top = _XNode("", {}, 1, 1)
    stack = [top]

    def start(tag, attrs):
        node = _XNode(tag.upper(), {k.upper(): v for k, v in attrs.items()}, parser.CurrentLineNumber,
                      parser.CurrentColumnNumber + 1)
        stack[-1].children.append(node)
        stack.append(node)

    def end(tag):
        stack.pop()

    def chars(data):
        stack[-1].text.append(data)

    def no_entities(*args):
        raise ModelError(f"{source}, line {parser.CurrentLineNumber}: XML entity declarations are not allowed "
                         f"in XMLBIF files")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.EntityDeclHandler = no_entities
    parser.buffer_text = True
    try:
        parser.Parse(text, True)
    except expat.ExpatError as e:
        raise ModelError(f"{source}, line {e.lineno}, column {e.offset + 1}: not well-formed XML "
                         f"({expat.ErrorString(e.code)})") from None
    return top.children[0]


def _looks_like_xml(text: str) -> bool:
    return "<" in text


def read_xmlbif(source: str | Path | bytes, *, tol: float = _DEFAULT_TOL) -> CausalModel:
    """Read an XMLBIF (version 0.3) file or text into a discrete causal model.

    Parameters
    ----------
    source : path, str or bytes
        A file path (gzipped or not) or the XML text (any string with ``<``).
    tol : float, default 1e-6
        As in :func:`read_bif`.

    Returns
    -------
    CausalModel
        Nodes in the order of the ``VARIABLE`` elements; each CPT's parents
        in the order of its ``GIVEN`` elements. State names are strings.

    Raises
    ------
    ModelError
        Malformed XML (with line and column), a missing or repeated element,
        an unknown variable or a table of the wrong length (with the line of
        the element), rows that do not sum to 1, parents that form a cycle.

    Notes
    -----
    Tag names are matched case-insensitively; ``VALUE`` is accepted for
    ``OUTCOME`` and ``PROBABILITY`` for ``DEFINITION`` (older versions).
    XML entity declarations are refused (no entity expansion).
    """
    tol = _check_tol(tol)
    text, src = _read_source(source, _looks_like_xml)
    root = _parse_xml(text, src)

    def fail(node: _XNode, msg: str):
        raise ModelError(f"{src}, line {node.line}, column {node.col}: {msg}")

    def one(node: _XNode, tag: str, what: str) -> _XNode:
        found = node.all(tag)
        if len(found) != 1:
            fail(node, f"{what} needs exactly one <{tag}>, found {len(found)}")
        return found[0]

    if root.tag == "BIF":
        nets = root.all("NETWORK")
        if len(nets) != 1:
            fail(root, f"expected exactly one <NETWORK> in <BIF>, found {len(nets)}")
        net = nets[0]
    elif root.tag == "NETWORK":
        net = root
    else:
        fail(root, f"expected <BIF> or <NETWORK> as the root element, got <{root.tag}>")

    order: list[str] = []
    states: dict[str, list[str]] = {}
    var_node: dict[str, _XNode] = {}
    latent: list[str] = []
    for v in net.all("VARIABLE"):
        kind = v.attrs.get("TYPE", "nature").strip().lower()
        name = one(v, "NAME", "<VARIABLE>").content()
        if not name:
            fail(v, "<VARIABLE> has an empty <NAME>")
        if kind != "nature":
            fail(v, f"variable {name!r} has TYPE={kind!r}; only 'nature' (chance) variables are supported")
        if name in states:
            fail(v, f"variable {name!r} is declared twice (first on line {var_node[name].line})")
        outs = v.all("OUTCOME", "VALUE")
        if not outs:
            fail(v, f"variable {name!r} has no <OUTCOME>")
        st = [o.content() for o in outs]
        for o, s in zip(outs, st):
            if st.count(s) > 1:
                fail(o, f"variable {name!r} lists state {s!r} twice")
        order.append(name)
        states[name] = st
        var_node[name] = v
        if any(_LATENT_PROPERTY.match(p.content()) for p in v.all("PROPERTY")):
            latent.append(name)
    if not order:
        fail(net, "no <VARIABLE> elements")

    parents: dict[str, list[str]] = {}
    tables: dict[str, np.ndarray] = {}
    def_node: dict[str, _XNode] = {}
    for d in net.all("DEFINITION", "PROBABILITY"):
        fnode = one(d, "FOR", f"<{d.tag}>")
        child = fnode.content()
        if child not in states:
            fail(fnode, f"<FOR>{child}</FOR> names a variable that has no <VARIABLE>")
        if child in parents:
            fail(d, f"{child!r} has two <{d.tag}> elements (the first on line {def_node[child].line})")
        pas = []
        for g in d.all("GIVEN"):
            pa = g.content()
            if pa not in states:
                fail(g, f"{child!r} has parent {pa!r}, which has no <VARIABLE>")
            if pa == child or pa in pas:
                fail(g, f"{child!r} lists {pa!r} as a parent {'of itself' if pa == child else 'twice'}")
            pas.append(pa)
        tnode = one(d, "TABLE", f"<{d.tag}> of {child!r}")
        toks = tnode.content().replace(",", " ").split()
        try:
            if any("_" in t for t in toks):
                raise ValueError
            vals = np.array([float(t) for t in toks], dtype=np.float64)
        except ValueError:
            bad = next(t for t in toks if "_" in t or not _is_float(t))
            fail(tnode, f"the <TABLE> of {child!r} holds {bad!r}, which is not a number")
        if not np.all(np.isfinite(vals)) or np.any(vals < 0):
            bad = float(vals[~(np.isfinite(vals) & (vals >= 0))][0])
            fail(tnode, f"the <TABLE> of {child!r} holds {bad!r}; probabilities must be finite and >= 0")
        pcards = [len(states[p]) for p in pas]
        k = len(states[child])
        want = math.prod(pcards) * k
        if vals.size != want:
            fail(tnode, f"the <TABLE> of {child!r} has {_plural(vals.size, 'number')}; {child!r} has {k} states"
                        + (f" and its parents {pas} have {want // k} configurations, so expected {want}"
                           if pas else f", so expected {k}"))
        table = vals.reshape(*pcards, k)                                           # (*pcards, k)

        def fail_row(row, msg, child=child, pas=pas, tnode=tnode):
            label = ", ".join(states[p][i] for p, i in zip(pas, row))
            fail(tnode, f"{child!r}" + (f" given ({label})" if label else "") + f": {msg}")

        tables[child] = _fix_rows(table, tol, fail_row)
        parents[child] = pas
        def_node[child] = d
    for name in order:
        if name not in parents:
            fail(var_node[name], f"variable {name!r} has no <DEFINITION>")
    return _build(order, states, parents, tables, latent, src)


def _is_float(t: str) -> bool:
    try:
        float(t)
    except ValueError:
        return False
    return True


def to_xmlbif(model: CausalModel, *, name: str = "unknown") -> str:
    """XMLBIF text of a discrete model (see :func:`write_xmlbif`)."""
    parts = _discrete_parts(model, "XMLBIF")
    latent = {str(v) for v in model.latent}
    for node, _, states, _ in parts:
        for s in (node, *states):
            if s != s.strip() or not s:
                raise ModelError(f"node {node!r}: name {s!r} is empty or has leading/trailing blanks, "
                                 f"which XMLBIF does not keep")
    root = ET.Element("BIF", VERSION="0.3")
    net = ET.SubElement(root, "NETWORK")
    ET.SubElement(net, "NAME").text = str(name)
    for node, _, states, _ in parts:
        v = ET.SubElement(net, "VARIABLE", TYPE="nature")
        ET.SubElement(v, "NAME").text = node
        for s in states:
            ET.SubElement(v, "OUTCOME").text = s
        if node in latent:
            ET.SubElement(v, "PROPERTY").text = "latent = true"
    for node, parents, _, table in parts:
        d = ET.SubElement(net, "DEFINITION")
        ET.SubElement(d, "FOR").text = node
        for p in parents:
            ET.SubElement(d, "GIVEN").text = p
        ET.SubElement(d, "TABLE").text = " ".join(map(repr, table.reshape(-1).tolist()))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_xmlbif(model: CausalModel, path: str | Path, *, name: str = "unknown") -> None:
    """Write a discrete model as an XMLBIF 0.3 file.

    Each ``TABLE`` lists, for each parent configuration in order (last
    ``GIVEN`` fastest), the child's probabilities — the ``(*parent_cards, K)``
    table in C order — with ``repr`` precision, so :func:`read_xmlbif` gives
    back the tables bit for bit. A path ending in ``.gz`` is gzipped.

    Raises
    ------
    ModelError
        If a node is not Categorical/CPT, is intervened on, or has a name XML
        would not keep.
    """
    _write_text(to_xmlbif(model, name=name), path)


# -- pgmpy's shipped bnlearn networks ------------------------------------------------------


def _example_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("pgmpy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        d = Path(loc) / "utils" / "example_models"
        if d.is_dir():
            return d
    return None


def bnlearn_names() -> list[str]:
    """Names of the bnlearn networks shipped with pgmpy as BIF files (``[]`` without pgmpy).

    pgmpy is located, not imported. Sorted; e.g. ``["alarm", "andes", "asia", ...]``.
    """
    d = _example_dir()
    if d is None:
        return []
    return sorted(p.name[: -len(".bif.gz")] for p in d.glob("*.bif.gz"))


def bnlearn_path(name: str) -> Path | None:
    """The path of pgmpy's shipped ``<name>.bif.gz``, or None (no pgmpy, or no such network).

    Examples
    --------
    >>> p = bnlearn_path("asia")
    >>> p is None or p.name == "asia.bif.gz"
    True
    """
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):
        return None
    d = _example_dir()
    if d is None:
        return None
    p = d / f"{name}.bif.gz"
    return p if p.is_file() else None
