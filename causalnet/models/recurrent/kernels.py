"""Fused cell updates for :func:`~causalnet.models.recurrent.run`: numba kernels beside the numpy references.

After the recurrent matmul, one step of an LSTM is elementwise work on
``(n, 4 H)`` numbers: three sigmoids, two tanh, the cell update. numpy does it
in about ten passes over memory with temporaries; the numba kernels do it in
one pass, reading the matmul's ``z``, the step's input projection and the
biases and writing ``c`` and ``h`` in place; the same for a GRU or a vanilla
RNN step. Each kernel runs a whole block of steps, the recurrent matmul
included (``np.dot`` inside numba calls the same BLAS), so no Python runs per
step. There is one kernel per cell (``"lstm"``, ``"gru"``, ``"rnn"``), state
layout (``"feature"``: states ``(H, T, n)``; ``"time"``: ``(T, n, H)``; see
:mod:`~causalnet.models.recurrent.layouts`) and dtype, so that the inner loop
always runs over a contiguous axis and vectorises (SIMD). :func:`swap_outer`
is the tiled transpose the feature-major layout needs at both ends.

* **float32**: ``tanh`` is ``x P(s) / Q(s)``, ``s = x^2 / 81``, ``x`` clamped
  to ``[-9, 9]`` (``tanh(9)`` rounds to 1 in float32) and the result to
  ``[-1, 1]``: a rational approximation of degrees 4/4 in ``s`` fitted for
  this module (Lawson-weighted least squares for the relative error on
  ``[0, 9]``). Its error is 2.1e-8 relative; evaluated in float32 it stays
  within 6.3 ulp (3.7e-7 absolute) of the exact ``tanh`` (numpy's own is
  within 1.4 ulp).
* **float64**: ``tanh(x) = e / (e + 2)``, ``e = expm1(2 |x|)`` (sign restored),
  ``expm1(y) = 2^k expm1(r) + 2^k - 1`` with ``y = k ln 2 + r`` (Cody-Waite
  reduction, ``|r| <= ln(2) / 2``) and ``expm1(r)`` its Taylor polynomial to
  degree 14 (truncation 1e-17 relative): within 2.5 ulp of the exact ``tanh``
  (2.46 the largest on a dense grid, near ``|x| = 0.22``, where the division
  ``e / (e + 2)`` adds its rounding to ``expm1``'s; numpy's own is within 1.2),
  so the fast loop equals the generic DAG execution to 1e-12.

Both bounds are what ``tests/models/recurrent/test_tanh_ulp.py`` checks, on
about 1.4 million points of each sign, against numpy's ``tanh`` in float64
(for float32) and in ``np.longdouble`` (for float64).

Neither uses ``exp`` from the C library nor a branch, so both vectorise.
``sigmoid(x) = (1 + tanh(x / 2)) / 2`` as everywhere in causalnet. NaN in
gives NaN out.

:func:`lstm_step_numpy` and :func:`gru_step_numpy` are the references (numpy's
``tanh``), used when numba is missing; :func:`kernel` returns the compiled
loop or None. Kernels compile on first use (about 1 s each, once per process:
they are closures over the activation, which numba does not cache on disk;
numba itself loads with the first of them, see :mod:`causalnet.runtime`).

Symbols: ``n`` batch, ``T`` steps, ``H`` hidden, ``G`` gates, ``m`` steps in
a block of input projections.
"""

from __future__ import annotations

import math

import numpy as np

from ... import runtime

__all__ = ["AVAILABLE", "ACTIVATIONS", "FASTMATH", "SMALL_GEMM", "gemm_rows", "tanh_kernels", "TANH32_P", "TANH32_Q", "TANH32_CLAMP", "TANH64_CLAMP", "tanh32", "kernel", "swap_outer",
           "lstm_step_numpy", "gru_step_numpy"]

AVAILABLE = runtime.numba_available()

