"""Sequence to sequence: a recurrent encoder and an attentive recurrent decoder as one causal DAG.

The encoder reads source ids ``src[s]`` (``s < T_src``), the decoder reads
target ids ``tgt[t]`` (teacher forcing: ``tgt[0]`` is the start token,
``tgt[t]`` the previous target) and writes ``logits[t]`` ``(n, tgt_vocab)``,
the scores of the token after ``tgt[t]``. Attention weights ``attn[t]``
``(n, T_src)`` and context vectors ``ctx[t]`` ``(n, hidden)`` are nodes like
any other, so ``model.do({"attn[2]": w})`` forces where step 2 looks and every
later step sees the consequences.

Nodes (``H`` hidden, ``E`` embed): ``enc.e[s]`` embeddings; ``enc.h[s]``
(``enc.c[s]``) and the cell's gates, as in :func:`~causalnet.models.recurrent.lstm`;
``enc.H`` ``(n, T_src, H)`` the stacked encoder states and ``enc.K`` their keys;
``dec.h[-1]`` (``dec.c[-1]``) the decoder's initial state, the encoder's last
state; then per step ``dec.e[t]``, ``score[t]``, ``attn[t]``, ``ctx[t]``,
``dec.h[t]`` and its gates, ``logits[t]``:

* ``attention="bahdanau"``: ``score[t]_j = v . tanh(W_q dec.h[t-1] + enc.K_j)``,
  the cell reads ``dec.x[t] = [dec.e[t]; ctx[t]]``, ``logits[t] = W_out [dec.h[t]; ctx[t]] + b``;
* ``attention="luong"`` ("general" score, no input feeding): the cell reads
  ``dec.e[t]``, ``score[t]_j = dec.h[t] . enc.K_j``,
  ``dec.ht[t] = tanh(W_c [ctx[t]; dec.h[t]])``, ``logits[t] = W_out dec.ht[t] + b``;
* ``attention=None``: ``logits[t] = W_out dec.h[t] + b``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import ModelError
from ...mechanisms.tensor import Affine, Concat, Embedding, Identity, Input, Linear, Softmax, as_int, float_dtype
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


def seq2seq(weights: Mapping | None = None, *, src_vocab: int, tgt_vocab: int, embed: int, hidden: int,
            cell: str = "gru", attention: str | None = "bahdanau", T_src: int, T_tgt: int,
            src_lengths: bool = False, dtype: Any = np.float64, seed: Any = None) -> CausalModel:
    """A recurrent encoder-decoder with attention, unrolled as one CausalModel.

    Parameters
    ----------
    weights : mapping, optional
        A state dict (numpy arrays or torch tensors) with these keys, ``G``
        the cell's gate count (RNN 1, GRU 3, LSTM 4), ``H`` = `hidden`,
        ``E`` = `embed`, ``V`` = `tgt_vocab`:

        ======================================  =========================  ===========================
        key                                     shape                      used
        ======================================  =========================  ===========================
        ``encoder.embedding.weight``            ``(src_vocab, E)``         always
        ``encoder.rnn.weight_ih_l0``            ``(G H, E)``               always (PyTorch ``nn.GRU``
        ``encoder.rnn.weight_hh_l0``            ``(G H, H)``               / ``nn.LSTM`` / ``nn.RNN``
        ``encoder.rnn.bias_ih_l0``, ``_hh_l0``  ``(G H,)``                 keys, biases optional)
        ``decoder.embedding.weight``            ``(V, E)``                 always
        ``decoder.rnn.weight_ih_l0``            ``(G H, E + H)``           bahdanau (``(G H, E)`` else)
        ``decoder.rnn.weight_hh_l0``, biases    as the encoder's           always
        ``decoder.attention.keys.weight``       ``(H, H)``                 bahdanau, luong
        ``decoder.attention.query.weight``      ``(H, H)``                 bahdanau
        ``decoder.attention.v.weight``          ``(1, H)``                 bahdanau
        ``decoder.combine.weight``              ``(H, 2 H)``               luong (on ``[ctx; h]``)
        ``decoder.out.weight``                  ``(V, 2 H)``               bahdanau (on ``[h; ctx]``);
                                                                           ``(V, H)`` else
        ``decoder.out.bias``                    ``(V,)``                   optional
        ======================================  =========================  ===========================

        The ``*.weight`` of attention, combine and out are ``nn.Linear``
        weights (``(out, in)``, no bias except ``out``). None draws random
        weights with `seed` (:func:`seq2seq_weights`).
    src_vocab, tgt_vocab, embed, hidden : int
    cell : {"gru", "lstm", "rnn"}
        Encoder and decoder cell (one layer each, tanh for "rnn").
    attention : {"bahdanau", "luong", None}
    T_src, T_tgt : int
        Source and target steps.
    src_lengths : bool
        Variable-length sources: an input node ``src_lengths`` ``(n,)``
        (integers in ``[1, T_src]``). The encoder runs each row as if alone
        (as PyTorch's ``pack_padded_sequence``), the decoder starts from the
        encoder state at ``src_lengths - 1``, and the attention puts no weight
        on padded source steps (``score[t]`` is masked into ``mscore[t]``).
    dtype, seed

    Returns
    -------
    CausalModel
        Inputs ``src[s]``, ``tgt[t]`` (``(n,)`` integer ids); outputs
        ``logits[t]`` (module docstring for every node).

    Raises
    ------
    ModelError
        Bad sizes, unknown cell or attention, missing or unused weights.

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
    if attention not in ATTENTIONS:
        raise ModelError(f"attention must be one of {list(ATTENTIONS)}, got {attention!r}")
    unit = make_cell(cell)
    T_src, T_tgt = as_int(T_src, "T_src", low=1), as_int(T_tgt, "T_tgt", low=1)
    dt = float_dtype(dtype, "the model")
    sd = read_state_dict(weights)
    if sd is None:
        sd = seq2seq_weights(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, hidden=hidden, cell=cell,
                             attention=attention, seed=seed)
    w = StateDict(sd)
    sizes = {"src_vocab": src_vocab, "tgt_vocab": tgt_vocab, "embed": embed, "hidden": hidden}
    sizes = {k: as_int(v, k, low=1) for k, v in sizes.items()}
    for key, shape in (("encoder.embedding.weight", ("src_vocab", "embed")),
                       ("decoder.embedding.weight", ("tgt_vocab", "embed")),
                       ("encoder.rnn.weight_hh_l0", (None, "hidden"))):
        w.take(key, tuple(sizes.get(k) for k in shape))             # the sizes given must be the weights' sizes
    mechs: dict = {}

    def add(node, mech):
        mechs[node] = mech
        return node

    pad = add(SRC_LENGTHS, Input((), np.int64)) if src_lengths else None
    H = _encoder(add, mechs, unit, w.sub("encoder."), T_src, pad, dt)
    _decoder(add, unit, w.sub("decoder."), attention, T_tgt, H, pad, dt)
    w.check_used()
    return CausalModel(mechs)


def _encoder(add, mechs: dict, unit, w: StateDict, T_src: int, pad: str | None, dt) -> int:
    """``src[s] -> enc.e[s] -> enc.h[s]``, then ``enc.H`` and the decoder's initial state; returns H."""
    emb = w.take("embedding.weight", (None, None))
    rnn = layer_weights(w.sub("rnn."), 0, 0, unit.gates)
    H = rnn["W_hh"].shape[1]

    def mask(node, t):                              # zero past each source's length
        if pad is not None:
            mechs[node] = Masked(mechs[node], t, T_src, pad, dtype=dt)

    es = [add(f"enc.e[{s}]", Embedding(add(f"src[{s}]", Input((), np.int64)), emb, dtype=dt)) for s in range(T_src)]
    hs = unroll_direction(add, mask, unit, "enc", es, rnn, H, reverse=False, dt=dt)
    add("enc.H", Stack(hs, dtype=dt))
    for st in unit.states:
        last = (AtLength([pad, *(f"enc.{st}[{s}]" for s in range(T_src))], dtype=dt) if pad is not None
                else Identity(f"enc.{st}[{T_src - 1}]", dtype=dt))
        add(f"dec.{st}[-1]", last)
    return H


def _decoder(add, unit, w: StateDict, attention, T_tgt: int, H: int, pad: str | None, dt) -> None:
    emb = w.take("embedding.weight", (None, None))
    rnn = layer_weights(w.sub("rnn."), 0, 0, unit.gates)
    out_w = w.take("out.weight", (None, 2 * H if attention == "bahdanau" else H))
    out_b = w.opt("out.bias", (out_w.shape[0],))
    if attention is not None:
        add("enc.K", Linear("enc.H", w.take("attention.keys.weight", (H, H)), dtype=dt))
    if attention == "bahdanau":
        query, v = w.take("attention.query.weight", (H, H)), w.take("attention.v.weight", (1, H))
    combine = w.take("combine.weight", (H, 2 * H)) if attention == "luong" else None
    prev = {st: f"dec.{st}[-1]" for st in unit.states}
    for t in range(T_tgt):
        e = add(f"dec.e[{t}]", Embedding(add(f"tgt[{t}]", Input((), np.int64)), emb, dtype=dt))
        if attention == "bahdanau":
            ctx = _attend(add, t, AdditiveScores([prev["h"], "enc.K"], query, v, dtype=dt), pad, dt)
            x = add(f"dec.x[{t}]", Concat([e, ctx], dtype=dt))
            prev = unit.step(add, "dec", t, x, prev, rnn, dt)
            add(f"logits[{t}]", Affine([prev["h"], ctx], [out_w[:, :H], out_w[:, H:]], out_b, dtype=dt))
            continue
        prev = unit.step(add, "dec", t, e, prev, rnn, dt)
        top = prev["h"]
        if attention == "luong":
            ctx = _attend(add, t, DotScores([prev["h"], "enc.K"], dtype=dt), pad, dt)
            top = add(f"dec.ht[{t}]", Affine([ctx, prev["h"]], [combine[:, :H], combine[:, H:]], None,
                                             activation="tanh", dtype=dt))
        add(f"logits[{t}]", Linear(top, out_w, out_b, dtype=dt))


def _attend(add, t: int, scores, pad: str | None, dt) -> str:
    """``score[t] (-> mscore[t]) -> attn[t] -> ctx[t]``; returns the context node."""
    e = add(f"score[{t}]", scores)
    if pad is not None:
        e = add(f"mscore[{t}]", LengthMask([e, pad], dtype=dt))
    a = add(f"attn[{t}]", Softmax(e, dtype=dt))
    return add(f"ctx[{t}]", Context([a, "enc.H"], dtype=dt))


def seq2seq_weights(*, src_vocab: int, tgt_vocab: int, embed: int, hidden: int, cell: str = "gru",
                    attention: str | None = "bahdanau", seed: Any = None) -> dict:
    """Random weights for :func:`seq2seq` under its documented keys.

    Embeddings are standard normal; every other weight is uniform on
    ``(-1/sqrt(H), 1/sqrt(H))``, as PyTorch initialises recurrent layers.
    """
    if attention not in ATTENTIONS:
        raise ModelError(f"attention must be one of {list(ATTENTIONS)}, got {attention!r}")
    G = make_cell(cell).gates
    Vs, V = as_int(src_vocab, "src_vocab", low=1), as_int(tgt_vocab, "tgt_vocab", low=1)
    E, H = as_int(embed, "embed", low=1), as_int(hidden, "hidden", low=1)
    check_random_size((Vs + V) * E + 2 * G * H * (E + 2 * H + 2) + 4 * H * H + 2 * V * H,
                      "a seq2seq model", f"vocabularies {Vs}, {V}, embed={E}, hidden={H}")
    rng = np.random.default_rng(seed)
    a = H ** -0.5

    def u(*shape):
        return rng.uniform(-a, a, shape)

    d_in = E + H if attention == "bahdanau" else E
    sd = {"encoder.embedding.weight": rng.standard_normal((Vs, E)),
          "decoder.embedding.weight": rng.standard_normal((V, E))}
    for part, d in (("encoder", E), ("decoder", d_in)):
        sd.update({f"{part}.rnn.weight_ih_l0": u(G * H, d), f"{part}.rnn.weight_hh_l0": u(G * H, H),
                   f"{part}.rnn.bias_ih_l0": u(G * H), f"{part}.rnn.bias_hh_l0": u(G * H)})
    if attention is not None:
        sd["decoder.attention.keys.weight"] = u(H, H)
    if attention == "bahdanau":
        sd.update({"decoder.attention.query.weight": u(H, H), "decoder.attention.v.weight": u(1, H)})
    if attention == "luong":
        sd["decoder.combine.weight"] = u(H, 2 * H)
    sd["decoder.out.weight"] = u(V, 2 * H if attention == "bahdanau" else H)
    sd["decoder.out.bias"] = u(V)
    return sd
