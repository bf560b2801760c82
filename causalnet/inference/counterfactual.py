"""Counterfactuals: abduction, action, prediction.

``P(Y_{do} | e)``: infer the exogenous noise from the evidence (abduction),
replace the intervened mechanisms (action), and run the model again with the
same noise (prediction). Three exact routes and one sampled route:

* **Discrete** nodes use the monotone inverse-CDF SCM: ``u ~ U(0, 1)``,
  ``x = min{k : u < F(k | pa)}``. Cutting [0, 1] at every CDF breakpoint of
  every parent configuration makes ``u`` a discrete variable with finitely
  many intervals, on each of which the node is a fixed function of its
  parents. A *twin network* — factual nodes and counterfactual copies of the
  intervened nodes' descendants sharing those interval variables — is then an
  ordinary discrete network, solved exactly by variable elimination.
  The same construction serves any number of worlds (a *multi-world
  network*: ``P(Y_{X=1}=1, Y_{X=0}=0)``, the probability of necessity and
  sufficiency) and nested ones (``Y_{X=1, M=M_{X=0}}``: the copy of M in the
  first world is the copy of M in the second).
* **Linear-Gaussian** models: every world is affine in the same Gaussian
  noise, so all worlds together are one joint Gaussian; conditioning it is
  exact. A nested intervention adds the node's total effect times its
  affine form in the other world.
* **Additive-noise** nodes (``x = f(pa) + u``) whose noise the evidence
  determines abduct exactly (``u = x − f(pa)``), giving a point answer.
* Otherwise the noise posterior is sampled (likelihood weighting with each
  observed node's noise drawn from its posterior) and replayed; the result
  states its method and carries standard errors.

References
----------
.. [1] J. Pearl, *Causality*, 2nd ed., ch. 7 (2009).
.. [2] A. Balke, J. Pearl, "Probabilistic evaluation of counterfactual
       queries", AAAI 1994 (twin networks).
.. [3] M. Oberst, D. Sontag, "Counterfactual off-policy evaluation with
       Gumbel-max structural causal models", ICML 2019 (monotonicity of
       SCMs for discrete counterfactuals).
.. [4] J. Tian, J. Pearl, "Probabilities of causation: bounds and
       identification", 2000.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian
from ..errors import CausalNetError, EvidenceError, ModelError, NumericalError
from ..graph.dag import DAG
from ..mechanisms.base import DISCRETE
from ..mechanisms.intervened import Intervened
from ..mechanisms.tabular import Tabular
from ..values import decode_states
from .discrete import DiscreteBN, embed_point_masses, model_tables, shift_map
from .engine import Engine, NoExactAnswer
from .gaussian import affine_form, condition, is_linear_gaussian
from .request import COUNTERFACTUAL, FACTUAL, label
from .sampling import likelihood_weighting, normalise, samples_per_row, summarise
from .soft import METHOD_JOINT as SOFT_JOINT
from .soft import soft_query

__all__ = [
    "WorldCopies",
    "DiscreteTwinEngine",
    "GaussianTwinEngine",
    "AdditiveNoiseEngine",
    "SampledCounterfactualEngine",
    "noise_intervals",
    "probability_of_necessity",
    "probability_of_sufficiency",
    "tian_pearl_bounds",
    "SCM_DISCRETE",
    "SCM_GAUSSIAN",
    "SCM_ADDITIVE",
]

SCM_DISCRETE = "monotone inverse-CDF SCM: u ~ U(0,1), x = min{k : u < F(k | pa)}"
SCM_GAUSSIAN = "linear-Gaussian SCM: x = b + w·pa + sigma·u, u ~ N(0,1)"
SCM_ADDITIVE = "additive-noise SCM: x = f(pa) + u (u abducted from the evidence)"


# -- the discrete twin network ---------------------------------------------------------


def exact_cdf(table: np.ndarray) -> np.ndarray:
    """Row CDFs ``F(k | pa)`` of a CPT, exact at the boundaries: monotone, in [0, 1], and exactly 1
    from the last state of positive probability on (a row ending in zeros never leaves a sliver of
    ``u`` to a state of probability zero)."""
    cdf = np.clip(np.cumsum(table, axis=-1), 0.0, 1.0)
    tail = np.cumsum(table[..., ::-1], axis=-1)[..., ::-1]              # P(x >= k | pa)
    after = np.concatenate([tail[..., 1:], np.zeros(table.shape[:-1] + (1,))], axis=-1)   # P(x > k | pa)
    cdf = np.where(after <= 0.0, 1.0, cdf)
    return np.maximum.accumulate(cdf, axis=-1)


def noise_intervals(table: np.ndarray, node: Hashable = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exogenous ``u`` of a CPT as a discrete variable.

    The intervals are counted first and the tables they need (the comparison behind
    ``states``, ``states`` itself and the twin network's one-hot CPT of ``(*pa, m, K)``
    float64 entries) are sized against
    ``causalnet.limits`` ``max_table_bytes`` before anything of that size is allocated.

    Returns
    -------
    cuts : ndarray of shape (m + 1,)
        ``0 = b_0 < b_1 < ... < b_m = 1``: every CDF value of every row.
    weights : ndarray of shape (m,)
        Interval lengths (the probabilities of the m values of ``u``).
    states : ndarray of shape (*pa, m)
        The node's state on each interval for each parent configuration:
        ``#{k : F(k | pa) <= b_j}`` on ``[b_j, b_{j+1})`` — read at the left
        end, so no midpoint rounding can pick a state past the last one.

    Raises
    ------
    ResourceError
        If those tables would exceed ``max_table_bytes`` (the message names `node`).
    """
    cdf = exact_cdf(table)
    cuts = np.unique(np.concatenate([[0.0, 1.0], cdf.ravel()]))
    lo = cuts[:-1]
    K = table.shape[-1]
    rows = float(np.prod(table.shape[:-1], dtype=np.float64))
    cells = rows * len(lo)
    # the comparison (bool, K per cell), the states (int64) and the twin's one-hot CPT (float64, K per cell)
    limits.check_bytes(cells * (9.0 * K + 8.0), what=f"the twin-network tables of {node!r} (its noise cells)",
                       cause=f"{rows:.0f} parent configurations x {len(lo)} noise intervals = {cells:.0f} cells of "
                             f"{9 * K + 8} bytes ({K} states): a CPT of {table.size} entries, memory grows with the "
                             f"square of the CPT size")
    states = (cdf[..., None, :] <= lo[:, None]).sum(axis=-1)             # (*pa, m)
    return cuts, np.diff(cuts), np.minimum(states, table.shape[-1] - 1)


