"""The ground the adjustment criteria share: argument checks and graph primitives on integer adjacency lists.

:mod:`~causalnet.graph.backdoor`, :mod:`~causalnet.graph.adjustment` and
:mod:`~causalnet.graph.frontdoor` validate their ``(x, y[, z])`` arguments the
same way (nodes exist, are observed, treatments and outcomes disjoint) and
search the DAG as integer adjacency lists ``par[v]`` / ``chi[v]`` (the node
order of its index); both live here, once.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..arguments import check_int
from ..errors import GraphError
from .core import DAGCore
from .separation import bayes_ball

__all__ = [
    "node_names",
    "node_set",
    "check_xy",
    "check_xyz",
    "check_max_sets",
    "int_set",
    "observed_int_set",
    "collect_sets",
    "extend_ancestral",
    "cut_out",
    "reachable_ints",
    "separated_ints",
]

# Internally nodes are the integers of the DAG's index (its node order), and a
# graph is a pair of adjacency lists ``par[v]`` / ``chi[v]``.


# -- validation ------------------------------------------------------------------


def node_names(dag: DAGCore, nodes) -> list:
    return dag.in_order(nodes)


def node_set(dag: DAGCore, nodes, fn: str, arg: str, role: str, allow_empty: bool) -> frozenset:
    try:
        out = dag.node_set(nodes, role, allow_empty=allow_empty)
    except GraphError as err:
        raise GraphError(f"{fn}: argument {arg}: {err}") from None
    hidden = out & dag.latent
    if hidden:
        verb = "is" if len(hidden) == 1 else "are"
        article = "an" if role[0] in "aeiou" else "a"
        raise GraphError(f"{fn}: argument {arg}: {node_names(dag, hidden)} {verb} latent; {article} {role} must be observed")
    return out


def check_xy(dag: DAGCore, fn: str, x, y) -> tuple[frozenset, frozenset]:
    if not isinstance(dag, DAGCore):
        raise GraphError(f"{fn}: expects a causalnet DAG, got {type(dag).__name__}")
    xs = node_set(dag, x, fn, "x", "treatment", allow_empty=False)
    ys = node_set(dag, y, fn, "y", "outcome", allow_empty=False)
    both = xs & ys
    if both:
        raise GraphError(f"{fn}: x and y overlap on {node_names(dag, both)}; treatments and outcomes must be disjoint")
    return xs, ys


def check_xyz(dag: DAGCore, fn: str, x, y, z) -> tuple[frozenset, frozenset, frozenset]:
    xs, ys = check_xy(dag, fn, x, y)
    zs = node_set(dag, z, fn, "z", "adjustment node", allow_empty=True)
    for arg, other, role in (("x", xs, "treatments"), ("y", ys, "outcomes")):
        both = zs & other
        if both:
            raise GraphError(f"{fn}: z overlaps {arg} on {node_names(dag, both)}; z cannot contain {role}")
    return xs, ys, zs


def check_max_sets(fn: str, max_sets) -> None:
    if max_sets is not None:
        check_int(max_sets, f"{fn}: max_sets (None or an int)", low=1, error=GraphError)


def int_set(dag: DAGCore, nodes: frozenset) -> frozenset:
    pos = dag.index.pos
    return frozenset(pos[v] for v in nodes)


def observed_int_set(dag: DAGCore) -> frozenset:
    pos = dag.index.pos
    return frozenset(pos[v] for v in dag.observed)


def collect_sets(dag: DAGCore, sets: Iterator[frozenset], max_sets: int | None) -> list[frozenset]:
    """Take at most `max_sets` integer sets, sort them, and map them to node names."""
    out: list[frozenset] = []
    for s in sets:
        out.append(s)
        if max_sets is not None and len(out) >= max_sets:
            break
    out.sort(key=lambda s: (len(s), sorted(s)))
    order = dag.nodes
    return [frozenset(order[i] for i in s) for s in out]


# -- graph primitives on integer adjacency lists ---------------------------------------


def extend_ancestral(par: list, anc: set, v) -> set:
    """The ancestral set `anc` together with An(v) (a new set)."""
    out = set(anc)
    if v in out:
        return out
    out.add(v)
    stack = [v]
    while stack:
        for p in par[stack.pop()]:
            if p not in out:  # a node of `anc` brings its ancestors along already
                out.add(p)
                stack.append(p)
    return out


def cut_out(par: list, chi: list, cut) -> tuple[list, list]:
    """Adjacency lists without the edges out of `cut` (Pearl's G with `cut` underlined)."""
    par2 = list(par)
    chi2 = list(chi)
    for u in cut:
        for c in chi[u]:
            par2[c] = [p for p in par2[c] if p not in cut]
        chi2[u] = []
    return par2, chi2


def reachable_ints(par: list, chi: list, sources, given, cut=frozenset()) -> set:
    """Nodes with a path from `sources` that is open given `given` (Bayes-ball), edges out of `cut` removed."""
    up_seen, down_seen = bayes_ball(par, chi, sources, given, cut=frozenset(cut))
    return up_seen | down_seen


def separated_ints(par: list, chi: list, xs, ys, zs, keep: set | None = None) -> bool:
    """d-separation; with `keep`, an ancestral set holding X, Y and Z, the ball stays inside it."""
    up_seen, down_seen = bayes_ball(par, chi, xs, zs, stop=ys, keep=keep)
    return not ((up_seen | down_seen) & ys)
