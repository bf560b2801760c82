"""Refutations: re-estimate under a change whose effect on the estimate is known.

Each refuter repeats the estimation ``n_simulations`` times on altered data
(point estimates only, same method and adjustment) and compares:

- ``"placebo-treatment"``: the treatment column randomly permuted. A placebo
  has no effect, so the original estimate should stand out: the p-value is the
  permutation p-value ``(1 + #{|placebo| >= |original|}) / (1 + S)``; the
  estimate passes when it is below `alpha`.
- ``"dummy-outcome"``: the outcome replaced by independent standard normal
  noise. The estimates should centre on 0: the p-value is the two-sided normal
  test of their mean; passes when it is at least `alpha`.
- ``"random-common-cause"``: an independent random covariate added to the
  graph (a parent of treatment and outcome) and to the adjustment set;
  ``"data-subset"``: random subsets of ``fraction`` of the rows;
  ``"bootstrap"``: resamples with replacement. The estimate should not move:
  the p-value is the two-sided rank of the original among the new estimates,
  ``2 min(P(new <= original), P(new >= original))``; passes when it is at least `alpha`.

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(1)
>>> z = rng.normal(size=500); t = (z + rng.normal(size=500) > 0).astype(int); y = t + z + rng.normal(size=500)
>>> e = cn.estimate("Z -> T -> Y; Z -> Y", pd.DataFrame({"Z": z, "T": t, "Y": y}), "T", "Y",
...                 method="regression", ci="analytic")
>>> r = e.refute("placebo-treatment", n_simulations=30, seed=0)
>>> r.passed
True
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import special

from ..errors import CausalNetWarning, ModelError
from ..graph.dag import DAG
from .prepare import as_frame

__all__ = ["Refutation", "refute_effect", "REFUTERS"]

REFUTERS = ("placebo-treatment", "random-common-cause", "data-subset", "bootstrap", "dummy-outcome")


class Refutation:
    """The outcome of one refutation.

    Attributes
    ----------
    method : str
    original : float
        The estimate refuted.
    new_value : float
        The mean of the new estimates.
    simulations : ndarray of shape (S,)
    p_value : float
    passed : bool
    verdict : str
        One line.
    """

    def __init__(self, method: str, original: float, simulations: np.ndarray, p_value: float, passed: bool,
                 verdict: str) -> None:
        self.method, self.original, self.simulations = method, float(original), np.asarray(simulations)
        self.new_value = float(self.simulations.mean())
        self.p_value, self.passed, self.verdict = float(p_value), bool(passed), verdict

    def __str__(self) -> str:
        return (f"{self.method}: estimate {self.original:.4g}, new {self.new_value:.4g} "
                f"(p = {self.p_value:.3g}) - {self.verdict}")

    def __repr__(self) -> str:
        return f"<Refutation {self}>"

    def to_pandas(self):
        """A one-row DataFrame."""
        import pandas as pd

        return pd.DataFrame([{"method": self.method, "original": self.original, "new_value": self.new_value,
                              "p_value": self.p_value, "passed": self.passed, "verdict": self.verdict}])


def _point(effect, data, **changes) -> float:
    """The effect re-estimated on `data` (point only: analytic when the method has it)."""
    ci = "analytic" if effect.analytic_available else "bootstrap"    # bootstrap: two replicates, the point is used
    opts = {"ci": ci, "n_bootstrap": 2, **changes}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CausalNetWarning)
        return effect.rerun(data, seed=0, **opts).value


def _rank_p(sims: np.ndarray, original: float) -> float:
    s = len(sims)
    lo = (1 + np.sum(sims <= original)) / (s + 1)
    hi = (1 + np.sum(sims >= original)) / (s + 1)
    return float(min(1.0, 2 * min(lo, hi)))


def _with_random_cause(effect, frame, rng, name: str) -> tuple[Any, Any]:
    dag = effect.sensitivity_data["dag"]
    edges = list(dag.edges) + [(name, effect.treatment), (name, effect.outcome)]
    graph = DAG(edges, latent=dag.latent)
    data = frame.assign(**{name: rng.normal(size=len(frame))})
    return graph, data


def refute_effect(effect, method: str = "placebo-treatment", *, n_simulations: int = 100, fraction: float = 0.8,
                  alpha: float = 0.05, seed: Any = None) -> Refutation:
    """Refute `effect` by `method` (see the module); the result has a p-value and a one-line verdict.

    Parameters
    ----------
    effect : Effect
    method : {"placebo-treatment", "random-common-cause", "data-subset", "bootstrap", "dummy-outcome"}
    n_simulations : int
    fraction : float
        Share of rows kept by ``"data-subset"``.
    alpha : float
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    Refutation
    """
    if method not in REFUTERS:
        raise ModelError(f"refutation method must be one of {list(REFUTERS)}, got {method!r}")
    if not isinstance(n_simulations, (int, np.integer)) or n_simulations < 2:
        raise ModelError(f"n_simulations must be an int >= 2, got {n_simulations!r}")
    if not 0 < fraction < 1:
        raise ModelError(f"fraction must be in (0, 1), got {fraction!r}")
    if effect.rerun is None:
        raise ModelError("this Effect cannot be re-estimated (it was not made by causalnet.estimate)")
    if isinstance(effect.treatment, (list, tuple)):
        raise ModelError(f"refutation re-estimates with one treatment column altered; the effect of the regime "
                         f"{list(effect.treatment)} has several (refute each step's estimate instead)")
    rng = np.random.default_rng(seed)
    frame = as_frame(effect.sensitivity_data["frame"])
    n, t, y = len(frame), effect.treatment, effect.outcome
    sims = np.empty(n_simulations)
    for i in range(n_simulations):
        if method == "placebo-treatment":
            sims[i] = _point(effect, frame.assign(**{t: rng.permutation(frame[t].to_numpy())}))
        elif method == "dummy-outcome":
            sims[i] = _point(effect, frame.assign(**{y: rng.normal(size=n)}))
        elif method == "random-common-cause":
            name = "_random_common_cause"
            graph, data = _with_random_cause(effect, frame, rng, name)
            sims[i] = _point(effect, data, graph=graph, adjust=frozenset(effect.adjustment_set) | {name})
        elif method == "data-subset":
            sims[i] = _point(effect, frame.iloc[np.sort(rng.choice(n, int(round(fraction * n)), replace=False))])
        else:
            sims[i] = _point(effect, frame.iloc[rng.integers(0, n, n)])
    return _verdict(method, effect.value, sims, alpha)


def _verdict(method: str, original: float, sims: np.ndarray, alpha: float) -> Refutation:
    if method == "placebo-treatment":
        p = float((1 + np.sum(np.abs(sims) >= abs(original))) / (len(sims) + 1))
        passed = p < alpha
        verdict = ("passes: the estimate is larger than the effects of random placebo treatments" if passed else
                   "fails: random placebo treatments give effects as large as the estimate")
    elif method == "dummy-outcome":
        sd = sims.std(ddof=1)
        p = float(special.erfc(abs(sims.mean()) / (sd / np.sqrt(len(sims))) / np.sqrt(2))) if sd > 0 else 1.0
        passed = p >= alpha
        verdict = ("passes: effects on a random outcome centre on 0" if passed else
                   "fails: the method finds an effect on a random outcome")
    else:
        p = _rank_p(sims, original)
        passed = p >= alpha
        what = {"random-common-cause": "adding a random common cause", "data-subset": "random subsets of the data",
                "bootstrap": "bootstrap resamples"}[method]
        verdict = (f"passes: {what} leave the estimate where it was" if passed else
                   f"fails: {what} move the estimate")
    return Refutation(method, original, sims, p, passed, verdict)
