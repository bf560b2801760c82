"""Soft (virtual) evidence: P(x | e, L) ∝ Σ P(x, e, y) L(y), by every engine, batched and under do."""

import numpy as np
import pytest
import scipy.stats
from numpy.testing import assert_allclose
from test_loopy import random_tree

import causalnet as cn
from causalnet import EvidenceError


def oracle(m, target, soft_node, lik, evidence=None, do=None):
    """The exact joint of (target, soft node) weighted by the likelihood, renormalised (no soft machinery)."""
    joint = m.query([target, soft_node], evidence=evidence, do=do).probs        # (..., Kt, Ky)
    w = joint * np.asarray(lik, dtype=float)[..., None, :]
    p = w.sum(axis=-1)
    return p / p.sum(axis=-1, keepdims=True)


def test_exact_engine_matches_the_weighted_joint(asia):
    got = asia.query("lung", evidence={"xray": "yes"}, soft_evidence={"dysp": [0.8, 0.2]})
    assert got.method.startswith("exact (variable elimination, soft evidence")
    assert_allclose(got.probs, oracle(asia, "lung", "dysp", [0.8, 0.2], {"xray": "yes"}), atol=1e-12)


def test_scale_does_not_matter_and_uniform_is_no_evidence(asia):
    a = asia.query("lung", soft_evidence={"dysp": [0.8, 0.2]}).probs
    assert_allclose(a, asia.query("lung", soft_evidence={"dysp": [8.0, 2.0]}).probs, atol=1e-12)
    assert_allclose(asia.query("lung", soft_evidence={"dysp": [0.5, 0.5]}).probs, asia.query("lung").probs,
                    atol=1e-12)
    one_hot = np.eye(2)[asia.specs["dysp"].states.index("yes")]
    assert_allclose(asia.query("lung", soft_evidence={"dysp": one_hot}).probs,
                    asia.query("lung", evidence={"dysp": "yes"}).probs, atol=1e-12)   # one-hot = hard


def test_soft_evidence_on_the_target_itself(asia):
    got = asia.query("lung", soft_evidence={"lung": [0.3, 0.9]}).probs
    prior = asia.query("lung").probs
    assert_allclose(got, prior * [0.3, 0.9] / (prior @ [0.3, 0.9]), atol=1e-12)


def test_batched_likelihoods_with_batched_evidence_and_do(asia, rng):
    lik = rng.random((5, 2)) + 0.01
    ev = {"xray": ["yes", "no", "yes", "no", "yes"]}
    got = asia.query("lung", evidence=ev, soft_evidence={"dysp": lik}, do={"smoke": "yes"})
    assert got.probs.shape == (5, 2)
    for i in range(5):
        want = oracle(asia, "lung", "dysp", lik[i], {"xray": ev["xray"][i]}, do={"smoke": "yes"})
        assert_allclose(got.probs[i], want, atol=1e-12)


def test_several_soft_nodes_and_a_joint_target(asia):
    soft = {"dysp": [0.8, 0.2], "xray": [0.4, 1.0]}
    got = asia.query(["lung", "tub"], soft_evidence=soft).probs
    joint = asia.query(["lung", "tub", "dysp", "xray"]).probs * np.multiply.outer([0.8, 0.2], [0.4, 1.0])
    want = joint.sum(axis=(2, 3))
    assert_allclose(got, want / want.sum(), atol=1e-12)


def test_loopy_is_exact_on_trees_with_soft_evidence(rng):
    m = random_tree(rng, 8)
    lik = rng.random((3, m.specs["T5"].card)) + 0.05
    got = m.query("T2", evidence={"T7": "s0"}, soft_evidence={"T5": lik}, method="loopy")
    want = m.query("T2", evidence={"T7": "s0"}, soft_evidence={"T5": lik})
    assert_allclose(got.probs, want.probs, atol=1e-9)


@pytest.mark.parametrize("method", ["sampling", "gibbs", "importance"])
def test_samplers_within_five_standard_errors(asia, method, seed):
    soft = {"dysp": [0.9, 0.1], "xray": [0.2, 1.0]}
    got = asia.query("lung", soft_evidence=soft, method=method, n_samples=20_000, seed=seed)
    want = asia.query("lung", soft_evidence=soft)
    assert np.all(np.abs(got.probs - want.probs) <= 5 * np.maximum(got.std_err, 1e-3))


def test_mixed_model_falls_back_to_weighting(seed):
    m = cn.CausalModel({"Z": cn.Categorical([0.3, 0.7]),
                        "X": cn.Function(["Z"], lambda z: 2.0 * z, noise=scipy.stats.norm(0, 1))})
    got = m.query("Z", evidence={"X": 1.0}, soft_evidence={"Z": [1.0, 0.5]}, n_samples=40_000, seed=seed)
    post = np.array([0.3 * scipy.stats.norm.pdf(1.0, 0, 1), 0.7 * 0.5 * scipy.stats.norm.pdf(1.0, 2, 1)])
    assert "likelihood weighting" in got.method
    assert np.all(np.abs(got.probs - post / post.sum()) <= 5 * got.std_err)


def test_bad_soft_evidence_is_an_evidence_error(asia):
    with pytest.raises(EvidenceError, match="all zeros"):
        asia.query("lung", soft_evidence={"dysp": [0.0, 0.0]})
    with pytest.raises(EvidenceError, match=r"all zeros \(row 1\)"):
        asia.query("lung", soft_evidence={"dysp": [[1.0, 0.0], [0.0, 0.0]]})
    with pytest.raises(EvidenceError, match=r"shape \(2,\) or \(n, 2\)"):
        asia.query("lung", soft_evidence={"dysp": [0.1, 0.2, 0.3]})
    with pytest.raises(EvidenceError, match="nonnegative"):
        asia.query("lung", soft_evidence={"dysp": [-0.1, 1.0]})
    with pytest.raises(EvidenceError, match="both hard and soft"):
        asia.query("lung", evidence={"dysp": "yes"}, soft_evidence={"dysp": [0.1, 1.0]})
    with pytest.raises(EvidenceError, match="did you mean"):
        asia.query("lung", soft_evidence={"dysq": [0.1, 1.0]})
    with pytest.raises(EvidenceError, match="share one length"):
        asia.query("lung", evidence={"xray": ["yes", "no"]}, soft_evidence={"dysp": [[0.1, 1.0]] * 3})
    with pytest.raises(EvidenceError, match="probability zero"):
        asia.query("dysp", evidence={"lung": "yes"}, soft_evidence={"either": [0.0, 1.0]})
    with pytest.raises(EvidenceError, match=r"probability zero in 1 of 2 rows \(rows \[0\]"):
        asia.query("dysp", evidence={"lung": "yes"}, soft_evidence={"either": [[0.0, 1.0], [1.0, 1.0]]})
    g = cn.CausalModel({"X": cn.LinearGaussian()})
    with pytest.raises(EvidenceError, match="discrete node"):
        g.query("X", soft_evidence={"X": [0.1, 1.0]})
