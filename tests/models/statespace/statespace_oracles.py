"""Shared oracles of the state-space tests: random models and the brute-force joint Gaussian (imported by name,
not a conftest: ``tests/conftest.py`` is imported as ``conftest`` by other tests)."""

import numpy as np

import causalnet as cn


def random_model(rng, d, p, *, control=0, singular_q=False):
    """A stable random model with correlated noises (positive definite unless asked)."""
    A = rng.normal(size=(d, d))
    A *= 0.9 / max(1e-9, np.abs(np.linalg.eigvals(A)).max())
    H = rng.normal(size=(p, d))
    G = rng.normal(size=(d, d))
    Q = G @ G.T * 0.3 + (0 if singular_q else 0.05) * np.eye(d)
    if singular_q:
        Q[:, 0] = Q[0, :] = 0.0
    F = rng.normal(size=(p, p))
    R = F @ F.T * 0.3 + 0.2 * np.eye(p)
    m0 = rng.normal(size=d)
    S = rng.normal(size=(d, d))
    P0 = S @ S.T + 0.5 * np.eye(d)
    B = rng.normal(size=(d, control)) if control else None
    return cn.StateSpace(A, H, Q, R, m0, P0, B)


def joint_gaussian(ss, T, offsets=None):
    """Mean and covariance of the stacked vector (Z[0..T-1], Y[0..T-1]) by brute force.

    Z = M (m0-or-offset terms + noises) with M the block lower-triangular matrix of transition powers.
    """
    A, H, Q, R = ss.transition, ss.observation, ss.transition_cov, ss.observation_cov
    d = ss.n_states
    mean_z = np.zeros((T, d))
    mean_z[0] = ss.initial_mean
    for t in range(1, T):
        mean_z[t] = A @ mean_z[t - 1] + (0 if offsets is None else offsets[t - 1])
    M = np.zeros((T * d, T * d))
    for t in range(T):
        for s in range(t + 1):
            M[t * d:(t + 1) * d, s * d:(s + 1) * d] = np.linalg.matrix_power(A, t - s)
    noise = np.zeros((T * d, T * d))
    noise[:d, :d] = ss.initial_cov
    for t in range(1, T):
        noise[t * d:(t + 1) * d, t * d:(t + 1) * d] = Q
    Czz = M @ noise @ M.T
    HH = np.kron(np.eye(T), H)
    Cyy = HH @ Czz @ HH.T + np.kron(np.eye(T), R)
    Czy = Czz @ HH.T
    mean = np.concatenate([mean_z.ravel(), (mean_z @ H.T).ravel()])
    cov = np.block([[Czz, Czy], [Czy.T, Cyy]])
    return mean, cov


def condition(mean, cov, idx_obs, values):
    """The Gaussian conditional of the rest given the entries idx_obs = values."""
    idx_obs = np.asarray(idx_obs, dtype=int)
    rest = np.setdiff1d(np.arange(len(mean)), idx_obs)
    K = cov[np.ix_(rest, idx_obs)] @ np.linalg.inv(cov[np.ix_(idx_obs, idx_obs)])
    m = mean[rest] + K @ (values - mean[idx_obs])
    C = cov[np.ix_(rest, rest)] - K @ cov[np.ix_(idx_obs, rest)]
    return rest, m, C


def brute_posterior(ss, y, offsets=None):
    """Smoothed means (T, d), covariances (T, d, d), lag covariances and log-likelihood of one sequence by brute force."""
    from scipy import stats

    T, p = y.shape
    d = ss.n_states
    mean, cov = joint_gaussian(ss, T, offsets)
    yflat = y.ravel()
    obs = np.flatnonzero(~np.isnan(yflat)) + T * d
    ll = stats.multivariate_normal(mean[obs], cov[np.ix_(obs, obs)]).logpdf(yflat[obs - T * d]) if obs.size else 0.0
    rest, m, C = condition(mean, cov, obs, yflat[obs - T * d])
    zpos = [list(rest).index(i) for i in range(T * d)]
    mz, Cz = m[zpos].reshape(T, d), C[np.ix_(zpos, zpos)]
    covs = np.stack([Cz[t * d:(t + 1) * d, t * d:(t + 1) * d] for t in range(T)])
    lags = np.stack([Cz[(t + 1) * d:(t + 2) * d, t * d:(t + 1) * d] for t in range(T - 1)])
    return mz, covs, lags, float(ll)
