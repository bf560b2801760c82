"""Expectation–maximisation for models with missing cells and latent nodes (discrete, and conditional Gaussian).

With complete data each CPT is a normalised table of family counts. When some
cells are missing (or a node is latent), the counts are unknown; EM replaces
them by their **expectation** under the current parameters and re-estimates:

- **E-step.** Rows are grouped by their pattern of missing cells. For one
  pattern, the observed cells are evidence, batched over the pattern's rows;
  for every family with hidden members the exact engine gives the posterior of
  those members, row by row (``model.query(hidden, evidence=batch)``; one
  query per distinct set of hidden members, shared by the families that have
  it), and the expected counts are its sum over rows placed next to the
  observed members. Observed cells reach the engine as state indices.
  The same queries give ``log P(observed row)``, whose sum is the
  log-likelihood.
- **M-step.** Each CPT is estimated from its expected counts, as in
  :mod:`causalnet.learning.parameters` (with a prior: MAP-EM).

Real nodes (linear-Gaussian, or conditional linear-Gaussian under discrete
parents) whose family has a hidden cell are re-estimated too: their expected
per-configuration moments come from the same exact engine
(:mod:`causalnet.learning.mixed_em`); the other real nodes are fitted once.
Evidence then holds the observed real cells as well.

Each iteration cannot decrease the objective — the observed-data
log-likelihood, plus ``Σ α·log θ`` under a prior with pseudo-counts α —
(Dempster, Laird & Rubin 1977); :class:`FitInfo` keeps the trace.

Symbols: ``n`` rows, ``r`` rows of one pattern, ``K`` states.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arguments import check_int, check_real
from ..errors import ModelError
from ..mechanisms.base import as_generator
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.tabular import Tabular
from ..progress import progress_bar
from .conditional import LOG_2PI, fit_conditional
from .data import family_counts
from .mixed_em import RawSums, empty_sums, initial_real, real_expectation, real_m_step
from .parameters import NoPrior, Prior, estimate_table, least_squares, tabular_mechanism
from .problem import Problem

__all__ = ["FitInfo", "fit_em", "fit_info", "record_fit_info", "expected_counts", "em_reals"]


@dataclass(frozen=True)
class FitInfo:
    """The trace of an EM fit.

    Attributes
    ----------
    iterations : int
        M-steps run (of the best restart).
    log_likelihood : tuple of float
        The objective before each M-step and after the last one: the
        observed-data log-likelihood (plus ``Σ α·log θ`` under a prior).
        Never decreases (up to round-off).
    converged : bool
        Whether the last improvement was below ``tol * |objective|``.
    restarts : int
        Random starts tried; the best (highest final objective) is returned.
    best_restart : int
    """

    iterations: int
    log_likelihood: tuple
    converged: bool
    restarts: int = 1
    best_restart: int = 0


_INFO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_fit_info(model: Any, info: FitInfo) -> None:
    """Remember `info` for `model` (read back with :func:`fit_info`)."""
    _INFO[model] = info


def fit_info(model: Any) -> FitInfo | None:
    """The :class:`FitInfo` of a model returned by an EM fit, else None."""
    return _INFO.get(model)


# -- E-step ---------------------------------------------------------------------------------


def _family_expectation(problem: Problem, v: Hashable, rows: np.ndarray, hidden: list, probs: np.ndarray
                        ) -> np.ndarray:
    """Expected counts of `v`'s family over `rows`, from the posterior `probs` (r, *hidden_cards)."""
    fam = (*problem.parents(v), v)
    cards = tuple(problem.card(u) for u in fam)
    r = len(rows)
    k = len(hidden)
    index = []
    for u in fam:
        if u in hidden:
            j = hidden.index(u)
            shape = [1] * (k + 1)
            shape[1 + j] = cards[fam.index(u)]
            index.append(np.arange(cards[fam.index(u)]).reshape(shape))             # (1, .., K_u, .., 1)
        else:
            index.append(problem.table.column(u).codes[rows].reshape((r,) + (1,) * k))  # (r, 1, .., 1)
    grids = np.broadcast_arrays(*index, np.zeros((r,) + (1,) * k, dtype=np.int64))[:-1]   # each (r, *hidden_cards)
    flat = np.ravel_multi_index(grids, cards)
    probs = np.broadcast_to(probs, flat.shape)
    return np.bincount(flat.ravel(), weights=probs.ravel(), minlength=int(np.prod(cards))).reshape(cards)


def _evidence_codes(states: tuple, codes: np.ndarray) -> np.ndarray:
    """Evidence for the engine: the state indices themselves (decoded by one vectorised range check),
    or the state names when the names are integers other than ``0..K-1`` (integers would read as names)."""
    ints = [s for s in states if isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))]
    if not ints or tuple(states) == tuple(range(len(states))):
        return codes
    return np.asarray(states, dtype=object)[codes]


