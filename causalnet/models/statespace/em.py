"""Expectation-maximisation for a linear-Gaussian state-space model (Shumway & Stoffer), with missing data.

The E-step is one Kalman smoother pass (:mod:`.kalman`) giving, per step,
``E[Z[t]]``, ``E[Z[t] Z[t]^T]`` and ``E[Z[t] Z[t-1]^T]`` given the
observations. The M-step is a regression of ``Z[t]`` on ``(Z[t-1], u[t])``
(transition, control, ``Q``) and of ``Y[t]`` on ``Z[t]`` (observation,
``R``) in those expected statistics. A missing observation component is
part of the hidden data: given ``Z[t]`` and the observed components ``o``, the
missing ones ``m`` are Gaussian with mean ``H_m Z + G (y_o - H_o Z)``, ``G =
R_mo R_oo^-1``, and covariance ``R_mm - G R_om``; its expected statistics are
summed with the others, so every iteration is an exact EM step and the
log-likelihood never decreases.

Sequences of different lengths are padded with NaN; padded steps count for nothing.

Symbols: ``n`` sequences, ``T`` steps, ``d`` state size, ``p`` observation size, ``k`` control size.

References
----------
.. [1] Shumway & Stoffer, "An approach to time series smoothing and forecasting using the EM algorithm",
   J. Time Series Analysis 3 (1982); Shumway & Stoffer, *Time Series Analysis and Its Applications*, 4th ed., §6.3.
"""

from __future__ import annotations

import numpy as np

from ...arguments import check_int, check_real
from ...errors import ModelError
from .checks import Parameters, as_controls, as_sequences
from .kalman import kalman_filter, rts_smoother

__all__ = ["fit_em", "PARAMETERS", "expected_statistics"]

PARAMETERS = ("transition", "observation", "transition_cov", "observation_cov", "initial_mean", "initial_cov",
              "control")


def _which(estimate, params: Parameters) -> set:
    if estimate is None:
        chosen = set(PARAMETERS)
    else:
        chosen = {estimate} if isinstance(estimate, str) else set(estimate)
        bad = chosen - set(PARAMETERS)
        if bad:
            raise ModelError(f"estimate names unknown parameters {sorted(bad)}; expected some of {list(PARAMETERS)}")
    if params.control is None:
        chosen.discard("control")
    return chosen


def fit_em(params: Parameters, y, controls, *, n_iter: int = 100, tol: float = 1e-8, estimate=None):
    """Run EM from `params`.

    Returns
    -------
    params : Parameters
        The last parameters (those whose log-likelihood is ``history[-1]``).
    history : list of float
        The total log-likelihood of each visited parameter set.
    """
    n_iter = check_int(n_iter, "n_iter", low=0)
    tol = check_real(tol, "tol", nonnegative=True)
    chosen = _which(estimate, params)
    seqs = as_sequences(y, params.p)
    n, T, _ = seqs.y.shape
    u = None
    if params.control is not None:
        as_controls(controls, params, n, T)                            # validates
        u = np.broadcast_to(np.asarray(controls, dtype=np.float64).reshape(-1, T - 1, params.k), (n, T - 1, params.k))
    real = np.arange(T)[None, :] < seqs.lengths[:, None]               # (n, T) real (not padded) steps
    history: list[float] = []
    for _ in range(n_iter + 1):
        stats, ll = expected_statistics(params, seqs.y, u, real)
        history.append(ll)
        if len(history) > n_iter or (len(history) > 1 and history[-1] - history[-2] < tol):
            break
        params = _maximise(params, stats, chosen)
    return params, history


def expected_statistics(params: Parameters, y: np.ndarray, u: np.ndarray | None, real: np.ndarray):
    """The E-step: summed expected sufficient statistics and the total log-likelihood.

    Parameters
    ----------
    params : Parameters
    y : ndarray (n, T, p), NaN where missing (padding included)
    u : ndarray (n, T-1, k) or None
    real : ndarray of bool (n, T)

    Returns
    -------
    stats : dict
        ``Szz, Sxx, Szx`` (transition regressions over ``x = (Z[t-1], u[t])``),
        ``N1`` transitions; ``Syz, Syy, Sz`` (observation regression), ``N``
        observed steps; ``m0, P0`` the smoothed initial moments per sequence.
    log_likelihood : float
    """
    n, T, p = y.shape
    d = params.d
    offsets = None if u is None else np.ascontiguousarray(u @ params.control.T)
    f = kalman_filter(y, params.transition, params.observation, params.transition_cov, params.observation_cov,
                      params.initial_mean, params.initial_cov, offsets=offsets)
    s = rts_smoother(f, params.transition)
    ms, Ps = s.smoothed_means, s.smoothed_covs                                       # (n, T, d), (n, T, d, d)
    Ezz = Ps + ms[..., :, None] * ms[..., None, :]                                   # (n, T, d, d)
    trans = real[:, 1:]                                                              # (n, T-1)
    Ezz1 = s.lag_covs + ms[:, 1:, :, None] * ms[:, :-1, None, :]                     # (n, T-1, d, d) E[z_t z_{t-1}^T]
    k = 0 if u is None else u.shape[-1]
    Sxx = np.zeros((d + k, d + k))
    Szx = np.zeros((d, d + k))
    Sxx[:d, :d] = np.einsum("nt,ntab->ab", trans, Ezz[:, :-1])
    Szx[:, :d] = np.einsum("nt,ntab->ab", trans, Ezz1)
    if k:
        Sxx[:d, d:] = np.einsum("nt,nta,ntb->ab", trans, ms[:, :-1], u)
        Sxx[d:, :d] = Sxx[:d, d:].T
        Sxx[d:, d:] = np.einsum("nt,nta,ntb->ab", trans, u, u)
        Szx[:, d:] = np.einsum("nt,nta,ntb->ab", trans, ms[:, 1:], u)
    stats = {"Sxx": Sxx, "Szx": Szx, "Szz": np.einsum("nt,ntab->ab", trans, Ezz[:, 1:]), "N1": float(trans.sum()),
             "Sz": np.einsum("nt,ntab->ab", real, Ezz), "N": float(real.sum()), "m0": ms[:, 0], "P0": Ps[:, 0]}
    stats["Syz"], stats["Syy"] = _observation_statistics(params, y, ms, Ezz, real)
    return stats, float(f.log_likelihood.sum())


