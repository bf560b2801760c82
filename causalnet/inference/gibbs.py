"""Gibbs sampling on discrete Bayesian networks, with convergence diagnostics.

Each sweep visits the unobserved nodes in topological order and redraws each
from its full conditional given its Markov blanket,
``P(x_v | mb(v)) ∝ P(x_v | pa_v) · Π_{c ∈ ch(v)} P(x_c | pa_c) · L_v(x_v)``
(``L_v`` the soft evidence on ``v``, if any) — one table lookup per family
containing ``v`` (Geman & Geman 1984; Koller & Friedman 2009, §12.3).

Vectorised: all chains of all evidence rows advance together (``R = n ·
chains`` states, one numpy gather per family and node). Chains start from
forward samples consistent with the evidence, picked by their likelihood
weights (so the start is already a rough posterior draw, and every chain
starts in a state of positive probability: the chain can then never reach a
state of probability zero). A row whose evidence no forward sample reproduces
is an :class:`~causalnet.errors.EvidenceError`.

Diagnostics (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4–11.5),
per evidence row and joint target state, on the indicator of that state:

* split R-hat: each chain cut in two halves; ``sqrt(var⁺ / W)``;
* effective sample size: ``chains · S / (1 + 2 Σ ρ_t)``, the autocorrelations
  summed over Geyer's initial positive pairs;
* ``std_err = sqrt(p (1 − p) / ESS)``.

A chain that cannot move is an error, not an answer: when a node never changes
within any chain of a row while the chains disagree on its value
(deterministic relations split the state space into pieces Gibbs cannot cross),
:class:`~causalnet.errors.ModelError` says so and names the node. With one
chain this cannot be seen: use several (the default is 4).

Symbols: ``n`` evidence rows, ``R = n · chains``, ``S`` kept sweeps per chain,
``C`` joint target states.
"""

from __future__ import annotations

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution
from ..errors import EvidenceError, ModelError
from ..mechanisms.compact import Logistic, NoisyMax, NoisyOR
from . import gibbs_kernel
from .approximate import hard_evidence, is_discrete_request, model_families, rows_text
from .engine import Engine
from .sampling import samples_per_row

__all__ = ["GibbsEngine", "GibbsPlan", "CompactFamily", "gibbs_run", "chain_diagnostics", "integrated_time", "check_moving"]

INIT_ROUNDS = 20
INIT_CANDIDATES = 16
#: Uniforms drawn at once (chunks of sweeps x blocks x chains).
CHUNK_VALUES = 2**20
#: Largest joint table of a block (a node with a zero in its CPT and its free parents).
MAX_BLOCK = 4096


class CompactFamily:
    """A compact node's conditional (NoisyOR, NoisyMax, Logistic) evaluated from its structural form.

    Parameters
    ----------
    node : node name
    mech : Compact
    spec : Spec
        The node's spec.
    parent_cards : dict parent -> int

    Its family's columns are the mechanism's parents (in its own order), then the node.
    """

    def __init__(self, node, mech, spec, parent_cards: dict) -> None:
        self.node, self.mech, self.spec, self.parent_cards = node, mech, spec, parent_cards

    def probs(self, xs: np.ndarray) -> np.ndarray:
        """``P(node | parents)`` for rows `xs` (R, a) of family states: (R, K)."""
        parents = {p: xs[:, j] for j, p in enumerate(self.mech.parents)}
        return np.broadcast_to(self.mech.probabilities(self.node, parents, self.spec), (xs.shape[0], self.spec.card))

    def flat(self) -> tuple[int, np.ndarray, list]:
        """The form the compiled sweep evaluates: ``(kind, head (K,), one array per parent)``.

        kind 0 (noisy-OR, noisy-MAX): ``P(Y ≤ y | x) = head[y] Π_i slot_i[x_i, y]``
        (cumulative, last level exactly 1); kind 1 (logistic):
        ``P(Y = y | x) = softmax(head + Σ_i slot_i x_i)_y`` with ``slot_i`` of shape (K,).
        """
        mech = self.mech
        if isinstance(mech, Logistic):
            return 1, mech.bias, [mech.weights[:, i] for i in range(len(mech.parents))]
        if isinstance(mech, NoisyOR):
            slots = []
            for p, q, on in zip(mech.parents, 1.0 - mech.probs, mech.on_index):
                t = np.ones((self.parent_cards[p], 2))
                t[on, 0] = q
                slots.append(t)
            return 0, np.array([1.0 - mech.leak, 1.0]), slots
        if isinstance(mech, NoisyMax):
            def cdf(t):
                c = np.cumsum(t, axis=-1)
                c[..., -1] = 1.0
                return c
            return 0, cdf(mech.leak), [cdf(t) for t in mech.tables]
        raise ModelError(f"the compiled Gibbs sweep has no form for {type(mech).__name__} node {self.node!r}")

    def log_prob(self, xs: np.ndarray) -> np.ndarray:
        """``log P(x_node | x_parents)`` of rows `xs` (R, a): (R,)."""
        with np.errstate(divide="ignore"):
            return np.log(self.probs(xs)[np.arange(xs.shape[0]), xs[:, -1]])


