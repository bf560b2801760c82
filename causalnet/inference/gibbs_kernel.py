"""The Gibbs sweep as one compiled loop (numba), beside the numpy sweep of :mod:`causalnet.inference.gibbs`.

The numpy sweep vectorises over chains but pays interpreter time for every
block update; with few chains that overhead is the whole run. Here the same
sweep — the same block conditionals, the same inverse-CDF draw from the same
uniforms — runs as a ``numba.njit`` kernel over ``(sweep, block, chain)``
loops. The plan's ragged lists (blocks, their states, the families touching
them) are flattened into offset arrays first (:class:`FlatPlan`).

numba is imported (and the kernel compiled, cached on disk) on first use
only; without numba the numpy sweep runs. Both are tested to draw the same
states from the same uniforms.
"""

from __future__ import annotations

import numpy as np

from .. import runtime

__all__ = ["FlatPlan", "compiled_sweeps", "available", "ENV_VAR"]

ENV_VAR = "CAUSALNET_GIBBS_BACKEND"


def available() -> bool:
    """Whether the compiled sweep may run: numba importable and the ``"gibbs"`` backend
    (:func:`causalnet.runtime.get_backend`, ``CAUSALNET_GIBBS_BACKEND``) not ``"numpy"``."""
    return runtime.get_backend("gibbs") != "numpy" and runtime.numba_available()


class FlatPlan:
    """A plan's blocks and tables as flat arrays with offsets (see the module docstring).

    Parameters
    ----------
    plan : GibbsPlan
    blocks : list of (members, states (J, k), entries)
        As :meth:`GibbsPlan.blocks` returns them.
    soft_vars : list of int
        Variables with soft evidence, in the order of the soft array's first axis.
    """

    def __init__(self, plan, blocks: list, soft_vars: list) -> None:
        logs = [np.zeros(0) if t is None else t for t in plan.log_tables]
        self.table_off = np.cumsum([0] + [t.size for t in logs]).astype(np.int64)
        self.tables = np.concatenate(logs)
        self._compact(plan)
        soft_of = {v: j for j, v in enumerate(soft_vars)}
        self.soft_of = np.array([soft_of.get(i, -1) for i in range(plan.cards.size)], dtype=np.int64)
        m_off, s_off, e_off, o_off, f_off = [0], [0], [0], [0], [0]
        members, states, owners, others, strides, offsets, e_compact = [], [], [], [], [], [], []
        for mem, st, entries in blocks:
            members.extend(mem.tolist())
            states.extend(st.reshape(-1).tolist())
            m_off.append(len(members))
            s_off.append(len(states))
            for owner, oth, ost, off in entries:
                owners.append(owner)
                if off is None:                # compact: each family position's block position, or -1
                    pos = np.full(plan.families[owner].size, -1, dtype=np.int64)
                    pos[oth] = ost
                    others.extend(pos.tolist())
                    strides.extend([0] * pos.size)
                    o_off.append(len(others))
                    f_off.append(len(offsets))
                    e_compact.append(self.compact_of[owner])
                    continue
                e_compact.append(-1)
                others.extend(oth.tolist())
                strides.extend(ost.tolist())
                offsets.extend(off.tolist())
                o_off.append(len(others))
                f_off.append(len(offsets))
            e_off.append(len(owners))
        arr = lambda a: np.array(a, dtype=np.int64)   # noqa: E731
        self.m_off, self.members, self.s_off, self.states = arr(m_off), arr(members), arr(s_off), arr(states)
        self.e_off, self.owners, self.o_off, self.others = arr(e_off), arr(owners), arr(o_off), arr(others)
        self.strides, self.f_off, self.offsets = arr(strides), arr(f_off), arr(offsets)
        self.e_compact = arr(e_compact)
        self.max_J = max((st.shape[0] for _, st, _ in blocks), default=1)

    def _compact(self, plan) -> None:
        """Flatten the plan's compact families (noisy-OR and noisy-MAX as CDF products, logistic as weights).

        ``c_kind`` 0: ``P(Y ≤ y | x) = lead(y) Π_i tab_i[x_i, y]`` (cumulative,
        last level 1); 1: ``P(Y = y | x) = softmax(lead + Σ_i tab_i[y] x_i)_y``.
        ``c_fam`` holds each family's variables (parents, then the child).
        """
        kinds, cards, fam_off, fams, slot_off, lead_off, lead, tab = [], [], [0], [], [0], [0], [], []
        self.compact_of = {}
        for c, (owner, cf) in enumerate(sorted(plan.compact.items())):
            self.compact_of[owner] = c
            kind, head, slots = cf.flat()
            kinds.append(kind)
            cards.append(cf.spec.card)
            fams.extend(plan.families[owner].tolist())
            fam_off.append(len(fams))
            lead.extend(head.tolist())
            lead_off.append(len(lead))
            for t in slots:
                tab.extend(np.asarray(t, dtype=np.float64).reshape(-1).tolist())
                slot_off.append(len(tab))
        arr = lambda a, t=np.int64: np.array(a, dtype=t)   # noqa: E731
        self.c_kind, self.c_card, self.c_fam_off, self.c_fam = arr(kinds), arr(cards), arr(fam_off), arr(fams)
        self.c_slot_off, self.c_lead_off = arr(slot_off), arr(lead_off)
        self.c_lead, self.c_tab = arr(lead, np.float64), arr(tab, np.float64)
        self.max_K = int(plan.cards.max()) if plan.cards.size else 1


