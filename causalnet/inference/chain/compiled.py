"""Compiled sweeps: the sequential chain recursions as numba kernels, beside the numpy ones.

A chain sweep is inherently sequential in time: step ``t`` needs step
``t-1``. The numpy sweeps (:mod:`.scaled`, :mod:`.max_product`) vectorise over
the batch and loop over time in Python, which costs a few microseconds of
interpreter time per step, whatever the size of the step. For one long
sequence (``n = 1``, ``T = 10^5``) that overhead is the whole run. Here the
same recursions run as ``numba.njit`` kernels over ``(time, row, state)``
loops, ``O(T n K^2)`` arithmetic with no per-step overhead:

* :func:`forward_kernel` — Rabiner's scaled forward sweep, shared ``A`` (with
  up to ``UNROLL_MAX_K`` states the unrolled sweep of :mod:`.unrolled` runs);
* for ``log Z`` alone with few states, the unrolled sweeps of :mod:`.unrolled`
  (messages in registers, rescaling only when the mass leaves ``[1e-50, 1e50]``);
* :func:`backward_kernel` — the scaled backward sweep, optionally summing the
  expected transition statistics ``S = sum_t alpha[t-1].T @ g[t]`` on the fly;
* :func:`viterbi_kernel` — max-product plus backtrack (lowest index on ties);
  up to 4 states the unrolled Viterbi of :mod:`.unrolled` runs instead.

Inner loops run over the destination state (``out[j] += a_i * A[i, j]``), so
LLVM vectorises them without reassociating sums (no ``fastmath``); results
equal the numpy sweeps to rounding (tested to 1e-12).

Which sweeps run is the **backend**, the chain family's switch of
:mod:`causalnet.runtime`: the environment variable ``CAUSALNET_CHAIN_BACKEND``
(``"numpy"``, ``"numba"`` or ``"auto"``) sets it at start-up; :func:`set_backend`
and the context manager :func:`backend` set it at run time. ``"auto"`` (the
default) compiles only chains of at least ``AUTO_MIN_T`` steps; ``"numba"``
every chain. :func:`serves` decides once per :class:`~.potentials.Chain` and
records it as ``Chain.backend``. Compiled sweeps
serve chains with a shared pairwise (HMMs, CRFs); per-step pairwise
potentials and the log-space fallback always run in numpy.

>>> from causalnet.inference.chain import compiled
>>> with compiled.backend("numpy"):
...     compiled.enabled()
False
"""

from __future__ import annotations

import numpy as np

from ... import runtime
from .kernels import SCALE_FLOOR
from .unrolled import UNROLL_MAX_K, VITERBI_UNROLL_MAX_K, forward_unrolled, log_partition_unrolled, viterbi_unrolled

__all__ = [
    "AVAILABLE", "ENV_VAR", "BACKENDS", "enabled", "get_backend", "set_backend", "backend",
    "forward_kernel", "backward_kernel", "viterbi_kernel",
    "AUTO_MIN_T", "SMALL_K", "VITERBI_WIDE_K", "wide_width", "serves", "compiled_forward", "compiled_log_partition", "compiled_backward", "compiled_viterbi",
]

AVAILABLE = runtime.numba_available()
ENV_VAR = f"{runtime.ENV_PREFIX}CHAIN_BACKEND"      # the variable runtime.get_backend("chain") reads
BACKENDS = runtime.BACKENDS


def enabled():
    """True when the compiled sweeps may run (backend ``"numba"``, or ``"auto"`` with numba importable)."""
    return AVAILABLE and runtime.get_backend("chain") != "numpy"


def get_backend():
    """The backend in force: ``"numba"`` or ``"numpy"``."""
    return "numba" if enabled() else "numpy"


def set_backend(name):
    """Choose the sweeps: ``"numba"``, ``"numpy"`` or ``"auto"``; returns the previous setting.

    The chain family's switch of :mod:`causalnet.runtime`.

    Raises
    ------
    ModelError
        For an unknown name, or ``"numba"`` when numba is not installed.
    """
    return runtime.set_backend("chain", name)


