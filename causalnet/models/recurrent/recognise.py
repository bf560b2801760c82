"""A recurrent builder's model recognised from its nodes, so that the fast loop takes it after a save and load.

:func:`~causalnet.models.recurrent.build.build` marks the models it returns
(``model.cache[SHAPE]``, :mod:`.lengths`), and the ``recurrent loop`` forward
engine (:mod:`.fast`) takes only marked models: its loop reads each layer's
weights from step 0 and trusts every step to share them. A model rebuilt
from its nodes (``transformer.load`` of a saved LSTM, ``CausalModel(m.mechanisms)``)
has no cache, so it would run node by node. :func:`recurrent_shape` gives
such a model its mark back when, and only when, it *is* a builder's model:
it reads the state dict off the nodes of step 0 (PyTorch's keys), builds
that model again with :func:`build`, and requires the same nodes with
mechanisms of the same class and equal arguments (arrays equal in value and
dtype). Anything else (an intervention, a step whose weights differ, an
extra node, variable lengths) is not marked and runs node by node. The
answer is cached on the model either way (models are immutable).

Examples
--------
>>> import numpy as np
>>> from causalnet import CausalModel
>>> from causalnet.models import recurrent
>>> m = recurrent.lstm(input_size=3, hidden_size=4, T=2, seed=0)
>>> again = CausalModel(dict(m.mechanisms))                  # the same nodes, no cache
>>> recurrent_shape(again)
('lstm', 1, 1, 2)
>>> again.forward({"x[0]": np.ones((1, 3)), "x[1]": np.ones((1, 3))}).method
'recurrent loop'
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...errors import CausalNetError
from ...model import CausalModel
from .build import build
from .lengths import LENGTHS, SHAPE

__all__ = ["recurrent_shape", "RECOGNISED"]

#: ``model.cache`` key holding False once a model has been found not to be a builder's model
RECOGNISED = "recurrent: recognised"

_GATES = {"rnn": ("h",), "lstm": ("i", "f", "g", "o"), "gru": ("r", "z")}


def recurrent_shape(model: CausalModel) -> tuple | None:
    """``(kind, layers, directions, T)`` when `model` is a recurrent builder's model without lengths, else None.

    The builder's mark when present; otherwise recognised once (module docstring) and cached.
    """
    cache = model.cache
    got = cache.get(SHAPE)
    if got is not None:
        return got
    mechs = model.mechanisms
    if "x[0]" not in mechs or "l0.h[0]" not in mechs or LENGTHS in mechs or cache.get(RECOGNISED) is False:
        return None
    shape = _recognise(model)
    if shape is None:
        cache[RECOGNISED] = False
        return None
    cache[SHAPE] = shape
    return shape


def _recognise(model: CausalModel) -> tuple | None:
    """The shape of `model` if the builder, given the weights of its step 0, builds exactly its nodes."""
    mechs = model.mechanisms
    kind = "lstm" if "l0.i[0]" in mechs else "gru" if "l0.r[0]" in mechs else "rnn"
    layers = 1 + max(int(m.group(1)) for v in mechs if (m := re.match(r"^l(\d+)\.h\[0\]$", str(v))))
    T = 1 + max(int(m.group(1)) for v in mechs if (m := re.match(r"^x\[(\d+)\]$", str(v))))
    dirs = 2 if "l0.rev.h[0]" in mechs else 1
    try:
        sd, nonlinearity = _state_dict(mechs, kind, layers, dirs)
        ref = build(kind, sd, T=T, layers=layers, bidirectional=dirs == 2, nonlinearity=nonlinearity,
                    dtype=model.spec("l0.h[0]").dtype)
    except (CausalNetError, AttributeError, KeyError, IndexError, TypeError, ValueError):
        return None                                      # not a builder's nodes: the reference run takes it
    theirs = ref.mechanisms
    if mechs.keys() != theirs.keys() or not all(_same(mechs[v], theirs[v]) for v in theirs):
        return None
    return kind, layers, dirs, T


def _state_dict(mechs, kind: str, layers: int, dirs: int) -> tuple[dict, str]:
    """PyTorch's state dict read off the nodes of step 0 of every layer and direction, and the RNN's nonlinearity."""
    sd: dict = {}
    nonlinearity = "tanh"
    for k in range(layers):
        for r in range(dirs):
            p, sfx = (f"l{k}.rev", f"_l{k}_reverse") if r else (f"l{k}", f"_l{k}")
            gates = [mechs[f"{p}.{g}[0]"] for g in _GATES[kind]]
            w_ih = [g.weights[0] for g in gates]
            w_hh = [g.weights[1] for g in gates]
            b_ih = [g.bias for g in gates]
            b_hh = [None if b is None else np.zeros_like(b) for b in b_ih]
            if kind == "rnn":
                nonlinearity = gates[0].activation
            if kind == "gru":                            # n: W_in x + b_in + r (W_hn h + b_hn)
                xn, hn = mechs[f"{p}.xn[0]"], mechs[f"{p}.hn[0]"]
                w_ih.append(xn.weight)
                w_hh.append(hn.weight)
                b_ih.append(xn.bias)
                b_hh.append(hn.bias)
            sd[f"weight_ih{sfx}"] = np.concatenate(w_ih)
            sd[f"weight_hh{sfx}"] = np.concatenate(w_hh)
            for name, parts in ((f"bias_ih{sfx}", b_ih), (f"bias_hh{sfx}", b_hh)):
                if all(b is not None for b in parts):
                    sd[name] = np.concatenate(parts)
                elif any(b is not None for b in parts):
                    raise ValueError("some gates have a bias and some not")
    return sd, nonlinearity


def _attributes(obj: Any) -> dict:
    """Every instance attribute of `obj` (its ``__dict__`` and ``__slots__``)."""
    out = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for s in getattr(cls, "__slots__", ()):
            if hasattr(obj, s):
                out[s] = getattr(obj, s)
    return out


def _same(a: Any, b: Any) -> bool:
    """Whether two mechanisms (or argument values) are the same: class, then every attribute, arrays by value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if a is None or isinstance(a, (str, int, float, bool, np.dtype, np.generic)):
        return bool(a == b)
    attrs_a, attrs_b = _attributes(a), _attributes(b)
    if not attrs_a and not attrs_b:                   # a function, an enum: itself
        return a is b or bool(a == b)
    return attrs_a.keys() == attrs_b.keys() and all(_same(attrs_a[k], attrs_b[k]) for k in attrs_a)
