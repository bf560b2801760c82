"""The Mixtape's Lalonde figures (Cunningham, *Causal Inference: The Mixtape*, 2021, ch. 5), reproduced.

Data: the NSW treated of Dehejia and Wahba against the CPS-1 controls, as the
`causaldata` package ships them (`nsw_mixtape`, `cps_mixtape`, the Mixtape's own
.dta files). The propensity model is the Mixtape's ``logit treat age agesq agecube
educ edusq marr nodegree black hisp re74 re75 u74 u75 interaction1``, the generated
columns stored as Stata's ``gen`` stores them (float32).

Published figures (the Mixtape's Stata code, `Do/nsw_pscore.do` and
`teffects_nn.do`, and the book's text; the trimmed `teffects` runs from the
Mixtape's PSM lab): IPW on all rows −$11,876 (non-normalised) and −$7,238
(normalised); on the rows with ``0.1 < pscore < 0.9`` $2,006 and $1,806 (the book
truncates to the dollar); ``teffects psmatch ..., atet nn(5)``: ATT 1,725.082; on
the trimmed rows, the models refitted: ``teffects ipw, atet`` $2,647, ``ate``
$1,611, ``teffects psmatch, ate nn(5)`` 1,758.837.

Two things the figures depend on, and that an earlier attempt missed: the
columns are int8 in the .dta (``age * age`` in int8 wraps around; Stata computes
in double), and the logistic fit must converge on a design whose columns range
from 0/1 to age³ and educ·re74 (causalnet's Newton solves in Jacobi-scaled
coordinates). Stata's ``teffects`` keeps every tied match, and the ATT is
1,725.08 only with the ties.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn

COVS = "age agesq agecube educ edusq marr nodegree black hisp re74 re75 u74 u75 interaction1".split()


@pytest.fixture(scope="module")
def cps():
    cd = pytest.importorskip("causaldata")
    nsw, cps = cd.nsw_mixtape.load_pandas().data, cd.cps_mixtape.load_pandas().data
    df = pd.concat([nsw[nsw["treat"] == 1], cps]).drop(columns="data_id").reset_index(drop=True).astype(float)
    f32 = np.float32
    df["agesq"] = (df["age"] * df["age"]).astype(f32)
    df["agecube"] = (df["age"] ** 3).astype(f32)
    df["edusq"] = (df["educ"] * df["educ"]).astype(f32)
    df["u74"] = (df["re74"] == 0).astype(float)
    df["u75"] = (df["re75"] == 0).astype(float)
    df["interaction1"] = (df["educ"].astype(f32) * df["re74"].astype(f32)).astype(f32)
    return df.astype(float)


@pytest.fixture(scope="module")
def graph():
    return cn.DAG([(c, "treat") for c in COVS] + [(c, "re78") for c in COVS] + [("treat", "re78")])


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cn.CausalNetWarning)       # the CPS propensities are extreme: that is the point
        return fn(*args, **kwargs)


def test_propensity_is_the_maximum_likelihood_logit(cps, graph):
    sm = pytest.importorskip("statsmodels.api")
    x = sm.add_constant(cps[COVS])
    fit = sm.Logit(cps["treat"], x).fit(disp=0, tol=1e-12, maxiter=500)
    ps = cn.propensity_score(graph, cps, "treat", "re78")
    assert_allclose(ps, fit.predict(x).to_numpy(), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("normalize, overlap, published", [
    (False, None, -11876), (True, None, -7238), (False, (0.1, 0.9), 2006), (True, (0.1, 0.9), 1806)])
def test_mixtape_ipw(cps, graph, normalize, overlap, published):
    e = _quiet(cn.estimate, graph, cps, "treat", "re78", method="ipw", ci="analytic", normalize=normalize,
               overlap=overlap)
    assert int(e.value) == published                                 # the book truncates to the dollar
    assert e.diagnostics["n_in_overlap"] == (361 if overlap else len(cps))


def test_mixtape_propensity_matching_att_nn5(cps, graph):
    e = _quiet(cn.estimate, graph, cps, "treat", "re78", method="matching", estimand="att", n_neighbors=5)
    assert abs(e.value - 1725.082) < 5e-4                             # Stata prints 1725.082
    no_ties = _quiet(cn.estimate, graph, cps, "treat", "re78", method="matching", estimand="att", n_neighbors=5,
                     ties=False)
    assert abs(no_ties.value - 1725.082) > 10                         # the figure needs Stata's tie rule


def test_mixtape_trimmed_teffects(cps, graph):
    ps = cn.propensity_score(graph, cps, "treat", "re78")
    trimmed = cps[(ps > 0.1) & (ps < 0.9)]
    att = _quiet(cn.estimate, graph, trimmed, "treat", "re78", method="ipw", estimand="att", ci="analytic")
    ate = _quiet(cn.estimate, graph, trimmed, "treat", "re78", method="ipw", estimand="ate", ci="analytic")
    nn5 = _quiet(cn.estimate, graph, trimmed, "treat", "re78", method="matching", estimand="ate", n_neighbors=5)
    assert round(att.value) == 2647 and round(ate.value) == 1611
    assert abs(nn5.value - 1758.837) < 5e-4


def test_experimental_benchmark_is_inside_the_matching_interval(cps, graph):
    # the point of the chapter: with the CPS controls, matching recovers the experimental 1,794
    e = _quiet(cn.estimate, graph, cps, "treat", "re78", method="matching", estimand="att", n_neighbors=5)
    assert e.ci[0] < 1794 < e.ci[1]


def test_dask_frames_reproduce_the_figures(cps, graph):
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(cps, npartitions=3)
    hajek = _quiet(cn.estimate, graph, ddf, "treat", "re78", method="ipw", ci="analytic")
    assert hajek.diagnostics["partitions"] == 3 and int(hajek.value) == -7238   # partition sums, scaled Newton
    ht = _quiet(cn.estimate, graph, ddf, "treat", "re78", method="ipw", ci="analytic", normalize=False,
                overlap=(0.1, 0.9))
    assert "partitions" not in ht.diagnostics and int(ht.value) == 2006      # computed frame, same answer


def test_mixtape_experimental_difference():
    cd = pytest.importorskip("causaldata")
    nsw = cd.nsw_mixtape.load_pandas().data.drop(columns="data_id").astype(float)
    e = cn.estimate("treat -> re78", nsw, "treat", "re78", method="regression", ci="analytic")
    assert abs(e.value - 1794.34) < 0.005                            # the Mixtape's "ATE is 1794.34"


def test_bootstrap_replicates_equal_refits_on_the_ill_scaled_design(cps, graph):
    # the replicates' logistic fits start from the data's (frozen-Hessian steps); on columns from 0/1 to
    # age^3 they must still land on each resample's own maximum-likelihood fit
    e = _quiet(cn.estimate, graph, cps, "treat", "re78", method="ipw", estimand="att", n_bootstrap=2, seed=1)
    counts = cn.estimation.linear.bootstrap_counts(len(cps), 2, np.random.default_rng(1))
    for b in range(2):
        rows = np.repeat(np.arange(len(cps)), counts[b].astype(int))
        ref = _quiet(cn.estimate, graph, cps.iloc[rows].reset_index(drop=True), "treat", "re78", method="ipw",
                     estimand="att", ci="analytic")
        assert_allclose(e.replicates[b], ref.value, rtol=1e-9)
