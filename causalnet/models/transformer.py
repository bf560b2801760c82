"""Transformers as executable causal DAGs.

The builders here return :class:`~causalnet.model.CausalModel` objects made of
the deterministic tensor ops of :mod:`causalnet.mechanisms.tensor`, with the
node names of the Bayesuvius chapter "Transformer Networks" [2]_. Running the
model is ``model.forward({"x": tokens})``; every internal node can be read from
the returned Trace, intervened on with ``model.do`` (activation patching,
head ablation), patched from another run (:func:`interchange`), patched along
one edge only (:func:`path_patch`), and analysed for causal mediation
(:func:`mediation`). :func:`position_graph` unrolls a model into one node per
sequence position so that d-separation shows what a causal mask allows.

Node names
----------
One attention block under prefix ``p`` (``enc.0.attn``, ``dec.0.self``;
cross-attention ``dec.0.cross`` uses the lower-case letters of [2]_)::

    p.Q  p.K  p.V        projections          (n, T, D)
    p.B  p.S  p.M        scores, scaled, masked (only with scores=True)
    p.P                  attention weights    (n, h, T, S)
    p.A                  heads concatenated   (n, T, D)
    p.O                  output projection    (n, T, d)

The expanded view adds one cluster per head, ``p.head.1.Q`` ... ``p.head.1.P``
``(n, T, S)`` ... ``p.head.1.A``, and ``p.A`` concatenates the heads.

Encoder layer ``enc.i``: attention ``enc.i.attn``, ``enc.i.N = norm(e + O)``,
``enc.i.F = feed_forward(N)``, ``enc.i.n = norm(N + F)``. Decoder layer
``dec.i``: masked self-attention ``dec.i.self``, ``dec.i.J = norm(e + O)``,
cross-attention ``dec.i.cross`` (queries from ``J``, keys and values from the
memory ``n``), ``dec.i.j = norm(J + o)``, ``dec.i.F``, ``dec.i.Y = norm(j + F)``.
A decoder-only layer has no cross-attention: ``J``, ``F``, ``Y``. With
``norm_first=True`` (pre-LN) the norms become nodes ``ln1``, ``ln2``, ``ln3``
and ``N``, ``J``, ``j``, ``n``, ``Y`` are plain residual sums.

Stacks: token ids ``x`` ``(n, T)`` (when there is an embedding table), the
embedding ``e`` (``e0`` before positional encoding), the layers, then the
encoder output ``n``, or for a decoder ``Y``, logits ``I`` and next-token
probabilities ``P``. An encoder-decoder model prefixes the target side with
``dec.``: ``dec.x``, ``dec.e``. Padding masks are roots ``pad`` (source, or
the only sequence) and ``dec.pad`` (target), True at padding.

Weights use the keys of PyTorch state dicts (``self_attn.in_proj_weight``,
``linear1.weight``, ``norm1.weight``, ``layers.0.``...), so
``from_torch({k: v.numpy() for k, v in module.state_dict().items()}, heads=8)``
rebuilds an ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``,
``nn.TransformerDecoderLayer``, their stacks, or an ``nn.Transformer``. PyTorch
is never imported here.

Symbols: ``n`` batch, ``T`` target (or only) positions, ``S`` source positions,
``h`` heads, ``d`` model width, ``L`` vocabulary, ``Λ`` layers.

References
----------
.. [1] Vaswani et al., "Attention is all you need", NeurIPS 2017.
.. [2] R. R. Tucci, "Bayesuvius", chapter "Transformer Networks".
.. [3] Vig et al., "Investigating gender bias in language models using causal
   mediation analysis", NeurIPS 2020.
.. [4] Geiger et al., "Causal abstractions of neural networks", NeurIPS 2021
   (interchange interventions); Wang et al., "Interpretability in the wild",
   ICLR 2023 (path patching).

Examples
--------
>>> import numpy as np
>>> from causalnet.models import transformer as tf
>>> m = tf.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0)
>>> [v for v in m.nodes if v.startswith("enc.0")][:5]
['enc.0.attn.Q', 'enc.0.attn.K', 'enc.0.attn.V', 'enc.0.attn.P', 'enc.0.attn.A']
>>> tr = m.forward({"e": np.zeros((2, 5, 8))})
>>> tr["enc.0.attn.P"].shape, tr["enc.0.n"].shape
((2, 2, 5, 5), (2, 5, 8))
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import limits
from ..errors import GraphError, ModelError, ShapeError
from ..graph.dag import DAG
from ..inference.tensor import Plan
from ..mechanisms.base import Mechanism, Spec
from ..mechanisms.tensor import (
    Add,
    Attention,
    AttentionWeights,
    Concat,
    Embedding,
    FeedForward,
    Identity,
    Input,
    LayerNorm,
    Linear,
    Mask,
    MultiHeadAttention,
    PositionalEncoding,
    Reshape,
    Scale,
    Scores,
    Softmax,
    Split,
    TensorOp,
    Transpose,
    _fmt,
    as_int,
    as_real,
    float_dtype,
)
from ..model import CausalModel, Trace

__all__ = [
    "attention",
    "encoder_layer",
    "decoder_layer",
    "encoder",
    "decoder",
    "transformer",
    "from_torch",
    "generate",
    "Site",
    "head",
    "ablate",
    "interchange",
    "rewire",
    "path_patch",
    "mediation",
    "Effects",
    "position_graph",
    "diagram_options",
]

_VIEWS = ("folded", "expanded")


# -- weights ------------------------------------------------------------------------------


def _to_numpy(key: str, v: Any) -> np.ndarray:
    """The weight `key` as a real, finite numpy array, or a ModelError naming the key."""
    try:
        if hasattr(v, "detach"):  # a torch tensor, without importing torch
            v = v.detach().cpu().numpy()
        arr = np.asarray(v)
    except (TypeError, ValueError, RuntimeError) as e:  # bfloat16, ragged lists, ...
        raise ModelError(f"weights: {key!r} cannot be read as a numpy array ({e})") from None
    if arr.dtype.kind not in "biuf":
        raise ModelError(f"weights: {key!r} must hold real numbers, got dtype {arr.dtype}; causalnet cannot "
                         f"represent it")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ModelError(f"weights: {key!r} contains NaN or inf")
    return arr


class _Weights:
    """A state dict read under a prefix; remembers which keys were used."""

    def __init__(self, sd: Mapping, prefix: str = "", used: set | None = None) -> None:
        self.sd = sd
        self.prefix = prefix
        self.used = set() if used is None else used

    def sub(self, prefix: str) -> _Weights:
        return _Weights(self.sd, self.prefix + prefix, self.used)

    def has(self, key: str) -> bool:
        return self.prefix + key in self.sd

    def take(self, key: str, shape: tuple | None = None) -> np.ndarray:
        full = self.prefix + key
        if full not in self.sd:
            close = difflib.get_close_matches(full, [str(k) for k in self.sd], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ModelError(f"weights: missing {full!r}{hint}")
        arr = self.sd[full]
        self.used.add(full)
        if shape is not None and (len(shape) != arr.ndim
                                  or any(s is not None and s != a for s, a in zip(shape, arr.shape))):
            raise ShapeError(f"weight {full!r} has shape {arr.shape}, expected {_fmt(shape)}")
        return arr

    def opt(self, key: str, shape: tuple | None = None) -> np.ndarray | None:
        return self.take(key, shape) if self.has(key) else None

    def count(self, prefix: str) -> int:
        """Number of numbered blocks ``prefix0.``, ``prefix1.``, ... under this prefix."""
        pat = re.compile(re.escape(self.prefix + prefix) + r"(\d+)\.")
        idx = {int(m.group(1)) for k in self.sd if (m := pat.match(str(k)))}
        if idx and idx != set(range(max(idx) + 1)):
            raise ModelError(f"weights: layers {sorted(idx)} under {self.prefix + prefix!r} are not numbered 0..k-1")
        return len(idx)

    def check_used(self) -> None:
        left = [k for k in self.sd if k not in self.used]
        if left:
            raise ModelError(f"weights: {len(left)} keys were not used: {sorted(map(str, left))[:8]}"
                             f"{' ...' if len(left) > 8 else ''}")


def _state(weights: Mapping | None) -> dict | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise ModelError(f"weights must be a mapping name -> array (a state dict), got {type(weights).__name__}")
    return {str(k): _to_numpy(str(k), v) for k, v in weights.items()}


# Random weights in the PyTorch layout, for models built without weights.

def _r_attention(rng, d: int, bias: bool = True) -> dict:
    _check_random_size(4 * d * d, "an attention block", f"d_model={d}")
    w = {"in_proj_weight": rng.normal(0, d ** -0.5, (3 * d, d)), "out_proj.weight": rng.normal(0, d ** -0.5, (d, d))}
    if bias:
        w["in_proj_bias"] = rng.normal(0, 0.1, 3 * d)
        w["out_proj.bias"] = rng.normal(0, 0.1, d)
    return w


def _r_norm(rng, d: int, name: str) -> dict:
    return {f"{name}.weight": 1 + rng.normal(0, 0.1, d), f"{name}.bias": rng.normal(0, 0.1, d)}


def _r_layer(rng, d: int, ff: int, cross: bool) -> dict:
    _check_random_size((8 + 4 * cross) * d * d + 2 * d * ff, "a layer", f"d_model={d}, d_ff={ff}")
    w = {f"self_attn.{k}": v for k, v in _r_attention(rng, d).items()}
    if cross:
        w.update({f"multihead_attn.{k}": v for k, v in _r_attention(rng, d).items()})
    w.update({"linear1.weight": rng.normal(0, d ** -0.5, (ff, d)), "linear1.bias": rng.normal(0, 0.1, ff),
              "linear2.weight": rng.normal(0, ff ** -0.5, (d, ff)), "linear2.bias": rng.normal(0, 0.1, d)})
    for i in range(1, 4 if cross else 3):
        w.update(_r_norm(rng, d, f"norm{i}"))
    return w


def _prefixed(prefix: str, w: Mapping) -> dict:
    return {prefix + k: v for k, v in w.items()}


def _check_random_size(count: float, what: str, cause: str) -> None:
    """Random weights of `count` float64 entries must fit the limits before they are drawn."""
    limits.check_bytes(8.0 * count, what=f"the random weights of {what}", cause=cause)


def _need(value, name: str, why: str):
    if value is None:
        raise ModelError(f"{name} is needed {why}")
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ModelError(f"{name} must be a positive int, got {value!r}")
    return int(value)


# -- building blocks ----------------------------------------------------------------------------


class _Builder:
    """Adds nodes to a mechanism dict with shared options."""

    def __init__(self, *, heads: int, view: str, scores: bool, dtype: Any, eps: float, activation: str,
                 norm_first: bool) -> None:
        if not isinstance(heads, (int, np.integer)) or isinstance(heads, bool) or heads < 1:
            raise ModelError(f"heads must be a positive int, got {heads!r}")
        if view not in _VIEWS:
            raise ModelError(f"view must be one of {list(_VIEWS)}, got {view!r}")
        if activation not in ("relu", "gelu"):
            raise ModelError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        self.heads = int(heads)
        self.view = view
        self.scores = bool(scores)
        self.dtype = float_dtype(dtype, "the model")
        self.eps = as_real(eps, "eps", positive=True)
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

    def attention(self, p: str, q_src: str, kv_src: str, w: _Weights, *, causal: bool, pad: str | None,
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

    def norm(self, node: str, parents: list, w: _Weights, key: str) -> str:
        d = self.d
        return self.add(node, LayerNorm(parents, w.take(f"{key}.weight", (d,)), w.opt(f"{key}.bias", (d,)),
                                        eps=self.eps, dtype=self.dtype))

    def ff(self, node: str, src: str, w: _Weights) -> str:
        d = self.d
        w1 = w.take("linear1.weight", (None, d))
        ff = w1.shape[0]
        return self.add(node, FeedForward(src, w1, w.opt("linear1.bias", (ff,)), w.take("linear2.weight", (d, ff)),
                                          w.opt("linear2.bias", (d,)), activation=self.activation, dtype=self.dtype))

    def self_layer(self, p: str, src: str, w: _Weights, *, causal: bool, pad: str | None,
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

    def cross_layer(self, p: str, src: str, mem: str, w: _Weights, *, causal: bool, pad: str | None,
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

    def inputs(self, prefix: str, w: _Weights, emb_key: str, *, positional, embed_scale) -> str:
        """Roots of one sequence: ``x -> e0 -> e`` with an embedding table, else ``e``."""
        if w.has(emb_key):
            table = w.take(emb_key, (None, None))
            self.width(table.shape[1], f"embedding {emb_key!r}")
            x = self.add(f"{prefix}x", Input((None,), np.int64))
            pos = True if positional is None else bool(positional)
            if pos:
                e0 = self.add(f"{prefix}e0", Embedding(x, table, scale=embed_scale, dtype=self.dtype))
                return self.add(f"{prefix}e", PositionalEncoding(e0, table.shape[1], dtype=self.dtype))
            return self.add(f"{prefix}e", Embedding(x, table, scale=embed_scale, dtype=self.dtype))
        if positional:
            raise ModelError("positional=True needs an embedding table (weights 'embedding.weight' or vocab=)")
        return self.add(f"{prefix}e", Input((None, self.d), self.dtype))

    def final(self, node: str, src: str, w: _Weights, key: str) -> str:
        if w.has(f"{key}.weight"):
            return self.norm(node, [src], w, key)
        return self.add(node, Identity(src))

    def lm_head(self, src: str, w: _Weights, prefix: str = "") -> None:
        if not w.has("lm_head.weight"):
            return
        wl = w.take("lm_head.weight", (None, self.d))
        I_ = self.add(f"{prefix}I", Linear(src, wl, w.opt("lm_head.bias", (wl.shape[0],)), dtype=self.dtype))
        self.add(f"{prefix}P", Softmax(I_, dtype=self.dtype))

    def model(self, w: _Weights | None) -> CausalModel:
        if w is not None:
            w.check_used()
        return CausalModel(self.m)


def _options(heads, view, scores, dtype, eps, activation, norm_first) -> dict:
    return dict(heads=heads, view=view, scores=scores, dtype=dtype, eps=eps, activation=activation,
                norm_first=norm_first)


def _check_width(b: _Builder, w: _Weights, d_model, key: str) -> int:
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
    sd = _state(weights)
    b = _Builder(**_options(heads, view, scores, dtype, 1e-5, "relu", False))
    if sd is None:
        d = _need(d_model, "d_model", "without weights")
        sd = _r_attention(np.random.default_rng(seed), d, bias)
    w = _Weights(sd)
    d = _check_width(b, w, d_model, "in_proj_weight" if "in_proj_weight" in sd else "q_proj_weight")
    b.width(d, "attention")
    e = b.add("e", Input((None, d), b.dtype))
    mem = b.add("n", Input((None, d), b.dtype)) if cross else e
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    b.attention(prefix, e, mem, w, causal=causal, pad=pad)
    return b.model(w)


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
    sd = _state(weights)
    b = _Builder(**_options(heads, view, scores, dtype, eps, activation, norm_first))
    if sd is None:
        d = _need(d_model, "d_model", "without weights")
        sd = _r_layer(np.random.default_rng(seed), d, _need(d_ff, "d_ff", "without weights"), False)
    w = _Weights(sd)
    d = b.width(_check_width(b, w, d_model, "self_attn.in_proj_weight"), "encoder layer")
    e = b.add("e", Input((None, d), b.dtype))
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
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
    sd = _state(weights)
    b = _Builder(**_options(heads, view, scores, dtype, eps, activation, norm_first))
    if sd is None:
        d = _need(d_model, "d_model", "without weights")
        sd = _r_layer(np.random.default_rng(seed), d, _need(d_ff, "d_ff", "without weights"), cross)
    w = _Weights(sd)
    d = b.width(_check_width(b, w, d_model, "self_attn.in_proj_weight"), "decoder layer")
    e = b.add("e", Input((None, d), b.dtype))
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    if cross:
        mem = b.add("n", Input((None, d), b.dtype))
        mpad = b.add("mem_pad", Input((None,), np.bool_)) if memory_padding else None
        b.cross_layer(prefix, e, mem, w, causal=causal, pad=pad, mem_pad=mpad)
    else:
        if memory_padding:
            raise ModelError("memory_padding needs cross=True")
        b.self_layer(prefix, e, w, causal=causal, pad=pad, names=("J", "F", "Y"), attn="self")
    return b.model(w)


def _layers_count(w: _Weights, prefix: str, layers) -> int:
    k = w.count(prefix)
    if layers is not None and k and layers != k:
        raise ModelError(f"layers={layers}, but the weights hold {k} layers under {w.prefix + prefix!r}")
    if not k:
        raise ModelError(f"weights: no layers under {w.prefix + prefix!r} (keys like {w.prefix + prefix}0.…)")
    return k


def _random_stack(rng, *, layers, d, ff, cross, vocab, final_norm, lm_head, emb_key="embedding.weight",
                  norm_key="norm") -> dict:
    sd: dict = {}
    _check_random_size(layers * ((8 + 4 * cross) * d * d + 2 * d * ff) + 2 * (vocab or 0) * d,
                       f"a stack of {layers} layers", f"d_model={d}, d_ff={ff}, vocab={vocab}")
    for i in range(layers):
        sd.update(_prefixed(f"layers.{i}.", _r_layer(rng, d, ff, cross)))
    if final_norm:
        sd.update(_r_norm(rng, d, norm_key))
    if vocab is not None:
        sd[emb_key] = rng.normal(0, 1.0, (vocab, d))
        if lm_head:
            sd["lm_head.weight"] = rng.normal(0, d ** -0.5, (vocab, d))
            sd["lm_head.bias"] = rng.normal(0, 0.1, vocab)
    return sd


def _begin_stack(weights, kind: str, options: dict, *, layers, d_model, d_ff, vocab, cross, final_norm, lm_head,
                 positional, embed_scale, padding, seed):
    """The start every stack shares: weights (random when none are given), the builder, inputs and padding root.

    Returns ``(builder, weights, layer count, embedded input node, padding node or None)``.
    """
    sd = _state(weights)
    b = _Builder(**options)
    if sd is None:
        sd = _random_stack(np.random.default_rng(seed), layers=_need(layers, "layers", "without weights"),
                           d=_need(d_model, "d_model", "without weights"), ff=_need(d_ff, "d_ff", "without weights"),
                           cross=cross, vocab=vocab, final_norm=final_norm, lm_head=lm_head)
    w = _Weights(sd)
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
    sd = _state(weights)
    b = _Builder(**_options(heads, view, scores, dtype, eps, activation, norm_first))
    if sd is None:
        rng = np.random.default_rng(seed)
        le, ld = (layers, layers) if not isinstance(layers, tuple) else layers
        vs, vt = (vocab, vocab) if not isinstance(vocab, tuple) else vocab
        d = _need(d_model, "d_model", "without weights")
        ff = _need(d_ff, "d_ff", "without weights")
        enc = _random_stack(rng, layers=_need(le, "layers", "without weights"), d=d, ff=ff, cross=False, vocab=vs,
                            final_norm=final_norm, lm_head=False, emb_key="src_embedding.weight")
        dec = _random_stack(rng, layers=_need(ld, "layers", "without weights"), d=d, ff=ff, cross=True, vocab=vt,
                            final_norm=final_norm, lm_head=True, emb_key="tgt_embedding.weight")
        sd = {}
        for k_, v in enc.items():
            sd[k_ if k_.endswith("embedding.weight") else f"encoder.{k_}"] = v
        for k_, v in dec.items():
            sd[k_ if (k_.endswith("embedding.weight") or k_.startswith("lm_head")) else f"decoder.{k_}"] = v
    w = _Weights(sd)
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


_KINDS = ("attention", "encoder_layer", "decoder_layer", "encoder", "decoder", "transformer")


def from_torch(state_dict: Mapping, *, heads: int, kind: str | None = None, **options) -> CausalModel:
    """Rebuild a PyTorch transformer module from its state dict.

    Parameters
    ----------
    state_dict : mapping name -> array
        ``module.state_dict()`` with values as numpy arrays (CPU tensors
        work too; torch is not imported here).
    heads : int
        Number of heads (not stored in a state dict).
    kind : {"attention", "encoder_layer", "decoder_layer", "encoder", "decoder", "transformer"}, optional
        Detected from the keys when omitted: ``nn.MultiheadAttention``,
        ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``,
        ``nn.TransformerEncoder``, ``nn.TransformerDecoder``,
        ``nn.Transformer``. Pass ``kind="decoder"`` for a decoder-only stack
        stored as an ``nn.TransformerEncoder``.
    **options
        Passed to the builder: what the state dict does not hold, such as
        ``norm_first``, ``activation``, ``eps``, ``padding``, ``causal``,
        ``view``, ``dtype``.

    Returns
    -------
    CausalModel

    Raises
    ------
    ModelError
        Unknown layout, missing or unused weights, or `heads` not dividing the width.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sd = {"in_proj_weight": rng.normal(size=(12, 4)), "in_proj_bias": np.zeros(12),
    ...       "out_proj.weight": rng.normal(size=(4, 4)), "out_proj.bias": np.zeros(4)}
    >>> from_torch(sd, heads=2).spec("attn.P").shape
    (2, None, None)
    """
    sd = _state(state_dict)
    keys = set(sd)
    if kind is None:
        if any(k.startswith("encoder.layers.") for k in keys) and any(k.startswith("decoder.layers.") for k in keys):
            kind = "transformer"
        elif any(k.startswith("layers.0.multihead_attn.") for k in keys):
            kind = "decoder"
            options.setdefault("cross", True)
        elif any(k.startswith("layers.0.self_attn.") for k in keys):
            kind = "encoder"
        elif any(k.startswith("multihead_attn.") for k in keys):
            kind = "decoder_layer"
        elif any(k.startswith("self_attn.") for k in keys):
            kind = "encoder_layer"
        elif "in_proj_weight" in keys or "q_proj_weight" in keys:
            kind = "attention"
        else:
            raise ModelError(f"from_torch: cannot tell the module from the keys {sorted(keys)[:6]}; pass kind= one "
                             f"of {list(_KINDS)}")
    if kind not in _KINDS:
        raise ModelError(f"from_torch: kind must be one of {list(_KINDS)}, got {kind!r}")
    if kind == "decoder_layer" and "cross" not in options:
        options["cross"] = any(k.startswith("multihead_attn.") for k in keys)
    if kind == "decoder" and "cross" not in options:
        options["cross"] = any(k.startswith("layers.0.multihead_attn.") for k in keys)
    builder = {"attention": attention, "encoder_layer": encoder_layer, "decoder_layer": decoder_layer,
               "encoder": encoder, "decoder": decoder, "transformer": transformer}[kind]
    return builder(sd, heads=heads, **options)


# -- running --------------------------------------------------------------------------------------


def generate(model: CausalModel, prompt, steps: int, *, source=None, source_padding=None,
             eos: int | None = None) -> np.ndarray:
    """Greedy autoregressive decoding: append ``argmax I[:, -1]`` `steps` times.

    Parameters
    ----------
    model : CausalModel
        A decoder with token ids and logits ``I``: decoder-only (:func:`decoder`
        with an embedding; tokens ``x``) or encoder-decoder
        (:func:`transformer`; tokens ``dec.x``, source ``x`` or ``e``).
    prompt : array_like of int, shape (n, T0)
        The tokens to continue (for a translation model, usually the start token).
    steps : int
    source : array_like, optional
        Encoder-decoder only: source ids ``(n, S)`` (or embeddings ``(n, S, d)``
        when the model has no source embedding). The encoder runs once.
    source_padding : array_like of bool, shape (n, S), optional
        The source padding mask when the model has a ``pad`` root.
    eos : int, optional
        A row that has produced `eos` keeps producing it.

    Returns
    -------
    ndarray of int, shape (n, T0 + steps)
    """
    model._check_node("I", "node (a decoder with an LM head)")
    tokens = np.asarray(prompt)
    if tokens.ndim != 2 or tokens.dtype.kind not in "iu":
        raise ShapeError(f"prompt must be (n, T0) integer token ids, got {tokens.dtype} {tokens.shape}")
    if tokens.shape[1] == 0 or tokens.shape[0] == 0:
        raise ShapeError(f"prompt must hold at least one row and one token (n, T0 >= 1), got {tokens.shape}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ModelError(f"steps must be a non-negative int, got {steps!r}")
    if eos is not None:
        as_int(eos, "eos", low=0)
    nrow = tokens.shape[0]
    if "dec.x" in model:
        tok = "dec.x"
        if source is None:
            raise ModelError("an encoder-decoder model needs source= (ids for 'x' or embeddings for 'e')")
        enc_in = {"x" if "x" in model else "e": source}
        if "pad" in model:
            enc_in["pad"] = np.zeros(np.shape(source)[:2], bool) if source_padding is None else source_padding
        fixed = {"n": Plan(model, outputs=["n"], inputs=list(enc_in)).run(enc_in)["n"]}
        if "pad" in model:
            fixed["pad"] = enc_in["pad"]
        pad_nodes = ["dec.pad"] if "dec.pad" in model else []
    else:
        tok = "x"
        model._check_node(tok, "token node")
        if source is not None:
            raise ModelError("source= is for encoder-decoder models; this model has no 'dec.x'")
        fixed = {}
        pad_nodes = ["pad"] if "pad" in model else []
    plan = Plan(model, outputs=["I"], inputs=[tok, *fixed, *pad_nodes])
    done = np.zeros(nrow, bool)
    out = tokens.astype(np.int64)
    for _ in range(int(steps)):
        vals = {tok: out, **fixed}
        for v in pad_nodes:
            vals[v] = np.zeros(out.shape, bool)
        logits = plan.run(vals)["I"]                       # (n, T, L)
        nxt = logits[:, -1].argmax(axis=-1)                # (n,)
        if eos is not None:
            nxt = np.where(done, eos, nxt)
            done |= nxt == eos
        out = np.concatenate([out, nxt[:, None]], axis=1)  # (n, T + 1)
    return out


# -- interventions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """A node, or a part of each row of it (e.g. one head).

    Attributes
    ----------
    node : hashable
    index : tuple
        Indexes each row (the batch axis is not included); ``()`` is the whole node.
    label : str
        For printing, e.g. ``"enc.0.attn.A[head 1]"``.
    """

    node: Hashable
    index: tuple = ()
    label: str = ""

    def __str__(self) -> str:
        return self.label or str(self.node)

    def __hash__(self) -> int:  # slices are not hashable before Python 3.12
        key = tuple((i.start, i.stop, i.step) if isinstance(i, slice) else i for i in self.index)
        return hash((self.node, key))

    def get(self, values: np.ndarray) -> np.ndarray:
        """The site's part of a batch of node values ``(n, ...)``."""
        return values[(slice(None), *self.index)]


