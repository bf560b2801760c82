"""Forward-backward over ragged sequences stored flat: no padding, no batch layout.

Models whose tokens live in one flat array -- a CRF's unary potentials
``x_t · W`` are one sparse product over all ``N`` tokens of a batch -- would
otherwise copy them into the engine's padded ``(n, T, K)`` batch and back for
every evaluation. Here the sequences are given by their ``lengths`` (sequence
``r`` holds tokens ``starts[r] .. starts[r+1]-1`` of ``unary``) and one
:func:`forward_backward_ragged` call returns, in the same flat order:

* ``log_z`` (n,): the log-partition of every sequence;
* ``marginals`` (N, K): ``p(y_t = k | x)`` of every token;
* ``edge_counts`` (K, K): the expected transition counts
  ``sum_r sum_t p(y_t = i, y_{t+1} = j | x_r)``.

The shared pairwise ``(K, K)`` is the only kind served. The sweep is
Rabiner's scaled forward-backward (as :mod:`.scaled`): each token's unary is
shifted by its maximum before ``exp``, each forward message normalised by its
sum ``c_t``, so ``log Z = sum_t (log c_t + max_k u_tk) + (L-1) max A``. A
numba kernel runs the whole batch in one call, one sequence after another
(``O(N K^2)``, working memory ``O(T_max K)``); without numba (or with
``backend="numpy"``) the batch is padded and handed to
:func:`~.sum_product.forward_backward`, the reference. A sequence whose
normalisers fall to ``SCALE_FLOOR`` or whose marginals do not sum to 1
within ``FB_TOL`` (mass lost to underflow), or whose potentials are not
finite, is redone by that reference engine (log space where needed; it raises
the engine's errors for NaN or impossible sequences), so the answer is the
engine's wherever the kernel's could be inaccurate.

Legend: ``n`` sequences, ``N`` tokens in all, ``K`` states, ``T`` the longest length.

Examples
--------
>>> import numpy as np
>>> u = np.log([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])        # (N=3, K=2): sequences of 1 and 2 tokens
>>> log_z, marg, counts = forward_backward_ragged(u, np.zeros((2, 2)), np.array([1, 2]))
>>> np.round(marg, 3).tolist()
[[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]
>>> float(counts.sum())                                  # one transition in all
1.0
"""

from __future__ import annotations

import math

import numpy as np

from ... import runtime
from ...errors import EvidenceError, ModelError, ShapeError
from .kernels import FB_TOL, SCALE_FLOOR, last_axis_max
from .layout import Layout
from .sum_product import forward_backward

__all__ = [
    "AVAILABLE",
    "BACKENDS",
    "AUTO_MIN_WORK",
    "is_compiled",
    "auto_backend",
    "forward_backward_ragged",
    "forward_backward_padded",
    "ragged_kernel",
    "workspace",
    "scaled_unaries",
]

AVAILABLE = runtime.numba_available()
BACKENDS = ("numba", "numpy")
#: Callers that run many passes (CRF training) take the kernel for batches of at least this many
#: ``N K^2`` multiply-adds, or once it is compiled: below, the ~1 s compile outweighs what it saves.
AUTO_MIN_WORK = 1 << 20


def is_compiled():
    """True once :func:`ragged_kernel` has been compiled in this process."""
    return AVAILABLE and bool(ragged_kernel.signatures)


def auto_backend(N, K):
    """The backend for a caller that will run many passes over `N` tokens with `K` states.

    The chain family's switch (:mod:`causalnet.runtime`) decides: ``"numpy"``
    never compiles, ``"numba"`` always; ``"auto"`` takes the kernel if it is
    already compiled or ``N K^2 >= AUTO_MIN_WORK`` (a smaller batch is done by
    numpy before numba would have loaded).
    """
    name = runtime.get_backend("chain")
    if name == "numpy" or not AVAILABLE:
        return "numpy"
    return "numba" if name == "numba" or is_compiled() or N * K * K >= AUTO_MIN_WORK else "numpy"


#: numpy float semantics, compiled on first use, kept in the per-user kernel cache (:mod:`causalnet.runtime`)
_njit = runtime.jit(nogil=True, error_model="numpy")


