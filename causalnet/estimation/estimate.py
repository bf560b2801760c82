"""``cn.estimate``: from a graph and data to an effect with a confidence interval.

The graph says what to adjust for; the data say how much. :func:`estimate`

1. identifies the effect of `treatment` on `outcome` in the graph: the
   optimal adjustment set (:mod:`~causalnet.estimation.identify`), the one
   given as ``adjust=`` (checked: an invalid set is a
   :class:`~causalnet.errors.GraphError` naming the path it leaves open), an
   instrument (``method="iv"``), or the general identified formula
   (``method="plugin"``, discrete data: front door, ID);
2. estimates it with the chosen :mod:`~causalnet.estimation.estimators`;
3. attaches uncertainty: a percentile bootstrap whose replicates are fitted
   all at once (``ci="bootstrap"``) or the estimator's analytic standard
   error (``ci="analytic"``).

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=2000)
>>> t = (rng.random(2000) < 1 / (1 + np.exp(-z))).astype(int)
>>> y = 2.0 * t + z + rng.normal(size=2000)
>>> g = cn.DAG.parse("Z -> T -> Y; Z -> Y")
>>> e = cn.estimate(g, pd.DataFrame({"Z": z, "T": t, "Y": y}), "T", "Y", method="aipw", n_bootstrap=200, seed=0)
>>> e.question, sorted(e.adjustment_set), bool(abs(e.value - 2.0) < 0.15)
('E[Y | do(T=1)] - E[Y | do(T=0)]', ['Z'], True)
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np
from scipy import special

from ..errors import CausalNetWarning, GraphError, ModelError, NotIdentifiable, NumericalError
from ..graph.core import DAGCore
from ..graph.dag import DAG
from ..graph.identification import Estimand, Probability, Product, Sum
from ..learning.data import is_dask_collection
from .effect import Effect
from .estimators import IPW
from .identify import check_adjustment_set, default_adjustment_set
from .linear import clear_cache
from .methods import ESTIMATORS
from .partitioned import PartitionedData, PartitionedEstimator, can_partition
from .prepare import as_dag, as_frame
from .sequential import check_sequential_sets, sequential_formula, sequential_sets

__all__ = ["estimate", "propensity_score", "METHODS", "ESTIMANDS"]

METHODS = ("auto", *ESTIMATORS)
ESTIMANDS = ("ate", "att", "atc", "cate")

#: Bytes one (b, n) float64 matrix of a bootstrap chunk may take.
_CHUNK_BYTES = 32_000_000


def _adjustment_formula(dag: DAGCore, t: Hashable, y: Hashable, z: frozenset) -> Estimand:
    zs = [v for v in dag.topological_order() if v in z]
    if zs:
        expr = Sum(Product([Probability(zs), Probability([y], [t, *zs])]), zs)
    else:
        expr = Probability([y], [t])
    return Estimand(expr, [y], [t], method="backdoor adjustment", order=dag.topological_order())


def _instrument(dag: DAGCore, t, y, instrument, adjust) -> tuple[list, frozenset]:
    if instrument is None:
        found = dag.instrumental_variables(t, y)
        if not found:
            raise NotIdentifiable(f"the graph implies no instrument for the effect of {t!r} on {y!r}; "
                                  f"pass instrument= (and adjust= for its conditioning set)")
        z, w = found[0]
        return [z], frozenset(w) if adjust is None else frozenset(adjust)
    zs = [instrument] if isinstance(instrument, str) or not hasattr(instrument, "__iter__") else list(instrument)
    given = frozenset() if adjust is None else frozenset([adjust] if isinstance(adjust, str) else adjust)
    for z in zs:
        if z in dag and not dag.is_instrument(z, t, y, given=sorted(given, key=str)):
            raise GraphError(f"{z!r} is not an instrument for {t!r} -> {y!r} given {sorted(given, key=str)} "
                             f"in the graph: it must move {t!r} and reach {y!r} only through it")
    return zs, given


def _auto(dag: DAGCore, prep_kind: str | None, t, y) -> str:
    if _is_sequence(t):
        return "g-formula"
    try:
        default_adjustment_set(dag, t, y)
    except GraphError:
        if dag.instrumental_variables(t, y):
            return "iv"
        if prep_kind == "continuous":
            if dag.frontdoor_adjustment_sets(t, y, minimal=True, max_sets=1):
                return "frontdoor"
            raise
        return "plugin"
    return "regression" if prep_kind == "continuous" else "aipw"


def _by_adjustment(dag, frame, t, y, method, adjust, options) -> tuple[frozenset, Any, dict]:
    if adjust is not None:
        z = check_adjustment_set(dag, t, y, adjust)
    elif method == "plugin":
        try:
            z = default_adjustment_set(dag, t, y)
        except GraphError:
            formula = dag.identify(y, t)
            return frozenset(), formula, {"formula": formula}
    else:
        z = default_adjustment_set(dag, t, y)
    formula = _adjustment_formula(dag, t, y, z)
    return z, formula, {"formula": formula}


def _by_instrument(dag, frame, t, y, method, adjust, options) -> tuple[frozenset, Any, dict]:
    zs, w = _instrument(dag, t, y, options.get("instrument"), adjust)
    for z in zs:
        if z not in frame.columns:
            raise ModelError(f"the instrument {z!r} is not a column of the data")
    mat = np.column_stack([frame[z].to_numpy(np.float64) for z in zs])
    formula = f"cov({y}, {', '.join(map(str, zs))} | {', '.join(sorted(map(str, w))) or '∅'}) / " \
              f"cov({t}, {', '.join(map(str, zs))} | ...) (two-stage least squares)"
    return w, formula, {"instrument_matrix": mat, "instrument": zs}


def _by_frontdoor(dag, frame, t, y, method, adjust, options) -> tuple[frozenset, Any, dict]:
    if adjust is not None:
        m = frozenset([adjust] if isinstance(adjust, str) else adjust)
        for v in m:
            if v not in dag or v in dag.latent:
                raise GraphError(f"front-door node {v!r} is not a measured node of the graph{dag.hint(v)}")
        if not dag.is_frontdoor_adjustment(t, y, m):
            raise GraphError(f"{sorted(m, key=str)} does not satisfy the front-door criterion for {t!r} -> {y!r}: "
                             f"it must intercept every directed path, have no open back-door path from {t!r}, "
                             f"and its back-door paths to {y!r} must be blocked by {t!r}")
    else:
        sets = dag.frontdoor_adjustment_sets(t, y, minimal=True, max_sets=64)
        if not sets:
            raise NotIdentifiable(f"no front-door set identifies the effect of {t!r} on {y!r} in the graph")
        m = min(sets, key=lambda s: (len(s), sorted(map(str, s))))
    ms = ", ".join(str(v) for v in dag.topological_order() if v in m)
    formula = f"Σ_{{{ms}}} P({ms} | do({t})) Σ_{{{t}'}} P({t}') E[{y} | {ms}, {t}'] (front door)"
    return m, formula, {"formula": formula}


def _by_design(dag, frame, t, y, method, adjust, options) -> tuple[frozenset, Any, dict]:
    if adjust is not None:
        raise ModelError(f"method {method!r} identifies the effect by its design, not by adjustment; drop adjust=")
    return frozenset(), None, {}


def _by_sequence(dag, frame, t, y, method, adjust, options) -> tuple[frozenset, Any, dict]:
    if not _is_sequence(t):
        raise ModelError(f"method {method!r} needs a list of treatments in time order, got {t!r}")
    sets = sequential_sets(dag, t, y) if adjust is None else check_sequential_sets(dag, t, y, adjust)
    return frozenset().union(*sets), sequential_formula(t, y, sets), {"sets": sets}


def _is_sequence(t) -> bool:
    return isinstance(t, (list, tuple))


IDENTIFICATION = {"sequential": _by_sequence, "adjustment": _by_adjustment, "plugin": _by_adjustment, "instrument": _by_instrument,
                  "frontdoor": _by_frontdoor, "design": _by_design}


def _identify(dag, frame, t, y, method, adjust, options) -> tuple[str, frozenset, Any, dict]:
    """(method, adjustment set, formula, extra estimator options), by the method's kind of identification."""
    if method == "auto":
        kind = None if _is_sequence(t) or not (frame[t].dtype.kind == "f" and frame[t].nunique() > 2) else "continuous"
        method = _auto(dag, kind, t, y)
    cls = ESTIMATORS[method]
    if _is_sequence(t) and cls.identification != "sequential":
        raise ModelError(f"a list of treatments needs method='g-formula' (the sequential back door), got {method!r}")
    z, formula, extra = IDENTIFICATION[cls.identification](dag, frame, t, y, method, adjust, options)
    if formula is None:
        formula = cls.design_formula(t, y, options)
    return method, z, formula, extra


