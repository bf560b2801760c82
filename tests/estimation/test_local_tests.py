"""Local tests of a graph: statements (dagitty's basis), p-values against scipy and statsmodels,
multiplicity corrections against statsmodels' multipletests, and the permutation baseline."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats

import causalnet as cn
from causalnet.estimation.local_tests import adjust_pvalues, mixed_test


def test_statements_are_dagittys_basis():
    # dagitty: impliedConditionalIndependencies(dagitty("dag{ x -> {a b}; {a b} -> y }"))
    #   a _||_ b | x ;  x _||_ y | a, b
    g = cn.DAG.parse("x -> a; x -> b; a -> y; b -> y")
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(200, 4)), columns=["x", "a", "b", "y"])
    got = {(frozenset((r.x, r.y)), frozenset(r.given)) for r in g.local_tests(df).itertuples()}
    assert got == {(frozenset("ab"), frozenset("x")), (frozenset("xy"), frozenset("ab"))}


def _linear_data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = 0.8 * a + rng.normal(size=n)
    c = 0.5 * a + rng.normal(size=n)
    d = b - c + rng.normal(size=n)
    return pd.DataFrame({"A": a, "B": b, "C": c, "D": d})


def _partial_corr_p(df, x, y, given):
    z = np.column_stack([np.ones(len(df))] + [df[v] for v in given])
    rx = df[x] - z @ np.linalg.lstsq(z, df[x], rcond=None)[0]
    ry = df[y] - z @ np.linalg.lstsq(z, df[y], rcond=None)[0]
    r = stats.pearsonr(rx, ry)[0]
    zstat = np.arctanh(r) * np.sqrt(len(df) - len(given) - 3)
    return 2 * stats.norm.sf(abs(zstat))


def test_fisher_z_p_values_equal_scipy_partial_correlation():
    df = _linear_data()
    table = cn.test_graph("A -> B -> D; A -> C -> D", df, correction="none")
    assert set(table["test"]) == {"fisher_z"}
    for r in table.itertuples():
        assert_allclose(r.p_value, _partial_corr_p(df, r.x, r.y, r.given), rtol=1e-8)
    assert not table["rejected"].any()
    wrong = cn.test_graph("A -> B -> D; A -> C; C -> B", df)
    assert wrong["rejected"].any() and wrong.iloc[0]["p_value"] < 1e-10    # sorted: worst first


def test_chi_square_p_values_equal_scipy_per_stratum():
    m = cn.gallery.load("sprinkler")
    df = m.sample(3000, seed=0).to_pandas()
    table = m.dag.local_tests(df, test="chi2", correction="none")
    for r in table.itertuples():
        stat, dof = 0.0, 0
        groups = df.groupby(list(r.given)) if r.given else [((), df)]
        for _, sub in groups:
            ct = pd.crosstab(sub[r.x], sub[r.y]).to_numpy()
            ct = ct[ct.sum(1) > 0][:, ct.sum(0) > 0]
            if ct.shape[0] > 1 and ct.shape[1] > 1:
                s, _, k, _ = stats.chi2_contingency(ct, correction=False)
                stat, dof = stat + s, dof + k
        assert_allclose(r.p_value, stats.chi2.sf(stat, dof) if dof else 1.0, rtol=1e-8)


def test_mixed_test_equals_bartlett_chi_square_from_statsmodels_r2():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(1)
    n = 1500
    s = rng.normal(size=n)
    x = pd.Categorical(np.where(s + rng.normal(size=n) > 0, "hi", np.where(rng.random(n) < 0.5, "lo", "mid")))
    y = s + 0.2 * (np.asarray(x) == "mid") + rng.normal(size=n)
    df = pd.DataFrame({"S": s, "X": x, "Y": y})
    stat, dof, p = mixed_test(df, "X", "Y", ["S"])
    dummies = pd.get_dummies(df["X"], drop_first=True, dtype=float).to_numpy()
    z = sm.add_constant(df[["S"]].to_numpy())
    rx = dummies - z @ np.linalg.lstsq(z, dummies, rcond=None)[0]
    ry = y - z @ np.linalg.lstsq(z, y, rcond=None)[0]
    r2 = sm.OLS(ry, rx).fit().rsquared                       # one canonical correlation: q = 1
    expect = -(n - 1 - 1 - (2 + 1 + 1) / 2) * np.log(1 - r2)
    assert dof == 2
    assert_allclose(stat, expect, rtol=1e-8)
    assert_allclose(p, stats.chi2.sf(expect, 2), rtol=1e-8)
    table = cn.test_graph("S -> X; S -> Y", df)
    assert list(table["test"]) == ["mixed"] and table["rejected"].all()


@pytest.mark.parametrize("method,sm_name", [("holm", "holm"), ("bonferroni", "bonferroni"), ("fdr_bh", "fdr_bh")])
def test_corrections_equal_statsmodels_multipletests(method, sm_name):
    mt = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(0).random(17) ** 3
    assert_allclose(adjust_pvalues(p, method), mt.multipletests(p, method=sm_name)[1], rtol=1e-12)


def test_permutation_baseline_prefers_the_true_graph():
    df = _linear_data(3000, 2)
    table = cn.test_graph("A -> B -> D; A -> C -> D", df, n_permutations=15, seed=0)
    perm = table.attrs["permutation"]
    assert perm["rejected"] == 0 and len(perm["permuted"]) == 15
    assert perm["share_as_good"] < 0.5 and perm["p_value"] == (1 + np.sum(perm["permuted"] <= 0)) / 16


def test_bad_input():
    df = _linear_data(100)
    with pytest.raises(cn.EvidenceError, match="not columns"):
        cn.test_graph("A -> B -> E", df)
    with pytest.raises(cn.ModelError, match="test must be"):
        cn.test_graph("A -> B", df, test="magic")
    with pytest.raises(cn.ModelError, match="correction"):
        cn.test_graph("A -> B -> C", df, correction="magic")
