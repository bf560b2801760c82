"""Sensitivity (E-value closed form; Cinelli & Hazlett on the Darfur data against PySensemakr and the
published figures) and refutations (on simulated data with a known effect and with none)."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from simdata import graph_for, simulate

import causalnet as cn
from causalnet.estimation.sensitivity import e_value, partial_r2_bounds, robustness_value


@pytest.fixture
def frame():
    return simulate(800, 0)


@pytest.fixture
def graph():
    return graph_for()


def test_e_value_closed_form():
    # VanderWeele & Ding (2017): RR = 3.9 gives E = 7.26; protective RR = 0.8 folds to 1/0.8
    assert_allclose(e_value(3.9), 3.9 + np.sqrt(3.9 * 2.9))
    assert round(e_value(3.9), 2) == 7.26
    assert_allclose(e_value(0.8), 1.25 + np.sqrt(1.25 * 0.25))
    assert e_value(1.0) == 1.0
    with pytest.raises(cn.ModelError):
        e_value(-1.0)


def test_e_value_of_a_continuous_outcome_uses_the_smd_approximation(frame, graph):
    e = cn.estimate(graph, frame, "T", "Y", method="regression", ci="analytic")
    s = e.sensitivity("e-value")
    d = e.value / frame["Y"].std(ddof=1)
    assert_allclose(s.rr, np.exp(0.91 * d))
    assert_allclose(s.e_value, e_value(np.exp(0.91 * d)))
    lo = np.exp(0.91 * e.ci[0] / frame["Y"].std(ddof=1))
    assert_allclose(s.e_value_ci, e_value(lo))                  # the limit nearer the null
    assert "risk ratio" in s.verdict


def test_e_value_of_a_binary_outcome_uses_the_risk_ratio(frame, graph):
    df = frame.assign(Y=(frame["Y"] > 1).astype(int))
    e = cn.estimate(graph, df, "T", "Y", method="regression", ci="analytic")
    s = e.sensitivity("e-value")
    assert_allclose(s.rr, e.means[0] / e.means[1])
    assert_allclose(s.e_value, e_value(e.means[0] / e.means[1]))


@pytest.fixture(scope="module")
def darfur():
    smkr = pytest.importorskip("sensemakr")
    return smkr.load_darfur()


DARFUR_COVS = ["age", "farmer_dar", "herder_dar", "pastvoted", "hhsize_darfur", "female", "village"]


def test_partial_r2_on_darfur_matches_published_and_pysensemakr(darfur):
    from sensemakr import bias_functions as bf
    from sensemakr import sensitivity_bounds as sb
    from sensemakr import sensitivity_statistics as ss

    sm = pytest.importorskip("statsmodels.api")
    edges = [(c, v) for c in DARFUR_COVS for v in ("directlyharmed", "peacefactor")]
    g = cn.DAG(edges + [("directlyharmed", "peacefactor")])
    df = darfur.assign(village=darfur["village"].astype(str))
    e = cn.estimate(g, df, "directlyharmed", "peacefactor", method="regression", ci="analytic")
    s = e.sensitivity("partial-r2", benchmark="female", kd=2)
    # Cinelli & Hazlett (2020), Sec. 5: estimate 0.097, R²_{Y~D|X} = 2.2%, RV = 13.9%, RV_{α=0.05} = 7.6%
    assert round(s.estimate, 3) == 0.097 and round(e.value, 3) == 0.097
    assert round(s.partial_r2_yd, 3) == 0.022
    assert round(s.rv_q, 3) == 0.139 and round(s.rv_qa, 3) == 0.076
    assert_allclose(s.rv_q, ss.robustness_value(t_statistic=s.t, dof=s.dof).iloc[0], rtol=1e-10)
    assert_allclose(s.rv_qa, ss.robustness_value(t_statistic=s.t, dof=s.dof, alpha=0.05).iloc[0], rtol=1e-10)
    # the benchmark: partial R² of 'female' from statsmodels fits, bounds and adjusted estimate from PySensemakr
    x = pd.get_dummies(df[DARFUR_COVS], columns=["village"], drop_first=True, dtype=float)
    out = sm.OLS(df["peacefactor"], sm.add_constant(pd.concat([df[["directlyharmed"]], x], axis=1))).fit()
    trt = sm.OLS(df["directlyharmed"], sm.add_constant(x)).fit()
    r2yxj = out.tvalues["female"] ** 2 / (out.tvalues["female"] ** 2 + out.df_resid)
    r2dxj = trt.tvalues["female"] ** 2 / (trt.tvalues["female"] ** 2 + trt.df_resid)
    ref = sb.ovb_partial_r2_bound(r2dxj_x=r2dxj, r2yxj_dx=r2yxj, kd=2)
    row = s.table.iloc[0]
    assert_allclose([row["r2dz_x"], row["r2yz_dx"]], [ref["r2dz_x"].iloc[0], ref["r2yz_dx"].iloc[0]], rtol=1e-8)
    est, se, dof = float(out.params["directlyharmed"]), float(out.bse["directlyharmed"]), int(out.df_resid)
    adj = bf.adjusted_estimate(float(row["r2dz_x"]), float(row["r2yz_dx"]), estimate=est, se=se, dof=dof)
    assert_allclose(row["adjusted_estimate"], adj, rtol=1e-8)
    adj_se = bf.adjusted_se(float(row["r2dz_x"]), float(row["r2yz_dx"]), se=se, dof=dof)
    assert_allclose(row["adjusted_se"], adj_se, rtol=1e-8)


@pytest.mark.parametrize("t,dof,q,alpha", [(4.18, 783, 1, None), (4.18, 783, 1, 0.05), (40.0, 100, 1, 0.05),
                                           (1.5, 50, 0.5, None), (1.0, 50, 1, 0.05), (3.0, 20, 2, 0.1)])
def test_robustness_value_equals_pysensemakr(t, dof, q, alpha):
    ss = pytest.importorskip("sensemakr.sensitivity_statistics")
    assert_allclose(robustness_value(t, dof, q, alpha),
                    ss.robustness_value(t_statistic=t, dof=dof, q=q, alpha=0.05 if alpha is None else alpha).iloc[0]
                    if alpha is not None else ss.robustness_value(t_statistic=t, dof=dof, q=q).iloc[0], rtol=1e-10)


def test_partial_r2_bounds_equal_pysensemakr():
    sb = pytest.importorskip("sensemakr.sensitivity_bounds")
    for r2d, r2y, k in [(0.01, 0.1, 1), (0.05, 0.2, 3), (0.002, 0.01, 2)]:
        ref = sb.ovb_partial_r2_bound(r2dxj_x=r2d, r2yxj_dx=r2y, kd=k)
        assert_allclose(partial_r2_bounds(r2d, r2y, k), [ref["r2dz_x"].iloc[0], ref["r2yz_dx"].iloc[0]], rtol=1e-10)


def test_refutations_pass_on_a_real_effect(frame, graph):
    e = cn.estimate(graph, frame, "T", "Y", method="aipw", ci="analytic")
    for method in ("placebo-treatment", "dummy-outcome", "random-common-cause", "data-subset", "bootstrap"):
        r = e.refute(method, n_simulations=40, seed=0)
        assert r.passed, str(r)
        assert len(r.simulations) == 40 and 0 < r.p_value <= 1
    placebo = cn.refute(e, "placebo-treatment", n_simulations=40, seed=0)
    assert abs(placebo.new_value) < 0.2 and placebo.p_value == pytest.approx(1 / 41)
    dummy = e.refute("dummy-outcome", n_simulations=40, seed=1)
    assert abs(dummy.new_value) < 0.1


def test_placebo_refutation_fails_when_there_is_no_effect(graph):
    df = simulate(800, 5, effect=0.0)
    df = df.assign(Y=df["Y"] - 0.5 * df["T"] * df["Z0"])
    e = cn.estimate(graph, df, "T", "Y", method="regression", ci="analytic")
    r = e.refute("placebo-treatment", n_simulations=40, seed=0)
    assert not r.passed and "fails" in r.verdict


def test_refute_rejects_bad_options(frame, graph):
    e = cn.estimate(graph, frame, "T", "Y", method="regression", ci="analytic")
    with pytest.raises(cn.ModelError, match="refutation method"):
        e.refute("nope")
    with pytest.raises(cn.ModelError, match="n_simulations"):
        e.refute("bootstrap", n_simulations=1)
    with pytest.raises(cn.ModelError, match="sensitivity method"):
        e.sensitivity("nope")