def backend(name):
    """Run a block with the given backend (see :func:`set_backend`), then restore the previous one."""
    return runtime.backend("chain", name)


#: ``numba.njit`` with numpy's float semantics (x/0 -> inf, no exception), compiled on first use and
#: kept in the per-user kernel cache (:mod:`causalnet.runtime`)
_njit = runtime.jit(nogil=True, error_model="numpy")
#: :data:`_njit` for a helper that numba inlines into its callers (no call per step)
_njit_inline = runtime.jit(nogil=True, error_model="numpy", inline="always")


SMALL_K = 8  # up to this many states a step's products use register accumulators; above, vectorised rows


@_njit_inline
def _step(w, A, AT, out, K):  # pragma: no cover - compiled (inlined by LLVM)
    """``out[j] = sum_i w[i] * A[i, j]``: register accumulators for small K, a vectorised axpy per row above."""
    if K <= SMALL_K:
        for j in range(K):
            acc = 0.0
            for i in range(K):
                acc += w[i] * AT[j, i]
            out[j] = acc
    else:
        out[:] = 0.0
        for i in range(K):
            a = w[i]
            if a != 0.0:
                for j in range(K):
                    out[j] += a * A[i, j]


@_njit
def forward_kernel(B, A, AT, counts, alpha, c, logc):  # pragma: no cover - compiled
    """Scaled forward sweep, in place.

    Each row's unnormalised message ``v`` is kept, and the next step's product
    runs on it (``(v @ A) / c`` instead of ``(v / c) @ A``), so the division
    by the normaliser is off the sweep's critical path.

    Parameters
    ----------
    B : (T, n, K) probability-space unaries (0 on padding).
    A, AT : (K, K) probability-space transitions and their transpose (both C-contiguous).
    counts : (T,) int, rows alive at each step (rows sorted by length).
    alpha : (T, n, K) or (2, n, K) output; with 2 slots step ``t`` lives in ``t % 2``.
    c : (T, n) output normalisers; left untouched (1) on padding.
    logc : (n,) output ``sum_t log c[t]`` per row (garbage on rows whose
        normalisers fall to ``SCALE_FLOOR`` or below). Kept as a running
        product, moved into the log only when it leaves ``[1e-50, 1e50]``, so
        there is no logarithm per step.
    """
    T, n, K = B.shape
    roll = alpha.shape[0] != T
    v = np.empty((n, K))  # unnormalised messages
    tmp = np.empty(K)
    inv = np.empty(n)  # 1 / their normalisers
    prod = np.ones(n)  # running product of normalisers not yet in logc
    for r in range(counts[0]):
        s = 0.0
        for j in range(K):
            v[r, j] = B[0, r, j]
            s += B[0, r, j]
        c[0, r] = s
        logc[r] = 0.0
        prod[r] = s
        inv[r] = 1.0 / s
        for j in range(K):
            alpha[0, r, j] = v[r, j] * inv[r]
    for t in range(1, T):
        cur = t % 2 if roll else t
        for r in range(counts[t]):
            _step(v[r], A, AT, tmp, K)  # tmp is separate: v[r] may be read in place
            s = 0.0
            ir = inv[r]
            for j in range(K):
                x = tmp[j] * ir * B[t, r, j]
                v[r, j] = x
                s += x
            c[t, r] = s
            p = prod[r]
            if not 1e-50 <= p <= 1e50:
                logc[r] += np.log(p)
                p = 1.0
            prod[r] = p * s
            ir = 1.0 / s
            inv[r] = ir
            for j in range(K):
                alpha[cur, r, j] = v[r, j] * ir
    for r in range(n):
        logc[r] += np.log(prod[r])


