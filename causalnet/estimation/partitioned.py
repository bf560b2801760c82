r"""Estimation on a Dask DataFrame, partition by partition, from sufficient statistics.

Two estimators reduce to sums over rows, so they never need the whole table
in memory:

- linear **regression** (g-computation with ``Y ~ 1 + D + Z + D ⊗ M``): the
  normal equations ``XᵀX``, ``Xᵀy``, ``yᵀy`` and the target sums
  ``Σ r (x₁ − x₀)``, ``Σ r`` are added up over partitions; the estimate and its
  OLS standard error follow exactly as on a pandas frame;
- **IPW** (normalised): the logistic propensity by Newton's method, each step
  one pass that adds up the partitions' gradients and Hessians; then one pass
  for the weighted sums the estimate and its influence-function standard error
  need (``Σ h``, ``Σ h y``, ``Σ h²``, ``Σ h² y``, ``Σ h² y²`` per arm).

This path runs for ``method="regression"`` or ``"ipw"`` with ``ci="analytic"``,
a binary (two numeric values) or continuous numeric treatment and numeric
covariates (and, for regression, a linear link). Anything else — the bootstrap,
categorical columns, other methods — computes the Dask frame into pandas
first. The answers equal the pandas ones to round-off (the partition sums are
added in a different order).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from scipy import special

from ..errors import CausalNetWarning, EvidenceError, ModelError

__all__ = ["can_partition", "PartitionedData", "PartitionedEstimator"]


def can_partition(ddf, method: str, ci: str, columns: Sequence[Hashable], options: dict) -> bool:
    """Whether `ddf` (a Dask DataFrame) can be estimated partition-wise (see the module)."""
    if method not in ("regression", "ipw") or ci != "analytic":
        return False
    if options.get("model") is not None or options.get("propensity_model") is not None:
        return False
    if options.get("normalize", True) is not True or options.get("overlap") is not None:
        return False                                   # Horvitz-Thompson and overlap IPW: on the computed frame
    if method == "regression" and options.get("link", "auto") == "logistic":
        return False
    dtypes = ddf.dtypes
    return all(c in dtypes.index and dtypes[c].kind in "iuf" for c in columns)


def _sum_over_partitions(ddf, fn, *args) -> Any:
    import dask  # optional dependency, only here

    parts = [dask.delayed(fn)(part, *args) for part in ddf.to_delayed()]
    results = dask.compute(*parts)
    total = results[0]
    for r in results[1:]:
        total = {k: total[k] + r[k] for k in total} if isinstance(total, dict) else total + r
    return total


def _column_info(part, cols):
    return {"n": np.array(len(part)), "na": np.array([part[c].isna().sum() for c in cols]),
            "min": np.array([part[c].min() if len(part) else np.inf for c in cols], dtype=np.float64)}


class PartitionedData:
    """What the estimators need to know about a Dask problem: columns, contrast and row count."""

    kind = "binary"

    def __init__(self, ddf, treatment, outcome, adjust, modifiers, treated, control) -> None:
        self.ddf, self.treatment, self.outcome = ddf, treatment, outcome
        self.adjust, self.modifiers = list(adjust), list(modifiers)
        cols = [treatment, outcome, *self.adjust, *self.modifiers]
        info = _sum_over_partitions(ddf, _column_info, cols)
        bad = [c for c, k in zip(cols, info["na"]) if k]
        if bad:
            raise EvidenceError(f"the column {bad[0]!r} has missing values; estimation needs complete data")
        self.n = int(info["n"])
        levels = np.sort(ddf[treatment].drop_duplicates().head(3, npartitions=-1).to_numpy(np.float64))
        if len(levels) < 2:
            raise EvidenceError(f"the treatment {treatment!r} takes a single value in the data; an effect needs both arms")
        if len(levels) == 2:
            self.kind = "binary"
            self.treated = float(levels[-1] if treated is None else treated)
            self.control = float(levels[0] if control is None else control)
            for v, role in ((self.treated, "treated"), (self.control, "control")):
                if v not in levels:
                    raise EvidenceError(f"{role}={v!r} is not a value of the treatment {treatment!r}; "
                                        f"values: {levels.tolist()}")
        else:
            self.kind = "continuous"
            self.treated = 1.0 if treated is None else float(treated)
            self.control = 0.0 if control is None else float(control)
        self.outcome_binary = False

    def arrays(self, part) -> dict:
        """One partition's arrays: y, t, the treatment column d, covariates z, modifiers m."""
        t = part[self.treatment].to_numpy(np.float64)
        d = (t == self.treated).astype(np.float64) if self.kind == "binary" else t
        z = part[self.adjust].to_numpy(np.float64).reshape(len(part), len(self.adjust))
        m = part[self.modifiers].to_numpy(np.float64).reshape(len(part), len(self.modifiers))
        return {"y": part[self.outcome].to_numpy(np.float64), "d": d, "z": z, "m": m,
                "a1": d if self.kind == "binary" else None}

    def target(self, arr: dict, estimand: str) -> np.ndarray:
        if estimand in ("ate", "cate"):
            return np.ones(len(arr["y"]))
        if self.kind != "binary":
            raise ModelError(f"estimand={estimand!r} needs a discrete treatment; {self.treatment!r} is continuous")
        return arr["a1"] if estimand == "att" else 1.0 - arr["a1"]


def _design(arr: dict, d: np.ndarray) -> np.ndarray:
    inter = d[:, None] * arr["m"]                                                  # (n, km)
    return np.column_stack([np.ones(len(d)), d, arr["z"], inter])                 # (n, 2+kz+km)