class GibbsPlan:
    """The lookups of one model's Gibbs sweep.

    Attributes
    ----------
    names : list
        Nodes, in the model's order (variable ``i`` is ``names[i]``).
    cards : ndarray of int, shape (V,)
    order : list of int
        Topological order.
    families : list of ndarray of int
        The variables of each factor (for a network: factor i is node i's
        CPT over its parents, then the node).
    log_tables : list of ndarray
        Flattened log tables (``-inf`` for zeros).
    strides : list of ndarray of int
        The flat stride of each family member.
    zeros : list of bool
        Whether each CPT has a zero entry (a deterministic or forbidden configuration).
    """

    def __init__(self, model) -> None:
        tables, compact, _ = model_families(model)
        names = list(model.dag.nodes)
        index = {v: i for i, v in enumerate(names)}
        cards = [model.specs[v].card for v in names]
        factors = []
        for v in names:
            fam = [index[p] for p in model.dag.parents(v)] + [index[v]]
            if v in compact:
                mech = compact[v]
                factors.append(([index[p] for p in mech.parents] + [index[v]],
                                CompactFamily(v, mech, model.specs[v],
                                              {p: model.specs[p].card for p in mech.parents})))
            else:
                factors.append((fam, tables[v]))
        self._setup(names, cards, [index[v] for v in model.dag.topological_order()], factors)
        self.cum = [None if v in compact else np.cumsum(tables[v], axis=-1).reshape(-1, cards[i])
                    for i, v in enumerate(names)]                                      # (configs, K)

    @classmethod
    def from_factors(cls, names: list, cards, factors: list) -> GibbsPlan:
        """A plan over an undirected model: `factors` are ``(variable ints, table)`` (no ancestral sampling)."""
        plan = cls.__new__(cls)
        plan._setup(list(names), list(cards), list(range(len(names))), factors)
        plan.cum = None
        return plan

    def _setup(self, names: list, cards: list, order: list, factors: list) -> None:
        self.names = names
        self.cards = np.array(cards, dtype=np.int64)
        self.order = order
        self.families, self.log_tables, self.strides, self.zeros = [], [], [], []
        self.compact = {}
        for fam, t in factors:
            if isinstance(t, CompactFamily):
                self.compact[len(self.families)] = t
                self.families.append(np.asarray(fam, dtype=np.int64))
                self.log_tables.append(None)
                self.zeros.append(False)
                self.strides.append(None)
                continue
            t = np.asarray(t, dtype=np.float64)
            with np.errstate(divide="ignore"):
                self.log_tables.append(np.log(t).reshape(-1))
            self.families.append(np.asarray(fam, dtype=np.int64))
            self.zeros.append(bool((t == 0).any()))
            self.strides.append(np.array([int(np.prod(t.shape[j + 1:])) for j in range(t.ndim)], dtype=np.int64))
        self.touching = [[] for _ in self.names]
        for owner, fam in enumerate(self.families):
            for i in fam:
                self.touching[i].append(owner)

    def blocks(self, fixed: set) -> list:
        """The update units of a sweep given the `fixed` (observed) variables.

        The free variables of a factor with a zero entry (for a network: the
        node, if free, and its free parents) are sampled jointly when their
        joint table has at most :data:`MAX_BLOCK` states, so a deterministic
        relation such as an OR, observed or not, does not freeze the chain;
        every other free node is its own unit. Units are ordered by their first node
        in topological order.
        """
        free = [i for i in self.order if i not in fixed]
        units, covered = [], set()
        for f in range(len(self.families)):
            if self.zeros[f]:
                members = [int(u) for u in self.families[f] if int(u) not in fixed]
                if len(members) > 1 and np.prod(self.cards[members]) <= MAX_BLOCK:
                    units.append(members)
                    covered.update(members)
        units += [[i] for i in free if i not in covered]
        rank = {i: r for r, i in enumerate(self.order)}
        units.sort(key=lambda u: min(rank[i] for i in u))
        return [self._block(u) for u in units]

    def _block(self, members: list) -> tuple:
        """``(members, states (J, k), [(owner, others, other strides, offsets (J,)), ...])``."""
        members = np.array(members, dtype=np.int64)
        cards = self.cards[members]
        states = np.indices(cards).reshape(len(members), -1).T                           # (J, k)
        entries = []
        for owner in sorted({o for i in members for o in self.touching[i]}):
            fam, st = self.families[owner], self.strides[owner]
            inside = np.isin(fam, members)
            if owner in self.compact:                      # (owner, family positions, block positions, None)
                at = np.flatnonzero(inside)
                entries.append((owner, at, np.array([int(np.flatnonzero(members == u)[0]) for u in fam[at]],
                                                    dtype=np.int64), None))
                continue
            pos = [int(np.flatnonzero(members == u)[0]) for u in fam[inside]]
            offsets = states[:, pos] @ st[inside]                                        # (J,)
            entries.append((owner, fam[~inside], st[~inside], offsets))
        return members, states, entries

    def forward(self, x: np.ndarray, fixed: np.ndarray, u: np.ndarray) -> None:
        """Ancestral sampling into `x` (R, V) in place, keeping the columns where `fixed`; `u` (R, V) uniforms."""
        for i in self.order:
            fam = self.families[i]
            if i in self.compact:
                cum = np.cumsum(self.compact[i].probs(x[:, fam]), axis=1)                 # (R, K)
                draw = (cum < u[:, i:i + 1] * cum[:, -1:]).sum(axis=1)
                x[:, i] = np.where(fixed[:, i], x[:, i], np.minimum(draw, self.cards[i] - 1))
                continue
            row = x[:, fam[:-1]] @ (self.strides[i][:-1] // self.cards[i]) if fam.size > 1 else 0
            cum = self.cum[i][row] if fam.size > 1 else np.broadcast_to(self.cum[i][0], (x.shape[0], self.cards[i]))
            draw = (cum < u[:, i:i + 1] * cum[:, -1:]).sum(axis=1)
            x[:, i] = np.where(fixed[:, i], x[:, i], np.minimum(draw, self.cards[i] - 1))

    def log_joint(self, x: np.ndarray) -> np.ndarray:
        """``log P(x)`` of full assignments `x` (R, V)."""
        out = np.zeros(x.shape[0])
        for i, fam in enumerate(self.families):
            if i in self.compact:
                out += self.compact[i].log_prob(x[:, fam])
            else:
                out += self.log_tables[i][x[:, fam] @ self.strides[i]]
        return out

    def conditional(self, x: np.ndarray, block: tuple) -> np.ndarray:
        """``log P(x_B = j | rest)`` up to a constant, for every joint state j of the block: (R, J)."""
        _, states, entries = block
        R, J = x.shape[0], states.shape[0]
        logits = np.zeros((R, J))
        for owner, others, strides, offsets in entries:
            if offsets is None:                            # a compact family: evaluate it at every block state
                xs = np.repeat(x[:, self.families[owner]], J, axis=0)                  # (R * J, a)
                xs[:, others] = np.tile(states[:, strides], (R, 1))
                logits += self.compact[owner].log_prob(xs).reshape(R, J)
                continue
            base = x[:, others] @ strides if others.size else np.zeros(x.shape[0], dtype=np.int64)
            logits += self.log_tables[owner][base[:, None] + offsets]                    # (R, J)
        return logits


def _initial_state(plan: GibbsPlan, x: np.ndarray, fixed: np.ndarray, soft_log: dict, rng, n: int,
                   chains: int, batched: bool) -> np.ndarray:
    """States of positive probability under the evidence, drawn by likelihood weighting; (R, V)."""
    R, V = x.shape
    done = np.zeros(R, dtype=bool)
    out = x.copy()
    for _ in range(INIT_ROUNDS):
        cand = np.repeat(x, INIT_CANDIDATES, axis=0)                                 # (R * M, V)
        plan.forward(cand, np.repeat(fixed, INIT_CANDIDATES, axis=0), rng.random(cand.shape))
        logw = plan.log_joint(cand)
        for i, sl in soft_log.items():
            logw += np.repeat(sl, INIT_CANDIDATES, axis=0)[np.arange(cand.shape[0]), cand[:, i]]
        logw = logw.reshape(R, INIT_CANDIDATES) + rng.gumbel(size=(R, INIT_CANDIDATES))
        pick = logw.argmax(axis=1)
        ok = np.isfinite(logw[np.arange(R), pick]) & ~done
        out[ok] = cand.reshape(R, INIT_CANDIDATES, V)[np.flatnonzero(ok), pick[ok]]
        done |= ok
        if done.all():
            return out
    bad = ~done.reshape(n, chains).all(axis=1)
    raise EvidenceError(f"Gibbs sampling found no state consistent with the evidence{rows_text(bad, batched)} "
                        f"after {INIT_ROUNDS * INIT_CANDIDATES} forward samples per chain: the evidence has "
                        f"probability zero, or is too rare to start a chain (use method='exact' or 'loopy')")


def gibbs_run(plan: GibbsPlan, x: np.ndarray, blocks: list, soft_log: dict, targets: list, sweeps: int,
              burn_in: int, rng, backend: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Run `burn_in` + `sweeps` sweeps over the update `blocks` from `x` (R, V) in place.

    Uniforms are drawn in chunks of sweeps, ``(chunk, blocks, R)`` at a time,
    and both backends consume them the same way (``"numba"``: the compiled
    sweep of :mod:`causalnet.inference.gibbs_kernel`; ``"numpy"``: this
    module's; ``"auto"``: numba when available).

    Returns
    -------
    draws : ndarray of int, shape (sweeps, R)
        The flat joint state of `targets` after each kept sweep.
    moved : ndarray of bool, shape (R, V)
        Whether each node changed at least once in the kept sweeps.
    """
    R = x.shape[0]
    tcards = plan.cards[targets]
    tstrides = np.array([int(np.prod(tcards[j + 1:])) for j in range(len(targets))], dtype=np.int64)
    draws = np.empty((sweeps, R), dtype=np.int64)
    moved = np.zeros(x.shape, dtype=bool)
    compiled = backend == "numba" or (backend == "auto" and gibbs_kernel.available())
    if compiled:
        soft_vars = sorted(soft_log)
        flat = gibbs_kernel.FlatPlan(plan, blocks, soft_vars)
        soft = np.zeros((len(soft_vars), R, int(plan.cards.max())))
        for j, i in enumerate(soft_vars):
            soft[j, :, :soft_log[i].shape[1]] = soft_log[i]
    total = burn_in + sweeps
    chunk = max(1, min(total, CHUNK_VALUES // max(1, len(blocks) * R)))
    for a in range(0, total, chunk):
        U = rng.random((min(chunk, total - a), len(blocks), R))                     # (S, blocks, R)
        keep_from = min(max(burn_in - a, 0), U.shape[0])
        out = draws[max(a - burn_in, 0):max(a + U.shape[0] - burn_in, 0)]
        if compiled:
            gibbs_kernel.compiled_sweeps(flat, x, U, keep_from, soft, np.asarray(targets, dtype=np.int64),
                                         tstrides, out, moved)
        else:
            _numpy_sweeps(plan, x, blocks, soft_log, U, keep_from, targets, tstrides, out, moved)
    return draws, moved


def _numpy_sweeps(plan, x, blocks, soft_log, U, keep_from, targets, tstrides, draws, moved) -> None:
    """The numpy sweep (vectorised over chains) of the uniforms `U` (S, blocks, R); see :func:`gibbs_run`."""
    for s in range(U.shape[0]):
        for j, block in enumerate(blocks):
            members, states, _ = block
            logits = plan.conditional(x, block)                                      # (R, J)
            for k, i in enumerate(members):
                if i in soft_log:
                    logits += soft_log[i][:, states[:, k]]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            cum = np.cumsum(p, axis=1)
            pick = np.minimum((cum < (U[s, j] * cum[:, -1])[:, None]).sum(axis=1), states.shape[0] - 1)
            new = states[pick]                                                       # (R, k)
            if s >= keep_from:
                moved[:, members] |= new != x[:, members]
            x[:, members] = new
        if s >= keep_from:
            draws[s - keep_from] = x[:, targets] @ tstrides


def integrated_time(z: np.ndarray) -> np.ndarray:
    """Integrated autocorrelation time ``1 + 2 Σ_{t≥1} ρ_t`` of z (..., chains, S), Geyer's initial positive pairs.

    ``ρ_t`` is the autocorrelation averaged over chains (by FFT); pairs
    ``ρ_{2k} + ρ_{2k+1}`` are summed until the first that is not positive.
    A constant series has time 1.
    """
    S = z.shape[-1]
    zc = z - z.mean(axis=-1, keepdims=True)
    f = np.fft.rfft(zc, n=2 * S, axis=-1)
    acov = np.fft.irfft(f * np.conj(f), n=2 * S, axis=-1)[..., :S] / S          # (..., chains, S)
    acov = acov.mean(axis=-2)                                                    # (..., S)
    var = acov[..., :1]
    rho = np.where(var > 0, acov / np.where(var > 0, var, 1.0), 0.0)             # (..., S)
    m = S // 2
    if m == 0:
        return np.ones(rho.shape[:-1])
    pairs = rho[..., :2 * m].reshape(*rho.shape[:-1], m, 2).sum(axis=-1)        # (..., m)
    positive = np.cumprod(pairs > 0, axis=-1).astype(bool)
    tau = -1.0 + 2.0 * np.where(positive, pairs, 0.0).sum(axis=-1)
    return np.where(var[..., 0] > 0, np.maximum(tau, 1e-3), 1.0)


def chain_diagnostics(draws: np.ndarray, C: int) -> dict:
    """Estimates, standard errors, ESS and split R-hat of each joint state's indicator.

    Parameters
    ----------
    draws : ndarray of int, shape (n, chains, S)
    C : int
        Number of joint states.

    Returns
    -------
    dict with ``"probs"``, ``"std_err"``, ``"ess"``, ``"r_hat"``: ndarrays of shape (n, C),
    and ``"stuck"``: bool (n, C), states whose chains never move but disagree.
    """
    n, chains, S = draws.shape
    z = (draws[..., None] == np.arange(C)).astype(np.float64)                    # (n, chains, S, C)
    z = np.moveaxis(z, -1, 1)                                                    # (n, C, chains, S)
    p = z.mean(axis=(-1, -2))                                                    # (n, C)
    half = S // 2
    split = np.concatenate([z[..., :half], z[..., half:2 * half]], axis=-2) if half >= 2 else z
    L = split.shape[-1]
    W = split.var(axis=-1, ddof=1).mean(axis=-1) if L > 1 else np.zeros(p.shape)  # (n, C)
    B = L * split.mean(axis=-1).var(axis=-1, ddof=1) if split.shape[-2] > 1 else np.zeros(p.shape)
    var_plus = (L - 1) / max(L, 1) * W + B / max(L, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_hat = np.where(W > 0, np.sqrt(var_plus / np.where(W > 0, W, 1.0)), np.where(B > 0, np.inf, 1.0))
    tau = integrated_time(z)                                                     # (n, C)
    ess = np.minimum(chains * S / tau, chains * S * np.log10(max(chains * S, 10)))   # cap antithetic overshoot
    se = np.sqrt(np.maximum(p * (1 - p), 0.0) / ess)
    return {"probs": p, "std_err": se, "ess": ess, "r_hat": r_hat, "stuck": (W == 0) & (B > 0)}


class GibbsEngine(Engine):
    """Gibbs sampling on all-discrete models: ``method="gibbs"`` (options ``burn_in``, ``chains``)."""

    name = "gibbs sampling"
    exact = False
    method = "gibbs"
    auto = False
    soft_evidence = True

    def accepts(self, request) -> bool:
        return is_discrete_request(request)

    def answer(self, request) -> DiscreteDistribution:
        m = request.model
        plan = m.cache.get("gibbs_plan")
        if plan is None:
            plan = m.cache["gibbs_plan"] = GibbsPlan(m)
        chains = int(request.options.get("chains", 4))
        n = request.n_rows or 1
        per_row = samples_per_row(request.n_samples, request.n_rows)
        sweeps = -(-per_row // chains)
        burn_in = int(request.options.get("burn_in", max(100, sweeps // 10)))
        R, V = n * chains, plan.cards.size
        limits.check_bytes(8.0 * R * (sweeps + 4 * V), what=f"Gibbs sampling with {sweeps} sweeps of {R} chains",
                           cause=f"{n} rows x {chains} chains", knob="batch_bytes")
        index = {v: i for i, v in enumerate(plan.names)}
        x = np.zeros((R, V), dtype=np.int64)
        fixed = np.zeros((R, V), dtype=bool)
        for k, s in hard_evidence(request).items():
            x[:, index[k]] = np.repeat(np.broadcast_to(s, (n,)), chains)
            fixed[:, index[k]] = True
        with np.errstate(divide="ignore"):
            soft_log = {index[k]: np.repeat(np.log(np.broadcast_to(a, (n, a.shape[-1]))), chains, axis=0)
                        for k, a in request.soft.items()}
        rng = request.rng()
        x = _initial_state(plan, x, fixed, soft_log, rng, n, chains, request.batched)
        free = [i for i in plan.order if not fixed[0, i]]
        names = request.nodes
        targets = [index[t] for t in names]
        blocks = plan.blocks(set(np.flatnonzero(fixed[0]).tolist()))
        draws, moved = gibbs_run(plan, x, blocks, soft_log, targets, sweeps, burn_in, rng)
        check_moving(plan, x, moved, free, n, chains, request.batched)
        cards = [int(plan.cards[t]) for t in targets]
        C = int(np.prod(cards))
        d = chain_diagnostics(draws.T.reshape(n, chains, sweeps), C)
        shape = ((n,) if request.batched else ()) + tuple(cards)
        pick = (lambda a: a.reshape(shape)) if request.batched else (lambda a: a[0].reshape(shape))
        worst = float(np.max(d["r_hat"]))
        method = (f"gibbs sampling ({chains} chains x {sweeps} sweeps after {burn_in} burn-in"
                  f"{' per row' if request.batched else ''}; max R-hat {worst:.3f})")
        return DiscreteDistribution(names, pick(d["probs"]), [m.specs[t].states for t in names],
                                    batched=request.batched, method=method, std_err=pick(d["std_err"]),
                                    diagnostics={"ess": pick(d["ess"]), "r_hat": pick(d["r_hat"]),
                                                 "chains": chains, "sweeps": sweeps, "burn_in": burn_in})


def check_moving(plan: GibbsPlan, x: np.ndarray, moved: np.ndarray, free: list, n: int, chains: int,
                  batched: bool) -> None:
    """ModelError when a node never moves in any chain of a row but the chains hold different values."""
    if chains < 2:
        return
    xs = x.reshape(n, chains, -1)
    still = ~moved.reshape(n, chains, -1).any(axis=1)                             # (n, V)
    differ = (xs != xs[:, :1]).any(axis=1)                                        # (n, V)
    stuck = still & differ
    stuck[:, [i for i in range(x.shape[1]) if i not in set(free)]] = False
    if stuck.any():
        i = int(np.flatnonzero(stuck.any(axis=0))[0])
        raise ModelError(f"the Gibbs chains cannot move: {plan.names[i]!r} never changes in any chain but the "
                         f"chains hold different values{rows_text(stuck.any(axis=1), batched)} (deterministic "
                         f"relations cut the state space into pieces Gibbs cannot cross); use method='exact', "
                         f"'loopy' or 'importance'")
