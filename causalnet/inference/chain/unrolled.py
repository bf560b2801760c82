"""Chain sweeps for few states, unrolled so every message entry lives in a register.

For a long chain with few states (an HMM with ``K = 4`` over ``10^5`` steps)
a sweep is bound by the latency of one step, not by its ``K^2`` operations:
step ``t`` cannot start before step ``t-1`` has finished. A sweep written
with loops over ``K`` keeps its message in an array, so each step goes
through memory (a store, then a load that waits for it) and sums each
product term by term (``K`` dependent additions). Here the sweeps are
generated with scalar variables for the message and the ``K^2`` transition
entries, each sum a balanced tree of additions (depth ``ceil(log2 K)``) and
each maximum a balanced tournament. A step is then a handful of dependent
floating-point operations: at ``K = 4`` about 4x fewer cycles than the
looped kernels of :mod:`.compiled` for the sums, 1.5x for Viterbi.

* :func:`log_partition_unrolled` (up to ``UNROLL_MAX_K`` states): ``log Z``
  alone. No message or normaliser is stored: a row's message is rescaled
  (its logarithm moved into ``logz``) only when its mass leaves
  ``[1e-50, 1e50]`` (a CRF's transitions need not be stochastic, so the
  mass may grow), so there is no division on the sweep's critical path; a
  row whose mass falls to ``SCALE_FLOOR`` or below within one step (where
  digits could be lost) is flagged ``bad`` for the log-space sweep. The
  window keeps the message within 1e50 of 1, so components down to ~1e-258
  of the largest survive.
* :func:`forward_unrolled` (up to ``UNROLL_MAX_K``): the scaled forward
  sweep, the same lazily rescaled message, with the per-step normalisers and
  normalised messages written beside it.
* :func:`viterbi_unrolled` (up to ``VITERBI_UNROLL_MAX_K``): max-product
  with first-maximum tournaments (lowest index on ties, bit for bit as the
  looped kernel), then the backtrack.

Rows are swept one after the other, each to its own length, so a row's
message stays in registers for its whole sweep. The tree sums round
differently from the running sums of the numpy sweeps: sums agree to
rounding, not bit for bit.

The kernels are generated as Python source, one per width in ``WIDTHS``
(a ``K``-state chain runs in the narrowest width ``>= K``, the extra states
padded), and compiled with numba on first use; the source is written to the
kernel cache (:func:`causalnet.runtime.generated_module`) so that numba can
keep the compiled sweep for later processes.

>>> print(log_partition_source(2).splitlines()[0])
def log_partition_2(B, A, cols, keep, lengths, logz, bad):
>>> width(3)
4
"""

from __future__ import annotations

import numpy as np

from ... import runtime
from .kernels import SCALE_FLOOR

__all__ = [
    "WIDTHS", "UNROLL_MAX_K", "VITERBI_UNROLL_MAX_K", "width", "log_partition_source", "viterbi_source", "log_partition_unrolled",
    "forward_source", "forward_unrolled", "viterbi_unrolled",
]

# Up to this many states the log-partition sweep runs unrolled (measured at T = 10^5:
# K = 4 about 4x, K = 8 about 2.5x faster than the looped kernel). Compilation grows with
# the width (0.6 s at 4, 0.9 s at 8, 2.3 s at 16), so each K is served by the narrowest of
# a few widths.
WIDTHS = (2, 4, 8)
UNROLL_MAX_K = WIDTHS[-1]
# The Viterbi sweep runs unrolled up to this many states (K = 4: 1.4 -> 0.9 ms on T = 10^5).
# Its tournaments make width 8 take ~10 s to compile, for 1.5x; the wide looped step of
# compiled.viterbi_kernel serves K > 4.
VITERBI_UNROLL_MAX_K = 4

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


