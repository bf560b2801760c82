"""The front door of every query: build one validated request, let the first engine that can answer it.

``m.query``, ``m.counterfactual`` and ``m.map`` come here. Each call becomes a
:class:`~causalnet.inference.request.Request` (validated once, whatever engine
runs) and goes to an ordered :class:`~causalnet.inference.engine.Registry`:

* :data:`QUERY_ENGINES` — discrete (variable elimination), linear-Gaussian
  (joint Gaussian), linear-Cauchy (affine forms), conditional Gaussian (mixed discrete/real networks:
  enumerated discrete configurations, each Gaussian conditioned in closed form), then likelihood weighting;
* :data:`COUNTERFACTUAL_ENGINES` — discrete twin (multi-world) network, Gaussian twin (any number of worlds),
  additive-noise abduction, then sampling over the noise posterior.

``result.method`` names the engine that answered. A new engine plugs in with
``QUERY_ENGINES.register(MyEngine(), before="likelihood weighting")``.
"""

from __future__ import annotations

from ..distributions import DiscreteDistribution
from ..errors import EvidenceError
from .cauchy import CauchyEngine
from .conditional_gaussian import ConditionalGaussianEngine
from .counterfactual import AdditiveNoiseEngine, DiscreteTwinEngine, GaussianTwinEngine, SampledCounterfactualEngine
from .discrete import DiscreteEngine, discrete_network, shift_map
from .engine import Registry
from .gaussian import GaussianEngine
from .request import counterfactual_request, map_request, query_request
from .sampling import SamplingEngine

__all__ = ["run_query", "run_counterfactual", "run_map", "answer", "QUERY_ENGINES", "COUNTERFACTUAL_ENGINES",
           "discrete_network", "shift_map"]

QUERY_ENGINES = Registry([DiscreteEngine(), GaussianEngine(), CauchyEngine(), ConditionalGaussianEngine(),
                          SamplingEngine()], what="query")
COUNTERFACTUAL_ENGINES = Registry([DiscreteTwinEngine(), GaussianTwinEngine(), AdditiveNoiseEngine(),
                                   SampledCounterfactualEngine()], what="counterfactual")


def answer(request):
    """The answer to a validated request: a distribution, or a probability for ``P(Y=y | ...)``."""
    registry = COUNTERFACTUAL_ENGINES if request.is_counterfactual else QUERY_ENGINES
    dist = registry.answer(request)
    values = request.target_values
    if values is None:
        return dist
    if not isinstance(dist, DiscreteDistribution):
        raise EvidenceError("P(target=value) needs discrete targets; continuous targets have densities: "
                            "query the distribution instead")
    return dist[tuple(values) if len(values) > 1 else values[0]]


def run_query(model, targets, *, evidence=None, do=None, method="auto", n_samples=100_000, seed=None):
    """``model.query(...)``: see :meth:`causalnet.CausalModel.query`."""
    return answer(query_request(model, targets, evidence, do, method=method, n_samples=n_samples, seed=seed))


def run_counterfactual(model, targets, *, evidence=None, do=None, method="auto", n_samples=100_000, seed=None):
    """``model.counterfactual(...)``: see :meth:`causalnet.CausalModel.counterfactual`."""
    return answer(counterfactual_request(model, targets, evidence, do, method=method, n_samples=n_samples,
                                         seed=seed))


def run_map(model, targets=None, *, evidence=None, do=None):
    """``model.map(...)``: see :meth:`causalnet.CausalModel.map`."""
    return DiscreteEngine().map(map_request(model, targets, evidence, do))
