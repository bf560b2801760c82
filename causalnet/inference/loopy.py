"""Loopy belief propagation: sum-product (marginals) and max-product (MAP) on a factor graph.

Messages flow between the variables and the factors of a
:class:`~causalnet.inference.factor_graph.FactorGraph` (Pearl 1988; Kschischang,
Frey & Loeliger 2001). A factor's message to one of its variables sums (or, for
max-product, maximises) its table times the messages of its other variables; a
variable's message to a factor is its local evidence times the messages of its
other factors. On a graph without loops the fixed point is reached after at
most its diameter of sweeps and the beliefs are the exact marginals; on a loopy
graph they are the Bethe approximation (Yedidia, Freeman & Weiss 2005), and
propagation may oscillate — :attr:`Propagation.converged` says whether it
settled within ``tol``.

Everything is vectorised: over the ``n`` rows of a batch of evidence (axis 0 of
every array), over all edges of the graph, and over the factors of one shape
signature (one ``einsum`` per group and axis). Messages are normalised and
may hold exact zeros (deterministic tables, hard evidence); a variable's
message to a factor is computed as "all incoming messages but one" from a
finite log sum and a count of zeros, so no ``0/0`` arises. A factor whose
incoming messages leave it no consistent state, or a variable left with no
state, means the evidence has probability zero: reported, never turned into a
number. (Along the support of any assignment of positive probability, every
message stays positive, so consistent evidence is never reported.)

Schedules
---------
``"flooding"``
    Every message is recomputed from the previous sweep's messages.
``"residual"``
    Residual belief propagation (Elidan, McGraw & Koller 2006): one factor at
    a time, the one whose messages would change most, from a priority queue
    (:mod:`causalnet.inference.residual`; rows one after the other; table
    factors only).
``"parallel-residual"``
    Every message is recomputed, but only those whose change (residual) is at
    least the median change of the messages still moving more than ``tol`` are
    committed; the others keep their value (a vectorised approximation of the
    residual schedule, usually faster in numpy).

``damping`` d in [0, 1) keeps a share d of the old message:
``m ← (1 − d)·m_new + d·m_old``, which tames oscillation on loopy graphs.

Symbols: ``n`` evidence rows, ``V`` variables, ``E`` edges, ``K`` the largest card.

Examples
--------
>>> from causalnet.inference.factor_graph import FactorGraph
>>> fg = FactorGraph([2, 2], [((0,), [0.3, 0.7]), ((0, 1), [[0.9, 0.1], [0.2, 0.8]])])
>>> out = propagate(fg, np.ones((1, 2, 2)))
>>> out.beliefs[0, 1].round(2).tolist(), bool(out.converged.all())
([0.41, 0.59], True)
"""

from __future__ import annotations

import string
import warnings

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution
from ..errors import CausalNetWarning, EvidenceError, ModelError, ShapeError
from .approximate import hard_evidence, is_discrete_request, local_evidence, model_factor_graph, rows_text
from .compact_max import logistic_max_messages, noisy_max_max_messages
from .compact_messages import logistic_child_pmf, logistic_messages, noisy_max_child_pmf, noisy_max_messages
from .engine import Engine
from .factor_graph import FactorGraph
from .residual import residual_rows

__all__ = ["propagate", "Propagation", "SCHEDULES", "LoopyEngine", "loopy_map", "decimated_map", "loopy_marginals",
           "bethe_log_partition"]

SCHEDULES = ("flooding", "residual", "parallel-residual")


class Propagation:
    """The outcome of :func:`propagate`.

    Attributes
    ----------
    beliefs : ndarray of shape (n, V, K)
        Normalised beliefs (zero beyond each variable's card).
    messages : ndarray of shape (n, E, K)
        Final factor-to-variable messages (normalised; 1 beyond each card).
    converged : ndarray of bool, shape (n,)
        Rows whose last sweep changed no message by ``tol`` or more.
    iterations : int
        Sweeps run.
    impossible : ndarray of bool, shape (n,)
        Rows where some factor's incoming messages admit no state of positive
        probability (the evidence has probability zero).
    """

    def __init__(self, beliefs, messages, converged, iterations, impossible) -> None:
        self.beliefs = beliefs
        self.messages = messages
        self.converged = converged
        self.iterations = iterations
        self.impossible = impossible


