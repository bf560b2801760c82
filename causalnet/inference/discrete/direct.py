"""The first query of a fresh discrete model, by direct variable elimination on its ancestral network.

A model asked one question should not pay for what only repeated questions
use: validating and copying every CPT into a
:class:`~causalnet.inference.discrete.network.DiscreteNetwork`, compiling a
contraction program, caching it. :func:`direct_query` answers a plain query
(scalar evidence, no ``do``, every node a
:class:`~causalnet.mechanisms.tabular.Tabular` CPT, checked already when the
model was built) from the CPTs of the *ancestral set* of the targets and the
evidence only: every other node is barren, so ``P(targets, e)`` and ``P(e)``
are exactly those of that sub-network. The evidence axes are indexed away,
a greedy min-weight order is chosen on the moral graph of what is left while
eliminating (a local score: cheap to keep up to date), and each variable is
summed out with one ``einsum`` of the factors that hold it. Factors not
connected to the targets (through unobserved variables) only scale
``P(e)``: when the observed nodes' own CPTs among them have no zero entry
(at the observed states), that part is known to be positive (the mean,
under the free variables' CPTs, of a positive product) and its sum is
deferred until ``log_evidence`` is read.

It declines (returns None, and the compiled path answers, raising or
rescaling as it does) when ``P(e)`` is below
:data:`~causalnet.inference.discrete.programs.TINY` (impossible or
underflowing evidence) or an intermediate table would exceed
``limits.get("max_table_bytes")``. The answer is the compiled path's to
round-off: ``(P(targets | e), log P(e))``.

Legend: ``K`` states of a node.

Examples
--------
>>> import causalnet as cn
>>> m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
>>> probs, log_ev = direct_query(m, ("A",), {"B": 1})
>>> probs.round(4).tolist()
[0.0508, 0.9492]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ...mechanisms.tabular import Tabular
from .ordering import table_entry_limit
from .programs import TINY

__all__ = ["direct_query", "is_plain_tabular"]

#: Entries of a clique up to which several factors are multiplied by one plain ``einsum`` (no path search).
_PLAIN_EINSUM = 4096


def is_plain_tabular(model) -> bool:
    """True when every node of `model` is a :class:`~causalnet.mechanisms.tabular.Tabular` CPT (cached)."""
    got = model.cache.get("all_tabular")
    if got is None:
        got = model.cache["all_tabular"] = all(type(m) is Tabular or isinstance(m, Tabular)
                                               for m in model.mechanisms.values())
    return got


def direct_query(model, targets: Sequence[Hashable], evidence: Mapping[Hashable, int]):
    """``(P(targets | evidence), log P(evidence))`` on the ancestral network, or None (see the module).

    Parameters
    ----------
    model : CausalModel
        Every node a ``Tabular`` CPT (:func:`is_plain_tabular`).
    targets : sequence of nodes
        Distinct, none observed.
    evidence : mapping of node -> int
        State indices, in range (validated by the request).

    Returns
    -------
    (probs, log_evidence) or None
        `probs` of shape ``(*target_cards)``, axes in `targets` order.
        `log_evidence` is a float, or a function of no arguments returning
        it (or None if it underflows) when the evidence not connected to the
        targets is known to be possible without computing its probability.
    """
    dag = model.dag
    pos, par, nodes = dag.index.pos, dag.index.par, dag.nodes
    mechs = model.mechanisms
    tidx = [pos[t] for t in targets]
    ev = {pos[k]: int(x) for k, x in evidence.items()}
    keep = set(tidx) | set(ev)
    stack = list(keep)
    while stack:                                        # ancestral closure (node ints)
        for p in par[stack.pop()]:
            if p not in keep:
                keep.add(p)
                stack.append(p)
    card: dict = {}
    factors: list = []                                  # (table, labels): labels are the free node ints
    const = 1.0
    observed_child: set = set()                         # factors of an observed node's own CPT
    for v in keep:
        mech = mechs[nodes[v]]
        table = mech.table                              # (*parent_cards, K), in the mechanism's parent order
        fam = [pos[p] for p in mech.parents] + [v]
        for u, k in zip(fam, table.shape):
            card[u] = k
        if not any(u in ev for u in fam):
            factors.append((table, fam))
            continue
        idx = tuple(ev[u] if u in ev else slice(None) for u in fam)
        reduced = table[idx]                            # free axes only
        labels = [u for u in fam if u not in ev]
        if labels:
            factors.append((reduced, labels))
            if v in ev:
                observed_child.add(len(factors) - 1)
        else:
            const *= float(reduced)
    if not const > 0:
        return None                                     # a fully observed family of probability zero
    near, far = _split(factors, tidx)
    got = _eliminate_all([factors[i] for i in near], const, tidx, card)
    if got is None or not far:
        return got
    probs, log_near = got
    far_factors = [factors[i] for i in far]
    # the free variables' CPTs are a distribution over them, so P(far evidence) is the mean of the product
    # of the observed nodes' own (reduced) CPTs: positive when these have no zero entry; read when asked
    if all(float(factors[i][0].min()) > 0 for i in far if i in observed_child):
        return probs, lambda: _far_log_evidence(far_factors, card, log_near)
    log_far = _far_log_evidence(far_factors, card, log_near)
    return None if log_far is None else (probs, log_far)


def _split(factors: list, tidx: list) -> tuple[list, list]:
    """The indices of the factors connected to the targets through shared free variables, and of the others."""
    holders: dict = {}
    for i, (_, labels) in enumerate(factors):
        for u in labels:
            holders.setdefault(u, []).append(i)
    seen_vars = set(tidx)
    stack = list(tidx)
    taken: set = set()
    while stack:
        for i in holders.get(stack.pop(), ()):
            if i not in taken:
                taken.add(i)
                for u in factors[i][1]:
                    if u not in seen_vars:
                        seen_vars.add(u)
                        stack.append(u)
    return sorted(taken), [i for i in range(len(factors)) if i not in taken]


def _far_log_evidence(far: list, card: dict, log_near: float) -> float | None:
    """``log P(e)``: `log_near` plus the log of the sum of the product of the `far` factors (None if it
    underflows or is zero)."""
    got = _eliminate_all(far, 1.0, [], card)
    return None if got is None else log_near + got[1]


def _eliminate_all(factors: list, const: float, tidx: list, card: dict):
    """Sum every non-target variable out of `factors`; ``(probs, log z)`` or None (see :func:`direct_query`).

    The order is greedy min-weight (the fewest entries of the table an
    elimination creates, ties to the smaller node int), chosen while
    eliminating: the score is local, so only the eliminated variable's
    neighbours are rescored.
    """
    adj: dict = {}                                      # the moral graph of the free variables
    holders: dict = {}                                  # variable -> ids of the factors holding it (some dead)
    live: dict = {}
    for i, f in enumerate(factors):
        live[i] = f
        for a in f[1]:
            s = adj.get(a)
            if s is None:
                s = adj[a] = set()
                holders[a] = [i]
            else:
                holders[a].append(i)
            s.update(f[1])
    for a, s in adj.items():
        s.discard(a)
    limit = table_entry_limit()
    if math.prod(card[t] for t in tidx) > limit:
        return None                                     # the targets' joint: the compiled path raises
    tset = set(tidx)
    logc = {u: math.log(card[u]) for u in adj}
    cur = {v: logc[v] + sum(logc[a] for a in nb) for v, nb in adj.items() if v not in tset}
    heap = [(sc, v) for v, sc in cur.items()]
    heapq.heapify(heap)
    nxt = len(factors)
    while heap:
        sc, z = heapq.heappop(heap)
        if cur.get(z) != sc:
            continue                                    # eliminated, or a stale score
        del cur[z]
        nb = adj.pop(z)
        if card[z] * math.prod(card[a] for a in nb) > limit:
            return None                                 # the compiled path raises the ResourceError
        ids = set(holders.pop(z))
        group = [live.pop(i) for i in ids if i in live]
        out = sorted(nb)
        table = _contract(group, out, card)             # (*[card[u] for u in out])
        if out:
            live[nxt] = (table, out)
        else:
            const *= float(table)
        for a in nb:
            na = adj[a]
            na.discard(z)
            na |= nb
            na.discard(a)
            holders[a].append(nxt)
            if a in cur:
                sa = logc[a] + sum(logc[u] for u in na)
                if sa != cur[a]:
                    cur[a] = sa
                    heapq.heappush(heap, (sa, a))
        nxt += 1
    joint = _contract(list(live.values()), tidx, card) if live else np.ones(tuple(card[t] for t in tidx))
    joint = joint * const                               # (*target_cards)
    z = float(joint.sum())
    if not z >= TINY:
        return None                                     # impossible or underflowing: the compiled path decides
    return joint / z, math.log(z)


def _contract(group: list, out: Sequence[int], card: Mapping) -> np.ndarray:
    """The product of the factors in `group` with every label not in `out` summed out, axes in `out` order."""
    if len(group) == 1 and list(group[0][1]) == list(out):
        return group[0][0]
    local: dict = {}
    args: list = []
    for table, labels in group:
        args.append(table)
        args.append([local.setdefault(u, len(local)) for u in labels])
    for u in out:
        local.setdefault(u, len(local))
    if len(local) > 52:                                 # einsum's label limit: pairwise instead
        return _contract_pairwise(group, out)
    args.append([local[u] for u in out])
    if len(group) > 2 and math.prod(card[u] for u in local) > _PLAIN_EINSUM:
        return np.einsum(*args, optimize="greedy")     # a contraction path pays on a large clique
    return np.einsum(*args)


def _contract_pairwise(group: list, out: Sequence[int]) -> np.ndarray:
    """:func:`_contract` by successive broadcast products (any number of distinct labels)."""
    labels = sorted({u for _, lab in group for u in lab})
    pos = {u: i for i, u in enumerate(labels)}
    acc = np.ones([1] * len(labels))
    for table, lab in group:
        order = sorted(range(len(lab)), key=lambda j: pos[lab[j]])
        t = np.transpose(table, order)
        shape = [1] * len(labels)
        for j in order:
            shape[pos[lab[j]]] = table.shape[j]
        acc = acc * t.reshape(shape)
    drop = tuple(i for i, u in enumerate(labels) if u not in set(out))
    acc = acc.sum(axis=drop) if drop else acc
    kept = [u for u in labels if u in set(out)]
    return np.transpose(acc, [kept.index(u) for u in out])
