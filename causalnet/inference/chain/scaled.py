"""Scaled (probability-space) forward and backward sweeps, Rabiner's normalisers.

Each step is one batched ``alpha @ A`` product over the live prefix of the
batch, so Python loops only over time. With a shared pairwise and the numba
backend on, both sweeps hand over to the compiled kernels
(:mod:`.compiled`), which have the same contracts. Rows whose per-step normalisers
underflow are flagged ``bad`` for the caller to redo in log space
(:mod:`.log_space`); long narrow batches go to :mod:`.time_chunks`.
"""

from __future__ import annotations

import numpy as np

from . import compiled
from .kernels import BLAS_MNK, CHUNK_ELEMS, SCALE_FLOOR, Rolling, add_atb, matmul_blocked
from .time_chunks import chunked_backward, chunked_forward, use_time_chunks

__all__ = ["scaled_forward", "scaled_backward", "scaled_edge_sum", "scaled_log_partition"]


def scaled_forward(ch, keep=True):
    """Normalised forward messages.

    Parameters
    ----------
    keep : bool
        Keep every step's messages; with False only the normalisers are kept
        (enough for ``log Z``; saves allocating ``(T, n, K)``).

    Returns
    -------
    alpha : ndarray of shape (T, n, K), or None without ``keep``
        ``alpha[t]`` sums to 1 over states on real steps, 0 on padding.
    c : ndarray of shape (T, n, 1)
        Per-step normalisers (1 on padding).
    bad : ndarray of bool, shape (n,)
        Rows whose normalisers underflowed: their alpha and c are garbage.
    """
    if compiled.serves(ch):
        return compiled.compiled_forward(ch, keep)
    if use_time_chunks(ch):
        return chunked_forward(ch)
    B, _ = ch.scaled_unary()
    A, _ = ch.scaled_pairwise()
    T, n, K = B.shape
    cnt = ch.counts
    full = not ch.ragged
    if keep:
        alpha = np.empty((T, n, K)) if full else np.zeros((T, n, K))
    else:
        alpha = Rolling(np.zeros((2, n, K)))  # step t lives in slot t % 2
    c = np.ones((T, n, 1))
    ones = np.ones((K, 1))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        a0 = alpha[0]
        np.copyto(a0, B[0])
        np.matmul(a0, ones, out=c[0])
        a0 /= c[0]
        # per step: one batched product, one multiply, the normaliser (as a
        # product with ones: cheaper than a reduction), one divide
        if ch.shared:
            mm = matmul_blocked if n * K * K > BLAS_MNK else np.matmul
            for t in range(1, T):
                if full:
                    at, ct = alpha[t], c[t]
                    mm(alpha[t - 1], A, out=at)
                    at *= B[t]
                else:
                    k = cnt[t]
                    at, ct = alpha[t, :k], c[t, :k]  # (k, K), (k, 1)
                    mm(alpha[t - 1, :k], A, out=at)
                    at *= B[t, :k]
                np.matmul(at, ones, out=ct)
                at /= ct
        else:
            for t in range(1, T):
                k = cnt[t]
                at, ct = alpha[t, :k], c[t, :k]
                np.matmul(alpha[t - 1, :k, None, :], A[t - 1, :k], out=at[:, None, :])  # (k, 1, K)
                at *= B[t, :k]
                np.matmul(at, ones, out=ct)
                at /= ct
        bad = ~(c[..., 0] > SCALE_FLOOR).all(axis=0)  # NaN compares False -> bad
    return (alpha if keep else None), c, bad


