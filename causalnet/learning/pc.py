"""The PC algorithm: a skeleton from conditional independence tests, then orientation to a CPDAG.

**Skeleton** (Spirtes, Glymour & Scheines 2000; the order-independent
"stable" variant of Colombo & Maathuis 2014): start from the complete graph;
at level ``ℓ = 0, 1, …`` test every remaining edge ``x — y`` given every
subset ``S`` of size ℓ of x's neighbours *as they were at the start of the
level* (so the result does not depend on the column order), and remove the
edge at the first ``p > alpha``; ``S`` becomes the separating set of x, y.

**Orientation**: every unshielded triple ``x — z — y`` (x, y non-adjacent)
with ``z ∉ S(x, y)`` is a v-structure ``x → z ← y``. With finite data the
v-structures can contradict each other; the first one oriented keeps its
edges (causal-learn's "prioritise existing colliders" rule), and no
orientation that would close a directed cycle is ever made. Meek's rules
R1–R4 (Meek 1995) then orient what the v-structures imply, again never
closing a cycle. With a perfect test (d-separation in a DAG) the result is
exactly the DAG's CPDAG.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence

from ..graph.equivalence import PDAG
from .citests import CITest

__all__ = ["PC", "orient_pattern"]


class PC:
    """The PC-stable algorithm: skeleton by conditional independence tests, then orientation.

    Parameters
    ----------
    test : CITest
    alpha : float
        Significance level: ``p > alpha`` removes an edge.
    max_cond_vars : int
        The largest conditioning set tried.
    """

    def __init__(self, test: CITest, *, alpha: float = 0.05, max_cond_vars: int = 5) -> None:
        self.test = test
        self.alpha = alpha
        self.max_cond_vars = max_cond_vars

    def skeleton(self, nodes: Sequence[Hashable], bar, fixed_adj: frozenset = frozenset(),
                 forbidden: frozenset = frozenset()) -> tuple[dict, dict]:
        """``(adj, sepsets)``: neighbour sets and the separating set of each removed pair."""
        nodes = list(nodes)
        pos = {v: i for i, v in enumerate(nodes)}
        adj = {v: {u for u in nodes if u != v and frozenset((u, v)) not in forbidden} for v in nodes}
        sepsets: dict = {frozenset(e): set() for e in forbidden}
        for level in range(self.max_cond_vars + 1):
            frozen = {v: sorted(a, key=pos.__getitem__) for v, a in adj.items()}   # PC-stable: fixed per level
            if not any(len(a) - 1 >= level for a in frozen.values()):
                break
            for x in nodes:
                for y in frozen[x]:
                    if y not in adj[x] or frozenset((x, y)) in fixed_adj:
                        continue
                    sep = self._separate(x, y, [u for u in frozen[x] if u != y], level)
                    if sep is not None:
                        adj[x].discard(y)
                        adj[y].discard(x)
                        sepsets[frozenset((x, y))] = set(sep)
            bar.update(1)
        return adj, sepsets

    def _separate(self, x, y, candidates: list, level: int) -> set | None:
        """The union of every size-`level` subset of `candidates` that separates x and y (None: none does)."""
        found = None
        for s in itertools.combinations(candidates, level):
            if self.test.pvalue(x, y, s) > self.alpha:
                found = set(s) if found is None else found | set(s)
        return found

    def orient(self, nodes: Sequence[Hashable], adj: dict, sepsets: dict,
               fixed: frozenset = frozenset()) -> PDAG:
        """The PDAG of the skeleton `adj`: v-structures from `sepsets`, then Meek's rules."""
        return orient_pattern(nodes, adj, sepsets, fixed)


def _reaches(children: dict, a, b) -> bool:
    """A directed path a ~> b."""
    seen, stack = {a}, [a]
    while stack:
        for c in children[stack.pop()]:
            if c == b:
                return True
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return False


class _Pattern:
    """A partially directed graph under construction: parents, children, undirected neighbours."""

    def __init__(self, nodes, adj: dict) -> None:
        self.nodes = list(nodes)
        self.pos = {v: i for i, v in enumerate(self.nodes)}
        self.adj = adj
        self.pa = {v: set() for v in self.nodes}
        self.ch = {v: set() for v in self.nodes}
        self.und = {v: set(adj[v]) for v in self.nodes}

    def can_orient(self, a, b) -> bool:
        """a — b may become a → b: undirected or already so, and no cycle b ~> a."""
        return b in self.ch[a] or (b in self.und[a] and not _reaches(self.ch, b, a))

    def orient(self, a, b) -> None:
        self.und[a].discard(b)
        self.und[b].discard(a)
        self.pa[b].add(a)
        self.ch[a].add(b)

    def meek_edge(self, a, b) -> bool:
        """Does one of Meek's rules R1–R4 orient the undirected edge a — b as a → b?"""
        adj = self.adj
        if any(c not in adj[b] for c in self.pa[a]):                                          # R1
            return True
        if self.ch[a] & self.pa[b]:                                                            # R2
            return True
        cs = sorted(self.und[a] & self.pa[b], key=self.pos.__getitem__)                        # R3
        if any(c2 not in adj[c1] for c1, c2 in itertools.combinations(cs, 2)):
            return True
        for d in self.pa[b]:                                                                   # R4
            if d in adj[a] and any(c in adj[a] and c not in adj[b] for c in self.pa[d]):
                return True
        return False

    def meek(self) -> None:
        changed = True
        while changed:
            changed = False
            for a in self.nodes:
                for b in sorted(self.und[a], key=self.pos.__getitem__):
                    if b in self.und[a] and self.meek_edge(a, b) and self.can_orient(a, b):
                        self.orient(a, b)
                        changed = True

    def pdag(self) -> PDAG:
        d = [(a, b) for a in self.nodes for b in self.ch[a]]
        u = [(a, b) for a in self.nodes for b in self.und[a] if self.pos[a] < self.pos[b]]
        return PDAG(d, u, nodes=self.nodes)


def orient_pattern(nodes: Sequence[Hashable], adj: dict, sepsets: dict, fixed: frozenset = frozenset()) -> PDAG:
    """Orient a skeleton: `fixed` edges, v-structures ``x → z ← y`` with ``z ∉ sepsets[{x, y}]``, Meek R1–R4.

    Conflicting v-structures: the first one (by node order) keeps its edges; an
    orientation that would close a directed cycle is not made.
    """
    g = _Pattern(nodes, adj)
    for a, b in sorted(fixed, key=lambda e: (g.pos[e[0]], g.pos[e[1]])):
        if b in g.und[a] and g.can_orient(a, b):
            g.orient(a, b)
    for z in g.nodes:
        for x, y in itertools.combinations(sorted(adj[z], key=g.pos.__getitem__), 2):
            if y in adj[x] or z in sepsets.get(frozenset((x, y)), ()):
                continue
            if z in g.pa[x] or z in g.pa[y]:                     # an existing collider claims the edge
                continue
            if g.can_orient(x, z) and g.can_orient(y, z):       # both point into z: checked apart
                g.orient(x, z)
                g.orient(y, z)
    g.meek()
    return g.pdag()