def _regression_stats(part, data: PartitionedData, estimand: str) -> dict:
    arr = data.arrays(part)
    x = _design(arr, arr["d"])
    n = len(arr["y"])
    levels = (1.0, 0.0) if data.kind == "binary" else (data.treated, data.control)   # the d column's values
    diff = _design(arr, np.full(n, levels[0])) - _design(arr, np.full(n, levels[1]))
    r = data.target(arr, estimand)
    return {"xtx": x.T @ x, "xty": x.T @ arr["y"], "yty": np.array(arr["y"] @ arr["y"]),
            "rdiff": r @ diff, "r": np.array(r.sum())}


def _logistic_step(part, data: PartitionedData, beta: np.ndarray) -> dict:
    arr = data.arrays(part)
    xz = np.column_stack([np.ones(len(arr["y"])), arr["z"]])                      # (n, 1+kz)
    p = special.expit(xz @ beta)
    return {"grad": xz.T @ (arr["a1"] - p), "hess": (xz * (p * (1 - p))[:, None]).T @ xz}


def _ipw_stats(part, data: PartitionedData, beta: np.ndarray, estimand: str, lo: float) -> dict:
    arr = data.arrays(part)
    xz = np.column_stack([np.ones(len(arr["y"])), arr["z"]])
    e1 = np.clip(special.expit(xz @ beta), lo, 1 - lo)
    e0 = np.clip(1.0 - special.expit(xz @ beta), lo, 1 - lo)
    rho = {"ate": 1.0, "att": e1, "atc": e0}[estimand]
    y, a1 = arr["y"], arr["a1"]
    out = {}
    for arm, (a, e) in enumerate(((a1, e1), (1 - a1, e0))):
        h = a * rho / e
        out.update({f"h{arm}": np.array(h.sum()), f"hy{arm}": np.array(h @ y), f"hh{arm}": np.array(h @ h),
                    f"hhy{arm}": np.array((h * h) @ y), f"hhyy{arm}": np.array((h * h) @ (y * y))})
        used = e[a > 0]
        out[f"min{arm}"] = np.array(used.min() if len(used) else np.inf)
        out[f"low{arm}"] = np.array((used < 0.01).sum())
    return out


class PartitionedEstimator:
    """Regression or IPW from partition sums; the interface :func:`causalnet.estimate` reads (analytic only)."""

    default_ci = "analytic"
    bootstrap_warning = None
    has_analytic = True

    def __init__(self, name: str, data: PartitionedData, estimand: str, options: dict) -> None:
        if name == "ipw" and data.kind != "binary":
            raise ModelError(f"method 'ipw' needs a discrete treatment; {data.treatment!r} is continuous "
                             f"(use method='regression')")
        self.name, self.prep, self.estimand, self.options = name, data, estimand, options
        self.means, self.effects, self.diagnostics = None, None, {"partitions": int(data.ddf.npartitions)}

    def analytic(self) -> tuple[float, float]:
        return self._regression() if self.name == "regression" else self._ipw()

    def _regression(self) -> tuple[float, float]:
        s = _sum_over_partitions(self.prep.ddf, _regression_stats, self.prep, self.estimand)
        beta = np.linalg.solve(s["xtx"], s["xty"])
        grad = s["rdiff"] / s["r"]
        rss = s["yty"] - 2 * beta @ s["xty"] + beta @ s["xtx"] @ beta
        dof = self.prep.n - np.linalg.matrix_rank(s["xtx"])
        cov = rss / dof * np.linalg.pinv(s["xtx"])
        return float(grad @ beta), float(np.sqrt(max(grad @ cov @ grad, 0.0)))

    def _ipw(self) -> tuple[float, float]:
        data, k = self.prep, 1 + len(self.prep.adjust)
        beta = np.zeros(k)
        for _ in range(100):
            s = _sum_over_partitions(data.ddf, _logistic_step, data, beta)
            d = 1.0 / np.sqrt(np.diag(s["hess"]) + 1e-300)                     # Jacobi scaling, as linear.py
            step = d * np.linalg.solve(s["hess"] * d[:, None] * d[None, :], s["grad"] * d)
            beta = beta + step
            if np.max(np.abs(step)) < 1e-12:
                break
        trim = self.options.get("trim") or 0.0
        if not 0.0 <= trim < 0.5:
            raise ModelError(f"trim must be in [0, 0.5), got {trim!r}")
        s = _sum_over_partitions(data.ddf, _ipw_stats, data, beta, self.estimand, max(trim, 1e-12))
        low = int(s["low0"] + s["low1"])
        smallest = float(min(s["min0"], s["min1"]))
        self.diagnostics["min_propensity"] = smallest
        if low:
            warnings.warn(f"{low} rows have a propensity below 0.01 for the arm they are in (smallest "
                          f"{smallest:.2g}): their inverse weights dominate the estimate; consider trim= or "
                          f"a different adjustment set", CausalNetWarning, stacklevel=4)
        m = [s[f"hy{a}"] / s[f"h{a}"] for a in (0, 1)]
        self.means = np.array(m)
        n = data.n
        var = 0.0
        for a in (0, 1):                    # Σ h²(y − m)² / (Σh / n)², the arms' rows do not overlap
            ss = s[f"hhyy{a}"] - 2 * m[a] * s[f"hhy{a}"] + m[a] ** 2 * s[f"hh{a}"]
            var += ss / (s[f"h{a}"] / n) ** 2
        return float(m[0] - m[1]), float(np.sqrt(var / n / n))
