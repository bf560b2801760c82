"""Fused cell updates for :func:`~causalnet.models.recurrent.run`: numba kernels beside the numpy references.

The fast loop keeps every state **feature-major**: a layer's states are one
array ``(H, T, n)`` and the pre-activations of a step ``(G H, n)``, so that
``W_hh @ h[t-1]`` is one BLAS call on the stored ``(G H, H)`` weights (no
transpose; BLAS runs it faster than ``h @ W_hh^T`` on ``n = 32`` rows) and the
input projections of all steps are one matmul ``(G H, d) @ (d, T n)``.

After the recurrent matmul, one step of an LSTM is elementwise work on
``(4 H, n)`` numbers: three sigmoids, two tanh, the cell update. numpy does it
in about ten passes over memory with temporaries; the numba kernel
:func:`lstm_update` does it in one pass, reading the matmul's ``z`` and the
step's input projection and writing ``c`` and ``h`` in place, and so does
:func:`gru_update` for a GRU.

* **float32** (compiled): ``tanh`` is ``x P(s) / Q(s)``, ``s = x^2 / 81``,
  ``x`` clamped to ``[-9, 9]`` (``tanh(9)`` rounds to 1 in float32) and the
  result to ``[-1, 1]``: a rational approximation of degrees 4/4 in ``s``
  fitted for this module (Lawson-weighted least squares for the relative
  error on ``[0, 9]``). Its error is 2.1e-8 relative; evaluated in float32 it
  stays within 6.3 ulp (3.7e-7 absolute) of the exact ``tanh`` (numpy's is
  within 1.4 ulp). With no ``exp`` and no branch the loop vectorises (SIMD).
  ``sigmoid(x) = (1 + tanh(x / 2)) / 2`` as everywhere in causalnet.
* **float64** runs the numpy references (numpy's ``tanh``), so the fast loop
  equals the generic DAG execution to rounding (1e-12).

:func:`lstm_update_numpy` and :func:`gru_update_numpy` are the references,
used when numba is missing; :func:`compiled` says which dtypes have a kernel.
The kernels compile on first use (about 1 s, once per process; no on-disk
cache, see :mod:`causalnet.inference.chain.compiled`).

Symbols: ``n`` batch, ``T`` steps, ``H`` hidden, ``G`` gates.
"""

from __future__ import annotations

import math

import numpy as np

try:  # numba is a regular dependency; the numpy references remain the fallback
    import numba
except ImportError:  # pragma: no cover - exercised only without numba
    numba = None

__all__ = ["AVAILABLE", "TANH32_P", "TANH32_Q", "TANH32_CLAMP", "TANH64_CLAMP", "tanh32", "compiled",
           "lstm_update", "lstm_update_numpy", "gru_update", "gru_update_numpy"]

AVAILABLE = numba is not None

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


def lstm_update_numpy(z: np.ndarray, xp: np.ndarray, b: np.ndarray, t: int, keep, c: np.ndarray,
                      y: np.ndarray) -> None:
    """One LSTM step in numpy: ``c`` in place, ``h`` into ``y[:, t]``.

    Parameters
    ----------
    z : ndarray of shape (4 H, n)
        ``W_hh @ h[t-1]``, rows in gate order i, f, o, g; overwritten.
    xp : ndarray of shape (4 H, T, n)
        Input projections ``W_ih @ x[t]``, same row order.
    b : ndarray of shape (4 H,)
        The biases (``b_ih + b_hh``).
    t : int
    keep : ndarray of shape (T, n), or None
        1.0 where step ``t`` of row ``k`` is within its length, else 0.0 (state and output zeroed).
    c : ndarray of shape (H, n)
        The cell state, updated in place.
    y : ndarray of shape (H, T, n)
        This direction's outputs; ``y[:, t]`` is written.
    """
    H = c.shape[0]
    z += xp[:, t]
    z += b[:, None]
    _sigmoid_(z[:3 * H])
    np.tanh(z[3 * H:], out=z[3 * H:])
    z[3 * H:] *= z[:H]                                                    # i g
    c *= z[H:2 * H]                                                       # f c
    c += z[3 * H:]
    h = y[:, t]                                                           # (H, n) view
    np.tanh(c, out=h)
    h *= z[2 * H:3 * H]                                                   # o tanh(c)
    if keep is not None:
        c *= keep[t]
        h *= keep[t]


