"""Decoding a seq2seq model: teacher-forced logits, and greedy or beam search one step at a time.

:func:`decode` runs the model's own nodes, not a copy of the network: one
:class:`~causalnet.inference.tensor.Plan` computes the encoder (``enc.H``,
``enc.K``, the decoder's initial state) from ``src``, and one plan per step
``t`` computes ``logits[t]`` and the new decoder state from ``tgt[t]`` and
the previous state. So a model with interventions (``m.do({"attn[2]": w})``)
decodes under them.

Beam search keeps the `beam` best hypotheses per row. A hypothesis that
emits `eos` is finished: it keeps its log-probability and its length
``|Y|`` (the tokens up to and including `eos`), repeats `eos` at no cost,
and keeps competing for a place in the beam. Hypotheses are ranked by
their total log-probability ``log P(Y | X)``, or, with a length penalty
``alpha`` (GNMT, Wu et al. 2016, eq. 14), by

    ``log P(Y | X) / lp(Y)``,  ``lp(Y) = ((5 + |Y|) / 6) ** alpha``,

so that ``alpha > 0`` stops short hypotheses from winning only because every
extra token costs log-probability (``alpha = 0``: no penalty; GNMT uses
0.6 to 1). Unfinished hypotheses all have the same length, so the penalty
only changes how finished ones compare with them and with each other; the
answer is the finished-or-not hypothesis with the best rank after
`max_len` steps. ``beam=1`` is greedy decoding.

References
----------
.. [1] Wu et al., "Google's neural machine translation system: bridging the
   gap between human and machine translation", arXiv:1609.08144, 2016.

Symbols: ``n`` batch, ``k`` beam, ``V`` target vocabulary, ``L`` max_len.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any, NamedTuple

import numpy as np
from scipy.special import log_softmax

from ...arguments import check_int, check_real
from ...errors import EvidenceError, ModelError
from ...inference.tensor import Plan
from ...model import CausalModel
from .seq2seq import SRC_LENGTHS

__all__ = ["decode", "teacher_forced", "Decoding"]

_CARRY = re.compile(r"^(dec\..+)\[-1\]$")


class Decoding(NamedTuple):
    """The best sequence per row: ``tokens`` ``(n, L)`` ids and ``scores`` ``(n,)`` total log-probabilities."""

    tokens: np.ndarray
    scores: np.ndarray


def _steps(model: CausalModel, prefix: str) -> int:
    pat = re.compile(re.escape(prefix) + r"\[(\d+)\]$")
    steps = [int(m.group(1)) for v in model.nodes if (m := pat.match(str(v)))]
    if not steps:
        raise ModelError(f"decode: the model has no {prefix}[t] nodes; build it with recurrent.seq2seq")
    return max(steps) + 1


def _src_values(model: CausalModel, src: Any, src_lengths: Any) -> dict:
    S = _steps(model, "src")
    src = np.asarray(src)
    if src.ndim != 2 or src.shape[1] != S:
        raise EvidenceError(f"src must have shape (n, {S}) (the model's T_src), got {src.shape}")
    if src.dtype.kind not in "iu":
        raise EvidenceError(f"src must hold integer ids, got dtype {src.dtype}")
    values = {f"src[{s}]": src[:, s] for s in range(S)}
    if (SRC_LENGTHS in model.mechanisms) != (src_lengths is not None):
        raise EvidenceError(f"this model {'needs' if src_lengths is None else 'takes no'} 'src_lengths' "
                            f"(seq2seq(..., src_lengths=True))")
    if src_lengths is not None:
        values[SRC_LENGTHS] = model.coerce(SRC_LENGTHS, src_lengths)
    return values


def teacher_forced(model: CausalModel, src: Any, tgt: Any, src_lengths: Any = None) -> np.ndarray:
    """``(n, T_tgt, V)`` logits of a teacher-forced run: ``tgt[:, t]`` is the decoder's input at step ``t``.

    `src_lengths` ``(n,)`` is required by a model built with ``src_lengths=True``.

    Raises
    ------
    EvidenceError
        `src` or `tgt` of the wrong shape or dtype (ids out of range: ShapeError from the embedding).
    """
    T = _steps(model, "tgt")
    tgt = np.asarray(tgt)
    if tgt.ndim != 2 or tgt.shape[1] != T or tgt.dtype.kind not in "iu":
        raise EvidenceError(f"tgt must be integer ids of shape (n, {T}) (the model's T_tgt), got {tgt.dtype} "
                            f"{tgt.shape}")
    values = {**_src_values(model, src, src_lengths), **{f"tgt[{t}]": tgt[:, t] for t in range(T)}}
    tr = model.forward(values, keep=[f"logits[{t}]" for t in range(T)])
    return np.stack([tr[f"logits[{t}]"] for t in range(T)], axis=1)


class _Stepper:
    """The encoder plan and the per-step plans of one model.

    The decoder's carry is every node ``dec.*[-1]`` (each layer's ``h``, an
    LSTM's ``c``, Luong's input-fed ``ht``): step ``t`` reads ``name[t-1]``
    and writes ``name[t]``.
    """

    def __init__(self, model: CausalModel) -> None:
        self.model = model
        self.states = sorted(m.group(1) for v in model.mechanisms if (m := _CARRY.match(str(v))))
        memory = [v for v in ("enc.H", "enc.K") if v in model.mechanisms]
        self.encoder = Plan(model, outputs=memory + [f"{s}[-1]" for s in self.states])
        self.memory = memory + ([SRC_LENGTHS] if SRC_LENGTHS in model.mechanisms else [])

    def encode(self, values: dict) -> dict:
        """The carry of step 0: ``enc.H``, ``enc.K``, ``src_lengths`` (when present) and the decoder states."""
        tr = self.encoder.run({k: v for k, v in values.items() if k in self.encoder.inputs})
        carry = {v: (values[v] if v == SRC_LENGTHS else tr[v]) for v in self.memory}
        return {**carry, **{s: tr[f"{s}[-1]"] for s in self.states}}

    def step(self, t: int, tokens: np.ndarray, carry: dict) -> tuple[np.ndarray, dict]:
        """``(logits[t], new carry)`` from the step's input ids and the carried memory and states."""
        outs = [f"logits[{t}]"] + [f"{s}[{t}]" for s in self.states]
        plan = Plan(self.model, outputs=outs, inputs=[f"tgt[{t}]", *self.memory,
                                                      *(f"{s}[{t - 1}]" for s in self.states)])
        given: dict[Hashable, Any] = {f"tgt[{t}]": tokens, **{v: carry[v] for v in self.memory},
                                      **{f"{s}[{t - 1}]": carry[s] for s in self.states}}
        tr = plan.run({k: v for k, v in given.items() if k in plan.inputs})
        new = {v: carry[v] for v in self.memory}
        new.update({s: tr[f"{s}[{t}]"] for s in self.states})
        return tr[f"logits[{t}]"], new


