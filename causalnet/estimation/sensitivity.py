r"""Sensitivity to an unobserved confounder: E-values and partial R² bounds.

**E-value** (VanderWeele & Ding 2017): the minimum strength of association, on
the risk-ratio scale, that an unobserved confounder would need with both the
treatment and the outcome to explain away an observed risk ratio RR:
``E = RR + sqrt(RR (RR − 1))`` (for RR < 1 use 1/RR). For a 0/1 outcome RR is
the ratio of the two potential-outcome means; for a continuous outcome the
effect is first put on the standardised-mean-difference scale,
``d = effect / sd(Y)``, and ``RR ≈ exp(0.91 d)`` (VanderWeele & Ding's
approximation). The E-value of the interval is that of its limit nearer to the
null (1 when the interval crosses it).

**Partial R²** (Cinelli & Hazlett 2020), for the linear regression
``Y ~ 1 + T + Z`` with treatment t-statistic ``t`` on ``dof`` residual degrees of freedom:

- ``R²_{Y~T|Z} = t² / (t² + dof)``: a confounder explaining all the residual
  variance of Y would need to explain this much of T's to remove the estimate;
- the robustness value ``RV_q = ½ (sqrt(f⁴ + 4 f²) − f²)`` with ``f = q |t| / sqrt(dof)``:
  a confounder explaining at least ``RV_q`` of the residual variance of both T and Y
  reduces the estimate by ``100 q`` %; ``RV_{q,α}`` the same for losing
  significance at level α;
- benchmarks: an observed covariate X_j bounds a confounder ``k`` times as
  strong as it, giving ``R²_{T~U|Z}``, ``R²_{Y~U|T,Z}`` and the adjusted estimate.

References
----------
.. [1] T. J. VanderWeele, P. Ding, "Sensitivity analysis in observational
       research: introducing the E-value", Annals of Internal Medicine 167, 2017.
.. [2] C. Cinelli, C. Hazlett, "Making sense of sensitivity: extending omitted
       variable bias", JRSS-B 82(1), 2020.

Examples
--------
>>> round(e_value(3.9), 3)
7.263
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from .linear import weighted_least_squares
from .prepare import as_frame, encode

__all__ = ["Sensitivity", "sensitivity_analysis", "e_value", "robustness_value", "partial_r2_bounds",
           "adjusted_estimate"]


def e_value(rr: float) -> float:
    """The E-value of a risk ratio: ``RR + sqrt(RR (RR − 1))`` after folding RR < 1 to 1/RR."""
    rr = float(rr)
    if not rr > 0:
        raise ModelError(f"a risk ratio must be positive, got {rr!r}")
    rr = 1.0 / rr if rr < 1 else rr
    return float(rr + np.sqrt(rr * (rr - 1.0)))


def robustness_value(t: float, dof: int, q: float = 1.0, alpha: float | None = None) -> float:
    """Cinelli & Hazlett's robustness value ``RV_q`` (``RV_{q,α}`` when `alpha` is given)."""
    from scipy import stats  # heavy import, only here

    f = q * abs(t) / np.sqrt(dof)
    if alpha is not None:
        f_crit = abs(stats.t.ppf(alpha / 2, dof - 1)) / np.sqrt(dof - 1)
        fqa = f - f_crit
        if fqa <= 0:
            return 0.0
        if f > 1 / f_crit:                                     # the bound reaches R² = 1 on one side
            return float((f ** 2 - f_crit ** 2) / (1 + f ** 2))
        f = fqa
    return float(0.5 * (np.sqrt(f ** 4 + 4 * f ** 2) - f ** 2))