def _site(model: CausalModel, s) -> Site:
    if isinstance(s, Site):
        model._check_node(s.node, "node in site")
        return s
    model._check_node(s, "node")
    return Site(s)


def _heads_of(model: CausalModel, node) -> int | None:
    mech = model.mechanisms[node]
    h = getattr(_natural(mech), "heads", None)
    if h:
        return h
    for c in model.dag.children(node):
        h = getattr(_natural(model.mechanisms[c]), "heads", None)
        if h:
            return h
    return None


def head(model: CausalModel, node: Hashable, i: int) -> Site:
    """The part of `node` that belongs to head `i` (folded view).

    For attention weights ``(n, h, T, S)`` that is ``[:, i]``; for ``Q``,
    ``K``, ``V`` and ``A`` ``(n, T, D)`` it is the columns
    ``i*D/h : (i+1)*D/h``.

    Raises
    ------
    ModelError
        If the node has no heads or `i` is out of range.
    """
    model._check_node(node)
    h = _heads_of(model, node)
    if h is None:
        raise ModelError(f"node {node!r} has no heads (its mechanism and children declare none)")
    if not 0 <= i < h:
        raise ModelError(f"node {node!r} has {h} heads; head {i} is out of range")
    shape = model.spec(node).shape
    if len(shape) == 3 and shape[0] == h:
        return Site(node, (i,), f"{node}[head {i}]")
    if len(shape) == 2 and shape[1] is not None:
        dh = shape[1] // h
        return Site(node, (slice(None), slice(i * dh, (i + 1) * dh)), f"{node}[head {i}]")
    raise ModelError(f"node {node!r} of shape {_fmt(('n', *shape))} has no head axis")


