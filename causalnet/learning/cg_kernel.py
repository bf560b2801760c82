"""Conditional Gaussian moment sums as one compiled loop (numba), beside the numpy sums of :mod:`.conditional`.

A conditional Gaussian family needs, for every configuration ``k`` of its
discrete parents, the raw sums ``n_k``, ``Σ v`` and ``Σ v vᵀ`` of
``v = (x_1..x_p, y)``. numpy computes each of these ``1 + m + m(m+1)/2``
entries by its own ``np.bincount`` over the rows plus a product temporary;
here one kernel makes them without temporaries: for ``m <= 3`` all entries in
one pass over the rows; for larger ``m`` one pass per entry, each spread over
4 interleaved accumulators per configuration (consecutive rows of one
configuration otherwise wait on each other's additions), summed in a fixed
order at the end. The configuration codes are read as 8- or 16-bit integers.

numba is imported (and the kernels compiled, cached on disk by
:func:`causalnet.runtime.jit`) on the first compiled call only: about a second
once per process (numba's import and the cached kernels' load; the first
compile ever takes a few seconds more). The ``"learning"`` backend
(:func:`causalnet.runtime.get_backend`, ``CAUSALNET_LEARNING_BACKEND``)
chooses: ``"numpy"`` never compiles, ``"numba"`` always does, ``"auto"``
(default) compiles once the numpy sums have spent :data:`AUTO_BUDGET_S`
seconds in this process (so a single fit never pays the load, and repeated
fits, scores and structure searches on large tables soon run compiled), and
keeps using the kernels once they are loaded for tables of at least
:data:`AUTO_MIN_ROWS` rows. Both paths are tested to agree to rounding.

Symbols: ``n`` rows, ``q`` configurations, ``m`` moment variables.
"""

from __future__ import annotations

import numpy as np

from .. import runtime

__all__ = ["moment_sums", "use_compiled", "record_numpy_time", "numpy_seconds", "AUTO_MIN_ROWS", "AUTO_BUDGET_S",
           "ENV_VAR"]

ENV_VAR = "CAUSALNET_LEARNING_BACKEND"
#: Under ``"auto"``, the numpy seconds after which the kernels are loaded.
AUTO_BUDGET_S = 1.0
#: Under ``"auto"`` with the kernels loaded, tables with fewer rows stay in numpy (a call costs more than it saves).
AUTO_MIN_ROWS = 20_000

_state = {"numpy_s": 0.0, "loaded": False}


def record_numpy_time(seconds: float) -> None:
    """Add `seconds` spent by the numpy moment sums (what ``"auto"`` weighs against loading the kernels)."""
    _state["numpy_s"] += seconds


def numpy_seconds() -> float:
    """The seconds the numpy moment sums have spent in this process."""
    return _state["numpy_s"]


def use_compiled(n: int) -> bool:
    """Whether :func:`moment_sums` should run for a table of `n` rows (see the module docstring)."""
    name = runtime.get_backend("learning")
    if name == "numpy" or not runtime.numba_available():
        return False
    if name == "numba":
        return True
    return n >= AUTO_MIN_ROWS and (_state["loaded"] or _state["numpy_s"] >= AUTO_BUDGET_S)


@runtime.jit(nogil=True, boundscheck=False)
def _moment_kernel(config, x, q):  # pragma: no cover - compiled (its Python source is exercised by the tests)
    m, n = x.shape
    out = np.zeros((q, m + 1, m + 1))
    acc = np.zeros(q * 4)
    for r in range(n):
        acc[config[r] * 4 + (r & 3)] += 1.0
    for k in range(q):
        out[k, 0, 0] = (acc[4 * k] + acc[4 * k + 1]) + (acc[4 * k + 2] + acc[4 * k + 3])
    for i in range(m):
        xi = x[i]
        acc[:] = 0.0
        for r in range(n):
            acc[config[r] * 4 + (r & 3)] += xi[r]
        for k in range(q):
            out[k, 0, i + 1] = (acc[4 * k] + acc[4 * k + 1]) + (acc[4 * k + 2] + acc[4 * k + 3])
        for j in range(i, m):
            xj = x[j]
            acc[:] = 0.0
            for r in range(n):
                acc[config[r] * 4 + (r & 3)] += xi[r] * xj[r]
            for k in range(q):
                out[k, i + 1, j + 1] = (acc[4 * k] + acc[4 * k + 1]) + (acc[4 * k + 2] + acc[4 * k + 3])
                out[k, j + 1, i + 1] = out[k, i + 1, j + 1]
    return out