# Long by design: one hot recursion over time steps whose state (messages, scalers, counts) lives in
# local arrays; splitting it into helpers would add per-step calls and copies on the hot path.
def scaled_backward(ch, c, alpha=None, bad=None, counts=False, keep_g=True):
    """Normalised backward messages and the "emission-weighted" messages.

    Parameters
    ----------
    c : ndarray of shape (T, n, 1)
        Forward normalisers.
    alpha, bad : ndarray, optional
        The forward messages and the rows already known bad; bad rows get zero
        alpha and g (so no NaN reaches the edge sums). After a time-chunked
        forward, rows whose chunk boundaries disagree are added to ``bad`` (in
        place) and zeroed too.
    counts : bool
        Also accumulate ``S = sum_t alpha[t-1].T @ g[t]`` (shared pairwise), so
        that the expected transition counts are ``A * S``.
    keep_g : bool
        Keep every step's ``g`` (else two rolling buffers, and ``g`` is returned
        as None). Ignored after a time-chunked forward.

    Returns
    -------
    beta : ndarray of shape (T, n, K)
        Scaled so that ``alpha[t] * beta[t]`` sums to 1 over states.
    g : ndarray of shape (T, n, K)
        ``B[t] * beta[t] / c[t]`` (0 at t=0 and on padding); then
        ``xi_t = alpha[t][:, :, None] * A * g[t+1][:, None, :]``.
    S : ndarray of shape (K, K) or None
    """
    if ch.time_chunks is not None:
        return chunked_backward(ch, alpha, bad, counts)
    if compiled.serves(ch):
        return compiled.compiled_backward(ch, c, alpha, bad, counts, keep_g)
    B, _ = ch.scaled_unary()
    A, _ = ch.scaled_pairwise()
    T, n, K = B.shape
    cnt = ch.counts
    full = not ch.ragged
    if bad is not None and bad.any():
        c = c.copy()
        c[:, bad] = np.inf  # g = 0 and beta = 0 on bad rows
        if alpha is not None:
            alpha[:, bad] = 0.0
    beta = np.empty((T, n, K)) if full else np.zeros((T, n, K))
    if keep_g:
        g = np.empty((T, n, K)) if full else np.zeros((T, n, K))
        g[0] = 0.0
    else:
        g = Rolling(np.zeros((2, n, K)))
    beta[T - 1, : cnt[T - 1]] = 1.0
    S = np.zeros((K, K)) if (counts and ch.shared) else None
    St = np.empty((K, K))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        if ch.shared:
            AT = np.ascontiguousarray(A.T)
            big = n * K * K > BLAS_MNK
            mm = matmul_blocked if big else np.matmul
            for t in range(T - 1, 0, -1):
                if full:
                    gt = g[t]
                    np.multiply(B[t], beta[t], out=gt)
                    gt /= c[t]
                    mm(gt, AT, out=beta[t - 1])
                    if S is not None:
                        if big:
                            add_atb(alpha[t - 1], gt, S)
                        else:
                            np.matmul(alpha[t - 1].T, gt, out=St)  # (K, K)
                            S += St
                else:
                    k = cnt[t]
                    gt = g[t, :k]  # (k, K)
                    np.multiply(B[t, :k], beta[t, :k], out=gt)
                    gt /= c[t, :k]
                    mm(gt, AT, out=beta[t - 1, :k])
                    beta[t - 1, k : cnt[t - 1]] = 1.0  # rows whose last step is t-1
                    if S is not None:
                        if big:
                            add_atb(alpha[t - 1, :k], gt, S)
                        else:
                            np.matmul(alpha[t - 1, :k].T, gt, out=St)
                            S += St
        else:
            for t in range(T - 1, 0, -1):
                k = cnt[t]
                gt = g[t, :k]
                np.multiply(B[t, :k], beta[t, :k], out=gt)
                gt /= c[t, :k]
                np.matmul(A[t - 1, :k], gt[:, :, None], out=beta[t - 1, :k, :, None])  # (k, K, 1)
                beta[t - 1, k : cnt[t - 1]] = 1.0
    return beta, (g if keep_g else None), S


def scaled_edge_sum(ch, alpha, g):
    """Expected transition counts from scaled messages, (K, K); bad rows must be zeroed."""
    A, _ = ch.scaled_pairwise()
    K = ch.K
    cnt = ch.counts
    if ch.shared:
        S = np.zeros((K, K))
        for t in range(1, ch.T):
            k = cnt[t]
            add_atb(alpha[t - 1, :k], g[t, :k], S)
        return A * S
    E = np.zeros((K, K))
    step = max(1, CHUNK_ELEMS // max(1, ch.n * K * K))
    for t0 in range(0, ch.T - 1, step):
        t1 = min(ch.T - 1, t0 + step)
        E += np.einsum("tni,tnij,tnj->ij", alpha[t0:t1], A[t0:t1], g[t0 + 1 : t1 + 1], optimize=True)
    return E


def scaled_log_partition(ch, c):
    """Per-row log-partition from the scaled sweep (internal order)."""
    _, off = ch.scaled_unary()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(c[..., 0]).sum(axis=0) + off.sum(axis=0) + ch.pair_offset()

