"""A fast forward pass of an unrolled recurrent model: one tight loop of matmuls per layer.

:func:`run` gives the values :meth:`CausalModel.forward` gives on the model's
outputs, computed the way PyTorch computes them: the input projections of all
``T`` steps in one matmul ``(n T, d) @ (d, G H)``, then per step one matmul
``h @ W_hh^T`` for all gates at once and the cell's elementwise update. The
weights are read back from the model's own nodes (step 0 of each layer and
direction; every step shares them), so nothing is stored twice. A model with
interventions runs through :meth:`CausalModel.forward` instead (same answer,
each intervention honoured).

Symbols: ``n`` batch, ``T`` steps, ``d`` input width, ``H`` hidden, ``G`` gates.
"""

from __future__ import annotations

import re
import weakref
from typing import Any, NamedTuple

import numpy as np

from ...errors import EvidenceError, ModelError
from ...mechanisms.intervened import Intervened
from ...mechanisms.tensor.activations import GATES
from ...model import CausalModel
from .lengths import LENGTHS, Masked, check_lengths

__all__ = ["run", "RecurrentOutput"]


class RecurrentOutput(NamedTuple):
    """PyTorch's return values: ``output`` ``(n, T, D H)``; ``h_n`` (and ``c_n``) ``(layers D, n, H)``."""

    output: np.ndarray
    h_n: np.ndarray
    c_n: np.ndarray | None


def _layout(model: CausalModel) -> tuple[str, int, int, int]:
    """(kind, layers, directions, T) read from the node names of a recurrent builder's model."""
    nodes = model.mechanisms
    if "l0.h[0]" not in nodes or "x[0]" not in nodes:
        raise ModelError("recurrent.run: not a model of recurrent.rnn/lstm/gru (no 'x[0]' or 'l0.h[0]')")
    kind = "lstm" if "l0.i[0]" in nodes else "gru" if "l0.r[0]" in nodes else "rnn"
    layers = 1 + max(int(m.group(1)) for v in nodes if (m := re.match(r"^l(\d+)\.h\[0\]$", str(v))))
    T = 1 + max(int(m.group(1)) for v in nodes if (m := re.match(r"^x\[(\d+)\]$", str(v))))
    return kind, layers, 2 if "l0.rev.h[0]" in nodes else 1, T


#: model -> (layout, fused weights per layer and direction), built on first use; models are immutable
_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prepared(model: CausalModel) -> tuple:
    """``(kind, layers, dirs, T, intervened, weights)`` of `model`, computed once per model."""
    got = _PREPARED.get(model)
    if got is None:
        kind, layers, dirs, T = _layout(model)
        intervened = any(isinstance(m, Intervened) for m in model.mechanisms.values())
        weights = {} if intervened else {
            p: _ready(kind, _fused(model, kind, p)) for k in range(layers)
            for p in ((f"l{k}", f"l{k}.rev") if dirs == 2 else (f"l{k}",))}
        got = _PREPARED[model] = (kind, layers, dirs, T, intervened, weights)
    return got


def _ready(kind: str, w: dict) -> dict:
    """Fused weights laid out for the loop: LSTM rows as i, f, o, g; ``W_ih^T``, ``W_hh^T`` contiguous."""
    H = w["W_hh"].shape[1]
    if kind == "lstm":
        w = _lstm_order(w, H)
    return {**w, "W_ih_T": np.ascontiguousarray(w["W_ih"].T), "W_hh_T": np.ascontiguousarray(w["W_hh"].T)}


def _op(model: CausalModel, node: str):
    mech = model.mechanisms[node]
    return mech.inner if isinstance(mech, Masked) else mech


