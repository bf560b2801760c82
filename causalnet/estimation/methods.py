"""The registry of estimation methods: ``method=`` name -> estimator class.

Every estimator is a subclass of :class:`~causalnet.estimation.estimators.Estimator`
and declares how the graph identifies its effect (``identification``: an
adjustment set, the plug-in formula, an instrument, a front-door set, the
study design, or the sequential back door), its default interval
(``default_ci``) and whether it gives per-row effects (``per_row``).
:func:`causalnet.estimate` reads these attributes; adding a method is adding a
class here.
"""

from __future__ import annotations

from .designs import DifferenceInDifferences, RegressionDiscontinuity
from .estimators import AIPW, IPW, Plugin, Regression, TwoStageLeastSquares
from .frontdoor import FrontDoorLinear
from .learners import SLearner, TLearner, XLearner
from .matching import Matching
from .sequential import SequentialGFormula
from .tmle import TMLE

__all__ = ["ESTIMATORS"]

ESTIMATORS: dict = {cls.name: cls for cls in (
    Regression, IPW, AIPW, TMLE, Matching, TwoStageLeastSquares, Plugin, FrontDoorLinear,
    DifferenceInDifferences, RegressionDiscontinuity, SLearner, TLearner, XLearner, SequentialGFormula)}