def _pattern_evidence(problem: Problem, rows: np.ndarray, hidden: frozenset) -> dict:
    """The observed cells of `rows` as batched evidence: state indices (or names) and real values."""
    ev = {}
    for u in problem.table.names:
        if u in hidden:
            continue
        col = problem.table.column(u)
        ev[u] = _evidence_codes(problem.states[u], col.codes[rows]) if col.is_discrete else col.values[rows]
    return ev


def _log_evidence(model: Any, problem: Problem, hidden: frozenset, evidence: dict, r: int) -> float:
    """``Σ log p(observed cells)`` over the pattern's rows (`hidden` nonempty)."""
    d = model.query(sorted(hidden, key=list(problem.dag.nodes).index)[:1], evidence=evidence or None)
    if getattr(d, "log_evidence", None) is not None:
        return float(np.sum(d.log_evidence)) if evidence else 0.0
    obs = [u for u in evidence]                      # an all-real model: the Gaussian marginal of the observed
    g = model.query(obs)
    x = np.column_stack([evidence[u] for u in obs]) - np.asarray(g.mean).reshape(1, -1)       # (r, d)
    sign, logdet = np.linalg.slogdet(g.cov)
    if sign <= 0:
        raise ModelError(f"the observed nodes {obs} have a singular Gaussian law under the current parameters")
    maha = np.einsum("ri,ij,rj->r", x, np.linalg.inv(g.cov), x)
    return float(np.sum(-0.5 * (maha + logdet + len(obs) * LOG_2PI)))


def _pattern_counts(model: Any, problem: Problem, rows: np.ndarray, hidden: frozenset,
                    counts: dict) -> float:
    """Add the expected statistics of `rows` (one missingness pattern) into `counts` (family counts of discrete
    nodes, :class:`RawSums` of real ones); return their log-likelihood."""
    evidence = _pattern_evidence(problem, rows, hidden)
    r = len(rows)
    ll = None
    posteriors: dict = {}                  # hidden members -> their posterior: families sharing them share a query

    def posterior(hid: list) -> np.ndarray:
        """P(hid | row), shape (r, *cards of hid)."""
        nonlocal ll
        d = posteriors.get(frozenset(hid))
        if d is None:
            d = posteriors[frozenset(hid)] = model.query(hid, evidence=evidence or None)
            if ll is None:
                ll = float(np.sum(d.log_evidence)) if evidence else 0.0
        order = [list(d.variables).index(u) for u in hid]
        probs = np.asarray(d.probs)
        probs = probs.transpose([0, *(1 + i for i in order)]) if d.batched else probs.transpose(order)[None]
        return np.broadcast_to(probs, (r, *probs.shape[1:]))

    for v in counts:
        fam = (*problem.parents(v), v)
        if isinstance(counts[v], RawSums):
            counts[v] = counts[v] + real_expectation(model, problem, v, rows, hidden, evidence, posterior)
            continue
        hid = [u for u in fam if u in hidden]
        if not hid:
            counts[v] += family_counts(problem.table, v, problem.parents(v), rows=rows)
            continue
        counts[v] += _family_expectation(problem, v, rows, hid, posterior(hid))
    if ll is None:
        ll = _log_evidence(model, problem, hidden, evidence, r) if hidden else float(np.sum(model.log_prob(evidence)))
    return ll


def em_reals(problem: Problem) -> list:
    """The real nodes EM re-estimates: those with a hidden cell (missing or latent) in their family."""
    out = []
    for v in problem.dag.topological_order():
        if problem.is_discrete(v):
            continue
        fam = (*problem.parents(v), v)
        if any(u in problem.latent or not problem.table.column(u).complete for u in fam):
            out.append(v)
    return out


