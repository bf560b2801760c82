"""The Kalman core: array-in, array-out filter, Rauch–Tung–Striebel smoother and log-likelihood.

A linear-Gaussian state-space model over steps ``t = 0 .. T-1``::

    Z[0] ~ N(initial_mean, initial_cov)
    Z[t] = A_t Z[t-1] + c_t + w_t,   w_t ~ N(0, Q_t)          (t >= 1)
    Y[t] = H_t Z[t] + v_t,           v_t ~ N(0, R_t)

The functions here know nothing of models or names: they take arrays and give
arrays, batch first, so :class:`~.model.StateSpace` and the dynamic Bayesian
networks' linear-Gaussian interface (issue 28) share one sweep. Conventions:

* every parameter is either shared by all steps or stacked per step; the
  transition-like ones (``transition``, ``transition_cov``, ``offsets``) are
  stacked over the ``T - 1`` transitions, entry ``t - 1`` leading *into* step ``t``;
* a missing observation is NaN: a whole row (the step has no measurement) or
  some components (the observed ones are used exactly);
* ``resets`` draws the state at a step afresh, ``Z[t] ~ N(mean, cov)``, instead
  of from the transition: a ``do(Z[t] = v)`` is the reset ``(v, 0)`` (the
  filter restarts from a point mass and the smoother does not carry the
  future back past it);
* the update is Joseph's form, ``P = (I - K H) P (I - K H)^T + K R K^T``, which
  stays symmetric positive semi-definite under rounding, with the innovation
  covariance factored by Cholesky.

Two backends give the same answers: a compiled one (:mod:`.kernels`, numba via
:func:`causalnet.runtime.jit`) and the numpy reference below (vectorised over
the batch, one step at a time); the chain family's switch
(``runtime.get_backend("chain")``) decides, ``"auto"`` compiling when the
batch holds at least :data:`AUTO_MIN_STEPS` steps.

Symbols: ``n`` sequences, ``T`` steps, ``d`` state size, ``p`` observation size.

Examples
--------
>>> import numpy as np
>>> y = np.array([[[1.0], [np.nan], [2.0]]])                     # (n=1, T=3, p=1), step 1 missing
>>> f = kalman_filter(y, [[1.0]], [[1.0]], [[0.5]], [[1.0]], [0.0], [[1.0]])
>>> f.filtered_means.shape, f.log_likelihood.shape
((1, 3, 1), (1,))
>>> s = rts_smoother(f, [[1.0]])
>>> bool(s.smoothed_covs[0, 1, 0, 0] < f.filtered_covs[0, 1, 0, 0])
True

References
----------
.. [1] Rauch, Tung & Striebel, "Maximum likelihood estimates of linear dynamic systems", AIAA J., 1965.
.. [2] Durbin & Koopman, *Time Series Analysis by State Space Methods*, 2nd ed., 2012, ch. 4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import runtime
from ...errors import NumericalError, ShapeError
from . import kernels

__all__ = ["KalmanFilterResult", "KalmanSmootherResult", "KalmanArrays", "kalman_filter", "rts_smoother",
           "kalman_smoother", "kalman_log_likelihood", "as_arrays", "AUTO_MIN_STEPS"]

#: under the ``"auto"`` backend, batches with fewer steps (n * T) than this run the numpy sweep
AUTO_MIN_STEPS = 512
_LOG_2PI = float(np.log(2 * np.pi))


@dataclass
class KalmanFilterResult:
    """The filter's output.

    Attributes
    ----------
    filtered_means : ndarray (n, T, d)
        ``E[Z[t] | Y[0..t]]``.
    filtered_covs : ndarray (n, T, d, d)
    predicted_means : ndarray (n, T, d)
        ``E[Z[t] | Y[0..t-1]]`` (the initial or reset law at a reset step).
    predicted_covs : ndarray (n, T, d, d)
    log_likelihood : ndarray (n,)
        ``log p(Y[0..T-1])`` of each sequence (its observed components).
    resets : ndarray of bool (T,)
        Steps drawn afresh (step 0 always).
    """

    filtered_means: np.ndarray
    filtered_covs: np.ndarray
    predicted_means: np.ndarray
    predicted_covs: np.ndarray
    log_likelihood: np.ndarray
    resets: np.ndarray


@dataclass
class KalmanSmootherResult:
    """The smoother's output.

    Attributes
    ----------
    smoothed_means : ndarray (n, T, d)
        ``E[Z[t] | Y[0..T-1]]``.
    smoothed_covs : ndarray (n, T, d, d)
    gains : ndarray (n, T-1, d, d)
        ``J[t] = P[t|t] A[t+1]^T P[t+1|t]^-1`` (0 when step t+1 is reset), so that
        ``E[Z[t] | Z[t+1], Y[0..t]] = mean + J[t] (Z[t+1] - predicted mean)``.
    lag_covs : ndarray (n, T-1, d, d)
        ``Cov(Z[t+1], Z[t] | Y) = smoothed_covs[t+1] J[t]^T``.
    """

    smoothed_means: np.ndarray
    smoothed_covs: np.ndarray
    gains: np.ndarray
    lag_covs: np.ndarray


@dataclass
class KalmanArrays:
    """Parameters in the layout of :mod:`.kernels` (stacks of length 1 or T, float64, C-contiguous)."""

    y: np.ndarray          # (n, T, p), missing set to 0
    obs: np.ndarray        # (n, T, p) 1.0 observed / 0.0 missing
    A: np.ndarray          # (1 or T, d, d), entry t leads into step t
    Q: np.ndarray          # (1 or T, d, d)
    c: np.ndarray          # (1 or n, 1 or T, d)
    H: np.ndarray          # (1 or T, p, d)
    R: np.ndarray          # (1 or T, p, p)
    reset: np.ndarray      # (T,) float 1.0 / 0.0
    rmean: np.ndarray      # (1 or n, T, d)
    rcov: np.ndarray       # (T, d, d)


def _array(x, what: str) -> np.ndarray:
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{what} must be a real array, got {type(x).__name__}: {exc}") from None


def _stack(x, what: str, shape: tuple, steps: int, *, into: bool) -> np.ndarray:
    """`x` of `shape` or `(steps, *shape)` as a stack of length 1 or T (transition stacks padded at step 0)."""
    a = _array(x, what)
    if a.shape == shape:
        return np.ascontiguousarray(a[None])
    if a.shape == (steps, *shape):
        if into:                                            # entry t-1 leads into step t: pad step 0
            a = np.concatenate([np.zeros((1, *shape)), a]) if steps else np.zeros((1, *shape))
        return np.ascontiguousarray(a)
    raise ShapeError(f"{what} must have shape {shape} or {(steps, *shape)}, got {a.shape}")


def as_arrays(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov, *,
              offsets=None, resets=None) -> KalmanArrays:
    """Check shapes and lay the parameters out for the sweeps (see :func:`kalman_filter` for the arguments).

    Raises
    ------
    ShapeError
        Naming the argument, the expected shapes and the given one.
    """
    y = _array(y, "y")
    if y.ndim == 2:
        y = y[None]                                         # (1, T, p)
    if y.ndim != 3:
        raise ShapeError(f"y must have shape (T, p) or (n, T, p), got {y.shape}")
    n, T, p = y.shape
    if T == 0:
        raise ShapeError(f"y must have at least one step, got shape {y.shape}")
    m0 = _array(initial_mean, "initial_mean")
    if m0.ndim not in (1, 2) or (m0.ndim == 2 and m0.shape[0] != n):
        raise ShapeError(f"initial_mean must have shape (d,) or ({n}, d), got {m0.shape}")
    d = m0.shape[-1]
    H = _stack(observation, "observation", (p, d), T, into=False)
    R = _stack(observation_cov, "observation_cov", (p, p), T, into=False)
    A = _stack(transition, "transition", (d, d), T - 1, into=True)
    Q = _stack(transition_cov, "transition_cov", (d, d), T - 1, into=True)
    P0 = _array(initial_cov, "initial_cov")
    if P0.shape != (d, d):
        raise ShapeError(f"initial_cov must have shape {(d, d)}, got {P0.shape}")
    if offsets is None:
        c = np.zeros((1, 1, d))
    else:
        c = _array(offsets, "offsets")
        if c.shape == (T - 1, d):
            c = c[None]
        if c.ndim != 3 or c.shape[1:] != (T - 1, d) or c.shape[0] not in (1, n):
            raise ShapeError(f"offsets must have shape {(T - 1, d)} or {(n, T - 1, d)}, got {c.shape}")
        c = np.concatenate([np.zeros((c.shape[0], 1, d)), c], axis=1)
    reset = np.zeros(T)
    rmean = np.zeros((m0.shape[0] if m0.ndim == 2 else 1, T, d))
    rcov = np.zeros((T, d, d))
    reset[0], rmean[:, 0], rcov[0] = 1.0, m0, P0
    for t, (mean, cov) in (resets or {}).items():
        if not 0 <= t < T:
            raise ShapeError(f"reset step {t} is outside 0..{T - 1}")
        mean, cov = _array(mean, f"reset mean at step {t}"), _array(cov, f"reset cov at step {t}")
        if mean.shape not in ((d,), (n, d)) or cov.shape != (d, d):
            raise ShapeError(f"reset at step {t} must be a mean of shape ({d},) or ({n}, {d}) and a cov of shape "
                             f"{(d, d)}, got {mean.shape} and {cov.shape}")
        if mean.ndim == 2 and rmean.shape[0] == 1:
            rmean = np.repeat(rmean, n, axis=0)
        reset[t], rcov[t] = 1.0, cov
        rmean[:, t] = mean
    obs = (~np.isnan(y)).astype(np.float64)
    return KalmanArrays(np.ascontiguousarray(np.where(obs > 0, y, 0.0)), obs, A, Q, np.ascontiguousarray(c), H, R,
                        reset, np.ascontiguousarray(rmean), np.ascontiguousarray(rcov))


def _use_numba(steps: int, backend: str | None) -> bool:
    name = backend or runtime.get_backend("chain")
    if name == "numpy" or not runtime.numba_available():
        return False
    return name == "numba" or steps >= AUTO_MIN_STEPS


def _at(stack: np.ndarray, t: int) -> np.ndarray:
    return stack[t if stack.shape[0] > 1 else 0]


def _numpy_filter(k: KalmanArrays):
    """The reference sweep: one step at a time, vectorised over the batch."""
    n, T, p = k.y.shape
    d = k.A.shape[-1]
    mf, mp = np.empty((n, T, d)), np.empty((n, T, d))
    Pf, Pp = np.empty((n, T, d, d)), np.empty((n, T, d, d))
    ll = np.zeros(n)
    eye = np.eye(d)
    for t in range(T):
        if k.reset[t]:
            m = np.broadcast_to(k.rmean[:, t], (n, d)).copy()                      # (n, d)
            P = np.broadcast_to(k.rcov[t], (n, d, d)).copy()                        # (n, d, d)
        else:
            A = _at(k.A, t)
            m = mf[:, t - 1] @ A.T + k.c[:, t if k.c.shape[1] > 1 else 0]         # (n, d)
            P = A @ Pf[:, t - 1] @ A.T + _at(k.Q, t)                               # (n, d, d)
        P = 0.5 * (P + P.swapaxes(-1, -2))
        mp[:, t], Pp[:, t] = m, P
        w = k.obs[:, t]                                                             # (n, p)
        Hs = _at(k.H, t) * w[:, :, None]                                            # (n, p, d)
        Rs = _at(k.R, t) * w[:, :, None] * w[:, None, :] + np.eye(p) * (1 - w)[:, :, None]  # (n, p, p)
        e = k.y[:, t] - np.einsum("npd,nd->np", Hs, m)                              # (n, p)
        HP = Hs @ P                                                                 # (n, p, d)
        S = HP @ Hs.swapaxes(-1, -2) + Rs                                           # (n, p, p)
        S = 0.5 * (S + S.swapaxes(-1, -2))
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            raise NumericalError(f"the innovation covariance at step {t} is not positive definite "
                                 "or not finite (an observation_cov with a zero direction the state does not spread into, or values "
                                 "too large for float64)") from None
        Kt = np.linalg.solve(S, HP)                                                 # (n, p, d): K^T
        z = np.linalg.solve(L, e[..., None])[..., 0]                                # (n, p) whitened
        logdet = 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
        ll += -0.5 * ((z * z).sum(-1) + logdet + w.sum(-1) * _LOG_2PI)
        mf[:, t] = m + np.einsum("npd,np->nd", Kt, e)
        IKH = eye - Kt.swapaxes(-1, -2) @ Hs                                        # (n, d, d)
        Pn = IKH @ P @ IKH.swapaxes(-1, -2) + Kt.swapaxes(-1, -2) @ Rs @ Kt        # Joseph form
        Pf[:, t] = 0.5 * (Pn + Pn.swapaxes(-1, -2))
    return mf, Pf, mp, Pp, ll


def kalman_filter(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov, *,
                  offsets=None, resets=None, backend: str | None = None) -> KalmanFilterResult:
    """Kalman filter with missing observations, per-step parameters, offsets and resets.

    Parameters
    ----------
    y : array_like of shape (T, p) or (n, T, p)
        Observations; NaN marks a missing component (a whole NaN row: no
        measurement at that step).
    transition : array_like of shape (d, d) or (T-1, d, d)
        ``A``; entry ``t-1`` of a stack leads into step ``t``.
    observation : array_like of shape (p, d) or (T, p, d)
        ``H``.
    transition_cov : array_like of shape (d, d) or (T-1, d, d)
        ``Q``.
    observation_cov : array_like of shape (p, p) or (T, p, p)
        ``R``.
    initial_mean : array_like of shape (d,) or (n, d)
    initial_cov : array_like of shape (d, d)
    offsets : array_like of shape (T-1, d) or (n, T-1, d), optional
        ``c_t`` added to the transition into step ``t`` (a control ``B u_t``).
    resets : dict step -> (mean, cov), optional
        Steps whose state is drawn from ``N(mean, cov)`` (mean ``(d,)`` or
        ``(n, d)``) instead of the transition; ``cov = 0`` is ``do(Z[t] = mean)``.
    backend : {"numba", "numpy"}, optional
        Default: the chain family's switch of :mod:`causalnet.runtime`.

    Returns
    -------
    KalmanFilterResult
        Arrays batch first, ``(n, T, ...)`` (n = 1 for a (T, p) input).

    Raises
    ------
    ShapeError
        A parameter's shape disagrees with ``y`` or ``initial_mean``.
    NumericalError
        An innovation covariance is not positive definite.
    """
    k = as_arrays(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov,
                  offsets=offsets, resets=resets)
    n, T, _ = k.y.shape
    d = k.A.shape[-1]
    if _use_numba(n * T, backend):
        mf, mp = np.empty((n, T, d)), np.empty((n, T, d))
        Pf, Pp = np.empty((n, T, d, d)), np.empty((n, T, d, d))
        ll, status = np.zeros(n), np.zeros(n, dtype=np.int64)
        kernels.filter_kernel(k.y, k.obs, k.A, k.Q, k.c, k.H, k.R, k.reset, k.rmean, k.rcov, mf, Pf, mp, Pp, ll,
                              status)
        if status.any():
            t = int(status[status > 0][0]) - 1
            raise NumericalError(f"the innovation covariance at step {t} is not positive definite "
                                 "or not finite (an observation_cov with a zero direction the state does not spread into, or values "
                                 "too large for float64)")
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            mf, Pf, mp, Pp, ll = _numpy_filter(k)
    _check_finite("filter", ll, mf, Pf)
    return KalmanFilterResult(mf, Pf, mp, Pp, ll, k.reset > 0)


def _check_finite(what: str, *arrays) -> None:
    """NumericalError unless every entry is finite (finite inputs whose products overflow)."""
    if not all(np.isfinite(a).all() for a in arrays):
        raise NumericalError(f"the Kalman {what} overflowed: the parameters or observations are too large for "
                             "float64 (rescale them)")


def _numpy_smoother(A, reset, mf, Pf, mp, Pp):
    n, T, d = mf.shape
    ms, Ps = mf.copy(), Pf.copy()
    J = np.zeros((n, max(T - 1, 0), d, d))
    for t in range(T - 2, -1, -1):
        if reset[t + 1]:
            continue
        At = _at(A, t + 1)
        G = Pf[:, t] @ At.T @ np.linalg.pinv(Pp[:, t + 1], hermitian=True)                  # (n, d, d)
        J[:, t] = G
        ms[:, t] = mf[:, t] + np.einsum("nab,nb->na", G, ms[:, t + 1] - mp[:, t + 1])
        P = Pf[:, t] + G @ (Ps[:, t + 1] - Pp[:, t + 1]) @ G.swapaxes(-1, -2)
        Ps[:, t] = 0.5 * (P + P.swapaxes(-1, -2))
    return ms, Ps, J


def rts_smoother(filtered: KalmanFilterResult, transition, *, backend: str | None = None) -> KalmanSmootherResult:
    """Rauch–Tung–Striebel smoother over a :func:`kalman_filter` result.

    Parameters
    ----------
    filtered : KalmanFilterResult
    transition : array_like of shape (d, d) or (T-1, d, d)
        The filter's ``transition``.
    backend : {"numba", "numpy"}, optional

    Returns
    -------
    KalmanSmootherResult
        ``(n, T, ...)`` smoothed moments, ``(n, T-1, d, d)`` gains and lag-one covariances.

    Notes
    -----
    The compiled sweep inverts ``P[t+1|t]`` by Cholesky; when it is singular
    (a noiseless transition), the numpy sweep's pseudo-inverse takes over.
    """
    mf, Pf, mp, Pp = filtered.filtered_means, filtered.filtered_covs, filtered.predicted_means, filtered.predicted_covs
    n, T, d = mf.shape
    A = _stack(transition, "transition", (d, d), T - 1, into=True)
    reset = filtered.resets.astype(np.float64)
    done = False
    if _use_numba(n * T, backend):
        ms, Ps = np.empty_like(mf), np.empty_like(Pf)
        J, status = np.zeros((n, max(T - 1, 0), d, d)), np.zeros(n, dtype=np.int64)
        kernels.smoother_kernel(A, reset, mf, Pf, mp, Pp, ms, Ps, J, status)
        done = not status.any()
    if not done:
        with np.errstate(over="ignore", invalid="ignore"):
            ms, Ps, J = _numpy_smoother(A, reset, mf, Pf, mp, Pp)
    _check_finite("smoother", ms, Ps)
    lag = Ps[:, 1:] @ J.swapaxes(-1, -2)                                                     # (n, T-1, d, d)
    return KalmanSmootherResult(ms, Ps, J, lag)


def kalman_smoother(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov, *,
                    offsets=None, resets=None, backend: str | None = None):
    """Filter then smooth (arguments as :func:`kalman_filter`).

    Returns
    -------
    (KalmanFilterResult, KalmanSmootherResult)
    """
    f = kalman_filter(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov,
                      offsets=offsets, resets=resets, backend=backend)
    return f, rts_smoother(f, transition, backend=backend)


def kalman_log_likelihood(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov, *,
                          offsets=None, resets=None, backend: str | None = None) -> np.ndarray:
    """``log p(y)`` per sequence, shape (n,) (arguments as :func:`kalman_filter`)."""
    return kalman_filter(y, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov,
                         offsets=offsets, resets=resets, backend=backend).log_likelihood