def decode(model: CausalModel, src: Any, max_len: int, *, beam: int = 1, bos: int = 0,
           eos: int | None = None, length_penalty: float | None = None, src_lengths: Any = None) -> Decoding:
    """Greedy (``beam=1``) or beam-search decoding of a :func:`~causalnet.models.recurrent.seq2seq` model.

    Parameters
    ----------
    model : CausalModel
        From :func:`seq2seq`, possibly intervened on.
    src : array_like of int, shape (n, T_src)
    max_len : int
        Tokens to produce, at most the model's ``T_tgt``.
    beam : int
        Prefixes kept per row.
    bos : int
        The decoder's first input id.
    eos : int, optional
        The end id: a hypothesis that emits it is finished.
    length_penalty : float, optional
        ``alpha`` of GNMT's ``lp(Y) = ((5 + |Y|) / 6) ** alpha``: beam search
        ranks hypotheses by ``log P(Y | X) / lp(Y)`` (module docstring).
        Needs ``beam > 1`` and `eos` (without an end every hypothesis has
        `max_len` tokens and the penalty ranks nothing).
    src_lengths : array_like of int, shape (n,), optional
        Required by a model built with ``src_lengths=True``.

    Returns
    -------
    Decoding
        ``tokens`` ``(n, max_len)`` (``eos`` repeated after the end) and
        ``scores`` ``(n,)``, the sum of the chosen tokens' log-softmax up to
        the end, ``log P(Y | X)`` (not divided by the penalty).

    Raises
    ------
    ModelError, EvidenceError
        `max_len` beyond ``T_tgt``, bad `beam`, `bos`/`eos` outside the
        vocabulary, a `length_penalty` that is not a finite number or is given
        to greedy decoding or without `eos`, `src` of the wrong shape.
    """
    T = _steps(model, "tgt")
    L = check_int(max_len, "max_len", low=1)
    k = check_int(beam, "beam", low=1)
    if L > T:
        raise ModelError(f"max_len={L} exceeds the model's T_tgt={T}; build it with T_tgt >= max_len")
    V = model.spec("logits[0]").shape[-1]
    for name, tok in (("bos", bos), ("eos", eos)):
        if tok is not None and (isinstance(tok, bool) or not isinstance(tok, (int, np.integer)) or not 0 <= tok < V):
            raise ModelError(f"{name} must be a token id in [0, {V}), got {tok!r}")
    alpha = _penalty(length_penalty, k, eos)
    values = _src_values(model, src, src_lengths)
    n = next(iter(values.values())).shape[0]
    stepper = _Stepper(model)
    carry = {v: np.repeat(a, k, axis=0) for v, a in stepper.encode(values).items()}      # (n k, ...)
    return _beam_search(stepper, carry, n, k, L, V, bos, eos, alpha)


