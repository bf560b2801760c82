"""Least squares and logistic regression for many weightings of one data set at once.

A bootstrap replicate of a data set is the same rows with integer *counts*: row
i drawn w_bi times. Every estimator here takes a weight matrix ``W`` of shape
``(b, n)`` (one row per replicate, or a single row of ones for the fit on the
data) and returns ``b`` fits. The normal equations of all replicates come from
one matrix product: with the per-row outer products ``x_i x_iᵀ`` laid out as an
``(n, k²)`` matrix, ``W @ outer`` is every replicate's ``XᵀWX`` — ``b·n·k²``
multiply-adds in a single BLAS call instead of ``b`` separate fits.

Logistic regression is Newton's method (iteratively reweighted least squares)
run for all replicates together, started at the fit on the full data, so each
replicate needs only a few steps.

Symbols: ``n`` rows, ``k`` regressors, ``b`` weightings (replicates).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = np.column_stack([np.ones(100), rng.normal(size=100)])
>>> y = x @ [1.0, 2.0] + rng.normal(size=100)
>>> beta = weighted_least_squares(x, y, np.ones((1, 100)))
>>> beta.shape, bool(np.allclose(beta[0], np.linalg.lstsq(x, y, rcond=None)[0]))
((1, 2), True)
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["cross_moments", "solve_batched", "weighted_least_squares", "logistic_regression", "weighted_sigmoid",
           "bootstrap_counts", "clear_cache"]


def cross_moments(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Every weighting's ``Aᵀ diag(w) B`` (when `b` is `a`, only the upper triangle is multiplied out).

    Parameters
    ----------
    w : ndarray of shape (r, n)
    a : ndarray of shape (n, p)
    b : ndarray of shape (n, q)

    Returns
    -------
    ndarray of shape (r, p, q)
    """
    n, p = a.shape
    q = b.shape[1]
    if w.shape[0] <= 4 or n * p * q * 8 > _OUTER_BYTES:       # few weightings or wide designs: one product each
        return np.stack([(a * wi[:, None]).T @ b for wi in w])   # (r, p, q)
    if a is b:
        iu = np.triu_indices(p)
        half = w @ _outer(a, b)                                   # (r, p(p+1)/2)
        out = np.empty((w.shape[0], p, p))
        out[:, iu[0], iu[1]] = half
        out[:, iu[1], iu[0]] = half
        return out
    return (w @ _outer(a, b)).reshape(w.shape[0], p, q)           # (r, p, q)


#: The chord iteration stops when no coefficient moves more than this; it contracts the error by about
#: sqrt(k / n) per step, so what is left is far below it (about 1e-9 for n = 10^4).
_CHORD_TOL = 1e-7

#: Largest per-row outer-product matrix (bytes) built; wider designs are multiplied weighting by weighting.
_OUTER_BYTES = 200_000_000

_OUTERS: list = []     # the last few (a, b, outer) triples: the same designs recur across replicate chunks


def _outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    for a0, b0, out in _OUTERS:
        if a0 is a and b0 is b:
            return out
    n, p = a.shape
    if a is b:
        iu = np.triu_indices(p)
        out = a[:, iu[0]] * a[:, iu[1]]                                        # (n, p(p+1)/2)
    else:
        out = (a[:, :, None] * b[:, None, :]).reshape(n, p * b.shape[1])       # (n, p*q)
    _OUTERS.insert(0, (a, b, out))
    del _OUTERS[4:]
    return out


