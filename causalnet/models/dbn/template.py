"""The two-slice template of a dynamic Bayesian network, and its unrolling.

A DBN (Murphy 2002, ch. 2) is a prior network over the variables at step 0
(``initial``) and a two-slice temporal network (``transition``) that gives
every variable at step ``t >= 1`` a mechanism over parents in the same step
(``"X"``) or in the previous one (``"X[t-1]"``). Unrolled over ``T`` steps it
is an ordinary :class:`~causalnet.CausalModel` on nodes ``X[0] ... X[T-1]``.

:func:`validate_template` checks a template before anything is built: every
variable has both mechanisms, every parent exists, no cycle within a slice,
and (:func:`check_slices`) a variable holds the same kind and states in both
slices. :func:`unroll_mechanisms` renames the template's parents to step
nodes (``"X[t-1]" -> "X[4]"`` at step 5), sharing the parameters
(:meth:`~causalnet.Mechanism.with_parents`).
"""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx

from ...errors import GraphError, ModelError
from ...mechanisms.base import Mechanism
from .names import check_plain, split_template, step_name

__all__ = ["validate_template", "slice_order", "unroll_mechanisms", "check_slices", "interface_of"]


def _mechanisms(arg, what: str) -> dict:
    if not isinstance(arg, Mapping) or not arg:
        raise ModelError(f"DBN: {what} must be a non-empty mapping variable -> mechanism, got {arg!r}")
    out = {}
    for var, mech in arg.items():
        check_plain(var, f"DBN {what}")
        if not isinstance(mech, Mechanism):
            raise ModelError(f"DBN {what} node {var!r}: expected a Mechanism (e.g. cn.CPT, cn.LinearGaussian), "
                             f"got {type(mech).__name__}")
        out[var] = mech
    return out


def _intra_graph(mechs: dict, what: str, lagged: bool) -> nx.DiGraph:
    """The within-slice edges of `mechs`; GraphError naming an unknown parent or a cycle."""
    g = nx.DiGraph()
    g.add_nodes_from(mechs)
    for var, mech in mechs.items():
        for p in mech.parents:
            pv, lag = split_template(p)
            if lag == -1 and not lagged:
                raise GraphError(f"DBN {what} node {var!r} has parent {p!r}: step 0 has no previous step")
            if pv not in mechs:
                raise GraphError(f"DBN {what} node {var!r} has parent {p!r}, which names no variable; "
                                 f"variables: {sorted(mechs)}")
            if lag == 0:
                g.add_edge(pv, var)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return g
    names = [u for u, _ in cycle] + [cycle[0][0]]
    raise GraphError(f"DBN {what} slice has a cycle through {names[0]!r}: {' -> '.join(map(str, names))}")


def validate_template(initial, transition) -> tuple[dict, dict]:
    """Checked copies of the two mechanism maps (nothing is built before every check passed).

    Raises
    ------
    ModelError
        If a variable lacks a mechanism in either map, or an entry is not a Mechanism.
    GraphError
        If a parent names no variable, a step-0 parent is lagged, or a slice has a cycle.
    """
    init = _mechanisms(initial, "initial")
    trans = _mechanisms(transition, "transition")
    for var in trans:
        if var not in init:
            raise ModelError(f"DBN transition node {var!r} has no mechanism in initial (step 0); "
                             f"initial has {sorted(init)}")
    for var in init:
        if var not in trans:
            raise ModelError(f"DBN initial node {var!r} has no mechanism in transition (steps >= 1); "
                             f"transition has {sorted(trans)}")
    _intra_graph(init, "initial", lagged=False)
    _intra_graph(trans, "transition", lagged=True)
    return init, trans


def slice_order(transition: dict) -> tuple:
    """The variables in a topological order of the transition slice (ties in declaration order)."""
    g = nx.DiGraph()
    g.add_nodes_from(transition)
    for var, mech in transition.items():
        for p in mech.parents:
            pv, lag = split_template(p)
            if lag == 0:
                g.add_edge(pv, var)
    pos = {v: i for i, v in enumerate(transition)}
    return tuple(nx.lexicographical_topological_sort(g, key=pos.__getitem__))


def interface_of(transition: dict, variables) -> tuple:
    """The forward interface: the variables whose value at ``t-1`` some transition mechanism reads."""
    lagged = {split_template(p)[0] for mech in transition.values() for p in mech.parents
              if split_template(p)[1] == -1}
    return tuple(v for v in variables if v in lagged)


def unroll_mechanisms(initial: dict, transition: dict, T: int, start: int = 0) -> dict:
    """``{X[t]: mechanism}`` for ``t = start .. T-1`` (step 0 from `initial`, the others from `transition`)."""
    out = {}
    for t in range(start, T):
        mechs = initial if t == 0 else transition
        for var, mech in mechs.items():
            names = []
            for p in mech.parents:
                pv, lag = split_template(p)
                names.append(step_name(pv, t + lag))
            out[step_name(var, t)] = mech.with_parents(names)
    return out


def check_slices(specs: Mapping, variables) -> None:
    """ModelError when a variable's kind, states or shape differ between steps 0 and 1 (of a 2-step unroll)."""
    for var in variables:
        a, b = specs[step_name(var, 0)], specs[step_name(var, 1)]
        if (a.kind, a.states, a.shape) != (b.kind, b.states, b.shape):
            raise ModelError(f"DBN variable {var!r} is {a.describe()} at step 0 but {b.describe()} at steps >= 1; "
                             f"initial and transition must agree")
