"""Elementwise activations: ReLU, GELU (exact or tanh form), Tanh, and the table FeedForward uses.

``ACTIVATIONS`` maps an activation's name to its function, looked up once when
an op is built (no string switch at run time).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np

from ...errors import ModelError
from .base import TensorOp
from .erf import gelu_erf, gelu_erf_
from .shapes import cast

__all__ = ["ReLU", "GELU", "Tanh", "Sigmoid", "gelu", "relu_", "sigmoid", "ACTIVATIONS", "GATES"]


class ReLU(TensorOp):
    """``max(0, x)`` elementwise."""

    def infer_shape(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return np.maximum(cast(x, self.dtype), 0)


class GELU(TensorOp):
    """``x Phi(x)`` elementwise (PyTorch ``nn.GELU``; ``approximate="tanh"`` for the tanh form)."""

    def __init__(self, parent: Hashable, *, approximate: str = "none", dtype: Any = np.float64) -> None:
        super().__init__(parent, dtype=dtype)
        if approximate not in ("none", "tanh"):
            raise ModelError(f"GELU approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def infer_shape(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return gelu(cast(x, self.dtype), self.approximate)


class Tanh(TensorOp):
    """``tanh(x)`` elementwise (BERT's pooler)."""

    def infer_shape(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return np.tanh(cast(x, self.dtype))


class Sigmoid(TensorOp):
    """``1 / (1 + exp(-x))`` elementwise (the gates of LSTM and GRU cells)."""

    def infer_shape(self, node, shapes):
        return shapes[0]

    def _run(self, x):
        return sigmoid(cast(x, self.dtype))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, without overflow for large negative inputs (via tanh)."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """``x Phi(x)`` (exact, by :func:`~causalnet.mechanisms.tensor.erf.gelu_erf`) or its tanh form."""
    if approximate == "tanh":
        c = np.asarray(math.sqrt(2.0 / math.pi), dtype=x.dtype)
        xc = np.clip(x, -20.0, 20.0)                    # tanh is exactly +-1 beyond; x**3 would overflow
        return 0.5 * x * (1.0 + np.tanh(c * (xc + np.asarray(0.044715, dtype=x.dtype) * xc ** 3)))
    return gelu_erf(x)


def relu_(x: np.ndarray) -> np.ndarray:
    """``max(0, x)`` in place (on a fresh array the caller owns)."""
    return np.maximum(x, 0, out=x)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form (GPT-2's ``gelu_new``, PyTorch ``approximate="tanh"``)."""
    return gelu(x, "tanh")


#: activation name -> function of a fresh array (may work in place)
ACTIVATIONS = {"relu": relu_, "gelu": gelu_erf_, "gelu_tanh": gelu_tanh}


#: gate/cell nonlinearity name -> function (None: identity); used by Affine
GATES = {None: None, "sigmoid": sigmoid, "tanh": np.tanh, "relu": relu_}
