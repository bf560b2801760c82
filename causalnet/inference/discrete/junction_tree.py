"""Junction trees: every single-node posterior from one calibration.

Terms
-----
Eliminating the variables of a network in some order creates, at each step,
a *clique* (the variable and its neighbours at that moment). Those cliques,
joined by the *elimination tree* (each clique to the clique of the first of its
other variables to be eliminated later), form a *junction tree*: every variable
shared by two cliques is in every clique on the path between them (the running
intersection property). Cliques contained in a neighbour are merged into it.

With weighted min-fill the cliques stay at the network's treewidth scale (on
ALARM the largest table has a few hundred entries).

*Calibration* (Shafer-Shenoy) sends one message each way along every edge:
``m(i -> j) = sum over C_i minus S_ij of psi_i * prod of messages into i except from j``,
where ``psi_i`` is the product of the CPTs assigned to clique i (each CPT goes
to a clique that contains its family). The belief of a clique is ``psi_i``
times all its incoming messages; summing it gives single-node marginals, and
its total is ``P(e)``.

Calibration is compiled like variable elimination (see
:mod:`causalnet.inference.discrete.elimination`): messages whose source side holds no
evidence are the prior messages, computed once per tree; the rest become a
program of einsum calls, cached per evidence-variable set and batched over
evidence rows (memory ``O(n * largest clique)``).

The structure (cliques, separators, CPT assignment) comes from
:func:`causalnet.inference.discrete.cliques.build_clique_tree`, which refuses, with a
:class:`~causalnet.errors.ResourceError`, a clique larger than
``limits.get("max_table_bytes")``; a batched calibration is checked the same
way for its n rows.

Scalar evidence (one state per observed node) on a tree built without
evidence variables skips compilation: its *calibrated prior tree*
(:mod:`causalnet.inference.discrete.prior_tree`, built once per tree and shared with
:meth:`DiscreteBN.query`) keeps each clique's prior marginal ``P(C)``; given
evidence, the message along an edge is the likelihood of the evidence behind
it given the separator, all ones where no evidence lies behind, so only the
messages leaving the evidence are computed (Hugin's form of the update [3]_),
most of them one vector-matrix product with a precomputed matrix. The same
tree answers :meth:`DiscreteBN.query` for targets that share a clique by
collecting those messages toward the targets' clique only.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.inference.discrete.elimination import DiscreteBN
>>> g = cn.DAG.parse("A -> B -> C")
>>> bn = DiscreteBN(g, {"A": [0.3, 0.7], "B": [[0.9, 0.1], [0.2, 0.8]],
...                     "C": [[0.5, 0.5], [0.1, 0.9]]}, {"A": 2, "B": 2, "C": 2})
>>> jt = bn.junction_tree()
>>> m = jt.marginals({"C": np.array([0, 1])})        # two evidence rows at once
>>> m["A"].shape, np.round(m["A"][0], 4).tolist()
((2, 2), [0.5227, 0.4773])

References
----------
.. [1] D. Koller, N. Friedman, "Probabilistic Graphical Models", 2009, ch. 10.
.. [2] G. Shafer, P. Shenoy, "Probability propagation", Annals of Mathematics
       and Artificial Intelligence 2, 1990.
.. [3] F. V. Jensen, S. L. Lauritzen, K. G. Olesen, "Bayesian updating in
       causal probabilistic networks by local computations", Computational
       Statistics Quarterly 4, 1990.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping

import numpy as np

from ...errors import EvidenceError, GraphError
from .batches import EvidenceRows
from .cliques import build_clique_tree
from .hugin import propagate
from .network import DiscreteNetwork
from .ordering import ORDER_METHODS
from .policy import COMPILED, HUGIN, MarginalsPolicy
from .prior_tree import PriorTree, build_prior_tree
from .programs import TINY, ProgramBuilder

__all__ = ["JunctionTree", "MAX_PRIOR_CLIQUE", "MAX_PRIOR_TOTAL"]

#: Largest clique (entries) of a calibrated prior tree.
MAX_PRIOR_CLIQUE = 1 << 20
#: Most entries of all the cliques of a calibrated prior tree.
MAX_PRIOR_TOTAL = 1 << 23
#: Children of a clique on separators this small (entries) share one contraction for their messages.
_SHARED_SEP = 1 << 12


class JunctionTree:
    """A junction tree of a :class:`~causalnet.inference.discrete.elimination.DiscreteBN`.

    Build it with :meth:`DiscreteBN.junction_tree` (cached there).

    Parameters
    ----------
    bn : DiscreteBN
    evidence_vars : iterable of nodes, optional
        Nodes always observed: their CPTs are reduced by the evidence and they
        are not in any clique.
    order : str
        Elimination heuristic, one of ``ORDER_METHODS``.

    Attributes
    ----------
    cliques : list of tuple
        The variables of each clique (node order).
    edges : list of (int, int)
        ``(child, parent)`` clique indices; the tree may be a forest.
    separators : list of tuple
        The variables shared along each edge.
    width : int
        Largest clique size minus one (the induced width of the order).
    max_clique_size : int
        Entries of the largest clique table.
    evidence_vars : tuple
    """

    def __init__(self, bn: DiscreteNetwork, evidence_vars: Iterable[Hashable] = (), *,
                 order: str = "weighted-min-fill") -> None:
        if order not in ORDER_METHODS:
            raise GraphError(f"unknown elimination order {order!r}; choose one of {list(ORDER_METHODS)}")
        S = frozenset(bn.node_index(v, "evidence node", EvidenceError) for v in evidence_vars)
        t = build_clique_tree(bn, S, order=order)
        self._bn = bn
        self._S = S
        self._structure = t
        self._vars, self._parent, self._children, self._sep = t.vars, t.parent, t.children, t.sep
        self._pre, self._post, self._tree, self._n_trees = t.pre, t.post, t.tree, t.n_trees
        self._assign, self._scalars, self._size, self._home = t.assign, t.scalars, t.size, t.home
        free = [v for v in range(len(bn.card)) if v not in S]
        self._homed: dict[int, list[int]] = {}
        for v in free:
            self._homed.setdefault(t.home[v], []).append(v)
        self._tree_rep = {}
        for v in free:
            self._tree_rep.setdefault(t.tree[t.home[v]], v)
        self._cache_programs: dict = {}
        self._cache_prior_tree = None
        self._cache_policy = MarginalsPolicy(max(self._size, default=1) <= MAX_PRIOR_CLIQUE
                                       and sum(self._size) <= MAX_PRIOR_TOTAL, bool(S))
        self._cache_prior_messages: tuple[dict, dict] = ({}, {})   # evidence-free messages (up, down) met so far

    def _keep_prior_messages(self, b: ProgramBuilder, up: dict, down: dict) -> None:
        """Remember the messages of `b` that hold no evidence (constants), for later programs."""
        prior_up, prior_down = self._cache_prior_messages
        for c, sl in up.items():
            if b.is_const(sl) and c not in prior_up:
                prior_up[c] = b.template[sl]
        for c, sl in down.items():
            if b.is_const(sl) and c not in prior_down:
                prior_down[c] = b.template[sl]

    def prior_tree(self) -> PriorTree | None:
        """This tree calibrated on the prior (see :mod:`causalnet.inference.discrete.prior_tree`), built once.

        None for a tree with evidence variables, when its cliques exceed
        :data:`MAX_PRIOR_CLIQUE` / :data:`MAX_PRIOR_TOTAL` entries, or when
        calibration would come too close to underflow.
        """
        if self._cache_prior_tree is None:
            pt = False
            if not self._S and self._cache_policy.small:
                pt = build_prior_tree(self._bn, self._structure) or False
            self._cache_prior_tree = pt
        return self._cache_prior_tree or None

    # -- views -----------------------------------------------------------------

    @property
    def cliques(self) -> list[tuple]:
        names = self._bn.nodes
        return [tuple(names[v] for v in vs) for vs in self._vars]

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [(c, p) for c, p in enumerate(self._parent) if p >= 0]

    @property
    def separators(self) -> list[tuple]:
        names = self._bn.nodes
        return [tuple(names[v] for v in self._sep[c]) for c, p in enumerate(self._parent) if p >= 0]

    @property
    def width(self) -> int:
        return max((len(vs) for vs in self._vars), default=0) - 1

    @property
    def max_clique_size(self) -> int:
        return max(self._size, default=1)

    @property
    def evidence_vars(self) -> tuple:
        return tuple(self._bn.nodes[v] for v in sorted(self._S))

    def __repr__(self) -> str:
        return (f"<JunctionTree {len(self._vars)} cliques, width {self.width}, "
                f"largest table {self.max_clique_size} entries>")

    # -- compilation -------------------------------------------------------------

    def _messages(self, b: ProgramBuilder, ind: frozenset, batched: frozenset):
        """Emit factor slots and all messages; returns (factor slots per clique, up, down)."""
        bn = self._bn
        k = len(self._vars)
        fac: list[list[int]] = [[] for _ in range(k)]
        dyn = [False] * k
        for v, c in self._assign:
            s = bn.factor_slot(b, v, self._S, batched)
            fac[c].append(s)
            dyn[c] = dyn[c] or not b.is_const(s)
        for u in sorted(ind):
            c = self._home[u]
            fac[c].append(b.input(bn.eye(u), (u,), (u,), u in batched))
            dyn[c] = True
        parent, children, sep = self._parent, self._children, self._sep
        dirty_up = [False] * k
        for c in self._post:
            dirty_up[c] = dyn[c] or any(dirty_up[ch] for ch in children[c])
        dirty_down = [False] * k
        for c in self._pre:
            p = parent[c]
            if p >= 0:
                dirty_down[c] = (dyn[p] or dirty_down[p]
                                 or any(dirty_up[ch] for ch in children[p] if ch != c))
        prior_up, prior_down = self._cache_prior_messages
        up: dict[int, int] = {}
        for c in self._post:
            if parent[c] < 0:
                continue
            if not dirty_up[c] and c in prior_up:
                up[c] = b.const(prior_up[c], sep[c])
            else:
                up[c] = b.emit(fac[c] + [up[ch] for ch in children[c]], sep[c])
        down: dict[int, int] = {}
        for p in self._pre:
            todo = []
            for c in children[p]:
                if not dirty_down[c] and c in prior_down:
                    down[c] = b.const(prior_down[c], sep[c])
                else:
                    todo.append(c)
            if todo:
                self._down_messages(b, p, fac[p], up, down, todo)
        return fac, up, down

    def _down_messages(self, b: ProgramBuilder, p: int, fac: list, up: dict, down: dict, todo: list) -> None:
        """Emit the messages from clique p to its children `todo` into `down`.

        Each is ``sum to the separator of psi_p * every other message into p``;
        the children on small separators share one contraction first: the
        product without their messages, summed to the union of their
        separators (a small table), so the clique is swept once for all of
        them instead of once each.
        """
        card, sep, children = self._bn.card, self._sep, self._children[p]
        outer = fac + ([down[p]] if self._parent[p] >= 0 else [])
        small = [c for c in children if math.prod(card[v] for v in sep[c]) <= _SHARED_SEP]
        share = [c for c in todo if c in small]
        if len(share) >= 2:
            union = tuple(dict.fromkeys(v for c in small for v in sep[c]))
            if math.prod(card[v] for v in union) <= _SHARED_SEP and self._size[p] > _SHARED_SEP:
                rest = [up[ch] for ch in children if ch not in small]
                base = b.emit(outer + rest, union)
                for c in share:
                    down[c] = b.emit([base] + [up[ch] for ch in small if ch != c], sep[c])
                todo = [c for c in todo if c not in share]
        for c in todo:
            down[c] = b.emit(outer + [up[ch] for ch in children if ch != c], sep[c])

    def _program(self, ind: frozenset, batched: frozenset):
        key = (ind, batched)
        got = self._cache_programs.get(key)
        if got is not None:
            return got
        bn = self._bn
        ev_order = tuple(sorted(self._S | ind))
        b = ProgramBuilder(bn.card, ev_order, bn.folds)
        fac, up, down = self._messages(b, ind, batched)
        self._keep_prior_messages(b, up, down)
        marg = self._marginal_slots(b, fac, up, down)
        scal = [bn.factor_slot(b, v, self._S, batched) for v in self._scalars]
        zs = b.emit(scal, ()) if scal else None
        got = (b.program(), ev_order, marg, zs)
        self._cache_programs[key] = got
        return got

    def _marginal_slots(self, b: ProgramBuilder, fac: list, up: dict, down: dict) -> dict[int, int]:
        """The slot of each free node's unnormalized posterior ``P(v, e)``.

        A node on some separator is read from its smallest one: the product of
        the two messages along that edge is the separator's joint with the
        evidence (far fewer entries than a clique). The nodes on no separator
        are summed out of their home clique's belief, one contraction per clique.
        """
        card = self._bn.card
        best: dict[int, tuple[int, int]] = {}             # node -> (separator entries, edge)
        for c in up:
            sp = self._sep[c]
            size = 1
            for v in sp:
                size *= card[v]
            for v in sp:
                if v not in best or size < best[v][0]:
                    best[v] = (size, c)
        marg: dict[int, int] = {}
        for h, vs in self._homed.items():
            for v in vs:
                if v in best:
                    c = best[v][1]
                    marg[v] = b.emit([up[c], down[c]], (v,))
            rest = tuple(v for v in vs if v not in best)
            if not rest:
                continue
            ins = fac[h] + [up[ch] for ch in self._children[h]]
            if self._parent[h] >= 0:
                ins.append(down[h])
            if len(rest) == 1:
                marg[rest[0]] = b.emit(ins, rest)
            else:
                bel = b.emit(ins, rest)
                for v in rest:
                    marg[v] = b.emit([bel], (v,))
        return marg

    # -- calibration -------------------------------------------------------------

    def marginals(
        self,
        evidence: Mapping[Hashable, int | np.ndarray] | None = None,
        *,
        return_log_evidence: bool = False,
    ):
        """Every single-node posterior given `evidence`, from one calibration.

        Parameters
        ----------
        evidence : mapping of node -> int or int array of shape (n,), optional
            Must give every node of :attr:`evidence_vars`; other nodes are
            observed through indicator factors. Arrays (one length n) make a
            batched calibration, one vectorized pass for all rows.
        return_log_evidence : bool, default False
            Also return ``log P(evidence)``.

        Returns
        -------
        marginals : dict of node -> ndarray of shape (K,) or (n, K)
            Observed nodes get the point mass on their observed state.
        log_evidence : float or ndarray of shape (n,)
            Only with `return_log_evidence`.

        Raises
        ------
        EvidenceError
            On bad evidence (see :meth:`DiscreteBN.query`), a missing value for
            an evidence variable of the tree, or evidence of probability zero.

        Notes
        -----
        Scalar evidence on a tree built without evidence variables is
        answered from the network's calibrated prior tree (see the module
        notes): no program is compiled.
        """
        bn = self._bn
        ev, n = bn.evidence_indices(evidence)
        missing = [v for v in sorted(self._S) if v not in ev]
        if missing:
            raise EvidenceError(
                f"this junction tree was built for evidence on {list(self.evidence_vars)}; "
                f"no evidence given for {bn.nodes[missing[0]]!r}"
            )
        route = self._cache_policy.route(batched=n is not None, tree_built=self._cache_prior_tree is not None)
        if route != COMPILED:
            got = self._from_prior(ev, return_log_evidence, route)
            if got is not None:
                return got
        if n is None:
            (out, log_z), zmin = self._solve(ev, None)
            if not zmin > 0:
                bn.raise_impossible(ev, zmin, n)
        else:
            rows = EvidenceRows(ev, n, bn.card)
            prog = self._program(frozenset(ev) - self._S, frozenset(u for u, x in ev.items() if type(x) is not int))[0]
            (out, log_z), zmin = rows.solve(self._solve, 8.0 * prog.row_entries,
                                            f"a batched calibration of {n} evidence rows (largest clique "
                                            f"{self.max_clique_size} entries)")
            if not np.all(zmin > 0):
                bn.raise_impossible(ev, rows.scatter(zmin), n)
            out, log_z = rows.scatter((out, log_z))
        return (out, log_z) if return_log_evidence else out

    def _solve(self, ev: dict, n: int | None):
        """``((posteriors, log P(e)), P(e))`` of scalar evidence or n rows (zero: impossible)."""
        slots, marg, log_z, zmin = self._calibrate(ev)
        with np.errstate(divide="ignore", invalid="ignore"):      # impossible rows: the caller raises
            out = self._posteriors(slots, marg, ev, n)
        if n is not None:
            return (out, np.array(np.broadcast_to(log_z, (n,)), dtype=np.float64)), np.broadcast_to(zmin, (n,))
        return (out, float(log_z)), float(zmin)

    def _calibrate(self, ev: dict) -> tuple[list, dict, float | np.ndarray, float | np.ndarray]:
        """Run the compiled calibration: slots, the slot of each free node's marginal,
        ``log P(e)`` and the smallest factor of ``P(e)`` (zero: impossible evidence).

        Reruns with rescaling when ``P(e)`` underflows.
        """
        ind = frozenset(ev) - self._S
        batched = frozenset(u for u, x in ev.items() if type(x) is not int)
        prog, ev_order, marg, zs = self._program(ind, batched)
        values = [ev[u] for u in ev_order]
        reps = [marg[v] for v in self._tree_rep.values()]
        slots, logs = prog.run(values, False)
        log_z, zmin = _totals(slots, logs, reps, zs)
        if not np.all(zmin >= TINY):
            slots, logs = prog.run(values, True)
            log_z, zmin = _totals(slots, logs, reps, zs)
        return slots, marg, log_z, zmin

    def _posteriors(self, slots: list, marg: dict, ev: dict, n: int | None) -> dict:
        """Node name -> its normalized posterior, (K,) or (n, K); evidence variables get point masses."""
        names = self._bn.nodes
        card = self._bn.card
        free = [v for v in range(len(names)) if v not in self._S]
        post: dict = {}
        if free and n is None:
            # many small tables: normalize them at once (stack, segment sums, divide, split)
            ks = [card[v] for v in free]
            stack = np.concatenate([slots[marg[v]] for v in free])         # (sum K,)
            starts = np.cumsum([0, *ks[:-1]])
            stack = stack / np.repeat(np.add.reduceat(stack, starts), ks)
            for v, a, k in zip(free, starts, ks):
                post[v] = stack[a:a + k]                                   # (K,)
        else:
            for v in free:
                m = slots[marg[v]]                                         # (K, n) or (K,)
                p = m / m.sum(axis=0)
                post[v] = p.T if p.ndim == 2 else np.broadcast_to(p, (n, card[v])).copy()   # (n, K)
        for v in self._S:
            post[v] = _point_mass(card[v], ev[v], n)
        return {names[v]: post[v] for v in range(len(names))}

    def _from_prior(self, ev: dict, return_log_evidence: bool, route: str):
        """Scalar evidence: the marginals from one Hugin propagation or from the calibrated
        prior tree, as `route` says (see :class:`~.policy.MarginalsPolicy`); None if unavailable."""
        bn = self._bn
        names = bn.nodes
        if route == HUGIN:
            got = propagate(bn, self._structure, ev)
            if got is None:
                return None
            post, log_z = got
            out = {names[v]: post[v] for v in range(len(names))}
            return (out, log_z) if return_log_evidence else out
        pt = self.prior_tree()
        if not pt:
            return None
        got = pt.marginals(ev)
        if got is None:
            return None
        post, log_z = got
        card = bn.card
        off = pt.offset
        for u, x in ev.items():                       # observed: exactly the point mass
            o = off[u]
            post[o:o + card[u]] = 0.0
            post[o + x] = 1.0
        out = {names[v]: post[off[v]:off[v] + card[v]] for v in range(len(names))}   # (K,) views
        return (out, log_z) if return_log_evidence else out

    @property
    def prior_tree_built(self) -> bool:
        """Whether :meth:`prior_tree` was built (or found unusable) already."""
        return self._cache_prior_tree is not None

    def propagate(self, ev: dict, cut: frozenset = frozenset()) -> tuple[dict, float] | None:
        """One Hugin propagation (:func:`~.hugin.propagate`): ``({node: posterior (K,)}, log P(e))`` for
        scalar evidence `ev` (node int -> state, validated), the CPTs of the intervened nodes `cut`
        (each in `ev` at its ``do`` value) left out; None when ``P(e)`` is below ``TINY`` or the tree
        was built with evidence variables."""
        if self._S:
            return None
        got = propagate(self._bn, self._structure, ev, cut)
        if got is None:
            return None
        names = self._bn.nodes
        return {names[v]: p for v, p in enumerate(got[0])}, got[1]

    def log_evidence(self, evidence: Mapping[Hashable, int | np.ndarray] | None = None) -> float | np.ndarray:
        """``log P(evidence)`` (a float, or shape (n,) when batched)."""
        return self.marginals(evidence, return_log_evidence=True)[1]


def _totals(slots: list, logs: list | None, reps: list, zs: int | None):
    """``log P(e)`` (a product over the trees of the forest and the scalar CPTs) and the
    smallest unscaled total (to detect underflow and impossible evidence)."""
    log_z = 0.0
    zmin = None
    with np.errstate(divide="ignore"):
        for s in reps:
            z = slots[s].sum(axis=0)                      # () or (n,): batch last
            zmin = z if zmin is None else np.minimum(zmin, z)
            log_z = log_z + np.log(z) + (0.0 if logs is None else logs[s])
        if zs is not None:
            z = slots[zs]
            zmin = z if zmin is None else np.minimum(zmin, z)
            log_z = log_z + np.log(z) + (0.0 if logs is None else logs[zs])
    return log_z, (1.0 if zmin is None else zmin)


def _point_mass(k: int, x, n: int | None) -> np.ndarray:
    """The point mass on state x of k states: (k,), or (n, k) for a batch (x an int or (n,) array)."""
    if n is None:
        p = np.zeros(k)
        p[x] = 1.0
        return p
    p = np.zeros((n, k))
    p[np.arange(n), x] = 1.0
    return p
