"""The Effect result: the question it names, its table row, and a continuous treatment's per-unit effect."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from simdata import graph_for, simulate

import causalnet as cn


def test_str_names_the_question_and_to_pandas_is_one_row():
    df = simulate(500, 2)
    e = cn.estimate(graph_for(), df, "T", "Y", method="ipw", estimand="att", ci="analytic")
    assert e.question == "E[Y | do(T=1), T=1] - E[Y | do(T=0), T=1]"
    text = str(e)
    assert text.startswith("ATT E[Y | do(T=1), T=1] - E[Y | do(T=0), T=1] = ")
    assert "adjusting for Z0, Z1, Z2" in text and "estimand: Σ_{Z0, Z1, Z2}" in text
    row = e.to_pandas()
    assert list(row.columns) == ["question", "estimand", "value", "std_err", "ci_low", "ci_high", "p_value",
                                 "method", "n", "adjustment_set", "formula"]
    assert len(row) == 1 and row.loc[0, "value"] == e.value and row.loc[0, "n"] == 500
    assert repr(e).startswith("<Effect E[Y | do(T=1), T=1]")


def test_continuous_treatment_is_the_per_unit_linear_effect():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(4)
    z = rng.normal(size=700)
    t = z + rng.normal(size=700)
    y = 1.5 * t - z + rng.normal(size=700)
    df = pd.DataFrame({"Z": z, "T": t, "Y": y})
    e = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", ci="analytic")
    ols = sm.OLS(y, sm.add_constant(np.column_stack([t, z]))).fit()
    assert e.method == "regression" and e.question == "E[Y | do(T=1)] - E[Y | do(T=0)]"
    assert_allclose([e.value, e.std_err], [ols.params[1], ols.bse[1]], rtol=1e-9)
    e3 = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", ci="analytic", treated=3.0, control=1.0)
    assert_allclose([e3.value, e3.std_err], [2 * ols.params[1], 2 * ols.bse[1]], rtol=1e-9)


def test_flexible_outcome_model_g_computation_and_cross_fitted_aipw():
    lin = pytest.importorskip("sklearn.linear_model")
    df = simulate(600, 8)
    g = graph_for()
    ols = cn.estimate(g, df, "T", "Y", method="regression", ci="analytic")
    sk = cn.estimate(g, df, "T", "Y", method="regression", model=lin.LinearRegression(), n_bootstrap=3, seed=0)
    assert_allclose(sk.value, ols.value, atol=1e-9)             # same linear model, fitted by scikit-learn
    cf = cn.estimate(g, df, "T", "Y", method="aipw", model=lin.LinearRegression(), ci="analytic", seed=0)
    plain = cn.estimate(g, df, "T", "Y", method="aipw", ci="analytic")
    assert abs(cf.value - plain.value) < 2 * plain.std_err      # cross-fitting changes the fits, not the target
