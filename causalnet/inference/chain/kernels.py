"""Small numeric kernels the chain sweeps share: blocked products, log-sum-exp, rolling buffers.

The per-step products of a chain sweep are far too small to gain from BLAS
threads, which thrash on a busy machine; :func:`matmul_blocked` and
:func:`add_atb` cut them into row blocks of at most ``BLAS_MNK`` multiply-adds
so OpenBLAS runs each on one thread. The tolerances every sweep agrees on live
here too.

>>> import numpy as np
>>> a = np.ones((3, 2)); out = np.empty((3, 2))
>>> matmul_blocked(a, np.eye(2), out).tolist()
[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "SCALE_FLOOR", "FB_TOL", "CHUNK_ELEMS", "BLAS_MNK",
    "matmul_blocked", "add_atb", "Rolling", "logsumexp_into", "last_axis_max",
]


# A row whose per-step normaliser falls to or below this is recomputed in log
# space: every term that can matter is then far above the subnormal range.
SCALE_FLOOR = 1e-250
# ... and so is a row whose posterior rows do not sum to 1 to this tolerance
# (forward and backward disagree only when scaling dropped mass).
FB_TOL = 1e-9
# Element budget of one temporary in the chunked log-space edge sums.
CHUNK_ELEMS = 1 << 22
# Long and narrow batches (T >= TC_MIN_T, n * K**3 <= TC_MAX_NK3, shared
# pairwise) are swept in time chunks (see chunked_forward): ~3 sqrt(T) Python
# steps instead of 2 T, for K-fold more arithmetic.
TC_MIN_T = 1024
TC_MAX_NK3 = 1 << 15
TC_MAX_NK3_VITERBI = 1 << 10  # max-product chunks with -inf pairwise need a K**3 temporary per chunk
# Chunk-boundary messages computed two ways must agree to this (max-abs, on
# normalised vectors); a row that disagrees is recomputed without chunks.
TC_TOL = 1e-8
# Matrix products are cut into row blocks of at most this many multiply-adds:
# OpenBLAS runs smaller ones on one thread, and the per-step products are far
# too small to gain from threads, which thrash (10x slower) on a busy machine.
BLAS_MNK = 1 << 18


def last_axis_max(u):
    """``u.max(axis=-1)`` (a new array), column by column for few states.

    numpy reduces a short last axis element by element; ``K`` vectorised
    ``np.maximum`` passes over the other axes are 5-10x faster for ``K <= 32``
    (the same values: a maximum is exact).
    """
    K = u.shape[-1]
    if K == 0 or K > 32:
        return u.max(axis=-1)
    out = u[..., 0].copy()
    for k in range(1, K):
        np.maximum(out, u[..., k], out=out)
    return out


def matmul_blocked(a, b, out):
    """``out = a @ b`` for 2-D operands, in row blocks of at most ``BLAS_MNK`` multiply-adds."""
    M, K = a.shape
    step = max(1, BLAS_MNK // max(1, K * b.shape[1]))
    if M <= step:
        return np.matmul(a, b, out=out)
    for i in range(0, M, step):
        np.matmul(a[i : i + step], b, out=out[i : i + step])
    return out


def add_atb(a, b, acc):
    """``acc += a.T @ b`` for a (R, K), b (R, N), in blocks of rows."""
    R, K = a.shape
    step = max(1, BLAS_MNK // max(1, K * b.shape[1]))
    for i in range(0, R, step):
        acc += a[i : i + step].T @ b[i : i + step]
    return acc


class Rolling:
    """A (2, n, K) buffer indexed like a (T, n, K) array: step t lives in slot t % 2."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self.buf[(key[0] % 2,) + key[1:]]
        return self.buf[key % 2]


def logsumexp_into(M, axis, out):
    """``out = logsumexp(M, axis)``, -inf safe; clobbers M."""
    mx = M.max(axis=axis)
    mx[~np.isfinite(mx)] = 0.0
    M -= np.expand_dims(mx, axis)
    np.exp(M, out=M)
    s = M.sum(axis=axis)
    np.log(s, out=out)
    out += mx

