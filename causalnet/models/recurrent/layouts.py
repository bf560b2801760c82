"""Where the fast loop keeps a layer's states in memory: feature-major or time-major.

:func:`~causalnet.models.recurrent.run` spends most of its time in two
matmuls per layer: the input projections ``W_ih x`` (blocks of steps at once)
and, step by step, ``W_hh h[t-1]``. With a batch of ``n = 32`` rows the
recurrent one is a thin product whose speed depends on its orientation, and
OpenBLAS prefers different ones by dtype (measured on the benchmark's LSTM,
hidden 256, one thread):

* :class:`FeatureMajor` (float32): states ``(H, T, n)``, pre-activations
  ``(G H, n) = W_hh @ h`` on the stored ``(G H, H)`` weights; sgemm runs it
  about 1.3x faster than ``h @ W_hh^T``. The input ``(n, T, d)`` and the
  output are transposed once each (:func:`~causalnet.models.recurrent.kernels.swap_outer`).
* :class:`TimeMajor` (float64): states ``(T, n, H)``, pre-activations
  ``(n, G H) = h @ W_hh^T``, which dgemm runs about 1.1x faster than the
  other way; the input and output transposes only swap the first two axes.

The feature-major loops compute ``W_hh @ h`` as a few row blocks of ``W_hh``,
each product small enough for OpenBLAS's small-matrix kernels, which read
``W_hh`` in place instead of packing all of it at every step
(:func:`~causalnet.models.recurrent.kernels.gemm_rows`): on the benchmark's
LSTM the recurrent products take about 0.7 of the time of one whole product.

The input projections are computed a block of steps at a time, just before
those steps run: 1024 columns (steps x batch) in either layout (measured best
with hidden 256 and the row-blocked recurrent product: float32 about 4 % faster
with 1024 than with 128, float64 about 5 % faster with 1024 than with 256).
Either way the step's elementwise work runs in one compiled loop whose inner
axis is the contiguous one (:func:`~causalnet.models.recurrent.kernels.kernel`),
or in the numpy references on ``(n, G H)`` views. Each class is a namespace of
static methods with the same names; :func:`layout_for` picks one by dtype.

Symbols: ``n`` batch, ``T`` steps, ``d`` input width, ``H`` hidden, ``G`` gates,
``D`` directions, ``m`` steps in a block.
"""

from __future__ import annotations

import numpy as np

from .kernels import swap_outer

__all__ = ["FeatureMajor", "TimeMajor", "layout_for"]


