"""The AIPW bootstrap's sufficient-statistic path (linear arm models, weights from the propensity's
linear predictor) equals refitting the data-path estimator on each resampled frame, for every target
population and with clipping."""

import numpy as np
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
