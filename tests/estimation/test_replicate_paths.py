"""The AIPW bootstrap's sufficient-statistic path (linear arm models, weights from the propensity's
linear predictor) equals refitting the data-path estimator on each resampled frame, for every target
population and with clipping."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from simdata import graph_for, simulate

import causalnet as cn
from causalnet.estimation.linear import bootstrap_counts


@pytest.mark.parametrize("estimand", ["ate", "att", "atc"])
@pytest.mark.parametrize("trim", [None, 0.2])
def test_aipw_replicates_equal_refits(estimand, trim):
    frame = simulate(500, 11)
    g = graph_for()
    e = cn.estimate(g, frame, "T", "Y", method="aipw", estimand=estimand, trim=trim, n_bootstrap=3, seed=2)
    counts = bootstrap_counts(len(frame), 3, np.random.default_rng(2))
    for b in range(3):
        rows = np.repeat(np.arange(len(frame)), counts[b].astype(int))
        again = cn.estimate(g, frame.iloc[rows].reset_index(drop=True), "T", "Y", method="aipw", estimand=estimand,
                            trim=trim, ci="analytic")
        assert_allclose(e.replicates[b], again.value, rtol=0, atol=1e-8)


@pytest.mark.parametrize("method", ["regression", "ipw"])
@pytest.mark.parametrize("estimand", ["ate", "att", "atc"])
def test_dask_partition_sums_equal_pandas(method, estimand):
    dd = pytest.importorskip("dask.dataframe")
    frame = simulate(3000, 12)
    g = graph_for()
    kw = {"method": method, "estimand": estimand, "ci": "analytic", "trim": 0.05}
    if method == "regression":
        kw["effect_modifiers"] = ["Z0"]
    ref = cn.estimate(g, frame, "T", "Y", **kw)
    ddf = dd.from_pandas(frame, npartitions=4)
    e = cn.estimate(g, ddf, "T", "Y", **kw)
    assert e.diagnostics["partitions"] == 4
    assert_allclose(e.value, ref.value, rtol=0, atol=1e-10)
    assert_allclose(e.std_err, ref.std_err, rtol=1e-10)
    assert e.n == ref.n and e.adjustment_set == ref.adjustment_set


def test_dask_continuous_treatment_and_fallback():
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    z = rng.normal(size=2000)
    t = z + rng.normal(size=2000)
    frame = pd.DataFrame({"Z": z, "T": t, "Y": 1.5 * t + z + rng.normal(size=2000)})
    ddf = dd.from_pandas(frame, npartitions=3)
    kw = {"method": "regression", "ci": "analytic", "treated": 2.0, "control": 0.5}
    e, ref = cn.estimate("Z -> T -> Y; Z -> Y", ddf, "T", "Y", **kw), cn.estimate("Z -> T -> Y; Z -> Y", frame, "T", "Y", **kw)
    assert "partitions" in e.diagnostics
    assert_allclose([e.value, e.std_err], [ref.value, ref.std_err], rtol=1e-10)
    boot = cn.estimate("Z -> T -> Y; Z -> Y", ddf, "T", "Y", method="regression", n_bootstrap=5, seed=0)
    assert "partitions" not in boot.diagnostics           # the bootstrap computes the frame first
    assert e.refute("data-subset", n_simulations=5, seed=0).passed