class FeatureMajor:
    """States ``(H, T, n)``; a step's pre-activations ``(G H, n)``; weights as stored, ``(G H, d)``."""

    name = "feature"
    #: columns (steps x batch) per block of input projections: one matmul of ``(G H, d) @ (d, block)``
    block = 1024

    @staticmethod
    def weights(W_ih: np.ndarray, W_hh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.ascontiguousarray(W_ih), np.ascontiguousarray(W_hh)

    @staticmethod
    def inputs(x: np.ndarray) -> np.ndarray:
        return swap_outer(x)                                              # (n, T, d) -> (d, T, n)

    @staticmethod
    def states(D: int, H: int, T: int, n: int, dtype) -> list[np.ndarray]:
        Y = np.empty((D * H, T, n), dtype=dtype)                         # both directions in one array
        return [Y[r * H:(r + 1) * H] for r in range(D)]                 # each a contiguous (H, T, n)

    @staticmethod
    def joined(ys: list[np.ndarray]) -> np.ndarray:
        """The next layer's input ``(D H, T, n)``: the views of :meth:`states` are one array already."""
        return ys[0].base if len(ys) > 1 else ys[0]

    @staticmethod
    def outputs(X: np.ndarray) -> np.ndarray:
        return swap_outer(X)                                              # (D H, T, n) -> (n, T, D H)

    @staticmethod
    def zeros(rows: int, n: int, dtype) -> np.ndarray:
        return np.zeros((rows, n), dtype=dtype)                          # z (G H, n), c (H, n)

    @staticmethod
    def project(W_ih: np.ndarray, X: np.ndarray, t0: int, m: int, buf: np.ndarray) -> np.ndarray:
        """``W_ih x`` for steps ``t0 .. t0 + m - 1`` in one matmul -> ``(G H, m, n)``."""
        d, _, n = X.shape
        G_H = W_ih.shape[0]
        xp = buf[:G_H * m * n].reshape(G_H, m, n)
        np.matmul(W_ih, X[:, t0:t0 + m].reshape(d, m * n), out=xp.reshape(G_H, m * n))
        return xp

    @staticmethod
    def recur(W_hh: np.ndarray, y: np.ndarray, tp: int, z: np.ndarray) -> None:
        np.matmul(W_hh, y[:, tp], out=z)                                 # (G H, n)

    @staticmethod
    def rows(a: np.ndarray) -> np.ndarray:
        """A state or pre-activation array as ``(n, ...)`` (a view)."""
        return a.T

    @staticmethod
    def at(y: np.ndarray, t: int) -> np.ndarray:
        return y[:, t].T                                                  # (n, H) view

    @staticmethod
    def step_input(xp: np.ndarray, s: int) -> np.ndarray:
        return xp[:, s].T                                                 # (n, G H) view

    @staticmethod
    def gather(y: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Row ``k``'s state at step ``last[k]`` -> ``(n, H)``."""
        return y[:, last, np.arange(last.shape[0])].T


class TimeMajor:
    """States ``(T, n, H)``; a step's pre-activations ``(n, G H)``; weights transposed, ``(d, G H)``."""

    name = "time"
    block = 1024

    @staticmethod
    def weights(W_ih: np.ndarray, W_hh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.ascontiguousarray(W_ih.T), np.ascontiguousarray(W_hh.T)

    @staticmethod
    def inputs(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x.transpose(1, 0, 2))                # (n, T, d) -> (T, n, d)

    @staticmethod
    def states(D: int, H: int, T: int, n: int, dtype) -> list[np.ndarray]:
        return [np.empty((T, n, H), dtype=dtype) for _ in range(D)]     # contiguous per direction

    @staticmethod
    def joined(ys: list[np.ndarray]) -> np.ndarray:
        return ys[0] if len(ys) == 1 else np.concatenate(ys, axis=-1)   # (T, n, D H)

    @staticmethod
    def outputs(X: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(X.transpose(1, 0, 2))                # (T, n, D H) -> (n, T, D H)

    @staticmethod
    def zeros(rows: int, n: int, dtype) -> np.ndarray:
        return np.zeros((n, rows), dtype=dtype)                          # z (n, G H), c (n, H)

    @staticmethod
    def project(W_ih_T: np.ndarray, X: np.ndarray, t0: int, m: int, buf: np.ndarray) -> np.ndarray:
        """``x W_ih^T`` for steps ``t0 .. t0 + m - 1`` in one matmul -> ``(m, n, G H)``."""
        _, n, d = X.shape
        G_H = W_ih_T.shape[1]
        xp = buf[:m * n * G_H].reshape(m, n, G_H)
        np.matmul(X[t0:t0 + m].reshape(m * n, d), W_ih_T, out=xp.reshape(m * n, G_H))
        return xp

    @staticmethod
    def recur(W_hh_T: np.ndarray, y: np.ndarray, tp: int, z: np.ndarray) -> None:
        np.matmul(y[tp], W_hh_T, out=z)                                  # (n, G H)

    @staticmethod
    def rows(a: np.ndarray) -> np.ndarray:
        return a

    @staticmethod
    def at(y: np.ndarray, t: int) -> np.ndarray:
        return y[t]                                                       # (n, H)

    @staticmethod
    def step_input(xp: np.ndarray, s: int) -> np.ndarray:
        return xp[s]                                                      # (n, G H)

    @staticmethod
    def gather(y: np.ndarray, last: np.ndarray) -> np.ndarray:
        return y[last, np.arange(last.shape[0])]


def layout_for(dtype) -> type:
    """:class:`FeatureMajor` for float32, :class:`TimeMajor` otherwise (module docstring)."""
    return FeatureMajor if np.dtype(dtype) == np.float32 else TimeMajor
