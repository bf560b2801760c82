"""Dask DataFrames: learning from sufficient statistics summed over partitions, and lazy per-row queries.

Learning needs only **sufficient statistics**: family counts for a discrete
node, the triangular factor ``R`` of ``[1, parents, y]`` for a linear-Gaussian
one (:func:`causalnet.learning.parameters.qr_factor`), per-configuration
moments for a conditional linear-Gaussian one
(:class:`causalnet.learning.conditional.Moments`: weights, means and centred
scatters, merged exactly by Chan's update after re-indexing onto the union of
the discrete parents' states), and the states seen in each column. Each partition (a pandas DataFrame) is validated and summarised
by :func:`partition_statistics` exactly as a whole pandas table would be; the
summaries merge pairwise (:meth:`Statistics.merge`: states unite, counts are
re-indexed onto the union and added, ``R`` factors stack and re-factor) in a
tree reduction run by Dask itself (``DataFrame.reduction``). So ``fit`` with
MLE or a Dirichlet prior reads the data once, and EM once per iteration
(expected counts per partition, summed), and gives the model a pandas fit
gives (counts are exact integers; least squares agree to round-off).

Queries go the other way: ``model.query(t, evidence=ddf)`` and
``model.predict(ddf)`` are ``map_partitions`` calls with a declared ``meta``,
so nothing is computed until the caller asks.

Dask itself is never imported here: every call is a method of the collection
the caller passed.

Symbols: ``n`` rows, ``k = p + 2`` columns of a least-squares design.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelError
from . import scores
from .conditional import Moments, family_moments, fit_from_moments
from .data import DiscreteColumn, RealColumn, Table, family_counts, is_dask_collection
from .em import expected_counts, fit_em, record_fit_info
from .parameters import NoPrior, fit_families, least_squares_from_qr, make_prior, merge_qr, qr_factor
from .problem import Problem, as_dag, latent_states, prepare

__all__ = ["Statistics", "partition_statistics", "partition_expected_counts", "reduce_partitions", "check_dask_frame",
           "fit_partitions", "score_partitions", "score"]


@dataclass
class Statistics:
    """Sufficient statistics of some rows: states, family counts, least-squares factors, missing cells.

    Attributes
    ----------
    n : int
        Rows.
    states : dict column -> tuple or None
        The states seen (None for a real column).
    counts : dict node -> ndarray of shape (*parent_cards, card)
        Family counts of the discrete nodes whose family is observed.
    qr : dict node -> ndarray of shape (k, k)
        ``R`` of ``[1, parents, node]`` over the rows complete in the family.
    rows : dict node -> int
        Those rows' count.
    missing : dict column -> int
        Missing cells per column.
    families : dict node -> tuple
        ``(*parents, node)``: the axes of ``counts[node]``.
    moments : dict node -> Moments
        Of a real node with discrete parents: per configuration of ``discrete[node]`` (C order over their states
        here), the moments of ``(real parents, node)`` over the rows complete in the family.
    discrete : dict node -> tuple
        Those discrete parents.
    """

    n: int
    states: dict
    families: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    qr: dict = field(default_factory=dict)
    rows: dict = field(default_factory=dict)
    missing: dict = field(default_factory=dict)
    moments: dict = field(default_factory=dict)
    discrete: dict = field(default_factory=dict)

    def merge(self, other: Statistics | None) -> Statistics:
        """The statistics of both sets of rows (`other` None: self)."""
        if other is None:
            return self
        states = {c: _union(c, s, other.states.get(c, s)) for c, s in self.states.items()}
        counts = {v: _reindex(c, self.families[v], self.states, states)
                  + _reindex(other.counts[v], self.families[v], other.states, states) for v, c in self.counts.items()}
        return Statistics(self.n + other.n, states, self.families, counts,
                          {v: merge_qr(r, other.qr[v]) for v, r in self.qr.items()},
                          {v: k + other.rows[v] for v, k in self.rows.items()},
                          {c: k + other.missing[c] for c, k in self.missing.items()},
                          {v: _reindex_moments(mo, self.discrete[v], self.states, states).merge(
                              _reindex_moments(other.moments[v], self.discrete[v], other.states, states))
                           for v, mo in self.moments.items()}, self.discrete)


def _union(column: Hashable, a: tuple | None, b: tuple | None) -> tuple | None:
    if (a is None) != (b is None):
        raise ModelError(f"column {column!r} is discrete in one partition and continuous in another; give it one "
                         f"dtype (e.g. a categorical) or pass states=")
    if a is None or a == b:
        return a
    merged = dict.fromkeys((*a, *b))
    try:
        return tuple(sorted(merged))
    except TypeError:                     # unorderable mixture: first-seen order
        return tuple(merged)


def _reindex(counts: np.ndarray, family: tuple, old: Mapping, new: Mapping) -> np.ndarray:
    """`counts` over the `old` states of `family`, placed into an array over the `new` states."""
    if all(old[u] == new[u] for u in family):
        return counts
    pos = [np.array([new[u].index(s) for s in old[u]], dtype=np.int64) for u in family]
    out = np.zeros(tuple(len(new[u]) for u in family), dtype=counts.dtype)                     # (*new_cards)
    out[np.ix_(*pos)] = counts
    return out


def _reindex_moments(mo: Moments, disc: tuple, old: Mapping, new: Mapping) -> Moments:
    """`mo` over the `old` states of the discrete parents `disc`, placed into configurations over the `new` ones
    (configurations not seen here get no weight)."""
    if all(old[u] == new[u] for u in disc):
        return mo
    shape, m = tuple(len(new[u]) for u in disc), mo.mean.shape[1]
    pos = np.ix_(*[np.array([new[u].index(s) for s in old[u]], dtype=np.int64) for u in disc])
    cards = tuple(len(old[u]) for u in disc)
    weight, mean, scatter = np.zeros(shape), np.zeros((*shape, m)), np.zeros((*shape, m, m))
    weight[pos] = mo.weight.reshape(cards)
    mean[pos] = mo.mean.reshape(*cards, m)
    scatter[pos] = mo.scatter.reshape(*cards, m, m)
    return Moments(weight.reshape(-1), mean.reshape(-1, m), scatter.reshape(-1, m, m))


# -- one partition --------------------------------------------------------------------------


def partition_statistics(part, structure, states: Mapping, latent: Iterable[Hashable],
                         parents: Mapping | None = None) -> Statistics | None:
    """The :class:`Statistics` of one pandas partition (None when it has no rows), validated like a fit."""
    if len(part) == 0:
        return None
    problem = prepare(structure, part, states=states, latent=latent, parents=parents)
    t, dag = problem.table, problem.dag
    stats = Statistics(t.n, {c: problem.states[c] for c in t.names},
                       missing={c: 0 if t.column(c).complete else int(np.count_nonzero(t.column(c).missing))
                                for c in t.names})
    for v in dag.nodes:
        ps = problem.parents(v)
        fam = (*ps, v)
        if any(u in problem.latent for u in fam):
            continue
        if problem.is_discrete(v):
            stats.families[v] = fam
            stats.counts[v] = family_counts(t, v, ps)                        # (*parent_cards, card)
            continue
        if any(problem.is_discrete(u) for u in ps):
            stats.moments[v], stats.discrete[v], _, _ = family_moments(t, v, ps)     # per configuration
            continue
        cols = [t.column(u).values for u in fam]
        ok = ~np.isnan(np.column_stack(cols)).any(axis=1)                      # (n,) rows complete in the family
        stats.qr[v] = qr_factor(cols[-1][ok], [c[ok] for c in cols[:-1]])   # (k, k)
        stats.rows[v] = int(np.count_nonzero(ok))
    return stats


def partition_expected_counts(part, model: Any, structure, states: Mapping, latent: frozenset,
                              parents: Mapping | None = None) -> tuple[dict, float] | None:
    """EM's E-step on one partition: ``(expected family counts, log-likelihood)`` (None when empty)."""
    if len(part) == 0:
        return None
    return expected_counts(model, prepare(structure, part, states=states, latent=latent, parents=parents))


