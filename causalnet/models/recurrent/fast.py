"""A fast forward pass of an unrolled recurrent model: one tight loop of matmuls per layer.

:func:`run` gives the values :meth:`CausalModel.forward` gives on the model's
outputs, computed the way PyTorch computes them: the input projections a block
of steps per matmul (just before those steps run, so they are still in cache),
then per step one matmul for all gates at once (``W_hh @ h`` on feature-major
states in float32, ``h @ W_hh^T`` on time-major ones in float64: see
:mod:`.layouts`) and the cell's elementwise update in one compiled pass
(:mod:`.kernels`; numpy without numba). The weights are read back from the model's own nodes (step 0 of each layer and
direction; every step shares them), so nothing is stored twice. A model with
interventions runs through :meth:`CausalModel.forward` instead (same answer,
each intervention honoured).

Symbols: ``n`` batch, ``T`` steps, ``d`` input width, ``H`` hidden, ``G`` gates.
"""

from __future__ import annotations

import math
import re
import weakref
from typing import Any, NamedTuple

import numpy as np

from ...errors import EvidenceError, ModelError
from ...inference.engine import Engine
from ...inference.forward import FilledTrace, ForwardRequest
from ...mechanisms.intervened import Intervened
from ...mechanisms.tensor.activations import GATES
from ...model import CausalModel
from ...values import Trace
from .kernels import ACTIVATIONS, gru_step_numpy, kernel, lstm_step_numpy
from .layouts import layout_for
from .lengths import LENGTHS, SHAPE, Masked, check_lengths
from .recognise import recurrent_shape

__all__ = ["run", "RecurrentOutput", "RecurrentForward"]


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


#: model -> (kind, layers, directions, T, intervened, fused weights per layer and direction), built on first
#: use; models are immutable
_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prepared(model: CausalModel) -> tuple:
    """``(kind, layers, dirs, T, intervened, weights)`` of `model`, computed once per model."""
    got = _PREPARED.get(model)
    if got is None:
        kind, layers, dirs, T = _layout(model)
        intervened = any(isinstance(m, Intervened) for m in model.mechanisms.values())
        lay = layout_for(model.spec("l0.h[0]").dtype)
        weights = {} if intervened else {
            p: _ready(kind, _fused(model, kind, p), lay) for k in range(layers)
            for p in ((f"l{k}", f"l{k}.rev") if dirs == 2 else (f"l{k}",))}
        got = _PREPARED[model] = (kind, layers, dirs, T, intervened, weights)
    return got


def _ready(kind: str, w: dict, layout) -> dict:
    """Fused weights laid out for the loop: LSTM rows as i, f, o, g; matrices as `layout` wants; biases set."""
    H = w["W_hh"].shape[1]
    if kind == "lstm":
        w = _lstm_order(w, H)
    G_H = w["W_hh"].shape[0]
    W_ih, W_hh = layout.weights(w["W_ih"], w["W_hh"])
    b = np.zeros(G_H, dtype=w["W_hh"].dtype) if w["b"] is None else w["b"]
    return {**w, "W_ih": W_ih, "W_hh": W_hh, "b": b, "G_H": G_H, "H": H, "layout": layout,
            "b_hn": np.zeros_like(b[:H]) if w.get("b_hn") is None else w["b_hn"]}


def _op(model: CausalModel, node: str):
    mech = model.mechanisms[node]
    return mech.inner if isinstance(mech, Masked) else mech


def _fused(model: CausalModel, kind: str, p: str) -> dict:
    """``W_ih`` ``(G H, d)``, ``W_hh`` ``(G H, H)`` and the bias of the input projection, ``b_hn`` for a GRU."""
    if kind == "rnn":
        op = _op(model, f"{p}.h[0]")
        return {"W_ih": op.weights[0], "W_hh": op.weights[1], "b": op.bias, "act": GATES[op.activation],
                "act_code": ACTIVATIONS[op.activation]}
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