#: numerator ``p_0 .. p_4`` of ``tanh(x) ~ x P(s) / Q(s)``, ``s = (x / 9)^2`` (float32 kernels), low degree first
TANH32_P = (0.999999979498052, 10.83862934032672, 22.934536896478665, 10.952480183377817, 0.5748698892981754)
#: denominator ``q_0 .. q_4`` (``q_0 = 1``)
TANH32_Q = (1.0, 37.838614984437996, 169.77882416255542, 174.6118427672358, 33.47536881050233)
#: ``|x|`` is clamped to this; ``tanh(9) = 1 - 3e-8`` rounds to 1 in float32
TANH32_CLAMP = 9.0

_P = tuple(np.float32(v) for v in TANH32_P)
_Q = tuple(np.float32(v) for v in TANH32_Q)
_C = np.float32(TANH32_CLAMP)
_S = np.float32(1.0 / TANH32_CLAMP ** 2)
_ONE, _HALF = np.float32(1.0), np.float32(0.5)


def tanh32(x: np.ndarray) -> np.ndarray:
    """The float32 kernels' ``tanh`` in numpy (float32 throughout): for tests and for reading."""
    v = np.clip(np.asarray(x, dtype=np.float32), -_C, _C)
    s = v * v * _S
    p = (((_P[4] * s + _P[3]) * s + _P[2]) * s + _P[1]) * s + _P[0]
    q = (((_Q[4] * s + _Q[3]) * s + _Q[2]) * s + _Q[1]) * s + _Q[0]
    return np.clip(v * p / q, -_ONE, _ONE)


def _sigmoid_(z: np.ndarray) -> np.ndarray:
    """:func:`~causalnet.mechanisms.tensor.activations.sigmoid` in place, operation for operation."""
    z *= 0.5
    np.tanh(z, out=z)
    z += 1.0
    z *= 0.5
    return z


def lstm_step_numpy(a: np.ndarray, c: np.ndarray, h: np.ndarray, keep: np.ndarray) -> None:
    """One LSTM step in numpy: ``c`` in place, ``h`` written.

    Parameters
    ----------
    a : ndarray of shape (n, 4 H)
        Pre-activations ``W_ih x + W_hh h[t-1] + b``, gates in order i, f, o, g; overwritten.
    c : ndarray of shape (n, H)
        The cell state, updated in place.
    h : ndarray of shape (n, H)
        Receives the new hidden state.
    keep : ndarray of shape (n,)
        1.0 where the step is within the row's length, else 0.0 (state and output zeroed).
    """
    H = c.shape[1]
    _sigmoid_(a[:, :3 * H])
    np.tanh(a[:, 3 * H:], out=a[:, 3 * H:])
    a[:, 3 * H:] *= a[:, :H]                                              # i g
    c *= a[:, H:2 * H]                                                    # f c
    c += a[:, 3 * H:]
    np.tanh(c, out=h)
    h *= a[:, 2 * H:3 * H]                                                # o tanh(c)
    c *= keep[:, None]
    h *= keep[:, None]


def gru_step_numpy(x: np.ndarray, z: np.ndarray, b_hn: np.ndarray, h_prev, h: np.ndarray,
                   keep: np.ndarray) -> None:
    """One GRU step in numpy: ``h`` written from ``h_prev`` (None: zeros).

    `x` ``(n, 3 H)`` is ``W_ih x + b`` (gates r, z, n; ``b`` holds ``b_ir + b_hr``, ``b_iz + b_hz``,
    ``b_in``) and `z` ``(n, 3 H)`` is ``W_hh h[t-1]`` (overwritten); `b_hn` ``(H,)`` the bias inside
    ``r (W_hn h + b_hn)``; `h_prev`, `h` ``(n, H)``; `keep` as in :func:`lstm_step_numpy`.
    """
    H = h.shape[1]
    rz = _sigmoid_(z[:, :2 * H] + x[:, :2 * H])                           # (n, 2 H)
    hn = z[:, 2 * H:]
    hn += b_hn
    hn *= rz[:, :H]
    hn += x[:, 2 * H:]
    np.tanh(hn, out=hn)                                                   # n
    if h_prev is None:
        np.multiply(1.0 - rz[:, H:], hn, out=h)
    else:
        np.add((1.0 - rz[:, H:]) * hn, rz[:, H:] * h_prev, out=h)
    h *= keep[:, None]


