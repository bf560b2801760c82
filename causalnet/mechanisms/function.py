"""Mechanisms given by a numpy function of the parents.

:class:`Function` adds exogenous noise from a ``scipy.stats`` distribution:
``x = f(*parents) + u``; :class:`Deterministic` has none: ``x = f(*parents)``.
The function receives one ``(n, ...)`` array per parent, in declared order,
and must return ``(n, ...)`` (it is called once per batch, never per row).

Symbols: ``n`` batch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

from ..errors import ModelError, ShapeError
from .base import DISCRETE, REAL, TENSOR, Mechanism, Spec

__all__ = ["Function", "Deterministic"]


def _call(node, fn, parents_order, parents, noise=None):
    args = [np.asarray(parents[p]) for p in parents_order]
    try:
        out = fn(*args)
    except Exception as e:  # the user's function failed: say where
        raise ModelError(f"the function of node {node!r} raised {type(e).__name__}: {e}") from e
    return np.asarray(out, dtype=np.float64) if not np.issubdtype(np.asarray(out).dtype, np.integer) else np.asarray(out)


class Deterministic(Mechanism):
    """``x = fn(*parents)``: a node with no noise of its own.

    Parameters
    ----------
    parents : sequence of node names
    fn : callable
        Vectorized: takes one ``(n, ...)`` array per parent.
    shape : tuple, optional
        Per-row output shape (``()`` for scalars, the default).
    states : sequence, optional
        Give state names to make the output discrete (``fn`` then returns
        integer state indices).
    """

    kind = REAL
    deterministic = True

    def __init__(self, parents: Sequence[Hashable], fn: Callable, *, shape: tuple = (), states=None) -> None:
        super().__init__(parents)
        if not callable(fn):
            raise ModelError(f"Deterministic over {list(self.parents)}: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.shape = tuple(shape)
        self.states = None if states is None else tuple(states)
        if self.states is not None:
            self.kind = DISCRETE

    def spec(self, node, parent_specs) -> Spec:
        if self.states is not None:
            return Spec(DISCRETE, states=self.states, dtype=np.int64)
        return Spec(TENSOR if self.shape else REAL, shape=self.shape)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        out = _call(node, self.fn, self.parents, parents)
        n = _batch(parents, self.parents)
        if n is not None and out.ndim == 0:
            out = np.full(n, out.item())
        if spec.kind == DISCRETE:
            if not np.issubdtype(out.dtype, np.integer):
                if not np.all(out == np.round(out)):
                    raise ModelError(f"node {node!r} is discrete but its function returned non-integer values")
                out = out.astype(np.int64)
            return spec.check_value(node, out)
        if out.shape[1:] != spec.shape or (n is not None and out.shape[0] != n):
            raise ShapeError(f"node {node!r} expects (n, *{spec.shape}) from its function, got {out.shape}")
        return out


def _batch(parents: Mapping, order) -> int | None:
    for p in order:
        a = np.asarray(parents[p])
        if a.ndim:
            return a.shape[0]
    return None


class Function(Mechanism):
    """``x = fn(*parents) + u`` with ``u`` from a ``scipy.stats`` distribution.

    Parameters
    ----------
    parents : sequence of node names
    fn : callable
        Vectorized function of one ``(n,)`` array per parent, returning ``(n,)``.
    noise : frozen scipy.stats distribution, optional
        E.g. ``scipy.stats.norm(0, 0.5)``. None makes the node deterministic.

    Notes
    -----
    The noise is additive, so it is abducted exactly: ``u = x - fn(pa)``.
    """

    kind = REAL
    can_abduct = True

    def __init__(self, parents: Sequence[Hashable], fn: Callable, noise=None) -> None:
        super().__init__(parents)
        if not callable(fn):
            raise ModelError(f"Function over {list(self.parents)}: fn must be callable, got {type(fn).__name__}")
        if noise is not None and not (hasattr(noise, "rvs") and (hasattr(noise, "logpdf") or hasattr(noise, "logpmf"))):
            raise ModelError(f"Function over {list(self.parents)}: noise must be a frozen scipy.stats distribution, "
                             f"got {type(noise).__name__}")
        self.fn = fn
        self.noise = noise
        self.deterministic = noise is None

    def spec(self, node, parent_specs) -> Spec:
        return Spec(REAL)

    def sample_noise(self, n, rng, spec):
        if self.noise is None:
            return None
        return np.asarray(self.noise.rvs(size=n, random_state=rng), dtype=np.float64)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        f = _call(node, self.fn, self.parents, parents).astype(np.float64)
        n = _batch(parents, self.parents)
        if f.ndim == 0 and n is not None:
            f = np.full(n, float(f))
        if f.ndim > 1:
            raise ShapeError(f"node {node!r} expects (n,) from its function, got {f.shape}")
        return f if noise is None else f + np.asarray(noise, dtype=np.float64)

    def abduct(self, node, value, parents, spec):
        return np.asarray(value, dtype=np.float64) - self.evaluate(node, parents, None, spec)

    def log_prob(self, node, value, parents, spec):
        if self.noise is None:
            raise ModelError(f"node {node!r} is deterministic and has no density")
        u = self.abduct(node, value, parents, spec)
        if hasattr(self.noise, "logpdf"):
            return np.asarray(self.noise.logpdf(u), dtype=np.float64)
        return np.asarray(self.noise.logpmf(u), dtype=np.float64)
