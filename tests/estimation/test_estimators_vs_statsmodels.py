"""cn.estimate against statsmodels: OLS, GLM and Logit fits put through the same formulas by hand."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import special
from simdata import graph_for, simulate

import causalnet as cn
from causalnet.estimation.linear import bootstrap_counts


@pytest.fixture
def frame():
    return simulate(800, 0)


@pytest.fixture
def graph():
    return graph_for()

sm = pytest.importorskip("statsmodels.api")


def _x(frame, cols):
    return sm.add_constant(frame[cols].to_numpy(float), has_constant="add")


ZS = ["Z0", "Z1", "Z2"]


def test_linear_regression_equals_ols_coefficient_and_se(frame, graph):
    e = cn.estimate(graph, frame, "T", "Y", method="regression", ci="analytic")
    ols = sm.OLS(frame["Y"], _x(frame, ["T", *ZS])).fit()
    assert sorted(e.adjustment_set) == ZS
    assert_allclose(e.value, ols.params.iloc[1], rtol=0, atol=1e-10)
    assert_allclose(e.std_err, ols.bse.iloc[1], rtol=1e-10)
    z = 1.959963984540054                                  # normal 97.5% quantile
    assert_allclose(e.ci, (e.value - z * ols.bse.iloc[1], e.value + z * ols.bse.iloc[1]), rtol=1e-10)
    assert_allclose(e.p_value, 2 * sm.stats.stattools.stats.norm.sf(abs(ols.tvalues.iloc[1])), rtol=1e-6, atol=1e-300)


def test_effect_modifier_cate_equals_ols_contrast(frame, graph):
    e = cn.estimate(graph, frame, "T", "Y", method="regression", ci="analytic", estimand="cate",
                    effect_modifiers=["Z0"])
    x = np.column_stack([np.ones(len(frame)), frame["T"], frame[ZS], frame["T"] * frame["Z0"]])
    ols = sm.OLS(frame["Y"].to_numpy(), x).fit()
    b = ols.params
    assert_allclose(e.effects, b[1] + b[5] * frame["Z0"], rtol=0, atol=1e-9)
    c = np.zeros(6)
    c[1], c[5] = 1.0, frame["Z0"].mean()
    assert_allclose(e.value, c @ b, atol=1e-10)
    assert_allclose(e.std_err, float(np.sqrt(c @ ols.cov_params() @ c)), rtol=1e-9)


def test_categorical_treatment_contrast_equals_ols_t_test():
    rng = np.random.default_rng(3)
    n = 600
    z = rng.normal(size=n)
    t = np.where(z + rng.normal(size=n) > 0.5, "b", np.where(rng.random(n) < 0.5, "a", "c"))
    y = {"a": 0.0, "b": 1.0, "c": 3.0}
    yy = np.array([y[v] for v in t]) + z + rng.normal(size=n)
    df = pd.DataFrame({"Z": z, "T": pd.Categorical(t), "Y": yy})
    e = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", method="regression", ci="analytic",
                    treated="c", control="b")
    x = np.column_stack([np.ones(n), t == "b", t == "c", z]).astype(float)
    ols = sm.OLS(yy, x).fit()
    c = np.array([0, -1.0, 1.0, 0])
    assert_allclose(e.value, c @ ols.params, atol=1e-10)
    assert_allclose(e.std_err, float(np.sqrt(c @ ols.cov_params() @ c)), rtol=1e-9)
    assert e.question == "E[Y | do(T=c)] - E[Y | do(T=b)]"


def test_logistic_g_computation_equals_glm_with_delta_method(frame, graph):
    df = frame.assign(Y=(frame["Y"] > frame["Y"].median()).astype(int))
    e = cn.estimate(graph, df, "T", "Y", method="regression", ci="analytic")
    x = _x(df, ["T", *ZS])
    glm = sm.GLM(df["Y"], x, family=sm.families.Binomial()).fit(tol=1e-12)
    x1, x0 = x.copy(), x.copy()
    x1[:, 1], x0[:, 1] = 1.0, 0.0

    def ate(b):
        return np.mean(special.expit(x1 @ b) - special.expit(x0 @ b))

    b = glm.params.to_numpy()
    grad = np.array([(ate(b + h) - ate(b - h)) / 2e-6 for h in np.eye(len(b)) * 1e-6])
    assert_allclose(e.value, ate(b), atol=1e-9)
    assert_allclose(e.std_err, np.sqrt(grad @ glm.cov_params().to_numpy() @ grad), rtol=1e-5)
    assert_allclose(e.means, [np.mean(special.expit(x1 @ b)), np.mean(special.expit(x0 @ b))], atol=1e-9)


def _propensity(df):
    return sm.Logit(df["T"], _x(df, ZS)).fit(disp=0, tol=1e-12).predict()


@pytest.mark.parametrize("target", ["ate", "att", "atc"])
def test_ipw_equals_hand_formula_with_statsmodels_propensity(frame, graph, target):
    e = cn.estimate(graph, frame, "T", "Y", method="ipw", estimand=target, ci="analytic")
    p, t, y = _propensity(frame), frame["T"].to_numpy(), frame["Y"].to_numpy()
    rho = {"ate": 1.0, "att": p, "atc": 1 - p}[target]
    w1, w0 = t * rho / p, (1 - t) * rho / (1 - p)
    assert_allclose(e.value, (w1 @ y) / w1.sum() - (w0 @ y) / w0.sum(), atol=1e-8)


@pytest.mark.parametrize("target", ["ate", "att", "atc"])
def test_aipw_equals_hand_formula_with_statsmodels_models(frame, graph, target):
    e = cn.estimate(graph, frame, "T", "Y", method="aipw", estimand=target, ci="analytic")
    p, t, y = _propensity(frame), frame["T"].to_numpy(), frame["Y"].to_numpy()
    x = _x(frame, ZS)
    mu1 = sm.OLS(y[t == 1], x[t == 1]).fit().predict(x)
    mu0 = sm.OLS(y[t == 0], x[t == 0]).fit().predict(x)
    r, rho = {"ate": (1.0, 1.0), "att": (t, p), "atc": (1 - t, 1 - p)}[target]
    r = np.broadcast_to(r, y.shape)
    s1 = r * mu1 + t * rho / p * (y - mu1)
    s0 = r * mu0 + (1 - t) * rho / (1 - p) * (y - mu0)
    value = (s1 - s0).sum() / r.sum()
    assert_allclose(e.value, value, atol=1e-8)
    if target == "ate":
        phi = s1 - s0 - value
        assert_allclose(e.std_err, np.sqrt(np.mean(phi ** 2) / len(y)), rtol=1e-6)


@pytest.mark.parametrize("method", ["regression", "ipw", "aipw"])
def test_vectorised_bootstrap_replicates_equal_refits_on_resampled_frames(frame, graph, method):
    e = cn.estimate(graph, frame, "T", "Y", method=method, n_bootstrap=3, seed=7)
    counts = bootstrap_counts(len(frame), 3, np.random.default_rng(7))
    for b in range(3):
        rows = np.repeat(np.arange(len(frame)), counts[b].astype(int))
        again = cn.estimate(graph, frame.iloc[rows].reset_index(drop=True), "T", "Y", method=method,
                            ci="analytic")
        assert_allclose(e.replicates[b], again.value, rtol=0, atol=1e-7)


def test_binary_outcome_bootstrap_replicates_equal_glm_refits(frame, graph):
    df = frame.assign(Y=(frame["Y"] > 0).astype(int))
    e = cn.estimate(graph, df, "T", "Y", method="aipw", n_bootstrap=2, seed=1)
    counts = bootstrap_counts(len(df), 2, np.random.default_rng(1))
    x = _x(df, ZS)
    t, y = df["T"].to_numpy(), df["Y"].to_numpy()
    for b in range(2):
        w = counts[b]
        p = sm.GLM(t, x, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-13).predict(x)
        mu = [sm.GLM(y[t == a], x[t == a], family=sm.families.Binomial(), freq_weights=w[t == a]).fit(tol=1e-13)
              .predict(x) for a in (1, 0)]
        s = mu[0] - mu[1] + t / p * (y - mu[0]) - (1 - t) / (1 - p) * (y - mu[1])
        assert_allclose(e.replicates[b], (w @ s) / w.sum(), atol=1e-7)
