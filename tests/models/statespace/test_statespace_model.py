"""cn.StateSpace as an estimator: EM (monotone, brute-force likelihoods), sampling, controls, bad input."""

import numpy as np
import pytest
from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from statespace_oracles import brute_posterior, joint_gaussian, random_model

import causalnet as cn


def test_em_is_monotone_and_its_likelihoods_are_brute_force(rng):
    truth = random_model(rng, 2, 2)
    _, y = truth.sample(6, 3, seed=rng)
    y[0, 2] = np.nan
    y[1, 3, 0] = np.nan
    start = random_model(np.random.default_rng(1), 2, 2)
    fitted = cn.StateSpace(start.transition, start.observation, start.transition_cov, start.observation_cov,
                           start.initial_mean, start.initial_cov).fit(y, n_iter=15, tol=0.0)
    h = np.array(fitted.history_)
    assert len(h) == 16
    assert (np.diff(h) >= -1e-9).all(), np.diff(h)
    assert h[-1] > h[0] + 1.0
    # the last recorded likelihood is that of the fitted parameters, checked by brute force
    total = sum(brute_posterior(fitted, y[i])[3] for i in range(3))
    assert_allclose(h[-1], total, rtol=0, atol=1e-8)
    assert_allclose(fitted.score(y), total, rtol=0, atol=1e-8)


def test_em_with_controls_and_a_subset_of_parameters(rng):
    truth = random_model(rng, 2, 1, control=1)
    u = rng.normal(size=(29, 1))
    _, y = truth.sample(30, seed=rng, controls=u)
    y[5:8] = np.nan
    B0 = np.zeros((2, 1))
    model = cn.StateSpace(truth.transition, truth.observation, np.eye(2), [[1.0]], truth.initial_mean,
                          truth.initial_cov, B0)
    model.fit(y, controls=u, n_iter=20, tol=0.0, estimate=["control", "transition_cov", "observation_cov"])
    h = np.array(model.history_)
    assert (np.diff(h) >= -1e-9).all()
    assert_allclose(model.transition, truth.transition)                  # held fixed
    assert not np.allclose(model.control, 0.0)
    offsets = (u @ model.control.T)
    assert_allclose(model.log_likelihood(y, controls=u), brute_posterior(model, y, offsets)[3], rtol=0, atol=1e-8)


def test_em_recovers_a_scalar_random_walk_plus_noise(rng):
    """Local level model: EM's variance estimates land near the truth (T = 2000, within 25 %)."""
    truth = cn.StateSpace([[1.0]], [[1.0]], [[0.5]], [[2.0]], [0.0], [[1.0]])
    _, y = truth.sample(2000, seed=rng)
    model = cn.StateSpace([[1.0]], [[1.0]], [[1.0]], [[1.0]], [0.0], [[1.0]])
    model.fit(y, n_iter=200, tol=1e-9, estimate=["transition_cov", "observation_cov"])
    assert abs(model.transition_cov[0, 0] - 0.5) < 0.125
    assert abs(model.observation_cov[0, 0] - 2.0) < 0.5


def test_sample_moments_match_the_joint_gaussian(rng):
    ss = random_model(rng, 2, 1)
    z, y = ss.sample(4, 20_000, seed=0)
    mean, cov = joint_gaussian(ss, 4)
    draws = np.concatenate([z.reshape(20_000, -1), y.reshape(20_000, -1)], axis=1)
    se = np.sqrt(np.diag(cov) / 20_000)
    assert (np.abs(draws.mean(0) - mean) < 5 * se).all()
    assert_allclose(np.cov(draws.T), cov, rtol=0.06, atol=0.06 * np.sqrt(np.outer(np.diag(cov), np.diag(cov))).max())
    z1, _ = ss.sample(4, 3, seed=7)
    z2, _ = ss.sample(4, 3, seed=7)
    assert_allclose(z1, z2)


def test_controls_are_transition_offsets(rng):
    ss = random_model(rng, 2, 2, control=2)
    u = rng.normal(size=(9, 2))
    _, y = ss.sample(10, seed=rng, controls=u)
    mz, covs, _, ll = brute_posterior(ss, y, u @ ss.control.T)
    s = ss.smooth(y, controls=u)
    assert_allclose(s.mean, mz, rtol=0, atol=1e-9)
    assert_allclose(s.log_likelihood, ll, rtol=0, atol=1e-9)
    with pytest.raises(cn.ModelError, match=r"pass controls= of shape \(9, 2\)"):
        ss.smooth(y)
    with pytest.raises(cn.ShapeError, match=r"controls must have shape \(9, 2\)"):
        ss.smooth(y, controls=u[:5])


def test_estimates_give_gaussians_and_bands(rng):
    ss = random_model(rng, 2, 1)
    _, y = ss.sample(5, seed=rng)
    est = ss.smooth(y)
    g = est[3]
    assert isinstance(g, cn.Gaussian) and g.variables == ("Z0[3]", "Z1[3]")
    lo, hi = est.interval(0.95)
    assert_allclose(hi - lo, 2 * 1.959963984540054 * est.std, rtol=1e-12)
    frame = est.to_pandas()
    assert list(frame.columns) == ["mean_Z0", "mean_Z1", "sd_Z0", "sd_Z1"] and len(frame) == 5