# Long by design: one hot recursion over time steps whose state (messages, scalers, counts) lives in
# local arrays; splitting it into helpers would add per-step calls and copies on the hot path.
@_njit
def backward_kernel(B, A, AT, c, counts, alpha, out, g, S, rowsum):  # pragma: no cover - compiled
    """Scaled backward sweep, in place: ``beta`` or the unnormalised marginals ``alpha * beta`` into ``out``.

    The running ``beta`` of each row lives in a small local array; ``out[t]``
    is written once per step and never read back, so ``out`` may be ``alpha``
    itself (the marginals then replace the forward messages: ``alpha[t-1]``,
    which the expected transition counts need at step ``t``, is still intact).

    Parameters
    ----------
    B : (T, n, K) probability-space unaries.
    A, AT : (K, K) transitions and their transpose (both C-contiguous).
    c : (T, n) forward normalisers (``inf`` on rows to zero out).
    counts : (T,) int.
    alpha : (T, n, K) forward messages (read only when ``S`` or ``rowsum`` has rows).
    out : (T, n, K) output: ``beta``, or ``alpha * beta`` when ``rowsum`` has rows
        (padding must be zero-initialised).
    g : (T, n, K) or (2, n, K) output ``B * beta / c`` (0 at step 0).
    S : (K, K) accumulator of ``alpha[t-1].T @ g[t]``, or a (0, 0) array for none.
    rowsum : (T, n) output, or a (0, 0) array. With rows, ``out[t]`` gets
        ``alpha[t] * beta[t]`` and ``rowsum[t]`` its sum over states (1 up to
        rounding where scaling lost no mass); padding stays 0.
    """
    T, n, K = B.shape
    roll = g.shape[0] != T
    want_s = S.shape[0] == K
    fuse = rowsum.shape[0] == T
    w = np.empty(K)  # B * beta / c of the current row and step
    tmp = np.empty(K)
    bv = np.ones((n, K))  # the running beta of each row
    for t in range(T - 1, 0, -1):
        cur = t % 2 if roll else t
        k = counts[t]
        for r in range(k, counts[t - 1]):  # rows whose last step is t-1 start here
            for j in range(K):
                bv[r, j] = 1.0
        for r in range(k):
            ic = 1.0 / c[t, r]  # independent of the sweep: off its critical path
            for j in range(K):
                x = B[t, r, j] * ic * bv[r, j]
                w[j] = x
                g[cur, r, j] = x
            if fuse:  # the marginal of step t, before beta[t] is replaced by beta[t-1]
                s = 0.0
                for j in range(K):
                    v = alpha[t, r, j] * bv[r, j]
                    out[t, r, j] = v
                    s += v
                rowsum[t, r] = s
            else:
                for j in range(K):
                    out[t, r, j] = bv[r, j]
            _step(w, AT, A, tmp, K)  # beta[t-1][i] = sum_j A[i, j] w[j]
            for i in range(K):
                bv[r, i] = tmp[i]
            if want_s:
                for i in range(K):
                    a = alpha[t - 1, r, i]
                    for j in range(K):
                        S[i, j] += a * w[j]
    for r in range(counts[0]):
        if fuse:
            s = 0.0
            for j in range(K):
                v = alpha[0, r, j] * bv[r, j]
                out[0, r, j] = v
                s += v
            rowsum[0, r] = s
        else:
            for j in range(K):
                out[0, r, j] = bv[r, j]


# From this many states on, the Viterbi step loops over previous states outside and
# destination states inside (vector compare-and-select); below it, the scalar scan per
# destination state is faster (measured on T = 10^5: a wash at K = 8, vector 1.2x at 9, 2.2x at 16).
VITERBI_WIDE_K = 9


@_njit_inline
def _step_narrow(d, PT, u, dn, bp, K):  # pragma: no cover - compiled (inlined)
    """``dn[j] = max_i (d[i] + PT[j, i]) + u[j]`` and the first argmax ``bp[j]``, one ``j`` at a time."""
    for j in range(K):
        best = 0
        b = d[0] + PT[j, 0]
        for i in range(1, K):
            v = d[i] + PT[j, i]
            if v > b:
                b = v
                best = i
        dn[j] = b + u[j]
        bp[j] = best


