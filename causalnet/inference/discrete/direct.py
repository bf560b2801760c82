"""A discrete model's new query shapes, by direct variable elimination on their requisite network.

:class:`~causalnet.inference.discrete.engine.DirectLedger` sends here a
model's plain queries of a shape it was not asked before (its first query
among them); repeated shapes go to the compiled network.

A model asked one question should not pay for what only repeated questions
use: validating and copying every CPT into a
:class:`~causalnet.inference.discrete.network.DiscreteNetwork`, compiling a
contraction program, caching it. :func:`direct_query` answers a plain query
(scalar evidence, no ``do``, every node a
:class:`~causalnet.mechanisms.tabular.Tabular` CPT, checked already when the
model was built) from the CPTs of the *ancestral set* of the targets and the
evidence only: every other node is barren, so ``P(targets, e)`` and ``P(e)``
are exactly those of that sub-network. Of these, only the CPTs connected to
the targets through unobserved variables once the evidence is indexed away
(found by a walk from the targets over parents and children inside the
ancestral set, the requisite part that a Bayes ball would find) are
multiplied for the answer. A few small factors (their number times the
entries of their joint at most :data:`_ONE_EINSUM`) are multiplied and
summed by one plain ``einsum``: a handful of numpy calls is what a fresh
model's first query can afford (each distinct call pays for cold caches
after a read). Otherwise their variables are eliminated in two steps:
first each one held by a single factor, or by two of which one holds no
variable the other lacks (no table grows: a sum, a matrix product), then
the rest in a greedy min-weight order chosen on the moral graph while
eliminating (a local score: cheap to keep up to date), each by the
cheapest product of the factors that hold it (a matrix product when it
can, one ``einsum`` for small products, pairs of batched matrix products
for large ones), summing with it the neighbours no other factor holds,
until one ``einsum`` can finish.

The other CPTs only scale ``P(e)``. That part is known to be positive
without computing it when the observed nodes' own CPTs among them have no
zero at the observed states (it is the mean, under the free variables'
CPTs, of a positive product), or when a greedy search finds one assignment
of its free variables under which every one of its CPTs is positive
(:func:`_far_possible`); its sum is then deferred until ``log_evidence`` is
read. Otherwise it is computed at once, so that impossible evidence is
refused as on the compiled path.

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

from ...graph.core import closure
from .ordering import table_entry_limit
from .programs import TINY

__all__ = ["direct_query"]

#: Entries of a clique up to which several factors are multiplied by one plain ``einsum`` (no path search).
_PLAIN_EINSUM = 4096
#: Factors times joint entries up to which the factors left are multiplied and summed by one plain einsum
#: (a few microseconds) instead of an elimination step per variable.
_ONE_EINSUM = 16384
#: Factors up to which that test is made before any elimination.
_ONE_EINSUM_FACTORS = 16
#: Entries of a product (before its sum) times its factors above which it is made two factors at a time by
#: matrix products (einsum's plain loop over every entry and operand is the slower there).
_PAIR_MATMUL = 8192
#: Variables left from which the greedy order checks whether one plain einsum can finish the sum.
_FINISH = 8
#: Entries up to which a table's minimum is Python's (one conversion) rather than numpy's reduction.
_SHORT = 64
#: Variables up to which the next one to eliminate is found by a scan (a heap above).
_SCAN = 40


def direct_query(model, targets: Sequence[Hashable], evidence: Mapping[Hashable, int]):
    """``(P(targets | evidence), log P(evidence))`` on the ancestral network, or None (see the module).

    Parameters
    ----------
    model : CausalModel
        Every node a ``Tabular`` CPT (:func:`~causalnet.mechanisms.tabular.is_plain_tabular`).
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
    ix = model.dag.index
    pos, par, chi, nodes = ix.pos, ix.par, ix.chi, ix.nodes
    mechs = model.mechanisms
    tidx = [pos[t] for t in targets]
    ev = {pos[k]: int(x) for k, x in evidence.items()}
    anc = closure(par, [*tidx, *ev])                      # the targets, the observed nodes, their ancestors
    near = _near_families(par, chi, anc, ev, tidx)
    factors = [_reduced(mechs[nodes[w]], pos, w, ev) for w in near]      # each holds a free variable
    const, zeros = 1.0, []
    far_free = len(anc) - len(ev) > len(near) - sum([w in ev for w in near])     # a free variable apart
    for w in ev:                                        # the observed families apart from the targets
        if w in near:
            continue
        table, labels = _reduced(mechs[nodes[w]], pos, w, ev)
        if labels:
            far_free = True
            if not (min(table.ravel().tolist()) if table.size <= _SHORT else float(table.min())) > 0:
                zeros.append(w)
        else:
            const *= float(table)
    if not const > 0:
        return None                                     # a fully observed family of probability zero
    got = _eliminate_all(factors, const, tidx, [mechs[t].card for t in targets])
    if got is None or not far_free:
        return got
    probs, log_near = got

    def log_far():
        far = [f for f in (_reduced(mechs[nodes[w]], pos, w, ev) for w in anc if w not in near) if f[1]]
        if not far:
            return log_near
        rest = _eliminate_all(far, 1.0, [], [])
        return None if rest is None else log_near + rest[1]

    # the free variables' CPTs are a distribution over them, so P(far evidence) is the mean of the product
    # of the observed nodes' own (reduced) CPTs: positive when these have no zero entry, or when one
    # assignment of the free variables makes every far factor positive; then read when asked
    if not zeros or _far_possible(model, ix, ev, zeros):
        return probs, log_far
    log_ev = log_far()
    return None if log_ev is None else (probs, log_ev)


