"""Markov equivalence: v-structures, CPDAGs (essential graphs) and their member DAGs.

Two DAGs are **Markov equivalent** — they imply the same conditional
independencies, so no observational data can tell them apart — exactly when
they have the same skeleton and the same **v-structures** ``a → c ← b`` with
``a``, ``b`` non-adjacent (Verma & Pearl 1990). The class is drawn as a
**CPDAG** (completed partially directed acyclic graph, or essential graph): an
edge is directed when every member DAG orients it the same way, undirected
(``a -- b``) otherwise.

:func:`cpdag` keeps the v-structure edges directed and propagates with Meek's
rules R1–R3 (Meek 1995), which give exactly the CPDAG. :class:`PDAG` holds the
result; :meth:`PDAG.to_dag` picks one member (Dor & Tarsi 1992) and
:meth:`PDAG.dags` enumerates all of them. A PDAG is also written as text,
``cn.PDAG("A -- B; B -> C")`` (:func:`causalnet.graph.parse.parse_pdag`),
``str(pdag)`` gives that text back, and ``pdag.to_dot()`` /
``cn.render(pdag, ...)`` draw undirected edges without arrowheads.

Examples
--------
>>> from causalnet import DAG
>>> p = cpdag(DAG([("A", "B"), ("B", "C")]))
>>> sorted(p.undirected_edges)
[('A', 'B'), ('B', 'C')]
>>> cpdag(DAG([("A", "C"), ("B", "C")])).directed_edges
(('A', 'C'), ('B', 'C'))
>>> is_markov_equivalent(DAG([("A", "B")]), DAG([("B", "A")]))
True
>>> str(PDAG("A -- B; C -> B"))
'C -> B; A -- B'
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:                       # annotations only
    import networkx as nx

from ..errors import GraphError
from . import separation
from .core import DAGCore, default_dag_class
from .drawing import to_dot
from .parse import format_name, parse_pdag

__all__ = ["PDAG", "cpdag", "v_structures", "is_markov_equivalent", "moral_graph", "meek_closure",
           "structural_hamming_distance"]


def v_structures(dag: DAGCore) -> frozenset:
    """The v-structures ``(a, c, b)`` (a → c ← b, a and b non-adjacent, a < b by node order)."""
    out = set()
    pos = {v: i for i, v in enumerate(dag.nodes)}
    for c in dag.nodes:
        ps = sorted(dag.parents(c), key=pos.__getitem__)
        for i, a in enumerate(ps):
            for b in ps[i + 1:]:
                if not dag.is_adjacent(a, b):
                    out.add((a, c, b))
    return frozenset(out)


def moral_graph(dag: DAGCore) -> nx.Graph:
    """The moral graph: the skeleton plus an edge between every two parents of a common child.

    A networkx view of :func:`causalnet.graph.separation.moral_graph` (the one
    moralization, on the DAG's integer index).
    """
    import networkx as nx  # loaded by the first moral graph, not by ``import causalnet``

    ix = dag.index
    names = ix.nodes
    nb = separation.moral_graph(ix.par, range(ix.n))
    g = nx.Graph()
    g.add_nodes_from(dag.nodes)
    g.add_edges_from((names[a], names[b]) for a, s in nb.items() for b in s if a < b)
    return g


def is_markov_equivalent(a: DAGCore, b: DAGCore) -> bool:
    """Same nodes, same skeleton, same v-structures."""
    if set(a.nodes) != set(b.nodes):
        return False
    skel = {frozenset(e) for e in a.edges}
    if skel != {frozenset(e) for e in b.edges}:
        return False
    norm = lambda vs: {(frozenset((x, y)), c) for x, c, y in vs}  # noqa: E731 - order of the two parents is moot
    return norm(v_structures(a)) == norm(v_structures(b))


def _adjacent(directed: set, undirected: set, a, b) -> bool:
    return (a, b) in directed or (b, a) in directed or frozenset((a, b)) in undirected


def _meek_step(nodes, directed: set, undirected: set) -> tuple | None:
    """One edge ``(a, b)`` that Meek's rules R1–R3 orient a → b, or None."""
    parents = {v: set() for v in nodes}
    for x, y in directed:
        parents[y].add(x)
    for e in undirected:
        a, b = tuple(e)
        for x, y in ((a, b), (b, a)):
            # R1: c -> x - y, c not adjacent to y
            if any(not _adjacent(directed, undirected, c, y) for c in parents[x]):
                return x, y
            # R2: x -> c -> y with x - y
            if any((x, c) in directed for c in parents[y]):
                return x, y
            # R3: x - c1 -> y, x - c2 -> y, c1, c2 non-adjacent
            cs = [c for c in parents[y] if frozenset((x, c)) in undirected]
            if any(not _adjacent(directed, undirected, c1, c2) for i, c1 in enumerate(cs) for c2 in cs[i + 1:]):
                return x, y
    return None


def meek_closure(nodes: Iterable[Hashable], directed: Iterable[tuple], undirected: Iterable[tuple]
                 ) -> tuple[set, set]:
    """Orient undirected edges by Meek's rules R1–R3 until none applies: ``(directed, undirected)``."""
    nodes = list(nodes)
    directed = set(directed)
    undirected = {frozenset(e) for e in undirected}
    while True:
        step = _meek_step(nodes, directed, undirected)
        if step is None:
            return directed, undirected
        undirected.discard(frozenset(step))
        directed.add(step)


class PDAG:
    """A partially directed graph, typically a CPDAG (the Markov equivalence class of a DAG).

    Parameters
    ----------
    directed : iterable of (u, v), or str
        Edges ``u -> v``; or the graph as text, ``"A -- B; B -> C"`` (as
        :meth:`parse`, and then no other argument but `dag_class`).
    undirected : iterable of (u, v)
        Edges ``u -- v``.
    nodes : iterable, optional
        Extra (isolated) nodes, or the node order.

    dag_class : type, optional
        The class of the DAGs :meth:`to_dag` and :meth:`dags` build (a
        :class:`~causalnet.graph.core.DAGCore` subclass); by default the
        registered one, :class:`~causalnet.graph.dag.DAG`. :func:`cpdag` passes
        the class of the graph it was given.

    Raises
    ------
    GraphError
        On a self-loop, a pair joined twice, or a directed cycle.
    """

    __slots__ = ("_nodes", "_directed", "_undirected", "_pairs", "dag_class")

    def __init__(self, directed: Iterable[tuple] | str = (), undirected: Iterable[tuple] = (),
                 nodes: Iterable[Hashable] = (), *, dag_class: type | None = None) -> None:
        if isinstance(directed, str):
            if undirected or nodes:
                raise GraphError("PDAG(text) takes the whole graph as text; give no undirected= or nodes= with it")
            directed, undirected, nodes = parse_pdag(directed)
        directed, undirected = list(directed), list(undirected)
        order = dict.fromkeys(nodes)
        seen: set = set()
        for e in [*directed, *undirected]:
            try:
                a, b = e
            except (TypeError, ValueError):
                raise GraphError(f"edge {e!r} is not a pair") from None
            if a == b:
                raise GraphError(f"self-loop on {a!r}")
            if frozenset((a, b)) in seen:
                raise GraphError(f"nodes {a!r} and {b!r} are joined by more than one edge")
            seen.add(frozenset((a, b)))
            order.setdefault(a)
            order.setdefault(b)
        self.dag_class = dag_class or default_dag_class()
        DAGCore(directed, nodes=list(order))        # raises GraphError on a directed cycle
        self._nodes = tuple(order)
        pos = {v: i for i, v in enumerate(self._nodes)}
        self._directed = tuple(sorted(((a, b) for a, b in directed), key=lambda e: (pos[e[0]], pos[e[1]])))
        und = [tuple(sorted((a, b), key=pos.__getitem__)) for a, b in undirected]
        self._undirected = tuple(sorted(und, key=lambda e: (pos[e[0]], pos[e[1]])))
        self._pairs = frozenset(frozenset(e) for e in self._undirected)

    @classmethod
    def parse(cls, text: str, *, dag_class: type | None = None) -> PDAG:
        """A PDAG from text: ``A -> B`` directed, ``A -- B`` undirected, ``;`` or new lines between statements.

        The syntax is the DAG text's (:mod:`causalnet.graph.parse`) plus
        ``--``; latent marks and ``<->`` are refused.

        Examples
        --------
        >>> p = PDAG.parse("A -- B -- C; D -> C")
        >>> p.undirected_edges, p.directed_edges
        ((('A', 'B'), ('B', 'C')), (('D', 'C'),))
        >>> PDAG.parse(str(p)) == p
        True
        """
        return cls(*parse_pdag(text), dag_class=dag_class)

    @classmethod
    def from_dag(cls, dag: DAGCore) -> PDAG:
        """The CPDAG of `dag` (same as :func:`cpdag`)."""
        return cpdag(dag)

    @property
    def nodes(self) -> tuple:
        return self._nodes

    @property
    def directed_edges(self) -> tuple:
        return self._directed

    @property
    def undirected_edges(self) -> tuple:
        return self._undirected

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PDAG):
            return NotImplemented
        return (set(self._nodes) == set(other._nodes) and set(self._directed) == set(other._directed)
                and {frozenset(e) for e in self._undirected} == {frozenset(e) for e in other._undirected})

    def __hash__(self) -> int:
        return hash((frozenset(self._nodes), frozenset(self._directed), frozenset(map(frozenset, self._undirected))))

    def __str__(self) -> str:
        """The graph as text (read back by :meth:`parse`): directed, then undirected edges, then lone nodes."""
        touched = {v for e in (*self._directed, *self._undirected) for v in e}
        parts = [f"{format_name(a)} -> {format_name(b)}" for a, b in self._directed]
        parts += [f"{format_name(a)} -- {format_name(b)}" for a, b in self._undirected]
        parts += [format_name(v) for v in self._nodes if v not in touched]
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"PDAG({self})"

    def to_dag(self) -> DAGCore:
        """One DAG of the class: orient the undirected edges without new v-structures or cycles.

        Raises
        ------
        GraphError
            If no such orientation exists (Dor & Tarsi's algorithm finds no sink).
        """
        directed = set(self._directed)
        undirected = {frozenset(e) for e in self._undirected}
        out = set(directed)
        alive = set(self._nodes)
        while alive:
            x = self._dor_tarsi_sink(alive, directed, undirected)
            if x is None:
                raise GraphError(f"{self!r} has no consistent DAG extension")
            for e in [e for e in undirected if x in e]:
                (y,) = e - {x}
                out.add((y, x))
                undirected.discard(e)
            directed = {(a, b) for a, b in directed if x not in (a, b)}
            alive.discard(x)
        return self.dag_class(sorted(out, key=lambda e: (self._nodes.index(e[0]), self._nodes.index(e[1]))),
                              nodes=self._nodes)

    @staticmethod
    def _dor_tarsi_sink(alive, directed, undirected):
        for x in sorted(alive, key=str):
            if any(a == x for a, _ in directed):
                continue
            und = [next(iter(e - {x})) for e in undirected if x in e]
            nbrs = und + [a for a, b in directed if b == x]
            if all(y == z or _adjacent(directed, undirected, y, z) for y in und for z in nbrs):
                return x
        return None

    def dags(self) -> Iterator[DAGCore]:
        """Every DAG of the class, each once (a generator; the count can be exponential)."""
        target = v_structures(self.to_dag())
        seen: set = set()
        yield from self._extend(set(self._directed), {frozenset(e) for e in self._undirected}, target, seen)

    def _extend(self, directed: set, undirected: set, target: frozenset, seen: set) -> Iterator[DAGCore]:
        if not undirected:
            key = frozenset(directed)
            if key in seen:
                return
            seen.add(key)
            try:
                dag = self.dag_class(directed, nodes=self._nodes)
            except GraphError:
                return
            if v_structures(dag) == target:
                yield dag
            return
        e = min(undirected, key=lambda f: sorted(map(str, f)))
        a, b = sorted(e, key=self._nodes.index)
        for x, y in ((a, b), (b, a)):
            d, u = meek_closure(self._nodes, directed | {(x, y)}, [tuple(f) for f in undirected - {e}])
            yield from self._extend(d, u, target, seen)

    @property
    def dag(self) -> DAGCore:
        """The skeleton as a DAG, for drawing: undirected edges point along a topological order of the directed ones.

        Not a member of the equivalence class in general (use :meth:`to_dag`);
        :meth:`dot_edge_attrs` draws those edges without arrowheads.
        """
        order = {v: i for i, v in enumerate(DAGCore(self._directed, nodes=self._nodes).topological_order())}
        und = [(a, b) if order[a] < order[b] else (b, a) for a, b in self._undirected]
        return DAGCore([*self._directed, *und], nodes=self._nodes)

    def dot_edge_attrs(self, parent: Hashable, child: Hashable) -> dict:
        """Drawing hook: an undirected edge has no arrowhead (``dir=none``)."""
        return {"dir": "none"} if frozenset((parent, child)) in self._pairs else {}

    def to_dot(self, **options) -> str:
        """DOT text: directed edges as arrows, undirected edges without arrowheads (``dir=none``).

        Options as in :func:`causalnet.graph.drawing.to_dot`.

        Examples
        --------
        >>> print(PDAG("A -- B; C -> B").to_dot())  # doctest: +NORMALIZE_WHITESPACE
        digraph {
            graph [rankdir=TB]
            A
            B
            C
            A -> B [dir=none]
            C -> B
        }
        """
        return to_dot(self, **options)


def cpdag(dag: DAGCore) -> PDAG:
    """The CPDAG (essential graph) of `dag`: v-structure edges directed, then Meek's rules R1–R3."""
    vs = v_structures(dag)
    compelled = {(a, c) for a, c, _ in vs} | {(b, c) for _, c, b in vs}
    rest = [e for e in dag.edges if e not in compelled]
    directed, undirected = meek_closure(dag.nodes, compelled, rest)
    return PDAG(directed, [tuple(e) for e in undirected], nodes=dag.nodes, dag_class=type(dag))


def _marks(g) -> dict:
    if isinstance(g, DAGCore):
        return {frozenset(e): e for e in g.edges}
    out = {frozenset(e): e for e in g.directed_edges}
    out.update({frozenset(e): None for e in g.undirected_edges})
    return out


def structural_hamming_distance(a: DAGCore | PDAG, b: DAGCore | PDAG) -> int:
    """Node pairs whose edge differs: missing, extra, or with another orientation (directed vs undirected too)."""
    ma, mb = _marks(a), _marks(b)
    return sum(1 for pair in set(ma) | set(mb) if pair not in ma or pair not in mb or ma[pair] != mb[pair])
