"""Mixed graphs: the latent projection of a DAG, its c-components (districts), bidirected edges as latent parents.

A DAG with latent nodes says less about the observed variables than it seems:
only its **latent projection** matters, a :class:`MixedGraph` over the observed
nodes with ``A -> B`` where A causes B through latent nodes only and
``A <-> B`` where an unobserved common cause reaches both. The bidirected edges
cut the observed nodes into **c-components**. :func:`as_graph` reads a graph
text such as ``"X -> Y; X <-> Y"``.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG([("X", "Z"), ("Z", "Y"), ("U", "X"), ("U", "Y")], latent=["U"])
>>> latent_projection(g).bidirected_edges
(('X', 'Y'),)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from ..errors import GraphError
from . import separation
from .core import DAGCore, default_dag_class
from .parse import latent_parent_name, parse_graph

__all__ = [
    "MixedGraph", "as_graph", "latent_projection", "c_components", "district", "with_bidirected",
    "check_nodes", "node_list", "dag_of", "edge_pair",
]


# -- the mixed graph --------------------------------------------------------------------------

class MixedGraph:
    """An acyclic directed mixed graph (ADMG): directed edges plus bidirected edges.

    Nodes are kept in a topological order of the directed part. Built by
    :func:`latent_projection` from a DAG with latent nodes; every method
    returns a new graph.

    Examples
    --------
    >>> h = MixedGraph([("X", "Z"), ("Z", "Y")], [("X", "Y")])
    >>> [sorted(c) for c in h.c_components()]
    [['X', 'Y'], ['Z']]
    >>> h.bidirected_edges
    (('X', 'Y'),)
    """

    __slots__ = ("nodes", "_pa", "_bi", "_rank", "dag_class")

    def __init__(self, directed: Iterable[tuple] = (), bidirected: Iterable[tuple] = (),
                 nodes: Iterable[Hashable] = (), *, dag_class: type | None = None) -> None:
        directed, bidirected = list(directed), list(bidirected)
        self.dag_class = dag_class or default_dag_class()
        dag = DAGCore(directed, nodes=list(nodes) + [v for e in bidirected for v in edge_pair(e)])
        self.nodes = dag.topological_order()
        self._rank = {v: i for i, v in enumerate(self.nodes)}
        self._pa = {v: frozenset(dag.parents(v)) for v in self.nodes}
        bi: dict = {v: set() for v in self.nodes}
        for e in bidirected:
            a, b = edge_pair(e)
            if a == b:
                raise GraphError(f"bidirected self-loop on {a!r}")
            bi[a].add(b)
            bi[b].add(a)
        self._bi = {v: frozenset(s) for v, s in bi.items()}

    @classmethod
    def _build(cls, nodes: tuple, pa: dict, bi: dict, dag_class: type) -> MixedGraph:
        self = cls.__new__(cls)
        self.dag_class = dag_class
        self.nodes = nodes
        self._rank = {v: i for i, v in enumerate(nodes)}
        self._pa, self._bi = pa, bi
        return self

    @property
    def directed_edges(self) -> tuple:
        """``(parent, child)`` pairs in node order."""
        return tuple((p, v) for v in self.nodes for p in self.sorted(self._pa[v]))

    @property
    def bidirected_edges(self) -> tuple:
        """``(a, b)`` pairs, each once, ``a`` before ``b`` in node order."""
        return tuple((a, b) for a in self.nodes for b in self.sorted(self._bi[a]) if self._rank[a] < self._rank[b])

    def sorted(self, nodes: Iterable[Hashable]) -> list:
        """`nodes` in the graph's (topological) order."""
        return sorted(nodes, key=self._rank.__getitem__)

    def parents(self, v: Hashable) -> frozenset:
        return self._pa[v]

    def siblings(self, v: Hashable) -> frozenset:
        """Nodes joined to `v` by a bidirected edge."""
        return self._bi[v]

    def ancestors(self, nodes: Iterable[Hashable]) -> frozenset:
        """Ancestors of `nodes`, the nodes included."""
        out = set(nodes)
        stack = list(out)
        while stack:
            for p in self._pa[stack.pop()]:
                if p not in out:
                    out.add(p)
                    stack.append(p)
        return frozenset(out)

    def subgraph(self, nodes: Iterable[Hashable]) -> MixedGraph:
        keep = frozenset(nodes)
        return MixedGraph._build(tuple(v for v in self.nodes if v in keep),
                                 {v: self._pa[v] & keep for v in self.nodes if v in keep},
                                 {v: self._bi[v] & keep for v in self.nodes if v in keep}, self.dag_class)

    def do(self, nodes: Iterable[Hashable]) -> MixedGraph:
        """Remove every edge into `nodes` (directed and bidirected)."""
        cut = frozenset(nodes)
        return MixedGraph._build(self.nodes,
                                 {v: frozenset() if v in cut else self._pa[v] for v in self.nodes},
                                 {v: frozenset() if v in cut else self._bi[v] - cut for v in self.nodes},
                                 self.dag_class)

    def remove_outgoing(self, nodes: Iterable[Hashable]) -> MixedGraph:
        """Remove every directed edge out of `nodes` (bidirected edges stay)."""
        cut = frozenset(nodes)
        return MixedGraph._build(self.nodes, {v: self._pa[v] - cut for v in self.nodes}, self._bi, self.dag_class)

    def c_components(self) -> list[frozenset]:
        """The c-components (districts): classes of nodes joined by bidirected paths, in node order."""
        seen: set = set()
        out = []
        for v in self.nodes:
            if v in seen:
                continue
            comp = {v}
            stack = [v]
            while stack:
                for s in self._bi[stack.pop()]:
                    if s not in comp:
                        comp.add(s)
                        stack.append(s)
            seen |= comp
            out.append(frozenset(comp))
        return out

    def to_dag(self) -> DAGCore:
        """The canonical DAG: one latent node ``U[a,b]`` per bidirected edge, of the class :attr:`dag_class`."""
        return with_bidirected(self.dag_class(self.directed_edges, nodes=self.nodes), self.bidirected_edges)

    def m_separated(self, x: Iterable[Hashable], y: Iterable[Hashable], given: Iterable[Hashable] = ()) -> bool:
        """m-separation (d-separation in the canonical DAG)."""
        return separation.d_separated(self.to_dag(), set(x), set(y), given=set(given))

    def to_dot(self) -> str:
        """DOT text: directed edges solid, bidirected edges dashed with two arrowheads."""
        q = _dot_id
        lines = ["digraph {"] + [f"  {q(v)};" for v in self.nodes]
        lines += [f"  {q(a)} -> {q(b)};" for a, b in self.directed_edges]
        lines += [f"  {q(a)} -> {q(b)} [dir=both, style=dashed, constraint=false];" for a, b in self.bidirected_edges]
        return "\n".join(lines + ["}"])

    def __repr__(self) -> str:
        return f"<MixedGraph {len(self.nodes)} nodes, {len(self.directed_edges)} directed, " \
               f"{len(self.bidirected_edges)} bidirected>"


