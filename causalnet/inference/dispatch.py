"""The front door of every query: build one validated request, let the first engine that can answer it.

``m.query``, ``m.counterfactual`` and ``m.map`` come here. Each call becomes a
:class:`~causalnet.inference.request.Request` (validated once, whatever engine
runs) and goes to an ordered :class:`~causalnet.inference.engine.Registry`:

* :data:`QUERY_ENGINES` — discrete (variable elimination), discrete with soft
  evidence (a virtual child per soft-evidence node), linear-Gaussian
  (joint Gaussian), linear-Cauchy (affine forms), conditional Gaussian (mixed
  discrete/real networks: enumerated discrete configurations, each Gaussian
  conditioned in closed form), then the approximate ones: loopy belief
  propagation (also ``"auto"``'s fallback for discrete models too large for
  the exact engine), Gibbs sampling, importance sampling, and likelihood
  weighting;
* :data:`COUNTERFACTUAL_ENGINES` — discrete twin (multi-world) network, Gaussian twin (any number of worlds),
  conditional Gaussian twin (mixed networks: shared standardised Gaussian and inverse-CDF noises), additive-noise
  abduction, then sampling over the noise posterior.

The model families register their fast engines ahead of these when they are
imported (``causalnet`` imports them all): the CRF and HMM chain engines
(:mod:`causalnet.models.crf.engine`, :mod:`causalnet.models.hmm.engine`).

A plain query asked again with new evidence values skips the request: its
shape, compiled the first time (:mod:`causalnet.inference.shapes`), answers.

``result.method`` names the engine that answered (and any exact engine that
passed before it, with its reason); ``result.query`` is the question, set here
and only here. A new engine plugs in with
``QUERY_ENGINES.register(MyEngine(), before="likelihood weighting")``.
"""

from __future__ import annotations

from .. import inference
from ..distributions import DiscreteDistribution
from ..errors import EvidenceError, ModelError
from ..mechanisms.base import DISCRETE
from .discrete import DiscreteEngine, direct_answer, discrete_network, is_plain_tabular, model_tables, shift_map
from .engine import LazyEngine, Registry
from .request import (
    check_approximate_options,
    counterfactual_request,
    map_request,
    plain_call,
    plain_request,
    query_request,
)
from .shapes import NEW, UNKNOWN, find_shape, learn_shape, shape_key

__all__ = ["run_query", "run_counterfactual", "run_map", "answer", "QUERY_ENGINES", "COUNTERFACTUAL_ENGINES",
           "discrete_network", "model_tables", "shift_map"]

# Every engine after the discrete one loads when a request first reaches it (a discrete query never does).
QUERY_ENGINES = Registry([
    DiscreteEngine(),
    LazyEngine("discrete (soft evidence)", lambda: inference.soft.SoftEvidenceEngine()),
    LazyEngine("linear-Gaussian", lambda: inference.gaussian.GaussianEngine()),
    LazyEngine("linear-Cauchy", lambda: inference.cauchy.CauchyEngine()),
    LazyEngine("conditional Gaussian", lambda: inference.conditional_gaussian.ConditionalGaussianEngine()),
    LazyEngine("loopy belief propagation", lambda: inference.loopy.LoopyEngine()),
    LazyEngine("gibbs sampling", lambda: inference.gibbs.GibbsEngine()),
    LazyEngine("importance sampling", lambda: inference.importance.ImportanceEngine()),
    LazyEngine("likelihood weighting", lambda: inference.sampling.SamplingEngine()),
], what="query")
COUNTERFACTUAL_ENGINES = Registry([
    LazyEngine("discrete twin network", lambda: inference.counterfactual.DiscreteTwinEngine()),
    LazyEngine("Gaussian twin", lambda: inference.counterfactual.GaussianTwinEngine()),
    LazyEngine("conditional Gaussian twin", lambda: inference.cg_counterfactual.ConditionalGaussianTwinEngine()),
    LazyEngine("additive-noise abduction", lambda: inference.counterfactual.AdditiveNoiseEngine()),
    LazyEngine("sampled counterfactual", lambda: inference.counterfactual.SampledCounterfactualEngine()),
], what="counterfactual")


