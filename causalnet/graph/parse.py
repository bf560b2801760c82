"""Reading graphs from dagitty-like text.

A text is a list of statements separated by ``;`` or new lines. A statement is
a chain of node groups joined by ``->`` or ``<-`` (``A -> B <- C``), one node
(an isolated node), or a node followed by attributes in brackets
(``U [latent]``; ``unobserved`` and ``hidden`` are synonyms). ``X <-> Y`` is a
bidirected edge, an unobserved common cause: it adds a latent node ``U[X,Y]``
(named by :func:`latent_parent_name`) with both as children. ``{A B}`` groups
nodes on one side of an arrow: every node of the left group gets an edge to
every node of the right one. Names are identifiers (letters, digits, ``_``,
``.``, an optional index ``[3]``) or double-quoted strings. A surrounding
``dag { ... }`` (or ``pdag { ... }``) is accepted, and ``#`` / ``//`` start comments.

``X -- Y`` is an **undirected** edge, the mark of a partially directed graph
(a CPDAG: the edge's direction is not known). :func:`parse_pdag` reads it;
:func:`parse_graph`, which reads DAGs, refuses it and says to build a
:class:`~causalnet.graph.equivalence.PDAG` instead.

:func:`parse_graph` returns plain lists — edges, nodes in order of first
appearance, latent nodes — so that this module needs no graph class;
:meth:`causalnet.graph.dag.DAG.parse` builds the DAG from them, and
:meth:`causalnet.graph.equivalence.PDAG.parse` the PDAG from :func:`parse_pdag`.

Examples
--------
>>> parse_graph("A -> B <- C; U [latent]; U -> {A C}")
([('A', 'B'), ('C', 'B'), ('U', 'A'), ('U', 'C')], ['A', 'B', 'C', 'U'], ['U'])
>>> parse_graph("X -> Y; X <-> Y")
([('X', 'Y'), ('U[X,Y]', 'X'), ('U[X,Y]', 'Y')], ['X', 'Y', 'U[X,Y]'], ['U[X,Y]'])
>>> parse_pdag("A -- B -> C; D")
([('B', 'C')], [('A', 'B')], ['A', 'B', 'C', 'D'])
"""

from __future__ import annotations

import re

from ..errors import GraphError

