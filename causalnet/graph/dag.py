"""Directed acyclic graphs: structure only.

A :class:`DAG` is an immutable set of nodes and directed edges with no cycle,
plus a set of *latent* (unobserved) nodes and a set of *intervened* nodes
(those a ``do`` has cut from their parents; kept for drawing). Every operation
returns a new DAG; the graph you hold never changes.

Nodes are any hashable values; strings are the convention (``"Z[3]"`` for
unrolled dynamic models, dotted paths for blocks). Node order is the order of
first appearance and is kept by every operation, so results are deterministic.

Graph questions live in sibling modules and are reachable as methods:
d-separation in :mod:`causalnet.graph.separation`, adjustment sets in
:mod:`causalnet.graph.adjustment`, DOT text in :mod:`causalnet.io.dot`.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("Z -> X -> Y; Z -> Y; U [latent]")
>>> g.parents("Y")
('Z', 'X')
>>> sorted(g.descendants("Z"))
['X', 'Y']
>>> g.do({"X"}).parents("X")
()
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Hashable, Iterable
from typing import Any

import networkx as nx

from ..errors import GraphError

__all__ = ["DAG"]


def _check_hashable(item: Any, what: str) -> None:
    try:
        hash(item)
    except TypeError:
        raise GraphError(f"{what} {item!r} is not hashable; node names must be hashable (strings are usual)") from None


def _cycle_text(cycle_edges: list[tuple]) -> str:
    nodes = [u for u, _ in cycle_edges] + [cycle_edges[0][0]]
    return " -> ".join(str(v) for v in nodes)


class DAG:
    """An immutable directed acyclic graph with latent and intervened marks.

    Parameters
    ----------
    edges : iterable of (u, v) pairs, optional
        Directed edges ``u -> v``.
    nodes : iterable of hashable, optional
        Extra nodes (isolated nodes, or to fix the node order).
    latent : iterable of hashable, optional
        Nodes that are not observed. They must be nodes of the graph.
    intervened : iterable of hashable, optional
        Nodes marked as intervened on (set by :meth:`do`; used by diagrams).

    Raises
    ------
    GraphError
        On a cycle (the message names it), a self-loop, a malformed edge, a
        non-hashable name, or a latent/intervened node that is not in the graph.

    Examples
    --------
    >>> g = DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")])
    >>> g.topological_order()
    ('Z', 'X', 'Y')
    """

    __slots__ = ("_g", "_order", "_pos", "_latent", "_intervened", "_cache")

    def __init__(
        self,
        edges: Iterable[tuple[Hashable, Hashable]] = (),
        nodes: Iterable[Hashable] = (),
        latent: Iterable[Hashable] = (),
        intervened: Iterable[Hashable] = (),
    ) -> None:
        g = nx.DiGraph()
        for v in nodes:
            _check_hashable(v, "node")
            g.add_node(v)
        for e in edges:
            try:
                u, v = e
            except (TypeError, ValueError):
                raise GraphError(f"edge {e!r} is not a (parent, child) pair") from None
            _check_hashable(u, f"node in edge {e!r}:")
            _check_hashable(v, f"node in edge {e!r}:")
            if u == v:
                raise GraphError(f"self-loop on {u!r}: an edge {u!r} -> {v!r} is not allowed in a DAG")
            g.add_edge(u, v)
        if not nx.is_directed_acyclic_graph(g):
            cycle = nx.find_cycle(g)
            raise GraphError(f"the edges contain the cycle {_cycle_text(cycle)}")
        latent = self._node_set(g, latent, "latent")
        intervened = self._node_set(g, intervened, "intervened")
        self._init(g, latent, intervened)

    # -- construction helpers -------------------------------------------------

    @staticmethod
    def _node_set(g: nx.DiGraph, items: Iterable[Hashable], what: str) -> frozenset:
        if isinstance(items, str):
            items = [items]
        out = []
        for v in items:
            _check_hashable(v, f"{what} node")
            if v not in g:
                raise GraphError(f"{what} node {v!r} is not a node of the graph")
            out.append(v)
        return frozenset(out)

    def _init(self, g: nx.DiGraph, latent: frozenset, intervened: frozenset) -> None:
        nx.freeze(g)
        self._g = g
        self._order = tuple(g.nodes)
        self._pos = {v: i for i, v in enumerate(self._order)}
        self._latent = latent
        self._intervened = intervened
        self._cache: dict[str, Any] = {}

    @classmethod
    def _from_nx(cls, g: nx.DiGraph, latent=frozenset(), intervened=frozenset()) -> DAG:
        """Wrap a DiGraph known to be acyclic (internal; no copy, no checks)."""
        self = cls.__new__(cls)
        self._init(g, frozenset(latent) & frozenset(g.nodes), frozenset(intervened) & frozenset(g.nodes))
        return self

    @classmethod
    def parse(cls, text: str) -> DAG:
        """Build a DAG from dagitty-like text.

        Statements are separated by ``;`` or new lines. A statement is a chain
        of nodes joined by ``->`` or ``<-`` (``A -> B <- C``), a single node
        (an isolated node), or a node followed by attributes in brackets:
        ``U [latent]`` (``unobserved`` is a synonym). ``{A B}`` groups nodes on
        one side of an arrow. Names are identifiers (letters, digits, ``_``,
        ``.``, an optional index ``[3]``) or double-quoted strings. A
        surrounding ``dag { ... }`` is accepted, and ``#`` / ``//`` start comments.

        Examples
        --------
        >>> g = DAG.parse("A -> B -> C; D; U [latent]; U -> {A C}")
        >>> g.nodes
        ('A', 'B', 'C', 'D', 'U')
        >>> sorted(g.latent)
        ['U']
        """
        if not isinstance(text, str):
            raise GraphError(f"DAG.parse expects a string, got {type(text).__name__}")
        return _parse(text)

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph, latent: Iterable[Hashable] | None = None) -> DAG:
        """Build a DAG from a networkx ``DiGraph``.

        Latent nodes are those in `latent`, or, when it is None, those whose
        node attribute ``latent`` is true.
        """
        if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
            raise GraphError(f"from_networkx expects a networkx DiGraph, got {type(graph).__name__}")
        if latent is None:
            latent = [v for v, d in graph.nodes(data=True) if d.get("latent")]
        return cls(graph.edges, nodes=graph.nodes, latent=latent)

    def to_networkx(self) -> nx.DiGraph:
        """A new (mutable) networkx ``DiGraph``; latent nodes carry ``latent=True``."""
        g = nx.DiGraph()
        for v in self._order:
            g.add_node(v, latent=v in self._latent)
        g.add_edges_from(self._g.edges)
        return g

    # -- basic views ----------------------------------------------------------

    @property
    def nodes(self) -> tuple:
        """All nodes, in order of first appearance."""
        return self._order

    @property
    def edges(self) -> tuple:
        """All edges ``(parent, child)``."""
        return tuple(self._g.edges)

    @property
    def latent(self) -> frozenset:
        """The latent (unobserved) nodes."""
        return self._latent

    @property
    def observed(self) -> tuple:
        """The observed nodes, in node order."""
        return tuple(v for v in self._order if v not in self._latent)

    @property
    def intervened(self) -> frozenset:
        """Nodes cut from their parents by :meth:`do`."""
        return self._intervened

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self):
        return iter(self._order)

    def __contains__(self, v: object) -> bool:
        try:
            return v in self._pos
        except TypeError:
            return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DAG):
            return NotImplemented
        return (
            set(self._order) == set(other._order)
            and set(self._g.edges) == set(other._g.edges)
            and self._latent == other._latent
            and self._intervened == other._intervened
        )

    def __hash__(self) -> int:
        return hash((frozenset(self._order), frozenset(self._g.edges), self._latent, self._intervened))

    def __repr__(self) -> str:
        parts = [f"{len(self._order)} nodes", f"{self._g.number_of_edges()} edges"]
        if self._latent:
            parts.append(f"{len(self._latent)} latent")
        if self._intervened:
            parts.append(f"do({', '.join(map(str, self._sorted(self._intervened)))})")
        return f"<DAG {', '.join(parts)}>"

    def __getstate__(self):
        return {"edges": list(self._g.edges), "nodes": list(self._order),
                "latent": list(self._latent), "intervened": list(self._intervened)}

    def __setstate__(self, state):
        g = nx.DiGraph()
        g.add_nodes_from(state["nodes"])
        g.add_edges_from(state["edges"])
        self._init(g, frozenset(state["latent"]), frozenset(state["intervened"]))

    # -- validation -----------------------------------------------------------

    def _hint(self, v: Any) -> str:
        names = [str(n) for n in self._order]
        close = difflib.get_close_matches(str(v), names, n=1)
        return f"; did you mean {close[0]!r}?" if close else ""

    def _check_node(self, v: Any, what: str = "node") -> Hashable:
        _check_hashable(v, what)
        if v not in self._pos:
            raise GraphError(f"unknown {what} {v!r}{self._hint(v)}")
        return v

    def _as_set(self, nodes: Any, what: str = "node", allow_empty: bool = True) -> frozenset:
        """Normalise a node or an iterable of nodes into a frozenset of known nodes."""
        if nodes is None:
            items: Iterable = ()
        elif isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
            items = (nodes,)
        elif isinstance(nodes, tuple) and nodes in self:
            items = (nodes,)  # a tuple that is itself a node name
        else:
            items = nodes
        out = frozenset(self._check_node(v, what) for v in items)
        if not out and not allow_empty:
            raise GraphError(f"the {what} set is empty")
        return out

    def _sorted(self, nodes: Iterable[Hashable]) -> list:
        pos = self._pos
        return sorted(nodes, key=lambda v: pos.get(v, len(pos)))

    # -- family ---------------------------------------------------------------

    def parents(self, v: Hashable) -> tuple:
        """Parents of `v`, in node order."""
        self._check_node(v)
        return tuple(self._sorted(self._g.predecessors(v)))

    def children(self, v: Hashable) -> tuple:
        """Children of `v`, in node order."""
        self._check_node(v)
        return tuple(self._sorted(self._g.successors(v)))

    def ancestors(self, nodes: Hashable | Iterable[Hashable], include_self: bool = False) -> frozenset:
        """Nodes with a directed path into `nodes` (a node or a set).

        The nodes themselves are excluded unless `include_self` (they are
        included anyway when they are ancestors of one another).
        """
        start = self._as_set(nodes)
        out: set = set()
        stack = list(start)
        pred = self._g._pred
        while stack:
            for p in pred[stack.pop()]:
                if p not in out:
                    out.add(p)
                    stack.append(p)
        if include_self:
            out |= start
        return frozenset(out)

    def descendants(self, nodes: Hashable | Iterable[Hashable], include_self: bool = False) -> frozenset:
        """Nodes reachable from `nodes` by a directed path (see :meth:`ancestors`)."""
        start = self._as_set(nodes)
        out: set = set()
        stack = list(start)
        succ = self._g._succ
        while stack:
            for c in succ[stack.pop()]:
                if c not in out:
                    out.add(c)
                    stack.append(c)
        if include_self:
            out |= start
        return frozenset(out)

    def topological_order(self) -> tuple:
        """Nodes with every parent before its children; ties broken by node order."""
        if "topo" not in self._cache:
            pos = self._pos
            self._cache["topo"] = tuple(nx.lexicographical_topological_sort(self._g, key=pos.__getitem__))
        return self._cache["topo"]

    def markov_blanket(self, v: Hashable) -> frozenset:
        """Parents, children and the children's other parents of `v`."""
        self._check_node(v)
        g = self._g
        mb = set(g.predecessors(v)) | set(g.successors(v))
        for c in g.successors(v):
            mb.update(g.predecessors(c))
        mb.discard(v)
        return frozenset(mb)

    def is_adjacent(self, u: Hashable, v: Hashable) -> bool:
        """Whether an edge joins `u` and `v` in either direction."""
        self._check_node(u)
        self._check_node(v)
        return self._g.has_edge(u, v) or self._g.has_edge(v, u)

    def has_edge(self, u: Hashable, v: Hashable) -> bool:
        """Whether the edge ``u -> v`` is in the graph."""
        return u in self and v in self and self._g.has_edge(u, v)

    # -- new graphs -----------------------------------------------------------

    def subgraph(self, nodes: Iterable[Hashable]) -> DAG:
        """The induced subgraph on `nodes` (marks restricted to them)."""
        keep = self._as_set(nodes)
        g = nx.DiGraph()
        g.add_nodes_from(v for v in self._order if v in keep)
        g.add_edges_from((u, v) for u, v in self._g.edges if u in keep and v in keep)
        return DAG._from_nx(g, self._latent & keep, self._intervened & keep)

    def do(self, nodes: Hashable | Iterable[Hashable]) -> DAG:
        """Graph surgery: remove every edge into `nodes` and mark them intervened.

        Intervened nodes are set, not merely unobserved, so they lose any
        latent mark.
        """
        cut = self._as_set(nodes, "intervened node")
        g = nx.DiGraph()
        g.add_nodes_from(self._order)
        g.add_edges_from((u, v) for u, v in self._g.edges if v not in cut)
        return DAG._from_nx(g, self._latent - cut, self._intervened | cut)

    def backdoor_graph(self, treatments: Hashable | Iterable[Hashable]) -> DAG:
        """Remove every edge out of `treatments` (Pearl's G with X underlined)."""
        cut = self._as_set(treatments, "treatment")
        g = nx.DiGraph()
        g.add_nodes_from(self._order)
        g.add_edges_from((u, v) for u, v in self._g.edges if u not in cut)
        return DAG._from_nx(g, self._latent, self._intervened)

    def remove_edges(self, edges: Iterable[tuple[Hashable, Hashable]]) -> DAG:
        """A copy without the given edges (each must exist)."""
        drop = set()
        for e in edges:
            u, v = e
            if not self.has_edge(u, v):
                raise GraphError(f"edge {u!r} -> {v!r} is not in the graph")
            drop.add((u, v))
        g = nx.DiGraph()
        g.add_nodes_from(self._order)
        g.add_edges_from(e for e in self._g.edges if e not in drop)
        return DAG._from_nx(g, self._latent, self._intervened)

    def add_edges(self, edges: Iterable[tuple[Hashable, Hashable]]) -> DAG:
        """A copy with extra edges (new nodes are added); cycles are refused."""
        return DAG(list(self._g.edges) + list(edges), nodes=self._order,
                   latent=self._latent, intervened=self._intervened)

    def with_latent(self, nodes: Iterable[Hashable]) -> DAG:
        """A copy whose latent set is exactly `nodes`."""
        lat = self._as_set(nodes, "latent node")
        return DAG._from_nx(self._g, lat, self._intervened)

    # -- separation (see causalnet.graph.separation) ---------------------------------

    def d_separated(self, x, y, given=None) -> bool:
        """Whether `x` and `y` are d-separated by `given`; see :func:`causalnet.graph.separation.d_separated`."""
        from .separation import d_separated

        return d_separated(self, x, y, given)

    def d_connected(self, x, y, given=None) -> bool:
        """Negation of :meth:`d_separated`."""
        from .separation import d_connected

        return d_connected(self, x, y, given)

    def minimal_d_separator(self, x, y, include=None, restrict=None):
        """A minimal set separating `x` and `y`; see :func:`causalnet.graph.separation.minimal_d_separator`."""
        from .separation import minimal_d_separator

        return minimal_d_separator(self, x, y, include=include, restrict=restrict)

    def implied_independencies(self, kind: str = "basis"):
        """Conditional independencies implied by the graph; see :func:`causalnet.graph.separation.implied_independencies`."""
        from .separation import implied_independencies

        return implied_independencies(self, kind=kind)

    # -- adjustment (see causalnet.graph.adjustment) ---------------------------------

    def is_backdoor_adjustment(self, x, y, z) -> bool:
        """Pearl's backdoor criterion; see :func:`causalnet.graph.adjustment.is_backdoor_adjustment`."""
        from .adjustment import is_backdoor_adjustment

        return is_backdoor_adjustment(self, x, y, z)

    def backdoor_adjustment_sets(self, x, y, *, minimal: bool = False, max_sets: int | None = 1000):
        """All backdoor adjustment sets; see :func:`causalnet.graph.adjustment.backdoor_adjustment_sets`."""
        from .adjustment import backdoor_adjustment_sets

        return backdoor_adjustment_sets(self, x, y, minimal=minimal, max_sets=max_sets)

    def is_adjustment_set(self, x, y, z) -> bool:
        """The (complete) adjustment criterion; see :func:`causalnet.graph.adjustment.is_adjustment_set`."""
        from .adjustment import is_adjustment_set

        return is_adjustment_set(self, x, y, z)

    def minimal_adjustment_sets(self, x, y, *, max_sets: int | None = None):
        """All minimal adjustment sets; see :func:`causalnet.graph.adjustment.minimal_adjustment_sets`."""
        from .adjustment import minimal_adjustment_sets

        return minimal_adjustment_sets(self, x, y, max_sets=max_sets)

    def is_frontdoor_adjustment(self, x, y, z) -> bool:
        """Pearl's front-door criterion; see :func:`causalnet.graph.adjustment.is_frontdoor_adjustment`."""
        from .adjustment import is_frontdoor_adjustment

        return is_frontdoor_adjustment(self, x, y, z)

    def frontdoor_adjustment_sets(self, x, y, *, minimal: bool = False, max_sets: int | None = 1000,
                                  max_candidates: int | None = 100_000):
        """Front-door adjustment sets; see :func:`causalnet.graph.adjustment.frontdoor_adjustment_sets`."""
        from .adjustment import frontdoor_adjustment_sets

        return frontdoor_adjustment_sets(self, x, y, minimal=minimal, max_sets=max_sets,
                                         max_candidates=max_candidates)

    # -- diagrams -------------------------------------------------------------

    def to_dot(self, **options) -> str:
        """DOT text for this graph; see :func:`causalnet.io.dot.to_dot` for options."""
        from ..io.dot import to_dot

        return to_dot(self, **options)


