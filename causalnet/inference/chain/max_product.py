"""Max-product (Viterbi) on chains: the most probable path of every row.

Shared finite pairwise: each step's ``max_i (d_i + P_ij)`` is one compiled
Chebyshev-distance pass (``scipy.spatial.distance.cdist``); otherwise a
broadcast-and-reduce. Back-pointers are re-derived from the stored
max-marginals while backtracking, ``O(n K)`` per step. Long narrow batches are
swept in time chunks between fixed chunk ends.

>>> import numpy as np
>>> paths, _ = viterbi(np.log([[[0.9, 0.1], [0.2, 0.8]]]), np.log([[0.7, 0.3], [0.3, 0.7]]))
>>> paths.tolist()
[[0, 1]]
"""

from __future__ import annotations

import numpy as np

from . import compiled
from .potentials import Chain, raise_if_impossible
from .time_chunks import TC_MAX_NK3, TC_MAX_NK3_VITERBI, TimeChunks, use_time_chunks

__all__ = ["chain_viterbi", "viterbi"]


def chain_viterbi(ch, uKT=None, consume_u=False):
    """Max-product sweep and backtrack (internal order).

    The max-marginals of step ``t`` are stored batch-last and contiguous,
    ``(K, counts[t])``, so every numpy call in the sweep runs on whole blocks;
    back-pointers are not stored but re-derived along the path while
    backtracking (``O(n K)`` per step, with the same float sums as the sweep).

    Parameters
    ----------
    uKT : ndarray of shape (K, T, n), optional
        The unary potentials state-first, for the broadcast sweep, when the
        caller has them (any strides; by default a view of ``ch.u``).
    consume_u : bool
        The fused sweep may work in ``ch.u``'s memory (the caller owns it).

    Returns
    -------
    z : ndarray of int, shape (T, n), -1 on padding
    score : ndarray of shape (n,)
    """
    if compiled.serves(ch):
        return compiled.compiled_viterbi(ch, consume_u)
    if use_time_chunks(ch, TC_MAX_NK3 if np.isfinite(ch.pw).all() else TC_MAX_NK3_VITERBI):
        return _viterbi_chunked(ch)
    if ch.shared and np.isfinite(ch.pw).all():
        return _viterbi_fused(ch, consume_u)
    T, n, K = ch.T, ch.n, ch.K
    cnt = ch.counts
    if uKT is None:
        uKT = ch.u.transpose(2, 0, 1)  # (K, T, n) view
    offs = np.zeros(T + 1, dtype=np.intp)
    np.cumsum(cnt * K, out=offs[1:])
    Dbuf = np.empty(int(offs[-1]))  # step t: (K, cnt[t]) max-marginals
    Mbuf = np.empty(K * K * n)
    D = [Dbuf[offs[t] : offs[t + 1]].reshape(K, cnt[t]) for t in range(T)]
    D[0][...] = uKT[:, 0, : cnt[0]]
    if ch.shared:
        P3 = ch.pw[:, :, None]  # (K_i, K_j, 1)
    else:
        pwT = np.ascontiguousarray(ch.pw.transpose(0, 2, 3, 1))  # (T-1, K_i, K_j, n)
    full = not ch.ragged
    for t in range(1, T):
        k = cnt[t]
        prev = D[t - 1] if full or cnt[t - 1] == k else D[t - 1][:, :k]  # (K, k)
        M = Mbuf[: K * K * k].reshape(K, K, k)
        if ch.shared:
            np.add(prev[:, None, :], P3, out=M)  # (K_i, K_j, k)
        else:
            np.add(prev[:, None, :], pwT[t - 1, :, :, :k] if not full else pwT[t - 1], out=M)
        Dt = D[t]
        np.max(M, axis=0, out=Dt)  # (K_j, k)
        Dt += uKT[:, t, :k]

    rows = np.arange(n)
    L1 = ch.lengths - 1
    last = Dbuf[offs[L1][:, None] + np.arange(K)[None, :] * cnt[L1][:, None] + rows[:, None]]  # (n, K)
    z = np.full((T, n), -1, dtype=np.intp)
    zl = last.argmax(axis=1)
    score = last[rows, zl]
    z[L1, rows] = zl
    cand = np.empty((n, K))
    if ch.shared:
        PT = np.ascontiguousarray(ch.pw.T)  # (K_j, K_i)
        for t in range(T - 2, -1, -1):
            k = cnt[t + 1]
            ck = cand[:k]
            np.add(D[t][:, :k].T, PT[z[t + 1, :k]], out=ck)  # (k, K_i)
            z[t, :k] = ck.argmax(axis=1)
    else:
        for t in range(T - 2, -1, -1):
            k = cnt[t + 1]
            ck = cand[:k]
            np.add(D[t][:, :k].T, ch.pw[t, rows[:k], :, z[t + 1, :k]], out=ck)
            z[t, :k] = ck.argmax(axis=1)
    return z, score


