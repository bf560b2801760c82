"""The residual (priority-queue) schedule as one compiled loop (numba), over table and closed-form factors.

:mod:`causalnet.inference.residual` states the algorithm; this module runs it
without the interpreter in the loop: the factor graph is flattened once into
offset arrays (:class:`FlatGraph`) and one ``numba.njit`` kernel propagates a
row — an indexed binary max-heap of residuals (one entry per factor, its key
raised or lowered in place, so the heap never outgrows the graph), each factor's outgoing messages computed
entry by entry (tables: prefix and suffix products leave one axis out, no
division) or from the structural form:

* noisy-OR and noisy-MAX (noisy-OR as the two-level noisy-MAX): exactly the
  sum-product messages of :func:`causalnet.inference.compact_messages.noisy_max_messages`;
* logistic: the probit approximation of
  :func:`causalnet.inference.compact_messages.logistic_messages`.

Max-product is compiled for table factors (a graph with closed-form factors
takes the flooding schedule's closed-form max-product messages,
:mod:`causalnet.inference.compact_max`, which this kernel does not have).

numba is imported and the kernel compiled (cached on disk) on the first
residual run. Symbols: ``V`` variables, ``E`` edges, ``F`` factors, ``K`` the
largest card.
"""

from __future__ import annotations

import numpy as np

from .. import runtime

__all__ = ["FlatGraph", "residual_run", "TABLE", "NOISY_MAX", "LOGISTIC"]

TABLE, NOISY_MAX, LOGISTIC = 0, 1, 2


class FlatGraph:
    """A factor graph's factors as flat arrays: kinds, edges (child first for closed forms), parameters.

    Parameters
    ----------
    fg : FactorGraph

    Attributes
    ----------
    kind : ndarray of int, shape (F,)
        ``TABLE``, ``NOISY_MAX`` or ``LOGISTIC``.
    edge_off, edges : ndarray of int
        Factor f's edges are ``edges[edge_off[f]:edge_off[f + 1]]`` (a table's in axis order; a closed form's
        child first, then its parents).
    par_off : ndarray of int, shape (F,)
        Where f's parameters start: in ``tables`` (flat, C order) for a table; in ``lead`` (a row of K: the
        leak CDF or the bias) and ``slots`` (per parent a K x K CDF block or a K weight row) otherwise.
    slot_off : ndarray of int, shape (F,)
    edge_factor : ndarray of int, shape (E,)
    """

    def __init__(self, fg) -> None:
        K = fg.K
        kind, edge_off, edges, par_off, slot_off = [], [0], [], [], []
        tables, lead, slots = [], [], []
        ntab = 0
        order = sorted((int(f), g, r) for g in fg.groups for r, f in enumerate(g.factors))
        for f, g, r in order:
            _, t = fg.factors[f]
            kind.append(TABLE)
            edges.extend(int(e) for e in g.edges[r])
            edge_off.append(len(edges))
            par_off.append(ntab)
            slot_off.append(0)
            tables.append(t.reshape(-1))
            ntab += t.size
        nslot = 0
        for view in fg.max_views:
            for f in range(view.child_edge.size):
                a, b = view.factor_start[f], view.factor_start[f + 1]
                kind.append(NOISY_MAX)
                edges.extend([int(view.child_edge[f]), *(int(e) for e in view.slot_edge[a:b])])
                edge_off.append(len(edges))
                par_off.append(len(lead) * K)
                lead.append(view.leak_cdf[f])
                slot_off.append(nslot)
                slots.extend(view.slot_cdf[s].reshape(-1) for s in range(a, b))
                nslot += (b - a) * K * K
        lg = fg.logistic
        if lg is not None:
            for f in range(lg.child_edge.size):
                a, b = lg.factor_start[f], lg.factor_start[f + 1]
                kind.append(LOGISTIC)
                edges.extend([int(lg.child_edge[f]), *(int(e) for e in lg.slot_edge[a:b])])
                edge_off.append(len(edges))
                par_off.append(len(lead) * K)
                lead.append(lg.bias[f])
                slot_off.append(nslot)
                slots.extend(lg.slot_w[s] for s in range(a, b))
                nslot += (b - a) * K
        arr = lambda x, d=np.int64: np.asarray(x, dtype=d)  # noqa: E731
        self.kind, self.edge_off, self.edges = arr(kind), arr(edge_off), arr(edges)
        self.par_off, self.slot_off = arr(par_off), arr(slot_off)
        self.tables = np.concatenate(tables) if tables else np.zeros(0)
        self.lead = np.concatenate(lead) if lead else np.zeros(0)                # (closed forms * K,)
        self.slots = np.concatenate(slots) if slots else np.zeros(0)
        self.edge_factor = np.empty(fg.n_edges, dtype=np.int64)
        for f in range(self.kind.size):
            self.edge_factor[self.edges[self.edge_off[f]:self.edge_off[f + 1]]] = f
        self.var_start = np.append(fg.var_start, fg.n_edges).astype(np.int64)
        self.edge_var, self.edge_card = fg.edge_var.astype(np.int64), fg.edge_card.astype(np.int64)
        self.K = K


