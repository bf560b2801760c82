"""Sampling engines: ancestral sampling and likelihood weighting.

Likelihood weighting (Fung & Chang 1990; Koller & Friedman 2009, §12.2) draws
every unobserved node from its mechanism, clamps observed nodes to the
evidence and weights each draw by the evidence's likelihood given its
parents. Batched evidence (n rows) draws ``m`` samples per row in one
vectorized pass of ``n·m`` rows.

Nodes under a per-row ``do`` are clamped to their row's value in all ``m``
samples of that row. Every real value drawn is checked: a mechanism that
produces NaN or inf stops with a :class:`~causalnet.errors.ModelError`
naming the node, never a NaN answer.

The same pass serves counterfactuals: an observed node's noise is drawn from
its posterior given the observed value and parents (exact for additive noise;
uniform on the CDF interval for a discrete node under the inverse-CDF SCM),
and the weighted noise is replayed through the intervened model.

Symbols: ``n`` evidence rows, ``m`` samples per row.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution, EmpiricalDistribution
from ..errors import EvidenceError
from ..mechanisms.base import DISCRETE, REAL
from ..mechanisms.intervened import Intervened
from ..values import check_finite
from .engine import Engine

__all__ = ["likelihood_weighting", "normalise", "weighted_state_probs", "samples_per_row", "opaque_shifts",
           "SamplingEngine"]


def _repeat(arr: np.ndarray, n_rows: int, m: int, batched: bool) -> np.ndarray:
    arr = np.asarray(arr)
    if batched:
        return np.repeat(arr, m, axis=0)
    return np.broadcast_to(arr, (n_rows * m, *arr.shape)).copy()


def likelihood_weighting(model, evidence: Mapping[Hashable, np.ndarray], n_rows: int, m: int, rng,
                         *, batched_nodes=frozenset(), keep_noise: bool = False, clamped=None,
                         noise=None):
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
    clamped : mapping node -> ndarray of shape (n_rows, ...), optional
        Per-row intervention values: row i's value in all its m samples.
    noise : mapping node -> ndarray of shape (n_rows * m, ...), optional
        Exogenous noise to use instead of drawing it (replaying another world's noise).

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
    limits.check_bytes(8.0 * N * (len(model.nodes) + 1), what=f"likelihood weighting with {N} samples",
                       cause=f"{n_rows} rows x {m} samples x {len(model.nodes)} nodes")
    clamped = dict(clamped or {})
    given_noise = dict(noise or {})
    values: dict = {}
    noise = {}
    log_w = np.zeros(N)
    for node in model.dag.topological_order():
        mech = model.mechanisms[node]
        spec = model.specs[node]
        pa = {p: values[p] for p in mech.parents}
        if node in clamped:
            values[node] = _repeat(clamped[node], n_rows, m, True)
        elif node in evidence:
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
                with np.errstate(all="ignore"):
                    lp = np.asarray(mech.log_prob(node, v, pa, spec), dtype=np.float64)
                if np.any(np.isnan(lp) | (lp == np.inf)):
                    raise EvidenceError(f"the density of {node!r} at the evidence is NaN or +inf (a degenerate "
                                        f"mechanism); likelihood weighting cannot weight it")
                log_w += lp
                if keep_noise:
                    noise[node] = mech.abduct_sample(node, v, pa, spec, rng)
            values[node] = v
        else:
            u = given_noise[node] if node in given_noise else mech.sample_noise(N, rng, spec)
            if keep_noise and u is not None:
                noise[node] = u
            with np.errstate(all="ignore"):
                x = mech.evaluate(node, pa, u, spec, n=N)
            values[node] = check_finite(node, x) if spec.kind == REAL else x
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


def samples_per_row(n_samples: int, n_rows: int | None) -> int:
    """Samples drawn per evidence row: `n_samples` in all, at least 1000 per row when batched."""
    return max(1000, int(n_samples) // n_rows) if n_rows else int(n_samples)


def opaque_shifts(model) -> list:
    """Continuous nodes under a shift that is an opaque callable (why an exact engine may not apply)."""
    return [v for v, mech in model.mechanisms.items()
            if isinstance(mech, Intervened) and mech.is_shift and mech.affine is None
            and model.specs[v].kind != DISCRETE]


def summarise(names, states, columns: dict, w: np.ndarray, n_rows: int | None, method: str, scm=None):
    """Weighted samples -> a DiscreteDistribution (all targets discrete, with std errors) or an EmpiricalDistribution.

    `columns` maps each name to its ``(rows * m, ...)`` values; `states` is
    the list of state tuples (None for a non-discrete target).
    """
    rows, m = w.shape
    if all(s is not None for s in states):
        probs, se = weighted_state_probs([columns[t] for t in names], [len(s) for s in states], w)
        if not n_rows:
            probs, se = probs[0], se[0]
        return DiscreteDistribution(names, probs, states, batched=n_rows is not None, method=method, std_err=se,
                                    scm=scm)
    samples = {t: columns[t].reshape(rows, m, *columns[t].shape[1:]) for t in names}
    if not n_rows:
        samples = {t: s[0] for t, s in samples.items()}
        w = w[0]
    return EmpiricalDistribution(names, samples, w, batched=n_rows is not None, method=method, scm=scm)


class SamplingEngine(Engine):
    """Likelihood weighting: any model, with standard errors; the fallback of ``method="auto"``."""

    name = "likelihood weighting"
    exact = False
    soft_evidence = True

    def accepts(self, request) -> bool:
        return not request.is_counterfactual

    def answer(self, request):
        m = request.model
        names = request.nodes
        ev = request.observed
        rows = request.n_rows or 1
        per_row = samples_per_row(request.n_samples, request.n_rows)
        batched_nodes = {k for k, a in ev.items() if np.ndim(a) == len(m.specs[k].shape) + 1}
        values, log_w, _ = likelihood_weighting(m, ev, rows, per_row, request.rng(), batched_nodes=batched_nodes,
                                                clamped=request.row_do)
        for k, lik in getattr(request, "soft", {}).items():              # virtual evidence: weight by L(x)
            lik = np.broadcast_to(lik, (rows, lik.shape[-1]))
            with np.errstate(divide="ignore"):
                log_w = log_w + np.log(lik[np.repeat(np.arange(rows), per_row), values[k]])
        w = normalise(log_w, rows, per_row)                       # (rows, m)
        method = f"likelihood weighting ({per_row} samples{' per row' if request.n_rows else ''})"
        opaque = opaque_shifts(m)
        if opaque and request.method == "auto":
            method += f"; not exact: the shift on {opaque[0]!r} is an opaque callable (cn.shift/cn.affine are exact)"
        states = [m.specs[t].states if m.specs[t].kind == DISCRETE else None for t in names]
        return summarise(names, states, values, w, request.n_rows, method)