def solve_batched(a: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve ``a_r x_r = rhs_r`` for each r; singular systems by the pseudo-inverse.

    Parameters
    ----------
    a : ndarray of shape (r, k, k)
    rhs : ndarray of shape (r, k)

    Returns
    -------
    ndarray of shape (r, k)
    """
    try:
        return np.linalg.solve(a, rhs[..., None])[..., 0]               # (r, k)
    except np.linalg.LinAlgError:
        return np.einsum("rij,rj->ri", np.linalg.pinv(a), rhs)          # (r, k)


def weighted_least_squares(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Coefficients of the least-squares fit of `y` on `x` under each weighting.

    Parameters
    ----------
    x : ndarray of shape (n, k)
    y : ndarray of shape (n,)
    w : ndarray of shape (r, n)
        Non-negative row weights (bootstrap counts, arm indicators, ...).

    Returns
    -------
    ndarray of shape (r, k)
        A weighting whose design is rank deficient gets the minimum-norm solution.
    """
    xtx = cross_moments(w, x, x)                                  # (r, k, k)
    xty = w @ (x * y[:, None])                                    # (r, k)
    return solve_batched(xtx, xty)


def logistic_regression(x: np.ndarray, y: np.ndarray, w: np.ndarray, *, start: np.ndarray | None = None,
                        tol: float = 1e-9, max_iter: int = 50, ridge: float = 1e-8) -> np.ndarray:
    """Maximum-likelihood logistic regression of binary `y` on `x` under each weighting (Newton).

    Parameters
    ----------
    x : ndarray of shape (n, k)
    y : ndarray of shape (n,)
        0/1 outcomes.
    w : ndarray of shape (r, n)
    start : ndarray of shape (k,) or (r, k), optional
        Starting coefficients (zeros by default).
    tol : float
        Stop when no coefficient moves more than this.
    max_iter : int
    ridge : float
        Each diagonal entry of the Hessian is multiplied by ``1 + ridge``, so that a perfectly separated weighting stays finite (its
        fitted probabilities then approach 0 or 1, as the maximum-likelihood
        fit does). Newton steps are solved in the coordinates where the
        Hessian has a unit diagonal, so covariates on very different scales
        (age³ next to a dummy) neither lose precision in the solve nor are
        shrunk by a damping sized for the largest column.

    Returns
    -------
    ndarray of shape (r, k)
    """
    r, k = w.shape[0], x.shape[1]
    beta = np.zeros((r, k)) if start is None else np.broadcast_to(np.asarray(start, float), (r, k)).copy()
    wy = w @ (x * y[:, None])                                     # (r, k)
    if start is not None and np.ndim(start) == 1:
        beta, done = _chord(x, w, wy, beta, max(tol, _CHORD_TOL), max_iter)
        if done:
            return beta
    for _ in range(max_iter):
        p = special.expit(beta @ x.T)                             # (r, n)
        grad = wy - (w * p) @ x                                   # (r, k)
        hess = cross_moments(w * p * (1.0 - p), x, x)             # (r, k, k)
        d = 1.0 / np.sqrt(np.diagonal(hess, axis1=1, axis2=2) + 1e-300)   # (r, k) Jacobi scaling
        scaled = hess * d[:, :, None] * d[:, None, :] + ridge * np.eye(k)  # unit diagonal, damped
        step = d * solve_batched(scaled, grad * d)                # (r, k)
        beta += step
        if not np.all(np.isfinite(beta)) or np.max(np.abs(step)) < tol:
            break
    return beta


def _chord(x: np.ndarray, w: np.ndarray, wy: np.ndarray, beta: np.ndarray, tol: float,
           max_iter: int) -> tuple[np.ndarray, bool]:
    """Newton steps with the Hessian frozen at the common start (one (k, k) matrix for every weighting).

    Replicates of one data set sit O(1/sqrt(n)) from the start, so the frozen
    Hessian contracts the error by about that factor per step, and a step costs
    a gradient, ``(r, n) @ (n, k)``, instead of a Hessian, ``(r, n) @ (n, k²)``.
    The fixed point is each weighting's exact maximum-likelihood fit; the
    Newton loop after it only confirms convergence (or finishes the rare
    weighting the chord has not).
    """
    p0 = special.expit(x @ beta[0])                               # (n,)
    scale = w.sum(axis=1).mean()
    h0 = (x * (p0 * (1 - p0) * scale / len(p0))[:, None]).T @ x  # (k, k)
    h0_inv = np.linalg.pinv(h0)
    last = np.inf                                                 # no contraction observed before the second step
    for _ in range(max_iter):
        step = (wy - weighted_sigmoid(beta @ x.T, w) @ x) @ h0_inv   # (r, k)
        beta = beta + step
        if not np.all(np.isfinite(beta)):
            return beta, False
        size = float(np.max(np.abs(step)))
        ratio = size / last                                       # the observed contraction per step
        if size < tol or (0 < ratio < 0.5 and size * ratio / (1 - ratio) < tol / 10):
            return beta, True                                     # what is left is below tol / 10
        last = size
    return beta, False


def weighted_sigmoid(eta: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``w · expit(eta)`` elementwise, computed as ``w / (1 + exp(−eta))`` in place in `eta`'s copy.

    numpy's vectorised ``exp`` is several times faster than ``scipy.special.expit``
    on large arrays; ``exp`` overflowing to inf for ``eta < −709`` gives exactly 0.

    Parameters
    ----------
    eta : ndarray of shape (r, n)
        Linear predictors; overwritten.
    w : ndarray of shape (r, n)
    """
    with np.errstate(over="ignore"):
        np.negative(eta, out=eta)
        np.exp(eta, out=eta)
    eta += 1.0
    return np.divide(w, eta, out=eta)


def bootstrap_counts(n: int, b: int, rng: np.random.Generator) -> np.ndarray:
    """How often each row is drawn in `b` bootstrap resamples of `n` rows.

    The resamples are drawn as an index array of shape ``(b, n)`` and counted.

    Returns
    -------
    ndarray of float64, shape (b, n)
        Each row sums to `n`.
    """
    idx = rng.integers(0, n, size=(b, n))                         # (b, n)
    flat = (idx + (np.arange(b) * n)[:, None]).ravel()            # (b*n,)
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


def clear_cache() -> None:
    """Forget the cached outer products (they hold ``n·k²`` floats per design)."""
    _OUTERS.clear()
