"""Matching against a brute-force nearest-neighbour computation (matches, counts, the Abadie-Imbens
variance written out loop by loop), and TMLE against the same steps done with statsmodels GLMs,
plus coverage of TMLE's influence-curve interval on simulated data with a known effect."""

import warnings

import numpy as np
import pandas as pd
import pytest
from matching_oracle import abadie_imbens
from numpy.testing import assert_allclose
from simdata import graph_for, simulate

import causalnet as cn


@pytest.fixture
def frame():
    return simulate(300, 4, k=2)


def _brute_matching(z, t, y, m, estimand, metric):
    """Loop-by-loop nearest neighbours with replacement and the Abadie-Imbens (2006) variance."""
    n = len(y)

    def dist(i, j):
        d = z[i] - z[j]
        return float(d @ metric @ d)

    y1, y0, used = y.astype(float).copy(), y.astype(float).copy(), np.zeros(n)
    for i in range(n):
        if (t[i] == 1 and estimand in ("ate", "att")) or (t[i] == 0 and estimand in ("ate", "atc")):
            pool = [j for j in range(n) if t[j] != t[i]]
            best = sorted(pool, key=lambda j: dist(i, j))[:m]
            imputed = np.mean([y[j] for j in best])
            if t[i] == 1:
                y0[i] = imputed
            else:
                y1[i] = imputed
            for j in best:
                used[j] += 1
    sig = np.zeros(n)
    for i in range(n):
        same = sorted([j for j in range(n) if t[j] == t[i] and j != i], key=lambda j: dist(i, j))[:2]
        sig[i] = 2 / 3 * (y[i] - np.mean([y[j] for j in same])) ** 2
    return abadie_imbens(y1, y0, t, used, m, sig, estimand)


@pytest.mark.parametrize("estimand", ["ate", "att", "atc"])
@pytest.mark.parametrize("m", [1, 3])
def test_covariate_matching_equals_brute_force(frame, estimand, m):
    z = frame[["Z0", "Z1"]].to_numpy()
    metric = np.linalg.inv(np.cov(z, rowvar=False))
    e = cn.estimate(graph_for(2), frame, "T", "Y", method="matching", estimand=estimand, n_neighbors=m,
                    match_on="covariates")
    tau, se = _brute_matching(z, frame["T"].to_numpy(), frame["Y"].to_numpy(), m, estimand, metric)
    assert e.ci_method == "analytic"
    assert_allclose(e.value, tau, rtol=0, atol=1e-12)
    assert_allclose(e.std_err, se, rtol=1e-12)


def test_propensity_matching_equals_brute_force_on_statsmodels_scores(frame):
    sm = pytest.importorskip("statsmodels.api")
    x = sm.add_constant(frame[["Z0", "Z1"]].to_numpy())
    score = sm.Logit(frame["T"].to_numpy(), x).fit(disp=0, tol=1e-12).predict(x)[:, None]
    e = cn.estimate(graph_for(2), frame, "T", "Y", method="matching", estimand="att", n_neighbors=2)
    tau, se = _brute_matching(score, frame["T"].to_numpy(), frame["Y"].to_numpy(), 2, "att", np.eye(1))
    assert_allclose(e.value, tau, rtol=0, atol=1e-10)
    assert_allclose(e.std_err, se, rtol=1e-8)


def test_matching_bootstrap_warns_and_bad_options_raise(frame):
    g = graph_for(2)
    with pytest.warns(cn.CausalNetWarning, match="Abadie & Imbens 2008"):
        e = cn.estimate(g, frame, "T", "Y", method="matching", ci="bootstrap", n_bootstrap=3, seed=0)
    assert len(e.replicates) == 3
    with pytest.raises(cn.ModelError, match="n_neighbors"):
        cn.estimate(g, frame, "T", "Y", method="matching", n_neighbors=0)
    with pytest.raises(cn.ModelError, match="match_on"):
        cn.estimate(g, frame, "T", "Y", method="matching", match_on="euclid")
    with pytest.raises(cn.ModelError, match="covariates to match on"):
        cn.estimate("T -> Y", frame, "T", "Y", method="matching")


