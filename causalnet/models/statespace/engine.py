"""The Kalman engine in the front door: exact queries on an unrolled state-space model by filtering and smoothing.

:func:`~.layout.unrolled_of` recognises a model built by
:meth:`StateSpace.to_model <causalnet.models.statespace.StateSpace.to_model>`
(possibly under ``do``). :class:`KalmanEngine` (``QUERY_ENGINES``, name
``"Kalman"``, ahead of the generic ``"linear-Gaussian"`` engine, tested equal
to it) answers a factual query on it when

* the evidence is on observation nodes (any subset of components, batched
  rows allowed) and none of them is intervened;
* every ``do`` sets a *whole* slice (all state components of a step, or all
  observation components of a step) to constants or per-row values.

A ``do`` on the state at step ``t`` is a reset of the filter to a point mass
(:func:`~.kalman.kalman_filter`'s ``resets``): it cuts ``Z[t]`` from the past,
and the smoother carries nothing back across it. The joint law of targets at
several steps uses the smoother gains: ``Cov(Z[a], Z[b] | y) = J[a] J[a+1]
... J[b-1] Cov(Z[b] | y)`` for ``a < b``. An observation target is ``H Z[t]
+ v`` (its set value under ``do``). Cost: ``O(n T d^3)`` time and ``O(n T d^2)``
memory, instead of the generic engine's joint Gaussian over all ``T (d + p)`` nodes.

Symbols: ``n`` rows, ``T`` steps, ``d`` state size, ``p`` observation size.
"""

from __future__ import annotations

import numpy as np

from ...distributions import Gaussian
from ...inference.dispatch import QUERY_ENGINES
from ...inference.engine import Engine
from ...mechanisms.intervened import Intervened
from .kalman import kalman_filter, rts_smoother
from .layout import unrolled_of

__all__ = ["KalmanEngine", "QUERY_METHOD"]

QUERY_METHOD = "exact (Kalman filter and Rauch–Tung–Striebel smoother)"


def _set_slices(model, record):
    """``({t: [nodes]} of set state slices, {t: [nodes]} of set observation slices)``, or None if a do is partial."""
    z_do, y_do = {}, {}
    for node, mech in model.mechanisms.items():
        if isinstance(mech, Intervened):
            if mech.is_shift:
                return None
            kind, t, _ = record.steps[node]
            (z_do if kind == "Z" else y_do).setdefault(t, []).append(node)
    d, p = record.params.d, record.params.p
    if any(len(v) != d for v in z_do.values()) or any(len(v) != p for v in y_do.values()):
        return None
    return z_do, y_do


def _rows(value, n: int) -> np.ndarray:
    """A constant or per-row value as ``(n,)`` floats."""
    return np.broadcast_to(np.asarray(value, dtype=np.float64).reshape(-1), (n,))


class KalmanEngine(Engine):
    """Exact queries on an unrolled StateSpace by Kalman recursions (see the module docstring)."""

    name = "Kalman"

    def accepts(self, request) -> bool:
        if request.is_counterfactual:
            return False
        record = unrolled_of(request.model)
        if record is None:
            return False
        slices = _set_slices(request.model, record)
        if slices is None:
            return False
        ev = [node for _, node in request.evidence]
        return all(record.steps[v][0] == "Y" and not isinstance(request.model.mechanisms[v], Intervened) for v in ev)

    def answer(self, request):
        model = request.model
        record = unrolled_of(model)
        z_do, y_do = _set_slices(model, record)
        P, T = record.params, record.T
        n = request.n_rows or 1
        y = np.full((n, T, P.p), np.nan)
        for (_, node), value in request.evidence.items():
            _, t, i = record.steps[node]
            y[:, t, i] = _rows(value, n)
        resets = {}
        for t in z_do:
            mean = np.stack([_rows(model.mechanisms[v].value, n) for v in record.states[t]], axis=-1)   # (n, d)
            resets[t] = (mean, np.zeros((P.d, P.d)))
        offsets = None if record.offsets is None else record.offsets
        f = kalman_filter(y, P.transition, P.observation, P.transition_cov, P.observation_cov, P.initial_mean,
                          P.initial_cov, offsets=offsets, resets=resets)
        s = rts_smoother(f, P.transition)
        mean, cov = _joint(request.nodes, record, s, model, y_do, y)
        return Gaussian(request.labels, mean if request.batched else mean[0], cov, batched=request.batched,
                        method=QUERY_METHOD)


def _joint(nodes, record, smoothed, model, y_do, y):
    """Mean ``(n, m)`` and covariance ``(m, m)`` of the m target nodes.

    An observation target ``Y_i[t]`` is read given ``Z[t]`` and the observed
    components ``o`` of ``Y[t]``: ``H_i Z + G_i (y_o - H_o Z) + v``, ``G = R_io
    R_oo^-1``, with the conditional noise covariance ``R_ij - G_i R_oj``.
    """
    P = record.params
    n = y.shape[0]
    times = sorted({record.steps[v][1] for v in nodes})
    d = P.d
    ms, Ps, J = smoothed.smoothed_means, smoothed.smoothed_covs[0], smoothed.gains[0]  # covariances shared by rows
    big = np.zeros((len(times) * d, len(times) * d))                                 # joint cov of Z at `times`
    for a, ta in enumerate(times):
        big[a * d:(a + 1) * d, a * d:(a + 1) * d] = Ps[ta]
        G = np.eye(d)                                                                # J[ta] ... J[tb-1]
        last = ta
        for b in range(a + 1, len(times)):
            tb = times[b]
            for t in range(last, tb):
                G = G @ J[t]
            last = tb
            block = G @ Ps[tb]                                                       # Cov(Z[ta], Z[tb])
            big[a * d:(a + 1) * d, b * d:(b + 1) * d] = block
            big[b * d:(b + 1) * d, a * d:(a + 1) * d] = block.T
    zmean = np.concatenate([ms[:, t] for t in times], axis=-1)                       # (n, k d)
    m = len(nodes)
    M = np.zeros((m, len(times) * d))                                                # targets = M z + noise (+ const)
    const = np.zeros((n, m))
    noise = np.zeros((m, m))
    for j, v in enumerate(nodes):
        kind, t, i = record.steps[v]
        slot = times.index(t) * d
        if kind == "Z":
            M[j, slot + i] = 1.0
        elif t in y_do:
            const[:, j] = _rows(model.mechanisms[v].value, n)
        else:
            o = np.flatnonzero(~np.isnan(y[0, t]))                                   # observed components at t
            G = P.observation_cov[i, o] @ np.linalg.pinv(P.observation_cov[np.ix_(o, o)], hermitian=True)
            M[j, slot:slot + d] = P.observation[i] - G @ P.observation[o]
            const[:, j] = y[:, t, o] @ G
            for jj, w in enumerate(nodes):
                kw, tw, iw = record.steps[w]
                if kw == "Y" and tw == t and t not in y_do:
                    noise[j, jj] = P.observation_cov[i, iw] - G @ P.observation_cov[o, iw]
    cov = M @ big @ M.T + noise
    return zmean @ M.T + const, 0.5 * (cov + cov.T)


QUERY_ENGINES.register(KalmanEngine(), before="linear-Gaussian")
