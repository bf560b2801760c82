"""Instrumental variables, conditional ones included (as in dagitty).

An instrument Z for the effect of X on Y moves X but reaches Y only through
X. With a conditioning set W (Brito & Pearl 2002), Z is a **conditional
instrument** relative to X -> Y given W when

1. W holds no descendant of a node on a proper causal path from X to Y
   (the *forbidden* nodes; for a single edge X -> Y: no descendant of Y),
2. W d-separates Z from Y in G_c, the graph without the first edge of every
   proper causal path from X to Y, and
3. W does not d-separate Z from X in G_c.

Z, X, Y and W must be observed; latent nodes are just part of the graph.
:func:`instrumental_variables` finds, for every candidate Z, an *ancestral*
conditioning set (van der Zander, Textor & Liśkiewicz 2015): the minimal
separator of Z and Y closest to Y in the moral graph of An(Z ∪ Y) in G_c,
which leaves as much of Z's side connected (hence to X) as any separator
among ancestors can.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG([("Z", "X"), ("X", "Y"), ("U", "X"), ("U", "Y"), ("C", "Z"), ("C", "Y")], latent=["U"])
>>> instrumental_variables(g, "X", "Y")
[('Z', frozenset({'C'}))]
>>> is_instrument(g, "Z", "X", "Y"), is_instrument(g, "Z", "X", "Y", given=["C"])
(False, True)

References
----------
.. [1] Brito & Pearl, "Generalized instrumental variables", UAI 2002.
.. [2] van der Zander, Textor & Liśkiewicz, "Efficiently finding conditional
   instruments for causal inference", IJCAI 2015.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from ..errors import GraphError
from .core import DAGCore
from .separation import d_separated

__all__ = ["instrumental_variables", "is_instrument", "causal_path_graph", "forbidden_for_instruments"]


def _one(dag: DAGCore, v: Hashable, role: str) -> Hashable:
    if isinstance(v, (list, tuple, set, frozenset)) and v not in dag:
        items = list(v)
        if len(items) != 1:
            raise GraphError(f"the {role} must be one node, got {items!r}")
        v = items[0]
    if v not in dag:
        dag.parents(v)  # raises GraphError with a did-you-mean hint
    if v in dag.latent:
        raise GraphError(f"the {role} {v!r} is latent; instruments need observed nodes")
    return v


def _xy(dag: DAGCore, x: Hashable, y: Hashable) -> tuple[Hashable, Hashable]:
    x, y = _one(dag, x, "treatment"), _one(dag, y, "outcome")
    if x == y:
        raise GraphError(f"treatment and outcome are both {x!r}")
    if x not in dag.ancestors(y):
        raise GraphError(f"{x!r} is not an ancestor of {y!r}: there is no causal effect to instrument")
    return x, y


def causal_path_graph(dag: DAGCore, x: Hashable, y: Hashable) -> DAGCore:
    """G_c: `dag` without the first edge ``x -> d`` of every proper causal path from `x` to `y`."""
    on_path = dag.ancestors(y, include_self=True)
    return dag.remove_edges([(x, d) for d in dag.children(x) if d in on_path])


def forbidden_for_instruments(dag: DAGCore, x: Hashable, y: Hashable) -> frozenset:
    """Nodes no conditioning set may hold: descendants of the nodes on proper causal paths from `x` to `y`."""
    mediators = (dag.descendants(x) & dag.ancestors(y)) | {y}
    return dag.descendants(mediators, include_self=True)


def is_instrument(dag: DAGCore, z: Hashable, x: Hashable, y: Hashable, given: Iterable[Hashable] = ()) -> bool:
    """Whether `z` is a (conditional) instrument for `x` -> `y` given `given` (see the module docstring).

    Raises
    ------
    GraphError
        On unknown or latent nodes, `x` not an ancestor of `y`, or overlapping roles.
    """
    x, y = _xy(dag, x, y)
    z = _one(dag, z, "instrument")
    w = frozenset(_one(dag, v, "conditioning node") for v in (given if not isinstance(given, str) else [given]))
    if z in (x, y) or w & {x, y, z}:
        raise GraphError(f"instrument {z!r}, treatment {x!r}, outcome {y!r} and conditioning set "
                         f"{sorted(map(str, w))} must not overlap")
    if w & forbidden_for_instruments(dag, x, y):
        return False
    gc = causal_path_graph(dag, x, y)
    return d_separated(gc, z, y, given=w) and not d_separated(gc, z, x, given=w)


def instrumental_variables(dag: DAGCore, treatment: Hashable, outcome: Hashable) -> list[tuple[Hashable, frozenset]]:
    """Every observed node that is an instrument for `treatment` -> `outcome`, with a conditioning set.

    Returns
    -------
    list of (node, frozenset)
        In node order; the set is empty for an unconditional instrument. The
        sets are ancestral (van der Zander et al. 2015): Z is listed if some
        conditioning set among the ancestors of Z and the outcome works.
    """
    x, y = _xy(dag, treatment, outcome)
    gc = causal_path_graph(dag, x, y)
    forbidden = forbidden_for_instruments(dag, x, y)
    allowed = frozenset(dag.observed) - forbidden - {x}
    out = []
    for z in dag.observed:
        if z in (x, y) or z in forbidden:
            continue
        w = _closest_separator(gc, z, y, allowed - {z})
        if w is not None and not d_separated(gc, z, x, given=w):
            out.append((z, w))
    return out


def _moral_adjacency(dag: DAGCore, nodes: frozenset) -> dict:
    """Moral graph of the ancestral set `nodes`: parent-child edges and married co-parents."""
    adj: dict = {v: set() for v in nodes}
    for v in nodes:
        pa = dag.parents(v)
        for i, p in enumerate(pa):
            adj[p].add(v)
            adj[v].add(p)
            for q in pa[i + 1:]:
                adj[p].add(q)
                adj[q].add(p)
    return adj


def _closest_separator(dag: DAGCore, z: Hashable, y: Hashable, allowed: frozenset) -> frozenset | None:
    """The minimal d-separator of `z` and `y` among `allowed` ancestors that lies closest to `y`; None if none."""
    anc = dag.ancestors({z, y}, include_self=True)
    adj = _moral_adjacency(dag, anc)
    near_y: set = set()
    seen, stack = {y}, [y]
    while stack:                       # walk from y, stopping at allowed nodes
        for n in adj[stack.pop()]:
            if n in seen:
                continue
            seen.add(n)
            if n == z:
                return None
            if n in allowed:
                near_y.add(n)
            else:
                stack.append(n)
    keep: set = set()
    seen, stack = {z}, [z]
    while stack:                       # keep those the z side touches: a minimal separator
        for n in adj[stack.pop()]:
            if n in near_y:
                keep.add(n)
            elif n not in seen:
                seen.add(n)
                stack.append(n)
    return frozenset(keep)