_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10   # ln 2 split (Cody-Waite)
_INV_LN2 = 1.4426950408889634
#: ``1/2!, ..., 1/14!``: Taylor coefficients of ``expm1(r) = r + r^2 Q(r)`` on ``|r| <= ln(2) / 2``
_EXPM1_Q = tuple(1.0 / math.factorial(m) for m in range(2, 15))
#: from this ``|x|`` on, ``tanh(x)`` is 1 in float64 (``1 - tanh(19.1) = 5e-17``)
TANH64_CLAMP = 19.1


def tanh_kernels():
    """The two scalar ``tanh`` (float32, float64) numba inlines into the update loops."""
    numba = runtime.load_numba()
    inline = numba.njit(cache=False, nogil=True, error_model="numpy", inline="always")
    p0, p1, p2, p3, p4 = _P
    q0, q1, q2, q3, q4 = _Q
    c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14 = _EXPM1_Q

    @inline
    def tanh_f32(x):  # pragma: no cover - compiled
        v = _C if x > _C else x                                           # NaN stays NaN
        v = -_C if v < -_C else v
        s = v * v * _S
        r = v * ((((p4 * s + p3) * s + p2) * s + p1) * s + p0) / ((((q4 * s + q3) * s + q2) * s + q1) * s + q0)
        r = _ONE if r > _ONE else r
        return -_ONE if r < -_ONE else r

    @inline
    def tanh_f64(x):  # pragma: no cover - compiled
        a = x if x >= 0.0 else -x
        a = TANH64_CLAMP if a > TANH64_CLAMP else a
        y = a + a                                                         # tanh(a) = e / (e + 2), e = expm1(2 a)
        ki = np.int64(y * _INV_LN2 + 0.5)                                 # y = k ln 2 + r, 0 <= k <= 55
        k = np.float64(ki)
        r = (y - k * _LN2_HI) - k * _LN2_LO
        q = ((((((((((((c14 * r + c13) * r + c12) * r + c11) * r + c10) * r + c9) * r + c8) * r + c7) * r + c6)
                   * r + c5) * r + c4) * r + c3) * r + c2)
        s = np.float64(np.int64(1) << ki)                                 # 2^k, exact
        e = s * (r + r * r * q) + (s - 1.0)                               # 2^k expm1(r) + 2^k - 1
        t = e / (e + 2.0)
        return t if x >= 0.0 else -t

    return tanh_f32, tanh_f64


def _cells(tanh, one, half):
    """The per-element LSTM and GRU updates around one scalar `tanh` (`one`, `half` of its dtype)."""
    numba = runtime.load_numba()
    inline = numba.njit(cache=False, nogil=True, error_model="numpy", inline="always")

    @inline
    def sigmoid(x):  # pragma: no cover - compiled
        return half * (one + tanh(half * x))

    @inline
    def lstm(ai, af, ao, ag, c, q):  # pragma: no cover - compiled
        cc = sigmoid(af) * c + sigmoid(ai) * tanh(ag)
        return cc * q, sigmoid(ao) * tanh(cc) * q

    @inline
    def gru(ar, au, xn, hn, hp, q):  # pragma: no cover - compiled
        r, u = sigmoid(ar), sigmoid(au)
        return ((one - u) * tanh(xn + r * hn) + u * hp) * q

    return lstm, gru


def _recur_rows(numba, opts: dict):
    """The compiled ``z = W h`` (``(G H, n)``) in blocks of :func:`gemm_rows` rows of `W`, each one BLAS call."""
    rows_for = numba.njit(inline="always", **opts)(gemm_rows)

    @numba.njit(inline="always", **opts)
    def recur(W, h, z):  # pragma: no cover - compiled
        G = W.shape[0]
        rows = rows_for(G, W.shape[1], h.shape[1])
        for r0 in range(0, G, rows):
            r1 = min(r0 + rows, G)
            np.dot(W[r0:r1], h, z[r0:r1])

    return recur


def _loops(tanh, one, half, opts: dict) -> dict:
    """``{(cell, layout): loop}`` over a block of steps, for one dtype (`tanh`, `one`, `half` of it).

    Each loop runs steps ``t0 .. t0 + m - 1`` (backward when `reverse`), each step one ``np.dot`` (BLAS,
    as numpy's matmul) for ``W_hh h[t-1]`` into `z` (skipped at the very first step, `z` zero) and one
    pass of the cell over the step's numbers.
    """
    lstm, gru = _cells(tanh, one, half)
    return {**_lstm_loops(lstm, one - one, opts), **_gru_loops(gru, opts), **_rnn_loops(tanh, one, opts)}