# Long by design (~85 lines): one compiled function compiles faster than the same code split into
# several (numba compiles and links each callee separately), and its compile time is paid on first use.
@_njit
def ragged_kernel(B, off, A, starts, log_z, E, bad, alpha, c, Ae, AeT, Es, beta, w):  # pragma: no cover - compiled
    """Scaled forward-backward of every sequence of a flat batch; the marginals overwrite `B`.

    One function with no numba calls and no allocation: numba's compile
    time grows with every function and every array it creates, and it is paid
    on first use. Inner loops run over the destination state (``out[j] +=
    a_i * Ae[i, j]``), independent sums that LLVM vectorises without
    reassociating them.

    Parameters
    ----------
    B : (N, K) float64 scaled unaries ``exp(u_t - off_t)``, C-contiguous; on return the marginals.
    off : (N,) the shifts ``off_t`` (each token's maximum log unary).
    A : (K, K) float64 log pairwise potentials, finite maximum, no NaN.
    starts : (n+1,) int offsets; sequence ``r`` is ``B[starts[r]:starts[r+1]]`` (each non-empty).
    log_z : (n,) output.
    E : (K, K) output expected transition counts, over the sequences not flagged bad.
    bad : (n,) bool output; True where the sequence must be redone (its `log_z` and marginals are garbage).
    alpha, c, Ae, AeT, Es, beta, w : float64 scratch of shapes (T, K), (T,), (K, K), (K, K), (K, K), (K,), (K,)
        (:func:`workspace`), T the longest sequence: the normalised forward
        messages and their normalisers, ``exp(A - max A)`` and its transpose,
        one sequence's sum of ``alpha[t-1] (x) w[t]``, the backward message
        and ``w[t] = B[t] beta[t] / c[t]``.
    """
    N, K = B.shape
    amax = -math.inf
    for i in range(K):
        for j in range(K):
            amax = max(amax, A[i, j])
            E[i, j] = 0.0
    for i in range(K):
        for j in range(K):
            Ae[i, j] = math.exp(A[i, j] - amax)
            AeT[j, i] = Ae[i, j]
    for r in range(starts.size - 1):
        s, L = starts[r], starts[r + 1] - starts[r]
        bad[r] = True
        lz = (L - 1) * amax
        ok = True
        for t in range(L):  # forward: alpha[t] = (alpha[t-1] @ Ae) * B[t] / c[t]
            if t == 0:
                for j in range(K):
                    alpha[0, j] = B[s, j]
            else:
                for j in range(K):
                    alpha[t, j] = 0.0
                for i in range(K):
                    a = alpha[t - 1, i]
                    for j in range(K):
                        alpha[t, j] += a * Ae[i, j]
                for j in range(K):
                    alpha[t, j] *= B[s + t, j]
            tot = 0.0
            for j in range(K):
                tot += alpha[t, j]
            if not (tot > SCALE_FLOOR and tot < math.inf):  # underflow, overflow or NaN: redo
                ok = False
                break
            c[t] = tot
            lz += math.log(tot) + off[s + t]
            inv = 1.0 / tot
            for j in range(K):
                alpha[t, j] *= inv
        if not (ok and math.isfinite(lz)):  # (log Z overflows only for absurd potentials: the engine says so)
            continue
        for i in range(K):
            beta[i] = 1.0
            for j in range(K):
                Es[i, j] = 0.0
        for t in range(L - 1, -1, -1):  # backward: marginals, edge sums, beta[t-1] = Ae @ (B[t] beta[t]) / c[t]
            if t > 0:
                ic = 1.0 / c[t]
                for j in range(K):
                    w[j] = B[s + t, j] * beta[j] * ic
            tot = 0.0
            for k in range(K):
                g = alpha[t, k] * beta[k]
                B[s + t, k] = g
                tot += g
            if not abs(tot - 1.0) <= FB_TOL:  # forward and backward disagree: mass was lost
                ok = False
                break
            inv = 1.0 / tot
            for k in range(K):
                B[s + t, k] *= inv
            if t == 0:
                break
            for i in range(K):
                a = alpha[t - 1, i]
                beta[i] = 0.0
                for j in range(K):
                    Es[i, j] += a * w[j]
            for j in range(K):
                x = w[j]
                for i in range(K):
                    beta[i] += AeT[j, i] * x
        if not ok:
            continue
        bad[r] = False
        log_z[r] = lz
        for i in range(K):
            for j in range(K):
                E[i, j] += Es[i, j]
    for i in range(K):
        for j in range(K):
            E[i, j] *= Ae[i, j]


def workspace(T, K):
    """The scratch arrays :func:`ragged_kernel` needs for sequences of up to `T` steps (a tuple).

    Separate arrays rather than views of one block: numba types a reshaped
    slice slowly (~0.2 s more compile) and loops over it with unknown strides.
    """
    e = np.empty
    return e((T, K)), e(T), e((K, K)), e((K, K)), e((K, K)), e(K), e(K)


def scaled_unaries(U, out):
    """``out = exp(U - off)`` with ``off`` (N,) each row's maximum (numpy's vectorised exp); returns off."""
    off = last_axis_max(U)  # (N,)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows are flagged by the kernel
        np.subtract(U, off[:, None], out=out)
        np.exp(out, out=out)
    return off


def _starts(lengths):
    starts = np.zeros(lengths.size + 1, np.intp)
    np.cumsum(lengths, out=starts[1:])
    return starts


def forward_backward_padded(unary, pairwise, lengths, layout=None):
    """The reference: `unary` (N, K) padded by a :class:`~.layout.Layout` and run by
    :func:`~.sum_product.forward_backward`.

    `layout` (optional) is the batch's, reused across calls (its padding buffer too).
    Returns ``(log_z (n,), marginals (N, K), edge_counts (K, K))``, in input order.
    """
    lay = Layout(lengths) if layout is None else layout
    post = forward_backward(lay.pad(unary), pairwise, lay.mask, counts=True)
    log_z = np.empty_like(post.log_z)
    log_z[lay.order] = post.log_z  # padded row r is sequence order[r]
    return log_z, post.marginals.reshape(-1, unary.shape[1])[lay.rows], post.edge_counts


