"""The mechanism of a node under ``do``, and the affine interventions engines can solve exactly.

:class:`Intervened` wraps the node's natural mechanism and replaces its value by
a constant, per-row values, or a function of the natural value (a *shift*
intervention). Engines recognise it with ``isinstance``; it is the one contract
between :meth:`CausalModel.do <causalnet.CausalModel.do>` and the engines.

A shift given as an opaque callable (``lambda x: x + 1``) can only be run, so
continuous models under it are answered by sampling. An :class:`AffineIntervention`
intervention ``x -> scale · x + offset`` (built with :func:`shift` or
:func:`affine`) is also a callable, but it is *transparent*: the joint-Gaussian,
linear-Cauchy and counterfactual engines read its ``scale`` and ``offset`` and
stay exact.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> m = cn.CausalModel({"X": cn.LinearGaussian([], [], bias=1.0),
...                     "Y": cn.LinearGaussian(["X"], [2.0], sigma=0.5)})
>>> d = m.query("Y", do={"X": cn.shift(3.0)})
>>> float(d.mean[0]), d.method
(8.0, 'exact (joint Gaussian)')
>>> cn.affine(2.0, -1.0)(np.array([1.0, 2.0]))
array([1., 3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from .base import DISCRETE, REAL, Mechanism, Spec

__all__ = ["Intervened", "AffineIntervention", "shift", "affine"]


class AffineIntervention:
    """The intervention ``x -> scale · x + offset`` on a node's natural value.

    Parameters
    ----------
    scale, offset : float
        Finite real numbers.

    Raises
    ------
    ModelError
        If `scale` or `offset` is not a finite real number.
    """

    def __init__(self, scale: float = 1.0, offset: float = 0.0) -> None:
        self.scale = _finite(scale, "scale")
        self.offset = _finite(offset, "offset")

    def __call__(self, x):
        return self.scale * np.asarray(x) + self.offset

    def __eq__(self, other) -> bool:
        return isinstance(other, AffineIntervention) and (self.scale, self.offset) == (other.scale, other.offset)

    def __hash__(self) -> int:
        return hash((AffineIntervention, self.scale, self.offset))

    def __repr__(self) -> str:
        if self.scale == 1.0:
            return f"shift({self.offset!r})"
        return f"affine({self.scale!r}, {self.offset!r})"


def _finite(v: Any, what: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ModelError(f"an affine intervention's {what} must be a finite real number, got {v!r}")
    v = float(v)
    if not np.isfinite(v):
        raise ModelError(f"an affine intervention's {what} must be finite, got {v!r}")
    return v


def shift(delta: float) -> AffineIntervention:
    """The intervention ``x -> x + delta`` (exact on linear-Gaussian and linear-Cauchy models).

    >>> shift(1.5)
    shift(1.5)
    """
    return AffineIntervention(1.0, delta)


def affine(scale: float, offset: float = 0.0) -> AffineIntervention:
    """The intervention ``x -> scale · x + offset``.

    >>> float(affine(2.0, 1.0)(3.0))
    7.0
    """
    return AffineIntervention(scale, offset)


class Intervened(Mechanism):
    """The mechanism of a node under ``do``: a constant, per-row values, or a
    callable of the node's natural value (a shift intervention).

    Attributes
    ----------
    value : constant, array or callable
    natural : Mechanism
        The node's mechanism without the intervention.
    is_shift : bool
        True when `value` is a callable of the natural value.
    affine : AffineIntervention or None
        The intervention when it is an :class:`AffineIntervention` one (engines solve it exactly).
    """

    deterministic = True

    def __init__(self, value: Any, natural: Mechanism) -> None:
        self.value = value
        self.natural = natural
        self.is_shift = callable(value)
        self.affine = value if isinstance(value, AffineIntervention) else None
        super().__init__(natural.parents if self.is_shift else ())
        self.kind = natural.kind

    def spec(self, node, parent_specs) -> Spec:  # the model fills in the original spec
        raise ModelError("internal: an intervened node keeps its original spec")

    def sample_noise(self, n, rng, spec):
        if self.is_shift:
            return self.natural.sample_noise(n, rng, spec)
        return None

    def evaluate(self, node, parents, noise, spec, *, n=None):
        if self.is_shift:
            return self._shifted(node, parents, noise, spec, n)
        v = np.asarray(self.value)
        per_row = v.ndim == len(spec.shape) + 1 and not (spec.kind == DISCRETE and v.ndim == 0)
        if per_row:
            return spec.check_value(node, v, n=n)
        if n is None:
            raise ModelError(f"internal: batch size unknown for constant do on {node!r}")
        return np.broadcast_to(v, (n, *v.shape)).copy()

    def _shifted(self, node, parents, noise, spec, n):
        if noise is None and not self.natural.deterministic:
            raise ModelError(f"shift intervention on {node!r} needs the natural value's noise")
        natural = self.natural.evaluate(node, parents, noise, spec, n=n)
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(self.value(natural))
        except Exception as e:
            raise ModelError(f"the shift intervention on {node!r} raised {type(e).__name__}: {e}") from e
        if spec.kind == DISCRETE:
            if out.dtype.kind not in "iuf" or not np.all(out == np.round(out)):
                raise ModelError(f"the shift intervention on {node!r} must map states to state indices, got "
                                 f"{out.dtype} values")
            out = out.astype(np.int64)
        elif out.dtype.kind in "fc" and not np.all(np.isfinite(out)):
            bad = "NaN" if np.any(np.isnan(out)) else "inf"
            raise ModelError(f"the shift intervention on {node!r} produced {bad} from finite values")
        elif spec.kind == REAL and out.dtype.kind in "iub":
            out = out.astype(np.float64)
        return spec.check_value(node, out, n=n)

    def __repr__(self) -> str:
        if self.affine is not None:
            return f"do({self.affine!r})"
        return f"do({'<callable>' if self.is_shift else self.value!r})"