class _Twin:
    """A twin network under construction: internal node -> (table, parents, card), and readable names."""

    def __init__(self) -> None:
        self.tables: dict = {}
        self.parents: dict = {}
        self.cards: dict = {}
        self.display: dict = {}

    def add(self, name: str, table: np.ndarray, parents: list, card: int, display: str) -> None:
        self.tables[name] = table
        self.parents[name] = parents
        self.cards[name] = card
        self.display[name] = display

    def network(self) -> DiscreteBN:
        edges = [(p, c) for c, ps in self.parents.items() for p in ps]
        dag = DAG(edges, nodes=list(self.tables))
        cpts = {}
        for node, t in self.tables.items():
            declared = self.parents[node]
            want = list(dag.parents(node))
            if declared != want:
                t = np.transpose(t, [declared.index(p) for p in want] + [len(declared)])
            cpts[node] = np.ascontiguousarray(t, dtype=np.float64)
        return DiscreteBN(dag, cpts, self.cards)

    def readable(self, e: CausalNetError) -> CausalNetError:
        """The same error with internal twin names replaced by the user's node names."""
        text = str(e)
        for name in sorted(self.display, key=len, reverse=True):
            text = re.sub(rf"'{re.escape(name)}'", repr(self.display[name]), text)
        return type(e)(text)


