"""Natural direct and indirect effects against DoWhy's linear mediation estimate (an oracle only).

DoWhy estimates the effects from data (two-stage linear regression on the
graph's mediation estimand); causalnet computes them exactly from the model
as nested counterfactuals. On a linear-Gaussian model both target the same
numbers: NDE = the direct coefficient, NIE = the product along the mediated
paths. DoWhy is not a dependency: install it (in a separate environment if it
would move numpy/scipy) to run this file.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import causalnet as cn

dowhy = pytest.importorskip("dowhy")
nx = pytest.importorskip("networkx")
linear = pytest.importorskip("dowhy.causal_estimators.linear_regression_estimator")


def dowhy_mediation(model: cn.CausalModel, n: int, seed: int, treatment: str, outcome: str) -> tuple[float, float]:
    df = model.sample(n, seed=seed).to_pandas()
    cm = dowhy.CausalModel(data=df, treatment=treatment, outcome=outcome, graph=nx.DiGraph(list(model.dag.edges)))
    kw = dict(method_name="mediation.two_stage_regression", confidence_intervals=False, test_significance=False,
              method_params={"first_stage_model": linear.LinearRegressionEstimator,
                             "second_stage_model": linear.LinearRegressionEstimator})
    out = []
    for kind in ("nonparametric-nde", "nonparametric-nie"):
        est = cm.identify_effect(estimand_type=kind, proceed_when_unidentifiable=True)
        out.append(float(cm.estimate_effect(est, **kw).value))
    return out[0], out[1]


@pytest.mark.slow
@pytest.mark.parametrize("weights", [
    dict(xm=1.5, wm=-0.5, xy=0.7, my=2.0, wy=0.3, wx=0.8),
    dict(xm=-0.8, wm=0.4, xy=1.2, my=0.5, wy=-1.0, wx=0.0),
])
def test_linear_mediation_matches_dowhy(weights):
    w = weights
    m = cn.CausalModel({
        "W": cn.LinearGaussian(sigma=1.0),
        "X": cn.LinearGaussian(["W"], [w["wx"]], sigma=1.0),
        "M": cn.LinearGaussian(["X", "W"], [w["xm"], w["wm"]], sigma=1.0),
        "Y": cn.LinearGaussian(["X", "M", "W"], [w["xy"], w["my"], w["wy"]], sigma=1.0),
    })
    e = m.effects("X", "Y", treated=1.0, control=0.0, mediators=["M"])
    assert np.isclose(e.natural_direct, w["xy"]) and np.isclose(e.natural_indirect, w["xm"] * w["my"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nde, nie = dowhy_mediation(m, 20_000, 0, "X", "Y")
    # 20 000 samples: the regression coefficients are within a few standard errors (~0.01) of the truth
    assert abs(nde - e.natural_direct) < 0.06
    assert abs(nie - e.natural_indirect) < 0.06
