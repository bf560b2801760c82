"""Exact inference in conditional Gaussian (CG) networks: discrete and real nodes together.

A CG network (Lauritzen) has discrete nodes with discrete parents only
(:class:`~causalnet.mechanisms.tabular.Tabular`) and real nodes that are
linear-Gaussian given their parents, with coefficients that may depend on the
discrete parents' states
(:class:`~causalnet.mechanisms.conditional_gaussian.ConditionalLinearGaussian`,
:class:`~causalnet.mechanisms.gaussian.LinearGaussian`). For each configuration
``k`` of the discrete nodes the real nodes are jointly Gaussian, ``x = c_k + M_k u``
(the affine form of :mod:`causalnet.inference.gaussian`, built for every ``k``
at once), so the posterior is exact:

1. keep the targets, the evidence and their ancestors (the other nodes are
   barren), and enumerate the configurations of the kept discrete nodes not
   fixed by unbatched evidence or a constant ``do`` (the count is estimated
   first and checked against :mod:`causalnet.limits`);
2. weight each by its prior probability (the product of the tables);
3. condition its Gaussian on the real evidence in closed form
   (:func:`~causalnet.inference.gaussian.condition`), multiplying the weight
   by the density of the evidence;
4. a real target's law is the mixture of the conditioned Gaussians
   (:class:`~causalnet.distributions.GaussianMixture`), a discrete target's the
   sum of the weights per state (:class:`~causalnet.distributions.DiscreteDistribution`).

Batched evidence rows share the enumeration and the covariances: the work per
configuration is one conditioning of an ``(n, d)`` batch of means. ``do`` on
either kind is answered on the mutilated model (constants, per-row values,
shifts of discrete nodes, :func:`causalnet.shift` / :func:`causalnet.affine`
on real nodes).

Symbols: ``n`` evidence rows, ``K`` enumerated configurations, ``d`` real nodes,
``r`` rows of the per-row ``do`` values (1 when there are none).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution, GaussianMixture
from ..errors import EvidenceError, NumericalError
from ..mechanisms.base import DISCRETE, REAL
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.intervened import Intervened
from ..mechanisms.tabular import Tabular
from .discrete import shift_map
from .engine import Engine, NoExactAnswer
from .gaussian import condition

__all__ = ["cg_reason", "is_conditional_gaussian", "ConditionalGaussianEngine", "METHOD"]

METHOD = "exact (conditional Gaussian)"

_LINEAR = (LinearGaussian, ConditionalLinearGaussian)


def _node_reason(model, v) -> str | None:
    """Why node `v` keeps `model` from being a CG network (None when it does not)."""
    spec, mech = model.specs[v], model.mechanisms[v]
    if spec.kind == DISCRETE:
        base = mech.natural if isinstance(mech, Intervened) and mech.is_shift else mech
        if isinstance(mech, Intervened) and not mech.is_shift:
            return None
        if not isinstance(base, Tabular):
            real = [p for p in base.parents if model.specs[p].kind != DISCRETE]
            if real:
                return (f"discrete node {v!r} has the real parent {real[0]!r} (a conditional Gaussian network "
                        f"needs discrete nodes with discrete parents and tables)")
            return f"discrete node {v!r} is {type(base).__name__}, not a table"
        return None
    if spec.kind != REAL or spec.shape != ():
        return f"node {v!r} is {spec.describe()}"
    if isinstance(mech, Intervened):
        if not mech.is_shift:
            return None
        if mech.affine is not None and isinstance(mech.natural, _LINEAR):
            return None
        return f"the intervention on {v!r} is a shift that is not affine"
    if not isinstance(mech, _LINEAR):
        return f"real node {v!r} is {type(mech).__name__}, not (conditional) linear-Gaussian"
    return None


def cg_reason(model) -> str | None:
    """None when `model` is a conditional Gaussian network this engine solves, else why not (cached)."""
    cached = model.cache.get("cg_reason", False)
    if cached is not False:
        return cached
    reason = None
    for v in model.dag.topological_order():
        reason = _node_reason(model, v)
        if reason is not None:
            break
    model.cache["cg_reason"] = reason
    return reason


def is_conditional_gaussian(model) -> bool:
    """Whether `model` is a CG network (see the module docstring)."""
    return cg_reason(model) is None


def _ancestral(model, nodes: list) -> list:
    """`nodes` and their ancestors through the (possibly intervened) mechanisms, in topological order.

    The other nodes are barren: summing them out leaves the query unchanged, so they are not enumerated.
    """
    keep, stack = set(), list(nodes)
    while stack:
        v = stack.pop()
        if v not in keep:
            keep.add(v)
            stack.extend(model.mechanisms[v].parents)
    return [v for v in model.dag.topological_order() if v in keep]


class _Enumeration:
    """The discrete configurations of a request: ``cfg`` (K, nD), their log prior (K,) and the
    per-row log masks (n, K) of batched discrete evidence and per-row ``do``."""

    def __init__(self, model, observed: Mapping, n_rows: int | None, relevant: list) -> None:
        self.disc = [v for v in relevant if model.specs[v].kind == DISCRETE]
        self.pos = {v: i for i, v in enumerate(self.disc)}
        fixed, rows = {}, {}
        for v in self.disc:
            mech = model.mechanisms[v]
            val = observed.get(v)
            if isinstance(mech, Intervened) and not mech.is_shift:
                dv = np.asarray(mech.value)
                if dv.ndim == 1:
                    rows.setdefault(v, []).append(dv.astype(np.int64))
                else:
                    fixed[v] = int(dv)
            if val is not None:
                if np.ndim(val) == 1:
                    rows.setdefault(v, []).append(np.asarray(val, dtype=np.int64))
                elif v in fixed and fixed[v] != int(val):
                    fixed[v] = -1                                  # do and evidence disagree: probability 0
                else:
                    fixed[v] = int(val)
        free = [v for v in self.disc if v not in fixed]
        cards = [model.specs[v].card for v in free]
        self.K = float(np.prod(cards, dtype=np.float64)) if cards else 1.0
        self.free, self.cards, self.fixed, self.rows = free, cards, fixed, rows
        self.n_rows = n_rows

    def check(self, d: int) -> None:
        """Raise ResourceError when the enumeration would not fit :mod:`causalnet.limits`."""
        r = self.n_rows or 1
        nbytes = 8.0 * self.K * (2 * d * d + 2 * r * (d + 1))
        limits.check_bytes(nbytes, what="the conditional Gaussian enumeration",
                           cause=f"{self.K:.0f} configurations of the discrete nodes {self.free} "
                                 f"(cards {self.cards}) x {d} real nodes x {r} rows")

    def build(self, model) -> None:
        K = int(self.K)
        cfg = np.zeros((K, len(self.disc)), dtype=np.int64)
        if self.free:
            grid = np.indices(self.cards).reshape(len(self.free), -1)
            for i, v in enumerate(self.free):
                cfg[:, self.pos[v]] = grid[i]
        logp = np.zeros(K)
        for v, s in self.fixed.items():
            if s < 0:
                logp[:] = -np.inf
            else:
                cfg[:, self.pos[v]] = s
        with np.errstate(divide="ignore"):
            for v in self.disc:
                logp += np.log(self._probs(model, v, cfg))
            mask = None
            if self.rows:
                mask = np.zeros((self.n_rows, K))
                for v, arrays in self.rows.items():
                    for a in arrays:
                        mask += np.log(a[:, None] == cfg[None, :, self.pos[v]])
        self.cfg, self.logp, self.mask = cfg, logp, mask

    def _probs(self, model, v, cfg) -> np.ndarray:
        """P(v = cfg[:, v] | its parents' cfg), shape (K,); 1 under a constant or per-row do."""
        mech = model.mechanisms[v]
        if isinstance(mech, Intervened) and not mech.is_shift:
            return np.ones(cfg.shape[0])
        table = mech.natural.table if isinstance(mech, Intervened) else mech.table
        if isinstance(mech, Intervened):
            card = table.shape[-1]
            table = table @ np.eye(card)[shift_map(v, mech, card)]
        parents = mech.natural.parents if isinstance(mech, Intervened) else mech.parents
        idx = tuple(cfg[:, self.pos[p]] for p in parents) + (cfg[:, self.pos[v]],)
        return table[idx]


def _real_forms(model, reals: list, en: _Enumeration, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The affine forms of the real nodes for every configuration: c (K, r, d), M (K, d, d)."""
    K, d = en.cfg.shape[0], len(reals)
    idx = {v: i for i, v in enumerate(reals)}
    c = np.zeros((K, r, d))
    M = np.zeros((K, d, d))
    for v in reals:
        i = idx[v]
        mech = model.mechanisms[v]
        natural = mech.natural if isinstance(mech, Intervened) and mech.is_shift else mech
        if isinstance(natural, Intervened):                        # a constant or per-row value
            c[:, :, i] = np.asarray(natural.value, dtype=np.float64).reshape(1, -1)
            continue
        if isinstance(natural, ConditionalLinearGaussian):
            k = tuple(en.cfg[:, en.pos[p]] for p in natural.discrete_parents)
            q = len(natural.real_parents)
            b = np.broadcast_to(natural.intercept[k], (K,))
            W = np.broadcast_to(natural.weights[k], (K, q))
            sd = np.broadcast_to(natural.sd[k], (K,))
            terms = [(p, W[:, j]) for j, p in enumerate(natural.real_parents)]
        else:
            b, sd = np.full(K, natural.bias), np.full(K, natural.sigma)
            terms = []
            for w, p in zip(natural.weights, natural.parents):
                if model.specs[p].kind == DISCRETE:                 # a discrete parent counts as its index
                    b = b + w * en.cfg[:, en.pos[p]]
                else:
                    terms.append((p, np.full(K, w)))
        c[:, :, i] = b[:, None]
        for p, w in terms:
            j = idx[p]
            c[:, :, i] += w[:, None] * c[:, :, j]
            M[:, i] += w[:, None] * M[:, j]
        M[:, i, i] += sd
        if natural is not mech:                                     # x -> scale·x + offset
            c[:, :, i] = mech.affine.scale * c[:, :, i] + mech.affine.offset
            M[:, i] *= mech.affine.scale
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(M))):
        raise NumericalError("the conditional Gaussians overflow float64 (weights or interventions too large)")
    return c, M


def _condition_rows(mean, cov, obs_idx, values, names):
    """:func:`condition`, with a configuration under which (some rows of) the evidence is impossible
    giving those rows log density -inf instead of an error."""
    try:
        return condition(mean, cov, obs_idx, values, names)
    except EvidenceError:
        if mean.ndim == 1:
            return mean, cov, np.array(-np.inf)
    out_m, out_c, out_l = np.array(mean, dtype=np.float64), cov, np.full(mean.shape[0], -np.inf)
    for t in range(mean.shape[0]):
        try:
            m_t, out_c, out_l[t] = condition(mean[t], cov, obs_idx, values[t], names)
            out_m[t] = m_t
        except EvidenceError:
            continue
    return out_m, out_c, out_l


def _posterior(model, request, en: _Enumeration, reals: list):
    """Per-configuration conditioned means (K, [n,] d), covariances (K, d, d) and log weights (K,) or (n, K)."""
    row_do = [np.asarray(model.mechanisms[v].value).shape[0] for v in reals
              if isinstance(model.mechanisms[v], Intervened) and not model.mechanisms[v].is_shift
              and np.ndim(model.mechanisms[v].value) == 1]
    r = row_do[0] if row_do else 1
    c, M = _real_forms(model, reals, en, r)
    cov = M @ np.swapaxes(M, 1, 2)
    idx = {v: i for i, v in enumerate(reals)}
    obs = [v for v in reals if v in request.observed]
    vals = [np.asarray(request.observed[v], dtype=np.float64) for v in obs]
    n = request.n_rows
    if n is not None:
        vals = [np.broadcast_to(a, (n,)) for a in vals]
        values = np.stack(vals, axis=-1) if vals else np.zeros((n, 0))
    else:
        values = np.array(vals)
    K = c.shape[0]
    means = np.zeros((K, n, len(reals)) if n is not None else (K, len(reals)))
    covs = np.zeros_like(cov)
    log_ev = np.full((K, n) if n is not None else K, -np.inf)
    oi = [idx[v] for v in obs]
    with np.errstate(all="ignore"):
        for k in range(K):
            if np.isneginf(en.logp[k]):
                covs[k] = cov[k]
                continue
            mean_k = np.broadcast_to(c[k], (n, len(reals))) if n is not None else c[k, 0]
            means[k], covs[k], log_ev[k] = _condition_rows(mean_k, cov[k], oi, values, obs)
    logw = en.logp[:, None] + log_ev if n is not None else en.logp + log_ev   # (K, n) or (K,)
    if n is not None:
        logw = logw.T + (en.mask if en.mask is not None else 0.0)             # (n, K)
        means = np.swapaxes(means, 0, 1)                                       # (n, K, d)
    return means, covs, logw


def _normalise(logw: np.ndarray, batched: bool) -> tuple[np.ndarray, np.ndarray]:
    from scipy.special import logsumexp  # loaded on first use, not by ``import causalnet``

    total = logsumexp(logw, axis=-1, keepdims=True)
    if np.any(np.isneginf(total)):
        where = f" (row {int(np.flatnonzero(np.isneginf(total[:, 0]))[0])})" if batched else ""
        raise EvidenceError(f"the evidence has probability zero under the model{where}")
    return np.exp(logw - total), total[..., 0]


class ConditionalGaussianEngine(Engine):
    """Exact queries on conditional Gaussian (mixed discrete/real) networks; see the module docstring.

    ``accepts`` is False on a model that is not a CG network, except under
    ``method="exact"`` where :meth:`answer` raises
    :class:`~causalnet.inference.engine.NoExactAnswer` saying why (e.g. naming
    a discrete node and its real parent), which the registry reports.
    """

    name = "conditional Gaussian"

    def accepts(self, request) -> bool:
        if request.is_counterfactual:
            return False
        model = request.model
        if cg_reason(model) is None:
            return True
        kinds = {s.kind for s in model.specs.values()}
        return request.method == "exact" and kinds == {DISCRETE, REAL}

    def answer(self, request):
        model = request.model
        reason = cg_reason(model)
        if reason is not None:
            raise NoExactAnswer(reason)
        names = request.nodes
        kinds = {model.specs[t].kind for t in names}
        if len(kinds) > 1:
            raise NoExactAnswer(f"a joint of discrete and real targets {names} is not answered exactly yet; "
                                f"ask for the discrete and the real targets separately")
        relevant = _ancestral(model, [*names, *request.observed])
        reals = [v for v in relevant if model.specs[v].kind == REAL]
        en = _Enumeration(model, request.observed, request.n_rows, relevant)
        en.check(len(reals))
        en.build(model)
        batched = request.batched
        means, covs, logw = _posterior(model, request, en, reals)
        w, log_ev = _normalise(logw, batched)
        if kinds == {DISCRETE}:
            return self._discrete(model, names, en, w, batched, log_ev)
        keep = np.flatnonzero(np.any(w.reshape(-1, w.shape[-1]) > 0, axis=0))
        ti = [reals.index(t) for t in names]
        comp_means = means[..., keep, :][..., ti]
        comp_covs = covs[keep][:, ti][:, :, ti]
        return GaussianMixture(names, w[..., keep], comp_means, comp_covs, batched=batched, method=METHOD,
                               log_evidence=log_ev if batched else float(log_ev))

    @staticmethod
    def _discrete(model, names, en: _Enumeration, w, batched, log_ev) -> DiscreteDistribution:
        cards = [model.specs[t].card for t in names]
        flat = np.ravel_multi_index(tuple(en.cfg[:, en.pos[t]] for t in names), cards)       # (K,)
        onehot = np.zeros((en.cfg.shape[0], int(np.prod(cards))))
        onehot[np.arange(en.cfg.shape[0]), flat] = 1.0
        probs = (w @ onehot).reshape(((w.shape[0],) if batched else ()) + tuple(cards))
        return DiscreteDistribution(names, probs, [model.specs[t].states for t in names], batched=batched,
                                    method=METHOD, log_evidence=log_ev if batched else float(log_ev))

