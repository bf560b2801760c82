"""Recurrent networks (RNN, LSTM, GRU) unrolled over time as causal DAGs.

A recurrent network run for ``T`` steps is a dynamic Bayesian network with
deterministic nodes: one copy of the cell per time step, all copies sharing
the weights. The builders return a :class:`~causalnet.model.CausalModel`
with inputs ``x[t]`` ``(n, input_size)`` and, per layer ``k`` and step ``t``,
the hidden state ``l{k}.h[t]`` ``(n, H)``; so ``model.do({"l0.h[3]": ...})``
patches the state after step 3 and every later step sees the patch. The
initial state ``l{k}.h[-1]`` (``l{k}.c[-1]`` for an LSTM) is a zero node, and
a backward direction (``bidirectional=True``) is ``l{k}.rev.*`` running from
``t = T-1`` down (initial state ``[T]``), with the layer output
``l{k}.y[t]`` concatenating both directions.

Cell nodes (PyTorch's equations and weight layout, ``weight_ih_l{k}`` rows in
gate order):

* RNN: ``h[t] = act(W_ih x + b_ih + W_hh h[t-1] + b_hh)``.
* LSTM: gates ``i[t]``, ``f[t]``, ``o[t]`` (sigmoid) and ``g[t]`` (tanh);
  ``fc = f c[t-1]``, ``ig = i g``, ``c[t] = fc + ig``, ``tc = tanh(c)``,
  ``h[t] = o tc``.
* GRU: gates ``r[t]``, ``z[t]``; ``hn = W_hn h[t-1] + b_hn``, ``rhn = r hn``,
  ``xn = W_in x + b_in``, ``n[t] = tanh(xn + rhn)``, ``h[t] = (1 - z) n + z h[t-1]``.

:func:`from_torch` rebuilds ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU`` (multi-layer,
bidirectional, with or without biases) from the module or its state dict.

The rest of the package, one module per idea:

* :mod:`.lengths`: variable-length batches (``lengths=True``: an input
  ``lengths`` ``(n,)``, PyTorch's packed-sequence semantics);
* :mod:`.fast`: :func:`run`, the fused loop, equal to ``model.forward``, with
  its numba cell kernels (:mod:`.kernels`) and state layouts (:mod:`.layouts`);
* :mod:`.diagrams`: :func:`diagram`, the folded and unrolled pictures;
* :mod:`.attention`, :mod:`.seq2seq`, :mod:`.decode`: :func:`seq2seq` (an
  encoder and an attentive decoder as one DAG, attention weights as nodes;
  stacked layers, a bidirectional encoder, Luong's input feeding),
  :func:`teacher_forced` logits, and greedy / beam :func:`decode` (with
  GNMT's length penalty).

Examples
--------
>>> import numpy as np
>>> from causalnet.models import recurrent
>>> m = recurrent.lstm(input_size=3, hidden_size=4, T=5, seed=0)
>>> xs = {f"x[{t}]": np.ones((2, 3)) for t in range(5)}
>>> tr = m.forward(xs)
>>> tr["l0.h[4]"].shape, tr["l0.f[2]"].shape
((2, 4), (2, 4))
>>> patched = m.do({"l0.h[3]": np.zeros(4)}).forward(xs)
>>> bool(np.allclose(patched["l0.h[2]"], tr["l0.h[2]"])), bool(np.allclose(patched["l0.h[4]"], tr["l0.h[4]"]))
(True, False)
"""

import importlib

from ...inference.engine import LazyEngine
from ...inference.forward import FORWARD_ENGINES
from ...runtime import lazy_exports
from .build import build  # a submodule shares the name: bound now
from .decode import decode  # a submodule shares the name: bound now
from .seq2seq import seq2seq  # a submodule shares the name: bound now

# The recurrent loop's module (and its kernels) loads when a forward run first reaches the engine. Registered
# here, not in build.py: fast.py recognises a rebuilt model by building it again (recognise.py imports build).
FORWARD_ENGINES.register(LazyEngine("recurrent loop", lambda: importlib.import_module(".fast", __name__)
                                    .RecurrentForward()), before="tensor plan")

__all__ = ["rnn", "lstm", "gru", "build", "from_torch", "random_weights", "diagram", "seq2seq", "seq2seq_weights",
           "decode", "teacher_forced", "Decoding",
           "run", "RecurrentOutput"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "gru": ".build:gru",
    "lstm": ".build:lstm",
    "random_weights": ".build:random_weights",
    "rnn": ".build:rnn",
    "from_torch": ".checkpoints:from_torch",
    "Decoding": ".decode:Decoding",
    "teacher_forced": ".decode:teacher_forced",
    "diagram": ".diagrams:diagram",
    "RecurrentOutput": ".fast:RecurrentOutput",
    "run": ".fast:run",
    "seq2seq_weights": ".seq2seq:seq2seq_weights",
})