def _check_options(max_iter, tol, damping, schedule) -> None:
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ModelError(f"max_iter must be a positive integer, got {max_iter!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
        raise ModelError(f"tol must be a positive number, got {tol!r}")
    if isinstance(damping, bool) or not isinstance(damping, (int, float)) or not 0 <= damping < 1:
        raise ModelError(f"damping must be a number in [0, 1), got {damping!r}")
    if schedule not in SCHEDULES:
        raise ModelError(f"schedule must be one of {list(SCHEDULES)}, got {schedule!r}")


def _group_messages(group, incoming: list, mode: str) -> list:
    """The messages of the group's factors to each of their axes, from the incoming ones.

    `incoming[j]` has shape (n, F, cards[j]); returns the same shapes (unnormalised).
    """
    a = len(group.cards)
    T = group.tables                                                        # (F, *cards)
    n = incoming[0].shape[0] if incoming else 1
    if a == 1:
        return [np.broadcast_to(T, (n,) + T.shape)]
    if mode == "sum":
        letters = string.ascii_lowercase[:a]
        out = []
        for j in range(a):
            operands, subs = [T], ["Y" + letters]
            for i in range(a):
                if i != j:
                    operands.append(incoming[i])
                    subs.append("ZY" + letters[i])
            out.append(np.einsum(",".join(subs) + "->ZY" + letters[j], *operands))   # (n, F, c_j)
        return out
    out = []
    for j in range(a):
        prod = T[None]                                                      # (1, F, *cards)
        for i in range(a):
            if i != j:
                shape = [incoming[i].shape[0], T.shape[0]] + [1] * a
                shape[2 + i] = group.cards[i]
                prod = prod * incoming[i].reshape(shape)
        axes = tuple(2 + i for i in range(a) if i != j)
        out.append(prod.max(axis=axes))
    return out


def _leave_one_out(log_unary, msg, fg):
    """Each variable's local evidence times all its incoming messages but one, per edge, in logs.

    Exact zeros are allowed: logs are split into a finite sum and a count of
    zeros, so ``(-inf) - (-inf)`` never arises. Returns ``(v2f (n, E, K),
    log beliefs (n, V, K))``.
    """
    zero = msg == 0                                                         # (n, E, K)
    with np.errstate(divide="ignore"):
        fin = np.where(zero, 0.0, np.log(msg))
    S = np.add.reduceat(fin, fg.var_start, axis=1)                          # (n, V, K)
    Z = np.add.reduceat(zero.astype(np.int64), fg.var_start, axis=1)        # (n, V, K)
    belief = log_unary + S + np.where(Z > 0, -np.inf, 0.0)
    others_zero = (Z[:, fg.edge_var] - zero) > 0
    v2f = log_unary[:, fg.edge_var] + S[:, fg.edge_var] - fin + np.where(others_zero, -np.inf, 0.0)
    return v2f, belief


def _sweep(fg: FactorGraph, log_unary, msg, mode):
    """One flooding sweep: the new factor-to-variable messages (normalised) and the impossible rows."""
    n = msg.shape[0]
    v2f, _ = _leave_one_out(log_unary, msg, fg)                             # (n, E, K)
    top = v2f.max(axis=-1, keepdims=True)
    v2f = np.exp(v2f - np.where(np.isfinite(top), top, 0.0))                # (n, E, K), max 1 (or all 0)
    new = np.ones_like(msg)
    impossible = np.zeros(n, dtype=bool)
    for g in fg.groups:
        incoming = [v2f[:, g.edges[:, j], :c] for j, c in enumerate(g.cards)]   # (n, F, c_j)
        for j, out in enumerate(_group_messages(g, incoming, mode)):
            s = out.sum(axis=-1, keepdims=True)                              # (n, F, 1)
            bad = ~(s > 0)
            if bad.any():
                impossible |= bad.any(axis=(1, 2))
                out = np.where(bad, 1.0, out)
                s = np.where(bad, float(g.cards[j]), s)
            new[:, g.edges[:, j], :g.cards[j]] = out / s
    if mode == "max":
        for view in fg.max_views:
            impossible |= noisy_max_max_messages(view, fg, v2f, new)
        if fg.logistic is not None:
            impossible |= logistic_max_messages(fg, v2f, new)
        return new, impossible
    if fg.noisy is not None:
        impossible |= _noisy_or_messages(fg, v2f, new)
    if fg.noisy_max is not None:
        impossible |= noisy_max_messages(fg, v2f, new)
    if fg.logistic is not None:
        impossible |= logistic_messages(fg, v2f, new)
    return new, impossible


def _noisy_or_messages(fg: FactorGraph, v2f: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Write the closed-form messages of the noisy-OR factors into `new`; return the impossible rows.

    With ``t_i = E[q_i^{[x_i on]}]`` under parent i's incoming message and
    ``μ_y`` the child's, the message to the child is ``(P0, 1 − P0)`` with
    ``P0 = (1 − leak) Π_i t_i``, and to parent j in state s
    ``μ_y(0) A_j(s) + μ_y(1) (1 − A_j(s))`` with
    ``A_j(s) = (1 − leak) Π_{i≠j} t_i · q_j^{[s = on_j]}`` — O(k) per factor,
    never the 2^k table. The products leave one factor out by finite log
    sums and zero counts (as :func:`_leave_one_out`).
    """
    no = fg.noisy
    S, K = no.slot_edge.size, v2f.shape[2]
    mu = v2f[:, no.slot_edge, :]                                            # (n, S, K)
    tot = mu.sum(axis=-1)                                                   # (n, S)
    on = mu[:, np.arange(S), no.slot_on]                                    # (n, S)
    impossible = ~(tot > 0).all(axis=1)
    t = (tot - on + on * no.slot_q) / np.where(tot > 0, tot, 1.0)           # (n, S)
    zero = t <= 0
    fin = np.log(np.where(zero, 1.0, t))
    starts = no.factor_start[:-1]
    Sf = np.add.reduceat(fin, starts, axis=1)                               # (n, N)
    Zf = np.add.reduceat(zero.astype(np.int64), starts, axis=1)             # (n, N)
    base = 1.0 - no.leak                                                    # (N,)
    p0 = base * np.exp(Sf) * (Zf == 0)                                      # (n, N)
    new[:, no.child_edge, 0] = p0
    new[:, no.child_edge, 1] = 1.0 - p0
    f = no.slot_factor
    rest = base[f] * np.exp(Sf[:, f] - fin) * ((Zf[:, f] - zero) == 0)      # (n, S)
    muy = v2f[:, no.child_edge, :2]                                         # (n, N, 2)
    muy = muy / np.where(muy.sum(axis=-1, keepdims=True) > 0, muy.sum(axis=-1, keepdims=True), 1.0)
    y0, y1 = muy[:, f, 0], muy[:, f, 1]                                     # (n, S)
    m_off = y0 * rest + y1 * (1.0 - rest)
    a_on = rest * no.slot_q
    m_on = y0 * a_on + y1 * (1.0 - a_on)
    valid = np.arange(K) < fg.edge_card[no.slot_edge][:, None]              # (S, K)
    msg = np.where(valid, m_off[..., None], 0.0)                            # (n, S, K)
    msg[:, np.arange(S), no.slot_on] = m_on
    s = msg.sum(axis=-1, keepdims=True)
    impossible |= ~(s > 0).all(axis=(1, 2))
    msg = np.where(valid, msg / np.where(s > 0, s, 1.0), 1.0)
    new[:, no.slot_edge, :] = msg
    return impossible


def propagate(fg: FactorGraph, unary: np.ndarray, *, mode: str = "sum", max_iter: int = 100, tol: float = 1e-8,
              damping: float = 0.0, schedule: str = "flooding") -> Propagation:
    """Run loopy belief propagation on `fg` with local evidence `unary`.

    Parameters
    ----------
    fg : FactorGraph
    unary : ndarray of shape (n, V, K)
        Nonnegative local evidence (likelihood) of each variable's states,
        per row; entries beyond a variable's card are ignored. Hard evidence
        is a one-hot row, soft evidence a likelihood vector, none all ones.
    mode : {"sum", "max"}
        Sum-product (marginals) or max-product (max-marginals, for MAP).
    max_iter : int
    tol : float
        A row has converged when no message (normalised) changed by ``tol`` or more.
    damping : float in [0, 1)
    schedule : {"flooding", "residual", "parallel-residual"}

    Returns
    -------
    Propagation

    Raises
    ------
    ModelError
        On a bad option.
    ShapeError
        If `unary` is not ``(n, V, K)``.
    ResourceError
        If the message arrays exceed ``cn.limits``.
    """
    _check_options(max_iter, tol, damping, schedule)
    if mode not in ("sum", "max"):
        raise ModelError(f"mode must be 'sum' or 'max', got {mode!r}")
    V, K, E = fg.cards.size, fg.K, fg.n_edges
    unary = np.asarray(unary, dtype=np.float64)
    if unary.ndim != 3 or unary.shape[1:] != (V, K):
        raise ShapeError(f"unary evidence must have shape (n, {V}, {K}), got {unary.shape}")
    n = unary.shape[0]
    limits.check_bytes(8.0 * 4 * n * max(E, 1) * K, what="the messages of loopy belief propagation",
                       cause=f"{n} rows x {E} edges x {K} states", knob="batch_bytes")
    valid = np.arange(K) < fg.cards[:, None]                                # (V, K)
    with np.errstate(divide="ignore"):
        log_unary = np.where(valid, np.log(np.where(valid, unary, 1.0)), -np.inf)   # (n, V, K)
    msg = np.ones((n, E, K))
    edge_valid = valid[fg.edge_var]                                         # (E, K)
    msg[:, edge_valid] = np.broadcast_to(1.0 / fg.edge_card[:, None], (E, K))[edge_valid]
    converged = np.zeros(n, dtype=bool)
    impossible = np.zeros(n, dtype=bool)
    it = 0
    if schedule == "residual":
        converged, it, impossible = residual_rows(fg, log_unary, msg, mode=mode, max_iter=max_iter, tol=tol,
                                                  damping=damping)
    while schedule != "residual" and it < max_iter:
        it += 1
        new, impossible = _sweep(fg, log_unary, msg, mode)
        if damping:
            new = (1.0 - damping) * new + damping * msg
        change = np.abs(new - msg).max(axis=-1)                             # (n, E)
        if schedule == "parallel-residual":
            moving = change >= tol
            med = np.array([np.median(c[m]) if m.any() else np.inf for c, m in zip(change, moving)])
            commit = change >= med[:, None]                                 # (n, E)
            new = np.where(commit[..., None], new, msg)
        converged = change.max(axis=1, initial=0.0) < tol
        msg = new
        if converged.all():
            break
    _, log_b = _leave_one_out(log_unary, msg, fg)                           # (n, V, K)
    top = log_b.max(axis=-1, keepdims=True)
    impossible = impossible | ~np.isfinite(top).all(axis=(1, 2))
    b = np.exp(log_b - np.where(np.isfinite(top), top, 0.0))
    b /= np.where(b.sum(axis=-1, keepdims=True) > 0, b.sum(axis=-1, keepdims=True), 1.0)
    return Propagation(b, msg, converged, it, impossible)


# -- the engine --------------------------------------------------------------------------


def _options(request) -> dict:
    o = request.options
    return {"max_iter": o.get("max_iter", 100), "tol": o.get("tol", 1e-8), "damping": o.get("damping", 0.0),
            "schedule": o.get("schedule", "flooding")}


def _clamped(unary: np.ndarray, targets: list, cards: list) -> np.ndarray:
    """`unary` repeated for every joint state of `targets`, those targets clamped: (n * prod(cards), V, K)."""
    n = unary.shape[0]
    combos = np.indices(cards).reshape(len(cards), -1)                      # (len(targets), C)
    C = combos.shape[1]
    out = np.repeat(unary, C, axis=0)                                      # row r*C + c
    rows = np.arange(n * C)
    for t, states in zip(targets, combos):
        out[:, t, :] = 0.0
        out[rows, t, np.tile(states, n)] = 1.0
    return out


def loopy_marginals(fg: FactorGraph, unary: np.ndarray, targets: list, mode: str = "sum", **options):
    """The (approximate) joint of `targets` by loopy propagation, built by the chain rule.

    ``P(t1, ..., tk) = P(t1) · P(t2 | t1) · ...``: the j-th factor comes from
    one propagation with the first j−1 targets clamped to each of their joint
    states (rows of one batch). With one target it is its belief.

    Returns
    -------
    probs : ndarray of shape (n, *cards)
    converged : ndarray of bool, shape (n,)
    iterations : int
    impossible : ndarray of bool, shape (n,)
    """
    n = unary.shape[0]
    cards = [int(fg.cards[t]) for t in targets]
    limits.check_bytes(8.0 * n * float(np.prod(cards)) * fg.cards.size * fg.K,
                       what=f"the clamped runs for a joint of {len(targets)} targets", cause=f"cards {cards}", knob="batch_bytes")
    out = propagate(fg, unary, mode=mode, **options)
    joint = out.beliefs[:, targets[0], :cards[0]]                          # (n, c1)
    converged, iterations, impossible = out.converged, out.iterations, out.impossible
    for j in range(1, len(targets)):
        run = propagate(fg, _clamped(unary, targets[:j], cards[:j]), mode=mode, **options)
        cond = run.beliefs[:, targets[j], :cards[j]].reshape(n, *cards[:j + 1])
        joint = joint[..., None] * cond
        converged = converged & run.converged.reshape(n, -1).all(axis=1)
        iterations = max(iterations, run.iterations)
    return joint, converged, iterations, impossible


class LoopyEngine(Engine):
    """Loopy belief propagation on an all-discrete model: ``method="loopy"``, and ``"auto"``'s fallback."""

    name = "loopy belief propagation"
    exact = False
    method = "loopy"
    soft_evidence = True

    def accepts(self, request) -> bool:
        return is_discrete_request(request)

    def answer(self, request) -> DiscreteDistribution:
        m = request.model
        fg = model_factor_graph(m)
        unary = local_evidence(request, fg)
        index = {v: i for i, v in enumerate(fg.names)}
        names = request.nodes
        opts = _options(request)
        probs, converged, iterations, impossible = loopy_marginals(fg, unary, [index[t] for t in names], **opts)
        if impossible.any():
            raise EvidenceError(f"the evidence has probability zero{rows_text(impossible, request.batched)}: "
                                f"loopy belief propagation found a factor with no consistent state")
        if not request.batched:
            probs = probs[0]
        ok = bool(converged.all())
        state = "converged" if ok else f"not converged (tol {opts['tol']:g})"
        exact = "; exact: the factor graph is a tree" if ok and fg.is_tree else ""
        method = f"loopy belief propagation ({opts['schedule']}, {iterations} iterations, {state}{exact})"
        return DiscreteDistribution(names, probs, [m.specs[t].states for t in names], batched=request.batched,
                                    method=method, converged=ok, iterations=iterations,
                                    diagnostics={"converged": converged, "tree": fg.is_tree})


def loopy_map(request) -> tuple[dict, np.ndarray | float]:
    """MPE by max-product loopy propagation: ``(node -> state name or array of names, log joint)``.

    Every unobserved node takes the state of its largest max-marginal; the log
    joint of that assignment with the evidence is then evaluated exactly
    (on a tree with a unique maximum and exact messages, the assignment is the
    exact MPE). Noisy-OR and noisy-MAX nodes are never expanded: their
    max-product messages are computed from the structural form
    (:mod:`causalnet.inference.compact_max`: exact for at most two binary
    parents and at a child's lowest level, a lower bound of the exact message
    otherwise) and their terms of the log joint from the mechanism; so are
    logistic nodes kept in closed form (candidate assignments as well,
    :func:`causalnet.inference.compact_max.logistic_max_messages`).

    With targets (marginal MAP) see :func:`decimated_map`. Soft evidence
    adds ``Σ log(L(y) / max L)`` to the log joint, as the exact engine does.

    Raises
    ------
    ModelError
        If the model is not all-discrete.
    """
    m = request.model
    if not is_discrete_request(request):
        raise ModelError("map needs a discrete model (every node discrete and tabulable)")
    if request.nodes:
        fg = model_factor_graph(m)
        return decimated_map(request, fg, local_evidence(request, fg))
    fg = model_factor_graph(m)
    unary = local_evidence(request, fg)
    out = propagate(fg, unary, mode="max", **_options(request))
    if out.impossible.any():
        raise EvidenceError(f"the evidence has probability zero{rows_text(out.impossible, request.batched)}")
    _warn_unconverged(out, request, "max-product")
    x = out.beliefs.argmax(axis=-1)                                         # (n, V)
    logp = np.zeros(x.shape[0])
    index = {v: i for i, v in enumerate(fg.names)}
    with np.errstate(divide="ignore"):
        for vs, table in fg.factors:
            logp += np.log(table[tuple(x[:, j] for j in vs)])
        closed = [view.child_edge for view in fg.max_views] + ([fg.logistic.child_edge] if fg.logistic else [])
        for child_edge in closed:                                           # closed-form nodes, scored exactly
            for i in fg.edge_var[child_edge]:
                v, mech = fg.names[i], m.mechanisms[fg.names[i]]
                logp += mech.log_prob(v, x[:, i], {p: x[:, index[p]] for p in mech.parents}, m.specs[v])
        for k, lik in request.soft.items():
            scaled = np.broadcast_to(lik / lik.max(axis=-1, keepdims=True), (x.shape[0], lik.shape[-1]))
            logp += np.log(scaled[np.arange(x.shape[0]), x[:, index[k]]])
    ev = hard_evidence(request)
    named = {}
    index = {v: i for i, v in enumerate(fg.names)}
    for v in fg.names:
        if v in ev and v not in fg.row_evidence:
            continue
        states = np.asarray(m.specs[v].states, dtype=object)
        named[v] = states[x[:, index[v]]] if request.batched else states[int(x[0, index[v]])]
    return named, (logp if request.batched else float(logp[0]))


def _warn_unconverged(out: Propagation, request, what: str) -> None:
    """One :class:`~causalnet.errors.CausalNetWarning` when a MAP's last propagation did not converge."""
    if out.converged.all():
        return
    rows = rows_text(~out.converged, request.batched)
    warnings.warn(f"loopy {what} did not converge in {out.iterations} iterations{rows}: the assignment may "
                  f"not be the MAP (raise max_iter=, add damping=, or use method='exact')",
                  CausalNetWarning, stacklevel=4)


def decimated_map(request, fg: FactorGraph, unary: np.ndarray) -> tuple[dict, np.ndarray | float]:
    """Approximate marginal MAP of ``request.nodes`` by sum-product loopy propagation and decimation.

    The non-target nodes are summed out by sum-product propagation; the
    targets are then fixed one at a time, per row: the target whose belief is
    most peaked takes its most probable state and is clamped, and propagation
    runs again (one run per target). With one target on a tree this is the
    exact marginal MAP; with several it is a greedy search (on a tree each
    step is an exact conditional argmax, but the product of greedy choices
    need not be the joint maximum). The log-probability returned is the Bethe
    approximation of ``log P(targets, e)`` at the last run (exact on a tree,
    soft likelihoods scaled to a maximum of 1).

    Returns
    -------
    assignment : dict target -> state name or array of names
    log_prob : float or ndarray of shape (n,)
    """
    m = request.model
    opts = _options(request)
    index = {v: i for i, v in enumerate(fg.names)}
    targets = np.array([index[t] for t in request.nodes])
    n = unary.shape[0]
    u = unary / unary.max(axis=-1, keepdims=True)                           # soft rows to a maximum of 1
    rows = np.arange(n)
    left = np.ones((n, targets.size), dtype=bool)
    for _ in range(targets.size):
        out = propagate(fg, u, **opts)
        if out.impossible.any():
            raise EvidenceError(f"the evidence has probability zero{rows_text(out.impossible, request.batched)}")
        b = out.beliefs[:, targets, :]                                      # (n, T, K)
        peak = np.where(left, b.max(axis=-1), -1.0)                         # (n, T)
        j = peak.argmax(axis=1)                                             # (n,)
        state = b[rows, j].argmax(axis=-1)                                  # (n,)
        v = targets[j]
        u[rows, v, :] = 0.0
        u[rows, v, state] = 1.0
        left[rows, j] = False
    out = propagate(fg, u, **opts)
    _warn_unconverged(out, request, "sum-product (decimation)")
    logp = bethe_log_partition(fg, u, out)                                  # (n,)
    named = {}
    for t, i in zip(request.nodes, targets):
        x = u[:, i, :].argmax(axis=-1)
        states = np.asarray(m.specs[t].states, dtype=object)
        named[t] = states[x] if request.batched else states[int(x[0])]
    return named, (logp if request.batched else float(logp[0]))


def bethe_log_partition(fg: FactorGraph, unary: np.ndarray, out: Propagation) -> np.ndarray:
    """The Bethe approximation of ``log Z`` at the fixed point `out` (exact on a tree).

    In message form (Yedidia, Freeman & Weiss 2005; equal to the free-energy
    form at a fixed point): ``log Z ≈ Σ_f log Z_f + Σ_v log Z_v − Σ_(v,f) log Z_vf``
    with ``Z_f = Σ_x ψ_f(x) Π_v n_{v→f}(x_v)``, ``Z_v = Σ_x u_v(x) Π_f m_{f→v}(x)``
    and ``Z_vf = Σ_x n_{v→f}(x) m_{f→v}(x)`` (any scaling of a message cancels).
    Closed-form factors are never expanded: ``Z_f`` of a noisy-OR or noisy-MAX
    factor is the child's message-weighted pmf
    (:func:`causalnet.inference.compact_messages.noisy_max_child_pmf`, exact),
    of a logistic one its probit approximation.

    Parameters
    ----------
    fg : FactorGraph
    unary : ndarray of shape (n, V, K)
    out : Propagation
        A sum-product run of `fg` on `unary`.

    Returns
    -------
    ndarray of shape (n,)
    """
    valid = np.arange(fg.K) < fg.cards[:, None]                                    # (V, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_unary = np.where(valid, np.log(np.where(valid, unary, 1.0)), -np.inf)  # (n, V, K)
        v2f, log_b = _leave_one_out(log_unary, out.messages, fg)                   # (n, E, K), (n, V, K)
        top = v2f.max(axis=-1, keepdims=True)                                      # (n, E, 1)
        top = np.where(np.isfinite(top), top, 0.0)
        nv = np.exp(v2f - top)                                                     # (n, E, K), 0 beyond cards
        log_ze = top[..., 0] + np.log((nv * out.messages).sum(axis=-1))            # (n, E)
        bt = log_b.max(axis=-1, keepdims=True)
        log_zv = bt[..., 0] + np.log(np.exp(log_b - bt).sum(axis=-1))              # (n, V)
        total = log_zv.sum(axis=1) - log_ze.sum(axis=1) + top[..., 0].sum(axis=1)  # every n_{v->f} scale once
        n = unary.shape[0]
        for g in fg.groups:
            a = len(g.cards)
            z = np.broadcast_to(g.tables, (n,) + g.tables.shape)                       # (n, F, *cards)
            for j, c in enumerate(g.cards):
                shape = [n, g.tables.shape[0]] + [1] * a
                shape[2 + j] = c
                z = z * nv[:, g.edges[:, j], :c].reshape(shape)
            total += np.log(z.sum(axis=tuple(range(2, 2 + a)))).sum(axis=1)
        parts = [(view.child_edge, *noisy_max_child_pmf(view, nv[:, view.slot_edge])) for view in fg.max_views]
        if fg.logistic is not None:
            parts.append((fg.logistic.child_edge, *logistic_child_pmf(fg, nv[:, fg.logistic.slot_edge])))
        for child_edge, pmf, log_scale in parts:
            total += (np.log((pmf * nv[:, child_edge]).sum(axis=-1)) + log_scale).sum(axis=1)
    return total
