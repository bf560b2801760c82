"""Query results: distribution objects, one module per family of laws.

* :mod:`.results` — :class:`DiscreteDistribution`, :class:`Gaussian`,
  :class:`EmpiricalDistribution`, :class:`GaussianMixture` and the table text
  they print;
* :mod:`.mixed` — :class:`MixedDistribution`, the joint law of discrete and
  real variables of a conditional Gaussian network;
* :mod:`.cauchy` — :class:`Cauchy` and :class:`CauchyMarginals`;
* :mod:`.checks` — what every result constructor refuses (probabilities not summing
  to 1, a covariance not positive semidefinite, NaN points).

Every result says which engine produced it (``.method``) and which question it
answers (``.query``, set by the front door: ``P(Wet | do(Sprinkler=on), Rain=yes)``),
in ``str``, ``repr`` and ``to_pandas()``.
"""

from ..runtime import lazy_exports

__all__ = ["DiscreteDistribution", "Gaussian", "EmpiricalDistribution", "GaussianMixture", "MixedDistribution", "Cauchy",
           "CauchyMarginals", "table_text", "result_label"]

# Re-exported on first use (PEP 562): a discrete query's answer loads .results only, not .cauchy or .mixed.
__getattr__, __dir__ = lazy_exports(__name__, {
    "DiscreteDistribution": ".results:DiscreteDistribution",
    "EmpiricalDistribution": ".results:EmpiricalDistribution",
    "Gaussian": ".results:Gaussian",
    "GaussianMixture": ".results:GaussianMixture",
    "result_label": ".results:result_label",
    "table_text": ".results:table_text",
    "MixedDistribution": ".mixed:MixedDistribution",
    "Cauchy": ".cauchy:Cauchy",
    "CauchyMarginals": ".cauchy:CauchyMarginals",
    **{name: f".{name}" for name in ("results", "mixed", "cauchy", "checks")},
})
