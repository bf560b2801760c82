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
:mod:`causalnet.inference.elimination`): messages whose source side holds no
evidence are the prior messages, computed once per tree; the rest become a
program of einsum calls, cached per evidence-variable set and batched over
evidence rows (memory ``O(n * largest clique)``).

Scalar evidence (one state per observed node) on a tree built without
evidence variables skips compilation: the network's *calibrated prior tree*
(``_PriorTree``, built once per network and shared with
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
>>> from causalnet.inference.elimination import DiscreteBN
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
from string import ascii_letters

import numpy as np

from ..errors import EvidenceError, GraphError
from .elimination import _TINY, ORDER_METHODS, DiscreteBN, _Builder, _greedy_order
from .factors import MAX_EINSUM_AXES, _own, contract

__all__ = ["JunctionTree"]


class JunctionTree:
    """A junction tree of a :class:`~causalnet.inference.elimination.DiscreteBN`.

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

    def __init__(self, bn: DiscreteBN, evidence_vars: Iterable[Hashable] = (), *,
                 order: str = "weighted-min-fill") -> None:
        if order not in ORDER_METHODS:
            raise GraphError(f"unknown elimination order {order!r}; choose one of {list(ORDER_METHODS)}")
        self._bn = bn
        card = bn._card
        nn = len(bn._names)
        S = frozenset(bn._node(v, "evidence node", EvidenceError) for v in evidence_vars)
        self._S = S
        fam_free, adj = bn._reduced(range(nn), S)
        free = [v for v in range(nn) if v not in S]
        raw: list = []
        _greedy_order(adj, card, free, order, bn._rank, raw)

        # elimination tree, then merge cliques contained in a child
        pos = {v: i for i, (v, _) in enumerate(raw)}
        m = len(raw)
        cl = [frozenset({v, *nb}) for v, nb in raw]
        parent = [min((pos[u] for u in nb), default=-1) for _, nb in raw]
        children: list[list[int]] = [[] for _ in range(m)]
        for i, p in enumerate(parent):
            if p >= 0:
                children[p].append(i)
        alive = [True] * m
        rep = list(range(m))
        for j in range(m):
            for i in children[j]:
                if cl[j] <= cl[i]:
                    alive[j] = False
                    rep[j] = i
                    p = parent[j]
                    parent[i] = p
                    others = [c for c in children[j] if c != i]
                    for c in others:
                        parent[c] = i
                    children[i].extend(others)
                    if p >= 0:
                        children[p] = [i if c == j else c for c in children[p]]
                    children[j] = []
                    break

        def find(i):
            while rep[i] != i:
                i = rep[i]
            return i

        keep = [i for i in range(m) if alive[i]]
        new = {old: k for k, old in enumerate(keep)}
        self._vars = [tuple(sorted(cl[i])) for i in keep]
        self._parent = [new[parent[i]] if parent[i] >= 0 else -1 for i in keep]
        k = len(keep)
        self._children = [[] for _ in range(k)]
        for c, p in enumerate(self._parent):
            if p >= 0:
                self._children[p].append(c)
        self._sep = [
            tuple(v for v in self._vars[c] if v in set(self._vars[p])) if p >= 0 else ()
            for c, p in enumerate(self._parent)
        ]
        # traversal orders and trees
        roots = [c for c in range(k) if self._parent[c] < 0]
        pre: list[int] = []
        tree = [0] * k
        for t, r in enumerate(roots):
            stack = [r]
            while stack:
                c = stack.pop()
                pre.append(c)
                tree[c] = t
                stack.extend(self._children[c])
        self._pre = pre
        self._post = pre[::-1]
        self._tree = tree
        self._n_trees = len(roots)
        # CPT assignment: to the clique of the family's first-eliminated free variable
        self._assign: list[tuple[int, int]] = []
        self._scalars: list[int] = []
        for v in range(nn):
            ff = fam_free[v]
            if not ff:
                self._scalars.append(v)
                continue
            first = min(ff, key=pos.__getitem__)
            self._assign.append((v, new[find(pos[first])]))
        # home clique of each free variable: the smallest clique holding it
        size = [int(np.prod([card[v] for v in vs], dtype=np.int64)) for vs in self._vars]
        home: dict[int, int] = {}
        for c in sorted(range(k), key=size.__getitem__):
            for v in self._vars[c]:
                home.setdefault(v, c)
        self._home = home
        self._homed: dict[int, list[int]] = {}
        for v in free:
            self._homed.setdefault(home[v], []).append(v)
        self._tree_rep = {}
        for v in free:
            self._tree_rep.setdefault(tree[home[v]], v)
        self._size = size
        self._programs: dict = {}
        self._prior = None
        b0 = _Builder(card, sorted(S), bn._folds)
        _, up, down = self._messages(b0, frozenset(), frozenset())
        self._prior = (
            {c: b0.template[s] for c, s in up.items() if b0.is_const(s)},
            {c: b0.template[s] for c, s in down.items() if b0.is_const(s)},
        )

    # -- views -----------------------------------------------------------------

    @property
    def cliques(self) -> list[tuple]:
        names = self._bn._names
        return [tuple(names[v] for v in vs) for vs in self._vars]

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [(c, p) for c, p in enumerate(self._parent) if p >= 0]

    @property
    def separators(self) -> list[tuple]:
        names = self._bn._names
        return [tuple(names[v] for v in self._sep[c]) for c, p in enumerate(self._parent) if p >= 0]

    @property
    def width(self) -> int:
        return max((len(vs) for vs in self._vars), default=0) - 1

    @property
    def max_clique_size(self) -> int:
        return max(self._size, default=1)

    @property
    def evidence_vars(self) -> tuple:
        return tuple(self._bn._names[v] for v in sorted(self._S))

    def __repr__(self) -> str:
        return (f"<JunctionTree {len(self._vars)} cliques, width {self.width}, "
                f"largest table {self.max_clique_size} entries>")

    # -- compilation -------------------------------------------------------------

    def _messages(self, b: _Builder, ind: frozenset, batched: frozenset):
        """Emit factor slots and all messages; returns (factor slots per clique, up, down)."""
        bn = self._bn
        k = len(self._vars)
        fac: list[list[int]] = [[] for _ in range(k)]
        dyn = [False] * k
        for v, c in self._assign:
            s = bn._factor_slot(b, v, self._S, batched)
            fac[c].append(s)
            dyn[c] = dyn[c] or not b.is_const(s)
        for u in sorted(ind):
            c = self._home[u]
            fac[c].append(b.input(bn._eye(u), (u,), (u,), u in batched))
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
        prior = self._prior
        up: dict[int, int] = {}
        for c in self._post:
            if parent[c] < 0:
                continue
            if prior is not None and not dirty_up[c]:
                up[c] = b.const(prior[0][c], sep[c])
            else:
                up[c] = b.emit(fac[c] + [up[ch] for ch in children[c]], sep[c])
        down: dict[int, int] = {}
        for c in self._pre:
            p = parent[c]
            if p < 0:
                continue
            if prior is not None and not dirty_down[c]:
                down[c] = b.const(prior[1][c], sep[c])
            else:
                ins = fac[p] + [up[ch] for ch in children[p] if ch != c]
                if parent[p] >= 0:
                    ins.append(down[p])
                down[c] = b.emit(ins, sep[c])
        return fac, up, down

    def _program(self, ind: frozenset, batched: frozenset):
        key = (ind, batched)
        got = self._programs.get(key)
        if got is not None:
            return got
        bn = self._bn
        ev_order = tuple(sorted(self._S | ind))
        b = _Builder(bn._card, ev_order, bn._folds)
        fac, up, down = self._messages(b, ind, batched)
        marg: dict[int, int] = {}
        for h, vs in self._homed.items():
            ins = fac[h] + [up[ch] for ch in self._children[h]]
            if self._parent[h] >= 0:
                ins.append(down[h])
            if len(vs) == 1:
                marg[vs[0]] = b.emit(ins, (vs[0],))
            else:
                bel = b.emit(ins, self._vars[h])
                for v in vs:
                    marg[v] = b.emit([bel], (v,))
        scal = [bn._factor_slot(b, v, self._S, batched) for v in self._scalars]
        zs = b.emit(scal, ()) if scal else None
        got = (b.program(), ev_order, marg, zs)
        self._programs[key] = got
        return got

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
        ev, n = bn._evidence(evidence)
        missing = [v for v in sorted(self._S) if v not in ev]
        if missing:
            raise EvidenceError(
                f"this junction tree was built for evidence on {list(self.evidence_vars)}; "
                f"no evidence given for {bn._names[missing[0]]!r}"
            )
        if n is None and not self._S:
            got = self._from_prior(ev, return_log_evidence)
            if got is not None:
                return got
        ind = frozenset(ev) - self._S
        batched = frozenset(u for u, x in ev.items() if type(x) is not int)
        prog, ev_order, marg, zs = self._program(ind, batched)
        values = [ev[u] for u in ev_order]

        def totals(slots, logs):
            log_z = 0.0
            zmin = None
            for v in self._tree_rep.values():
                s = marg[v]
                z = slots[s].sum(axis=0)                  # (K,) or (K, n): batch last
                zmin = z if zmin is None else np.minimum(zmin, z)
                with np.errstate(divide="ignore"):
                    log_z = log_z + np.log(z) + (0.0 if logs is None else logs[s])
            if zs is not None:
                z = slots[zs]
                zmin = z if zmin is None else np.minimum(zmin, z)
                with np.errstate(divide="ignore"):
                    log_z = log_z + np.log(z) + (0.0 if logs is None else logs[zs])
            return log_z, (1.0 if zmin is None else zmin)

        slots, logs = prog.run(values, False)
        log_z, zmin = totals(slots, logs)
        if not np.all(zmin >= _TINY):
            slots, logs = prog.run(values, True)
            log_z, zmin = totals(slots, logs)
            if not np.all(zmin > 0):
                bn._impossible(ev, zmin, n)
        names = bn._names
        card = bn._card
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
        out: dict = {}
        for v in range(len(names)):
            if v in self._S:
                p = bn._eye(v)[ev[v]]
                if n is not None and p.ndim == 1:
                    p = np.broadcast_to(p, (n, card[v])).copy()
            else:
                p = post[v]
            out[names[v]] = p
        if not return_log_evidence:
            return out
        if n is not None:
            return out, np.array(np.broadcast_to(log_z, (n,)), dtype=np.float64)
        return out, float(log_z)

    def _from_prior(self, ev: dict, return_log_evidence: bool):
        """Scalar evidence: the marginals from the calibrated prior tree (None if unavailable)."""
        bn = self._bn
        pt = bn._prior_tree if bn._prior_tree is not None else bn._make_prior_tree(now=True)
        if not pt:
            return None
        got = pt.marginals(ev)
        if got is None:
            return None
        post, log_z = got
        card = bn._card
        off = pt._offset
        for u, x in ev.items():                       # observed: exactly the point mass
            o = off[u]
            post[o:o + card[u]] = 0.0
            post[o + x] = 1.0
        names = bn._names
        out = {names[v]: post[off[v]:off[v] + card[v]] for v in range(len(names))}   # (K,) views
        return (out, log_z) if return_log_evidence else out

    def log_evidence(self, evidence: Mapping[Hashable, int | np.ndarray] | None = None) -> float | np.ndarray:
        """``log P(evidence)`` (a float, or shape (n,) when batched)."""
        return self.marginals(evidence, return_log_evidence=True)[1]


# -- the calibrated prior tree: scalar evidence without compilation ------------------------

_MAX_TRANSFER = 1 << 16     # most entries of one precomputed transfer matrix
_MAX_BELIEF = 1 << 13       # most entries of a belief-to-message matrix (cheaper than einsum below)
_MIN_BUDGET = 1 << 20       # entries of precomputed matrices always allowed (else 4x the cliques' entries)
_REDUCE_FROM = 1 << 12      # cliques this large are summed to the nodes a contraction involves
_MAX_LAM = 20_000           # most likelihood matrices (built up front)
_EAGER_ROOTS = 256          # trees with at most this many cliques are rooted everywhere up front
_MAX_ROOTS = 4096           # rooted trees kept (per prior tree)


class _PriorTree:
    """A junction tree calibrated once on the prior, answering scalar evidence directly.

    Every clique c keeps its prior belief ``beta_c = P(C)`` and, for each
    neighbour d, ``beta_c / P(S_cd)`` (zero where ``P(S_cd) = 0``). In this
    (Hugin) form the message c -> d given evidence e is the likelihood
    ``P(e on c's side | S_cd)``: all ones when c's side holds no evidence, so
    a query computes only the messages on the Steiner tree joining the
    evidence cliques to the targets' clique r (rooted at r), each one
    contraction, or one vector-matrix product where a clique has a single
    incoming message or a single observed node (the clique's linear map is
    precomputed as a *transfer matrix*). The clique r, times its incoming
    messages, summed to the targets, is ``P(targets, e)``. All single-node
    marginals (:meth:`marginals`) send the messages on from the Steiner tree
    to every clique.

    Nothing is compiled per query (no pruning, ordering or plan): a query
    costs about one numpy call per clique of its Steiner tree.

    Legend: ``K`` states of one node; a message is a flat vector over the
    joint states of its separator (nodes in index order).
    """

    def __init__(self, jt: JunctionTree) -> None:
        bn = jt._bn
        card = bn._card
        nn = len(bn._names)
        V = jt._vars
        k = len(V)
        self._card = card
        self._vars = V
        #: cliques large enough that a compiled plan (pruned, run again cheaply) beats this tree
        #: for a query shape asked more than once
        self.heavy = max(jt._size, default=1) >= _REDUCE_FROM
        nbr: list[list[int]] = [[] for _ in range(k)]
        sep: dict = {}
        for c, p in enumerate(jt._parent):
            if p >= 0:
                nbr[c].append(p)
                nbr[p].append(c)
                sep[c, p] = sep[p, c] = jt._sep[c]
        self._sep = sep
        self._sep_shape = {e: tuple(card[v] for v in s) for e, s in sep.items()}
        self._letters = [{v: ascii_letters[i] for i, v in enumerate(vs)} if len(vs) <= MAX_EINSUM_AXES else None
                         for vs in V]                                   # None: wider than one einsum

        # Shafer-Shenoy calibration of the prior
        psi = [np.ones([card[v] for v in vs]) for vs in V]              # (*clique_cards)
        for v, c in jt._assign:
            psi[c] = contract([psi[c], bn._cpt[v]], [V[c], bn._family[v]], V[c])
        up: dict = {}
        for c in jt._post:
            p = jt._parent[c]
            if p >= 0:
                ch = jt._children[c]
                up[c] = contract([psi[c]] + [up[x] for x in ch], [V[c]] + [sep[x, c] for x in ch], sep[c, p])
        down: dict = {}
        for c in jt._pre:
            p = jt._parent[c]
            if p >= 0:
                sib = [x for x in jt._children[p] if x != c]
                ins = [psi[p]] + [up[x] for x in sib]
                labs = [V[p]] + [sep[x, p] for x in sib]
                if jt._parent[p] >= 0:
                    ins.append(down[p])
                    labs.append(sep[p, jt._parent[p]])
                down[c] = contract(ins, labs, sep[c, p])
        beta = []
        for c in range(k):
            ch = jt._children[c]
            ins = [psi[c]] + [up[x] for x in ch]
            labs = [V[c]] + [sep[x, c] for x in ch]
            if jt._parent[c] >= 0:
                ins.append(down[c])
                labs.append(sep[c, jt._parent[c]])
            beta.append(_own(contract(ins, labs, V[c])))                # P(C), (*clique_cards)
        self._beta = beta
        self.ok = True
        inv: dict = {}
        for (c, d), sp in sep.items():
            mu = contract([beta[c]], [V[c]], sp)                        # P(S_cd), (*sep_cards)
            pos = mu[mu > 0]
            if pos.size and pos.min() < 1e-250:
                self.ok = False                                         # too close to underflow
            inv[c, d] = np.divide(1.0, mu, out=np.zeros_like(mu), where=mu > 0)
        self._inv = inv
        if not self.ok:
            return
        self._bt = {                                                    # beta_c / P(S_cd) on small cliques
            (c, d): beta[c] * inv[c, d].reshape([card[v] if v in sp else 1 for v in V[c]])
            for (c, d), sp in sep.items() if beta[c].size < _REDUCE_FROM
        }

        # home cliques (the smallest holding each node); nodes are grouped by home clique
        size = jt._size
        home = [-1] * nn
        for c in sorted(range(k), key=size.__getitem__):
            for v in V[c]:
                if home[v] < 0:
                    home[v] = c
        self._home = home
        self._eye = [np.eye(card[v]) for v in range(nn)]
        self._prior = [contract([beta[home[v]]], [V[home[v]]], (v,)) for v in range(nn)]   # (K,)
        homed: list[list[int]] = [[] for _ in range(k)]
        for v in range(nn):
            homed[home[v]].append(v)
        self._homed = homed
        self._groups = [c for c in range(k) if homed[c]]                # segment order of `marginals`
        self._offset = [0] * nn
        at = 0
        for c in self._groups:
            for v in homed[c]:
                self._offset[v] = at
                at += card[v]
        seg = [v for c in self._groups for v in homed[c]]
        self._seg_starts = np.array([self._offset[v] for v in seg], dtype=np.intp)
        self._seg_cards = np.array([card[v] for v in seg], dtype=np.intp)
        self._span = [(self._offset[homed[c][0]], self._offset[homed[c][-1]] + card[homed[c][-1]])
                      if homed[c] else (0, 0) for c in range(k)]                # a clique's nodes in `marginals`
        self._prior_big = np.concatenate([self._prior[v] for c in self._groups for v in homed[c]])
        self._nbr = nbr
        self._rooted: dict = {}                                          # root clique -> its rooted tree
        if k <= _EAGER_ROOTS:
            for r in range(k):
                self._rooted_at(r)

        # transfer matrices (rows: input states, flattened; columns: output states), smallest
        # first within a memory budget; the rest are contractions at query time
        self._subs: dict = {}
        self._memo_entries = 0
        self._budget = max(_MIN_BUDGET, 4 * sum(b.size for b in beta))
        self._roots: dict = {}
        self._pass: dict = {}     # (c, x, d): message x -> c to message c -> d
        self._leaf: dict = {}     # (c, u, d): node u observed at c (row = its state) to message c -> d
        self._passev: dict = {}   # (c, x, d, u): as pass, with u observed at c (first axis: its state)
        self._pair: dict = {}     # (c, a, b, d), a < b: message a -> c to a (S_b, S_cd) map of message b -> c
        self._group: dict = {}    # (c, x): message x -> c to P(v, e) of the nodes homed at c, concatenated
        self._sel: dict = {}      # c: belief of c, flattened, to the marginals of its homed nodes
        self._bel: dict = {}      # (c, d): belief of c, flattened, to the message c -> d
        shape = self._sep_shape
        todo = []
        wide = MAX_EINSUM_AXES // 2                                     # separators too wide to write out
        for c in range(k):
            n_c = beta[c].size
            n_h = sum(card[v] for v in homed[c])
            for d in nbr[c]:
                n_d = math.prod(shape[c, d])
                if len(sep[c, d]) > wide:
                    continue
                for x in nbr[c]:
                    if x != d and len(sep[x, c]) <= wide:
                        todo.append((math.prod(shape[x, c]) * n_d, "pass", (c, x, d)))
                for u in V[c]:
                    if u not in sep[c, d]:
                        todo.append((card[u] * n_d, "leaf", (c, u, d)))
                        for x in nbr[c]:                                # one message in, u observed at c
                            if x != d and u not in sep[x, c] and len(sep[x, c]) < wide:
                                todo.append((card[u] * math.prod(shape[x, c]) * n_d, "passev", (c, x, d, u)))
                for i, x in enumerate(nbr[c]):                          # two messages in
                    for y in nbr[c][i + 1:]:
                        if d not in (x, y) and len(sep[x, c]) + len(sep[y, c]) + len(sep[c, d]) <= MAX_EINSUM_AXES:
                            a, b = min(x, y), max(x, y)
                            todo.append((math.prod(shape[a, c]) * math.prod(shape[b, c]) * n_d, "pair", (c, a, b, d)))
                if n_h:
                    todo.append((math.prod(shape[d, c]) * n_h, "group", (c, d)))
                if n_c * n_d <= _MAX_BELIEF:
                    todo.append((n_c * n_d, "bel", (c, d)))
            if n_h:
                todo.append((n_c * n_h, "sel", c))
        used = 0
        for n, kind, key in sorted(todo, key=lambda t: t[0]):
            if n > _MAX_TRANSFER or used + n > self._budget:
                break
            used += n
            if kind == "pass":
                c, x, d = key
                self._pass[key] = self._matrix(c, d, sep[x, c], sep[c, d])
            elif kind == "leaf":
                c, u, d = key
                self._leaf[key] = self._matrix(c, d, (u,), sep[c, d])
            elif kind == "passev":
                c, x, d, u = key
                m = self._matrix(c, d, (u, *sep[x, c]), sep[c, d])
                self._passev[key] = m.reshape(card[u], -1, m.shape[1])   # (K_u, |S_x|, |S_cd|)
            elif kind == "pair":
                c, a, b, d = key
                self._pair[key] = self._matrix(c, d, sep[a, c], (*sep[b, c], *sep[c, d]))
            elif kind == "group":
                c, x = key
                cols = [self._matrix(c, -1, sep[x, c], (v,)) for v in homed[c]]
                self._group[key] = np.ascontiguousarray(np.concatenate(cols, axis=1))   # (|S|, sum K)
            elif kind == "sel":
                c = key
                idx = np.indices(beta[c].shape).reshape(len(V[c]), -1)   # (nodes, |C|)
                cols = [np.eye(card[v])[idx[V[c].index(v)]] for v in homed[c]]
                self._sel[c] = np.concatenate(cols, axis=1)                # (|C|, sum K)
            else:
                c, d = key
                sp = sep[c, d]
                idx = np.indices(beta[c].shape).reshape(len(V[c]), -1)   # (nodes, |C|)
                flat = np.zeros(beta[c].size, dtype=np.intp)
                for v in sp:
                    flat = flat * card[v] + idx[V[c].index(v)]          # the separator state of each entry
                m = np.zeros((beta[c].size, math.prod(shape[c, d])))    # (|C|, |S|)
                m[np.arange(beta[c].size), flat] = inv[c, d].reshape(-1)[flat]
                self._bel[key] = m
        # likelihood matrices: lam[u, c, d][x] = P(u = x | S_cd) for u on c's side (not in S_cd),
        # the message c -> d when u is the only observed node behind it (a row, no arithmetic)
        self._lam: dict = {}
        holds = [set(vs) for vs in V]
        for u in range(nn):
            front = []
            for c in range(k):
                if u in holds[c]:
                    for d in nbr[c]:
                        m = self._leaf.get((c, u, d)) if u not in holds[d] else None
                        if m is not None:
                            self._lam[u, c, d] = m
                            front.append((c, d))
            while front:
                c, d = front.pop()
                m = self._lam[u, c, d]
                for e in nbr[d]:
                    t = self._pass.get((d, c, e)) if e != c else None
                    if (t is not None and used + m.shape[0] * t.shape[1] <= self._budget
                            and len(self._lam) < _MAX_LAM):
                        used += m.shape[0] * t.shape[1]
                        self._lam[u, d, e] = m @ t                      # (K_u, |S_de|)
                        front.append((d, e))
        self._matrix_entries = used

        # subtree matrices: the message p -> c to the unnormalized marginals of every node homed
        # on c's side, with their positions in `marginals` (smaller sides first, within the budget)
        side: dict = {}
        for c in jt._post:                                              # cliques on each side of each edge
            p = jt._parent[c]
            if p >= 0:
                side[p, c] = 1 + sum(side[c, x] for x in jt._children[c])
        size_tree: dict = {}
        for c in range(k):
            size_tree[jt._tree[c]] = size_tree.get(jt._tree[c], 0) + 1
        for c in jt._pre:
            p = jt._parent[c]
            if p >= 0:
                side[c, p] = size_tree[jt._tree[c]] - side[p, c]
        self._sub: dict = {}
        used = 0
        for (p, c), _ in sorted(side.items(), key=lambda t: t[1]):
            cols, idx = [], []
            if homed[c]:
                g = self._group.get((c, p))
                if g is None:
                    continue
                cols.append(g)
                idx.append(np.arange(*self._span[c]))
            for d in nbr[c]:
                if d == p:
                    continue
                sd, t = self._sub.get((c, d)), self._pass.get((c, p, d))
                if sd is None or t is None:
                    break
                if sd[0] is not None:
                    cols.append(t @ sd[0])                              # (|S_pc|, outputs on d's side)
                    idx.append(sd[1])
            else:
                n = sum(m.size for m in cols)
                if used + n > self._budget:
                    continue
                used += n
                self._sub[p, c] = ((np.ascontiguousarray(np.concatenate(cols, axis=1)), np.concatenate(idx))
                                   if cols else (None, None))

    # -- building blocks -----------------------------------------------------------

    def _matrix(self, c: int, d: int, ins: tuple, out: tuple) -> np.ndarray:
        """The transfer matrix of clique c from `ins` to `out` (divided by ``P(S_cd)`` when ``d >= 0``).

        Row ``a`` (a joint state of `ins`, flattened) holds the sum of the
        table over the labels not in `out` with `ins` fixed at ``a``: the table
        is summed to ``ins + out`` once and written onto the diagonal (in the
        labels shared by `ins` and `out`) of a zero matrix.
        """
        card = self._card
        V = self._vars
        both = tuple(dict.fromkeys((*ins, *out)))                      # `out` may repeat nodes of `ins`
        if d >= 0:
            t = contract([self._beta[c], self._inv[c, d]], [V[c], self._sep[c, d]], both)   # (*both_cards)
        else:
            t = contract([self._beta[c]], [V[c]], both)
        m = np.zeros([card[u] for u in (*ins, *out)])                  # (*in_cards, *out_cards)
        letter = {u: ascii_letters[i] for i, u in enumerate(both)}
        diag = np.einsum("".join(letter[u] for u in (*ins, *out)) + "->" + "".join(letter[u] for u in both), m)
        diag[...] = t                                                  # a view: fills the diagonal
        return m.reshape(math.prod(m.shape[: len(ins)]), -1)          # (in states, out states)

    def _prepare(self, key: tuple):
        """Subscripts, tables and message shapes of the contraction `key` (memoized).

        ``key = (c, d, srcs, evs, out)``: clique c's belief (divided by
        ``P(S_cd)`` when ``d >= 0``) times the messages from the neighbours
        `srcs` and the indicators of the observed nodes `evs`, summed to
        ``sep(c, d)`` or (``d < 0``) to `out`. On a large clique the belief is
        summed beforehand over the nodes not involved (kept, within a budget).
        """
        c, d, srcs, evs, out = key
        vc = self._vars[c]
        beta = self._beta[c]
        sep = self._sep
        fout = sep[c, d] if d >= 0 else out
        tables = [beta]
        labs = [vc]
        if d >= 0:
            if (c, d) in self._bt:
                tables = [self._bt[c, d]]
            else:
                tables.append(self._inv[c, d])
                labs.append(sep[c, d])
        if beta.size >= _REDUCE_FROM:
            need = set(fout).union(*(sep[x, c] for x in srcs), evs)
            lab = tuple(v for v in vc if v in need)
            size = math.prod(self._card[v] for v in lab)
            if len(lab) < len(vc) and self._memo_entries + size <= self._budget:
                tables = [contract(tables, labs, lab)]                  # (*lab_cards)
                labs = [lab]
                self._memo_entries += size
        letter = self._letters[c]                                       # a letter per node of the clique
        if letter is not None:
            subs = ",".join(["".join([letter[v] for v in lab]) for lab in labs]
                            + ["".join([letter[v] for v in sep[x, c]]) for x in srcs]
                            + [letter[u] for u in evs]) + "->" + "".join([letter[v] for v in fout])
        else:                                                           # contract() splits it
            subs = (labs + [sep[x, c] for x in srcs] + [(u,) for u in evs], fout)
        got = (subs, tables, [self._sep_shape[x, c] for x in srcs])
        if len(self._subs) > 100_000:
            self._subs.clear()
            self._memo_entries = 0
        self._subs[key] = got
        return got

    def _einsum(self, c: int, d: int, srcs: list, msgs: list, evs: list, ev: dict, out: tuple = ()):
        """Clique c times the messages `msgs` (from `srcs`) and the evidence on `evs`,
        summed to ``sep(c, d)`` (flat) or, when ``d < 0``, to `out`."""
        key = (c, d, tuple(srcs), tuple(evs), out)
        got = self._subs.get(key)
        if got is None:
            got = self._prepare(key)
        subs, tables, shapes = got
        eye = self._eye
        ops = list(tables)
        for m, sh in zip(msgs, shapes):
            ops.append(m.reshape(sh))
        for u in evs:
            ops.append(eye[u][ev[u]])
        r = np.einsum(subs, *ops) if type(subs) is str else contract(ops, *subs)
        return r.reshape(-1) if d >= 0 else r

    def _send(self, c: int, d: int, srcs: list, msgs: list, evs, ev: dict):
        """The message c -> d given incoming `msgs` (from `srcs`) and evidence on `evs` at c."""
        if not evs:
            if len(srcs) == 1:
                m = self._pass.get((c, srcs[0], d))
                if m is not None:
                    return msgs[0] @ m                                 # (|S_cd|,)
            elif len(srcs) == 2:
                a, b = (0, 1) if srcs[0] < srcs[1] else (1, 0)
                m = self._pair.get((c, srcs[a], srcs[b], d))
                if m is not None:                                      # (|S_a|, |S_b| * |S_cd|)
                    return msgs[b] @ (msgs[a] @ m).reshape(len(msgs[b]), -1)   # (|S_cd|,)
        elif len(evs) == 1:
            if not srcs:
                m = self._leaf.get((c, evs[0], d))
                if m is not None:
                    return m[ev[evs[0]]]                               # (|S_cd|,)
            elif len(srcs) == 1:
                m = self._passev.get((c, srcs[0], d, evs[0]))
                if m is not None:                                      # (K_u, |S_x|, |S_cd|)
                    return msgs[0] @ m[ev[evs[0]]]                     # (|S_cd|,)
        return self._einsum(c, d, srcs, msgs, evs or (), ev)

    def _rooted_at(self, r: int) -> tuple:
        """The tree rooted at clique r (memoized): next hop toward r (-1 at r and in other
        trees), depth, nearest clique to r holding each node (-1: other trees), breadth-first
        order, children."""
        got = self._rooted.get(r)
        if got is not None:
            return got
        V = self._vars
        k = len(V)
        tw = [-1] * k
        dep = [0] * k
        near = [-1] * len(self._card)
        order = [r]
        ch: list[list[int]] = [[] for _ in range(k)]
        for c in order:
            for v in V[c]:
                if near[v] < 0:
                    near[v] = c
            for d in self._nbr[c]:
                if d != tw[c]:
                    tw[d] = c
                    dep[d] = dep[c] + 1
                    order.append(d)
                    ch[c].append(d)
        if len(self._rooted) >= _MAX_ROOTS:
            self._rooted.clear()
        got = self._rooted[r] = (tw, dep, near, order, ch)
        return got

    def _place(self, r: int, ev: dict, at: dict) -> dict | None:
        """Put each observed node on its clique nearest r; return the evidence of other trees."""
        near = self._rooted_at(r)[2]
        rest = None
        for u in ev:
            c = near[u]
            if c < 0:
                if rest is None:
                    rest = {}
                rest[u] = ev[u]
                continue
            lst = at.get(c)
            if lst is None:
                at[c] = [u]
            else:
                lst.append(u)
        return rest

    def _upward(self, r: int, at: dict, ev: dict) -> tuple[dict, dict]:
        """Messages toward r on the Steiner tree of r and the cliques of `at`.

        Returns the Steiner tree (clique -> its children there) and the
        messages (child clique -> its message to its parent).
        """
        tw, dep = self._rooted_at(r)[:2]
        kids: dict = {r: []}
        for c in at:
            child = -1
            while True:
                lst = kids.get(c)
                if lst is not None:
                    if child >= 0:
                        lst.append(child)
                    break
                kids[c] = [child] if child >= 0 else []
                child = c
                c = tw[c]
        msg: dict = {}
        if len(kids) > 1:
            lam = self._lam
            one: dict = {}                      # clique -> the one observed node behind it (if just one)
            for c in sorted(kids, key=dep.__getitem__, reverse=True):
                if c == r:
                    break
                ks = kids[c]
                es = at.get(c)
                u = -1
                if es is None:
                    if len(ks) == 1:
                        u = one.get(ks[0], -1)
                elif not ks and len(es) == 1:
                    u = es[0]
                if u >= 0:
                    one[c] = u
                    m = lam.get((u, c, tw[c]))
                    if m is not None:
                        msg[c] = m[ev[u]]                               # P(u = x | S), (|S|,)
                        continue
                msg[c] = self._send(c, tw[c], ks, [msg[x] for x in ks], es, ev)
        return kids, msg

    def _collect(self, r: int, at: dict, ev: dict, out: tuple):
        """``P(out, e)`` (unnormalized, axes `out`) for the evidence `at` cliques of r's tree."""
        kids, msg = self._upward(r, at, ev)
        ks = kids[r]
        es = at.get(r)
        if es is None and len(out) == 1:
            if not ks:
                return self._prior[out[0]]
            if len(ks) == 1:
                m = self._group.get((r, ks[0]))
                if m is not None:
                    t = out[0]
                    o = self._offset[t] - self._offset[self._homed[r][0]]
                    return (msg[ks[0]] @ m)[o:o + self._card[t]]       # (K,)
        return self._einsum(r, -1, ks, [msg[x] for x in ks], es or (), ev, out)

    def _evidence_only(self, ev: dict) -> float:
        """``P(e)`` of evidence in trees that hold no target."""
        z = 1.0
        while ev:
            r = self._home[next(iter(ev))]
            at: dict = {}
            rest = self._place(r, ev, at)
            z *= float(self._collect(r, at, ev, ()))
            ev = rest or {}
        return z

    def root_of(self, tidx: tuple) -> int:
        """The smallest clique holding every target (-1 if none does)."""
        if len(tidx) == 1:
            return self._home[tidx[0]]
        r = self._roots.get(tidx)
        if r is None:
            want = set(tidx)
            fits = [c for c, vs in enumerate(self._vars) if want.issubset(vs)]
            r = self._roots[tidx] = min(fits, key=lambda c: self._beta[c].size) if fits else -1
        return r

    # -- answers -------------------------------------------------------------------

    def query(self, tidx: tuple, ev: dict):
        """``(P(targets | e), log P(e))``, axes in `tidx` order.

        None when no clique holds every target, or ``P(e) < _TINY`` (the
        compiled engine then rescales, or raises on ``P(e) = 0``).
        """
        if not tidx:
            z = self._evidence_only(ev)
            probs = np.ones(())
        else:
            r = self.root_of(tidx)
            if r < 0:
                return None
            at: dict = {}
            rest = self._place(r, ev, at) if ev else None
            table = self._collect(r, at, ev, tidx)                   # P(targets, e in r's tree)
            zt = float(table.sum())
            if not zt >= _TINY:
                return None
            z = zt * self._evidence_only(rest) if rest else zt
            probs = table / zt
        if not z >= _TINY:
            return None
        return probs, math.log(z)

    def marginals(self, ev: dict):
        """Every node's posterior, concatenated, and ``log P(e)``; None if ``P(e) < _TINY``.

        Returns
        -------
        post : ndarray of shape (sum K,)
            Node v's posterior is ``post[offset[v]:offset[v] + K_v]``.
        log_z : float
        """
        big = self._prior_big.copy()                                     # (sum K,)
        log_z = 0.0
        while ev:
            r = self._home[next(iter(ev))]
            at: dict = {}
            rest = self._place(r, ev, at)
            self._spread(r, at, ev, big)
            a = self._span[r][0]                                         # r is the home of an observed node
            z = float(big[a:a + self._card[self._homed[r][0]]].sum())
            if not z >= _TINY:
                return None
            log_z += math.log(z)
            ev = rest or {}
        sums = np.add.reduceat(big, self._seg_starts)                    # (nodes,)
        big /= np.repeat(sums, self._seg_cards)
        return big, log_z

    def _spread(self, r: int, at: dict, ev: dict, big: np.ndarray) -> None:
        """Write the unnormalized ``P(v, e)`` of the nodes of r's tree into `big`."""
        kids, msg = self._upward(r, at, ev)
        tw, _, _, _, children = self._rooted_at(r)
        homed = self._homed
        span = self._span
        dn: dict = {}                                                   # clique -> message from its parent
        stack = [r]
        while stack:
            c = stack.pop()
            p = tw[c]
            ks = kids.get(c)
            if ks is None:                                              # off the Steiner tree: one message in
                m = dn.pop(c)
                sub = self._sub.get((p, c))
                if sub is not None:                                     # the whole side at once
                    if sub[0] is not None:
                        big[sub[1]] = m @ sub[0]
                    continue
                if homed[c]:
                    g = self._group.get((c, p))
                    big[span[c][0]:span[c][1]] = m @ g if g is not None else self._each(c, [p], [m], (), ev)
                for d in children[c]:
                    t = self._pass.get((c, p, d))
                    dn[d] = m @ t if t is not None else self._send(c, d, [p], [m], None, ev)
                    stack.append(d)
                continue
            es = at.get(c)
            srcs = list(ks)
            msgs = [msg[x] for x in ks]
            if p >= 0:
                srcs.append(p)
                msgs.append(dn.pop(c))
            away = children[c]
            b = None
            if c in self._sel or any(d not in ks and (c, d) in self._bel for d in away):
                b = self._einsum(c, -1, srcs, msgs, es or (), ev, self._vars[c]).reshape(-1)   # (|C|,)
            if homed[c]:
                if b is not None and c in self._sel:
                    big[span[c][0]:span[c][1]] = b @ self._sel[c]
                else:
                    big[span[c][0]:span[c][1]] = self._each(c, srcs, msgs, es or (), ev)
            for d in away:
                if d in ks:                                             # all messages but d's own
                    i = srcs.index(d)
                    dn[d] = self._send(c, d, srcs[:i] + srcs[i + 1:], msgs[:i] + msgs[i + 1:], es, ev)
                else:
                    m = self._bel.get((c, d)) if b is not None else None
                    dn[d] = b @ m if m is not None else self._send(c, d, srcs, msgs, es, ev)
                stack.append(d)

    def _each(self, c: int, srcs: list, msgs: list, evs, ev: dict) -> np.ndarray:
        """Unnormalized marginals of the nodes homed at c, one contraction each, concatenated."""
        parts = [self._einsum(c, -1, srcs, msgs, evs, ev, (v,)) for v in self._homed[c]]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
