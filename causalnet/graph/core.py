"""The structure of a DAG, and the contract every graph algorithm is written against.

:class:`DAGCore` holds what a directed acyclic graph *is* — nodes, edges, the
latent and intervened marks — and the questions that need no algorithm beyond
a walk: parents, children, ancestors, descendants, a topological order, and
the graph surgeries that return new graphs. It knows nothing of d-separation,
adjustment or drawing. :class:`~causalnet.graph.dag.DAG` adds those as thin
methods that delegate to the algorithm modules, which import only this module::

    core  <-  separation  <-  adjustment
      ^           ^               ^
      |           +------ dag ----+---> drawing (DOT text)
    parse --------------/

The package-internal contract (public names, stable, not exported from
``causalnet``) that algorithms use:

- :meth:`DAGCore.check_node`, :meth:`DAGCore.node_set`, :meth:`DAGCore.in_order`
  validate and order node arguments with the library's error messages;
- :attr:`DAGCore.index` is a :class:`GraphIndex`: the nodes numbered
  ``0 .. n-1`` in node order, with integer parent and child lists
  (``par[v]``, ``chi[v]``) and their CSR arrays, built once per graph;
- :func:`closure` is the one reachability walk (ancestors with parent lists,
  descendants with child lists, components with an undirected adjacency).

A graph is immutable: every operation returns a new one, and caches (the
index, the topological order) fill in on first use.

Examples
--------
>>> from causalnet.graph.core import DAGCore, closure
>>> g = DAGCore([("Z", "X"), ("Z", "Y"), ("X", "Y")])
>>> g.topological_order()
('Z', 'X', 'Y')
>>> ix = g.index
>>> sorted(g.nodes[i] for i in closure(ix.par, {ix.pos["Y"]}))
['X', 'Y', 'Z']
"""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Hashable, Iterable, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:                       # annotations only: networkx loads with the first conversion
    import networkx as nx

from ..errors import GraphError

__all__ = ["DAGCore", "GraphIndex", "closure", "check_hashable", "register_dag_class", "default_dag_class",
           "factorize_pays"]


# Edge lists naming at least this many endpoints intern them with pandas.factorize
# (one C hash pass, about 3x faster than a dict) when every name is a str and
# pandas is loaded already; from _FACTORIZE_IMPORT on it pays to load it (about 0.5 s).
_FACTORIZE_MIN = 20_000
_FACTORIZE_IMPORT = 1_000_000


def factorize_pays(count: int) -> bool:
    """Whether numbering `count` str names with ``pandas.factorize`` beats a dict, counting pandas' import."""
    return count >= _FACTORIZE_IMPORT or (count >= _FACTORIZE_MIN and "pandas" in sys.modules)


def check_hashable(item: Any, what: str) -> None:
    """Raise :class:`GraphError` unless `item` can name a node (hashable, not None)."""
    if item is None:
        raise GraphError(f"{what} None cannot name a node")
    try:
        hash(item)
    except TypeError:
        raise GraphError(f"{what} {item!r} is not hashable; node names must be hashable (strings are usual)") from None


def closure(adj, start, block=None) -> set:
    """`start` and every node reachable from it along `adj` (a list or dict of neighbour lists).

    With parent lists: the ancestors (self included); with child lists: the
    descendants; with an undirected adjacency: the connected component. With
    `block` (a set), the search never enters a node of `block` (the start
    nodes are kept even if they are in it).
    """
    seen = set(start)
    stack = list(seen)
    if block:
        while stack:
            for p in adj[stack.pop()]:
                if p not in seen and p not in block:
                    seen.add(p)
                    stack.append(p)
        return seen
    while stack:
        for p in adj[stack.pop()]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


def _edge_pair(e: Any) -> tuple:
    """A validated ``(u, v)`` from one item of an edge list."""
    if isinstance(e, (str, bytes, set, frozenset, Mapping)):
        raise GraphError(f"edge {e!r} is not a (parent, child) pair; a {type(e).__name__} is not an edge")
    try:
        u, v = e
    except (TypeError, ValueError):
        raise GraphError(f"edge {e!r} is not a (parent, child) pair") from None
    check_hashable(u, f"node in edge {e!r}:")
    check_hashable(v, f"node in edge {e!r}:")
    if u == v:
        raise GraphError(f"self-loop on {u!r}: an edge {u!r} -> {v!r} is not allowed in a DAG")
    return u, v