#: the one fast-math flag the float32 step loops compile with: a multiply and an add may fuse into one FMA
#: (rounded once), nothing else (no reassociation, NaN and inf kept). About 6 % off the float32 LSTM; the float32
#: tanh bound above holds either way (``tests/models/recurrent/test_tanh_ulp.py`` checks both). The float64
#: loops compile without it: fused, their tanh reaches 2.502 ulp, past the 2.5 stated.
FASTMATH = ("contract",)
_JIT = {"cache": False, "nogil": True, "error_model": "numpy"}
_JIT32 = {**_JIT, "fastmath": set(FASTMATH)}

#: OpenBLAS (x86-64 since 0.3.16) runs a product of ``M N K <= 10^6`` multiply-adds with its "small matrix"
#: kernels, which read the operands in place; a larger one packs both operands first, the whole ``(G H, H)``
#: recurrent weight matrix at every step. The feature-major loops therefore compute ``W_hh h`` as a few row
#: blocks of at most this many multiply-adds each (:func:`gemm_rows`).
SMALL_GEMM = 1_000_000


def gemm_rows(G_H: int, H: int, n: int) -> int:
    """Rows of ``W_hh`` ``(G H, H)`` per product with ``h`` ``(H, n)`` in the feature-major loops.

    The largest multiple of 16 with ``rows H n <= SMALL_GEMM`` (:data:`SMALL_GEMM`); all `G_H` rows (one
    product) when not even 16 rows fit or when one product is small already. On the benchmark's LSTM (``H``
    256, ``n`` 32: 112 rows, 10 products a step) the recurrent products take about 0.7 of the time of one
    ``(1024, 256) @ (256, 32)`` product, in float32 and float64.
    """
    if G_H * H * n <= SMALL_GEMM:
        return G_H
    rows = SMALL_GEMM // max(H * n, 1) // 16 * 16
    return G_H if rows < 16 else rows


def _lstm_loops(lstm, zero, opts: dict) -> dict:
    """The LSTM block loops, feature- and time-major, around the per-element update `lstm`."""
    numba = runtime.load_numba()
    jit = numba.njit(**opts)
    recur = _recur_rows(numba, opts)

    @jit
    def lstm_feature(W_hh, z, xp, b, t0, reverse, first, keep, c, track, c_last, y, h):  # pragma: no cover
        H, n = c.shape                    # W_hh (4H, H), z (4H, n), xp (4H, m, n), c, h (H, n), y (H, T, n)
        m = xp.shape[1]
        for q in range(m):
            s = m - 1 - q if reverse else q
            t = t0 + s
            if q > 0 or not first:
                recur(W_hh, h, z)
            for j in range(H):
                bi, bf, bo, bg = b[j], b[H + j], b[2 * H + j], b[3 * H + j]
                for k in range(n):
                    cc, hh = lstm(z[j, k] + xp[j, s, k] + bi, z[H + j, k] + xp[H + j, s, k] + bf,
                                  z[2 * H + j, k] + xp[2 * H + j, s, k] + bo,
                                  z[3 * H + j, k] + xp[3 * H + j, s, k] + bg, c[j, k], keep[t, k])
                    c[j, k] = cc
                    y[j, t, k] = hh
                    h[j, k] = hh
            if track:                     # lengths: each row's c at its last valid step
                for k in range(n):
                    if keep[t, k] > zero:
                        c_last[:, k] = c[:, k]

    @jit
    def lstm_time(W_hh_T, z, xp, b, t0, reverse, first, keep, c, track, c_last, y, h):  # pragma: no cover
        n, H = c.shape                    # W_hh_T (H, 4H), z (n, 4H), xp (m, n, 4H), c (n, H), y (T, n, H)
        m = xp.shape[0]
        for q in range(m):
            s = m - 1 - q if reverse else q
            t = t0 + s
            if q > 0 or not first:
                np.dot(y[t + 1] if reverse else y[t - 1], W_hh_T, z)
            for k in range(n):
                w = keep[t, k]
                for j in range(H):
                    cc, hh = lstm(z[k, j] + xp[s, k, j] + b[j], z[k, H + j] + xp[s, k, H + j] + b[H + j],
                                  z[k, 2 * H + j] + xp[s, k, 2 * H + j] + b[2 * H + j],
                                  z[k, 3 * H + j] + xp[s, k, 3 * H + j] + b[3 * H + j], c[k, j], w)
                    c[k, j] = cc
                    y[t, k, j] = hh
                if track and w > zero:
                    c_last[k] = c[k]

    return {("lstm", "feature"): lstm_feature, ("lstm", "time"): lstm_time}