class WorldCopies:
    """The twin networks' bookkeeping: one copy of each node per world that changes it, named on first use.

    A node keeps its factual copy in every world whose interventions do not
    reach it (``changed[world]``: the intervened nodes and their descendants).
    :meth:`name` gives a copy's internal name (``f{i}`` factual, ``{world}_{i}``
    changed, ``i`` the node's topological index) and builds it, with its
    ancestors, the first time it is named, through the subclass's
    ``_factual(v)`` and ``_changed(world, v)``. Used by the discrete and the
    conditional-Gaussian twin engines.
    """

    def __init__(self, request) -> None:
        self.request = request
        self.dag = request.model.dag
        self.order = {v: i for i, v in enumerate(self.dag.topological_order())}
        self.changed = {key: (w.intervened | set(self.dag.descendants(w.intervened))) if w.intervened else set()
                        for key, w in request.worlds.items()}
        self.names: dict = {}

    def name(self, world: str, v) -> str:
        """The internal name of node `v` in `world`, built (with its ancestors) on first use."""
        if v not in self.changed[world]:
            world = FACTUAL
        key = (world, v)
        if key not in self.names:
            i = self.order[v]
            self.names[key] = f"f{i}" if world == FACTUAL else f"{world}_{i}"
            if world == FACTUAL:
                self._factual(v)
            else:
                self._changed(world, v)
        return self.names[key]

    def runs_natural_copy(self, v, *, skip_nested: bool = False) -> bool:
        """Whether a world other than the factual one changes `v` and runs its natural (possibly shifted)
        mechanism there, so that the copies must share `v`'s noise (`skip_nested`: copies set to a node of
        another world do not count)."""
        for key, w in self.request.worlds.items():
            if key != FACTUAL and v in self.changed[key] and not (skip_nested and v in w.nested):
                mech = w.model.mechanisms[v]
                if not (isinstance(mech, Intervened) and not mech.is_shift):
                    return True
        return False


class _MultiWorld(WorldCopies):
    """The discrete network of a counterfactual request: one copy of each node per world that changes it.

    A node keeps its factual copy in every world whose interventions do not
    reach it. A changed copy is, in its world, a constant (``do``), a copy of
    the node in another world (nested), or its natural mechanism — possibly
    shifted — as a deterministic function of its parents *in that world* and
    of the shared noise ``U_v`` (the CDF intervals of its factual table), so
    that every world reuses the same exogenous value. Copies are built on
    demand, from the targets and the evidence up to their ancestors.
    """

    def __init__(self, request) -> None:
        super().__init__(request)
        self.tables = {}                       # world key -> (cpts, cards, row_evidence) of its model
        for key, w in request.worlds.items():
            tables = model_tables(w.model)
            if key == FACTUAL and tables[2]:
                raise ModelError("per-row interventions in the factual world are not supported in a counterfactual")
            self.tables[key] = tables
        self.twin = _Twin()
        self.evidence: dict = {}               # internal name -> per-row states of per-row do copies
        self.u: dict = {}

    def _shares_noise(self, v) -> bool:
        """Whether `v` has parents and a copy, besides the factual one, that runs its natural mechanism."""
        return bool(self.dag.parents(v)) and self.runs_natural_copy(v, skip_nested=True)

    def _factual(self, v) -> None:
        cpts, cards, _ = self.tables[FACTUAL]
        K = cards[v]
        parents = [self.name(FACTUAL, p) for p in self.dag.parents(v)]
        if self._shares_noise(v):
            self.twin.add(self.names[(FACTUAL, v)], np.eye(K)[self._noise(v)], parents + [self.u[v]], K, v)
        else:
            self.twin.add(self.names[(FACTUAL, v)], cpts[v], parents, K, v)

    def _noise(self, v) -> np.ndarray:
        """The natural states of `v` on each noise interval, ``(*pa, m)``; adds the node ``U_v`` once."""
        table = self.tables[FACTUAL][0][v]
        cuts, weights, natural = noise_intervals(table, v)              # natural: (*pa, m)
        if v not in self.u:
            self.u[v] = f"u{self.order[v]}"
            self.twin.add(self.u[v], weights, [], len(weights), f"U_{v}")
        return natural

    def _changed(self, world: str, v) -> None:
        w = self.request.worlds[world]
        cpts, cards, row_evidence = self.tables[world]
        K = cards[v]
        name = self.names[(world, v)]
        disp = self.request.label((world, v))
        mech = w.model.mechanisms[v]
        if v in w.nested:                                                # M := M in another world
            self.twin.add(name, np.eye(K), [self.name(*w.nested[v])], K, disp)
        elif isinstance(mech, Intervened) and not mech.is_shift:        # do: a constant or per-row root
            self.twin.add(name, cpts[v], [], K, disp)
            if v in row_evidence:
                self.evidence[name] = row_evidence[v]
        elif self.dag.parents(v):                                        # natural (or shifted), shared U_v
            natural = self._noise(v)
            states = shift_map(v, mech, K)[natural] if isinstance(mech, Intervened) else natural
            parents = [self.name(world, p) for p in self.dag.parents(v)]
            self.twin.add(name, np.eye(K)[states], parents + [self.u[v]], K, disp)
        else:                                                            # a shifted root: f(factual value)
            self.twin.add(name, np.eye(K)[shift_map(v, mech, K)], [self.name(FACTUAL, v)], K, disp)

    def observe(self) -> dict:
        """Engine evidence: per-row do copies and the request's evidence on the internal names."""
        observed: dict = {}
        for (w, v), a in self.request.evidence.items():
            key = self.name(w, v)
            if key in self.evidence:
                raise EvidenceError(f"{v!r} is observed in the counterfactual world where it is set by do")
            if key in observed and not np.array_equal(observed[key], a):
                raise EvidenceError(f"{v!r} is observed with different values in two worlds, but the "
                                    f"intervention does not change it: the evidence is impossible")
            observed[key] = a
        return {**self.evidence, **{k: (int(a) if np.ndim(a) == 0 else a) for k, a in observed.items()}}


