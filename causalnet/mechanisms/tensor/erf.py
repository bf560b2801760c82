"""The exact (erf) GELU, fast: numba kernels, with numpy/scipy as the reference fallback.

``GELU(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))``.

* **float64**: ``erf`` is the C library's (``math.erf`` in a numba ufunc; scipy's
  ``erf`` without numba). Both are correctly rounded to about one ulp; they
  agree to ~1e-16 relative.
* **float32**: ``erf(u) ~ u P(u^2) / Q(u^2)``, kept in ``[-1, 1]``, and
  exactly +-1 for ``|u| >= 3.9`` (where ``erf`` rounds to +-1 in float32), a rational
  approximation of degrees 6/5 in ``u^2`` fitted for this module (iterated
  weighted least squares on ``[0, 4]``); its error against the exact ``erf``
  is below 2.3e-9 relative, under float32's round-off (6e-8). Evaluated in
  float32 with no ``exp`` and no branch, the numba loop vectorises (SIMD):
  about 30x faster than scipy's float32 ``erf``.

The backend is the tensor family's switch of :mod:`causalnet.runtime`:
``"numba"`` always, ``"numpy"`` never (the same formulas in numpy, float32,
and scipy's ``erf`` for float64), ``"auto"`` for arrays of ``AUTO_MIN_SIZE``
entries or more, or once the ufuncs are compiled; :func:`gelu_numpy` is always
the numpy one. The numba ufuncs compile on first use, about 0.5 s once per
process (closures: numba does not cache them on disk).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf as _scipy_erf

from ... import runtime

__all__ = ["AVAILABLE", "AUTO_MIN_SIZE", "ERF32_P", "ERF32_Q", "erf32", "gelu_erf", "gelu_erf_", "gelu_numpy", "gelu_numba"]

AVAILABLE = runtime.numba_available()
#: with the tensor backend "auto", arrays of at least this many entries load the numba ufuncs (smaller
#: ones are done by numpy before numba would have loaded); once loaded they serve every size
AUTO_MIN_SIZE = 1 << 16

#: numerator coefficients ``p_0 .. p_6`` of ``erf(u) ~ u P(u^2) / Q(u^2)`` (float32 path), low degree first
ERF32_P = (1.1283791685335656, 0.18522189811249104, 0.054336941230864716, 0.0038528050217598794,
           0.00038039952219457574, 4.704627003827446e-06, -1.3303188044221456e-08)
#: denominator coefficients ``q_0 .. q_5`` (``q_0 = 1``)
ERF32_Q = (1.0, 0.4974820387188823, 0.11398170288298697, 0.01547100909414024, 0.0013093108074127284,
           6.330219114156289e-05)
#: the fit's range; |u| is clamped to it
ERF32_CLAMP = 4.0
#: from this |u| on, erf(u) is taken as exactly +-1 (erfc(3.9) = 3.5e-8, under float32's ulp of 1, 6e-8),
#: so that GELU(x) is exactly -0 for very negative x, as with an exact erf
ERF32_ONE = 3.9

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_P = [np.float32(c) for c in ERF32_P]
_Q = [np.float32(c) for c in ERF32_Q]


def erf32(u: np.ndarray) -> np.ndarray:
    """``erf`` of a float32 array by the rational approximation (numpy; float32 throughout)."""
    u = np.clip(u, np.float32(-ERF32_CLAMP), np.float32(ERF32_CLAMP))
    z = u * u
    p = np.full_like(z, _P[6])
    for c in _P[5::-1]:
        p *= z
        p += c
    q = np.full_like(z, _Q[5])
    for c in _Q[4::-1]:
        q *= z
        q += c
    p *= u
    p /= q
    np.clip(p, np.float32(-1.0), np.float32(1.0), out=p)
    return np.where(np.abs(u) >= np.float32(ERF32_ONE), np.sign(u), p)


def gelu_numpy(x: np.ndarray) -> np.ndarray:
    """``0.5 x (1 + erf(x / sqrt 2))`` in numpy: :func:`erf32` for float32, scipy's ``erf`` otherwise."""
    if x.dtype == np.float32:
        e = erf32(x * np.float32(_INV_SQRT2))
    else:
        e = _scipy_erf(x * np.asarray(_INV_SQRT2, dtype=x.dtype))
    e += 1
    e *= x
    e *= np.asarray(0.5, dtype=x.dtype)
    return e


_kernels: dict = {}
#: fast-math flags that let LLVM vectorise and fuse, but keep inf and NaN semantics (no "nnan", "ninf")
_FAST = {"contract", "afn", "reassoc", "nsz", "arcp"}


def _compile():
    """The numba ufunc (float32: the rational erf, vectorised; float64: libm's erf)."""
    p0, p1, p2, p3, p4, p5, p6 = _P
    q0, q1, q2, q3, q4, q5 = _Q
    numba = runtime.load_numba()
    lo, hi, half, one, r2, top = (np.float32(-ERF32_CLAMP), np.float32(ERF32_CLAMP), np.float32(0.5),
                                  np.float32(1.0), np.float32(_INV_SQRT2), np.float32(ERF32_ONE))

    @numba.vectorize(["float32(float32)"], nopython=True, fastmath=_FAST)
    def g32(x):  # pragma: no cover - compiled by numba (coverage cannot see it)
        u = min(max(x * r2, lo), hi)
        z = u * u
        p = (((((p6 * z + p5) * z + p4) * z + p3) * z + p2) * z + p1) * z + p0
        q = ((((q5 * z + q4) * z + q3) * z + q2) * z + q1) * z + q0
        e = min(max(u * p / q, -one), one)
        if u >= top:
            e = one
        elif u <= -top:
            e = -one
        return half * x * (one + e)

    @numba.vectorize(["float64(float64)"], nopython=True)
    def g64(x):  # pragma: no cover - compiled by numba
        return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))

    _kernels.update({np.dtype(np.float32): g32, np.dtype(np.float64): g64})


def gelu_numba(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The exact GELU by the numba ufuncs (float32 / float64; other dtypes go through numpy).

    `out` (optional) receives the result, and may be `x` itself.
    """
    if not _kernels:
        _compile()
    k = _kernels.get(x.dtype)
    if k is None:
        return gelu_numpy(x)
    return k(x) if out is None else k(x, out=out)


def _use_numba(x: np.ndarray) -> bool:
    """The tensor family's switch (:mod:`causalnet.runtime`): numba always, never, or once it pays ("auto")."""
    name = runtime.get_backend("tensor")
    return AVAILABLE and name != "numpy" and (name == "numba" or bool(_kernels) or x.size >= AUTO_MIN_SIZE)


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """The exact GELU of a float array, by the backend of the tensor family (numba or numpy; same values)."""
    return gelu_numba(x) if _use_numba(x) else gelu_numpy(x)


def gelu_erf_(x: np.ndarray) -> np.ndarray:
    """:func:`gelu_erf` in place when numba runs it (on a fresh array the caller owns); same values."""
    return gelu_numba(x, out=x) if x.dtype in _DTYPES and _use_numba(x) else gelu_numpy(x)


_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