def _natural(mech: Mechanism) -> Mechanism:
    while True:
        if hasattr(mech, "natural") and getattr(mech, "is_shift", None) is not None:
            if mech.natural is None:
                return mech
            mech = mech.natural
        elif isinstance(mech, _Rewired):
            mech = mech.inner
        else:
            return mech


def _run_patched(model: CausalModel, inputs: Mapping, patches: Mapping[Site, np.ndarray],
                 keep: Iterable | None = None) -> Trace:
    """Forward with whole nodes clamped and parts of nodes overwritten."""
    whole = {s.node: v for s, v in patches.items() if not s.index}
    parts: dict = {}
    for s, v in patches.items():
        if s.index:
            if s.node in whole:
                raise ModelError(f"site {s} overlaps a patch of the whole node {s.node!r}")
            parts.setdefault(s.node, []).append((s.index, v))
    clash = set(whole) & set(inputs)
    if clash:
        raise ModelError(f"nodes {sorted(map(str, clash))} are both inputs and patched")
    m = model
    if parts:
        m = model.do({node: _setter(items) for node, items in parts.items()})
    return m.forward({**inputs, **whole}, keep=keep)


def ablate(model: CausalModel, sites, *, how: str = "zero", reference: Mapping | None = None) -> CausalModel:
    """Zero or mean ablation of nodes or parts of nodes (such as heads): a new model.

    Parameters
    ----------
    model : CausalModel
    sites : node, Site, or iterable of them
    how : {"zero", "mean"}
        ``"zero"`` sets each site to 0; ``"mean"`` to its average over the
        rows of a run on `reference` (per position and feature), the same for
        every row.
    reference : mapping node -> array, optional
        Inputs of the reference run (``how="mean"``).

    Returns
    -------
    CausalModel
        ``model.do(...)`` with a shift intervention per node, so the rest of
        each node (other heads) keeps its natural value.

    Examples
    --------
    >>> import numpy as np
    >>> m = attention(d_model=4, heads=2, seed=0)
    >>> m0 = ablate(m, head(m, "attn.P", 1))
    >>> p = m0.forward({"e": np.ones((1, 3, 4))})["attn.P"]
    >>> float(abs(p[:, 1]).max()), float(p[:, 0].sum())
    (0.0, 3.0)
    """
    if how not in ("zero", "mean"):
        raise ModelError(f"how must be 'zero' or 'mean', got {how!r}")
    sites = _sites(model, sites)
    if how == "mean":
        if reference is None:
            raise ModelError("mean ablation needs reference= inputs")
        ref = model.forward(reference, keep={s.node for s in sites})
        values = {s: s.get(ref[s.node]).mean(axis=0) for s in sites}
    else:
        values = {s: 0.0 for s in sites}
    per_node: dict = {}
    for s, v in values.items():
        per_node.setdefault(s.node, []).append((s.index, v))
    return model.do({node: _setter(items) for node, items in per_node.items()})


