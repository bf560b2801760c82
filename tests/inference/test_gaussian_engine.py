"""The joint-Gaussian engine against independent oracles (explicit linear algebra, scipy, Monte Carlo)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.gaussian import affine_form, condition, is_linear_gaussian


def _joint(lg):
    # Z = 0.5 + e1; X = 0.8 Z + 0.7 e2; Y = 1 + 1.5 X - 0.7 Z + 0.5 e3, by hand
    B = np.array([[1.0, 0, 0], [0.8, 0.7, 0], [1.5 * 0.8 - 0.7, 1.5 * 0.7, 0.5]])
    c = np.array([0.5, 0.4, 1 + 1.5 * 0.4 - 0.35])
    return c, B @ B.T


def test_affine_form_matches_hand_computation(linear_gaussian):
    f = affine_form(linear_gaussian)
    c, S = _joint(linear_gaussian)
    idx = [f.index[v] for v in ("Z", "X", "Y")]
    assert_allclose(f.c[idx], c, atol=1e-12)
    assert_allclose(f.cov[np.ix_(idx, idx)], S, atol=1e-12)


def test_conditioning_matches_schur_complement(linear_gaussian):
    c, S = _joint(linear_gaussian)
    d = linear_gaussian.query(["Y", "Z"], evidence={"X": 1.3})
    o, t = [1], [2, 0]
    K = S[np.ix_(t, o)] @ np.linalg.inv(S[np.ix_(o, o)])
    assert_allclose(d.mean, c[t] + (K @ (np.array([1.3]) - c[o])), atol=1e-12)
    assert_allclose(d.cov, S[np.ix_(t, t)] - K @ S[np.ix_(o, t)], atol=1e-12)


def test_batched_evidence_and_per_row_do(linear_gaussian):
    x = np.array([-1.0, 0.0, 2.0])
    b = linear_gaussian.query("Y", evidence={"X": x})
    for i, xi in enumerate(x):
        assert_allclose(b.mean[i], linear_gaussian.query("Y", evidence={"X": xi}).mean, atol=1e-12)
    d = linear_gaussian.query("Y", do={"X": x})
    assert d.mean.shape == (3, 1)
    for i, xi in enumerate(x):
        assert_allclose(d.mean[i], linear_gaussian.query("Y", do={"X": xi}).mean, atol=1e-12)


@pytest.mark.parametrize("scale, offset", [(1.0, 2.0), (-0.5, 1.0), (0.0, 3.0)])
def test_affine_intervention_against_monte_carlo(linear_gaussian, scale, offset, rng):
    d = linear_gaussian.query(["X", "Y"], do={"X": cn.affine(scale, offset)})
    tr = linear_gaussian.do({"X": cn.affine(scale, offset)}).sample(200_000, seed=rng)
    xy = np.stack([tr["X"], tr["Y"]], axis=1)
    se = xy.std(axis=0) / np.sqrt(len(xy)) + 1e-12
    assert np.all(np.abs(xy.mean(axis=0) - d.mean) < 5 * se)
    assert_allclose(np.cov(xy.T), d.cov, atol=0.03)


def test_is_linear_gaussian_sees_affine_but_not_opaque_shifts(linear_gaussian):
    assert is_linear_gaussian(linear_gaussian.do({"X": cn.shift(1.0)}))
    assert not is_linear_gaussian(linear_gaussian.do({"X": lambda x: x + 1}))


def test_impossible_evidence_on_a_deterministic_relation():
    m = cn.CausalModel({"A": cn.LinearGaussian(), "B": cn.LinearGaussian(["A"], [2.0], sigma=0.0),
                        "C": cn.LinearGaussian(["B"], [1.0])})
    with pytest.raises(cn.EvidenceError, match="impossible"):
        m.query("C", evidence={"A": 1.0, "B": 3.0})            # B = 2 A exactly


def test_condition_without_evidence_is_identity():
    mean, cov = np.array([1.0, 2.0]), np.eye(2)
    m, S, le = condition(mean, cov, [], np.zeros(0))
    assert_allclose(m, mean) and assert_allclose(S, cov)
