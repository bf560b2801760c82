"""Exact inference in conditional Gaussian (CG) networks: discrete and real nodes together.

A CG network (Lauritzen) has discrete nodes with discrete parents only
(:class:`~causalnet.mechanisms.tabular.Tabular`) and real nodes that are
linear-Gaussian given their parents, with coefficients that may depend on the
discrete parents' states
(:class:`~causalnet.mechanisms.conditional_gaussian.ConditionalLinearGaussian`,
:class:`~causalnet.mechanisms.gaussian.LinearGaussian`). The engine
(:class:`ConditionalGaussianEngine`) answers every query on such a model
exactly by the strong elimination of :mod:`causalnet.inference.cg_elimination`
(real nodes integrated out in closed form per configuration of their discrete
boundary, then discrete variable elimination): a real target gives a
:class:`~causalnet.distributions.GaussianMixture`, a discrete one a
:class:`~causalnet.distributions.DiscreteDistribution`, a joint of both kinds
a :class:`~causalnet.distributions.MixedDistribution`; :meth:`ConditionalGaussianEngine.map`
gives the MAP of discrete nodes. Evidence may be batched (real values and
discrete states per row); ``do`` on either kind is answered on the mutilated
model (constants, per-row values, shifts of discrete nodes,
:func:`causalnet.shift` / :func:`causalnet.affine` on real nodes).

A model whose only obstacle is a discrete node with a real parent (a
``Logistic`` or ``Deterministic`` threshold: the CG restriction) is accepted
and declined with the reason (:class:`~causalnet.inference.engine.NoExactAnswer`),
so that ``method="auto"`` samples and says why in ``.method`` and
``method="exact"`` refuses naming the discrete node and its real parent.
"""

from __future__ import annotations

import numpy as np

from ..distributions import DiscreteDistribution, GaussianMixture, MixedDistribution
from ..mechanisms.base import DISCRETE, REAL
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.intervened import Intervened
from ..mechanisms.tabular import Tabular
from .cg_elimination import CGSolution, cg_map, cg_solve
from .engine import Engine, NoExactAnswer

__all__ = ["cg_reason", "is_conditional_gaussian", "cg_result", "ConditionalGaussianEngine", "METHOD"]

METHOD = "exact (conditional Gaussian, strong elimination)"

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


def _only_the_restriction(model) -> bool:
    """Whether the CG restriction (a discrete node with a real parent) is all that keeps `model` from being
    a CG network: then the engine accepts, to say why in the sampled answer's ``.method`` (cached)."""
    cached = model.cache.get("cg_restriction_only")
    if cached is None:
        reasons = [_node_reason(model, v) for v in model.dag.topological_order()]
        cached = model.cache["cg_restriction_only"] = all(r is None or "has the real parent" in r for r in reasons)
    return cached


def cg_result(model, names: list, labels: list, sol: CGSolution, *, batched: bool, method: str,
              scm: str | None = None):
    """The distribution object of a solved CG question over `names` (shown as `labels`)."""
    disc = [t for t in names if model.specs[t].kind == DISCRETE]
    reals = [t for t in names if model.specs[t].kind != DISCRETE]
    log_ev = sol.log_evidence
    if not reals:                                      # the table's first axes are the discrete targets
        extra = tuple(range(len(disc) + batched, sol.table.ndim))
        probs = sol.table.sum(axis=extra) if extra else sol.table
        return DiscreteDistribution(labels, probs, [model.specs[t].states for t in names], batched=batched,
                                    method=method, scm=scm, log_evidence=log_ev)
    weights, states, means, covs = sol.mixture(reals)
    keep = np.flatnonzero(np.any(weights.reshape(-1, weights.shape[-1]) > 0, axis=0))
    weights, states, means, covs = weights[..., keep], states[keep], means[..., keep, :], covs[keep]
    rl = [labels[names.index(t)] for t in reals]
    if not disc:
        return GaussianMixture(rl, weights, means, covs, batched=batched, method=method, scm=scm,
                               log_evidence=log_ev)
    di = [sol.keep.index(t) for t in disc]
    return MixedDistribution(labels, [labels[names.index(t)] for t in disc], [model.specs[t].states for t in disc],
                             states[:, di], weights, means, covs, batched=batched, method=method, scm=scm,
                             log_evidence=log_ev)


class ConditionalGaussianEngine(Engine):
    """Exact queries on conditional Gaussian (mixed discrete/real) networks; see the module docstring.

    ``accepts`` a CG network, a model kept from being one only by the CG
    restriction, and (under ``method="exact"``) any model; on one that is
    not a CG network :meth:`answer` raises
    :class:`~causalnet.inference.engine.NoExactAnswer` saying why (e.g. naming
    a discrete node and its real parent), which the registry reports in the
    ``.method`` of the sampled answer (or, under ``method="exact"``, in its error).
    """

    name = "conditional Gaussian"

    def accepts(self, request) -> bool:
        if request.is_counterfactual:
            return False
        model = request.model
        if cg_reason(model) is None:
            return True
        return request.method == "exact" or _only_the_restriction(model)

    def answer(self, request):
        model = request.model
        reason = cg_reason(model)
        if reason is not None:
            raise NoExactAnswer(reason)
        names = request.nodes
        sol = cg_solve(model, names, request.observed, request.n_rows)
        return cg_result(model, names, list(names), sol, batched=request.batched, method=METHOD)

    def map(self, request) -> tuple[dict, np.ndarray | float]:
        """MAP of discrete nodes (all unobserved discrete nodes when none are named), the real nodes
        integrated out: ``(node -> state name or array of names, log p(assignment, evidence))``."""
        model = request.model
        reason = cg_reason(model)
        if reason is not None:
            raise NoExactAnswer(reason)
        targets = request.nodes or None
        assign, logp = cg_map(model, targets, request.observed, request.n_rows)
        named = {}
        for k, v in assign.items():
            states = np.asarray(model.specs[k].states, dtype=object)
            named[k] = states[v] if np.ndim(v) else states[int(v)]
        return named, logp
