"""Residual belief propagation: one factor at a time, the one whose messages would change most (a priority queue).

Elidan, McGraw & Koller (2006), "Residual belief propagation: informed
scheduling for asynchronous message passing", UAI. Every factor keeps its
*pending* outgoing messages (what it would send now) and their *residual*, the
largest change they would make to the messages it sent last. A max-heap of
residuals picks the next factor; committing its messages changes the beliefs
of its variables, so every other factor of those variables recomputes its
pending messages and residual (re-pushed onto the heap, stale entries skipped
on pop). Propagation stops when the largest residual is below ``tol`` — then
no message would move by ``tol`` or more: the same fixed-point test as the
flooding schedule of :func:`causalnet.inference.loopy.propagate`, and on a
tree the same exact marginals. Often far fewer messages are computed than by
flooding, which recomputes every message every sweep.

The queue is sequential, so rows of a batch are propagated one after the
other; a variable's incoming messages are kept as a finite log sum and a count
of zeros (exact zeros allowed, as in flooding). ``iterations`` counts factor
updates divided by the number of factors (sweep equivalents).

:func:`residual_rows` runs the compiled kernel of
:mod:`causalnet.inference.residual_kernel` (table factors, and noisy-OR,
noisy-MAX and logistic factors in closed form for sum-product); with the
``"graph"`` backend set to ``"numpy"`` (``CAUSALNET_GRAPH_BACKEND=numpy``) or
without numba it runs :func:`residual_row`, the numpy reference over table
factors (closed-form factors are then refused, as is max-product over closed
forms in both: the flooding schedule has their max-product messages).

Symbols: ``V`` variables, ``E`` edges, ``F`` factors, ``K`` the largest card.
"""

from __future__ import annotations

import heapq
import string

import numpy as np

from .. import runtime
from ..errors import ModelError
from .factor_graph import FactorGraph
from .residual_kernel import FlatGraph, residual_run

__all__ = ["residual_row", "ResidualPlan", "residual_rows", "compiled"]


def compiled() -> bool:
    """Whether :func:`residual_rows` runs the compiled kernel (numba importable, ``"graph"`` backend not numpy)."""
    return runtime.get_backend("graph") != "numpy" and runtime.numba_available()


