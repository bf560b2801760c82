"""Evidence, interventions and policies over time, as ``(n, T)`` arrays of state indices.

A DBN question names a variable at a step either by a time-indexed name
(``{"A[5]": 1}``, a scalar, a state name, or ``(n,)`` per-row values) or by the
variable with a whole sequence (``{"A": [0, 1, None, 1]}``, ``(T',)`` or
``(n, T')``, where ``None``, ``NaN`` or a negative index leaves a step
unobserved). :func:`step_arrays` turns either form into one ``(n, T)`` array of
state indices per variable, ``-1`` where nothing is said, checking names,
states, steps and the batch size. A policy ``{"A": f}`` calls ``f(t)`` for every
step and sets ``A[t]`` to its value unless it is None (:func:`policy_do`).

Symbols: ``n`` rows, ``T`` steps.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import EvidenceError, ShapeError
from .names import split_step

__all__ = ["step_arrays", "policy_do", "horizon", "merge_do"]


def horizon(*maps) -> int:
    """1 + the largest step any time-indexed name (or sequence) of `maps` mentions (0 when none does)."""
    T = 0
    for m in maps:
        for key, value in (m or {}).items():
            if isinstance(key, str) and key.endswith("]"):
                T = max(T, split_step(key)[1] + 1)
            elif not callable(value):
                T = max(T, np.shape(value)[-1] if np.ndim(value) else 1)
    return T


def _decode(states: tuple, value, what: str) -> np.ndarray:
    """State indices of `value` (names or indices; None/NaN/negative -> -1), as int64."""
    arr = np.asarray(value, dtype=object)
    flat = arr.reshape(-1)
    out = np.empty(flat.size, dtype=np.int64)
    for i, x in enumerate(flat):
        if x is None or (isinstance(x, float) and np.isnan(x)):
            out[i] = -1
        elif isinstance(x, str):
            if x not in states:
                raise EvidenceError(f"{what} has no state {x!r}; states: {list(states)}")
            out[i] = states.index(x)
        else:
            if isinstance(x, (float, np.floating)) and float(x) != int(x):
                raise EvidenceError(f"{what}: {x!r} is not a state index")
            k = int(x)
            if k >= len(states):
                raise EvidenceError(f"{what} has states 0..{len(states) - 1}, got {k}")
            out[i] = k if k >= 0 else -1
    return out.reshape(arr.shape)


def _fast_decode(states: tuple, value, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind in "iu":
        if arr.size and arr.max() >= len(states):
            raise EvidenceError(f"{what} has states 0..{len(states) - 1}, got {int(arr.max())}")
        return np.where(arr < 0, -1, arr).astype(np.int64)
    return _decode(states, value, what)


def step_arrays(arg, states: Mapping, T: int, what: str, n: int | None = None) -> tuple[dict, int | None]:
    """``({var: (n, T) int64}, n)`` from evidence or ``do`` in either form (module docstring).

    Parameters
    ----------
    arg : mapping or None
    states : mapping var -> tuple of state names
    T : int
    what : str
        ``"evidence"`` or ``"do"``, for messages.
    n : int, optional
        A batch size already fixed by another argument.

    Raises
    ------
    EvidenceError
        Unknown variable or state, a step at or past `T`, or one node given twice.
    ShapeError
        Per-row values disagreeing on the batch size.
    """
    if arg is None:
        return {}, n
    if not isinstance(arg, Mapping):
        raise EvidenceError(f"{what} must be a mapping of names to values, got {type(arg).__name__}")
    cells = []                                   # (var, step or None, decoded values)
    for key, value in arg.items():
        if isinstance(key, str) and key in states:
            vals = _fast_decode(states[key], value, f"{what} on {key!r}")
            if vals.ndim not in (1, 2) or vals.shape[-1] > T:
                raise ShapeError(f"{what} sequence of {key!r} must have shape (T',) or (n, T') with T' <= {T}, "
                                 f"got {vals.shape}")
            cells.append((key, None, vals))
            rows = vals.shape[0] if vals.ndim == 2 else None
        else:
            var, t = split_step(key, states)
            if t >= T:
                raise EvidenceError(f"{what} on {key!r} is at or past the horizon T={T}")
            vals = _fast_decode(states[var], value, f"{what} on {key!r}")
            if vals.ndim > 1:
                raise ShapeError(f"{what} on {key!r} must be a scalar or (n,) per-row values, got {vals.shape}")
            cells.append((var, t, vals))
            rows = vals.shape[0] if vals.ndim == 1 else None
        if rows is not None:
            if n is not None and rows != n:
                raise ShapeError(f"{what} on {key!r} has {rows} rows, expected the batch size {n}")
            n = rows
    nn = 1 if n is None else n
    out: dict = {}
    for var, t, vals in cells:
        a = out.setdefault(var, np.full((nn, T), -1, dtype=np.int64))
        span = slice(t, t + 1) if t is not None else slice(0, vals.shape[-1])
        block = (vals if vals.ndim == 2 else vals[None, :]) if t is None else vals.reshape(-1, 1)
        block = np.broadcast_to(block, (nn, span.stop - span.start))
        if ((a[:, span] >= 0) & (block >= 0)).any():
            raise EvidenceError(f"{what} names {var!r} at step {span.start if t is not None else '...'} twice")
        a[:, span] = np.where(block >= 0, block, a[:, span])
    return out, n


def policy_do(policy, states: Mapping, T: int, n: int | None) -> tuple[dict, int | None]:
    """``do`` arrays of a policy: ``{"A": f}`` with ``f(t)`` a state (or ``(n,)`` states) or None per step.

    A mapping of time-indexed names in `policy` is the same as ``do``.
    """
    if policy is None:
        return {}, n
    if not isinstance(policy, Mapping):
        raise EvidenceError(f"policy must be a mapping variable -> f(t), got {type(policy).__name__}")
    direct = {k: v for k, v in policy.items() if not callable(v)}
    calls = {k: v for k, v in policy.items() if callable(v)}
    for var in calls:
        if var not in states:
            raise EvidenceError(f"policy names {var!r}, which is not a variable of the DBN; variables: "
                                f"{sorted(states)}")
    cells = dict(direct)
    for var, f in calls.items():
        for t in range(T):
            v = f(t)
            if v is not None:
                cells[f"{var}[{t}]"] = v
    return step_arrays(cells, states, T, "policy", n)


def merge_do(a: dict, b: dict, n: int | None) -> dict:
    """The union of two ``do`` maps of ``(n0, T)`` arrays; EvidenceError if both set one node."""
    nn = 1 if n is None else n
    out = {v: np.broadcast_to(x, (nn, x.shape[1])).copy() for v, x in a.items()}
    for v, x in b.items():
        x = np.broadcast_to(x, (nn, x.shape[1]))
        if v in out:
            if ((out[v] >= 0) & (x >= 0)).any():
                raise EvidenceError(f"do and policy both set {v!r} at the same step")
            out[v] = np.where(x >= 0, x, out[v])
        else:
            out[v] = x.copy()
    return out
