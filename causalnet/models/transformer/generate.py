"""Autoregressive generation with a key/value cache, sampling, and interventions held at every step.

Generation appends one token per step. Without a cache each step re-runs the
whole prefix; with the cache (:class:`~causalnet.inference.tensor.Incremental`)
each step computes the new position only, reusing the keys and values of the
earlier ones, and gives the same logits (a causal decoder never lets an earlier
position see a later one). Tokens are picked greedily (``temperature=0``) or
sampled from ``softmax(logits / temperature)`` restricted to the ``top_k``
most likely tokens and to the smallest set whose probability reaches
``top_p``, with a seeded generator.

``do`` maps sites to values, as in :func:`~causalnet.models.transformer.ablate`:
a node name or a :class:`~causalnet.models.transformer.Site` (a head, a
residual position, from :func:`~causalnet.models.transformer.sites`) to a
constant (broadcast over the site's part of each row) or a callable of the
natural part. The interventions hold at every step, on every position,
with or without the cache. Positions in a site's index are absolute.

Symbols: ``n`` batch, ``T0`` prompt length, ``L`` vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...arguments import as_generator, check_int, check_real
from ...errors import ModelError, ShapeError
from ...inference.tensor import Incremental, Plan
from ...model import CausalModel
from .interpret import Site

__all__ = ["generate", "pick_tokens", "site_patch"]


def generate(model: CausalModel, prompt, steps: int, *, temperature: float = 0.0, top_k: int | None = None,
             top_p: float | None = None, seed=None, cache: bool = True, do: Mapping | None = None, source=None,
             source_padding=None, eos: int | None = None, return_logits: bool = False):
    """Autoregressive decoding: append a token picked from ``I[:, -1]`` `steps` times.

    Parameters
    ----------
    model : CausalModel
        A decoder with token ids and logits ``I``: decoder-only (:func:`decoder`
        with an embedding, :func:`from_huggingface` of a GPT-2; tokens ``x``)
        or encoder-decoder (:func:`transformer`; tokens ``dec.x``, source
        ``x`` or ``e``).
    prompt : array_like of int, shape (n, T0)
        The tokens to continue (for a translation model, usually the start token).
    steps : int
    temperature : float
        0 picks the most likely token (greedy); otherwise sample from
        ``softmax(logits / temperature)``.
    top_k : int, optional
        Sample among the `top_k` most likely tokens only.
    top_p : float in (0, 1], optional
        Sample among the smallest set of most likely tokens whose probability
        reaches `top_p` (nucleus sampling).
    seed : int or Generator, optional
        The same seed gives the same tokens.
    cache : bool
        Reuse the keys and values of earlier positions (same logits, much faster).
    do : mapping site -> value, optional
        Interventions held at every step: a site is a node name or a
        :class:`Site` (``head(model, "dec.0.self.A", 1)``, an entry of
        :func:`sites`); a value is a constant broadcast over the site's part of
        each row, or a callable of that part (with the cache it sees the new
        positions only, so it must act position by position).
    source : array_like, optional
        Encoder-decoder only: source ids ``(n, S)`` (or embeddings ``(n, S, d)``
        when the model has no source embedding). The encoder runs once.
    source_padding : array_like of bool, shape (n, S), optional
        The source padding mask when the model has a ``pad`` root.
    eos : int, optional
        A row that has produced `eos` keeps producing it.
    return_logits : bool
        Also return the logits of every step.

    Returns
    -------
    tokens : ndarray of int, shape (n, T0 + steps)
    logits : ndarray of shape (n, steps, L)
        Only with ``return_logits=True``: the logits each token was picked from.

    Raises
    ------
    ModelError
        Bad arguments, a model without logits ``I``, or (with the cache) a model
        whose attention over the sequence is not causal.

    Examples
    --------
    >>> import numpy as np
    >>> from causalnet.models.transformer import decoder, head
    >>> m = decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)
    >>> prompt = np.array([[1, 2, 3]])
    >>> a, la = generate(m, prompt, 4, return_logits=True)
    >>> b, lb = generate(m, prompt, 4, cache=False, return_logits=True)
    >>> bool((a == b).all()), bool(np.allclose(la, lb, rtol=0, atol=1e-10))
    (True, True)
    >>> s = generate(m, prompt, 4, temperature=1.0, top_k=5, seed=0)
    >>> bool((s == generate(m, prompt, 4, temperature=1.0, top_k=5, seed=0)).all())
    True
    >>> ablated = generate(m, prompt, 4, do={head(m, "dec.1.self.A", 0): 0.0})
    >>> ablated.shape
    (1, 7)
    """
    model.check_node("I", "node (a decoder with an LM head)")
    tokens = _check_prompt(prompt)
    check_int(steps, "steps", low=0)
    if eos is not None:
        vocab = model.spec("I").shape[-1]                                # the LM head's logits: (..., V)
        check_int(eos, f"eos (a token id of the vocabulary of {vocab})", low=0, high=vocab - 1)
    sampler = _Sampler(temperature, top_k, top_p, seed)
    patches = _patches(model, do)
    encoder = model.do({node: _as_shift(fs) for node, fs in patches.items()}) if patches else model
    tok, fixed, pad_nodes = _inputs(encoder, source, source_padding)   # interventions hold in the encoder too
    step = _Cached(model, tok, fixed, pad_nodes, patches) if cache else _Full(model, tok, fixed, pad_nodes, patches)
    out, logits = _decode(step, sampler, tokens, int(steps), eos, keep=return_logits)
    if not return_logits:
        return out
    if logits:
        return out, np.stack(logits, axis=1)                 # (n, steps, L)
    return out, np.zeros((out.shape[0], 0, model.spec("I").shape[-1]))


def _decode(step, sampler, tokens: np.ndarray, steps: int, eos: int | None, *, keep: bool) -> tuple:
    """The decoding loop: tokens ``(n, T0 + steps)`` and, if `keep`, the list of ``(n, L)`` logits they came from."""
    nrow = tokens.shape[0]
    done = np.zeros(nrow, bool)
    out = tokens.astype(np.int64)
    logits_all = []
    new = out
    for _ in range(steps):
        logits = step(new, out)                              # (n, L) at the last position
        if keep:
            logits_all.append(logits)
        nxt = sampler(logits)                                # (n,)
        if eos is not None:
            nxt = np.where(done, eos, nxt)
            done |= nxt == eos
        new = nxt[:, None]
        out = np.concatenate([out, new], axis=1)             # (n, T + 1)
    return out, logits_all


def _check_prompt(prompt) -> np.ndarray:
    tokens = np.asarray(prompt)
    if tokens.ndim != 2 or tokens.dtype.kind not in "iu":
        raise ShapeError(f"prompt must be (n, T0) integer token ids, got {tokens.dtype} {tokens.shape}")
    if tokens.shape[1] == 0 or tokens.shape[0] == 0:
        raise ShapeError(f"prompt must hold at least one row and one token (n, T0 >= 1), got {tokens.shape}")
    return tokens


def _inputs(model: CausalModel, source, source_padding):
    """The token node, the values held fixed (an encoder's memory), and the target padding nodes."""
    if "dec.x" in model:
        if source is None:
            raise ModelError("an encoder-decoder model needs source= (ids for 'x' or embeddings for 'e')")
        enc_in = {"x" if "x" in model else "e": source}
        if "pad" in model:
            enc_in["pad"] = np.zeros(np.shape(source)[:2], bool) if source_padding is None else source_padding
        fixed = {"n": Plan(model, outputs=["n"], inputs=list(enc_in)).run(enc_in)["n"]}
        if "pad" in model:
            fixed["pad"] = enc_in["pad"]
        return "dec.x", fixed, ["dec.pad"] if "dec.pad" in model else []
    model.check_node("x", "token node")
    if source is not None:
        raise ModelError("source= is for encoder-decoder models; this model has no 'dec.x'")
    return "x", {}, ["pad"] if "pad" in model else []


class _Full:
    """One step without a cache: the whole prefix through the (intervened) model."""

    def __init__(self, model, tok, fixed, pad_nodes, patches) -> None:
        if patches:
            model = model.do({node: _as_shift(fs) for node, fs in patches.items()})
        self.plan = Plan(model, outputs=["I"], inputs=[tok, *fixed, *pad_nodes])
        self.tok, self.fixed, self.pad_nodes = tok, fixed, pad_nodes

    def __call__(self, new, out):
        vals = {self.tok: out, **self.fixed}
        for v in self.pad_nodes:
            vals[v] = np.zeros(out.shape, bool)
        return self.plan.run(vals)["I"][:, -1]               # (n, L)


class _Cached:
    """One step with the key/value cache: the new positions only."""

    def __init__(self, model, tok, fixed, pad_nodes, patches) -> None:
        joined = {node: _joined(fs) for node, fs in patches.items()}
        self.inc = Incremental(model, outputs=["I"], growing=[tok, *pad_nodes], static=list(fixed), patches=joined)
        self.tok, self.fixed, self.pad_nodes = tok, fixed, pad_nodes
        self.first = True

    def __call__(self, new, out):
        vals = {self.tok: new}
        for v in self.pad_nodes:
            vals[v] = np.zeros(new.shape, bool)
        res = self.inc.step(vals, self.fixed if self.first else None)
        self.first = False
        return res["I"][:, -1]                               # (n, L)


def _joined(fs):
    return lambda x, start: _apply(fs, x, start)


def _as_shift(fs):
    return lambda natural: _apply(fs, natural, 0)


def _apply(fs, x, start):
    for f in fs:
        x = f(x, start)
    return x


def _patches(model: CausalModel, do) -> dict:
    """``do`` as node -> list of functions ``(value at positions start.., start) -> patched value``."""
    if do is None:
        return {}
    if not isinstance(do, Mapping):
        raise ModelError(f"do must be a mapping site -> value, got {type(do).__name__}")
    out: dict = {}
    for site, value in do.items():
        if not isinstance(site, Site):
            site = Site(model.check_node(site, "node in do"))
        else:
            model.check_node(site.node, "node in do")
        if site.node in ("x", "dec.x") or not model.mechanisms[site.node].parents:
            raise ModelError(f"do on the input {site.node!r} is not an intervention generation can hold; patch an "
                             f"inner node")
        out.setdefault(site.node, []).append(site_patch(model, site, value))
    return out


def site_patch(model: CausalModel, site: Site, value):
    """A function ``(values at positions start.., start) -> values`` writing `value` into `site`.

    The node's sequence axis is its first free per-row size; an index entry on
    that axis is an absolute position (an int, or a slice with step 1), moved
    to the positions at hand and skipped when they do not hold it.
    """
    free = [i for i, s in enumerate(model.spec(site.node).shape) if s is None]
    ax = free[0] if free else None
    index = tuple(site.index)
    if ax is not None and ax < len(index):
        entry = index[ax]
        if isinstance(entry, (int, np.integer)) and entry < 0:
            raise ModelError(f"site {site}: positions must be absolute (>= 0) during generation, got {entry}")
        if isinstance(entry, slice) and entry.step not in (None, 1):
            raise ModelError(f"site {site}: a position slice must have step 1, got {entry}")

    def patch(x, start):
        idx = list(index)
        if ax is not None and ax < len(idx):
            local = _local(idx[ax], start, x.shape[1 + ax])
            if local is None:
                return x
            idx[ax] = local
        full = (slice(None), *idx)
        try:
            if not idx and not callable(value):
                return np.broadcast_to(np.asarray(value, dtype=x.dtype), x.shape).copy()
            y = np.array(x, copy=True)
            y[full] = value(y[full]) if callable(value) else value
        except (ValueError, IndexError, TypeError) as e:
            raise ShapeError(f"do on site {site}: the value does not fit the part {x[full].shape} of the new "
                             f"positions ({e})") from None
        return y

    return patch


def _local(entry, start: int, t: int):
    """An absolute position (int or slice) as an index into positions ``start .. start+t-1``; None if outside."""
    if isinstance(entry, (int, np.integer)):
        return int(entry) - start if start <= entry < start + t else None
    if isinstance(entry, slice) and entry == slice(None):
        return entry
    if isinstance(entry, slice):
        lo = max((entry.start or 0) - start, 0)
        hi = t if entry.stop is None else min(entry.stop - start, t)
        return slice(lo, hi) if lo < hi else None
    return entry


class _Sampler:
    """Greedy or seeded sampling with temperature, top-k and top-p."""

    def __init__(self, temperature, top_k, top_p, seed) -> None:
        self.temperature = check_real(temperature, "temperature")
        if self.temperature < 0:
            raise ModelError(f"temperature must be >= 0, got {temperature!r}")
        self.top_k = None if top_k is None else check_int(top_k, "top_k", low=1)
        self.top_p = None if top_p is None else check_real(top_p, "top_p")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ModelError(f"top_p must be in (0, 1], got {top_p!r}")
        self.rng = as_generator(seed)

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        return pick_tokens(logits, temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, rng=self.rng)


def pick_tokens(logits: np.ndarray, *, temperature: float = 0.0, top_k: int | None = None,
                top_p: float | None = None, rng=None) -> np.ndarray:
    """One token per row from logits ``(n, L)``: greedy, or sampled with temperature, top-k and top-p.

    Examples
    --------
    >>> pick_tokens(np.array([[0.0, 2.0, 1.0]])).tolist()
    [1]
    >>> pick_tokens(np.array([[0.0, 2.0, 1.0]]), temperature=1.0, top_k=1, rng=np.random.default_rng(0)).tolist()
    [1]
    """
    if temperature == 0:
        return logits.argmax(axis=-1)
    z = np.asarray(logits, dtype=np.float64) / temperature                 # (n, L)
    n, L = z.shape
    if top_k is not None and top_k < L:
        kth = np.partition(z, L - top_k, axis=-1)[:, L - top_k][:, None]   # (n, 1)
        z = np.where(z < kth, -np.inf, z)
    z -= z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)                                     # (n, L)
    if top_p is not None and top_p < 1:
        order = np.argsort(-p, axis=-1, kind="stable")                     # (n, L)
        ps = np.take_along_axis(p, order, axis=-1)
        keep_sorted = np.cumsum(ps, axis=-1) - ps < top_p                  # the first token is always kept
        keep = np.empty_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        p = np.where(keep, p, 0.0)
        p /= p.sum(axis=-1, keepdims=True)
    rng = np.random.default_rng(rng)
    c = np.cumsum(p, axis=-1)                                              # (n, L)
    u = rng.random(n)[:, None] * c[:, -1:]                                 # (n, 1), below the total
    idx = (c <= u).sum(axis=-1)
    return np.minimum(idx, L - 1)
