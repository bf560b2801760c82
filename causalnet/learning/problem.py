"""A learning problem: a structure, a table, and each node's states, validated together.

Every learner (parameters, EM, scores) starts from a :class:`Problem`, built by
:func:`prepare`, which checks the structure against the data before anything is
fitted: each observed node has a column, latent nodes have none and have
states, and no discrete node has a real parent (the conditional Gaussian
restriction; a real node may have discrete parents).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import GraphError, ModelError
from ..graph.dag import DAG
from .data import Table, as_table

__all__ = ["Problem", "prepare", "as_dag", "latent_states", "check_parent_order"]


def as_dag(structure) -> DAG:
    """A :class:`DAG` from a DAG, a model, an edge list or a graph string."""
    if isinstance(structure, DAG):
        return structure
    if isinstance(getattr(structure, "dag", None), DAG) and hasattr(structure, "mechanisms"):   # a model
        return structure.dag
    if isinstance(structure, str):
        return DAG.parse(structure)
    if isinstance(structure, Iterable) and not isinstance(structure, Mapping):
        return DAG(list(structure))
    raise GraphError(f"structure must be a DAG, an edge list or a graph string, got {type(structure).__name__}")


class Problem:
    """A validated learning problem: the DAG, the table, and each node's states (None for continuous)."""

    def __init__(self, dag: DAG, table: Table, states: Mapping[Hashable, tuple | None], latent: frozenset,
                 model_class: type | None = None, parents: Mapping[Hashable, tuple] | None = None) -> None:
        self.dag = dag
        self.model_class = model_class      # what a fit builds: CausalModel (learning sits below model.py)
        self.table = table
        self.states = dict(states)
        self.latent = latent
        self._parents = {v: tuple(ps) for v, ps in parents.items()} if parents else None

    def parents(self, v: Hashable) -> tuple:
        """`v`'s parents in the order of its CPT axes: a refitted model's own order, else the DAG's."""
        return self._parents[v] if self._parents is not None else tuple(self.dag.parents(v))

    def is_discrete(self, v: Hashable) -> bool:
        return self.states[v] is not None

    def card(self, v: Hashable) -> int:
        return len(self.states[v])


def latent_states(dag: DAG, latent: frozenset, states: Mapping) -> dict:
    """``{latent node: its state names}`` from ``states=`` (a count or names per latent node)."""
    out = {}
    for v in latent:
        s = states.get(v)
        if s is None:
            raise ModelError(f"latent node {v!r} needs its states: pass states={{{v!r}: 2}} or a list of names")
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            if s < 2:
                raise ModelError(f"latent node {v!r} needs at least 2 states, got {s}")
            s = tuple(range(int(s)))
        out[v] = tuple(s)
    return out


def _check_families(dag: DAG, states: Mapping) -> None:
    """The conditional Gaussian restriction: a discrete node has discrete parents only.

    A real node may have discrete and real parents (a conditional linear-Gaussian family).
    """
    for v in dag.topological_order():
        for p in dag.parents(v):
            if states[v] is not None and states[p] is None:
                raise ModelError(f"node {v!r} is discrete but its parent {p!r} is continuous; a discrete node "
                                 f"with a real parent is outside conditional Gaussian models (the CG "
                                 f"restriction): reverse the edge {p!r} -> {v!r}, or discretise {p!r}")


def check_parent_order(dag: DAG, parents: Mapping | None) -> None:
    """`parents` (node -> tuple, optional) must list exactly each node's parents in `dag`."""
    for v in dag.nodes if parents else ():
        if set(parents.get(v, ())) != set(dag.parents(v)) or len(parents.get(v, ())) != len(dag.parents(v)):
            raise ModelError(f"parent order for {v!r} is {list(parents.get(v, ()))}, but its parents are "
                             f"{list(dag.parents(v))}")


def prepare(structure, data, *, states: Mapping | None = None, latent: Iterable[Hashable] = (),
            model_class: type | None = None, parents: Mapping | None = None) -> Problem:
    """Validate `structure`, `data`, `states` and `latent` together (nothing is fitted yet).

    `parents` (node -> tuple) fixes the order of each CPT's parent axes (a
    refitted model keeps its own); by default the DAG's order.

    Raises
    ------
    ModelError
        Naming the column: a node without a column, a latent node with a
        column, ``states=`` for an unknown node, no rows, a discrete node with a
        real parent.
    GraphError
        If the structure is not a DAG or `latent` names an unknown node.
    """
    dag = as_dag(structure)
    check_parent_order(dag, parents)
    latent = frozenset([latent] if isinstance(latent, str) else latent) | dag.latent
    for v in latent:
        if v not in dag:
            raise GraphError(f"latent node {v!r} is not a node of the structure; nodes: {list(dag.nodes)}")
    states = dict(states or {})
    for v in states:
        if v not in dag:
            raise ModelError(f"states= names {v!r}, which is not a node of the structure; nodes: {list(dag.nodes)}")
    observed = [v for v in dag.nodes if v not in latent]
    table = as_table(data, states={k: s for k, s in states.items() if k not in latent and k in _names(data)},
                     columns=None)
    for v in observed:
        if v not in table:
            raise ModelError(f"node {v!r} has no column in the data; columns: {list(table.names)} "
                             f"(declare it latent=[{v!r}] to learn it by EM)")
    for v in latent:
        if v in table:
            raise ModelError(f"node {v!r} is declared latent but the data have a column {v!r}; drop the column "
                             f"or do not declare it latent")
    if table.n == 0:
        raise ModelError("the data have no rows; fitting needs at least one observation")
    node_states = {v: (table.states(v) if table.column(v).is_discrete else None) for v in observed}
    node_states.update(latent_states(dag, latent, states))
    _check_families(dag, node_states)
    return Problem(dag, _subtable(table, observed), node_states, latent, model_class, parents)


def _names(data) -> set:
    if hasattr(data, "columns"):
        return set(data.columns)
    if isinstance(data, Mapping):
        return set(data)
    return set()


def _subtable(table: Table, names: Sequence[Hashable]) -> Table:
    return Table({v: table.column(v) for v in names}, table.n)
