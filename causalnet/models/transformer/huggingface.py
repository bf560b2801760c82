"""GPT-2 and BERT checkpoints of the Hugging Face ``transformers`` package as causal DAGs.

:func:`from_huggingface` reads a model object (or its state dict plus its
config), translates each block's weights into the PyTorch layout the builders
take (GPT-2 stores its projections as ``Conv1D``, ``y = x W + b``, so they are
transposed; BERT's separate query/key/value become ``q_proj_weight`` ...), and
builds the nodes with :class:`~causalnet.models.transformer.build.Builder`.
Every weight must be used and every setting of the config understood: an
activation, a position scheme (rotary, relative) or an attention variant the
builders cannot represent is a ModelError naming it, never a silently
different model. ``transformers`` itself is never imported here.

Node names follow the other builders. GPT-2: token ids ``x``, token embedding
``e0``, ``e = e0 + positions``, pre-LN layers ``dec.{i}`` (``ln1``,
``self.Q`` ... ``self.O``, ``J``, ``ln2``, ``F``, ``Y``), final norm ``Y``,
logits ``I`` (the tied LM head) and ``P``. BERT: roots ``x`` and
``token_type``, ``e0`` (words), ``e1`` (plus positions), ``tt`` (token-type
embedding), ``e = LayerNorm(e1 + tt)``, post-LN layers ``enc.{i}`` (``attn.Q``
..., ``N``, ``F``, ``n``), output ``n``; the pooler ``cls``, ``pool.dense``,
``pooled``; the masked-LM head ``mlm.dense``, ``mlm.act``, ``mlm.ln``, ``I``,
``P``; the next-sentence head ``nsp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...arguments import check_int
from ...errors import ModelError
from ...mechanisms.tensor import (
    GELU,
    Embedding,
    Identity,
    Input,
    LearnedPositions,
    Linear,
    ReLU,
    Softmax,
    Take,
    Tanh,
)
from ...model import CausalModel
from .build import Builder
from .weights import StateDict, read_state_dict

__all__ = ["from_huggingface", "FAMILIES"]

#: Hugging Face activation name -> causalnet FeedForward activation
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}

FAMILIES = ("gpt2", "bert")


def from_huggingface(model_or_state_dict: Any, config: Any = None, *, padding: bool = False,
                     dtype: Any = np.float64) -> CausalModel:
    """Rebuild a GPT-2 or BERT model of the ``transformers`` package as a causal DAG.

    Parameters
    ----------
    model_or_state_dict : transformers model or mapping name -> array
        ``GPT2Model``, ``GPT2LMHeadModel``, ``BertModel``, ``BertForMaskedLM``,
        ``BertForPreTraining`` (or their state dicts, with or without the
        ``transformer.`` / ``bert.`` prefix).
    config : transformers config or mapping, optional
        Needed with a state dict (the head count is not stored in weights);
        taken from the model otherwise.
    padding : bool
        Add a root ``pad`` ``(n, T)`` bool, True at padding (``attention_mask == 0``).
    dtype : {"float64", "float32"}

    Returns
    -------
    CausalModel
        GPT-2: root ``x``, logits ``I`` ``(n, T, L)``, ready for
        :func:`generate`. BERT: roots ``x`` and ``token_type``, output ``n``,
        and the heads the checkpoint holds (``pooled``, ``I``, ``nsp``).

    Raises
    ------
    ModelError
        Missing config, an unknown family, an activation or position scheme
        the builders cannot represent, or weights that are missing or unused
        (each named).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> d, L = 4, 7
    >>> sd = {"wte.weight": rng.normal(size=(L, d)), "wpe.weight": rng.normal(size=(8, d)),
    ...       "ln_f.weight": np.ones(d), "ln_f.bias": np.zeros(d)}
    >>> cfg = {"model_type": "gpt2", "n_head": 2, "n_layer": 0}
    >>> m = from_huggingface(sd, cfg)
    >>> m.forward({"x": np.array([[1, 2, 3]])})["I"].shape
    (1, 3, 7)
    """
    sd, cfg = _read(model_or_state_dict, config)
    family = cfg.get("model_type")
    if family is None:
        family = "gpt2" if any(k.endswith("wte.weight") for k in sd) else "bert" if any(
            "word_embeddings" in k for k in sd) else None
    if family not in FAMILIES:
        raise ModelError(f"from_huggingface: model_type {family!r} is not supported; supported: {list(FAMILIES)}")
    _refuse_positions(cfg)
    build = _gpt2 if family == "gpt2" else _bert
    return build(sd, cfg, padding=padding, dtype=dtype)


def _read(obj, config) -> tuple[dict, dict]:
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        if config is None:
            config = getattr(obj, "config", None)
        obj = obj.state_dict()
    if config is None:
        raise ModelError("from_huggingface: a state dict needs config= (the head count is not stored in weights)")
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, Mapping):
        raise ModelError(f"from_huggingface: config must be a transformers config or a mapping, got "
                         f"{type(config).__name__}")
    return read_state_dict(obj), dict(config)


def _refuse_positions(cfg: dict) -> None:
    kind = cfg.get("position_embedding_type", "absolute")
    if kind != "absolute":
        raise ModelError(f"from_huggingface: position_embedding_type={kind!r} is not supported (only learned absolute "
                         f"positions)")
    for key in ("rotary_dim", "rope_theta", "rope_scaling", "rotary_pct"):
        if cfg.get(key) is not None:
            raise ModelError(f"from_huggingface: rotary positions ({key}={cfg[key]!r}) are not supported")


def _activation(cfg: dict, key: str) -> str:
    act = cfg.get(key, "gelu")
    if not isinstance(act, str) or act not in _ACTIVATIONS:
        raise ModelError(f"from_huggingface: {key}={act!r} is not supported; supported: {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[act]


def _need(cfg: dict, key: str) -> int:
    return check_int(cfg.get(key), f"from_huggingface: config {key}", low=0)


def _backbone(root: StateDict, prefix: str) -> StateDict:
    """The backbone's weights, under a model class's prefix (``transformer.``, ``bert.``) when the keys have it."""
    return root.sub(prefix) if any(str(k).startswith(prefix) for k in root.sd) else root


def _refuse_flags(cfg: dict, flags: dict) -> None:
    for key, ok in flags.items():
        if key in cfg and cfg[key] != ok:
            raise ModelError(f"from_huggingface: {key}={cfg[key]!r} is not supported (needs {ok!r})")


# -- GPT-2 ------------------------------------------------------------------------------------------


def _gpt2(sd: dict, cfg: dict, *, padding: bool, dtype) -> CausalModel:
    _refuse_flags(cfg, {"scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
                        "add_cross_attention": False})
    heads = _need(cfg, "n_head")
    root = StateDict(sd)
    w = _backbone(root, "transformer.")
    b = Builder(heads=heads, view="folded", scores=False, dtype=dtype, eps=float(cfg.get("layer_norm_epsilon", 1e-5)),
                activation=_activation(cfg, "activation_function"), norm_first=True)
    wte = w.take("wte.weight", (None, None))
    d = b.width(wte.shape[1], "wte.weight")
    x = b.add("x", Input((None,), np.int64))
    e0 = b.add("e0", Embedding(x, wte, dtype=b.dtype))
    src = b.add("e", LearnedPositions(e0, w.take("wpe.weight", (None, d)), dtype=b.dtype))
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    layers = w.count("h.")
    if "n_layer" in cfg and _need(cfg, "n_layer") != layers:
        raise ModelError(f"from_huggingface: n_layer={cfg['n_layer']} but the weights hold {layers} layers")
    for i in range(layers):
        lw = _gpt2_layer(w.sub(f"h.{i}."), d)
        src = b.self_layer(f"dec.{i}", src, StateDict(lw), causal=True, pad=pad, names=("J", "F", "Y"), attn="self")
    Y = b.norm("Y", [src], w, "ln_f")
    head = root.take("lm_head.weight", (wte.shape[0], d)) if root.has("lm_head.weight") else wte
    if root.has("lm_head.weight") or cfg.get("tie_word_embeddings", True):
        I_ = b.add("I", Linear(Y, head, dtype=b.dtype))
        b.add("P", Softmax(I_, dtype=b.dtype))
    return b.model(root)


def _gpt2_layer(w: StateDict, d: int) -> dict:
    """One GPT-2 block's weights in the PyTorch layer layout (Conv1D weights transposed)."""
    for buf in ("attn.bias", "attn.masked_bias"):  # causal-mask buffers of older versions: no parameters
        if w.has(buf):
            w.take(buf)
    c_fc = w.take("mlp.c_fc.weight", (d, None))
    ff = c_fc.shape[1]
    return {
        "self_attn.in_proj_weight": w.take("attn.c_attn.weight", (d, 3 * d)).T,
        "self_attn.in_proj_bias": w.take("attn.c_attn.bias", (3 * d,)),
        "self_attn.out_proj.weight": w.take("attn.c_proj.weight", (d, d)).T,
        "self_attn.out_proj.bias": w.take("attn.c_proj.bias", (d,)),
        "norm1.weight": w.take("ln_1.weight", (d,)), "norm1.bias": w.take("ln_1.bias", (d,)),
        "norm2.weight": w.take("ln_2.weight", (d,)), "norm2.bias": w.take("ln_2.bias", (d,)),
        "linear1.weight": c_fc.T, "linear1.bias": w.take("mlp.c_fc.bias", (ff,)),
        "linear2.weight": w.take("mlp.c_proj.weight", (ff, d)).T, "linear2.bias": w.take("mlp.c_proj.bias", (d,)),
    }


