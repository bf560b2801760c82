"""The transformer builders: attention blocks, encoder and decoder layers, stacks, nn.Transformer.

:class:`Builder` adds the nodes of one block at a time to a mechanism dict
(shared options: heads, view, dtype, eps, activation, pre- or post-LN); the
public builders read a state dict (or draw random weights) and call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...arguments import as_generator, check_real
from ...errors import ModelError, ShapeError
from ...mechanisms.base import Mechanism
from ...mechanisms.tensor import (
    Add,
    Attention,
    AttentionWeights,
    Concat,
    Embedding,
    FeedForward,
    Identity,
    Input,
    LayerNorm,
    LearnedPositions,
    Linear,
    Mask,
    PositionalEncoding,
    Scale,
    Scores,
    Softmax,
    Split,
    float_dtype,
)
from ...mechanisms.tensor.activations import ACTIVATIONS
from ...model import CausalModel
from .weights import StateDict, need_size, random_attention, random_layer, random_stack, read_state_dict

__all__ = ["attention", "encoder_layer", "decoder_layer", "encoder", "decoder", "transformer", "Builder", "VIEWS"]

VIEWS = ("folded", "expanded")


class Builder:
    """Adds nodes to a mechanism dict with shared options."""

    def __init__(self, *, heads: int, view: str, scores: bool, dtype: Any, eps: float, activation: str,
                 norm_first: bool) -> None:
        if not isinstance(heads, (int, np.integer)) or isinstance(heads, bool) or heads < 1:
            raise ModelError(f"heads must be a positive int, got {heads!r}")
        if view not in VIEWS:
            raise ModelError(f"view must be one of {list(VIEWS)}, got {view!r}")
        if not isinstance(activation, str) or activation not in ACTIVATIONS:
            raise ModelError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
        self.heads = int(heads)
        self.view = view
        self.scores = bool(scores)
        self.dtype = float_dtype(dtype, "the model")
        self.eps = check_real(eps, "eps", positive=True)
        self.activation = activation
        self.norm_first = bool(norm_first)
        self.m: dict = {}
        self.d: int | None = None

    def width(self, d: int, where: str) -> int:
        if self.d is None:
            self.d = d
        elif d != self.d:
            raise ShapeError(f"{where} has width {d}; the model's width is {self.d}")
        if d % self.heads:
            raise ModelError(f"{self.heads} heads do not divide the model width {d} ({where})")
        return d

    def add(self, node: str, mech: Mechanism) -> str:
        if node in self.m:
            raise ModelError(f"internal: node {node!r} built twice")
        self.m[node] = mech
        return node

    # -- attention --------------------------------------------------------------------------

    def attention(self, p: str, q_src: str, kv_src: str, w: StateDict, *, causal: bool, pad: str | None,
                  lower: bool = False) -> str:
        """One multi-head attention block under prefix `p`; returns its output node."""
        L = str.lower if lower else (lambda s: s)  # noqa: E731 - letters of the chapter
        if w.has("bias_k") or w.has("bias_v"):
            raise ModelError(f"weights under {w.prefix!r}: add_bias_kv is not supported")
        if w.has("in_proj_weight"):
            wi = w.take("in_proj_weight", (None, None))
            d = wi.shape[1]
            if wi.shape != (3 * d, d):
                raise ShapeError(f"weight {w.prefix + 'in_proj_weight'!r} has shape {wi.shape}, expected (3D, D)")
            wq, wk, wv = wi[:d], wi[d:2 * d], wi[2 * d:]
        else:
            wq = w.take("q_proj_weight", (None, None))
            d = wq.shape[0]
            wk = w.take("k_proj_weight", (d, None))
            wv = w.take("v_proj_weight", (d, None))
        d = self.width(d, f"attention {p!r}")
        bi = w.opt("in_proj_bias", (3 * d,))
        bq, bk, bv = (None, None, None) if bi is None else (bi[:d], bi[d:2 * d], bi[2 * d:])
        wo = w.take("out_proj.weight", (d, d))
        bo = w.opt("out_proj.bias", (d,))
        dt = self.dtype
        Q = self.add(f"{p}.{L('Q')}", Linear(q_src, wq, bq, dtype=dt))
        K = self.add(f"{p}.{L('K')}", Linear(kv_src, wk, bk, dtype=dt))
        V = self.add(f"{p}.{L('V')}", Linear(kv_src, wv, bv, dtype=dt))
        h = self.heads
        if self.view == "folded":
            P = self._weights(p, Q, K, pad, causal, h, L)
            A = self.add(f"{p}.{L('A')}", Attention([P, V], heads=h, dtype=dt))
        else:
            heads_a = []
            for i in range(h):
                hp = f"{p}.head.{i}"
                hq = self.add(f"{hp}.{L('Q')}", Split(Q, h, i, dtype=dt))
                hk = self.add(f"{hp}.{L('K')}", Split(K, h, i, dtype=dt))
                hv = self.add(f"{hp}.{L('V')}", Split(V, h, i, dtype=dt))
                P = self._weights(hp, hq, hk, pad, causal, None, L, dh=d // h)
                heads_a.append(self.add(f"{hp}.{L('A')}", Attention([P, hv], dtype=dt)))
            A = self.add(f"{p}.{L('A')}", Concat(heads_a, dtype=dt))
        return self.add(f"{p}.{L('O')}", Linear(A, wo, bo, dtype=dt))

    def _weights(self, p, Q, K, pad, causal, heads, L, dh=None) -> str:
        dt = self.dtype
        masks = [pad] if pad is not None else []
        if not self.scores:
            return self.add(f"{p}.{L('P')}", AttentionWeights([Q, K, *masks], heads=heads, causal=causal, dtype=dt))
        dh = dh if dh is not None else self.d // self.heads
        B = self.add(f"{p}.{L('B')}", Scores([Q, K], heads=heads, dtype=dt))
        S = self.add(f"{p}.{L('S')}", Scale(B, 1.0 / np.sqrt(dh), dtype=dt))
        M = self.add(f"{p}.{L('M')}", Mask([S, *masks], causal=causal, dtype=dt))
        return self.add(f"{p}.{L('P')}", Softmax(M, dtype=dt))

    # -- layers ----------------------------------------------------------------------------

    def norm(self, node: str, parents: list, w: StateDict, key: str) -> str:
        d = self.d
        return self.add(node, LayerNorm(parents, w.take(f"{key}.weight", (d,)), w.opt(f"{key}.bias", (d,)),
                                        eps=self.eps, dtype=self.dtype))

    def ff(self, node: str, src: str, w: StateDict) -> str:
        d = self.d
        w1 = w.take("linear1.weight", (None, d))
        ff = w1.shape[0]
        return self.add(node, FeedForward(src, w1, w.opt("linear1.bias", (ff,)), w.take("linear2.weight", (d, ff)),
                                          w.opt("linear2.bias", (d,)), activation=self.activation, dtype=self.dtype))

    def self_layer(self, p: str, src: str, w: StateDict, *, causal: bool, pad: str | None,
                   names=("N", "F", "n"), attn: str = "attn") -> str:
        """Encoder layer (or decoder-only layer with names J, F, Y)."""
        N, F, n = (f"{p}.{x}" for x in names)
        if self.norm_first:
            ln1 = self.norm(f"{p}.ln1", [src], w, "norm1")
            Ob = self.attention(f"{p}.{attn}", ln1, ln1, w.sub("self_attn."), causal=causal, pad=pad)
            self.add(N, Add([src, Ob], dtype=self.dtype))
            ln2 = self.norm(f"{p}.ln2", [N], w, "norm2")
            self.ff(F, ln2, w)
            return self.add(n, Add([N, F], dtype=self.dtype))
        Ob = self.attention(f"{p}.{attn}", src, src, w.sub("self_attn."), causal=causal, pad=pad)
        self.norm(N, [src, Ob], w, "norm1")
        self.ff(F, N, w)
        return self.norm(n, [N, F], w, "norm2")

    def cross_layer(self, p: str, src: str, mem: str, w: StateDict, *, causal: bool, pad: str | None,
                    mem_pad: str | None) -> str:
        """Decoder layer with masked self-attention and cross-attention (J, j, F, Y)."""
        J, j, F, Y = (f"{p}.{x}" for x in ("J", "j", "F", "Y"))
        if self.norm_first:
            ln1 = self.norm(f"{p}.ln1", [src], w, "norm1")
            Ob = self.attention(f"{p}.self", ln1, ln1, w.sub("self_attn."), causal=causal, pad=pad)
            self.add(J, Add([src, Ob], dtype=self.dtype))
            ln2 = self.norm(f"{p}.ln2", [J], w, "norm2")
            o = self.attention(f"{p}.cross", ln2, mem, w.sub("multihead_attn."), causal=False, pad=mem_pad,
                               lower=True)
            self.add(j, Add([J, o], dtype=self.dtype))
            ln3 = self.norm(f"{p}.ln3", [j], w, "norm3")
            self.ff(F, ln3, w)
            return self.add(Y, Add([j, F], dtype=self.dtype))
        Ob = self.attention(f"{p}.self", src, src, w.sub("self_attn."), causal=causal, pad=pad)
        self.norm(J, [src, Ob], w, "norm1")
        o = self.attention(f"{p}.cross", J, mem, w.sub("multihead_attn."), causal=False, pad=mem_pad, lower=True)
        self.norm(j, [J, o], w, "norm2")
        self.ff(F, j, w)
        return self.norm(Y, [j, F], w, "norm3")

    # -- embeddings and heads -----------------------------------------------------------------

    def inputs(self, prefix: str, w: StateDict, emb_key: str, *, positional, embed_scale) -> str:
        """Roots of one sequence: ``x -> e0 -> e`` with an embedding table, else ``e``."""
        if w.has(emb_key):
            table = w.take(emb_key, (None, None))
            self.width(table.shape[1], f"embedding {emb_key!r}")
            x = self.add(f"{prefix}x", Input((None,), np.int64))
            pos_key = emb_key.replace("embedding.weight", "pos_embedding.weight")
            if w.has(pos_key) and positional is not False:                 # learned absolute positions
                e0 = self.add(f"{prefix}e0", Embedding(x, table, scale=embed_scale, dtype=self.dtype))
                return self.add(f"{prefix}e", LearnedPositions(e0, w.take(pos_key, (None, table.shape[1])),
                                                               dtype=self.dtype))
            pos = True if positional is None else bool(positional)
            if pos:
                e0 = self.add(f"{prefix}e0", Embedding(x, table, scale=embed_scale, dtype=self.dtype))
                return self.add(f"{prefix}e", PositionalEncoding(e0, table.shape[1], dtype=self.dtype))
            return self.add(f"{prefix}e", Embedding(x, table, scale=embed_scale, dtype=self.dtype))
        if positional:
            raise ModelError("positional=True needs an embedding table (weights 'embedding.weight' or vocab=)")
        return self.add(f"{prefix}e", Input((None, self.d), self.dtype))

    def final(self, node: str, src: str, w: StateDict, key: str) -> str:
        if w.has(f"{key}.weight"):
            return self.norm(node, [src], w, key)
        return self.add(node, Identity(src))

    def lm_head(self, src: str, w: StateDict, prefix: str = "") -> None:
        if not w.has("lm_head.weight"):
            return
        wl = w.take("lm_head.weight", (None, self.d))
        I_ = self.add(f"{prefix}I", Linear(src, wl, w.opt("lm_head.bias", (wl.shape[0],)), dtype=self.dtype))
        self.add(f"{prefix}P", Softmax(I_, dtype=self.dtype))

    def model(self, w: StateDict | None) -> CausalModel:
        if w is not None:
            w.check_used()
        return CausalModel(self.m)


def _options(heads, view, scores, dtype, eps, activation, norm_first) -> dict:
    return dict(heads=heads, view=view, scores=scores, dtype=dtype, eps=eps, activation=activation,
                norm_first=norm_first)


def _check_width(b: Builder, w: StateDict, d_model, key: str) -> int:
    """The width from the weights (checked against d_model if given)."""
    arr = w.sd.get(key)
    if arr is None:
        if d_model is None:
            raise ModelError(f"weights: missing {key!r} (needed to know the model width)")
        return int(d_model)
    d = arr.shape[-1]
    if d_model is not None and d != d_model:
        raise ShapeError(f"d_model={d_model}, but weight {key!r} has shape {arr.shape}")
    return d


# -- public builders --------------------------------------------------------------------------------


def attention(weights: Mapping | None = None, *, d_model: int | None = None, heads: int = 1, cross: bool = False,
              causal: bool = False, padding: bool = False, bias: bool = True, view: str = "folded",
              scores: bool = False, dtype: Any = np.float64, seed: Any = None, prefix: str = "attn") -> CausalModel:
    """One multi-head attention block (PyTorch ``nn.MultiheadAttention``) as a causal DAG.

    Parameters
    ----------
    weights : mapping, optional
        ``in_proj_weight`` ``(3d, d)``, ``in_proj_bias`` ``(3d,)``,
        ``out_proj.weight`` ``(d, d)``, ``out_proj.bias`` ``(d,)`` (or
        ``q_proj_weight`` ... when PyTorch stores them apart). None draws
        random weights with `seed` (then `d_model` is needed).
    d_model : int, optional
    heads : int
        ``heads=1`` is single-head attention.
    cross : bool
        Keys and values from a second root ``n`` ``(n, S, d)`` (cross-attention).
    causal : bool
    padding : bool
        Add a root ``pad`` ``(n, S)`` bool, True at padding keys.
    bias : bool
        With random weights: include biases.
    view : {"folded", "expanded"}
        Heads as an axis of ``P`` or one node cluster per head.
    scores : bool
        Also build ``B``, ``S``, ``M`` (scores, scaled, masked) before ``P``.
    dtype : {"float64", "float32"}
    seed : int or Generator, optional
    prefix : str

    Returns
    -------
    CausalModel
        Roots ``e`` (queries; also keys and values unless `cross`), ``n``,
        ``pad``; nodes ``{prefix}.Q`` ... ``{prefix}.O``.

    Raises
    ------
    ModelError
        If `heads` does not divide the width, or weights are missing/unused.
    """
    sd = read_state_dict(weights)
    b = Builder(**_options(heads, view, scores, dtype, 1e-5, "relu", False))
    if sd is None:
        d = need_size(d_model, "d_model", "without weights")
        sd = random_attention(as_generator(seed), d, bias)
    w = StateDict(sd)
    d = _check_width(b, w, d_model, "in_proj_weight" if "in_proj_weight" in sd else "q_proj_weight")
    b.width(d, "attention")
    e = b.add("e", Input((None, d), b.dtype))
    mem = b.add("n", Input((None, d), b.dtype)) if cross else e
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    b.attention(prefix, e, mem, w, causal=causal, pad=pad)
    return b.model(w)


def _begin_layer(weights, options: dict, *, d_model, d_ff, cross: bool, padding: bool, seed, kind: str):
    """The start one encoder or decoder layer shares: weights (random when none), builder, root ``e`` and ``pad``.

    Returns ``(builder, weights, d_model, e node, padding node or None)``.
    """
    sd = read_state_dict(weights)
    b = Builder(**options)
    if sd is None:
        d = need_size(d_model, "d_model", "without weights")
        sd = random_layer(as_generator(seed), d, need_size(d_ff, "d_ff", "without weights"), cross)
    w = StateDict(sd)
    d = b.width(_check_width(b, w, d_model, "self_attn.in_proj_weight"), kind)
    e = b.add("e", Input((None, d), b.dtype))
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    return b, w, d, e, pad


def encoder_layer(weights: Mapping | None = None, *, d_model: int | None = None, heads: int = 1,
                  d_ff: int | None = None, causal: bool = False, padding: bool = False, norm_first: bool = False,
                  activation: str = "relu", eps: float = 1e-5, view: str = "folded", scores: bool = False,
                  dtype: Any = np.float64, seed: Any = None, prefix: str = "enc.0") -> CausalModel:
    """One encoder layer (PyTorch ``nn.TransformerEncoderLayer``, ``batch_first``, eval mode).

    Parameters
    ----------
    weights : mapping, optional
        Keys of the layer's state dict (``self_attn.in_proj_weight``,
        ``linear1.weight``, ``norm1.weight``, ...). None draws random
        weights with `seed` (then `d_model` and `d_ff` are needed).
    d_model, heads, d_ff : int
    causal : bool
        Mask future keys (a decoder-only layer; see :func:`decoder`).
    padding : bool
        Add a root ``pad`` ``(n, T)`` bool.
    norm_first : bool
        Pre-LN as in PyTorch's ``norm_first=True``.
    activation : {"relu", "gelu"}
    eps : float
        LayerNorm epsilon.
    view, scores, dtype, seed
        As in :func:`attention`.
    prefix : str

    Returns
    -------
    CausalModel
        Root ``e`` ``(n, T, d)``; output ``{prefix}.n``.
    """
    b, w, d, e, pad = _begin_layer(weights, _options(heads, view, scores, dtype, eps, activation, norm_first),
                                   d_model=d_model, d_ff=d_ff, cross=False, padding=padding, seed=seed,
                                   kind="encoder layer")
    b.self_layer(prefix, e, w, causal=causal, pad=pad)
    return b.model(w)


def decoder_layer(weights: Mapping | None = None, *, d_model: int | None = None, heads: int = 1,
                  d_ff: int | None = None, cross: bool = True, causal: bool = True, padding: bool = False,
                  memory_padding: bool = False, norm_first: bool = False, activation: str = "relu",
                  eps: float = 1e-5, view: str = "folded", scores: bool = False, dtype: Any = np.float64,
                  seed: Any = None, prefix: str = "dec.0") -> CausalModel:
    """One decoder layer (PyTorch ``nn.TransformerDecoderLayer``, ``batch_first``, eval mode).

    Masked self-attention (``causal=True``: PyTorch's ``tgt_is_causal``), then
    cross-attention to the memory root ``n`` (skipped with ``cross=False``,
    a decoder-only layer whose weights are those of an encoder layer), then
    the feed-forward net.

    Parameters
    ----------
    weights : mapping, optional
        Keys of the layer's state dict (``self_attn.*``, ``multihead_attn.*``,
        ``linear1.*``, ``linear2.*``, ``norm1.*`` ... ``norm3.*``).
    cross : bool
    causal : bool
    padding : bool
        Root ``pad`` ``(n, T)``: target padding.
    memory_padding : bool
        Root ``mem_pad`` ``(n, S)``: memory padding.
    d_model, heads, d_ff, norm_first, activation, eps, view, scores, dtype, seed, prefix
        As in :func:`encoder_layer`.

    Returns
    -------
    CausalModel
        Roots ``e`` ``(n, T, d)`` and ``n`` ``(n, S, d)``; output ``{prefix}.Y``.
    """
    b, w, d, e, pad = _begin_layer(weights, _options(heads, view, scores, dtype, eps, activation, norm_first),
                                   d_model=d_model, d_ff=d_ff, cross=cross, padding=padding, seed=seed,
                                   kind="decoder layer")
    if cross:
        mem = b.add("n", Input((None, d), b.dtype))
        mpad = b.add("mem_pad", Input((None,), np.bool_)) if memory_padding else None
        b.cross_layer(prefix, e, mem, w, causal=causal, pad=pad, mem_pad=mpad)
    else:
        if memory_padding:
            raise ModelError("memory_padding needs cross=True")
        b.self_layer(prefix, e, w, causal=causal, pad=pad, names=("J", "F", "Y"), attn="self")
    return b.model(w)


def _layers_count(w: StateDict, prefix: str, layers) -> int:
    k = w.count(prefix)
    if layers is not None and k and layers != k:
        raise ModelError(f"layers={layers}, but the weights hold {k} layers under {w.prefix + prefix!r}")
    if not k:
        raise ModelError(f"weights: no layers under {w.prefix + prefix!r} (keys like {w.prefix + prefix}0.…)")
    return k


def _begin_stack(weights, kind: str, options: dict, *, layers, d_model, d_ff, vocab, cross, final_norm, lm_head,
                 positional, embed_scale, padding, seed):
    """The start every stack shares: weights (random when none are given), the builder, inputs and padding root.

    Returns ``(builder, weights, layer count, embedded input node, padding node or None)``.
    """
    sd = read_state_dict(weights)
    b = Builder(**options)
    if sd is None:
        sd = random_stack(as_generator(seed), layers=need_size(layers, "layers", "without weights"),
                           d=need_size(d_model, "d_model", "without weights"), ff=need_size(d_ff, "d_ff", "without weights"),
                           cross=cross, vocab=vocab, final_norm=final_norm, lm_head=lm_head)
    w = StateDict(sd)
    k = _layers_count(w, "layers.", layers)
    b.width(_check_width(b, w, d_model, "layers.0.self_attn.in_proj_weight"), kind)
    src = b.inputs("", w, "embedding.weight", positional=positional, embed_scale=embed_scale)
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    return b, w, k, src, pad


def encoder(weights: Mapping | None = None, *, layers: int | None = None, d_model: int | None = None,
            heads: int = 1, d_ff: int | None = None, vocab: int | None = None, positional: bool | None = None,
            embed_scale: float | None = None, final_norm: bool = False, causal: bool = False,
            padding: bool = False, norm_first: bool = False, activation: str = "relu", eps: float = 1e-5,
            view: str = "folded", scores: bool = False, dtype: Any = np.float64, seed: Any = None) -> CausalModel:
    """A stack of Λ encoder layers (PyTorch ``nn.TransformerEncoder``), with an optional embedding.

    Parameters
    ----------
    weights : mapping, optional
        ``layers.{i}.*`` (encoder-layer keys), optional ``norm.*`` (final
        norm) and ``embedding.weight`` ``(L, d)`` (then the root is token
        ids ``x``). None draws random weights (`layers`, `d_model`, `d_ff`,
        and `vocab` for an embedding).
    layers : int, optional
    positional : bool, optional
        Add sinusoidal positions to the embedding (default: True when there
        is an embedding).
    embed_scale : float, optional
        Multiply the embedding (``sqrt(d)`` in Vaswani et al.).
    final_norm : bool
        With random weights: end with a LayerNorm.
    causal, padding, norm_first, activation, eps, view, scores, dtype, seed
        As in :func:`encoder_layer`.

    Returns
    -------
    CausalModel
        Roots ``x`` (or ``e``) and ``pad``; layers ``enc.{i}``; output ``n``.
    """
    b, w, k, src, pad = _begin_stack(weights, "encoder", _options(heads, view, scores, dtype, eps, activation,
                                                                   norm_first),
                                     layers=layers, d_model=d_model, d_ff=d_ff, vocab=vocab, cross=False,
                                     final_norm=final_norm, lm_head=False, positional=positional,
                                     embed_scale=embed_scale, padding=padding, seed=seed)
    for i in range(k):
        src = b.self_layer(f"enc.{i}", src, w.sub(f"layers.{i}."), causal=causal, pad=pad)
    b.final("n", src, w, "norm")
    return b.model(w)


def decoder(weights: Mapping | None = None, *, layers: int | None = None, d_model: int | None = None,
            heads: int = 1, d_ff: int | None = None, vocab: int | None = None, cross: bool = False,
            positional: bool | None = None, embed_scale: float | None = None, final_norm: bool = False,
            padding: bool = False, memory_padding: bool = False, norm_first: bool = False,
            activation: str = "relu", eps: float = 1e-5, view: str = "folded", scores: bool = False,
            dtype: Any = np.float64, seed: Any = None) -> CausalModel:
    """A stack of Λ decoder layers: decoder-only (GPT-like) or with cross-attention.

    Parameters
    ----------
    weights : mapping, optional
        ``layers.{i}.*``: encoder-layer keys for a decoder-only stack
        (PyTorch ``nn.TransformerEncoder`` run with a causal mask), or
        decoder-layer keys with ``cross=True`` (``nn.TransformerDecoder``);
        optional ``norm.*``, ``embedding.weight`` ``(L, d)`` and
        ``lm_head.weight`` ``(L, d)`` / ``lm_head.bias``.
    vocab : int, optional
        With random weights: add an embedding and an LM head of this size.
    cross : bool
        Cross-attention to a memory root ``n`` ``(n, S, d)``.
    padding, memory_padding : bool
        Roots ``pad`` ``(n, T)`` and ``mem_pad`` ``(n, S)``.
    layers, d_model, heads, d_ff, positional, embed_scale, final_norm, norm_first, activation, eps, view, scores,
    dtype, seed
        As in :func:`encoder`.

    Returns
    -------
    CausalModel
        Roots ``x`` (or ``e``), ``n``, ``pad``; layers ``dec.{i}``; output
        ``Y``; with an LM head, logits ``I`` ``(n, T, L)`` and next-token
        probabilities ``P``.
    """
    b, w, k, src, pad = _begin_stack(weights, "decoder", _options(heads, view, scores, dtype, eps, activation,
                                                                   norm_first),
                                     layers=layers, d_model=d_model, d_ff=d_ff, vocab=vocab, cross=cross,
                                     final_norm=final_norm, lm_head=True, positional=positional,
                                     embed_scale=embed_scale, padding=padding, seed=seed)
    if cross:
        mem = b.add("n", Input((None, b.d), b.dtype))
        mpad = b.add("mem_pad", Input((None,), np.bool_)) if memory_padding else None
    elif memory_padding:
        raise ModelError("memory_padding needs cross=True")
    for i in range(k):
        lw = w.sub(f"layers.{i}.")
        if cross:
            src = b.cross_layer(f"dec.{i}", src, mem, lw, causal=True, pad=pad, mem_pad=mpad)
        else:
            src = b.self_layer(f"dec.{i}", src, lw, causal=True, pad=pad, names=("J", "F", "Y"), attn="self")
    Y = b.final("Y", src, w, "norm")
    b.lm_head(Y, w)
    return b.model(w)


def transformer(weights: Mapping | None = None, *, layers: int | tuple | None = None, d_model: int | None = None,
                heads: int = 1, d_ff: int | None = None, vocab: int | tuple | None = None,
                positional: bool | None = None, embed_scale: float | None = None, final_norm: bool = True,
                padding: bool = False, target_padding: bool = False, norm_first: bool = False,
                activation: str = "relu", eps: float = 1e-5, view: str = "folded", scores: bool = False,
                dtype: Any = np.float64, seed: Any = None) -> CausalModel:
    """An encoder-decoder transformer (PyTorch ``nn.Transformer``, ``batch_first``, eval mode).

    Parameters
    ----------
    weights : mapping, optional
        ``encoder.layers.{i}.*``, ``encoder.norm.*``, ``decoder.layers.{i}.*``,
        ``decoder.norm.*`` (the keys of ``nn.Transformer``), optionally
        ``src_embedding.weight``, ``tgt_embedding.weight`` and
        ``lm_head.weight`` / ``lm_head.bias``.
    layers : int or (int, int), optional
        Encoder and decoder depths (random weights).
    vocab : int or (int, int), optional
        Source and target vocabularies (random weights).
    padding : bool
        Source padding root ``pad`` (also masks the memory in cross-attention).
    target_padding : bool
        Target padding root ``dec.pad``.
    final_norm : bool
        With random weights: end the encoder and the decoder with a LayerNorm
        (as ``nn.Transformer`` does).
    d_model, heads, d_ff, positional, embed_scale, norm_first, activation, eps, view, scores, dtype, seed
        As in :func:`encoder`.

    Returns
    -------
    CausalModel
        Source ``x``/``e``, ``pad``, layers ``enc.{i}``, memory ``n``; target
        ``dec.x``/``dec.e``, ``dec.pad``, layers ``dec.{i}``, ``Y``, and with
        an LM head ``I`` and ``P``.
    """
    sd = read_state_dict(weights)
    b = Builder(**_options(heads, view, scores, dtype, eps, activation, norm_first))
    if isinstance(layers, (tuple, list)) and len(layers) != 2 or isinstance(vocab, (tuple, list)) and len(vocab) != 2:
        bad, value = ("layers", layers) if isinstance(layers, (tuple, list)) and len(layers) != 2 else ("vocab", vocab)
        raise ModelError(f"{bad} must be an int or a pair (encoder, decoder), got {value!r}")
    layers = tuple(layers) if isinstance(layers, list) else layers
    vocab = tuple(vocab) if isinstance(vocab, list) else vocab
    if sd is None:
        rng = as_generator(seed)
        le, ld = (layers, layers) if not isinstance(layers, tuple) else layers
        vs, vt = (vocab, vocab) if not isinstance(vocab, tuple) else vocab
        d = need_size(d_model, "d_model", "without weights")
        ff = need_size(d_ff, "d_ff", "without weights")
        enc = random_stack(rng, layers=need_size(le, "layers", "without weights"), d=d, ff=ff, cross=False, vocab=vs,
                            final_norm=final_norm, lm_head=False, emb_key="src_embedding.weight")
        dec = random_stack(rng, layers=need_size(ld, "layers", "without weights"), d=d, ff=ff, cross=True, vocab=vt,
                            final_norm=final_norm, lm_head=True, emb_key="tgt_embedding.weight")
        sd = {}
        for k_, v in enc.items():
            sd[k_ if k_.endswith("embedding.weight") else f"encoder.{k_}"] = v
        for k_, v in dec.items():
            sd[k_ if (k_.endswith("embedding.weight") or k_.startswith("lm_head")) else f"decoder.{k_}"] = v
    w = StateDict(sd)
    we, wd = w.sub("encoder."), w.sub("decoder.")
    le = _layers_count(we, "layers.", None if not isinstance(layers, tuple) else layers[0])
    ld = _layers_count(wd, "layers.", None if not isinstance(layers, tuple) else layers[1])
    if isinstance(layers, int) and (le != layers or ld != layers):
        raise ModelError(f"layers={layers}, but the weights hold {le} encoder and {ld} decoder layers")
    b.width(_check_width(b, w, d_model, "encoder.layers.0.self_attn.in_proj_weight"), "transformer")
    src = b.inputs("", w, "src_embedding.weight", positional=positional, embed_scale=embed_scale)
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    for i in range(le):
        src = b.self_layer(f"enc.{i}", src, we.sub(f"layers.{i}."), causal=False, pad=pad)
    mem = b.final("n", src, we, "norm")
    tgt = b.inputs("dec.", w, "tgt_embedding.weight", positional=positional, embed_scale=embed_scale)
    tpad = b.add("dec.pad", Input((None,), np.bool_)) if target_padding else None
    for i in range(ld):
        tgt = b.cross_layer(f"dec.{i}", tgt, mem, wd.sub(f"layers.{i}."), causal=True, pad=tpad, mem_pad=pad)
    Y = b.final("Y", tgt, wd, "norm")
    b.lm_head(Y, w)
    return b.model(w)
