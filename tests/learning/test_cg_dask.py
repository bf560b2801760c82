"""Conditional Gaussian (mixed) families from Dask DataFrames: moments summed over partitions equal the pandas fit.

Oracle: ``cn.fit`` / ``cn.score`` on the same rows as one pandas DataFrame (itself tested against per-configuration
``numpy.linalg.lstsq`` and pgmpy's scores). Partitions see different discrete states (strings, a state present in
one partition only), so the per-configuration moments are re-indexed onto the union of states before they merge.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")


def _params(m, v):
    mech = m.mechanisms[v]
    if hasattr(mech, "table"):
        return [np.asarray(mech.table)]
    if hasattr(mech, "intercept"):
        return [np.asarray(mech.intercept), np.asarray(mech.weights), np.asarray(mech.variance)]
    return [np.asarray(mech.weights), np.asarray([mech.bias, mech.sigma])]


def _same(a, b, rtol=1e-10):
    assert a.nodes == b.nodes
    for v in a.nodes:
        assert type(a.mechanisms[v]) is type(b.mechanisms[v]), v
        if a.spec(v).is_discrete:
            assert a.states(v) == b.states(v)
        for x, y in zip(_params(a, v), _params(b, v)):
            assert_allclose(x, y, rtol=rtol, atol=1e-12)


def _frame(model, n, seed):
    df = model.sample(n, seed=seed).to_pandas()
    for v in model.nodes:
        if model.spec(v).is_discrete:
            df[v] = df[v].astype(str)          # strings: each partition knows only the states it sees
    return df


@pytest.mark.parametrize("method", ["mle", "bayes"])
def test_cg_fit_on_dask_equals_pandas(client, method):
    m = cn.gallery.load("waste-incinerator")
    df = _frame(m, 4000, 1).sort_values("Waste", kind="stable").reset_index(drop=True)   # a state per partition
    ddf = dd.from_pandas(df, npartitions=5)
    parts = [set(p["Waste"]) for p in ddf.partitions]
    assert any(len(s) == 1 for s in parts)     # the re-indexing onto the union of states is exercised
    got, want = cn.fit(m.dag, ddf, method=method), cn.fit(m.dag, df, method=method)
    _same(got, want)
    assert isinstance(got.mechanisms["Dust"], cn.ConditionalLinearGaussian)


def test_cg_model_fit_on_dask_keeps_the_model_layout(client):
    m = cn.gallery.load("mixed-treatment")
    df = m.sample(3000, seed=2).to_pandas()
    _same(m.fit(dd.from_pandas(df, npartitions=4)), m.fit(df))


def test_cg_dask_fit_names_a_configuration_without_rows(client):
    m = cn.gallery.load("waste-incinerator")
    df = _frame(m, 3000, 3)
    df = df[~((df["Burning"] == m.states("Burning")[0]) & (df["Waste"] == m.states("Waste")[0]))]
    df = df.reset_index(drop=True)
    with pytest.raises(cn.ModelError, match="Dust") as e:
        cn.fit(m.dag, dd.from_pandas(df, npartitions=3), states={v: m.states(v) for v in m.nodes
                                                                    if m.spec(v).is_discrete})
    with pytest.raises(cn.ModelError) as e2:
        cn.fit(m.dag, df, states={v: m.states(v) for v in m.nodes if m.spec(v).is_discrete})
    assert str(e.value) == str(e2.value)


def _mixed_em_model():
    return cn.CausalModel({
        "A": cn.Categorical([0.4, 0.6], states=["a0", "a1"]),
        "B": cn.CPT(["A"], [[0.8, 0.2], [0.3, 0.7]], states=["b0", "b1"]),
        "X": cn.ConditionalLinearGaussian(["A"], [0.0, 2.0], np.zeros((2, 0)), [1.0, 0.5]),
        "Y": cn.ConditionalLinearGaussian(["A", "X"], [1.0, -1.0], [[0.5], [1.5]], [0.3, 0.8]),
    })


def test_em_on_dask_with_cg_families_equals_pandas(client):
    m = _mixed_em_model()
    df = m.sample(1200, seed=4).to_pandas()
    df["B"] = df["B"].astype(object).mask(np.random.default_rng(0).random(len(df)) < 0.3)   # B is in no CG family
    opts = dict(method="em", n_iter=6, seed=0, progress=False, states={"A": m.states("A"), "B": m.states("B")})
    a, b = cn.fit(m.dag, dd.from_pandas(df, npartitions=4), **opts), cn.fit(m.dag, df, **opts)
    _same(a, b, rtol=1e-9)
    assert_allclose(a.fit_info.log_likelihood, b.fit_info.log_likelihood, rtol=1e-12)


def test_em_on_dask_refuses_a_hidden_cell_in_a_cg_family(client):
    m = _mixed_em_model()
    df = m.sample(300, seed=5).to_pandas()
    df["A"] = df["A"].astype(object).mask(np.random.default_rng(1).random(len(df)) < 0.2)
    with pytest.raises(cn.ModelError, match=r"'X'.*hidden cell.*\['A'\].*ddf.compute\(\)"):
        cn.fit(m.dag, dd.from_pandas(df, npartitions=3), method="em", n_iter=2, progress=False,
               states={"A": m.states("A"), "B": m.states("B")})


@pytest.mark.parametrize("name", ["loglik-cg", "bic-cg", "aic-cg"])
def test_cg_scores_on_dask_equal_pandas(client, name):
    m = cn.gallery.load("waste-incinerator")
    df = _frame(m, 3000, 6)
    ddf = dd.from_pandas(df, npartitions=4)
    for g in (m.dag, cn.DAG([("Burning", "CO2"), ("Filter", "Efficiency"), ("CO2", "Dust")], nodes=m.nodes)):
        want = cn.score(g, df, score=name)
        assert np.isfinite(want)
        assert_allclose(cn.score(g, ddf, score=name), want, rtol=1e-10)
