"""Effects from data: estimators with confidence intervals, refutation and sensitivity (issue 25).

The map:

- :mod:`~causalnet.estimation.identify` — the optimal adjustment set (O-set) and why a set is invalid.
- :mod:`~causalnet.estimation.prepare` — the treatment contrast, outcome and covariates as arrays.
- :mod:`~causalnet.estimation.linear` — least squares and logistic fits for many bootstrap weightings at once.
- :mod:`~causalnet.estimation.estimators` — regression, IPW, AIPW, two-stage least squares, plug-in.
- :mod:`~causalnet.estimation.estimate` — :func:`estimate`, the entry point.
- :mod:`~causalnet.estimation.effect` — the :class:`Effect` result.
- :mod:`~causalnet.estimation.refute` — placebo, random common cause, subsets, bootstrap, dummy outcome.
- :mod:`~causalnet.estimation.sensitivity` — E-values and Cinelli–Hazlett partial R² bounds.
- :mod:`~causalnet.estimation.local_tests` — the graph's implied independencies tested on data.
"""

from ..graph.dag import DATA_METHODS
from .effect import Effect
from .estimate import estimate
from .identify import optimal_adjustment_set
from .local_tests import local_tests, permutation_baseline
from .refute import Refutation, refute_effect
from .sensitivity import Sensitivity, e_value


def refute(effect: Effect, method: str = "placebo-treatment", **options) -> Refutation:
    """``effect.refute(method, **options)``; see :mod:`causalnet.estimation.refute`."""
    return refute_effect(effect, method, **options)


DATA_METHODS["local_tests"] = local_tests
test_graph = local_tests

__all__ = ["local_tests", "test_graph", "permutation_baseline", "estimate", "Effect", "refute", "Refutation", "Sensitivity", "e_value", "optimal_adjustment_set"]