def gru_update_numpy(z: np.ndarray, xp: np.ndarray, b: np.ndarray, b_hn: np.ndarray, t: int, tp: int, keep,
                     y: np.ndarray) -> None:
    """One GRU step in numpy: ``h`` into ``y[:, t]`` from ``y[:, tp]`` (zeros when ``tp < 0``).

    `z` ``(3 H, n)`` is ``W_hh @ h[t-1]`` (rows r, z, n; overwritten), `xp` ``(3 H, T, n)`` the input
    projections, `b` ``(3 H,)`` their biases (``b_ir + b_hr``, ``b_iz + b_hz``, ``b_in``), `b_hn` ``(H,)``
    the bias inside ``r (W_hn h + b_hn)``; `keep` and `y` as in :func:`lstm_update_numpy`.
    """
    H = y.shape[0]
    xb = xp[:, t] + b[:, None]                                            # (3 H, n)
    rz = _sigmoid_(z[:2 * H] + xb[:2 * H])                                # (2 H, n)
    hn = z[2 * H:]
    hn += b_hn[:, None]
    hn *= rz[:H]
    hn += xb[2 * H:]
    np.tanh(hn, out=hn)                                                   # n
    h = y[:, t]
    if tp < 0:
        np.multiply(1.0 - rz[H:], hn, out=h)
    else:
        np.add((1.0 - rz[H:]) * hn, rz[H:] * y[:, tp], out=h)
    if keep is not None:
        h *= keep[t]


_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10   # ln 2 split (Cody-Waite)
_INV_LN2 = 1.4426950408889634
#: ``1/2!, ..., 1/14!``: Taylor coefficients of ``expm1(r) = r + r^2 Q(r)`` on ``|r| <= ln(2) / 2``
_EXPM1_Q = tuple(1.0 / math.factorial(m) for m in range(2, 15))
#: from this ``|x|`` on, ``tanh(x)`` is 1 in float64 (``1 - tanh(19.1) = 5e-17``)
TANH64_CLAMP = 19.1


def _tanh_kernels():
    """The two scalar ``tanh`` (float32, float64) numba inlines into the update loops."""
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


def _update_kernels(tanh, one, half):
    """``{"lstm", "gru"}`` update loops around one scalar `tanh` (constants `one`, `half` of its dtype)."""
    jit = numba.njit(cache=False, nogil=True, error_model="numpy")

    @numba.njit(cache=False, nogil=True, error_model="numpy", inline="always")
    def sigmoid(x):  # pragma: no cover - compiled
        return half * (one + tanh(half * x))

    @jit
    def lstm(z, xp, b, t, keep, c, y):  # pragma: no cover - compiled
        H, n = c.shape
        for j in range(H):
            bi, bf, bo, bg = b[j], b[H + j], b[2 * H + j], b[3 * H + j]
            for k in range(n):
                i = sigmoid(z[j, k] + xp[j, t, k] + bi)
                f = sigmoid(z[H + j, k] + xp[H + j, t, k] + bf)
                o = sigmoid(z[2 * H + j, k] + xp[2 * H + j, t, k] + bo)
                g = tanh(z[3 * H + j, k] + xp[3 * H + j, t, k] + bg)
                cc = f * c[j, k] + i * g
                h = o * tanh(cc)
                if keep is not None:
                    cc *= keep[t, k]
                    h *= keep[t, k]
                c[j, k] = cc
                y[j, t, k] = h

    @jit
    def gru(z, xp, b, b_hn, t, tp, keep, y):  # pragma: no cover - compiled
        H, T, n = y.shape
        for j in range(H):
            br, bu, bn, bh = b[j], b[H + j], b[2 * H + j], b_hn[j]
            for k in range(n):
                r = sigmoid(z[j, k] + xp[j, t, k] + br)
                u = sigmoid(z[H + j, k] + xp[H + j, t, k] + bu)
                nn = tanh(xp[2 * H + j, t, k] + bn + r * (z[2 * H + j, k] + bh))
                h = (one - u) * nn
                if tp >= 0:
                    h += u * y[j, tp, k]
                if keep is not None:
                    h *= keep[t, k]
                y[j, t, k] = h

    return {"lstm": lstm, "gru": gru}


def _compile() -> dict:
    """dtype -> update kernels, or ``{}`` without numba (compiled on first call, per dtype)."""
    if numba is None:  # pragma: no cover
        return {}
    t32, t64 = _tanh_kernels()
    return {np.dtype(np.float32): _update_kernels(t32, _ONE, _HALF),
            np.dtype(np.float64): _update_kernels(t64, 1.0, 0.5)}


_KERNELS = _compile()


def compiled(dtype) -> bool:
    """True when the updates of `dtype` run compiled (numba installed; float32 or float64)."""
    return np.dtype(dtype) in _KERNELS


def lstm_update(z, xp, b, t, keep, c, y) -> None:
    """:func:`lstm_update_numpy`, compiled when :func:`compiled` (module docstring)."""
    kernels = _KERNELS.get(c.dtype)
    (lstm_update_numpy if kernels is None else kernels["lstm"])(z, xp, b, t, keep, c, y)


def gru_update(z, xp, b, b_hn, t, tp, keep, y) -> None:
    """:func:`gru_update_numpy`, compiled when :func:`compiled`."""
    kernels = _KERNELS.get(y.dtype)
    (gru_update_numpy if kernels is None else kernels["gru"])(z, xp, b, b_hn, t, tp, keep, y)