def _gru_loops(gru, opts: dict) -> dict:
    """The GRU block loops around the per-element update `gru` (``h[t-1]`` kept in `h`)."""
    numba = runtime.load_numba()
    jit = numba.njit(**opts)
    recur = _recur_rows(numba, opts)

    @jit
    def gru_feature(W_hh, z, xp, b, b_hn, t0, reverse, first, keep, y, h):  # pragma: no cover
        H, n = h.shape                    # W_hh (3H, H), z (3H, n), xp (3H, m, n), h (H, n), y (H, T, n)
        m = xp.shape[1]
        for q in range(m):
            s = m - 1 - q if reverse else q
            t = t0 + s
            if q > 0 or not first:
                recur(W_hh, h, z)
            for j in range(H):
                br, bu, bn, bh = b[j], b[H + j], b[2 * H + j], b_hn[j]
                for k in range(n):
                    hh = gru(z[j, k] + xp[j, s, k] + br, z[H + j, k] + xp[H + j, s, k] + bu,
                             xp[2 * H + j, s, k] + bn, z[2 * H + j, k] + bh, h[j, k], keep[t, k])
                    y[j, t, k] = hh
                    h[j, k] = hh

    @jit
    def gru_time(W_hh_T, z, xp, b, b_hn, t0, reverse, first, keep, y, h):  # pragma: no cover
        n, H = h.shape                    # W_hh_T (H, 3H), z (n, 3H), xp (m, n, 3H), h (n, H), y (T, n, H)
        m = xp.shape[0]
        for q in range(m):
            s = m - 1 - q if reverse else q
            t = t0 + s
            if q > 0 or not first:
                np.dot(h, W_hh_T, z)
            for k in range(n):
                w = keep[t, k]
                for j in range(H):
                    hh = gru(z[k, j] + xp[s, k, j] + b[j], z[k, H + j] + xp[s, k, H + j] + b[H + j],
                             xp[s, k, 2 * H + j] + b[2 * H + j], z[k, 2 * H + j] + b_hn[j], h[k, j], w)
                    y[t, k, j] = hh
                    h[k, j] = hh

    return {("gru", "feature"): gru_feature, ("gru", "time"): gru_time}


def _rnn_loops(tanh, one, opts: dict) -> dict:
    """The vanilla RNN block loops; the activation is a code (:data:`ACTIVATIONS`)."""
    numba = runtime.load_numba()
    jit = numba.njit(**opts)
    recur = _recur_rows(numba, opts)
    zero = one - one

    @numba.njit(inline="always", **opts)
    def act_(a, act):  # pragma: no cover - compiled
        if act == 1:
            return tanh(a)
        return zero if a < zero else a                     # relu; NaN stays NaN, as np.maximum

    @jit
    def rnn_feature(W_hh, z, xp, b, act, t0, reverse, first, keep, y, h):  # pragma: no cover
        H, n = h.shape                    # W_hh (H, H), z, h (H, n), xp (H, m, n), y (H, T, n)
        m = xp.shape[1]
        for q in range(m):
            s = m - 1 - q if reverse else q
            t = t0 + s
            if q > 0 or not first:
                recur(W_hh, h, z)
            for j in range(H):
                for k in range(n):
                    hh = act_(z[j, k] + xp[j, s, k] + b[j], act) * keep[t, k]
                    y[j, t, k] = hh
                    h[j, k] = hh

    @jit
    def rnn_time(W_hh_T, z, xp, b, act, t0, reverse, first, keep, y, h):  # pragma: no cover
        n, H = h.shape                    # W_hh_T (H, H), z, h (n, H), xp (m, n, H), y (T, n, H)
        m = xp.shape[0]
        for q in range(m):
            s = m - 1 - q if reverse else q
            t = t0 + s
            if q > 0 or not first:
                np.dot(h, W_hh_T, z)
            for k in range(n):
                w = keep[t, k]
                for j in range(H):
                    hh = act_(z[k, j] + xp[s, k, j] + b[j], act) * w
                    y[t, k, j] = hh
                    h[k, j] = hh

    return {("rnn", "feature"): rnn_feature, ("rnn", "time"): rnn_time}


