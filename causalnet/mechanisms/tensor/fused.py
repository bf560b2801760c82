"""Fused numba kernels: add & LayerNorm, and small attention weights, each in one pass over the data.

numpy runs an op as a sequence of ufunc calls, each a pass over the array
and about a microsecond of call overhead: an "add & norm" is a dozen of
them, a masked softmax five. On small activations the overhead is the whole
cost; on large ones the passes are. These kernels do the same arithmetic in
one compiled loop per op:

* :func:`add_layer_norm` — ``LayerNorm(x0 + x1)`` row by row: sum, mean,
  centred variance (two passes, as numpy's path), scale, affine. Faster than
  numpy at every size measured (2-5x from 16 x 64 to 1024 x 768 numbers;
  ``python benchmarks/transformer.py --ops``);
* :func:`attention_weights` — ``softmax(Q K^T * scale)`` per head, read
  straight from the ``(n, T, D)`` query and key blocks (no head-split
  copies), with the causal mask (key ``s <= t``) when asked. Only up to
  :data:`SMALL_ATTENTION_WORK` multiply-adds: above that BLAS's products win.

They serve :class:`~causalnet.inference.tensor.Program` (the compiled fast
path of a :class:`~causalnet.inference.tensor.Plan`) through the ops'
``compiled`` functions; the node-by-node ``forward`` keeps the numpy path,
the reference. Sums are reassociated (vectorised) and taken in float64, so
results equal numpy's to rounding (float32 rows, if anything, more
accurately); ``inf``/``NaN`` keep their meaning: a row whose variance or
maximum score is not finite is handed back to numpy's path, which rescales
or reports it.

**When they run** is the backend: ``"numpy"`` never; ``"numba"`` always;
``"auto"`` (the default) once this process's plan programs with such ops
have run :data:`AUTO_BUDGET_S` seconds in numpy. Each dtype's kernels
compile on their first call (about 0.5-1.5 s, then kept in the per-user kernel
cache of :mod:`causalnet.runtime`, so later processes load them;
:func:`compile_kernels` does it ahead), so the cost is paid only by a workload that repeats long enough to
earn it back. The environment variable ``CAUSALNET_TENSOR_BACKEND`` sets the
backend at import.

>>> from causalnet.mechanisms.tensor import fused
>>> with fused.backend("numpy"):
...     fused.active()
False
"""

from __future__ import annotations

import math
import time

import numpy as np

from ... import runtime

__all__ = ["AVAILABLE", "BACKENDS", "ENV_VAR", "AUTO_BUDGET_S", "SMALL_ATTENTION_WORK",
           "set_backend", "backend", "get_backend", "active", "compile_kernels", "spend", "add_layer_norm",
           "attention_weights"]

AVAILABLE = runtime.numba_available()
BACKENDS = runtime.BACKENDS
ENV_VAR = f"{runtime.ENV_PREFIX}TENSOR_BACKEND"    # the variable runtime.get_backend("tensor") reads
#: seconds of plan-program time (numpy) after which "auto" compiles the kernels
AUTO_BUDGET_S = 1.0
#: largest ``n * T * S * D`` (multiply-adds) an attention sends to its kernel (BLAS is faster above)
SMALL_ATTENTION_WORK = 1 << 17

_state = {"spent": 0.0, "on": False}
_kernels: dict = {}


def set_backend(name: str) -> str:
    """Choose when the fused kernels run: ``"auto"``, ``"numba"`` or ``"numpy"``; returns the previous setting.

    The tensor family's switch of :mod:`causalnet.runtime`.

    Raises
    ------
    ModelError
        For another name, or ``"numba"`` when numba is not installed.
    """
    return runtime.set_backend("tensor", name)


def _refresh() -> None:
    """``_state["on"]`` (what the ops test on every call) from the backend and the time spent so far."""
    name = runtime.get_backend("tensor")
    _state["on"] = AVAILABLE and (name == "numba" or (name == "auto" and _state["spent"] >= AUTO_BUDGET_S))


