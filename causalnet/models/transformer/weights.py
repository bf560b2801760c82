"""State dicts read under a prefix, and random weights in the PyTorch layout.

:class:`StateDict` reads a PyTorch-style state dict (``layers.0.self_attn.in_proj_weight``
...) under a prefix and remembers which keys it used, so a builder can refuse
keys it did not use: a checkpoint the builder cannot represent is a ModelError
naming the keys, never a silently different model. :func:`read_state_dict`
turns tensors into real, finite numpy arrays (naming any key that is not).
The ``random_*`` functions draw weights for models built without weights,
after checking their size against :mod:`causalnet.limits`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import limits
from ...errors import ModelError, ShapeError
from ...mechanisms.tensor import fmt_shape
from ...mechanisms.tensor.shapes import float_dtype

__all__ = ["StateDict", "read_state_dict", "weight_to_numpy", "random_attention", "random_norm", "random_layer",
           "random_stack", "prefixed", "check_random_size", "need_size", "weights_dtype"]


def weight_to_numpy(key: str, v: Any) -> np.ndarray:
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


def weights_dtype(sd: Mapping[str, np.ndarray], dtype: Any, what: str) -> np.dtype:
    """The model's dtype: `dtype` when given, else the floating weights' own (what ``from_torch`` keeps).

    Parameters
    ----------
    sd : mapping name -> ndarray
        The state dict, already read by :func:`read_state_dict`.
    dtype : float32, float64 or None
    what : str
        The caller, for messages.

    Returns
    -------
    numpy.dtype
        `dtype`; else float32 when every floating weight is float32, float64
        when they are float64 (or mixed float32 and float64, or there is none).

    Raises
    ------
    ModelError
        Weights of another floating type (float16) without `dtype`, or a
        `dtype` that is not float32 or float64.
    """
    if dtype is not None:
        return float_dtype(dtype, what)
    kinds = {a.dtype for a in sd.values() if a.dtype.kind == "f"}
    if kinds == {np.dtype(np.float32)}:
        return np.dtype(np.float32)
    other = sorted(str(k) for k in kinds - {np.dtype(np.float32), np.dtype(np.float64)})
    if other:
        raise ModelError(f"{what}: the weights are {', '.join(other)}, which causalnet does not compute in; pass "
                         f"dtype='float32' or 'float64'")
    return np.dtype(np.float64)


class StateDict:
    """A state dict read under a prefix; remembers which keys were used."""

    def __init__(self, sd: Mapping, prefix: str = "", used: set | None = None) -> None:
        self.sd = sd
        self.prefix = prefix
        self.used = set() if used is None else used

    def sub(self, prefix: str) -> StateDict:
        return StateDict(self.sd, self.prefix + prefix, self.used)

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
            raise ShapeError(f"weight {full!r} has shape {arr.shape}, expected {fmt_shape(shape)}")
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


def read_state_dict(weights: Mapping | None) -> dict | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise ModelError(f"weights must be a mapping name -> array (a state dict), got {type(weights).__name__}")
    return {str(k): weight_to_numpy(str(k), v) for k, v in weights.items()}


# Random weights in the PyTorch layout, for models built without weights.

def random_attention(rng, d: int, bias: bool = True) -> dict:
    check_random_size(4 * d * d, "an attention block", f"d_model={d}")
    w = {"in_proj_weight": rng.normal(0, d ** -0.5, (3 * d, d)), "out_proj.weight": rng.normal(0, d ** -0.5, (d, d))}
    if bias:
        w["in_proj_bias"] = rng.normal(0, 0.1, 3 * d)
        w["out_proj.bias"] = rng.normal(0, 0.1, d)
    return w


def random_norm(rng, d: int, name: str) -> dict:
    return {f"{name}.weight": 1 + rng.normal(0, 0.1, d), f"{name}.bias": rng.normal(0, 0.1, d)}


def random_layer(rng, d: int, ff: int, cross: bool) -> dict:
    check_random_size((8 + 4 * cross) * d * d + 2 * d * ff, "a layer", f"d_model={d}, d_ff={ff}")
    w = {f"self_attn.{k}": v for k, v in random_attention(rng, d).items()}
    if cross:
        w.update({f"multihead_attn.{k}": v for k, v in random_attention(rng, d).items()})
    w.update({"linear1.weight": rng.normal(0, d ** -0.5, (ff, d)), "linear1.bias": rng.normal(0, 0.1, ff),
              "linear2.weight": rng.normal(0, ff ** -0.5, (d, ff)), "linear2.bias": rng.normal(0, 0.1, d)})
    for i in range(1, 4 if cross else 3):
        w.update(random_norm(rng, d, f"norm{i}"))
    return w


def prefixed(prefix: str, w: Mapping) -> dict:
    return {prefix + k: v for k, v in w.items()}


def check_random_size(count: float, what: str, cause: str) -> None:
    """Random weights of `count` float64 entries must fit the limits before they are drawn."""
    limits.check_bytes(8.0 * count, what=f"the random weights of {what}", cause=cause)


def need_size(value, name: str, why: str):
    if value is None:
        raise ModelError(f"{name} is needed {why}")
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ModelError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def random_stack(rng, *, layers, d, ff, cross, vocab, final_norm, lm_head, emb_key="embedding.weight",
                  norm_key="norm") -> dict:
    sd: dict = {}
    if vocab is not None:
        vocab = need_size(vocab, "vocab", "for an embedding")
    check_random_size(layers * ((8 + 4 * cross) * d * d + 2 * d * ff) + 2 * (vocab or 0) * d,
                       f"a stack of {layers} layers", f"d_model={d}, d_ff={ff}, vocab={vocab}")
    for i in range(layers):
        sd.update(prefixed(f"layers.{i}.", random_layer(rng, d, ff, cross)))
    if final_norm:
        sd.update(random_norm(rng, d, norm_key))
    if vocab is not None:
        sd[emb_key] = rng.normal(0, 1.0, (vocab, d))
        if lm_head:
            sd["lm_head.weight"] = rng.normal(0, d ** -0.5, (vocab, d))
            sd["lm_head.bias"] = rng.normal(0, 0.1, vocab)
    return sd