def forward_source(W):
    """Python source of the unrolled scaled forward sweep ``W`` states wide (padding as in :func:`log_partition_source`).

    Each row's message ``v`` is kept unnormalised, rescaled lazily as in the
    log-partition sweep, and the normaliser ``c[t] = s[t] / s[t-1]`` (``s`` the
    message's sum) and the normalised message ``alpha[t] = v / s[t]`` are
    written beside the sweep, off its critical path. A padded state ``j``
    writes ``alpha`` column ``cols[j] = K - 1`` before the real state ``K - 1``
    does (writes run from the last state down), so the real value stays.
    """
    ks = range(W)
    down = range(W - 1, -1, -1)
    vs = ", ".join(f"v{j}" for j in ks)
    return "\n".join([
        f"def forward_{W}(B, A, cols, keep, lengths, alpha, c, logc):",
        *(f"    a{i}_{j} = A[{i}, {j}]" for i in ks for j in ks),
        *(f"    c{j} = cols[{j}]" for j in ks),
        *(f"    k{j} = keep[{j}]" for j in ks),
        "    roll = alpha.shape[0] != B.shape[0]",
        "    for r in range(lengths.shape[0]):",
        f"        {vs} = " + ", ".join(f"B[0, r, c{j}] * k{j}" for j in ks),
        f"        s = {_tree([f'v{j}' for j in ks])}",
        "        c[0, r] = s",
        "        inv = 1.0 / s",
        *(f"        alpha[0, r, c{j}] = v{j} * inv" for j in down),
        "        ps = s",
        "        lz = 0.0",
        "        for t in range(1, lengths[r]):",
        *(f"            x{j} = {_tree([f'v{i} * a{i}_{j}' for i in ks])} * B[t, r, c{j}]" for j in ks),
        f"            {vs} = " + ", ".join(f"x{j}" for j in ks),
        f"            s = {_tree([f'x{j}' for j in ks])}",
        "            c[t, r] = s / ps",
        "            cur = t % 2 if roll else t",
        "            inv = 1.0 / s",
        *(f"            alpha[cur, r, c{j}] = x{j} * inv" for j in down),
        "            ps = s",
        "            if not 1e-50 <= s <= 1e50:  # rare: rescale (and NaN lands here too)",
        "                if not s > 0.0:",
        "                    s = 1.0  # c[t] <= 0 (or NaN) already marks the row bad",
        "                lz += np.log(s)",
        "                inv = 1.0 / s",
        f"                {vs} = " + ", ".join(f"v{j} * inv" for j in ks),
        "                ps = 1.0",
        "        logc[r] = lz + np.log(ps)",
    ]) + "\n"


def _first_max(lines, cands, tag, pad):
    """Append to ``lines`` a tournament over ``cands`` (value, index) expressions; the winner's names.

    Neighbours meet in a balanced tree and the later one wins only if strictly
    greater, so the winner is the first maximum in ``cands`` order (the lowest
    index on ties, as ``numpy.argmax``).
    """
    level = 0
    while len(cands) > 1:
        nxt = []
        for p in range(0, len(cands) - 1, 2):
            (a, ka), (b, kb) = cands[p], cands[p + 1]
            name = f"{tag}_{level}_{p // 2}"
            lines += [f"{pad}g = {b} > {a}", f"{pad}v{name} = {b} if g else {a}", f"{pad}k{name} = {kb} if g else {ka}"]
            nxt.append((f"v{name}", f"k{name}"))
        cands = nxt + ([cands[-1]] if len(cands) % 2 else [])
        level += 1
    return cands[0]


def viterbi_source(W):
    """Python source of the unrolled Viterbi sweep and backtrack ``W`` states wide.

    The sweep serves any ``K <= W``: ``P`` comes padded to ``(W, W)`` with
    ``-inf``, ``cols[j] = min(j, K - 1)`` names the column of ``u`` that
    padded state ``j`` reads and ``start[j]`` is 0 for real states, ``-inf``
    for padded ones, so padded states stay at ``-inf`` and, coming after the
    real ones, never win a tie.
    """
    ks = range(W)
    ds = ", ".join(f"d{j}" for j in ks)
    lines = [
        f"def viterbi_{W}(u, P, cols, start, lengths, bp, z, score):",
        *(f"    p{i}_{j} = P[{i}, {j}]" for i in ks for j in ks),
        *(f"    c{j} = cols[{j}]" for j in ks),
        *(f"    o{j} = start[{j}]" for j in ks),
        "    for r in range(lengths.shape[0]):",
        "        L = lengths[r]",
        f"        {ds} = " + ", ".join(f"u[0, r, c{j}] + o{j}" for j in ks),
        "        for t in range(1, L):",
    ]
    for j in ks:
        lines += [f"            e{i} = d{i} + p{i}_{j}" for i in ks]
        v, k = _first_max(lines, [(f"e{i}", str(i)) for i in ks], f"m{j}", " " * 12)
        lines += [f"            x{j} = {v} + u[t, r, c{j}]", f"            bp[t, r, {j}] = {k}"]
    lines.append(f"            {ds} = " + ", ".join(f"x{j}" for j in ks))
    v, k = _first_max(lines, [(f"d{j}", str(j)) for j in ks], "f", " " * 8)
    lines += [
        f"        score[r] = {v}",
        f"        best = {k}",
        "        z[L - 1, r] = best",
        "        for t in range(L - 1, 0, -1):",
        "            best = bp[t, r, best]",
        "            z[t - 1, r] = best",
    ]
    return "\n".join(lines) + "\n"


