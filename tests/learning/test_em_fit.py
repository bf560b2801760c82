"""EM: the log-likelihood never decreases; it equals a brute-force marginal likelihood; complete data give MLE."""

import itertools

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import fit
from causalnet.learning import fit_info, fit_model


def brute_loglik(model, df):
    """Σ_rows log Σ_{hidden} P(row, hidden) by enumerating every joint assignment (small models only)."""
    nodes = list(model.nodes)
    grids = list(itertools.product(*(range(len(model.states(v))) for v in nodes)))
    joint = np.exp(model.log_prob({v: np.array([g[i] for g in grids]) for i, v in enumerate(nodes)}))  # (S,)
    total = 0.0
    for _, row in df.iterrows():
        ok = np.ones(len(grids), dtype=bool)
        for i, v in enumerate(nodes):
            if v in row.index and row[v] == row[v] and row[v] is not None:
                k = model.states(v).index(row[v])
                ok &= np.array([g[i] == k for g in grids])
        total += np.log(joint[ok].sum())
    return total


@pytest.fixture(scope="module")
def sprinkler_rows():
    from conftest import make_sprinkler

    return make_sprinkler().sample(400, seed=4).to_pandas()


def test_em_latent_monotone_and_matches_brute_force(sprinkler_rows):
    from conftest import make_sprinkler

    df = sprinkler_rows.drop(columns=["Sprinkler"])
    m = fit(make_sprinkler().dag, df, method="em", latent=["Sprinkler"], states={"Sprinkler": ["off", "on"]},
            seed=0, n_iter=40, tol=0, progress=False)
    info = fit_info(m)
    trace = np.array(info.log_likelihood)
    assert np.all(np.diff(trace) >= -1e-8 * np.abs(trace[:-1]))
    assert 1 <= info.iterations <= 40 and len(trace) == info.iterations + 1
    assert_allclose(trace[-1], brute_loglik(m, df), rtol=1e-10)


def test_em_missing_cells_monotone_and_brute_force(sprinkler_rows):
    rng = np.random.default_rng(1)
    df = sprinkler_rows.copy()
    for c in df.columns:
        df.loc[rng.random(len(df)) < 0.25, c] = np.nan
    m = fit("Rain -> Sprinkler; Rain -> Wet; Sprinkler -> Wet", df, method="em", seed=2, n_iter=60,
            progress=False, restarts=2)
    info = fit_info(m)
    trace = np.array(info.log_likelihood)
    assert np.all(np.diff(trace) >= -1e-8 * np.abs(trace[:-1]))
    assert info.restarts == 2
    assert_allclose(trace[-1], brute_loglik(m, df), rtol=1e-10)


def test_em_map_objective_monotone(sprinkler_rows):
    df = sprinkler_rows.drop(columns=["Rain"])
    m = fit("Rain -> Sprinkler; Rain -> Wet; Sprinkler -> Wet", df, method="em", prior="bdeu",
            latent=["Rain"], states={"Rain": 2}, seed=3, n_iter=25, progress=False)
    trace = np.array(fit_info(m).log_likelihood)
    assert np.all(np.diff(trace) >= -1e-8 * np.abs(trace[:-1]))
    assert m.states("Rain") == (0, 1)


def test_em_on_complete_data_is_mle(sprinkler):
    df = sprinkler.sample(1000, seed=5).to_pandas()
    em = fit_model(sprinkler, df, method="em", progress=False)
    mle = fit(sprinkler.dag, df)
    for v in sprinkler.nodes:
        assert_allclose(em.mechanisms[v].table, mle.mechanisms[v].table, rtol=0, atol=1e-12)
    assert fit_info(em).converged
    assert fit_info(mle) is None


def test_em_seed_reproducible(sprinkler_rows):
    df = sprinkler_rows.drop(columns=["Sprinkler"])
    kw = dict(method="em", latent=["Sprinkler"], states={"Sprinkler": 2}, seed=7, n_iter=5, progress=False)
    a = fit("Rain -> Sprinkler; Rain -> Wet; Sprinkler -> Wet", df, **kw)
    b = fit("Rain -> Sprinkler; Rain -> Wet; Sprinkler -> Wet", df, **kw)
    assert_allclose(a.mechanisms["Wet"].table, b.mechanisms["Wet"].table, rtol=0, atol=0)


@pytest.mark.parametrize("kw,match", [({"n_iter": -1}, "n_iter"), ({"restarts": 0}, "restarts"),
                                      ({"tol": float("nan")}, "tol")])
def test_em_bad_settings(sprinkler_rows, kw, match):
    with pytest.raises(cn.ModelError, match=match):
        fit("Rain -> Wet", sprinkler_rows, method="em", progress=False, **kw)


def test_em_fills_missing_continuous_cells(linear_gaussian):
    # missing real cells are EM'd since issue 27 (tests/learning/test_cg_em.py checks the likelihood)
    df = linear_gaussian.sample(50, seed=0).to_pandas()
    df.loc[3, "X"] = np.nan
    m = fit(linear_gaussian.dag, df, method="em", progress=False)
    trace = cn.learning.fit_info(m).log_likelihood
    assert np.all(np.diff(trace) >= -1e-8 * np.abs(trace[:-1]))


def test_em_integer_state_names_equal_string_names(sprinkler):
    df = sprinkler.sample(600, seed=11).to_pandas()
    codes = pd.DataFrame({v: df[v].cat.codes.to_numpy() + 5 for v in df})          # states 5, 6: names, not indices
    codes = codes.astype(object).mask(np.random.default_rng(3).random(codes.shape) < 0.3)
    text = codes.map(lambda x: None if x is None or x != x else f"s{x}")
    opts = dict(method="em", n_iter=5, seed=0, progress=False)
    a = cn.fit(sprinkler.dag, codes, states={v: [5, 6] for v in df}, **opts)
    b = cn.fit(sprinkler.dag, text, states={v: ["s5", "s6"] for v in df}, **opts)
    for v in sprinkler.nodes:
        np.testing.assert_allclose(a.mechanisms[v].table, b.mechanisms[v].table, rtol=0, atol=1e-12)
