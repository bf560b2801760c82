"""The result of :func:`causalnet.estimate`: an effect with its uncertainty and provenance.

An :class:`Effect` names the question it answers (``str(effect)`` starts with
``E[Y | do(T=1)] - E[Y | do(T=0)]``), the number, its confidence interval,
standard error and p-value (for the null hypothesis of no effect), how it was
estimated (method, identified formula, adjustment set, rows) and offers the
checks that come after an estimate: :meth:`Effect.refute` and
:meth:`Effect.sensitivity`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from .refute import Refutation, refute_effect
from .sensitivity import Sensitivity, sensitivity_analysis

__all__ = ["Effect", "question"]

_TARGET = {"ate": "", "cate": "", "att": "treated", "atc": "control"}


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def question(outcome: Hashable, treatment: Hashable, treated: Any, control: Any, estimand: str = "ate") -> str:
    """The contrast in words, e.g. ``E[Y | do(T=1)] - E[Y | do(T=0)]`` (with ``, T=1`` for the ATT)."""
    y = str(outcome)
    if isinstance(treatment, (list, tuple)):                  # a regime over time
        def regime(levels):
            return ", ".join(f"{a}={_fmt(v)}" for a, v in zip(treatment, levels))
        return f"E[{y} | do({regime(treated)})] - E[{y} | do({regime(control)})]"
    t = str(treatment)
    cond = ""
    if estimand == "att":
        cond = f", {t}={_fmt(treated)}"
    elif estimand == "atc":
        cond = f", {t}={_fmt(control)}"
    return f"E[{y} | do({t}={_fmt(treated)}){cond}] - E[{y} | do({t}={_fmt(control)}){cond}]"


class Effect:
    """An estimated causal effect.

    Attributes
    ----------
    value : float
        The estimate of ``E[Y | do(T=treated)] − E[Y | do(T=control)]`` over
        the target population (all rows, the treated or the controls).
    ci : tuple of float
        ``(low, high)``: percentile bootstrap or normal (analytic) interval.
    std_err : float
    p_value : float
        Two-sided, for the null hypothesis of no effect (normal reference).
    method : str
        The estimator's name, one of :data:`causalnet.estimation.METHODS` (``"aipw"``, ``"matching"``, ...).
    estimand : str
        The identified formula that was estimated, e.g. ``Σ_{Z} P(Z) P(Y | T, Z)``.
    target : {"ate", "att", "atc", "cate"}
    adjustment_set : frozenset
    n : int
        Rows used.
    treatment, outcome, treated, control
        The question.
    confidence : float
        Level of the interval.
    ci_method : {"bootstrap", "analytic"}
        The interval actually computed (``ci="auto"`` resolved).
    replicates : ndarray of shape (B,) or None
        The bootstrap estimates.
    effects : ndarray of shape (n,) or None
        Per-row effects (CATE) when the method gives them (regression, the meta-learners).
    means : ndarray of shape (2,) or None
        The target means of Y under treated and control, when available.
    diagnostics : dict
        E.g. ``first_stage_F`` and ``instrument`` for IV, ``min_propensity``.
    analytic_available : bool
        Whether the method, as configured, has an analytic standard error
        (refutations re-estimate with it when it has, else with a two-replicate bootstrap).
    """

    def __init__(self, *, value: float, ci: tuple, std_err: float, p_value: float, method: str, estimand: str,
                 target: str, adjustment_set: frozenset, n: int, treatment: Hashable, outcome: Hashable,
                 treated: Any, control: Any, confidence: float, ci_method: str, replicates=None, effects=None,
                 means=None, diagnostics: dict | None = None, rerun: Callable[..., Effect] | None = None,
                 sensitivity_data: dict | None = None, analytic_available: bool = True) -> None:
        self.value, self.ci, self.std_err, self.p_value = float(value), tuple(map(float, ci)), float(std_err), \
            float(p_value)
        self.method, self.estimand, self.target = method, estimand, target
        self.adjustment_set, self.n = frozenset(adjustment_set), int(n)
        self.treatment, self.outcome, self.treated, self.control = treatment, outcome, treated, control
        self.confidence, self.ci_method = confidence, ci_method
        self.replicates, self.effects, self.means = replicates, effects, means
        self.diagnostics = dict(diagnostics or {})
        self.rerun = rerun
        self.sensitivity_data = dict(sensitivity_data or {})
        self.analytic_available = bool(analytic_available)

    @property
    def question(self) -> str:
        """The contrast estimated, e.g. ``E[Y | do(T=1)] - E[Y | do(T=0)]``."""
        return question(self.outcome, self.treatment, self.treated, self.control, self.target)

    def __str__(self) -> str:
        adj = ", ".join(sorted(map(str, self.adjustment_set))) or "nothing"
        lo, hi = self.ci
        return (f"{self.target.upper()} {self.question} = {self.value:.4g} "
                f"({self.confidence:.0%} CI {lo:.4g} to {hi:.4g}; std. err. {self.std_err:.3g}; p = {self.p_value:.3g})\n"
                f"  {self.method}, n = {self.n}, adjusting for {adj}; {self.ci_method} interval\n"
                f"  estimand: {self.estimand}")

    def __repr__(self) -> str:
        return f"<Effect {self.question} = {self.value:.4g} [{self.ci[0]:.4g}, {self.ci[1]:.4g}] ({self.method})>"

    def as_dict(self) -> dict:
        """The row :meth:`to_pandas` shows, as a dict."""
        return {"question": self.question, "estimand": self.target, "value": self.value, "std_err": self.std_err,
                "ci_low": self.ci[0], "ci_high": self.ci[1], "p_value": self.p_value, "method": self.method,
                "n": self.n, "adjustment_set": sorted(map(str, self.adjustment_set)), "formula": self.estimand}

    def to_pandas(self):
        """A one-row DataFrame of :meth:`as_dict`."""
        import pandas as pd

        return pd.DataFrame([self.as_dict()])

    def refute(self, method: str = "placebo-treatment", **options) -> Refutation:
        """Re-estimate under a change that should (or should not) move the estimate; see :func:`causalnet.refute`."""
        return refute_effect(self, method, **options)

    def sensitivity(self, method: str = "e-value", benchmark=None, **options) -> Sensitivity:
        """How strong an unobserved confounder would have to be; see :mod:`causalnet.estimation.sensitivity`."""
        return sensitivity_analysis(self, method, benchmark=benchmark, **options)
