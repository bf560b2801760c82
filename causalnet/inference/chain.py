"""Exact inference on linear chains: the engine under HMMs and linear-chain CRFs.

A batch of ``n`` chains over ``T`` steps with ``K`` states each is given by
potentials in **log space**:

* ``unary`` of shape ``(n, T, K)``: ``unary[r, t, k]`` scores state ``k`` at step ``t``;
* ``pairwise`` of shape ``(K, K)`` (shared by every step and row) or
  ``(n, T-1, K, K)``: ``pairwise[..., t, i, j]`` scores ``i`` at step ``t``
  followed by ``j`` at step ``t+1``;
* ``mask`` of shape ``(n, T)``, bool, True on real steps. Ragged rows are
  left-aligned (row ``r`` has ``lengths[r] = mask[r].sum()`` real steps, all at
  the front); ``None`` means every step is real.

The distribution of row ``r`` over paths ``y`` of its length ``L`` is

    p(y) = exp(sum_t unary[r, t, y_t] + sum_t pairwise[r, t, y_t, y_{t+1}]) / Z_r

An HMM is the special case ``unary[:, 0] = log pi + log b(x_0)``,
``unary[:, t] = log b(x_t)``, ``pairwise = log A``; then ``log Z`` is the
log-likelihood of the observations.

Engines
-------
Sums run in probability space with per-step normalisers ("scaling", Rabiner
1989): each step is one batched ``alpha @ A`` product over the whole batch, so
Python loops only over time. Every row whose normalisers underflow (or whose
forward and backward passes disagree, the sign of silently lost mass) is
recomputed in log space with log-sum-exp (itself normalised per step, so
nothing is lost to rounding over 10^5 steps), so the answer is finite wherever
the exact answer is. Maxima (Viterbi) run in log space; with a shared finite
pairwise each step's max-plus product ``max_i (d_i + P_ij)`` is one compiled
pass (shifted to be non-negative, it is a Chebyshev distance, so
``scipy.spatial.distance.cdist`` does it for the whole batch), otherwise a
broadcast-and-reduce. The path is recovered by re-deriving each back-pointer
from the stored max-marginals, ``O(n K)`` per step (no back-pointer table).

Rows are internally sorted by length (longest first), so at step ``t`` only a
prefix of the batch is live and padding costs nothing. Long and narrow batches
(say one sequence of 10^5 steps) are cut into ~sqrt(T) chunks that are swept
side by side, joined by the chunks' transfer matrices; chunk boundaries are
checked against each other and a row that disagrees is redone step by step.

Legend: ``n`` batch rows, ``T`` steps, ``K`` states.

Examples
--------
>>> import numpy as np
>>> from causalnet.inference.chain import forward_backward, viterbi
>>> unary = np.log([[[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]])   # (1, 3, 2)
>>> pairwise = np.log([[0.7, 0.3], [0.3, 0.7]])              # (2, 2)
>>> post = forward_backward(unary, pairwise)
>>> post.marginals.shape, np.allclose(post.marginals.sum(-1), 1)
((1, 3, 2), True)
>>> paths, scores = viterbi(unary, pairwise)
>>> paths.tolist()
[[0, 1, 1]]

References
----------
.. [1] L. R. Rabiner, "A tutorial on hidden Markov models and selected
       applications in speech recognition", Proc. IEEE 77(2), 1989.
.. [2] C. Sutton, A. McCallum, "An introduction to conditional random
       fields", Foundations and Trends in ML 4(4), 2012, sec. 4.1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from ..errors import EvidenceError, ModelError, ShapeError

__all__ = [
    "ChainPosterior",
    "log_partition",
    "forward_backward",
    "viterbi",
    "sample_paths",
    "forward_messages",
    "backward_messages",
]

# A row whose per-step normaliser falls to or below this is recomputed in log
# space: every term that can matter is then far above the subnormal range.
_SCALE_FLOOR = 1e-250
# ... and so is a row whose posterior rows do not sum to 1 to this tolerance
# (forward and backward disagree only when scaling dropped mass).
_FB_TOL = 1e-9
# Element budget of one temporary in the chunked log-space edge sums.
_CHUNK_ELEMS = 1 << 22
# Long and narrow batches (T >= _TC_MIN_T, n * K**3 <= _TC_MAX_NK3, shared
# pairwise) are swept in time chunks (see _chunked_forward): ~3 sqrt(T) Python
# steps instead of 2 T, for K-fold more arithmetic.
_TC_MIN_T = 1024
_TC_MAX_NK3 = 1 << 15
_TC_MAX_NK3_VITERBI = 1 << 10  # max-product chunks with -inf pairwise need a K**3 temporary per chunk
# Chunk-boundary messages computed two ways must agree to this (max-abs, on
# normalised vectors); a row that disagrees is recomputed without chunks.
_TC_TOL = 1e-8
# Matrix products are cut into row blocks of at most this many multiply-adds:
# OpenBLAS runs smaller ones on one thread, and the per-step products are far
# too small to gain from threads, which thrash (10x slower) on a busy machine.
_BLAS_MNK = 1 << 18


def _mm(a, b, out):
    """``out = a @ b`` for 2-D operands, in row blocks of at most ``_BLAS_MNK`` multiply-adds."""
    M, K = a.shape
    step = max(1, _BLAS_MNK // max(1, K * b.shape[1]))
    if M <= step:
        return np.matmul(a, b, out=out)
    for i in range(0, M, step):
        np.matmul(a[i : i + step], b, out=out[i : i + step])
    return out


def _atb_into(a, b, acc):
    """``acc += a.T @ b`` for a (R, K), b (R, N), in blocks of rows."""
    R, K = a.shape
    step = max(1, _BLAS_MNK // max(1, K * b.shape[1]))
    for i in range(0, R, step):
        acc += a[i : i + step].T @ b[i : i + step]
    return acc


@dataclass(frozen=True)
class ChainPosterior:
    """Posterior summaries of a batch of chains (see :func:`forward_backward`).

    Attributes
    ----------
    marginals : ndarray of shape (n, T, K)
        ``p(y_t = k)``; rows beyond a sequence's length are 0.
    log_z : ndarray of shape (n,)
        Log-partition (log-likelihood for an HMM) of each row.
    edge_marginals : ndarray of shape (n, T-1, K, K) or None
        ``p(y_t = i, y_{t+1} = j)``; transitions beyond a row's length are 0.
        Only when requested with ``edges=True``.
    edge_counts : ndarray of shape (K, K) or None
        Expected transition counts: ``edge_marginals`` summed over rows and
        steps. Only when requested with ``edges=True`` or ``counts=True``.
    """

    marginals: np.ndarray
    log_z: np.ndarray
    edge_marginals: np.ndarray | None = None
    edge_counts: np.ndarray | None = None


# ---------------------------------------------------------------------------
# the chain in the engine's layout
# ---------------------------------------------------------------------------


class _Chain:
    """A validated batch of chains in the engine's internal layout.

    Time-major, rows sorted by length (longest first) so that the rows alive at
    step ``t`` are the prefix ``[:counts[t]]``.

    Attributes
    ----------
    u : ndarray of shape (T, n, K)
        Log unary potentials; ``-inf`` on padding.
    pw : ndarray of shape (K, K) or (T-1, n, K, K)
        Log pairwise potentials (per-step ones are 0 on padding).
    lengths : ndarray of shape (n,)
        Lengths in internal order (non-increasing).
    order : ndarray of shape (n,) or None
        ``order[i]`` is the caller's row held at internal row ``i``; None when
        the two orders agree.
    counts : ndarray of shape (T,)
        Rows alive at each step.
    """

    def __init__(self, u, pw, lengths, order, *, shape=None, scaled_u=None, u_fn=None):
        # Callers that hold probability-space unaries (HMMs) pass ``scaled_u=(B, off)``
        # and ``u_fn`` (computes ``u`` on demand, for log-space fallback and Viterbi).
        self._u = u
        self._u_fn = u_fn
        self.pw = pw
        self.lengths = lengths
        self.order = order
        self.T, self.n, self.K = u.shape if shape is None else shape
        self.shared = pw.ndim == 2
        srt = lengths[::-1]  # ascending
        self.counts = self.n - np.searchsorted(srt, np.arange(self.T), side="right")
        self.ragged = bool(self.n and lengths[-1] < self.T)
        self._scaled_u = scaled_u
        self._scaled_pw = None
        self._tc = None  # time-chunk state, set by a chunked forward sweep
        self.allow_time_chunks = True

    @property
    def u(self):
        if self._u is None:
            self._u = self._u_fn()
        return self._u

    # -- construction -------------------------------------------------------

    @classmethod
    def from_batch(cls, unary, pairwise, mask):
        unary, pairwise, mask, lengths = _validate(unary, pairwise, mask)
        n, T, K = unary.shape
        order = None
        if n and lengths.min() < T:
            order = np.argsort(-lengths, kind="stable")
            if np.array_equal(order, np.arange(n)):
                order = None
        rows = slice(None) if order is None else order
        # copies whenever padding is overwritten, so the caller's arrays are never touched
        u = np.array(unary[rows].transpose(1, 0, 2), order="C", copy=True if mask is not None else None)  # (T, n, K)
        lens = lengths[rows]
        if mask is not None:
            real = np.arange(T)[:, None] < lens[None, :]  # (T, n)
            u[~real] = -np.inf
        if pairwise.ndim == 4:
            pw = np.array(pairwise[rows].transpose(1, 0, 2, 3), order="C", copy=True if mask is not None else None)  # (T-1, n, K, K)
            if mask is not None and T > 1:
                live = np.arange(T - 1)[:, None] < (lens[None, :] - 1)  # (T-1, n)
                pw[~live] = 0.0
        else:
            pw = pairwise
        return cls(u, pw, np.ascontiguousarray(lens), order)

    def subset(self, rows):
        """The chain restricted to internal rows ``rows`` (sorted ascending)."""
        lens = self.lengths[rows]
        T = int(lens[0]) if len(lens) else 0
        u = self.u[:T, rows]
        pw = self.pw if self.shared else self.pw[: max(T - 1, 0), rows]
        return _Chain(np.ascontiguousarray(u), np.ascontiguousarray(pw), lens, None)

    # -- helpers -------------------------------------------------------------

    def real(self):
        """(T, n) bool: True on real steps (internal order)."""
        return np.arange(self.n)[None, :] < self.counts[:, None]

    def to_batch(self, x):
        """Internal time-major ``(T', n, ...)`` -> caller's ``(n, T', ...)``."""
        x = np.swapaxes(x, 0, 1)  # (n, T', ...)
        if self.order is None:
            return np.ascontiguousarray(x)
        out = np.empty_like(x)
        out[self.order] = x
        return out

    def rows_to_batch(self, x):
        """Internal ``(n, ...)`` -> caller's order."""
        if self.order is None:
            return x
        out = np.empty_like(x)
        out[self.order] = x
        return out

    def scaled_unary(self):
        """``B = exp(u - off)`` with ``off`` the per-(t, row) max; B is 0 on padding."""
        if self._scaled_u is None:
            u = self.u
            off = u.max(axis=-1)  # (T, n)
            off[~np.isfinite(off)] = 0.0  # padding / impossible steps
            B = u - off[..., None]
            np.exp(B, out=B)  # (T, n, K)
            self._scaled_u = (B, off)
        return self._scaled_u

    def scaled_pairwise(self):
        """``A = exp(pw - pmax)`` with ``pmax`` the max over (i, j) (per step if per-step)."""
        if self._scaled_pw is None:
            pw = self.pw
            pmax = pw.max(axis=(-2, -1))  # () or (T-1, n)
            pmax = np.where(np.isfinite(pmax), pmax, 0.0)
            A = np.exp(pw - pmax[..., None, None])
            self._scaled_pw = (A, pmax)
        return self._scaled_pw

    def pair_offset(self):
        """Per-row sum of the pairwise scale offsets over real transitions, shape (n,)."""
        A, pmax = self.scaled_pairwise()
        if self.shared:
            return pmax * (self.lengths - 1)
        return pmax.sum(axis=0)  # padding offsets are 0


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def _validate(unary, pairwise, mask):
    unary = np.asarray(unary, dtype=np.float64)
    if unary.ndim != 3:
        raise ShapeError(f"unary potentials must have shape (n, T, K); got shape {unary.shape}")
    n, T, K = unary.shape
    if K == 0:
        raise ShapeError(f"unary potentials have K=0 states (shape {unary.shape}); a chain needs at least one state")
    pairwise = np.asarray(pairwise, dtype=np.float64)
    if pairwise.ndim == 2:
        if pairwise.shape != (K, K):
            raise ShapeError(
                f"pairwise potentials have shape {pairwise.shape}; unary has K={K} states, so expected "
                f"({K}, {K}) or (n, T-1, K, K) = ({n}, {max(T - 1, 0)}, {K}, {K})"
            )
    elif pairwise.ndim == 4:
        if pairwise.shape != (n, max(T - 1, 0), K, K):
            raise ShapeError(
                f"per-step pairwise potentials have shape {pairwise.shape}; unary has shape {unary.shape}, so "
                f"expected (n, T-1, K, K) = ({n}, {max(T - 1, 0)}, {K}, {K})"
            )
    else:
        raise ShapeError(
            f"pairwise potentials must have shape (K, K) or (n, T-1, K, K); got shape {pairwise.shape}"
        )

    if mask is None:
        lengths = np.full(n, T, dtype=np.intp)
        real = None
    else:
        mask = np.asarray(mask)
        if mask.shape != (n, T):
            raise ShapeError(f"mask must have shape (n, T) = ({n}, {T}) like unary; got shape {mask.shape}")
        if mask.dtype != bool:
            if not np.isin(mask, (0, 1)).all():
                raise ShapeError(f"mask must be boolean (or 0/1); got dtype {mask.dtype} with other values")
            mask = mask.astype(bool)
        lengths = mask.sum(axis=1).astype(np.intp)
        real = np.arange(T)[None, :] < lengths[:, None]  # (n, T)
        if not np.array_equal(real, mask):
            r = int(np.flatnonzero((real != mask).any(axis=1))[0])
            t = int(np.flatnonzero(mask[r] & ~real[r])[0])
            raise ShapeError(
                f"mask row {r} is not left-aligned: step {t} is real after a padding step; "
                f"ragged sequences must hold their steps at the front"
            )
        if mask.all():
            mask = None
            real = None
    if n and (T == 0 or lengths.min() == 0):
        r = int(np.flatnonzero(lengths == 0)[0])
        raise EvidenceError(f"sequence (row) {r} has length 0; every sequence needs at least one step")

    _check_finite(unary, "unary", real)
    if pairwise.ndim == 2:
        _check_finite(pairwise, "pairwise", None)
    elif T > 1:
        live = None if real is None else real[:, 1:]  # transition t -> t+1 is real iff step t+1 is
        _check_finite(pairwise, "pairwise", live)
    return unary, pairwise, mask, lengths


def _check_finite(x, name, real):
    """Raise on NaN or +inf at real positions (``-inf`` is a legal log-zero)."""
    bad = np.isnan(x) | (x == np.inf)
    if not bad.any():
        return
    if real is not None:
        bad &= real.reshape(real.shape + (1,) * (x.ndim - real.ndim))
        if not bad.any():
            return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    val = x[where]
    axes = {"unary": ("row", "step", "state"), "pairwise": ("row", "step", "from", "to")}[name]
    if x.ndim == 2:
        axes = ("from", "to")
    at = ", ".join(f"{a} {i}" for a, i in zip(axes, where))
    raise ModelError(f"{name} potentials must be finite or -inf; got {val} at {at}")


# ---------------------------------------------------------------------------
# scaled (probability-space) sweeps
# ---------------------------------------------------------------------------


def _scaled_forward(ch, keep=True):
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
    if _use_time_chunks(ch):
        return _chunked_forward(ch)
    B, _ = ch.scaled_unary()
    A, _ = ch.scaled_pairwise()
    T, n, K = B.shape
    cnt = ch.counts
    full = not ch.ragged
    if keep:
        alpha = np.empty((T, n, K)) if full else np.zeros((T, n, K))
    else:
        alpha = _Rolling(np.zeros((2, n, K)))  # step t lives in slot t % 2
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
            mm = _mm if n * K * K > _BLAS_MNK else np.matmul
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
        bad = ~(c[..., 0] > _SCALE_FLOOR).all(axis=0)  # NaN compares False -> bad
    return (alpha if keep else None), c, bad


class _Rolling:
    """A (2, n, K) buffer indexed like a (T, n, K) array: step t lives in slot t % 2."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self.buf[(key[0] % 2,) + key[1:]]
        return self.buf[key % 2]


def _scaled_backward(ch, c, alpha=None, bad=None, counts=False, keep_g=True):
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
    if ch._tc is not None:
        return _chunked_backward(ch, alpha, bad, counts)
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
        g = _Rolling(np.zeros((2, n, K)))
    beta[T - 1, : cnt[T - 1]] = 1.0
    S = np.zeros((K, K)) if (counts and ch.shared) else None
    St = np.empty((K, K))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        if ch.shared:
            AT = np.ascontiguousarray(A.T)
            big = n * K * K > _BLAS_MNK
            mm = _mm if big else np.matmul
            for t in range(T - 1, 0, -1):
                if full:
                    gt = g[t]
                    np.multiply(B[t], beta[t], out=gt)
                    gt /= c[t]
                    mm(gt, AT, out=beta[t - 1])
                    if S is not None:
                        if big:
                            _atb_into(alpha[t - 1], gt, S)
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
                            _atb_into(alpha[t - 1, :k], gt, S)
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


# ---------------------------------------------------------------------------
# time-chunked scaled sweeps (long, narrow batches)
# ---------------------------------------------------------------------------


def _use_time_chunks(ch, max_nk3=_TC_MAX_NK3):
    return ch.allow_time_chunks and ch.shared and ch.T >= _TC_MIN_T and ch.n * ch.K**3 <= max_nk3


class _TimeChunks:
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

    Entries below ``_SCALE_FLOOR`` are flushed to 0: subnormal operands make
    every later product crawl, and mass that small can only matter if the
    boundary check fails (then the row is redone without chunks).
    """
    k, K, _ = Q.shape
    rsum = _mm(Q.reshape(k * K, K), np.ones((K, 1)), out=np.empty((k * K, 1)))  # (k*K, 1)
    rsum = rsum.reshape(k, K)
    empty = rsum == 0
    if empty.any():
        rsum[empty] = 1.0
    Q /= rsum[:, :, None]
    with np.errstate(divide="ignore"):
        rs += np.log(rsum)
    if empty.any():
        rs[empty] = -np.inf
    np.copyto(Q, 0.0, where=Q < _SCALE_FLOOR)


def _row_weights(rs):
    """exp(rs - max rs) per chunk, (k, K); all-zero rows stay zero."""
    mx = rs.max(axis=1, keepdims=True)
    mx[~np.isfinite(mx)] = 0.0
    return np.exp(rs - mx)


def _chunked_forward(ch):
    """Time-chunked scaled forward sweep; same contract as :func:`_scaled_forward`.

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
    tc = _TimeChunks(ch)
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
            _mm(Q[:k].reshape(k * K, K), A, out=Q2[:k].reshape(k * K, K))
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
            _mm(prev[:k], A, out=at)
            at *= Bc[tau, :k]
            np.matmul(at, ones, out=ct)
            at /= ct
            prev = ac[tau]
        bad = ~(c_c[..., 0] > _SCALE_FLOOR).all(axis=0)  # (m,) per chunk
        last = ac[tc.length - 1, np.arange(m)]  # (m, K)
        has_next = tc.q + 1 < tc.nq[tc.row]
        succ = tc.cid[tc.row[has_next], tc.q[has_next] + 1]
        gap = np.zeros(m)
        gap[has_next] = np.abs(last[has_next] - entry[succ]).max(axis=1)
        bad |= ~(gap <= _TC_TOL)
        bad_rows = np.zeros(n, dtype=bool)
        bad_rows[tc.row[bad]] = True
        bad_rows |= ~(c0[:, 0] > _SCALE_FLOOR)

    alpha = np.zeros((T, n, K))
    c = np.ones((T, n, 1))
    alpha[0] = alpha0
    c[0] = c0
    tc.scatter(alpha, ac)
    tc.scatter(c, c_c)
    ch._tc = (tc, Q, rs, Bc, ac, c_c)
    return alpha, c, bad_rows


def _chunked_backward(ch, alpha, bad, counts):
    """Time-chunked scaled backward sweep; same contract as :func:`_scaled_backward`.

    Boundary messages run backwards through the forward sweep's transfer
    matrices; inside the chunks the ordinary scaled recursion runs from them,
    rescaled so that ``sum(alpha * beta) = 1`` at each chunk's last step. The
    message each chunk sends into the step before it must match the boundary
    message there; rows where it does not are added to ``bad``.
    """
    tc, Q, rs, Bc, ac, c_c = ch._tc
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
                _mm(gc[tau + 1, :k1], AT, out=bc[tau, :k1])
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
        chunk_bad = ~(gap <= _TC_TOL) | ~np.isfinite(kappa)
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
        step = max(1, _CHUNK_ELEMS // max(1, n * K))
        for t0 in range(1, T, step):
            t1 = min(T, t0 + step)
            _atb_into(alpha[t0 - 1 : t1 - 1].reshape(-1, K), g[t0:t1].reshape(-1, K), S)
    return beta, g, S


def _scaled_edge_sum(ch, alpha, g):
    """Expected transition counts from scaled messages, (K, K); bad rows must be zeroed."""
    A, _ = ch.scaled_pairwise()
    K = ch.K
    cnt = ch.counts
    if ch.shared:
        S = np.zeros((K, K))
        for t in range(1, ch.T):
            k = cnt[t]
            _atb_into(alpha[t - 1, :k], g[t, :k], S)
        return A * S
    E = np.zeros((K, K))
    step = max(1, _CHUNK_ELEMS // max(1, ch.n * K * K))
    for t0 in range(0, ch.T - 1, step):
        t1 = min(ch.T - 1, t0 + step)
        E += np.einsum("tni,tnij,tnj->ij", alpha[t0:t1], A[t0:t1], g[t0 + 1 : t1 + 1], optimize=True)
    return E


def _scaled_log_z(ch, c):
    """Per-row log-partition from the scaled sweep (internal order)."""
    _, off = ch.scaled_unary()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(c[..., 0]).sum(axis=0) + off.sum(axis=0) + ch.pair_offset()


# ---------------------------------------------------------------------------
# log-space sweeps (fallback and reference)
# ---------------------------------------------------------------------------


def _lse_into(M, axis, out):
    """``out = logsumexp(M, axis)``, -inf safe; clobbers M."""
    mx = M.max(axis=axis)
    mx[~np.isfinite(mx)] = 0.0
    M -= np.expand_dims(mx, axis)
    np.exp(M, out=M)
    s = M.sum(axis=axis)
    np.log(s, out=out)
    out += mx


def _log_forward(ch):
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
                _lse_into(M, 1, at)
                at += u[t, :k]
            lc = logc[t, :k]
            _lse_into(at.copy(), 1, lc)
            at -= np.where(np.isfinite(lc), lc, 0.0)[:, None]
    return la, logc


def _log_backward(ch, logc):
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
            _lse_into(M, 2, lb[t - 1, :k])
            lb[t - 1, k : cnt[t - 1]] = 0.0
    return lb


def _log_posterior(ch, edges, counts):
    """Everything forward_backward needs, in log space (internal order)."""
    la, logc = _log_forward(ch)
    lb = _log_backward(ch, logc)
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
        step = max(1, _CHUNK_ELEMS // max(1, ch.n * K * K))
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


# ---------------------------------------------------------------------------
# forward-backward with fallback
# ---------------------------------------------------------------------------


def _raise_impossible(ch, log_z):
    bad = ~np.isfinite(log_z)
    if bad.any():
        rows = np.flatnonzero(bad)
        orig = rows if ch.order is None else ch.order[rows]
        orig = np.sort(orig)
        more = "" if len(orig) <= 5 else f" (and {len(orig) - 5} more)"
        raise EvidenceError(
            f"sequence (row) {orig[:5].tolist()}{more} has probability zero under the potentials "
            f"(log Z = -inf): no path is possible, so posteriors and paths are undefined"
        )


def _posterior(ch, edges=False, counts=False):
    """Scaled forward-backward with per-row log-space fallback (internal order).

    Returns
    -------
    gamma : ndarray of shape (T, n, K)
    log_z : ndarray of shape (n,)
    xi : ndarray of shape (T-1, n, K, K) or None
    E : ndarray of shape (K, K) or None
    """
    alpha, c, bad = _scaled_forward(ch)
    log_z = _scaled_log_z(ch, c)
    early = bad.copy()
    keep_g = edges or (counts and not ch.shared)
    beta, g, S = _scaled_backward(ch, c, alpha, bad, counts=(edges or counts), keep_g=keep_g)
    with np.errstate(invalid="ignore", over="ignore"):
        gamma = np.multiply(alpha, beta, out=beta)  # (T, n, K); 0 on bad rows, replaced below
        s = _mm(gamma.reshape(-1, ch.K), np.ones((ch.K, 1)), out=np.empty((ch.T * ch.n, 1)))
        s = s.reshape(ch.T, ch.n)  # row sums
    real = ch.real() if ch.ragged else None
    if real is not None:
        s[~real] = 1.0
    with np.errstate(invalid="ignore"):
        bad |= ~(np.abs(s - 1.0) <= _FB_TOL).all(axis=0)
    s[:, bad] = 1.0
    gamma /= s[..., None]
    late = bad & ~early  # finite but inaccurate rows

    xi = None
    E = None
    if edges or counts:
        A, _ = ch.scaled_pairwise()
        if late.any():
            alpha[:, late] = 0.0
            if g is not None:
                g[:, late] = 0.0
                S = None
            else:  # one more backward sweep, with the late rows zeroed too
                _, _, S = _scaled_backward(ch, c, alpha, bad.copy(), counts=True, keep_g=False)
        if edges:
            xi = alpha[:-1, :, :, None] * A * g[1:, :, None, :]  # (T-1, n, K, K)
            E = xi.sum(axis=(0, 1))
        elif S is not None:
            E = A * S
        else:
            E = _scaled_edge_sum(ch, alpha, g)

    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        if ch._tc is not None:  # chunk boundaries disagreed: redo these rows step by step
            sub.allow_time_chunks = False
            g2, lz2, xi2, E2 = _posterior(sub, edges, counts)
        else:
            g2, lz2, xi2, E2 = _log_posterior(sub, edges, counts)
        Ts = sub.T
        gamma[:, rows] = 0.0
        gamma[:Ts, rows] = g2
        log_z[rows] = lz2
        if xi is not None:
            xi[:, rows] = 0.0
            xi[: max(Ts - 1, 0), rows] = xi2
        if E is not None:
            E = E + E2
    _raise_impossible(ch, log_z)
    return gamma, log_z, xi, E


def _log_z(ch):
    """Log-partition per row (internal order), scaled with log-space fallback."""
    _, c, bad = _scaled_forward(ch, keep=False)
    log_z = _scaled_log_z(ch, c)
    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        if ch._tc is not None:
            sub.allow_time_chunks = False
            log_z[rows] = _log_z(sub)
        else:
            log_z[rows] = _log_forward(sub)[1].sum(axis=0)
    return log_z


def _log_messages(ch):
    """True log forward and backward messages (T, n, K), internal order; -inf on padding."""
    alpha, c, bad = _scaled_forward(ch)
    beta, _, _ = _scaled_backward(ch, c, alpha, bad)
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
        la2, logc2 = _log_forward(sub)
        lb2 = _log_backward(sub, logc2)
        cum = np.cumsum(logc2, axis=0)  # (T', m)
        with np.errstate(invalid="ignore"):
            la[: sub.T, rows] = la2 + cum[..., None]
            lb[: sub.T, rows] = lb2 + (cum[-1] - cum)[..., None]
    return la, lb


# ---------------------------------------------------------------------------
# Viterbi
# ---------------------------------------------------------------------------


def _viterbi(ch, uKT=None, consume_u=False):
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
    if _use_time_chunks(ch, _TC_MAX_NK3 if np.isfinite(ch.pw).all() else _TC_MAX_NK3_VITERBI):
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

    Same contract as :func:`_viterbi`; with ``consume_u`` the sweep works in
    ``ch.u``'s memory (and drops it from ``ch``).
    """
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
        ch._u = None
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


def _viterbi_chunked(ch):
    """Time-chunked max-product for long, narrow batches; same contract as :func:`_viterbi`.

    1. Each chunk's max-product transfer matrix ``R[i, j]`` (best score from
       state ``i`` before the chunk to ``j`` at its last step), all chunks at once.
    2. Best scores at chunk boundaries, chunk by chunk along each row, keeping
       the best entry state of each chunk for each exit state.
    3. Backtrack through the boundaries: the path's state before and at the end
       of every chunk.
    4. Ordinary Viterbi inside all chunks at once, between those fixed ends.
    """
    P = ch.pw
    T, n, K = ch.T, ch.n, ch.K
    tc = _TimeChunks(ch)
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
    inner = _Chain(uc, P, tc.length, None)
    inner.allow_time_chunks = False
    zc, _ = _viterbi(inner)  # (Lc, m)
    z = np.full((T, n), -1, dtype=np.intp)
    z[0] = cur
    tc.scatter(z, zc)
    return z, score


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


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
    """
    ch = _Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros(0)
    return ch.rows_to_batch(_log_z(ch))


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
    ch = _Chain.from_batch(unary, pairwise, mask)
    K = ch.K
    if ch.n == 0:
        em = np.zeros((0, max(ch.T - 1, 0), K, K)) if edges else None
        ec = np.zeros((K, K)) if (edges or counts) else None
        return ChainPosterior(np.zeros((0, ch.T, K)), np.zeros(0), em, ec)
    gamma, log_z, xi, E = _posterior(ch, edges=edges, counts=counts)
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
    ch = _Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros((0, ch.T, ch.K))
    la, _ = _log_messages(ch)
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
    ch = _Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros((0, ch.T, ch.K))
    _, lb = _log_messages(ch)
    return ch.to_batch(lb)


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
    ch = _Chain.from_batch(unary, pairwise, mask)
    if ch.n == 0:
        return np.zeros((0, ch.T), dtype=np.intp), np.zeros(0)
    z, score = _viterbi(ch)
    _raise_impossible(ch, score)
    return ch.to_batch(z), ch.rows_to_batch(score)


def sample_paths(unary, pairwise, mask=None, *, size=None, seed=None):
    """Exact posterior samples of paths (forward filtering, backward sampling).

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
    mask : ndarray of bool, shape (n, T), optional
    size : int, optional
        Number of samples per row; None for one sample without the leading axis.
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    paths : ndarray of int, shape (n, T) or (size, n, T)
        -1 beyond a row's length.

    Raises
    ------
    EvidenceError
        If a row has no possible path, or length 0.
    """
    rng = np.random.default_rng(seed)
    ch = _Chain.from_batch(unary, pairwise, mask)
    S = 1 if size is None else int(size)
    if S < 0:
        raise ValueError(f"size must be a non-negative integer; got {size}")
    if ch.n == 0 or S == 0:
        z = np.zeros((S, ch.n, ch.T), dtype=np.intp)
        return z[0] if size is None else z
    z = _sample(ch, S, rng)  # (S, T, n)
    out = _samples_to_batch(ch, z)  # (S, n, T)
    return out[0] if size is None else out


def _samples_to_batch(ch, z):
    """(S, T, n) internal -> (S, n, T) caller's order."""
    x = np.swapaxes(z, 1, 2)  # (S, n, T)
    if ch.order is None:
        return np.ascontiguousarray(x)
    out = np.empty_like(x)
    out[:, ch.order] = x
    return out


def _sample(ch, S, rng):
    """Backward sampling from the filtered messages (internal order), shape (S, T, n)."""
    alpha, c, bad = _scaled_forward(ch)
    log_z = _scaled_log_z(ch, c)
    with np.errstate(divide="ignore"):
        la = np.log(alpha)  # log filtered, up to a per-(t, row) constant
    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        la2, logc2 = _log_forward(sub)
        la[:, rows] = -np.inf
        la[: sub.T, rows] = la2
        log_z[rows] = logc2.sum(axis=0)
    _raise_impossible(ch, log_z)
    T, n, K = ch.T, ch.n, ch.K
    cnt = ch.counts
    z = np.full((S, T, n), -1, dtype=np.intp)
    PT = ch.pw.T if ch.shared else None  # (K_j, K_i)
    for t in range(T - 1, -1, -1):
        k_all = cnt[t]
        k_cont = cnt[t + 1] if t + 1 < T else 0
        w = np.empty((S, k_all, K))
        if k_cont:
            if ch.shared:
                w[:, :k_cont] = la[t, :k_cont] + PT[z[:, t + 1, :k_cont]]  # (S, k, K)
            else:
                r = np.arange(k_cont)
                w[:, :k_cont] = la[t, :k_cont] + ch.pw[t, r[None, :], :, z[:, t + 1, :k_cont]]
        w[:, k_cont:] = la[t, k_cont:k_all]
        w += rng.gumbel(size=w.shape)
        z[:, t, :k_all] = w.argmax(axis=-1)
    return z
