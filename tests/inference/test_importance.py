"""Importance sampling with the loopy-propagation proposal: exact on trees, within 5 SE elsewhere, beats likelihood weighting on unlikely evidence."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from test_loopy import random_tree

import causalnet as cn
from causalnet import EvidenceError


def within(got, want, k=5.0, floor=1e-3):
    err = np.abs(got.probs - want.probs)
    assert np.all(err <= k * np.maximum(got.std_err, floor)), (got.probs, want.probs, got.std_err)


def test_on_a_tree_the_proposal_is_the_posterior_so_weights_are_equal(rng, seed):
    m = random_tree(rng, 8)
    ev = {"T7": "s0", "T4": "s1"}
    got = m.query("T1", evidence=ev, method="importance", n_samples=4000, seed=seed)
    # a defensive mixture leaves some spread, but the effective sample size stays near n
    assert got.diagnostics["ess"] > 0.8 * 4000
    within(got, m.query("T1", evidence=ev))


@pytest.mark.parametrize("name, target, evidence", [
    ("alarm", "LVFAILURE", {"HRBP": 2, "CO": 0, "BP": 0}),
    ("child", "Disease", {"LowerBodyO2": 0, "CO2Report": 1, "XrayReport": 2}),
    ("asia", "tub", {"xray": "yes", "dysp": "yes", "asia": "yes"}),
])
def test_within_five_standard_errors_of_exact(name, target, evidence, seed):
    m = cn.gallery.load(name)
    got = m.query(target, evidence=evidence, method="importance", n_samples=20_000, seed=seed)
    within(got, m.query(target, evidence=evidence))
    assert "importance sampling (loopy-propagation proposal" in got.method


def test_unlikely_evidence_has_smaller_errors_than_likelihood_weighting(seed):
    m = cn.gallery.load("alarm")
    ev = {"HRBP": 0, "CO": 0, "BP": 0, "HREKG": 0, "HRSAT": 0}         # all low: rare together
    exact = m.query("HYPOVOLEMIA", evidence=ev)
    imp = m.query("HYPOVOLEMIA", evidence=ev, method="importance", n_samples=20_000, seed=seed)
    lw = m.query("HYPOVOLEMIA", evidence=ev, method="sampling", n_samples=20_000, seed=seed)
    within(imp, exact)
    assert imp.std_err.max() < lw.std_err.max()


def test_batched_do_and_soft_evidence(asia, seed):
    ev = {"xray": ["yes", "no", "yes"]}
    kw = dict(evidence=ev, do={"smoke": ["yes", "no", "no"]}, soft_evidence={"bronc": [0.9, 0.3]})
    got = asia.query("lung", method="importance", n_samples=9000, seed=seed, **kw)
    assert got.probs.shape == (3, 2) and got.diagnostics["ess"].shape == (3,)
    within(got, asia.query("lung", **kw))


def test_zero_probability_evidence_is_an_error(sprinkler):
    with pytest.raises(EvidenceError, match="probability zero"):
        sprinkler.query("Rain", evidence={"Wet": "wet"}, do={"Sprinkler": "off", "Rain": "no"},
                        method="importance", n_samples=500, seed=0)


def test_same_seed_same_answer(asia):
    a = asia.query("lung", evidence={"xray": "yes"}, method="importance", n_samples=2000, seed=1)
    b = asia.query("lung", evidence={"xray": "yes"}, method="importance", n_samples=2000, seed=1)
    assert_allclose(a.probs, b.probs, rtol=0, atol=0)
