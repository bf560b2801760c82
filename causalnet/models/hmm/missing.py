"""Missing observations and partially known states in an HMM's sequences.

* A missing observation is a NaN row of ``X`` (a NaN symbol, or a Gaussian
  row that is all NaN): its emission likelihood is 1 in every state, so it
  says nothing about the state at that step. :func:`split_missing` finds those
  rows and fills them with a valid placeholder, so the emissions' own checks
  and caches run unchanged; :func:`masked_unaries` then sets their log
  unaries to 0 (plus the start at step 0). They count for nothing in the
  emission statistics (their posterior weight there is set to 0) and fully in
  the start and transition statistics.
* A partially labelled state sequence (``states``, ``-1`` where unknown)
  clamps the posterior: the log unary of every other state at a labelled step
  is ``-inf``. EM then maximises ``log p(X, known states)``.

Symbols: ``N`` observations, ``T`` steps, ``n`` sequences, ``K`` states, ``d`` width.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvidenceError, ShapeError

__all__ = ["split_missing", "check_states", "masked_unaries"]


def split_missing(X, obs_ndim: int):
    """``(X_filled, missing)``: NaN rows replaced by a placeholder, and the ``(N,)`` mask (None if none).

    Parameters
    ----------
    X : array_like
        Concatenated observations ``(N,)`` / ``(N, 1)`` (symbols, ``obs_ndim``
        1) or ``(N, d)`` (vectors, ``obs_ndim`` 2).

    Raises
    ------
    EvidenceError
        A row with some but not all entries NaN (say which row).
    """
    try:
        a = np.asarray(X) if not isinstance(X, np.ndarray) else X
    except (TypeError, ValueError):                                          # ragged: the emission's check says why
        return X, None
    if not np.issubdtype(a.dtype, np.floating) or a.ndim == 0 or a.size == 0:
        return X, None
    nan = np.isnan(a)
    if not nan.any():
        return X, None
    rows = nan.reshape(len(a), -1)
    missing = rows.all(axis=1)                                               # (N,)
    partial = rows.any(axis=1) & ~missing
    if partial.any():
        i = int(np.flatnonzero(partial)[0])
        raise EvidenceError(f"observations must be finite (no NaN or inf); row {i} is partly NaN ({a[i].tolist()}): "
                            "a missing observation is a whole NaN row")
    if missing.all():
        raise EvidenceError("every observation is missing (NaN); at least one must be observed")
    filled = a.copy()
    filled[missing] = a[np.flatnonzero(~missing)[0]]                      # a valid placeholder: an observed row
    return filled, missing


def check_states(states, N: int, K: int) -> np.ndarray:
    """Partial state labels as ``(N,)`` ints in ``-1 .. K-1`` (-1 unknown)."""
    s = np.asarray(states)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    if s.shape != (N,):
        raise ShapeError(f"states must have one label per observation, shape ({N},), got {s.shape}")
    if s.dtype == bool or not np.issubdtype(s.dtype, np.integer):
        if not (np.issubdtype(s.dtype, np.floating) and np.isfinite(s).all() and (s == np.round(s)).all()):
            raise EvidenceError(f"states must be integers (-1 where unknown), got dtype {s.dtype}")
    s = s.astype(np.intp)
    bad = (s < -1) | (s >= K)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise EvidenceError(f"state label {s[i]} at position {i} is outside -1 .. {K - 1} (n_components={K})")
    return s


def masked_unaries(u_fn, startprob: np.ndarray, missing: np.ndarray | None, labels: np.ndarray | None):
    """Log unaries ``(T, n, K)`` with missing steps set to 0 and labelled steps clamped.

    Parameters
    ----------
    u_fn : callable
        The emission's log unaries (start folded into step 0).
    startprob : ndarray (K,)
    missing : ndarray of bool (T, n) or None
        Real steps whose observation is missing.
    labels : ndarray of int (T, n) or None
        Known states, -1 where unknown (and on padding).
    """
    def fn():
        u = u_fn()                                                           # (T, n, K)
        if missing is not None:
            u[missing] = 0.0
            with np.errstate(divide="ignore"):
                u[0, missing[0]] = np.log(startprob)
        if labels is not None:
            known = labels >= 0                                              # (T, n)
            other = np.arange(u.shape[-1]) != labels[..., None]              # (T, n, K)
            u[known[..., None] & other] = -np.inf
        return u
    return fn
