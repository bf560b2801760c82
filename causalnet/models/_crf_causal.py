"""Linear-chain CRFs as causal models: the factor-node network and interventions on tokens.

A CRF is undirected: ``P(y | x) ∝ Π_t exp(u_t(y_t; x_t)) Π_t exp(W[y_t, y_{t+1}])``.
As a DAG it becomes, for one input sequence of length ``T``:

* label nodes ``y[t]`` with a uniform prior, observation nodes ``x[t]`` (roots),
* a binary *factor node* ``f[t]`` with parents ``(x[t], y[t])`` and
  ``P(f[t] = true | y) = exp(u_t(y) − max u_t)``,
* a binary factor node ``g[t]`` with parents ``(y[t], y[t+1])`` and
  ``P(g[t] = true | a, b) = exp(W[a, b] − max W)``.

Conditioning on every factor node being true gives exactly the CRF's
posterior over labels (the uniform prior and the normalising maxima cancel),
so the generic discrete engine on this network must agree with the chain
engine — a test checks it. The network is also what the diagram shows.

An intervention on a token, ``do(x[4] = features)``, replaces that token's
features: its unary potential is recomputed and the labels are re-inferred.
(The observation nodes have no parents, so intervening on them is the same
as observing other features; the CRF's parameters are the causal
mechanism of the labels given the tokens.)

Symbols: ``T`` steps, ``K`` labels.
"""

from __future__ import annotations

import re

import numpy as np

from ..distributions import DiscreteDistribution
from ..errors import EvidenceError, ModelError
from ..inference import chain as _chain
from ..mechanisms.tabular import CPT, Categorical

__all__ = ["to_model", "query", "factor_evidence"]

_NAME = re.compile(r"^([yx])\[(\d+)\]$")


def _one(crf, X):
    """Unary potentials (T, K) of one sequence given as a list of items or a (T, F) array."""
    unary, mask = crf._unary([X] if not isinstance(X, np.ndarray) or X.ndim == 2 else X)
    if unary.shape[0] != 1:
        raise EvidenceError(f"give one sequence, got {unary.shape[0]}")
    T = int(mask[0].sum())
    if T == 0:
        raise EvidenceError("the sequence is empty")
    return unary[0, :T]


def to_model(crf, T: int | None = None, X=None):
    """The CRF as a DAG with label, observation and factor nodes (see the module docstring).

    Parameters
    ----------
    crf : CRF (fitted)
    T : int, optional
        Length, for a structural drawing without an input (unary factors are
        then uniform: the numbers need `X`).
    X : one input sequence (items or a (T, F) array), optional
        Its unary potentials are baked into the factor nodes; conditioning on
        :func:`factor_evidence` then gives the CRF's label posterior.

    Returns
    -------
    CausalModel
    """
    crf._check_fitted()
    labels = list(crf.classes_)
    K = len(labels)
    if X is not None:
        U = _one(crf, X)
        if T is not None and T != U.shape[0]:
            raise EvidenceError(f"T = {T} but the sequence has {U.shape[0]} tokens")
        T = U.shape[0]
    elif not isinstance(T, (int, np.integer)) or T < 1:
        raise ModelError(f"give T (a positive integer) or an input sequence X, got T={T!r}")
    else:
        U = np.zeros((T, K))
    W = np.asarray(crf.transition_weights_, dtype=np.float64)
    mechs: dict = {}
    fs = ["false", "true"]
    for t in range(T):
        mechs[f"x[{t}]"] = Categorical([1.0], states=["observed"])
        mechs[f"y[{t}]"] = Categorical(np.full(K, 1.0 / K), states=labels)
    for t in range(T):
        p = np.exp(U[t] - U[t].max())                                  # (K,)
        mechs[f"f[{t}]"] = CPT([f"x[{t}]", f"y[{t}]"], np.stack([1 - p, p], axis=-1)[None], states=fs)
        if t + 1 < T:
            q = np.exp(W - W.max())                                    # (K, K)
            mechs[f"g[{t}]"] = CPT([f"y[{t}]", f"y[{t + 1}]"], np.stack([1 - q, q], axis=-1), states=fs)
    from ..model import CausalModel

    return CausalModel(mechs)


def factor_evidence(model) -> dict:
    """``{factor node: "true"}`` for every factor node of :func:`to_model`'s network."""
    return {v: "true" for v in model.nodes if isinstance(v, str) and v[:2] in ("f[", "g[")}


def _parse(name, T):
    m = _NAME.match(name) if isinstance(name, str) else None
    if not m:
        raise EvidenceError(f"CRF nodes are named 'y[t]' (labels) and 'x[t]' (tokens), got {name!r}")
    t = int(m.group(2))
    if t >= T:
        raise EvidenceError(f"{name!r} is beyond the sequence (T = {T}, steps 0..{T - 1})")
    return m.group(1), t


def query(crf, targets, X, *, evidence=None, do=None):
    """Label marginals of one sequence, with tokens intervened on and labels observed.

    Parameters
    ----------
    crf : CRF (fitted)
    targets : str or list of str
        ``"y[t]"`` label nodes.
    X : one input sequence (a list of feature dicts, or a (T, F) array)
    evidence : dict, optional
        ``{"y[t]": label}``: observed labels (clamped).
    do : dict, optional
        ``{"x[t]": features}``: what the labels would be had token t been
        different (a feature dict, or a (F,) row for dense input).

    Returns
    -------
    DiscreteDistribution, or dict name -> DiscreteDistribution for a list
    """
    crf._check_fitted()
    single = isinstance(targets, str)
    names = [targets] if single else list(targets)
    seq = list(X) if not isinstance(X, np.ndarray) else np.array(X, dtype=np.float64, copy=True)
    T = len(seq)
    for k, v in (do or {}).items():
        kind, t = _parse(k, T)
        if kind != "x":
            raise EvidenceError(f"do applies to tokens 'x[t]' here; labels are inferred (got {k!r})")
        seq[t] = v
    U = _one(crf, seq)                                                   # (T, K)
    labels = list(crf.classes_)
    K = len(labels)
    unary = U[None].copy()
    for k, v in (evidence or {}).items():
        kind, t = _parse(k, T)
        if kind != "y":
            raise EvidenceError(f"evidence applies to labels 'y[t]' (tokens are inputs), got {k!r}")
        if v not in labels:
            raise EvidenceError(f"{k!r} has no label {v!r}; labels: {labels}")
        with np.errstate(divide="ignore"):
            unary[0, t] += np.log(np.eye(K)[labels.index(v)])
    post = _chain.forward_backward(unary, np.asarray(crf.transition_weights_, dtype=np.float64))
    out = {}
    for nm in names:
        kind, t = _parse(nm, T)
        if kind != "y":
            raise EvidenceError(f"targets are labels 'y[t]', got {nm!r}")
        out[nm] = DiscreteDistribution([nm], post.marginals[0, t], [tuple(labels)],
                                       method="exact (chain forward-backward)")
    return out[names[0]] if single else out
