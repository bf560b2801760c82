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
  posterior at once (:mod:`causalnet.inference.discrete.junction_tree`).

Evidence values are state indices: an ``int``, or an int array of shape (n,)
for n queries answered in one vectorized pass (a *batched* query; results get a
leading batch axis). Nothing loops over rows in Python.

How a query runs
----------------
Which exact method answers is decided in one place,
:class:`~causalnet.inference.discrete.policy.QueryPolicy` (see
:mod:`causalnet.inference.discrete.policy` for its rules): a scalar query
with the default `order` may be answered from the *calibrated prior junction
tree* (:mod:`causalnet.inference.discrete.prior_tree`), built once per
network at its second such query: the prior marginal of every clique is
kept, and the query computes only the likelihood messages on the part of the
tree that joins the observed nodes to the targets (nothing is pruned, ordered
or compiled per query). The tree declines targets in no common clique and
evidence whose probability is below 1e-280 (or zero); on a network with large
cliques a (targets, evidence nodes) shape asked a second time is routed to
its compiled program, which then runs faster than the tree. Everything else
(batched evidence, an explicit order, MAP) is compiled:

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

import math
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from ... import limits
from ...errors import EvidenceError, GraphError, ModelError
from ...graph.core import closure
from ...graph.dag import DAG
from .. import discrete as _discrete  # its junction_tree module: loaded by the first junction tree
from .batches import EvidenceRows
from .factors import Factor, factor_product
from .network import DiscreteNetwork
from .ordering import (
    ORDER_METHODS,
    TableTooLarge,
    apply_order,
    check_clique_bytes,
    elimination_cliques,
    elimination_order,
    greedy_order,
    largest_table,
    moral_graph,
    table_entry_limit,
)
from .policy import PRIOR_TREE, QueryPolicy
from .programs import TINY, ProgramBuilder

__all__ = [
    "DiscreteBN",
    "ORDER_METHODS",
    "moral_graph",
    "elimination_order",
    "elimination_cliques",
    "variable_elimination",
]

_MAX_PLANS = 4096         # compiled programs kept per network
_GLOBAL_ORDER_MAX = 1 << 12   # the global order serves a query whose largest table stays this small


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
    limit = table_entry_limit()
    try:
        if isinstance(order, str):
            seq = greedy_order(adj, card, elim, order, rank, max_entries=limit)
        else:
            want = set(elim)
            seq = [v for v in order if v in want]
            apply_order(adj, seq)
            seq += greedy_order(adj, card, [v for v in elim if v not in set(seq)], "weighted-min-fill", rank,
                                max_entries=limit)
    except TableTooLarge as big:
        check_clique_bytes([big.clique], card, {v: v for v in card},
                           what="an intermediate factor of variable elimination")
        raise
    pool = list(fs)
    for z in seq:
        take = [f for f in pool if z in f.vars]
        pool = [f for f in pool if z not in f.vars]
        union = dict.fromkeys(v for f in take for v in f.vars)
        del union[z]
        pool.append(factor_product(take, keep=tuple(union)))
    return factor_product(pool, keep=keep)


# -- the network ---------------------------------------------------------------------


class _Elimination:
    """The slots of a program being built, and which of them hold each node."""

    __slots__ = ("builder", "alive", "holders")

    def __init__(self, builder: ProgramBuilder) -> None:
        self.builder = builder
        self.alive: set = set()          # slots not yet consumed
        self.holders: dict = {}          # node -> slots holding it

    def add(self, slots: Iterable[int]) -> None:
        labels = self.builder.labels
        for sl in sorted(set(slots)):
            self.alive.add(sl)
            for u in labels[sl]:
                self.holders.setdefault(u, []).append(sl)

    def eliminate(self, z: int, maximize: bool) -> int | None:
        """Sum (or maximize) z out of the slots holding it; the argmax slot when maximizing."""
        b = self.builder
        take = sorted({sl for sl in self.holders.pop(z, ()) if sl in self.alive})
        self.alive.difference_update(take)
        arg = None
        if maximize:
            new, arg = b.emit_max(take, z)
        else:
            new = b.emit(take, tuple(dict.fromkeys(u for sl in take for u in b.labels[sl] if u != z)))
        self.add([new])
        return arg


class _Plan:
    """A compiled query or MAP program and how to read its answer."""

    __slots__ = ("prog", "ev", "target", "scalar", "trace")



