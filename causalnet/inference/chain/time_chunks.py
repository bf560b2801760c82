"""Time-chunked scaled sweeps for long, narrow batches (say one sequence of 10^5 steps).

Every row's steps are cut into ~sqrt(T) chunks. Each chunk's transfer matrix
is built for all chunks at once, boundary messages run chunk by chunk, and the
ordinary sweep then runs inside all chunks side by side: ~3 sqrt(T) Python
steps instead of 2 T, for K-fold more arithmetic. Chunk boundaries computed two
ways must agree; a row that disagrees is reported bad and redone step by step.
"""

from __future__ import annotations

import numpy as np

from .kernels import CHUNK_ELEMS, SCALE_FLOOR, add_atb, matmul_blocked

__all__ = [
    "TC_MIN_T", "TC_MAX_NK3", "TC_MAX_NK3_VITERBI", "TC_TOL",
    "use_time_chunks", "TimeChunks", "chunked_forward", "chunked_backward",
]

# pairwise) are swept in time chunks (see chunked_forward): ~3 sqrt(T) Python
# steps instead of 2 T, for K-fold more arithmetic.
TC_MIN_T = 1024
TC_MAX_NK3 = 1 << 15
TC_MAX_NK3_VITERBI = 1 << 10  # max-product chunks with -inf pairwise need a K**3 temporary per chunk
# Chunk-boundary messages computed two ways must agree to this (max-abs, on
# normalised vectors); a row that disagrees is recomputed without chunks.
TC_TOL = 1e-8

def use_time_chunks(ch, max_nk3=TC_MAX_NK3):
    return ch.allow_time_chunks and ch.shared and ch.T >= TC_MIN_T and ch.n * ch.K**3 <= max_nk3