__all__ = ["parse_graph", "parse_pdag", "latent_parent_name", "format_name"]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*|//[^\n]*)
  | (?P<arrow><->|->|<-|--)
  | (?P<sep>;)
  | (?P<lbrace>\{)
  | (?P<rbrace>\})
  | (?P<attr>\[\s*[A-Za-z_][\w\s,=".]*\])
  | (?P<quoted>"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_0-9][\w.]*(?:\[\d+\])*)
    """,
    re.VERBOSE,
)

_LATENT_WORDS = {"latent", "unobserved", "u", "hidden"}

Token = tuple[str, str, int]  # (kind, text, offset)


def _tokenize(text: str) -> list[Token]:
    tokens = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise GraphError(f"cannot parse graph text at line {line}: unexpected {text[pos:pos + 12]!r}")
        kind = m.lastgroup
        if kind == "ws" and "\n" in m.group():
            tokens.append(("sep", "\n", pos))
        elif kind not in ("ws", "comment"):
            tokens.append((kind, m.group(), pos))
        pos = m.end()
    return tokens


def _statements(tokens: list[Token]) -> list[list[Token]]:
    out: list[list[Token]] = [[]]
    for tok in tokens:
        if tok[0] == "sep":
            out.append([])
        else:
            out[-1].append(tok)
    return [st for st in out if st]


def _name(kind: str, val: str) -> str:
    if kind == "quoted":
        return re.sub(r"\\(.)", r"\1", val[1:-1])
    return val


def _group(st: list[Token], i: int) -> tuple[list[str], int]:
    """The node group starting at token `i` (one name or ``{...}``) and the index after it."""
    kind, val, pos = st[i]
    if kind in ("name", "quoted"):
        return [_name(kind, val)], i + 1
    if kind != "lbrace":
        raise GraphError(f"cannot parse graph text: expected a node name, got {val!r} at offset {pos}")
    grp = []
    i += 1
    while i < len(st) and st[i][0] != "rbrace":
        k2, v2, p2 = st[i]
        if k2 not in ("name", "quoted"):
            raise GraphError(f"cannot parse graph text: {v2!r} inside braces at offset {p2}")
        grp.append(_name(k2, v2))
        i += 1
    if i >= len(st):
        raise GraphError("cannot parse graph text: unclosed '{'")
    return grp, i + 1


def _attributes(st: list[Token], i: int) -> tuple[bool, int]:
    """Whether the bracketed attributes from token `i` mark latent nodes, and the index after them."""
    latent = False
    while i < len(st) and st[i][0] == "attr":
        words = {w.strip().strip('"').lower() for w in re.split(r"[\s,=]+", st[i][1][1:-1]) if w.strip()}
        latent = latent or bool(words & _LATENT_WORDS)
        i += 1
    return latent, i


def _statement(st: list[Token]) -> tuple[list[list[str]], list[str], list[str]]:
    """Groups, the arrows between them, and the nodes marked latent, of one statement."""
    groups: list[list[str]] = []
    arrows: list[str] = []
    latent: list[str] = []
    i = 0
    while True:
        start = st[i][2]
        grp, i = _group(st, i)
        if not grp and (arrows or (i < len(st) and st[i][0] == "arrow")):
            raise GraphError(f"cannot parse graph text: an empty group '{{}}' beside an arrow at offset {start}; "
                             f"an arrow needs a node on each side")
        is_latent, i = _attributes(st, i)
        if is_latent:
            latent.extend(grp)
        groups.append(grp)
        if i == len(st):
            return groups, arrows, latent
        kind, val, pos = st[i]
        if kind != "arrow":
            raise GraphError(f"cannot parse graph text: expected '->', '<-', '<->', '--' or ';', got {val!r} at "
                             f"offset {pos}")
        arrows.append(val)
        i += 1
        if i == len(st):
            raise GraphError("cannot parse graph text: an arrow has no node after it")


def _read(text: str) -> tuple[dict, list, list, list, list]:
    """Nodes (ordered), directed edges, undirected edges, bidirected pairs and latent nodes of `text`."""
    if not isinstance(text, str):
        raise GraphError(f"graph text must be a string, got {type(text).__name__}")
    body = text.strip()
    m = re.match(r"^(?:dag|pdag|digraph)\s*\{(.*)\}\s*$", body, re.DOTALL)
    if m:
        body = m.group(1)
    nodes: dict[str, None] = {}
    edges: list[tuple[str, str]] = []
    undirected: list[tuple[str, str]] = []
    latent: list[str] = []
    bidirected: list[tuple[str, str]] = []
    for st in _statements(_tokenize(body)):
        groups, arrows, lat = _statement(st)
        latent.extend(lat)
        nodes.update(dict.fromkeys(v for grp in groups for v in grp))
        for k, arrow in enumerate(arrows):
            for a in groups[k]:
                for b in groups[k + 1]:
                    if arrow == "<->":
                        bidirected.append((a, b))
                    elif arrow == "--":
                        undirected.append((a, b))
                    else:
                        edges.append((a, b) if arrow == "->" else (b, a))
    return nodes, edges, undirected, bidirected, latent


def parse_graph(text: str) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """Edges, nodes (in order of first appearance) and latent nodes of dagitty-like `text`.

    Raises
    ------
    GraphError
        If `text` is not a string, cannot be parsed (the message says where),
        or has an undirected edge ``--`` (a DAG has none: use ``cn.PDAG.parse``).
    """
    nodes, edges, undirected, bidirected, latent = _read(text)
    if undirected:
        a, b = undirected[0]
        raise GraphError(f"{a} -- {b} is an undirected edge, which a DAG cannot hold; read the text as a "
                         f"partially directed graph with cn.PDAG.parse(text) (or cn.PDAG(text))")
    for a, b in bidirected:                  # after every statement, so that names never collide
        if a == b:
            raise GraphError(f"cannot parse graph text: bidirected self-loop on {a!r}")
        u = latent_parent_name(a, b, nodes)
        nodes[u] = None
        latent.append(u)
        edges += [(u, a), (u, b)]
    return edges, list(nodes), latent


def parse_pdag(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
    """Directed edges, undirected edges and nodes (in order of first appearance) of a PDAG's text.

    Raises
    ------
    GraphError
        If `text` cannot be parsed, or marks latent nodes or ``<->`` edges (a
        PDAG has no latent nodes).
    """
    nodes, edges, undirected, bidirected, latent = _read(text)
    if bidirected or latent:
        what = f"{bidirected[0][0]} <-> {bidirected[0][1]}" if bidirected else f"{latent[0]} [latent]"
        raise GraphError(f"a PDAG has no latent nodes, got {what}; write the hidden cause as a node of its own")
    return edges, undirected, list(nodes)


def format_name(name) -> str:
    """`name` as it is written in graph text: bare when it reads back as a name, else double-quoted."""
    text = str(name)
    if re.fullmatch(r"[A-Za-z_0-9][\w.]*(?:\[\d+\])*", text) and text.lower() not in ("dag", "pdag", "digraph"):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def latent_parent_name(a, b, taken) -> str:
    """``U[a,b]``, the name of the latent common parent standing for ``a <-> b``; a numeric suffix if taken."""
    name, k = f"U[{a},{b}]", 1
    while name in taken:
        k += 1
        name = f"U[{a},{b}]{k}"
    return name
