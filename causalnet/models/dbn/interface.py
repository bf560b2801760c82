"""Exact inference on a discrete DBN by the interface algorithm, on the chain engine.

The forward interface ``I_t`` of a DBN (Murphy 2002, sec. 3.4) is the set of
variables of step ``t`` that have children in step ``t+1``: given it, the past
and the future are independent. Its joint state (``K = prod`` of its
variables' cards) is therefore a Markov chain, and a DBN with evidence is an
HMM-like chain over ``K`` states whose step ``t`` potential is

    M_t[i, j] = P(I_t = j, e_t | I_{t-1} = i)

— one contraction of the step's tables (CPTs, evidence indicators, ``do``
point masses) summing out the step's other variables. The chain engine
(:mod:`causalnet.inference.chain`) runs forward-backward on these potentials
(unary ``(n, T, K)`` holding step 0, pairwise ``(n, T-1, K, K)``), so memory is
``O(n T K^2)``, never the unrolled model. The marginal of any set ``S`` of a
step's variables is then one more contraction, with the forward message of
step ``t-1`` on ``I_{t-1}`` and the backward message of step ``t`` on ``I_t``:

    P(S_t | e) = sum alpha_{t-1}(I_{t-1}) J_t(S, I_{t-1}, I_t) beta_t(I_t) / Z

(filtering drops ``beta``). Every step ``t >= 1`` shares the transition tables,
so all of them are contracted at once over a batch axis of ``(T-1) n``
(in chunks whose largest intermediate stays under 32 MiB); contraction orders come
from ``numpy.einsum_path`` and are cached per operand layout.

Symbols: ``n`` evidence rows, ``T`` steps, ``B`` batch of (step, row) pairs,
``K`` joint interface states.
"""

from __future__ import annotations

import numpy as np

from ... import limits
from ...errors import EvidenceError, ModelError
from ...inference.chain import Chain, chain_log_messages
from ...inference.discrete import model_tables

__all__ = ["SliceProgram", "ChainMessages", "METHOD"]

METHOD = "exact (DBN interface algorithm, forward-backward over the joint interface)"

_MAX_AXES = 52          # numpy.einsum's limit on distinct subscripts
_CHUNK_BYTES = 32 * 2**20   # largest intermediate of one contraction chunk


class ChainMessages:
    """Log forward/backward messages over the joint interface, ``(n, T, K)`` each, and ``log_z`` ``(n,)``."""

    def __init__(self, log_alpha: np.ndarray, log_beta: np.ndarray, log_z: np.ndarray) -> None:
        self.log_alpha, self.log_beta, self.log_z = log_alpha, log_beta, log_z