def _observation_statistics(params: Parameters, y, ms, Ezz, real):
    """``sum E[Y Z^T]`` (p, d) and ``sum E[Y Y^T]`` (p, p) over real steps, missing components imputed in law."""
    p, d = params.p, params.d
    H, R = params.observation, params.observation_cov
    obs = ~np.isnan(y)                                                               # (n, T, p)
    Syz, Syy = np.zeros((p, d)), np.zeros((p, p))
    patterns, which = np.unique(obs[real], axis=0, return_inverse=True)
    yr, mr, Er = y[real], ms[real], Ezz[real]                                        # (N, p), (N, d), (N, d, d)
    for j, pat in enumerate(patterns):
        sel = which.reshape(-1) == j
        o, m = np.flatnonzero(pat), np.flatnonzero(~pat)
        yo, mz, E = yr[sel][:, o], mr[sel], Er[sel]                                  # (N, o), (N, d), (N, d, d)
        G = R[np.ix_(m, o)] @ np.linalg.pinv(R[np.ix_(o, o)], hermitian=True) if o.size else np.zeros((m.size, 0))
        C = R[np.ix_(m, m)] - G @ R[np.ix_(o, m)]                                     # (m, m)
        M = H[m] - G @ H[o]                                                          # (m, d)
        gy = yo @ G.T                                                                # (N, m)
        Syz[o] += yo.T @ mz
        Syz[m] += gy.T @ mz + M @ E.sum(0)
        Syy[np.ix_(o, o)] += yo.T @ yo
        mo = gy.T @ yo + M @ (mz.T @ yo)                                             # (m, o)
        Syy[np.ix_(m, o)] += mo
        Syy[np.ix_(o, m)] += mo.T
        cross = gy.T @ mz @ M.T                                                      # (m, m)
        Syy[np.ix_(m, m)] += gy.T @ gy + cross + cross.T + M @ E.sum(0) @ M.T + len(yo) * C
    return Syz, Syy


def _residual_cov(Syy, Syx, Sxx, F, N):
    """``(1/N) sum E[(y - F x)(y - F x)^T]`` from the sums, symmetrised."""
    C = (Syy - F @ Syx.T - Syx @ F.T + F @ Sxx @ F.T) / max(N, 1.0)
    return 0.5 * (C + C.T)


def _maximise(params: Parameters, st: dict, chosen: set) -> Parameters:
    """The M-step: each chosen parameter at its conditional optimum given the others."""
    d, k = params.d, params.k
    A, B = params.transition, params.control
    if st["N1"] > 0:
        Sxx, Szx = st["Sxx"], st["Szx"]
        if "transition" in chosen and "control" in chosen:
            F = Szx @ np.linalg.pinv(Sxx, hermitian=True)
            A, B = F[:, :d], F[:, d:]
        elif "transition" in chosen:                     # regress z_t - B u_t on z_{t-1}
            rhs = Szx[:, :d] - (B @ Sxx[d:, :d] if k else 0.0)
            A = rhs @ np.linalg.pinv(Sxx[:d, :d], hermitian=True)
        elif "control" in chosen:                        # regress z_t - A z_{t-1} on u_t
            B = (Szx[:, d:] - A @ Sxx[:d, d:]) @ np.linalg.pinv(Sxx[d:, d:], hermitian=True)
    F = A if B is None else np.hstack([A, B])
    Q = _residual_cov(st["Szz"], st["Szx"], st["Sxx"], F, st["N1"]) if "transition_cov" in chosen and st["N1"] > 0 \
        else params.transition_cov
    H = st["Syz"] @ np.linalg.pinv(st["Sz"], hermitian=True) if "observation" in chosen else params.observation
    R = _residual_cov(st["Syy"], st["Syz"], st["Sz"], H, st["N"]) if "observation_cov" in chosen \
        else params.observation_cov
    m0 = st["m0"].mean(0) if "initial_mean" in chosen else params.initial_mean
    P0 = params.initial_cov
    if "initial_cov" in chosen:
        dev = st["m0"] - m0                                                          # (n, d)
        P0 = (st["P0"] + dev[:, :, None] * dev[:, None, :]).mean(0)
        P0 = 0.5 * (P0 + P0.T)
    frozen = [None if a is None else np.array(a, dtype=np.float64) for a in (A, H, Q, R, m0, P0, B)]
    for a in frozen:
        if a is not None:
            a.setflags(write=False)
    return Parameters(*frozen)
