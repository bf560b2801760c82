"""Log-space forward and backward sweeps: the fallback and the reference.

Log-sum-exp throughout, but each step shifted by its log-normaliser so messages
stay O(1) over any length. Used for rows whose scaled sweep underflowed, and by
tests as the reference the fast sweeps must equal.
"""

from __future__ import annotations

import numpy as np

from .kernels import CHUNK_ELEMS, logsumexp_into

__all__ = ["log_forward", "log_backward", "log_space_posterior"]


def log_forward(ch):
    """Normalised log forward messages.

    Log space throughout, but each step is shifted by its log-normaliser (the
    log-space twin of scaling), so the messages stay O(1) however long the
    chain: adding up unnormalised log messages over ``10^5`` steps would lose
    ~1e-6 of absolute precision to rounding.

    Returns
    -------
    la : ndarray of shape (T, n, K)
        ``log alpha[t] - sum(logc[:t+1])``: logsumexp over states is 0 on real
        steps; -inf on padding.
    logc : ndarray of shape (T, n)
        Per-step log-normalisers (0 on padding); ``log Z = logc.sum(0)``.
    """
    u, pw, cnt = ch.u, ch.pw, ch.counts
    T = ch.T
    la = np.full(u.shape, -np.inf)
    logc = np.zeros((T, ch.n))
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        for t in range(T):
            k = cnt[t]
            at = la[t, :k]
            if t == 0:
                at[...] = u[0]
            else:
                P = pw if ch.shared else pw[t - 1, :k]
                M = la[t - 1, :k, :, None] + P  # (k, K, K)
                logsumexp_into(M, 1, at)
                at += u[t, :k]
            lc = logc[t, :k]
            logsumexp_into(at.copy(), 1, lc)
            at -= np.where(np.isfinite(lc), lc, 0.0)[:, None]
    return la, logc


def log_backward(ch, logc):
    """Normalised log backward messages, shape (T, n, K).

    ``log beta[t] - sum(logc[t+1:])``, so that ``exp(la + lb)`` is the marginal;
    0 at each row's last step, -inf on padding.
    """
    u, pw, cnt = ch.u, ch.pw, ch.counts
    T = ch.T
    lb = np.full(u.shape, -np.inf)
    lb[T - 1, : cnt[T - 1]] = 0.0
    lcs = np.where(np.isfinite(logc), logc, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        for t in range(T - 1, 0, -1):
            k = cnt[t]
            P = pw if ch.shared else pw[t - 1, :k]
            M = P + (lb[t, :k] + u[t, :k] - lcs[t, :k, None])[:, None, :]  # (k, K, K)
            logsumexp_into(M, 2, lb[t - 1, :k])
            lb[t - 1, k : cnt[t - 1]] = 0.0
    return lb


def log_space_posterior(ch, edges, counts):
    """Everything forward_backward needs, in log space (internal order)."""
    la, logc = log_forward(ch)
    lb = log_backward(ch, logc)
    log_z = logc.sum(axis=0)  # the caller raises on -inf rows
    with np.errstate(under="ignore", invalid="ignore", over="ignore", divide="ignore"):
        gamma = np.exp(la + lb)  # (T, n, K)
        gamma /= np.where(ch.real(), gamma.sum(-1), 1.0)[..., None]
    xi = None
    E = None
    if edges or counts:
        K = ch.K
        if edges:
            xi = np.zeros((max(ch.T - 1, 0), ch.n, K, K))
        E = np.zeros((K, K))
        step = max(1, CHUNK_ELEMS // max(1, ch.n * K * K))
        lcs = np.where(np.isfinite(logc), logc, 0.0)
        for t0 in range(0, ch.T - 1, step):
            t1 = min(ch.T - 1, t0 + step)
            P = ch.pw if ch.shared else ch.pw[t0:t1]
            nxt = ch.u[t0 + 1 : t1 + 1] + lb[t0 + 1 : t1 + 1] - lcs[t0 + 1 : t1 + 1, :, None]  # (dt, n, K)
            with np.errstate(under="ignore", invalid="ignore"):
                x = np.exp(la[t0:t1, :, :, None] + P + nxt[:, :, None, :])  # (dt, n, K, K)
            if edges:
                xi[t0:t1] = x
            E += x.sum(axis=(0, 1))
    return gamma, log_z, xi, E