class SliceProgram:
    """The tables of a discrete DBN's two slices and the contractions of the interface algorithm.

    Parameters
    ----------
    two : CausalModel
        The DBN unrolled over two steps (its ``X[0]`` tables are the initial
        network's, its ``X[1]`` tables the transition's).
    variables : sequence of str
        The DBN's variables (slice order).
    interface : sequence of str
        The forward interface (variables read at the next step).

    Raises
    ------
    ModelError
        If a variable is not discrete and tabulable, or the slice has too many variables for one contraction.
    """

    def __init__(self, two, variables, interface) -> None:
        tables = model_tables(two)
        if tables is None:
            raise ModelError("the interface algorithm needs a DBN whose every variable is discrete and tabulable")
        cpts, cards, _ = tables
        self.variables = tuple(variables)
        self.interface = tuple(interface)
        self.index = {v: i for i, v in enumerate(self.variables)}
        self.cards = {v: cards[f"{v}[0]"] for v in self.variables}
        self.icards = tuple(self.cards[v] for v in self.interface)
        self.K = int(np.prod(self.icards, dtype=np.int64))
        V, m = len(self.variables), len(self.interface)
        if 1 + V + m > _MAX_AXES:
            raise ModelError(f"a DBN slice of {V} variables and an interface of {m} is too wide for one "
                             f"contraction (at most {_MAX_AXES - 1} axes); query the unrolled model instead")
        self.cur = {v: 1 + i for i, v in enumerate(self.variables)}
        self.prev = {v: 1 + V + j for j, v in enumerate(self.interface)}
        self.tables = {0: {}, 1: {}}
        for step in (0, 1):
            for v in self.variables:
                node = f"{v}[{step}]"
                axes = []
                for p in two.dag.parents(node):
                    pv, pt = p.rsplit("[", 1)
                    axes.append(self.cur[pv] if int(pt[:-1]) == step else self.prev[pv])
                self.tables[step][v] = (np.asarray(cpts[node], dtype=np.float64), axes + [self.cur[v]])
        self._paths: dict = {}

    # -- contractions ---------------------------------------------------------------------

    def iaxes(self, lag: int) -> list:
        """The interface's einsum axes at the current step (lag 0) or the previous one (lag -1)."""
        return [self.prev[v] if lag else self.cur[v] for v in self.interface]

    def _operands(self, step, B, evid, do, extra) -> list:
        ops = [np.ones(B), [0]]                             # the batch axis is always present
        for v in self.variables:
            table, axes = self.tables[step][v]
            if v in do and (do[v] >= 0).any():
                d = do[v]                                                            # (B,)
                K = self.cards[v]
                onehot = np.eye(K)[np.clip(d, 0, K - 1)]                             # (B, K)
                pad = (1,) * (table.ndim - 1)
                set_ = (d >= 0).reshape(B, *pad, 1)
                table = np.where(set_, onehot.reshape(B, *pad, K), table[None])      # (B, *pa, K)
                axes = [0] + axes
            ops += [table, axes]
        for v, lik in evid.items():
            ops += [lik, [0, self.cur[v]]]                                           # (B, K_v)
        for arr, axes in extra:
            ops += [arr, axes]
        return ops

    def contract(self, step: int, B: int, evid: dict, do: dict, extra: list, out: list) -> np.ndarray:
        """One contraction of a step's tables over a batch of `B` (step, row) pairs.

        Parameters
        ----------
        step : {0, 1}
            0: the initial network; 1: the transition (every later step).
        B : int
        evid : dict var -> ndarray (B, K_var)
            Evidence likelihoods (one-hot rows, or ones where unobserved).
        do : dict var -> ndarray (B,) of int
            Set states, ``-1`` where the variable is not set.
        extra : list of (ndarray, axes)
            Messages on the interface axes (``iaxes``), batch axis 0 first.
        out : list of int
            Output axes (0 is the batch axis).

        Returns
        -------
        ndarray of shape (B, ...) over `out`
        """
        ops = self._operands(step, B, evid, do, extra)
        key = (step, tuple(out), tuple((np.shape(a), tuple(x)) for a, x in zip(ops[::2], ops[1::2])))
        path = self._paths.get(key)
        if path is None:
            path, info = np.einsum_path(*ops, out, optimize="greedy")
            largest = float(info.split("Largest intermediate:")[1].split("elements")[0])
            self._paths[key] = path = (path, largest / max(B, 1))
        per_row = path[1]
        limits.check_bytes(8.0 * per_row, what="a DBN slice contraction",
                           cause=f"{per_row:.0f} entries per slice and (step, row) pair")
        chunk = max(1, int(_CHUNK_BYTES // (8.0 * per_row)))
        if B <= chunk:
            return np.einsum(*ops, out, optimize=path[0])
        parts = []                                   # bounded memory: the batch axis in chunks
        for lo in range(0, B, chunk):
            sub = [a[lo:lo + chunk] if i % 2 == 0 and ops[i + 1][:1] == [0] else a for i, a in enumerate(ops)]
            parts.append(np.einsum(*sub, out, optimize=path[0]))
        return np.concatenate(parts, axis=0)

    # -- the chain ----------------------------------------------------------------------

    def step_inputs(self, ev: dict, do: dict, steps: slice) -> tuple[int, dict, dict]:
        """Flattened ``(B,)`` evidence likelihoods and ``do`` states of the given steps (time-major)."""
        evid, dos = {}, {}
        B = None
        for v, a in ev.items():
            part = np.ascontiguousarray(a[:, steps].T).reshape(-1)                    # (B,)
            B = part.size
            if (part >= 0).any():
                lik = np.ones((part.size, self.cards[v]))
                seen = part >= 0
                lik[seen] = np.eye(self.cards[v])[part[seen]]
                evid[v] = lik
        for v, a in do.items():
            part = np.ascontiguousarray(a[:, steps].T).reshape(-1)
            B = part.size
            if (part >= 0).any():
                dos[v] = part
        return B, evid, dos

    def messages(self, ev: dict, do: dict, n: int, T: int) -> ChainMessages:
        """Forward-backward over the joint interface (see the module docstring).

        `ev` and `do` map variables to ``(n, T)`` state indices, ``-1`` where unobserved / not set.

        Raises
        ------
        EvidenceError
            If a row's evidence has probability zero.
        """
        K = self.K
        _, evid, dos = self.step_inputs(ev, do, slice(0, 1))
        u0 = self.contract(0, n, evid, dos, [], [0] + self.iaxes(0)).reshape(n, K)      # (n, K)
        limits.check_bytes(8.0 * 3 * n * T * K * K, what="the DBN interface chain",
                           cause=f"{n} rows x {T} steps x {K}^2 joint interface states")
        if T > 1:
            B = (T - 1) * n
            _, evid, dos = self.step_inputs(ev, do, slice(1, T))
            M = self.contract(1, B, evid, dos, [], [0] + self.iaxes(-1) + self.iaxes(0))
            M = M.reshape(T - 1, n, K, K).transpose(1, 0, 2, 3)                           # (n, T-1, K, K)
        else:
            M = np.zeros((n, 0, K, K))
        unary = np.zeros((n, T, K))                                                       # (n, T, K)
        with np.errstate(divide="ignore"):
            unary[:, 0] = np.log(u0)
            pairwise = np.log(M)
        ch = Chain.from_batch(unary, pairwise, None)
        la, lb = chain_log_messages(ch)
        la, lb = ch.to_batch(la), ch.to_batch(lb)                                         # (n, T, K)
        top = la[:, -1].max(axis=-1)
        with np.errstate(invalid="ignore", over="ignore"):
            log_z = top + np.log(np.exp(la[:, -1] - top[:, None]).sum(axis=-1))
        bad = ~np.isfinite(log_z)
        if bad.any():
            rows = np.flatnonzero(bad)
            where = "" if n == 1 else f" (rows {rows[:5].tolist()}{' ...' if len(rows) > 5 else ''})"
            raise EvidenceError(f"the evidence has probability zero under the DBN{where}")
        return ChainMessages(la, lb, log_z)

    def marginals(self, msgs: ChainMessages, ev: dict, do: dict, n: int, T: int, out_vars, *,
                  smooth: bool = True, steps=None) -> dict:
        """``{var: (n, len(steps), K_var)}``: posterior marginals (smoothed, or filtered with ``smooth=False``).

        `out_vars` may also hold tuples of variables: their joint, ``(n, S, *cards)``
        (the families EM counts). `steps` defaults to every step.
        """
        steps = np.arange(T) if steps is None else np.asarray(steps, dtype=np.intp)
        res = {}
        for group, ts in ((0, steps[steps == 0]), (1, steps[steps > 0])):
            if not ts.size:
                continue
            B = ts.size * n
            evid, dos = self._gather(ev, do, ts, n)
            extra = self._weights(msgs, ts, n, smooth)
            for v in out_vars:
                vs = v if isinstance(v, tuple) else (v,)
                axes = [self._axis(w, group) for w in vs]
                p = self.contract(group, B, evid, dos, extra, [0] + axes)                  # (B, *cards)
                p = p.reshape(ts.size, n, *p.shape[1:]).swapaxes(0, 1)                     # (n, S, *cards)
                tot = p.reshape(n, ts.size, -1).sum(axis=-1)
                res.setdefault(v, []).append(p / tot.reshape(n, ts.size, *(1,) * len(vs)))
        return {v: np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0] for v, parts in res.items()}

    def _axis(self, w, group: int) -> int:
        """The einsum axis of `w` (a variable, or ``(var, -1)`` for its previous-step value)."""
        if isinstance(w, tuple) or (isinstance(w, str) and w.endswith("[t-1]")):
            name = w[0] if isinstance(w, tuple) else w[:-5]
            if group == 0:
                raise ModelError(f"step 0 has no previous-step value of {name!r}")
            return self.prev[name]
        return self.cur[w]

    def _gather(self, ev: dict, do: dict, ts: np.ndarray, n: int) -> tuple[dict, dict]:
        """Evidence likelihoods and ``do`` states of steps `ts`, flattened time-major to ``(B,)``."""
        sub_ev = {v: a[:, ts] for v, a in ev.items()}
        sub_do = {v: a[:, ts] for v, a in do.items()}
        _, evid, dos = self.step_inputs(sub_ev, sub_do, slice(None))
        return evid, dos

    def _weights(self, msgs: ChainMessages, ts: np.ndarray, n: int, smooth: bool) -> list:
        """The messages of steps `ts` as contraction operands: alpha of ``t-1``, beta of ``t`` (rescaled)."""
        extra = []
        icur, iprev = self.iaxes(0), self.iaxes(-1)
        if ts[0] > 0:
            la = msgs.log_alpha[:, ts - 1]                                                  # (n, S, K)
            a = np.exp(la - la.max(axis=-1, keepdims=True))
            extra.append((a.swapaxes(0, 1).reshape(-1, *self.icards), [0] + iprev))
        if smooth:
            lb = msgs.log_beta[:, ts]                                                       # (n, S, K)
            with np.errstate(invalid="ignore"):
                b = np.exp(lb - lb.max(axis=-1, keepdims=True))
            b = np.nan_to_num(b, nan=0.0)
            extra.append((b.swapaxes(0, 1).reshape(-1, *self.icards), [0] + icur))
        return extra