def _penalty(length_penalty, k: int, eos) -> float:
    """GNMT's alpha (0.0 without a penalty), checked against the beam and `eos`."""
    if length_penalty is None:
        return 0.0
    alpha = check_real(length_penalty, "length_penalty")
    if k == 1:
        raise ModelError(f"length_penalty={length_penalty!r} ranks the hypotheses of a beam search; greedy decoding "
                         f"(beam=1) keeps one, so pass beam > 1 or no length_penalty")
    if eos is None:
        raise ModelError(f"length_penalty={length_penalty!r} needs eos=: without an end token every hypothesis has "
                         f"max_len tokens and the penalty ranks nothing")
    return alpha


def _rank(scores: np.ndarray, lengths: np.ndarray, alpha: float) -> np.ndarray:
    """``log P / ((5 + |Y|) / 6) ** alpha`` (GNMT); the scores themselves when ``alpha == 0``."""
    return scores / ((5.0 + lengths) / 6.0) ** alpha if alpha else scores


def _beam_search(stepper: _Stepper, carry: dict, n: int, k: int, L: int, V: int, bos: int, eos,
                 alpha: float) -> Decoding:
    scores = np.full((n, k), -np.inf)
    scores[:, 0] = 0.0                                   # one live hypothesis per row at the start
    done = np.zeros((n, k), dtype=bool)
    lengths = np.zeros((n, k), dtype=np.int64)           # |Y|: tokens up to and including eos
    tokens = np.full((n, k, 0), bos, dtype=np.int64)
    inputs = np.full(n * k, bos, dtype=np.int64)
    rows = np.arange(n)[:, None]
    for t in range(L):
        logits, carry = stepper.step(t, inputs, carry)
        logp = log_softmax(logits, axis=-1).reshape(n, k, V)                     # (n, k, V)
        total = scores[:, :, None] + logp                                         # (n, k, V)
        if eos is not None:
            total[done] = -np.inf
            total[done, eos] = scores[done]              # a finished hypothesis only repeats eos, at no cost
        flat = total.reshape(n, k * V)
        span = np.repeat(np.where(done, lengths, t + 1), V, axis=1)               # (n, k V) |Y| of each candidate
        best = np.argsort(-_rank(flat, span, alpha), axis=1, kind="stable")[:, :k]   # (n, k)
        parent, tok = best // V, best % V
        scores = np.take_along_axis(flat, best, axis=1)
        lengths = np.take_along_axis(span, best, axis=1)
        done = done[rows, parent] | (tok == eos if eos is not None else False)
        tokens = np.concatenate([tokens[rows, parent], tok[:, :, None]], axis=2)  # (n, k, t+1)
        pick = (rows * k + parent).reshape(-1)
        carry = {v: a[pick] for v, a in carry.items()}
        inputs = tok.reshape(-1)
    top = np.argmax(_rank(scores, lengths, alpha), axis=1)
    return Decoding(tokens[np.arange(n), top], scores[np.arange(n), top])