# -- the dagitty-like parser ---------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*|//[^\n]*)
  | (?P<arrow>->|<-)
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


def _tokenize(text: str) -> list[tuple[str, str, int]]:
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


def _parse(text: str) -> DAG:
    body = text.strip()
    m = re.match(r"^(?:dag|digraph)\s*\{(.*)\}\s*$", body, re.DOTALL)
    if m:
        body = m.group(1)
    tokens = _tokenize(body)
    nodes: list = []
    seen: set = set()
    edges: list = []
    latent: list = []

    def add(v):
        if v not in seen:
            seen.add(v)
            nodes.append(v)

    statements: list[list[tuple[str, str, int]]] = [[]]
    for tok in tokens:
        if tok[0] == "sep":
            statements.append([])
        else:
            statements[-1].append(tok)

    for st in statements:
        if not st:
            continue
        groups: list[list] = []  # alternating: group, arrow, group, ...
        arrows: list[str] = []
        i = 0
        expect_group = True
        while i < len(st):
            kind, val, pos = st[i]
            if expect_group:
                if kind == "lbrace":
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
                    i += 1
                elif kind in ("name", "quoted"):
                    grp = [_name(kind, val)]
                    i += 1
                else:
                    raise GraphError(f"cannot parse graph text: expected a node name, got {val!r} at offset {pos}")
                # attributes right after a node
                while i < len(st) and st[i][0] == "attr":
                    words = {w.strip().strip('"').lower() for w in re.split(r"[\s,=]+", st[i][1][1:-1]) if w.strip()}
                    if words & _LATENT_WORDS:
                        latent.extend(grp)
                    i += 1
                groups.append(grp)
                expect_group = False
            else:
                if kind != "arrow":
                    raise GraphError(f"cannot parse graph text: expected '->' or '<-' or ';', got {val!r} at offset {pos}")
                arrows.append(val)
                i += 1
                expect_group = True
        if expect_group and arrows:
            raise GraphError("cannot parse graph text: an arrow has no node after it")
        for grp in groups:
            for v in grp:
                add(v)
        for k, arrow in enumerate(arrows):
            left, right = groups[k], groups[k + 1]
            for a in left:
                for b in right:
                    edges.append((a, b) if arrow == "->" else (b, a))
    return DAG(edges, nodes=nodes, latent=latent)


def _name(kind: str, val: str) -> str:
    if kind == "quoted":
        return re.sub(r"\\(.)", r"\1", val[1:-1])
    return val
