"""The HMM's chain engines in the front door: exact queries and twin-chain counterfactuals on an unrolled HMM.

:func:`chain_shape` reads an unrolled HMM off a model's mechanisms (cheaply:
node names and mechanism types, once per model, kept in ``model.cache``):
``Z[0]`` a root table, ``Z[t]`` a table over ``Z[t-1]``, ``X[t]`` an emission
of ``Z[t]`` (a table, :class:`~.mechanism.GaussianEmissionMechanism` or
:class:`~.mechanism.EmissionMechanism`), any of them possibly under a
constant or per-row ``do``. Any model of that shape qualifies, whoever built
it (``HMM.to_model(T)``, a hand-written chain, a loaded file).

Two engines answer such requests in the query registries of
:mod:`causalnet.inference.dispatch`, ahead of the generic ones, and are
tested equal to them:

* :class:`HMMChainEngine` (``QUERY_ENGINES``, name ``"HMM chain"``): one
  forward-backward pass on the chain potentials. ``do(Z[t]=k)`` cuts the
  transition into ``Z[t]`` (a constant pairwise potential) and clamps it;
  evidence on ``X[t]`` is its emission likelihood, evidence on ``Z[t]`` a
  clamp; a set ``X[t]`` says nothing about ``Z[t]``. ``.method`` is
  ``"exact (HMM chain forward-backward)"``.
* :class:`HMMTwinChainEngine` (``COUNTERFACTUAL_ENGINES``, name ``"HMM twin
  chain"``): the pair ``(Z[t], Z*[t])`` under the inverse-CDF SCM is a Markov
  chain over ``K²`` states whose transition is the overlap of two CDF
  intervals (:func:`~.mechanism.cdf_overlap`); forward-backward on it is exact.
  ``.method`` is ``"exact (twin chain over KxK joint states)"``.

Symbols: ``n`` rows, ``T`` steps, ``K`` states.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import limits
from ...distributions import DiscreteDistribution
from ...errors import EvidenceError
from ...inference.chain import forward_backward
from ...inference.counterfactual import SCM_DISCRETE
from ...inference.dispatch import COUNTERFACTUAL_ENGINES, QUERY_ENGINES
from ...inference.engine import Engine
from ...inference.request import COUNTERFACTUAL, FACTUAL
from ...mechanisms.intervened import Intervened
from ...mechanisms.tabular import Tabular
from .emissions import CategoricalEmission, GaussianEmission
from .mechanism import EmissionMechanism, GaussianEmissionMechanism, cdf_overlap

__all__ = ["ChainShape", "chain_shape", "HMMChainEngine", "HMMTwinChainEngine", "QUERY_METHOD", "check_chain_size"]

QUERY_METHOD = "exact (HMM chain forward-backward)"


@dataclass
class ChainShape:
    """An unrolled HMM read off a model's mechanisms.

    Attributes
    ----------
    T, K : int
    start : ndarray (K,)
        ``P(Z[0])`` (its natural table, also when ``Z[0]`` is set).
    trans : list of ndarray (K, K)
        ``P(Z[t] | Z[t-1])`` for t = 1..T-1 (natural tables).
    emissions : list of (key, Emission, params)
        Per step: the emission kind and parameters of ``X[t]`` (``key``
        groups steps that share parameters).
    z_do, x_do : dict step -> node
        Steps whose ``Z`` / ``X`` is set by a (constant or per-row) ``do``.
    steps : dict node -> (kind, step)
        ``"Z[3]" -> ("Z", 3)``, for every node.
    """

    T: int
    K: int
    start: np.ndarray
    trans: list
    emissions: list
    z_do: dict = field(default_factory=dict)
    x_do: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    _log_trans: np.ndarray | None = None

    def log_trans(self) -> np.ndarray:
        """``log P(Z[t] | Z[t-1])`` stacked, shape (T-1, K, K) (computed once)."""
        if self._log_trans is None:
            with np.errstate(divide="ignore"):
                self._log_trans = np.log(np.stack(self.trans)) if self.trans else np.zeros((0, self.K, self.K))
        return self._log_trans


def _emission(mech) -> tuple | None:
    """``(key, emission, params)`` of an emission mechanism, None if it is not one."""
    if isinstance(mech, Tabular) and len(mech.parents) == 1:
        return id(mech.table), CategoricalEmission(), {"emissionprob_": mech.table}
    if isinstance(mech, GaussianEmissionMechanism):
        return id(mech.means), GaussianEmission(covariance_type="full"), {"means_": mech.means,
                                                                         "_covars_": mech.covars}
    if isinstance(mech, EmissionMechanism):
        return id(mech.params.get("startprob_")), mech.emission, mech.params
    return None


def _natural(mech):
    """``(natural mechanism, set?)``; None for a shift intervention (not a chain the engine knows)."""
    if isinstance(mech, Intervened):
        return None if mech.is_shift else (mech.natural, True)
    return mech, False


def _detect(model) -> ChainShape | None:
    nodes = model.nodes
    if len(nodes) % 2 or not nodes:
        return None
    T = len(nodes) // 2
    mechs = model.mechanisms
    if any(f"Z[{t}]" not in mechs or f"X[{t}]" not in mechs for t in range(T)):
        return None
    z0 = _natural(mechs["Z[0]"])
    if z0 is None or not isinstance(z0[0], Tabular) or z0[0].parents:
        return None
    start = z0[0].table
    K = len(start)
    shape = ChainShape(T, K, start, [], [], {0: "Z[0]"} if z0[1] else {}, {},
                       {f"{v}[{t}]": (v, t) for t in range(T) for v in "ZX"})
    for t in range(T):
        if t:
            z = _natural(mechs[f"Z[{t}]"])
            if z is None or not isinstance(z[0], Tabular) or z[0].parents != (f"Z[{t - 1}]",) \
                    or z[0].table.shape != (K, K):
                return None
            shape.trans.append(z[0].table)
            if z[1]:
                shape.z_do[t] = f"Z[{t}]"
        x = _natural(mechs[f"X[{t}]"])
        em = None if x is None or x[0].parents != (f"Z[{t}]",) else _emission(x[0])
        if em is None:
            return None
        shape.emissions.append(em)
        if x[1]:
            shape.x_do[t] = f"X[{t}]"
    return shape


def chain_shape(model) -> ChainShape | None:
    """The unrolled-HMM shape of `model`, or None (computed once per model, kept in ``model.cache``)."""
    if "hmm chain shape" not in model.cache:
        model.cache["hmm chain shape"] = _detect(model)
    return model.cache["hmm chain shape"]


def check_chain_size(n: int, T: int, K: int, what: str, states: str) -> None:
    """ResourceError when a chain of ``n`` rows, ``T`` steps, ``K`` states needs more than max_table_bytes."""
    nbytes = 8.0 * n * (2 * T * K + max(T - 1, 0) * K * K)  # unary, marginals, per-step pairwise
    limits.check_bytes(nbytes, what=what, cause=f"{n} sequences x {T} steps over {states}, K^2 pairwise per step")


def _rows(a: np.ndarray, n: int, ndim: int) -> np.ndarray:
    """`a` with a leading axis of `n` rows (broadcast when it has none: `ndim` per-row dims)."""
    a = np.asarray(a)
    return a if a.ndim == ndim + 1 else np.broadcast_to(a, (n, *a.shape))


def _set_states(model, node, n) -> np.ndarray:
    """The ``(n,)`` state indices a ``do`` sets `node` to (constant or per-row)."""
    return _rows(model.coerce(node, model.mechanisms[node].value), n, 0).astype(np.int64)


def _emission_unary(shape: ChainShape, model, observed: dict, n: int) -> np.ndarray:
    """``(n, T, K)`` log emission likelihoods of the observed steps (0 elsewhere), one call per parameter group."""
    unary = np.zeros((n, shape.T, shape.K))                                    # (n, T, K)
    groups: dict = {}
    for t, x in observed.items():
        if t in shape.x_do:              # a set X[t]: the observation must be its set value, and says nothing of Z[t]
            node = shape.x_do[t]
            same = np.equal(_rows(x, n, len(model.specs[node].shape)),
                            _rows(model.coerce(node, model.mechanisms[node].value), n, len(model.specs[node].shape)))
            with np.errstate(divide="ignore"):
                unary[:, t] = np.log(same.reshape(n, -1).all(axis=1))[:, None]
            continue
        groups.setdefault(shape.emissions[t][0], []).append(t)
    for ts in groups.values():
        _, em, params = shape.emissions[ts[0]]
        ndim = len(model.specs[f"X[{ts[0]}]"].shape)
        vals = [observed[t] for t in ts]
        if all(np.ndim(v) == ndim for v in vals):                                 # one row: (m[, d]) -> (n, m[, d])
            obs = np.broadcast_to(np.asarray(vals)[None], (n, len(ts), *np.shape(vals[0])))
        else:
            obs = np.stack([_rows(v, n, ndim) for v in vals], axis=1)              # (n, m[, d])
        if isinstance(em, CategoricalEmission):
            obs = obs.astype(np.int64)                       # states already decoded by the request
        else:
            obs = obs[..., None] if ndim == 0 else obs                            # (n, m, d)
            em.check_evidence(obs, params)                   # the kind's own domain (e.g. counts for Poisson)
        unary[:, ts] = em.log_likelihood(params, obs)                              # (n, m, K)
    return unary


def _check_possible(log_z: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(log_z)
    if bad.any():
        rows = np.flatnonzero(bad)
        where = "" if len(log_z) == 1 else f" (rows {rows[:5].tolist()}{' ...' if len(rows) > 5 else ''})"
        raise EvidenceError(f"the evidence has probability zero under the {what}{where}")


class HMMChainEngine(Engine):
    """Exact queries on an unrolled HMM by forward-backward (see the module docstring)."""

    name = "HMM chain"

    def accepts(self, request) -> bool:
        return (not request.is_counterfactual and len(request.targets) == 1
                and chain_shape(request.model) is not None)

    def answer(self, request):
        model, shape = request.model, chain_shape(request.model)
        n = request.n_rows or 1
        T, K = shape.T, shape.K
        check_chain_size(n, T, K, "the HMM query chain", f"{K} states")
        observed, clamps = {}, [(t, _set_states(model, node, n)) for t, node in shape.z_do.items()]
        for (_, node), value in request.evidence.items():
            kind, t = shape.steps[node]
            if kind == "X":
                observed[t] = value
            else:                                                                  # an observed state: a clamp
                clamps.append((t, _rows(value, n, 0).astype(np.int64)))
        unary = _emission_unary(shape, model, observed, n)
        with np.errstate(divide="ignore"):
            if 0 not in shape.z_do:
                unary[:, 0] += np.log(shape.start)
            pairwise = np.broadcast_to(shape.log_trans(), (n, T - 1, K, K)).copy()   # (n, T-1, K, K)
            for t, k in clamps:
                unary[:, t] += np.log(np.eye(K)[k])
                if t in shape.z_do and t > 0:
                    pairwise[:, t - 1] = 0.0
        post = forward_backward(unary, pairwise)
        _check_possible(post.log_z, "HMM")
        node = request.nodes[0]
        kind, t = shape.steps[node]
        batched = request.batched
        log_ev = post.log_z if batched else float(post.log_z[0])
        if kind == "Z":
            p = post.marginals[:, t]                                               # (n, K)
            return DiscreteDistribution([node], p if batched else p[0], [model.states(node)], batched=batched,
                                        method=QUERY_METHOD, log_evidence=log_ev)
        _, em, params = shape.emissions[t]
        if t in shape.x_do:
            return em.point(node, params, model.coerce(node, model.mechanisms[node].value), n, batched)
        return em.predictive(node, params, post.marginals[:, t], batched, method=QUERY_METHOD)


class HMMTwinChainEngine(Engine):
    """Exact one-world counterfactuals on an unrolled HMM by a twin chain (see the module docstring)."""

    name = "HMM twin chain"

    def accepts(self, request) -> bool:
        if not request.is_counterfactual or request.is_multiworld or len(request.targets) != 1:
            return False
        shape = chain_shape(request.model)
        if shape is None or shape.z_do or shape.x_do or request.targets[0][0] != COUNTERFACTUAL:
            return False
        world = request.world
        steps = shape.steps
        return bool(world) and all(steps[k][0] == "Z" and not callable(v) for k, v in world.items()) \
            and all(w == FACTUAL and steps[v][0] == "X" for w, v in request.evidence)

    def answer(self, request):
        model, shape = request.model, chain_shape(request.model)
        n, T, K = request.n_rows or 1, shape.T, shape.K
        check_chain_size(n, T, K * K, "the HMM counterfactual twin chain", f"{K}x{K} joint states")
        cf = request.cf_model
        zc = {shape.steps[k][1]: _set_states(cf, k, n) for k in request.world}
        observed = {shape.steps[v][1]: a for (_, v), a in request.evidence.items()}
        unary, pairwise = _twin_potentials(shape, _emission_unary(shape, model, observed, n), zc)
        post = forward_backward(unary, pairwise)
        _check_possible(post.log_z, "HMM")
        marg = post.marginals.reshape(n, T, K, K)                                   # (n, T, a, b)
        node, name = request.nodes[0], request.labels[0]
        kind, t = shape.steps[node]
        w, batched = marg[:, t], request.batched                                   # (n, a, b)
        method = f"exact (twin chain over {K}x{K} joint states)"
        if kind == "Z":
            p = w.sum(axis=1)                                                      # (n, K): the state b
            return DiscreteDistribution([name], p if batched else p[0], [model.states(node)], batched=batched,
                                        method=method, scm=SCM_DISCRETE)
        _, em, params = shape.emissions[t]
        if t in observed:
            x = _rows(observed[t], n, len(model.specs[node].shape))
            x = x.astype(np.int64) if isinstance(em, CategoricalEmission) else x.reshape(n, -1)   # (n,) or (n, d)
            return em.counterfactual_observed(name, params, w, x, batched, method)
        return em.predictive(name, params, w.sum(axis=1), batched, method=method, scm=SCM_DISCRETE)


def _twin_potentials(shape: ChainShape, fact: np.ndarray, zc: dict) -> tuple[np.ndarray, np.ndarray]:
    """Unary ``(n, T, K*K)`` and pairwise ``(n, T-1, K*K, K*K)`` log-potentials of the twin chain.

    `fact` ``(n, T, K)`` holds the factual emission likelihoods; `zc` the
    counterfactual world's set states ``{t: (n,)}``.
    """
    n, T, K = fact.shape
    KK = K * K
    unary = np.broadcast_to(fact[..., :, None], (n, T, K, K)).reshape(n, T, KK).copy()
    pi = shape.start
    overlaps: dict = {}
    for A in shape.trans:                                  # pair (a, b) -> (a', b'), one table per distinct A
        if id(A) not in overlaps:
            with np.errstate(divide="ignore"):
                overlaps[id(A)] = np.log(cdf_overlap(A).reshape(KK, KK))
    keys = list(overlaps)
    stacked = np.stack([overlaps[k] for k in keys]) if keys else np.zeros((0, KK, KK))
    step_of = np.array([keys.index(id(A)) for A in shape.trans], dtype=np.intp)
    pairwise = np.broadcast_to(stacked[step_of], (n, max(T - 1, 0), KK, KK)).copy()   # (n, T-1, KK, KK)
    with np.errstate(divide="ignore"):
        if 0 in zc:                       # the same u gives the same state in both worlds, unless Z[0] is set
            start = pi[None, :, None] * np.eye(K)[zc[0]][:, None, :]              # (n, K, K)
        else:
            start = np.broadcast_to(np.diag(pi), (n, K, K))
        unary[:, 0] += np.log(start.reshape(n, KK))
        for t in (t for t in zc if t > 0):
            A = shape.trans[t - 1]       # factual follows A; the counterfactual is k whatever its past
            hit = np.arange(K)[None, None, None, None, :] == zc[t][:, None, None, None, None]   # (n,1,1,1,K)
            clamp = np.broadcast_to(A[None, :, None, :, None] * hit, (n, K, K, K, K)).reshape(n, KK, KK)
            pairwise[:, t - 1] = np.log(clamp)
    return unary, pairwise


QUERY_ENGINES.register(HMMChainEngine(), before="discrete")
COUNTERFACTUAL_ENGINES.register(HMMTwinChainEngine(), before="discrete twin network")
