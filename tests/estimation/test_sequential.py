"""Time-varying treatments: the sequential back-door sets, the g-formula estimate against a brute-force
plug-in g-formula (pandas group-bys) on discrete data, against the model's exact do-query (a known
effect with a latent confounder of L and Y), and the linear ICE against hand-written regressions."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn

A = ["A[0]", "A[1]"]
GRAPH = "A[0] -> L[1] -> A[1] -> Y; A[0] -> Y; L[1] -> Y; A[0] -> A[1]; U -> L[1]; U -> Y; U [latent]"


@pytest.fixture(scope="module")
def model():
    return cn.CausalModel({
        "U": cn.Categorical([0.6, 0.4]),
        "A[0]": cn.Categorical([0.5, 0.5]),
        "L[1]": cn.CPT(["A[0]", "U"], [[[0.8, 0.2], [0.3, 0.7]], [[0.5, 0.5], [0.1, 0.9]]]),
        "A[1]": cn.CPT(["A[0]", "L[1]"], [[[0.7, 0.3], [0.2, 0.8]], [[0.6, 0.4], [0.25, 0.75]]]),
        "Y": cn.CPT(["A[0]", "L[1]", "A[1]", "U"], _y_table()),
    })


def _y_table():
    p = np.zeros((2, 2, 2, 2, 2))
    for a0 in (0, 1):
        for ell in (0, 1):
            for a1 in (0, 1):
                for u in (0, 1):
                    q = 0.1 + 0.15 * a0 + 0.2 * ell + 0.25 * a1 + 0.2 * u
                    p[a0, ell, a1, u] = [1 - q, q]
    return p


@pytest.fixture(scope="module")
def data(model):
    return model.sample(20_000, seed=0).to_pandas().drop(columns="U").astype(int)


def _brute(df, a0, a1):
    """Σ_l P(l | a0) E[Y | a0, l, a1] by group-bys."""
    total = 0.0
    p_l = df[df["A[0]"] == a0]["L[1]"].value_counts(normalize=True)
    for ell, pl in p_l.items():
        cell = df[(df["A[0]"] == a0) & (df["L[1]"] == ell) & (df["A[1]"] == a1)]
        total += pl * cell["Y"].mean()
    return total


def test_default_sets_follow_the_sequential_back_door():
    g = cn.DAG.parse(GRAPH)
    from causalnet.estimation.sequential import sequential_sets

    assert sequential_sets(g, A, "Y") == [frozenset(), frozenset({"L[1]"})]
    with pytest.raises(cn.GraphError, match="sequential back-door criterion fails at 'A\\[1\\]'"):
        cn.estimate(g, pd.DataFrame({"A[0]": [0, 1], "A[1]": [0, 1], "L[1]": [0, 1], "Y": [0, 1]}), A, "Y",
                    adjust=[[], []])
    with pytest.raises(cn.GraphError, match="needs 2 sets"):
        cn.estimate(g, pd.DataFrame({"A[0]": [0, 1], "A[1]": [0, 1], "L[1]": [0, 1], "Y": [0, 1]}), A, "Y",
                    adjust=[[]])


def test_g_formula_equals_brute_force_and_the_exact_do_query(data, model):
    g = cn.DAG.parse(GRAPH)
    e = cn.estimate(g, data, A, "Y", n_bootstrap=200, seed=0)
    assert e.method == "g-formula" and e.question == "E[Y | do(A[0]=1, A[1]=1)] - E[Y | do(A[0]=0, A[1]=0)]"
    assert "Σ_{L[1]} P(L[1] | A[0]) E[Y | A[0], L[1], A[1]]" in e.estimand
    assert_allclose(e.means, [_brute(data, 1, 1), _brute(data, 0, 0)], rtol=0, atol=1e-12)
    truth = [model.query("Y", do={"A[0]": a, "A[1]": a}).probs[1] for a in (1, 0)]
    assert abs(e.value - (truth[0] - truth[1])) < 3 * e.std_err
    mixed = cn.estimate(g, data, A, "Y", treated=(1, 0), control=(0, 1), n_bootstrap=2, seed=0)
    assert_allclose(mixed.means, [_brute(data, 1, 0), _brute(data, 0, 1)], rtol=0, atol=1e-12)


def test_bootstrap_replicates_equal_refits(data):
    g = cn.DAG.parse(GRAPH)
    e = cn.estimate(g, data, A, "Y", n_bootstrap=2, seed=4)
    counts = cn.estimation.linear.bootstrap_counts(len(data), 2, np.random.default_rng(4))
    rows = np.repeat(np.arange(len(data)), counts[0].astype(int))
    again = _brute(data.iloc[rows], 1, 1) - _brute(data.iloc[rows], 0, 0)
    assert_allclose(e.replicates[0], again, rtol=0, atol=1e-12)


def test_linear_ice_equals_hand_regressions():
    rng = np.random.default_rng(0)
    n = 3000
    a0 = rng.integers(0, 2, n)
    u = rng.normal(size=n)
    ell = 0.8 * a0 + u + rng.normal(size=n)
    a1 = (rng.random(n) < 1 / (1 + np.exp(-ell))).astype(int)
    y = 1.0 * a0 + 2.0 * a1 + 0.5 * ell + u + rng.normal(size=n)       # E[Y | do(1,1)] - do(0,0) = 1 + 2 + 0.4
    df = pd.DataFrame({"A[0]": a0, "L[1]": ell, "A[1]": a1, "Y": y})
    e = cn.estimate(cn.DAG.parse(GRAPH), df, A, "Y", n_bootstrap=300, seed=0)

    def ice(r0, r1):
        rows = (a0 == r0) & (a1 == r1)
        x = np.column_stack([np.ones(n), ell])
        q1 = x @ np.linalg.lstsq(x[rows], y[rows], rcond=None)[0]
        return q1[a0 == r0].mean()

    assert_allclose(e.value, ice(1, 1) - ice(0, 0), rtol=0, atol=1e-10)
    assert abs(e.value - 3.4) < 3 * e.std_err


def test_positivity_failure_is_named(data):
    df = data[~((data["A[0]"] == 1) & (data["L[1]"] == 0) & (data["A[1]"] == 1))]
    with pytest.raises(cn.EvidenceError, match="positivity"):
        cn.estimate(cn.DAG.parse(GRAPH), df, A, "Y", n_bootstrap=2)
    with pytest.raises(cn.ModelError, match="g-formula"):
        cn.estimate(cn.DAG.parse(GRAPH), data, A, "Y", method="aipw")


def test_bad_regimes_and_columns_raise(data):
    g = cn.DAG.parse(GRAPH)
    with pytest.raises(cn.EvidenceError, match="positivity"):
        cn.estimate(g, data, A, "Y", treated=(1, 7), n_bootstrap=2)
    with pytest.raises(cn.ModelError, match="one value per treatment"):
        cn.estimate(g, data, A, "Y", treated=(1,), n_bootstrap=2)
    with pytest.raises(cn.EvidenceError, match="not a column"):
        cn.estimate(g, data.drop(columns="A[1]"), A, "Y", n_bootstrap=2)
    cont = data.assign(**{"L[1]": data["L[1]"] + 0.5 * np.random.default_rng(0).normal(size=len(data))})
    with pytest.raises(cn.EvidenceError, match="too few"):
        cn.estimate(g, cont, A, "Y", treated=(1, 5), n_bootstrap=2)


# -- the analytic standard error: the jackknife of hand-written g-formulas, and coverage ------------

def _jackknife_se(stat, n):
    """sqrt((n-1)/n Σ (θ_(i) − θ̄)²) over the n leave-one-out estimates."""
    loo = np.array([stat(np.arange(n) != i) for i in range(n)])
    return np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))


def _weighted_g_formula(cols, w, a0, a1):
    """Σ_l P_w(l | a0) E_w[Y | a0, l, a1] with row weights w, written out with numpy."""
    x0, ell, x1, y = cols
    total = 0.0
    base = x0 == a0
    for v in np.unique(ell[base]):
        cell = base & (ell == v)
        arm = cell & (x1 == a1)
        total += w[cell].sum() / w[base].sum() * (w[arm] * y[arm]).sum() / w[arm].sum()
    return total


def test_analytic_se_of_the_plugin_g_formula_is_its_influence_function(model):
    # the oracle: the infinitesimal jackknife of the g-formula written out with weights (each row's weight
    # nudged in turn), and the ordinary jackknife, which it approaches as n grows
    df = model.sample(500, seed=3).to_pandas().drop(columns="U").astype(int)
    e = cn.estimate(cn.DAG.parse(GRAPH), df, A, "Y", ci="analytic")
    assert e.ci_method == "analytic"
    cols = [df[c].to_numpy() for c in ("A[0]", "L[1]", "A[1]", "Y")]
    n, eps = len(df), 1e-7

    def effect(w):
        return _weighted_g_formula(cols, w, 1, 1) - _weighted_g_formula(cols, w, 0, 0)

    base = effect(np.ones(n))
    assert_allclose(e.value, base, rtol=0, atol=1e-12)
    curve = np.array([(effect(1.0 + n * eps * (np.arange(n) == i)) - base) / eps for i in range(n)])
    assert_allclose(e.std_err, np.sqrt(np.mean(curve ** 2) / n), rtol=1e-4)
    jack = _jackknife_se(lambda keep: effect(keep.astype(float)), n)
    assert_allclose(e.std_err, jack, rtol=0.05)
    # the propagation through the earlier step matters: the arm-wise variance alone misses by more
    naive = np.sqrt(sum(np.var(cols[3][(cols[0] == a) & (cols[2] == a)], ddof=1)
                        / ((cols[0] == a) & (cols[2] == a)).sum() for a in (0, 1)))
    assert abs(naive / e.std_err - 1) > 0.05


def test_analytic_se_of_the_linear_ice_is_the_jackknife():
    rng = np.random.default_rng(5)
    n = 400
    a0 = rng.integers(0, 2, n)
    ell = 0.8 * a0 + rng.normal(size=n)
    a1 = (rng.random(n) < 1 / (1 + np.exp(-ell))).astype(int)
    y = 1.0 * a0 + 2.0 * a1 + 0.5 * ell + rng.normal(size=n) * (1 + 0.5 * np.abs(ell))   # heteroskedastic
    df = pd.DataFrame({"A[0]": a0, "L[1]": ell, "A[1]": a1, "Y": y})
    e = cn.estimate(cn.DAG.parse(GRAPH), df, A, "Y", ci="analytic")

    def ice(keep, r0, r1):
        x = np.column_stack([np.ones(n), ell])[keep]
        rows = ((a0 == r0) & (a1 == r1))[keep]
        q1 = x @ np.linalg.lstsq(x[rows], y[keep][rows], rcond=None)[0]
        return q1[(a0 == r0)[keep]].mean()

    se = _jackknife_se(lambda keep: ice(keep, 1, 1) - ice(keep, 0, 0), n)
    assert_allclose(e.std_err, se, rtol=0.03)


def test_analytic_interval_covers_the_exact_do_effect(model):
    truth = np.subtract(*[model.query("Y", do={"A[0]": a, "A[1]": a}).probs[1] for a in (1, 0)])
    hits = 0
    for rep in range(100):
        df = model.sample(1500, seed=100 + rep).to_pandas().drop(columns="U").astype(int)
        e = cn.estimate(cn.DAG.parse(GRAPH), df, A, "Y", ci="analytic")
        hits += e.ci[0] <= truth <= e.ci[1]
    assert hits >= 88
