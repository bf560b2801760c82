"""The Kalman core against statsmodels, filterpy and brute-force joint Gaussians; numpy and numba sweeps equal."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from statespace_oracles import brute_posterior, joint_gaussian, random_model

import causalnet as cn
from causalnet.models.statespace.kalman import kalman_filter, kalman_smoother, rts_smoother

statsmodels = pytest.importorskip("statsmodels.tsa.statespace.mlemodel")


def _statsmodels(ss, y):
    mod = statsmodels.MLEModel(y, k_states=ss.n_states, k_posdef=ss.n_states, initialization="known",
                               initial_state=ss.initial_mean, initial_state_cov=ss.initial_cov)
    mod["design"], mod["obs_cov"] = ss.observation, ss.observation_cov
    mod["transition"], mod["selection"], mod["state_cov"] = ss.transition, np.eye(ss.n_states), ss.transition_cov
    return mod.ssm.smooth()


def _with_missing(rng, y):
    y = y.copy()
    y[rng.random(y.shape[0]) < 0.15] = np.nan                                  # whole rows
    y[rng.random(y.shape) < 0.1] = np.nan                                      # single components
    return y


@pytest.mark.parametrize("d,p", [(1, 1), (2, 1), (3, 2), (4, 3)])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_matches_statsmodels(rng, d, p, backend):
    ss = random_model(rng, d, p)
    _, y = ss.sample(40, seed=rng)
    y = _with_missing(rng, y)
    ref = _statsmodels(ss, y)
    f = ss.filter(y, backend=backend)
    s = ss.smooth(y, backend=backend)
    assert_allclose(f.log_likelihood, ref.llf, rtol=0, atol=1e-8)
    assert_allclose(f.mean, ref.filtered_state.T, rtol=0, atol=1e-8)
    assert_allclose(f.cov, ref.filtered_state_cov.transpose(2, 0, 1), rtol=0, atol=1e-8)
    assert_allclose(s.mean, ref.smoothed_state.T, rtol=0, atol=1e-8)
    assert_allclose(s.cov, ref.smoothed_state_cov.transpose(2, 0, 1), rtol=0, atol=1e-8)


def test_matches_filterpy(rng):
    filterpy = pytest.importorskip("filterpy.kalman")
    ss = random_model(rng, 3, 2)
    _, y = ss.sample(30, seed=rng)
    kf = filterpy.KalmanFilter(dim_x=3, dim_z=2)
    kf.x, kf.P = ss.initial_mean.copy(), ss.initial_cov.copy()
    kf.F, kf.H, kf.Q, kf.R = ss.transition, ss.observation, ss.transition_cov, ss.observation_cov
    means, covs, ll = [], [], 0.0
    for t in range(len(y)):
        if t:
            kf.predict()
        kf.update(y[t])
        means.append(kf.x.copy())
        covs.append(kf.P.copy())
        ll += kf.log_likelihood
    f = ss.filter(y)
    assert_allclose(f.mean, np.array(means), rtol=0, atol=1e-10)
    assert_allclose(f.cov, np.array(covs), rtol=0, atol=1e-10)
    assert_allclose(f.log_likelihood, ll, rtol=0, atol=1e-8)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_brute_force_smoothing_and_lag_covariances(rng, backend):
    ss = random_model(rng, 2, 2)
    _, y = ss.sample(7, seed=rng)
    y = _with_missing(rng, y)
    y[2] = np.nan
    mz, covs, lags, ll = brute_posterior(ss, y)
    f, s = kalman_smoother(y, ss.transition, ss.observation, ss.transition_cov, ss.observation_cov,
                           ss.initial_mean, ss.initial_cov, backend=backend)
    assert_allclose(f.log_likelihood[0], ll, rtol=0, atol=1e-9)
    assert_allclose(s.smoothed_means[0], mz, rtol=0, atol=1e-9)
    assert_allclose(s.smoothed_covs[0], covs, rtol=0, atol=1e-9)
    assert_allclose(s.lag_covs[0], lags, rtol=0, atol=1e-9)


def test_time_varying_parameters_and_offsets_brute_force(rng):
    """Per-step matrices: the sweep equals the joint Gaussian of the same time-varying system."""
    from scipy import stats

    T, d, p = 5, 2, 1
    A = rng.normal(size=(T - 1, d, d)) * 0.5
    H = rng.normal(size=(T, p, d))
    Q = np.stack([np.diag(rng.uniform(0.1, 1, d)) for _ in range(T - 1)])
    R = rng.uniform(0.1, 1, (T, p, p))
    c = rng.normal(size=(T - 1, d))
    m0, P0 = rng.normal(size=d), np.eye(d)
    y = rng.normal(size=(T, p))
    # brute force: z = L (init + noises), built step by step
    mean = [m0]
    blocks = [[np.eye(d)]]                                                     # z_t = sum_s Phi(t, s) e_s
    for t in range(1, T):
        mean.append(A[t - 1] @ mean[-1] + c[t - 1])
        blocks.append([A[t - 1] @ b for b in blocks[-1]] + [np.eye(d)])
    L = np.zeros((T * d, T * d))
    for t in range(T):
        for s, b in enumerate(blocks[t]):
            L[t * d:(t + 1) * d, s * d:(s + 1) * d] = b
    E = np.zeros((T * d, T * d))
    E[:d, :d] = P0
    for t in range(1, T):
        E[t * d:(t + 1) * d, t * d:(t + 1) * d] = Q[t - 1]
    Czz = L @ E @ L.T
    HH = np.zeros((T * p, T * d))
    for t in range(T):
        HH[t * p:(t + 1) * p, t * d:(t + 1) * d] = H[t]
    RR = np.zeros((T * p, T * p))
    for t in range(T):
        RR[t * p:(t + 1) * p, t * p:(t + 1) * p] = R[t]
    Cyy = HH @ Czz @ HH.T + RR
    my = HH @ np.concatenate(mean)
    ll = stats.multivariate_normal(my, Cyy).logpdf(y.ravel())
    mz = np.concatenate(mean) + Czz @ HH.T @ np.linalg.solve(Cyy, y.ravel() - my)
    for backend in ("numpy", "numba"):
        f, s = kalman_smoother(y, A, H, Q, R, m0, P0, offsets=c, backend=backend)
        assert_allclose(f.log_likelihood[0], ll, rtol=0, atol=1e-9)
        assert_allclose(s.smoothed_means[0].ravel(), mz, rtol=0, atol=1e-9)


def test_backends_agree_with_resets_offsets_and_batches(rng):
    ss = random_model(rng, 3, 2, singular_q=True)                      # singular Q: the smoother's fallback
    n, T = 4, 25
    _, y = ss.sample(T, n, seed=rng)
    y = _with_missing(rng, y.reshape(n * T, 2)).reshape(n, T, 2)
    offsets = rng.normal(size=(n, T - 1, 3))
    resets = {7: (rng.normal(size=(n, 3)), np.zeros((3, 3))), 15: (np.ones(3), 0.1 * np.eye(3))}
    args = (y, ss.transition, ss.observation, ss.transition_cov, ss.observation_cov, ss.initial_mean, ss.initial_cov)
    out = {b: kalman_smoother(*args, offsets=offsets, resets=resets, backend=b) for b in ("numpy", "numba")}
    for part in range(2):
        for name, a in vars(out["numpy"][part]).items():
            assert_allclose(vars(out["numba"][part])[name], a, rtol=0, atol=1e-9, err_msg=name)
    s = out["numpy"][1]
    assert_allclose(s.smoothed_covs[:, 7], 0.0, atol=1e-12)                  # a do: a point mass
    assert_allclose(s.gains[:, 6], 0.0)                                         # the past is cut from the future


def test_batch_rows_equal_single_runs(rng):
    ss = random_model(rng, 2, 2)
    _, y = ss.sample(12, 3, seed=rng)
    y[1, 4] = np.nan
    batch = ss.smooth(y)
    for i in range(3):
        one = ss.smooth(y[i])
        assert_allclose(batch.mean[i], one.mean, rtol=0, atol=1e-12)
        assert_allclose(batch.cov[i], one.cov, rtol=0, atol=1e-12)
        assert_allclose(batch.log_likelihood[i], one.log_likelihood, rtol=0, atol=1e-12)


def test_list_of_sequences_of_different_lengths(rng):
    ss = random_model(rng, 2, 1)
    seqs = [ss.sample(T, seed=i)[1] for i, T in enumerate((5, 9, 1))]
    out = ss.smooth(seqs)
    assert [e.mean.shape[0] for e in out] == [5, 9, 1]
    for e, y in zip(out, seqs):
        one = ss.smooth(y)
        assert_allclose(e.mean, one.mean, rtol=0, atol=1e-12)
        assert_allclose(e.log_likelihood, one.log_likelihood, rtol=0, atol=1e-12)
    assert_allclose(ss.log_likelihood(seqs), [ss.log_likelihood(y) for y in seqs], rtol=0, atol=1e-12)


def test_joseph_form_keeps_covariances_symmetric_psd_with_tiny_noise(rng):
    """Observation noise 1e-12 next to a unit prior: the covariances stay symmetric and positive semi-definite."""
    ss = cn.StateSpace(np.eye(2), np.eye(2), 1e-10 * np.eye(2), 1e-12 * np.eye(2), [0, 0], 1e6 * np.eye(2))
    _, y = ss.sample(50, seed=rng)
    for backend in ("numpy", "numba"):
        s = ss.smooth(y, backend=backend)
        assert_allclose(s.cov, s.cov.swapaxes(-1, -2), rtol=0, atol=0)
        assert np.linalg.eigvalsh(s.cov).min() > -1e-18
        assert_allclose(s.mean, y, rtol=0, atol=1e-5)


def _model(rng, d, p):
    A = rng.normal(size=(d, d)) * 0.4
    G, F, S = rng.normal(size=(d, d)), rng.normal(size=(p, p)), rng.normal(size=(d, d))
    return (A, rng.normal(size=(p, d)), G @ G.T + 0.1 * np.eye(d), F @ F.T + 0.1 * np.eye(p), rng.normal(size=d),
            S @ S.T + 0.1 * np.eye(d))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 3), p=st.integers(1, 3))
def test_change_of_state_coordinates_is_invisible(seed, d, p):
    """z' = M z with A' = M A M^-1, H' = H M^-1, Q' = M Q M^T, ...: same likelihood, smoothed moments mapped by M."""
    rng = np.random.default_rng(seed)
    A, H, Q, R, m0, P0 = _model(rng, d, p)
    M = rng.normal(size=(d, d)) + 2 * np.eye(d)
    Mi = np.linalg.inv(M)
    y = rng.normal(size=(8, p))
    y[rng.random(8) < 0.2] = np.nan
    f, s = kalman_smoother(y, A, H, Q, R, m0, P0, backend="numpy")
    f2, s2 = kalman_smoother(y, M @ A @ Mi, H @ Mi, M @ Q @ M.T, R, M @ m0, M @ P0 @ M.T, backend="numpy")
    assert_allclose(f2.log_likelihood, f.log_likelihood, rtol=1e-7, atol=1e-7)
    assert_allclose(s2.smoothed_means, s.smoothed_means @ M.T, rtol=1e-6, atol=1e-6)
    assert_allclose(s2.smoothed_covs, M @ s.smoothed_covs @ M.T, rtol=1e-6, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 3), p=st.integers(1, 2), extra=st.integers(1, 4))
def test_smoothing_shrinks_covariance_and_trailing_gaps_change_nothing(seed, d, p, extra):
    """Smoothed covariances are below filtered ones (Loewner order); missing steps appended at the end change
    neither the likelihood nor the earlier smoothed moments."""
    rng = np.random.default_rng(seed)
    params = _model(rng, d, p)
    y = rng.normal(size=(6, p))
    f, s = kalman_smoother(y, *params, backend="numpy")
    gap = np.concatenate([y, np.full((extra, p), np.nan)])
    f2, s2 = kalman_smoother(gap, *params, backend="numpy")
    assert np.linalg.eigvalsh(f.filtered_covs - s.smoothed_covs).min() > -1e-9
    assert_allclose(f2.log_likelihood, f.log_likelihood, rtol=0, atol=1e-9)
    assert_allclose(s2.smoothed_means[:, :6], s.smoothed_means, rtol=0, atol=1e-9)
    assert_allclose(s2.smoothed_covs[:, :6], s.smoothed_covs, rtol=0, atol=1e-9)


def test_all_missing_is_the_prior(rng):
    ss = random_model(rng, 2, 2)
    y = np.full((4, 2), np.nan)
    mean, cov = joint_gaussian(ss, 4)
    s = ss.smooth(y)
    assert s.log_likelihood == 0.0
    assert_allclose(s.mean.ravel(), mean[:8], rtol=0, atol=1e-12)
    assert_allclose(s.cov[3], cov[6:8, 6:8], rtol=0, atol=1e-12)


def test_core_shape_errors_name_the_argument():
    y = np.zeros((5, 2))
    ok = dict(transition=np.eye(2), observation=np.eye(2), transition_cov=np.eye(2), observation_cov=np.eye(2),
              initial_mean=np.zeros(2), initial_cov=np.eye(2))
    with pytest.raises(cn.ShapeError, match=r"observation must have shape \(2, 2\) or \(5, 2, 2\), got \(3, 2\)"):
        kalman_filter(y, **{**ok, "observation": np.zeros((3, 2))})
    with pytest.raises(cn.ShapeError, match=r"transition must have shape \(2, 2\) or \(4, 2, 2\), got \(5, 2, 2\)"):
        kalman_filter(y, **{**ok, "transition": np.zeros((5, 2, 2))})
    with pytest.raises(cn.ShapeError, match="offsets must have shape"):
        kalman_filter(y, **ok, offsets=np.zeros((5, 2)))
    with pytest.raises(cn.ShapeError, match="reset step 9"):
        kalman_filter(y, **ok, resets={9: (np.zeros(2), np.eye(2))})
    f = kalman_filter(y, **ok)
    with pytest.raises(cn.ShapeError, match="transition must have shape"):
        rts_smoother(f, np.eye(3))


def test_singular_innovation_is_a_numerical_error():
    """A point-mass state observed without noise: S = 0 is refused, never a NaN."""
    for backend in ("numpy", "numba"):
        with pytest.raises(cn.NumericalError, match="step 0"):
            kalman_filter(np.ones((3, 1)), [[1.0]], [[1.0]], [[1.0]], [[0.0]], [0.0], [[0.0]], backend=backend)


def test_overflow_is_a_numerical_error_not_nan():
    ss = cn.StateSpace([[1e200]], [[1e200]], [[1.0]], [[1.0]], [0.0], [[1.0]])
    for backend in ("numpy", "numba"):
        with pytest.raises(cn.NumericalError, match="overflowed|too large for float64"):
            ss.smooth(np.ones(4), backend=backend)