def _dot_id(v: Hashable) -> str:
    text = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def edge_pair(e: Any) -> tuple:
    try:
        a, b = e
    except (TypeError, ValueError):
        raise GraphError(f"edge {e!r} is not a pair of nodes") from None
    return a, b


def as_graph(graph: Any, fn: str = "identify") -> DAGCore | MixedGraph:
    """`graph` itself (a DAG or a mixed graph), or the DAG that a graph text describes.

    Text is dagitty-like (:meth:`causalnet.DAG.parse`): ``"X -> Y; X <-> Y"``,
    each ``A <-> B`` a latent common parent ``U[A,B]``.
    """
    if isinstance(graph, str):
        edges, nodes, latent = parse_graph(graph)
        return default_dag_class()(edges, nodes=nodes, latent=latent)
    if not isinstance(graph, (DAGCore, MixedGraph)):
        raise GraphError(f"{fn} expects a DAG, a MixedGraph or a graph text such as 'X -> Y; X <-> Y', "
                         f"got {type(graph).__name__}")
    return graph


def latent_projection(dag: DAGCore | MixedGraph | str) -> MixedGraph:
    """The mixed graph over the observed nodes of `dag` (a DAG, a mixed graph, or a graph text).

    ``A -> B`` when a directed path leads from A to B through latent nodes
    only; ``A <-> B`` when a latent node has directed paths to both A and B
    through latent nodes only. The projection keeps every d-separation among
    observed nodes and every identification result.
    """
    dag = as_graph(dag, "latent_projection")
    if isinstance(dag, MixedGraph):
        return dag
    lat = dag.latent
    reach: dict = {}  # latent -> observed nodes it reaches through latent nodes only
    for v in reversed(dag.topological_order()):
        if v in lat:
            out: set = set()
            for c in dag.children(v):
                out |= reach[c] if c in lat else {c}
            reach[v] = frozenset(out)
    directed = []
    for v in dag.observed:
        for c in dag.children(v):
            directed.extend((v, o) for o in ([c] if c not in lat else reach[c]))
    bidirected = set()
    for u in lat:
        r = sorted(reach[u], key=dag.nodes.index)
        bidirected.update((a, b) for i, a in enumerate(r) for b in r[i + 1:])
    order = [v for v in dag.topological_order() if v not in lat]
    graph = MixedGraph(set(directed), sorted(bidirected, key=str), nodes=order, dag_class=type(dag))
    return graph


