"""EM for the real nodes of conditional Gaussian models: expected moments from the exact CG engine.

A real node ``y`` with discrete parents ``D`` and real parents ``x`` is fitted
from the per-configuration sums ``Σ w``, ``Σ w z`` and ``Σ w z zᵀ`` of
``z = (x, y)`` (:class:`RawSums`; :class:`~causalnet.learning.conditional.Moments`
turns them into least squares). When some cells of a row's family are hidden
(missing, or a latent discrete parent), the E-step replaces the sums by their
expectation given the row's observed cells, from exact queries:

- the hidden discrete parents ``D_h`` get their joint posterior
  ``P(D_h = c | row)`` (one batched discrete query per missingness pattern);
- for each configuration ``c`` of ``D_h`` with positive weight, the hidden real
  members ``z_h`` of the family get their posterior moments
  ``E[z_h | row, D_h = c]`` and ``Cov[z_h | row, D_h = c]`` (one batched query of
  ``z_h`` with ``D_h = c`` added to the evidence), so that
  ``E[z zᵀ | ·] = E[z | ·] E[z | ·]ᵀ + Cov[z | ·]`` (the covariance lives in the
  hidden block);
- the row adds ``P(D_h = c | row)`` times these to configuration ``(D_obs, c)``.

The M-step is least squares per configuration with the ML variance (a prior,
for MAP-EM, applies to the CPTs only). EM's objective, the observed-data
log-likelihood, cannot decrease (Dempster, Laird & Rubin 1977).

Symbols: ``r`` rows of one missingness pattern, ``m = p + 1`` family reals.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .conditional import Moments, check_configurations, conditional_mechanism
from .problem import Problem

__all__ = ["RawSums", "real_expectation", "empty_sums", "real_m_step", "initial_real", "family_kinds"]


@dataclass(frozen=True)
class RawSums:
    """Per-configuration sums ``Σ w`` (q,), ``Σ w z`` (q, m), ``Σ w z zᵀ`` (q, m, m); they add."""

    weight: np.ndarray
    first: np.ndarray
    second: np.ndarray

    def __add__(self, other: RawSums) -> RawSums:
        return RawSums(self.weight + other.weight, self.first + other.first, self.second + other.second)

    def moments(self) -> Moments:
        return Moments.from_raw(self.weight, self.first, self.second)


def family_kinds(problem: Problem, v: Hashable) -> tuple[tuple, tuple, tuple]:
    """``(discrete parents, real parents, cards of the discrete parents)`` of real node `v`."""
    ps = problem.parents(v)
    disc = tuple(u for u in ps if problem.is_discrete(u))
    return disc, tuple(u for u in ps if not problem.is_discrete(u)), tuple(problem.card(u) for u in disc)


def empty_sums(problem: Problem, v: Hashable) -> RawSums:
    disc, real, cards = family_kinds(problem, v)
    q, m = int(np.prod(cards, dtype=np.int64)), len(real) + 1
    return RawSums(np.zeros(q), np.zeros((q, m)), np.zeros((q, m, m)))


def _accumulate(config: np.ndarray, w: np.ndarray, ez: np.ndarray, ezz: np.ndarray, q: int) -> RawSums:
    """Sums of `w` (r,), ``w·ez`` (r, m) and ``w·ezz`` (r, m, m) into `q` configurations."""
    m = ez.shape[1]
    first = np.stack([np.bincount(config, weights=w * ez[:, j], minlength=q) for j in range(m)], axis=-1)
    second = np.empty((q, m, m))
    for i in range(m):
        for j in range(i, m):
            second[:, i, j] = second[:, j, i] = np.bincount(config, weights=w * ezz[:, i, j], minlength=q)
    return RawSums(np.bincount(config, weights=w, minlength=q), first, second)


def _scalar_evidence(problem: Problem, u: Hashable, k: int):
    """State `k` of discrete `u` as evidence (its index, or its name when names are integers)."""
    st = problem.states[u]
    ints = [s for s in st if isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))]
    return k if (not ints or tuple(st) == tuple(range(len(st)))) else st[k]


def real_expectation(model, problem: Problem, v: Hashable, rows: np.ndarray, hidden: frozenset,
                     evidence: Mapping, discrete_posterior) -> RawSums:
    """The expected sums of `v`'s family over `rows` (one missingness pattern with `hidden` nodes).

    `discrete_posterior(nodes)` gives ``P(nodes | row)`` of shape (r, *cards) (shared by the families).
    """
    disc, real, cards = family_kinds(problem, v)
    q = int(np.prod(cards, dtype=np.int64))
    zs = (*real, v)
    r = len(rows)
    dh = [u for u in disc if u in hidden]
    zh = [j for j, u in enumerate(zs) if u in hidden]
    base = np.column_stack([np.zeros(r) if u in hidden else problem.table.column(u).values[rows] for u in zs])
    probs = discrete_posterior(dh) if dh else np.ones((r,))                          # (r, *cards_h)
    total = RawSums(np.zeros(q), np.zeros((q, len(zs))), np.zeros((q, len(zs), len(zs))))
    for c in np.ndindex(*(problem.card(u) for u in dh)):
        w = probs[(slice(None), *c)] if dh else probs                                 # (r,)
        keep = np.flatnonzero(w > 0)
        if keep.size == 0:
            continue
        codes = {u: (np.full(keep.size, c[dh.index(u)]) if u in dh else problem.table.column(u).codes[rows][keep])
                 for u in disc}
        config = np.zeros(keep.size, dtype=np.int64)
        for u, k in zip(disc, cards):
            config = config * k + codes[u]
        ez = base[keep].copy()                                                        # (r', m)
        ezz = ez[:, :, None] * ez[:, None, :]                                         # (r', m, m)
        if zh:
            ev = {u: np.asarray(a)[keep] for u, a in evidence.items()}
            ev.update({u: _scalar_evidence(problem, u, c[dh.index(u)]) for u in dh})
            post = model.query([zs[j] for j in zh], evidence=ev or None)
            mean = np.broadcast_to(post.mean, (keep.size, len(zh)))                   # (r', h)
            cov = np.broadcast_to(post.cov, (keep.size, len(zh), len(zh)))           # (r', h, h)
            ez[:, zh] = mean
            ezz = ez[:, :, None] * ez[:, None, :]
            ezz[np.ix_(np.arange(keep.size), zh, zh)] += cov
        total = total + _accumulate(config, w[keep], ez, ezz, q)
    return total


def real_m_step(problem: Problem, v: Hashable, sums: RawSums):
    """`v`'s mechanism from its expected sums (least squares per configuration, ML variance).

    Raises
    ------
    ModelError
        A configuration whose expected rows are too few, or an exact fit (naming it).
    """
    disc, real, cards = family_kinds(problem, v)
    mo = sums.moments()
    b, w, var = mo.solve(v)
    check_configurations(v, mo, var, disc, [problem.states[u] for u in disc], cards, len(real), pseudo=False,
                         advice="EM's expected rows; try other starts (restarts=) or fewer states")
    return conditional_mechanism(problem.parents(v), disc, real, cards, b, w, var)


def initial_real(problem: Problem, v: Hashable, rng: np.random.Generator):
    """A random start for real node `v`: the pooled least squares on the rows complete in `v` and its real
    parents, with each configuration's intercept moved by ``N(0, ½σ)``."""
    disc, real, cards = family_kinds(problem, v)
    q = int(np.prod(cards, dtype=np.int64))
    values = np.column_stack([problem.table.column(u).values for u in (*real, v)])   # (n, m)
    values = values[~np.isnan(values).any(axis=1)]
    if values.shape[0] < len(real) + 2:
        raise ModelError(f"node {v!r}: only {values.shape[0]} rows have {v!r} and its real parents {list(real)} "
                         f"observed together; EM needs at least {len(real) + 2} to start")
    pool = Moments.from_rows(np.zeros(values.shape[0], dtype=np.int64), 1, values)
    b, w, var = pool.solve(v)
    var = np.maximum(var, 1e-12 * max(float(np.var(values[:, -1])), 1e-300))
    sd = float(np.sqrt(var[0]))
    intercept = b[0] + (0.5 * sd * rng.standard_normal(q) if disc else np.zeros(q))
    return conditional_mechanism(problem.parents(v), disc, real, cards, intercept, np.repeat(w, q, axis=0),
                                 np.full(q, var[0]))