@_njit_inline
def _first_max4(v0, v1, v2, v3, f0):  # pragma: no cover - compiled (inlined)
    """The largest of four candidates from rows ``f0 .. f0 + 3`` and its row, the lowest row on ties."""
    g = v1 > v0
    a = v1 if g else v0
    fa = f0 + 1.0 if g else f0
    g = v3 > v2
    b = v3 if g else v2
    fb = f0 + 3.0 if g else f0 + 2.0
    g = b > a
    return (b if g else a), (fb if g else fa)


@_njit_inline
def _max_wide(d, P, bv, bf, K, W):  # pragma: no cover - compiled (inlined)
    """``bv[j] = max_i d[i] + P[i, j]`` and its first argmax ``bf[j]`` (a float), for ``K >= 4``.

    Previous states ``i`` run in the outer loop, destination states ``j`` in
    the inner one.

    Previous states come four at a time: a small tournament picks each
    destination's best of the four (strict ``>``, so the lower row on ties),
    which then replaces the running best only if strictly greater, so the
    first maximum wins as in the scan. Taking rows in fours cuts the chain of
    dependent updates of ``bv`` four-fold. The running best is read back as
    ``bv[j] + 0.0`` (which only turns -0.0 into +0.0): a plain ``bv[j]``
    lets LLVM turn the select into a masked store, which the next row's load
    cannot forward from, and each row then waits for the store to retire.
    ``P`` has ``W >= K`` columns, a multiple of 8 (the extra ones ``-inf``), so
    the inner loops run in whole vectors; only the first ``K`` results count.
    """
    for j in range(W):
        a, fa = _first_max4(d[0] + P[0, j], d[1] + P[1, j], d[2] + P[2, j], d[3] + P[3, j], 0.0)
        bv[j] = a
        bf[j] = fa
    i = 4
    while i + 4 <= K:
        d0, d1, d2, d3 = d[i], d[i + 1], d[i + 2], d[i + 3]
        f0 = float(i)
        for j in range(W):
            a, fa = _first_max4(d0 + P[i, j], d1 + P[i + 1, j], d2 + P[i + 2, j], d3 + P[i + 3, j], f0)
            o = bv[j] + 0.0
            of = bf[j] + 0.0
            g = a > o
            bv[j] = a if g else o
            bf[j] = fa if g else of
        i += 4
    while i < K:
        di = d[i]
        fi = float(i)
        for j in range(W):
            v = di + P[i, j]
            o = bv[j] + 0.0
            of = bf[j] + 0.0
            g = v > o
            bv[j] = v if g else o
            bf[j] = fi if g else of
        i += 1


@_njit_inline
def _backtrack(D, lengths, bp, z, score):  # pragma: no cover - compiled (inlined)
    """Each row's best final state, its score, and the path back through the back-pointers."""
    n, K = D.shape[1], D.shape[2]
    for r in range(n):
        L1 = lengths[r] - 1
        slot = L1 % 2
        best = 0
        b = D[slot, r, 0]
        for j in range(1, K):
            if D[slot, r, j] > b:
                b = D[slot, r, j]
                best = j
        score[r] = b
        z[L1, r] = best
        for t in range(L1, 0, -1):
            best = bp[t, r, best]
            z[t - 1, r] = best