def forward_backward_ragged(unary, pairwise, lengths, *, backend=None, out=None):
    """Log-partitions, token marginals and expected transition counts of flat ragged sequences.

    Parameters
    ----------
    unary : ndarray of shape (N, K)
        Log unary potentials of all tokens, sequence after sequence.
    pairwise : ndarray of shape (K, K)
        Log pairwise potentials shared by every step (``[i, j]``: ``i`` then ``j``).
    lengths : ndarray of int, shape (n,)
        Sequence lengths (each >= 1), summing to N.
    backend : {"numba", "numpy"} or None
        None: :func:`auto_backend` (the chain family's switch of
        :mod:`causalnet.runtime`; ``CAUSALNET_CHAIN_BACKEND=numpy`` turns
        every compiled sweep off, ``=numba`` always compiles).
    out : ndarray of shape (N, K), optional
        Receives the marginals (not `unary` itself).

    Returns
    -------
    log_z : ndarray of shape (n,)
    marginals : ndarray of shape (N, K)
    edge_counts : ndarray of shape (K, K)

    Raises
    ------
    ModelError
        For an unknown `backend`, or an `out` that shares memory with `unary`.
    ShapeError
        If the shapes disagree, or `lengths` do not sum to N.
    EvidenceError
        For a sequence of length 0.
    EvidenceError, ModelError
        As :func:`~.sum_product.forward_backward` for the sequences it redoes
        (NaN or ``+inf`` potentials, no possible path).
    """
    if backend is not None and backend not in BACKENDS:
        raise ModelError(f"forward_backward_ragged backend must be None or one of {list(BACKENDS)}; got {backend!r}")
    unary, pairwise, lengths = _checked(unary, pairwise, lengths, out)
    use_numba = (auto_backend(unary.shape[0], unary.shape[1]) if backend is None else backend) == "numba" and AVAILABLE
    A = np.ascontiguousarray(pairwise, dtype=np.float64)
    amax = A.max() if A.size else 0.0
    if not use_numba or not (np.isfinite(amax) and not np.isnan(A).any()):  # NaN / +inf / all -inf: the engine says why
        log_z, M, E = forward_backward_padded(unary, pairwise, lengths)
        if out is not None:
            out[...] = M
            M = out
        return log_z, M, E
    n, K = lengths.size, unary.shape[1]
    U = np.ascontiguousarray(unary, dtype=np.float64)
    starts = _starts(lengths)
    M = np.empty_like(U) if out is None else out
    log_z, E, bad = np.empty(n), np.empty((K, K)), np.empty(n, bool)
    off = scaled_unaries(U, M)
    ragged_kernel(M, off, A, starts, log_z, E, bad, *workspace(int(lengths.max()) if n else 0, K))
    if bad.any():
        _redo(U, A, lengths, starts, np.flatnonzero(bad), log_z, M, E)
    return log_z, M, E


def _checked(unary, pairwise, lengths, out):
    """The arguments as arrays, shapes and lengths checked (the kernel reads by index: no check, no safety)."""
    unary = np.asarray(unary)
    pairwise = np.asarray(pairwise)
    lengths = np.asarray(lengths)
    if unary.ndim != 2:
        raise ShapeError(f"unary potentials must have shape (N, K); got {unary.shape}")
    N, K = unary.shape
    if pairwise.shape != (K, K):
        raise ShapeError(f"pairwise potentials must have shape (K, K) = ({K}, {K}); got {pairwise.shape}")
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ShapeError(f"lengths must be a 1-D integer array; got {lengths.dtype} of shape {lengths.shape}")
    if lengths.size and int(lengths.min()) < 1:
        raise EvidenceError(f"every sequence needs at least one step; lengths has {int(lengths.min())}")
    if int(lengths.sum()) != N:
        raise ShapeError(f"lengths sum to {int(lengths.sum())} but unary has N = {N} rows")
    if out is not None:
        if out.shape != (N, K) or out.dtype != np.float64:
            raise ShapeError(f"out must be a float64 array of shape ({N}, {K}); got {out.dtype} {out.shape}")
        if np.shares_memory(out, unary):
            raise ModelError("out must not share memory with unary (the marginals overwrite it)")
    return unary, pairwise, lengths


def _redo(U, A, lengths, starts, rows, log_z, M, E):
    """Sequences `rows` by the reference engine, written over the kernel's answers."""
    tok = np.concatenate([np.arange(starts[r], starts[r + 1]) for r in rows])  # (N_bad,)
    lz, marg, counts = forward_backward_padded(U[tok], A, lengths[rows])
    log_z[rows] = lz
    M[tok] = marg
    E += counts
