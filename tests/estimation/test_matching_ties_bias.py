"""Matching with ties and the Abadie-Imbens bias adjustment, against a loop-by-loop computation.

The oracle finds each unit's match set by sorting all distances (every unit as near as
the M-th nearest is kept), fits the bias-adjustment regression with statsmodels WLS on
the matched units weighted by their use, and writes the Abadie-Imbens variance out
term by term with the tie-weighted match counts. A Monte Carlo checks what the
adjustment is for: it removes the bias that covariate discrepancies leave.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matching_oracle import abadie_imbens
from numpy.testing import assert_allclose

import causalnet as cn

G2 = cn.DAG([("Z0", "T"), ("Z1", "T"), ("Z0", "Y"), ("Z1", "Y"), ("T", "Y")])


def discrete_frame(n, seed):
    """Covariates on a small grid (many tied distances), confounded binary T, linear Y with effect 1."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 4, size=(n, 2)).astype(float)
    t = (rng.random(n) < 1 / (1 + np.exp(-(z[:, 0] - z[:, 1])))).astype(int)
    y = 1.0 * t + 2.0 * z[:, 0] + z[:, 1] + rng.normal(size=n)
    return pd.DataFrame({"Z0": z[:, 0], "Z1": z[:, 1], "T": t, "Y": y})


def brute(z, t, y, m, estimand, metric, bias_adjust):
    """(estimate, Abadie-Imbens standard error) with tied match sets, loop by loop."""
    sm = pytest.importorskip("statsmodels.api")
    n = len(y)
    dist = np.array([[float((z[i] - z[j]) @ metric @ (z[i] - z[j])) for j in range(n)] for i in range(n)])
    needs = {"ate": (0, 1), "att": (1,), "atc": (0,)}[estimand]
    sets = {}
    lam = np.zeros(n)
    for i in range(n):
        if t[i] in needs:
            pool = [j for j in range(n) if t[j] != t[i]]
            dm = sorted(dist[i, j] for j in pool)[m - 1]
            sets[i] = [j for j in pool if dist[i, j] <= dm * (1 + 1e-12)]
            for j in sets[i]:
                lam[j] += 1 / len(sets[i])
    beta = {}
    if bias_adjust:
        for arm in (0, 1):
            rows = [j for j in range(n) if t[j] == arm and lam[j] > 0]
            if rows:
                x = sm.add_constant(z[rows], has_constant="add")
                beta[arm] = sm.WLS(y[rows], x, weights=lam[rows]).fit().params[1:]
    y1, y0 = y.astype(float).copy(), y.astype(float).copy()
    for i, js in sets.items():
        adj = [y[j] + ((z[i] - z[j]) @ beta[t[j]] if bias_adjust else 0.0) for j in js]
        (y0 if t[i] == 1 else y1)[i] = np.mean(adj)
    same = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if t[j] == t[i] and j != i]
        d2 = sorted(dist[i, j] for j in others)[1]
        own = [j for j in others if dist[i, j] <= d2 * (1 + 1e-12)]
        same[i] = len(own) / (len(own) + 1) * (y[i] - np.mean(y[own])) ** 2
    return abadie_imbens(y1, y0, t, m * lam, m, same, estimand)


@pytest.mark.parametrize("estimand", ["ate", "att", "atc"])
@pytest.mark.parametrize("m, bias_adjust", [(1, False), (2, False), (1, True), (3, True)])
def test_tied_covariate_matching_equals_brute_force(estimand, m, bias_adjust):
    frame = discrete_frame(160, seed=m)
    z = frame[["Z0", "Z1"]].to_numpy()
    metric = np.linalg.inv(np.cov(z, rowvar=False))
    e = cn.estimate(G2, frame, "T", "Y", method="matching", estimand=estimand, n_neighbors=m,
                    match_on="covariates", bias_adjust=bias_adjust)
    tau, se = brute(z, frame["T"].to_numpy(), frame["Y"].to_numpy(), m, estimand, metric, bias_adjust)
    assert_allclose(e.value, tau, rtol=0, atol=1e-9)
    assert_allclose(e.std_err, se, rtol=1e-9)


def test_bias_adjusted_propensity_matching_equals_brute_force():
    sm = pytest.importorskip("statsmodels.api")
    frame = discrete_frame(150, seed=7)
    x = sm.add_constant(frame[["Z0", "Z1"]].to_numpy())
    score = sm.Logit(frame["T"].to_numpy(), x).fit(disp=0, tol=1e-12).predict(x)
    e = cn.estimate(G2, frame, "T", "Y", method="matching", estimand="att", n_neighbors=2, bias_adjust=True)
    # distances on the score, the adjustment on the covariates: the brute force takes both
    t, y, zc = frame["T"].to_numpy(), frame["Y"].to_numpy(), frame[["Z0", "Z1"]].to_numpy()
    n = len(y)
    lam, sets = np.zeros(n), {}
    for i in np.flatnonzero(t == 1):
        pool = np.flatnonzero(t == 0)
        d = np.abs(score[pool] - score[i])
        sets[i] = pool[d <= np.sort(d)[1] * (1 + 1e-12)]
        lam[sets[i]] += 1 / len(sets[i])
    used = lam > 0
    beta = sm.WLS(y[used], sm.add_constant(zc[used]), weights=lam[used]).fit().params[1:]
    att = np.mean([y[i] - np.mean([y[j] + (zc[i] - zc[j]) @ beta for j in js]) for i, js in sets.items()])
    assert_allclose(e.value, att, rtol=0, atol=1e-8)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 10_000))
