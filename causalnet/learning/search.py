"""Score-based structure search: greedy moves over DAGs with a decomposable score.

:class:`HillClimb` and :class:`Tabu` start from a DAG (empty by default) and
repeatedly apply the best single-edge change — add, remove or reverse — that
keeps the graph acyclic and within the constraints (``max_indegree``,
``black_list``, ``white_list``, ``fixed_edges``). The score is decomposable,
so the gain of a change is a difference of one or two local scores, and the
:class:`~causalnet.learning.scores.Score` caches every local score: after a
move only the changed families are ever rescored. Hill climbing stops at the
first local optimum; tabu search keeps moving (never undoing one of its last
``tabu_length`` moves) for ``patience`` non-improving steps and returns the
best DAG seen. Either may **restart** (bnlearn's ``restart`` / ``perturb``):
from the best DAG so far, apply ``perturb`` random legal moves and climb
again, ``restarts`` times, keeping the best-scoring DAG — a way out of the
local optima that greedy moves cannot leave (e.g. a real–real edge oriented
the wrong way before the discrete parents that modify it were added, in a
conditional Gaussian search).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..graph.dag import DAG
from .scores import Score

__all__ = ["DAGSearch", "HillClimb", "Tabu"]


class DAGSearch:
    """The current DAG as parent sets plus a reachability test, with the constraints."""

    def __init__(self, nodes, start: DAG, *, max_indegree, black, white, fixed) -> None:
        self.nodes = list(nodes)
        self.parents = {v: set(start.parents(v)) if v in start else set() for v in self.nodes}
        self.max_indegree = max_indegree
        self.black, self.white, self.fixed = black, white, fixed

    def children(self):
        ch = {v: set() for v in self.nodes}
        for v, ps in self.parents.items():
            for p in ps:
                ch[p].add(v)
        return ch

    def reach(self) -> dict:
        """``reach[u]``: the nodes reachable from u by a directed path (u included)."""
        ch = self.children()
        out = {}
        for u in self.nodes:
            seen, stack = {u}, [u]
            while stack:
                for c in ch[stack.pop()]:
                    if c not in seen:
                        seen.add(c)
                        stack.append(c)
            out[u] = seen
        return out

    def may_add(self, u, v) -> bool:
        return ((u, v) not in self.black and (not self.white or (u, v) in self.white)
                and (self.max_indegree is None or len(self.parents[v]) < self.max_indegree))

    def moves(self) -> Iterable[tuple]:
        """Legal moves ``(kind, u, v)`` on the current DAG."""
        reach = self.reach()
        ch = self.children()
        for u in self.nodes:
            for v in self.nodes:
                if u == v:
                    continue
                if u in self.parents[v]:
                    if (u, v) in self.fixed:
                        continue
                    yield ("remove", u, v)
                    # reversal is acyclic iff no other path u ~> v
                    if self.may_add(v, u) and not any(c != v and v in reach[c] for c in ch[u]):
                        yield ("reverse", u, v)
                elif v not in self.parents[u] and u not in reach[v] and self.may_add(u, v):
                    yield ("add", u, v)

    def gain(self, score: Score, move) -> float:
        kind, u, v = move
        pv = self.parents[v]
        if kind == "add":
            return score.local(v, pv | {u}) - score.local(v, pv)
        if kind == "remove":
            return score.local(v, pv - {u}) - score.local(v, pv)
        pu = self.parents[u]
        return (score.local(v, pv - {u}) - score.local(v, pv)) + (score.local(u, pu | {v}) - score.local(u, pu))

    def apply(self, move) -> None:
        kind, u, v = move
        if kind == "add":
            self.parents[v].add(u)
        elif kind == "remove":
            self.parents[v].discard(u)
        else:
            self.parents[v].discard(u)
            self.parents[u].add(v)

    def dag(self) -> DAG:
        return DAG([(p, v) for v in self.nodes for p in sorted(self.parents[v], key=self.nodes.index)],
                   nodes=self.nodes)


def _inverse(move) -> tuple:
    kind, u, v = move
    return {"add": ("remove", u, v), "remove": ("add", u, v), "reverse": ("reverse", v, u)}[kind]


class HillClimb:
    """Greedy hill climbing: the best improving move until none improves by more than `epsilon`."""

    tabu_length = 0
    patience = 0

    def __init__(self, score: Score, *, epsilon: float = 1e-4, max_iter: int = 1_000_000) -> None:
        self.score = score
        self.epsilon = epsilon
        self.max_iter = max_iter

    def run(self, search: DAGSearch, bar) -> DAG:
        tabu: list = []
        best_dag, best_total, total, stale = search.dag(), 0.0, 0.0, 0
        for _ in range(self.max_iter):
            scored = [(self.score_move(search, m), m) for m in search.moves() if m not in tabu]
            if not scored:
                break
            gain, move = max(scored, key=lambda t: t[0])
            if gain <= self.epsilon:
                stale += 1
                if stale > self.patience:
                    break
            search.apply(move)
            total += gain
            bar.update(1)
            if self.tabu_length:
                tabu = (tabu + [_inverse(move)])[-self.tabu_length:]
            if total > best_total + self.epsilon or (gain > self.epsilon and best_total == total - gain):
                best_dag, best_total, stale = search.dag(), total, 0
        return best_dag if self.patience else search.dag()

    def climb(self, make_search, start: DAG, bar, *, restarts: int = 0, perturb: int = 1, rng=None) -> DAG:
        """:meth:`run` from `start`, then `restarts` perturbed restarts; the best-scoring DAG.

        ``make_search(dag)`` builds a :class:`DAGSearch` (with the constraints) starting at `dag`; each
        restart applies `perturb` legal moves drawn by `rng` to the best DAG so far, then climbs.
        """
        best = self.run(make_search(start), bar)
        best_total = self.score.total(best)
        for _ in range(restarts):
            search = make_search(best)
            for _ in range(perturb):
                moves = list(search.moves())
                if not moves:
                    break
                search.apply(moves[int(rng.integers(len(moves)))])
            dag = self.run(search, bar)
            total = self.score.total(dag)
            if total > best_total + self.epsilon:
                best, best_total = dag, total
        return best

    def score_move(self, search: DAGSearch, move) -> float:
        return search.gain(self.score, move)


class Tabu(HillClimb):
    """Tabu search: also non-improving moves, never undoing one of the last `tabu_length` moves."""

    def __init__(self, score: Score, *, epsilon: float = 1e-4, max_iter: int = 1_000_000, tabu_length: int = 100,
                 patience: int = 10) -> None:
        super().__init__(score, epsilon=epsilon, max_iter=max_iter)
        self.tabu_length = tabu_length
        self.patience = patience
