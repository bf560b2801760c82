"""Agreement checks shared by the benchmarks: stop before any ratio is printed when the answers differ.

A benchmark compares the speed of two libraries on the same work, so a ratio
is only meaningful when both gave the same answer. Each script calls these
checks on its answers *before* it prints the line carrying the ratio; a
disagreement ends the process with exit status 1 and a message naming the
workload, the measured difference and the tolerance, so a figure printed next
to a wrong answer cannot reach the docs.

The tolerance is the script's, chosen for its method: exact equality for
graph answers (d-separation, adjustment sets), about 1e-6 for posteriors read
from BIF files (their numbers carry a few digits, renormalized differently by
each library), looser bounds for iterative fits that stop at different points.
"""

from __future__ import annotations

import math
import sys

import numpy as np

__all__ = ["max_abs_diff", "require", "require_close", "DisagreementError"]


class DisagreementError(SystemExit):
    """Raised (exit status 1) when a benchmark's libraries disagree beyond its tolerance."""

    def __init__(self, message: str) -> None:
        super().__init__(1)
        self.message = message


def max_abs_diff(a, b) -> float:
    """The largest absolute difference between `a` and `b`: numbers, arrays, or nested dicts/lists of them.

    Dicts are compared on the keys of `a` (a key missing from `b` is infinite
    difference), lists element by element (different lengths are infinite
    difference); arrays of different shapes are infinite difference.
    """
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) - set(b):
            return math.inf
        return max((max_abs_diff(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], (dict, list, tuple, np.ndarray)):
        if len(a) != len(b):
            return math.inf
        return max(max_abs_diff(x, y) for x, y in zip(a, b))
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        return math.inf
    if x.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        d = np.atleast_1d(np.abs(x - y))
    both_inf = np.atleast_1d(np.isinf(x) & np.isinf(y) & (np.sign(x) == np.sign(y)))
    d[both_inf] = 0.0
    return float(np.nan_to_num(d, nan=math.inf).max())


def require(ok: bool, what: str) -> None:
    """Exit with status 1, printing `what`, unless `ok`."""
    if not ok:
        print(f"DISAGREEMENT: {what}; no ratio printed", file=sys.stderr, flush=True)
        raise DisagreementError(what)


def require_close(what: str, a, b, atol: float, rtol: float = 0.0) -> float:
    """Exit with status 1 unless ``|a - b| <= atol + rtol * |b|`` everywhere; return the max absolute difference.

    Parameters
    ----------
    what : str
        The workload, for the message.
    a, b : number, array or nested dict/list of them
        The two libraries' answers (the same structure).
    atol, rtol : float
        Absolute and relative tolerance (relative to the largest ``|b|``).
    """
    d = max_abs_diff(a, b)
    scale = max_abs_diff(b, _zeros_like(b)) if rtol else 0.0
    tol = atol + rtol * scale
    require(d <= tol, f"{what}: max difference {d:.3g} exceeds the tolerance {tol:.3g}")
    return d


def _zeros_like(b):
    if isinstance(b, dict):
        return {k: _zeros_like(v) for k, v in b.items()}
    if isinstance(b, (list, tuple)) and b and isinstance(b[0], (dict, list, tuple, np.ndarray)):
        return [_zeros_like(v) for v in b]
    return np.zeros_like(np.asarray(b, dtype=float))
