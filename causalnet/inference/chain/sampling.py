"""Exact posterior path samples: forward filtering, backward sampling (Gumbel-max per step)."""

from __future__ import annotations

import numpy as np

from ...arguments import check_int
from ...mechanisms.base import as_generator
from .log_space import log_forward
from .potentials import Chain, raise_if_impossible
from .scaled import scaled_forward, scaled_log_partition

__all__ = ["sample_paths", "chain_sample"]


def sample_paths(unary, pairwise, mask=None, *, size=None, seed=None):
    """Exact posterior samples of paths (forward filtering, backward sampling).

    Parameters
    ----------
    unary : ndarray of shape (n, T, K)
    pairwise : ndarray of shape (K, K) or (n, T-1, K, K)
    mask : ndarray of bool, shape (n, T), optional
    size : int, optional
        Number of samples per row; None for one sample without the leading axis.
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    paths : ndarray of int, shape (n, T) or (size, n, T)
        -1 beyond a row's length.

    Raises
    ------
    EvidenceError
        If a row has no possible path, or length 0.
    ModelError
        If `size` or `seed` is not valid.
    """
    if size is not None:
        check_int(size, "size", low=0)
    rng = as_generator(seed)
    ch = Chain.from_batch(unary, pairwise, mask)
    S = 1 if size is None else int(size)
    if ch.n == 0 or S == 0:
        z = np.zeros((S, ch.n, ch.T), dtype=np.intp)
        return z[0] if size is None else z
    z = chain_sample(ch, S, rng)  # (S, T, n)
    out = _samples_to_batch(ch, z)  # (S, n, T)
    return out[0] if size is None else out


def _samples_to_batch(ch, z):
    """(S, T, n) internal -> (S, n, T) caller's order."""
    x = np.swapaxes(z, 1, 2)  # (S, n, T)
    if ch.order is None:
        return np.ascontiguousarray(x)
    out = np.empty_like(x)
    out[:, ch.order] = x
    return out


def chain_sample(ch, S, rng):
    """Backward sampling from the filtered messages (internal order), shape (S, T, n)."""
    alpha, c, bad = scaled_forward(ch)
    log_z = scaled_log_partition(ch, c)
    with np.errstate(divide="ignore"):
        la = np.log(alpha)  # log filtered, up to a per-(t, row) constant
    if bad.any():
        rows = np.flatnonzero(bad)
        sub = ch.subset(rows)
        la2, logc2 = log_forward(sub)
        la[:, rows] = -np.inf
        la[: sub.T, rows] = la2
        log_z[rows] = logc2.sum(axis=0)
    raise_if_impossible(ch, log_z)
    T, n, K = ch.T, ch.n, ch.K
    cnt = ch.counts
    z = np.full((S, T, n), -1, dtype=np.intp)
    PT = ch.pw.T if ch.shared else None  # (K_j, K_i)
    for t in range(T - 1, -1, -1):
        k_all = cnt[t]
        k_cont = cnt[t + 1] if t + 1 < T else 0
        w = np.empty((S, k_all, K))
        if k_cont:
            if ch.shared:
                w[:, :k_cont] = la[t, :k_cont] + PT[z[:, t + 1, :k_cont]]  # (S, k, K)
            else:
                r = np.arange(k_cont)
                w[:, :k_cont] = la[t, :k_cont] + ch.pw[t, r[None, :], :, z[:, t + 1, :k_cont]]
        w[:, k_cont:] = la[t, k_cont:k_all]
        w += rng.gumbel(size=w.shape)
        z[:, t, :k_all] = w.argmax(axis=-1)
    return z
