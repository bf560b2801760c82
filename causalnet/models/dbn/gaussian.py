"""Linear-Gaussian DBNs by Kalman recursions: the step's variables are the state.

When every mechanism is :class:`~causalnet.LinearGaussian`, a step reads

    x_t = B x_t + A x_{t-1} + c + D eps_t,     eps_t ~ N(0, I),  D = diag(sigma)

(``B`` the within-step weights, strictly lower triangular in slice order,
``A`` the weights on the previous step). Solving for ``x_t`` gives a
state-space model with state ``x_t`` (all ``V`` variables):

    x_t = F x_{t-1} + g + w_t,   F = (I-B)^-1 A,  g = (I-B)^-1 c,  Q = (I-B)^-1 D^2 (I-B)^-T

observed through ``H = I`` with no noise (``R = 0``), each step's unobserved
variables marked missing. The Kalman core of :mod:`causalnet.models.statespace.kalman`
(filter, Rauch–Tung–Striebel smoother, log-likelihood) then gives filtered and
smoothed means and covariances in ``O(n T V^3)`` time and ``O(n T V^2)`` memory,
instead of one joint Gaussian over ``T V`` nodes. ``do(X[t] = v)`` mutilates the
step: the row of ``X`` in ``B`` and ``A`` is cleared, ``c_X = v`` and
``sigma_X = 0``, so that step's ``F``, ``g`` and ``Q`` change (per-row values
enter ``g``). A singular innovation (a set or noiseless variable also
observed) raises :class:`~causalnet.errors.NumericalError`; the caller then
answers on the unrolled model.

Symbols: ``n`` rows, ``T`` steps, ``V`` variables.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvidenceError, ShapeError
from ...mechanisms.gaussian import LinearGaussian
from ..statespace.kalman import kalman_filter, rts_smoother
from .names import split_step, split_template

__all__ = ["is_linear_gaussian", "real_arrays", "kalman_marginals", "KALMAN_METHOD"]

KALMAN_METHOD = "exact (DBN Kalman filter / Rauch-Tung-Striebel smoother over the step's variables)"


def is_linear_gaussian(initial: dict, transition: dict) -> bool:
    """True when every mechanism of both slices is a LinearGaussian."""
    return all(type(m) is LinearGaussian for m in (*initial.values(), *transition.values()))


def real_arrays(arg, variables, T: int, what: str, n: int | None = None) -> tuple[np.ndarray | None, int | None]:
    """``(n, T, V)`` floats from ``{"X[t]": value or (n,)}`` / ``{"X": (T',) or (n, T')}``, NaN where nothing is said."""
    if not arg:
        return None, n
    idx = {v: i for i, v in enumerate(variables)}
    cells = []
    for key, value in arg.items():
        if callable(value):
            raise EvidenceError(f"{what} on {key!r}: a callable value is not a linear-Gaussian {what}")
        vals = np.asarray(value, dtype=float)
        if key in idx:
            if vals.ndim not in (1, 2) or vals.shape[-1] > T:
                raise ShapeError(f"{what} sequence of {key!r} must have shape (T',) or (n, T') with T' <= {T}, "
                                 f"got {vals.shape}")
            cells.append((idx[key], slice(0, vals.shape[-1]), vals if vals.ndim == 2 else vals[None]))
            rows = vals.shape[0] if vals.ndim == 2 else None
        else:
            var, t = split_step(key, idx)
            if t >= T:
                raise EvidenceError(f"{what} on {key!r} is at or past the horizon T={T}")
            if vals.ndim > 1:
                raise ShapeError(f"{what} on {key!r} must be a scalar or (n,) per-row values, got {vals.shape}")
            cells.append((idx[var], slice(t, t + 1), vals.reshape(-1, 1)))
            rows = vals.shape[0] if vals.ndim == 1 else None
        if rows is not None:
            if n is not None and rows != n:
                raise ShapeError(f"{what} on {key!r} has {rows} rows, expected the batch size {n}")
            n = rows
    out = np.full((1 if n is None else n, T, len(variables)), np.nan)
    for i, span, vals in cells:
        block = np.broadcast_to(vals, (out.shape[0], span.stop - span.start))
        if (~np.isnan(out[:, span, i]) & ~np.isnan(block)).any():
            raise EvidenceError(f"{what} names {variables[i]!r} at step {span.start} twice")
        out[:, span, i] = np.where(np.isnan(block), out[:, span, i], block)
    return out, n


def _slice(mechs: dict, variables, idx: dict) -> tuple:
    V = len(variables)
    B, A, c, s2 = np.zeros((V, V)), np.zeros((V, V)), np.zeros(V), np.zeros(V)
    for i, v in enumerate(variables):
        m = mechs[v]
        for p, w in zip(m.parents, m.weights):
            pv, lag = split_template(p)
            (A if lag == -1 else B)[i, idx[pv]] += w
        c[i], s2[i] = m.bias, m.sigma ** 2
    return B, A, c, s2


def _solve(B, A, c, s2, setmask):
    """``(F, G, Q)``: ``x = F x_prev + G c + w`` under the step's ``do`` mask (rows of set variables cleared)."""
    keep = ~setmask
    B, A, s2 = B * keep[:, None], A * keep[:, None], s2 * keep
    M = np.linalg.inv(np.eye(len(s2)) - B)
    return M @ A, M, (M * s2) @ M.T


