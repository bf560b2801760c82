"""Parameters from data, given the structure: CPTs by counting, linear Gaussians by least squares.

A discrete node's CPT is estimated from its **family counts** ``N[pa, x]``
(shape ``(*parent_cards, card)``, see :func:`causalnet.learning.data.family_counts`)
plus the **pseudo-counts** ``α[pa, x]`` of a Dirichlet prior:

    θ[pa, x] = (N[pa, x] + α[pa, x]) / Σ_x' (N[pa, x'] + α[pa, x'])

Each prior is one small class with one method, ``pseudo_counts(node, shape)``:

- :class:`NoPrior` (``method="mle"``): α = 0, the maximum-likelihood estimate.
  A parent configuration never seen in the data has no estimate; it gets a
  uniform row and a :class:`~causalnet.errors.CausalNetWarning` names it.
- :class:`BDeu` (``prior="bdeu"``): α = ESS / (q · r) for q parent
  configurations and r states — the likelihood-equivalent uniform prior.
- :class:`K2` (``prior="k2"``): α = 1.
- :class:`Dirichlet` (``prior={node: pseudo_counts}``): explicit α per node, a
  scalar or an array broadcastable to ``(*parent_cards, card)``.

A continuous node gets a :class:`~causalnet.mechanisms.gaussian.LinearGaussian`
by ordinary least squares with an intercept; ``sigma`` is the
maximum-likelihood noise scale ``sqrt(mean(residual²))``. With discrete
parents it gets a :class:`~causalnet.mechanisms.conditional_gaussian.ConditionalLinearGaussian`,
the same fit in each configuration of them (:mod:`causalnet.learning.conditional`,
where the priors act as pseudo-rows).

Examples
--------
>>> import numpy as np
>>> estimate_table(np.array([[3, 1], [0, 0]]), NoPrior(), "B")[0].tolist()
[[0.75, 0.25], [0.5, 0.5]]
>>> estimate_table(np.array([[3, 1], [0, 0]]), K2(), "B")[0].tolist()
[[0.6666666666666666, 0.3333333333333333], [0.5, 0.5]]
"""

from __future__ import annotations

import itertools
import numbers
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

from ..errors import CausalNetWarning, ModelError
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.tabular import CPT, Categorical

__all__ = ["Prior", "NoPrior", "BDeu", "K2", "Dirichlet", "make_prior", "estimate_table", "warn_unseen", "tabular_mechanism",
           "least_squares", "fit_families", "qr_factor", "merge_qr", "least_squares_from_qr", "DEFAULT_ESS"]

#: BDeu's default equivalent sample size.
DEFAULT_ESS = 10.0


class Prior:
    """A Dirichlet prior over every CPT row: one method, :meth:`pseudo_counts`."""

    name = "prior"

    def pseudo_counts(self, node: Hashable, shape: tuple) -> np.ndarray | float:
        raise NotImplementedError


class NoPrior(Prior):
    """No prior: maximum likelihood."""

    name = "mle"

    def pseudo_counts(self, node, shape):
        return 0.0


class BDeu(Prior):
    """BDeu: pseudo-count ``ess / (q * r)`` in every cell."""

    name = "bdeu"

    def __init__(self, equivalent_sample_size: float = DEFAULT_ESS) -> None:
        ess = equivalent_sample_size
        if isinstance(ess, bool) or not isinstance(ess, numbers.Real) or not np.isfinite(ess) or ess <= 0:
            raise ModelError(f"equivalent_sample_size must be a finite number > 0, got {ess!r}")
        self.ess = float(ess)

    def pseudo_counts(self, node, shape):
        return self.ess / float(np.prod(shape, dtype=float))


class K2(Prior):
    """K2: pseudo-count 1 in every cell."""

    name = "k2"

    def pseudo_counts(self, node, shape):
        return 1.0


