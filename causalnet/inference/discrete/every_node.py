"""Every node's posterior for one scalar evidence and hard interventions, on one network's caches.

A page that shows every posterior after each click asks the same network
for all its marginals again and again, with the evidence growing by one node
at a time and an occasional ``do``. :func:`all_marginals` answers it without
building anything per request that an earlier request built already:

* when the network's junction tree is small (no clique over `max_clique`
  entries), one Hugin propagation on that tree (never the build of its
  calibrated prior tree, which costs many propagations at once: a request
  waits for no such build; when another caller built it, it answers the
  evidence-only requests); with interventions, the propagation runs on the
  *same* tree with the intervened nodes' CPTs left out and the nodes clamped
  (a ``do`` removes edges, and a junction tree of a graph stays one of a graph
  with fewer edges), so a ``do`` builds no new network and no new tree;
* otherwise, one compiled variable-elimination program per node over its
  *requisite* network only: the nodes whose CPTs ``P(v | e)`` depends on
  (ancestors of v and the evidence, minus the barren nodes, the nodes
  d-separated from v by the evidence and the observed nodes whose family is
  observed), computed in the graph under ``do`` (the intervened nodes lose
  their parents and their CPTs). The program is cached per (node, requisite
  set, observed nodes in it) on the network, so a node the new evidence does
  not reach (most of them, after one click) reuses the program of an earlier
  request, with or without a ``do``, and a ``do`` reuses the unmutilated
  network's programs wherever the intervened node is not requisite. One more
  program, over the ancestors of the evidence, gives ``log P(e)`` and the
  :class:`~causalnet.errors.EvidenceError` of impossible evidence.

Dropping a node's non-requisite CPTs drops factors that are constant in v
(they sum to one, or multiply every entry by one number), so each posterior is
the same as the full network's, to round-off.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.inference.discrete import discrete_network
>>> m = cn.gallery.load("sprinkler")
>>> bn = discrete_network(m)
>>> post, log_e, method = all_marginals(bn, {"Rain": 1}, do={"Sprinkler": 1})
>>> want = m.query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "on"}).probs
>>> method, bool(np.allclose(post["Wet"], want))
('exact (junction tree)', True)
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from ...errors import EvidenceError, ResourceError

__all__ = ["all_marginals", "requisite", "MAX_TREE_CLIQUE", "TREE_METHOD", "PER_NODE_METHOD"]

#: Largest clique (entries) for which the junction tree answers (past it, one requisite program per node).
MAX_TREE_CLIQUE = 10**6
#: The method names :func:`all_marginals` reports.
TREE_METHOD = "exact (junction tree)"
PER_NODE_METHOD = "exact (variable elimination)"


def requisite(bn, target: int | None, observed: frozenset, cut: frozenset = frozenset()) -> frozenset:
    """The nodes whose CPTs ``P(target | observed)`` depends on in `bn` under ``do`` on `cut`.

    Parameters
    ----------
    bn : DiscreteNetwork
    target : int or None
        A node int not in `observed`; None for ``P(observed)`` itself (then
        every ancestor of the observed nodes, but the intervened ones, counts).
    observed : frozenset of int
        Observed nodes, the intervened ones included.
    cut : frozenset of int
        Intervened nodes (a subset of `observed`): they lose their parents and their CPTs.

    Returns
    -------
    frozenset of int
    """
    family = bn.family
    start = set(observed) if target is None else {target, *observed}
    stack = list(start)
    while stack:                                   # ancestors in the graph under do(cut)
        v = stack.pop()
        if v in cut:
            continue
        for p in family[v][:-1]:
            if p not in start:
                start.add(p)
                stack.append(p)
    nodes = start - cut
    if target is None:
        return frozenset(nodes)
    # the families (of nodes in `nodes`) reachable from the target through their free members: the
    # connected component of the target in the moral graph of the free variables, walked family by family
    children = bn.children
    comp, stack, out = {target}, [target], set()
    while stack:
        u = stack.pop()
        for w in (u, *children[u]):                # the families that hold u
            if w in out or w not in nodes:
                continue
            out.add(w)
            for a in family[w]:
                if a not in observed and a not in comp:
                    comp.add(a)
                    stack.append(a)
    return frozenset(out)


def all_marginals(bn, evidence: Mapping[int, int] | None = None, *, do: Mapping[int, int] | None = None,
                  max_clique: int = MAX_TREE_CLIQUE, deadline: float | None = None) -> tuple[dict, float, str]:
    """Every node's posterior ``P(v | evidence)`` in `bn` under ``do``, and ``log P(evidence)``.

    Parameters
    ----------
    bn : DiscreteBN
    evidence : mapping of node -> state index, optional
        Scalar evidence.
    do : mapping of node -> state index, optional
        Hard interventions, disjoint from `evidence`.
    max_clique : int
        The junction tree answers when its largest clique has at most this
        many entries; past it, one requisite program per node.
    deadline : float, optional
        A ``time.monotonic()`` instant: the loop over nodes stops there with a
        :class:`~causalnet.errors.ResourceError`.

    Returns
    -------
    posteriors : dict of node name -> ndarray of shape (K,)
        Observed and intervened nodes get the point mass on their state.
    log_evidence : float
        ``log P(evidence)`` under the interventions.
    method : str
        :data:`TREE_METHOD` or :data:`PER_NODE_METHOD`.

    Raises
    ------
    EvidenceError
        On an unknown node, a state out of range, an array of states, a node
        both observed and intervened on, or evidence of probability zero under
        the interventions.
    ResourceError
        When the `deadline` passes, or a program's table would exceed
        ``limits.get("max_table_bytes")``.
    """
    ev, n = bn.evidence_indices(evidence)
    do, m = bn.evidence_indices(do)
    if n is not None or m is not None:
        raise EvidenceError("all_marginals takes one state per observed or intervened node, not arrays")
    both = set(ev) & set(do)
    if both:
        raise EvidenceError(f"{bn.nodes[min(both)]!r} is both observed and intervened on")
    obs = {**ev, **do}
    jt = bn.junction_tree()
    if jt.max_clique_size <= max_clique:
        if not do and jt.prior_tree_built:
            post, log_z = jt.marginals(evidence, return_log_evidence=True)
            return post, float(log_z), TREE_METHOD
        got = jt.propagate(obs, frozenset(do))
        if got is not None:
            return got[0], float(got[1]), TREE_METHOD
        if not do:                                   # P(e) underflows: the compiled calibration rescales
            post, log_z = jt.marginals(evidence, return_log_evidence=True)
            return post, float(log_z), TREE_METHOD
    return _per_node(bn, ev, obs, frozenset(do), deadline)


def _per_node(bn, ev: dict, obs: dict, cut: frozenset, deadline: float | None) -> tuple[dict, float, str]:
    """:func:`all_marginals` by one requisite program per node."""
    names, card, family = bn.nodes, bn.card, bn.family
    observed = frozenset(obs)
    log_z = 0.0
    if ev:
        nodes = requisite(bn, None, frozenset(ev) | cut, cut)
        (_, log_z), z = bn.query_on((), nodes, _observed_in(family, nodes, observed), obs)
        if not z > 0:
            bn.raise_impossible(ev, z, None)
    post: dict = {}
    for v in range(len(names)):
        if v in obs:
            p = np.zeros(card[v])
            p[obs[v]] = 1.0
        else:
            if deadline is not None and time.monotonic() > deadline:
                raise ResourceError(f"the posteriors took longer than allowed ({v} of {len(names)} nodes done); "
                                    f"observe fewer nodes or use a smaller model")
            nodes = requisite(bn, v, observed, cut)
            (p, _), z = bn.query_on((v,), nodes, _observed_in(family, nodes, observed), obs)
            if not z > 0:
                bn.raise_impossible(ev, z, None)
        post[names[v]] = p
    return post, float(log_z), PER_NODE_METHOD


def _observed_in(family: list, nodes: frozenset, observed: frozenset) -> frozenset:
    """The observed nodes that appear in the families of `nodes`."""
    return frozenset(u for v in nodes for u in family[v] if u in observed)
