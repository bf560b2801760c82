"""The calibrated prior tree: scalar evidence answered without compiling anything.

Terms
-----
A junction tree (:mod:`causalnet.inference.discrete.cliques`) is calibrated once on
the prior (Shafer-Shenoy): every clique c keeps its prior belief
``beta_c = P(C)`` and, for each neighbour d, ``beta_c / P(S_cd)`` (zero where
``P(S_cd) = 0``). In this (Hugin) form the message c -> d given evidence e is
the likelihood ``P(e on c's side | S_cd)``: all ones when c's side holds no
evidence, so a query computes only the messages on the *Steiner tree* joining
the evidence cliques to the targets' clique r (rooted at r), each one
contraction, or one vector-matrix product where a clique has a single
incoming message or a single observed node (the clique's linear map is
precomputed as a *transfer matrix*, within a memory budget). The clique r,
times its incoming messages, summed to the targets, is ``P(targets, e)``.
All single-node marginals (:meth:`PriorTree.marginals`) send the messages on
from the Steiner tree to every clique.

Nothing is compiled per query (no pruning, ordering or plan): a query costs
about one numpy call per clique of its Steiner tree.
:func:`build_prior_tree` runs the setup in named steps (calibration,
separator inverses, homes, transfer matrices, likelihood matrices, subtree
matrices).

Legend: ``K`` states of one node; a message is a flat vector over the joint
states of its separator (nodes in index order).

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.inference.discrete.network import DiscreteNetwork
>>> from causalnet.inference.discrete.cliques import build_clique_tree
>>> net = DiscreteNetwork(cn.DAG.parse("A -> B"), {"A": [0.3, 0.7],
...     "B": [[0.9, 0.1], [0.2, 0.8]]}, {"A": 2, "B": 2})
>>> pt = build_prior_tree(net, build_clique_tree(net))
>>> probs, log_e = pt.query((0,), {1: 1})                 # P(A | B = 1)
>>> np.round(probs, 4).tolist(), round(float(np.exp(log_e)), 2)
([0.0508, 0.9492], 0.59)

References
----------
.. [1] F. V. Jensen, S. L. Lauritzen, K. G. Olesen, "Bayesian updating in
       causal probabilistic networks by local computations", Computational
       Statistics Quarterly 4, 1990.
.. [2] G. Shafer, P. Shenoy, "Probability propagation", Annals of Mathematics
       and Artificial Intelligence 2, 1990.
"""

from __future__ import annotations

import math
from string import ascii_letters

import numpy as np

from .cliques import CliqueTree
from .factors import MAX_EINSUM_AXES, contract, own_array
from .network import DiscreteNetwork
from .programs import TINY

__all__ = ["PriorTree", "build_prior_tree", "HEAVY_CLIQUE"]

_MAX_TRANSFER = 1 << 16     # most entries of one precomputed transfer matrix
_MAX_BELIEF = 1 << 13       # most entries of a belief-to-message matrix (cheaper than einsum below)
_MIN_BUDGET = 1 << 20       # entries of precomputed matrices always allowed (else 4x the cliques' entries)
_REDUCE_FROM = 1 << 12      # cliques this large are summed to the nodes a contraction involves
_MAX_LAM = 20_000           # most likelihood matrices (built up front)
_EAGER_ROOTS = 256          # trees with at most this many cliques are rooted everywhere up front
_MAX_ROOTS = 4096           # rooted trees kept (per prior tree)
#: A prior tree with a clique of this many entries is *heavy*: a query shape
#: asked again is better served by a compiled (pruned, cached) plan.
HEAVY_CLIQUE = _REDUCE_FROM


def build_prior_tree(net: DiscreteNetwork, tree: CliqueTree) -> PriorTree | None:
    """Calibrate `tree` (built without evidence nodes) on the prior of `net`.

    Returns None when a separator's prior probability is positive but within
    a few hundred orders of magnitude of underflow (the Hugin division would
    lose it); the compiled engine then answers.
    """
    pt = PriorTree()
    pt._setup_structure(net, tree)
    pt._calibrate(net, tree)
    if not pt._separator_inverses():
        return None
    pt._setup_homes(net, tree)
    used = pt._transfer_matrices()
    used = pt._likelihood_matrices(used)
    pt._matrix_entries = used
    pt._subtree_matrices(tree)
    return pt


