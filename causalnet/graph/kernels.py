"""Compiled Bayes-ball: the d-separation search as one numba kernel over a DAG's CSR index.

:func:`bayes_ball_kernel` answers one d-separation query in machine code, so a
query costs microseconds on graphs of 10^3 nodes and stays linear in the part
of the graph it visits on graphs of 10^5 and more. It is the same search as
:func:`causalnet.graph.separation.bayes_ball` (Shachter 1998): states are
(node, direction); a ball arriving from a child passes up to the parents and
down to the children unless the node is in Z; a ball arriving from a parent
passes down when the node is not in Z and bounces up to the parents when it
is. With ``restrict`` the downward moves stay inside the ancestral set of
X ∪ Y ∪ Z, outside of which a ball can neither reach Y nor bounce: it is
computed first, by the same kernel, and makes the search stop early.

Scratch memory is a ``(4, n)`` int64 array of *stamps* (:func:`scratch`),
owned by the graph's index and never cleared: each query takes the next
epoch from ``epoch[0]``, and an entry counts only when it holds the current
stamp. The kernel keeps the GIL, so two threads never share an epoch.

Numba compiles the kernel on first use (about 2 s) and keeps it in the
per-user kernel cache (:mod:`causalnet.runtime`), so later processes load it;
:mod:`causalnet.graph.separation` decides when that pays.
"""

from __future__ import annotations

import time

import numpy as np

from ..runtime import jit, numba_available

__all__ = ["AVAILABLE", "bayes_ball_kernel", "scratch", "is_compiled", "compile_kernel", "CONNECTED", "OVERLAP"]

AVAILABLE = numba_available()

# Return codes of the kernel other than a count of reached nodes (>= 0).
CONNECTED = -1
OVERLAP = -2

# Rows of the scratch array.
_ROLE, _ANC, _UP, _DOWN = 0, 1, 2, 3
# Role bits, stored as epoch * 8 + bits in the role row.
_X, _Y, _Z = 1, 2, 4


def scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh scratch for a graph of `n` nodes: stamps ``(4, n)``, a stack ``(2 n + 1,)``, the epoch ``(1,)``."""
    return np.zeros((4, n), dtype=np.int64), np.empty(2 * n + 1, dtype=np.int64), np.zeros(1, dtype=np.int64)


_njit = jit(nogil=False)
#: a helper compiled into its caller (one compilation unit: shorter compile, no call per node)
_inline = jit(inline="always")


@_inline
def _mark(work, ids, bits, base, clash):  # pragma: no cover - compiled
    """Stamp `ids` with role `bits`; False when one already has a role in `clash` this epoch."""
    for v in ids:
        m = work[_ROLE, v]
        if m >= base:
            if m & clash:
                return False
            work[_ROLE, v] = m | bits
        else:
            work[_ROLE, v] = base | bits
    return True


@_inline
def _ancestral(p_ptr, p_idx, work, stack, ids, stamp, top):  # pragma: no cover - compiled
    """Stamp `ids` and their ancestors in the ancestral row; returns the stack top (unchanged: 0)."""
    for v in ids:
        if work[_ANC, v] != stamp:
            work[_ANC, v] = stamp
            stack[top] = v
            top += 1
    while top > 0:
        top -= 1
        v = stack[top]
        for k in range(p_ptr[v], p_ptr[v + 1]):
            p = p_idx[k]
            if work[_ANC, p] != stamp:
                work[_ANC, p] = stamp
                stack[top] = p
                top += 1
    return top


# Long by design: one search loop whose state lives in the scratch rows; helpers would add calls per edge.
@_njit
def bayes_ball_kernel(p_ptr, p_idx, c_ptr, c_idx, xs, ys, zs, work, stack, epoch, restrict, out):  # pragma: no cover
    """One d-separation query by Bayes-ball from `xs`.

    Parameters
    ----------
    p_ptr, p_idx, c_ptr, c_idx : int64 arrays
        The CSR parent and child lists (:class:`causalnet.graph.core.GraphIndex`).
    xs, ys, zs : int64 arrays
        Node indices of X, Y and Z. An empty `ys` asks for every node the
        ball reaches instead (written to `out`), for a caller that tests Y by
        name.
    work, stack, epoch : from :func:`scratch`
    restrict : bool
        Keep downward moves inside the ancestral set of X ∪ Y ∪ Z.
    out : int64 array of shape (n,)
        The reached nodes, when `ys` is empty.

    Returns
    -------
    int
        ``CONNECTED`` (-1) when the ball reaches Y; ``OVERLAP`` (-2) when
        two of X, Y, Z share a node (the caller raises the error); otherwise
        the number of reached nodes written to `out` (0 when `ys` is given:
        d-separated).
    """
    e = epoch[0] + 1
    epoch[0] = e
    base = e * 8
    if not (_mark(work, zs, 4, base, 0) and _mark(work, ys, 2, base, 4) and _mark(work, xs, 1, base, 6)):
        return -2
    collect = ys.size == 0
    top = 0
    if restrict:
        top = _ancestral(p_ptr, p_idx, work, stack, xs, e, top)
        top = _ancestral(p_ptr, p_idx, work, stack, ys, e, top)
        top = _ancestral(p_ptr, p_idx, work, stack, zs, e, top)
    zmark = base | 4
    ymark = base | 2
    count = 0
    for x in xs:
        if work[_UP, x] != e:
            work[_UP, x] = e
            stack[top] = 2 * x
            top += 1
            if collect:
                out[count] = x
                count += 1
    while top > 0:
        top -= 1
        s = stack[top]
        v = s >> 1
        inz = work[_ROLE, v] == zmark
        if s & 1 == 0:       # reached from a child (or a source)
            if inz:
                continue
            go_up = True
            go_down = True
        else:                # reached from a parent
            go_up = inz
            go_down = not inz
        if go_up:
            for k in range(p_ptr[v], p_ptr[v + 1]):
                p = p_idx[k]
                if work[_UP, p] != e:
                    work[_UP, p] = e
                    if work[_ROLE, p] == ymark:
                        return -1
                    if collect and work[_DOWN, p] != e:
                        out[count] = p
                        count += 1
                    stack[top] = 2 * p
                    top += 1
        if go_down:
            for k in range(c_ptr[v], c_ptr[v + 1]):
                c = c_idx[k]
                if work[_DOWN, c] != e and (not restrict or work[_ANC, c] == e):
                    work[_DOWN, c] = e
                    if work[_ROLE, c] == ymark:
                        return -1
                    if collect and work[_UP, c] != e:
                        out[count] = c
                        count += 1
                    stack[top] = 2 * c + 1
                    top += 1
    return count


_compiled = [False]


def is_compiled() -> bool:
    """Whether the kernel has been compiled in this process (its first call compiles it)."""
    if not _compiled[0] and AVAILABLE:
        _compiled[0] = bool(bayes_ball_kernel.signatures)   # numba's list is slow to ask: remembered once true
    return _compiled[0]


def compile_kernel() -> float:
    """Compile the kernel now (a query on a two-node graph); returns the seconds it took (0 if already compiled)."""
    if not AVAILABLE or is_compiled():
        return 0.0
    t0 = time.perf_counter()
    ptr = np.array([0, 0, 1], dtype=np.int64)
    one = np.array([0], dtype=np.int64)
    work, stack, epoch = scratch(2)
    bayes_ball_kernel(ptr, one, np.array([0, 1, 1], dtype=np.int64), one + 1, one, one + 1, one[:0],
                      work, stack, epoch, True, np.empty(2, dtype=np.int64))
    return time.perf_counter() - t0