def _near_families(par: list, chi: list, anc: set, ev: Mapping, tidx: list) -> dict:
    """The nodes of `anc` whose (evidence-reduced) CPTs connect to the targets through free variables.

    A walk over free variables from the targets: a free variable's own family
    and the families of its children inside `anc` hold it; every free member
    of such a family is reached in turn (observed nodes stop the walk, but an
    observed child joins its free parents: explaining away). What is left of
    `anc` only scales ``P(e)``. Returns a dict used as an ordered set.
    """
    near: dict = {}
    free = set(tidx)
    stack = list(tidx)
    while stack:
        u = stack.pop()
        for w in (u, *chi[u]):
            if w in near or w not in anc:
                continue
            near[w] = None
            if w not in ev and w not in free:
                free.add(w)
                stack.append(w)
            for p in par[w]:
                if p not in ev and p not in free:
                    free.add(p)
                    stack.append(p)
    return near


def _far_possible(model, ix, ev: Mapping, start: list) -> bool:
    """Whether one assignment of the free variables apart from the targets gives every factor there a
    positive value, found greedily: True proves ``P(far evidence) > 0``; False only means none was found.

    From the observed nodes of `start` up: a node with a value whose CPT
    row (at its parents that have a value) has a zero takes the most
    probable configuration of its other parents and gives them their values
    in turn; a row without zeros constrains its parents in nothing. A node
    that never gets a value constrains nothing: its CPT rows sum to 1, so
    each has a positive entry whatever its parents are.
    """
    mechs, pos, nodes = model.mechanisms, ix.pos, ix.nodes
    val = dict(ev)
    stack = list(start)
    while stack:
        w = stack.pop()
        mech = mechs[nodes[w]]
        key, free = [], []
        for p in mech.parents:
            u = pos[p]
            x = val.get(u)
            if x is None:
                key.append(_ALL)
                free.append(u)
            else:
                key.append(x)
        key.append(val[w])
        row = mech.table[tuple(key)]                    # (*cards of the free parents)
        if not free:
            if not float(row) > 0:
                return False
            continue
        flat = row.ravel().tolist()                     # rows are short: Python's min and max beat numpy's
        if min(flat) > 0:
            continue                                    # positive whatever the free parents are
        best = max(flat)
        if not best > 0:
            return False
        j = flat.index(best)
        for u, k in zip(reversed(free), reversed(row.shape)):
            j, val[u] = divmod(j, k)
        stack.extend(free)
    return True


_ALL = slice(None)


def _reduced(mech, pos: Mapping, w: int, ev: Mapping) -> tuple:
    """``(table, labels)``: the CPT `mech` of node int `w` indexed at the observed states, labels its free
    node ints (in the table's axis order)."""
    fam = [pos[p] for p in mech.parents]
    fam.append(w)
    table = mech.table                                  # (*parent_cards, K), in the mechanism's parent order
    if ev.keys().isdisjoint(fam):
        return table, fam
    return table[tuple([ev.get(u, _ALL) for u in fam])], [u for u in fam if u not in ev]