def residual_rows(fg: FactorGraph, log_unary: np.ndarray, msg: np.ndarray, *, mode: str, max_iter: int, tol: float,
                  damping: float) -> tuple[np.ndarray, int, np.ndarray]:
    """Propagate every row of `msg` (n, E, K) in place by the residual schedule; `log_unary` (n, V, K).

    Returns
    -------
    converged : ndarray of bool, shape (n,)
    iterations : int
        The largest number of sweep equivalents (factor updates / factors, rounded up) of a row.
    impossible : ndarray of bool, shape (n,)

    Raises
    ------
    ModelError
        For max-product over closed-form factors, or closed-form factors without the compiled kernel.
    """
    if mode == "max" and fg.structural:
        raise ModelError("schedule='residual' computes max-product over table factors only; use "
                         "schedule='flooding' (closed-form noisy-OR/noisy-MAX max-product messages)")
    n = msg.shape[0]
    converged, impossible = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    it = 0
    if compiled():
        flat = getattr(fg, "_residual_flat", None)
        if flat is None:
            flat = fg._residual_flat = FlatGraph(fg)
        F = max(flat.kind.size, 1)
        for r in range(n):
            converged[r], updates, impossible[r] = residual_run(flat, log_unary[r], msg[r], mode=mode,
                                                                max_iter=max_iter, tol=tol, damping=damping)
            it = max(it, -(-updates // F))
        return converged, it, impossible
    plan = ResidualPlan(fg)
    for r in range(n):
        converged[r], its, impossible[r] = residual_row(fg, plan, log_unary[r], msg[r], mode=mode,
                                                        max_iter=max_iter, tol=tol, damping=damping)
        it = max(it, its)
    return converged, it, impossible


class ResidualPlan:
    """A factor graph's factors as lists for one-at-a-time updates.

    Attributes
    ----------
    tables : list of ndarray
        Each factor's table.
    edges : list of ndarray of int
        Each factor's edges (one per axis).
    var_factors : list of list of int
        The factors of each variable.
    subs : list of list of str
        Each factor's einsum subscripts, one per axis (sum-product).
    """

    def __init__(self, fg: FactorGraph) -> None:
        if fg.structural:
            raise ModelError("the numpy residual schedule needs every factor as a table (the compiled one takes "
                             "closed-form noisy-OR, noisy-MAX and logistic factors: install numba, or set the "
                             "'graph' backend to 'auto'); or use schedule='parallel-residual' or 'flooding'")
        F = len(fg.factors)
        self.tables, self.edges = [None] * F, [None] * F
        for g in fg.groups:
            for r, f in enumerate(g.factors):
                vs, t = fg.factors[f]
                self.tables[f] = t
                self.edges[f] = g.edges[r]
        self.var_factors = [[] for _ in range(fg.cards.size)]
        for f, (vs, _) in enumerate(fg.factors):
            for v in vs:
                self.var_factors[v].append(f)
        letters = string.ascii_letters
        self.subs = []
        for t in self.tables:
            a = t.ndim
            if a > len(letters) // 2:
                raise ModelError(f"schedule='residual' handles factors of up to {len(letters) // 2} variables")
            s = letters[:a]
            self.subs.append([",".join([s] + [s[i] for i in range(a) if i != j]) + "->" + s[j] for j in range(a)])


def _outgoing(plan: ResidualPlan, f: int, v2f: list, mode: str) -> list:
    """Factor f's messages to each of its axes (normalised; uniform and flagged when a sum is zero)."""
    t = plan.tables[f]
    a = t.ndim
    out = []
    for j in range(a):
        others = [v2f[i] for i in range(a) if i != j]
        if mode == "sum":
            m = np.einsum(plan.subs[f][j], t, *others) if others else t
        else:
            prod = t
            for i in range(a):
                if i != j:
                    shape = [1] * a
                    shape[i] = t.shape[i]
                    prod = prod * v2f[i].reshape(shape)
            m = prod.max(axis=tuple(i for i in range(a) if i != j)) if a > 1 else prod
        s = m.sum()
        out.append(m / s if s > 0 else None)
    return out


def residual_row(fg: FactorGraph, plan: ResidualPlan, log_unary: np.ndarray, msg: np.ndarray, *, mode: str,
                 max_iter: int, tol: float, damping: float) -> tuple[bool, int, bool]:
    """Propagate one row in place: `msg` (E, K) factor-to-variable messages; `log_unary` (V, K).

    Returns
    -------
    converged : bool
    iterations : int
        Factor updates / number of factors, rounded up.
    impossible : bool
        A factor found no consistent state.
    """
    zero = msg == 0                                                         # (E, K)
    fin = np.where(zero, 0.0, np.log(np.where(zero, 1.0, msg)))
    S = np.add.reduceat(fin, fg.var_start, axis=0)                          # (V, K)
    Z = np.add.reduceat(zero.astype(np.int64), fg.var_start, axis=0)
    F = len(plan.tables)
    impossible = False

    def v2f(e: int) -> np.ndarray:
        v, c = fg.edge_var[e], fg.edge_card[e]
        lz = Z[v, :c] - zero[e, :c]
        x = log_unary[v, :c] + S[v, :c] - fin[e, :c]
        x = np.where(lz > 0, -np.inf, x)
        top = x.max()
        return np.exp(x - top) if np.isfinite(top) else np.zeros(c)

    pending: list = [None] * F
    heap: list = []
    version = np.zeros(F, dtype=np.int64)

    def refresh(f: int) -> None:
        nonlocal impossible
        es = plan.edges[f]
        outs = _outgoing(plan, f, [v2f(e) for e in es], mode)
        res = 0.0
        for j, (e, m) in enumerate(zip(es, outs)):
            c = fg.edge_card[e]
            if m is None:
                impossible = True
                m = outs[j] = np.full(c, 1.0 / c)
            if damping:
                m = outs[j] = (1.0 - damping) * m + damping * msg[e, :c]
            res = max(res, float(np.abs(m - msg[e, :c]).max()))
        pending[f] = outs
        version[f] += 1
        heapq.heappush(heap, (-res, f, int(version[f])))

    for f in range(F):
        refresh(f)
    updates, budget = 0, max_iter * max(F, 1)
    converged = False
    while heap and updates < budget:
        neg, f, ver = heapq.heappop(heap)
        if ver != version[f]:
            continue                                                        # stale entry
        if -neg < tol:
            converged = True
            break
        updates += 1
        touched = set()
        for e, m in zip(plan.edges[f], pending[f]):
            c = fg.edge_card[e]
            v = fg.edge_var[e]
            S[v, :c] -= fin[e, :c]
            Z[v, :c] -= zero[e, :c]
            msg[e, :c] = m
            zero[e, :c] = m == 0
            fin[e, :c] = np.where(m == 0, 0.0, np.log(np.where(m == 0, 1.0, m)))
            S[v, :c] += fin[e, :c]
            Z[v, :c] += zero[e, :c]
            touched.add(int(v))
        refresh(f)                                                          # its residual is now ~0
        for g in {g for v in touched for g in plan.var_factors[v] if g != f}:
            refresh(g)
    if not heap:
        converged = True
    return converged, -(-updates // max(F, 1)), impossible