class TimeChunks:
    """Every row's steps ``1..L-1`` cut into chunks of at most ``Lc`` steps.

    Chunks are sorted by length (longest first) so that the chunks alive at
    in-chunk step ``tau`` are the prefix ``[:counts[tau]]``.

    Attributes
    ----------
    Lc : int
    m : int
        Number of chunks.
    row, q, start, length : ndarray (m,)
        Row, index within the row, first step and length of each chunk.
    cid : ndarray of int, shape (n, max chunks per row)
        Chunk id of (row, q); -1 where the row has fewer chunks.
    nq : ndarray (n,)
        Chunks per row (non-increasing, as rows are sorted by length).
    counts : ndarray (Lc + 1,)
        Chunks alive at each in-chunk step (0 at ``Lc``).
    tt, rr : ndarray of int, shape (Lc, m)
        Step and row of each (tau, chunk); 0 where ``tau >= length``.
    valid : ndarray of bool, shape (Lc, m)
    """

    def __init__(self, ch):
        L = ch.lengths
        n = ch.n
        Lc = max(16, int(np.ceil(np.sqrt(ch.T))))
        nq = -(-(L - 1) // Lc)  # ceil((L - 1) / Lc)
        m = int(nq.sum())
        row = np.repeat(np.arange(n), nq)
        q = np.arange(m) - np.repeat(np.cumsum(nq) - nq, nq)
        start = 1 + q * Lc
        length = np.minimum(Lc, L[row] - start)
        o = np.argsort(-length, kind="stable")
        self.row, self.q, self.start, self.length = row[o], q[o], start[o], length[o]
        self.Lc, self.m, self.nq = Lc, m, nq
        self.cid = np.full((n, max(int(nq.max()), 1)), -1, dtype=np.intp)
        self.cid[self.row, self.q] = np.arange(m)
        self.counts = np.zeros(Lc + 1, dtype=np.intp)
        self.counts[:Lc] = m - np.searchsorted(self.length[::-1], np.arange(Lc), side="right")
        tau = np.arange(Lc)[:, None]
        self.valid = tau < self.length[None, :]  # (Lc, m)
        self.tt = np.where(self.valid, self.start[None, :] + tau, 0)
        self.rr = np.broadcast_to(self.row[None, :], (Lc, m))

    def gather(self, x):
        """(T, n, ...) -> (Lc, m, ...), 0 where invalid."""
        out = x[self.tt, self.rr]
        out[~self.valid] = 0.0
        return out

    def scatter(self, out, xc):
        """(Lc, m, ...) into (T, n, ...) at the valid positions."""
        v = self.valid
        out[self.tt[v], self.rr[v]] = xc[v]


def _normalise_rows(Q, rs):
    """Q (k, K, K) rows to sum 1 in place; add the log row sums to rs (k, K) (-inf for empty rows).

    Entries below ``SCALE_FLOOR`` are flushed to 0: subnormal operands make
    every later product crawl, and mass that small can only matter if the
    boundary check fails (then the row is redone without chunks).
    """
    k, K, _ = Q.shape
    rsum = matmul_blocked(Q.reshape(k * K, K), np.ones((K, 1)), out=np.empty((k * K, 1)))  # (k*K, 1)
    rsum = rsum.reshape(k, K)
    empty = rsum == 0
    if empty.any():
        rsum[empty] = 1.0
    Q /= rsum[:, :, None]
    with np.errstate(divide="ignore"):
        rs += np.log(rsum)
    if empty.any():
        rs[empty] = -np.inf
    np.copyto(Q, 0.0, where=Q < SCALE_FLOOR)


def _row_weights(rs):
    """exp(rs - max rs) per chunk, (k, K); all-zero rows stay zero."""
    mx = rs.max(axis=1, keepdims=True)
    mx[~np.isfinite(mx)] = 0.0
    return np.exp(rs - mx)


# Long by design: one hot recursion over time steps whose state (messages, scalers, counts) lives in
# local arrays; splitting it into helpers would add per-step calls and copies on the hot path.
def chunked_forward(ch):
    """Time-chunked scaled forward sweep; same contract as :func:`scaled_forward`.

    1. Each chunk's transfer matrix ``prod_t A diag(B_t)`` (rows kept normalised,
       with log row scales), all chunks at once: ``Lc`` batched products.
    2. The normalised forward message at every chunk boundary, chunk by chunk
       along each row (``max chunks per row`` small steps).
    3. The ordinary scaled sweep inside all chunks at once, from their entry
       messages (``Lc`` steps). Its message at each chunk's end must equal the
       boundary message from step 2: the check catches products that lost
       mass to underflow, and such rows are redone without chunks.
    """
    B, _ = ch.scaled_unary()
    A, _ = ch.scaled_pairwise()
    T, n, K = B.shape
    tc = TimeChunks(ch)
    m, Lc, cc = tc.m, tc.Lc, tc.counts
    Bc = tc.gather(B)  # (Lc, m, K)
    ones = np.ones((K, 1))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        # 1. transfer matrices
        Q = A[None, :, :] * Bc[0][:, None, :]  # (m, K, K)
        rs = np.zeros((m, K))
        _normalise_rows(Q, rs)
        Q2 = np.empty_like(Q)
        for tau in range(1, Lc):
            k = cc[tau]
            if k == 0:
                break
            matmul_blocked(Q[:k].reshape(k * K, K), A, out=Q2[:k].reshape(k * K, K))
            np.multiply(Q2[:k], Bc[tau, :k, None, :], out=Q[:k])
            _normalise_rows(Q[:k], rs[:k])
        # 2. boundary messages
        a = B[0].copy()  # (n, K)
        c0 = a @ ones  # (n, 1)
        a /= c0
        alpha0 = a.copy()
        entry = np.zeros((m, K))
        for qi in range(tc.cid.shape[1]):
            nr = int((tc.nq > qi).sum())
            if nr == 0:
                break
            ci = tc.cid[:nr, qi]
            entry[ci] = a[:nr]
            w = a[:nr] * _row_weights(rs[ci])  # (nr, K)
            v = np.matmul(w[:, None, :], Q[ci])[:, 0]  # (nr, K)
            a[:nr] = v / (v @ ones)
        # 3. inside the chunks
        ac = np.zeros((Lc, m, K))
        c_c = np.ones((Lc, m, 1))
        prev = entry
        for tau in range(Lc):
            k = cc[tau]
            if k == 0:
                break
            at, ct = ac[tau, :k], c_c[tau, :k]
            matmul_blocked(prev[:k], A, out=at)
            at *= Bc[tau, :k]
            np.matmul(at, ones, out=ct)
            at /= ct
            prev = ac[tau]
        bad = ~(c_c[..., 0] > SCALE_FLOOR).all(axis=0)  # (m,) per chunk
        last = ac[tc.length - 1, np.arange(m)]  # (m, K)
        has_next = tc.q + 1 < tc.nq[tc.row]
        succ = tc.cid[tc.row[has_next], tc.q[has_next] + 1]
        gap = np.zeros(m)
        gap[has_next] = np.abs(last[has_next] - entry[succ]).max(axis=1)
        bad |= ~(gap <= TC_TOL)
        bad_rows = np.zeros(n, dtype=bool)
        bad_rows[tc.row[bad]] = True
        bad_rows |= ~(c0[:, 0] > SCALE_FLOOR)

    alpha = np.zeros((T, n, K))
    c = np.ones((T, n, 1))
    alpha[0] = alpha0
    c[0] = c0
    tc.scatter(alpha, ac)
    tc.scatter(c, c_c)
    ch.time_chunks = (tc, Q, rs, Bc, ac, c_c)
    return alpha, c, bad_rows


# Long by design: one hot recursion over time steps whose state (messages, scalers, counts) lives in
# local arrays; splitting it into helpers would add per-step calls and copies on the hot path.
def chunked_backward(ch, alpha, bad, counts):
    """Time-chunked scaled backward sweep; same contract as :func:`scaled_backward`.

    Boundary messages run backwards through the forward sweep's transfer
    matrices; inside the chunks the ordinary scaled recursion runs from them,
    rescaled so that ``sum(alpha * beta) = 1`` at each chunk's last step. The
    message each chunk sends into the step before it must match the boundary
    message there; rows where it does not are added to ``bad``.
    """
    tc, Q, rs, Bc, ac, c_c = ch.time_chunks
    A, _ = ch.scaled_pairwise()
    T, n, K = ch.T, ch.n, ch.K
    m, Lc, cc = tc.m, tc.Lc, tc.counts
    AT = np.ascontiguousarray(A.T)
    ones = np.ones((K, 1))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        # boundary messages (normalised), last chunk of each row first
        exit_ = np.zeros((m, K))
        b = np.full((n, K), 1.0 / K)
        for qi in range(tc.cid.shape[1] - 1, -1, -1):
            nr = int((tc.nq > qi).sum())
            if nr == 0:
                continue
            ci = tc.cid[:nr, qi]
            exit_[ci] = b[:nr]
            v = np.matmul(Q[ci], b[:nr, :, None])[..., 0] * _row_weights(rs[ci])  # (nr, K)
            b[:nr] = v / (v @ ones)
        # inside the chunks
        bc = np.zeros((Lc, m, K))
        gc = np.zeros((Lc, m, K))
        for tau in range(Lc - 1, -1, -1):
            k, k1 = cc[tau], cc[tau + 1]
            if k == 0:
                continue
            if k1:
                matmul_blocked(gc[tau + 1, :k1], AT, out=bc[tau, :k1])
            bc[tau, k1:k] = exit_[k1:k]  # chunks whose last step is tau
            gt = gc[tau, :k]
            np.multiply(Bc[tau, :k], bc[tau, :k], out=gt)
            gt /= c_c[tau, :k]
        leave = gc[0] @ AT  # (m, K): message into the step before each chunk
        last = ac[tc.length - 1, np.arange(m)]
        kappa = 1.0 / (last * exit_).sum(axis=1)  # (m,)
        bc *= kappa[None, :, None]
        gc *= kappa[None, :, None]
        leave *= kappa[:, None]
        # leave must be proportional to the boundary message there
        prev_msg = np.empty((m, K))
        first = tc.q == 0
        prev_msg[first] = b[tc.row[first]]
        prev_msg[~first] = exit_[tc.cid[tc.row[~first], tc.q[~first] - 1]]
        ln = leave / (leave @ ones)
        gap = np.abs(ln - prev_msg).max(axis=1)
        chunk_bad = ~(gap <= TC_TOL) | ~np.isfinite(kappa)
        new_bad = np.zeros(n, dtype=bool)
        new_bad[tc.row[chunk_bad]] = True

    beta = np.zeros((T, n, K))
    g = np.zeros((T, n, K))
    tc.scatter(beta, bc)
    tc.scatter(g, gc)
    beta[0] = 1.0  # rows of length 1
    has = tc.nq > 0
    beta[0, has] = leave[tc.cid[has, 0]]
    if bad is None:
        bad = np.zeros(n, dtype=bool)
    bad |= new_bad
    if bad.any():
        for x in (alpha, beta, g):
            if x is not None:
                x[:, bad] = 0.0
    S = None
    if counts:
        S = np.zeros((K, K))
        step = max(1, CHUNK_ELEMS // max(1, n * K))
        for t0 in range(1, T, step):
            t1 = min(T, t0 + step)
            add_atb(alpha[t0 - 1 : t1 - 1].reshape(-1, K), g[t0:t1].reshape(-1, K), S)
    return beta, g, S