def test_tied_matching_does_not_depend_on_row_order(seed, perm_seed):
    frame = discrete_frame(80, seed)
    order = np.random.default_rng(perm_seed).permutation(len(frame))
    a = cn.estimate(G2, frame, "T", "Y", method="matching", estimand="ate", match_on="covariates")
    b = cn.estimate(G2, frame.iloc[order], "T", "Y", method="matching", estimand="ate", match_on="covariates")
    assert_allclose(a.value, b.value, rtol=0, atol=1e-10)


def test_without_ties_in_the_data_both_rules_agree():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(300, 2))
    t = (rng.random(300) < 0.4).astype(int)
    frame = pd.DataFrame({"Z0": z[:, 0], "Z1": z[:, 1], "T": t, "Y": t + z.sum(1) + rng.normal(size=300)})
    a = cn.estimate(G2, frame, "T", "Y", method="matching", n_neighbors=3, match_on="covariates")
    b = cn.estimate(G2, frame, "T", "Y", method="matching", n_neighbors=3, match_on="covariates", ties=False)
    assert a.value == b.value and a.std_err == b.std_err


def test_bias_adjustment_removes_the_matching_bias():
    # strong confounding through two continuous covariates, one match: the plain estimator is biased
    # by the covariate discrepancies of its matches; the adjusted one is not (linear outcome)
    rng = np.random.default_rng(11)
    plain, adjusted = [], []
    for _ in range(60):
        z = rng.normal(size=(200, 2))
        t = (rng.random(200) < 1 / (1 + np.exp(-2.5 * z.sum(1)))).astype(int)
        y = 1.0 * t + 3.0 * z[:, 0] + 3.0 * z[:, 1] + rng.normal(size=200)
        frame = pd.DataFrame({"Z0": z[:, 0], "Z1": z[:, 1], "T": t, "Y": y})
        kw = {"method": "matching", "estimand": "att", "match_on": "covariates"}
        plain.append(cn.estimate(G2, frame, "T", "Y", **kw).value - 1.0)
        adjusted.append(cn.estimate(G2, frame, "T", "Y", bias_adjust=True, **kw).value - 1.0)
    se_adj = np.std(adjusted, ddof=1) / np.sqrt(len(adjusted))
    assert np.mean(plain) > 6 * np.std(plain, ddof=1) / np.sqrt(len(plain))     # the bias is there
    assert abs(np.mean(adjusted)) < 3 * se_adj                                    # and adjusted away


def test_bad_matching_options_raise():
    frame = discrete_frame(60, 0)
    with pytest.raises(cn.ModelError, match="ties must be True or False"):
        cn.estimate(G2, frame, "T", "Y", method="matching", ties="yes")
    with pytest.raises(cn.ModelError, match="bias_adjust must be True or False"):
        cn.estimate(G2, frame, "T", "Y", method="matching", bias_adjust=1)
    with pytest.raises(cn.ModelError, match="method 'aipw' takes no option 'ties'"):
        cn.estimate(G2, frame, "T", "Y", method="aipw", ties=True)
    with pytest.raises(cn.ModelError, match="overlap must be a pair"):
        cn.estimate(G2, frame, "T", "Y", method="ipw", overlap=(0.9, 0.1))
    with pytest.raises(cn.ModelError, match="normalize must be True or False"):
        cn.estimate(G2, frame, "T", "Y", method="ipw", normalize="no")
    with pytest.raises(cn.ModelError, match="propensity score needs a discrete treatment; 'T' is continuous"):
        cn.propensity_score(G2, frame.assign(T=frame["Z0"] + 0.5), "T", "Y")
    with pytest.raises(cn.GraphError, match="'Q' is not a node"):
        cn.propensity_score(G2, frame, "Q", "Y")


@pytest.mark.parametrize("estimand", ["att", "atc", "ate"])
def test_tied_matching_on_a_discrete_covariate_is_exact_stratification(estimand):
    # every unit ties with the whole other arm of its stratum: matching is subclassification (a pandas
    # group-by), and 10^5 rows cost one match set per distinct covariate row
    rng = np.random.default_rng(2)
    n = 100_000
    z = rng.integers(0, 3, n).astype(float)
    t = (rng.random(n) < 0.2 + 0.2 * z).astype(int)
    frame = pd.DataFrame({"Z": z, "T": t, "Y": t * (1 + z) + z + rng.normal(size=n)})
    e = cn.estimate("Z -> T -> Y; Z -> Y", frame, "T", "Y", method="matching", estimand=estimand,
                    match_on="covariates")
    cell = frame.groupby(["Z", "T"])["Y"].mean().unstack()            # (stratum, arm) means
    size = frame.groupby(["Z", "T"]).size().unstack()
    weight = {"att": size[1], "atc": size[0], "ate": size[0] + size[1]}[estimand]
    assert_allclose(e.value, float(((cell[1] - cell[0]) * weight).sum() / weight.sum()), rtol=0, atol=1e-10)