@pytest.mark.parametrize("kwargs,error,message", [
    ({"transition": np.eye(3)}, cn.ShapeError, r"observation must have shape \(p, 3\) \(d = 3 from transition\), got \(1, 2\)"),
    ({"observation": np.ones((1, 3))}, cn.ShapeError, r"observation must have shape \(p, 2\).*got \(1, 3\)"),
    ({"transition_cov": np.eye(3)}, cn.ShapeError, r"transition_cov must have shape \(2, 2\), got \(3, 3\)"),
    ({"observation_cov": np.eye(2)}, cn.ShapeError, r"observation_cov must have shape \(1, 1\), got \(2, 2\)"),
    ({"initial_mean": np.zeros(3)}, cn.ShapeError, r"initial_mean must have shape \(2,\), got \(3,\)"),
    ({"transition_cov": [[1.0, 2.0], [2.0, 1.0]]}, cn.ModelError, "transition_cov must be positive semi-definite"),
    ({"initial_cov": [[1.0, 0.5], [0.0, 1.0]]}, cn.ModelError, "initial_cov must be symmetric"),
    ({"transition": [[np.nan, 0.0], [0.0, 1.0]]}, cn.ModelError, r"transition has non-finite entries"),
    ({"observation_cov": [[np.inf]]}, cn.ModelError, "observation_cov has non-finite"),
    ({"control": np.ones((3, 1))}, cn.ShapeError, r"control must have shape \(2, k\), got \(3, 1\)"),
    ({"transition": "abc"}, cn.ModelError, "transition must be a real array"),
])
def test_bad_parameters_are_typed_errors(kwargs, error, message):
    ok = dict(transition=np.eye(2), observation=np.ones((1, 2)), transition_cov=np.eye(2), observation_cov=[[1.0]],
              initial_mean=np.zeros(2), initial_cov=np.eye(2))
    with pytest.raises(error, match=message):
        cn.StateSpace(**{**ok, **kwargs})


def test_bad_sequences_and_a_failed_fit_leave_the_model_untouched(rng):
    ss = random_model(rng, 2, 2)
    with pytest.raises(cn.ShapeError, match=r"y must have shape \(T, 2\) with T >= 1, got \(5, 3\)"):
        ss.filter(np.zeros((5, 3)))
    with pytest.raises(cn.ShapeError, match=r"y must have shape \(n, T, 2\)"):
        ss.filter(np.zeros((2, 5, 3)))
    with pytest.raises(cn.ShapeError, match=r"with n, T >= 1, got \(0, 5, 2\)"):
        ss.filter(np.zeros((0, 5, 2)))
    with pytest.raises(cn.EvidenceError, match=r"y must be finite and at most 1e\+100 in size.*got inf at \[0, 0\]"):
        ss.filter(np.full((3, 2), np.inf))
    with pytest.raises(cn.EvidenceError, match="rescale"):
        ss.filter(np.full((3, 2), 1e200))
    before = {k: getattr(ss, k).copy() for k in ("transition", "observation", "transition_cov")}
    with pytest.raises(cn.ModelError, match="estimate names unknown parameters"):
        ss.fit(np.zeros((5, 2)), estimate=["transitions"])
    with pytest.raises(cn.ModelError, match="method must be 'em'"):
        ss.fit(np.zeros((5, 2)), method="mle")
    for k, v in before.items():
        assert_allclose(getattr(ss, k), v)
    with pytest.raises(cn.ModelError, match="names must be distinct"):
        cn.StateSpace(np.eye(1), np.eye(1), np.eye(1), np.eye(1), [0.0], np.eye(1), state_names=["a"],
                      observation_names=["a"])


def test_em_on_sequences_of_different_lengths(rng):
    truth = random_model(rng, 2, 1)
    seqs = [truth.sample(T, seed=i)[1] for i, T in enumerate((6, 3, 8))]
    model = random_model(np.random.default_rng(5), 2, 1).fit(seqs, n_iter=8, tol=0.0)
    h = np.array(model.history_)
    assert (np.diff(h) >= -1e-9).all()
    assert_allclose(h[-1], sum(brute_posterior(model, y)[3] for y in seqs), rtol=0, atol=1e-8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(y=st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6),
    st.lists(st.lists(st.one_of(st.floats(-1e3, 1e3), st.just(np.nan)), min_size=1, max_size=3), max_size=5),
    st.just("abc"), st.just([np.zeros(3), np.zeros((2, 2))]),
))
def test_entry_points_on_any_input(y):
    """Any sequence: an answer without NaN, or the library's typed error, and the model untouched."""
    ss = cn.StateSpace([[0.9]], [[1.0]], [[0.5]], [[1.0]], [0.0], [[1.0]])
    for fn in (ss.filter, ss.smooth, ss.log_likelihood):
        guarded(fn, y)
    guarded(ss.fit, y, n_iter=2)