def _eliminate_all(factors: list, const: float, tidx: list, tcards: list):
    """Sum every non-target variable out of `factors`; ``(probs, log z)`` or None (see :func:`direct_query`).

    `tcards` are the targets' numbers of states. First every variable whose
    elimination creates no new table larger than one it consumes
    (:func:`_absorb`), then the rest in a greedy min-weight order
    (:func:`_greedy`).
    """
    limit = table_entry_limit()
    size = 1
    for k in tcards:
        size *= k
    if size > limit:
        return None                                     # the targets' joint: the compiled path raises
    if len(factors) > _ONE_EINSUM_FACTORS or not _small(factors):
        live = dict(enumerate(factors))
        holders: dict = {}                              # variable -> ids of the live factors holding it
        for i, (_, labels) in enumerate(factors):
            for a in labels:
                h = holders.get(a)
                if h is None:
                    holders[a] = {i}
                else:
                    h.add(i)
        tset = set(tidx)
        const *= _absorb(live, holders, tset)
        if len(holders) > len(tset) and not _small(live.values()):
            card: dict = {}
            for table, labels in live.values():
                card.update(zip(labels, table.shape))
            got = _greedy(live, holders, tset, card, limit)
            if got is None:
                return None                             # the compiled path raises the ResourceError
            const *= got
        factors = list(live.values())
    if not factors:
        joint = np.ones(tcards)
    elif len(factors) == 1:
        joint, labels = factors[0]
        if labels != tidx:
            joint = _contract(factors, tidx)
    else:
        joint = _contract(factors, tidx)
    z = float(joint.sum()) * const                      # joint: (*target_cards)
    if not z >= TINY:
        return None                                     # impossible or underflowing: the compiled path decides
    return joint * (const / z), math.log(z)


def _small(factors) -> bool:
    """Whether one plain ``einsum`` of `factors` is cheap: the number of factors times the entries of
    their joint table (every label's states) is at most :data:`_ONE_EINSUM` (Python steps cost more)."""
    seen = set()
    size = len(factors)
    for table, labels in factors:
        for u, k in zip(labels, table.shape):
            if u not in seen:
                seen.add(u)
                size *= k
                if size > _ONE_EINSUM:
                    return False
    return True


def _absorb(live: dict, holders: dict, tset: set) -> float:
    """Eliminate, in place, every non-target variable held by one factor, or by two of which one holds no
    variable the other lacks (so the product is no larger than the larger factor: no fill, no new limit to
    check), until none is left; returns the product of the factors left with no variable.

    The result keeps the larger factor's id, so the holders of the other
    variables stay as they are (less the smaller factor's id). A factor
    over `z` alone times another is a matrix product (the commonest step:
    an observed child's likelihood, a root's prior).
    """
    scale = 1.0
    work = [v for v in holders if v not in tset]
    while work:
        z = work.pop()
        hs = holders.get(z)
        if hs is None:
            continue
        n = len(hs)
        if n == 1:
            (i,) = hs
            table, labels = live[i]
            if len(labels) == 1:
                del live[i], holders[z]
                scale *= float(table.sum())
                continue
            j = labels.index(z)
            table = np.add.reduce(table, axis=j)
            out = labels[:j] + labels[j + 1:]
        elif n == 2:
            i, small = hs
            tb, lb = live[i]
            ts, ls = live[small]
            if len(lb) < len(ls):
                i, small, tb, lb, ts, ls = small, i, ts, ls, tb, lb
            if len(ls) == 1:                            # (..., z, ...) times a vector over z
                del live[small]
                if len(lb) == 1:
                    del live[i], holders[z]
                    scale *= float(tb @ ts)
                    continue
                j = lb.index(z)
                if j == len(lb) - 1:
                    table, out = tb @ ts, lb[:-1]
                else:
                    table, out = tb.swapaxes(j, -1) @ ts, lb[:j] + [lb[-1]] + lb[j + 1:-1]
            else:
                if not _holds(lb, ls):
                    continue
                table, out = _sum_out([(tb, lb), (ts, ls)], z, 0)
                del live[small]
                for u in ls:
                    if u != z:
                        holders[u].discard(small)
        else:
            continue
        del holders[z]
        live[i] = (table, out)
        for u in out:
            if u not in tset:
                work.append(u)
    return scale


def _holds(big: list, small: list) -> bool:
    """Whether every label of `small` is in `big`."""
    for u in small:
        if u not in big:
            return False
    return True


