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
_KERNEL: dict = {}


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
        self.table_off = np.cumsum([0] + [t.size for t in plan.log_tables]).astype(np.int64)
        self.tables = np.concatenate(plan.log_tables)
        soft_of = {v: j for j, v in enumerate(soft_vars)}
        self.soft_of = np.array([soft_of.get(i, -1) for i in range(plan.cards.size)], dtype=np.int64)
        m_off, s_off, e_off, o_off, f_off = [0], [0], [0], [0], [0]
        members, states, owners, others, strides, offsets = [], [], [], [], [], []
        for mem, st, entries in blocks:
            members.extend(mem.tolist())
            states.extend(st.reshape(-1).tolist())
            m_off.append(len(members))
            s_off.append(len(states))
            for owner, oth, ost, off in entries:
                owners.append(owner)
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
        self.max_J = max((st.shape[0] for _, st, _ in blocks), default=1)


def _sweeps(x, U, keep_from, m_off, members, s_off, states, e_off, owners, o_off, others, strides, f_off, offsets,
            tables, table_off, soft_of, soft, targets, tstrides, draws, moved, logits):  # pragma: no cover - compiled
    """Run ``U.shape[0]`` sweeps in place; sweeps from `keep_from` on write `draws` and `moved`.

    x (R, V) int64 states; U (S, blocks, R) uniforms; soft (n_soft, R, K) log likelihoods;
    draws (S - keep_from, R) int64; moved (R, V) bool; logits (max_J,) scratch.
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
    kernel = _KERNEL.get("sweeps")
    if kernel is None:
        kernel = _KERNEL["sweeps"] = runtime.compile_now(_sweeps, nogil=True, error_model="numpy")
    kernel(x, U, keep_from, flat.m_off, flat.members, flat.s_off, flat.states, flat.e_off, flat.owners,
           flat.o_off, flat.others, flat.strides, flat.f_off, flat.offsets, flat.tables, flat.table_off,
           flat.soft_of, soft, targets, tstrides, draws, moved, np.empty(flat.max_J))
