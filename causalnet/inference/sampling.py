"""Sampling engines: ancestral sampling and likelihood weighting.

Likelihood weighting (Fung & Chang 1990; Koller & Friedman 2009, §12.2) draws
every unobserved node from its mechanism, clamps observed nodes to the
evidence and weights each draw by the evidence's likelihood given its
parents. Batched evidence (n rows) draws ``m`` samples per row in one
vectorized pass of ``n·m`` rows.

The same pass serves counterfactuals: an observed node's noise is drawn from
its posterior given the observed value and parents (exact for additive noise;
uniform on the CDF interval for a discrete node under the inverse-CDF SCM),
and the weighted noise is replayed through the intervened model.

Symbols: ``n`` evidence rows, ``m`` samples per row.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from ..errors import EvidenceError

__all__ = ["likelihood_weighting", "normalise", "weighted_state_probs"]


def _repeat(arr: np.ndarray, n_rows: int, m: int, batched: bool) -> np.ndarray:
    arr = np.asarray(arr)
    if batched:
        return np.repeat(arr, m, axis=0)
    return np.broadcast_to(arr, (n_rows * m, *arr.shape)).copy()


def likelihood_weighting(model, evidence: Mapping[Hashable, np.ndarray], n_rows: int, m: int, rng,
                         *, batched_nodes=frozenset(), keep_noise: bool = False):
    """Weighted joint samples given evidence.

    Parameters
    ----------
    model : CausalModel
    evidence : mapping node -> array
        Coerced values: scalars, or ``(n_rows, ...)`` for nodes in `batched_nodes`.
    n_rows : int
        Number of evidence rows (1 when nothing is batched).
    m : int
        Samples per row.
    rng : numpy Generator

    Returns
    -------
    values : dict node -> ndarray of shape (n_rows * m, ...)
        Row-major: the m samples of evidence row i are rows ``i*m .. i*m+m-1``.
    log_w : ndarray of shape (n_rows * m,)
    noise : dict node -> noise arrays (when `keep_noise`)

    Raises
    ------
    EvidenceError
        When a deterministic continuous node is observed (likelihood weighting
        cannot weight it) or every sample of some row has weight zero.
    """
    N = n_rows * m
    values: dict = {}
    noise: dict = {}
    log_w = np.zeros(N)
    for node in model.dag.topological_order():
        mech = model.mechanisms[node]
        spec = model.specs[node]
        pa = {p: values[p] for p in mech.parents}
        if node in evidence:
            v = _repeat(evidence[node], n_rows, m, node in batched_nodes)
            if mech.deterministic:
                got = mech.evaluate(node, pa, None, spec, n=N)
                same = got == v if spec.kind == "discrete" else np.isclose(got, v, rtol=1e-9, atol=1e-12)
                if same.ndim > 1:
                    same = same.reshape(N, -1).all(axis=1)
                if spec.kind != "discrete" and not same.all():
                    raise EvidenceError(f"evidence on the deterministic continuous node {node!r} cannot be weighted "
                                        f"by sampling (it has no density); observe its inputs instead")
                with np.errstate(divide="ignore"):
                    log_w += np.log(same.astype(np.float64))
            else:
                log_w += mech.log_prob(node, v, pa, spec)
                if keep_noise:
                    noise[node] = mech.abduct_sample(node, v, pa, spec, rng)
            values[node] = v
        else:
            u = mech.sample_noise(N, rng, spec)
            if keep_noise and u is not None:
                noise[node] = u
            values[node] = mech.evaluate(node, pa, u, spec, n=N)
    lw = log_w.reshape(n_rows, m)
    if np.any(np.all(np.isneginf(lw), axis=1)):
        row = int(np.argmax(np.all(np.isneginf(lw), axis=1)))
        raise EvidenceError(f"no sample is consistent with the evidence (row {row}): it is impossible, or too "
                            f"rare for {m} samples")
    return values, log_w, noise


def normalise(log_w: np.ndarray, n_rows: int, m: int) -> np.ndarray:
    """Per-row normalised weights, shape (n_rows, m)."""
    lw = log_w.reshape(n_rows, m)
    lw = lw - lw.max(axis=1, keepdims=True)
    w = np.exp(lw)
    return w / w.sum(axis=1, keepdims=True)


def weighted_state_probs(columns, cards, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Self-normalised importance estimates of a joint over discrete variables, with standard errors.

    Parameters
    ----------
    columns : list of ndarray of shape (n_rows * m,)
        State indices of each variable, row-major as :func:`likelihood_weighting` returns them.
    cards : list of int
    w : ndarray of shape (n_rows, m)
        Normalised weights.

    Returns
    -------
    probs, std_err : ndarray of shape (n_rows, *cards)
        ``var(p_k) ≈ Σ w² (1[x=k] − p_k)²`` (the delta-method variance of a
        self-normalised estimate).
    """
    rows, m = w.shape
    total = int(np.prod(cards))
    flat = np.ravel_multi_index(list(columns), cards).reshape(rows, m)
    idx = (flat + (np.arange(rows) * total)[:, None]).ravel()
    probs = np.bincount(idx, weights=w.ravel(), minlength=rows * total).reshape(rows, total)
    sq = np.bincount(idx, weights=(w ** 2).ravel(), minlength=rows * total).reshape(rows, total)
    var = sq * (1 - 2 * probs) + probs ** 2 * np.sum(w ** 2, axis=1, keepdims=True)
    se = np.sqrt(np.maximum(var, 0.0))
    return probs.reshape(rows, *cards), se.reshape(rows, *cards)
