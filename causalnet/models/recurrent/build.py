"""The unrolled builders: one node per cell quantity, layer, direction and time step.

:class:`Unroller` adds the nodes of one layer and direction at a time; each
cell kind (:class:`RNNCell`, :class:`LSTMCell`, :class:`GRUCell`) writes the
nodes of one time step from the step's input and the previous state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...arguments import check_int
from ...errors import ModelError, ShapeError
from ...mechanisms.tensor import (
    Add,
    Affine,
    Concat,
    Input,
    Interpolate,
    Linear,
    Mul,
    Tanh,
    Zeros,
    float_dtype,
)
from ...model import CausalModel
from ..transformer.weights import StateDict, check_random_size, read_state_dict
from .lengths import LENGTHS, SHAPE, AtLength, Masked

__all__ = ["rnn", "lstm", "gru", "build", "random_weights", "layer_weights", "unroll_direction", "RNNCell",
           "LSTMCell", "GRUCell", "CELLS", "make_cell"]


class RNNCell:
    """``h = act(W_ih x + b_ih + W_hh h' + b_hh)`` (PyTorch ``nn.RNN``); one node ``h[t]`` per step."""

    gates = 1
    states = ("h",)

    def __init__(self, nonlinearity: str = "tanh") -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ModelError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity

    def step(self, add, p: str, t, x: str, prev: dict, w: dict, dt) -> dict:
        b = _sum_bias(w["b_ih"], w["b_hh"])
        h = add(f"{p}.h[{t}]", Affine([x, prev["h"]], [w["W_ih"], w["W_hh"]], b, activation=self.nonlinearity,
                                     dtype=dt))
        return {"h": h}


class LSTMCell:
    """PyTorch ``nn.LSTM``: gates ``i, f, g, o`` (rows of W in that order), ``c = f c' + i g``, ``h = o tanh(c)``."""

    gates = 4
    states = ("h", "c")

    def step(self, add, p, t, x, prev, w, dt) -> dict:
        H = w["W_hh"].shape[1]
        gate = {}
        for k, (name, act) in enumerate((("i", "sigmoid"), ("f", "sigmoid"), ("g", "tanh"), ("o", "sigmoid"))):
            rows = slice(k * H, (k + 1) * H)
            gate[name] = add(f"{p}.{name}[{t}]", Affine([x, prev["h"]], [w["W_ih"][rows], w["W_hh"][rows]],
                                                        _sum_bias(w["b_ih"], w["b_hh"], rows), activation=act,
                                                        dtype=dt))
        fc = add(f"{p}.fc[{t}]", Mul([gate["f"], prev["c"]], dtype=dt))
        ig = add(f"{p}.ig[{t}]", Mul([gate["i"], gate["g"]], dtype=dt))
        c = add(f"{p}.c[{t}]", Add([fc, ig], dtype=dt))
        tc = add(f"{p}.tc[{t}]", Tanh(c, dtype=dt))
        h = add(f"{p}.h[{t}]", Mul([gate["o"], tc], dtype=dt))
        return {"h": h, "c": c}


class GRUCell:
    """PyTorch ``nn.GRU``: ``r, z`` gates, ``n = tanh(W_in x + b_in + r (W_hn h' + b_hn))``, ``h = (1-z) n + z h'``."""

    gates = 3
    states = ("h",)

    def step(self, add, p, t, x, prev, w, dt) -> dict:
        H = w["W_hh"].shape[1]
        rz = {}
        for k, name in enumerate(("r", "z")):
            rows = slice(k * H, (k + 1) * H)
            rz[name] = add(f"{p}.{name}[{t}]", Affine([x, prev["h"]], [w["W_ih"][rows], w["W_hh"][rows]],
                                                      _sum_bias(w["b_ih"], w["b_hh"], rows), activation="sigmoid",
                                                      dtype=dt))
        rows = slice(2 * H, 3 * H)
        hn = add(f"{p}.hn[{t}]", Linear(prev["h"], w["W_hh"][rows], None if w["b_hh"] is None else w["b_hh"][rows],
                                        dtype=dt))
        rhn = add(f"{p}.rhn[{t}]", Mul([rz["r"], hn], dtype=dt))
        xn = add(f"{p}.xn[{t}]", Linear(x, w["W_ih"][rows], None if w["b_ih"] is None else w["b_ih"][rows], dtype=dt))
        npre = add(f"{p}.npre[{t}]", Add([xn, rhn], dtype=dt))
        n = add(f"{p}.n[{t}]", Tanh(npre, dtype=dt))
        h = add(f"{p}.h[{t}]", Interpolate([rz["z"], n, prev["h"]], dtype=dt))
        return {"h": h}


CELLS = {"rnn": RNNCell, "lstm": LSTMCell, "gru": GRUCell}



def _sum_bias(b_ih, b_hh, rows=slice(None)):
    parts = [b[rows] for b in (b_ih, b_hh) if b is not None]
    return None if not parts else parts[0] if len(parts) == 1 else parts[0] + parts[1]


def build(kind: str, weights: Mapping | None = None, *, input_size: int | None = None, hidden_size: int | None = None,
          T: int, layers: int = 1, bidirectional: bool = False, nonlinearity: str = "tanh", bias: bool = True,
          lengths: bool = False, dtype: Any = np.float64, seed: Any = None) -> CausalModel:
    """An unrolled recurrent network of `kind` ("rnn", "lstm", "gru"); see :func:`lstm`."""
    if kind not in CELLS:
        raise ModelError(f"kind must be one of {list(CELLS)}, got {kind!r}")
    cell = make_cell(kind, nonlinearity)
    T = check_int(T, "T", low=1)
    layers = check_int(layers, "layers", low=1)
    dt = float_dtype(dtype, "the model")
    dirs = 2 if bidirectional else 1
    sd = read_state_dict(weights)
    if sd is None:
        sd = random_weights(kind, input_size=input_size, hidden_size=hidden_size, layers=layers,
                            bidirectional=bidirectional, bias=bias, seed=seed)
    w = StateDict(sd)
    per = [[layer_weights(w, k, r, cell.gates) for r in range(dirs)] for k in range(layers)]
    H = per[0][0]["W_hh"].shape[1]
    d_in = per[0][0]["W_ih"].shape[1]
    if hidden_size is not None and hidden_size != H:
        raise ShapeError(f"hidden_size={hidden_size}, but weight_hh_l0 has shape {per[0][0]['W_hh'].shape}")
    if input_size is not None and input_size != d_in:
        raise ShapeError(f"input_size={input_size}, but weight_ih_l0 has shape {per[0][0]['W_ih'].shape}")
    w.check_used()
    mechs: dict = {}

    def add(node, mech):
        mechs[node] = mech
        return node

    def mask(node, t):                      # the state of step t is zero past each row's length
        if lengths:
            mechs[node] = Masked(mechs[node], t, T, dtype=dt)

    if lengths:
        add(LENGTHS, Input((), np.int64))
    xs = [add(f"x[{t}]", Input((d_in,), dt)) for t in range(T)]
    for k in range(layers):
        outs = []
        for r in range(dirs):
            p = f"l{k}.rev" if r else f"l{k}"
            outs.append(unroll_direction(add, mask, cell, p, xs, per[k][r], H, reverse=bool(r), dt=dt))
            if lengths and not r:           # the forward direction ends at each row's own length
                for s in cell.states:
                    add(f"{p}.{s}_n", AtLength([LENGTHS, *(f"{p}.{s}[{t}]" for t in range(T))], dtype=dt))
        xs = outs[0] if dirs == 1 else [add(f"l{k}.y[{t}]", Concat([a, b], dtype=dt))
                                       for t, (a, b) in enumerate(zip(*outs))]
    model = CausalModel(mechs)
    if not lengths:                         # the recurrent loop's forward engine takes this model
        model.cache[SHAPE] = (kind, layers, dirs, T)
    return model


def make_cell(kind: str, nonlinearity: str = "tanh"):
    """The cell object of `kind` ("rnn", "lstm", "gru"), or a ModelError."""
    if kind not in CELLS:
        raise ModelError(f"cell must be one of {list(CELLS)}, got {kind!r}")
    return RNNCell(nonlinearity) if kind == "rnn" else CELLS[kind]()


def unroll_direction(add, mask, cell, p, xs, w, H, *, reverse: bool, dt) -> list:
    """The nodes of one layer in one direction; returns its ``h`` node per time step (in time order).

    `add(node, mech)` adds a node and returns its name; `mask(node, t)` may wrap
    the state node of step `t` (variable lengths) or do nothing; `w` is a
    :func:`layer_weights` dict. The initial states are ``{p}.h[-1]`` (``[T]``
    when `reverse`), zeros.
    """
    T = len(xs)
    start = T if reverse else -1
    prev = {s: add(f"{p}.{s}[{start}]", Zeros(xs[0], H, dtype=dt)) for s in cell.states}
    hs: dict = {}
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        prev = cell.step(add, p, t, xs[t], prev, w, dt)
        for node in prev.values():
            mask(node, t)
        hs[t] = prev["h"]
    return [hs[t] for t in range(T)]


def layer_weights(w: StateDict, k: int, r: int, gates: int) -> dict:
    """``{"W_ih", "W_hh", "b_ih", "b_hh"}`` of layer `k`, direction `r`, read from PyTorch's keys in `w`."""
    sfx = f"_l{k}" + ("_reverse" if r else "")
    if w.has(f"weight_hr{sfx}"):
        raise ModelError(f"weights: 'weight_hr{sfx}' (an LSTM with proj_size) cannot be represented")
    W_hh = w.take(f"weight_hh{sfx}", (None, None))
    H = W_hh.shape[1]
    if W_hh.shape[0] != gates * H:
        raise ShapeError(f"weight '{w.prefix}weight_hh{sfx}' has shape {W_hh.shape}; this cell expects ({gates}H, H)")
    W_ih = w.take(f"weight_ih{sfx}", (gates * H, None))
    return {"W_ih": W_ih, "W_hh": W_hh, "b_ih": w.opt(f"bias_ih{sfx}", (gates * H,)),
            "b_hh": w.opt(f"bias_hh{sfx}", (gates * H,))}


def random_weights(kind: str, *, input_size: int | None, hidden_size: int | None, layers: int = 1,
                   bidirectional: bool = False, bias: bool = True, seed: Any = None) -> dict:
    """A random state dict in PyTorch's layout (``U(-1/sqrt(H), 1/sqrt(H))`` as ``nn.LSTM`` draws).

    The builders draw their weights with this, so ``lstm(random_weights("lstm", ..., seed=0), T=...)``
    equals ``lstm(..., T=..., seed=0)``.
    """
    if kind not in CELLS:
        raise ModelError(f"kind must be one of {list(CELLS)}, got {kind!r}")
    if input_size is None or hidden_size is None:
        raise ModelError("input_size and hidden_size are needed without weights")
    gates, dirs = CELLS[kind].gates, 2 if bidirectional else 1
    input_size = check_int(input_size, "input_size", low=1)
    layers = check_int(layers, "layers", low=1)
    H = check_int(hidden_size, "hidden_size", low=1)
    check_random_size(layers * dirs * gates * H * (input_size + H + dirs * H + 2),
                      f"a {layers}-layer recurrent network", f"input_size={input_size}, hidden_size={H}")
    rng = np.random.default_rng(seed)
    a = H ** -0.5
    sd = {}
    for k in range(layers):
        d_in = input_size if k == 0 else dirs * H
        for r in range(dirs):
            sfx = f"_l{k}" + ("_reverse" if r else "")
            sd[f"weight_ih{sfx}"] = rng.uniform(-a, a, (gates * H, d_in))
            sd[f"weight_hh{sfx}"] = rng.uniform(-a, a, (gates * H, H))
            if bias:
                sd[f"bias_ih{sfx}"] = rng.uniform(-a, a, gates * H)
                sd[f"bias_hh{sfx}"] = rng.uniform(-a, a, gates * H)
    return sd


def _doc_builder(kind: str, what: str):
    def builder(weights: Mapping | None = None, *, input_size: int | None = None, hidden_size: int | None = None,
                T: int, layers: int = 1, bidirectional: bool = False, nonlinearity: str = "tanh", bias: bool = True,
                lengths: bool = False, dtype: Any = np.float64, seed: Any = None) -> CausalModel:
        return build(kind, weights, input_size=input_size, hidden_size=hidden_size, T=T, layers=layers,
                     bidirectional=bidirectional, nonlinearity=nonlinearity, bias=bias, lengths=lengths, dtype=dtype,
                     seed=seed)

    builder.__name__ = builder.__qualname__ = kind
    builder.__doc__ = f"""An unrolled {what} (PyTorch ``nn.{what}``) over `T` steps as a causal DAG.

    Parameters
    ----------
    weights : mapping, optional
        PyTorch's keys: ``weight_ih_l{{k}}``, ``weight_hh_l{{k}}``,
        ``bias_ih_l{{k}}``, ``bias_hh_l{{k}}`` (``_reverse`` for the backward
        direction). None draws random weights with `seed`.
    input_size, hidden_size : int
        Needed without weights; checked against them otherwise.
    T : int
        Time steps: inputs ``x[0]`` ... ``x[T-1]``, each ``(n, input_size)``.
    layers : int
    bidirectional : bool
        Add a backward direction ``l{{k}}.rev`` per layer; the layer's output
        ``l{{k}}.y[t]`` concatenates both.
    nonlinearity : {{"tanh", "relu"}}
        ``rnn`` only.
    bias : bool
        With random weights: include biases.
    lengths : bool
        Variable-length batches: add an input node ``lengths`` ``(n,)``
        (integers in ``[1, T]``). Each sequence then runs as if alone, as
        PyTorch's ``pack_padded_sequence``: states past a row's length are
        zero, the backward direction starts at the row's own last step, and
        the forward direction's final state is the node ``l{{k}}.h_n``
        (``l{{k}}.c_n`` for an LSTM), the state at ``lengths - 1``.
    dtype, seed

    Returns
    -------
    CausalModel
        Per layer ``k`` and step ``t``: hidden state ``l{{k}}.h[t]`` (the
        initial state ``l{{k}}.h[-1]`` is a zero node, so ``do`` on it sets
        it), and the cell's gates as nodes (see the package docstring).
    """
    return builder


rnn = _doc_builder("rnn", "RNN")
lstm = _doc_builder("lstm", "LSTM")
gru = _doc_builder("gru", "GRU")
