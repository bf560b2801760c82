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

from .cauchy import Cauchy, CauchyMarginals
from .mixed import MixedDistribution
from .results import DiscreteDistribution, EmpiricalDistribution, Gaussian, GaussianMixture, result_label, table_text

__all__ = ["DiscreteDistribution", "Gaussian", "EmpiricalDistribution", "GaussianMixture", "MixedDistribution", "Cauchy",
           "CauchyMarginals", "table_text", "result_label"]
