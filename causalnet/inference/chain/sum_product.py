"""Sum-product on chains: log-partition, marginals, edge counts, messages.

The scaled sweeps (:mod:`.scaled`) answer every row they can; rows that
underflowed (or whose forward and backward passes disagree) are redone in log
space (:mod:`.log_space`), so answers are finite wherever the exact one is.
The ``chain_*`` functions take a :class:`~.potentials.Chain` in the internal
layout (the contract model builders use); the others take batch-first arrays.

>>> import numpy as np
>>> round(float(log_partition(np.zeros((1, 3, 2)), np.log(np.full((2, 2), 0.5)))[0]), 6)
0.693147
"""

from __future__ import annotations

import numpy as np

from ...errors import NumericalError
from . import compiled
from .kernels import FB_TOL, matmul_blocked
from .log_space import log_backward, log_forward, log_space_posterior
from .potentials import Chain, ChainPosterior, raise_if_impossible
from .scaled import scaled_backward, scaled_edge_sum, scaled_forward, scaled_log_partition

__all__ = [
    "chain_posterior", "chain_log_partition", "chain_log_messages",
    "log_partition", "forward_backward", "forward_messages", "backward_messages",
]


def chain_posterior(ch, edges=False, counts=False):
    """Scaled forward-backward with per-row log-space fallback (internal order).

    Returns
    -------
    gamma : ndarray of shape (T, n, K)
    log_z : ndarray of shape (n,)
    xi : ndarray of shape (T-1, n, K, K) or None
    E : ndarray of shape (K, K) or None
    """
    alpha, c, bad = scaled_forward(ch)
    log_z = scaled_log_partition(ch, c)
    early = bad.copy()
    keep_g = edges or (counts and not ch.shared)
    if compiled.serves(ch) and ch.time_chunks is None:  # the marginals come out of the compiled sweep
        gamma, g, S, s = compiled.compiled_backward(ch, c, alpha, bad, counts=(edges or counts), keep_g=keep_g,
                                                    marginals=True, inplace=not edges)
        if not edges:
            alpha = None  # the marginals were written over it
    else:
        beta, g, S = scaled_backward(ch, c, alpha, bad, counts=(edges or counts), keep_g=keep_g)
        with np.errstate(invalid="ignore", over="ignore"):
            gamma = np.multiply(alpha, beta, out=beta)  # (T, n, K); 0 on bad rows, replaced below
            s = matmul_blocked(gamma.reshape(-1, ch.K), np.ones((ch.K, 1)), out=np.empty((ch.T * ch.n, 1)))
            s = s.reshape(ch.T, ch.n)  # row sums
    real = ch.real() if ch.ragged else None
    if real is not None:
        s[~real] = 1.0
    with np.errstate(invalid="ignore"):
        bad |= ~(np.abs(s - 1.0) <= FB_TOL).all(axis=0)
    s[:, bad] = 1.0
    gamma /= s[..., None]
    late = bad & ~early  # finite but inaccurate rows

    xi = None
    E = None
    if edges or counts:
        A, _ = ch.scaled_pairwise()
        if late.any():
            if alpha is None:  # consumed by the marginals: the forward sweep again (rare)
                alpha, _, _ = scaled_forward(ch)
            alpha[:, late] = 0.0
            if g is not None:
                g[:, late] = 0.0
                S = None
            else:  # one more backward sweep, with the late rows zeroed too
                _, _, S = scaled_backward(ch, c, alpha, bad.copy(), counts=True, keep_g=False)
        if edges:
            xi = alpha[:-1, :, :, None] * A * g[1:, :, None, :]  # (T-1, n, K, K)
            E = xi.sum(axis=(0, 1))
        elif S is not None:
            E = A * S
        else:
            E = scaled_edge_sum(ch, alpha, g)

    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        if ch.time_chunks is not None:  # chunk boundaries disagreed: redo these rows step by step
            sub.allow_time_chunks = False
            g2, lz2, xi2, E2 = chain_posterior(sub, edges, counts)
        else:
            g2, lz2, xi2, E2 = log_space_posterior(sub, edges, counts)
        Ts = sub.T
        gamma[:, rows] = 0.0
        gamma[:Ts, rows] = g2
        log_z[rows] = lz2
        if xi is not None:
            xi[:, rows] = 0.0
            xi[: max(Ts - 1, 0), rows] = xi2
        if E is not None:
            E = E + E2
    raise_if_impossible(ch, log_z)
    return gamma, log_z, xi, E


def chain_log_partition(ch):
    """Log-partition per row (internal order), scaled with log-space fallback."""
    if compiled.serves(ch):
        log_z, bad = compiled.compiled_log_partition(ch)
    else:
        _, c, bad = scaled_forward(ch, keep=False)
        log_z = scaled_log_partition(ch, c)
    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        if ch.time_chunks is not None:
            sub.allow_time_chunks = False
            log_z[rows] = chain_log_partition(sub)
        else:
            log_z[rows] = log_forward(sub)[1].sum(axis=0)
    return log_z