def c_components(dag: DAGCore) -> list[frozenset]:
    """The c-components (districts) of the observed nodes of `dag`; see :meth:`MixedGraph.c_components`."""
    return latent_projection(dag).c_components()


def district(dag: DAGCore, node: Hashable) -> frozenset:
    """The c-component of `node` (an observed node of `dag`)."""
    h = latent_projection(dag)
    check_nodes(h, [node], "node")
    return next(c for c in h.c_components() if node in c)


def with_bidirected(dag: DAGCore, pairs: Iterable[tuple[Hashable, Hashable]]) -> DAGCore:
    """`dag` plus one latent common parent per pair (``X <-> Y``), named ``U[X,Y]``.

    A name already in the graph gets a numeric suffix. The pairs' nodes must
    exist (or are added).

    Examples
    --------
    >>> g = with_bidirected(DAGCore([("X", "Y")]), [("X", "Y")])
    >>> sorted(g.latent), g.parents("Y")
    (['U[X,Y]'], ('X', 'U[X,Y]'))
    """
    edges = list(dag.edges)
    names = set(dag.nodes)
    latent = set(dag.latent)
    for e in pairs:
        a, b = edge_pair(e)
        if a == b:
            raise GraphError(f"bidirected self-loop on {a!r}")
        name = latent_parent_name(a, b, names)
        names.add(name)
        latent.add(name)
        edges += [(name, a), (name, b)]
    return type(dag)(edges, nodes=list(dag.nodes) + [n for n in names if n not in dag], latent=latent,
               intervened=dag.intervened)


def check_nodes(graph: MixedGraph, nodes: Iterable[Hashable], role: str) -> frozenset:
    known = set(graph.nodes)
    out = []
    for v in nodes:
        try:
            hash(v)
        except TypeError:
            raise GraphError(f"{role} {v!r} is not hashable") from None
        if v not in known:
            import difflib  # only on a bad name: kept out of the import

            close = difflib.get_close_matches(str(v), [str(n) for n in graph.nodes], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise GraphError(f"unknown or latent {role} {v!r}: identification uses observed nodes only{hint}")
        out.append(v)
    return frozenset(out)


def node_list(nodes: Any) -> list:
    if nodes is None:
        return []
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        return [nodes]
    return list(nodes)


def dag_of(graph: DAGCore | MixedGraph) -> DAGCore:
    """`graph` as a DAG: a mixed graph's bidirected edges become latent parents."""
    return graph.to_dag() if isinstance(graph, MixedGraph) else graph