@runtime.jit(inline="always", error_model="numpy")
def _v2f(e, v, c, log_unary, S, Z, fin, zero, out):  # pragma: no cover - compiled (inlined)
    """Variable v's message to the factor of edge e into out[:c] (max 1, or all 0)."""
    top = -np.inf
    for k in range(c):
        if Z[v, k] - zero[e, k] > 0 or log_unary[v, k] == -np.inf:
            out[k] = -np.inf
        else:
            out[k] = log_unary[v, k] + S[v, k] - fin[e, k]
        if out[k] > top:
            top = out[k]
    for k in range(c):
        out[k] = np.exp(out[k] - top) if top > -np.inf else 0.0


@runtime.jit(inline="always", error_model="numpy")
def _table_out(t0, size, a, cards, nin, out, tables, is_max, pre, suf):  # pragma: no cover - compiled (inlined)
    for j in range(a):
        for k in range(cards[j]):
            out[j, k] = 0.0
    st = np.zeros(a, dtype=np.int64)
    for idx in range(size):
        rem = idx
        for i in range(a - 1, -1, -1):
            st[i] = rem % cards[i]
            rem //= cards[i]
        val = tables[t0 + idx]
        if val == 0.0:
            continue
        pre[0] = val
        for i in range(a):
            pre[i + 1] = pre[i] * nin[i, st[i]]
        suf[a] = 1.0
        for i in range(a - 1, -1, -1):
            suf[i] = suf[i + 1] * nin[i, st[i]]
        for j in range(a):
            x = pre[j] * suf[j + 1]
            if is_max:
                if x > out[j, st[j]]:
                    out[j, st[j]] = x
            else:
                out[j, st[j]] += x


@runtime.jit(inline="always", error_model="numpy")
def _noisy_max_out(l0, s0, a, cards, nin, out, lead, slots, K, t, pre, suf):  # pragma: no cover - compiled
    """Sum-product messages of a noisy-MAX factor: edge 0 the child, 1..a-1 the parents."""
    kp = a - 1
    for i in range(kp):
        tot = 0.0
        for s in range(cards[i + 1]):
            tot += nin[i + 1, s]
        for y in range(K):
            acc = 0.0
            for s in range(cards[i + 1]):
                acc += nin[i + 1, s] * slots[s0 + (i * K + s) * K + y]
            t[i, y] = acc / tot if tot > 0 else 0.0
    for y in range(K):
        pre[0] = 1.0
        for i in range(kp):
            pre[i + 1] = pre[i] * t[i, y]
        suf[kp] = 1.0
        for i in range(kp - 1, -1, -1):
            suf[i] = suf[i + 1] * t[i, y]
        cdf = lead[l0 + y] * pre[kp]
        prev = lead[l0 + y - 1] * t[kp, y - 1] if y > 0 else 0.0        # t[kp] keeps the previous total
        t[kp, y] = pre[kp]
        if y < cards[0]:
            out[0, y] = max(cdf - prev, 0.0)
        for i in range(kp):                                             # rest_i(y) kept in t[kp + 1 + i, y]
            t[kp + 1 + i, y] = pre[i] * suf[i + 1]
    c = cards[0]
    for i in range(kp):
        for s in range(cards[i + 1]):
            acc = 0.0
            for y in range(c):
                d = nin[0, y] - (nin[0, y + 1] if y + 1 < c else 0.0)
                acc += d * lead[l0 + y] * t[kp + 1 + i, y] * slots[s0 + (i * K + s) * K + y]
            out[i + 1, s] = max(acc, 0.0)


@runtime.jit(inline="always", error_model="numpy")
def _probit_softmax(mean, var, c, out):  # pragma: no cover - compiled (inlined)
    top = -np.inf
    for q in range(c):
        out[q] = mean[q] / np.sqrt(1.0 + np.pi * var[q] / 8.0)
        if out[q] > top:
            top = out[q]
    tot = 0.0
    for q in range(c):
        out[q] = np.exp(out[q] - top)
        tot += out[q]
    for q in range(c):
        out[q] /= tot