def _compile() -> dict:
    """dtype -> its loops, or ``{}`` without numba (each loop compiles on its first call)."""
    if not AVAILABLE:  # pragma: no cover
        return {}
    t32, t64 = tanh_kernels()
    return {np.dtype(np.float32): _loops(t32, _ONE, _HALF, _JIT32), np.dtype(np.float64): _loops(t64, 1.0, 0.5, _JIT)}


_made: dict = {}


def _kernels() -> dict:
    """:func:`_compile`'s loops, made (numba imported) on the first request."""
    if "loops" not in _made:
        _made["loops"] = _compile()
    return _made["loops"]


def _swap_loop():
    """The compiled transpose ``dst[c, t, a] = src[a, t, c]`` in 8 x 8 tiles (both sides stay in cache)."""
    if not AVAILABLE:  # pragma: no cover
        return None
    numba = runtime.load_numba()

    @numba.njit(cache=False, nogil=True)
    def swap(src, dst):  # pragma: no cover - compiled
        A, T, C = src.shape
        for t in range(T):
            for a0 in range(0, A, 8):
                for c0 in range(0, C, 8):
                    for c in range(c0, min(c0 + 8, C)):
                        for a in range(a0, min(a0 + 8, A)):
                            dst[c, t, a] = src[a, t, c]

    return swap




def _swap():
    """The compiled transpose (made, numba imported, on first request), or None without numba."""
    if "swap" not in _made:
        _made["swap"] = _swap_loop()
    return _made["swap"]


def swap_outer(a: np.ndarray) -> np.ndarray:
    """A new C-contiguous ``(C, T, A)`` array from `a` ``(A, T, C)``: axes 0 and 2 swapped.

    numpy's strided copy takes about 3.5 ns an element here; the tiled loop about 1 ns.
    """
    swap = _swap() if a.dtype in _kernels() else None
    if swap is None:
        return np.ascontiguousarray(a.transpose(2, 1, 0))
    out = np.empty(a.shape[::-1], dtype=a.dtype)
    swap(np.ascontiguousarray(a), out)
    return out


#: an RNN's activation (``RNNCell`` takes these two) -> the code its compiled loop takes
ACTIVATIONS = {"tanh": 1, "relu": 2}


def kernel(cell: str, layout: str, dtype):
    """The compiled loop over a block of steps of `cell` (``"lstm"``, ``"gru"``, ``"rnn"``) in `layout` and `dtype`, or None.

    ``lstm(W_hh, z, xp, b, t0, reverse, first, keep, c, track, c_last, y, h)`` and
    ``gru(W_hh, z, xp, b, b_hn, t0, reverse, first, keep, y, h)`` and
    ``rnn(W_hh, z, xp, b, act, t0, reverse, first, keep, y, h)`` (`act` an :data:`ACTIVATIONS` code):
    `W_hh` as the layout stores it, `z`
    the ``W_hh h`` buffer (zero when `first`: the block opens the sequence), `xp` the block's input
    projections (steps ``t0 ..``), `b` ``(G H,)`` the biases, `keep` ``(T, n)`` 1.0 / 0.0, `c` the cell
    state and `h` the hidden state (in/out), `y` the states (the block's steps written); when `track`
    (lengths), `c_last` receives each row's ``c`` at its last valid step (else it is any array). Shapes per layout
    are in the source.
    """
    return _kernels().get(np.dtype(dtype), {}).get((cell, layout))
