"""Likelihood weighting against exact engines, per-row do, and the NaN guard."""

import numpy as np
import pytest
import scipy.stats
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.sampling import likelihood_weighting, normalise, weighted_state_probs


def test_weighted_state_probs_by_hand():
    w = np.array([[0.5, 0.25, 0.25]])
    probs, se = weighted_state_probs([np.array([0, 1, 1])], [2], w)
    assert_allclose(probs, [[0.5, 0.5]])
    assert np.all(se > 0)


def test_likelihood_weighting_matches_exact(sprinkler, rng):
    ev = {"Wet": np.asarray(1)}
    vals, log_w, _ = likelihood_weighting(sprinkler, ev, 1, 100_000, rng)
    w = normalise(log_w, 1, 100_000)
    probs, se = weighted_state_probs([vals["Rain"]], [2], w)
    exact = sprinkler.query("Rain", evidence={"Wet": "wet"}).probs
    assert np.all(np.abs(probs[0] - exact) < 5 * se[0] + 1e-9)


def test_clamped_rows_and_given_noise(sprinkler, rng):
    vals, _, _ = likelihood_weighting(sprinkler, {}, 2, 5, rng, clamped={"Sprinkler": np.array([1, 0])})
    assert vals["Sprinkler"].tolist() == [1] * 5 + [0] * 5
    u = np.full(10, 0.999)
    vals, _, _ = likelihood_weighting(sprinkler, {}, 2, 5, rng, noise={"Rain": u})
    assert np.all(vals["Rain"] == 1)


def test_sampling_engine_agrees_with_exact_on_batched_evidence(sprinkler, seed):
    ev = {"Rain": np.array(["no", "yes"])}
    exact = sprinkler.query("Wet", evidence=ev)
    approx = sprinkler.query("Wet", evidence=ev, method="sampling", seed=seed, n_samples=40_000)
    assert np.all(np.abs(approx.probs - exact.probs) < 5 * approx.std_err + 1e-9)


def test_seed_reproducible(sprinkler):
    a = sprinkler.query("Rain", evidence={"Wet": "wet"}, method="sampling", seed=3, n_samples=5000)
    b = sprinkler.query("Rain", evidence={"Wet": "wet"}, method="sampling", seed=3, n_samples=5000)
    assert_allclose(a.probs, b.probs, atol=0)


def test_nan_from_a_function_names_the_node(seed):
    m = cn.CausalModel({"X": cn.LinearGaussian(),
                        "Y": cn.Function(["X"], lambda x: np.where(x > 3, np.nan, x), noise=scipy.stats.norm())})
    with pytest.raises(cn.ModelError, match="(?i)node 'Y'.*nan"):
        m.query("Y", evidence={}, seed=seed, n_samples=50_000)