def _direction(kind: str, w: dict, X: np.ndarray, keep: np.ndarray, reverse: bool, y: np.ndarray):
    """One layer in one direction: `X` (``w["layout"]``'s input) -> its states into `y`.

    `keep` ``(T, n)`` 1.0 / 0.0. Returns the final ``(h, c)`` ``(n, H)`` (c None but for an LSTM): each row's
    state at its last valid step forward, at step 0 backward.
    """
    lay, H, G_H = w["layout"], w["H"], w["G_H"]
    T, n = keep.shape
    tb = max(1, min(T, lay.block // max(n, 1)))                                 # steps per input-projection block
    buf = np.empty(G_H * tb * n, dtype=X.dtype)
    z = lay.zeros(G_H, n, X.dtype)                                        # W_hh h[t-1], 0 at the first step
    h = lay.zeros(H, n, X.dtype)
    c = lay.zeros(H, n, X.dtype) if kind == "lstm" else None
    c_last = None if c is None or reverse or keep.all() else np.zeros_like(c)   # only with lengths
    loop = kernel(kind, lay.name, X.dtype)
    for t0 in (range((T - 1) // tb * tb, -1, -tb) if reverse else range(0, T, tb)):
        m = min(tb, T - t0)
        xp = lay.project(w["W_ih"], X, t0, m, buf)                       # a block of input projections
        first = t0 == (0 if not reverse else (T - 1) // tb * tb)
        if loop is None:
            _numpy_steps(kind, w, z, xp, t0, m, reverse, first, keep, c, c_last, y)
        elif kind == "lstm":
            loop(w["W_hh"], z, xp, w["b"], t0, reverse, first, keep, c, c_last is not None,
                 c if c_last is None else c_last, y, h)
        elif kind == "gru":
            loop(w["W_hh"], z, xp, w["b"], w["b_hn"], t0, reverse, first, keep, y, h)
        else:
            loop(w["W_hh"], z, xp, w["b"], w["act_code"], t0, reverse, first, keep, y, h)
    return _finals(lay, y, c, c_last, keep, reverse)


def _numpy_steps(kind: str, w: dict, z, xp, t0: int, m: int, reverse: bool, first: bool, keep, c, c_last, y):
    """The compiled block loop's work in numpy, step by step."""
    lay = w["layout"]
    for s in (range(m - 1, -1, -1) if reverse else range(m)):
        t = t0 + s
        tp = -1 if first and s == (m - 1 if reverse else 0) else t + 1 if reverse else t - 1
        if tp >= 0:
            lay.recur(w["W_hh"], y, tp, z)                               # every gate at once
        _numpy_step(kind, w, z, lay.step_input(xp, s), keep[t], c, y, t, tp)
        if c_last is not None:                                            # each row's c at its last valid step
            np.copyto(lay.rows(c_last), lay.rows(c), where=keep[t][:, None] > 0)


def _numpy_step(kind: str, w: dict, z: np.ndarray, x: np.ndarray, keep: np.ndarray, c, y, t: int, tp: int) -> None:
    """Step `t` in numpy: `x` ``(n, G H)`` is the step's ``W_ih x``, `z` holds ``W_hh h[tp]``; `keep` ``(n,)``."""
    lay = w["layout"]
    a, h = lay.rows(z), lay.at(y, t)                                      # (n, G H), (n, H) views
    if kind == "gru":
        gru_step_numpy(x + w["b"], a, w["b_hn"], lay.at(y, tp) if tp >= 0 else None, h, keep)
        return
    a += x
    a += w["b"]
    if kind == "lstm":
        lstm_step_numpy(a, lay.rows(c), h, keep)
    else:
        h[...] = a if w["act"] is None else w["act"](a)
        h *= keep[:, None]


def _finals(lay, y: np.ndarray, c, c_last, keep: np.ndarray, reverse: bool) -> tuple:
    """``(h, c)`` ``(n, H)`` at each row's last valid step (forward), at step 0 (backward)."""
    c = c if c_last is None else c_last
    c = None if c is None else lay.rows(c)
    if reverse:
        return lay.at(y, 0), c
    last = keep.sum(axis=0).astype(np.intp) - 1                          # (n,) each row's last step
    return lay.gather(y, last), c


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
        Not a recurrent builder's model, `x` of the wrong shape or not finite, bad `lengths`.
    NumericalError
        A state overflows (the node is named, as by ``model.forward``).
    """
    kind, layers, dirs, T, intervened, weights = _prepared(model)
    dt = model.spec("l0.h[0]").dtype
    X = np.asarray(x)
    d = model.spec("x[0]").shape[0]
    if X.ndim != 3 or X.shape[1:] != (T, d) or X.dtype.kind not in "iuf":
        raise EvidenceError(f"x must be real numbers of shape (n, {T}, {d}), got {X.dtype} {X.shape}")
    with np.errstate(over="ignore"):                                                   # overflow -> inf, refused
        Xc = X.astype(dt, copy=False)
    if Xc.size and not (np.isfinite(Xc.min()) and np.isfinite(Xc.max())):                # no copy, no mask
        raise EvidenceError(f"x contains NaN or inf (as {dt})")
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
    keep = np.ones((T, X.shape[0]), dtype=dt) if valid is None else valid.astype(dt)   # (T, n) 1.0 / 0.0
    ys, h_n, c_n = _layers(model, Xc, keep, every_layer=False)
    out = RecurrentOutput(layout_for(dt).outputs(ys[-1]), h_n, c_n)
    if not all(np.isfinite(a).all() for a in out if a is not None):
        return _generic(model, Xc, lengths, kind, layers, dirs, T)   # raises NumericalError naming the node
    return out


def _layers(model: CausalModel, Xc: np.ndarray, keep: np.ndarray, every_layer: bool) -> tuple:
    """The block loop over every layer: ``(states, h_n, c_n)``.

    `Xc` ``(n, T, d)`` in the model's dtype, `keep` ``(T, n)``. ``states`` holds
    each layer's output states in the layout's order (``(D H, T, n)`` or
    ``(T, n, D H)``; :meth:`layout.outputs` turns one into ``(n, T, D H)``):
    every layer's with `every_layer`, else only the last one.
    """
    kind, layers, dirs, T, _, weights = _prepared(model)
    dt = Xc.dtype
    lay = layout_for(dt)
    X = lay.inputs(Xc)
    H = model.spec("l0.h[0]").shape[0]
    h_n, c_n, states = [], [], []
    with np.errstate(all="ignore"):                       # an overflow is found by the caller and named by forward
        for k in range(layers):
            ys = lay.states(dirs, H, T, keep.shape[1], dt)
            for r in range(dirs):
                h, c = _direction(kind, weights[f"l{k}.rev" if r else f"l{k}"], X, keep, bool(r), ys[r])
                h_n.append(h)
                c_n.append(c)
            X = lay.joined(ys)
            if every_layer or k == layers - 1:
                states.append(X)
    return states, np.stack(h_n), np.stack(c_n) if kind == "lstm" else None


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


class RecurrentForward(Engine):
    """The ``recurrent loop`` forward engine (:mod:`causalnet.inference.forward`).

    It takes a plain ``model.forward(values)`` of a model built by
    :func:`~causalnet.models.recurrent.build` (``rnn``, ``lstm``, ``gru``,
    ``from_torch``; without ``lengths``, without interventions: the builder
    marks such a model in ``model.cache``, and :func:`.recognise.recurrent_shape`
    recognises one rebuilt from its nodes, as ``transformer.load`` does) given exactly the inputs ``x[t]``,
    each ``(n, d)`` of one batch size. The block loop of :func:`run` computes
    every layer's states; the trace holds them (and the inputs) and computes
    any other node (gates, cell states, the zero initial states) from its
    parents the first time it is read, so that a run that keeps only states
    costs the loop alone. Anything else, or a state that is not finite, goes
    to the reference run (which names the node).
    """

    name = "recurrent loop"

    def accepts(self, request: ForwardRequest) -> bool:
        model = request.model
        if not request.plain:
            return False
        shape = recurrent_shape(model)          # the builder's mark, or its model recognised after a load
        if shape is None:
            return False
        inputs = model.cache.get("forward: recurrent inputs")
        if inputs is None:
            inputs = model.cache["forward: recurrent inputs"] = tuple(f"x[{t}]" for t in range(shape[3]))
        values = request.values
        if len(values) != len(inputs) or any(type(values.get(v)) is not np.ndarray for v in inputs):
            return False
        d = model.spec(inputs[0]).shape[0]
        n = values[inputs[0]].shape[0]
        if any(a.ndim != 2 or a.shape != (n, d) or a.dtype.kind not in "iuf" for a in map(values.get, inputs)):
            return False
        return request.keep is None or all(k in model.mechanisms for k in request.keep)

    def answer(self, request: ForwardRequest):
        model = request.model
        dt = model.spec("l0.h[0]").dtype
        T = model.cache[SHAPE][3]
        with np.errstate(over="ignore"):
            X = np.stack([request.values[f"x[{t}]"] for t in range(T)], axis=1).astype(dt, copy=False)  # (n, T, d)
        if not _finite(X):
            return _reference(request)                                   # names the input
        states, _, _ = _layers(model, X, np.ones((T, X.shape[0]), dtype=dt), every_layer=True)
        if not all(_finite(Y) for Y in states):
            return _reference(request)                                   # raises NumericalError naming the node
        vals = {f"x[{t}]": X[:, t] for t in range(T)}
        lay, dirs = layout_for(dt), model.cache[SHAPE][2]
        deferred: dict = {}
        for k, Y in enumerate(states):
            if k == len(states) - 1:                                     # the outputs: laid out now
                _add_states(vals, lay.outputs(Y), k, dirs)
                continue
            group = _layer_nodes(model, k, T, dirs)                    # the others when first read
            fill = _filler(lay, Y, k, dirs)
            deferred.update(dict.fromkeys(group, fill))
        trace = FilledTrace(vals, model, X.shape[0], self.name, deferred)
        if request.keep is None:
            return trace
        kept = set(request.keep)                                         # in the reference run's order
        return Trace({k: trace[k] for k in model.dag.topological_order() if k in kept}, model.specs,
                     method=self.name)


def _finite(a: np.ndarray) -> bool:
    """Whether every value of `a` is finite: one BLAS dot ``r @ r`` first (NaN or inf makes it so), then exactly."""
    r = a.reshape(-1)
    with np.errstate(all="ignore"):
        return math.isfinite(np.dot(r, r)) or bool(np.isfinite(a).all())   # the sum may overflow alone


def _layer_nodes(model: CausalModel, k: int, T: int, dirs: int) -> tuple:
    """The state nodes :func:`_add_states` gives for layer `k` (cached per model)."""
    key = f"forward: recurrent layer {k} nodes"
    got = model.cache.get(key)
    if got is None:
        vals: dict = {}
        _add_states(vals, np.empty((0, T, dirs)), k, dirs)
        got = model.cache[key] = tuple(vals)
    return got


def _filler(lay, Y: np.ndarray, k: int, dirs: int):
    """A callable giving layer `k`'s states from `Y` (the layout's order), laid out when first called."""
    def fill() -> dict:
        vals: dict = {}
        _add_states(vals, lay.outputs(Y), k, dirs)
        return vals
    return fill


def _add_states(vals: dict, out: np.ndarray, k: int, dirs: int) -> None:
    """Layer `k`'s states ``l{k}.h[t]`` (``l{k}.rev.h[t]``, ``l{k}.y[t]``) as views of `out` ``(n, T, D H)``."""
    H = out.shape[2] // dirs
    for t in range(out.shape[1]):
        vals[f"l{k}.h[{t}]"] = out[:, t, :H]
        if dirs == 2:
            vals[f"l{k}.rev.h[{t}]"] = out[:, t, H:]
            vals[f"l{k}.y[{t}]"] = out[:, t]


def _reference(request: ForwardRequest):
    trace = request.run_reference()
    trace.method = "node by node"
    return trace

