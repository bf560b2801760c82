"""Dask DataFrames: fit by summed sufficient statistics equals the pandas fit; lazy queries equal pandas ones."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")


def _same_model(a, b, atol=1e-12):
    assert a.nodes == b.nodes
    for v in a.nodes:
        ma, mb = a.mechanisms[v], b.mechanisms[v]
        if hasattr(ma, "table"):
            assert a.states(v) == b.states(v)
            assert_allclose(ma.table, mb.table, rtol=0, atol=atol)
        else:
            assert_allclose([*ma.weights, ma.bias, ma.sigma], [*mb.weights, mb.bias, mb.sigma], rtol=atol, atol=atol)


def test_dask_is_not_imported_by_causalnet():
    code = "import causalnet, sys; assert not any(m.split('.')[0] == 'dask' for m in sys.modules), 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.filterwarnings("ignore:node 'either'")          # tub=yes, lung=yes never seen: uniform row, both fits
@pytest.mark.parametrize("method", ["mle", "bayes"])
def test_fit_on_dask_equals_pandas(client, asia, method):
    df = asia.sample(3000, seed=4).to_pandas().astype(str)     # strings: partitions see different states
    df["tub"] = "no"
    df.loc[:5, "tub"] = "yes"                                  # a state seen in the first partition only
    ddf = dd.from_pandas(df, npartitions=7)
    _same_model(cn.fit(asia.dag, ddf, method=method), cn.fit(asia.dag, df, method=method))


def test_fit_categoricals_and_model_fit_on_dask(client, sprinkler):
    df = sprinkler.sample(2000, seed=1).to_pandas()
    ddf = dd.from_pandas(df, npartitions=3)
    _same_model(sprinkler.fit(ddf), sprinkler.fit(df))


def test_linear_gaussian_fit_on_dask(client, linear_gaussian):
    df = linear_gaussian.sample(5000, seed=2).to_pandas()
    _same_model(cn.fit(linear_gaussian.dag, dd.from_pandas(df, npartitions=5)), cn.fit(linear_gaussian.dag, df),
                atol=1e-11)


def test_em_on_dask_equals_pandas(client, sprinkler):
    df = sprinkler.sample(1500, seed=3).to_pandas().astype(object)
    df = df.mask(np.random.default_rng(0).random(df.shape) < 0.3)
    ddf = dd.from_pandas(df, npartitions=4)
    opts = dict(method="em", n_iter=8, seed=0, progress=False, states={v: sprinkler.states(v) for v in df})
    a, b = cn.fit(sprinkler.dag, ddf, **opts), cn.fit(sprinkler.dag, df, **opts)
    _same_model(a, b, atol=1e-10)
    assert_allclose(a.fit_info.log_likelihood, b.fit_info.log_likelihood, rtol=1e-12)
    assert np.all(np.diff(a.fit_info.log_likelihood) >= -1e-9)


def test_fit_on_dask_refuses_missing_for_mle(client, sprinkler):
    df = sprinkler.sample(100, seed=0).to_pandas().astype(object)
    df.iloc[5, 0] = None
    with pytest.raises(cn.ModelError, match="missing cell"):
        cn.fit(sprinkler.dag, dd.from_pandas(df, npartitions=2))


def test_query_and_predict_on_dask_are_lazy_and_equal_pandas(client, asia):
    df = asia.sample(300, seed=6).to_pandas().drop(columns=["lung"]).astype(object)
    df = df.mask(np.random.default_rng(1).random(df.shape) < 0.3)
    ddf = dd.from_pandas(df, npartitions=3)
    lazy = asia.query("lung", evidence=ddf)
    assert cn.learning.is_dask_collection(lazy) and list(lazy.columns) == list(asia.states("lung"))
    assert_allclose(lazy.compute().to_numpy(), asia.query("lung", evidence=df).probs, rtol=0, atol=1e-12)
    pred = asia.predict(ddf)
    assert cn.learning.is_dask_collection(pred)
    got, want = pred.compute(), asia.predict(df)
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("name", ["bic", "bdeu", "k2", "loglik"])
def test_score_on_dask_equals_pandas(client, asia, name):
    df = asia.sample(2000, seed=8).to_pandas()
    ddf = dd.from_pandas(df, npartitions=4)
    assert_allclose(cn.score(asia.dag, ddf, score=name), cn.score(asia.dag, df, score=name), rtol=1e-12)


def test_gaussian_score_on_dask_equals_pandas(client, linear_gaussian):
    df = linear_gaussian.sample(3000, seed=9).to_pandas()
    ddf = dd.from_pandas(df, npartitions=3)
    for name in ("bic-g", "loglik"):
        assert_allclose(cn.score(linear_gaussian.dag, ddf, score=name), cn.score(linear_gaussian.dag, df, score=name),
                        rtol=1e-12)


def test_model_fit_em_on_dask_starts_from_the_model(client, sprinkler):
    df = sprinkler.sample(800, seed=5).to_pandas().astype(object)
    df = df.mask(np.random.default_rng(2).random(df.shape) < 0.25)
    a = sprinkler.fit(dd.from_pandas(df, npartitions=3), method="em", n_iter=4, progress=False)
    b = sprinkler.fit(df, method="em", n_iter=4, progress=False)
    _same_model(a, b, atol=1e-10)


def test_dask_series_and_arrays_are_refused(client, sprinkler):
    ddf = dd.from_pandas(sprinkler.sample(50, seed=0).to_pandas(), npartitions=2)
    with pytest.raises(cn.ModelError, match="expected a Dask DataFrame"):
        cn.fit(sprinkler.dag, ddf["Rain"])
    with pytest.raises(cn.EvidenceError, match="expected a Dask DataFrame"):
        sprinkler.query("Wet", evidence=ddf["Rain"])
    with pytest.raises(cn.EvidenceError, match="expected a Dask DataFrame"):
        sprinkler.predict(ddf.to_dask_array())
