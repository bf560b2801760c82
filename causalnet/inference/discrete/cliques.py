"""Clique trees: the structure of a junction tree, built from an elimination order.

Terms
-----
Eliminating the variables of a network in some order creates, at each step,
a *clique* (the variable and its neighbours at that moment). Those cliques,
joined by the *elimination tree* (each clique to the clique of the first of its
other variables to be eliminated later), form a *junction tree*: every variable
shared by two cliques is in every clique on the path between them (the running
intersection property). Cliques contained in a neighbour are merged into it.
Each CPT is *assigned* to a clique holding its family; each variable has a
*home*, the smallest clique holding it.

:func:`build_clique_tree` does this in named steps and returns a
:class:`CliqueTree` (plain data) that junction-tree calibration
(:mod:`causalnet.inference.discrete.junction_tree`) and the calibrated prior tree
(:mod:`causalnet.inference.discrete.prior_tree`) share. It checks the largest clique
against ``limits.get("max_table_bytes")`` before any table exists.

Examples
--------
>>> import causalnet as cn
>>> from causalnet.inference.discrete.network import DiscreteNetwork
>>> net = DiscreteNetwork(cn.DAG.parse("A -> B -> C"), {"A": [0.3, 0.7],
...     "B": [[0.9, 0.1], [0.2, 0.8]], "C": [[0.5, 0.5], [0.1, 0.9]]}, {"A": 2, "B": 2, "C": 2})
>>> tree = build_clique_tree(net)
>>> tree.vars, tree.parent
([(0, 1), (1, 2)], [1, -1])
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .network import DiscreteNetwork
from .ordering import TableTooLarge, check_clique_bytes, greedy_order, table_entry_limit

__all__ = ["CliqueTree", "build_clique_tree"]


class CliqueTree:
    """A junction tree's structure (node ints; cliques indexed 0..k-1).

    Attributes
    ----------
    vars : list of tuple
        Each clique's nodes, sorted.
    parent : list of int
        Parent clique (-1 at a root; the tree may be a forest).
    children : list of list of int
    sep : list of tuple
        Nodes shared with the parent (``()`` at a root).
    pre, post : list of int
        Cliques in pre-order (parents first) and post-order (children first).
    tree : list of int
        Index of the tree (of the forest) holding each clique.
    n_trees : int
    assign : list of (int, int)
        ``(node, clique)``: the clique each CPT with a free variable is assigned to.
    scalars : list of int
        Nodes whose whole family is evidence (their CPT is a number).
    size : list of int
        Entries of each clique's table.
    home : dict
        Free node -> the smallest clique holding it.
    evidence : frozenset
        The nodes left out (always observed).
    """

    __slots__ = ("vars", "parent", "children", "sep", "pre", "post", "tree", "n_trees",
                 "assign", "scalars", "size", "home", "evidence")


def _elimination_tree(raw: list) -> tuple[list, list, list]:
    """Cliques of an elimination (``(v, neighbours)`` in order), each linked to the clique of the
    first of its other nodes eliminated later; returns cliques, parents, children."""
    pos = {v: i for i, (v, _) in enumerate(raw)}
    cl = [frozenset({v, *nb}) for v, nb in raw]
    parent = [min((pos[u] for u in nb), default=-1) for _, nb in raw]
    children: list[list[int]] = [[] for _ in raw]
    for i, p in enumerate(parent):
        if p >= 0:
            children[p].append(i)
    return cl, parent, children


def _merge_contained(cl: list, parent: list, children: list) -> list[int]:
    """Merge each clique contained in one of its children into that child (lists mutated).

    Returns ``rep``: each clique's replacement (itself when kept; follow the chain).
    """
    rep = list(range(len(cl)))
    for j in range(len(cl)):
        i = next((i for i in children[j] if cl[j] <= cl[i]), -1)
        if i < 0:
            continue
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
    return rep


def _traversal(t: CliqueTree) -> None:
    """Pre-/post-order and the tree of each clique."""
    k = len(t.vars)
    roots = [c for c in range(k) if t.parent[c] < 0]
    pre: list[int] = []
    tree = [0] * k
    for i, r in enumerate(roots):
        stack = [r]
        while stack:
            c = stack.pop()
            pre.append(c)
            tree[c] = i
            stack.extend(t.children[c])
    t.pre, t.post, t.tree, t.n_trees = pre, pre[::-1], tree, len(roots)


def _assign(t: CliqueTree, net: DiscreteNetwork, fam_free: dict, first_clique) -> None:
    """Assign each CPT to the clique of its family's first-eliminated free node; homes."""
    t.assign, t.scalars = [], []
    for v in range(len(net.card)):
        ff = fam_free[v]
        if ff:
            t.assign.append((v, first_clique(ff)))
        else:
            t.scalars.append(v)
    t.home = {}
    for c in sorted(range(len(t.vars)), key=t.size.__getitem__):
        for v in t.vars[c]:
            t.home.setdefault(v, c)


def build_clique_tree(net: DiscreteNetwork, evidence: Iterable[int] = (), *,
                      order: str = "weighted-min-fill") -> CliqueTree:
    """The clique tree of `net` with the nodes `evidence` (ints) left out.

    Raises
    ------
    GraphError
        On an unknown `order` method.
    ResourceError
        If the largest clique table exceeds ``limits.get("max_table_bytes")``.
    """
    card = net.card
    S = frozenset(evidence)
    fam_free, adj = net.reduced(range(len(card)), S)
    raw: list = []
    what = "a junction-tree clique table"
    try:
        greedy_order(adj, card, [v for v in range(len(card)) if v not in S], order, net.rank, raw,
                     max_entries=table_entry_limit())
    except TableTooLarge as big:
        check_clique_bytes([big.clique], card, net.nodes, what=what)
    check_clique_bytes(({v, *nb} for v, nb in raw), card, net.nodes, what=what)
    cl, parent, children = _elimination_tree(raw)
    rep = _merge_contained(cl, parent, children)
    keep = [i for i in range(len(cl)) if rep[i] == i]
    new = {old: k for k, old in enumerate(keep)}
    t = CliqueTree()
    t.evidence = S
    t.vars = [tuple(sorted(cl[i])) for i in keep]
    t.parent = [new[parent[i]] if parent[i] >= 0 else -1 for i in keep]
    t.children = [[] for _ in keep]
    for c, p in enumerate(t.parent):
        if p >= 0:
            t.children[p].append(c)
    t.sep = [tuple(v for v in t.vars[c] if v in set(t.vars[p])) if p >= 0 else ()
             for c, p in enumerate(t.parent)]
    t.size = [math.prod(card[v] for v in vs) for vs in t.vars]
    _traversal(t)
    pos = {v: i for i, (v, _) in enumerate(raw)}

    def first_clique(ff):
        i = pos[min(ff, key=pos.__getitem__)]
        while rep[i] != i:
            i = rep[i]
        return new[i]

    _assign(t, net, fam_free, first_clique)
    return t
