"""Difference-in-differences against statsmodels OLS with cluster-robust covariance, sharp RDD against
statsmodels WLS at the same bandwidth and the Imbens-Kalyanaraman bandwidth of the `rdd` package, the
linear front door against two statsmodels OLS fits; each also recovers a simulated known effect."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.estimation.designs import ik_bandwidth

sm = pytest.importorskip("statsmodels.api")


def _panel(seed, units=60, effect=1.5):
    rng = np.random.default_rng(seed)
    g = (np.arange(units) < units // 2).astype(int)
    alpha = rng.normal(size=units)                               # unit effects: errors correlated within unit
    rows = []
    for p in (0, 1):
        for _ in range(3):                                       # 3 observations per unit and period
            y = alpha + 0.7 * g + 0.4 * p + effect * g * p + rng.normal(size=units)
            rows.append(pd.DataFrame({"unit": np.arange(units), "G": g, "post": p, "Y": y}))
    return pd.concat(rows, ignore_index=True)


def test_did_equals_statsmodels_cluster_robust():
    df = _panel(0)
    e = cn.estimate("G -> Y", df, "G", "Y", method="did", time="post", unit="unit")
    x = np.column_stack([np.ones(len(df)), df.G, df.post, df.G * df.post])
    res = sm.OLS(df.Y.to_numpy(), x).fit(cov_type="cluster", cov_kwds={"groups": df.unit.to_numpy()})
    assert e.ci_method == "analytic" and e.diagnostics["clusters"] == 60
    assert_allclose(e.value, res.params[3], rtol=0, atol=1e-8)
    assert_allclose(e.std_err, res.bse[3], rtol=1e-8)
    hc1 = sm.OLS(df.Y.to_numpy(), x).fit(cov_type="HC1")
    e2 = cn.estimate("G -> Y", df, "G", "Y", method="did", time="post")
    assert_allclose(e2.std_err, hc1.bse[3], rtol=1e-8)
    assert "parallel trends" in e.estimand


def test_did_covers_known_effect_and_cluster_bootstrap():
    hits = sum(
        (lambda e: e.ci[0] <= 1.5 <= e.ci[1])(cn.estimate("G -> Y", _panel(100 + r), "G", "Y", method="did",
                                                           time="post", unit="unit"))
        for r in range(100))
    assert hits >= 88
    df = _panel(1)
    e = cn.estimate("G -> Y", df, "G", "Y", method="did", time="post", unit="unit", ci="bootstrap",
                    n_bootstrap=200, seed=0)
    analytic = cn.estimate("G -> Y", df, "G", "Y", method="did", time="post", unit="unit")
    assert abs(e.std_err / analytic.std_err - 1) < 0.25          # cluster bootstrap ~ cluster sandwich


def test_did_bad_input():
    df = _panel(0)
    with pytest.raises(cn.ModelError, match="time="):
        cn.estimate("G -> Y", df, "G", "Y", method="did")
    with pytest.raises(cn.EvidenceError, match="not a column"):
        cn.estimate("G -> Y", df, "G", "Y", method="did", time="period")
    with pytest.raises(cn.ModelError, match="drop adjust"):
        cn.estimate("G -> Y", df, "G", "Y", method="did", time="post", adjust=[])
    with pytest.raises(cn.EvidenceError, match="four"):
        cn.estimate("G -> Y", df[(df.G == 0) | (df.post == 0)], "G", "Y", method="did", time="post")


def _rd(seed, n=3000, jump=1.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    y = 0.5 + 0.8 * x - 0.6 * x ** 2 + jump * (x >= 0.2) + rng.normal(scale=0.4, size=n)
    return pd.DataFrame({"X": x, "D": (x >= 0.2).astype(int), "Y": y})


def test_rdd_equals_statsmodels_wls_at_the_bandwidth():
    df = _rd(0)
    e = cn.estimate("X -> D -> Y; X -> Y", df, "D", "Y", method="rdd", running="X", cutoff=0.2)
    h = e.diagnostics["bandwidth"]
    xc = df.X.to_numpy() - 0.2
    k = np.maximum(0, 1 - np.abs(xc) / h)
    keep = k > 0
    d = (xc >= 0).astype(float)
    design = np.column_stack([np.ones(len(xc)), d, xc, d * xc])[keep]
    res = sm.WLS(df.Y.to_numpy()[keep], design, weights=k[keep]).fit(cov_type="HC1")
    assert_allclose(e.value, res.params[1], rtol=0, atol=1e-8)
    assert_allclose(e.std_err, res.bse[1], rtol=1e-8)
    fixed = cn.estimate("X -> D -> Y; X -> Y", df, "D", "Y", method="rdd", running="X", cutoff=0.2, bandwidth=0.3)
    assert fixed.diagnostics["bandwidth"] == 0.3


def test_ik_bandwidth_equals_the_rdd_package():
    rdd = pytest.importorskip("rdd.rdd")
    df = _rd(3)
    assert_allclose(ik_bandwidth(df.X.to_numpy(), df.Y.to_numpy(), 0.2), rdd.optimal_bandwidth(df.Y, df.X, cut=0.2),
                    rtol=1e-10)


def test_rdd_recovers_known_jump_and_treated_below():
    hits = 0
    for r in range(100):
        e = cn.estimate("X -> D -> Y; X -> Y", _rd(200 + r, n=1500), "D", "Y", method="rdd", running="X",
                        cutoff=0.2)
        hits += e.ci[0] <= 1.0 <= e.ci[1]
    assert hits >= 85                      # local linear bias at the IK bandwidth costs a little coverage
    df = _rd(5).assign(D=lambda f: 1 - f.D, Y=lambda f: f.Y - 2.0 * (f.X >= 0.2))   # treated below: jump -1 -> +1
    e = cn.estimate("X -> D -> Y; X -> Y", df, "D", "Y", method="rdd", running="X", cutoff=0.2)
    assert abs(e.value - 1.0) < 4 * e.std_err


def test_rdd_refuses_a_fuzzy_design():
    df = _rd(0)
    df.loc[:10, "D"] = 1 - df.loc[:10, "D"]
    with pytest.raises(cn.ModelError, match="not sharp"):
        cn.estimate("X -> D -> Y; X -> Y", df, "D", "Y", method="rdd", running="X", cutoff=0.2)
    with pytest.raises(cn.ModelError, match="cutoff"):
        cn.estimate("X -> D -> Y; X -> Y", _rd(0), "D", "Y", method="rdd", running="X")


def _frontdoor_data(seed, n=4000):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=n)
    t = u + rng.normal(size=n)
    m1 = 0.5 * t + rng.normal(size=n)
    m2 = -0.3 * t + rng.normal(size=n)
    y = 2.0 * m1 + 1.0 * m2 + 1.5 * u + rng.normal(size=n)          # effect 0.5*2 - 0.3*1 = 0.7
    return pd.DataFrame({"T": t, "M1": m1, "M2": m2, "Y": y})


FD = cn.DAG([("T", "M1"), ("T", "M2"), ("M1", "Y"), ("M2", "Y"), ("U", "T"), ("U", "Y")], latent=["U"])


def test_frontdoor_equals_statsmodels_product():
    df = _frontdoor_data(0)
    e = cn.estimate(FD, df, "T", "Y")                                 # auto: no adjustment set, no instrument
    assert e.method == "frontdoor" and sorted(e.adjustment_set) == ["M1", "M2"]
    x1 = sm.add_constant(df[["T"]].to_numpy())
    a = np.array([sm.OLS(df[m].to_numpy(), x1).fit().params[1] for m in ("M1", "M2")])
    s2 = sm.OLS(df.Y.to_numpy(), sm.add_constant(df[["M1", "M2", "T"]].to_numpy())).fit()
    b = s2.params[1:3]
    assert_allclose(e.value, a @ b, rtol=0, atol=1e-10)
    fits = [sm.OLS(df[m].to_numpy(), x1).fit() for m in ("M1", "M2")]
    resid = np.column_stack([f.resid for f in fits])
    cov_a = resid.T @ resid / (len(df) - 2) * np.linalg.inv(x1.T @ x1)[1, 1]
    var = b @ cov_a @ b + a @ s2.cov_params()[1:3, 1:3] @ a
    assert_allclose(e.std_err, np.sqrt(var), rtol=1e-8)


def test_frontdoor_covers_known_effect_and_checks_the_set():
    hits = sum((lambda e: e.ci[0] <= 0.7 <= e.ci[1])(cn.estimate(FD, _frontdoor_data(300 + r, 800), "T", "Y",
                                                                  method="frontdoor")) for r in range(100))
    assert hits >= 88
    with pytest.raises(cn.GraphError, match="front-door criterion"):
        cn.estimate(FD, _frontdoor_data(0), "T", "Y", method="frontdoor", adjust=["M1"])
    naive = cn.estimate(FD, _frontdoor_data(0), "T", "Y", method="frontdoor", ci="bootstrap", n_bootstrap=50, seed=0)
    assert abs(naive.std_err / cn.estimate(FD, _frontdoor_data(0), "T", "Y").std_err - 1) < 0.3


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(12, 60))
def test_did_is_the_difference_of_the_four_cell_means(seed, n):
    # invariant: the G x P coefficient of the saturated 2x2 regression is the double difference of cell means
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1], n // 2 + 2)
    p = np.tile([0, 1], len(g) // 2)
    g = g[:len(p)]
    df = pd.DataFrame({"G": g, "post": p, "Y": rng.normal(size=len(p)) * 3 + rng.integers(0, 5, len(p))})
    if df.groupby(["G", "post"]).size().shape[0] < 4:
        return
    e = cn.estimate("G -> Y", df, "G", "Y", method="did", time="post")
    m = df.groupby(["G", "post"])["Y"].mean()
    assert_allclose(e.value, (m[1, 1] - m[1, 0]) - (m[0, 1] - m[0, 0]), rtol=0, atol=1e-9)


def test_t_learner_with_least_squares_is_the_fully_interacted_regression():
    # identity: arm-wise linear fits = one regression with every covariate interacted with the treatment
    from simdata import graph_for, simulate

    df = simulate(500, 9)
    t = cn.estimate(graph_for(), df, "T", "Y", method="t-learner", estimand="cate", effect_modifiers=["Z0"],
                    n_bootstrap=2, seed=0)
    r = cn.estimate(graph_for(), df, "T", "Y", method="regression", estimand="cate",
                    effect_modifiers=["Z0", "Z1", "Z2"], ci="analytic")
    assert_allclose(t.effects, r.effects, rtol=0, atol=1e-9)