# -- BERT -------------------------------------------------------------------------------------------


def _bert(sd: dict, cfg: dict, *, padding: bool, dtype) -> CausalModel:
    _refuse_flags(cfg, {"is_decoder": False, "add_cross_attention": False})
    heads = _need(cfg, "num_attention_heads")
    act = _activation(cfg, "hidden_act")
    root = StateDict(sd)
    w = _backbone(root, "bert.")
    b = Builder(heads=heads, view="folded", scores=False, dtype=dtype, eps=float(cfg.get("layer_norm_eps", 1e-12)),
                activation=act, norm_first=False)
    n = _bert_backbone(b, w, cfg, padding)
    if w.has("pooler.dense.weight"):
        first = b.add("cls", Take(n, 0, dtype=b.dtype))
        dense = b.add("pool.dense", Linear(first, w.take("pooler.dense.weight", (b.d, b.d)),
                                           w.take("pooler.dense.bias", (b.d,)), dtype=b.dtype))
        pooled = b.add("pooled", Tanh(dense, dtype=b.dtype))
        if root.has("cls.seq_relationship.weight"):
            b.add("nsp", Linear(pooled, root.take("cls.seq_relationship.weight", (2, b.d)),
                                root.take("cls.seq_relationship.bias", (2,)), dtype=b.dtype))
    if root.has("cls.predictions.transform.dense.weight"):
        _bert_mlm(b, root.sub("cls.predictions."), w, n, act)
    return b.model(root)