class Dirichlet(Prior):
    """Explicit pseudo-counts per node (nodes not named get 0, i.e. maximum likelihood)."""

    name = "dirichlet"

    def __init__(self, pseudo_counts: Mapping[Hashable, object]) -> None:
        self._alpha = {}
        for node, a in pseudo_counts.items():
            try:
                arr = np.array(a, dtype=np.float64)
            except (TypeError, ValueError):
                raise ModelError(f"pseudo-counts for {node!r} are not numeric: {a!r}") from None
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise ModelError(f"pseudo-counts for {node!r} must be finite and >= 0, got {arr.tolist()!r}")
            self._alpha[node] = arr

    @property
    def nodes(self) -> tuple:
        return tuple(self._alpha)

    def pseudo_counts(self, node, shape):
        a = self._alpha.get(node, 0.0)
        try:
            return np.broadcast_to(a, shape)
        except ValueError:
            raise ModelError(f"pseudo-counts for {node!r} have shape {np.shape(a)}; the CPT has shape {shape} "
                             f"(*parent_cards, card), so expected a shape that broadcasts to it") from None


def make_prior(method: str, prior, equivalent_sample_size) -> Prior:
    """The :class:`Prior` for ``fit``'s `method`, `prior` and `equivalent_sample_size` arguments.

    ``"mle"`` takes no prior; ``"bayes"`` defaults to BDeu; ``"em"`` defaults to
    none (maximum-likelihood EM) and takes any prior (MAP-EM).
    """
    if method not in ("mle", "bayes", "em"):
        raise ModelError(f"method must be one of ['mle', 'bayes', 'em'], got {method!r}")
    if method == "mle" and (prior is not None or equivalent_sample_size is not None):
        raise ModelError("method='mle' takes no prior or equivalent_sample_size; use method='bayes'")
    if prior is None:
        prior = "bdeu" if method == "bayes" or equivalent_sample_size is not None else "mle"
    if isinstance(prior, Prior):
        return prior
    if isinstance(prior, Mapping):
        return Dirichlet(prior)
    name = prior.lower() if isinstance(prior, str) else None
    if name == "bdeu":
        return BDeu(DEFAULT_ESS if equivalent_sample_size is None else equivalent_sample_size)
    if equivalent_sample_size is not None:
        raise ModelError(f"equivalent_sample_size is a BDeu setting; prior={prior!r} does not take it")
    if name == "k2":
        return K2()
    if name == "mle":
        return NoPrior()
    raise ModelError(f"prior must be 'bdeu', 'k2', a mapping node -> pseudo-counts, or a Prior; got {prior!r}")


def estimate_table(counts: np.ndarray, prior: Prior, node: Hashable) -> tuple[np.ndarray, np.ndarray]:
    """``(table, empty)``: the posterior-mean (or ML) CPT and the mask of rows with no data and no prior.

    Rows in `empty` (shape ``counts.shape[:-1]``) are uniform.
    """
    total = counts + prior.pseudo_counts(node, counts.shape)       # (*parent_cards, card)
    rows = total.sum(axis=-1, keepdims=True)                       # (*parent_cards, 1)
    empty = rows[..., 0] <= 0                                      # (*parent_cards,)
    table = np.where(rows > 0, total / np.where(rows > 0, rows, 1.0), 1.0 / counts.shape[-1])
    return table, empty


def warn_unseen(node: Hashable, parents: Sequence[Hashable], parent_states: Sequence[tuple],
                empty: np.ndarray) -> None:
    """Warn (CausalNetWarning) that `node`'s CPT has uniform rows for parent configurations never seen."""
    n_empty = int(np.count_nonzero(empty))
    if not n_empty:
        return
    shown = [", ".join(f"{p}={parent_states[i][j]!r}" for i, (p, j) in enumerate(zip(parents, idx)))
             for idx in itertools.islice(zip(*np.nonzero(empty)), 5)]
    more = f" and {n_empty - 5} more" if n_empty > 5 else ""
    what = f"{n_empty} parent configuration(s) {{{'}, {'.join(shown)}}}{more}" if parents else "any row"
    warnings.warn(f"node {node!r}: no data for {what}; their CPT rows are uniform (method='bayes' adds a prior)",
                  CausalNetWarning, stacklevel=4)


def tabular_mechanism(node: Hashable, parents: Sequence[Hashable], table: np.ndarray, states: tuple):
    """A :class:`Categorical` (no parents) or :class:`CPT` holding `table`."""
    if not parents:
        return Categorical(table, states=list(states))
    return CPT(list(parents), table, states=list(states))