class DiscreteBN(DiscreteNetwork):
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
    row_evidence : mapping of node -> int array of shape (n,), optional
        Per-row ``do`` values of the model the tables come from (see
        :class:`~causalnet.inference.discrete.network.DiscreteNetwork`).

    Raises
    ------
    ModelError
        On a missing or unknown node, a bad card, a negative or non-finite
        entry, or a row that does not sum to 1.
    ShapeError
        On a CPT of the wrong shape (the message gives the expected shape).

    Notes
    -----
    Immutable; compiled programs, junction trees and the query policy's state
    are cached on the instance. :meth:`query` and :meth:`map` validate their
    arguments; :meth:`query_indices` and :meth:`map_indices` take node ints and
    states validated already (the engine's path: the Request validated them).
    """

    def __init__(self, dag: DAG, cpts: Mapping[Hashable, np.ndarray], cards: Mapping[Hashable, int], *,
                 row_evidence: Mapping[Hashable, np.ndarray] | None = None) -> None:
        super().__init__(dag, cpts, cards, row_evidence=row_evidence)
        self._cache_plans: dict = {}
        self._cache_jts: dict = {}
        self._cache_grank: tuple | None = None  # whole-network elimination order: ranks, largest, total table
        self._cache_compiles = 0
        self._cache_policy = QueryPolicy(self._build_prior_tree)   # prior tree or compiled program, per query

    @property
    def policy(self) -> QueryPolicy:
        """The network's :class:`~causalnet.inference.discrete.policy.QueryPolicy` (prior tree or compiled)."""
        return self._cache_policy

    def relevant_nodes(self, targets: Sequence[Hashable], evidence: Iterable[Hashable] = ()) -> frozenset:
        """The nodes whose CPTs ``P(targets | evidence)`` depends on (the requisite set).

        Every other node is barren (not an ancestor of targets or evidence) or
        d-separated from the targets by the evidence, or is an evidence node
        whose family is fully observed.
        """
        tidx = self.target_indices(targets)
        ev = frozenset(self.node_index(e, "evidence node", EvidenceError) for e in evidence)
        self.check_disjoint(tidx, ev)
        nodes = self.ancestral(set(tidx) | ev)
        fam_free, adj = self.reduced(nodes, ev)
        comp = closure(adj, tidx)
        return frozenset(self._names[v] for v in nodes if fam_free[v] and fam_free[v][0] in comp)

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
                    if largest_table({v: set(nb) for v, nb in adj.items()}, seq, self._card,
                                     _GLOBAL_ORDER_MAX) <= _GLOBAL_ORDER_MAX:
                        return seq
            return self._greedy(adj, elim, method)
        want = set(elim)
        seq = [i for i in method if i in want]
        apply_order(adj, seq)
        rest = [v for v in elim if v not in set(seq)]
        return seq + self._greedy(adj, rest, "weighted-min-fill")

    def _greedy(self, adj: dict, elim: Iterable[int], method: str) -> list[int]:
        """A greedy order that stops, with a ResourceError, at the first table over the limit."""
        try:
            return greedy_order(adj, self._card, elim, method, self._rank, max_entries=table_entry_limit())
        except TableTooLarge as big:
            check_clique_bytes([big.clique], self._card, self._names,
                               what="an intermediate table of variable elimination")
            raise                                       # not reached: the clique is over the limit

    def _global_rank(self) -> list[int] | None:
        """Position of each node in a weighted-min-fill order of the whole network.

        Computed at the second compilation (a network compiling one query, as
        a model under a new ``do``, never pays for it); None before.
        """
        if self._cache_grank is None:
            self._cache_compiles += 1
            if self._cache_compiles < 2:
                return None
        return self._whole_order()[0]

    def _whole_order(self) -> tuple[list[int] | None, float, float]:
        """The network's weighted-min-fill order (rank of each node) and the entries of its
        largest and of all its elimination tables (memoized)."""
        if self._cache_grank is None:
            _, adj = self.reduced(range(len(self._names)), frozenset())
            raw: list = []
            try:
                order = greedy_order(adj, self._card, range(len(self._names)), "weighted-min-fill", self._rank,
                                     raw, max_entries=table_entry_limit())
            except TableTooLarge:                       # no usable whole-network order
                self._cache_grank = (None, math.inf, math.inf)
                return self._cache_grank
            rank = [0] * len(order)
            for i, v in enumerate(order):
                rank[v] = i
            sizes = [self._card[v] * math.prod(self._card[a] for a in nb) for v, nb in raw]
            self._cache_grank = (rank, max(sizes, default=1), sum(sizes))
        return self._cache_grank

    def _method(self, order):
        if isinstance(order, str):
            if order not in ORDER_METHODS:
                raise GraphError(f"unknown elimination order {order!r}; choose one of {list(ORDER_METHODS)}")
            return order
        return tuple(self.node_index(v, "node in the elimination order") for v in order)

    # -- compilation -------------------------------------------------------------

    def _compile(self, tidx: tuple[int, ...], ev: frozenset, batched: frozenset, method, mode: str,
                 nodes: frozenset | None = None) -> _Plan:
        """Compile a query (``mode="sum"``) or MAP (``mode="max"``) program.

        `nodes`, when given, are the nodes whose CPTs enter (a requisite set);
        else the ancestors of the targets and the evidence. The orders are
        fixed and their tables checked against ``limits.get("max_table_bytes")``
        before any table is built.
        """
        if nodes is not None:
            nodes = set(nodes)
        elif mode == "max" and not tidx:
            tidx = tuple(v for v in range(len(self._names)) if v not in ev)
            nodes = set(range(len(self._names)))
        else:
            nodes = self.ancestral(set(tidx) | ev)
        _, adj = self.reduced(sorted(nodes), ev)
        before = None if isinstance(method, str) else {v: set(nb) for v, nb in adj.items()}
        tset = set(tidx)
        order = self._order(adj, [v for v in adj if v not in tset], method, mode == "sum")
        morder = self._order(adj, list(tidx), method) if mode == "max" else []
        if isinstance(method, str):      # heuristic orders are bounded as they are built: the targets' table only
            check_clique_bytes([tidx if mode == "sum" else ()], self._card, self._names,
                               what="the joint table of the targets")
        else:
            self._check_tables(before, order + morder, tidx if mode == "sum" else ())
        el = _Elimination(ProgramBuilder(self._card, sorted(ev), self._cache_folds))
        b = el.builder
        el.add([self.factor_slot(b, v, ev, batched) for v in sorted(nodes)])
        for z in order:
            el.eliminate(z, False)
        plan = _Plan()
        plan.trace = None
        plan.target = None
        pool = sorted(el.alive)
        if mode == "max":
            trace = []
            for z in morder:
                arg = el.eliminate(z, True)
                trace.append((z, arg, b.labels[arg]))
            plan.trace = tuple(reversed(trace))
            pool = sorted(el.alive)
        else:
            tslots = [s for s in pool if b.labels[s]]
            pool = [s for s in pool if not b.labels[s]]
            plan.target = b.emit(tslots, tidx) if tslots else None
        plan.scalar = b.emit(pool, ()) if pool else None
        plan.prog = b.program()
        plan.ev = tuple(sorted(ev))
        return plan

    def _check_tables(self, adj: dict, order: list, targets: tuple) -> None:
        """ResourceError if eliminating `order` from `adj` (mutated), or the joint table of
        `targets`, would create a table over ``limits.get("max_table_bytes")``."""
        card = self._card
        fresh = {v: set(nb) for v, nb in adj.items()}
        if 8.0 * largest_table(adj, order, card) > limits.get("max_table_bytes"):
            cliques: list = []
            apply_order(fresh, order, cliques)
            check_clique_bytes([{v, *nb} for v, nb in cliques], card, self._names,
                               what="an intermediate table of variable elimination")
        check_clique_bytes([targets], card, self._names, what="the joint table of the targets")

    def _plan(self, tidx, ev, method, mode: str, nodes: frozenset | None = None) -> _Plan:
        evset = frozenset(ev)
        batched = frozenset(k for k, x in ev.items() if type(x) is not int) if isinstance(ev, dict) else frozenset()
        key = (mode, tidx, evset, batched, method, nodes)
        plan = self._cache_plans.get(key)
        if plan is None:
            if len(self._cache_plans) >= _MAX_PLANS:
                self._cache_plans.pop(next(iter(self._cache_plans)))
            plan = self._cache_plans[key] = self._compile(tidx, evset, batched, method, mode, nodes)
        return plan

    def query_on(self, tidx: tuple[int, ...], nodes: frozenset, observed: frozenset, ev: dict):
        """``((P(targets | e), log of the requisite part of P(e)), that part unscaled)`` from the CPTs of
        `nodes` only (a requisite set, see :mod:`.every_node`), scalar evidence; `observed` are the
        observed nodes in their families (their values in `ev`). The program is cached per
        (targets, nodes, observed)."""
        return self._query(self._plan(tidx, observed, "weighted-min-fill", "sum", nodes), tidx, ev, None)

    def _run(self, plan: _Plan, ev: dict, read):
        """Run `plan`, rerunning with rescaling when P(e) underflows: ``(read's answer, z)``.

        ``z`` (a float, or one per row) is ``P(e)`` unscaled; zero where the
        evidence is impossible (the caller raises).
        """
        values = [ev[u] for u in plan.ev]
        prog = plan.prog
        slots, logs = prog.run(values, False)
        out, z = read(slots, None)
        if np.all(z >= TINY):
            return out, z
        slots, logs = prog.run(values, True)
        return read(slots, logs)

    def _batched(self, ev: dict, n: int, plans: list, what: str, solve, rows: EvidenceRows | None = None):
        """Answer n evidence rows: each distinct row once, in chunks (see :mod:`.batches`).

        `solve(ev_chunk, m)` returns ``(tree, z)`` for m rows; `plans` are the
        compiled plans it runs (their batched tables bound the chunk size);
        `rows`, the distinct rows of `ev` when the caller has them.
        Raises EvidenceError naming the given rows whose evidence is impossible.
        """
        rows = EvidenceRows(ev, n, self._card) if rows is None else rows
        row_entries = sum(p.prog.row_entries for p in plans)
        tree, z = rows.solve(solve, 8.0 * row_entries, what)
        if not np.all(z > 0):
            self.raise_impossible(ev, rows.scatter(z), n)
        return rows.scatter(tree)

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
        tidx = self.target_indices(targets)
        ev, n = self.evidence_indices(evidence)
        self.check_disjoint(tidx, ev)
        return self.query_indices(tidx, ev, n, joint=joint, order=order)

    def query_indices(self, tidx: tuple[int, ...], ev: dict, n: int | None, *, joint: bool = True,
                      order: str | Sequence[Hashable] = "weighted-min-fill"):
        """:meth:`query` on evidence validated already (by a :class:`~causalnet.inference.request.Request`).

        Parameters
        ----------
        tidx : tuple of int
            Distinct target node ints, none of them observed.
        ev : dict of node int -> int or intp array of shape (n,)
            States in range, as :meth:`evidence_indices` or :meth:`index_evidence` give them.
        n : int or None
            The batch size (None: every value is an int).
        joint, order
            As for :meth:`query`.

        Returns
        -------
        As :meth:`query`; evidence of probability zero raises EvidenceError.
        """
        if self._cache_policy.route(tidx, ev, batched=n is not None, order=order) == PRIOR_TREE:
            got = self._from_prior_tree(tidx, ev, joint)
            if got is not None:
                return got
        t0 = time.process_time()
        try:
            return self._compiled_query(tidx, ev, n, joint, order)
        finally:
            if n is None:
                self._cache_policy.spent(time.process_time() - t0)

    def compiled_query(self, tidx: tuple[int, ...], ev: dict, n: int | None, *, joint: bool = True,
                       order: str | Sequence[Hashable] = "weighted-min-fill"):
        """:meth:`query_indices` by compiled variable elimination only: the query policy neither routes
        it (no prior tree) nor counts it toward building one (:mod:`.row_joint` asks its joint tables so)."""
        return self._compiled_query(tidx, ev, n, joint, order)

    def _compiled_query(self, tidx: tuple, ev: dict, n: int | None, joint: bool, order):
        """:meth:`query_indices` by compiled variable elimination (pruned, cached plans)."""
        method = self._method(order)
        groups = [tidx] if joint or not tidx else [(t,) for t in tidx]
        rows = None
        if n is not None:
            rows = EvidenceRows(ev, n, self._card)
            got = _discrete.row_joint.joint_rows_query(self, tidx, ev, rows, order) if len(groups) == 1 else None
            if got is not None:                             # one joint table over the targets and batched nodes
                return (got[0] if joint else ([got[0]] if tidx else [])), got[1]
        plans = [self._plan(g, ev, method, "sum") for g in groups]
        if n is None:
            answers = [self._query(p, g, ev, None) for p, g in zip(plans, groups)]
            z = min(a[1] for a in answers)
            if not z > 0:
                self.raise_impossible(ev, z, n)
        else:
            def solve(chunk, m):
                answers = [self._query(p, g, chunk, m) for p, g in zip(plans, groups)]
                z = answers[0][1]
                for a in answers[1:]:
                    z = np.minimum(z, a[1])
                return [a[0] for a in answers], z

            answers = [(a, None) for a in self._batched(ev, n, plans, f"a batched query of {n} rows", solve, rows)]
        probs = [a[0][0] for a in answers]
        log_ev = answers[0][0][1]
        if joint or not tidx:
            return (probs[0] if joint else []), log_ev
        return probs, log_ev

    def _from_prior_tree(self, tidx: tuple, ev: dict, joint: bool):
        """A scalar query answered by the calibrated prior tree, or None (then compiled)."""
        pt = self._cache_policy.tree
        if joint or not tidx:
            got = pt.query(tidx, ev)
            return None if got is None else ((got[0] if joint else []), got[1])
        out = []
        for t in tidx:
            got = pt.query((t,), ev)
            if got is None:
                return None
            out.append(got[0])
        return out, got[1]

    def _build_prior_tree(self):
        """The calibrated prior junction tree, or False when its tables would be too large
        (called by the query policy, once compiled queries have paid for it)."""
        _, largest, total = self._whole_order()                # the tree's cliques are among these tables
        trees = _discrete.junction_tree
        if largest <= trees.MAX_PRIOR_CLIQUE and total <= trees.MAX_PRIOR_TOTAL:
            return self.junction_tree().prior_tree() or False
        return False

    def _query(self, plan: _Plan, tidx: tuple, ev: dict, n: int | None):
        """``((P(targets | e), log P(e)), P(e))`` of one plan for scalar evidence or n rows."""
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

        (probs, log_ev), z = self._run(plan, ev, read)
        if n is not None:
            if probs.shape != (n, *tshape):
                probs = np.array(np.broadcast_to(probs, (n, *tshape)))
            log_ev = np.array(np.broadcast_to(log_ev, (n,)), dtype=np.float64)
            return (probs, log_ev), np.broadcast_to(z, (n,))
        return (np.asarray(probs, dtype=np.float64), float(log_ev)), float(z)

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
        tidx = self.target_indices(targets)
        ev, n = self.evidence_indices(evidence)
        self.check_disjoint(tidx, ev)
        return self.map_indices(tidx, ev, n, order=order)

    def map_indices(self, tidx: tuple[int, ...], ev: dict, n: int | None, *,
                    order: str | Sequence[Hashable] = "weighted-min-fill"):
        """:meth:`map` on targets and evidence validated already (see :meth:`query_indices`)."""
        method = self._method(order)
        plan = self._plan(tidx, ev, method, "max")
        if n is None:
            (out, lp), z = self._map(plan, ev, None)
            if not z > 0:
                self.raise_impossible(ev, z, n)
            return out, lp
        return self._batched(ev, n, [plan], f"a batched MAP query of {n} rows",
                             lambda chunk, m: self._map(plan, chunk, m))

    def _map(self, plan: _Plan, ev: dict, n: int | None):
        """``((assignment, log P(assignment, e)), P of the maximum)`` for scalar evidence or n rows."""
        bat = plan.prog.batched

        def read(slots, logs):
            s = plan.scalar
            val = 1.0 if s is None else slots[s]
            with np.errstate(divide="ignore"):
                lp = np.log(val) + (0.0 if (logs is None or s is None) else logs[s])
            return (slots, lp), val

        (slots, lp), z = self._run(plan, ev, read)
        rows = None if n is None else np.arange(n)
        assign: dict = {}
        for z_node, arg, labels in plan.trace:
            idx = tuple(assign[u] for u in labels)
            if bat[arg]:
                idx = (*idx, rows)
            assign[z_node] = slots[arg][idx]
        out: dict = {}
        for v in sorted(assign):
            x = assign[v]
            if n is None:
                out[self._names[v]] = int(x)
            else:
                out[self._names[v]] = np.array(np.broadcast_to(x, (n,)), dtype=np.intp)
        if n is None:
            return (out, float(lp)), float(z)
        return (out, np.array(np.broadcast_to(lp, (n,)), dtype=np.float64)), np.broadcast_to(z, (n,))

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
        ev, n = self.evidence_indices(values)
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
        evs = frozenset(self.node_index(v, "evidence node", EvidenceError) for v in (evidence_vars or ()))
        jt = self._cache_jts.get(evs)
        if jt is None:
            jt = self._cache_jts[evs] = _discrete.junction_tree.JunctionTree(self, [self._names[v] for v in sorted(evs)])
        return jt
