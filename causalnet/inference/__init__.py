"""causalnet.inference: the engines, the requests they answer, and the front door (:mod:`.dispatch`).

The engines that a discrete or Gaussian query never reaches (Cauchy, conditional
Gaussian, counterfactual, loopy, Gibbs, importance sampling, likelihood
weighting, soft evidence) and the Markov-network and effects helpers load on
first use through this package (PEP 562), so reading a model file and querying
it loads none of them.
"""

from ..runtime import lazy_exports

__all__: list[str] = []

__getattr__, __dir__ = lazy_exports(__name__, {name: f".{name}" for name in (
    "cauchy", "conditional_gaussian", "counterfactual", "effects", "gaussian", "gibbs", "importance", "loopy",
    "markov", "sampling", "soft", "tensor", "forward", "frames", "cg_counterfactual", "cg_elimination", "residual", "compact_messages")})