def _discrete_twin(request) -> DiscreteDistribution:
    mw = _MultiWorld(request)
    tnames = [mw.name(w, v) for w, v in request.targets]
    evidence = mw.observe()
    free = [t for t in dict.fromkeys(tnames) if t not in evidence]
    soft = {mw.name(FACTUAL, v): lik for v, lik in request.soft.items()}   # on the factual world's nodes
    method = "variable elimination"
    try:
        bn = mw.twin.network()
        idx, n = bn.index_evidence(evidence)                             # validated by the request
        if soft:
            pf, how = soft_query(bn, free, soft, idx, n)
            method += ", soft evidence" + (" weighing the joint" if how == SOFT_JOINT else " as virtual children")
        else:
            pf, _ = bn.query_indices(bn.target_indices(free), idx, n)   # checks P(e) > 0
    except CausalNetError as e:
        raise mw.twin.readable(e) from None
    model = request.model
    cards = [mw.tables[FACTUAL][1][v] for _, v in request.targets]
    probs = embed_point_masses(pf, free, tnames, evidence, cards, request.n_rows)
    kind = "multi-world network" if request.is_multiworld else "twin network"
    return DiscreteDistribution(request.labels, probs, [model.specs[v].states for _, v in request.targets],
                                batched=request.batched, method=f"exact ({kind}, {method})",
                                scm=SCM_DISCRETE)


class DiscreteTwinEngine(Engine):
    """Exact counterfactuals on all-discrete models: the twin network under the monotone inverse-CDF SCM."""

    name = "discrete twin network"
    soft_evidence = True

    def accepts(self, request) -> bool:
        # compact mechanisms (noisy-OR, logistic) carry their own noise: their counterfactuals are not the
        # inverse-CDF SCM of their tables, so the sampled engine answers them
        if any(getattr(m, "structural_noise", False) for m in request.model.mechanisms.values()):
            return False
        return request.is_counterfactual and all(model_tables(w.model) is not None
                                                 for w in request.worlds.values())

    def answer(self, request):
        return _discrete_twin(request)


# -- the Gaussian twin ------------------------------------------------------------------------