def _iterable(items: Any, what: str) -> Iterable:
    """`items` as an iterable of items; a lone string or hashable is one item."""
    if items is None:
        return ()
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        return (items,)
    return items


class GraphIndex:
    """Integer-indexed adjacency of a DAG: node ``i`` is ``nodes[i]``.

    Attributes
    ----------
    pos : dict
        Node -> integer.
    nodes : tuple
        Integer -> node (the DAG's node order).
    n : int
    p_ptr, p_idx, c_ptr, c_idx : ndarray of int64
        Parents and children of each node as CSR arrays (row ``v`` is
        ``idx[ptr[v]:ptr[v + 1]]``), each row in edge insertion order, for
        frontier-at-a-time numpy searches and compiled kernels.
    par, chi : list of list of int
        The same rows as Python lists (built on first use).
    chi_flat : tuple of (list of int, list of int) or None
        ``c_ptr`` and ``c_idx`` as Python lists, when the acyclicity test
        built them (its Kahn pass reads them; a search reuses them instead
        of converting the arrays again); None otherwise.
    scratch : object or None
        Working memory a search may keep with the index (the compiled
        d-separation keeps its stamp arrays here); None until one does.
    quick : object or None
        What the quick d-separation path keeps (:mod:`causalnet.graph.bitsep`); None until its first query.
    """

    __slots__ = ("pos", "nodes", "n", "p_ptr", "p_idx", "c_ptr", "c_idx", "_par", "_chi", "chi_flat", "scratch",
                 "quick")

    def __init__(self, pos: dict, nodes: tuple, src: np.ndarray, dst: np.ndarray) -> None:
        """Index of the edges ``src[k] -> dst[k]`` (int arrays of node indices, no repeats), in that order."""
        self.pos = pos
        self.nodes = nodes
        self.n = n = len(nodes)
        self.p_ptr, self.p_idx = _csr(dst, src, n)
        self.c_ptr, self.c_idx = _csr(src, dst, n)
        self._par = self._chi = self.chi_flat = None
        self.scratch = self.quick = None

    @property
    def par(self) -> list:
        if self._par is None:
            self._par = _rows(self.p_ptr, self.p_idx)
        return self._par

    @property
    def chi(self) -> list:
        if self._chi is None:
            self._chi = _rows(self.c_ptr, self.c_idx, self.chi_flat)
        return self._chi

    @property
    def m(self) -> int:
        """The number of edges."""
        return int(self.c_idx.size)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every edge as ``(src, dst)`` index arrays, grouped by parent in node order."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.c_ptr)), self.c_idx


def _csr(key: np.ndarray, val: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``key -> [val ...]`` as CSR arrays, each row in input order (a stable sort)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=n), out=ptr[1:])
    return ptr, val[np.argsort(key, kind="stable")].astype(np.int64, copy=False)


def _rows(ptr: np.ndarray, idx: np.ndarray, lists: tuple | None = None) -> list[list[int]]:
    """Row ``v`` of the CSR arrays as a list, for every node (`lists`: the arrays as lists already, or None)."""
    p, flat = lists if lists is not None else (ptr.tolist(), idx.tolist())
    return list(map(flat.__getitem__, map(slice, p[:-1], p[1:])))


