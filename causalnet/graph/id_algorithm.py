"""The ID and IDC algorithms (Shpitser & Pearl) and the rules of do-calculus.

A query ``P(Y | do(X))`` is *identifiable* when it is the same function of the
observational distribution ``P(V)`` in every model with this graph.
:func:`id_algorithm` decides it and, when it succeeds, writes the answer as an
:class:`~causalnet.graph.expressions.Expression`; when it fails it has found a
**hedge** (two c-forests F' ⊂ F sharing their root set, F containing
treatments and F' not) and raises :class:`~causalnet.errors.NotIdentifiable`
naming both. :func:`idc` handles conditional queries ``P(Y | do(X), Z)``.
:func:`do_calculus` says whether one of Pearl's three rules applies.

References
----------
.. [1] Shpitser & Pearl, "Identification of joint interventional distributions
   in recursive semi-Markovian causal models", AAAI 2006.
.. [2] Shpitser & Pearl, "Identification of conditional interventional
   distributions", UAI 2006.

Examples
--------
>>> h = MixedGraph([("X", "Y")], [("X", "Y")])
>>> id_algorithm(h, frozenset({"Y"}), frozenset({"X"}), query="P(Y | do(X))")
Traceback (most recent call last):
...
causalnet.errors.NotIdentifiable: P(Y | do(X)) is not identifiable: hedge F = {X, Y}, F' = {Y} ...
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..errors import GraphError, NotIdentifiable
from . import separation
from .core import DAGCore
from .expressions import Expression, Probability, conditional, fraction, marginal, product
from .mixed import MixedGraph, as_graph, check_nodes, dag_of, latent_projection, node_list

__all__ = ["id_algorithm", "idc", "do_calculus"]


# -- ID and IDC -------------------------------------------------------------------------------

def _hedge(query: str, forest: frozenset, sub: frozenset, graph: MixedGraph) -> NotIdentifiable:
    f_text = "{" + ", ".join(map(str, graph.sorted(forest))) + "}"
    s_text = "{" + ", ".join(map(str, graph.sorted(sub))) + "}"
    err = NotIdentifiable(
        f"{query} is not identifiable: hedge F = {f_text}, F' = {s_text} (two c-forests with the same roots; "
        f"F holds the treatments {{{', '.join(map(str, graph.sorted(forest - sub)))}}} and F' none)")
    err.hedge = (forest, sub)
    err.query = query
    return err


def id_algorithm(graph: MixedGraph, y: frozenset, x: frozenset, dist: Expression | None = None,
                 query: str = "") -> Expression:
    """The ID algorithm (Shpitser & Pearl 2006, Fig. 3): ``P(y | do(x))`` as an expression.

    Parameters
    ----------
    graph : MixedGraph
        The mixed graph over the observed nodes.
    y, x : frozenset
        Outcomes and treatments (disjoint sets of nodes of `graph`).
    dist : Expression, optional
        The distribution over ``graph.nodes`` (default: ``P(V)``).

    Raises
    ------
    NotIdentifiable
        On a hedge; ``err.hedge`` is ``(F, F')``.
    """
    dist = Probability(graph.nodes) if dist is None else dist
    return _Id(graph, query).run(frozenset(y), frozenset(x), dist, graph)


class _Id:
    """One run of ID; `order` is a topological order shared by every subgraph."""

    def __init__(self, graph: MixedGraph, query: str) -> None:
        self.graph = graph
        self.query = query

    def kernel(self, dist: Expression, g: MixedGraph, v: Hashable) -> Expression:
        """``P(v | v_π^(i-1))`` from `dist` over ``g.nodes``."""
        pred = g.nodes[:g.nodes.index(v)]
        if isinstance(dist, Probability) and not dist.given and dist.heads == frozenset(g.nodes):
            # P(V) of an ancestral set is Markov to g: v depends on its predecessors only
            # through its Markov pillow (its district among them and the district's parents)
            upto = g.subgraph(pred + (v,))
            dist_v = next(c for c in upto.c_components() if v in c)
            pillow = (dist_v | frozenset().union(*(g.parents(u) for u in dist_v))) - {v}
            return Probability([v], g.sorted(pillow))
        return conditional(dist, g.nodes, [v], pred)

    def run(self, y: frozenset, x: frozenset, dist: Expression, g: MixedGraph) -> Expression:
        v_all = frozenset(g.nodes)
        if not x:                                                   # line 1
            return marginal(dist, v_all - y)
        an = g.ancestors(y)
        if an != v_all:                                             # line 2
            return self.run(y, x & an, marginal(dist, v_all - an), g.subgraph(an))
        w = (v_all - x) - g.do(x).ancestors(y)
        if w:                                                       # line 3
            return self.run(y, x | w, dist, g)
        comps = g.subgraph(v_all - x).c_components()
        if len(comps) > 1:                                          # line 4
            parts = [self.run(s, v_all - s, dist, g) for s in comps]
            return marginal(product(parts), v_all - y - x)
        s = comps[0]
        whole = g.c_components()
        if len(whole) == 1:                                         # line 5
            raise _hedge(self.query, v_all, s, g)
        if s in whole:                                              # line 6
            return marginal(product(self.kernel(dist, g, v) for v in g.sorted(s)), s - y)
        big = next(c for c in whole if s < c)                       # line 7
        sub = g.subgraph(big)
        new = product(self.kernel(dist, g, v) for v in sub.nodes)
        return self.run(y, x & big, new, sub)


def idc(graph: MixedGraph, y: frozenset, x: frozenset, z: frozenset, query: str) -> Expression:
    """IDC (Shpitser & Pearl 2006b): move conditions into the intervention by rule 2, then divide."""
    for w in graph.sorted(z):
        rest = z - {w}
        if graph.do(x).remove_outgoing([w]).m_separated(y, [w], x | rest):
            return idc(graph, y, x | {w}, rest, query)
    joint = id_algorithm(graph, y | z, x, query=query)
    return fraction(joint, marginal(joint, y), y)


def do_calculus(graph: DAGCore | MixedGraph, rule: int, y: Any, x: Any = (), z: Any = (), w: Any = ()) -> bool:
    """Whether Pearl's rule `rule` (1, 2 or 3) applies to ``P(y | do(x), z, w)``.

    1. ``P(y | do(x), z, w) = P(y | do(x), w)`` if Y ⊥ Z | X, W in G with edges into X removed;
    2. ``P(y | do(x), do(z), w) = P(y | do(x), z, w)`` if Y ⊥ Z | X, W in G with edges into X
       and out of Z removed;
    3. ``P(y | do(x), do(z), w) = P(y | do(x), w)`` if Y ⊥ Z | X, W in G with edges into X and into
       Z(W) removed, Z(W) being the nodes of Z that are not ancestors of W in G with edges into X removed.

    Latent nodes (or bidirected edges of a mixed graph) stay in the graph as unobserved causes.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG([("Z", "X"), ("X", "Y"), ("Z", "Y")])
    >>> do_calculus(g, 2, "Y", z="X", w="Z"), do_calculus(g, 2, "Y", z="X")
    (True, False)
    """
    dag = dag_of(as_graph(graph, "do_calculus"))
    if rule not in (1, 2, 3):
        raise GraphError(f"do-calculus has rules 1, 2 and 3, got {rule!r}")
    h = latent_projection(dag)
    ys, xs, zs, ws = (check_nodes(h, node_list(v), role) for v, role in
                      ((y, "outcome"), (x, "treatment"), (z, "rule node"), (w, "condition")))
    if not ys or not zs:
        raise GraphError("do_calculus needs at least one outcome and one node in z")
    if len(ys | xs | zs | ws) != len(ys) + len(xs) + len(zs) + len(ws):
        raise GraphError("do_calculus: y, x, z and w must be disjoint")
    cut = dag.do(xs) if xs else dag
    if rule == 2:
        cut = cut.remove_edges([(a, b) for a in zs for b in cut.children(a)])
    elif rule == 3:
        z_w = zs - (cut.ancestors(ws, include_self=True) if ws else frozenset())
        cut = cut.do(z_w) if z_w else cut
    return separation.d_separated(cut, ys, zs, given=xs | ws)