# Long by design: one hot recursion over time steps whose state (messages, scalers, counts) lives in
# local arrays; splitting it into helpers would add per-step calls and copies on the hot path.
def _viterbi_fused(ch, consume_u=False):
    """Max-product sweep with a fused max-plus kernel (shared, finite pairwise).

    ``max_i (d_i + P_ij)`` in one compiled pass: when every term is
    non-negative it equals the Chebyshev distance ``max_i |d_i - (-P_ij)|``
    between the row ``d`` and column ``j`` of ``-P``, which
    :func:`scipy.spatial.distance.cdist` computes for the whole batch without
    materialising the ``(n, K, K)`` terms. Non-negativity comes from shifting
    ``P`` by its minimum and each step's unary by its per-row minimum (so the
    max-marginals stay >= 0 by induction); the shifts are per-(step, row)
    constants, so back-pointers and the path are unchanged, and they are added
    back to the score. With ``-inf`` unaries the max-marginals are re-shifted
    every step instead, and steps holding ``-inf`` take the plain
    broadcast-and-reduce step.

    Same contract as :func:`chain_viterbi`; with ``consume_u`` the sweep works in
    ``ch.u``'s memory (and drops it from ``ch``).
    """
    from scipy.spatial.distance import cdist  # loaded on first use, not by ``import causalnet``
    P = ch.pw
    T, n, K = ch.T, ch.n, ch.K
    cnt = ch.counts
    u = ch.u  # (T, n, K), -inf on padding
    pmin = float(P.min())
    XB = np.ascontiguousarray(pmin - P.T)  # (K_j, K_i) = -(P - pmin).T, <= 0
    R = np.empty((n, K))
    # the shift of each step's unaries: their minimum over the whole step when
    # no row is padded (one cheap reduction), else per row; -inf exactly when a
    # real step has an impossible state
    if ch.ragged:
        umin = u.min(axis=-1)  # (T, n)
        umin[~ch.real()] = 0.0
    else:
        umin = np.broadcast_to(u.min(axis=(1, 2))[:, None], (T, n))  # (T, n), constant over rows
    finite = bool(np.isfinite(umin).all())
    if consume_u and finite:
        D = u
        ch.release_unary()  # the sweep overwrites u in place
    else:
        D = np.empty((T, n, K))  # max-marginals up to a per-(t, row) constant
    if finite:
        np.subtract(u, umin[..., None], out=D)  # shifted unaries, >= 0 on real steps
        for t in range(1, T):
            k = cnt[t]
            if k == 0:
                break
            cdist(D[t - 1, :k], XB, "chebyshev", out=R[:k])  # (k, K_j): max_i D_i + P_ij - pmin
            D[t, :k] += R[:k]
        off = umin.sum(axis=0) + pmin * (ch.lengths - 1)  # (n,)
    else:
        D[0] = u[0]
        off = np.zeros(n)
        Dp = np.empty((n, K))
        mbuf = np.empty(n)
        for t in range(1, T):
            k = cnt[t]
            if k == 0:
                break
            prev = D[t - 1, :k]  # (k, K)
            m = mbuf[:k]
            np.minimum.reduce(prev, axis=1, out=m)
            if m.min() == -np.inf:
                np.maximum.reduce(prev[:, :, None] + P, axis=1, out=D[t, :k])  # (k, K_i, K_j) -> (k, K_j)
                D[t, :k] += u[t, :k]
                continue
            dp = Dp[:k]
            np.subtract(prev, m[:, None], out=dp)  # >= 0
            cdist(dp, XB, "chebyshev", out=R[:k])
            np.add(R[:k], u[t, :k], out=D[t, :k])
            m += pmin
            off[:k] += m

    rows = np.arange(n)
    L1 = ch.lengths - 1
    last = D[L1, rows]  # (n, K)
    z = np.full((T, n), -1, dtype=np.intp)
    zl = last.argmax(axis=1)
    score = last[rows, zl] + off
    z[L1, rows] = zl
    PT = np.ascontiguousarray(P.T)  # (K_j, K_i)
    cand = np.empty((n, K))
    for t in range(T - 2, -1, -1):
        k = cnt[t + 1]
        ck = cand[:k]
        np.take(PT, z[t + 1, :k], axis=0, out=ck)  # (k, K_i): P[:, z_{t+1}]
        ck += D[t, :k]
        np.argmax(ck, axis=1, out=z[t, :k])
    return z, score