def _tmle_statsmodels(frame, covs, estimand="ate"):
    """TMLE step by step with statsmodels: OLS initial Q on the scaled outcome, GLM logit propensity and
    the fluctuation as a binomial GLM with offset and no intercept; for the ATT (ATC) the clever
    covariate of Hahn's efficient influence function, A - (1 - A) g / (1 - g) (and its mirror), and the
    mean over the treated (controls)."""
    sm = pytest.importorskip("statsmodels.api")
    from scipy.special import expit, logit

    t, y = frame["T"].to_numpy(float), frame["Y"].to_numpy(float)
    a, b = y.min(), y.max()
    ys = (y - a) / (b - a)
    z = frame[covs].to_numpy()
    xq = np.column_stack([np.ones(len(y)), t, z])
    fit = sm.OLS(ys, xq).fit()
    clip = lambda q: np.clip(q, 0.005, 0.995)  # noqa: E731
    qa = clip(fit.predict(xq))
    q1 = clip(fit.predict(np.column_stack([np.ones(len(y)), np.ones(len(y)), z])))
    q0 = clip(fit.predict(np.column_stack([np.ones(len(y)), np.zeros(len(y)), z])))
    xg = sm.add_constant(z)
    g = sm.GLM(t, xg, family=sm.families.Binomial()).fit(tol=1e-13).predict(xg)
    h1, h0 = {"ate": (1 / g, 1 / (1 - g)), "att": (np.ones_like(g), g / (1 - g)),
              "atc": ((1 - g) / g, np.ones_like(g))}[estimand]
    r = {"ate": np.ones_like(t), "att": t, "atc": 1 - t}[estimand]
    h = t * h1 - (1 - t) * h0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # a non-integer binomial response
        eps = sm.GLM(ys, h[:, None], family=sm.families.Binomial(), offset=logit(qa)).fit(tol=1e-14).params[0]
    q1s, q0s = expit(logit(q1) + eps * h1), expit(logit(q0) - eps * h0)
    qas = expit(logit(qa) + eps * h)
    psi = np.mean((q1s - q0s)[r == 1])
    ic = (h * (ys - qas) + r * (q1s - q0s - psi)) / r.mean()
    return (b - a) * psi, (b - a) * np.std(ic, ddof=1) / np.sqrt(len(y))


@pytest.mark.parametrize("estimand", ["ate", "att", "atc"])
def test_tmle_equals_statsmodels_steps(estimand):
    frame = simulate(800, 2)
    e = cn.estimate(graph_for(), frame, "T", "Y", method="tmle", estimand=estimand)
    psi, se = _tmle_statsmodels(frame, ["Z0", "Z1", "Z2"], estimand)
    assert e.ci_method == "analytic"
    assert_allclose(e.value, psi, rtol=0, atol=1e-8)
    assert_allclose(e.std_err, se, rtol=1e-7)


def test_tmle_bootstrap_replicates_equal_refits():
    frame = simulate(400, 5)
    e = cn.estimate(graph_for(), frame, "T", "Y", method="tmle", ci="bootstrap", n_bootstrap=3, seed=1)
    counts = cn.estimation.linear.bootstrap_counts(len(frame), 3, np.random.default_rng(1))
    rows = np.repeat(np.arange(len(frame)), counts[1].astype(int))
    ref = cn.estimate(graph_for(), frame.iloc[rows].reset_index(drop=True), "T", "Y", method="tmle")
    assert_allclose(e.replicates[1], ref.value, rtol=0, atol=1e-8)


def test_tmle_interval_covers_the_known_effect():
    hits = 0
    for rep in range(100):
        frame = simulate(400, 1000 + rep)      # ATE = 2 (the T x Z0 interaction has mean 0)
        e = cn.estimate(graph_for(), frame, "T", "Y", method="tmle")
        hits += e.ci[0] <= 2.0 <= e.ci[1]
    assert hits >= 88


@pytest.fixture(scope="module")
def population_att_atc():
    """ATT and ATC of `simulate` (effect 2 + 0.5 Z0 per unit) from 4 million draws of its design."""
    big = simulate(4_000_000, 99)
    z0, t = big["Z0"].to_numpy(), big["T"].to_numpy()
    return 2 + 0.5 * z0[t == 1].mean(), 2 + 0.5 * z0[t == 0].mean()


@pytest.mark.parametrize("estimand", ["att", "atc"])
def test_tmle_att_atc_intervals_cover_the_known_effect(estimand, population_att_atc):
    truth = population_att_atc[0 if estimand == "att" else 1]
    assert abs(truth - 2) > 0.1                                   # the estimands differ from the ATE
    hits = 0
    for rep in range(100):
        frame = simulate(400, 2000 + rep)
        e = cn.estimate(graph_for(), frame, "T", "Y", method="tmle", estimand=estimand)
        hits += e.ci[0] <= truth <= e.ci[1]
    assert hits >= 88


def test_tmle_binary_outcome_and_refusals():
    rng = np.random.default_rng(0)
    z = rng.normal(size=2000)
    t = (rng.random(2000) < 1 / (1 + np.exp(-z))).astype(int)
    y = (rng.random(2000) < 1 / (1 + np.exp(-(z + t)))).astype(int)
    df = pd.DataFrame({"Z": z, "T": t, "Y": y})
    e = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", method="tmle")
    ref = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", method="aipw", ci="analytic")
    assert abs(e.value - ref.value) < 0.01 and 0 < e.means[1] < e.means[0] < 1
    att = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", method="tmle", estimand="att")
    ref = cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", method="aipw", estimand="att", ci="analytic")
    assert abs(att.value - ref.value) < 0.01
    with pytest.raises(cn.ModelError, match="per-row effects"):
        cn.estimate("Z -> T -> Y; Z -> Y", df, "T", "Y", method="tmle", estimand="cate", effect_modifiers=["Z"])
