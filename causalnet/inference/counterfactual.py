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
* **Linear-Gaussian** models: both worlds are affine in the same Gaussian
  noise, so the twin is one joint Gaussian; conditioning it is exact.
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

from collections.abc import Hashable, Sequence

import numpy as np

from ..distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian
from ..errors import EvidenceError, ModelError
from ..graph.dag import DAG
from ..mechanisms.base import DISCRETE, as_generator
from ..queries import Query, Term

__all__ = [
    "run_counterfactual",
    "run_counterfactual_query",
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


def run_counterfactual(model, targets, *, evidence=None, do=None, method="auto", n_samples=100_000, seed=None):
    """Keyword form: `targets` in the world ``do``, `evidence` factual (see CausalModel.counterfactual)."""
    if isinstance(targets, str) and "(" in targets:
        from .dispatch import normalise_request

        q = normalise_request(model, targets, evidence, None)
        if do:
            raise EvidenceError("give the intervention either in the query string or in do=, not both")
        return run_counterfactual_query(model, q, method=method, n_samples=n_samples, seed=seed)
    if not do:
        raise EvidenceError("a counterfactual needs an intervention: do={node: value}")
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Sequence):
        targets = [targets]
    world = tuple(do.items())
    q = Query([Term(t, world) for t in targets], [Term(k, None, v) for k, v in (evidence or {}).items()], {})
    return run_counterfactual_query(model, q, method=method, n_samples=n_samples, seed=seed)


def run_counterfactual_query(model, q: Query, *, method="auto", n_samples=100_000, seed=None):
    """Answer a parsed query whose terms may carry worlds (``Y_{X=0}``)."""
    if q.do:
        raise EvidenceError("a counterfactual query cannot also contain do(...) outside the subscripts; "
                            "put the intervention in the subscript, e.g. P(Y_{X=0} | X=1)")
    worlds = {t.world for t in q.targets + q.evidence if t.world is not None}
    if len(worlds) > 1:
        raise EvidenceError(f"counterfactual terms must share one world; got {len(worlds)}: "
                            f"{[dict(w) for w in worlds]}")
    world = dict(next(iter(worlds))) if worlds else {}
    for k in world:
        model._check_node(k, "intervened node", EvidenceError)
    # twin names: ("f", v) factual, ("c", v) counterfactual
    targets = [(("c" if t.world else "f"), t.name) for t in q.targets]
    seen = set()
    for t in targets:
        model._check_node(t[1], "target", EvidenceError)
        if t in seen:
            raise EvidenceError(f"target {t[1]!r} is listed twice")
        seen.add(t)
    ev_raw: dict = {}
    for t in q.evidence:
        key = ("c" if t.world else "f", t.name)
        model._check_node(t.name, "evidence node", EvidenceError)
        if key in ev_raw:
            raise EvidenceError(f"evidence on {t.name!r} is given twice")
        ev_raw[key] = t.value
    if set(targets) & set(ev_raw):
        raise EvidenceError(f"{sorted(str(k[1]) for k in set(targets) & set(ev_raw))} are both targets and evidence")
    ev = {}
    for key, v in ev_raw.items():
        ev[key] = model._coerce(key[1], v, EvidenceError)
    rows = {k: a.shape[0] for k, a in ev.items() if a.ndim == len(model.specs[k[1]].shape) + 1}
    if len(set(rows.values())) > 1:
        raise EvidenceError(f"evidence arrays have different lengths: {rows}")
    n_rows = next(iter(rows.values())) if rows else None
    cf_model = model.do(world) if world else model
    values = [t.value for t in q.targets]

    dist = None
    if method in ("auto", "exact"):
        dist = _exact(model, cf_model, world, targets, ev, n_rows)
        if dist is None and method == "exact":
            raise ModelError("no exact counterfactual engine applies (exact: discrete, linear-Gaussian, and "
                             "additive-noise nodes whose noise the evidence determines); use method='sampling'")
    if dist is None:
        dist = _sampled(model, cf_model, targets, ev, n_rows, n_samples, seed)
    if values[0] is None:
        return dist
    if not isinstance(dist, DiscreteDistribution):
        raise EvidenceError("P(target=value) needs discrete targets")
    return dist[tuple(values) if len(values) > 1 else values[0]]


def _names(targets) -> list:
    return [v if w == "f" else f"{v}*" if isinstance(v, str) else (v, "*") for w, v in targets]


# -- exact engines -----------------------------------------------------------------


