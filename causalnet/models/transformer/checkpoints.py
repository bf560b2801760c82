"""Rebuilding PyTorch transformer modules from their state dicts."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ModelError
from ...model import CausalModel
from .build import attention, decoder, decoder_layer, encoder, encoder_layer, transformer
from .weights import read_state_dict

__all__ = ["from_torch", "KINDS"]


KINDS = ("attention", "encoder_layer", "decoder_layer", "encoder", "decoder", "transformer")


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
    sd = read_state_dict(state_dict)
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
    return builder(sd, heads=heads, **options)