@_njit
def viterbi_kernel(u, P, PT, counts, lengths, bp, z, score):  # pragma: no cover - compiled
    """Max-product sweep with back-pointers, then the backtrack, in place.

    Max-marginals live in two rolling slots. With ``K >= VITERBI_WIDE_K``
    each step is :func:`_max_wide` (previous states outside, destination
    states inside: no carried dependence in the inner loop, which compiles to
    vector compare-and-select); with fewer states :func:`_step_narrow` (each
    destination state scans its previous states in turn). Either way the
    first maximum (lowest index on ties, as ``numpy.argmax``) is the
    back-pointer, so the backtrack is one lookup per step, and both orders
    give the same answer bit for bit.

    Parameters
    ----------
    u : (T, n, K) log unaries (``-inf`` on padding).
    P : (K, W) log pairwise, ``P[i, j]`` from ``i`` to ``j`` (no ``+inf`` or NaN),
        C-contiguous; ``W >= K`` columns, the extra ones ``-inf`` (see :func:`wide_width`).
    PT : (K, K) its first ``K`` columns transposed, C-contiguous.
    counts : (T,) int; lengths : (n,) int (non-increasing).
    bp : (T, n, K) integer scratch for the back-pointers (any integer type holding ``K - 1``).
    z : (T, n) int output path, pre-filled with -1.
    score : (n,) output best score per row.
    """
    T, n, K = u.shape
    W = P.shape[1]
    D = np.empty((2, n, K))
    bv = np.empty(W)
    bf = np.empty(W)  # back-pointers as floats: the same lane width as bv in the vector selects
    for r in range(counts[0]):
        for j in range(K):
            D[0, r, j] = u[0, r, j]
    for t in range(1, T):
        Dp, Dc, ut, bt = D[(t - 1) % 2], D[t % 2], u[t], bp[t]
        for r in range(counts[t]):
            if K < VITERBI_WIDE_K:
                _step_narrow(Dp[r], PT, ut[r], Dc[r], bt[r], K)
                continue
            _max_wide(Dp[r], P, bv, bf, K, W)
            dr, ur, br = Dc[r], ut[r], bt[r]
            for j in range(K):
                dr[j] = bv[j] + ur[j]
            for j in range(K):
                br[j] = int(bf[j])
    _backtrack(D, lengths, bp, z, score)


# -- the sweeps on a Chain (same contracts as the numpy sweeps) ---------------


# With the "auto" backend, chains shorter than this stay on the numpy sweeps: their
# per-step overhead is small next to the batched products, and a process that
# only ever sees short chains (CRF tagging) never pays for loading the kernels.
AUTO_MIN_T = 64


def serves(ch):
    """True when the compiled sweeps run for chain ``ch``.

    Backend ``"numba"``: every chain with a shared pairwise; ``"auto"``: those
    with at least ``AUTO_MIN_T`` steps; ``"numpy"``: none.
    """
    if ch.backend is None:                # decided once per chain, by the chain family's switch
        on = enabled() and ch.shared and ch.n > 0 and (runtime.get_backend("chain") == "numba" or ch.T >= AUTO_MIN_T)
        ch.backend = "numba" if on else "numpy"
    return ch.backend == "numba"


def compiled_forward(ch, keep=True):
    """Scaled forward sweep; the contract of :func:`.scaled.scaled_forward` (``c`` is (T, n, 1))."""
    alpha, c, bad, _ = _forward(ch, keep)
    return alpha, c, bad


def compiled_log_partition(ch):
    """Per-row log-partition and the rows to redo, from the compiled forward sweep (internal order).

    Returns
    -------
    log_z : ndarray of shape (n,)
        Garbage on ``bad`` rows.
    bad : ndarray of bool, shape (n,)
    """
    if ch.K > UNROLL_MAX_K:  # wide states: the step's products dominate; the plain sweep is as fast
        _, _, bad, logc = _forward(ch, keep=False)
        _, off = ch.scaled_unary()
        with np.errstate(invalid="ignore"):
            return logc + off.sum(axis=0) + ch.pair_offset(), bad
    B, off = ch.scaled_unary()  # (T, n, K), (T, n)
    A, _ = ch.scaled_pairwise()
    logc = np.zeros(ch.n)
    bad = np.zeros(ch.n, dtype=np.bool_)
    log_partition_unrolled(np.ascontiguousarray(B), np.ascontiguousarray(A, dtype=np.float64),
                           np.asarray(ch.lengths, dtype=np.intp), logc, bad)
    with np.errstate(invalid="ignore"):
        log_z = logc + off.sum(axis=0) + ch.pair_offset()
    return log_z, bad