def width(K):
    """The width of the unrolled sweep serving ``K <= UNROLL_MAX_K`` states: the first of ``WIDTHS`` >= K."""
    return next(w for w in WIDTHS if w >= K)


def _kernel(kind, W):
    """The compiled ``kind`` (``"log_partition"``, ``"forward"`` or ``"viterbi"``) sweep of width ``W``, compiled once."""
    fn = _cache.get((kind, W))
    if fn is None:
        source = {"log_partition": log_partition_source, "forward": forward_source, "viterbi": viterbi_source}[kind](W)
        module = runtime.generated_module(f"{kind}_{W}", source, {"np": np, "SCALE_FLOOR": SCALE_FLOOR})
        fn = runtime.jit(getattr(module, f"{kind}_{W}"), nogil=True, error_model="numpy").dispatcher()
        _cache[(kind, W)] = fn
    return fn


def _padded(A, K, W, fill):
    """``A`` (K, K) padded to (W, W) with ``fill``, the column each padded state reads, and 1/0 real-state flags."""
    Ap = np.full((W, W), fill)
    Ap[:K, :K] = A
    return Ap, np.minimum(np.arange(W), K - 1), (np.arange(W) < K).astype(np.float64)


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
    Ap, cols, keep = _padded(A, K, W, 0.0)
    _kernel("log_partition", W)(B, Ap, cols, keep, lengths, logz, bad)


def forward_unrolled(B, A, lengths, alpha, c, logc):
    """The unrolled scaled forward sweep for ``K = B.shape[2] <= UNROLL_MAX_K`` states, in place.

    The contract of :func:`~.compiled.forward_kernel` (rows each to their own
    length; padding of ``alpha`` and ``c`` left untouched), with ``c[t]``
    computed as the ratio of consecutive message sums: equal to the
    per-step normaliser up to rounding.

    Parameters
    ----------
    B : (T, n, K) probability-space unaries, C-contiguous.
    A : (K, K) transitions.
    lengths : (n,) int.
    alpha : (T, n, K) or (2, n, K) output (with 2 slots step ``t`` lives in ``t % 2``).
    c : (T, n) output normalisers.
    logc : (n,) output ``sum_t log c[t]`` per row (garbage on rows with ``c <= SCALE_FLOOR``).
    """
    K = B.shape[2]
    W = width(K)
    Ap, cols, keep = _padded(A, K, W, 0.0)
    _kernel("forward", W)(B, Ap, cols, keep, lengths, alpha, c, logc)


def viterbi_unrolled(u, P, lengths, z, score):
    """The unrolled Viterbi sweep and backtrack for ``K = u.shape[2] <= VITERBI_UNROLL_MAX_K`` states, in place.

    Parameters
    ----------
    u : (T, n, K) log unaries, C-contiguous (padding ignored).
    P : (K, K) log pairwise (no ``+inf`` or NaN).
    lengths : (n,) int, steps of each row (at least 1).
    z : (T, n) int output path (padding left untouched).
    score : (n,) output best score per row.
    """
    T, n, K = u.shape
    W = width(K)
    Pp, cols, keep = _padded(P, K, W, -np.inf)
    start = np.where(keep > 0, 0.0, -np.inf)  # padded states start (and stay) at -inf
    bp = np.empty((T, n, W), dtype=np.int8)  # back-pointers: int8, a quarter of int32's memory traffic
    _kernel("viterbi", W)(u, Pp, cols, start, lengths, bp, z, score)
