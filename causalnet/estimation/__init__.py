"""Effects from data: estimators with confidence intervals, refutation and sensitivity (issue 25).

The map:

- :mod:`~causalnet.estimation.identify` — the optimal adjustment set (O-set) and why a set is invalid.
- :mod:`~causalnet.estimation.prepare` — the treatment contrast, outcome and covariates as arrays.
- :mod:`~causalnet.estimation.linear` — least squares and logistic fits for many bootstrap weightings at once.
- :mod:`~causalnet.estimation.estimators` — the estimator interface; regression, IPW, AIPW, two-stage least squares, plug-in.
- :mod:`~causalnet.estimation.tmle`, :mod:`~causalnet.estimation.matching` — TMLE; nearest-neighbour matching.
- :mod:`~causalnet.estimation.frontdoor` — the linear front door (two regressions).
- :mod:`~causalnet.estimation.designs` — difference-in-differences, sharp regression discontinuity.
- :mod:`~causalnet.estimation.learners` — S-, T- and X-learners (per-row effects).
- :mod:`~causalnet.estimation.sequential` — time-varying treatments: the sequential back door and the g-formula.
- :mod:`~causalnet.estimation.methods` — the registry ``method=`` name -> estimator class.
- :mod:`~causalnet.estimation.partitioned` — regression and IPW on Dask frames from partition sums.
- :mod:`~causalnet.estimation.estimate` — :func:`estimate`, the entry point.
- :mod:`~causalnet.estimation.effect` — the :class:`Effect` result.
- :mod:`~causalnet.estimation.refute` — placebo, random common cause, subsets, bootstrap, dummy outcome.
- :mod:`~causalnet.estimation.sensitivity` — E-values and Cinelli–Hazlett partial R² bounds.
- :mod:`~causalnet.estimation.local_tests` — the graph's implied independencies tested on data.
"""

from ..graph.dag import DATA_METHODS
from .designs import ik_bandwidth
from .effect import Effect
from .estimate import METHODS, estimate, propensity_score
from .identify import optimal_adjustment_set
from .local_tests import local_tests, permutation_baseline
from .refute import Refutation, refute_effect
from .sensitivity import Sensitivity, e_value
from .sequential import sequential_sets


def refute(effect: Effect, method: str = "placebo-treatment", **options) -> Refutation:
    """``effect.refute(method, **options)``; see :mod:`causalnet.estimation.refute`."""
    return refute_effect(effect, method, **options)


DATA_METHODS["local_tests"] = local_tests
test_graph = local_tests

__all__ = ["local_tests", "test_graph", "permutation_baseline", "estimate", "propensity_score", "Effect", "refute", "Refutation", "Sensitivity",
           "e_value", "optimal_adjustment_set", "METHODS", "ik_bandwidth", "sequential_sets"]