def partial_r2_bounds(r2dxj: float, r2yxj: float, kd: float = 1.0, ky: float | None = None) -> tuple[float, float]:
    """Bounds (R²_{T~U|Z}, R²_{Y~U|T,Z}) on a confounder `kd` / `ky` times as strong as a covariate X_j.

    Parameters
    ----------
    r2dxj : float
        Partial R² of X_j with the treatment given the other covariates.
    r2yxj : float
        Partial R² of X_j with the outcome given the treatment and the other covariates.
    """
    ky = kd if ky is None else ky
    r2dz = kd * r2dxj / (1 - r2dxj)
    if r2dz >= 1:
        raise ModelError(f"kd={kd} times covariate strength gives R²_(T~U|Z) >= 1; choose a smaller kd")
    r2zxj = kd * r2dxj ** 2 / ((1 - kd * r2dxj) * (1 - r2dxj))
    r2yz = ((np.sqrt(ky) + np.sqrt(r2zxj)) / np.sqrt(1 - r2zxj)) ** 2 * (r2yxj / (1 - r2yxj))
    if r2yz >= 1:
        raise ModelError(f"ky={ky} times covariate strength gives R²_(Y~U|T,Z) >= 1; choose a smaller ky")
    return float(r2dz), float(r2yz)


class Sensitivity:
    """A sensitivity analysis: its numbers (``values``), a verdict, and benchmark rows (``table``)."""

    def __init__(self, method: str, values: dict, verdict: str, table=None) -> None:
        self.method, self.values, self.verdict, self.table = method, dict(values), verdict, table

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)

    def __str__(self) -> str:
        nums = ", ".join(f"{k} = {v:.4g}" for k, v in self.values.items() if isinstance(v, float))
        return f"{self.method}: {nums}\n  {self.verdict}"

    def plot(self, ax=None, *, limit: float | None = None, levels: int = 12):
        """A contour plot (matplotlib): the estimate a confounder of given strength would leave.

        - ``"partial-r2"``: the adjusted estimate over the partial R² of a
          confounder with the treatment (x) and with the outcome (y), as in
          Cinelli & Hazlett's figure 2; the zero contour is drawn red and the
          benchmarks of the table marked;
        - ``"e-value"``: the bias factor ``RR_UD RR_UY / (RR_UD + RR_UY − 1)``
          over the confounder's risk ratios with treatment (x) and outcome (y);
          the red contour is the observed risk ratio (the confounders that
          explain it away), the E-value marked on the diagonal.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        limit : float, optional
            Upper end of both axes (partial R² below 1; risk ratios above 1).
        levels : int

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt  # optional dependency, only here

        fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 4.5))
        if self.method == "partial-r2":
            _plot_partial_r2(ax, self, 0.4 if limit is None else limit, levels)
        else:
            _plot_e_value(ax, self, limit, levels)
        return fig

    def to_pandas(self):
        """The benchmark table when there is one, else the values as one row."""
        import pandas as pd

        return self.table if self.table is not None else pd.DataFrame([self.values])


def adjusted_estimate(estimate: float, std_err: float, dof: float, r2dz, r2yz):
    """Cinelli & Hazlett's estimate after removing a confounder with partial R² `r2dz` (treatment), `r2yz` (outcome)."""
    bias = std_err * np.sqrt(dof) * np.sqrt(np.asarray(r2yz) * np.asarray(r2dz) / (1 - np.asarray(r2dz)))
    return np.sign(estimate) * (abs(estimate) - bias)