@runtime.jit(inline="always", error_model="numpy")
def _compact_logp(c, r, j, x, fam_pos, states, st0, k, c_kind, c_card, c_fam_off, c_fam, c_slot_off, c_lead_off,
                  c_lead, c_tab, z):  # pragma: no cover - compiled (inlined)
    """``log P(child | parents)`` of compact family c, row r, the block at its state j (see FlatPlan._compact)."""
    f0, f1 = c_fam_off[c], c_fam_off[c + 1]
    a = f1 - f0
    K = c_card[c]
    vals = np.empty(a, dtype=np.int64)
    for p in range(a):
        bp = fam_pos[p]
        vals[p] = states[st0 + j * k + bp] if bp >= 0 else x[r, c_fam[f0 + p]]
    y = vals[a - 1]
    lead = c_lead_off[c]
    s0 = c_fam_off[c] - c                                           # slot of parent 0 (one slot per parent)
    if c_kind[c] == 0:
        hi = c_lead[lead + y]
        lo = c_lead[lead + y - 1] if y > 0 else 0.0
        for p in range(a - 1):
            t = c_slot_off[s0 + p] + vals[p] * K
            hi *= c_tab[t + y]
            if y > 0:
                lo *= c_tab[t + y - 1]
        d = hi - lo
        return np.log(d) if d > 0 else -np.inf
    top = -np.inf
    for q in range(K):
        zq = c_lead[lead + q]
        for p in range(a - 1):
            zq += c_tab[c_slot_off[s0 + p] + q] * vals[p]
        z[q] = zq
        if zq > top:
            top = zq
    tot = 0.0
    for q in range(K):
        tot += np.exp(z[q] - top)
    return z[y] - top - np.log(tot)


@runtime.jit(nogil=True, error_model="numpy")
def _sweeps(x, U, keep_from, m_off, members, s_off, states, e_off, owners, o_off, others, strides, f_off, offsets,
            tables, table_off, soft_of, soft, targets, tstrides, draws, moved, logits, e_compact, c_kind, c_card,
            c_fam_off, c_fam, c_slot_off, c_lead_off, c_lead, c_tab, z):  # pragma: no cover - compiled
    """Run ``U.shape[0]`` sweeps in place; sweeps from `keep_from` on write `draws` and `moved`.

    x (R, V) int64 states; U (S, blocks, R) uniforms; soft (n_soft, R, K) log likelihoods;
    draws (S - keep_from, R) int64; moved (R, V) bool; logits (max_J,) and z (max_K,) scratch;
    compact families as :meth:`FlatPlan._compact` flattens them.
    """
    R = x.shape[0]
    n_blocks = m_off.size - 1
    for s in range(U.shape[0]):
        for b in range(n_blocks):
            k = m_off[b + 1] - m_off[b]
            J = (s_off[b + 1] - s_off[b]) // k
            for r in range(R):
                for j in range(J):
                    logits[j] = 0.0
                for e in range(e_off[b], e_off[b + 1]):
                    c = e_compact[e]
                    if c >= 0:
                        pos = others[o_off[e]:o_off[e + 1]]
                        for j in range(J):
                            logits[j] += _compact_logp(c, r, j, x, pos, states, s_off[b], k, c_kind, c_card,
                                                       c_fam_off, c_fam, c_slot_off, c_lead_off, c_lead, c_tab, z)
                        continue
                    base = table_off[owners[e]]
                    for q in range(o_off[e], o_off[e + 1]):
                        base += x[r, others[q]] * strides[q]
                    f0 = f_off[e]
                    for j in range(J):
                        logits[j] += tables[base + offsets[f0 + j]]
                for a in range(k):
                    sv = soft_of[members[m_off[b] + a]]
                    if sv >= 0:
                        for j in range(J):
                            logits[j] += soft[sv, r, states[s_off[b] + j * k + a]]
                top = -np.inf
                for j in range(J):
                    if logits[j] > top:
                        top = logits[j]
                total = 0.0
                for j in range(J):
                    total += np.exp(logits[j] - top)
                    logits[j] = total
                thr = U[s, b, r] * total
                pick = 0
                for j in range(J):
                    if logits[j] < thr:
                        pick += 1
                if pick > J - 1:
                    pick = J - 1
                for a in range(k):
                    v = members[m_off[b] + a]
                    new = states[s_off[b] + pick * k + a]
                    if s >= keep_from and new != x[r, v]:
                        moved[r, v] = True
                    x[r, v] = new
        if s >= keep_from:
            for r in range(R):
                flat = 0
                for t in range(targets.size):
                    flat += x[r, targets[t]] * tstrides[t]
                draws[s - keep_from, r] = flat


def compiled_sweeps(flat: FlatPlan, x: np.ndarray, U: np.ndarray, keep_from: int, soft: np.ndarray,
                    targets: np.ndarray, tstrides: np.ndarray, draws: np.ndarray, moved: np.ndarray) -> None:
    """Run the compiled kernel (compiling it on first use) over the sweeps of `U` (S, blocks, R)."""
    kernel = _sweeps
    kernel(x, U, keep_from, flat.m_off, flat.members, flat.s_off, flat.states, flat.e_off, flat.owners,
           flat.o_off, flat.others, flat.strides, flat.f_off, flat.offsets, flat.tables, flat.table_off,
           flat.soft_of, soft, targets, tstrides, draws, moved, np.empty(flat.max_J), flat.e_compact, flat.c_kind,
           flat.c_card, flat.c_fam_off, flat.c_fam, flat.c_slot_off, flat.c_lead_off, flat.c_lead, flat.c_tab,
           np.empty(flat.max_K))

