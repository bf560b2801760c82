"""Open (d-connecting) paths: the witness behind "X and Y are not d-separated".

Terms
-----
A *path* is a sequence of distinct nodes, each adjacent to the next (the edge
may point either way). A node inside a path is a *collider* when both edges
point into it (``a -> c <- b``) and a *non-collider* otherwise. Given a set Z
the path is *open* when every non-collider is outside Z and every collider is
in Z or has a descendant in Z (is an ancestor of Z, counting Z itself). X and
Y are d-separated by Z exactly when no open path joins them.

:func:`open_path` finds one open path, shortest in the search below, or None.
A breadth-first search over (node, arrival) states, where the arrival says
whether the node was entered from a parent or from a child, follows the two
rules above; it never visits a state twice, so it is linear in the size of the
graph. The walk it finds may pass a node twice (once in each arrival); it is
cut to a path by splicing out the loop between the first and last visit of
that node. The splice keeps the walk open: if the first visit came from a
child, the node is a non-collider there, so it is outside Z and may continue
either way; if it came from a parent and the walk later returns from a child,
the walk went down from the node and came back up, which needs a collider
below it that is an ancestor of Z, so the node is itself an ancestor of Z and
may be a collider at the splice. :func:`is_open_path` checks a path against
the definition, with no search.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("X <- U1 -> M <- U2 -> Y; X -> Y")
>>> open_path(g, "X", "Y", given={"M"}) in (["X", "Y"], ["X", "U1", "M", "U2", "Y"])
True
>>> open_path(cn.DAG.parse("X <- U1 -> M <- U2 -> Y"), "X", "Y", given={"M"})
['X', 'U1', 'M', 'U2', 'Y']
>>> open_path(cn.DAG.parse("X <- U1 -> M <- U2 -> Y"), "X", "Y") is None
True

References
----------
.. [1] J. Pearl, "Causality", 2nd ed., Cambridge University Press 2009, Definition 1.2.3.
.. [2] D. Koller, N. Friedman, "Probabilistic Graphical Models", MIT Press 2009, Sec. 3.3.3.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence

from ..errors import GraphError
from .core import DAGCore
from .separation import check_sets

__all__ = ["open_path", "is_open_path"]

# arrival of the search at a node: entered from one of its parents (the edge points into it),
# from one of its children (the edge points out of it), or the start of the path
_FROM_PARENT, _FROM_CHILD, _START = 0, 1, 2


def _search(dag: DAGCore, xs: frozenset, ys: frozenset, zs: frozenset, anz: frozenset) -> list | None:
    """The walk (list of nodes) found by the breadth-first search, or None."""
    prev: dict[tuple, tuple | None] = {}
    queue: deque = deque()
    for v in dag.nodes:                       # graph order: deterministic output
        if v in xs:
            prev[(v, _START)] = None
            queue.append((v, _START))
    while queue:
        state = queue.popleft()
        v, arrival = state
        if v in ys:
            walk = []
            while state is not None:
                walk.append(state[0])
                state = prev[state]
            return walk[::-1]
        steps = []
        if arrival == _START or (arrival == _FROM_CHILD and v not in zs):
            steps = [(p, _FROM_CHILD) for p in dag.parents(v)] + [(c, _FROM_PARENT) for c in dag.children(v)]
        elif arrival == _FROM_PARENT:
            if v not in zs:                   # a chain a -> v -> c
                steps += [(c, _FROM_PARENT) for c in dag.children(v)]
            if v in anz:                      # a collider a -> v <- b, opened by Z
                steps += [(p, _FROM_CHILD) for p in dag.parents(v)]
        for nxt in steps:
            if nxt not in prev:
                prev[nxt] = state
                queue.append(nxt)
    return None


def _simple(walk: list, xs: frozenset) -> list:
    """Cut the loops out of an open walk (see the module notes), then start at its last node of X."""
    out = list(walk)
    i = 0
    while i < len(out):
        last = len(out) - 1 - out[::-1].index(out[i])
        if last > i:
            del out[i + 1:last + 1]
        i += 1
    start = max(k for k, v in enumerate(out) if v in xs)
    return out[start:]


def open_path(dag: DAGCore, x, y, given=None) -> list | None:
    """An open path between `x` and `y` given `given`, or None when they are d-separated.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Non-empty, disjoint.
    given : node or iterable of nodes, optional
        The conditioning set, disjoint from `x` and `y`.

    Returns
    -------
    list of nodes or None
        ``[x_i, ..., y_j]``: distinct nodes, consecutive ones adjacent, that
        :func:`is_open_path` accepts; it starts at a node of `x`, ends at a
        node of `y` and passes through no other node of either. None exactly
        when ``dag.d_separated(x, y, given)``.

    Raises
    ------
    GraphError
        If a node is unknown, a set is empty, or the sets overlap.
    """
    xs, ys, zs = check_sets(dag, x, y, given, "open_path", "an open path")
    anz = dag.ancestors(zs, include_self=True) if zs else frozenset()
    walk = _search(dag, xs, ys, zs, frozenset(anz))
    return None if walk is None else _simple(walk, xs)


def is_open_path(dag: DAGCore, path: Sequence[Hashable], given=None) -> bool:
    """Whether `path` is a path of `dag` that is open given `given` (module notes).

    Parameters
    ----------
    dag : DAG
    path : sequence of nodes
        At least two nodes.
    given : node or iterable of nodes, optional

    Raises
    ------
    GraphError
        If a node is unknown, `path` has fewer than two nodes, repeats a node,
        or steps between non-adjacent nodes.
    """
    nodes = [dag.check_node(v, "path node") for v in path]
    if len(nodes) < 2:
        raise GraphError(f"a path needs at least two nodes, got {nodes!r}")
    if len(set(nodes)) < len(nodes):
        raise GraphError(f"a path repeats no node, got {nodes!r}")
    zs = dag.node_set(given, "conditioning node")
    for a, b in zip(nodes, nodes[1:]):
        if not (dag.has_edge(a, b) or dag.has_edge(b, a)):
            raise GraphError(f"{a!r} and {b!r} are not adjacent, so {nodes!r} is not a path")
    anz = dag.ancestors(zs, include_self=True) if zs else frozenset()
    for a, v, b in zip(nodes, nodes[1:], nodes[2:]):
        collider = dag.has_edge(a, v) and dag.has_edge(b, v)
        if (collider and v not in anz) or (not collider and v in zs):
            return False
    return True