def _setter(items):
    """A shift intervention writing `items` (per-row index, value) into the natural value."""
    def f(natural):
        out = np.array(natural, copy=True)
        for idx, v in items:
            out[(slice(None), *idx)] = v
        return out
    return f


def interchange(model: CausalModel, base: Mapping, source: Mapping, sites, *, keep=None) -> Trace:
    """An interchange intervention: run on `base` with `sites` taken from a run on `source`.

    Parameters
    ----------
    model : CausalModel
    base, source : mapping node -> array
        Inputs of the two runs (same batch size; row ``i`` of the source
        feeds row ``i`` of the base).
    sites : node, Site, or iterable of them
        What to transplant (whole nodes, or parts such as :func:`head`).
    keep : iterable of nodes, optional
        As in ``forward``.

    Returns
    -------
    Trace
        The base run under the intervention.

    Examples
    --------
    >>> import numpy as np
    >>> m = encoder_layer(d_model=4, heads=2, d_ff=8, seed=0)
    >>> x, x2 = np.random.default_rng(1).normal(size=(2, 1, 3, 4))
    >>> tr = interchange(m, {"e": x}, {"e": x2}, "enc.0.attn.A")
    >>> bool(np.allclose(tr["enc.0.attn.A"], m.forward({"e": x2})["enc.0.attn.A"]))
    True
    """
    sites = _sites(model, sites)
    src = model.forward(source, keep={s.node for s in sites})
    return _run_patched(model, base, {s: s.get(src[s.node]) for s in sites}, keep=keep)


