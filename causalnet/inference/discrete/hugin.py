"""One Hugin propagation: every single-node posterior for one evidence, nothing precomputed.

Terms
-----
A junction tree (:mod:`causalnet.inference.discrete.cliques`) built without evidence
stays a junction tree when the observed nodes are struck out of every clique
(the running intersection property holds for the rest). :func:`propagate`
does exactly that: each CPT is *sliced* at the observed states (a numpy
index, so observed axes disappear), the slices assigned to a clique are
multiplied into its potential ``psi_c``, and one Hugin round computes the
beliefs:

* *collect* (children first): ``phi_c = psi_c * prod of the messages from
  its children``, and the message to the parent is ``phi_c`` summed to the
  separator (scaled by its sum, the log of the scale kept, so that nothing
  underflows);
* *distribute* (parents first): ``belief_c = phi_c * message from the
  parent``, where the parent's message is its belief summed to the separator
  divided by the message it received from c (0 where that is 0).

A node's posterior is its home clique's belief summed to it, normalized; the
probability of the evidence is the total of each tree's root belief times
the scales. Every contraction's operands are over subsets of one clique, so
each is one plain einsum over the clique's entries (no path search).

This is the right engine for a *first* all-marginals request, when nothing
has been compiled or calibrated yet: its cost is a few passes over the clique
tables. Repeated requests are cheaper from the calibrated prior tree
(:mod:`causalnet.inference.discrete.prior_tree`), whose setup costs many such passes.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.inference.discrete.network import DiscreteNetwork
>>> from causalnet.inference.discrete.cliques import build_clique_tree
>>> net = DiscreteNetwork(cn.DAG.parse("A -> B -> C"), {"A": [0.3, 0.7],
...     "B": [[0.9, 0.1], [0.2, 0.8]], "C": [[0.5, 0.5], [0.1, 0.9]]}, {"A": 2, "B": 2, "C": 2})
>>> post, log_e = propagate(net, build_clique_tree(net), {2: 1})    # P(. | C = 1)
>>> np.round(post[0], 4).tolist(), round(float(np.exp(log_e)), 4)
([0.2201, 0.7799], 0.736)
"""

from __future__ import annotations

import math

import numpy as np

from .cliques import CliqueTree
from .factors import contract
from .network import DiscreteNetwork
from .programs import TINY

__all__ = ["propagate"]


def propagate(net: DiscreteNetwork, tree: CliqueTree, ev: dict,
              cut: frozenset = frozenset()) -> tuple[list[np.ndarray], float] | None:
    """Every node's posterior given scalar evidence `ev` (node int -> state), and ``log P(e)``.

    `tree` must be built without evidence nodes. Returns a list indexed by
    node int (observed nodes get the point mass on their state), or None when
    ``P(e) < TINY`` (the caller's compiled engine then rescales, or raises).
    `cut`: intervened nodes (each also in `ev`, at its ``do`` value) whose CPTs
    are left out: the network under ``do`` (its graph has fewer edges, so the
    tree stays a junction tree of it); ``log P(e)`` is then of the evidence
    under the interventions.

    Notes
    -----
    Every array carries its labels: a potential is over the nodes its CPTs
    mention only (not the whole clique: a fill-in node is constant there), and
    so are the beliefs and messages made from it, so a clique whose table is
    large but whose factors are small never becomes a full table.
    """
    k = len(tree.vars)
    sep = [frozenset(v for v in s if v not in ev) for s in tree.sep]
    got = _potentials(net, tree, ev, cut)
    if got is None:
        return None
    psi, log_z = got
    parent, children = tree.parent, tree.children
    phi: list = [None] * k
    up: list = [None] * k
    log_k = [0.0] * k                                  # log of the scales in each clique's subtree
    for c in tree.post:                                # collect
        phi[c] = _product([psi[c]] + [up[x] for x in children[c]])
        log_k[c] += sum(log_k[x] for x in children[c])
        if parent[c] >= 0:
            m = _marginal(phi[c], sep[c])
            s = float(m[0].sum())
            if not s > 0:
                return None
            up[c] = (m[0] / s, m[1])
            log_k[c] += math.log(s)
        else:
            z = float(phi[c][0].sum())
            if not z >= TINY:
                return None
            log_z += math.log(z) + log_k[c]
    belief = list(phi)
    for c in tree.pre:                                 # distribute
        p = parent[c]
        if p >= 0:
            m, lab = _marginal(belief[p], sep[c])
            u, ulab = up[c]
            u = _align(u, ulab, lab)
            down = np.divide(m, u, out=np.zeros(np.broadcast_shapes(m.shape, u.shape)), where=u > 0)
            t = down.sum()
            if t > 0:
                down /= t                              # each belief up to its own scale: no underflow
            belief[c] = _product([phi[c], (down, lab)])
    return _posteriors(net, tree, ev, belief), log_z


def _product(ops: list) -> tuple[np.ndarray, tuple]:
    """The product of labelled arrays, over the union of their labels (one plain einsum)."""
    if len(ops) == 1:
        return ops[0]
    out = tuple(dict.fromkeys(v for _, lab in ops for v in lab))
    return contract([a for a, _ in ops], [lab for _, lab in ops], out, optimize=False), out


def _marginal(op: tuple, keep) -> tuple[np.ndarray, tuple]:
    """A labelled array summed to its labels in `keep`."""
    a, lab = op
    axes = tuple(i for i, v in enumerate(lab) if v not in keep)
    if not axes:
        return a, lab
    return a.sum(axis=axes), tuple(v for v in lab if v in keep)


def _align(a: np.ndarray, lab: tuple, to: tuple) -> np.ndarray:
    """`a` (labels `lab`, a subset of `to`) with axes permuted and expanded to broadcast over `to`."""
    if lab == to:
        return a
    order = sorted(range(len(lab)), key=lambda i: to.index(lab[i]))
    shape = [1] * len(to)
    for i in order:
        shape[to.index(lab[i])] = a.shape[i]
    return np.transpose(a, order).reshape(shape)


def _potentials(net: DiscreteNetwork, tree: CliqueTree, ev: dict, cut: frozenset):
    """Each clique's potential (its CPTs but those of `cut`, sliced at the evidence, multiplied;
    labelled) and the log of the CPTs left as numbers; None when such a number is zero."""
    ops: list[list] = [[] for _ in tree.vars]
    log_scalar = 0.0
    for v, c in tree.assign:
        if v in cut:
            continue
        fam = net.family[v]
        t = net.cpt_list[v]
        if any(u in ev for u in fam):
            t = t[tuple(ev[u] if u in ev else slice(None) for u in fam)]
            fam = tuple(u for u in fam if u not in ev)
        if not fam:
            x = float(t)
            if not x > 0:
                return None
            log_scalar += math.log(x)
            continue
        ops[c].append((t, fam))
    psi = [_product(o) if o else (np.ones(()), ()) for o in ops]
    return psi, log_scalar


def _posteriors(net: DiscreteNetwork, tree: CliqueTree, ev: dict, belief: list) -> list:
    card = net.card
    out: list = [None] * len(card)
    for v in range(len(card)):
        if v in ev:
            p = np.zeros(card[v])
            p[ev[v]] = 1.0
        else:
            a, lab = belief[tree.home[v]]
            if v in lab:
                i = lab.index(v)
                p = a.sum(axis=tuple(j for j in range(a.ndim) if j != i)) if a.ndim > 1 else a
                p = p / p.sum()
            else:                                      # constant along v there
                p = np.full(card[v], 1.0 / card[v])
        out[v] = p
    return out
