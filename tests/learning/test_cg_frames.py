"""DataFrame evidence on mixed (conditional Gaussian) models: m.query(target, evidence=df) and m.predict(df).

Oracle: the same question asked row by row with plain evidence (a dict per row), which takes no frame path;
the merged mixture's moments, cdf and log-evidence must equal the row's own answer.
"""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn


@pytest.fixture(scope="module")
def waste_frame():
    m = cn.gallery.load("waste-incinerator")
    df = m.sample(8, seed=0).to_pandas()
    df.loc[[0, 3], "Filter"] = None
    df.loc[[1, 3, 6], "Dust"] = np.nan
    df.loc[[2], "Burning"] = None
    df.loc[[5], "CO2"] = np.nan
    return m, df


def _row(df, i):
    return {k: v for k, v in df.iloc[i].items() if not pd.isna(v)}


def test_real_target_with_several_missing_patterns_merges_into_one_mixture(waste_frame):
    m, df = waste_frame
    ev = df.drop(columns=["Efficiency"])
    got = m.query("Efficiency", evidence=ev)
    assert isinstance(got, cn.GaussianMixture) and got.batched
    x = np.linspace(-4.5, -0.5, 8)
    for i in range(len(df)):
        ref = m.query("Efficiency", evidence=_row(ev, i))
        assert_allclose(got.mean[i], ref.mean, rtol=1e-12)
        assert_allclose(got.var[i], ref.var, rtol=1e-10)
        assert_allclose(got.cdf(np.full(len(df), x[i]))[i], ref.cdf(x[i]), rtol=1e-10, atol=1e-14)
        assert_allclose(got.log_evidence[i], ref.log_evidence, rtol=1e-12)


def test_discrete_target_and_predict_fill_each_kind(waste_frame):
    m, df = waste_frame
    p = m.query("Filter", evidence=df.drop(columns=["Filter"]))
    filled = m.predict(df)
    for i in range(len(df)):
        row = _row(df.drop(columns=["Filter"]), i)
        ref = m.query("Filter", evidence=row)
        assert_allclose(p.probs[i], ref.probs, rtol=1e-10, atol=1e-300)
        if pd.isna(df["Dust"].iloc[i]):                      # a missing real cell gets its posterior mean
            own = {k: v for k, v in _row(df, i).items() if k != "Dust"}
            assert_allclose(filled["Dust"].iloc[i], m.query("Dust", evidence=own).mean[0], rtol=1e-12)
        else:
            assert filled["Dust"].iloc[i] == df["Dust"].iloc[i]
    assert not filled[["Filter", "Burning", "Dust", "CO2"]].isna().any().any()
    assert df["Dust"].isna().sum() == 3                       # input untouched


@pytest.mark.slow
def test_a_fitted_mixed_model_predicts_a_held_out_discrete_column():
    m = cn.gallery.load("waste-incinerator")
    train, test = m.sample(20_000, seed=1).to_pandas(), m.sample(2_000, seed=2).to_pandas()
    f = cn.fit(m.dag, train)
    pred = f.predict(test, columns=["Burning"])["Burning"]
    truth = m.predict(test, columns=["Burning"])["Burning"]
    assert (pred == truth).mean() > 0.99                      # the fitted model decides as the true one
