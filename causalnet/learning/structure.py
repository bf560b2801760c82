"""Structure learning: greedy search over DAGs with a decomposable score, and the PC algorithm.

**Score-based search** (:class:`HillClimb`, :class:`Tabu`) starts from a DAG
(empty by default) and repeatedly applies the best single-edge change — add,
remove or reverse — that keeps the graph acyclic and within the constraints
(``max_indegree``, ``black_list``, ``white_list``, ``fixed_edges``). The score
is decomposable, so the gain of a change is a difference of one or two local
scores, and the :class:`~causalnet.learning.scores.Score` caches every local
score: after a move only the changed families are ever rescored. Hill climbing
stops at the first local optimum; tabu search keeps moving (never undoing one
of its last ``tabu_length`` moves) for ``patience`` non-improving steps and
returns the best DAG seen.

**PC** (Spirtes, Glymour & Scheines; the order-independent "stable" variant of
Colombo & Maathuis 2014) removes the edge ``x — y`` as soon as a conditional
independence test accepts ``x ⫫ y | S`` for some ``S`` among the neighbours,
growing ``|S|`` level by level; then orients v-structures ``x → z ← y`` with
``z ∉ S(x, y)`` and propagates with Meek's rules. It returns a
:class:`~causalnet.graph.equivalence.PDAG`. Tests: ``"chi2"`` (Pearson) and
``"g2"`` (likelihood ratio) for discrete data, summed over the strata of
``S``; ``"fisher_z"`` (partial correlation) for continuous data.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from math import log, sqrt
from typing import Any

import numpy as np
from scipy import stats
from tqdm.auto import tqdm

from ..errors import GraphError, ModelError
from ..graph.dag import DAG
from ..graph.equivalence import PDAG, meek_closure
from .data import Table, as_table, family_counts
from .problem import as_dag
from .scores import Score, make_score

__all__ = ["learn_structure", "HillClimb", "Tabu", "PC", "CITest", "ChiSquare", "GSquare", "FisherZ", "TESTS"]


# -- constraints and the search state ---------------------------------------------------------


def _edge_set(edges, nodes, what: str) -> frozenset:
    out = set()
    for e in edges or ():
        try:
            a, b = e
        except (TypeError, ValueError):
            raise GraphError(f"{what}: {e!r} is not a (parent, child) pair") from None
        for v in (a, b):
            if v not in nodes:
                raise GraphError(f"{what} names {v!r}, which is not a column of the data; columns: {list(nodes)}")
        out.add((a, b))
    return frozenset(out)


class _Search:
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

    def run(self, search: _Search, bar) -> DAG:
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

    def score_move(self, search: _Search, move) -> float:
        return search.gain(self.score, move)


class Tabu(HillClimb):
    """Tabu search: also non-improving moves, never undoing one of the last `tabu_length` moves."""

    def __init__(self, score: Score, *, epsilon: float = 1e-4, max_iter: int = 1_000_000, tabu_length: int = 100,
                 patience: int = 10) -> None:
        super().__init__(score, epsilon=epsilon, max_iter=max_iter)
        self.tabu_length = tabu_length
        self.patience = patience


# -- conditional independence tests and PC ----------------------------------------------------


class CITest:
    """A conditional independence test: :meth:`pvalue` of ``x ⫫ y | S``."""

    name = "test"
    discrete = True

    def __init__(self, table: Table) -> None:
        self.table = table
        self.calls = 0

    def pvalue(self, x, y, given: tuple) -> float:
        raise NotImplementedError


class ChiSquare(CITest):
    """Pearson's χ² summed over the strata of S that have no empty row or column (pgmpy's rule).

    Without S, the table's empty rows and columns are dropped (as a crosstab does). No usable
    stratum means no evidence of dependence: p = 1.
    """

    name = "chi2"

    def statistic(self, obs: np.ndarray, exp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(exp > 0, (obs - exp) ** 2 / np.where(exp > 0, exp, 1.0), 0.0)

    def pvalue(self, x, y, given):
        self.calls += 1
        c = family_counts(self.table, y, (*given, x)).astype(np.float64)             # (*S cards, Kx, Ky)
        c = c.reshape(-1, c.shape[-2], c.shape[-1])                                  # (q, Kx, Ky)
        nx_, ny_ = c.sum(axis=2), c.sum(axis=1)                                      # (q, Kx), (q, Ky)
        if given:   # strata with an empty row or column carry no usable evidence (as pgmpy); skip them
            full = (nx_ > 0).all(axis=1) & (ny_ > 0).all(axis=1)                     # (q,)
            c, nx_, ny_ = c[full], nx_[full], ny_[full]
        n = nx_.sum(axis=1)                                                          # (q,)
        exp = nx_[:, :, None] * ny_[:, None, :] / np.where(n > 0, n, 1.0)[:, None, None]
        stat = float(self.statistic(c, exp).sum())
        dof = int(np.sum(np.maximum((np.count_nonzero(nx_, axis=1) - 1) * (np.count_nonzero(ny_, axis=1) - 1), 0)))
        return 1.0 if dof == 0 else float(stats.chi2.sf(stat, dof))


class GSquare(ChiSquare):
    """The likelihood-ratio G² = 2 Σ O log(O / E), strata and degrees of freedom as :class:`ChiSquare`."""

    name = "g2"

    def statistic(self, obs, exp):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(obs > 0, 2.0 * obs * np.log(np.where(obs > 0, obs, 1.0) / np.where(exp > 0, exp, 1.0)),
                            0.0)


class FisherZ(CITest):
    """Fisher's z on the partial correlation (from the inverse of the correlation submatrix)."""

    name = "fisher_z"
    discrete = False

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self.names = list(table.names)
        x = np.column_stack([table.column(v).values for v in self.names])             # (n, V)
        self.corr = np.corrcoef(x, rowvar=False)                                     # (V, V)

    def pvalue(self, x, y, given):
        self.calls += 1
        idx = [self.names.index(v) for v in (x, y, *given)]
        sub = self.corr[np.ix_(idx, idx)]
        prec = np.linalg.pinv(sub)
        r = -prec[0, 1] / sqrt(prec[0, 0] * prec[1, 1]) if prec[0, 0] * prec[1, 1] > 0 else 0.0
        r = min(max(r, -1 + 1e-12), 1 - 1e-12)
        dof = self.table.n - len(given) - 3
        if dof <= 0:
            return 1.0
        z = 0.5 * log((1 + r) / (1 - r)) * sqrt(dof)
        return float(2 * stats.norm.sf(abs(z)))