def _add_counts(a: tuple, b: tuple) -> tuple:
    return {v: c + b[0][v] for v, c in a[0].items()}, a[1] + b[1]


# -- the reduction ------------------------------------------------------------------------


def _both(merge, a, b):
    return b if a is None else a if b is None else merge(a, b)


def _chunk(part, summarise):
    import pandas as pd  # optional heavy dependency, imported on use

    return pd.Series([summarise(part)], dtype=object)


def _aggregate(frame, merge):
    return functools.reduce(functools.partial(_both, merge), frame.iloc[:, 0].tolist(), None)


def _combine(frame, merge):
    import pandas as pd  # optional heavy dependency, imported on use

    return pd.Series([_aggregate(frame, merge)], dtype=object)


def check_dask_frame(ddf, exc: type = ModelError) -> None:
    """Raise `exc` unless `ddf` is a Dask DataFrame (a Dask Series or Array has no columns to read)."""
    if not (getattr(ddf, "ndim", None) == 2 and hasattr(ddf, "map_partitions") and hasattr(ddf, "reduction")):
        raise exc(f"expected a Dask DataFrame (one column per node), got a {type(ddf).__name__}")


def reduce_partitions(ddf, summarise, merge) -> Any:
    """``merge`` of ``summarise(partition)`` over every partition of `ddf`, by Dask's tree reduction.

    `summarise` returns None for an empty partition (skipped); the result is
    None when every partition is empty.
    """
    check_dask_frame(ddf)
    return ddf.reduction(functools.partial(_chunk, summarise=summarise),
                         aggregate=functools.partial(_aggregate, merge=merge),
                         combine=functools.partial(_combine, merge=merge), meta=object).compute()