def backend(name: str):
    """Run a block with the given backend (see :func:`set_backend`), then restore the previous one."""
    return runtime.backend("tensor", name)


def get_backend() -> str:
    """The setting in force: ``"auto"``, ``"numba"`` or ``"numpy"``."""
    return runtime.get_backend("tensor")


def active() -> bool:
    """Whether the ops call the kernels now (compiled, and the backend is not ``"numpy"``)."""
    return _state["on"]


def spend(seconds: float) -> None:
    """Count `seconds` of plan-program time in numpy; under ``"auto"`` the kernels start once the budget is spent."""
    _state["spent"] += seconds
    _refresh()                                               # each dtype compiles on its first kernel call


def compile_kernels(dtypes=("float32", "float64")) -> float:
    """Compile the kernels for `dtypes` now; returns the seconds it took (0 if already done).

    Active kernels otherwise compile for a dtype on its first use (about 0.5-1 s each).
    """
    if not AVAILABLE:
        return 0.0
    t0 = time.perf_counter()
    for dt in dtypes:
        _for(np.dtype(dt))
    return time.perf_counter() - t0


def _for(dtype: np.dtype) -> tuple:
    """The (add & norm, scores, normalise) kernels of one dtype, compiled on first request."""
    found = _kernels.get(dtype)
    if found is not None:
        return found
    numba = runtime.load_numba()
    f = numba.from_dtype(dtype)
    arr = numba.types.Array                                      # inputs may be read-only (weights, user arrays)
    x2, v1, q3 = arr(f, 2, "C", readonly=True), arr(f, 1, "C", readonly=True), arr(f, 3, "A", readonly=True)
    opts = {"nogil": True, "error_model": "numpy", "fastmath": _FAST}
    found = _kernels[dtype] = (
        runtime.compile_now(_add_layer_norm_loop, [numba.boolean(x2, x2, v1, v1, numba.float64, arr(f, 2, "C"))],
                            **opts),
        runtime.compile_now(_scores_loop, [numba.boolean(q3, q3, numba.float64, numba.boolean, arr(f, 4, "C"))],
                            **opts),
        runtime.compile_now(_normalise_loop, [numba.void(arr(f, 2, "C"))], **opts),
    )
    return found


def add_layer_norm(x0: np.ndarray, x1: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                   eps: float) -> np.ndarray | None:
    """``LayerNorm(x0 + x1)`` over the last axis by the kernel; None when it cannot serve.

    Parameters
    ----------
    x0, x1 : ndarray (..., d)
        Same shape and dtype (float32 or float64).
    weight, bias : ndarray (d,)
        Of that dtype (ones and zeros for an op without them).
    eps : float

    Returns
    -------
    ndarray (..., d) or None
        None when the kernels are not active, the arrays' dtypes or shapes
        do not match, or some row's variance is not finite (the caller's
        numpy path then handles the mismatch, the overflow or the
        non-finite value).
    """
    if (not _state["on"] or x0.shape != x1.shape or x0.dtype not in _DTYPES or x1.dtype != x0.dtype
            or weight.dtype != x0.dtype or bias.dtype != x0.dtype or weight.shape != x0.shape[-1:]
            or bias.shape != weight.shape or x0.shape[-1] == 0):
        return None
    d = x0.shape[-1]
    out = np.empty(x0.shape, dtype=x0.dtype)
    a = np.ascontiguousarray(x0).reshape(-1, d)
    b = np.ascontiguousarray(x1).reshape(-1, d)
    w, c = np.ascontiguousarray(weight), np.ascontiguousarray(bias)
    if not _for(x0.dtype)[0](a, b, w, c, float(eps), out.reshape(-1, d)):
        return None
    return out


