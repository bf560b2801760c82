"""Elimination orders: moral graphs, greedy heuristics, cliques and their sizes.

Terms
-----
Exact discrete inference sums variables out one at a time. Eliminating ``v``
from an undirected graph joins its neighbours into a *clique* (fill edges) and
creates a table over ``v`` and its neighbours; the largest such table over an
order is what the computation costs in memory. Its number of variables minus
one is the order's *induced width*; the smallest induced width over all orders
is the graph's *treewidth*. Finding the best order is NP-hard; greedy
heuristics (:data:`ORDER_METHODS`) pick, at each step, the node whose
elimination adds the least (fill edges, weighted fill, degree, table size).

This module is shared by variable elimination
(:mod:`causalnet.inference.discrete.elimination`), clique trees
(:mod:`causalnet.inference.discrete.cliques`) and junction trees: it knows graphs and
cards, nothing of tables. :func:`check_clique_bytes` is the one place that
turns an order's largest clique into a :class:`~causalnet.errors.ResourceError`
before any table is allocated (knob ``max_table_bytes`` of
:mod:`causalnet.limits`).

Examples
--------
>>> g = {"A": {"B", "C"}, "B": {"A", "D"}, "C": {"A", "D"}, "D": {"B", "C"}}   # a 4-cycle
>>> order = elimination_order(g)
>>> max(len(c) for c in elimination_cliques(g, order))     # treewidth 2
3
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from ... import graph as _graph  # graph.separation: loaded by the first moral graph asked for
from ... import limits
from ...errors import GraphError
from ...graph.dag import DAG

__all__ = [
    "ORDER_METHODS",
    "moral_graph",
    "greedy_order",
    "apply_order",
    "largest_table",
    "elimination_order",
    "elimination_cliques",
    "check_clique_bytes",
    "table_entry_limit",
    "TableTooLarge",
]

#: Greedy elimination-order heuristics: ``"weighted-min-fill"`` (sum over the
#: fill edges of the product of their end cards), ``"min-fill"`` (number of fill
#: edges), ``"min-degree"`` (neighbours), ``"min-weight"`` (size of the table the
#: elimination creates). Ties go to the smaller table, then to node order.
ORDER_METHODS = ("weighted-min-fill", "min-fill", "min-degree", "min-weight")


def moral_graph(dag: DAG, nodes: Iterable[Hashable] | None = None) -> dict[Hashable, set]:
    """The moral graph of `dag`, or of its subgraph induced by `nodes`, by node name.

    Each node is joined to its parents, and the parents of each node to one
    another (they "marry"); directions are dropped. A view of
    :func:`causalnet.graph.separation.moral_graph`, the one moralization.

    Returns
    -------
    dict
        Node -> set of neighbours, in node order.

    Raises
    ------
    GraphError
        If `nodes` names a node not in `dag`.
    """
    ix = dag.index
    if nodes is None:
        keep = range(ix.n)
        par = ix.par
    else:
        items = [nodes] if isinstance(nodes, str) or not isinstance(nodes, Iterable) else list(nodes)
        bad = [v for v in items if not _is_node(dag, v)]
        if bad:
            raise GraphError(f"unknown node {bad[0]!r}; the DAG has {len(dag.nodes)} nodes")
        inside = {ix.pos[v] for v in items}
        keep = sorted(inside)
        par = [[p for p in ps if p in inside] if v in inside else () for v, ps in enumerate(ix.par)]
    names = ix.nodes
    return {names[v]: {names[u] for u in nb} for v, nb in _graph.separation.moral_graph(par, keep).items()}


def _is_node(dag: DAG, v) -> bool:
    try:
        return v in dag
    except TypeError:                                  # unhashable
        return False


# -- greedy scores: (primary, tie-break) of eliminating v next --------------------------


def _score_degree(adj: dict, cg: Callable, v) -> tuple:
    nb = adj[v]
    return (len(nb), cg(v) * math.prod(map(cg, nb)))


def _score_weight(adj: dict, cg: Callable, v) -> tuple:
    nb = adj[v]
    return (cg(v) * math.prod(map(cg, nb)), len(nb))


def _score_fill(adj: dict, cg: Callable, v) -> tuple:
    nb = adj[v]
    k = len(nb) - 1
    fill = sum(k - len(adj[a] & nb) for a in nb)
    return (fill, cg(v) * math.prod(map(cg, nb)))


def _score_weighted_fill(adj: dict, cg: Callable, v) -> tuple:
    nb = adj[v]
    fill = 0
    for a in nb:
        miss = nb - adj[a]
        if len(miss) > 1:
            miss.discard(a)
            fill += cg(a) * sum(map(cg, miss))
    return (fill, cg(v) * math.prod(map(cg, nb)))


_SCORES = {
    "weighted-min-fill": _score_weighted_fill,
    "min-fill": _score_fill,
    "min-degree": _score_degree,
    "min-weight": _score_weight,
}
_LOCAL = frozenset({"min-degree", "min-weight"})   # scores that only change for the neighbours


def _eliminate(adj: dict, v, local: bool) -> tuple[frozenset, set]:
    """Remove v from `adj`, joining its neighbours; return them and the nodes whose score may change."""
    nb = adj.pop(v)
    touched = set(nb)
    for a in nb:
        na = adj[a]
        na.discard(v)
        if not local:
            # a fill edge a-b changes the fill score of the common neighbours of a and b
            for b in nb - na:
                if b != a:
                    touched |= na & adj[b]
    for a in nb:
        na = adj[a]
        na |= nb
        na.discard(a)
    return frozenset(nb), touched


class TableTooLarge(Exception):
    """Raised by :func:`greedy_order` when an elimination exceeds `max_entries`.

    Internal signal (not a user error): callers turn it into a
    :class:`~causalnet.errors.ResourceError` with :func:`check_clique_bytes`,
    or give up an optional optimisation. ``node`` and ``neighbours`` name the clique.
    """

    def __init__(self, node, neighbours: frozenset) -> None:
        super().__init__(node, neighbours)
        self.node = node
        self.neighbours = neighbours

    @property
    def clique(self) -> frozenset:
        return self.neighbours | {self.node}


def table_entry_limit() -> float:
    """The most float64 entries one table may have under ``limits.get("max_table_bytes")``."""
    return limits.get("max_table_bytes") / 8.0


def greedy_order(adj: dict, card: Mapping, elim: Iterable, method: str, rank: Mapping,
                 cliques: list | None = None, max_entries: float | None = None) -> list:
    """Greedily eliminate the nodes of `elim` from `adj` (mutated: fill edges added).

    Parameters
    ----------
    adj : dict of node -> set of neighbours
        Undirected; mutated (eliminated nodes removed, fill edges added).
    card : mapping or sequence
        Each node's number of states (indexable by node).
    elim : iterable of nodes
        The nodes to eliminate.
    method : str
        One of :data:`ORDER_METHODS`.
    rank : mapping
        A total order of the nodes, for ties.
    cliques : list, optional
        When given, each elimination appends ``(v, frozenset of neighbours)``.
    max_entries : float, optional
        Stop as soon as an elimination would create a table of more entries,
        raising :class:`TableTooLarge` (so that a hopeless order fails fast).

    Returns
    -------
    list
        The nodes of `elim`, in elimination order.
    """
    if method not in _SCORES:
        raise GraphError(f"unknown elimination order {method!r}; choose one of {list(ORDER_METHODS)}")
    todo = set(elim)
    cg = card.__getitem__
    score = _SCORES[method]
    local = method in _LOCAL
    cur = {v: score(adj, cg, v) for v in todo}
    heap = [(s, rank[v], v) for v, s in cur.items()]
    heapq.heapify(heap)
    order = []
    while heap:
        s, _, v = heapq.heappop(heap)
        if v not in todo or cur[v] != s:
            continue
        if max_entries is not None and cg(v) * math.prod(map(cg, adj[v])) > max_entries:
            raise TableTooLarge(v, frozenset(adj[v]))
        todo.discard(v)
        order.append(v)
        nb, touched = _eliminate(adj, v, local)
        if cliques is not None:
            cliques.append((v, nb))
        for u in touched:
            if u in todo:
                su = score(adj, cg, u)
                if su != cur[u]:
                    cur[u] = su
                    heapq.heappush(heap, (su, rank[u], u))
    return order


def apply_order(adj: dict, order: Sequence, cliques: list | None = None) -> None:
    """Eliminate `order` from `adj` in that order (mutated), appending ``(v, neighbours)`` to `cliques`."""
    for v in order:
        nb = adj.pop(v)
        if cliques is not None:
            cliques.append((v, frozenset(nb)))
        for a in nb:
            na = adj[a]
            na.discard(v)
            na |= nb
            na.discard(a)


def largest_table(adj: dict, order: Sequence, card: Sequence[int], stop: float | None = None) -> int:
    """Entries of the largest table eliminating `order` from `adj` (mutated) creates; with `stop`,
    the first size over it as soon as one is (the rest of `order` is then not eliminated)."""
    big = 1
    for v in order:
        nb = adj.pop(v)
        big = max(big, card[v] * math.prod(card[a] for a in nb))
        if stop is not None and big > stop:
            return big
        for a in nb:
            na = adj[a]
            na.discard(v)
            na |= nb
            na.discard(a)
    return big


def _symmetric(graph: Mapping[Hashable, Iterable[Hashable]]) -> dict:
    adj = {v: set(nb) for v, nb in graph.items()}
    for v, nb in graph.items():
        for u in nb:
            adj.setdefault(u, set()).add(v)
    for v, nb in adj.items():
        nb.discard(v)
    return adj


def elimination_order(
    graph: Mapping[Hashable, Iterable[Hashable]],
    cards: Mapping[Hashable, int] | None = None,
    *,
    method: str = "weighted-min-fill",
    eliminate: Iterable[Hashable] | None = None,
) -> list:
    """A greedy elimination order for an undirected graph.

    Parameters
    ----------
    graph : mapping of node -> iterable of neighbours
        Undirected (each edge listed at both ends), e.g. :func:`moral_graph`.
    cards : mapping of node -> int, optional
        Numbers of states (weights); default 2 for every node.
    method : str
        One of :data:`ORDER_METHODS`.
    eliminate : iterable of nodes, optional
        The nodes to order (default: all). Other nodes stay in the graph and
        count for fill and weights, but are never eliminated.

    Returns
    -------
    list
        The nodes of `eliminate`, in elimination order.

    Raises
    ------
    GraphError
        On an unknown method or a node of `eliminate` not in the graph.
    """
    adj = _symmetric(graph)
    rank = {v: i for i, v in enumerate(adj)}
    card = {v: (2 if cards is None else int(cards[v])) for v in adj}
    elim = list(adj) if eliminate is None else list(eliminate)
    bad = [v for v in elim if v not in adj]
    if bad:
        raise GraphError(f"cannot eliminate {bad[0]!r}: it is not a node of the graph")
    return greedy_order(adj, card, elim, method, rank)


def elimination_cliques(graph: Mapping[Hashable, Iterable[Hashable]], order: Sequence[Hashable]) -> list[frozenset]:
    """The clique formed when each node of `order` is eliminated, in order.

    The clique of ``v`` is ``v`` and its neighbours at the time it is
    eliminated (with the fill edges of earlier eliminations). The largest has
    ``induced width + 1`` nodes.
    """
    adj = _symmetric(graph)
    bad = [v for v in order if v not in adj]
    if bad:
        raise GraphError(f"cannot eliminate {bad[0]!r}: it is not a node of the graph")
    out: list = []
    apply_order(adj, list(order), out)
    return [frozenset({v, *nb}) for v, nb in out]


def describe_clique(nodes: Iterable, card: Sequence[int], names: Sequence, limit: int = 12) -> str:
    """``"27 variables (A:2, B:3, ...)"``: a clique for an error message."""
    nodes = list(nodes)
    shown = ", ".join(f"{names[v]}:{card[v]}" for v in nodes[:limit])
    more = f", ... {len(nodes) - limit} more" if len(nodes) > limit else ""
    return f"{len(nodes)} variables ({shown}{more})"


def check_clique_bytes(cliques: Iterable[Iterable], card: Sequence[int], names: Sequence, *,
                       rows: int = 1, what: str = "the largest table of variable elimination") -> None:
    """Raise :class:`~causalnet.errors.ResourceError` if the largest of `cliques` is too large.

    Parameters
    ----------
    cliques : iterable of iterables of node ints
        The tables an elimination order creates (each a set of node indices).
    card : sequence of int
        States of each node.
    names : sequence
        Node names (for the message).
    rows : int
        Batch rows that each table is held for (1 when not batched).
    what : str
        What would be allocated.

    The estimate is ``8 * rows * prod(cards)`` bytes (float64), compared with
    ``limits.get("max_table_bytes")``; floats, so huge products never overflow.
    """
    best, size = None, 0.0
    for c in cliques:
        s = math.prod(float(card[v]) for v in c)
        if s > size:
            best, size = c, s
    if best is None:
        return
    nbytes = 8.0 * size * max(rows, 1)
    if nbytes <= limits.get("max_table_bytes"):
        return
    batch = f" for each of {rows} evidence rows" if rows > 1 else ""
    cause = (f"treewidth: a clique of {describe_clique(sorted(best), card, names)}{batch}; "
             f"exact inference on this model is that large (use sampling, or fewer evidence rows at once)")
    limits.check_bytes(nbytes, what=what, cause=cause, knob="max_table_bytes")
