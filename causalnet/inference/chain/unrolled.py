"""Log-partition sweeps for few states, unrolled so every message entry lives in a register.

For a long chain with few states (an HMM with ``K = 4`` over ``10^5`` steps)
the forward sweep is bound by the latency of one step, not by its ``K^2``
multiply-adds: step ``t`` cannot start before step ``t-1`` has finished. A
sweep written with loops over ``K`` keeps its message in an array, so each
step goes through memory (a store, then a load that waits for it) and sums
each product term by term (``K`` dependent additions). Here, for each
``K <= UNROLL_MAX_K``, the sweep is generated with ``K`` scalar variables for
the message and the ``K^2`` transition entries, and each sum is a balanced
tree of additions (depth ``ceil(log2 K)``). A step is then a handful of
dependent floating-point operations: about 4x fewer cycles than the looped
kernel at ``K = 4``.

No message or normaliser is stored: a row's message is rescaled (its
logarithm moved into ``logz``) only when its mass leaves ``[1e-50, 1e50]``
(a CRF's transitions need not be stochastic, so the mass may grow), so there
is no division on the sweep's critical path; a row whose mass falls to
``SCALE_FLOOR`` or below within one step (where digits could be lost) is
flagged ``bad`` for the log-space sweep. The window keeps the message within
1e50 of 1, so components down to ~1e-258 of the largest survive. Rows are
swept one after the other, each to its own length, so a row's message stays
in registers for its whole sweep. The tree sums round differently from the
running sums of the numpy sweeps: results agree to rounding, not bit for bit.

The kernels are generated as Python source, one per width in ``WIDTHS``
(a ``K``-state chain runs in the narrowest width ``>= K``, the extra states
padded with zeros), and compiled with numba on first use.

>>> print(log_partition_source(2).splitlines()[0])
def log_partition_2(B, A, cols, keep, lengths, logz, bad):
>>> width(3)
4
"""

from __future__ import annotations

import numpy as np

from .kernels import SCALE_FLOOR

try:  # numba is a regular dependency; without it the looped sweeps run
    import numba
except ImportError:  # pragma: no cover - exercised only without numba
    numba = None

__all__ = ["WIDTHS", "UNROLL_MAX_K", "width", "log_partition_source", "log_partition_unrolled"]

# Up to this many states the log-partition sweep runs unrolled (measured at T = 10^5:
# K = 4 about 4x, K = 8 about 2.5x faster than the looped kernel). Compilation grows with
# the width (0.6 s at 4, 0.9 s at 8, 2.3 s at 16), so each K is served by the narrowest of
# a few widths.
WIDTHS = (2, 4, 8)
UNROLL_MAX_K = WIDTHS[-1]

_cache = {}


def _tree(terms):
    """A balanced sum of the expression strings ``terms``: ``((a + b) + (c + d))``."""
    while len(terms) > 1:
        pairs = [f"({terms[i]} + {terms[i + 1]})" for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def log_partition_source(W):
    """Python source of the unrolled log-partition sweep ``W`` states wide (see the module docstring).

    The sweep serves any ``K <= W``: ``A`` comes zero-padded to ``(W, W)``
    and ``cols[j] = min(j, K - 1)`` names the column of ``B`` that padded
    state ``j`` reads. A padded state's message is 0 at step 0 (``keep[j]
    = 0``) and stays 0 (its column of ``A`` is 0), adding exact zeros to the
    sums, so the result is the same as a ``K``-wide sweep's.
    """
    ks = range(W)
    vs = ", ".join(f"v{j}" for j in ks)
    return "\n".join([
        f"def log_partition_{W}(B, A, cols, keep, lengths, logz, bad):",
        *(f"    a{i}_{j} = A[{i}, {j}]" for i in ks for j in ks),
        *(f"    c{j} = cols[{j}]" for j in ks),
        *(f"    k{j} = keep[{j}]" for j in ks),
        "    for r in range(lengths.shape[0]):",
        f"        {vs} = " + ", ".join(f"B[0, r, c{j}] * k{j}" for j in ks),
        f"        s = {_tree([f'v{j}' for j in ks])}",
        "        lz = 0.0",
        "        bd = not s > SCALE_FLOOR",
        "        for t in range(1, lengths[r]):",
        *(f"            x{j} = {_tree([f'v{i} * a{i}_{j}' for i in ks])} * B[t, r, c{j}]" for j in ks),
        f"            {vs} = " + ", ".join(f"x{j}" for j in ks),
        f"            s = {_tree([f'x{j}' for j in ks])}",
        "            if not 1e-50 <= s <= 1e50:  # rare: rescale (and NaN lands here too)",
        "                if not s > SCALE_FLOOR:",
        "                    bd = True",
        "                    s = 1.0",
        "                lz += np.log(s)",
        "                inv = 1.0 / s",
        f"                {vs} = " + ", ".join(f"v{j} * inv" for j in ks),
        f"        s = {_tree([f'v{j}' for j in ks])}",
        "        if not s > 0.0:",
        "            bd = True",
        "            s = 1.0",
        "        logz[r] = lz + np.log(s)",
        "        bad[r] = bd",
    ]) + "\n"


def width(K):
    """The width of the unrolled sweep serving ``K <= UNROLL_MAX_K`` states: the first of ``WIDTHS`` >= K."""
    return next(w for w in WIDTHS if w >= K)


def _kernel(W):
    fn = _cache.get(W)
    if fn is None:
        scope = {"np": np, "SCALE_FLOOR": SCALE_FLOOR}
        exec(compile(log_partition_source(W), f"<log_partition_{W}>", "exec"), scope)  # noqa: S102 - our own source
        fn = numba.njit(cache=False, nogil=True, error_model="numpy")(scope[f"log_partition_{W}"])
        _cache[W] = fn
    return fn


def log_partition_unrolled(B, A, lengths, logz, bad):
    """The unrolled sweep for ``K = B.shape[2]`` states (``1 <= K <= UNROLL_MAX_K``), in place.

    Runs the kernel of width :func:`width` ``(K)`` (one compilation per width,
    not per ``K``).

    Parameters
    ----------
    B : (T, n, K) probability-space unaries, C-contiguous (padding ignored).
    A : (K, K) transitions.
    lengths : (n,) int, steps of each row (at least 1).
    logz : (n,) output ``log sum_k`` of each row's unscaled final message.
    bad : (n,) bool output, rows whose mass fell to ``SCALE_FLOOR`` or below.
    """
    K = B.shape[2]
    W = width(K)
    Ap = np.zeros((W, W))
    Ap[:K, :K] = A
    cols = np.minimum(np.arange(W), K - 1)
    keep = (np.arange(W) < K).astype(np.float64)
    _kernel(W)(B, Ap, cols, keep, lengths, logz, bad)
