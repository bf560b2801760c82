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

The functions take any fitted estimator with the CRF's public interface
(``classes_``, ``transition_weights_``, ``unary_potentials(X)``); this module
does not import the estimator, which calls it from ``CRF.to_model`` and
``CRF.query``. :func:`query` asks the front door of the factor network,
where the CRF chain engine (:mod:`.engine`) answers.

Symbols: ``T`` steps, ``K`` labels, ``F`` attributes.

Examples
--------
>>> import numpy as np
>>> from causalnet.models.crf import CRF
>>> crf = CRF.from_weights(np.eye(2), np.zeros((2, 2)), ["A", "B"])
>>> x = np.array([[3.0, 0.0], [0.0, 0.0]])                  # one sequence, T = 2, dense
>>> m = to_model(crf, X=x)
>>> fm = m.query("y[0]", evidence=factor_evidence(m)).probs
>>> bool(np.allclose(fm, query(crf, "y[0]", x).probs))
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from ... import limits
from ...arguments import check_int
from ...errors import EvidenceError, NotFittedError
from ...inference.dispatch import run_query
from ...mechanisms.tabular import CPT, Categorical
from ...model import CausalModel
from .engine import CRFChainEngine

__all__ = ["to_model", "query", "factor_evidence", "sequence_unary", "CRFChainEngine"]

_NAME = re.compile(r"^([yx])\[(\d+)\]$")


def _require_fitted(crf):
    if getattr(crf, "transition_weights_", None) is None:
        raise NotFittedError("this CRF is not fitted; call fit(X, y) or CRF.from_weights(...) first")


def sequence_unary(crf, X):
    """Unary log-potentials (T, K) of one sequence given as a list of items or a (T, F) array."""
    if isinstance(X, np.ndarray) and X.ndim == 3:
        batch = X
    elif isinstance(X, np.ndarray) and X.ndim != 2:
        raise EvidenceError(f"give one sequence: a list of items or a (T, F) array; got shape {X.shape}")
    else:
        batch = [X]
    unary, mask = crf.unary_potentials(batch)
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
    _require_fitted(crf)
    labels = list(crf.classes_)
    K = len(labels)
    if X is not None:
        U = sequence_unary(crf, X)  # (T, K)
        if T is not None and T != U.shape[0]:
            raise EvidenceError(f"T = {T} but the sequence has {U.shape[0]} tokens")
        T = U.shape[0]
    else:
        T = check_int(T, "T (or give an input sequence X)", low=1)
        U = None
    limits.check_bytes(
        8.0 * T * (3 * K + 2 * K * K + 8),
        what=f"the CRF's factor network over T = {T} steps",
        cause=f"{4 * T - 1} nodes with tables of up to {2 * K * K} entries ({K} labels)",
    )
    if U is None:
        U = np.zeros((T, K))
    W = np.asarray(crf.transition_weights_, dtype=np.float64)
    mechs: dict = {}
    fs = ["false", "true"]
    for t in range(T):
        mechs[f"x[{t}]"] = Categorical([1.0], states=["observed"])
        mechs[f"y[{t}]"] = Categorical(np.full(K, 1.0 / K), states=labels)
    q = np.exp(W - W.max())  # (K, K)
    pair = CPT(["y[0]", "y[1]"], np.stack([1 - q, q], axis=-1), states=fs)     # validated once, shared
    for t in range(T):
        p = np.exp(U[t] - U[t].max())  # (K,)
        mechs[f"f[{t}]"] = CPT([f"x[{t}]", f"y[{t}]"], np.stack([1 - p, p], axis=-1)[None], states=fs)
        if t + 1 < T:
            mechs[f"g[{t}]"] = pair.with_parents([f"y[{t}]", f"y[{t + 1}]"])
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


def _mapping(arg, what):
    if arg is None:
        return {}
    if not isinstance(arg, Mapping):
        raise EvidenceError(f"{what} must be a mapping {{node: value}}; got a {type(arg).__name__}")
    return arg


def _intervened_sequence(X, do):
    """A copy of the sequence `X` with the tokens in `do` replaced."""
    if isinstance(X, np.ndarray):
        if X.ndim != 2 or X.dtype.kind not in "biuf":
            raise EvidenceError(f"a dense sequence must be a (T, F) array of real numbers; got {X.shape} {X.dtype}")
        seq = np.array(X, dtype=np.float64, copy=True)
    elif isinstance(X, (str, bytes, dict)) or not hasattr(X, "__iter__"):
        raise EvidenceError(f"X must be one sequence (a list of items or a (T, F) array); got a {type(X).__name__}")
    else:
        seq = list(X)
    T = len(seq)
    for k, v in do.items():
        kind, t = _parse(k, T)
        if kind != "x":
            raise EvidenceError(f"do applies to tokens 'x[t]' here; labels are inferred (got {k!r})")
        if isinstance(seq, np.ndarray):
            row = np.asarray(v)
            if row.shape != seq.shape[1:] or row.dtype.kind not in "biuf":
                raise EvidenceError(
                    f"do({k}) on a dense sequence needs a row of {seq.shape[1]} real numbers; "
                    f"got shape {row.shape}, dtype {row.dtype}"
                )
        seq[t] = v
    return seq


def query(crf, targets, X, *, evidence=None, do=None):
    """Label marginals of one sequence, with tokens intervened on and labels observed.

    The tokens under `do` are replaced first; the CRF's factor network for
    that sequence (:func:`to_model`) is then asked, through the front door,
    for each target given every factor node ``true`` and the observed labels:
    validated once, answered by the CRF chain engine
    (:class:`~causalnet.models.crf.engine.CRFChainEngine`).

    Parameters
    ----------
    crf : CRF (fitted)
    targets : str or list of str
        ``"y[t]"`` label nodes.
    X : one input sequence (a list of feature dicts, or a (T, F) array)
    evidence : dict, optional
        ``{"y[t]": label}``: observed labels (clamped); an array of labels
        per node answers one query per row.
    do : dict, optional
        ``{"x[t]": features}``: what the labels would be had token t been
        different (a feature dict, or a (F,) row for dense input).

    Returns
    -------
    DiscreteDistribution, or dict name -> DiscreteDistribution for a list
        ``.method`` is ``"exact (CRF chain forward-backward)"``; ``.query``
        the question on the factor network.
    """
    _require_fitted(crf)
    evidence, do = _mapping(evidence, "evidence"), _mapping(do, "do")
    single = isinstance(targets, str)
    names = [targets] if single else list(targets)
    model = to_model(crf, X=_intervened_sequence(X, do))
    T = (len(model.nodes) + 1) // 4                      # x, y, f per step and g between steps
    for nm in names:
        if _parse(nm, T)[0] != "y":
            raise EvidenceError(f"targets are labels 'y[t]', got {nm!r}")
    for k in evidence:
        if _parse(k, T)[0] != "y":
            raise EvidenceError(f"evidence applies to labels 'y[t]' (tokens are inputs), got {k!r}")
    ev = {**factor_evidence(model), **evidence}
    out = {nm: run_query(model, nm, evidence=ev, method="exact") for nm in names}
    return out[names[0]] if single else out
