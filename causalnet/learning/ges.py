"""Greedy equivalence search (GES; Chickering 2002): score-based search over CPDAGs.

GES moves between Markov equivalence classes, each drawn as its CPDAG, with
a decomposable, score-equivalent score (BIC for discrete data, ``"bic-g"``
for linear Gaussian data; every :class:`~causalnet.learning.scores.Score`
caches its local scores).

- **Forward phase**: apply the best ``Insert(x, y, T)`` until none improves.
  For non-adjacent x, y and ``T`` ⊆ the undirected neighbours of y not
  adjacent to x, the operator adds ``x → y`` and orients ``t → y`` for t ∈ T.
  It is valid when ``NA(y, x) ∪ T`` is a clique (``NA(y, x)``: undirected
  neighbours of y adjacent to x) and every semi-directed path from y to x
  meets that set. Its gain is ``s(y, NA ∪ T ∪ Pa(y) ∪ {x}) − s(y, NA ∪ T ∪ Pa(y))``.
- **Backward phase**: apply the best ``Delete(x, y, H)`` until none improves.
  For adjacent x, y (``x — y`` or ``x → y``) and ``H`` ⊆ ``NA(y, x)``, it
  removes the edge and orients ``y → h`` and ``x → h`` for h ∈ H. It is valid
  when ``NA(y, x) \\ H`` is a clique; its gain is
  ``s(y, (NA \\ H) ∪ Pa(y) \\ {x}) − s(y, (NA \\ H) ∪ Pa(y) ∪ {x})``.

After each operator the PDAG is completed again (a consistent DAG extension,
then its CPDAG). Candidates are ranked by gain first and only the best are
checked for validity, so the path searches stay few.

References
----------
.. [1] D. M. Chickering, "Optimal structure identification with greedy
   search", JMLR 3, 2002.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterator, Sequence

from ..graph.equivalence import PDAG, cpdag
from .scores import Score

__all__ = ["GES"]


class _State:
    """A CPDAG as parent, child and undirected-neighbour sets."""

    def __init__(self, pdag: PDAG) -> None:
        self.pdag = pdag
        self.nodes = list(pdag.nodes)
        self.pos = {v: i for i, v in enumerate(self.nodes)}
        self.pa = {v: set() for v in self.nodes}
        self.ch = {v: set() for v in self.nodes}
        self.und = {v: set() for v in self.nodes}
        for a, b in pdag.directed_edges:
            self.pa[b].add(a)
            self.ch[a].add(b)
        for a, b in pdag.undirected_edges:
            self.und[a].add(b)
            self.und[b].add(a)
        self.adj = {v: self.pa[v] | self.ch[v] | self.und[v] for v in self.nodes}   # read-only from here on

    def adjacent(self, a, b) -> bool:
        return b in self.adj[a]

    def is_clique(self, nodes: Sequence) -> bool:
        return all(self.adjacent(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:])

    def blocks_paths(self, y, x, blockers: set) -> bool:
        """Every semi-directed path y ~> x passes through `blockers`."""
        seen, stack = {y}, [y]
        while stack:
            v = stack.pop()
            for c in self.ch[v] | self.und[v]:
                if c == x:
                    return False
                if c not in seen and c not in blockers:
                    seen.add(c)
                    stack.append(c)
        return True

    def sorted(self, nodes) -> list:
        return sorted(nodes, key=self.pos.__getitem__)


def _cliques(state: _State, base: list, candidates: list) -> Iterator[list]:
    """Every T ⊆ candidates such that base ∪ T is a clique (base is one)."""
    yield []
    for i, t in enumerate(candidates):
        if all(state.adjacent(t, b) for b in base):
            for rest in _cliques(state, [*base, t], candidates[i + 1:]):
                yield [t, *rest]


def _complete(nodes, directed, undirected, dag_class) -> PDAG:
    """The CPDAG of the class a PDAG stands for (a consistent extension, then its CPDAG)."""
    return cpdag(PDAG(directed, undirected, nodes=nodes, dag_class=dag_class).to_dag())


class GES:
    """Greedy equivalence search with a decomposable, score-equivalent :class:`Score`.

    Parameters
    ----------
    score : Score
    max_indegree : int, optional
        No insertion gives a node more than this many parents in the chosen extension.
    forbidden : frozenset of (u, v)
        Insertions ``u → v`` never made.
    epsilon : float
        The smallest gain that counts as an improvement.
    """

    def __init__(self, score: Score, *, max_indegree: int | None = None, forbidden: frozenset = frozenset(),
                 epsilon: float = 1e-9) -> None:
        self.score = score
        self.max_indegree = max_indegree
        self.forbidden = forbidden
        self.epsilon = epsilon
        self.steps = 0

    def run(self, nodes: Sequence[Hashable], bar=None, start: PDAG | None = None) -> PDAG:
        """The CPDAG at the end of the forward and backward phases."""
        pdag = start if start is not None else PDAG(nodes=list(nodes))
        for phase in (self._inserts, self._deletes):
            while True:
                best = self._best(_State(pdag), phase)
                if best is None:
                    break
                pdag = best
                self.steps += 1
                if bar is not None:
                    bar.update(1)
        return pdag

    def _best(self, state: _State, phase) -> PDAG | None:
        cands = sorted(phase(state), key=lambda c: -c[0])
        for gain, valid, apply in cands:
            if gain <= self.epsilon:
                return None
            if valid():
                return apply()
        return None

    def _inserts(self, state: _State):
        local = self.score.local
        for y in state.nodes:
            pa_y = state.pa[y]
            for x in state.nodes:
                if x == y or state.adjacent(x, y) or (x, y) in self.forbidden:
                    continue
                na = state.sorted(v for v in state.und[y] if state.adjacent(v, x))
                if not state.is_clique(na):
                    continue
                t0 = state.sorted(v for v in state.und[y] if not state.adjacent(v, x))
                for t in _cliques(state, na, t0):
                    base = pa_y | set(na) | set(t)
                    if self.max_indegree is not None and len(base) + 1 > self.max_indegree:
                        continue
                    gain = local(y, base | {x}) - local(y, base)
                    if gain > self.epsilon:                       # only improving operators are ranked
                        yield gain, self._insert_valid(state, x, y, set(na) | set(t)), self._insert(state, x, y, t)

    def _insert_valid(self, state, x, y, blockers):
        return lambda: state.blocks_paths(y, x, blockers)

    def _insert(self, state: _State, x, y, t):
        def apply() -> PDAG:
            directed = [*state.pdag.directed_edges, (x, y), *((v, y) for v in t)]
            undirected = [e for e in state.pdag.undirected_edges if not (y in e and (set(e) - {y}) & set(t))]
            return _complete(state.nodes, directed, undirected, state.pdag.dag_class)
        return apply

    def _deletes(self, state: _State):
        local = self.score.local
        for y in state.nodes:
            pa_y = state.pa[y]
            for x in state.sorted(pa_y | state.und[y]):
                na = state.sorted(v for v in state.und[y] if state.adjacent(v, x))
                for k in range(len(na) + 1):
                    for h in itertools.combinations(na, k):
                        rest = [v for v in na if v not in h]
                        if not state.is_clique(rest):
                            continue
                        base = (pa_y | set(rest)) - {x}
                        gain = local(y, base) - local(y, base | {x})
                        if gain > self.epsilon:
                            yield gain, (lambda: True), self._delete(state, x, y, h)

    def _delete(self, state: _State, x, y, h):
        def apply() -> PDAG:
            pair = frozenset((x, y))
            turned = {frozenset((y, v)) for v in h} | {frozenset((x, v)) for v in h if v in state.und[x]}
            directed = [e for e in state.pdag.directed_edges if frozenset(e) != pair]
            directed += [(y, v) for v in h] + [(x, v) for v in h if v in state.und[x]]
            undirected = [e for e in state.pdag.undirected_edges if frozenset(e) != pair and frozenset(e) not in turned]
            return _complete(state.nodes, directed, undirected, state.pdag.dag_class)
        return apply