def _fused(model: CausalModel, kind: str, p: str) -> dict:
    """``W_ih`` ``(G H, d)``, ``W_hh`` ``(G H, H)`` and the bias of the input projection, ``b_hn`` for a GRU."""
    if kind == "rnn":
        op = _op(model, f"{p}.h[0]")
        return {"W_ih": op.weights[0], "W_hh": op.weights[1], "b": op.bias, "act": GATES[op.activation]}
    gates = [_op(model, f"{p}.{g}[0]") for g in ("ifgo" if kind == "lstm" else "rz")]
    w = {"W_ih": [g.weights[0] for g in gates], "W_hh": [g.weights[1] for g in gates],
         "b": [g.bias for g in gates]}
    if kind == "gru":
        xn, hn = _op(model, f"{p}.xn[0]"), _op(model, f"{p}.hn[0]")
        w["W_ih"].append(xn.weight)
        w["W_hh"].append(hn.weight)
        w["b"].append(xn.bias)
        w["b_hn"] = hn.bias
    H = w["W_hh"][0].shape[1]
    w["b"] = [np.zeros(H, dtype=w["W_ih"][0].dtype) if b is None else b for b in w["b"]]
    return {k: (np.concatenate(v) if isinstance(v, list) else v) for k, v in w.items()}


def _lstm_order(w: dict, H: int) -> dict:
    """Rows reordered from PyTorch's ``i, f, g, o`` to ``i, f, o, g``: the three sigmoid gates side by side."""
    perm = np.r_[0:2 * H, 3 * H:4 * H, 2 * H:3 * H]
    return {**w, "W_ih": w["W_ih"][perm], "W_hh": w["W_hh"][perm], "b": w["b"][perm]}


def _sigmoid_(z: np.ndarray) -> np.ndarray:
    """:func:`~causalnet.mechanisms.tensor.activations.sigmoid` in place, operation for operation."""
    z *= 0.5
    np.tanh(z, out=z)
    z += 1.0
    z *= 0.5
    return z


def _lstm_step(z: np.ndarray, c: np.ndarray, h_out: np.ndarray, tmp: np.ndarray, H: int) -> None:
    """One LSTM update from the pre-activations `z` ``(n, 4 H)`` (order i, f, o, g): `c` in place, `h` into `h_out`."""
    _sigmoid_(z[:, :3 * H])
    g = np.tanh(z[:, 3 * H:], out=z[:, 3 * H:])
    np.multiply(z[:, :H], g, out=tmp)                                     # i g
    c *= z[:, H:2 * H]                                                    # f c
    c += tmp
    np.tanh(c, out=tmp)
    np.multiply(z[:, 2 * H:3 * H], tmp, out=h_out)                        # o tanh(c)


def _direction(kind: str, w: dict, X: np.ndarray, valid: np.ndarray | None, reverse: bool):
    """One layer in one direction, time first: `X` ``(T, n, d)`` -> ``(states (T, n, H), final h, final c)``.

    `valid` ``(T, n)`` bool or None (every step valid).
    """
    T, n, _ = X.shape
    H = w["W_hh"].shape[1]
    XP = (X.reshape(T * n, -1) @ w["W_ih_T"]).reshape(T, n, -1)           # (T, n, G H): all input projections
    if w["b"] is not None:
        XP += w["b"]
    W_hh_T = w["W_hh_T"]                                                  # (H, G H)
    out = np.empty((T, n, H), dtype=X.dtype)
    h = np.zeros((n, H), dtype=X.dtype)
    c = np.zeros((n, H), dtype=X.dtype) if kind == "lstm" else None
    z, tmp = np.empty((n, W_hh_T.shape[1]), dtype=X.dtype), np.empty((n, H), dtype=X.dtype)
    keep = None if valid is None else valid[:, :, None].astype(X.dtype)     # (T, n, 1) 1.0 / 0.0
    last = None if valid is None or reverse else valid.sum(axis=0) - 1       # (n,) each row's last step
    h_fin, c_fin = h, c
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        np.matmul(h, W_hh_T, out=z)                                       # (n, G H): every gate at once
        if kind == "lstm":
            z += XP[t]
            _lstm_step(z, c, out[t], tmp, H)
            if keep is not None:
                c *= keep[t]                                              # zero past each row's length
        elif kind == "gru":
            rz = _sigmoid_(XP[t, :, :2 * H] + z[:, :2 * H])               # (n, 2 H)
            hn = z[:, 2 * H:] if w["b_hn"] is None else z[:, 2 * H:] + w["b_hn"]
            n_ = np.tanh(XP[t, :, 2 * H:] + rz[:, :H] * hn)
            out[t] = (1.0 - rz[:, H:]) * n_ + rz[:, H:] * h
        else:
            z += XP[t]
            out[t] = z if w["act"] is None else w["act"](z)
        if keep is not None:
            out[t] *= keep[t]
        h = out[t]
        if last is not None:                                              # the forward state at each length
            h_fin = np.where((last == t)[:, None], h, h_fin)
            c_fin = None if c is None else np.where((last == t)[:, None], c, c_fin)
    if last is None:
        h_fin, c_fin = h.copy(), c
    return out, h_fin, c_fin