def _unique_pairs(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs without repeats (a repeated edge is one edge), first occurrences in order."""
    if src.size < 2:
        return src, dst
    key = src * n + dst
    first = np.unique(key, return_index=True)[1]
    if first.size == key.size:
        return src, dst
    first.sort()
    return src[first], dst[first]


# The acyclicity test peels sources in Python (Kahn) until this process has spent _KAHN_BUDGET_S on it
# (about what loading scipy.sparse.csgraph costs a fresh process), then uses csgraph's strongly connected
# components, which are faster per graph; graphs over _KAHN_MAX_NODES nodes go to csgraph at once.
_KAHN_MAX_NODES = 20_000
_KAHN_BUDGET_S = 0.3
_kahn = {"spent": 0.0}


def _is_acyclic(ix: GraphIndex) -> bool:
    """No directed cycle: every node can be peeled as a source (Kahn), or every strongly connected
    component is one node (self-loops are refused earlier)."""
    if ix.m == 0:
        return True
    if ix.n <= _KAHN_MAX_NODES and _kahn["spent"] < _KAHN_BUDGET_S:
        t0 = time.process_time()
        indeg = np.diff(ix.p_ptr).tolist()
        ptr, idx = ix.c_ptr.tolist(), ix.c_idx.tolist()
        stack = [v for v, d in enumerate(indeg) if d == 0]
        seen = 0
        while stack:
            v = stack.pop()
            seen += 1
            for c in idx[ptr[v]:ptr[v + 1]]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    stack.append(c)
        _kahn["spent"] += time.process_time() - t0
        if seen == ix.n:
            ix.chi_flat = ptr, idx                  # converted already: the d-separation searches read them
        return seen == ix.n
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    adj = csr_matrix((np.ones(ix.m, dtype=np.int8), ix.c_idx, ix.c_ptr), shape=(ix.n, ix.n))
    return connected_components(adj, directed=True, connection="strong", return_labels=False) == ix.n


def _intern(edges: list, nodes: list) -> tuple[tuple, dict, np.ndarray] | None:
    """Node order, node -> index and the flat index array ``[u0, v0, u1, v1, ...]``, in C-level passes.

    None when some item needs the checked path (an edge that is not a 2-tuple
    or 2-list, an unhashable name, None, a self-loop): it raises the precise error.
    """
    if edges and (not set(map(type, edges)) <= {tuple, list} or set(map(len, edges)) != {2}):
        return None
    flat = list(chain(nodes, chain.from_iterable(edges)))
    if factorize_pays(len(flat)) and set(map(type, flat)) == {str}:
        import pandas as pd  # optional heavy dependency: one C hash pass interns every name

        codes, uniques = pd.factorize(np.array(flat, dtype=object), sort=False)
        order = tuple(uniques.tolist())
        pos = dict(zip(order, range(len(order))))
        ids = codes[len(nodes):].astype(np.int64, copy=False)
    else:
        try:
            order = tuple(dict.fromkeys(flat))
        except TypeError:
            return None
        if None in order:
            return None
        pos = dict(zip(order, range(len(order))))
        ids = np.fromiter(map(pos.__getitem__, flat[len(nodes):]), dtype=np.int64, count=len(flat) - len(nodes))
    if (ids[0::2] == ids[1::2]).any():
        return None
    return order, pos, ids


def _intern_checked(edges: list, nodes: list) -> tuple[tuple, dict, np.ndarray]:
    """:func:`_intern` item by item, raising :class:`GraphError` on the first bad one."""
    pos: dict = {}
    for v in nodes:
        check_hashable(v, "node")
        pos.setdefault(v, len(pos))
    ids = []
    for e in edges:
        u, v = _edge_pair(e)
        ids += (pos.setdefault(u, len(pos)), pos.setdefault(v, len(pos)))
    return tuple(pos), pos, np.array(ids, dtype=np.int64)


def _topological(par: list, chi: list) -> list[int] | None:
    """Kahn's algorithm, smallest index first among the ready nodes; None on a cycle."""
    indeg = [len(p) for p in par]
    ready = [v for v, d in enumerate(indeg) if d == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        v = heapq.heappop(ready)
        out.append(v)
        for c in chi[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(ready, c)
    return out if len(out) == len(par) else None


class DAGCore:
    """An immutable directed acyclic graph with latent and intervened marks (structure only).

    Parameters
    ----------
    edges : iterable of (u, v) pairs, optional
        Directed edges ``u -> v``. A string is not an edge.
    nodes : node or iterable of nodes, optional
        Extra nodes (isolated nodes, or to fix the node order).
    latent : node or iterable of nodes, optional
        Nodes that are not observed. They must be nodes of the graph.
    intervened : node or iterable of nodes, optional
        Nodes marked as intervened on (set by :meth:`do`; used by diagrams).

    Raises
    ------
    GraphError
        On a cycle (the message names it), a self-loop, a malformed edge (the
        message names it), a name that is None or not hashable, or a
        latent/intervened node that is not in the graph.
    """

    __slots__ = ("_order", "_pos", "_latent", "_intervened", "_cache")

    def __init__(
        self,
        edges: Iterable[tuple[Hashable, Hashable]] = (),
        nodes: Iterable[Hashable] = (),
        latent: Iterable[Hashable] = (),
        intervened: Iterable[Hashable] = (),
    ) -> None:
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
            raise GraphError(f"DAG() expects an iterable of edges, got {type(edges).__name__} {edges!r:.60}")
        edges = edges if type(edges) is list else list(edges)
        if nodes is None:
            raise GraphError("DAG() expects nodes= as an iterable of node names (default: none besides the "
                             "edges'), got None")
        nodes = list(_iterable(nodes, "node"))
        interned = _intern(edges, nodes) or _intern_checked(edges, nodes)
        order, pos, ids = interned
        self._build(order, pos, ids[0::2], ids[1::2])
        self._latent = self.node_set(latent, "latent node", unknown="is not a node of the graph")
        self._intervened = self.node_set(intervened, "intervened node", unknown="is not a node of the graph")

    def _build(self, order: tuple, pos: dict, src: np.ndarray, dst: np.ndarray) -> None:
        """Fill a new graph from interned edges (repeats allowed, self-loops not); refuse a cycle, naming it."""
        src, dst = _unique_pairs(src, dst, len(order))
        self._set(order, pos, src, dst, frozenset(), frozenset())
        if not _is_acyclic(self.index):
            raise GraphError(f"the edges contain the cycle {_cycle_text(self.index)}")

    @classmethod
    def from_indices(cls, nodes: Iterable[Hashable], src, dst):
        """A graph on `nodes` with the edges ``nodes[src[k]] -> nodes[dst[k]]``, for readers that number names themselves.

        Parameters
        ----------
        nodes : sequence of distinct hashable names (not None)
        src, dst : int arrays of shape (m,)
            Edge endpoints as positions in `nodes`; a repeated edge is one edge.

        Raises
        ------
        GraphError
            If the arrays disagree in shape, an index is out of range, a
            name repeats or is None or unhashable, an edge is a self-loop, or
            the edges close a cycle (named).
        """
        order = tuple(nodes)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if src.shape != dst.shape or src.ndim != 1:
            raise GraphError(f"from_indices expects two index arrays of one shape (m,), got {src.shape} and {dst.shape}")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= len(order)):
            raise GraphError(f"from_indices: an edge index is outside 0 .. {len(order) - 1}")
        loops = np.flatnonzero(src == dst)
        if loops.size:
            v = order[src[loops[0]]]
            raise GraphError(f"self-loop on {v!r}: an edge {v!r} -> {v!r} is not allowed in a DAG")
        try:
            pos = dict(zip(order, range(len(order))))
        except TypeError:
            raise GraphError("from_indices: a node name is not hashable") from None
        if len(pos) != len(order) or None in pos:
            raise GraphError("from_indices: node names must be distinct and not None")
        new = cls.__new__(cls)
        new._build(order, pos, src, dst)
        return new

    def _set(self, order: tuple, pos: dict, src: np.ndarray, dst: np.ndarray, latent: frozenset,
             intervened: frozenset) -> None:
        self._order = order
        self._pos = pos
        self._latent = latent
        self._intervened = intervened
        self._cache: dict[str, Any] = {"index": GraphIndex(pos, order, src, dst)}

    @property
    def _par(self) -> list:
        return self.index.par

    @property
    def _chi(self) -> list:
        return self.index.chi

    def _derived(self, keep: Iterable[int] | None, edge_ok, latent: frozenset, intervened: frozenset):
        """A new graph of the same class on the nodes `keep` (all if None) and the edges passing `edge_ok`.

        `edge_ok(src, dst)` takes the index arrays of every edge and returns a
        boolean mask (None keeps them all).
        """
        new = type(self).__new__(type(self))
        src, dst = self.index.edge_arrays()
        if edge_ok is not None:
            ok = edge_ok(src, dst)
            src, dst = src[ok], dst[ok]
        if keep is None:
            new._set(self._order, self._pos, src, dst, latent, intervened)
            return new
        old = np.array(sorted(keep), dtype=np.int64)
        renum = np.full(len(self._order), -1, dtype=np.int64)
        renum[old] = np.arange(old.size)
        inside = (renum[src] >= 0) & (renum[dst] >= 0)
        order = tuple(self._order[i] for i in old.tolist())
        new._set(order, dict(zip(order, range(len(order)))), renum[src[inside]], renum[dst[inside]],
                 latent, intervened)
        return new

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph, latent: Iterable[Hashable] | None = None):
        """Build a DAG from a networkx ``DiGraph``.

        Latent nodes are those in `latent`, or, when it is None, those whose
        node attribute ``latent`` is true.
        """
        import networkx as nx  # networkx loads with the first conversion, not with the package

        if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
            raise GraphError(f"from_networkx expects a networkx DiGraph, got {type(graph).__name__}")
        if latent is None:
            latent = [v for v, d in graph.nodes(data=True) if d.get("latent")]
        return cls(graph.edges, nodes=graph.nodes, latent=latent)

    def to_networkx(self) -> nx.DiGraph:
        """A new (mutable) networkx ``DiGraph``; latent nodes carry ``latent=True``."""
        import networkx as nx

        g = nx.DiGraph()
        for v in self._order:
            g.add_node(v, latent=v in self._latent)
        g.add_edges_from(self.edges)
        return g

    @property
    def _g(self) -> nx.DiGraph:
        """A frozen networkx view of the structure (built on first use)."""
        import networkx as nx

        g = self._cache.get("nx")
        if g is None:
            g = self._cache["nx"] = nx.freeze(self.to_networkx())
        return g

    # -- basic views ----------------------------------------------------------

    @property
    def nodes(self) -> tuple:
        """All nodes, in order of first appearance."""
        return self._order

    @property
    def edges(self) -> tuple:
        """All edges ``(parent, child)``, grouped by parent in node order."""
        src, dst = self.index.edge_arrays()
        order = self._order
        return tuple(zip(map(order.__getitem__, src.tolist()), map(order.__getitem__, dst.tolist())))

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

    @property
    def index(self) -> GraphIndex:
        """The integer-indexed adjacency (:class:`GraphIndex`), built once and cached."""
        return self._cache["index"]

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self):
        return iter(self._order)

    def __contains__(self, v: object) -> bool:
        try:
            return v in self._pos
        except TypeError:
            return False

    def _key(self) -> tuple:
        return (frozenset(self._order), frozenset(self.edges), self._latent, self._intervened)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DAGCore):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"{len(self._order)} nodes", f"{self.index.m} edges"]
        if self._latent:
            parts.append(f"{len(self._latent)} latent")
        if self._intervened:
            parts.append(f"do({', '.join(map(str, self.in_order(self._intervened)))})")
        return f"<DAG {', '.join(parts)}>"

    def __getstate__(self):
        return {"edges": list(self.edges), "nodes": list(self._order),
                "latent": list(self._latent), "intervened": list(self._intervened)}

    def __setstate__(self, state):
        order = tuple(state["nodes"])
        pos = dict(zip(order, range(len(order))))
        ids = np.array([pos[v] for e in state["edges"] for v in e], dtype=np.int64)
        self._set(order, pos, ids[0::2], ids[1::2], frozenset(state["latent"]), frozenset(state["intervened"]))

    # -- validation (the contract algorithms use) -----------------------------

    def hint(self, v: Any) -> str:
        """``"; did you mean 'X'?"`` for the node name closest to `v`, or ``""``."""
        names = [str(n) for n in self._order]
        import difflib  # only for the "did you mean" of an error message

        close = difflib.get_close_matches(str(v), names, n=1)
        return f"; did you mean {close[0]!r}?" if close else ""

    def check_node(self, v: Any, what: str = "node") -> Hashable:
        """`v` if it is a node of the graph, else :class:`GraphError` naming it (and a close match)."""
        check_hashable(v, what)
        if v not in self._pos:
            raise GraphError(f"unknown {what} {v!r}{self.hint(v)}")
        return v

    def node_set(self, nodes: Any, what: str = "node", allow_empty: bool = True, *,
                 unknown: str | None = None) -> frozenset:
        """A node or an iterable of nodes as a frozenset of known nodes.

        None is the empty set; a string, or a tuple that is itself a node, is
        one node. `unknown` replaces the "unknown node" wording of the error.
        """
        if isinstance(nodes, tuple) and nodes in self:
            nodes = (nodes,)  # a tuple that is itself a node name
        out = set()
        for v in _iterable(nodes, what):
            if unknown is not None:
                check_hashable(v, what)
                if v not in self._pos:
                    raise GraphError(f"{what} {v!r} {unknown}")
            else:
                self.check_node(v, what)
            out.add(v)
        if not out and not allow_empty:
            raise GraphError(f"the {what} set is empty")
        return frozenset(out)

    def in_order(self, nodes: Iterable[Hashable]) -> list:
        """`nodes` sorted by node order."""
        pos = self._pos
        return sorted(nodes, key=lambda v: pos.get(v, len(pos)))

    # -- family ---------------------------------------------------------------

    def _names(self, ints: Iterable[int]) -> list:
        order = self._order
        return [order[i] for i in sorted(ints)]

    def parents(self, v: Hashable) -> tuple:
        """Parents of `v`, in node order."""
        return tuple(self._names(self._par[self._pos[self.check_node(v)]]))

    def children(self, v: Hashable) -> tuple:
        """Children of `v`, in node order."""
        return tuple(self._names(self._chi[self._pos[self.check_node(v)]]))

    def ancestors(self, nodes: Hashable | Iterable[Hashable], include_self: bool = False) -> frozenset:
        """Nodes with a directed path into `nodes` (a node or a set).

        The nodes themselves are excluded unless `include_self` (they are
        included anyway when they are ancestors of one another).
        """
        return self._strict(self._par, nodes, include_self, "ancestors")

    def descendants(self, nodes: Hashable | Iterable[Hashable], include_self: bool = False) -> frozenset:
        """Nodes reachable from `nodes` by a directed path (see :meth:`ancestors`)."""
        return self._strict(self._chi, nodes, include_self, "descendants")

    def _strict(self, adj: list, nodes: Any, include_self: bool, what: str) -> frozenset:
        if nodes is None:
            raise GraphError(f"{what}() expects a node or a set of nodes, got None")
        start = {self._pos[v] for v in self.node_set(nodes)}
        out: set = set()
        stack = list(start)
        while stack:  # like closure(), but a start node counts only when reached again
            for p in adj[stack.pop()]:
                if p not in out:
                    out.add(p)
                    stack.append(p)
        if include_self:
            out |= start
        order = self._order
        return frozenset(order[i] for i in out)

    def topological_order(self) -> tuple:
        """Nodes with every parent before its children; ties broken by node order."""
        if "topo" not in self._cache:
            order = self._order
            self._cache["topo"] = tuple(order[i] for i in _topological(self._par, self._chi))
        return self._cache["topo"]

    def markov_blanket(self, v: Hashable) -> frozenset:
        """Parents, children and the children's other parents of `v`."""
        i = self._pos[self.check_node(v)]
        mb = set(self._par[i]) | set(self._chi[i])
        for c in self._chi[i]:
            mb.update(self._par[c])
        mb.discard(i)
        return frozenset(self._order[j] for j in mb)

    def has_edge(self, u: Hashable, v: Hashable) -> bool:
        """Whether the edge ``u -> v`` is in the graph."""
        if u not in self or v not in self:
            return False
        return self._pos[u] in self._par[self._pos[v]]

    def is_adjacent(self, u: Hashable, v: Hashable) -> bool:
        """Whether an edge joins `u` and `v` in either direction."""
        self.check_node(u)
        self.check_node(v)
        return self.has_edge(u, v) or self.has_edge(v, u)

    # -- new graphs -----------------------------------------------------------

    def subgraph(self, nodes: Iterable[Hashable]):
        """The induced subgraph on `nodes` (marks restricted to them)."""
        keep = self.node_set(nodes)
        return self._derived({self._pos[v] for v in keep}, None,
                             self._latent & keep, self._intervened & keep)

    def do(self, nodes: Hashable | Iterable[Hashable]):
        """Graph surgery: remove every edge into `nodes` and mark them intervened.

        Intervened nodes are set, not merely unobserved, so they lose any
        latent mark.
        """
        cut = self.node_set(nodes, "intervened node")
        ci = np.array([self._pos[v] for v in cut], dtype=np.int64)
        return self._derived(None, lambda u, c: ~np.isin(c, ci), self._latent - cut, self._intervened | cut)

    def backdoor_graph(self, treatments: Hashable | Iterable[Hashable]):
        """Remove every edge out of `treatments` (Pearl's G with X underlined)."""
        ci = np.array([self._pos[v] for v in self.node_set(treatments, "treatment")], dtype=np.int64)
        return self._derived(None, lambda u, c: ~np.isin(u, ci), self._latent, self._intervened)

    def remove_edges(self, edges: Iterable[tuple[Hashable, Hashable]]):
        """A copy without the given edges (each must exist)."""
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
            raise GraphError(f"remove_edges expects an iterable of edges, got {type(edges).__name__}")
        drop = set()
        for e in edges:
            u, v = _edge_pair(e)
            if not self.has_edge(u, v):
                raise GraphError(f"edge {u!r} -> {v!r} is not in the graph")
            drop.add(self._pos[u] * len(self._order) + self._pos[v])
        gone = np.array(sorted(drop), dtype=np.int64)
        return self._derived(None, lambda u, c: ~np.isin(u * len(self._order) + c, gone), self._latent,
                             self._intervened)

    def add_edges(self, edges: Iterable[tuple[Hashable, Hashable]]):
        """A copy with extra edges (new nodes are added); cycles are refused."""
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
            raise GraphError(f"add_edges expects an iterable of edges, got {type(edges).__name__}")
        return type(self)(list(self.edges) + list(edges), nodes=self._order,
                          latent=self._latent, intervened=self._intervened)

    def with_latent(self, nodes: Iterable[Hashable]):
        """A copy whose latent set is exactly `nodes`."""
        lat = self.node_set(nodes, "latent node")
        return self._derived(None, None, lat, self._intervened)


