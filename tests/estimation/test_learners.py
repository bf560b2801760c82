"""The S-, T- and X-learners against EconML's SLearner, TLearner and XLearner with the same base
models on the same data (per-row effects to 1e-6), and the default least-squares learners against a
hand computation with numpy."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from simdata import graph_for, simulate

import causalnet as cn


@pytest.fixture(scope="module")
def frame():
    return simulate(600, 7, k=2)


def _features(frame):
    return frame[["Z0", "Z1"]].to_numpy()


@pytest.mark.parametrize("method", ["s-learner", "t-learner", "x-learner"])
@pytest.mark.parametrize("base", ["linear", "tree"])
def test_meta_learners_equal_econml(frame, method, base):
    ml = pytest.importorskip("econml.metalearners")
    lin = pytest.importorskip("sklearn.linear_model")
    from sklearn.tree import DecisionTreeRegressor

    model = lin.LinearRegression() if base == "linear" else DecisionTreeRegressor(max_depth=3, random_state=0)
    prop = lin.LogisticRegression(C=1.0)
    x, t, y = _features(frame), frame["T"].to_numpy(), frame["Y"].to_numpy()
    if method == "s-learner":
        ref = ml.SLearner(overall_model=model)
    elif method == "t-learner":
        ref = ml.TLearner(models=model)
    else:
        ref = ml.XLearner(models=model, propensity_model=prop)
    ref.fit(y, t, X=x)
    tau = ref.effect(x)
    e = cn.estimate(graph_for(2), frame, "T", "Y", method=method, estimand="cate", effect_modifiers=["Z0"],
                    model=model, propensity_model=prop, n_bootstrap=2, seed=0)
    assert e.effects.shape == (len(frame),)
    assert_allclose(e.effects, tau, rtol=0, atol=1e-6)
    assert_allclose(e.value, tau.mean(), rtol=0, atol=1e-6)


def test_default_learners_equal_least_squares_by_hand(frame):
    x, t, y = _features(frame), frame["T"].to_numpy(), frame["Y"].to_numpy()
    design = np.column_stack([np.ones(len(y)), x])
    b1 = np.linalg.lstsq(design[t == 1], y[t == 1], rcond=None)[0]
    b0 = np.linalg.lstsq(design[t == 0], y[t == 0], rcond=None)[0]
    e = cn.estimate(graph_for(2), frame, "T", "Y", method="t-learner", estimand="att", n_bootstrap=2, seed=0)
    tau = design @ (b1 - b0)
    assert_allclose(e.effects, tau, rtol=0, atol=1e-10)
    assert_allclose(e.value, tau[t == 1].mean(), rtol=0, atol=1e-10)
    # X-learner with linear arm models and linear effect models: τ1, τ0 are linear, combined by the propensity
    ex = cn.estimate(graph_for(2), frame, "T", "Y", method="x-learner", n_bootstrap=2, seed=0)
    c1 = np.linalg.lstsq(design[t == 1], y[t == 1] - design[t == 1] @ b0, rcond=None)[0]
    c0 = np.linalg.lstsq(design[t == 0], design[t == 0] @ b1 - y[t == 0], rcond=None)[0]
    import statsmodels.api as sm

    g = sm.Logit(t, design).fit(disp=0, tol=1e-12).predict(design)
    assert_allclose(ex.effects, g * (design @ c0) + (1 - g) * (design @ c1), rtol=0, atol=1e-8)


def test_learner_bootstrap_and_refusals(frame):
    e = cn.estimate(graph_for(2), frame, "T", "Y", method="s-learner", n_bootstrap=5, seed=0)
    assert e.replicates.shape == (5,) and e.ci[0] < e.value < e.ci[1]
    with pytest.raises(cn.ModelError, match="no analytic"):
        cn.estimate(graph_for(2), frame, "T", "Y", method="t-learner", ci="analytic")
    with pytest.raises(cn.ModelError, match="per-row"):
        cn.estimate(graph_for(2), frame, "T", "Y", method="ipw", estimand="cate", effect_modifiers=["Z0"])


def test_refutation_of_a_learner_and_of_a_design(frame):
    e = cn.estimate(graph_for(2), frame, "T", "Y", method="t-learner", n_bootstrap=5, seed=0)
    r = e.refute("placebo-treatment", n_simulations=25, seed=0)
    assert r.passed and np.all(np.abs(r.simulations) < abs(e.value))
    m = cn.estimate(graph_for(2), frame, "T", "Y", method="matching", estimand="att")
    assert m.refute("data-subset", n_simulations=5, seed=0).passed