def _bert_backbone(b: Builder, w: StateDict, cfg: dict, padding: bool) -> str:
    """Embeddings (words + positions + token types, normalised) and the post-LN layers; returns the output node."""
    words = w.take("embeddings.word_embeddings.weight", (None, None))
    d = b.width(words.shape[1], "embeddings.word_embeddings.weight")
    x = b.add("x", Input((None,), np.int64))
    e0 = b.add("e0", Embedding(x, words, dtype=b.dtype))
    e1 = b.add("e1", LearnedPositions(e0, w.take("embeddings.position_embeddings.weight", (None, d)), dtype=b.dtype))
    parts = [e1]
    if w.has("embeddings.token_type_embeddings.weight"):
        tt_ids = b.add("token_type", Input((None,), np.int64))
        parts.append(b.add("tt", Embedding(tt_ids, w.take("embeddings.token_type_embeddings.weight", (None, d)),
                                           dtype=b.dtype)))
    if w.has("embeddings.position_ids"):  # a buffer of older versions, no parameter
        w.take("embeddings.position_ids")
    src = b.norm("e", parts, w, "embeddings.LayerNorm")
    pad = b.add("pad", Input((None,), np.bool_)) if padding else None
    layers = w.count("encoder.layer.")
    if "num_hidden_layers" in cfg and _need(cfg, "num_hidden_layers") != layers:
        raise ModelError(f"from_huggingface: num_hidden_layers={cfg['num_hidden_layers']} but the weights hold "
                         f"{layers} layers")
    for i in range(layers):
        lw = _bert_layer(w.sub(f"encoder.layer.{i}."), d)
        src = b.self_layer(f"enc.{i}", src, StateDict(lw), causal=False, pad=pad)
    return b.add("n", Identity(src))