def _sites(model, sites) -> list[Site]:
    if isinstance(sites, (Site, str)) or not isinstance(sites, Iterable):
        sites = [sites]
    return [_site(model, s) for s in sites]


class _Rewired(Mechanism):
    """A mechanism whose parents are renamed (path patching): reads `mapping[p]` where it read `p`."""

    def __init__(self, inner: Mechanism, mapping: Mapping) -> None:
        self.inner = inner
        self.mapping = dict(mapping)
        self.back = {v: k for k, v in self.mapping.items()}
        super().__init__([self.mapping.get(p, p) for p in inner.parents])
        self.kind = inner.kind
        self.deterministic = inner.deterministic

    def spec(self, node, parent_specs) -> Spec:
        return self.inner.spec(node, {self.back.get(p, p): s for p, s in parent_specs.items()})

    def sample_noise(self, n, rng, spec):
        return self.inner.sample_noise(n, rng, spec)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        return self.inner.evaluate(node, {self.back.get(p, p): v for p, v in parents.items()}, noise, spec, n=n)

    def __getattr__(self, name):  # heads, causal, ... of the wrapped op
        if name.startswith("__") or name in ("inner", "mapping", "back"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"_Rewired({self.inner!r}, {self.mapping})"


def _copy_name(parent, child) -> str:
    return f"{parent}@{child}"


def rewire(model: CausalModel, edges) -> tuple[CausalModel, dict]:
    """Give each edge ``parent -> child`` its own copy of the parent's value.

    The copy node ``"{parent}@{child}"`` (an :class:`Identity` of the parent)
    is what the child reads along that edge, so a ``do`` on the copy changes
    what the parent sends along that one edge only. Without an intervention
    the rewired model computes exactly what the original does.

    Parameters
    ----------
    model : CausalModel
    edges : (parent, child) or iterable of them

    Returns
    -------
    model : CausalModel
    copies : dict
        (parent, child) -> copy node name.

    Raises
    ------
    GraphError
        If an edge is not in the model's DAG.
    """
    if isinstance(edges, tuple) and len(edges) == 2 and not isinstance(edges[0], tuple):
        edges = [edges]
    edges = [tuple(e) for e in edges]
    mechs = dict(model.mechanisms)
    copies: dict = {}
    per_child: dict = {}
    for p, c in edges:
        model._check_node(p, "node in edge")
        model._check_node(c, "node in edge")
        if not model.dag.has_edge(p, c):
            raise GraphError(f"no edge {p!r} -> {c!r} in the model; {c!r} has parents {list(model.dag.parents(c))}")
        name = _copy_name(p, c)
        if name in mechs:
            raise ModelError(f"node name {name!r} for the copy of edge {p!r} -> {c!r} is taken")
        mechs[name] = Identity(p)
        copies[(p, c)] = name
        per_child.setdefault(c, {})[p] = name
    for c, mapping in per_child.items():
        mechs[c] = _Rewired(model.mechanisms[c], mapping)
    return CausalModel(mechs, latent=model.latent), copies


def path_patch(model: CausalModel, base: Mapping, source: Mapping, edges, *, keep=None) -> Trace:
    """Run on `base` with the value sent along each edge taken from a run on `source`.

    Each edge ``(parent, child)`` carries the parent's value from the source
    run to that child only; the parent's other children read its base value.

    Returns
    -------
    Trace
        Of the rewired model (see :func:`rewire`), including the copy nodes.
    """
    rewired, copies = rewire(model, edges)
    src = model.forward(source, keep={p for p, _ in copies})
    return rewired.forward({**base, **{c: src[p] for (p, _), c in copies.items()}}, keep=keep)


@dataclass(frozen=True)
class Effects:
    """Total, natural direct and natural indirect effects through one mediator, per row.

    Attributes
    ----------
    total, direct, indirect : ndarray of shape (n,)
        ``TE = y(x') - y(x)``, ``NDE = y(x', M(x)) - y(x)``, ``NIE = y(x, M(x')) - y(x)``
        (``scale="difference"``), or each ratio to ``y(x)`` minus 1
        (``scale="ratio"``, as in Vig et al. 2020).
    scale : str
    """

    total: np.ndarray
    direct: np.ndarray
    indirect: np.ndarray
    scale: str

    def mean(self) -> dict:
        """Averages over rows: ``{"total": ..., "direct": ..., "indirect": ...}``."""
        return {"total": float(np.mean(self.total)), "direct": float(np.mean(self.direct)),
                "indirect": float(np.mean(self.indirect))}


def mediation(model: CausalModel, base: Mapping, treated: Mapping, mediators, outcome, *,
              scale: str = "difference") -> dict:
    """Causal mediation analysis of an input change through internal sites.

    The treatment changes the inputs from `base` (``x``) to `treated`
    (``x'``); for each mediator ``M`` (a node or a :class:`Site` such as a head)

    * total effect ``TE = y(x') - y(x)``,
    * natural direct effect ``NDE = y(x', M(x)) - y(x)``: treated inputs, the
      mediator held at its base value,
    * natural indirect effect ``NIE = y(x, M(x')) - y(x)``: base inputs, the
      mediator set to its treated value.

    When the outcome is additive in the mediator's contribution (a residual
    stream read linearly) ``TE = NDE + NIE`` exactly.

    Parameters
    ----------
    model : CausalModel
    base, treated : mapping node -> array
        Inputs of the two runs, same batch size.
    mediators : node, Site, list of them, or mapping label -> (node, Site, or list for a joint mediator)
    outcome : node or callable
        A node whose rows are scalars, or ``f(trace) -> (n,)`` array.
    scale : {"difference", "ratio"}

    Returns
    -------
    dict
        label -> :class:`Effects` (labels are the sites' names when
        `mediators` is not a mapping).

    References
    ----------
    .. [1] Pearl, "Direct and indirect effects", UAI 2001.
    .. [2] Vig et al., NeurIPS 2020.
    """
    if scale not in ("difference", "ratio"):
        raise ModelError(f"scale must be 'difference' or 'ratio', got {scale!r}")
    if isinstance(mediators, Mapping):
        groups = {str(k): _sites(model, v) for k, v in mediators.items()}
    else:
        groups = {str(s): [s] for s in _sites(model, mediators)}
    if callable(outcome):
        f, keep = outcome, None
    else:
        model._check_node(outcome, "outcome node")
        if model.spec(outcome).shape != ():
            raise ShapeError(f"outcome node {outcome!r} holds {_fmt(('n', *model.spec(outcome).shape))} per batch; "
                             f"pass a callable trace -> (n,) to reduce it")
        f, keep = (lambda tr: tr[outcome]), {outcome}
    nodes = {s.node for ss in groups.values() for s in ss}
    keep_m = None if keep is None else keep | nodes

    def y(tr):
        v = np.asarray(f(tr), dtype=np.float64)
        if v.ndim != 1:
            raise ShapeError(f"the outcome must be (n,) per run, got {v.shape}")
        return v

    tb = model.forward(base, keep=keep_m)
    tt = model.forward(treated, keep=keep_m)
    y0, y1 = y(tb), y(tt)

    def contrast(v):
        return v - y0 if scale == "difference" else v / y0 - 1.0

    out = {}
    for label, ss in groups.items():
        direct = y(_run_patched(model, treated, {s: s.get(tb[s.node]) for s in ss}, keep=keep))
        indirect = y(_run_patched(model, base, {s: s.get(tt[s.node]) for s in ss}, keep=keep))
        out[label] = Effects(contrast(y1), contrast(direct), contrast(indirect), scale)
    return out


# -- the per-position graph -----------------------------------------------------------------------


def _pname(node, pos: tuple) -> str:
    return f"{node}[{','.join(map(str, pos))}]" if pos else str(node)


def _positions(axes: tuple) -> list[tuple]:
    lens = [a for a in axes if a is not None]
    return [tuple(ix) for ix in np.ndindex(*lens)] if lens else [()]


def position_graph(model: CausalModel, lengths) -> DAG:
    """Unroll a tensor model into one node per sequence position per tensor.

    Node ``"Q[3]"`` is row 3 of ``Q`` (all heads and features of that
    position); attention weights and scores have two position axes,
    ``"P[3,1]"`` (query 3, key 1). Edges are the dependencies the ops have
    position by position: a position-wise op (linear maps, norms, the
    feed-forward net, embeddings) links equal positions; attention links query
    ``t`` to the keys and values it may attend to. Entries a causal mask
    removes are constants (no parents) and carry no edge, so d-separation in
    this graph shows what the mask allows: with ``causal=True`` the output at
    position ``i`` is d-separated from every token after ``i``. Padding masks
    depend on the data and are not unrolled (every key counts as visible).

    Parameters
    ----------
    model : CausalModel
        Made of the ops of :mod:`causalnet.mechanisms.tensor` (interventions
        and rewired edges allowed).
    lengths : int or mapping root -> int
        The sequence length of each root (one int for all).

    Returns
    -------
    DAG

    Raises
    ------
    GraphError
        If a root's length is missing or an op mixes positions in a way the
        unrolling does not support (a Reshape of a sequence axis).

    Examples
    --------
    >>> m = decoder(layers=1, d_model=4, heads=2, d_ff=8, vocab=5, seed=0)
    >>> g = position_graph(m, 3)
    >>> g.d_separated({"x[2]"}, {"P[1]"}), g.d_separated({"x[0]"}, {"P[1]"})
    (True, False)
    """
    mechs = model.mechanisms
    natural = {v: _natural(m) for v, m in mechs.items()}
    # axes over the natural structure (an intervened node keeps its shape)
    nat_parents = {v: _parents_natural(mechs[v]) for v in mechs}
    order = DAG([(p, v) for v in mechs for p in nat_parents[v]], nodes=list(mechs)).topological_order()
    axes: dict = {}
    for v in order:
        axes[v] = _axes(model, v, natural[v], [axes[p] for p in nat_parents[v]], lengths)
    edges: list = []
    nodes: list = []
    const: dict = {v: set() for v in mechs}  # positions that are masked constants (-inf scores, zero weights)
    for v in order:
        mech = mechs[v]
        pos_list = _positions(axes[v])
        nodes.extend(_pname(v, pos) for pos in pos_list)
        if getattr(mech, "is_shift", None) is False:  # a constant do: no parents
            continue
        op = natural[v]
        parents = list(mech.parents) if not (hasattr(mech, "is_shift") and mech.is_shift) else list(
            _natural_parents_of(mech))
        _edges_of(v, op, parents, axes, const, pos_list, edges)
    return DAG(edges, nodes=nodes)


def _parents_natural(mech) -> tuple:
    if getattr(mech, "is_shift", None) is not None and mech.natural is not None:
        return _parents_natural(mech.natural)
    return tuple(mech.parents)


def _natural_parents_of(mech) -> tuple:
    return _parents_natural(mech)


def _axes(model, v, op, paxes: list, lengths) -> tuple:
    """Per-row axes of node v: an int length for a sequence axis, None for a feature axis."""
    shape = model.specs[v].shape
    if isinstance(op, Input):
        if not shape:
            return ()
        if isinstance(lengths, Mapping):
            if v not in lengths:
                raise GraphError(f"position_graph needs the sequence length of root {v!r} (lengths={dict(lengths)})")
            t = lengths[v]
        else:
            t = lengths
        if not isinstance(t, (int, np.integer)) or t < 1:
            raise GraphError(f"the length of {v!r} must be a positive int, got {t!r}")
        return (int(t), *([None] * (len(shape) - 1)))
    if isinstance(op, (AttentionWeights, Scores)):
        tq, tk = paxes[0][0], paxes[1][0]
        return (None, tq, tk) if op.heads is not None else (tq, tk)
    if isinstance(op, Attention):
        return (paxes[0][-2], None)
    if isinstance(op, MultiHeadAttention):
        return (paxes[0][0], None)
    if isinstance(op, Embedding):
        return (*paxes[0], None)
    if isinstance(op, PositionalEncoding) and not op.add:
        return (paxes[0][0], None)
    if isinstance(op, Transpose):
        return tuple(paxes[0][a] for a in op.axes)
    if isinstance(op, Reshape):
        if any(a is not None for a in paxes[0]):
            raise GraphError(f"position_graph: node {v!r} reshapes a sequence axis")
        return tuple([None] * len(shape))
    if isinstance(op, TensorOp) and paxes:
        return paxes[0]
    if not paxes:
        return tuple([None] * len(shape))
    raise GraphError(f"position_graph: node {v!r} ({type(op).__name__}) is not a tensor op")


def _seq_index(axes: tuple) -> list[int]:
    return [i for i, a in enumerate(axes) if a is not None]


def _edges_of(v, op, parents, axes, const, pos_list, edges) -> None:
    """Position-level edges into node v (and the masked constants of v)."""
    if isinstance(op, Input) or (isinstance(op, PositionalEncoding) and not op.add):
        return
    if isinstance(op, (AttentionWeights, Scores, Mask, Attention, MultiHeadAttention)) or (
            isinstance(op, Softmax) and axes[parents[0]][op.axis % len(axes[parents[0]])] is not None):
        _attention_edges(v, op, parents, axes, const, pos_list, edges)
        return
    for pos in pos_list:
        for p in parents:
            edges.append((_pname(p, pos if _seq_index(axes[p]) else ()), _pname(v, pos)))


def _visible(op, t: int, s: int) -> bool:
    return not (getattr(op, "causal", False) and s > t)


def _attention_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    if isinstance(op, (AttentionWeights, Scores)):
        q, k = parents[0], parents[1]
        pad = parents[2] if len(parents) > 2 else None
        tk = axes[k][0]
        for t, s in pos_list:
            if isinstance(op, Scores):
                edges += [(_pname(q, (t,)), _pname(v, (t, s))), (_pname(k, (s,)), _pname(v, (t, s)))]
                continue
            if not _visible(op, t, s):
                const[v].add((t, s))
                continue
            edges.append((_pname(q, (t,)), _pname(v, (t, s))))
            for s2 in range(tk):
                if _visible(op, t, s2):
                    edges.append((_pname(k, (s2,)), _pname(v, (t, s))))
                    if pad is not None:
                        edges.append((_pname(pad, (s2,)), _pname(v, (t, s))))
    elif isinstance(op, Mask):
        src = parents[0]
        pad = parents[1] if len(parents) > 1 else None
        for t, s in pos_list:
            if not _visible(op, t, s):
                const[v].add((t, s))
                continue
            edges.append((_pname(src, (t, s)), _pname(v, (t, s))))
            if pad is not None:
                edges.append((_pname(pad, (s,)), _pname(v, (t, s))))
    elif isinstance(op, Softmax):  # over the key axis
        src = parents[0]
        tk = axes[src][_seq_index(axes[src])[-1]]
        for t, s in pos_list:
            if (t, s) in const[src]:
                const[v].add((t, s))
                continue
            for s2 in range(tk):
                if (t, s2) not in const[src]:
                    edges.append((_pname(src, (t, s2)), _pname(v, (t, s))))
    elif isinstance(op, Attention):
        p, val = parents
        tk = axes[val][0]
        for (t,) in pos_list:
            for s in range(tk):
                if (t, s) in const[p]:
                    continue
                edges += [(_pname(p, (t, s)), _pname(v, (t,))), (_pname(val, (s,)), _pname(v, (t,)))]
    elif isinstance(op, MultiHeadAttention):
        x = parents[0]
        mem = parents[1] if op.cross else x
        pad = parents[-1] if op._has_pad else None
        tk = axes[mem][0]
        for (t,) in pos_list:
            edges.append((_pname(x, (t,)), _pname(v, (t,))))
            for s in range(tk):
                if _visible(op, t, s):
                    edges.append((_pname(mem, (s,)), _pname(v, (t,))))
                    if pad is not None:
                        edges.append((_pname(pad, (s,)), _pname(v, (t,))))


# -- diagrams ------------------------------------------------------------------------------------------


def _symbolic_shapes(model: CausalModel, dims: Mapping | None) -> dict:
    """node -> per-row shape with free sizes named (``T``, ``S``) through the ops' own shape rules."""
    mechs = model.mechanisms
    nat_parents = {v: _parents_natural(mechs[v]) for v in mechs}
    order = DAG([(p, v) for v in mechs for p in nat_parents[v]], nodes=list(mechs)).topological_order()
    two_streams = "dec.x" in mechs or "dec.e" in mechs
    out: dict = {}
    for v in order:
        op = _natural(mechs[v])
        spec_shape = model.specs[v].shape
        if isinstance(op, Input):
            name = (dims or {}).get(v)
            if name is None:
                if two_streams:   # encoder-decoder: source S, target T
                    name = "T" if str(v).startswith("dec.") else "S"
                else:             # one stream T; a decoder's memory S
                    name = "S" if v in ("n", "mem_pad") else "T"
            shp = list(op.shape)
            if shp and shp[0] is None:
                shp[0] = name
            out[v] = tuple("?" if s is None else s for s in shp)
            continue
        try:
            sh = op._infer(v, [("n", *out[p]) for p in nat_parents[v]])[1:]
            out[v] = tuple("?" if s is None else s for s in sh)
        except Exception:  # a non-tensor op or a shape rule that needs numbers: fall back on the spec
            out[v] = tuple("?" if s is None else s for s in spec_shape)
    return out


def diagram_options(model: CausalModel, *, shapes: bool = True, clusters: bool = True,
                    dims: Mapping | None = None) -> dict:
    """Options for :func:`causalnet.io.dot.to_dot` that draw a transformer legibly.

    Labels are the last part of each dotted name (``Q``, ``P``, ``N``) with
    the tensor shape under it, free sizes named (``T`` for the target or only
    sequence, ``S`` for the source); clusters nest layers, blocks and heads by
    their dotted names (``enc.0`` > ``enc.0.attn`` > ``enc.0.attn.head.1``).
    Intervened nodes are drawn with a double border by ``to_dot`` itself.
    The folded or expanded picture is the model's own: build it with
    ``view="expanded"`` for one cluster per head.

    Parameters
    ----------
    model : CausalModel
    shapes : bool
        Put shapes in labels.
    clusters : bool
        Nest nodes in boxes by dotted names.
    dims : mapping root -> str, optional
        Names of the free sequence size of roots (default ``T``/``S``).

    Returns
    -------
    dict
        ``{"labels": {...}, "clusters": "prefix" or None}``; pass as
        ``cn.io.dot.to_dot(model, **diagram_options(model))``.

    Examples
    --------
    >>> m = attention(d_model=8, heads=2, seed=0)
    >>> diagram_options(m)["labels"]["attn.P"]
    'P\\n(n, 2, T, T)'
    """
    sym = _symbolic_shapes(model, dims) if shapes else {}
    labels = {}
    for v in model.nodes:
        short = str(v).rsplit(".", 1)[-1] if clusters and "@" not in str(v) else str(v)  # keep "p@c" copies whole
        labels[v] = f"{short}\n{_fmt(('n', *sym[v]))}" if shapes else short
    return {"labels": labels, "clusters": "prefix" if clusters else None}