TESTS = {"chi2": ChiSquare, "g2": GSquare, "fisher_z": FisherZ}


class PC:
    """The PC-stable algorithm: skeleton by conditional independence tests, then orientation."""

    def __init__(self, test: CITest, *, alpha: float = 0.05, max_cond_vars: int = 5) -> None:
        self.test = test
        self.alpha = alpha
        self.max_cond_vars = max_cond_vars

    def skeleton(self, nodes, bar, fixed_adj: frozenset = frozenset()) -> tuple[dict, dict]:
        adj = {v: set(nodes) - {v} for v in nodes}
        sepsets: dict = {}
        for level in range(self.max_cond_vars + 1):
            frozen = {v: set(a) for v, a in adj.items()}                            # PC-stable: fixed per level
            if not any(len(a) - 1 >= level for a in frozen.values()):
                break
            for x in nodes:
                for y in sorted(frozen[x], key=nodes.index):
                    if y not in adj[x] or frozenset((x, y)) in fixed_adj:
                        continue
                    for s in itertools.combinations(sorted(frozen[x] - {y}, key=nodes.index), level):
                        if self.test.pvalue(x, y, s) > self.alpha:
                            adj[x].discard(y)
                            adj[y].discard(x)
                            sepsets[frozenset((x, y))] = set(s)
                            break
            bar.update(1)
        return adj, sepsets

    def orient(self, nodes, adj: dict, sepsets: dict) -> PDAG:
        directed = set()
        for z in nodes:
            for x, y in itertools.combinations(sorted(adj[z], key=nodes.index), 2):
                if y not in adj[x] and z not in sepsets.get(frozenset((x, y)), set()):
                    if (z, x) not in directed and (z, y) not in directed:    # keep the first v-structure on conflict
                        directed |= {(x, z), (y, z)}
        undirected = [(a, b) for a in nodes for b in adj[a] if nodes.index(a) < nodes.index(b)
                      and (a, b) not in directed and (b, a) not in directed]
        d, u = meek_closure(nodes, directed, undirected)
        try:
            return PDAG(d, [tuple(e) for e in u], nodes=nodes)
        except GraphError:   # conflicting orientations from test errors: fall back to the skeleton's undirected edges
            return PDAG((), [(a, b) for a in nodes for b in adj[a] if nodes.index(a) < nodes.index(b)], nodes=nodes)


# -- the public entry point -------------------------------------------------------------------


