"""Validation of the result objects' contents: a distribution's numbers before it is built.

Every result constructor (:mod:`causalnet.distributions.results`, :mod:`.cauchy`) runs
these checks so that no result holds what no distribution can be: probabilities below
0 or not summing to 1, a covariance that is not positive semidefinite, weights that are
not normalised; and every density or cdf refuses NaN points (issue 31: NaN is never an
answer to NaN). Each raises the library's own error naming the owner, the argument and
the value given.

>>> check_probs(("A",), np.array([0.5, 0.6]), False, (2,))
Traceback (most recent call last):
...
causalnet.errors.ModelError: DiscreteDistribution over ['A']: probs must sum to 1, got 1.1
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import EvidenceError, ModelError

__all__ = ["SUM_TOL", "as_points", "float_array", "short_repr", "check_probs", "check_moments"]

SUM_TOL = 1e-6
"""How far a distribution's probabilities may sum from 1 (per row) and dip below 0 (rounding)."""


def as_points(x: Any, what: str) -> np.ndarray:
    """`x` as a float array of points at which to evaluate a density or cdf; NaN refused.

    Infinities are legal points (a cdf is 0 or 1 there, a log density -inf).

    Raises
    ------
    EvidenceError
        Naming `what`, if `x` is not numeric or holds NaN (as the query front door refuses NaN evidence).
    """
    if isinstance(x, (str, bytes)) or (isinstance(x, np.ndarray) and x.dtype.kind not in "biuf"):
        raise EvidenceError(f"{what}: points must be real numbers, got {short_repr(x)}")
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise EvidenceError(f"{what}: points must be real numbers, got {short_repr(x)}") from None
    if np.isnan(a).any():
        raise EvidenceError(f"{what}: points hold NaN ({int(np.isnan(a).sum())} of {a.size}); "
                            f"give real numbers (drop or impute the missing values)")
    return a


def float_array(x: Any, owner: str, what: str) -> np.ndarray:
    """`x` as a float64 array, or a ModelError naming `owner` and the argument `what`."""
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"{owner}: {what} must be a rectangular array of real numbers, got {short_repr(x)}") from None


def short_repr(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check_probs(variables: tuple, probs: np.ndarray, batched: bool, cards: tuple) -> None:
    """Refuse probabilities of the wrong shape, negative, or not summing to 1 (per row)."""
    got = probs.shape[1:] if batched else probs.shape
    if got != cards or (batched and probs.ndim == 0):
        lead = "(n, " if batched else "("
        raise ModelError(f"DiscreteDistribution over {list(variables)}: probs must have shape {lead}"
                         f"{', '.join(map(str, cards))}{',' if len(cards) == 1 and not batched else ''}) for "
                         f"states of sizes {cards}, got {probs.shape}")
    if probs.dtype.kind != "f" or not probs.size:
        return
    if batched:                                                         # one pass per reduction over every row
        flat = probs.reshape(probs.shape[0], -1)
        low, totals = float(flat.min()), flat.sum(axis=1)
    else:                                                               # two reductions, then Python floats
        low, totals = float(probs.min()), None
        total = float(probs.sum())
    if not math.isfinite(low):
        return                                                          # NaN/inf: _finite names them
    if low < -SUM_TOL:
        raise ModelError(f"DiscreteDistribution over {list(variables)}: probs must be >= 0, got {low!r}")
    if totals is None:
        if abs(total - 1.0) > SUM_TOL:
            raise ModelError(f"DiscreteDistribution over {list(variables)}: probs must sum to 1, got {total!r}")
        return
    off = np.abs(totals - 1.0)
    if not np.isfinite(off).all() or float(off.max()) <= SUM_TOL:
        return
    i = int(np.argmax(off))
    raise ModelError(f"DiscreteDistribution over {list(variables)}: probs must sum to 1 in row {i}, "
                     f"got {float(totals[i])!r}")


def check_moments(owner: str, variables: tuple, mean: np.ndarray, cov: np.ndarray, batched: bool) -> None:
    """Refuse a mean or covariance of the wrong shape, an asymmetric or not positive semidefinite covariance."""
    d = len(variables)
    want = "(n, d)" if batched else "(d,)"
    if mean.ndim != (2 if batched else 1) or mean.shape[-1] != d:
        raise ModelError(f"{owner}: mean must have shape {want} with d={d}, got {mean.shape}")
    if cov.shape != (d, d):
        raise ModelError(f"{owner}: cov must have shape (d, d) with d={d}, got {cov.shape}")
    if not d:
        return
    scale = max(float(np.max(np.abs(cov))), 1.0)
    if not np.allclose(cov, cov.T, rtol=1e-8, atol=1e-10 * scale):
        raise ModelError(f"{owner}: cov must be symmetric, got a largest asymmetry "
                         f"{float(np.max(np.abs(cov - cov.T)))!r}")
    var = np.diag(cov)
    if float(var.min()) < -1e-8 * scale:                                  # rounding of a conditioned cov is legal
        i = int(np.argmin(var))
        raise ModelError(f"{owner}: the variance of {variables[i]!r} must be >= 0, got {float(var[i])!r}")
    low = float(np.linalg.eigvalsh(cov).min())
    if low < -1e-8 * scale:
        raise ModelError(f"{owner}: cov must be positive semidefinite, got an eigenvalue {low!r}")
