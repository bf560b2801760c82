"""Choosing and running an engine for a query.

``method="auto"`` tries the exact engines in turn — discrete (variable
elimination), linear-Gaussian (joint Gaussian), linear-Cauchy (affine forms)
— and falls back to likelihood weighting, saying so in ``result.method``.
An engine plugs in by recognising the models it can answer exactly; the
discrete one also takes deterministic discrete nodes and shift interventions
on discrete nodes by tabulating them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian
from ..errors import EvidenceError, ModelError
from ..mechanisms.base import DISCRETE, as_generator
from ..mechanisms.tabular import Tabular
from ..queries import Query, parse_query

__all__ = ["run_query", "run_map", "discrete_network", "normalise_request"]

_METHODS = ("auto", "exact", "sampling")


# -- request normalisation -------------------------------------------------------


def _resolve_literal(model, node, value):
    """Query-string literals: a token like 1 may name the state "1"."""
    spec = model.specs[node]
    if spec.kind == DISCRETE and value not in spec.states and str(value) in spec.states:
        return str(value)
    return value


def normalise_request(model, targets, evidence, do):
    """Parse a query string if given and merge it with the keyword arguments.

    Returns
    -------
    query : Query
        With ``targets`` (Terms), ``evidence`` (Terms) and ``do``.
    """
    evidence = dict(evidence or {})
    do = dict(do or {})
    if isinstance(targets, str) and "(" in targets:
        q = parse_query(targets)
        for t in q.targets + q.evidence:
            model._check_node(t.name, "node in the query", EvidenceError)
            for k in t.world_dict:
                model._check_node(k, "intervened node in the query", EvidenceError)
        for k in q.do:
            model._check_node(k, "intervened node in the query", EvidenceError)
        q.targets = [type(t)(t.name, _world(model, t.world), None if t.value is None else
                              _resolve_literal(model, t.name, t.value)) for t in q.targets]
        q.evidence = [type(t)(t.name, _world(model, t.world), _resolve_literal(model, t.name, t.value))
                      for t in q.evidence]
        for k, v in q.do.items():
            if k in do:
                raise EvidenceError(f"{k!r} is intervened on both in the query string and in do=")
            do[k] = _resolve_literal(model, k, v)
        from ..queries import Term

        for k, v in evidence.items():
            q.evidence.append(Term(k, None, v))
        q.do = do
        return q
    from ..queries import Term

    if isinstance(targets, (str, bytes)) or not isinstance(targets, Sequence):
        targets = [targets]
    if not targets:
        raise EvidenceError("a query needs at least one target")
    return Query([Term(t) for t in targets], [Term(k, None, v) for k, v in evidence.items()], do)


def _world(model, world):
    if world is None:
        return None
    return tuple((k, _resolve_literal(model, k, v)) for k, v in world)


def _check_targets(model, names):
    seen = set()
    for t in names:
        model._check_node(t, "target", EvidenceError)
        if t in seen:
            raise EvidenceError(f"target {t!r} is listed twice")
        seen.add(t)


def _coerce_evidence(model, evidence: Mapping) -> tuple[dict, int | None]:
    out = {}
    for k, v in evidence.items():
        model._check_node(k, "evidence node", EvidenceError)
        out[k] = model._coerce(k, v, EvidenceError)
    rows = {k: a.shape[0] for k, a in out.items() if a.ndim == len(model.specs[k].shape) + 1}
    if len(set(rows.values())) > 1:
        raise EvidenceError(f"evidence arrays have different lengths: {rows}")
    return out, (next(iter(rows.values())) if rows else None)


# -- discrete tabulation ------------------------------------------------------------


def _grid(cards: Sequence[int]) -> list[np.ndarray]:
    """Every parent configuration, as one (prod(cards),) index array per parent."""
    if not cards:
        return []
    mesh = np.indices(cards).reshape(len(cards), -1)
    return [mesh[i] for i in range(len(cards))]


def discrete_network(model):
    """Tables of a model whose nodes are all discrete, for the discrete engine.

    Returns
    -------
    (cpts, cards, row_evidence) or None
        ``cpts[v]`` has shape ``(*[cards[p] for p in model.dag.parents(v)], card)``
        (the DAG's parent order); ``row_evidence`` maps nodes under a per-row
        do to their per-row states (they become uniform roots observed at
        those states: conditioning on a root is intervening on it).
        None when some node is not discrete or cannot be tabulated exactly.
    """

    cached = model._cache.get("discrete_network", False)
    if cached is not False:
        return cached
    specs = model.specs
    result = None
    if all(s.kind == DISCRETE for s in specs.values()):
        cpts, cards, row_ev = {}, {v: specs[v].card for v in model.nodes}, {}
        ok = True
        for v in model.nodes:
            mech = model.mechanisms[v]
            table = _table(model, v, mech, cards, row_ev)
            if table is None:
                ok = False
                break
            order = list(mech.parents)
            dag_order = list(model.dag.parents(v))
            if order != dag_order:
                table = np.transpose(table, [order.index(p) for p in dag_order] + [len(order)])
            cpts[v] = np.ascontiguousarray(table)
        if ok:
            result = (cpts, cards, row_ev)
    model._cache["discrete_network"] = result
    return result


def _table(model, v, mech, cards, row_ev):
    from ..mechanisms.intervened import Intervened

    K = cards[v]
    if isinstance(mech, Tabular):
        return mech.table
    if isinstance(mech, Intervened) and not mech.is_shift:
        val = np.asarray(mech.value)
        if val.ndim == 1:
            row_ev[v] = val.astype(np.int64)
            return np.full(K, 1.0 / K)
        t = np.zeros(K)
        t[int(val)] = 1.0
        return t
    if isinstance(mech, Intervened) and mech.is_shift:
        inner = _table(model, v, mech.natural, cards, row_ev)
        if inner is None:
            return None
        onehot = np.eye(K)[shift_map(v, mech, K)]                # (K, K): old state -> new state
        return inner @ onehot
    if mech.deterministic:
        pcards = [cards[p] for p in mech.parents]
        grid = _grid(pcards)
        n = int(np.prod(pcards)) if pcards else 1
        vals = mech.evaluate(v, dict(zip(mech.parents, grid)), None, model.specs[v], n=n)
        vals = np.asarray(vals).reshape(-1)
        return np.eye(K)[vals].reshape(*pcards, K)
    return None


def shift_map(v, mech, K) -> np.ndarray:
    """A shift intervention's function on the states 0..K-1 of node `v`, checked."""
    try:
        f = np.asarray(mech.value(np.arange(K)))
    except Exception as e:
        raise ModelError(f"the shift intervention on {v!r} raised {type(e).__name__}: {e}") from e
    if f.shape != (K,) or not np.all(f == np.round(f)) or f.min() < 0 or f.max() >= K:
        raise ModelError(f"the shift intervention on {v!r} must map states 0..{K - 1} to states, got {f.tolist()}")
    return f.astype(np.int64)


def _discrete_bn(model):
    net = discrete_network(model)
    if net is None:
        return None, None
    bn = model._cache.get("discrete_bn")
    if bn is None:
        from .elimination import DiscreteBN

        cpts, cards, _ = net
        bn = model._cache["discrete_bn"] = DiscreteBN(model.dag, cpts, cards)
    return bn, net[2]


# -- queries -----------------------------------------------------------------------


def run_query(model, targets, *, evidence=None, do=None, method="auto", n_samples=100_000, seed=None):
    if method not in _METHODS:
        raise ModelError(f"method must be one of {list(_METHODS)}, got {method!r}")
    q = normalise_request(model, targets, evidence, do)
    if q.is_counterfactual:
        from .counterfactual import run_counterfactual_query

        return run_counterfactual_query(model, q, method=method, n_samples=n_samples, seed=seed)
    names = [t.name for t in q.targets]
    _check_targets(model, names)
    ev_raw = {}
    for t in q.evidence:
        if t.name in ev_raw:
            raise EvidenceError(f"evidence on {t.name!r} is given twice")
        ev_raw[t.name] = t.value
    both = set(names) & set(ev_raw)
    if both:
        raise EvidenceError(f"{sorted(map(str, both))} are both targets and evidence")
    m = model.do(q.do) if q.do else model
    ev, n_rows = _coerce_evidence(m, ev_raw)
    dist = _answer(m, names, ev, n_rows, method, n_samples, seed)
    values = [t.value for t in q.targets]
    if values[0] is None:
        return dist
    if not isinstance(dist, DiscreteDistribution):
        raise EvidenceError("P(target=value) needs discrete targets; continuous targets have densities: "
                            "query the distribution instead")
    return dist[tuple(values) if len(values) > 1 else values[0]]


def _answer(m, names, ev, n_rows, method, n_samples, seed):
    if method in ("auto", "exact"):
        bn, row_ev = _discrete_bn(m)
        if bn is not None:
            return _discrete_answer(m, bn, row_ev, names, ev, n_rows)
        from .gaussian import gaussian_query, is_linear_gaussian

        if is_linear_gaussian(m):
            mean, cov, log_ev, batched = gaussian_query(m, names, ev)
            return Gaussian(names, mean, cov, batched=batched, method="exact (joint Gaussian)")
        cauchy = _cauchy_engine()
        if cauchy is not None:
            res = cauchy(m, names, ev)
            if res is not None:
                return res
        if method == "exact":
            from .cauchy import NoClosedForm, cauchy_marginals, is_cauchy_node

            if all(is_cauchy_node(m, t) for t in names):
                try:
                    cauchy_marginals(m, names, evidence=ev)
                except NoClosedForm as e:
                    raise ModelError(f"no exact answer for this Cauchy query: {e}; use method='sampling' "
                                     f"or 'auto'") from None
            kinds = ", ".join(sorted(m.kinds))
            raise ModelError(f"no exact engine answers this query on a model with {kinds} nodes "
                             f"(exact engines: discrete, linear-Gaussian, linear-Cauchy); use method='sampling' "
                             f"or 'auto'")
    return _sampling_answer(m, names, ev, n_rows, n_samples, seed)


def _cauchy_engine():
    """The linear-Cauchy engine's query hook, when that engine is present."""
    try:
        from . import cauchy
    except ImportError:
        return None
    return getattr(cauchy, "query_hook", None)


def _engine_evidence(ev, row_ev, n_rows):
    """Evidence for the discrete engine: state indices, plus per-row do values as observed roots.

    Returns ``(evidence, n_rows)``.
    """
    ev = dict(ev)
    for k, arr in row_ev.items():
        if k in ev:
            raise EvidenceError(f"{k!r} is both intervened on per row and observed")
        if n_rows is not None and arr.shape[0] != n_rows:
            raise EvidenceError(f"per-row do on {k!r} has {arr.shape[0]} rows but the evidence has {n_rows}")
        ev[k] = arr
        n_rows = arr.shape[0]
    return {k: (int(v) if np.ndim(v) == 0 else v) for k, v in ev.items()}, n_rows


def _discrete_answer(m, bn, row_ev, names, ev, n_rows):
    evidence, n_rows = _engine_evidence(ev, row_ev, n_rows)
    probs, log_ev = bn.query(list(names), evidence, joint=True)
    return DiscreteDistribution(names, probs, [m.specs[t].states for t in names], batched=n_rows is not None,
                                method="exact (variable elimination)", log_evidence=log_ev)


def _sampling_answer(m, names, ev, n_rows, n_samples, seed):
    from .sampling import likelihood_weighting, normalise, weighted_state_probs

    rng = as_generator(seed)
    rows = n_rows or 1
    per_row = max(1000, int(n_samples) // rows) if n_rows else int(n_samples)
    batched_nodes = {k for k, a in ev.items() if np.ndim(a) == len(m.specs[k].shape) + 1}
    values, log_w, _ = likelihood_weighting(m, ev, rows, per_row, rng, batched_nodes=batched_nodes)
    w = normalise(log_w, rows, per_row)                       # (rows, m)
    method = f"likelihood weighting ({per_row} samples{' per row' if n_rows else ''})"
    if all(m.specs[t].kind == DISCRETE for t in names):
        cards = [m.specs[t].card for t in names]
        probs, se = weighted_state_probs([values[t] for t in names], cards, w)
        if not n_rows:
            probs, se = probs[0], se[0]
        return DiscreteDistribution(names, probs, [m.specs[t].states for t in names], batched=n_rows is not None,
                                    method=method, std_err=se)
    samples = {t: values[t].reshape(rows, per_row, *values[t].shape[1:]) for t in names}
    if not n_rows:
        samples = {t: s[0] for t, s in samples.items()}
        w = w[0]
    return EmpiricalDistribution(names, samples, w, batched=n_rows is not None, method=method)


# -- MAP ------------------------------------------------------------------------------


def run_map(model, targets=None, *, evidence=None, do=None):
    m = model.do(do) if do else model
    bn, row_ev = _discrete_bn(m)
    if bn is None:
        raise ModelError("map needs a discrete model (every node discrete and tabulable)")
    ev, n_rows = _coerce_evidence(m, evidence or {})
    evidence_idx, _ = _engine_evidence(ev, row_ev, n_rows)
    if targets is not None:
        if isinstance(targets, (str, bytes)) or not isinstance(targets, Sequence):
            targets = [targets]
        _check_targets(m, targets)
        both = set(targets) & set(evidence_idx)
        if both:
            raise EvidenceError(f"{sorted(map(str, both))} are both targets and evidence")
        targets = list(targets)
    assign, logp = bn.map(targets, evidence_idx)
    named = {}
    for k, v in assign.items():
        states = np.asarray(m.specs[k].states, dtype=object)
        named[k] = states[v] if np.ndim(v) else states[int(v)]
    return named, logp