@runtime.jit(inline="always", error_model="numpy")
def _logistic_out(l0, s0, a, cards, nin, out, lead, slots, K, t, mean, var, m2, v2, probs):  # pragma: no cover
    """Probit-approximated messages of a logistic factor: edge 0 the child, 1..a-1 the parents."""
    kp = a - 1
    c = cards[0]
    for q in range(c):
        mean[q] = lead[l0 + q]
        var[q] = 0.0
    for i in range(kp):
        tot, ex, ex2 = 0.0, 0.0, 0.0
        for s in range(cards[i + 1]):
            tot += nin[i + 1, s]
            ex += s * nin[i + 1, s]
            ex2 += s * s * nin[i + 1, s]
        ex = ex / tot if tot > 0 else 0.0
        vx = max(ex2 / tot - ex * ex, 0.0) if tot > 0 else 0.0
        t[i, 0], t[i, 1] = ex, vx
        for q in range(c):
            w = slots[s0 + i * K + q]
            mean[q] += w * ex
            var[q] += w * w * vx
    _probit_softmax(mean, var, c, probs)
    for q in range(c):
        out[0, q] = probs[q]
    for i in range(kp):
        for s in range(cards[i + 1]):
            for q in range(c):
                w = slots[s0 + i * K + q]
                m2[q] = mean[q] + w * (s - t[i, 0])
                v2[q] = max(var[q] - w * w * t[i, 1], 0.0)
            _probit_softmax(m2, v2, c, probs)
            acc = 0.0
            for q in range(c):
                acc += probs[q] * nin[0, q]
            out[i + 1, s] = acc


@runtime.jit(inline="always", error_model="numpy")
def _swap(hk, hf, pos, a, b):  # pragma: no cover - compiled (inlined)
    hk[a], hk[b] = hk[b], hk[a]
    hf[a], hf[b] = hf[b], hf[a]
    pos[hf[a]], pos[hf[b]] = a, b


@runtime.jit(inline="always", error_model="numpy")
def _sift_up(hk, hf, pos, i):  # pragma: no cover - compiled (inlined)
    while i > 0:
        p = (i - 1) // 2
        if hk[p] >= hk[i]:
            break
        _swap(hk, hf, pos, p, i)
        i = p


@runtime.jit(inline="always", error_model="numpy")
def _sift_down(hk, hf, pos, i, size):  # pragma: no cover - compiled (inlined)
    while True:
        c1, c2, b = 2 * i + 1, 2 * i + 2, i
        if c1 < size and hk[c1] > hk[b]:
            b = c1
        if c2 < size and hk[c2] > hk[b]:
            b = c2
        if b == i:
            break
        _swap(hk, hf, pos, b, i)
        i = b


@runtime.jit(inline="always", error_model="numpy")
def _heap_set(hk, hf, pos, size, f, key):  # pragma: no cover - compiled (inlined)
    """Insert factor f with `key`, or change its key; return the new size (an indexed heap: one entry per factor)."""
    i = pos[f]
    if i < 0:
        hk[size], hf[size], pos[f] = key, f, size
        _sift_up(hk, hf, pos, size)
        return size + 1
    old = hk[i]
    hk[i] = key
    if key > old:
        _sift_up(hk, hf, pos, i)
    else:
        _sift_down(hk, hf, pos, i, size)
    return size


@runtime.jit(nogil=True, error_model="numpy")
def _refresh(f, kind, edge_off, edges, par_off, slot_off, tables, lead, slots, edge_var, edge_card, log_unary, S, Z,
             fin, zero, msg, pending, damping, is_max, K, nin, out, cards, pre, suf, t, mean, var, m2, v2,
             probs):  # pragma: no cover - compiled
    """Recompute factor f's pending messages; return (residual, impossible)."""
    e0, e1 = edge_off[f], edge_off[f + 1]
    a = e1 - e0
    for i in range(a):
        e = edges[e0 + i]
        cards[i] = edge_card[e]
        _v2f(e, edge_var[e], cards[i], log_unary, S, Z, fin, zero, nin[i])
    if kind[f] == 0:
        size = 1
        for i in range(a):
            size *= cards[i]
        _table_out(par_off[f], size, a, cards, nin, out, tables, is_max, pre, suf)
    elif kind[f] == 1:
        _noisy_max_out(par_off[f], slot_off[f], a, cards, nin, out, lead, slots, K, t, pre, suf)
    else:
        _logistic_out(par_off[f], slot_off[f], a, cards, nin, out, lead, slots, K, t, mean, var, m2, v2, probs)
    res, bad = 0.0, False
    for i in range(a):
        e, c = edges[e0 + i], cards[i]
        tot = 0.0
        for k in range(c):
            tot += out[i, k]
        if not tot > 0:
            bad = True
        for k in range(c):
            m = out[i, k] / tot if tot > 0 else 1.0 / c
            if damping > 0:
                m = (1.0 - damping) * m + damping * msg[e, k]
            pending[e, k] = m
            d = abs(m - msg[e, k])
            if d > res:
                res = d
    return res, bad


