"""Rebuilding PyTorch transformer modules from their state dicts."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ...errors import ModelError
from ...model import CausalModel
from .build import attention, decoder, decoder_layer, encoder, encoder_layer, transformer
from .weights import read_state_dict, weights_dtype

__all__ = ["from_torch", "KINDS", "MODULES"]


KINDS = ("attention", "encoder_layer", "decoder_layer", "encoder", "decoder", "transformer")


#: PyTorch layer classes -> kind
MODULES = {"MultiheadAttention": "attention", "TransformerEncoderLayer": "encoder_layer",
           "TransformerDecoderLayer": "decoder_layer", "TransformerEncoder": "encoder",
           "TransformerDecoder": "decoder", "Transformer": "transformer"}


def from_torch(state_dict: Mapping | Any, *, heads: int | None = None, kind: str | None = None,
               batch_first: bool | None = None, dtype: Any = None, **options) -> CausalModel:
    """Rebuild a PyTorch transformer module from the module itself or its state dict.

    Parameters
    ----------
    state_dict : nn.Module or mapping name -> array
        The module (``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``,
        ...: then `heads`, ``norm_first``, ``activation`` and ``eps`` are read
        from it, and settings causalnet cannot represent, such as a custom
        activation callable or ``add_zero_attn``, raise ModelError), or
        ``module.state_dict()`` with values as numpy arrays (CPU tensors work
        too; torch is not imported here). A state dict does not hold those
        settings: pass them as options, or the builders' defaults apply
        (post-LN, ReLU, eps 1e-5, as in PyTorch's defaults). An
        ``embedding.weight`` key adds token ids; a ``pos_embedding.weight``
        key ``(T_max, d)`` (``src_``/``tgt_`` prefixed for
        ``nn.Transformer``) gives learned positions instead of sinusoids.
    heads : int
        Number of heads (not stored in a state dict; read from a module).
    batch_first : bool, optional
        The module's layout. causalnet models are always batch-first, so both
        give the same model; with ``batch_first=False`` transpose the inputs
        to ``(n, T, d)`` before ``forward``.
    dtype : {"float32", "float64"}, optional
        The model's dtype. By default the module's own: float32 weights (a
        ``float32`` module, PyTorch's default) give a float32 model, float64
        weights a float64 one; other floating weights (float16) need `dtype`.
    kind : {"attention", "encoder_layer", "decoder_layer", "encoder", "decoder", "transformer"}, optional
        Detected from the keys when omitted: ``nn.MultiheadAttention``,
        ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``,
        ``nn.TransformerEncoder``, ``nn.TransformerDecoder``,
        ``nn.Transformer``. Pass ``kind="decoder"`` for a decoder-only stack
        stored as an ``nn.TransformerEncoder``.
    **options
        Passed to the builder: what the state dict does not hold, such as
        ``norm_first``, ``activation``, ``eps``, ``padding``, ``causal``,
        ``view``.

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
    >>> from_torch({k: v.astype("float32") for k, v in sd.items()}, heads=2).spec("attn.O").dtype
    dtype('float32')
    """
    if batch_first is not None and not isinstance(batch_first, bool):
        raise ModelError(f"from_torch: batch_first must be a bool, got {batch_first!r}")
    if hasattr(state_dict, "state_dict") and callable(state_dict.state_dict):
        state_dict, kind, heads, options = _from_module(state_dict, kind, heads, options)
    if heads is None:
        raise ModelError("from_torch: heads= is needed with a state dict (a state dict does not store it)")
    sd = read_state_dict(state_dict)
    dtype = weights_dtype(sd, dtype, "from_torch")
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
                             f"of {list(KINDS)}")
    if kind not in KINDS:
        raise ModelError(f"from_torch: kind must be one of {list(KINDS)}, got {kind!r}")
    if kind == "decoder_layer" and "cross" not in options:
        options["cross"] = any(k.startswith("multihead_attn.") for k in keys)
    if kind == "decoder" and "cross" not in options:
        options["cross"] = any(k.startswith("layers.0.multihead_attn.") for k in keys)
    builder = {"attention": attention, "encoder_layer": encoder_layer, "decoder_layer": decoder_layer,
               "encoder": encoder, "decoder": decoder, "transformer": transformer}[kind]
    known = [k for k in inspect.signature(builder).parameters if k not in ("weights", "heads", "seed")]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ModelError(f"from_torch: {kind} does not take the options {unknown}; it takes {known}")
    return builder(sd, heads=heads, dtype=dtype, **options)


def _from_module(module, kind, heads, options) -> tuple:
    """The state dict, kind, heads and options a PyTorch module implies (its settings checked)."""
    name = type(module).__name__
    if name not in MODULES:
        raise ModelError(f"from_torch: cannot rebuild a {name}; supported modules: {list(MODULES)}")
    if kind is not None and kind != MODULES[name] and not (name == "TransformerEncoder" and kind == "decoder"):
        raise ModelError(f"from_torch: kind={kind!r} does not fit a {name}")
    kind = kind or MODULES[name]
    layers = _layers_of(module, name)
    attns = [a for layer in layers for a in _attentions(layer)] if layers else [module]
    found = {int(a.num_heads) for a in attns}
    if heads is not None and found != {heads}:
        raise ModelError(f"from_torch: heads={heads}, but the module's attention has {sorted(found)} heads")
    heads = found.pop() if len(found) == 1 else heads
    for a in attns:
        if getattr(a, "add_zero_attn", False):
            raise ModelError(f"from_torch: the {name} uses add_zero_attn=True, which causalnet cannot represent")
    opts = dict(options)
    if layers:
        settings = [_layer_settings(layer) for layer in layers]
        if any(s != settings[0] for s in settings):
            raise ModelError(f"from_torch: the layers of the {name} differ in {settings}")
        for k, v in settings[0].items():
            if k in opts and opts[k] != v:
                raise ModelError(f"from_torch: {k}={opts[k]!r} was passed, but the module has {k}={v!r}")
            opts[k] = v
    sd = {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}
    return sd, kind, heads, opts


def _layers_of(module, name: str) -> list:
    if name in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        return [module]
    if name in ("TransformerEncoder", "TransformerDecoder"):
        return list(module.layers)
    if name == "Transformer":
        return list(module.encoder.layers) + list(module.decoder.layers)
    return []


def _attentions(layer) -> list:
    return [a for a in (getattr(layer, "self_attn", None), getattr(layer, "multihead_attn", None)) if a is not None]


def _layer_settings(layer) -> dict:
    """norm_first, activation and eps of one PyTorch layer; an activation we cannot represent is a ModelError."""
    return {"norm_first": bool(layer.norm_first), "activation": _activation_name(layer.activation),
            "eps": float(layer.norm1.eps)}


def _activation_name(act) -> str:
    cls = type(act).__name__
    fn = getattr(act, "__name__", None)
    if cls == "ReLU" or fn == "relu":
        return "relu"
    if cls == "GELU":
        return "gelu_tanh" if getattr(act, "approximate", "none") == "tanh" else "gelu"
    if fn == "gelu":
        return "gelu"
    raise ModelError(f"from_torch: the activation {act!r} cannot be represented; causalnet has relu, gelu and "
                     f"gelu (tanh)")