def _bootstrap(est, n: int, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    chunk = max(1, min(n_bootstrap, _CHUNK_BYTES // (8 * n)))
    reps = []
    for start in range(0, n_bootstrap, chunk):
        b = min(chunk, n_bootstrap - start)
        reps.append(est.fit(est.bootstrap_weights(b, rng)))
    reps = np.concatenate(reps)                                                    # (B,)
    bad = int((~np.isfinite(reps)).sum())
    if bad:
        raise NumericalError(f"{bad} of {n_bootstrap} bootstrap replicates of {est.name!r} are not finite "
                             f"(an arm empty or separated in a resample); use ci='analytic' or more data")
    return reps


def estimate(graph_or_model: Any, data: Any, treatment: Hashable, outcome: Hashable, *, method: str = "auto",
             estimand: str = "ate", adjust=None, effect_modifiers=None, treated: Any = None, control: Any = None,
             instrument=None, ci: str = "auto", n_bootstrap: int = 1000, confidence: float = 0.95,
             seed: Any = None, model: Any = None, propensity_model: Any = None, trim: float | None = None,
             link: str = "auto", folds: int = 5, n_neighbors: int = 1, match_on: str = "propensity",
             time: Hashable = None, unit: Hashable = None, running: Hashable = None, cutoff: float | None = None,
             bandwidth: float | None = None, **method_options) -> Effect:
    """Estimate the causal effect of `treatment` on `outcome` from data, identified by the graph.

    Parameters
    ----------
    graph_or_model : DAG, CausalModel or str
        The causal graph (a model's ``.dag``; a string is parsed by :meth:`DAG.parse`).
    data : pandas.DataFrame or dask.dataframe.DataFrame
        One row per unit, columns named as the graph's nodes (a node without a
        column is latent). A Dask frame is reduced partition by partition for
        regression and IPW with ``ci="analytic"``
        (:mod:`~causalnet.estimation.partitioned`), else computed first.
    treatment : node, or list of nodes in time order (a regime: ``method="g-formula"``)
    outcome : node
    method : str
        One of :data:`METHODS`: ``"regression"``, ``"ipw"``, ``"aipw"``,
        ``"tmle"``, ``"matching"``, ``"iv"``, ``"plugin"``, ``"frontdoor"``,
        ``"did"``, ``"rdd"``, ``"s-learner"``, ``"t-learner"``, ``"x-learner"``,
        ``"g-formula"`` (each documented in its module). ``"auto"``: the
        g-formula for a list of treatments; else AIPW (discrete treatment) or
        regression (continuous) when an adjustment set exists, else IV when
        the graph has an instrument, else the front door (continuous) or the
        plug-in of the identified formula (discrete).
    estimand : {"ate", "att", "atc", "cate"}
        ``"cate"`` needs `effect_modifiers` and a method with per-row effects
        (regression, the meta-learners): ``.effects`` holds them, ``.value`` their mean.
    adjust : iterable of nodes, optional
        The adjustment set (front-door set for ``"frontdoor"``, one set per
        treatment for ``"g-formula"``) instead of the graph's; checked against the graph.
    effect_modifiers : iterable of columns, optional
        Interactions with the treatment (regression); features of the meta-learners.
    treated, control : optional
        The contrast (see :mod:`~causalnet.estimation.prepare`; a tuple per regime for the g-formula).
    instrument : node or list of nodes, optional
        For ``method="iv"``; by default the first instrument the graph implies.
    ci : {"auto", "bootstrap", "analytic"}
        ``"auto"``: the method's analytic standard error for matching, TMLE,
        the front door, DiD and RDD; the bootstrap otherwise (replicates fitted
        together in vectorised chunks; flexible models are refitted per
        replicate, except cross-fitted AIPW, which resamples its scores).
    n_bootstrap, confidence, seed : int, float, int or numpy.random.Generator
    model, propensity_model : scikit-learn estimators, optional
        Outcome regressor and propensity classifier (regression, IPW, AIPW, meta-learners).
    trim, link, folds : float, {"auto", "linear", "logistic"}, int
        Clip propensities to ``[trim, 1 − trim]``; the outcome model's link
        (``"auto"``: logistic for a 0/1 outcome); cross-fitting folds of AIPW.
    n_neighbors, match_on
        Matching: neighbours per unit, ``"propensity"`` or ``"covariates"``.
    time, unit
        Difference-in-differences: the post-period column and the cluster column.
    running, cutoff, bandwidth
        Regression discontinuity: the score column, the threshold, and the
        bandwidth (default Imbens–Kalyanaraman).
    **method_options
        Options of one method, documented in its module: ``normalize``,
        ``overlap`` (IPW), ``ties``, ``bias_adjust`` (matching).

    Returns
    -------
    Effect

    Raises
    ------
    GraphError
        A node is not in the graph, `adjust` is not valid (naming the open path), or no set exists.
    EvidenceError
        A column is missing or incomplete, or the treatment has one value.
    ModelError
        The method does not fit the data (IPW with a continuous treatment, ...).
    NotIdentifiable
        The graph does not identify the effect the method needs.
    """
    _check_options(method, estimand, ci, n_bootstrap, confidence, effect_modifiers, treated, control)
    lazy = method in ("regression", "ipw") and ci == "analytic"
    dag, frame, modifiers = _setup(graph_or_model, data, treatment, outcome, effect_modifiers, lazy=lazy)
    options = {"model": model, "propensity_model": propensity_model, "trim": trim, "link": link, "folds": folds,
               "seed": seed, "instrument": instrument, "n_neighbors": n_neighbors, "match_on": match_on,
               "time": time, "unit": unit, "running": running, "cutoff": cutoff, "bandwidth": bandwidth}
    method, z, formula, extra = _identify(dag, frame, treatment, outcome, method, adjust, options)
    options.update(extra)
    cls = _method_class(method, estimand, method_options)
    options.update(method_options)
    zs = [v for v in dag.topological_order() if v in z]
    est, frame = _estimator(cls, frame, (treatment, outcome, zs, modifiers, treated, control), estimand, options,
                            extra, ci)
    prep = est.prep
    ci = est.default_ci if ci == "auto" else ci
    if ci == "bootstrap" and est.bootstrap_warning:
        warnings.warn(est.bootstrap_warning, CausalNetWarning, stacklevel=2)
    try:
        return _result(est, prep, locals())
    finally:
        clear_cache()


def propensity_score(graph_or_model: Any, data: Any, treatment: Hashable, outcome: Hashable, *, adjust=None,
                     treated: Any = None, control: Any = None) -> np.ndarray:
    """The fitted propensity ``P(treatment = treated | Z)`` of every row, Z the adjustment set of the graph.

    The logistic fit IPW, AIPW and propensity matching use; for example to keep
    the rows of the overlap and estimate on them, the models refitted (as
    Stata's ``teffects`` on a trimmed sample).

    Parameters
    ----------
    graph_or_model, data, treatment, outcome, adjust, treated, control
        As for :func:`estimate` (a discrete treatment).

    Returns
    -------
    ndarray of shape (n,)
    """
    dag, frame, _ = _setup(graph_or_model, data, treatment, outcome, None, lazy=False)
    _, z, _, _ = _identify(dag, frame, treatment, outcome, "ipw", adjust, {})
    zs = [v for v in dag.topological_order() if v in z]
    prep = IPW.prepare(frame, treatment, outcome, zs, [], treated, control, {})
    if prep.kind == "continuous":
        raise ModelError(f"a propensity score needs a discrete treatment; {treatment!r} is continuous")
    est = IPW(prep, "ate", {})
    return est.propensities(np.ones((1, prep.n)))[0][0]


def _method_class(method: str, estimand: str, method_options: dict) -> type:
    """The estimator class of `method`, checked against the estimand and the method's own options."""
    cls = ESTIMATORS[method]
    if estimand == "cate" and not cls.per_row:
        raise ModelError(f"estimand='cate' needs a method with per-row effects "
                         f"({[k for k, c in ESTIMATORS.items() if c.per_row]}), got {method!r}")
    for name in method_options:
        if name not in cls.method_options:
            takes = ", ".join(f"{k}=" for k in cls.method_options) or "none"
            raise ModelError(f"method {method!r} takes no option {name!r} (its own options: {takes})")
    return cls


def _estimator(cls, frame, problem: tuple, estimand: str, options: dict, extra: dict, ci: str) -> tuple[Any, Any]:
    """The estimator on the data (partition sums for a Dask frame when the method allows, else pandas) and the frame."""
    treatment, outcome, zs, modifiers, treated, control = problem
    if is_dask_collection(frame):
        if can_partition(frame, cls.name, ci, [treatment, outcome, *zs, *modifiers], options):
            data = PartitionedData(frame, treatment, outcome, zs, modifiers, treated, control)
            return PartitionedEstimator(cls.name, data, estimand, options), frame
        frame = as_frame(frame)
    return cls(cls.prepare(frame, *problem, extra), estimand, options), frame


def _setup(graph_or_model, data, treatment, outcome, effect_modifiers, lazy: bool) -> tuple[DAGCore, Any, list]:
    """The graph (unmeasured nodes made latent), the data frame (a Dask one kept when `lazy`), the modifiers."""
    dag = as_dag(graph_or_model, "estimate")
    roles = [(v, "treatment") for v in treatment] if _is_sequence(treatment) else [(treatment, "treatment")]
    for v, role in [*roles, (outcome, "outcome")]:
        if v not in dag:
            raise GraphError(f"the {role} {v!r} is not a node of the graph{dag.hint(v)}")
    frame = data if lazy and is_dask_collection(data) else as_frame(data)
    unmeasured = frozenset(v for v in dag.observed if v not in frame.columns)
    if unmeasured:                                     # what the data do not hold is latent to the estimation
        dag = DAG(dag.edges, nodes=dag.nodes, latent=dag.latent | unmeasured)
    if effect_modifiers is None:
        modifiers = []
    elif isinstance(effect_modifiers, (str, bytes)) or not isinstance(effect_modifiers, Iterable):
        modifiers = [effect_modifiers]                 # one column name (a str, or another hashable such as 0)
    else:
        modifiers = list(effect_modifiers)
    treatments = set(treatment) if _is_sequence(treatment) else {treatment}
    bad = [m for m in modifiers if m in dag and m in dag.descendants(treatments)]
    if bad:
        raise GraphError(f"effect modifier {bad[0]!r} descends from the treatment {treatment!r}; "
                         f"modifiers must be pre-treatment")
    return dag, frame, modifiers


def _result(est, prep, ctx: dict) -> Effect:
    rng = np.random.default_rng(ctx["seed"])
    alpha = 1.0 - ctx["confidence"]
    reps = None
    if ctx["ci"] == "analytic":
        value, se = est.analytic()
        q = special.ndtri(1 - alpha / 2)
        interval = (value - q * se, value + q * se)
    else:
        value = float(est.fit(np.ones((1, prep.n)))[0])
        reps = _bootstrap(est, prep.n, ctx["n_bootstrap"], rng)
        se = float(np.std(reps, ddof=1))
        interval = tuple(np.quantile(reps, [alpha / 2, 1 - alpha / 2]))
    if not np.isfinite(value):
        raise NumericalError(f"the {est.name} estimate of the effect of {prep.treatment!r} on {prep.outcome!r} "
                             f"is not finite: an arm may be empty for the target population")
    p_value = float(special.erfc(abs(value / se) / np.sqrt(2))) if se > 0 else (0.0 if value != 0 else 1.0)
    diagnostics = dict(est.diagnostics)
    if "instrument" in ctx["extra"]:
        diagnostics["instrument"] = ctx["extra"]["instrument"]
    formula = ctx["formula"]
    kwargs = {k: ctx[k] for k in ("method", "estimand", "adjust", "effect_modifiers", "treated", "control",
                                  "instrument", "ci", "n_bootstrap", "confidence", "model", "propensity_model",
                                  "trim", "link", "folds", "n_neighbors", "match_on", "time", "unit", "running",
                                  "cutoff", "bandwidth")}
    kwargs.update(ctx["method_options"])
    kwargs["adjust"] = ctx["z"] if ctx["cls"].identification in ("adjustment", "plugin", "frontdoor") \
        else ctx["adjust"]

    def rerun(data=None, *, treatment=None, outcome=None, graph=None, **changes) -> Effect:
        opts = {**kwargs, **changes}
        return estimate(ctx["dag"] if graph is None else graph, ctx["frame"] if data is None else data,
                        ctx["treatment"] if treatment is None else treatment,
                        ctx["outcome"] if outcome is None else outcome, seed=opts.pop("seed", None), **opts)

    return Effect(value=value, ci=interval, std_err=se, p_value=p_value, method=est.name,
                  estimand=str(formula), target=ctx["estimand"], adjustment_set=ctx["z"], n=prep.n,
                  treatment=prep.treatment, outcome=prep.outcome, treated=prep.treated, control=prep.control,
                  confidence=ctx["confidence"], ci_method=ctx["ci"], replicates=reps, effects=est.effects,
                  means=est.means, diagnostics=diagnostics, rerun=rerun,
                  sensitivity_data={"frame": ctx["frame"], "dag": ctx["dag"]}, analytic_available=est.has_analytic)


def _check_options(method, estimand, ci, n_bootstrap, confidence, modifiers, treated=None, control=None) -> None:
    if method not in METHODS:
        raise ModelError(f"method must be one of {list(METHODS)}, got {method!r}")
    if estimand not in ESTIMANDS:
        raise ModelError(f"estimand must be one of {list(ESTIMANDS)}, got {estimand!r}")
    if ci not in ("auto", "bootstrap", "analytic"):
        raise ModelError(f"ci must be 'auto', 'bootstrap' or 'analytic', got {ci!r}")
    if ci != "analytic" and (not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 2):
        raise ModelError(f"n_bootstrap must be an int >= 2, got {n_bootstrap!r}")
    if not 0 < confidence < 1:
        raise ModelError(f"confidence must be in (0, 1), got {confidence!r}")
    if estimand == "cate" and not modifiers:
        raise ModelError("estimand='cate' needs effect_modifiers=")
    for role, v in (("treated", treated), ("control", control)):
        try:
            hash(v)
        except TypeError:
            raise ModelError(f"{role} must be one value of the treatment (a number or a label), got {v!r}") from None
