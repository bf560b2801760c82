"""Rebuilding PyTorch ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU`` from the module or its state dict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import ModelError
from ...model import CausalModel
from ..transformer.weights import read_state_dict, weights_dtype
from .build import CELLS, build

__all__ = ["from_torch"]

_MODULES = {"RNN": "rnn", "LSTM": "lstm", "GRU": "gru"}
_GATES = {1: "rnn", 3: "gru", 4: "lstm"}


def from_torch(module_or_state_dict: Any, T: int, *, kind: str | None = None, nonlinearity: str | None = None,
               lengths: bool = False, dtype: Any = None) -> CausalModel:
    """An unrolled copy of a PyTorch recurrent module over `T` steps.

    Parameters
    ----------
    module_or_state_dict : nn.RNN, nn.LSTM, nn.GRU, or its state dict
        Layers, directions and biases are read from the keys; the module's
        ``batch_first`` does not matter (causalnet's inputs are ``x[t]``,
        each ``(n, input_size)``).
    T : int
    kind : {"rnn", "lstm", "gru"}, optional
        Read from the module, or from the gate count of a state dict.
    nonlinearity : {"tanh", "relu"}, optional
        ``nn.RNN`` only (read from the module).
    lengths : bool
        Add the input node ``lengths`` ``(n,)`` for variable-length batches
        (PyTorch's ``pack_padded_sequence``); see :func:`~causalnet.models.recurrent.lstm`.
    dtype : {"float32", "float64"}, optional
        The model's dtype. By default the module's own: float32 weights (a
        ``float32`` module, PyTorch's default) give a float32 model, float64
        weights a float64 one; other floating weights (float16) need `dtype`.

    Returns
    -------
    CausalModel

    Raises
    ------
    ModelError
        A module it cannot rebuild (``proj_size``), unused or missing weights.
    """
    if hasattr(module_or_state_dict, "state_dict") and callable(module_or_state_dict.state_dict):
        mod = module_or_state_dict
        name = type(mod).__name__
        if name not in _MODULES:
            raise ModelError(f"recurrent.from_torch: cannot rebuild a {name}; supported: {list(_MODULES)}")
        if getattr(mod, "proj_size", 0):
            raise ModelError("recurrent.from_torch: an LSTM with proj_size cannot be represented")
        kind = kind or _MODULES[name]
        if name == "RNN":
            nonlinearity = nonlinearity or mod.nonlinearity
        sd = read_state_dict(mod.state_dict())
    elif isinstance(module_or_state_dict, Mapping):
        sd = read_state_dict(module_or_state_dict)
        if kind is None:
            w = sd.get("weight_hh_l0")
            if w is None:
                raise ModelError("recurrent.from_torch: no 'weight_hh_l0' in the state dict")
            g = np.shape(w)[0] // max(np.shape(w)[1], 1)
            kind = _GATES.get(g)
            if kind is None:
                raise ModelError(f"recurrent.from_torch: weight_hh_l0 of shape {np.shape(w)} fits no cell")
    else:
        raise ModelError(f"recurrent.from_torch: expected a module or a state dict, got {type(module_or_state_dict)}")
    if kind not in CELLS:
        raise ModelError(f"kind must be one of {list(CELLS)}, got {kind!r}")
    layers = len({k.split("_l")[1].split("_")[0] for k in sd if k.startswith("weight_hh_l")})
    bidir = any(k.endswith("_reverse") for k in sd)
    return build(kind, sd, T=T, layers=max(layers, 1), bidirectional=bidir, nonlinearity=nonlinearity or "tanh",
                 lengths=lengths, dtype=weights_dtype(sd, dtype, "recurrent.from_torch"))
