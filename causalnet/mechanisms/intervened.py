"""The mechanism of a node under ``do``.

:class:`Intervened` wraps the node's natural mechanism and replaces its value by a
constant, per-row values, or a callable of the natural value (a shift
intervention). Engines recognise it with ``isinstance``; it is the one contract
between :meth:`CausalModel.do <causalnet.CausalModel.do>` and the engines.
"""

from typing import Any

import numpy as np

from ..errors import ModelError
from .base import DISCRETE, Mechanism, Spec

__all__ = ["Intervened"]

class Intervened(Mechanism):
    """The mechanism of a node under ``do``: a constant, per-row values, or a
    callable of the node's natural value (a shift intervention)."""

    deterministic = True

    def __init__(self, value: Any, natural: Mechanism) -> None:
        self.value = value
        self.natural = natural
        self.is_shift = callable(value)
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
            if noise is None and not self.natural.deterministic:
                raise ModelError(f"shift intervention on {node!r} needs the natural value's noise")
            natural = self.natural.evaluate(node, parents, noise, spec, n=n)
            try:
                out = self.value(natural)
            except Exception as e:
                raise ModelError(f"the shift intervention on {node!r} raised {type(e).__name__}: {e}") from e
            out = np.asarray(out)
            if spec.kind == DISCRETE and np.all(out == np.round(out)):
                out = out.astype(np.int64)
            return spec.check_value(node, out, n=n)
        v = np.asarray(self.value)
        per_row = v.ndim == len(spec.shape) + 1 and not (spec.kind == DISCRETE and v.ndim == 0)
        if per_row:
            return spec.check_value(node, v, n=n)
        if n is None:
            raise ModelError(f"internal: batch size unknown for constant do on {node!r}")
        return np.broadcast_to(v, (n, *v.shape)).copy()

    def __repr__(self) -> str:
        return f"do({'<callable>' if self.is_shift else self.value!r})"