_DAG_CLASS: list = [DAGCore]


def register_dag_class(cls: type) -> None:
    """Make `cls` (a :class:`DAGCore` subclass) the class of graphs built where no graph gives one.

    :mod:`causalnet.graph.dag` registers :class:`~causalnet.graph.dag.DAG` when it
    is imported, so that the algorithm modules, which import only this module,
    still hand users full DAGs (``PDAG(...).to_dag()``, ``MixedGraph(...).to_dag()``).
    """
    if not (isinstance(cls, type) and issubclass(cls, DAGCore)):
        raise GraphError(f"register_dag_class expects a DAGCore subclass, got {cls!r}")
    _DAG_CLASS[0] = cls


def default_dag_class() -> type:
    """The registered graph class (:class:`~causalnet.graph.dag.DAG` once that module is imported)."""
    return _DAG_CLASS[0]


def _cycle_text(ix: GraphIndex) -> str:
    """One directed cycle, as ``A -> B -> C -> A``, in linear time.

    Every node of a strongly connected component of two or more nodes has a
    child inside it, so walking from child to child within the component
    (from its first node) must come back to a node already on the walk.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    adj = csr_matrix((np.ones(ix.m, dtype=np.int8), ix.c_idx, ix.c_ptr), shape=(ix.n, ix.n))
    labels = connected_components(adj, directed=True, connection="strong")[1]
    comp = int(np.flatnonzero(np.bincount(labels) > 1)[0])
    v = int(np.flatnonzero(labels == comp)[0])
    at: dict[int, int] = {}
    walk: list[int] = []
    while v not in at:
        at[v] = len(walk)
        walk.append(v)
        row = ix.c_idx[ix.c_ptr[v]:ix.c_ptr[v + 1]]
        v = int(row[labels[row] == comp][0])
    cycle = walk[at[v]:] + [v]
    return " -> ".join(str(ix.nodes[u]) for u in cycle)