def _check_common(table: Table, max_indegree, alpha) -> None:
    if table.n == 0:
        raise ModelError("the data have no rows")
    for v in table.names:
        if table.column(v).missing.any():
            raise ModelError(f"column {v!r} has missing cells; structure learning needs complete data (df.dropna())")
    if max_indegree is not None and (isinstance(max_indegree, bool) or not isinstance(max_indegree, int)
                                     or max_indegree < 0):
        raise ModelError(f"max_indegree must be an integer >= 0 or None, got {max_indegree!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ModelError(f"alpha must be in (0, 1), got {alpha!r}")


def _score_search(table, method, score, equivalent_sample_size, start, constraints, bar, tabu_length) -> DAG:
    sc = make_score(score, table, equivalent_sample_size=equivalent_sample_size)
    nodes = list(table.names)
    start_dag = DAG(sorted(constraints["fixed"]), nodes=nodes) if start is None else as_dag(start)
    missing = constraints["fixed"] - set(start_dag.edges)
    if missing:
        start_dag = DAG([*start_dag.edges, *missing], nodes=nodes)
    search = _Search(nodes, start_dag, max_indegree=constraints["max_indegree"], black=constraints["black"],
                     white=constraints["white"], fixed=constraints["fixed"])
    algo = Tabu(sc, tabu_length=tabu_length) if method == "tabu" else HillClimb(sc)
    return algo.run(search, bar)


def learn_structure(data, *, method: str = "hill_climb", score: str | None = None, test: str | None = None,
                    alpha: float = 0.05, max_indegree: int | None = None, black_list: Iterable = (),
                    white_list: Iterable = (), fixed_edges: Iterable = (), start=None, max_cond_vars: int = 5,
                    equivalent_sample_size: float | None = None, tabu_length: int = 100, states=None,
                    seed: Any = None, progress: bool | None = None) -> DAG | PDAG:
    """Learn a DAG (score-based search) or a CPDAG (PC) from complete data.

    Parameters
    ----------
    data : pandas.DataFrame or mapping column -> array
        Every column is a node.
    method : {"hill_climb", "tabu", "pc"}
    score : str, optional
        For search: ``"bic"`` (default for discrete data), ``"bic-g"``
        (default for continuous), ``"aic"``, ``"bdeu"``, ``"k2"``.
    test : {"chi2", "g2", "fisher_z"}, optional
        For PC (default ``"chi2"`` for discrete data, ``"fisher_z"`` for continuous).
    alpha : float
        PC's significance level.
    max_indegree : int, optional
        Search: at most this many parents per node.
    black_list, white_list, fixed_edges : iterables of (u, v)
        Search: edges never added; if given, the only edges that may be added;
        edges always present. PC: `fixed_edges` are never removed.
    start : DAG, optional
        Search: the starting DAG (default empty plus `fixed_edges`).
    seed : int or Generator, optional
        Accepted for a uniform signature; the searches are deterministic
        (ties broken by column order).
    progress : bool, optional
        A tqdm bar (steps / PC levels); ``False`` silences it.

    Returns
    -------
    DAG (hill_climb, tabu) or PDAG (pc)
    """
    table = as_table(data, states=states)
    _check_common(table, max_indegree, alpha)
    nodes = list(table.names)
    discrete = all(table.column(v).is_discrete for v in nodes)
    constraints = {"black": _edge_set(black_list, nodes, "black_list"), "white": _edge_set(white_list, nodes,
                   "white_list"), "fixed": _edge_set(fixed_edges, nodes, "fixed_edges"), "max_indegree": max_indegree}
    with tqdm(disable=None if progress is None else not progress, desc=method, leave=False) as bar:
        if method in ("hill_climb", "tabu"):
            return _score_search(table, method, score or ("bic" if discrete else "bic-g"), equivalent_sample_size,
                                 start, constraints, bar, tabu_length)
        if method == "pc":
            name = test or ("chi2" if discrete else "fisher_z")
            if name not in TESTS:
                raise ModelError(f"test must be one of {sorted(TESTS)}, got {name!r}")
            if TESTS[name].discrete != discrete:
                raise ModelError(f"test {name!r} needs {'discrete' if TESTS[name].discrete else 'continuous'} "
                                 f"columns; the data are {'discrete' if discrete else 'not all discrete'}")
            pc = PC(TESTS[name](table), alpha=alpha, max_cond_vars=max_cond_vars)
            fixed_adj = frozenset(frozenset(e) for e in constraints["fixed"])
            adj, sepsets = pc.skeleton(nodes, bar, fixed_adj)
            return pc.orient(nodes, adj, sepsets)
    raise ModelError(f"method must be one of ['hill_climb', 'tabu', 'pc'], got {method!r}")