def _plot_partial_r2(ax, sens: Sensitivity, limit: float, levels: int) -> None:
    if not 0 < limit < 1:
        raise ModelError(f"limit must be in (0, 1) for partial R², got {limit!r}")
    grid = np.linspace(0, limit, 101)
    gx, gy = np.meshgrid(grid, grid)                                           # (101, 101)
    est = adjusted_estimate(sens.values["estimate"], sens.values["std_err"], sens.values["dof"], gx, gy)
    cs = ax.contour(gx, gy, est, levels=levels, colors="0.3", linewidths=0.8)
    ax.clabel(cs, fontsize=7)
    if est.min() < 0 < est.max() or est.min() > 0 > est.max():
        ax.contour(gx, gy, est, levels=[0.0], colors="red", linewidths=1.5, linestyles="--")
    if sens.table is not None:
        for row in sens.table.itertuples():
            ax.plot(row.r2dz_x, row.r2yz_dx, "r^")
            ax.annotate(f"{row.kd:g}x {row.benchmark}", (row.r2dz_x, row.r2yz_dx), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("partial R² of confounder with treatment")
    ax.set_ylabel("partial R² of confounder with outcome")
    ax.set_title(f"adjusted estimate (unadjusted {sens.values['estimate']:.3g})")


def _plot_e_value(ax, sens: Sensitivity, limit: float | None, levels: int) -> None:
    rr = max(sens.values["rr"], 1 / sens.values["rr"])
    top = 2 * sens.values["e_value"] if limit is None else float(limit)
    if not top > 1:
        raise ModelError(f"limit must be above 1 for risk ratios, got {limit!r}")
    grid = np.linspace(1, top, 121)
    gx, gy = np.meshgrid(grid, grid)
    bias = gx * gy / (gx + gy - 1)                                              # (121, 121)
    cs = ax.contour(gx, gy, bias, levels=levels, colors="0.3", linewidths=0.8)
    ax.clabel(cs, fontsize=7)
    if bias.max() > rr:
        ax.contour(gx, gy, bias, levels=[rr], colors="red", linewidths=1.5)
    ev = sens.values["e_value"]
    ax.plot([ev], [ev], "ro")
    ax.annotate(f"E-value {ev:.3g}", (ev, ev), fontsize=8, xytext=(4, -10), textcoords="offset points")
    ax.set_xlabel("risk ratio of confounder with treatment")
    ax.set_ylabel("risk ratio of confounder with outcome")
    ax.set_title(f"bias factor (observed risk ratio {rr:.3g})")


def _evalue(effect) -> Sensitivity:
    frame = as_frame(effect.sensitivity_data["frame"])
    y = frame[effect.outcome].to_numpy(np.float64)
    binary = bool(np.isin(y, (0.0, 1.0)).all())
    lo, hi = effect.ci
    if binary and effect.means is not None and min(effect.means) > 0:
        m1, m0 = effect.means
        rr, rr_lo, rr_hi = m1 / m0, (m0 + lo) / m0, (m0 + hi) / m0
        scale = "risk ratio"
    else:
        sd = float(np.std(y, ddof=1))
        rr, rr_lo, rr_hi = (float(np.exp(0.91 * v / sd)) for v in (effect.value, lo, hi))
        scale = "risk ratio ≈ exp(0.91 d), d = effect / sd(Y)"
    ev = e_value(rr)
    ev_ci = 1.0 if (rr_lo <= 1 <= rr_hi) else e_value(rr_lo if abs(np.log(rr_lo)) < abs(np.log(rr_hi)) else rr_hi)
    verdict = (f"an unobserved confounder associated with both {effect.treatment!r} and {effect.outcome!r} by a "
               f"risk ratio of {ev:.3g} each could explain the estimate away; {ev_ci:.3g} each could move the "
               f"interval to include no effect")
    return Sensitivity("e-value", {"rr": float(rr), "rr_ci_low": float(rr_lo), "rr_ci_high": float(rr_hi),
                                   "e_value": float(ev), "e_value_ci": float(ev_ci), "scale": scale}, verdict)


def _ols_t(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(coefficients, t-statistics, residual dof) of OLS."""
    beta = weighted_least_squares(x, y, np.ones((1, len(y))))[0]
    dof = len(y) - x.shape[1]
    resid = y - x @ beta
    cov = resid @ resid / dof * np.linalg.pinv(x.T @ x)
    return beta, beta / np.sqrt(np.diag(cov)), dof


def _partial_r2(effect, benchmark, q: float, alpha: float, kd: float, ky: float | None) -> Sensitivity:
    frame = as_frame(effect.sensitivity_data["frame"])
    zs = sorted(effect.adjustment_set, key=str)
    z, names = encode(frame, zs, "adjustment")
    d, _ = encode(frame, [effect.treatment], "treatment")
    if d.shape[1] != 1:
        raise ModelError("partial-R² sensitivity needs a binary or continuous treatment (one regression column)")
    y = frame[effect.outcome].to_numpy(np.float64)
    x = np.column_stack([np.ones(len(y)), d, z])
    beta, t, dof = _ols_t(x, y)
    est, se = beta[1], beta[1] / t[1]
    values = {"estimate": float(est), "std_err": float(se), "t": float(t[1]), "dof": float(dof),
              "partial_r2_yd": float(t[1] ** 2 / (t[1] ** 2 + dof)),
              "rv_q": robustness_value(t[1], dof, q), "rv_qa": robustness_value(t[1], dof, q, alpha)}
    table = None
    if benchmark is not None:
        table = _benchmarks(benchmark, names, zs, d[:, 0], z, y, (est, se, dof, t), kd, ky)
    verdict = (f"a confounder explaining {values['rv_q']:.1%} of the residual variance of both treatment and "
               f"outcome would remove the estimate; {values['rv_qa']:.1%} would make it insignificant at "
               f"{alpha:g}")
    return Sensitivity("partial-r2", values, verdict, table)


def _benchmarks(benchmark, names, zs, d, z, y, fit, kd, ky):
    import pandas as pd

    est, se, dof, t_out = fit
    if isinstance(benchmark, str) or not isinstance(benchmark, (list, tuple, set, frozenset)):
        bench = [benchmark]          # one column name (a str, or any other hashable column label)
    else:
        bench = list(benchmark)
    xd = np.column_stack([np.ones(len(d)), z])
    _, t_d, dof_d = _ols_t(xd, d)
    rows = []
    for b in bench:
        cols = [i for i, nm in enumerate(names) if nm == str(b) or nm.startswith(f"{b}[")]
        if len(cols) != 1:
            raise ModelError(f"benchmark {b!r} must be one numeric column of the adjustment set {zs}")
        j = cols[0]
        r2dxj = t_d[1 + j] ** 2 / (t_d[1 + j] ** 2 + dof_d)
        r2yxj = t_out[2 + j] ** 2 / (t_out[2 + j] ** 2 + dof)
        r2dz, r2yz = partial_r2_bounds(r2dxj, r2yxj, kd, ky)
        adj = float(adjusted_estimate(est, se, dof, r2dz, r2yz))
        adj_se = se * np.sqrt((1 - r2yz) / (1 - r2dz)) * np.sqrt(dof / (dof - 1))
        rows.append({"benchmark": str(b), "kd": kd, "ky": kd if ky is None else ky, "r2dz_x": r2dz, "r2yz_dx": r2yz,
                     "adjusted_estimate": float(adj), "adjusted_se": float(adj_se), "adjusted_t": float(adj / adj_se)})
    return pd.DataFrame(rows)


def sensitivity_analysis(effect, method: str = "e-value", *, benchmark=None, q: float = 1.0, alpha: float = 0.05,
                         kd: float = 1.0, ky: float | None = None) -> Sensitivity:
    """Sensitivity of `effect` to an unobserved confounder.

    Parameters
    ----------
    effect : Effect
    method : {"e-value", "partial-r2"}
    benchmark : column or list of columns, optional
        Observed covariates (in the adjustment set) to bound a confounder by (``"partial-r2"``).
    q : float
        Share of the estimate a confounder would remove (robustness value).
    alpha : float
        Significance level of ``RV_{q,α}``.
    kd, ky : float
        A confounder `kd` (`ky`) times as strong as the benchmark in explaining T (Y).

    Returns
    -------
    Sensitivity
    """
    if method == "e-value":
        return _evalue(effect)
    if method == "partial-r2":
        return _partial_r2(effect, benchmark, q, alpha, kd, ky)
    raise ModelError(f"sensitivity method must be 'e-value' or 'partial-r2', got {method!r}")