# -- fit ------------------------------------------------------------------------------------


def _check_complete(stats: Statistics, latent: frozenset, method: str) -> None:
    if latent:
        raise ModelError(f"latent nodes {sorted(map(str, latent))} have no data; method={method!r} needs "
                         f"complete data: use method='em'")
    for c, k in stats.missing.items():
        if k:
            raise ModelError(f"column {c!r} has {k} missing cell(s); method={method!r} needs complete data: use "
                             f"method='em', or drop the rows with ddf.dropna()")


def _real_family(stats: Statistics, problem: Problem, prior, v: Hashable, ps: tuple):
    """`v`'s real mechanism from the summed statistics: CG least squares per configuration, or linear-Gaussian."""
    if v not in stats.moments:
        return least_squares_from_qr(v, stats.qr[v], stats.rows[v], ps)
    disc = tuple(u for u in ps if problem.is_discrete(u))
    real = tuple(u for u in ps if not problem.is_discrete(u))
    st = [problem.states[u] for u in disc]
    return fit_from_moments(v, stats.moments[v], ps, disc, real, tuple(len(s) for s in st), st, prior)


def _real_part(stats: Statistics, problem: Problem) -> dict:
    out = {}
    for v in problem.dag.nodes:
        if problem.is_discrete(v):
            continue
        fam = (*problem.parents(v), v)
        hidden = [u for u in fam if u in problem.latent or stats.missing.get(u)]
        if hidden:
            raise ModelError(f"continuous node {v!r} has a hidden cell in its family (missing or latent: "
                             f"{hidden}); EM on a Dask DataFrame re-estimates discrete nodes only: fit "
                             f"ddf.compute() (a pandas DataFrame) instead")
        out[v] = _real_family(stats, problem, NoPrior(), v, problem.parents(v))
    return out


def fit_partitions(structure, ddf, *, method: str = "mle", prior=None, equivalent_sample_size=None,
                   states: Mapping | None = None, latent: Iterable[Hashable] = (), model_class: type,
                   init: Any = None, parents: Mapping | None = None, **em_options) -> Any:
    """``fit`` on a Dask DataFrame: one pass for MLE and Bayes, then one pass per EM iteration.

    Arguments as in :func:`causalnet.learning.fit`; `init` is EM's first
    start; `parents` orders each CPT's parent axes (as in :func:`prepare`).
    """
    pri = make_prior(method, prior, equivalent_sample_size)
    dag = as_dag(structure)
    states = dict(states or {})
    lat = frozenset([latent] if isinstance(latent, str) else latent) | dag.latent
    stats = reduce_partitions(ddf, functools.partial(partition_statistics, structure=dag, states=states, latent=lat,
                                                     parents=parents), Statistics.merge)
    if stats is None:
        raise ModelError("the data have no rows; fitting needs at least one observation")
    node_states = {**stats.states, **latent_states(dag, lat, states)}
    problem = Problem(dag, None, {v: node_states[v] for v in dag.nodes}, lat, model_class, parents)
    if method != "em":
        _check_complete(stats, lat, method)
        mechs = fit_families(dag, problem.states, pri, lambda v, ps: stats.counts[v],
                             lambda v, ps: _real_family(stats, problem, pri, v, ps), problem.parents)
        return model_class(mechs, latent=lat)
    discrete = {v: s for v, s in problem.states.items() if s is not None}

    def estep(model):
        return reduce_partitions(ddf, functools.partial(partition_expected_counts, model=model, structure=dag,
                                                        states=discrete, latent=lat, parents=parents), _add_counts)

    model, info = fit_em(problem, pri, estep=estep, fixed=_real_part(stats, problem), init=init, **em_options)
    record_fit_info(model, info)
    return model