def _reordered(form, nodes: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(c, M)`` of an affine form with rows and noise columns in the order of `nodes`."""
    idx = [form.index[v] for v in nodes]
    return form.c[..., idx], form.M[idx][:, idx]


def _world_forms(request) -> dict:
    """world key -> ``(c, M)``: every world's nodes as affine forms in the *same* noise ``u``.

    A world that sets ``M`` to its value in world ``w'`` is its model with
    ``M := 0`` plus, for each such node, the total effect of ``M`` (the change
    of every node when ``M`` goes from 0 to 1 in that world) times ``M``'s
    affine form in ``w'``: exact, because every world is affine.
    """
    nodes = affine_form(request.model).nodes
    forms: dict = {}

    def form(key):
        if key in forms:
            return forms[key]
        w = request.worlds[key]
        zero = {m: 0.0 for m in w.nested}
        c, M = _reordered(affine_form(w.model.do(zero) if zero else w.model), nodes)
        for m, (other, _) in w.nested.items():
            c1, _ = _reordered(affine_form(w.model.do({**zero, m: 1.0})), nodes)
            effect = c1 - c                                    # (..., d): total effect of m in this world
            if effect.ndim > 1:                                # the same in every row: the model is linear
                effect = effect[0]                             # (d,)
            co, Mo = form(other)
            j = nodes.index(m)
            c = c + effect * co[..., j:j + 1]                  # (..., d)
            M = M + np.outer(effect, Mo[j])                    # (d, d)
        forms[key] = (c, M)
        return forms[key]

    for key in request.worlds:
        form(key)
    return forms


class GaussianTwinEngine(Engine):
    """Exact counterfactuals on linear-Gaussian models, over any number of worlds (constant, per-row,
    affine and nested interventions): one joint Gaussian of every world's copy of every node."""

    name = "Gaussian twin"

    def accepts(self, request) -> bool:
        return request.is_counterfactual and all(is_linear_gaussian(w.model) for w in request.worlds.values())

    def answer(self, request) -> Gaussian:
        with np.errstate(all="ignore"):
            forms = _world_forms(request)
        keys = list(forms)
        d = forms[FACTUAL][1].shape[0]
        nodes = affine_form(request.model).nodes
        n = request.n_rows
        cs = [forms[k][0] for k in keys]
        if n is not None or any(c.ndim > 1 for c in cs):
            rows = n if n is not None else next(c.shape[0] for c in cs if c.ndim > 1)
            cs = [np.broadcast_to(c, (rows, d)) for c in cs]
        mean = np.concatenate(cs, axis=-1)                       # (..., W d)
        Mj = np.concatenate([forms[k][1] for k in keys], axis=0)  # (W d, d)
        with np.errstate(all="ignore"):
            cov = Mj @ Mj.T                                      # (W d, W d)
        key = {(k, v): a * d + i for a, k in enumerate(keys) for i, v in enumerate(nodes)}
        obs = list(request.evidence)
        vals = [np.asarray(request.evidence[k], dtype=np.float64) for k in obs]
        if mean.ndim > 1:
            vals = [np.broadcast_to(v, mean.shape[:1]) for v in vals]
        values = np.stack(vals, axis=-1) if vals else np.zeros(mean.shape[:-1] + (0,))
        with np.errstate(all="ignore"):
            m, S, _ = condition(mean, cov, [key[k] for k in obs], values, [request.label(k) for k in obs])
        ti = [key[t] for t in request.targets]
        if not (np.all(np.isfinite(m[..., ti])) and np.all(np.isfinite(S[np.ix_(ti, ti)]))):
            raise NumericalError(f"the twin joint Gaussian of {request.labels} overflows float64 (values too large)")
        kind = "multi-world joint Gaussian" if request.is_multiworld else "twin joint Gaussian"
        return Gaussian(request.labels, m[..., ti], S[np.ix_(ti, ti)], batched=mean.ndim > 1,
                        method=f"exact ({kind})", scm=SCM_GAUSSIAN)


# -- additive noise, abducted exactly -----------------------------------------------------------


def _abductable(request) -> list | None:
    """The nodes whose noise the counterfactual reuses, when the evidence determines it; else None."""
    model, cf_model = request.model, request.cf_model
    obs = {v for _, v in request.evidence}
    need = set()
    for w, v in request.targets:
        need |= (cf_model if w == COUNTERFACTUAL else model).dag.ancestors(v, include_self=True)
    noisy = []
    for v in need:
        mech, cf_mech = model.mechanisms[v], cf_model.mechanisms[v]
        if not cf_mech.deterministic or (isinstance(cf_mech, Intervened) and cf_mech.is_shift
                                         and not mech.deterministic):
            if v not in obs or not mech.can_abduct or isinstance(mech, Tabular):
                return None
            noisy.append(v)
    # abducting a node needs its parents' factual values: every stochastic ancestor must be observed
    stochastic = [v for v in need if not model.mechanisms[v].deterministic]
    if any(not model.mechanisms[a].deterministic and a not in obs for a in model.dag.ancestors(stochastic)):
        return None
    return noisy


class AdditiveNoiseEngine(Engine):
    """Exact counterfactuals when the factual evidence fixes every noise the targets depend on."""

    name = "additive-noise abduction"

    def accepts(self, request) -> bool:
        if not request.is_counterfactual or request.is_multiworld:
            return False
        if any(w == COUNTERFACTUAL for w, _ in request.evidence):
            return False
        return not all(request.model.specs[v].kind == DISCRETE for v in request.nodes)

    def answer(self, request) -> EmpiricalDistribution:
        noisy = _abductable(request)
        if noisy is None:
            raise NoExactAnswer("the evidence does not determine the noise the targets depend on")
        model, cf_model = request.model, request.cf_model
        n_rows = request.n_rows
        n = n_rows or 1
        rng = np.random.default_rng(0)         # noise of nodes the targets do not depend on: irrelevant
        fvals = {v: (a if np.ndim(a) == len(model.specs[v].shape) + 1 else np.broadcast_to(a, (n, *np.shape(a))))
                 for (_, v), a in request.evidence.items()}
        trace, _, _ = likelihood_weighting(model, {}, n, 1, rng, clamped=fvals)
        noise = {v: model.mechanisms[v].abduct(v, trace[v], {p: trace[p] for p in model.mechanisms[v].parents},
                                               model.specs[v]) for v in noisy}
        cf, _, _ = likelihood_weighting(cf_model, {}, n, 1, rng, clamped=request.row_do, noise=noise)
        samples = {}
        for w, v in request.targets:
            arr = (cf if w == COUNTERFACTUAL else trace)[v]
            samples[label((w, v))] = arr[:, None, ...] if n_rows else arr[:1]
        weights = np.ones((n, 1)) if n_rows else np.ones(1)
        return EmpiricalDistribution(request.labels, samples, weights, batched=n_rows is not None,
                                     method="exact (abduction of additive noise)", scm=SCM_ADDITIVE)


# -- sampled route --------------------------------------------------------------------------------


class SampledCounterfactualEngine(Engine):
    """Likelihood weighting over the noise posterior, replayed in the counterfactual world.

    Soft evidence on a factual node weighs each draw by the likelihood of the
    node's factual value (Pearl's virtual evidence), which is how models with
    compact mechanisms (whose own noise the twin network does not represent)
    get soft-evidence counterfactuals.
    """

    name = "sampled counterfactual"
    exact = False
    soft_evidence = True

    def accepts(self, request) -> bool:
        return request.is_counterfactual

    def answer(self, request):
        if request.is_multiworld:
            raise ModelError(f"counterfactuals across several worlds ({', '.join(map(str, request.labels))}) are "
                             f"answered exactly on discrete and linear-Gaussian models only; this model is "
                             f"neither, or method='sampling' was asked")
        model, cf_model = request.model, request.cf_model
        rng = request.rng()
        n_rows = request.n_rows
        rows = n_rows or 1
        m = samples_per_row(request.n_samples, n_rows)
        f_ev = {v: a for (w, v), a in request.evidence.items() if w == FACTUAL}
        c_ev = {v: a for (w, v), a in request.evidence.items() if w == COUNTERFACTUAL}
        batched = {v for v, a in f_ev.items() if np.ndim(a) == len(model.specs[v].shape) + 1}
        fvals, log_w, noise = likelihood_weighting(model, f_ev, rows, m, rng, batched_nodes=batched,
                                                   keep_noise=True)
        cf_noise = {k: u for k, u in noise.items() if k in cf_model.nodes}
        cf, _, _ = likelihood_weighting(cf_model, {}, rows, m, rng, clamped=request.row_do, noise=cf_noise)
        N = rows * m
        for v, a in c_ev.items():
            if model.specs[v].kind != DISCRETE:
                raise EvidenceError(f"evidence on the counterfactual continuous node {v!r} cannot be weighted by "
                                    f"sampling")
            want = np.repeat(a, m) if np.ndim(a) else np.full(N, int(a))
            log_w = log_w + np.where(cf[v] == want, 0.0, -np.inf)
        log_w = log_w + _soft_log_weights(request.soft, fvals, rows, m)
        if np.any(np.all(np.isneginf(log_w.reshape(rows, m)), axis=1)):
            raise EvidenceError("no sample is consistent with the evidence in both worlds (impossible, or too rare)")
        w = normalise(log_w, rows, m)
        columns = {label(t): (cf if t[0] == COUNTERFACTUAL else fvals)[t[1]] for t in request.targets}
        method = f"likelihood weighting over the noise posterior ({m} samples{' per row' if n_rows else ''})"
        states = [model.specs[v].states if model.specs[v].kind == DISCRETE else None for v in request.nodes]
        return summarise(request.labels, states, columns, w, n_rows, method, scm=SCM_DISCRETE + "; " + SCM_ADDITIVE)


def _soft_log_weights(soft: dict, values: dict, rows: int, m: int) -> np.ndarray | float:
    """``Σ_k log L_k(value_k)`` per draw (rows * m,), likelihoods scaled to a maximum of 1; 0.0 without soft evidence."""
    total = 0.0
    for k, lik in soft.items():
        lik = np.asarray(lik, dtype=np.float64)
        lik = lik / lik.max(axis=-1, keepdims=True)                              # (K,) or (rows, K)
        per_draw = np.repeat(np.broadcast_to(lik, (rows, lik.shape[-1])), m, axis=0)   # (rows * m, K)
        with np.errstate(divide="ignore"):
            total = total + np.log(per_draw[np.arange(rows * m), np.asarray(values[k], dtype=np.int64)])
    return total


# -- probabilities of causation --------------------------------------------------------------


def _state(model, node, s):
    return int(decode_states(node, model.states(node), s))


def probability_of_necessity(model, treatment: Hashable, outcome: Hashable, *, exposed, unexposed, outcome_state):
    """PN = P(Y_{X=x'} ≠ y | X = x, Y = y): would the outcome have been absent without exposure?

    Parameters
    ----------
    model : CausalModel (discrete)
    treatment, outcome : nodes X and Y
    exposed, unexposed : states x and x' of X
    outcome_state : the state y of Y that occurred

    Returns
    -------
    float
        Exact under the monotone inverse-CDF SCM (twin network).
    """
    y = _state(model, outcome, outcome_state)
    d = model.counterfactual(outcome, evidence={treatment: exposed, outcome: outcome_state},
                             do={treatment: unexposed})
    return float(1.0 - d.probs[y])


def probability_of_sufficiency(model, treatment: Hashable, outcome: Hashable, *, exposed, unexposed, outcome_state):
    """PS = P(Y_{X=x} = y | X = x', Y ≠ y): would exposure have produced the outcome?

    Evidence "Y ≠ y" is handled exactly by summing the twin-network joint
    over the other states of Y.
    """
    y = _state(model, outcome, outcome_state)
    K = len(model.states(outcome))
    num = 0.0
    den = 0.0
    for other in range(K):
        if other == y:
            continue
        f = model.query([treatment, outcome])
        p_ev = f[(unexposed, model.states(outcome)[other])]
        if p_ev == 0:
            continue
        d = model.counterfactual(outcome, evidence={treatment: unexposed, outcome: other}, do={treatment: exposed})
        num += p_ev * d.probs[y]
        den += p_ev
    if den == 0:
        raise EvidenceError(f"P({treatment}={unexposed!r}, {outcome}≠{outcome_state!r}) = 0: PS is undefined")
    return float(num / den)


def tian_pearl_bounds(model, treatment: Hashable, outcome: Hashable, *, exposed, unexposed, outcome_state) -> dict:
    """Tian–Pearl (2000) bounds on PN and PS from observational and interventional data.

    Returns
    -------
    dict with keys ``"PN"`` and ``"PS"``, each a ``(lower, upper)`` pair.
    """
    X, Y = treatment, outcome
    ys = model.states(Y)
    y = ys[_state(model, Y, outcome_state)]
    joint = model.query([X, Y])
    p_xy = joint[(exposed, y)]
    p_x1y = joint[(unexposed, y)]
    p_y = model.query(Y)[y]
    p_y_do_x = model.query(Y, do={X: exposed})[y]
    p_y_do_x1 = model.query(Y, do={X: unexposed})[y]
    p_x1_noty = model.query(X)[unexposed] - p_x1y
    out = {}
    if p_xy > 0:
        lo = max(0.0, (p_y - p_y_do_x1) / p_xy)
        hi = min(1.0, ((1 - p_y_do_x1) - p_x1_noty) / p_xy)
        out["PN"] = (lo, hi)
    if p_x1_noty > 0:
        lo = max(0.0, (p_y_do_x - p_y) / p_x1_noty)
        hi = min(1.0, (p_y_do_x - p_xy) / p_x1_noty)
        out["PS"] = (lo, hi)
    return out