def _greedy(live: dict, holders: dict, tset: set, card: dict, limit: float) -> float | None:
    """Eliminate, in place, the non-target variables left, in a greedy min-weight order; returns the
    product of the factors left with no variable, or None when a table would pass `limit` entries.

    The order (the fewest entries of the table an elimination creates, its
    clique) is chosen while eliminating: the score is local, so only the
    eliminated variable's neighbours are rescored (exact integer products).
    The neighbours held by no factor outside the product are summed out in
    the same ``einsum``: no table over them is made only to be summed next.
    It stops when the factors left are :func:`_small`: the caller's one
    ``einsum`` sums the variables left.
    """
    adj: dict = {}                                      # the moral graph of the free variables
    for v, hs in holders.items():
        nb = set()
        for i in hs:
            nb.update(live[i][1])
        nb.discard(v)
        adj[v] = nb
    cg = card.__getitem__
    cur = {v: card[v] * math.prod(map(cg, nb)) for v, nb in adj.items() if v not in tset}
    heap = None if len(cur) <= _SCAN else [(sc, v) for v, sc in cur.items()]
    if heap is not None:
        heapq.heapify(heap)
    nxt = max(live) + 1
    scale = 1.0
    while cur:
        if len(cur) <= _FINISH and _small(live.values()):
            break                                       # the rest: one plain einsum (the caller's _contract)
        if heap is None:                                # few variables: a scan beats a heap
            z = min(cur, key=cur.__getitem__)
            sc = cur.pop(z)
        else:
            sc, z = heapq.heappop(heap)
            if cur.get(z) != sc:
                continue                                # a stale score
            del cur[z]
        if sc > limit:
            return None
        nb = adj.pop(z)
        ids = holders.pop(z)
        group = [live.pop(i) for i in ids]
        drop = [a for a in nb if a in cur and holders[a] <= ids]    # held by the group only: summed with z
        if drop:
            for y in drop:
                del cur[y], holders[y], adj[y]
            nb = nb.difference(drop)
            drop.append(z)
            table, out = _product_sum(group, drop, sc)
        else:
            table, out = _sum_out(group, z, sc)
        if out:
            live[nxt] = (table, out)
        else:
            scale *= float(table)
        kz = card[z]
        for a in nb:
            h = holders[a]
            h -= ids
            h.add(nxt)
            na = adj[a]
            na.discard(z)
            div = kz
            if drop:
                for y in drop:
                    if y in na:
                        na.discard(y)
                        div *= card[y]
            new = nb - na
            new.discard(a)
            if new:
                na |= new
            if a in cur:
                sa = cur[a] = cur[a] // div * math.prod(map(cg, new)) if new else cur[a] // div
                if heap is not None:
                    heapq.heappush(heap, (sa, a))
        nxt += 1
    return scale


def _sum_out(group: list, z: int, entries: int) -> tuple:
    """``(table, labels)``: the product of the factors of `group` (each holding `z`) with `z` summed out.

    `entries` is the number of entries of the product before the sum (its
    clique). A vector over `z`, or a matrix over ``(z, c)`` with ``c`` in no
    other factor, is a matrix product; anything else :func:`_product_sum`.
    """
    if len(group) == 2:
        (a, la), (b, lb) = group
        if len(la) < len(lb):
            a, la, b, lb = b, lb, a, la
        if len(lb) == 1:                                # a vector over z: a matrix product
            if len(la) == 1:
                return a @ b, []
            j = la.index(z)
            if j == len(la) - 1:
                return a @ b, la[:-1]
            return a.swapaxes(j, -1) @ b, la[:j] + [la[-1]] + la[j + 1:-1]
        if len(lb) == 2:                                # a table times a matrix over (z, c), c only there
            got = _times_matrix(a, la, b, lb, z)
            if got is not None:
                return got
    vec = None                                          # the product of the factors over z alone
    rest = []
    for table, labels in group:
        if len(labels) == 1:
            vec = table if vec is None else vec * table
        else:
            rest.append((table, labels))
    if len(rest) == 1:                                  # one table (times a vector over z: a matrix product)
        a, la = rest[0]
        j = la.index(z)
        if vec is None:
            return a.sum(axis=j), la[:j] + la[j + 1:]
        if j != len(la) - 1:
            a = a.swapaxes(j, -1)
            la = la[:j] + [la[-1]] + la[j + 1:-1]
        else:
            la = la[:-1]
        return a @ vec, la
    if not rest:
        return vec.sum(), []
    if vec is not None:
        rest.append((vec, [z]))
    return _product_sum(rest, [z], entries)


