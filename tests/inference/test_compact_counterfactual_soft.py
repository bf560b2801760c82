"""Soft-evidence counterfactuals on models with compact CPDs (answered by the sampled engine, whose draws the
soft evidence weighs), against the exact twin network of the *expanded SCM*: the same model with each noisy-OR's
inhibitors and leak as explicit root nodes and the child a deterministic OR (the mechanism's own noise)."""

import numpy as np
import pytest

import causalnet as cn


def noisy_or_model():
    return cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.3, 0.7]),
        "Y": cn.NoisyOR(["A", "B"], [0.8, 0.5], leak=0.1),
        "Z": cn.CPT(["Y"], [[0.9, 0.1], [0.25, 0.75]])})


def explicit_scm():
    """A, B, Z as above; U_A, U_B, U_L the inhibitor/leak noises as roots; Y = (A ∧ U_A) ∨ (B ∧ U_B) ∨ U_L."""
    y = np.zeros((2, 2, 2, 2, 2, 2))
    for a, b, ua, ub, ul in np.ndindex(2, 2, 2, 2, 2):
        y[a, b, ua, ub, ul, int((a and ua) or (b and ub) or ul)] = 1.0
    return cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.3, 0.7]),
        "U_A": cn.Categorical([0.2, 0.8]), "U_B": cn.Categorical([0.5, 0.5]), "U_L": cn.Categorical([0.9, 0.1]),
        "Y": cn.CPT(["A", "B", "U_A", "U_B", "U_L"], y),
        "Z": cn.CPT(["Y"], [[0.9, 0.1], [0.25, 0.75]])})


@pytest.mark.parametrize("soft", [{"Y": [0.2, 1.0]}, {"B": [1.0, 0.3]}, {"Y": [0.2, 1.0], "A": [0.5, 2.0]}])
def test_soft_evidence_counterfactual_on_noisy_or_matches_the_expanded_scm(soft):
    m, x = noisy_or_model(), explicit_scm()
    q = dict(evidence={"Z": 1}, do={"A": 0})
    want = x.counterfactual("Y", **q, soft_evidence=soft)
    assert want.method.startswith("exact")
    assert np.abs(want.probs - x.counterfactual("Y", **q).probs).max() > 0.01     # the soft evidence matters
    got = m.counterfactual("Y", **q, soft_evidence=soft, n_samples=40_000, seed=4)
    assert "likelihood weighting" in got.method
    assert np.all(np.abs(got.probs - want.probs) <= 5 * np.maximum(got.std_err, 1e-3)), (got.probs, want.probs)


def test_batched_soft_evidence_counterfactual_on_noisy_or(rng):
    m, x = noisy_or_model(), explicit_scm()
    lik = rng.uniform(0.05, 1.0, size=(3, 2))
    got = m.counterfactual("Z", evidence={"Y": 1}, do={"B": 0}, soft_evidence={"A": lik}, n_samples=20_000, seed=2)
    assert got.probs.shape == (3, 2)
    for r in range(3):
        want = x.counterfactual("Z", evidence={"Y": 1}, do={"B": 0}, soft_evidence={"A": lik[r]})
        assert np.all(np.abs(got.probs[r] - want.probs) <= 5 * np.maximum(got.std_err[r], 1e-3))


def test_soft_evidence_that_excludes_every_draw_is_an_evidence_error():
    m = noisy_or_model()
    with pytest.raises(cn.EvidenceError):
        m.counterfactual("Y", evidence={"A": 1}, do={"A": 0}, soft_evidence={"A": [1.0, 0.0]}, n_samples=500, seed=0)