@runtime.jit(nogil=True, error_model="numpy")
def _run(kind, edge_off, edges, par_off, slot_off, tables, lead, slots, edge_factor, var_start, edge_var, edge_card,
         log_unary, msg, is_max, max_iter, tol, damping, K):  # pragma: no cover - compiled
    """Propagate one row in place (msg (E, K)); return (converged, updates, impossible)."""
    V, E, F = var_start.size - 1, msg.shape[0], kind.size
    fin = np.zeros((E, K))
    zero = np.zeros((E, K), dtype=np.int64)
    S = np.zeros((V, K))
    Z = np.zeros((V, K), dtype=np.int64)
    for e in range(E):
        v = edge_var[e]
        for k in range(edge_card[e]):
            if msg[e, k] > 0:
                fin[e, k] = np.log(msg[e, k])
            else:
                zero[e, k] = 1
            S[v, k] += fin[e, k]
            Z[v, k] += zero[e, k]
    amax = 1
    for f in range(F):
        amax = max(amax, edge_off[f + 1] - edge_off[f])
    nin = np.zeros((amax, K))
    out = np.zeros((amax, K))
    cards = np.zeros(amax, dtype=np.int64)
    pre, suf = np.zeros(amax + 1), np.zeros(amax + 1)
    t = np.zeros((2 * amax + 1, K))
    mean, var, m2, v2, probs = np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K)
    pending = msg.copy()
    hk, hf = np.zeros(max(F, 1)), np.zeros(max(F, 1), dtype=np.int64)
    pos = np.full(max(F, 1), -1, dtype=np.int64)
    size = 0
    impossible = False
    for f in range(F):
        res, bad = _refresh(f, kind, edge_off, edges, par_off, slot_off, tables, lead, slots, edge_var, edge_card,
                            log_unary, S, Z, fin, zero, msg, pending, damping, is_max, K, nin, out, cards, pre, suf,
                            t, mean, var, m2, v2, probs)
        impossible |= bad
        size = _heap_set(hk, hf, pos, size, f, res)
    mark = np.zeros(F, dtype=np.int64)
    stamp = 0
    updates, budget = 0, max_iter * max(F, 1)
    converged = False
    while size > 0 and updates < budget:
        if hk[0] < tol:
            converged = True
            break
        f = hf[0]
        updates += 1
        stamp += 1
        for i in range(edge_off[f], edge_off[f + 1]):                   # commit f's messages
            e = edges[i]
            v = edge_var[e]
            for k in range(edge_card[e]):
                S[v, k] -= fin[e, k]
                Z[v, k] -= zero[e, k]
                m = pending[e, k]
                msg[e, k] = m
                if m > 0:
                    fin[e, k], zero[e, k] = np.log(m), 0
                else:
                    fin[e, k], zero[e, k] = 0.0, 1
                S[v, k] += fin[e, k]
                Z[v, k] += zero[e, k]
        for i in range(edge_off[f], edge_off[f + 1]):                   # every factor of f's variables, f too
            v = edge_var[edges[i]]
            for j in range(var_start[v], var_start[v + 1]):
                g = edge_factor[j]
                if mark[g] == stamp:
                    continue
                mark[g] = stamp
                res, bad = _refresh(g, kind, edge_off, edges, par_off, slot_off, tables, lead, slots, edge_var,
                                    edge_card, log_unary, S, Z, fin, zero, msg, pending, damping, is_max, K, nin,
                                    out, cards, pre, suf, t, mean, var, m2, v2, probs)
                impossible |= bad
                size = _heap_set(hk, hf, pos, size, g, res)
    if size == 0:
        converged = True
    return converged, updates, impossible


def residual_run(flat: FlatGraph, log_unary: np.ndarray, msg: np.ndarray, *, mode: str, max_iter: int, tol: float,
                 damping: float) -> tuple[bool, int, bool]:
    """Propagate one row in place by the compiled kernel: `msg` (E, K) factor-to-variable messages, `log_unary` (V, K).

    Returns
    -------
    converged : bool
    updates : int
        Factor updates committed.
    impossible : bool
        A factor found no consistent state.
    """
    return _run(flat.kind, flat.edge_off, flat.edges, flat.par_off, flat.slot_off, flat.tables, flat.lead, flat.slots,
                flat.edge_factor, flat.var_start, flat.edge_var, flat.edge_card, np.ascontiguousarray(log_unary),
                msg, mode == "max", int(max_iter), float(tol), float(damping), int(flat.K))
