"""Mechanisms given by a numpy function of the parents.

:class:`Function` adds exogenous noise from a ``scipy.stats`` distribution:
``x = f(*parents) + u``; :class:`Deterministic` has none: ``x = f(*parents)``.
The function receives one ``(n, ...)`` array per parent, in declared order,
and must return ``(n, ...)`` (it is called once per batch, never per row).

Symbols: ``n`` batch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ModelError, ShapeError
from .base import DISCRETE, REAL, TENSOR, Mechanism, Spec, as_real_array, as_shape, check_finite_output, check_states

__all__ = ["Function", "Deterministic"]


def _call(node, fn, parents_order, parents) -> np.ndarray:
    """Call a user function on the parents' arrays; its output as a real (or integer) array.

    Raises
    ------
    ModelError
        Naming the node, if the function raises or returns something that is not
        an array of real numbers (complex, strings, objects).
    """
    args = [np.asarray(parents[p]) for p in parents_order]
    try:
        with np.errstate(all="ignore"):        # NaN/inf are judged below, by check_finite_output
            out = np.asarray(fn(*args))
    except Exception as e:  # the user's function failed: say where
        raise ModelError(f"the function of node {node!r} raised {type(e).__name__}: {e}") from e
    if out.dtype.kind in "iu":
        return out
    if out.dtype.kind == "b" or out.dtype.kind not in "fO":
        raise ModelError(f"the function of node {node!r} must return real numbers, got dtype {out.dtype}")
    try:
        return as_real_array(out, f"the function of node {node!r}", "its output", finite=False)
    except ModelError as e:
        raise ModelError(f"{e} (node {node!r})") from None


def _rows_of(parents: Mapping, order, n: int | None) -> int | None:
    """The batch size: `n` when the model passes it, else the first batched parent's length."""
    if n is not None:
        return n
    for p in order:
        a = np.asarray(parents[p])
        if a.ndim:
            return a.shape[0]
    return None


def _fit_rows(node, out: np.ndarray, n: int | None, shape: tuple) -> np.ndarray:
    """Broadcast a per-row constant to ``(n, *shape)`` and check the function's output shape."""
    if out.ndim == len(shape):
        if n is None:                          # unbatched call (every parent a single value)
            return out
        out = np.broadcast_to(out, (n, *out.shape)).copy()
    ok = out.ndim == len(shape) + 1 and (n is None or out.shape[0] == n) and \
        all(s is None or s == o for s, o in zip(shape, out.shape[1:]))
    if not ok:
        want = "(n" + "".join(f", {'?' if s is None else s}" for s in shape) + ("," if not shape else "") + ")"
        raise ShapeError(f"node {node!r} expects {want} from its function with n = {n}, got {out.shape}")
    return out


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
        who = f"Deterministic over {list(self.parents)}"
        if not callable(fn):
            raise ModelError(f"{who}: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.shape = as_shape(shape, who)
        if states is not None:
            if not isinstance(states, (str, bytes)) and isinstance(states, Iterable):
                states = tuple(states)
            self.states = check_states(states, len(states) if isinstance(states, tuple) else 0, who)
            if not self.states:
                raise ModelError(f"{who}: a discrete node needs at least one state")
            if self.shape:
                raise ModelError(f"{who}: a discrete node holds (n,) state indices; got shape {self.shape}")
            self.kind = DISCRETE
        else:
            self.states = None

    def spec(self, node, parent_specs) -> Spec:
        if self.states is not None:
            return Spec(DISCRETE, states=self.states, dtype=np.int64)
        return Spec(TENSOR if self.shape else REAL, shape=self.shape)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        out = _call(node, self.fn, self.parents, parents)
        out = _fit_rows(node, out, _rows_of(parents, self.parents, n), () if spec.kind == DISCRETE else spec.shape)
        if spec.kind == DISCRETE:
            if not np.issubdtype(out.dtype, np.integer):
                if not np.all(np.isfinite(out)) or not np.all(out == np.round(out)):
                    raise ModelError(f"node {node!r} is discrete but its function returned non-integer values")
                out = out.astype(np.int64)
            return spec.check_value(node, out)
        return check_finite_output(node, out, (parents[p] for p in self.parents), error=ModelError,
                                   what="its function")


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
        f = _fit_rows(node, f, _rows_of(parents, self.parents, n), ())            # (n,)
        check_finite_output(node, f, (parents[p] for p in self.parents), error=ModelError, what="its function")
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
