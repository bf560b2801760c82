"""Greedy autoregressive decoding with a decoder (or encoder-decoder) model."""

from __future__ import annotations

import numpy as np

from ...errors import ModelError, ShapeError
from ...inference.tensor import Plan
from ...mechanisms.tensor import as_int
from ...model import CausalModel

__all__ = ["generate"]


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
    model.check_node("I", "node (a decoder with an LM head)")
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
        model.check_node(tok, "token node")
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