# -- scores -------------------------------------------------------------------------------


def _gaussian_local(sc: scores.Score, v: Hashable, parents: tuple, r: np.ndarray, n: int) -> float:
    """A Gaussian score's local term from the ``R`` factor (as GaussianLogLikelihood computes from the rows)."""
    fit = least_squares_from_qr(v, r, n, parents)
    rss = fit.sigma ** 2 * n
    if rss <= 0:
        raise ModelError(f"node {v!r} is an exact linear function of {list(parents)}; its Gaussian "
                         f"log-likelihood is infinite")
    ll = -0.5 * n * (np.log(2 * np.pi * rss / n) + 1.0)
    return ll - 0.5 * (len(parents) + 2) * np.log(n) if isinstance(sc, scores.BICGauss) else ll


def _cg_local(sc: scores.ConditionalGaussianLogLikelihood, stats: Statistics, v: Hashable, parents: tuple) -> float:
    """A conditional Gaussian score's local term from summed statistics (as the score computes from the rows):
    counts for a discrete node, per-configuration moments (or ``R``) for a real one; -inf for a degenerate fit."""
    if stats.states[v] is not None:
        real = [u for u in parents if stats.states[u] is None]
        if real:
            raise ModelError(f"node {v!r} is discrete but its parent {real[0]!r} is continuous: outside "
                             f"conditional Gaussian models (the CG restriction)")
        c = stats.counts[v]
        ll = sc.from_counts_loglik(c.reshape(-1, c.shape[-1]).astype(np.float64))
    elif v in stats.moments:
        mo = stats.moments[v]
        _, _, var = mo.solve(v)
        ll = -np.inf if mo.degenerate(var).any() else mo.loglik(var)
    else:
        n, p, r = stats.rows[v], len(parents), stats.qr[v]
        fit = least_squares_from_qr(v, r, n, parents) if n >= p + 1 else None
        rss = 0.0 if fit is None else fit.sigma ** 2 * n
        ll = -np.inf if n < p + 2 or rss <= 0 else -0.5 * n * (np.log(2 * np.pi * rss / n) + 1.0)
    return ll - sc.penalty(v, parents)


def score_partitions(dag, ddf, score: str = "bic", *, equivalent_sample_size: float | None = None,
                     states: Mapping | None = None) -> float:
    """:func:`causalnet.learning.scores.score` on a Dask DataFrame: family statistics in one pass, then summed."""
    g = as_dag(dag)
    stats = reduce_partitions(ddf, functools.partial(partition_statistics, structure=g, states=dict(states or {}),
                                                     latent=()), Statistics.merge)
    if stats is None:
        raise ModelError("the data have no rows")
    for c, k in stats.missing.items():
        if k:
            raise ModelError(f"column {c!r} has {k} missing cell(s); scores need complete data (drop them with "
                             f"ddf.dropna())")
    stub = Table({v: DiscreteColumn(np.zeros(0, np.int64), s) if s is not None else RealColumn(np.zeros(0))
                  for v, s in ((v, stats.states[v]) for v in g.nodes)}, stats.n)
    sc = scores.make_score(score, stub, equivalent_sample_size=equivalent_sample_size)
    if isinstance(sc, scores.ConditionalGaussianLogLikelihood):
        return float(sum(_cg_local(sc, stats, v, g.parents(v)) for v in g.nodes))
    total = 0.0
    for v in g.nodes:
        if isinstance(sc, scores.CountScore):
            c = stats.counts[v]
            total += sc.from_counts(c.reshape(-1, c.shape[-1]).astype(np.float64))          # (q, r)
        else:
            total += _gaussian_local(sc, v, g.parents(v), stats.qr[v], stats.rows[v])
    return float(total)


def score(dag, data, score: str = "bic", *, equivalent_sample_size: float | None = None, states=None) -> float:
    """``cn.score``: :func:`causalnet.learning.scores.score`, or :func:`score_partitions` for a Dask DataFrame."""
    if is_dask_collection(data):
        return score_partitions(dag, data, score, equivalent_sample_size=equivalent_sample_size, states=states)
    return scores.score(dag, data, score, equivalent_sample_size=equivalent_sample_size, states=states)
