"""Gibbs sampling: within 5 standard errors of the exact answer, diagnostics, blocking, stuck chains, errors."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, ModelError
from causalnet.inference import gibbs
from causalnet.inference.gibbs import chain_diagnostics, integrated_time


def within(got, want, k=5.0, floor=1e-3):
    err = np.abs(got.probs - want.probs)
    assert np.all(err <= k * np.maximum(got.std_err, floor)), (got.probs, want.probs, got.std_err)


@pytest.mark.parametrize("name, target, evidence", [
    ("asia", "lung", {"xray": "yes", "dysp": "yes"}),       # either = OR(tub, lung): needs a block
    ("alarm", "LVFAILURE", {"HRBP": 2, "CO": 0, "BP": 0}),
    ("sprinkler", "Rain", {"Wet": "wet"}),
])
def test_gibbs_within_five_standard_errors_of_exact(name, target, evidence, seed):
    m = cn.gallery.load(name)
    got = m.query(target, evidence=evidence, method="gibbs", n_samples=20_000, seed=seed)
    within(got, m.query(target, evidence=evidence))
    assert np.all(got.diagnostics["r_hat"] < 1.05)
    assert np.all(got.diagnostics["ess"] > 100)
    assert "gibbs sampling (4 chains" in got.method


def test_gibbs_joint_batched_and_do(asia, seed):
    ev = {"xray": ["yes", "no"], "dysp": ["yes", "no"]}
    got = asia.query(["lung", "bronc"], evidence=ev, do={"smoke": "yes"}, method="gibbs", n_samples=8000,
                     seed=seed)
    want = asia.query(["lung", "bronc"], evidence=ev, do={"smoke": "yes"})
    assert got.probs.shape == (2, 2, 2) and got.diagnostics["r_hat"].shape == (2, 2, 2)
    within(got, want)
    per_row = asia.query("lung", do={"smoke": ["yes", "no", "yes"]}, method="gibbs", n_samples=6000, seed=seed)
    within(per_row, asia.query("lung", do={"smoke": ["yes", "no", "yes"]}))


def test_same_seed_same_answer(asia):
    a = asia.query("lung", evidence={"xray": "yes"}, method="gibbs", n_samples=2000, seed=3)
    b = asia.query("lung", evidence={"xray": "yes"}, method="gibbs", n_samples=2000, seed=3)
    assert_allclose(a.probs, b.probs, rtol=0, atol=0)


def test_options_chains_and_burn_in(asia, seed):
    r = asia.query("lung", method="gibbs", n_samples=3000, chains=3, burn_in=7, seed=seed)
    assert r.diagnostics["chains"] == 3 and r.diagnostics["burn_in"] == 7 and r.diagnostics["sweeps"] == 1000
    with pytest.raises(ModelError, match="unknown option 'tol'"):
        asia.query("lung", method="gibbs", tol=1e-3)
    with pytest.raises(ModelError, match="chains must be a positive integer, got 0"):
        asia.query("lung", method="gibbs", chains=0)
    with pytest.raises(ModelError, match="burn_in must be a non-negative integer, got -1"):
        asia.query("lung", method="gibbs", burn_in=-1)
    with pytest.raises(ModelError, match="damping must be a number in"):
        asia.query("lung", method="loopy", damping=1.0)
    with pytest.raises(ModelError, match="tol must be a positive number, got 0"):
        asia.query("lung", method="loopy", tol=0)


def test_zero_probability_evidence_is_an_error(sprinkler):
    with pytest.raises(EvidenceError, match="no state consistent with the evidence"):
        sprinkler.query("Rain", evidence={"Wet": "wet"}, do={"Sprinkler": "off", "Rain": "no"}, method="gibbs",
                        n_samples=200, seed=0)


def xor_model():
    """A, B fair coins and C = A xor B observed: the posterior sits on {00, 11}, which single-site Gibbs cannot cross."""
    return cn.CausalModel({
        "A": cn.Categorical([0.5, 0.5]), "B": cn.Categorical([0.5, 0.5]),
        "C": cn.CPT(["A", "B"], [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]),
    })


def test_a_block_crosses_a_deterministic_relation(seed):
    m = xor_model()
    got = m.query("A", evidence={"C": 0}, method="gibbs", n_samples=4000, seed=seed)
    within(got, m.query("A", evidence={"C": 0}))


def test_a_chain_that_cannot_move_is_an_error_not_an_answer(monkeypatch, seed):
    monkeypatch.setattr(gibbs, "MAX_BLOCK", 1)                  # no blocks: single-site updates only
    with pytest.raises(ModelError, match="cannot move: 'A' never changes"):
        xor_model().query("A", evidence={"C": 0}, method="gibbs", n_samples=4000, chains=8, seed=seed)


def test_soft_evidence(asia, seed):
    soft = {"smoke": [[0.8, 0.2], [0.1, 0.9]]}
    got = asia.query("lung", evidence={"xray": "yes"}, soft_evidence=soft, method="gibbs", n_samples=8000,
                     seed=seed)
    within(got, asia.query("lung", evidence={"xray": "yes"}, soft_evidence=soft))


def test_diagnostics_against_known_series(rng):
    # AR(1) with coefficient phi: integrated time (1 + phi) / (1 - phi)
    phi, S = 0.6, 20_000
    z = np.empty((4, S))
    z[:, 0] = rng.normal(size=4)
    for t in range(1, S):
        z[:, t] = phi * z[:, t - 1] + rng.normal(size=4)
    assert_allclose(integrated_time(z), (1 + phi) / (1 - phi), rtol=0.1)
    iid = rng.integers(0, 2, size=(1, 4, 5000))
    d = chain_diagnostics(iid, 2)
    assert_allclose(d["ess"], 20_000, rtol=0.15)
    assert_allclose(d["r_hat"], 1.0, atol=0.01)
    assert_allclose(d["std_err"], np.sqrt(0.25 / 20_000), rtol=0.1)
    stuck = np.stack([np.zeros((2, 100), int), np.ones((2, 100), int)])[None].reshape(1, 4, 100)
    d = chain_diagnostics(stuck, 2)
    assert d["stuck"].all() and np.isinf(d["r_hat"]).all()


@pytest.mark.parametrize("soft", [False, True])
def test_compiled_sweep_draws_what_the_numpy_sweep_draws(soft):
    from causalnet.inference.gibbs import GibbsPlan, gibbs_run

    m = cn.gallery.load("asia")                         # with a block (either, tub, lung)
    plan = GibbsPlan(m)
    fixed = {list(m.dag.nodes).index("xray")}
    blocks = plan.blocks(fixed)
    assert any(len(b[0]) > 1 for b in blocks)
    soft_log = {0: np.log(np.tile([[0.3, 1.0]], (6, 1)))} if soft else {}
    out = {}
    for backend in ("numpy", "numba"):
        rng = np.random.default_rng(5)
        x = np.zeros((6, plan.cards.size), dtype=np.int64)
        plan.forward(x, np.zeros_like(x, dtype=bool), rng.random(x.shape))
        out[backend] = gibbs_run(plan, x, blocks, soft_log, [3, 4], 300, 20, rng, backend=backend)
    assert np.array_equal(out["numpy"][0], out["numba"][0])
    assert np.array_equal(out["numpy"][1], out["numba"][1])