def least_squares(node: Hashable, y: np.ndarray, xs: Sequence[np.ndarray], parents: Sequence[Hashable],
                  weights: np.ndarray | None = None) -> LinearGaussian:
    """A :class:`LinearGaussian` for `node` fitted to ``y ≈ bias + Σ w_j x_j`` (optionally weighted).

    Raises
    ------
    ModelError
        With fewer rows than parameters.
    """
    n = y.shape[0]
    if n < len(xs) + 1:
        raise ModelError(f"node {node!r}: {n} complete rows cannot fit {len(xs) + 1} linear-Gaussian parameters "
                         f"(intercept and {len(xs)} weights)")
    design = np.column_stack([np.ones(n), *xs])                    # (n, 1 + p)
    w = np.ones(n) if weights is None else weights
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)   # (1 + p,)
    resid = y - design @ coef                                      # (n,)
    sigma = float(np.sqrt(np.sum(w * resid**2) / np.sum(w)))
    return LinearGaussian(list(parents), coef[1:], bias=float(coef[0]), sigma=sigma)


def qr_factor(y: np.ndarray, xs: Sequence[np.ndarray]) -> np.ndarray:
    """``R`` of shape (p + 2, p + 2): the triangular factor of the design ``[1, x_1..x_p, y]`` of some rows.

    It is a sufficient statistic of least squares that merges across chunks of
    rows (:func:`merge_qr`), without the round-off of normal equations.
    """
    k = len(xs) + 2
    design = np.column_stack([np.ones(y.shape[0]), *xs, y])       # (n, p + 2)
    r = np.linalg.qr(design, mode="r") if design.shape[0] else np.zeros((0, k))
    return np.vstack([r, np.zeros((k - r.shape[0], k))]) if r.shape[0] < k else r


def merge_qr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The ``R`` factor of the rows of two chunks, from their factors `a` and `b` (each (k, k))."""
    return np.linalg.qr(np.vstack([a, b]), mode="r")                  # (k, k)


def least_squares_from_qr(node: Hashable, r: np.ndarray, n: int, parents: Sequence[Hashable]) -> LinearGaussian:
    """The :class:`LinearGaussian` of :func:`least_squares` from the ``R`` factor of its `n` rows.

    Raises
    ------
    ModelError
        With fewer rows than parameters.
    """
    p = len(parents)
    if n < p + 1:
        raise ModelError(f"node {node!r}: {n} complete rows cannot fit {p + 1} linear-Gaussian parameters "
                         f"(intercept and {p} weights)")
    coef, *_ = np.linalg.lstsq(r[:p + 1, :p + 1], r[:p + 1, p + 1], rcond=None)   # (1 + p,)
    rss = float(np.sum((r[:p + 1, p + 1] - r[:p + 1, :p + 1] @ coef) ** 2) + r[p + 1, p + 1] ** 2)
    return LinearGaussian(list(parents), coef[1:], bias=float(coef[0]), sigma=float(np.sqrt(rss / n)))


def fit_families(dag, states: Mapping[Hashable, tuple | None], prior: Prior, counts_of: Callable,
                 real_of: Callable, parents_of: Callable | None = None) -> dict:
    """``{node: mechanism}`` fitted family by family from sufficient statistics.

    A discrete node (``states[v]`` a tuple) gets its CPT from
    ``counts_of(v, parents)`` (shape ``(*parent_cards, card)``) and `prior`;
    a continuous node gets ``real_of(v, parents)`` (a LinearGaussian, or a
    ConditionalLinearGaussian under discrete parents). The
    statistics may come from one table or be summed over partitions.
    ``parents_of(v)`` orders the parents (default: the DAG's order).
    """
    mechs: dict = {}
    for v in dag.topological_order():
        parents = dag.parents(v) if parents_of is None else parents_of(v)
        if states[v] is None:
            mechs[v] = real_of(v, parents)
            continue
        table, empty = estimate_table(counts_of(v, parents), prior, v)       # (*parent_cards, card)
        warn_unseen(v, parents, [states[p] for p in parents], empty)
        mechs[v] = tabular_mechanism(v, parents, table, states[v])
    return mechs