def _product_sum(group: list, drop: list, entries: int) -> tuple:
    """``(table, labels)``: the product of the factors of `group` with the labels of `drop` summed out
    (each held by no factor outside `group`), the other labels in order of appearance.

    `entries` is the number of entries of the product before the sum: up to
    :data:`_PAIR_MATMUL` (times the factors) one plain ``einsum``, above it
    factors two at a time, the smallest first, each pair by one batched
    matrix product (:func:`_pair`), summing a label as soon as no factor
    left holds it.
    """
    if len(group) > 1 and entries * len(group) <= _PAIR_MATMUL:     # one einsum: labels numbered in one pass
        loc: dict = {}
        args: list = []
        for table, labels in group:
            sub = []
            for u in labels:
                j = loc.get(u)
                if j is None:
                    j = loc[u] = len(loc)
                sub.append(j)
            args.append(table)
            args.append(sub)
        out = [u for u in loc if u not in drop]
        if len(loc) <= 52:                              # einsum's label limit (else broadcast products)
            args.append([loc[u] for u in out])
            return np.einsum(*args), out
        return _contract_pairwise(group, out), out
    out = [u for u in dict.fromkeys([u for _, labels in group for u in labels]) if u not in drop]
    if len(group) == 1:
        table, labels = group[0]
        return np.add.reduce(table, axis=tuple(j for j, u in enumerate(labels) if u in drop)), out
    group = sorted(group, key=lambda f: f[0].size)
    acc, acc_lab = group[0]
    gone = set(drop)
    for k in range(1, len(group)):
        b, lb = group[k]
        later = {u for _, labels in group[k + 1:] for u in labels}
        acc, acc_lab = _pair(acc, acc_lab, b, lb, gone - later)
    if acc_lab != out:
        acc = acc.transpose([acc_lab.index(u) for u in out])
    return acc, out


def _pair(a: np.ndarray, la: list, b: np.ndarray, lb: list, drop: set) -> tuple:
    """``(table, labels)``: ``A * B`` summed over the labels of `drop` they hold, by one batched matrix
    product: labels in both and kept are the batch, those in both and summed the inner axis.

    Labels ``K`` (shared, kept), ``P`` (only in `a`), ``Q`` (only in `b`): the
    result has axes ``(*K, *P, *Q)``. A summed label only one factor holds
    is summed in that factor first.
    """
    ina, inb = set(la), set(lb)
    if drop - inb & ina:
        a = np.add.reduce(a, axis=tuple(j for j, u in enumerate(la) if u in drop and u not in inb))
        la = [u for u in la if not (u in drop and u not in inb)]
    if drop - ina & inb:
        b = np.add.reduce(b, axis=tuple(j for j, u in enumerate(lb) if u in drop and u not in ina))
        lb = [u for u in lb if not (u in drop and u not in ina)]
    pa = {u: j for j, u in enumerate(la)}
    pb = {u: j for j, u in enumerate(lb)}
    kept, inner, only_a = [], [], []
    for u in la:
        if u not in pb:
            only_a.append(u)
        elif u in drop:
            inner.append(u)
        else:
            kept.append(u)
    only_b = [u for u in lb if u not in pa]
    sa, sb = a.shape, b.shape
    ks = [sa[pa[u]] for u in kept]
    ps = [sa[pa[u]] for u in only_a]
    qs = [sb[pb[u]] for u in only_b]
    zn = math.prod([sa[pa[u]] for u in inner])
    kn, pn, qn = math.prod(ks), math.prod(ps), math.prod(qs)
    at = a.transpose([pa[u] for u in kept + only_a + inner]).reshape(kn, pn, zn)
    bt = b.transpose([pb[u] for u in kept + inner + only_b]).reshape(kn, zn, qn)
    return (at @ bt).reshape(ks + ps + qs), kept + only_a + only_b


def _times_matrix(a: np.ndarray, la: list, b: np.ndarray, lb: list, z: int) -> tuple | None:
    """``(table, labels)``: ``sum_z A * B`` as one (batched) matrix product when `b` is a matrix over
    ``(z, c)`` and ``c`` is not in `la`; None otherwise."""
    c = lb[1] if lb[0] == z else lb[0]
    if c in la:
        return None
    if lb[0] != z:
        b = b.T                                         # (K_z, K_c)
    j = la.index(z)
    if j != len(la) - 1:
        a = a.swapaxes(j, -1)                           # z last
        la = la[:j] + [la[-1]] + la[j + 1:-1]
    else:
        la = la[:-1]
    return a @ b, la + [c]                              # (*other cards of a, K_c)


def _contract(group: list, out: Sequence[int]) -> np.ndarray:
    """The product of the factors in `group` with every label not in `out` summed out, axes in `out` order."""
    if len(group) == 1 and list(group[0][1]) == list(out):
        return group[0][0]
    local: dict = {}
    args: list = []
    entries = 1
    for table, labels in group:
        args.append(table)
        sub = []
        for u, k in zip(labels, table.shape):
            if u not in local:
                local[u] = len(local)
                entries *= k
            sub.append(local[u])
        args.append(sub)
    for u in out:
        local.setdefault(u, len(local))
    if len(local) > 52:                                 # einsum's label limit: pairwise instead
        return _contract_pairwise(group, out)
    args.append([local[u] for u in out])
    if len(group) > 2 and entries > _PLAIN_EINSUM:
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