class PriorTree:
    """A junction tree calibrated once on the prior, answering scalar evidence directly.

    Build it with :func:`build_prior_tree`. Answers :meth:`query` (targets
    sharing a clique) and :meth:`marginals` (every node), None when
    ``P(e) < TINY`` (the compiled engine then rescales, or raises).

    Attributes
    ----------
    heavy : bool
        Whether a clique has :data:`HEAVY_CLIQUE` entries or more.
    offset : list of int
        Where node v's posterior starts in the vector of :meth:`marginals`.
    """

    # -- setup, in named steps (see build_prior_tree) ------------------------------

    def _setup_structure(self, net: DiscreteNetwork, tree: CliqueTree) -> None:
        """Cliques, neighbours, separators (both directions) and einsum letters."""
        card = net.card
        V = tree.vars
        k = len(V)
        self._card = card
        self._vars = V
        self.heavy = max(tree.size, default=1) >= _REDUCE_FROM
        nbr: list[list[int]] = [[] for _ in range(k)]
        sep: dict = {}
        for c, p in enumerate(tree.parent):
            if p >= 0:
                nbr[c].append(p)
                nbr[p].append(c)
                sep[c, p] = sep[p, c] = tree.sep[c]
        self._nbr = nbr
        self._sep = sep
        self._sep_shape = {e: tuple(card[v] for v in s) for e, s in sep.items()}
        self._letters = [{v: ascii_letters[i] for i, v in enumerate(vs)} if len(vs) <= MAX_EINSUM_AXES else None
                         for vs in V]                                   # None: wider than one einsum

    def _calibrate(self, net: DiscreteNetwork, tree: CliqueTree) -> None:
        """Shafer-Shenoy on the prior: ``beta_c = P(C)`` for every clique."""
        card, V, sep = net.card, tree.vars, self._sep
        parent, children = tree.parent, tree.children
        psi = [np.ones([card[v] for v in vs]) for vs in V]              # (*clique_cards)
        for v, c in tree.assign:
            psi[c] = contract([psi[c], net.cpt_list[v]], [V[c], net.family[v]], V[c])
        up: dict = {}
        for c in tree.post:
            p = parent[c]
            if p >= 0:
                ch = children[c]
                up[c] = contract([psi[c]] + [up[x] for x in ch], [V[c]] + [sep[x, c] for x in ch], sep[c, p])
        down: dict = {}
        for c in tree.pre:
            p = parent[c]
            if p >= 0:
                sib = [x for x in children[p] if x != c]
                ins = [psi[p]] + [up[x] for x in sib]
                labs = [V[p]] + [sep[x, p] for x in sib]
                if parent[p] >= 0:
                    ins.append(down[p])
                    labs.append(sep[p, parent[p]])
                down[c] = contract(ins, labs, sep[c, p])
        beta = []
        for c in range(len(V)):
            ch = children[c]
            ins = [psi[c]] + [up[x] for x in ch]
            labs = [V[c]] + [sep[x, c] for x in ch]
            if parent[c] >= 0:
                ins.append(down[c])
                labs.append(sep[c, parent[c]])
            beta.append(own_array(contract(ins, labs, V[c])))           # P(C), (*clique_cards)
        self._beta = beta

    def _separator_inverses(self) -> bool:
        """``1 / P(S_cd)`` (0 where zero) per directed edge; False if a separator nearly underflows."""
        V, beta, card = self._vars, self._beta, self._card
        inv: dict = {}
        ok = True
        for (c, d), sp in self._sep.items():
            mu = contract([beta[c]], [V[c]], sp)                        # P(S_cd), (*sep_cards)
            pos = mu[mu > 0]
            if pos.size and pos.min() < 1e-250:
                ok = False                                              # too close to underflow
            inv[c, d] = np.divide(1.0, mu, out=np.zeros_like(mu), where=mu > 0)
        self._inv = inv
        if ok:
            self._bt = {                                                # beta_c / P(S_cd) on small cliques
                (c, d): beta[c] * inv[c, d].reshape([card[v] if v in sp else 1 for v in V[c]])
                for (c, d), sp in self._sep.items() if beta[c].size < _REDUCE_FROM
            }
        return ok

    def _setup_homes(self, net: DiscreteNetwork, tree: CliqueTree) -> None:
        """Home cliques (the smallest holding each node), priors, and the layout of `marginals`."""
        card, V, beta = self._card, self._vars, self._beta
        nn, k = len(card), len(V)
        home = [-1] * nn
        for c in sorted(range(k), key=tree.size.__getitem__):
            for v in V[c]:
                if home[v] < 0:
                    home[v] = c
        self._home = home
        self._prior = [contract([beta[home[v]]], [V[home[v]]], (v,)) for v in range(nn)]   # (K,)
        homed: list[list[int]] = [[] for _ in range(k)]
        for v in range(nn):
            homed[home[v]].append(v)
        self._homed = homed
        self._groups = [c for c in range(k) if homed[c]]                # segment order of `marginals`
        self.offset = self._offset = [0] * nn
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
        self._rooted: dict = {}                                          # root clique -> its rooted tree
        if k <= _EAGER_ROOTS:
            for r in range(k):
                self._rooted_at(r)
        self._subs: dict = {}
        self._memo_entries = 0
        self._budget = max(_MIN_BUDGET, 4 * sum(b.size for b in beta))
        self._roots: dict = {}

    def _transfer_candidates(self) -> list:
        """Every transfer matrix worth having: ``(entries, kind, key)``."""
        card, beta = self._card, self._beta
        todo = []
        for c in range(len(self._vars)):
            n_h = sum(card[v] for v in self._homed[c])
            for d in self._nbr[c]:
                self._edge_candidates(c, d, n_h, todo)
            if n_h:
                todo.append((beta[c].size * n_h, "sel", c))
        return todo

    def _edge_candidates(self, c: int, d: int, n_h: int, todo: list) -> None:
        """The transfer matrices of clique c toward its neighbour d (appended to `todo`)."""
        card, V, sep, nbr, shape = self._card, self._vars, self._sep, self._nbr, self._sep_shape
        wide = MAX_EINSUM_AXES // 2                                     # separators too wide to write out
        n_c = self._beta[c].size
        n_d = math.prod(shape[c, d])
        if len(sep[c, d]) > wide:
            return
        for x in nbr[c]:
            if x != d and len(sep[x, c]) <= wide:
                todo.append((math.prod(shape[x, c]) * n_d, "pass", (c, x, d)))
        for u in V[c]:
            if u not in sep[c, d]:
                todo.append((card[u] * n_d, "leaf", (c, u, d)))
                for x in nbr[c]:                                        # one message in, u observed at c
                    if x != d and u not in sep[x, c] and len(sep[x, c]) < wide:
                        todo.append((card[u] * math.prod(shape[x, c]) * n_d, "passev", (c, x, d, u)))
        for i, x in enumerate(nbr[c]):                                  # two messages in
            for y in nbr[c][i + 1:]:
                if d not in (x, y) and len(sep[x, c]) + len(sep[y, c]) + len(sep[c, d]) <= MAX_EINSUM_AXES:
                    a, b = min(x, y), max(x, y)
                    todo.append((math.prod(shape[a, c]) * math.prod(shape[b, c]) * n_d, "pair", (c, a, b, d)))
        if n_h:
            todo.append((math.prod(shape[d, c]) * n_h, "group", (c, d)))
        if n_c * n_d <= _MAX_BELIEF:
            todo.append((n_c * n_d, "bel", (c, d)))

    def _transfer_matrices(self) -> int:
        """Precompute transfer matrices, smallest first, within the budget; returns entries used."""
        self._pass: dict = {}     # (c, x, d): message x -> c to message c -> d
        self._leaf: dict = {}     # (c, u, d): node u observed at c (row = its state) to message c -> d
        self._passev: dict = {}   # (c, x, d, u): as pass, with u observed at c (first axis: its state)
        self._pair: dict = {}     # (c, a, b, d), a < b: message a -> c to a (S_b, S_cd) map of message b -> c
        self._group: dict = {}    # (c, x): message x -> c to P(v, e) of the nodes homed at c, concatenated
        self._sel: dict = {}      # c: belief of c, flattened, to the marginals of its homed nodes
        self._bel: dict = {}      # (c, d): belief of c, flattened, to the message c -> d
        make = {"pass": self._make_pass, "leaf": self._make_leaf, "passev": self._make_passev,
                "pair": self._make_pair, "group": self._make_group, "sel": self._make_sel, "bel": self._make_bel}
        used = 0
        for n, kind, key in sorted(self._transfer_candidates(), key=lambda t: t[0]):
            if n > _MAX_TRANSFER or used + n > self._budget:
                break
            used += n
            make[kind](key)
        return used

    def _make_pass(self, key) -> None:
        c, x, d = key
        self._pass[key] = self._matrix(c, d, self._sep[x, c], self._sep[c, d])

    def _make_leaf(self, key) -> None:
        c, u, d = key
        self._leaf[key] = self._matrix(c, d, (u,), self._sep[c, d])

    def _make_passev(self, key) -> None:
        c, x, d, u = key
        m = self._matrix(c, d, (u, *self._sep[x, c]), self._sep[c, d])
        self._passev[key] = m.reshape(self._card[u], -1, m.shape[1])    # (K_u, |S_x|, |S_cd|)

    def _make_pair(self, key) -> None:
        c, a, b, d = key
        sep = self._sep
        self._pair[key] = self._matrix(c, d, sep[a, c], (*sep[b, c], *sep[c, d]))

    def _make_group(self, key) -> None:
        c, x = key
        cols = [self._matrix(c, -1, self._sep[x, c], (v,)) for v in self._homed[c]]
        self._group[key] = np.ascontiguousarray(np.concatenate(cols, axis=1))   # (|S|, sum K)

    def _make_sel(self, c) -> None:
        V, card = self._vars, self._card
        idx = np.indices(self._beta[c].shape).reshape(len(V[c]), -1)   # (nodes, |C|)
        cols = [np.eye(card[v])[idx[V[c].index(v)]] for v in self._homed[c]]
        self._sel[c] = np.concatenate(cols, axis=1)                    # (|C|, sum K)

    def _make_bel(self, key) -> None:
        c, d = key
        V, card, beta = self._vars, self._card, self._beta
        idx = np.indices(beta[c].shape).reshape(len(V[c]), -1)         # (nodes, |C|)
        flat = np.zeros(beta[c].size, dtype=np.intp)
        for v in self._sep[c, d]:
            flat = flat * card[v] + idx[V[c].index(v)]                  # the separator state of each entry
        m = np.zeros((beta[c].size, math.prod(self._sep_shape[c, d])))   # (|C|, |S|)
        m[np.arange(beta[c].size), flat] = self._inv[c, d].reshape(-1)[flat]
        self._bel[key] = m

    def _likelihood_matrices(self, used: int) -> int:
        """``lam[u, c, d][x] = P(u = x | S_cd)`` for u on c's side (not in S_cd): the message c -> d
        when u is the only observed node behind it (a row, no arithmetic). Returns entries used."""
        self._lam: dict = {}
        nbr = self._nbr
        holds = [set(vs) for vs in self._vars]
        for u in range(len(self._card)):
            front = []
            for c in range(len(self._vars)):
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
        return used

    def _subtree_matrices(self, tree: CliqueTree) -> None:
        """The message p -> c to the unnormalized marginals of every node homed on c's side,
        with their positions in `marginals` (smaller sides first, within the budget)."""
        side: dict = {}
        for c in tree.post:                                             # cliques on each side of each edge
            p = tree.parent[c]
            if p >= 0:
                side[p, c] = 1 + sum(side[c, x] for x in tree.children[c])
        size_tree: dict = {}
        for c in range(len(self._vars)):
            size_tree[tree.tree[c]] = size_tree.get(tree.tree[c], 0) + 1
        for c in tree.pre:
            p = tree.parent[c]
            if p >= 0:
                side[c, p] = size_tree[tree.tree[c]] - side[p, c]
        self._sub: dict = {}
        used = 0
        for (p, c), _ in sorted(side.items(), key=lambda t: t[1]):
            got = self._subtree_matrix(p, c)
            if got is None:
                continue
            n = 0 if got[0] is None else got[0].size
            if used + n > self._budget:
                continue
            used += n
            self._sub[p, c] = got

    def _subtree_matrix(self, p: int, c: int):
        """The subtree matrix of edge p -> c, from its children's (None when one is missing)."""
        cols, idx = [], []
        if self._homed[c]:
            g = self._group.get((c, p))
            if g is None:
                return None
            cols.append(g)
            idx.append(np.arange(*self._span[c]))
        for d in self._nbr[c]:
            if d == p:
                continue
            sd, t = self._sub.get((c, d)), self._pass.get((c, p, d))
            if sd is None or t is None:
                return None
            if sd[0] is not None:
                cols.append(t @ sd[0])                                  # (|S_pc|, outputs on d's side)
                idx.append(sd[1])
        if not cols:
            return (None, None)
        return (np.ascontiguousarray(np.concatenate(cols, axis=1)), np.concatenate(idx))

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
        ops = list(tables)
        for m, sh in zip(msgs, shapes):
            ops.append(m.reshape(sh))
        card = self._card
        for u in evs:
            row = np.zeros(card[u])                                     # (K,): the point mass
            row[ev[u]] = 1.0
            ops.append(row)
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

        None when no clique holds every target, or ``P(e) < TINY`` (the
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
            if not zt >= TINY:
                return None
            z = zt * self._evidence_only(rest) if rest else zt
            probs = table / zt
        if not z >= TINY:
            return None
        return probs, math.log(z)

    def marginals(self, ev: dict):
        """Every node's posterior, concatenated, and ``log P(e)``; None if ``P(e) < TINY``.

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
            if not z >= TINY:
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