def kalman_marginals(initial: dict, transition: dict, variables, y: np.ndarray, do: np.ndarray | None,
                     smooth: bool):
    """Means ``(n, T, V)``, variances ``(n, T, V)`` and ``log P(evidence)`` ``(n,)``.

    Parameters
    ----------
    y : ndarray (n, T, V)
        Observed values, NaN where unobserved.
    do : ndarray (n, T, V) or None
        Set values, NaN where not set; every row must set the same variables at each step.

    Raises
    ------
    EvidenceError
        If rows set different variables at one step.
    NumericalError
        If an innovation covariance is singular (the caller falls back to the unrolled model).
    """
    n, T, V = y.shape
    idx = {v: i for i, v in enumerate(variables)}
    setm = np.zeros((T, V), dtype=bool) if do is None else ~np.isnan(do)
    if do is not None:
        if (setm != setm[:1]).any():
            raise EvidenceError("the Kalman path needs every row to set the same variables at each step")
        setm = setm[0]                                                              # (T, V)
    dov = np.zeros((n, T, V)) if do is None else np.nan_to_num(do)
    B0, _, c0, s0 = _slice(initial, variables, idx)
    F0, G0, P0 = _solve(B0, np.zeros((V, V)), c0, s0, setm[0])
    m0 = np.where(setm[0], dov[:, 0], c0) @ G0.T                                     # (n, V)
    B, A, c, s2 = _slice(transition, variables, idx)
    Fs, Qs, offs = np.empty((max(T - 1, 0), V, V)), np.empty((max(T - 1, 0), V, V)), np.empty((n, max(T - 1, 0), V))
    cache: dict = {}
    for t in range(1, T):
        key = setm[t].tobytes()
        if key not in cache:
            cache[key] = _solve(B, A, c, s2, setm[t])
        F, G, Q = cache[key]
        Fs[t - 1], Qs[t - 1] = F, Q
        offs[:, t - 1] = np.where(setm[t], dov[:, t], c) @ G.T                      # (n, V)
    H, R = np.eye(V), np.zeros((V, V))
    if T == 1:
        Fs, Qs, offs = np.eye(V), np.eye(V), None
    f = kalman_filter(y, Fs, H, Qs, R, m0, P0, offsets=offs)
    if smooth:
        s = rts_smoother(f, Fs)
        means, covs = s.smoothed_means, s.smoothed_covs
    else:
        means, covs = f.filtered_means, f.filtered_covs
    var = np.clip(np.diagonal(covs, axis1=-2, axis2=-1), 0.0, None)
    return means, var, f.log_likelihood
