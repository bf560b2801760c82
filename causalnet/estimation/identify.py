"""Which covariates to adjust for, read off the graph, and why a set is not valid.

- The **optimal adjustment set** (the O-set of Henckel, Perković and Maathuis
  2022) for a treatment X and outcome Y is ``O = pa(cn) \\ forb``: the parents
  of the *causal nodes* ``cn`` (the nodes after X on a proper causal path from
  X to Y) that are not *forbidden* (X itself and the descendants of causal
  nodes). When any adjustment set exists the O-set is one, and among all of
  them it gives the smallest asymptotic variance of the adjusted estimate in
  linear models (and of the non-parametric efficient estimators). With latent
  parents of causal nodes it may not be observable; the estimation then falls
  back to the smallest minimal adjustment set.
- :func:`open_path` explains an invalid set: a path between X and Y that the
  set leaves open in the proper back-door graph (the DAG without the first
  edge of each proper causal path), or the forbidden node the set contains.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("A -> X -> M -> Y; B -> M; C -> Y; A -> Y")
>>> sorted(optimal_adjustment_set(g, "X", "Y"))
['A', 'B', 'C']
>>> open_path(g, "X", "Y", set())
'X <- A -> Y'

References
----------
.. [1] L. Henckel, E. Perković, M. H. Maathuis, "Graphical criteria for
       efficient total effect estimation via adjustment in causal linear
       models", JRSS-B 84(2), 2022.
.. [2] A. Rotnitzky, E. Smucler, "Efficient adjustment sets for population
       average causal treatment effect estimation in graphical models", JMLR 21, 2020.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..errors import GraphError
from ..graph import paths
from ..graph.adjustment import effect_graph, is_adjustment_set, minimal_adjustment_sets
from ..graph.core import DAGCore

__all__ = ["causal_nodes", "optimal_adjustment_set", "open_path", "default_adjustment_set", "check_adjustment_set"]


def _check_pair(dag: DAGCore, x: Hashable, y: Hashable) -> None:
    for v, role in ((x, "treatment"), (y, "outcome")):
        if v not in dag:
            raise GraphError(f"the {role} {v!r} is not a node of the graph{dag.hint(v)}")
    if x == y:
        raise GraphError(f"the treatment and the outcome are the same node {x!r}")


def causal_nodes(dag: DAGCore, x: Hashable, y: Hashable) -> frozenset:
    """The nodes other than `x` on a proper causal path from `x` to `y` (`y` included when reachable).

    Returns
    -------
    frozenset
        Empty when `y` does not descend from `x`.
    """
    _check_pair(dag, x, y)
    below_x = dag.descendants(x) - {x}                       # X's descendants, X excluded
    above_y = dag.ancestors(y, include_self=True)
    # proper: the path meets X only at its start, so the nodes are reached from X's children without passing X
    return frozenset(v for v in below_x & above_y if v != x)


def optimal_adjustment_set(dag: DAGCore, x: Hashable, y: Hashable) -> frozenset | None:
    """The O-set ``pa(cn(x, y)) \\ forb(x, y)``, or None when it holds a latent node or is not valid.

    Parameters
    ----------
    dag : DAG
    x, y : node
        Treatment and outcome.

    Returns
    -------
    frozenset or None
        None when no adjustment set exists or the O-set needs a latent node.
    """
    cn_ = causal_nodes(dag, x, y)
    if not cn_:
        parents = frozenset(dag.parents(x))                  # no causal path: the effect is 0, any set closes nothing
        return None if parents & dag.latent else parents
    forbidden = dag.descendants(cn_, include_self=True) | {x}
    o_set = frozenset(p for v in cn_ for p in dag.parents(v)) - forbidden
    if o_set & dag.latent or not is_adjustment_set(dag, x, y, o_set):
        return None
    return o_set


def default_adjustment_set(dag: DAGCore, x: Hashable, y: Hashable) -> frozenset:
    """The O-set when it exists, else the smallest minimal adjustment set.

    Raises
    ------
    GraphError
        When no adjustment set exists (an unblockable back-door path through a
        latent node); the message names that path.
    """
    o_set = optimal_adjustment_set(dag, x, y)
    if o_set is not None:
        return o_set
    sets = minimal_adjustment_sets(dag, x, y, max_sets=64)
    if not sets:
        path = open_path(dag, x, y, frozenset())
        raise GraphError(f"no adjustment set identifies the effect of {x!r} on {y!r}: the path {path} "
                         f"cannot be blocked by observed nodes; try method='iv', 'frontdoor' or 'plugin'")
    return sets[0]


def check_adjustment_set(dag: DAGCore, x: Hashable, y: Hashable, z) -> frozenset:
    """`z` as a frozenset when it is a valid adjustment set for (`x`, `y`); else a GraphError naming why.

    Raises
    ------
    GraphError
        If a node is unknown or latent, or the set is not valid: the message
        names a path the set leaves open, or the forbidden node it contains.
    """
    zs = dag.node_set(z, "adjustment node")            # a node or an iterable of nodes, each known
    for v in zs:
        if v not in dag:
            raise GraphError(f"adjustment node {v!r} is not a node of the graph{dag.hint(v)}")
        if v in dag.latent:
            raise GraphError(f"adjustment node {v!r} is latent (or has no column in the data); "
                             f"only measured nodes can be adjusted for")
    if is_adjustment_set(dag, x, y, zs):
        return zs
    raise GraphError(f"{sorted(zs, key=str)} is not a valid adjustment set for the effect of {x!r} on {y!r}: "
                     f"{open_path(dag, x, y, zs)}")


def open_path(dag: DAGCore, x: Hashable, y: Hashable, z) -> str | None:
    """Why `z` fails to adjust for (`x`, `y`): an open non-causal path, or a forbidden node; None if valid.

    Returns
    -------
    str or None
        A path such as ``'X <- A -> Y'`` that `z` leaves d-connected in the
        proper back-door graph, or ``"'D' descends from the causal path ..."``.
    """
    ix = dag.index
    xi, yi = frozenset({ix.pos[x]}), frozenset({ix.pos[y]})
    _, chi, forbidden = effect_graph(dag, xi, yi)
    zi = frozenset(ix.pos[v] for v in z)
    bad = sorted(zi & forbidden)
    if bad:
        v = ix.nodes[bad[0]]
        return f"{v!r} descends from a node on a causal path from {x!r} to {y!r} (adjusting for it biases the effect)"
    kept = {(u, v) for u in range(len(chi)) for v in chi[u]}
    dropped = [(u, v) for u, v in dag.edges if (ix.pos[u], ix.pos[v]) not in kept]
    pbd = dag.remove_edges(dropped) if dropped else dag          # the proper back-door graph
    path = paths.open_path(pbd, x, y, frozenset(z))
    if path is None:
        return None
    out = [str(path[0])]
    for u, v in zip(path, path[1:]):
        out.append(f"-> {v}" if pbd.has_edge(u, v) else f"<- {v}")
    return " ".join(out)
