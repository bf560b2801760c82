"""XMLBIF files (version 0.3): discrete Bayesian networks in XML.

XMLBIF is the XML sibling of BIF (see :mod:`causalnet.io.bif`)::

    <BIF VERSION="0.3"><NETWORK><NAME>rain</NAME>
      <VARIABLE TYPE="nature"><NAME>Rain</NAME><OUTCOME>no</OUTCOME><OUTCOME>yes</OUTCOME></VARIABLE>
      <DEFINITION><FOR>Rain</FOR><TABLE>0.8 0.2</TABLE></DEFINITION>
    </NETWORK></BIF>

A ``DEFINITION``'s ``TABLE`` lists, for each parent configuration (last ``GIVEN``
fastest), the child's probabilities: the ``(*parent_cards, K)`` table in C order.
The XML is parsed by expat with entity declarations refused (no "billion laughs"),
after the bounded read of :mod:`causalnet.io.files`. Every problem is a
:class:`~causalnet.errors.ModelError` naming the line and column of the element.

Examples
--------
>>> from causalnet.io.xmlbif import read_xmlbif, to_xmlbif
>>> m = read_xmlbif('''<BIF VERSION="0.3"><NETWORK>
... <VARIABLE TYPE="nature"><NAME>A</NAME><OUTCOME>a0</OUTCOME><OUTCOME>a1</OUTCOME></VARIABLE>
... <DEFINITION><FOR>A</FOR><TABLE>0.25 0.75</TABLE></DEFINITION></NETWORK></BIF>''')
>>> m.mechanisms["A"].probs.tolist()
[0.25, 0.75]
>>> read_xmlbif(to_xmlbif(m)).mechanisms["A"].probs.tolist()
[0.25, 0.75]
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..errors import ModelError
from ..model import CausalModel
from .files import atomic_write, read_source
from .tables import (
    DEFAULT_TOL,
    build_discrete_model,
    check_tol,
    discrete_parts,
    fix_rows,
    is_float,
    is_latent_property,
    plural,
)

__all__ = ["read_xmlbif", "write_xmlbif", "to_xmlbif"]


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
    from xml.parsers import expat  # the XML parser loads with the first XMLBIF file, not with read_bif

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
    except RecursionError:  # pragma: no cover - expat is iterative; our handlers are too
        raise ModelError(f"{source}: XML nested too deeply") from None
    if not top.children:
        raise ModelError(f"{source}: no XML element")
    return top.children[0]


def _looks_like_xml(text: str) -> bool:
    return "<" in text


class _XmlbifReader:
    """The steps of reading one XMLBIF document: network, variables, definitions, model."""

    def __init__(self, root: _XNode, source: str, tol: float) -> None:
        self.root = root
        self.source = source
        self.tol = tol
        self.order: list[str] = []
        self.states: dict[str, list[str]] = {}
        self.var_node: dict[str, _XNode] = {}
        self.latent: list[str] = []
        self.parents: dict[str, list[str]] = {}
        self.tables: dict[str, np.ndarray] = {}
        self.def_node: dict[str, _XNode] = {}

    def fail(self, node: _XNode, msg: str) -> NoReturn:
        raise ModelError(f"{self.source}, line {node.line}, column {node.col}: {msg}")

    def one(self, node: _XNode, tag: str, what: str) -> _XNode:
        found = node.all(tag)
        if len(found) != 1:
            self.fail(node, f"{what} needs exactly one <{tag}>, found {len(found)}")
        return found[0]

    def read(self) -> CausalModel:
        net = self.network()
        for v in net.all("VARIABLE"):
            self.variable(v)
        if not self.order:
            self.fail(net, "no <VARIABLE> elements")
        for d in net.all("DEFINITION", "PROBABILITY"):
            self.definition(d)
        for name in self.order:
            if name not in self.parents:
                self.fail(self.var_node[name], f"variable {name!r} has no <DEFINITION>")
        return build_discrete_model(self.order, self.states, self.parents, self.tables, self.latent, self.source)

    def network(self) -> _XNode:
        root = self.root
        if root.tag == "BIF":
            nets = root.all("NETWORK")
            if len(nets) != 1:
                self.fail(root, f"expected exactly one <NETWORK> in <BIF>, found {len(nets)}")
            return nets[0]
        if root.tag != "NETWORK":
            self.fail(root, f"expected <BIF> or <NETWORK> as the root element, got <{root.tag}>")
        return root

    def variable(self, v: _XNode) -> None:
        kind = v.attrs.get("TYPE", "nature").strip().lower()
        name = self.one(v, "NAME", "<VARIABLE>").content()
        if not name:
            self.fail(v, "<VARIABLE> has an empty <NAME>")
        if kind != "nature":
            self.fail(v, f"variable {name!r} has TYPE={kind!r}; only 'nature' (chance) variables are supported")
        if name in self.states:
            self.fail(v, f"variable {name!r} is declared twice (first on line {self.var_node[name].line})")
        outs = v.all("OUTCOME", "VALUE")
        if not outs:
            self.fail(v, f"variable {name!r} has no <OUTCOME>")
        st = [o.content() for o in outs]
        seen: set[str] = set()
        for o, s in zip(outs, st):
            if s in seen:
                self.fail(o, f"variable {name!r} lists state {s!r} twice")
            seen.add(s)
        self.order.append(name)
        self.states[name] = st
        self.var_node[name] = v
        if any(is_latent_property(p.content()) for p in v.all("PROPERTY")):
            self.latent.append(name)

    def definition(self, d: _XNode) -> None:
        fnode = self.one(d, "FOR", f"<{d.tag}>")
        child = fnode.content()
        if child not in self.states:
            self.fail(fnode, f"<FOR>{child}</FOR> names a variable that has no <VARIABLE>")
        if child in self.parents:
            self.fail(d, f"{child!r} has two <{d.tag}> elements (the first on line {self.def_node[child].line})")
        pas: list[str] = []
        for g in d.all("GIVEN"):
            pa = g.content()
            if pa not in self.states:
                self.fail(g, f"{child!r} has parent {pa!r}, which has no <VARIABLE>")
            if pa == child or pa in pas:
                self.fail(g, f"{child!r} lists {pa!r} as a parent {'of itself' if pa == child else 'twice'}")
            pas.append(pa)
        tnode = self.one(d, "TABLE", f"<{d.tag}> of {child!r}")
        self.tables[child] = self.table(tnode, child, pas)
        self.parents[child] = pas
        self.def_node[child] = d

    def numbers(self, tnode: _XNode, child: str) -> np.ndarray:
        toks = tnode.content().replace(",", " ").split()
        bad = next((t for t in toks if "_" in t or not is_float(t)), None)
        if bad is not None:
            self.fail(tnode, f"the <TABLE> of {child!r} holds {bad!r}, which is not a number")
        vals = np.array([float(t) for t in toks], dtype=np.float64)
        ok = np.isfinite(vals) & (vals >= 0)
        if not np.all(ok):
            self.fail(tnode, f"the <TABLE> of {child!r} holds {float(vals[~ok][0])!r}; probabilities must be "
                             f"finite and >= 0")
        return vals

    def table(self, tnode: _XNode, child: str, pas: list[str]) -> np.ndarray:
        vals = self.numbers(tnode, child)
        pcards = [len(self.states[p]) for p in pas]
        k = len(self.states[child])
        want = math.prod(pcards) * k
        if vals.size != want:
            self.fail(tnode, f"the <TABLE> of {child!r} has {plural(vals.size, 'number')}; {child!r} has {k} states"
                             + (f" and its parents {pas} have {want // k} configurations, so expected {want}"
                                if pas else f", so expected {k}"))
        table = vals.reshape(*pcards, k)                                           # (*pcards, k)

        def fail_row(row: tuple, msg: str) -> NoReturn:
            label = ", ".join(self.states[p][i] for p, i in zip(pas, row))
            self.fail(tnode, f"{child!r}" + (f" given ({label})" if label else "") + f": {msg}")

        return fix_rows(table, self.tol, fail_row)


def read_xmlbif(source: str | Path | bytes, *, tol: float = DEFAULT_TOL) -> CausalModel:
    """Read an XMLBIF (version 0.3) file or text into a discrete causal model.

    Parameters
    ----------
    source : path, str or bytes
        A file path (gzipped or not) or the XML text (any string with ``<``).
    tol : float, default 1e-6
        As in :func:`~causalnet.io.bif.read_bif`.

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
    ModelFileNotFoundError, ModelFilePermissionError
        If the file is missing or unreadable.
    ResourceError
        If the file is larger than ``causalnet.limits`` ``max_file_bytes``.

    Notes
    -----
    Tag names are matched case-insensitively; ``VALUE`` is accepted for
    ``OUTCOME`` and ``PROBABILITY`` for ``DEFINITION`` (older versions).
    XML entity declarations are refused (no entity expansion).
    """
    tol = check_tol(tol)
    text, src = read_source(source, _looks_like_xml)
    return _XmlbifReader(_parse_xml(text, src), src, tol).read()


def to_xmlbif(model: CausalModel, *, name: str = "unknown") -> str:
    """XMLBIF text of a discrete model (see :func:`write_xmlbif`)."""
    parts = discrete_parts(model, "XMLBIF")
    latent = {str(v) for v in model.latent}
    for node, _, states, _ in parts:
        for s in (node, *states):
            if s != s.strip() or not s:
                raise ModelError(f"node {node!r}: name {s!r} is empty or has leading/trailing blanks, "
                                 f"which XMLBIF does not keep")
    from xml.etree import ElementTree as ET

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
    """Write a discrete model as an XMLBIF 0.3 file, atomically.

    Each ``TABLE`` lists, for each parent configuration in order (last
    ``GIVEN`` fastest), the child's probabilities — the ``(*parent_cards, K)``
    table in C order — with ``repr`` precision, so :func:`read_xmlbif` gives
    back the tables bit for bit. A path ending in ``.gz`` is gzipped. The file
    is written to a temporary file in the same folder and renamed over `path`:
    a failure leaves the old file (or none).

    Raises
    ------
    ModelError
        If a node is not Categorical/CPT, is intervened on, or has a name XML
        would not keep. Nothing is written then.
    """
    text = to_xmlbif(model, name=name)
    atomic_write(path, text, compress=str(path).endswith(".gz"))