def _bert_layer(w: StateDict, d: int) -> dict:
    """One BERT layer's weights in the PyTorch layer layout (separate q/k/v projections)."""
    a = w.sub("attention.")
    ff_w = w.take("intermediate.dense.weight", (None, d))
    ff = ff_w.shape[0]
    return {
        "self_attn.q_proj_weight": a.take("self.query.weight", (d, d)),
        "self_attn.k_proj_weight": a.take("self.key.weight", (d, d)),
        "self_attn.v_proj_weight": a.take("self.value.weight", (d, d)),
        "self_attn.in_proj_bias": np.concatenate([a.take(f"self.{k}.bias", (d,)) for k in ("query", "key", "value")]),
        "self_attn.out_proj.weight": a.take("output.dense.weight", (d, d)),
        "self_attn.out_proj.bias": a.take("output.dense.bias", (d,)),
        "norm1.weight": a.take("output.LayerNorm.weight", (d,)), "norm1.bias": a.take("output.LayerNorm.bias", (d,)),
        "linear1.weight": ff_w, "linear1.bias": w.take("intermediate.dense.bias", (ff,)),
        "linear2.weight": w.take("output.dense.weight", (d, ff)), "linear2.bias": w.take("output.dense.bias", (d,)),
        "norm2.weight": w.take("output.LayerNorm.weight", (d,)), "norm2.bias": w.take("output.LayerNorm.bias", (d,)),
    }


def _bert_mlm(b: Builder, p: StateDict, w: StateDict, n: str, act: str) -> None:
    """The masked-LM head: dense, activation, LayerNorm, then the (tied) decoder to the vocabulary."""
    d, dt = b.d, b.dtype
    dense = b.add("mlm.dense", Linear(n, p.take("transform.dense.weight", (d, d)), p.take("transform.dense.bias", (d,)),
                                      dtype=dt))
    op = {"relu": ReLU(dense, dtype=dt), "gelu": GELU(dense, dtype=dt),
          "gelu_tanh": GELU(dense, approximate="tanh", dtype=dt)}[act]
    h = b.add("mlm.act", op)
    ln = b.norm("mlm.ln", [h], p, "transform.LayerNorm")
    if p.has("decoder.weight"):
        dec = p.take("decoder.weight", (None, d))
    else:
        dec = w.sd[w.prefix + "embeddings.word_embeddings.weight"]
    bias = p.take("bias", (dec.shape[0],)) if p.has("bias") else None
    if p.has("decoder.bias"):
        db = p.take("decoder.bias", (dec.shape[0],))
        if bias is not None and not np.array_equal(db, bias):
            raise ModelError("from_huggingface: cls.predictions.bias and cls.predictions.decoder.bias differ")
        bias = db
    I_ = b.add("I", Linear(ln, dec, bias, dtype=dt))
    b.add("P", Softmax(I_, dtype=dt))