# Long by design: one hot recursion over time steps whose state (messages, scalers, counts) lives in
# local arrays; splitting it into helpers would add per-step calls and copies on the hot path.
def _viterbi_chunked(ch):
    """Time-chunked max-product for long, narrow batches; same contract as :func:`chain_viterbi`.

    1. Each chunk's max-product transfer matrix ``R[i, j]`` (best score from
       state ``i`` before the chunk to ``j`` at its last step), all chunks at once.
    2. Best scores at chunk boundaries, chunk by chunk along each row, keeping
       the best entry state of each chunk for each exit state.
    3. Backtrack through the boundaries: the path's state before and at the end
       of every chunk.
    4. Ordinary Viterbi inside all chunks at once, between those fixed ends.
    """
    from scipy.spatial.distance import cdist  # loaded on first use, not by ``import causalnet``
    P = ch.pw
    T, n, K = ch.T, ch.n, ch.K
    tc = TimeChunks(ch)
    m, Lc, cc = tc.m, tc.Lc, tc.counts
    u = ch.u
    uc = tc.gather(u)  # (Lc, m, K)
    # 1. transfer matrices
    R = P[None, :, :] + uc[0][:, None, :]  # (m, K_i, K_j)
    fused = np.isfinite(P).all() and np.isfinite(uc[tc.valid]).all()
    if fused:  # the max-plus product as a Chebyshev distance, as in _viterbi_fused
        pmin = float(P.min())
        XB = np.ascontiguousarray(pmin - P.T)  # (K_j, K_mid)
        Rs = np.empty_like(R)
    for tau in range(1, Lc):
        k = cc[tau]
        if k == 0:
            break
        if fused:
            rmin = R[:k].min(axis=2, keepdims=True)  # (k, K_i, 1)
            np.subtract(R[:k], rmin, out=Rs[:k])  # >= 0
            cdist(Rs[:k].reshape(k * K, K), XB, "chebyshev", out=R[:k].reshape(k * K, K))
            rmin += pmin
            R[:k] += rmin
        else:
            W = R[:k, :, :, None] + P[None, None, :, :]  # (k, K_i, K_mid, K_j)
            np.maximum.reduce(W, axis=2, out=R[:k])
        R[:k] += uc[tau, :k, None, :]
    # 2. boundary scores, with the best entry state per exit state
    delta = u[0].copy()  # (n, K)
    entry_state = np.zeros((m, K), dtype=np.intp)
    for qi in range(tc.cid.shape[1]):
        nr = int((tc.nq > qi).sum())
        if nr == 0:
            break
        ci = tc.cid[:nr, qi]
        M = delta[:nr, :, None] + R[ci]  # (nr, K_i, K_j)
        entry_state[ci] = M.argmax(axis=1)
        delta[:nr] = M.max(axis=1)
    rows = np.arange(n)
    zl = delta.argmax(axis=1)
    score = delta[rows, zl]
    # 3. backtrack through the boundaries
    z_end = np.zeros(m, dtype=np.intp)
    z_before = np.zeros(m, dtype=np.intp)
    cur = zl.copy()
    for qi in range(tc.cid.shape[1] - 1, -1, -1):
        nr = int((tc.nq > qi).sum())
        if nr == 0:
            continue
        ci = tc.cid[:nr, qi]
        z_end[ci] = cur[:nr]
        cur[:nr] = entry_state[ci, cur[:nr]]
        z_before[ci] = cur[:nr]
    # 4. inside the chunks, between fixed ends
    uc[0] += P[z_before]  # the transition from the fixed state before the chunk
    ends = uc[tc.length - 1, np.arange(m)]  # (m, K)
    keep = np.arange(K)[None, :] == z_end[:, None]
    uc[tc.length - 1, np.arange(m)] = np.where(keep, ends, -np.inf)
    uc[~tc.valid] = -np.inf
    inner = Chain(uc, P, tc.length, None)
    inner.allow_time_chunks = False
    zc, _ = chain_viterbi(inner)  # (Lc, m)
    z = np.full((T, n), -1, dtype=np.intp)
    z[0] = cur
    tc.scatter(z, zc)
    return z, score


def viterbi(unary, pairwise, mask=None):
    """Most probable path of each chain (max-product, log space).

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
    mask : ndarray of bool, shape (n, T), optional

    Returns
    -------
    paths : ndarray of int, shape (n, T)
        State indices; -1 beyond a row's length. Ties go to the lowest index.
    scores : ndarray of shape (n,)
        Unnormalised log score of each path (``score - log Z`` is its log
        probability; for an HMM the score is ``log p(x, path)``).

    Raises
    ------
    EvidenceError
        If a row has no possible path, or length 0.
    ShapeError, ModelError
        As for :func:`forward_backward`.
    """
    ch = Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros((0, ch.T), dtype=np.intp), np.zeros(0)
    z, score = chain_viterbi(ch)
    raise_if_impossible(ch, score)
    return ch.to_batch(z), ch.rows_to_batch(score)