def answer(request):
    """The answer to a validated request: a distribution, or a probability for ``P(Y=y | ...)``.

    This is the one place a result learns its question: ``result.query`` is the
    request's canonical text (:func:`causalnet.inference.request.question_text`),
    whatever engine answered.
    """
    values = request.target_values
    if values is not None:
        real = [v for (_, v), x in zip(request.targets, values) if request.model.specs[v].kind != DISCRETE]
        if real:
            x = values[[v for _, v in request.targets].index(real[0])]
            raise EvidenceError(f"P({real[0]}={x!r}) asks for the probability of a value of {real[0]!r}, a continuous "
                                f"node: it has a density, not probabilities; query P({real[0]}) for its distribution")
    registry = COUNTERFACTUAL_ENGINES if request.is_counterfactual else QUERY_ENGINES
    dist = registry.answer(request)
    if request.text is not None and hasattr(dist, "query"):
        dist.query = request.text
    if values is None:
        return dist
    if not isinstance(dist, DiscreteDistribution):
        raise EvidenceError("P(target=value) needs discrete targets; continuous targets have densities: "
                            "query the distribution instead")
    return dist[tuple(values) if len(values) > 1 else values[0]]


def run_query(model, targets, *, evidence=None, do=None, method="auto", n_samples=100_000, seed=None,
              soft_evidence=None, **options):
    """``model.query(...)``: see :meth:`causalnet.CausalModel.query`.

    A plain call whose shape (targets, evidence nodes, method) was asked
    before is answered by its compiled :class:`~causalnet.inference.shapes.QueryShape`
    (cached on the model); any other call, and any value the shape cannot
    decode, builds and validates the full request.
    """
    key = shape_key(targets, evidence, do, method, n_samples, seed, soft_evidence, options)
    shape = UNKNOWN if key is None else find_shape(model, key, QUERY_ENGINES.version)
    if shape is not None and shape is not UNKNOWN and shape is not NEW:
        got = shape.answer(evidence)
        if got is not None:
            return got
    if shape is NEW:
        got = _first_direct(model, key, targets, evidence)
        if got is not None:
            return got
    request = plain_request(model, targets, evidence, method) if key is not None else None
    if request is None:
        request = query_request(model, targets, evidence, do, method=method, n_samples=n_samples, seed=seed,
                                soft_evidence=soft_evidence, **options)
    if key is not None and (shape is UNKNOWN or shape is NEW):
        learn_shape(model, key, request, QUERY_ENGINES)
    return answer(request)


def _first_direct(model, key: tuple, targets, evidence):
    """A plain call of a shape never asked of an all-CPT model, answered by the direct path without a
    :class:`~causalnet.inference.request.Request` (what :func:`answer` would do with one: the discrete
    engine leads the registry and takes it), or None (then the general route runs, and decides alike)."""
    if not is_plain_tabular(model) or not isinstance(QUERY_ENGINES.leader(), DiscreteEngine):
        return None
    call = plain_call(model, targets, evidence)
    if call is None:
        return None
    names, ev, text = call
    dist = direct_answer(model, tuple(names), ev)
    if dist is not None:
        learn_shape(model, key, None, QUERY_ENGINES)   # the first time: only that it was asked
        dist.query = text
    return dist


def run_counterfactual(model, targets, *, evidence=None, do=None, method="auto", n_samples=100_000, seed=None,
                       soft_evidence=None):
    """``model.counterfactual(...)``: see :meth:`causalnet.CausalModel.counterfactual`."""
    return answer(counterfactual_request(model, targets, evidence, do, method=method, n_samples=n_samples,
                                         seed=seed, soft_evidence=soft_evidence))


def run_map(model, targets=None, *, evidence=None, do=None, method="exact", soft_evidence=None, **options):
    """``model.map(...)``: see :meth:`causalnet.CausalModel.map`."""
    if method not in ("exact", "loopy"):
        raise ModelError(f"map's method must be 'exact' or 'loopy', got {method!r}")
    request = map_request(model, targets, evidence, do, soft_evidence)
    if method == "loopy":
        request.options = check_approximate_options("loopy", options)
        return inference.loopy.loopy_map(request)
    check_approximate_options("exact", options)
    if request.soft:
        if discrete_network(request.model) is None:
            raise ModelError("map needs a discrete model (every node discrete and tabulable)")
        return inference.soft.soft_map(request)
    if model_tables(request.model) is None and inference.conditional_gaussian.is_conditional_gaussian(request.model):
        return inference.conditional_gaussian.ConditionalGaussianEngine().map(request)
    return DiscreteEngine().map(request)
