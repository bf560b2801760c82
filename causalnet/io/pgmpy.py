"""Interop with pgmpy's discrete Bayesian networks.

:func:`from_pgmpy` turns a pgmpy ``DiscreteBayesianNetwork`` (``BayesianNetwork``
in older pgmpy) into a :class:`~causalnet.model.CausalModel` of
:class:`~causalnet.mechanisms.tabular.Categorical` and
:class:`~causalnet.mechanisms.tabular.CPT` nodes; :func:`to_pgmpy` goes back.
pgmpy is an optional extra (``pip install causalnet[pgmpy]``), imported only
inside :func:`to_pgmpy`; :func:`from_pgmpy` reads the model's CPDs by their
public attributes and needs no import.

Layouts: a pgmpy ``TabularCPD`` holds ``values`` of shape ``(K, *evidence_cards)``
with evidence order ``cpd.variables[1:]`` and state names in
``cpd.state_names``; a CPT holds ``(*parent_cards, K)`` with the parents in
that same order. States are matched by name, so a CPD that lists a parent's
states in another order than the parent's own CPD is reordered, not
misread. Values are copied bit for bit; rows that pgmpy accepted but that
sum to 1 only within `tol` are rescaled as in :func:`causalnet.io.bif.read_bif`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..mechanisms.tabular import CPT, Categorical
from ..model import CausalModel
from .tables import DEFAULT_TOL, check_tol, discrete_parts, fix_rows

__all__ = ["from_pgmpy", "to_pgmpy"]

_INSTALL = "pip install causalnet[pgmpy]"


def _network_class():
    try:
        from pgmpy.models import DiscreteBayesianNetwork as Network
    except ImportError:
        try:
            from pgmpy.models import BayesianNetwork as Network
        except ImportError:
            raise ImportError(f"to_pgmpy needs pgmpy, an optional extra: {_INSTALL}") from None
    from pgmpy.factors.discrete import TabularCPD

    return Network, TabularCPD


def from_pgmpy(model: Any, *, tol: float = DEFAULT_TOL) -> CausalModel:
    """A causal model from a pgmpy discrete Bayesian network.

    Parameters
    ----------
    model : pgmpy DiscreteBayesianNetwork (or BayesianNetwork)
        Every node needs a ``TabularCPD``. Its ``latents`` become latent nodes.
    tol : float, default 1e-6
        Rows summing to 1 within `tol` are accepted (those off by more than
        1e-9 are rescaled).

    Returns
    -------
    CausalModel
        Nodes in ``model.nodes()`` order; each CPT's parents in the CPD's
        evidence order; state names from ``cpd.state_names``.

    Raises
    ------
    ModelError
        If `model` is not a pgmpy network, a node has no CPD or a
        non-tabular one, a CPD's parents or states disagree with the
        network, or a row does not sum to 1.
    """
    tol = check_tol(tol)
    if not (hasattr(model, "get_cpds") and hasattr(model, "nodes")):
        raise ModelError(f"from_pgmpy expects a pgmpy DiscreteBayesianNetwork, got {type(model).__name__}")
    nodes = list(model.nodes())
    cpds = {node: _tabular_cpd(model, node) for node in nodes}
    states = {node: _states_of(node, cpd) for node, cpd in cpds.items()}
    mechs = {}
    for node in nodes:
        parents = list(cpds[node].variables[1:])
        table = _table_of(model, node, cpds[node], states, tol)
        if parents:
            mechs[node] = CPT(parents, table, states=states[node])
        else:
            mechs[node] = Categorical(table, states=states[node])
    latent = [v for v in nodes if v in set(getattr(model, "latents", ()) or ())]
    return CausalModel(mechs, latent=latent)


def _tabular_cpd(model: Any, node: Any) -> Any:
    cpd = model.get_cpds(node)
    if cpd is None:
        raise ModelError(f"pgmpy node {node!r} has no CPD; add one with model.add_cpds(...)")
    if not all(hasattr(cpd, a) for a in ("values", "variables", "state_names")):
        raise ModelError(f"pgmpy node {node!r} has a {type(cpd).__name__}; only TabularCPDs (discrete nodes) "
                         f"can be converted")
    return cpd


def _states_of(node: Any, cpd: Any) -> list:
    k = int(np.shape(cpd.values)[0])
    names = (cpd.state_names or {}).get(node)
    states = list(range(k)) if names is None else list(names)
    if len(states) != k:
        raise ModelError(f"pgmpy node {node!r}: {len(states)} state names for {k} states")
    return states


def _table_of(model: Any, node: Any, cpd: Any, states: dict, tol: float) -> np.ndarray:
    """The CPD's values as ``(*parent_cards, K)``, parents' states in their own order, rows checked."""
    parents = list(cpd.variables[1:])
    graph_parents = set(model.predecessors(node)) if hasattr(model, "predecessors") else set(parents)
    if set(parents) != graph_parents:
        raise ModelError(f"pgmpy node {node!r}: its CPD is conditioned on {parents}, but its parents in the "
                         f"network are {sorted(graph_parents, key=str)}")
    vals = np.array(cpd.values, dtype=np.float64)                              # (K, *pcards)
    table = np.moveaxis(vals, 0, -1)                                              # (*pcards, K)
    for ax, p in enumerate(parents):
        if p not in states:
            raise ModelError(f"pgmpy node {node!r} has parent {p!r}, which is not a node of the network")
        given = list((cpd.state_names or {}).get(p, range(table.shape[ax])))
        if given != states[p]:
            if sorted(map(repr, given)) != sorted(map(repr, states[p])) or len(given) != table.shape[ax]:
                raise ModelError(f"pgmpy node {node!r}: its CPD gives parent {p!r} the states {given}, but "
                                 f"{p!r} has states {states[p]}")
            perm = [given.index(s) for s in states[p]]
            table = np.take(table, perm, axis=ax)
    table = np.ascontiguousarray(table)

    def fail_row(row: tuple, msg: str) -> None:
        label = ", ".join(f"{p}={states[p][i]!r}" for p, i in zip(parents, row))
        raise ModelError(f"pgmpy node {node!r}" + (f" given {label}" if label else "") + f": {msg}")

    return fix_rows(table, tol, fail_row)


def to_pgmpy(model: CausalModel):
    """A pgmpy ``DiscreteBayesianNetwork`` with the same graph, states and tables.

    Parameters
    ----------
    model : CausalModel
        Categorical and CPT nodes only, not intervened on.

    Returns
    -------
    pgmpy.models.DiscreteBayesianNetwork
        (``BayesianNetwork`` on older pgmpy), with one ``TabularCPD`` per
        node: values ``(K, prod(parent_cards))``, evidence in the CPT's
        parent order, ``state_names`` from the model, and the model's latent
        nodes as ``latents``.

    Raises
    ------
    ImportError
        If pgmpy is not installed (the message names ``causalnet[pgmpy]``).
    ModelError
        If a node is not Categorical/CPT or is intervened on.
    """
    discrete_parts(model, "pgmpy")          # validate before importing pgmpy
    Network, TabularCPD = _network_class()
    edges = [(p, v) for v in model.nodes for p in model.mechanisms[v].parents]
    net = Network()
    net.add_nodes_from(model.nodes)                 # first, so pgmpy keeps our node order
    net.add_edges_from(edges)
    net.latents = set(model.latent)
    cpds = []
    for node in model.nodes:
        mech = model.mechanisms[node]
        table = np.asarray(mech.table)                                             # (*pcards, K)
        k = mech.card
        names = {node: list(mech.states)}
        for p in mech.parents:
            names[p] = list(model.mechanisms[p].states)
        values = np.moveaxis(table, -1, 0).reshape(k, -1)                         # (K, prod(pcards))
        cpds.append(TabularCPD(node, k, values, evidence=list(mech.parents) or None,
                               evidence_card=[model.mechanisms[p].card for p in mech.parents] or None,
                               state_names=names))
    net.add_cpds(*cpds)
    return net