@runtime.jit(nogil=True, boundscheck=False)
def _moment_kernel_1(config, y, q):  # pragma: no cover - compiled
    out = np.zeros((q, 2, 2))
    for r in range(y.shape[0]):
        k, v = config[r], y[r]
        out[k, 0, 0] += 1.0
        out[k, 0, 1] += v
        out[k, 1, 1] += v * v
    for k in range(q):
        out[k, 1, 0] = out[k, 0, 1]
    return out


@runtime.jit(nogil=True, boundscheck=False)
def _moment_kernel_2(config, x, y, q):  # pragma: no cover - compiled
    out = np.zeros((q, 3, 3))
    for r in range(y.shape[0]):
        k, a, b = config[r], x[r], y[r]
        out[k, 0, 0] += 1.0
        out[k, 0, 1] += a
        out[k, 0, 2] += b
        out[k, 1, 1] += a * a
        out[k, 1, 2] += a * b
        out[k, 2, 2] += b * b
    for k in range(q):
        out[k, 1, 0], out[k, 2, 0], out[k, 2, 1] = out[k, 0, 1], out[k, 0, 2], out[k, 1, 2]
    return out


@runtime.jit(nogil=True, boundscheck=False)
def _moment_kernel_3(config, x1, x2, y, q):  # pragma: no cover - compiled
    out = np.zeros((q, 4, 4))
    for r in range(y.shape[0]):
        k, a, b, c = config[r], x1[r], x2[r], y[r]
        out[k, 0, 0] += 1.0
        out[k, 0, 1] += a
        out[k, 0, 2] += b
        out[k, 0, 3] += c
        out[k, 1, 1] += a * a
        out[k, 1, 2] += a * b
        out[k, 1, 3] += a * c
        out[k, 2, 2] += b * b
        out[k, 2, 3] += b * c
        out[k, 3, 3] += c * c
    for k in range(q):
        for i in range(4):
            for j in range(i):
                out[k, i, j] = out[k, j, i]
    return out


def moment_sums(config: np.ndarray, q: int, xs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n_k (q,), Σ x (q, m), Σ x xᵀ (q, m, m))`` per configuration, by the compiled kernel.

    Parameters
    ----------
    config : ndarray of shape (n,)
        Each row's configuration, integers in ``[0, q)``.
    q : int
    xs : list of m ndarrays of shape (n,)
        The columns (float64).
    """
    small = config.astype(np.uint8 if q <= 256 else np.uint16 if q <= 65536 else np.int64)   # (n,) less to read
    cols = [np.ascontiguousarray(c, dtype=np.float64) for c in xs]
    if len(cols) == 1:                                                                    # one pass, all entries
        raw = _moment_kernel_1(small, cols[0], int(q))
    elif len(cols) == 2:
        raw = _moment_kernel_2(small, cols[0], cols[1], int(q))
    elif len(cols) == 3:
        raw = _moment_kernel_3(small, cols[0], cols[1], cols[2], int(q))
    else:                                                                                 # one pass per entry
        x = np.empty((len(cols), len(config)))                                            # (m, n)
        for i, c in enumerate(cols):
            x[i] = c
        raw = _moment_kernel(small, x, int(q))                                            # (q, m+1, m+1)
    _state["loaded"] = True
    return raw[:, 0, 0].copy(), raw[:, 0, 1:].copy(), raw[:, 1:, 1:].copy()
