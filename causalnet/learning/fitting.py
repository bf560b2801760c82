"""``fit``: a :class:`~causalnet.model.CausalModel` from a structure and a table of data.

The structure (a :class:`~causalnet.graph.dag.DAG`, an edge list, a graph
string such as ``"A -> B; A -> C"``, or an existing model) fixes the family of
every node; the data fix the numbers. Each node is fitted from its own family
alone — that is what makes complete-data learning one pass of counting:

- discrete node, discrete parents → CPT from family counts plus a prior
  (:mod:`causalnet.learning.parameters`);
- continuous node, continuous parents → LinearGaussian by least squares;
- continuous node with discrete parents → ConditionalLinearGaussian by least
  squares in each configuration of the discrete parents
  (:mod:`causalnet.learning.conditional`);
- a discrete node with a continuous parent is a
  :class:`~causalnet.errors.ModelError` (the conditional Gaussian restriction): no silent cast.

Missing cells and latent nodes make the family counts unobservable; then
``method="em"`` (:mod:`causalnet.learning.em`) fills them in expectation.

Examples
--------
>>> import pandas as pd
>>> import causalnet as cn
>>> df = pd.DataFrame({"A": ["a", "a", "b", "b"], "B": ["x", "y", "y", "y"]})
>>> m = cn.fit("A -> B", df)          # learning.fit(..., model_class=cn.CausalModel)
>>> m.mechanisms["B"].table.tolist()
[[0.5, 0.5], [0.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ModelError
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.tabular import Tabular
from .conditional import fit_conditional
from .data import family_counts, is_dask_collection
from .em import fit_em, record_fit_info
from .parameters import Prior, fit_families, make_prior
from .partitions import fit_partitions
from .problem import Problem, prepare

__all__ = ["fit", "fit_model", "fit_complete", "real_family"]


def real_family(problem: Problem, prior: Prior, v: Hashable, ps: tuple):
    """`v`'s real mechanism from complete data: least squares (per configuration of any discrete parents) from
    centred moments (:mod:`causalnet.learning.conditional`)."""
    return fit_conditional(v, problem.table, ps, [problem.states[p] for p in ps if problem.is_discrete(p)], prior)


def fit_complete(problem: Problem, prior: Prior) -> Any:
    """Fit every family from complete data (no missing cells, no latent nodes)."""
    t = problem.table
    mechs = fit_families(problem.dag, problem.states, prior, lambda v, ps: family_counts(t, v, ps),
                         lambda v, ps: real_family(problem, prior, v, ps), problem.parents)
    return problem.model_class(mechs, latent=problem.latent)


def _check_complete(problem: Problem, method: str) -> None:
    if problem.latent:
        raise ModelError(f"latent nodes {sorted(map(str, problem.latent))} have no data; method={method!r} needs "
                         f"complete data: use method='em'")
    for v in problem.table.names:
        if problem.table.column(v).complete:
            continue
        miss = problem.table.column(v).missing
        if miss.any():
            raise ModelError(f"column {v!r} has {int(miss.sum())} missing cell(s) (first at row "
                             f"{int(np.flatnonzero(miss)[0])}); method={method!r} needs complete data: use "
                             f"method='em', or drop the rows with df.dropna()")


def fit(structure, data, *, method: str = "mle", prior=None, equivalent_sample_size: float | None = None,
        states: Mapping[Hashable, Any] | None = None, latent: Iterable[Hashable] = (), n_iter: int = 100,
        tol: float = 1e-6, seed: Any = None, progress: bool | None = None, restarts: int = 1,
        model_class: type) -> Any:
    """Fit a model's parameters to data, given its structure (``cn.fit`` passes ``model_class=CausalModel``).

    Parameters
    ----------
    structure : DAG, edge list, graph string, or CausalModel
    data : pandas.DataFrame, mapping column -> 1-d array, or Dask DataFrame
        One column per observed node (extra columns are ignored). A Dask
        DataFrame is summarised partition by partition
        (:mod:`causalnet.learning.partitions`): one pass for MLE and Bayes, one
        per EM iteration; the model equals the pandas fit. Categoricals
        keep their category order as state order; strings, booleans and small
        integers are discrete; floats are continuous. Missing cells are NaN,
        None or pd.NA.
    method : {"mle", "bayes", "em"}
        Maximum likelihood; posterior mean under a Dirichlet prior; or EM for
        missing cells and latent nodes (with `prior`, MAP-EM).
    prior : {"bdeu", "k2"} or mapping node -> pseudo-counts, optional
        For ``"bayes"`` (default ``"bdeu"``) and ``"em"``.
    equivalent_sample_size : float, optional
        BDeu's equivalent sample size (default 10).
    states : mapping node -> state names, optional
        Fixes the state order of discrete columns; for a latent node, its
        states (a list of names or a count).
    latent : iterable of nodes
        Nodes with no column, learned by EM.
    n_iter, tol, seed, progress, restarts
        EM settings: at most `n_iter` iterations, stop when the objective
        improves by less than ``tol * |objective|``; `restarts` random starts
        drawn from `seed`; a tqdm progress bar unless ``progress=False``.

    Returns
    -------
    CausalModel
        For EM, :func:`causalnet.learning.fit_info` gives the trace.

    Raises
    ------
    ModelError
        Naming the column or node (see :func:`prepare`); NaN with
        ``method="mle"`` suggests ``method="em"``.
    """
    if is_dask_collection(data):
        return fit_partitions(structure, data, method=method, prior=prior, equivalent_sample_size=equivalent_sample_size,
                              states=states, latent=latent, model_class=model_class, n_iter=n_iter, tol=tol,
                              seed=seed, progress=progress, restarts=restarts)
    pri = make_prior(method, prior, equivalent_sample_size)
    problem = prepare(structure, data, states=states, latent=latent, model_class=model_class)
    if method == "em":
        model, info = fit_em(problem, pri, n_iter=n_iter, tol=tol, seed=seed, progress=progress,
                             restarts=restarts)
        record_fit_info(model, info)
        return model
    _check_complete(problem, method)
    return fit_complete(problem, pri)


def _model_states(model: Any) -> dict:
    out = {}
    for v, mech in model.mechanisms.items():
        if isinstance(mech, Tabular):
            out[v] = model.states(v)
        elif not isinstance(mech, (LinearGaussian, ConditionalLinearGaussian)):
            raise ModelError(f"node {v!r} has a {type(mech).__name__} mechanism; fit learns CPT, Categorical, "
                             f"LinearGaussian and ConditionalLinearGaussian nodes only")
    return out


def _parent_order(model: Any) -> dict:
    """Each node's parents in its mechanism's order (the refit keeps the model's CPT layout)."""
    return {v: tuple(model.mechanisms[v].parents) for v in model.nodes}


def _check_kinds(model: Any, st: Mapping, fitted: Any) -> None:
    """Each node of `fitted` (a Problem or a model) is discrete exactly where `model`'s is."""
    for v in model.nodes:
        discrete = fitted.is_discrete(v) if isinstance(fitted, Problem) else fitted.spec(v).is_discrete
        if v in st and v not in model.latent and not discrete:
            raise ModelError(f"node {v!r} is discrete in the model but its column is not")
        if v not in st and discrete:
            raise ModelError(f"node {v!r} is continuous in the model but its column is discrete")


def fit_model(model: Any, data, *, method: str = "mle", prior=None,
              equivalent_sample_size: float | None = None, n_iter: int = 100, tol: float = 1e-6, seed: Any = None,
              progress: bool | None = None, restarts: int = 1) -> Any:
    """A new model with `model`'s structure, mechanism kinds and state names, fitted to `data`.

    What ``CausalModel.fit(data, ...)`` does; `model` is left unchanged. With
    ``method="em"`` the first start is `model`'s own parameters. Each CPT keeps
    the model's order of parent axes. Other arguments as in :func:`fit`.
    """
    if not (hasattr(model, "mechanisms") and hasattr(model, "dag")):
        raise ModelError(f"fit_model expects a CausalModel, got {type(model).__name__}")
    st = _model_states(model)
    make_prior(method, prior, equivalent_sample_size)     # validate the arguments before the data
    if is_dask_collection(data):
        fitted = fit_partitions(model.dag, data, method=method, prior=prior,
                                equivalent_sample_size=equivalent_sample_size, states=st, latent=model.latent,
                                model_class=type(model), parents=_parent_order(model),
                                init=model if method == "em" else None, n_iter=n_iter,
                                tol=tol, seed=seed, progress=progress, restarts=restarts)
        _check_kinds(model, st, fitted)
        return fitted
    problem = prepare(model.dag, data, states=st, latent=model.latent, model_class=type(model),
                      parents=_parent_order(model))
    _check_kinds(model, st, problem)
    pri = make_prior(method, prior, equivalent_sample_size)
    if method == "em":
        fitted, info = fit_em(problem, pri, n_iter=n_iter, tol=tol, seed=seed, progress=progress,
                              restarts=restarts, init=model)
        record_fit_info(fitted, info)
        return fitted
    _check_complete(problem, method)
    return fit_complete(problem, pri)
