"""Importance sampling with an evidence-aware proposal built by loopy belief propagation.

Likelihood weighting (``method="sampling"``) draws every unobserved node from
its CPT and so ignores evidence below it: with unlikely evidence nearly every
weight is tiny. Evidence pre-propagation importance sampling (EPIS-BN, Yuan &
Druzdzel 2003) first runs loopy belief propagation, then draws each
unobserved node ``v``, in topological order, from

``q(x_v | pa_v) ∝ P(x_v | pa_v) · λ_v(x_v) · L_v(x_v)``

where ``λ_v`` is the product of the loopy messages that ``v``'s children's
factors send it (what the evidence below ``v`` says about it) and ``L_v`` its
soft evidence. On a tree, ``λ_v`` is exact and so is this proposal: every
weight is equal. To keep the weights bounded on loopy graphs the proposal is
*defensive* (Hesterberg 1995): a mixture ``0.9 q + 0.1 P(x_v | pa_v)``, so
each factor of a weight is at most 10.

Each draw is weighted by ``P(x, e) L(x) / q(x)``; the estimate is the
self-normalised weighted frequency, with the delta-method standard error of
:func:`causalnet.inference.sampling.weighted_state_probs`, and the effective
sample size ``(Σ w)² / Σ w²`` per row in ``result.diagnostics["ess"]``.

Symbols: ``n`` evidence rows, ``m`` samples per row, ``N = n · m``.
"""

from __future__ import annotations

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution
from ..errors import EvidenceError
from .approximate import (
    hard_evidence,
    is_discrete_request,
    local_evidence,
    model_factor_graph,
    model_families,
    rows_text,
)
from .engine import Engine
from .loopy import propagate
from .sampling import normalise, samples_per_row, summarise

__all__ = ["ImportanceEngine", "child_messages", "DEFENSIVE"]

DEFENSIVE = 0.1


def child_messages(fg, messages: np.ndarray, own: np.ndarray) -> np.ndarray:
    """``λ_v``: the product of the messages each variable receives from factors other than its own CPT.

    Parameters
    ----------
    fg : FactorGraph
    messages : ndarray of shape (n, E, K)
        Factor-to-variable messages (normalised).
    own : ndarray of int, shape (V,)
        The edge from each variable's own CPT factor.

    Returns
    -------
    ndarray of shape (n, V, K), each row scaled to a maximum of 1.
    """
    with np.errstate(divide="ignore"):
        log_m = np.log(messages)                                                # (n, E, K)
    log_m[:, own, :] = 0.0
    lam = np.add.reduceat(log_m, fg.var_start, axis=1)                          # (n, V, K)
    top = lam.max(axis=-1, keepdims=True)
    return np.exp(lam - np.where(np.isfinite(top), top, 0.0))


class ImportanceEngine(Engine):
    """Importance sampling with a loopy-propagation proposal: ``method="importance"``."""

    name = "importance sampling"
    exact = False
    method = "importance"
    auto = False
    soft_evidence = True

    def accepts(self, request) -> bool:
        return is_discrete_request(request)

    def answer(self, request) -> DiscreteDistribution:
        m = request.model
        tables, compact, _ = model_families(m)
        fg = model_factor_graph(m)
        n = request.n_rows or 1
        per_row = samples_per_row(request.n_samples, request.n_rows)
        N = n * per_row
        limits.check_bytes(8.0 * N * (fg.cards.size + 2 * fg.K), what=f"importance sampling with {N} samples",
                           cause=f"{n} rows x {per_row} samples", knob="batch_bytes")
        unary = local_evidence(request, fg)                                     # (n, V, K)
        o = request.options
        run = propagate(fg, unary, max_iter=o.get("max_iter", 50), tol=o.get("tol", 1e-6),
                        damping=o.get("damping", 0.0), schedule=o.get("schedule", "flooding"))
        if run.impossible.any():
            raise EvidenceError(f"the evidence has probability zero{rows_text(run.impossible, request.batched)}: "
                                f"loopy belief propagation found a factor with no consistent state")
        index = {v: i for i, v in enumerate(fg.names)}
        lam = child_messages(fg, run.messages, fg.own_edge) * unary                         # (n, V, K)
        ev = hard_evidence(request)
        rng = request.rng()
        values, log_w = {}, np.zeros(N)
        rowsN = np.repeat(np.arange(n), per_row)                                # (N,)
        for v in m.dag.topological_order():
            i, K = index[v], m.specs[v].card
            if v in compact:                                                    # from its structural form
                mech = compact[v]
                p = np.broadcast_to(mech.probabilities(v, {q: values[q] for q in mech.parents}, m.specs[v]), (N, K))
            else:
                parents = list(m.dag.parents(v))
                cpt = tables[v].reshape(-1, K)                                  # (configs, K)
                cfg = np.ravel_multi_index([values[q] for q in parents], [m.specs[q].card for q in parents]) \
                    if parents else np.zeros(N, dtype=np.int64)
                p = cpt[cfg]                                                    # (N, K)
            if v in ev:
                x = np.broadcast_to(ev[v], (n,))[rowsN] if np.ndim(ev[v]) else np.full(N, ev[v])
                with np.errstate(divide="ignore"):
                    log_w += np.log(p[np.arange(N), x])
            else:
                q = p * lam[rowsN, i, :K]
                s = q.sum(axis=1, keepdims=True)
                q = np.where(s > 0, q / np.where(s > 0, s, 1.0), p)
                q = (1.0 - DEFENSIVE) * q + DEFENSIVE * p
                cum = np.cumsum(q, axis=1)
                x = np.minimum((cum < rng.random((N, 1)) * cum[:, -1:]).sum(axis=1), K - 1)
                with np.errstate(divide="ignore"):
                    log_w += np.log(p[np.arange(N), x]) - np.log(q[np.arange(N), x])
                if v in request.soft:
                    lik = np.broadcast_to(request.soft[v], (n, K))
                    with np.errstate(divide="ignore"):
                        log_w += np.log(lik[rowsN, x])
            values[v] = x
        dead = np.all(np.isneginf(log_w.reshape(n, per_row)), axis=1)
        if dead.any():
            raise EvidenceError(f"no sample is consistent with the evidence{rows_text(dead, request.batched)}: it "
                                f"is impossible, or too rare for {per_row} samples")
        w = normalise(log_w, n, per_row)                                        # (n, m)
        names = request.nodes
        method = (f"importance sampling (loopy-propagation proposal, {per_row} samples"
                  f"{' per row' if request.batched else ''})")
        out = summarise(names, [m.specs[t].states for t in names], values, w, request.n_rows, method)
        ess = 1.0 / np.sum(w ** 2, axis=1)
        out.diagnostics = {"ess": ess if request.batched else float(ess[0]), "loopy_converged": run.converged}
        return out