def _forward(ch, keep):
    B, _ = ch.scaled_unary()
    A, _ = ch.scaled_pairwise()
    T, n, K = B.shape
    B = np.ascontiguousarray(B)
    rows = T if keep else 2
    alpha = np.zeros((rows, n, K)) if (ch.ragged or not keep) else np.empty((rows, n, K))
    c = np.ones((T, n, 1))
    logc = np.zeros(n)
    A = np.ascontiguousarray(A, dtype=np.float64)
    if K <= UNROLL_MAX_K:
        forward_unrolled(B, A, np.asarray(ch.lengths, dtype=np.intp), alpha, c[..., 0], logc)
    else:
        forward_kernel(B, A, np.ascontiguousarray(A.T), np.asarray(ch.counts, dtype=np.intp), alpha, c[..., 0], logc)
    with np.errstate(invalid="ignore"):
        bad = ~(c[..., 0] > SCALE_FLOOR).all(axis=0)  # NaN compares False -> bad
    return (alpha if keep else None), c, bad, logc


def compiled_backward(ch, c, alpha=None, bad=None, counts=False, keep_g=True, marginals=False, inplace=False):
    """Scaled backward sweep; the contract of :func:`.scaled.scaled_backward` (shared pairwise).

    With ``marginals`` (``alpha`` given) the first result is ``alpha * beta``
    instead of ``beta`` and a fourth, its sum over states ``(T, n)``, follows
    (the posterior marginals up to that normaliser, with no extra pass). With
    ``inplace`` too, the marginals are written over ``alpha`` (one ``(T, n, K)``
    array fewer) and ``alpha`` is consumed.
    """
    B, _ = ch.scaled_unary()
    A, _ = ch.scaled_pairwise()
    T, n, K = B.shape
    cc = np.ascontiguousarray(c[..., 0])
    if bad is not None and bad.any():
        cc = cc.copy()
        cc[:, bad] = np.inf  # g = 0 and beta = 0 on bad rows
        if alpha is not None:
            alpha[:, bad] = 0.0
    fuse = marginals and alpha is not None
    if fuse and inplace:
        out = alpha
    else:
        out = np.zeros((T, n, K)) if ch.ragged else np.empty((T, n, K))
    g = np.zeros((T if keep_g else 2, n, K))
    want_s = counts and alpha is not None
    S = np.zeros((K, K) if want_s else (0, 0))
    a = alpha if (want_s or fuse) else np.zeros((1, 1, K))
    rowsum = np.zeros((T, n) if fuse else (0, 0))
    A = np.ascontiguousarray(A, dtype=np.float64)
    backward_kernel(np.ascontiguousarray(B), A, np.ascontiguousarray(A.T), cc, np.asarray(ch.counts, dtype=np.intp),
                    a, out, g, S, rowsum)
    res = out, (g if keep_g else None), (S if want_s else None)
    return res + (rowsum,) if fuse else res


def wide_width(K):
    """Columns of the pairwise the Viterbi kernel reads: ``K``, or for the wide step ``K`` rounded up to 8."""
    return K if K < VITERBI_WIDE_K else -(-K // 8) * 8


def compiled_viterbi(ch, consume_u=False):
    """Max-product sweep and backtrack; the contract of :func:`.max_product.chain_viterbi`.

    Up to ``VITERBI_UNROLL_MAX_K`` states the unrolled sweep of :mod:`.unrolled`
    runs, above it :func:`viterbi_kernel`. ``consume_u`` is accepted for that contract; the compiled sweep never
    writes into ``ch.u``.
    """
    T, n, K = ch.T, ch.n, ch.K
    u = np.ascontiguousarray(ch.u, dtype=np.float64)
    z = np.full((T, n), -1, dtype=np.intp)
    score = np.empty(n)
    pw = np.asarray(ch.pw, dtype=np.float64)
    if K <= VITERBI_UNROLL_MAX_K:
        viterbi_unrolled(u, pw, np.asarray(ch.lengths, dtype=np.intp), z, score)
        return z, score
    bp = np.empty((T, n, K), dtype=np.int8 if K <= 128 else np.int32)  # int8: a quarter of the memory traffic
    P = np.full((K, wide_width(K)), -np.inf)  # (K, W)
    P[:, :K] = pw
    viterbi_kernel(u, P, np.ascontiguousarray(pw.T), np.asarray(ch.counts, dtype=np.intp),
                   np.asarray(ch.lengths, dtype=np.intp), bp, z, score)
    return z, score
