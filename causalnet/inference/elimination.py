"""Exact inference on discrete Bayesian networks by variable elimination.

Terms
-----
A *discrete Bayesian network* is a DAG with a conditional probability table
(CPT) per node, of shape ``(*parent_cards, card)`` with the parents in the DAG's
node order and rows summing to 1 on the last axis. :class:`DiscreteBN` answers

* ``query``: ``P(targets | evidence)`` (a joint table or per-target marginals)
  and ``log P(evidence)``;
* ``map``: the most probable assignment of some nodes given the evidence
  (MPE when all non-evidence nodes are asked for), with its log-probability;
* ``junction_tree``: a calibrated clique tree giving every single-node
  posterior at once (:mod:`causalnet.inference.junction_tree`).

Evidence values are state indices: an ``int``, or an int array of shape (n,)
for n queries answered in one vectorized pass (a *batched* query; results get a
leading batch axis). Nothing loops over rows in Python.

How a query runs
----------------
A query with scalar evidence (one state per observed node) whose targets
share a clique of the network's junction tree, with the default `order`, is
answered from the *calibrated prior junction tree*
(:mod:`causalnet.inference.junction_tree`), built once per network at its
second such query: the prior marginal of every clique is kept, and the query
computes only the likelihood messages on the part of the tree that joins the
observed nodes to the targets (nothing is pruned, ordered or compiled per
query; a message carrying a single observation is precomputed). Evidence
whose probability is below 1e-280 (or zero) falls through to the compiled
engine, which rescales (or raises). On a network whose junction tree has a
clique of 4096 entries or more, a (targets, evidence nodes) shape asked a
second time is compiled instead: its pruned, cached plan then runs faster
than the tree. Everything else (batched evidence, targets in no common
clique, an explicit order, MAP) is compiled:

1. *Pruning.* Only ancestors of the targets and the evidence matter (the other
   nodes are *barren*: their CPTs sum out to 1). In the moral graph of that
   ancestral set with the evidence nodes removed, the connected components
   holding a target are exactly the nodes not d-separated from the targets by
   the evidence (Lauritzen's moralization criterion); their CPTs (the
   *requisite* ones, Shachter's Bayes-ball set) give ``P(targets | e)``. The
   other components are needed for ``P(e)`` only; they are eliminated on their
   own, and those without evidence are constant.
2. *Ordering.* A greedy elimination order (weighted min-fill by default) on
   that moral graph; from a network's second compiled query on, the default
   takes one weighted-min-fill order of the whole network restricted to the
   nodes to eliminate instead (valid for any subset, and its tables are
   subsets of the whole network's), unless its largest table would exceed
   4096 entries.
3. *Compilation.* Elimination becomes a fixed program of einsum calls on
   *slots*: the evidence-reduced CPTs (filled in per query by one numpy index
   each), constants, and intermediate factors. Every step whose inputs do not
   depend on the evidence values is run once, at compile time (constant
   folding). A step over a large table (or a batched step) is split so that
   no einsum iterates over many small axes: along a pairwise path fixed at
   compile time, each pair's axes are grouped by role and merged (transpose +
   reshape) into at most four long axes, then contracted by ``matmul`` when
   the summed group is wide, else by einsum. Batched arrays keep the batch as
   their last, contiguous axis, so it is the inner loop. No einsum call has
   more than 32 axes.
4. *Caching.* Programs are cached per (targets, evidence variables, batched
   evidence variables, order), so later queries of the same shape only index
   the CPTs and run the einsum calls.

Products of many probabilities can underflow; when ``P(e)`` comes out below
1e-280 the query is rerun with every intermediate factor rescaled (and the
scales kept in log space), so a tiny ``P(e)`` is never reported as zero.
Evidence of probability zero raises :class:`~causalnet.errors.EvidenceError`.

Legend: ``n`` batch, ``K`` states.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> g = cn.DAG.parse("Rain -> Wet; Sprinkler -> Wet")
>>> bn = DiscreteBN(g, {
...     "Rain": np.array([0.8, 0.2]),
...     "Sprinkler": np.array([0.6, 0.4]),
...     "Wet": np.array([[[1.0, 0.0], [0.1, 0.9]],       # (Rain, Sprinkler, Wet)
...                      [[0.2, 0.8], [0.01, 0.99]]]),
... }, {"Rain": 2, "Sprinkler": 2, "Wet": 2})
>>> probs, log_e = bn.query(["Rain"], {"Wet": 1})
>>> np.round(probs, 4).tolist(), round(float(np.exp(log_e)), 4)
([0.6218, 0.3782], 0.4632)
>>> probs, _ = bn.query(["Rain"], {"Wet": np.array([0, 1, 1])})   # 3 queries, one pass
>>> probs.shape
(3, 2)

References
----------
.. [1] D. Koller, N. Friedman, "Probabilistic Graphical Models", MIT Press
       2009, ch. 9 (variable elimination, orderings) and ch. 10 (clique trees).
.. [2] R. D. Shachter, "Bayes-Ball: the rational pastime", UAI 1998.
.. [3] S. L. Lauritzen, A. P. Dawid, B. N. Larsen, H.-G. Leimer,
       "Independence properties of directed Markov fields", Networks 20, 1990.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import partial

import numpy as np

from ..errors import EvidenceError, GraphError, ModelError, ShapeError
from ..graph.dag import DAG
from ..graph.separation import _closure
from .factors import (
    BATCH,
    MAX_EINSUM_AXES,
    MAX_EINSUM_OPERANDS,
    Factor,
    _as_index,
    _subscripts,
    contract,
    factor_product,
)

__all__ = [
    "DiscreteBN",
    "ORDER_METHODS",
    "moral_graph",
    "elimination_order",
    "elimination_cliques",
    "variable_elimination",
]

#: Greedy elimination-order heuristics: ``"weighted-min-fill"`` (sum over the
#: fill edges of the product of their end cards), ``"min-fill"`` (number of fill
#: edges), ``"min-degree"`` (neighbours), ``"min-weight"`` (size of the table the
#: elimination creates). Ties go to the smaller table, then to node order.
ORDER_METHODS = ("weighted-min-fill", "min-fill", "min-degree", "min-weight")

_TINY = 1e-280            # below this P(e) is recomputed with rescaling
_BIG = 1 << 13            # steps iterating over this many entries go pairwise on grouped axes
_MAX_PLANS = 4096         # compiled programs kept per network
_MAX_PRIOR_CLIQUE = 1 << 20   # largest clique (entries) of a calibrated prior junction tree
_MAX_PRIOR_TOTAL = 1 << 23    # and its total entries
_GLOBAL_ORDER_MAX = 1 << 12   # the global order serves a query whose largest table stays this small


# -- graphs and orders ------------------------------------------------------------


def moral_graph(dag: DAG, nodes: Iterable[Hashable] | None = None) -> dict[Hashable, set]:
    """The moral graph of `dag`, or of its subgraph induced by `nodes`.

    Each node is joined to its parents, and the parents of each node to one
    another (they "marry"); directions are dropped.

    Returns
    -------
    dict
        Node -> set of neighbours, in node order.
    """
    keep = frozenset(dag.nodes) if nodes is None else dag._as_set(nodes)
    nb: dict = {v: set() for v in dag.nodes if v in keep}
    for v in nb:
        fam = [p for p in dag.parents(v) if p in keep] + [v]
        for a in fam:
            nb[a].update(fam)
    for v, s in nb.items():
        s.discard(v)
    return nb


def _greedy_order(adj: dict, card: Mapping, elim: Iterable, method: str, rank: Mapping,
                  cliques: list | None = None) -> list:
    """Greedily eliminate the nodes of `elim` from `adj` (mutated: fill edges added).

    `card` gives each node's number of states, `rank` a total order for ties.
    When `cliques` is a list, each elimination appends ``(v, neighbours)``.
    """
    if method not in ORDER_METHODS:
        raise GraphError(f"unknown elimination order {method!r}; choose one of {list(ORDER_METHODS)}")
    todo = set(elim)
    cg = card.__getitem__
    prod = math.prod

    def score(v):
        nb = adj[v]
        w = cg(v) * prod(map(cg, nb))            # entries of the table eliminating v creates
        if method == "min-degree":
            return (len(nb), w)
        if method == "min-weight":
            return (w, len(nb))
        fill = 0
        if method == "min-fill":
            k = len(nb) - 1
            for a in nb:
                fill += k - len(adj[a] & nb)
        else:
            for a in nb:
                miss = nb - adj[a]
                if len(miss) > 1:
                    miss.discard(a)
                    fill += cg(a) * sum(map(cg, miss))
        return (fill, w)

    cur = {v: score(v) for v in todo}
    heap = [(s, rank[v], v) for v, s in cur.items()]
    heapq.heapify(heap)
    order = []
    local = method in ("min-degree", "min-weight")
    while heap:
        s, _, v = heapq.heappop(heap)
        if v not in todo or cur[v] != s:
            continue
        todo.discard(v)
        order.append(v)
        nb = adj.pop(v)
        if cliques is not None:
            cliques.append((v, frozenset(nb)))
        touched = set(nb)
        for a in nb:
            na = adj[a]
            na.discard(v)
            if not local:
                # a fill edge a-b changes the fill score of the common neighbours of a and b
                for b in nb - na:
                    if b != a:
                        touched |= na & adj[b]
        for a in nb:
            na = adj[a]
            na |= nb
            na.discard(a)
        for u in touched:
            if u in todo:
                su = score(u)
                if su != cur[u]:
                    cur[u] = su
                    heapq.heappush(heap, (su, rank[u], u))
    return order


def _apply_order(adj: dict, order: Sequence, cliques: list | None = None) -> None:
    """Eliminate `order` from `adj` in that order (mutated), recording cliques."""
    for v in order:
        nb = adj.pop(v)
        if cliques is not None:
            cliques.append((v, frozenset(nb)))
        for a in nb:
            na = adj[a]
            na.discard(v)
            na |= nb
            na.discard(a)


def _largest_table(adj: dict, order: Sequence, card: Sequence[int]) -> int:
    """Entries of the largest table eliminating `order` from `adj` (mutated) creates."""
    big = 1
    for v in order:
        nb = adj.pop(v)
        big = max(big, card[v] * math.prod(card[a] for a in nb))
        for a in nb:
            na = adj[a]
            na.discard(v)
            na |= nb
            na.discard(a)
    return big


def elimination_order(
    graph: Mapping[Hashable, Iterable[Hashable]],
    cards: Mapping[Hashable, int] | None = None,
    *,
    method: str = "weighted-min-fill",
    eliminate: Iterable[Hashable] | None = None,
) -> list:
    """A greedy elimination order for an undirected graph.

    Parameters
    ----------
    graph : mapping of node -> iterable of neighbours
        Undirected (each edge listed at both ends), e.g. :func:`moral_graph`.
    cards : mapping of node -> int, optional
        Numbers of states (weights); default 2 for every node.
    method : str
        One of :data:`ORDER_METHODS`.
    eliminate : iterable of nodes, optional
        The nodes to order (default: all). Other nodes stay in the graph and
        count for fill and weights, but are never eliminated.

    Returns
    -------
    list
        The nodes of `eliminate`, in elimination order.

    Raises
    ------
    GraphError
        On an unknown method or a node of `eliminate` not in the graph.
    """
    adj = {v: set(nb) for v, nb in graph.items()}
    for v, nb in graph.items():
        for u in nb:
            adj.setdefault(u, set()).add(v)
    rank = {v: i for i, v in enumerate(adj)}
    card = {v: (2 if cards is None else int(cards[v])) for v in adj}
    elim = list(adj) if eliminate is None else list(eliminate)
    bad = [v for v in elim if v not in adj]
    if bad:
        raise GraphError(f"cannot eliminate {bad[0]!r}: it is not a node of the graph")
    return _greedy_order(adj, card, elim, method, rank)


def elimination_cliques(graph: Mapping[Hashable, Iterable[Hashable]], order: Sequence[Hashable]) -> list[frozenset]:
    """The clique formed when each node of `order` is eliminated, in order.

    The clique of ``v`` is ``v`` and its neighbours at the time it is
    eliminated (with the fill edges of earlier eliminations). The largest has
    ``induced width + 1`` nodes.
    """
    adj = {v: set(nb) for v, nb in graph.items()}
    for v, nb in graph.items():
        for u in nb:
            adj.setdefault(u, set()).add(v)
    bad = [v for v in order if v not in adj]
    if bad:
        raise GraphError(f"cannot eliminate {bad[0]!r}: it is not a node of the graph")
    out: list = []
    _apply_order(adj, list(order), out)
    return [frozenset({v, *nb}) for v, nb in out]


def variable_elimination(
    factors: Sequence[Factor],
    keep: Sequence[Hashable],
    *,
    evidence: Mapping[Hashable, int | np.ndarray] | None = None,
    order: str | Sequence[Hashable] = "weighted-min-fill",
) -> Factor:
    """Sum-product variable elimination over arbitrary factors.

    Parameters
    ----------
    factors : sequence of Factor
    keep : sequence of hashable
        The variables of the result, in this order.
    evidence : mapping, optional
        Reduces every factor first (see :meth:`Factor.reduce`).
    order : str or sequence
        A method of :data:`ORDER_METHODS`, or an explicit order (variables it
        omits are eliminated afterwards by weighted min-fill).

    Returns
    -------
    Factor
        ``sum over the other variables of the product of the factors``, over
        `keep` (unnormalized; batched if any factor or evidence is).
    """
    fs = [f.reduce(evidence) if evidence else f for f in factors]
    keep = tuple(keep)
    adj: dict = {}
    card: dict = {}
    for f in fs:
        for v, k in zip(f.vars, f.cards):
            adj.setdefault(v, set()).update(f.vars)
            card[v] = k
    for v in keep:
        if v not in adj:
            raise ModelError(f"cannot keep {v!r}: no factor has it (variables: {tuple(adj)})")
    for v in adj:
        adj[v].discard(v)
    rank = {v: i for i, v in enumerate(adj)}
    elim = [v for v in adj if v not in set(keep)]
    if isinstance(order, str):
        seq = _greedy_order(adj, card, elim, order, rank)
    else:
        want = set(elim)
        seq = [v for v in order if v in want]
        _apply_order(adj, seq)
        seq += _greedy_order(adj, card, [v for v in elim if v not in set(seq)], "weighted-min-fill", rank)
    pool = list(fs)
    for z in seq:
        take = [f for f in pool if z in f.vars]
        pool = [f for f in pool if z not in f.vars]
        union = dict.fromkeys(v for f in take for v in f.vars)
        del union[z]
        pool.append(factor_product(take, keep=tuple(union)))
    return factor_product(pool, keep=keep)


# -- compiled contraction programs ---------------------------------------------------


def _contract_fn(in_labels, out_labels, *arrays):
    return contract(arrays, in_labels, out_labels, optimize=False)


class _Pair:
    """Contract two arrays after grouping their axes by role.

    Axes only in one operand and not kept are summed first. The rest are
    transposed into groups (shared kept K, own kept P / Q, shared summed C) and
    each group merged into one axis, so the contraction is ``(K, P, C) x
    (K, C, Q) -> (K, P, Q)``: a ``matmul`` (BLAS) when the summed group is
    wide (C >= 8), else one einsum over these long axes, where an einsum over
    many small axes would crawl (its inner loop would have length 2). A batched
    operand goes second, so the batch is in the innermost group; when both are
    batched the shared group holding the batch is innermost (einsum).
    """

    __slots__ = ("swap", "a_sum", "b_sum", "perm_a", "perm_b", "na", "nb", "mode", "perm_out")

    def __init__(self, la: tuple, lb: tuple, out: tuple, card) -> None:
        self.swap = BATCH in la and BATCH not in lb
        if self.swap:
            la, lb = lb, la
        both = BATCH in la and BATCH in lb
        sa, sb, keep = set(la), set(lb), set(out)
        self.a_sum = tuple(i for i, v in enumerate(la) if v not in sb and v not in keep)
        self.b_sum = tuple(i for i, v in enumerate(lb) if v not in sa and v not in keep)
        la2 = [v for i, v in enumerate(la) if i not in self.a_sum]
        lb2 = [v for i, v in enumerate(lb) if i not in self.b_sum]
        ck = [v for v in la2 if v in sb and v in keep]
        cs = [v for v in la2 if v in sb and v not in keep]
        ak = [v for v in la2 if v not in sb]
        bk = [v for v in lb2 if v not in sa]
        wide = math.prod(card[v] for v in cs) >= 8
        if both:        # (P, C, K) x (C, Q, K) -> (P, Q, K): K holds the batch, innermost
            ga, gb, res = (ak, cs, ck), (cs, bk, ck), ak + bk + ck
            self.mode = "pck,cqk->pqk"
        else:           # (K, P, C) x (K, C, Q) -> (K, P, Q)
            ga, gb, res = (ck, ak, cs), (ck, cs, bk), ck + ak + bk
            self.mode = "matmul" if wide else "kpc,kcq->kpq"
        self.perm_a = tuple(la2.index(v) for g in ga for v in g)
        self.perm_b = tuple(lb2.index(v) for g in gb for v in g)
        self.na = tuple(len(g) for g in ga)
        self.nb = tuple(len(g) for g in gb)
        self.perm_out = tuple(res.index(v) for v in out)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.swap:
            a, b = b, a
        if self.a_sum:
            a = a.sum(axis=self.a_sum)
        if self.b_sum:
            b = b.sum(axis=self.b_sum)
        a = np.transpose(a, self.perm_a)
        b = np.transpose(b, self.perm_b)
        i, j = self.na[0], self.na[0] + self.na[1]
        ga = (a.shape[:i], a.shape[i:j], a.shape[j:])
        i, j = self.nb[0], self.nb[0] + self.nb[1]
        gb = (b.shape[:i], b.shape[i:j], b.shape[j:])
        a3 = a.reshape([math.prod(g) for g in ga])
        b3 = b.reshape([math.prod(g) for g in gb])
        if self.mode == "matmul":
            r = np.matmul(a3, b3)                                      # (K, P, Q)
            shape = ga[0] + ga[1] + gb[2]
        elif self.mode == "kpc,kcq->kpq":
            r = np.einsum(self.mode, a3, b3)                           # (K, P, Q)
            shape = ga[0] + ga[1] + gb[2]
        else:
            r = np.einsum(self.mode, a3, b3)                           # (P, Q, K)
            shape = ga[0] + gb[1] + ga[2]
        return np.transpose(r.reshape(shape), self.perm_out)


class _Single:
    """Sum one array over the axes not kept, then order the rest as `out`."""

    __slots__ = ("axes", "perm")

    def __init__(self, la: tuple, out: tuple) -> None:
        keep = set(out)
        self.axes = tuple(i for i, v in enumerate(la) if v not in keep)
        rest = [v for v in la if v in keep]
        self.perm = tuple(rest.index(v) for v in out)

    def __call__(self, a: np.ndarray, _=None) -> np.ndarray:
        if self.axes:
            a = a.sum(axis=self.axes)
        return np.transpose(a, self.perm)


class _Contraction:
    """``sum over labels not in out of prod(arrays)``, compiled once.

    Small problems (fewer than ``_BIG`` entries in the iteration space, counting
    the batch) are one einsum call. Large ones follow a greedy pairwise path,
    fixed at compile time, each pair a :class:`_Pair` (grouped axes).
    """

    __slots__ = ("subs", "size", "bidx", "steps")

    def __init__(self, fin: list, fout: tuple, card) -> None:
        self.subs = _subscripts(fin, fout)
        union = {v for lab in fin for v in lab}
        self.size = math.prod(card[v] for v in union if v is not BATCH)
        self.bidx = next((i for i, lab in enumerate(fin) if BATCH in lab), -1)
        labels = {i: tuple(lab) for i, lab in enumerate(fin)}
        steps = []
        nxt = len(fin)

        def cost(lab):
            return math.prod(card[v] for v in lab if v is not BATCH)

        while len(labels) > 1:
            best = None
            ids = list(labels)
            for x in range(len(ids)):
                for y in range(x + 1, len(ids)):
                    i, j = ids[x], ids[y]
                    need = set(fout).union(*(labels[m] for m in ids if m != i and m != j))
                    kept = tuple(dict.fromkeys(v for v in labels[i] + labels[j] if v in need))
                    c = (cost(kept), cost(labels[i]) + cost(labels[j]))
                    if best is None or c < best[0]:
                        best = (c, i, j, kept)
            _, i, j, kept = best
            if len(labels) == 2:
                kept = tuple(fout)
            steps.append((i, j, _Pair(labels[i], labels[j], kept, card)))
            del labels[i], labels[j]
            labels[nxt] = kept
            nxt += 1
        (last, lab), = labels.items()
        if lab != tuple(fout):
            steps.append((last, None, _Single(lab, tuple(fout))))
        self.steps = steps

    def __call__(self, *arrays):
        size = self.size
        if self.bidx >= 0:
            size *= arrays[self.bidx].shape[-1]
        if size < _BIG:
            return np.einsum(self.subs, *arrays)
        vals = list(arrays)
        for i, j, fn in self.steps:
            vals.append(fn(vals[i], None if j is None else vals[j]))
        return vals[-1]


def _max_fn(product, axis, *arrays):
    p = product(*arrays)
    return p.max(axis=axis), p.argmax(axis=axis)


class _Program:
    """A compiled contraction program (see :class:`_Builder`)."""

    __slots__ = ("template", "inputs", "ops", "batched", "labels")

    def run(self, values: list, scaled: bool) -> tuple[list, list | None]:
        """Fill the input slots from `values` and run every op.

        Returns the slots and, when `scaled`, the log-scale of each slot (each
        op's output is then divided by its maximum, per row when batched).
        """
        slots = self.template.copy()
        for slot, table, pos, flat, mults in self.inputs:
            if flat is None:                                   # scalar evidence: a view
                slots[slot] = table[(Ellipsis, *[values[p] for p in pos])]
            else:                                              # batched: (*rest, n), contiguous
                idx = 0
                for p, m in zip(pos, mults):
                    idx = idx + values[p] * m
                slots[slot] = flat.take(idx, axis=-1)
        if not scaled:
            for fn, ins, out, _ in self.ops:
                slots[out] = fn(*[slots[i] for i in ins])
            return slots, None
        logs: list = [0.0] * len(slots)
        batched = self.batched
        with np.errstate(divide="ignore"):
            for fn, ins, out, norm in self.ops:
                r = fn(*[slots[i] for i in ins])
                ls = 0.0
                for i in ins:
                    ls = ls + logs[i]
                if norm and r.size:
                    if batched[out]:
                        m = r.max(axis=tuple(range(r.ndim - 1)))                  # (n,), batch last
                        safe = np.where(m > 0, m, 1.0)
                        r = r / safe
                    else:
                        m = r.max()
                        safe = m if m > 0 else 1.0
                        r = r / safe
                    ls = ls + np.log(m)
                slots[out] = r
                logs[out] = ls
        return slots, logs


class _FoldCache:
    """Constant-folded tables shared by the programs of one network.

    A folded slot made only of CPTs (no evidence, no maximization) equals the
    sum, over every variable of its CPTs not among its labels, of the product
    of those CPTs: it is determined by (its CPT nodes, its labels), whichever
    query produced it. Bounded by total size.
    """

    __slots__ = ("tables", "nbytes", "limit")

    def __init__(self, limit: int = 256 * 2**20) -> None:
        self.tables: dict = {}
        self.nbytes = 0
        self.limit = limit

    def get(self, key):
        return self.tables.get(key)

    def put(self, key, value: np.ndarray) -> None:
        size = np.asarray(value).nbytes
        if self.nbytes + size > self.limit:
            self.tables.clear()
            self.nbytes = 0
        self.tables[key] = value
        self.nbytes += size


class _Builder:
    """Builds a :class:`_Program`, folding every step whose inputs are constant.

    A slot holds an array with one axis per label (node ints), then a trailing
    batch axis when the slot is batched. Input slots are filled per query by
    indexing a table with evidence values; constant slots are known now.
    Constants made of CPTs only carry their CPT nodes (``src``), so that their
    folds can be shared through a :class:`_FoldCache`.
    """

    def __init__(self, card: Sequence[int], ev_order: Sequence[int], folds: _FoldCache | None = None) -> None:
        self.card = card
        self.pos = {u: i for i, u in enumerate(ev_order)}
        self.folds = folds
        self.template: list = []
        self.labels: list = []
        self.batched: list = []
        self.src: list = []
        self.inputs: list = []
        self.ops: list = []

    def _new(self, labels, batched, value=None, src=None) -> int:
        self.template.append(value)
        self.labels.append(tuple(labels))
        self.batched.append(bool(batched))
        self.src.append(src)
        return len(self.template) - 1

    def const(self, arr: np.ndarray, labels, src: frozenset | None = None) -> int:
        return self._new(labels, False, arr, src)

    def input(self, table: np.ndarray, evs: Sequence[int], labels, batched: bool) -> int:
        """A slot filled per query: `table` (evidence axes last) indexed by the values of `evs`.

        Batched slots index a copy of `table` with the evidence axes flattened,
        so that the result is a contiguous ``(*rest, n)`` array.
        """
        slot = self._new(labels, batched)
        pos = tuple(self.pos[u] for u in evs)
        flat = mults = None
        if batched:
            ev_shape = table.shape[len(table.shape) - len(evs):]
            flat = np.ascontiguousarray(table.reshape(*table.shape[: table.ndim - len(evs)], -1))
            mults = tuple(int(np.prod(ev_shape[i + 1:], dtype=np.int64)) for i in range(len(evs)))
        self.inputs.append((slot, table, pos, flat, mults))
        return slot

    def is_const(self, slot: int) -> bool:
        return self.template[slot] is not None

    def op(self, fn, ins, labels, batched, norm=True) -> int:
        ins = tuple(ins)
        if all(self.template[s] is not None for s in ins):
            return self._new(labels, False, fn(*[self.template[s] for s in ins]))
        slot = self._new(labels, batched)
        self.ops.append((fn, ins, slot, norm))
        return slot

    def _full(self, slot):
        """Axis labels of a slot's array: the batch axis, when there is one, is last."""
        return (*self.labels[slot], BATCH) if self.batched[slot] else self.labels[slot]

    def emit(self, ins: Sequence[int], out: Sequence[int]) -> int:
        """Slot for ``sum over labels not in out of prod(ins)``, axes ``out``."""
        ins = list(ins)
        out = tuple(out)
        if len(ins) == 1 and self.labels[ins[0]] == out:
            return ins[0]
        key = None
        if self.folds is not None and all(self.src[s] is not None for s in ins):
            key = (frozenset().union(*(self.src[s] for s in ins)), out)
            got = self.folds.get(key)
            if got is not None:
                return self._new(out, False, got, key[0])
            slot = self._emit(ins, out)
            self.src[slot] = key[0]
            self.folds.put(key, self.template[slot])
            return slot
        return self._emit(ins, out)

    def _emit(self, ins: list, out: tuple) -> int:
        while len(ins) > MAX_EINSUM_OPERANDS:
            # one op per chunk of operands, so rescaling can act between chunks
            head, ins = ins[:MAX_EINSUM_OPERANDS], ins[MAX_EINSUM_OPERANDS:]
            need = set(out).union(*(self.labels[s] for s in ins))
            lab = tuple(dict.fromkeys(v for s in head for v in self.labels[s] if v in need))
            ins.append(self.emit(head, lab))
        bat = any(self.batched[s] for s in ins)
        fin = [self._full(s) for s in ins]
        fout = (*out, BATCH) if bat else out
        union = {lab for s in ins for lab in self.labels[s]}
        if len(union) + bat > MAX_EINSUM_AXES:
            return self.op(partial(_contract_fn, fin, fout), ins, out, bat)
        if bat:
            return self._emit_batched(ins, out)
        if math.prod(self.card[v] for v in union) >= _BIG:
            return self.op(_Contraction(fin, fout, self.card), ins, out, bat)
        return self.op(partial(np.einsum, _subscripts(fin, fout)), ins, out, bat)

    def _emit_batched(self, ins: list, out: tuple) -> int:
        """A batched step as (unbatched operands folded into one) x (batched ones multiplied).

        The unbatched operands are mostly constants, so their product is folded
        at compile time; the batched ones are multiplied by one einsum whose
        inner loop runs over the batch (the last, contiguous axis); the two
        meet in one contraction (on grouped axes, the batch innermost, when the
        problem is large).
        """
        un = [s for s in ins if not self.batched[s]]
        bs = [s for s in ins if self.batched[s]]
        lab_b = {v for s in bs for v in self.labels[s]}

        if un:
            need = set(out) | lab_b
            u_lab = tuple(dict.fromkeys(v for s in un for v in self.labels[s] if v in need))
            un = [self.emit(un, u_lab)]
        if len(bs) > 1 and un:
            need = set(out) | set(self.labels[un[0]])
            b_lab = tuple(dict.fromkeys(v for s in bs for v in self.labels[s] if v in need))
            fin = [self._full(s) for s in bs]
            bs = [self.op(_Contraction(fin, (*b_lab, BATCH), self.card), bs, b_lab, True)]
        ins = un + bs
        fin = [self._full(s) for s in ins]
        return self.op(_Contraction(fin, (*out, BATCH), self.card), ins, out, True)

    def emit_max(self, ins: Sequence[int], z: int) -> tuple[int, int]:
        """Slots for ``max over z of prod(ins)`` and the maximizing state of z."""
        ins = list(ins)
        while len(ins) > MAX_EINSUM_OPERANDS:
            head, ins = ins[:MAX_EINSUM_OPERANDS], ins[MAX_EINSUM_OPERANDS:]
            ins.append(self.emit(head, tuple(dict.fromkeys(v for s in head for v in self.labels[s]))))
        bat = any(self.batched[s] for s in ins)
        union = tuple(dict.fromkeys(v for s in ins for v in self.labels[s]))
        out = tuple(v for v in union if v != z)
        fin = [self._full(s) for s in ins]
        fu = (*union, BATCH) if bat else union
        if len(union) + bat > MAX_EINSUM_AXES:
            product = partial(_contract_fn, fin, fu)
        elif bat:
            product = partial(np.einsum, _subscripts(fin, fu))
        else:
            product = _Contraction(fin, fu, self.card)
        pair = self.op(partial(_max_fn, product, fu.index(z)), ins, (), bat, norm=False)
        val = self.op(operator.itemgetter(0), [pair], out, bat)
        arg = self.op(operator.itemgetter(1), [pair], out, bat, norm=False)
        return val, arg

    def program(self) -> _Program:
        prog = _Program()
        prog.template = self.template
        prog.inputs = self.inputs
        prog.ops = self.ops
        prog.batched = self.batched
        prog.labels = self.labels
        return prog


class _Plan:
    """A compiled query or MAP program and how to read its answer."""

    __slots__ = ("prog", "ev", "target", "scalar", "trace")


# -- the network ---------------------------------------------------------------------


class DiscreteBN:
    """A discrete Bayesian network: the exact engine's view (plain arrays).

    Parameters
    ----------
    dag : DAG
        The structure. Latent marks are ignored (any node may be observed).
    cpts : mapping of node -> array_like
        ``cpts[v]`` has shape ``(*[cards[p] for p in dag.parents(v)], cards[v])``
        with the parents in ``dag.parents(v)`` order; nonnegative, rows summing
        to 1 (within 1e-6) on the last axis. Copied, and each row divided by
        its sum so that it sums to 1 to round-off: then barren and d-separated
        nodes drop out exactly, and every engine and pruning agree.
    cards : mapping of node -> int
        Number of states of each node (at least 1).

    Raises
    ------
    ModelError
        On a missing or unknown node, a bad card, a negative or non-finite
        entry, or a row that does not sum to 1.
    ShapeError
        On a CPT of the wrong shape (the message gives the expected shape).

    Notes
    -----
    Immutable; compiled programs and junction trees are cached on the instance.
    """

    def __init__(self, dag: DAG, cpts: Mapping[Hashable, np.ndarray], cards: Mapping[Hashable, int]) -> None:
        if not isinstance(dag, DAG):
            raise ModelError(f"DiscreteBN expects a causalnet DAG, got {type(dag).__name__}")
        names = dag.nodes
        index = {v: i for i, v in enumerate(names)}
        for what, mapping in (("cards", cards), ("cpts", cpts)):
            for k in mapping:
                if k not in index:
                    raise ModelError(f"{what} names {k!r}, which is not a node of the DAG{dag._hint(k)}")
        card: list[int] = []
        for v in names:
            if v not in cards:
                raise ModelError(f"no card (number of states) for node {v!r}")
            try:
                k = operator.index(cards[v])
            except TypeError:
                raise ModelError(f"card of {v!r} must be a positive integer, got {cards[v]!r}") from None
            if k < 1:
                raise ModelError(f"card of {v!r} must be a positive integer, got {k}")
            card.append(k)
        parents = [tuple(index[p] for p in dag.parents(v)) for v in names]
        tables = []
        for i, v in enumerate(names):
            if v not in cpts:
                raise ModelError(f"no CPT for node {v!r}")
            t = np.array(cpts[v], dtype=np.float64)
            want = tuple(card[p] for p in parents[i]) + (card[i],)
            if t.shape != want:
                pa = tuple(names[p] for p in parents[i])
                raise ShapeError(
                    f"CPT for {v!r} has shape {t.shape}; parents {pa} have cards "
                    f"{want[:-1]} and {v!r} has {card[i]} states, so expected {want}"
                )
            if not np.isfinite(t).all() or (t < 0).any():
                raise ModelError(f"CPT for {v!r} has negative or non-finite entries")
            sums = t.sum(axis=-1)
            bad = np.abs(sums - 1.0) > 1e-6
            if bad.any():
                row = tuple(int(j) for j in np.argwhere(bad)[0])
                raise ModelError(
                    f"CPT for {v!r}: the row for parent states {row} sums to {float(sums[row]):.6g}; "
                    f"every row must sum to 1 on the last axis"
                )
            t /= sums[..., None]              # exactly 1, so pruning never changes an answer
            t.flags.writeable = False
            tables.append(t)
        self._dag = dag
        self._names = names
        self._index = index
        self._card = card
        self._parents = parents
        self._family = [(*parents[i], i) for i in range(len(names))]
        self._cpt = tables
        self._rank = {i: i for i in range(len(names))}
        self._eyes: dict = {}
        self._tables: dict = {}
        self._plans: dict = {}
        self._folds = _FoldCache()
        self._jts: dict = {}
        self._prior_tree = None           # the calibrated prior junction tree, or False
        self._grank: tuple | None = None  # whole-network elimination order: ranks, largest, total table
        self._shapes: dict = {}           # (targets, evidence nodes) seen, on networks with large cliques
        self._compiles = 0
        self._scalar_queries = 0

    # -- views -----------------------------------------------------------------

    @property
    def dag(self) -> DAG:
        return self._dag

    @property
    def nodes(self) -> tuple:
        return self._names

    @property
    def cards(self) -> dict:
        """Node -> number of states."""
        return dict(zip(self._names, self._card))

    @property
    def cpts(self) -> dict:
        """Node -> read-only CPT of shape ``(*parent_cards, card)``."""
        return dict(zip(self._names, self._cpt))

    def __repr__(self) -> str:
        return f"<DiscreteBN {len(self._names)} nodes, {sum(map(len, self._parents))} edges>"

    # -- validation ------------------------------------------------------------

    def _node(self, v, what: str, error=GraphError) -> int:
        try:
            return self._index[v]
        except (KeyError, TypeError):
            raise error(f"unknown {what} {v!r}{self._dag._hint(v)}") from None

    def _targets(self, targets) -> tuple[int, ...]:
        if targets is None:
            return ()
        if isinstance(targets, str) or not isinstance(targets, Iterable):
            targets = [targets]
        out = tuple(self._node(t, "target node") for t in targets)
        if len(set(out)) != len(out):
            dup = next(t for t in out if out.count(t) > 1)
            raise GraphError(f"target {self._names[dup]!r} is listed twice")
        return out

    def _evidence(self, evidence) -> tuple[dict, int | None]:
        """Validated evidence: node int -> int state or int array (n,), and n."""
        if not evidence:
            return {}, None
        if not isinstance(evidence, Mapping):
            raise EvidenceError(f"evidence must be a mapping of node -> state, got {type(evidence).__name__}")
        ev: dict = {}
        n = None
        first = None
        card = self._card
        for k, val in evidence.items():
            i = self._node(k, "evidence node", EvidenceError)
            if type(val) is int and 0 <= val < card[i]:
                ev[i] = val
                continue
            x = _as_index(k, val, card[i])
            if isinstance(x, np.ndarray):
                if n is None:
                    n, first = x.shape[0], k
                elif x.shape[0] != n:
                    raise EvidenceError(
                        f"evidence for {k!r} has {x.shape[0]} rows but evidence for {first!r} has {n}; "
                        f"batched evidence arrays must have one length"
                    )
            ev[i] = x
        return ev, n

    # -- structure -------------------------------------------------------------

    def _ancestral(self, start: Iterable[int]) -> set[int]:
        out = set(start)
        stack = list(out)
        par = self._parents
        while stack:
            for p in par[stack.pop()]:
                if p not in out:
                    out.add(p)
                    stack.append(p)
        return out

    def _reduced(self, nodes: Iterable[int], ev: frozenset) -> tuple[dict, dict]:
        """Free (non-evidence) family variables and the moral graph over them."""
        fam_free = {}
        adj: dict = {}
        for v in nodes:
            ff = tuple(u for u in self._family[v] if u not in ev)
            fam_free[v] = ff
            for a in ff:
                s = adj.get(a)
                if s is None:
                    s = adj[a] = set()
                s.update(ff)
        for a, s in adj.items():
            s.discard(a)
        return fam_free, adj

    def relevant_nodes(self, targets: Sequence[Hashable], evidence: Iterable[Hashable] = ()) -> frozenset:
        """The nodes whose CPTs ``P(targets | evidence)`` depends on (the requisite set).

        Every other node is barren (not an ancestor of targets or evidence) or
        d-separated from the targets by the evidence, or is an evidence node
        whose family is fully observed.
        """
        tidx = self._targets(targets)
        ev = frozenset(self._node(e, "evidence node", EvidenceError) for e in evidence)
        both = ev & set(tidx)
        if both:
            raise EvidenceError(f"{self._names[min(both)]!r} is both a target and evidence")
        nodes = self._ancestral(set(tidx) | ev)
        fam_free, adj = self._reduced(nodes, ev)
        comp = _closure(adj, tidx)
        return frozenset(self._names[v] for v in nodes if fam_free[v] and fam_free[v][0] in comp)

    def _table(self, v: int, evs: tuple[int, ...]) -> np.ndarray:
        """CPT of `v` with the axes of `evs` moved last (contiguous, cached)."""
        key = (v, evs)
        t = self._tables.get(key)
        if t is None:
            fam = self._family[v]
            last = [fam.index(u) for u in evs]
            perm = [j for j in range(len(fam)) if j not in last] + last
            t = np.ascontiguousarray(np.transpose(self._cpt[v], perm))
            self._tables[key] = t
        return t

    def _eye(self, v: int) -> np.ndarray:
        e = self._eyes.get(v)
        if e is None:
            e = self._eyes[v] = np.eye(self._card[v])
        return e

    def _factor_slot(self, b: _Builder, v: int, ev: frozenset, batched: frozenset) -> int:
        fam = self._family[v]
        evs = tuple(u for u in fam if u in ev)
        if not evs:
            return b.const(self._cpt[v], fam, frozenset((v,)))
        labels = tuple(u for u in fam if u not in ev)
        return b.input(self._table(v, evs), evs, labels, any(u in batched for u in evs))

    def _order(self, adj: dict, elim: Iterable[int], method, restrict: bool = False) -> list[int]:
        """Order `elim`: a heuristic name or an explicit node sequence.

        `adj` is mutated (fill edges added), except when `restrict` lets the
        default heuristic take the network's global weighted-min-fill order
        restricted to `elim` (valid for any subset; its cliques are subsets of
        the global ones, plus the kept nodes), used when its largest table
        stays small; the greedy search on the pruned graph runs otherwise.
        """
        if isinstance(method, str):
            if restrict and method == "weighted-min-fill":
                rank = self._global_rank()
                if rank is not None:
                    seq = sorted(elim, key=rank.__getitem__)
                    if _largest_table({v: set(nb) for v, nb in adj.items()}, seq, self._card) <= _GLOBAL_ORDER_MAX:
                        return seq
            return _greedy_order(adj, self._card, elim, method, self._rank)
        want = set(elim)
        seq = [i for i in method if i in want]
        _apply_order(adj, seq)
        rest = [v for v in elim if v not in set(seq)]
        return seq + _greedy_order(adj, self._card, rest, "weighted-min-fill", self._rank)

    def _global_rank(self) -> list[int] | None:
        """Position of each node in a weighted-min-fill order of the whole network.

        Computed at the second compilation (a network compiling one query, as
        a model under a new ``do``, never pays for it); None before.
        """
        if self._grank is None:
            self._compiles += 1
            if self._compiles < 2:
                return None
        return self._whole_order()[0]

    def _whole_order(self) -> tuple[list[int], int, int]:
        """The network's weighted-min-fill order (rank of each node) and the entries of its
        largest and of all its elimination tables (memoized)."""
        if self._grank is None:
            _, adj = self._reduced(range(len(self._names)), frozenset())
            raw: list = []
            order = _greedy_order(adj, self._card, range(len(self._names)), "weighted-min-fill", self._rank, raw)
            rank = [0] * len(order)
            for i, v in enumerate(order):
                rank[v] = i
            sizes = [self._card[v] * math.prod(self._card[a] for a in nb) for v, nb in raw]
            self._grank = (rank, max(sizes, default=1), sum(sizes))
        return self._grank

    def _method(self, order):
        if isinstance(order, str):
            if order not in ORDER_METHODS:
                raise GraphError(f"unknown elimination order {order!r}; choose one of {list(ORDER_METHODS)}")
            return order
        return tuple(self._node(v, "node in the elimination order") for v in order)

    # -- compilation -------------------------------------------------------------

    def _compile(self, tidx: tuple[int, ...], ev: frozenset, batched: frozenset, method, mode: str) -> _Plan:
        """Compile a query (``mode="sum"``) or MAP (``mode="max"``) program."""
        if mode == "sum":
            nodes = self._ancestral(set(tidx) | ev)
        else:
            nodes = set(range(len(self._names)))
            if not tidx:
                tidx = tuple(v for v in range(len(self._names)) if v not in ev)
            else:
                nodes = self._ancestral(set(tidx) | ev)
        fam_free, adj = self._reduced(sorted(nodes), ev)
        b = _Builder(self._card, sorted(ev), self._folds)
        alive = {self._factor_slot(b, v, ev, batched) for v in sorted(nodes)}   # slots not yet consumed
        holders: dict = {}                                                        # node -> slots holding it
        for sl in sorted(alive):
            for u in b.labels[sl]:
                holders.setdefault(u, []).append(sl)
        tset = set(tidx)
        order = self._order(adj, [v for v in adj if v not in tset], method, mode == "sum")

        def eliminate(z, maximize):
            take = sorted({sl for sl in holders.pop(z, ()) if sl in alive})
            alive.difference_update(take)
            arg = None
            if maximize:
                new, arg = b.emit_max(take, z)
            else:
                new = b.emit(take, tuple(dict.fromkeys(u for sl in take for u in b.labels[sl] if u != z)))
            alive.add(new)
            for u in b.labels[new]:
                holders.setdefault(u, []).append(new)
            return arg

        for z in order:
            eliminate(z, False)
        plan = _Plan()
        plan.trace = None
        if mode == "max":
            morder = self._order(adj, list(tidx), method)
            trace = []
            for z in morder:
                arg = eliminate(z, True)
                trace.append((z, arg, b.labels[arg]))
            plan.trace = tuple(reversed(trace))
            plan.target = None
            pool = sorted(alive)
        else:
            pool = sorted(alive)
            tslots = [s for s in pool if b.labels[s]]
            pool = [s for s in pool if not b.labels[s]]
            plan.target = b.emit(tslots, tidx) if tslots else None
        plan.scalar = b.emit(pool, ()) if pool else None
        plan.prog = b.program()
        plan.ev = tuple(sorted(ev))
        return plan

    def _plan(self, tidx, ev: dict, method, mode: str) -> _Plan:
        evset = frozenset(ev)
        batched = frozenset(k for k, x in ev.items() if type(x) is not int)
        key = (mode, tidx, evset, batched, method)
        plan = self._plans.get(key)
        if plan is None:
            both = evset & set(tidx)
            if both:
                raise EvidenceError(f"{self._names[min(both)]!r} is both a target and evidence")
            if len(self._plans) >= _MAX_PLANS:
                self._plans.pop(next(iter(self._plans)))
            plan = self._plans[key] = self._compile(tidx, evset, batched, method, mode)
        return plan

    def _run(self, plan: _Plan, ev: dict, n: int | None, read):
        """Run `plan`; rerun with rescaling when P(e) underflows; raise on P(e) = 0."""
        values = [ev[u] for u in plan.ev]
        prog = plan.prog
        slots, logs = prog.run(values, False)
        out, z = read(slots, None)
        if np.all(z >= _TINY):
            return out
        slots, logs = prog.run(values, True)
        out, z = read(slots, logs)
        if np.all(z > 0):
            return out
        self._impossible(ev, z, n)

    def _impossible(self, ev: dict, z, n):
        items = sorted(ev.items())
        if n is None:
            desc = ", ".join(f"{self._names[u]}={x}" for u, x in items)
            raise EvidenceError(f"the evidence has probability zero: P({desc}) = 0")
        rows = np.flatnonzero(~(np.broadcast_to(z, (n,)) > 0))
        r = int(rows[0])
        desc = ", ".join(f"{self._names[u]}={x if type(x) is int else int(x[r])}" for u, x in items)
        raise EvidenceError(
            f"the evidence has probability zero in {rows.size} of {n} rows "
            f"(rows {rows[:5].tolist()}{'...' if rows.size > 5 else ''}; row {r}: P({desc}) = 0)"
        )

    # -- queries -----------------------------------------------------------------

    def query(
        self,
        targets: Sequence[Hashable],
        evidence: Mapping[Hashable, int | np.ndarray] | None = None,
        *,
        joint: bool = True,
        order: str | Sequence[Hashable] = "weighted-min-fill",
    ) -> tuple[np.ndarray | list[np.ndarray], float | np.ndarray]:
        """Posterior ``P(targets | evidence)`` and ``log P(evidence)``.

        Parameters
        ----------
        targets : sequence of nodes (or one node)
            Disjoint from the evidence. May be empty (then only ``P(e)``).
        evidence : mapping of node -> int or int array of shape (n,), optional
            State indices. Arrays (all of one length n) make a batched query:
            n queries answered in one vectorized pass.
        joint : bool, default True
            Return the joint table over `targets`; if False, a list with one
            marginal per target.
        order : str or sequence of nodes
            A method of :data:`ORDER_METHODS`, or an explicit elimination order.

        Returns
        -------
        probs : ndarray of shape (*target_cards) or (n, *target_cards), or a list
            The joint posterior, axes in `targets` order (or the marginals, each
            of shape (K,) or (n, K)).
        log_evidence : float or ndarray of shape (n,)
            ``log P(evidence)``.

        Raises
        ------
        GraphError
            On an unknown or repeated target, or a bad `order`.
        EvidenceError
            On an unknown evidence node, a state out of range, batch lengths
            that disagree, a target that is also evidence, or evidence of
            probability zero (in any row).
        """
        tidx = self._targets(targets)
        ev, n = self._evidence(evidence)
        if n is None and type(order) is str and order == "weighted-min-fill":
            pt = self._prior_tree if self._prior_tree is not None else self._make_prior_tree()
            if pt and pt.heavy:
                # large cliques: a shape asked again is worth a compiled (pruned, cached) plan
                shape = (tidx, frozenset(ev))
                if shape in self._shapes:
                    pt = None
                else:
                    if len(self._shapes) >= _MAX_PLANS:
                        self._shapes.clear()
                    self._shapes[shape] = True
            if pt:
                for t in tidx:
                    if t in ev:
                        raise EvidenceError(f"{self._names[t]!r} is both a target and evidence")
                if joint or not tidx:
                    got = pt.query(tidx, ev)
                    if got is not None:
                        return (got[0] if joint else []), got[1]
                else:
                    out = []
                    for t in tidx:
                        got = pt.query((t,), ev)
                        if got is None:
                            break
                        out.append(got[0])
                    else:
                        return out, got[1]
        method = self._method(order)
        if joint or not tidx:
            probs, log_ev = self._query(tidx, ev, n, method)
            return (probs if joint else []), log_ev
        out = []
        for t in tidx:
            probs, log_ev = self._query((t,), ev, n, method)
            out.append(probs)
        return out, log_ev

    def _make_prior_tree(self, now: bool = False):
        """The calibrated prior junction tree, built at the second scalar query (None before).

        Networks answering a single query (a model under a new ``do``) never
        pay for it; it is False when its tables would be too large.
        """
        self._scalar_queries += 1
        if self._scalar_queries < 2 and not now:
            return None
        from .junction_tree import _PriorTree

        pt = False
        _, largest, total = self._whole_order()                # the tree's cliques are among these tables
        if largest <= _MAX_PRIOR_CLIQUE and total <= _MAX_PRIOR_TOTAL:
            pt = _PriorTree(self.junction_tree())
            if not pt.ok:
                pt = False
        self._prior_tree = pt
        return pt

    def _query(self, tidx, ev, n, method):
        plan = self._plan(tidx, ev, method, "sum")
        bat = plan.prog.batched
        tshape = tuple(self._card[t] for t in tidx)

        def read(slots, logs):
            t, s = plan.target, plan.scalar
            if t is None:
                table = np.ones(())
                zr = 1.0
            else:
                table = slots[t]
                zr = table.sum(axis=tuple(range(table.ndim - 1))) if bat[t] else table.sum()   # (n,) or ()
            zs = 1.0 if s is None else slots[s]
            z = zr * zs
            with np.errstate(divide="ignore", invalid="ignore"):
                log_ev = np.log(zr) + np.log(zs)
                if logs is not None:
                    log_ev = log_ev + (0.0 if t is None else logs[t]) + (0.0 if s is None else logs[s])
                probs = table / zr                    # batch last: (n,) broadcasts
                if t is not None and bat[t]:
                    probs = np.moveaxis(probs, -1, 0)  # (n, *target_cards)
            return (probs, log_ev), z

        probs, log_ev = self._run(plan, ev, n, read)
        if n is not None:
            if probs.shape != (n, *tshape):
                probs = np.array(np.broadcast_to(probs, (n, *tshape)))
            log_ev = np.array(np.broadcast_to(log_ev, (n,)), dtype=np.float64)
        else:
            probs, log_ev = np.asarray(probs, dtype=np.float64), float(log_ev)
        return probs, log_ev

    def map(
        self,
        targets: Sequence[Hashable] | None = None,
        evidence: Mapping[Hashable, int | np.ndarray] | None = None,
        *,
        order: str | Sequence[Hashable] = "weighted-min-fill",
    ) -> tuple[dict[Hashable, int | np.ndarray], float | np.ndarray]:
        """Most probable assignment of `targets` given the evidence.

        With ``targets=None`` this is the MPE over all non-evidence nodes;
        otherwise marginal MAP (the other nodes are summed out first).

        Returns
        -------
        assignment : dict of node -> int or int array of shape (n,)
            The maximizing states (the first maximum on ties).
        log_prob : float or ndarray of shape (n,)
            ``log P(assignment, evidence)``.

        Raises
        ------
        GraphError, EvidenceError
            As for :meth:`query`.
        """
        tidx = self._targets(targets)
        ev, n = self._evidence(evidence)
        method = self._method(order)
        plan = self._plan(tidx, ev, method, "max")
        bat = plan.prog.batched

        def read(slots, logs):
            s = plan.scalar
            val = 1.0 if s is None else slots[s]
            with np.errstate(divide="ignore"):
                lp = np.log(val) + (0.0 if (logs is None or s is None) else logs[s])
            return (slots, lp), val

        slots, lp = self._run(plan, ev, n, read)
        rows = None if n is None else np.arange(n)
        assign: dict = {}
        for z, arg, labels in plan.trace:
            idx = tuple(assign[u] for u in labels)
            if bat[arg]:
                idx = (*idx, rows)
            x = slots[arg][idx]
            assign[z] = x
        out: dict = {}
        for z in sorted(assign):
            x = assign[z]
            if n is None:
                out[self._names[z]] = int(x)
            else:
                out[self._names[z]] = np.array(np.broadcast_to(x, (n,)), dtype=np.intp)
        if n is None:
            return out, float(lp)
        return out, np.array(np.broadcast_to(lp, (n,)), dtype=np.float64)

    def log_prob(self, values: Mapping[Hashable, int | np.ndarray]) -> float | np.ndarray:
        """``log P(values)`` of full assignments (every node given).

        Parameters
        ----------
        values : mapping of node -> int or int array of shape (n,)

        Returns
        -------
        float or ndarray of shape (n,)
            ``-inf`` where the assignment has probability zero.

        Raises
        ------
        EvidenceError
            On a missing or unknown node or a state out of range.
        """
        ev, n = self._evidence(values)
        missing = [self._names[v] for v in range(len(self._names)) if v not in ev]
        if missing:
            raise EvidenceError(f"log_prob needs a state for every node; {missing[0]!r} is missing")
        total = 0.0
        with np.errstate(divide="ignore"):
            for v in range(len(self._names)):
                total = total + np.log(self._cpt[v][tuple(ev[u] for u in self._family[v])])
        if n is None:
            return float(total)
        return np.array(np.broadcast_to(total, (n,)), dtype=np.float64)

    def junction_tree(self, evidence_vars: Iterable[Hashable] | None = None):
        """A junction tree for all single-node posteriors (cached per evidence set).

        Parameters
        ----------
        evidence_vars : iterable of nodes, optional
            Nodes that will always be observed: their factors are reduced and
            they are left out of the cliques (smaller tables). Evidence on other
            nodes is still accepted by :meth:`JunctionTree.marginals`.

        Returns
        -------
        JunctionTree
        """
        from .junction_tree import JunctionTree

        evs = frozenset(self._node(v, "evidence node", EvidenceError) for v in (evidence_vars or ()))
        jt = self._jts.get(evs)
        if jt is None:
            jt = self._jts[evs] = JunctionTree(self, [self._names[v] for v in sorted(evs)])
        return jt