def expected_counts(model: Any, problem: Problem) -> tuple[dict, float]:
    """``({node: expected statistics}, log-likelihood)`` under `model`: family counts of the discrete nodes,
    :class:`~causalnet.learning.mixed_em.RawSums` of the real nodes EM re-estimates (:func:`em_reals`)."""
    discrete = [v for v in problem.dag.topological_order() if problem.is_discrete(v)]
    counts: dict = {v: np.zeros(tuple(problem.card(u) for u in (*problem.parents(v), v))) for v in discrete}
    counts.update({v: empty_sums(problem, v) for v in em_reals(problem)})
    cols = list(problem.table.names)
    miss = np.column_stack([problem.table.column(u).missing for u in cols]) if cols else \
        np.zeros((problem.table.n, 0), dtype=bool)                                  # (n, V)
    patterns, inverse = np.unique(miss, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    ll = 0.0
    for p, pattern in enumerate(patterns):
        rows = np.flatnonzero(inverse == p)
        hidden = problem.latent | {u for u, m in zip(cols, pattern) if m}
        ll += _pattern_counts(model, problem, rows, frozenset(hidden), counts)
    return counts, ll


# -- M-step and the loop ----------------------------------------------------------------------


def _log_prior(model: Any, prior: Prior, nodes) -> float:
    total = 0.0
    for v in nodes:
        t = model.mechanisms[v].table
        a = np.broadcast_to(prior.pseudo_counts(v, t.shape), t.shape)
        with np.errstate(divide="ignore"):
            total += float(np.sum(np.where(a > 0, a * np.log(np.where(a > 0, t, 1.0)), 0.0)))
    return total


def _m_step(problem: Problem, counts: Mapping, prior: Prior, fixed: Mapping) -> Any:
    mechs = dict(fixed)
    for v, c in counts.items():
        if isinstance(c, RawSums):
            mechs[v] = real_m_step(problem, v, c)
            continue
        table, _ = estimate_table(c, prior, v)
        mechs[v] = tabular_mechanism(v, problem.parents(v), table, problem.states[v])
    return problem.model_class(mechs, latent=problem.latent)


def _random_model(problem: Problem, rng: np.random.Generator, fixed: Mapping) -> Any:
    mechs = dict(fixed)
    for v in problem.dag.topological_order():
        if v in fixed:
            continue
        if not problem.is_discrete(v):
            mechs[v] = initial_real(problem, v, rng)
            continue
        shape = tuple(problem.card(p) for p in problem.parents(v))
        table = rng.dirichlet(np.ones(problem.card(v)), size=shape)                  # (*parent_cards, K)
        mechs[v] = tabular_mechanism(v, problem.parents(v), table, problem.states[v])
    return problem.model_class(mechs, latent=problem.latent)


def _continuous_part(problem: Problem) -> dict:
    """The real nodes whose families are fully observed, fitted once (ML least squares, per configuration of
    any discrete parents); :func:`em_reals` are re-estimated by EM."""
    out = {}
    again = set(em_reals(problem))
    for v in problem.dag.topological_order():
        if problem.is_discrete(v) or v in again:
            continue
        ps = problem.parents(v)
        if any(problem.is_discrete(p) for p in ps):
            out[v] = fit_conditional(v, problem.table, ps, [problem.states[p] for p in ps if problem.is_discrete(p)],
                                     NoPrior())
        else:
            out[v] = least_squares(v, problem.table.column(v).values, [problem.table.column(p).values for p in ps],
                                   ps)
    return out


def _run(problem: Problem, prior: Prior, model: Any, fixed: Mapping, n_iter: int, tol: float,
         bar, estep: Callable) -> tuple[Any, list, bool, int]:
    trace: list = []
    discrete = [v for v in problem.dag.nodes if problem.is_discrete(v)]
    for it in range(n_iter + 1):
        counts, ll = estep(model)
        trace.append(ll + _log_prior(model, prior, discrete))
        if len(trace) > 1 and trace[-1] - trace[-2] <= tol * abs(trace[-2]):
            return model, trace, True, it
        if it == n_iter:
            break
        model = _m_step(problem, counts, prior, fixed)
        bar.update(1)
    return model, trace, False, n_iter


def fit_em(problem: Problem, prior: Prior, *, n_iter: int = 100, tol: float = 1e-6, seed: Any = None,
           progress: bool | None = None, restarts: int = 1, init: Any = None, estep: Callable | None = None,
           fixed: Mapping | None = None) -> tuple[Any, FitInfo]:
    """EM from `restarts` starts (the first is `init` when given); returns the best model and its trace.

    `estep(model) -> (counts, log_likelihood)` is :func:`expected_counts` over
    ``problem.table`` by default (a Dask fit sums it over partitions); `fixed`
    are the continuous nodes' mechanisms (by default least squares on the table).
    """
    check_int(n_iter, "n_iter", low=0)
    check_int(restarts, "restarts", low=1)
    check_real(tol, "tol", nonnegative=True)
    rng = as_generator(seed)
    fixed = _continuous_part(problem) if fixed is None else fixed
    estep = (lambda m: expected_counts(m, problem)) if estep is None else estep
    best = None
    with progress_bar(n_iter * restarts, progress=progress, desc="EM") as bar:
        for k in range(restarts):
            start = _init_model(problem, init, fixed) if (k == 0 and init is not None) else \
                _random_model(problem, rng, fixed)
            model, trace, converged, iters = _run(problem, prior, start, fixed, n_iter, tol, bar, estep)
            if best is None or trace[-1] > best[1][-1]:
                best = (model, trace, converged, iters, k)
    model, trace, converged, iters, k = best
    return model, FitInfo(iters, tuple(trace), converged, restarts, k)


def _init_model(problem: Problem, init: Any, fixed: Mapping) -> Any:
    mechs = dict(fixed)
    for v in problem.dag.nodes:
        mech = init.mechanisms[v]
        if v in fixed:
            continue
        if not problem.is_discrete(v):
            if not isinstance(mech, (LinearGaussian, ConditionalLinearGaussian)):
                raise ModelError(f"node {v!r}: EM starts a real node from a (conditional) linear Gaussian, got "
                                 f"{type(mech).__name__}")
            mechs[v] = mech
            continue
        if not isinstance(mech, Tabular):
            raise ModelError(f"node {v!r}: EM starts from CPTs, got {type(mech).__name__}")
        mechs[v] = tabular_mechanism(v, problem.parents(v), mech.table, problem.states[v])
    return problem.model_class(mechs, latent=problem.latent)
