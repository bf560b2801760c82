"""Sequence to sequence: a recurrent encoder and an attentive recurrent decoder as one causal DAG.

The encoder reads source ids ``src[s]`` (``s < T_src``), the decoder reads
target ids ``tgt[t]`` (teacher forcing: ``tgt[0]`` is the start token,
``tgt[t]`` the previous target) and writes ``logits[t]`` ``(n, tgt_vocab)``,
the scores of the token after ``tgt[t]``. Attention weights ``attn[t]``
``(n, T_src)`` and context vectors ``ctx[t]`` ``(n, D)`` are nodes like
any other, so ``model.do({"attn[2]": w})`` forces where step 2 looks and every
later step sees the consequences.

Symbols: ``H`` hidden, ``E`` embed, ``L`` layers, ``D`` the width of the
encoder's outputs (``H``, or ``2 H`` when bidirectional).

Nodes. Layer ``k`` of the encoder is ``enc`` for ``k = 0`` and ``enc.l{k}``
above it (``enc.rev``, ``enc.l{k}.rev`` its backward direction), and likewise
``dec``, ``dec.l{k}`` for the decoder; in each, ``.h[t]`` (``.c[t]``) and the
cell's gates are as in :func:`~causalnet.models.recurrent.lstm`.

* ``enc.e[s]`` embeddings; a bidirectional layer's output is ``enc.y[s]``
  (``enc.l{k}.y[s]``) ``= [h_fwd[s]; h_bwd[s]]``;
* ``enc.H`` ``(n, T_src, D)`` the stacked outputs of the top encoder layer and
  ``enc.K`` ``(n, T_src, H)`` their keys;
* ``dec.h[-1]`` (``dec.l{k}.h[-1]``, ``.c[-1]``) the initial state of decoder
  layer ``k``: encoder layer ``k``'s final state; with a bidirectional encoder
  a *bridge* ``tanh(W [h_fwd_n; h_bwd_n] + b)`` of its two final states, the
  forward one ``enc.h_n`` (``enc.l{k}.h_n``; the state at ``src_lengths - 1``)
  and the backward one ``enc.rev.h[0]``;
* per step ``dec.e[t]``, ``score[t]``, ``attn[t]``, ``ctx[t]``, the decoder
  layers, ``logits[t]``, with ``h[t]`` the top decoder layer's state:

  - ``attention="bahdanau"``: ``score[t]_j = v . tanh(W_q h[t-1] + enc.K_j)``,
    the bottom cell reads ``dec.x[t] = [dec.e[t]; ctx[t]]``,
    ``logits[t] = W_out [h[t]; ctx[t]] + b``;
  - ``attention="luong"`` ("general" score): ``score[t]_j = h[t] . enc.K_j``,
    the attentional vector ``dec.ht[t] = tanh(W_c [ctx[t]; h[t]])``,
    ``logits[t] = W_out dec.ht[t] + b``; with ``input_feeding=True`` the
    bottom cell reads ``dec.x[t] = [dec.e[t]; dec.ht[t-1]]`` (``dec.ht[-1]``
    is zero), else ``dec.e[t]``;
  - ``attention=None``: ``logits[t] = W_out h[t] + b``.

Weights. A state dict (numpy arrays or torch tensors) with these keys, ``G``
the cell's gate count (RNN 1, GRU 3, LSTM 4), ``H`` = `hidden`,
``E`` = `embed`, ``V`` = `tgt_vocab`, ``D`` = ``2 H`` if
`bidirectional` else ``H``, ``k < L`` = `layers`:

==========================================  ==================  ==================================
key                                         shape               used
==========================================  ==================  ==================================
``encoder.embedding.weight``                ``(src_vocab, E)``  always
``encoder.rnn.weight_ih_l0``                ``(G H, E)``        always (PyTorch ``nn.GRU`` /
``encoder.rnn.weight_ih_l{k}``, ``k > 0``   ``(G H, D)``        ``nn.LSTM`` / ``nn.RNN`` keys
``encoder.rnn.weight_hh_l{k}``              ``(G H, H)``        with ``num_layers=L``; biases
``encoder.rnn.bias_ih_l{k}``, ``_hh_l{k}``  ``(G H,)``          optional)
``encoder.rnn.*_l{k}_reverse``              as above            `bidirectional`
``encoder.bridge.h_l{k}.weight``            ``(H, 2 H)``        `bidirectional` (on
``encoder.bridge.h_l{k}.bias``              ``(H,)``            ``[h_fwd_n; h_bwd_n]``; bias
``encoder.bridge.c_l{k}.weight``, bias      as ``h_l{k}``       optional; ``c_l{k}`` for LSTM)
``decoder.embedding.weight``                ``(V, E)``          always
``decoder.rnn.weight_ih_l0``                ``(G H, E + D)``    bahdanau; ``(G H, E + H)`` with
                                                                `input_feeding`; ``(G H, E)`` else
``decoder.rnn.weight_ih_l{k}``, ``k > 0``   ``(G H, H)``        layers above the first
``decoder.rnn.weight_hh_l{k}``, biases      as the encoder's    always
``decoder.attention.keys.weight``           ``(H, D)``          bahdanau, luong
``decoder.attention.query.weight``          ``(H, H)``          bahdanau
``decoder.attention.v.weight``              ``(1, H)``          bahdanau
``decoder.combine.weight``                  ``(H, D + H)``      luong (on ``[ctx; h]``)
``decoder.out.weight``                      ``(V, H + D)``      bahdanau (on ``[h; ctx]``);
                                                                ``(V, H)`` else
``decoder.out.bias``                        ``(V,)``            optional
==========================================  ==================  ==================================

The ``*.weight`` of bridge, attention, combine and out are
``nn.Linear`` weights (``(out, in)``, no bias except bridge and out).

References
----------
.. [1] Bahdanau, Cho, Bengio, "Neural machine translation by jointly learning
   to align and translate", ICLR 2015 (the bidirectional encoder and a tanh
   layer initialising the decoder from the encoder's state).
.. [2] Luong, Pham, Manning, "Effective approaches to attention-based neural
   machine translation", EMNLP 2015 (section 3.3, input feeding).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ...arguments import check_int
from ...errors import ModelError, ShapeError
from ...mechanisms.tensor import (
    Affine,
    Concat,
    Embedding,
    Identity,
    Input,
    Linear,
    Softmax,
    Zeros,
    float_dtype,
)
from ...model import CausalModel
from ..transformer.weights import StateDict, check_random_size, read_state_dict
from .attention import AdditiveScores, Context, DotScores, LengthMask, Stack
from .build import layer_weights, make_cell, unroll_direction
from .lengths import AtLength, Masked

__all__ = ["seq2seq", "ATTENTIONS", "seq2seq_weights", "SRC_LENGTHS"]

#: The input node of source lengths (``src_lengths=True``).
SRC_LENGTHS = "src_lengths"

#: The attention kinds :func:`seq2seq` builds.
ATTENTIONS = ("bahdanau", "luong", None)


class _Arch(NamedTuple):
    """The checked architecture: cell object, attention, layers, directions, input feeding, H, D."""

    unit: Any
    attention: str | None
    layers: int
    dirs: int
    feed: bool
    H: int

    @property
    def D(self) -> int:
        return self.dirs * self.H


def _arch(cell, attention, layers, bidirectional, input_feeding, hidden) -> _Arch:
    if attention not in ATTENTIONS:
        raise ModelError(f"attention must be one of {list(ATTENTIONS)}, got {attention!r}")
    for name, flag in (("bidirectional", bidirectional), ("input_feeding", input_feeding)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ModelError(f"{name} must be True or False, got {flag!r}")
    if input_feeding and attention != "luong":
        raise ModelError(f"input_feeding=True feeds Luong's attentional vector dec.ht[t-1]; it needs "
                         f"attention='luong', got attention={attention!r}")
    return _Arch(make_cell(cell), attention, check_int(layers, "layers", low=1), 2 if bidirectional else 1,
                 bool(input_feeding), check_int(hidden, "hidden", low=1))


def seq2seq(weights: Mapping | None = None, *, src_vocab: int, tgt_vocab: int, embed: int, hidden: int,
            cell: str = "gru", attention: str | None = "bahdanau", T_src: int, T_tgt: int, layers: int = 1,
            bidirectional: bool = False, input_feeding: bool = False, src_lengths: bool = False,
            dtype: Any = np.float64, seed: Any = None) -> CausalModel:
    """A recurrent encoder-decoder with attention, unrolled as one CausalModel.

    Parameters
    ----------
    weights : mapping, optional
        A state dict (numpy arrays or torch tensors) with the keys of the
        module's weight table (*Weights.* above; PyTorch ``nn.GRU`` / ``nn.LSTM``
        / ``nn.RNN`` keys with ``num_layers`` = `layers`, ``nn.Linear`` weights).
        None draws random weights with `seed` (:func:`seq2seq_weights`).
    src_vocab, tgt_vocab, embed, hidden : int
    cell : {"gru", "lstm", "rnn"}
        Encoder and decoder cell (tanh for "rnn").
    attention : {"bahdanau", "luong", None}
    T_src, T_tgt : int
        Source and target steps.
    layers : int
        Stacked layers of the encoder and of the decoder (as ``num_layers``
        of PyTorch's layers). Decoder layer ``k`` starts from encoder layer
        ``k``'s final state.
    bidirectional : bool
        A bidirectional encoder: every layer also runs backward (``enc.rev``),
        layer outputs and the attention memory ``enc.H`` are ``2 H`` wide
        (``[forward; backward]``), the attention keys map them to ``H``. The
        decoder's initial state of layer ``k`` is the bridge
        ``tanh(W_k [h_fwd_n; h_bwd_n] + b_k)`` of that layer's two final
        states (Bahdanau et al. initialise from the backward state alone:
        zero forward columns of ``W_k`` give theirs).
    input_feeding : bool
        Luong's input feeding (``attention="luong"`` only): the previous
        attentional vector ``dec.ht[t-1]`` is concatenated to the decoder's
        input at step ``t``.
    src_lengths : bool
        Variable-length sources: an input node ``src_lengths`` ``(n,)``
        (integers in ``[1, T_src]``). The encoder runs each row as if alone
        (as PyTorch's ``pack_padded_sequence``: the forward direction ends and
        the backward direction starts at the row's own last step), and the
        attention puts no weight on padded source steps (``score[t]`` is
        masked into ``mscore[t]``).
    dtype, seed

    Returns
    -------
    CausalModel
        Inputs ``src[s]``, ``tgt[t]`` (``(n,)`` integer ids); outputs
        ``logits[t]`` (module docstring for every node).

    Raises
    ------
    ModelError
        Bad sizes or flags (``layers < 1``, ``input_feeding`` without Luong
        attention), unknown cell or attention, missing or unused weights
        (ShapeError, a ModelError, for a weight of the wrong shape).

    Examples
    --------
    >>> import numpy as np
    >>> from causalnet.models import recurrent
    >>> m = recurrent.seq2seq(src_vocab=5, tgt_vocab=4, embed=3, hidden=4, T_src=3, T_tgt=2, seed=0)
    >>> ids = {"src[0]": [1], "src[1]": [2], "src[2]": [3], "tgt[0]": [0], "tgt[1]": [2]}
    >>> tr = m.forward({k: np.array(v) for k, v in ids.items()})
    >>> tr["attn[1]"].shape, tr["logits[1]"].shape, bool(np.isclose(tr["attn[1]"].sum(), 1.0))
    ((1, 3), (1, 4), True)
    """
    a = _arch(cell, attention, layers, bidirectional, input_feeding, hidden)
    T_src, T_tgt = check_int(T_src, "T_src", low=1), check_int(T_tgt, "T_tgt", low=1)
    dt = float_dtype(dtype, "the model")
    sizes = {"src_vocab": src_vocab, "tgt_vocab": tgt_vocab, "embed": embed, "hidden": hidden}
    sizes = {k: check_int(v, k, low=1) for k, v in sizes.items()}
    w = _state_dict(weights, a, sizes, cell, attention, seed)
    mechs: dict = {}

    def add(node, mech):
        mechs[node] = mech
        return node

    pad = add(SRC_LENGTHS, Input((), np.int64)) if src_lengths else None
    _encoder(add, mechs, a, w.sub("encoder."), T_src, pad, dt)
    _decoder(add, a, w.sub("decoder."), T_tgt, pad, dt)
    w.check_used()
    return CausalModel(mechs)


def _state_dict(weights: Mapping | None, a: _Arch, sizes: dict, cell: str, attention: str | None,
                seed: Any) -> StateDict:
    """The weights given (or random ones drawn with `seed`), checked against the architecture and the sizes."""
    sd = read_state_dict(weights)
    if sd is None:
        sd = seq2seq_weights(**sizes, cell=cell, attention=attention, layers=a.layers, bidirectional=a.dirs == 2,
                             input_feeding=a.feed, seed=seed)
    w = StateDict(sd)
    _check_architecture(w, a)
    for key, shape in (("encoder.embedding.weight", ("src_vocab", "embed")),
                       ("decoder.embedding.weight", ("tgt_vocab", "embed"))):
        w.take(key, tuple(sizes[k] for k in shape))                 # the sizes given must be the weights' sizes
    return w


def _layer(part: str, k: int, reverse: bool = False) -> str:
    """The node prefix of layer `k` of ``enc`` or ``dec``: ``enc``, ``enc.rev``, ``enc.l1``, ``enc.l1.rev``, ..."""
    return part + (f".l{k}" if k else "") + (".rev" if reverse else "")


def _rnn(w: StateDict, a: _Arch, k: int, r: int, d_in: int) -> dict:
    """Layer `k`, direction `r` of ``rnn.*`` in `w`, checked against ``(G H, d_in)`` and ``(G H, H)``."""
    rnn = layer_weights(w.sub("rnn."), k, r, a.unit.gates)
    sfx = f"_l{k}" + ("_reverse" if r else "")
    for key, got, want in ((f"weight_ih{sfx}", rnn["W_ih"].shape, (a.unit.gates * a.H, d_in)),
                           (f"weight_hh{sfx}", rnn["W_hh"].shape, (a.unit.gates * a.H, a.H))):
        if got != want:
            raise ShapeError(f"weight '{w.prefix}rnn.{key}' has shape {got}, expected {want}")
    return rnn


def _encoder(add, mechs: dict, a: _Arch, w: StateDict, T_src: int, pad: str | None, dt) -> None:
    """The embeddings ``enc.e[s]``, every layer and direction, the memory ``enc.H`` and the decoder's start."""
    emb = w.take("embedding.weight", (None, None))

    def mask(node, t):                              # zero past each source's length
        if pad is not None:
            mechs[node] = Masked(mechs[node], t, T_src, pad, dtype=dt)

    xs = [add(f"enc.e[{s}]", Embedding(add(f"src[{s}]", Input((), np.int64)), emb, dtype=dt)) for s in range(T_src)]
    for k in range(a.layers):
        d_in = emb.shape[1] if k == 0 else a.D
        outs = [unroll_direction(add, mask, a.unit, _layer("enc", k, bool(r)), xs, _rnn(w, a, k, r, d_in), a.H,
                                 reverse=bool(r), dt=dt) for r in range(a.dirs)]
        xs = outs[0] if a.dirs == 1 else [add(f"{_layer('enc', k)}.y[{s}]", Concat(list(hs), dtype=dt))
                                          for s, hs in enumerate(zip(*outs))]
        _initial_state(add, a, w, k, T_src, pad, dt)
    add("enc.H", Stack(xs, dtype=dt))


def _initial_state(add, a: _Arch, w: StateDict, k: int, T_src: int, pad: str | None, dt) -> None:
    """``dec.{s}[-1]`` of decoder layer `k`: encoder layer `k`'s final state, or the bridge of its two."""
    p, H = _layer("enc", k), a.H
    for st in a.unit.states:
        last = (AtLength([pad, *(f"{p}.{st}[{s}]" for s in range(T_src))], dtype=dt) if pad is not None
                else Identity(f"{p}.{st}[{T_src - 1}]", dtype=dt))
        init = f"{_layer('dec', k)}.{st}[-1]"
        if a.dirs == 1:
            add(init, last)
            continue
        fwd = add(f"{p}.{st}_n", last)
        W = w.take(f"bridge.{st}_l{k}.weight", (H, 2 * H))
        b = w.opt(f"bridge.{st}_l{k}.bias", (H,))
        add(init, Affine([fwd, f"{_layer('enc', k, True)}.{st}[0]"], [W[:, :H], W[:, H:]], b, activation="tanh",
                         dtype=dt))


def _decoder(add, a: _Arch, w: StateDict, T_tgt: int, pad: str | None, dt) -> None:
    emb = w.take("embedding.weight", (None, None))
    H, D, E = a.H, a.D, emb.shape[1]
    bottom = E + (D if a.attention == "bahdanau" else H if a.feed else 0)
    rnns = [_rnn(w, a, k, 0, bottom if k == 0 else H) for k in range(a.layers)]
    out_w = w.take("out.weight", (emb.shape[0], H + D if a.attention == "bahdanau" else H))   # (V, ...)
    out_b = w.opt("out.bias", (out_w.shape[0],))
    if a.attention is not None:
        add("enc.K", Linear("enc.H", w.take("attention.keys.weight", (H, D)), dtype=dt))
    if a.attention == "bahdanau":
        query, v = w.take("attention.query.weight", (H, H)), w.take("attention.v.weight", (1, H))
    combine = w.take("combine.weight", (H, D + H)) if a.attention == "luong" else None
    prev = [{st: f"{_layer('dec', k)}.{st}[-1]" for st in a.unit.states} for k in range(a.layers)]
    feed = add("dec.ht[-1]", Zeros("src[0]", H, dtype=dt)) if a.feed else None
    for t in range(T_tgt):
        x = add(f"dec.e[{t}]", Embedding(add(f"tgt[{t}]", Input((), np.int64)), emb, dtype=dt))
        if a.attention == "bahdanau":
            ctx = _attend(add, t, AdditiveScores([prev[-1]["h"], "enc.K"], query, v, dtype=dt), pad, dt)
            x = add(f"dec.x[{t}]", Concat([x, ctx], dtype=dt))
        elif feed is not None:
            x = add(f"dec.x[{t}]", Concat([x, feed], dtype=dt))
        for k in range(a.layers):
            prev[k] = a.unit.step(add, _layer("dec", k), t, x, prev[k], rnns[k], dt)
            x = prev[k]["h"]
        if a.attention == "bahdanau":
            add(f"logits[{t}]", Affine([x, ctx], [out_w[:, :H], out_w[:, H:]], out_b, dtype=dt))
            continue
        if a.attention == "luong":
            ctx = _attend(add, t, DotScores([x, "enc.K"], dtype=dt), pad, dt)
            x = add(f"dec.ht[{t}]", Affine([ctx, x], [combine[:, :D], combine[:, D:]], None, activation="tanh",
                                           dtype=dt))
            feed = x if a.feed else None
        add(f"logits[{t}]", Linear(x, out_w, out_b, dtype=dt))


def _attend(add, t: int, scores, pad: str | None, dt) -> str:
    """``score[t] (-> mscore[t]) -> attn[t] -> ctx[t]``; returns the context node."""
    e = add(f"score[{t}]", scores)
    if pad is not None:
        e = add(f"mscore[{t}]", LengthMask([e, pad], dtype=dt))
    a = add(f"attn[{t}]", Softmax(e, dtype=dt))
    return add(f"ctx[{t}]", Context([a, "enc.H"], dtype=dt))


def _check_architecture(w: StateDict, a: _Arch) -> None:
    """Weights of more layers or of a backward encoder than asked for: a ModelError naming the argument."""
    for part in ("encoder", "decoder"):
        if w.has(f"{part}.rnn.weight_hh_l{a.layers}"):
            raise ModelError(f"weights hold '{part}.rnn.weight_hh_l{a.layers}' but layers={a.layers}; "
                             f"pass the checkpoint's number of layers")
    if a.dirs == 1 and w.has("encoder.rnn.weight_hh_l0_reverse"):
        raise ModelError("weights hold 'encoder.rnn.weight_hh_l0_reverse' (a backward encoder) but "
                         "bidirectional=False; pass bidirectional=True")


def seq2seq_weights(*, src_vocab: int, tgt_vocab: int, embed: int, hidden: int, cell: str = "gru",
                    attention: str | None = "bahdanau", layers: int = 1, bidirectional: bool = False,
                    input_feeding: bool = False, seed: Any = None) -> dict:
    """Random weights for :func:`seq2seq` under its documented keys.

    Embeddings are standard normal; every other weight is uniform on
    ``(-1/sqrt(H), 1/sqrt(H))``, as PyTorch initialises recurrent layers.
    """
    a = _arch(cell, attention, layers, bidirectional, input_feeding, hidden)
    Vs, V = check_int(src_vocab, "src_vocab", low=1), check_int(tgt_vocab, "tgt_vocab", low=1)
    E, H, D, G = check_int(embed, "embed", low=1), a.H, a.D, a.unit.gates
    d_dec = E + (D if attention == "bahdanau" else H if a.feed else 0)
    check_random_size((Vs + V) * E + a.layers * (a.dirs + 1) * G * H * (E + D + H + 2) + a.layers * 8 * H * H
                      + 4 * H * D + 2 * V * (H + D), "a seq2seq model",
                      f"vocabularies {Vs}, {V}, embed={E}, hidden={H}, layers={a.layers}")
    rng = np.random.default_rng(seed)
    bound = H ** -0.5

    def u(*shape):
        return rng.uniform(-bound, bound, shape)

    sd = {"encoder.embedding.weight": rng.standard_normal((Vs, E)),
          "decoder.embedding.weight": rng.standard_normal((V, E))}
    for part, dirs, d0, dk in (("encoder", a.dirs, E, D), ("decoder", 1, d_dec, H)):
        for k in range(a.layers):
            for r in range(dirs):
                sfx, d = f"_l{k}" + ("_reverse" if r else ""), d0 if k == 0 else dk
                sd.update({f"{part}.rnn.weight_ih{sfx}": u(G * H, d), f"{part}.rnn.weight_hh{sfx}": u(G * H, H),
                           f"{part}.rnn.bias_ih{sfx}": u(G * H), f"{part}.rnn.bias_hh{sfx}": u(G * H)})
    if attention is not None:
        sd["decoder.attention.keys.weight"] = u(H, D)
    if attention == "bahdanau":
        sd.update({"decoder.attention.query.weight": u(H, H), "decoder.attention.v.weight": u(1, H)})
    if attention == "luong":
        sd["decoder.combine.weight"] = u(H, D + H)
    sd["decoder.out.weight"] = u(V, H + D if attention == "bahdanau" else H)
    sd["decoder.out.bias"] = u(V)
    if a.dirs == 2:
        for k in range(a.layers):
            for st in a.unit.states:
                sd.update({f"encoder.bridge.{st}_l{k}.weight": u(H, 2 * H), f"encoder.bridge.{st}_l{k}.bias": u(H)})
    return sd