def attention_weights(q: np.ndarray, k: np.ndarray, heads: int, scale: float, causal: bool) -> np.ndarray | None:
    """``softmax(Q K^T * scale)`` per head by the kernel, ``(n, h, T, S)``; None when it cannot serve.

    Parameters
    ----------
    q : ndarray (n, T, D)
    k : ndarray (n, S, D)
        Same dtype (float32 or float64); views (column blocks) are read in place.
    heads : int
        ``h``, dividing ``D``.
    scale : float
    causal : bool
        Query ``t`` sees keys ``s <= t`` only.

    Returns
    -------
    ndarray (n, h, T, S) or None
        None when the kernels are not active, the work is large, the dtypes
        or shapes do not match (or `heads` does not divide ``D``), or a row's
        maximum score is not finite.
    """
    n, t, dd = q.shape
    s = k.shape[1]
    if (not _state["on"] or n * t * s * dd > SMALL_ATTENTION_WORK or q.dtype not in _DTYPES
            or k.dtype != q.dtype or t == 0 or s == 0 or heads < 1 or dd % heads or k.shape[::2] != (n, dd)):
        return None
    out = np.empty((n, heads, t, s), dtype=q.dtype)
    kernels = _for(q.dtype)
    if not kernels[1](q, k, float(scale), bool(causal), out):
        return None
    np.exp(out, out=out)                                 # numpy's vectorised exp; masked keys give 0
    kernels[2](out.reshape(-1, s))
    return out


_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: reassociated sums (so that LLVM vectorises the row sums and dot products), fused multiply-adds; inf and
#: NaN keep their meaning (no "nnan", "ninf"), which the finiteness tests need
_FAST = {"contract", "reassoc", "nsz", "arcp"}


def _add_layer_norm_loop(x0, x1, w, b, eps, out):  # pragma: no cover - compiled by numba
    rows, d = out.shape
    inv = 1.0 / d
    for i in range(rows):
        total = 0.0
        for j in range(d):
            v = x0[i, j] + x1[i, j]
            out[i, j] = v
            total += v
        mu = total * inv
        sq = 0.0
        for j in range(d):
            v = out[i, j] - mu
            out[i, j] = v
            sq += v * v
        sd = math.sqrt(sq * inv + eps)
        if not math.isfinite(sd):
            return False
        r = 1.0 / sd
        for j in range(d):
            out[i, j] = out[i, j] * r * w[j] + b[j]
    return True


def _scores_loop(q, k, scale, causal, out):  # pragma: no cover - compiled by numba
    """``out = Q K^T * scale - rowmax`` per head (masked keys -inf); False if some row has no finite maximum."""
    n, h, t_len, s_len = out.shape
    dh = q.shape[2] // h
    kt = np.empty((dh, s_len), dtype=out.dtype)         # one head's keys, transposed: rows contiguous over keys
    for r in range(n):
        for hh in range(h):
            c0 = hh * dh
            for s in range(s_len):
                for j in range(dh):
                    kt[j, s] = k[r, s, c0 + j]
            for t in range(t_len):
                top = min(s_len, t + 1) if causal else s_len
                row = out[r, hh, t]
                row[:] = 0.0
                for j in range(dh):                     # scores as axpy over keys: a vector loop
                    qj = q[r, t, c0 + j] * scale
                    for s in range(top):
                        row[s] += qj * kt[j, s]
                m = row[0]
                for s in range(1, top):
                    m = max(m, row[s])
                if not math.isfinite(m):
                    return False
                for s in range(top):
                    row[s] -= m
                for s in range(top, s_len):
                    row[s] = -np.inf
    return True


def _normalise_loop(p):  # pragma: no cover - compiled by numba
    """Each row of `p` (rows, S) divided by its sum, in place (every row holds a 1: its maximum's exp)."""
    rows, s_len = p.shape
    for i in range(rows):
        total = 0.0
        for s in range(s_len):
            total += p[i, s]
        inv = 1.0 / total
        for s in range(s_len):
            p[i, s] *= inv


runtime.on_change("tensor", _refresh)
_refresh()