def run(model: CausalModel, x: Any, lengths: Any = None) -> RecurrentOutput:
    """The outputs of a recurrent model for inputs `x`, fast (module docstring).

    Parameters
    ----------
    model : CausalModel
        From :func:`~causalnet.models.recurrent.lstm` (``gru``, ``rnn``, ``from_torch``).
    x : array_like of shape (n, T, d)
        ``x[:, t]`` is the input node ``x[t]``.
    lengths : array_like of int, shape (n,), optional
        Required by a model built with ``lengths=True`` (and refused otherwise).

    Returns
    -------
    RecurrentOutput
        ``output`` ``(n, T, D H)``: the last layer's ``h[t]`` (``y[t]`` when
        bidirectional); ``h_n``, ``c_n`` ``(layers D, n, H)`` in PyTorch's
        order: layer ``k`` forward at ``k D``, backward at ``k D + 1``.

    Raises
    ------
    ModelError, EvidenceError
        Not a recurrent builder's model, `x` of the wrong shape, bad `lengths`.
    """
    kind, layers, dirs, T, intervened, weights = _prepared(model)
    dt = model.spec("l0.h[0]").dtype
    X = np.asarray(x)
    d = model.spec("x[0]").shape[0]
    if X.ndim != 3 or X.shape[1:] != (T, d) or X.dtype.kind not in "iuf":
        raise EvidenceError(f"x must be real numbers of shape (n, {T}, {d}), got {X.dtype} {X.shape}")
    if (LENGTHS in model.mechanisms) != (lengths is not None):
        raise EvidenceError(f"this model {'needs' if lengths is None else 'takes no'} 'lengths'")
    valid = None
    if lengths is not None:
        L = check_lengths(model.coerce(LENGTHS, lengths), T)
        if L.shape[0] != X.shape[0]:
            raise EvidenceError(f"'lengths' has {L.shape[0]} rows, x has {X.shape[0]}")
        valid = np.arange(T)[:, None] < L[None, :]                                   # (T, n)
    if intervened:
        return _generic(model, X, lengths, kind, layers, dirs, T)
    X = np.ascontiguousarray(X.astype(dt, copy=False).transpose(1, 0, 2))          # (T, n, d): time first
    h_n, c_n = [], []
    for k in range(layers):
        outs = []
        for r in range(dirs):
            out, h, c = _direction(kind, weights[f"l{k}.rev" if r else f"l{k}"], X, valid, reverse=bool(r))
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        X = outs[0] if dirs == 1 else np.concatenate(outs, axis=-1)                  # (T, n, D H)
    return RecurrentOutput(np.ascontiguousarray(X.transpose(1, 0, 2)), np.stack(h_n),
                           np.stack(c_n) if kind == "lstm" else None)


def _generic(model: CausalModel, X: np.ndarray, lengths, kind: str, layers: int, dirs: int, T: int):
    """:func:`run`'s answer through ``model.forward`` (used when the model has interventions)."""
    values = {f"x[{t}]": X[:, t] for t in range(T)}
    if lengths is not None:
        values[LENGTHS] = lengths
    tr = model.forward(values)
    top = f"l{layers - 1}.y" if dirs == 2 else f"l{layers - 1}.h"
    out = np.stack([tr[f"{top}[{t}]"] for t in range(T)], axis=1)
    states = ("h", "c") if kind == "lstm" else ("h",)
    finals = {s: [] for s in states}
    for k in range(layers):
        for s in states:
            finals[s].append(tr[f"l{k}.{s}_n"] if lengths is not None else tr[f"l{k}.{s}[{T - 1}]"])
            if dirs == 2:
                finals[s].append(tr[f"l{k}.rev.{s}[0]"])
    return RecurrentOutput(out, np.stack(finals["h"]), np.stack(finals["c"]) if kind == "lstm" else None)