def chain_log_messages(ch):
    """True log forward and backward messages (T, n, K), internal order; -inf on padding."""
    alpha, c, bad = scaled_forward(ch)
    beta, _, _ = scaled_backward(ch, c, alpha, bad)
    _, off = ch.scaled_unary()
    _, pmax = ch.scaled_pairwise()
    with np.errstate(divide="ignore", invalid="ignore"):
        inc = np.log(c[..., 0]) + off  # (T, n): offset added at step t; 0 on padding
        inc[1:] += pmax  # transition into step t (per-step offsets are 0 on padding)
        if ch.ragged:
            inc[~ch.real()] = 0.0
        cum = np.cumsum(inc, axis=0)  # (T, n): offsets through step t
        la = np.log(alpha) + cum[..., None]
        lb = np.log(beta) + (cum[-1] - cum)[..., None]
    if ch.ragged:
        pad = ~ch.real()
        la[pad] = -np.inf
        lb[pad] = -np.inf
    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        la[:, rows] = -np.inf
        lb[:, rows] = -np.inf
        la2, logc2 = log_forward(sub)
        lb2 = log_backward(sub, logc2)
        cum = np.cumsum(logc2, axis=0)  # (T', m)
        with np.errstate(invalid="ignore"):
            la[: sub.T, rows] = la2 + cum[..., None]
            lb[: sub.T, rows] = lb2 + (cum[-1] - cum)[..., None]
    return la, lb


def log_partition(unary, pairwise, mask=None):
    """Log-partition ``log Z`` of each chain (the log-likelihood, for an HMM).

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
        Log unary potentials.
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
        Log pairwise potentials; ``pairwise[..., t, i, j]`` links state ``i`` at
        step ``t`` to ``j`` at ``t+1``.
    mask : ndarray of bool, shape (n, T), optional
        True on real steps, left-aligned. None means all steps are real.

    Returns
    -------
    log_z : ndarray of shape (n,)
        ``-inf`` for a row with no possible path.

    Raises
    ------
    ShapeError
        If the shapes disagree (K of ``unary`` vs ``pairwise``, ``mask``).
    EvidenceError
        If a row has length 0.
    ModelError
        If a potential is NaN or ``+inf`` at a real position.
    NumericalError
        If a row's ``log Z`` overflows to ``+inf`` from finite potentials (sums near the
        largest float).
    """
    ch = Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros(0)
    log_z = ch.rows_to_batch(chain_log_partition(ch))                  # (n,)
    if np.any(np.isposinf(log_z)):
        row = int(np.argmax(np.isposinf(log_z)))
        raise NumericalError(f"log_partition: log Z of row {row} overflows to +inf from finite potentials "
                             f"(their sums exceed the largest float, {np.finfo(np.float64).max:.3g}); "
                             f"rescale the potentials")
    return log_z


def forward_backward(unary, pairwise, mask=None, *, edges=False, counts=False):
    """Posterior marginals and log-partition of a batch of linear chains.

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
        Log unary potentials.
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
        Log pairwise potentials (``pairwise[..., t, i, j]``: ``i`` at ``t`` then ``j`` at ``t+1``).
    mask : ndarray of bool, shape (n, T), optional
        True on real steps, left-aligned.
    edges : bool, default False
        Also return the edge marginals ``(n, T-1, K, K)`` (and their sum).
    counts : bool, default False
        Also return the expected transition counts ``(K, K)`` summed over rows
        and steps, without building the edge marginals (for HMM M-steps and
        CRF gradients).

    Returns
    -------
    ChainPosterior
        ``.marginals`` (n, T, K) (0 beyond a row's length), ``.log_z`` (n,),
        ``.edge_marginals`` (n, T-1, K, K) if ``edges``, ``.edge_counts``
        (K, K) if ``edges`` or ``counts``.

    Raises
    ------
    ShapeError
        If the shapes disagree.
    EvidenceError
        If a row has length 0, or no possible path (``log Z = -inf``).
    ModelError
        If a potential is NaN or ``+inf`` at a real position.

    References
    ----------
    .. [1] Rabiner, "A tutorial on HMMs", 1989 (scaled forward-backward).
    """
    ch = Chain.from_batch(unary, pairwise, mask)
    K = ch.K
    if ch.n == 0:
        em = np.zeros((0, max(ch.T - 1, 0), K, K)) if edges else None
        ec = np.zeros((K, K)) if (edges or counts) else None
        return ChainPosterior(np.zeros((0, ch.T, K)), np.zeros(0), em, ec)
    gamma, log_z, xi, E = chain_posterior(ch, edges=edges, counts=counts)
    return ChainPosterior(
        marginals=ch.to_batch(gamma),
        log_z=ch.rows_to_batch(log_z),
        edge_marginals=None if xi is None else ch.to_batch(xi),
        edge_counts=E,
    )


def forward_messages(unary, pairwise, mask=None):
    """Log forward messages ``log alpha``.

    ``alpha[r, t, k]`` is the total weight of the paths over steps ``0..t`` that
    end in state ``k`` (unary of step ``t`` included), so that
    ``logsumexp(alpha[r, L-1]) = log Z``.

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
    mask : ndarray of bool, shape (n, T), optional

    Returns
    -------
    log_alpha : ndarray of shape (n, T, K)
        ``-inf`` beyond a row's length.
    """
    ch = Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros((0, ch.T, ch.K))
    la, _ = chain_log_messages(ch)
    return ch.to_batch(la)


def backward_messages(unary, pairwise, mask=None):
    """Log backward messages ``log beta``.

    ``beta[r, t, k]`` is the total weight of the continuations over steps
    ``t+1..L-1`` given state ``k`` at step ``t`` (0 at the last step), so that
    ``alpha + beta - log Z`` is the log marginal.

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
    mask : ndarray of bool, shape (n, T), optional

    Returns
    -------
    log_beta : ndarray of shape (n, T, K)
        ``-inf`` beyond a row's length.
    """
    ch = Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros((0, ch.T, ch.K))
    _, lb = chain_log_messages(ch)
    return ch.to_batch(lb)