def _exact(model, cf_model, world, targets, ev, n_rows):
    from .dispatch import discrete_network

    if discrete_network(model) is not None and discrete_network(cf_model) is not None:
        return _discrete_twin(model, cf_model, world, targets, ev, n_rows)
    from .gaussian import is_linear_gaussian

    if is_linear_gaussian(model) and is_linear_gaussian(cf_model):
        return _gaussian_twin(model, cf_model, targets, ev)
    return _point_abduction(model, cf_model, targets, ev, n_rows)


def _intervals(cdf: np.ndarray) -> np.ndarray:
    """Breakpoints 0 = b_0 < b_1 < ... < b_m = 1 cutting [0, 1] at every CDF value."""
    cuts = np.unique(np.concatenate([[0.0, 1.0], np.clip(cdf.ravel(), 0.0, 1.0)]))
    return cuts


def _state_at(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF state for every parent configuration and every u: (*pa, m)."""
    return (u[..., None] >= cdf[..., None, :]).sum(axis=-1)      # (*pa, m)


def _discrete_twin(model, cf_model, world, targets, ev, n_rows):
    from ..mechanisms.intervened import Intervened
    from .dispatch import discrete_network, shift_map
    from .elimination import DiscreteBN

    cpts_f, cards, row_f = discrete_network(model)
    cpts_c, _, row_c = discrete_network(cf_model)
    dag = model.dag
    order = dag.topological_order()
    pos = {v: i for i, v in enumerate(order)}
    changed = set(world) | set(dag.descendants(set(world))) if world else set()
    names: dict = {}                      # (world, v) -> internal name
    for v in order:
        names[("f", v)] = f"f{pos[v]}"
        names[("c", v)] = f"c{pos[v]}" if v in changed else f"f{pos[v]}"
    tables: dict = {}
    parents: dict = {}
    tcards: dict = {}
    evidence: dict = {}
    for v in order:
        K = cards[v]
        f_name = names[("f", v)]
        pa = list(dag.parents(v))
        if v not in changed:
            tables[f_name] = cpts_f[v]
            parents[f_name] = [names[("f", p)] for p in pa]
            tcards[f_name] = K
            continue
        mech_c = cf_model.mechanisms[v]
        c_name = names[("c", v)]
        shared_u = not (isinstance(mech_c, Intervened) and not mech_c.is_shift)
        if shared_u and pa:
            # factual and counterfactual copies as functions of (parents, U_v), U_v over the CDF
            # intervals; a shift applies its function to the natural value drawn with the same u
            cdf = np.cumsum(cpts_f[v], axis=-1)
            cdf[..., -1] = 1.0
            cuts = _intervals(cdf)
            mid = (cuts[:-1] + cuts[1:]) / 2
            u_name = f"u{pos[v]}"
            tables[u_name] = np.diff(cuts)
            parents[u_name] = []
            tcards[u_name] = len(mid)
            natural = _state_at(cdf, mid)                                 # (*pa, m)
            tables[f_name] = np.eye(K)[natural]                           # (*pa, m, K)
            parents[f_name] = [names[("f", p)] for p in pa] + [u_name]
            tcards[f_name] = K
            if isinstance(mech_c, Intervened):
                shift = shift_map(v, mech_c, K)
                tables[c_name] = np.eye(K)[shift[natural]]
            else:
                tables[c_name] = np.eye(K)[natural]
            parents[c_name] = [names[("c", p)] for p in pa] + [u_name]
            tcards[c_name] = K
        elif shared_u:
            # a root under a shift intervention: the counterfactual is f(factual)
            tables[f_name] = cpts_f[v]
            parents[f_name] = []
            tcards[f_name] = K
            tables[c_name] = np.eye(K)[shift_map(v, mech_c, K)]          # (K_f, K)
            parents[c_name] = [f_name]
            tcards[c_name] = K
        else:
            tables[f_name] = cpts_f[v]
            parents[f_name] = [names[("f", p)] for p in pa]
            tcards[f_name] = K
            tables[c_name] = cpts_c[v]                                   # one-hot or uniform
            parents[c_name] = []
            tcards[c_name] = K
            if v in row_c:
                evidence[c_name] = row_c[v]
    if row_f:
        raise ModelError("per-row interventions in the factual world are not supported in a counterfactual")
    edges = [(p, c) for c, ps in parents.items() for p in ps]
    twin = DAG(edges, nodes=list(tables))
    cpts = {}
    for node, t in tables.items():
        declared = parents[node]
        want = list(twin.parents(node))
        if declared != want:
            t = np.transpose(t, [declared.index(p) for p in want] + [len(declared)])
        cpts[node] = np.ascontiguousarray(t, dtype=np.float64)
    for (w, v), a in ev.items():
        key = names[(w, v)]
        if key in evidence:
            raise EvidenceError(f"{v!r} is observed in the counterfactual world where it is set by do")
        evidence[key] = int(a) if np.ndim(a) == 0 else a
    n_ev_rows = {np.shape(a)[0] for a in evidence.values() if np.ndim(a)}
    if len(n_ev_rows) > 1:
        raise EvidenceError(f"evidence rows disagree: {sorted(n_ev_rows)}")
    tnames = [names[t] for t in targets]
    tcards_t = [cards[v] for _, v in targets]
    batched = bool(n_ev_rows)
    free = [t for t in dict.fromkeys(tnames) if t not in evidence]
    if free:
        pf, _ = DiscreteBN(twin, cpts, tcards).query(free, evidence, joint=True)
    else:
        DiscreteBN(twin, cpts, tcards).query([next(iter(tables))], evidence, joint=True)   # checks P(e) > 0
        pf = np.ones((next(iter(n_ev_rows)),) if batched else ())
    probs = _assemble(pf, free, tnames, evidence, tcards_t, batched)
    return DiscreteDistribution(_names(targets), probs, [model.specs[v].states for _, v in targets],
                                batched=bool(n_ev_rows), method="exact (twin network, variable elimination)",
                                scm=SCM_DISCRETE)


def _assemble(pf, free, tnames, evidence, cards, batched):
    """The joint over `tnames` from the joint over the `free` ones.

    A target may be observed (a counterfactual copy identical to an observed
    factual node: a point mass at the evidence) or repeated (the same node
    asked in both worlds: the mass sits where the copies agree).
    """
    n = pf.shape[0] if batched else None
    out = np.zeros(((n,) if batched else ()) + tuple(cards))
    for full in np.ndindex(*cards):
        val = dict()
        ok = True
        for name, k in zip(tnames, full):
            if name in val and val[name] != k:
                ok = False
                break
            val[name] = k
        if not ok:
            continue
        idx = tuple(val[f] for f in free)
        p = pf[(slice(None), *idx)] if batched else pf[idx]
        for name in set(tnames) - set(free):
            e = evidence[name]
            hit = (np.asarray(e) == val[name]).astype(np.float64)
            p = p * hit
        if batched:
            out[(slice(None), *full)] = p
        else:
            out[full] = p
    return out


def _gaussian_twin(model, cf_model, targets, ev):
    from .gaussian import affine_form, condition

    f = affine_form(model)
    c = affine_form(cf_model)
    nodes = f.nodes
    cidx = [c.index[v] for v in nodes]
    Mc = c.M[cidx][:, [c.index[v] for v in nodes]]           # same u order as the factual form
    cc = c.c[..., cidx]
    if f.batched and not c.batched:
        cc = np.broadcast_to(cc, f.c.shape)
    cf_c = f.c
    if c.batched and not f.batched:
        cf_c = np.broadcast_to(f.c, c.c.shape)
    mean = np.concatenate([cf_c, cc], axis=-1)               # (..., 2d)
    Mj = np.concatenate([f.M, Mc], axis=0)                   # (2d, d)
    cov = Mj @ Mj.T
    d = len(nodes)
    key = {("f", v): i for i, v in enumerate(nodes)} | {("c", v): d + i for i, v in enumerate(nodes)}
    obs = list(ev)
    vals = [np.asarray(ev[k], dtype=np.float64) for k in obs]
    batched = mean.ndim == 2 or any(v.ndim == 1 for v in vals)
    if batched:
        ns = {v.shape[0] for v in vals if v.ndim == 1} | ({mean.shape[0]} if mean.ndim == 2 else set())
        if len(ns) > 1:
            raise EvidenceError(f"evidence rows disagree: {sorted(ns)}")
        n = ns.pop()
        vals = [np.broadcast_to(v, (n,)) for v in vals]
        mean = np.broadcast_to(mean, (n, 2 * d))
    values = np.stack(vals, axis=-1) if vals else np.zeros(mean.shape[:-1] + (0,))
    m, S, _ = condition(mean, cov, [key[k] for k in obs], values, [k[1] for k in obs])
    ti = [key[t] for t in targets]
    return Gaussian(_names(targets), m[..., ti], S[np.ix_(ti, ti)], batched=batched,
                    method="exact (twin joint Gaussian)", scm=SCM_GAUSSIAN)


def _point_abduction(model, cf_model, targets, ev, n_rows):
    """Exact when every noise the counterfactual targets depend on is fixed by factual evidence.

    Returns None (so the caller samples) for discrete targets, evidence in the
    counterfactual world, or noise the evidence does not determine.
    """
    from ..mechanisms.tabular import Tabular

    if any(w == "c" for w, _ in ev) or all(model.specs[v].kind == DISCRETE for _, v in targets):
        return None
    obs = {v for _, v in ev}
    need = set()
    for w, v in targets:
        need |= (cf_model if w == "c" else model).dag.ancestors(v, include_self=True)
    noisy = []                                   # nodes whose noise the counterfactual world reuses
    for v in need:
        mech, cf_mech = model.mechanisms[v], cf_model.mechanisms[v]
        if not cf_mech.deterministic or (getattr(cf_mech, "is_shift", False) and not mech.deterministic):
            if v not in obs or not mech.can_abduct or isinstance(mech, Tabular):
                return None
            noisy.append(v)
    # abducting a node needs its parents' factual values: every stochastic ancestor must be observed
    stochastic = [v for v in need if not model.mechanisms[v].deterministic]
    if any(not model.mechanisms[a].deterministic and a not in obs for a in model.dag.ancestors(stochastic)):
        return None
    n = n_rows or 1
    fvals = {v: (np.broadcast_to(a, (n, *np.shape(a))) if np.ndim(a) == len(model.specs[v].shape) else a)
             for (_, v), a in ev.items()}
    trace = model.forward(values=fvals, n=n, seed=0)
    noise = {v: model.mechanisms[v].abduct(v, trace[v], {p: trace[p] for p in model.mechanisms[v].parents},
                                           model.specs[v]) for v in noisy}
    # noise of nodes outside `need` is drawn by forward and cannot reach the targets
    cf = cf_model.forward(noise=noise, n=n, seed=0)
    samples = {}
    for w, v in targets:
        arr = (cf if w == "c" else trace)[v]
        samples[_names([(w, v)])[0]] = arr[:, None, ...] if n_rows else arr[:1]
    weights = np.ones((n, 1)) if n_rows else np.ones(1)
    return EmpiricalDistribution(_names(targets), samples, weights, batched=n_rows is not None,
                                 method="exact (abduction of additive noise)", scm=SCM_ADDITIVE)


# -- sampled route -----------------------------------------------------------------------


def _sampled(model, cf_model, targets, ev, n_rows, n_samples, seed):
    from .sampling import likelihood_weighting, normalise, weighted_state_probs

    rng = as_generator(seed)
    rows = n_rows or 1
    m = max(1000, int(n_samples) // rows) if n_rows else int(n_samples)
    f_ev = {v: a for (w, v), a in ev.items() if w == "f"}
    c_ev = {v: a for (w, v), a in ev.items() if w == "c"}
    batched = {v for v, a in f_ev.items() if np.ndim(a) == len(model.specs[v].shape) + 1}
    fvals, log_w, noise = likelihood_weighting(model, f_ev, rows, m, rng, batched_nodes=batched, keep_noise=True)
    N = rows * m
    # nodes with no noise drawn yet (deterministic in the factual world) need none in the other
    cf_noise = {k: u for k, u in noise.items() if k in cf_model.nodes}
    cf = cf_model.forward(noise=cf_noise, n=N, seed=rng)
    for v, a in c_ev.items():
        spec = model.specs[v]
        if spec.kind != DISCRETE:
            raise EvidenceError(f"evidence on the counterfactual continuous node {v!r} cannot be weighted by sampling")
        want = np.repeat(a, m) if np.ndim(a) else np.full(N, int(a))
        with np.errstate(divide="ignore"):
            log_w = log_w + np.log((cf[v] == want).astype(np.float64))
    if np.any(np.all(np.isneginf(log_w.reshape(rows, m)), axis=1)):
        raise EvidenceError("no sample is consistent with the evidence in both worlds (impossible, or too rare)")
    w = normalise(log_w, rows, m)
    vals = {_names([t])[0]: (cf if t[0] == "c" else fvals)[t[1]] for t in targets}
    method = f"likelihood weighting over the noise posterior ({m} samples{' per row' if n_rows else ''})"
    scm = SCM_DISCRETE + "; " + SCM_ADDITIVE
    names = _names(targets)
    if all(model.specs[v].kind == DISCRETE for _, v in targets):
        cards = [model.specs[v].card for _, v in targets]
        probs, se = weighted_state_probs([vals[nm] for nm in names], cards, w)
        if not n_rows:
            probs, se = probs[0], se[0]
        return DiscreteDistribution(names, probs, [model.specs[v].states for _, v in targets],
                                    batched=n_rows is not None, method=method, std_err=se, scm=scm)
    samples = {nm: vals[nm].reshape(rows, m, *vals[nm].shape[1:]) for nm in names}
    if not n_rows:
        samples = {k: s[0] for k, s in samples.items()}
        w = w[0]
    return EmpiricalDistribution(names, samples, w, batched=n_rows is not None, method=method, scm=scm)


# -- probabilities of causation --------------------------------------------------------------


def _state(model, node, s):
    from ..mechanisms.tabular import state_index

    return state_index(node, model.states(node), s)


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

