"""Conditional Gaussian families: per-configuration least squares from moment statistics.

A real node ``y`` with discrete parents ``D`` (``q`` configurations) and real
parents ``x`` (``p`` of them) is fitted, for each configuration ``k`` of ``D``,
by ordinary least squares of ``y`` on ``[1, x]`` over the rows in that
configuration. Everything needed is one :class:`Moments` object per family:
for each configuration the row weight ``n_k``, the mean ``m_k`` of
``v = (x, y)`` and the centred scatter ``C_k = Σ (v − m_k)(v − m_k)ᵀ``, shapes
``(q,)``, ``(q, p+1)``, ``(q, p+1, p+1)``. From them

    β_k = C_k[x, x]⁻¹ C_k[x, y],   intercept_k = m_k[y] − β_k·m_k[x],
    RSS_k = C_k[y, y] − C_k[y, x] β_k,   σ²_k = RSS_k / n_k

(the **maximum-likelihood** variance, ddof 0, as the discrete and Gaussian fits
of :mod:`causalnet.learning.parameters` use), and the maximised
log-likelihood of the family is ``Σ_k −n_k/2 (log(2π σ²_k) + 1)``.

Moments are built in two passes (means, then centred products, by
``np.bincount``), merge exactly (Chan's pairwise update, :meth:`Moments.merge`)
and take weighted rows, so the same object serves complete data, EM's expected
statistics and a prior of pseudo-rows.

**Too few rows.** Maximum likelihood needs ``n_k ≥ p + 2`` rows in every
configuration (``p + 1`` coefficients and a positive variance): otherwise
:func:`fit_conditional` raises a :class:`~causalnet.errors.ModelError` naming
the node and the configuration. With ``method="bayes"`` every configuration
gets ``a`` **pseudo-rows** distributed like all the rows of the family pooled
(their mean and scatter scaled to ``a`` rows), where ``a`` is the prior's
pseudo-count for the configuration (BDeu: ``ess / q``; K2: 1; an explicit
Dirichlet entry for the node: a scalar or one per configuration). This is the
posterior mean of a conjugate normal prior centred on the pooled regression:
an unseen configuration gets the pooled regression, a rare one is shrunk
towards it, a frequent one is barely moved.

Symbols: ``n`` rows, ``q`` discrete-parent configurations, ``p`` real parents,
``m = p + 1`` moment variables.

Examples
--------
>>> import numpy as np
>>> mo = Moments.from_rows(np.array([0, 0, 0, 1, 1, 1]), 2, np.array([[0., 1.], [1., 3.], [2., 5.],
...                                                                    [0., 0.], [1., 0.], [2., 1.]]))
>>> b, w, var = mo.solve("Y")
>>> b.round(6).tolist(), w.round(6).tolist()
([1.0, -0.166667], [[2.0], [0.5]])
"""

from __future__ import annotations

import functools
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.gaussian import LinearGaussian
from .cg_kernel import moment_sums, record_numpy_time, use_compiled
from .data import HEAD_ROWS, Table, head_offset, narrow_config
from .parameters import Prior

__all__ = ["Moments", "config_index", "laned_index", "LANES", "LANE_GROUPS", "family_moments", "fit_conditional",
           "fit_from_moments", "conditional_mechanism", "MASKED_MAX_DOTS",
           "describe_config", "check_configurations", "LOG_2PI"]

LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class Moments:
    """Per-configuration weights, means and centred scatters of ``v = (x_1..x_p, y)``.

    Attributes
    ----------
    weight : ndarray of shape (q,)
        Rows (or summed row weights) per configuration.
    mean : ndarray of shape (q, m)
    scatter : ndarray of shape (q, m, m)
        ``Σ w (v − mean)(v − mean)ᵀ`` per configuration.
    """

    weight: np.ndarray
    mean: np.ndarray
    scatter: np.ndarray

    @property
    def q(self) -> int:
        return self.weight.shape[0]

    @classmethod
    def from_rows(cls, config: np.ndarray, q: int, values: np.ndarray, weights: np.ndarray | None = None) -> Moments:
        """Moments of `values` (n, m) grouped by `config` (n,) into `q` configurations, optionally weighted (n,)."""
        return cls.from_columns(config, q, [np.ascontiguousarray(values[:, j]) for j in range(values.shape[1])],
                                weights)

    @classmethod
    def from_columns(cls, config: np.ndarray, q: int, cols: Sequence[np.ndarray],
                     weights: np.ndarray | None = None, shift: np.ndarray | None = None) -> Moments:
        """:meth:`from_rows` from the m columns (each (n,)) kept apart, as a table holds them.

        A column whose first rows sit more than 10 standard deviations from 0
        is shifted by their mean first, so the raw sums lose no more than a
        few digits to a common offset when they are centred per configuration
        (`shift` (m,), when given, are these offsets already computed: any
        values near the columns' centres do).
        With unweighted rows the raw sums are one compiled pass
        (:mod:`causalnet.learning.cg_kernel`, when its backend allows); else
        dot products when ``q == 1``; with few configurations (at most :data:`MASKED_MAX_DOTS` dot products)
        dot products with each configuration's 0/1 row mask (:func:`_masked_sums`);
        with more configurations and m >= 2, the rows are put in
        configuration order once (a stable radix argsort of the small
        configuration codes) and every sum is a dot product over one contiguous
        slice; otherwise one ``np.bincount`` per entry, over interleaved
        accumulators (:func:`laned_index`).
        """
        m = len(cols)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        total = float(len(config)) if w is None else float(w.sum())
        shift = _offsets(cols, w) if shift is None else np.asarray(shift, dtype=np.float64)  # (m,)
        xs = [c - s if s else c for c, s in zip(cols, shift)]                             # m x (n,)
        xw = xs if w is None else [x * w for x in xs]
        if w is None and use_compiled(len(config)):
            weight, first, second = moment_sums(config, q, xs)
        else:
            start = time.perf_counter()
            if q == 1:
                weight, first, second = np.array([total]), *_dot_sums(xs, xw)
            elif w is None and q * m * (m + 3) <= 2 * MASKED_MAX_DOTS:
                weight, first, second = _masked_sums(config, q, xs)
            elif w is None and m >= 2 and q <= np.iinfo(np.uint16).max:
                weight, first, second = _sorted_sums(config, q, xs)
            else:
                weight, first, second = _bincount_sums(config, q, xs, xw, w)
            record_numpy_time(time.perf_counter() - start)
        mo = cls.from_raw(weight, first, second)
        return cls(mo.weight, np.where(weight[:, None] > 0, mo.mean + shift, 0.0), mo.scatter)

    @classmethod
    def from_raw(cls, weight: np.ndarray, first: np.ndarray, second: np.ndarray) -> Moments:
        """Moments from raw sums: weight (q,), ``Σ w v`` (q, m), ``Σ w v vᵀ`` (q, m, m) (EM's expectations)."""
        safe = np.where(weight > 0, weight, 1.0)
        mean = first / safe[:, None]                                                       # (q, m)
        sc = second - weight[:, None, None] * mean[:, :, None] * mean[:, None, :]          # (q, m, m)
        return cls(weight, mean, 0.5 * (sc + np.swapaxes(sc, 1, 2)))

    def merge(self, other: Moments) -> Moments:
        """The moments of both sets of rows (Chan et al.'s pairwise update: no cancellation)."""
        n = self.weight + other.weight                                                     # (q,)
        safe = np.where(n > 0, n, 1.0)
        delta = other.mean - self.mean                                                     # (q, m)
        mean = self.mean + delta * (other.weight / safe)[:, None]
        corr = (self.weight * other.weight / safe)[:, None, None] * delta[:, :, None] * delta[:, None, :]
        return Moments(n, mean, self.scatter + other.scatter + corr)

    def pooled(self) -> Moments:
        """All configurations merged into one, shape q = 1."""
        out = Moments(self.weight[:1] * 0.0, self.mean[:1] * 0.0, self.scatter[:1] * 0.0)
        for k in range(self.q):
            out = out.merge(Moments(self.weight[k:k + 1], self.mean[k:k + 1], self.scatter[k:k + 1]))
        return out

    def with_pseudo_rows(self, a: np.ndarray) -> Moments:
        """Each configuration plus ``a[k]`` pseudo-rows distributed like all rows pooled (the prior)."""
        pool = self.pooled()
        scale = np.where(pool.weight[0] > 0, a / max(float(pool.weight[0]), 1e-300), 0.0)   # (q,)
        prior = Moments(np.asarray(a, dtype=np.float64), np.broadcast_to(pool.mean, self.mean.shape).copy(),
                        scale[:, None, None] * pool.scatter)
        return self.merge(prior)

    def solve(self, node: Hashable, min_rows: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(intercept (q,), weights (q, p), variance (q,))`` of least squares in every configuration.

        A configuration with no weight gets zeros. The slopes solve the centred
        normal equations (a singular one by its minimum-norm solution).
        """
        p = self.mean.shape[1] - 1
        cxx = self.scatter[:, :p, :p]                                                      # (q, p, p)
        cxy = self.scatter[:, :p, p]                                                       # (q, p)
        if p == 0:
            beta = np.zeros((self.q, 0))
        elif p == 1:                                                                       # closed form
            sxx = cxx[:, 0, 0]
            flat = sxx <= 1e-13 * np.maximum(np.abs(self.scatter[:, 1, 1]), 1e-300)       # a constant regressor
            beta = np.where(flat, 0.0, cxy[:, 0] / np.where(flat, 1.0, sxx))[:, None]
        else:
            beta = np.einsum("kij,kj->ki", np.linalg.pinv(cxx, hermitian=True), cxy)
        rss = self.scatter[:, p, p] - np.einsum("ki,ki->k", cxy, beta)                     # (q,)
        safe = np.where(self.weight > 0, self.weight, 1.0)
        var = np.where(self.weight > 0, np.maximum(rss, 0.0) / safe, 0.0)
        b = np.where(self.weight > 0, self.mean[:, p] - np.einsum("ki,ki->k", beta, self.mean[:, :p]), 0.0)
        return b, np.where(self.weight[:, None] > 0, beta, 0.0), var

    def degenerate(self, var: np.ndarray, count_rows: bool = True) -> np.ndarray:
        """(q,) bool: configurations with rows but too few (< p + 2, when `count_rows`) or an exact linear
        fit (σ² ≈ 0)."""
        p = self.mean.shape[1] - 1
        syy = self.scatter[:, p, p] / np.where(self.weight > 0, self.weight, 1.0)
        seen = self.weight > 0
        few = (self.weight < p + 2 - 1e-9) if count_rows else np.zeros(self.q, dtype=bool)
        return seen & (few | (var <= 1e-12 * np.maximum(syy, 1e-300)) | (syy <= 0))

    def loglik(self, var: np.ndarray) -> float:
        """The maximised log-likelihood ``Σ_k −n_k/2 (log(2π σ²_k) + 1)`` over configurations with rows."""
        seen = self.weight > 0
        return float(np.sum(-0.5 * self.weight[seen] * (LOG_2PI + np.log(var[seen]) + 1.0)))


#: Unweighted sums needing at most this many dot products (``q * m(m+3)/2``: q <= 4 for m = 1, none for
#: m = 2) are dot products with each configuration's 0/1 mask (:func:`_masked_sums`); more use a sort.
MASKED_MAX_DOTS = 8

#: Group sums of few groups are spread over this many interleaved accumulators (consecutive rows of one group
#: would otherwise wait on each other's additions in ``np.bincount``); more than LANE_GROUPS groups use one.
LANES, LANE_GROUPS = 4, 64


@functools.lru_cache(maxsize=8)
def _lane_pattern(n: int) -> np.ndarray:
    pattern = np.arange(n, dtype=np.int64) & (LANES - 1)                                  # (n,) 0 1 2 3 0 1 ...
    pattern.flags.writeable = False
    return pattern


def laned_index(config: np.ndarray, q: int) -> tuple[np.ndarray, int]:
    """``(index (n,), size)`` for :func:`np.bincount`: ``config * LANES + row % LANES`` when ``q <= LANE_GROUPS``
    (size ``q * LANES``), else `config` itself (size `q`). Sum the lanes with :func:`_group_sum`."""
    if q > LANE_GROUPS or len(config) < 4 * LANES:
        return config, q
    idx = config.astype(np.int64)                                                          # (n,) a new array
    idx *= LANES
    idx += _lane_pattern(len(config))
    return idx, q * LANES


def _group_sum(idx: np.ndarray, size: int, q: int, weights: np.ndarray | None) -> np.ndarray:
    """(q,) float sums of `weights` (or counts) per group, from a :func:`laned_index`."""
    out = np.bincount(idx, weights=weights, minlength=size).astype(np.float64, copy=False)
    return out if size == q else out.reshape(q, size // q).sum(axis=1)


def _offsets(cols: Sequence[np.ndarray], w: np.ndarray | None) -> np.ndarray:
    """(m,) each column's offset to subtract before raw sums: the (weighted) mean of its first 4096 rows when that
    sits more than 10 of their standard deviations from 0, else 0 (a small offset costs < 3 digits: no pass;
    unweighted, :func:`causalnet.learning.data.head_offset` per column)."""
    m = len(cols)
    if m == 0 or len(cols[0]) == 0:
        return np.zeros(m)
    if w is None:
        return np.array([head_offset(c) for c in cols])
    head = np.stack([c[:HEAD_ROWS] for c in cols])                    # (m, h): any rows near the centre will do
    wh = w[:HEAD_ROWS]
    shift = np.einsum("mh,h->m", head, wh) / max(float(wh.sum()), 1e-300)
    spread = head.std(axis=1)                                                              # (m,)
    return np.where(np.abs(shift) > 10.0 * spread, shift, 0.0)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a · b`` by ``np.einsum``, not BLAS: a multi-threaded BLAS ``ddot`` on a busy machine can take a thousand
    times longer than this single-threaded pass."""
    return float(np.einsum("i,i->", a, b))


def _dot_sums(xs: Sequence[np.ndarray], xw: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(Σ xw (1, m), Σ xw xsᵀ (1, m, m))`` over all rows, by dot products (no temporaries)."""
    m = len(xs)
    first, second = np.empty((1, m)), np.empty((1, m, m))
    for i in range(m):
        first[0, i] = xw[i].sum()
        for j in range(i, m):
            second[0, i, j] = second[0, j, i] = _dot(xw[i], xs[j])
    return first, second


def _sorted_sums(config: np.ndarray, q: int, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n_k (q,), Σ x (q, m), Σ x xᵀ (q, m, m))`` per configuration: rows gathered in configuration order once
    (stable radix argsort of 8/16-bit codes), then one dot product per entry and configuration slice."""
    m = len(xs)
    small = config.astype(np.uint8 if q <= 256 else np.uint16, copy=False)               # (n,) radix-sortable
    order = np.argsort(small, kind="stable")                                              # (n,)
    counts = np.bincount(small, minlength=q)                                              # (q,)
    ends = np.cumsum(counts)
    ys = [np.take(x, order) for x in xs]                                                  # m x (n,) sorted
    first, second = np.zeros((q, m)), np.zeros((q, m, m))
    for k in np.flatnonzero(counts):
        seg = slice(int(ends[k] - counts[k]), int(ends[k]))
        parts = [y[seg] for y in ys]
        for i in range(m):
            first[k, i] = parts[i].sum()
            for j in range(i, m):
                second[k, i, j] = second[k, j, i] = _dot(parts[i], parts[j])
    return counts.astype(np.float64), first, second


def _masked_sums(config: np.ndarray, q: int, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n_k (q,), Σ x (q, m), Σ x xᵀ (q, m, m))`` per configuration (few of them): for each configuration
    every column is multiplied by its 0/1 row mask once (n,), summed, and dotted with the columns."""
    m, n = len(xs), len(config)
    first, second = np.zeros((q, m)), np.zeros((q, m, m))
    counts = np.zeros(q)
    hit, masked = np.empty(n, dtype=bool), np.empty((m, n))
    for k in range(q):
        np.equal(config, k, out=hit)
        counts[k] = np.count_nonzero(hit)
        if not counts[k]:
            continue
        for i in range(m):
            np.multiply(hit, xs[i], out=masked[i])                                        # x_i on k's rows, else 0
            first[k, i] = masked[i].sum()
            for j in range(i + 1):
                second[k, i, j] = second[k, j, i] = _dot(masked[i], xs[j])
    return counts, first, second


def _bincount_sums(config: np.ndarray, q: int, xs: Sequence[np.ndarray], xw: Sequence[np.ndarray],
                   w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Σ w (q,), Σ xw (q, m), Σ xw xsᵀ (q, m, m))`` per configuration, one laned ``np.bincount`` per entry."""
    m = len(xs)
    idx, size = laned_index(config, q)
    first, second = np.empty((q, m)), np.empty((q, m, m))
    weight = _group_sum(idx, size, q, w)                                                   # (q,)
    buf = np.empty(len(config))                                                            # one product buffer
    for i in range(m):
        first[:, i] = _group_sum(idx, size, q, xw[i])
        for j in range(i, m):
            np.multiply(xw[i], xs[j], out=buf)
            second[:, i, j] = second[:, j, i] = _group_sum(idx, size, q, buf)
    return weight, first, second


def config_index(table: Table, discrete: Sequence[Hashable], rows: np.ndarray | None = None
                 ) -> tuple[np.ndarray, tuple]:
    """``(config (n,), cards)``: each row's configuration of the `discrete` columns (C order), and their cards."""
    cards = tuple(table.column(d).card for d in discrete)
    n = table.n if rows is None else len(rows)
    if not discrete:
        return np.zeros(n, dtype=np.int64), cards
    codes = table.column(discrete[0]).codes
    flat = (codes if rows is None else codes[rows]).astype(np.int64, copy=True)           # (n,)
    for d, k in zip(discrete[1:], cards[1:]):
        codes = table.column(d).codes
        flat *= k
        flat += codes if rows is None else codes[rows]
    return flat, cards


def describe_config(discrete: Sequence[Hashable], states: Sequence[tuple], k: int, cards: tuple) -> str:
    """``"A='x', B='y'"``: configuration `k` (flat index) of the `discrete` parents."""
    idx = np.unravel_index(k, cards) if cards else ()
    return ", ".join(f"{d}={states[i][j]!r}" for i, (d, j) in enumerate(zip(discrete, idx)))


def family_moments(table: Table, node: Hashable, parents: Sequence[Hashable]) -> tuple[Moments, tuple, tuple, tuple]:
    """``(moments, discrete parents, real parents, cards)`` of `node`'s family over the table's rows.

    Rows with a missing cell in the family are skipped.
    """
    disc = tuple(u for u in parents if table.column(u).is_discrete)
    real = tuple(u for u in parents if not table.column(u).is_discrete)
    config, cards = narrow_config(table, disc)                                            # uint8 when it fits
    if config is None:
        config, cards = config_index(table, disc)
    cols = [table.column(u).values for u in (*real, node)]                                # m x (n,)
    shift = None
    if all(table.column(u).complete for u in (*parents, node)):                           # per column, once
        shift = np.array([table.column(u).offset for u in (*real, node)])
    else:
        ok = np.ones(table.n, dtype=bool)
        for c in cols:
            ok &= ~np.isnan(c)
        for d in disc:
            ok &= table.column(d).codes >= 0
        config, cols = config[ok], [c[ok] for c in cols]
    return Moments.from_columns(config, int(np.prod(cards, dtype=np.int64)), cols, shift=shift), disc, real, cards


def conditional_mechanism(parents: Sequence[Hashable], disc: tuple, real: tuple, cards: tuple, b: np.ndarray,
                          w: np.ndarray, var: np.ndarray):
    """A :class:`ConditionalLinearGaussian` (parents in `parents`' order), or a :class:`LinearGaussian` with no
    discrete parent."""
    if not disc:
        return LinearGaussian(list(parents), w[0][[real.index(u) for u in parents]], bias=float(b[0]),
                              sigma=float(np.sqrt(var[0])))
    return ConditionalLinearGaussian(list(parents), b.reshape(cards), w.reshape(*cards, len(real)),
                                     var.reshape(cards))


def check_configurations(node, mo: Moments, var: np.ndarray, disc: tuple, states: Sequence[tuple], cards: tuple,
                         p: int, pseudo: bool, advice: str = "use method='bayes' (pseudo-rows pooled across "
                                                             "configurations) or merge states") -> None:
    """Raise ModelError naming the first configuration with too few rows (unless `pseudo`) or an exact fit."""
    bad = mo.degenerate(var, count_rows=not pseudo) | (mo.weight <= 0)
    if not bad.any():
        return
    k = int(np.flatnonzero(bad)[0])
    where = describe_config(disc, states, k, cards) or "all rows"
    more = f" (and {int(bad.sum()) - 1} more configuration(s))" if bad.sum() > 1 else ""
    what = ("an exact linear fit (variance 0)" if mo.weight[k] >= p + 2 else
            f"{mo.weight[k]:g} row(s); fitting an intercept, {p} weight(s) and a variance needs at least {p + 2}")
    raise ModelError(f"node {node!r}: the configuration {where} of its discrete parents {list(disc)} has "
                     f"{what}{more}; {advice}")


def fit_conditional(node: Hashable, table: Table, parents: Sequence[Hashable], states: Sequence[tuple] | None,
                    prior: Prior):
    """`node`'s real mechanism fitted by per-configuration least squares (see the module docstring).

    Parameters
    ----------
    node : node name
    table : Table
    parents : sequence of node names
        In the order the mechanism declares them.
    states : sequence of tuples, optional
        The state names of the discrete parents (for messages); default the table's.
    prior : Prior
        Its pseudo-counts for shape ``(*cards, 1)`` are the pseudo-rows per configuration.

    Returns
    -------
    ConditionalLinearGaussian, or LinearGaussian when no parent is discrete.

    Raises
    ------
    ModelError
        A configuration with too few rows or an exact fit (naming it), without a prior.
    """
    mo, disc, real, cards = family_moments(table, node, parents)
    st = states if states is not None else [table.column(d).states for d in disc]
    return fit_from_moments(node, mo, parents, disc, real, cards, st, prior)


def fit_from_moments(node: Hashable, mo: Moments, parents: Sequence[Hashable], disc: tuple, real: tuple,
                     cards: tuple, states: Sequence[tuple], prior: Prior):
    """:func:`fit_conditional` from the family's :class:`Moments` (from one table, or merged over partitions).

    `disc` / `real` are the discrete and real parents (in `parents`' order), `cards` and `states` the discrete
    parents' cards and state names; the moments' configurations are C-order over `cards`.
    """
    a = np.broadcast_to(np.asarray(prior.pseudo_counts(node, (*cards, 1)), dtype=np.float64), (*cards, 1))
    pseudo = bool(np.all(a > 0))
    if np.any(a > 0):
        mo = mo.with_pseudo_rows(a.reshape(-1))
    b, w, var = mo.solve(node)
    if not disc and mo.weight[0] < len(real) + 1:
        raise ModelError(f"node {node!r}: {mo.weight[0]:g} complete rows cannot fit {len(real) + 1} "
                         f"linear-Gaussian parameters (intercept and {len(real)} weights)")
    if disc:
        check_configurations(node, mo, var, disc, states, cards, len(real), pseudo)
    return conditional_mechanism(parents, disc, real, cards, b, w, var)
