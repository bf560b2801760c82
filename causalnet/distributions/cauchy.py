"""The Cauchy results: componentwise marginals of linear-Cauchy targets.

:class:`Cauchy` is one target's law ``Cauchy(loc, scale)``, elementwise over
arrays (``.prob_greater(c)`` is the CausalQwen one-vs-rest probability);
:class:`CauchyMarginals` holds several targets' marginals by node, like the
dict it replaced, with ``.method`` and ``.query`` as every result. The engine
that computes them is :mod:`causalnet.inference.cauchy`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from ..arguments import as_generator, check_int
from ..errors import ModelError
from ..limits import check_bytes
from .checks import as_points
from .results import result_label

__all__ = ["Cauchy", "CauchyMarginals"]

_LOG_PI = float(np.log(np.pi))


class Cauchy:
    """Independent Cauchy marginals ``Cauchy(loc, scale)``, elementwise over arrays.

    Parameters
    ----------
    loc : array_like
        Location (median). Batch first when the query was batched.
    scale : array_like
        Scale (half the interquartile range), > 0; broadcast against `loc`.
    method : str, default "given"
        Which engine produced the distribution (attribute ``method``).
    node : hashable, optional
        The node this is the marginal of, when it came from a query (attribute ``node``).
    copy : bool, default True
        Copy `loc` and `scale` (False: keep read-only views, for engines that own the arrays).
    query : str, optional
        The question answered (attribute ``query``, set by the front door).

    Raises
    ------
    ModelError
        If a scale is not positive or not finite, or a loc is not finite.

    Examples
    --------
    >>> d = Cauchy([0.0, 1.0], 2.0)
    >>> d.scale
    array([2., 2.])
    >>> d.prob_greater(0.0)
    array([0.5       , 0.64758362])
    >>> d.ppf(0.75)
    array([2., 3.])
    """

    def __init__(self, loc, scale, *, method: str = "given", node: Hashable | None = None,
                 copy: bool = True, query: str | None = None) -> None:
        try:
            loc = np.asarray(loc, dtype=np.float64)
            scale = np.asarray(scale, dtype=np.float64)
            if loc.shape != scale.shape:
                loc, scale = np.broadcast_arrays(loc, scale)
        except (TypeError, ValueError) as e:
            raise ModelError(f"Cauchy: loc and scale must be numeric and broadcastable ({e})") from None
        # two reductions each and no temporary array: min is NaN when any entry is
        if loc.size and not (np.isfinite(loc.min()) and np.isfinite(loc.max())):
            raise ModelError(f"Cauchy{'' if node is None else f' of {node!r}'}: loc must be finite, got NaN or inf")
        if scale.size and not (scale.min() > 0 and scale.max() < np.inf):
            bad = scale[~(np.isfinite(scale) & (scale > 0))].ravel()[0]
            raise ModelError(f"Cauchy{'' if node is None else f' of {node!r}'}: scale must be finite and > 0, "
                             f"got {float(bad)!r}")
        self.loc = loc.copy() if copy else loc.view()
        self.scale = scale.copy() if copy else scale.view()
        self.loc.setflags(write=False)
        self.scale.setflags(write=False)
        self.method = str(method)
        self.node = node
        self.query = query

    def _name(self) -> str:
        return "Cauchy" if self.node is None else f"Cauchy of {self.node!r}"

    # -- summaries -------------------------------------------------------------------

    @property
    def shape(self) -> tuple:
        return self.loc.shape

    @property
    def median(self) -> np.ndarray:
        """The median (= mode = loc). The mean does not exist."""
        return self.loc

    mode = median

    @property
    def iqr(self) -> np.ndarray:
        """Interquartile range, ``2 * scale``."""
        return 2.0 * self.scale

    def entropy(self) -> np.ndarray:
        """Differential entropy ``log(4 π scale)``."""
        return np.log(4.0 * np.pi * self.scale)

    # -- densities ---------------------------------------------------------------------

    def log_prob(self, x) -> np.ndarray:
        """Log density ``-log(π scale) - log(1 + ((x - loc)/scale)^2)``, elementwise (broadcast)."""
        x = as_points(x, f"{self._name()}.log_prob")
        z = np.abs(x - self.loc) / self.scale
        with np.errstate(over="ignore"):
            l1p = np.where(z > 1e150, 2.0 * np.log(np.maximum(z, 1e-300)), np.log1p(z * z))
        return -_LOG_PI - np.log(self.scale) - l1p

    def prob(self, x) -> np.ndarray:
        """Density at `x`."""
        return np.exp(self.log_prob(x))

    def cdf(self, x) -> np.ndarray:
        """``P(X <= x) = 1/2 + atan((x - loc)/scale)/π`` (computed without cancellation in the tails)."""
        x = as_points(x, f"{self._name()}.cdf")
        return np.arctan2(self.scale, self.loc - x) / np.pi

    def sf(self, x) -> np.ndarray:
        """``P(X > x)``."""
        t = as_points(x, f"{self._name()}.sf") - self.loc
        if not isinstance(t, np.ndarray) or t.ndim == 0 or t.shape != np.broadcast_shapes(t.shape, self.scale.shape):
            return np.arctan2(self.scale, t) / np.pi
        np.arctan2(self.scale, t, out=t)
        t *= 1.0 / np.pi
        return t

    def prob_greater(self, c) -> np.ndarray:
        """The one-vs-rest probability ``P(X > c) = 1/2 + atan((loc - c)/scale)/π``.

        `c` broadcasts against `loc` (e.g. per-class thresholds of shape (V,)
        against scores of shape (n, T, V)).
        """
        return self.sf(as_points(c, f"{self._name()}.prob_greater"))

    def ppf(self, q) -> np.ndarray:
        """Quantile function ``loc + scale · tan(π (q - 1/2))``; ``q`` in [0, 1] broadcast against loc.

        Raises
        ------
        ModelError
            If some q is outside [0, 1] or NaN.
        """
        try:
            q = np.asarray(q, dtype=np.float64)
        except (TypeError, ValueError):
            raise ModelError(f"{self._name()}.ppf: quantile levels must be numbers in [0, 1], got {q!r}") from None
        if not np.all((q >= 0) & (q <= 1)):
            raise ModelError(f"Cauchy.ppf: quantile levels must lie in [0, 1], got {q[~((q >= 0) & (q <= 1))].ravel()[0]!r}")
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.tan(np.pi * (q - 0.5))
        t = np.where(q == 0, -np.inf, np.where(q == 1, np.inf, t))
        return self.loc + self.scale * t

    def quantiles(self, qs: Iterable[float]) -> np.ndarray:
        """Quantiles at several levels: shape ``(*self.shape, len(qs))``."""
        qs = np.asarray(list(qs), dtype=np.float64).reshape(-1)
        q = self.ppf(qs.reshape((-1,) + (1,) * self.loc.ndim))               # (len(qs), *shape)
        return np.moveaxis(q, 0, -1)                                         # (*shape, len(qs))

    def interval(self, p: float) -> tuple[np.ndarray, np.ndarray]:
        """Central interval holding probability `p`."""
        return self.ppf(0.5 - p / 2), self.ppf(0.5 + p / 2)

    # -- sampling --------------------------------------------------------------------------

    def sample(self, size: int | tuple = (), seed: Any = None) -> np.ndarray:
        """Draws of shape ``(*size, *self.shape)`` (draw axes first)."""
        if isinstance(size, (int, np.integer, bool, np.bool_)) or not isinstance(size, (tuple, list)):
            size = (size,)
        size = tuple(check_int(k, "Cauchy.sample size", low=0) for k in size)
        check_bytes(8.0 * float(np.prod(size, dtype=np.float64)) * max(self.loc.size, 1),
                    what=f"{size} draws of {self._name()}", cause="draws x shape x 8 bytes")
        rng = as_generator(seed)
        return self.loc + self.scale * rng.standard_cauchy(size + self.loc.shape)

    # -- containers, printing and pandas ------------------------------------------------

    def __getitem__(self, idx) -> Cauchy:
        return Cauchy(self.loc[idx], self.scale[idx], method=self.method, node=self.node)

    def __len__(self) -> int:
        if self.loc.ndim == 0:
            raise TypeError("a scalar Cauchy has no len()")
        return self.loc.shape[0]

    @property
    def label(self) -> str:
        """The query this result answers (``P(node)`` when none was given)."""
        return result_label(self.query, () if self.node is None else (self.node,)) if self.query or self.node is not None \
            else "Cauchy"

    def __repr__(self) -> str:
        if self.loc.size == 1:
            body = f"loc={float(self.loc.ravel()[0]):.6g}, scale={float(self.scale.ravel()[0]):.6g}"
        else:
            body = f"shape={self.loc.shape}"
        name = f"{self.label}: " if self.query or self.node is not None else ""
        return f"<Cauchy {name}{body}, method={self.method!r}>"

    def to_pandas(self):
        """A DataFrame with columns ``loc`` and ``scale``, one row per component (the index is the
        component's position; one row for a scalar). ``.attrs["query"]`` holds the question."""
        import pandas as pd  # optional heavy dependency, imported on use

        index = pd.MultiIndex.from_tuples(list(np.ndindex(*self.shape))) if self.loc.ndim > 1 else \
            pd.RangeIndex(self.loc.size)
        frame = pd.DataFrame({"loc": self.loc.reshape(-1), "scale": self.scale.reshape(-1)}, index=index)
        frame.attrs["query"] = self.label
        return frame


class CauchyMarginals(Mapping):
    """The exact marginals of several linear-Cauchy targets: a mapping node -> :class:`Cauchy`.

    It reads like the dict it replaces (``res["Y"]``, ``list(res)``,
    ``res.items()``) and, like every result, names its engine and question.
    The targets are dependent when they share noise sources: use
    :func:`causalnet.inference.cauchy.affine_forms` for functionals of several.

    Attributes
    ----------
    variables : tuple
    method : str
    query : str or None

    Examples
    --------
    >>> r = CauchyMarginals({"X": Cauchy(0.0, 1.0), "Y": Cauchy(2.0, 3.0)}, method="exact", query="P(X, Y)")
    >>> float(r["Y"].scale), list(r)
    (3.0, ['X', 'Y'])
    >>> r
    <CauchyMarginals P(X, Y): X loc=0 scale=1; Y loc=2 scale=3, method='exact'>
    """

    def __init__(self, marginals: Mapping, *, method: str = "exact", query: str | None = None) -> None:
        self._marginals = dict(marginals)
        self.variables = tuple(self._marginals)
        self.method = str(method)
        self.query = query

    def __getitem__(self, node) -> Cauchy:
        if node not in self._marginals:
            raise KeyError(node)
        return self._marginals[node]

    def __iter__(self):
        return iter(self._marginals)

    def __len__(self) -> int:
        return len(self._marginals)

    @property
    def label(self) -> str:
        """The query this result answers (``P(vars)`` when none was given)."""
        return result_label(self.query, self.variables)

    def __repr__(self) -> str:
        parts = []
        for v, d in self._marginals.items():
            parts.append(f"{v} loc={float(d.loc.ravel()[0]):.4g} scale={float(d.scale.ravel()[0]):.4g}"
                         if d.loc.size == 1 else f"{v} shape={d.shape}")
        return f"<CauchyMarginals {self.label}: {'; '.join(parts)}, method={self.method!r}>"

    def to_pandas(self):
        """A long DataFrame: columns ``variable``, ``loc``, ``scale`` (one row per component of each
        target, in order); ``.attrs["query"]`` holds the question."""
        import pandas as pd  # optional heavy dependency, imported on use

        frame = pd.DataFrame({
            "variable": np.concatenate([np.full(d.loc.size, v, dtype=object) for v, d in self._marginals.items()]),
            "loc": np.concatenate([d.loc.reshape(-1) for d in self._marginals.values()]),
            "scale": np.concatenate([d.scale.reshape(-1) for d in self._marginals.values()])})
        frame.attrs["query"] = self.label
        return frame
