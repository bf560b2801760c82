"""HMMs as causal models: unrolling, and do-queries and counterfactuals through the one front door.

An HMM unrolled over ``T`` steps is the causal DAG ``Z[t-1] -> Z[t] -> X[t]``
with ``Z`` latent. Every mechanism is the inverse-CDF SCM of its row (the same
SCM the generic discrete engine uses). :meth:`HMM.query` and
:meth:`HMM.counterfactual` turn their arguments (a whole observed sequence or
a batch of them, or ``{"X[t]": value}``) into a request on the unrolled
model and ask the front door (:mod:`causalnet.inference.dispatch`), which
validates it once; the HMM's chain engines (:mod:`.engine`) answer it there:

* ``do(Z[t] = k)`` cuts the transition into ``Z[t]`` and clamps it: one
  forward-backward pass answers every ``Z`` and ``X`` query;
* a counterfactual "given the observed sequence, what would ``X[t']`` have
  been had ``Z[t]`` been k" runs forward-backward on the twin chain over
  ``K²`` joint states (exact under the inverse-CDF SCM).

The unrolled model of a given length is built once per parameter set (kept
while the HMM lives).

Symbols: ``n`` sequences, ``T`` steps, ``K`` states, ``S`` symbols, ``d`` width.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping

import numpy as np

from ... import limits
from ...arguments import check_int
from ...errors import EvidenceError, ModelError, ShapeError
from ...graph.dag import DAG
from ...inference.dispatch import run_counterfactual, run_query
from ...mechanisms.tabular import CPT, Categorical
from ...model import CausalModel
from .engine import HMMChainEngine, HMMTwinChainEngine
from .mechanism import GaussianEmissionMechanism

__all__ = ["to_model", "unrolled", "folded_dag", "query", "counterfactual", "GaussianEmissionMechanism",
           "HMMChainEngine", "HMMTwinChainEngine"]

_NAME = re.compile(r"^([ZX])\[(\d+)\]$")
_UNROLLED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_KEEP = 4          # unrolled lengths kept per HMM


# -- unrolling ----------------------------------------------------------------------


def to_model(hmm, T: int):
    """The HMM unrolled over `T` steps as a CausalModel: ``Z[t]`` (latent) and ``X[t]``."""
    if not isinstance(T, (int, np.integer)) or T < 1:
        raise ModelError(f"T must be a positive integer, got {T!r}")
    params = hmm.checked_params()
    em = hmm.emission_model
    K = hmm.n_states
    limits.check_bytes(8.0 * T * (K * K + 64), what=f"the HMM unrolled over T = {T} steps",
                       cause=f"{2 * T} nodes, a {K}x{K} transition per step")
    zstates = list(range(K))
    mechs = {"Z[0]": Categorical(params["startprob_"], states=zstates)}
    step = CPT(["Z[0]"], params["transmat_"], states=zstates)        # validated once, shared by every step
    emit = em.mechanism("Z[0]", params)
    for t in range(1, T):
        mechs[f"Z[{t}]"] = step.with_parents([f"Z[{t - 1}]"])
    for t in range(T):
        mechs[f"X[{t}]"] = emit.with_parents([f"Z[{t}]"])
    order = [f"{v}[{t}]" for t in range(T) for v in ("Z", "X")]
    return CausalModel({k: mechs[k] for k in order}, latent=[f"Z[{t}]" for t in range(T)])


def folded_dag() -> tuple[DAG, dict]:
    """The folded (plate) drawing: ``Z[t-1] -> Z[t] -> X[t]``, with a plate over t.

    Returns the DAG and ``to_dot`` options (the plate as a cluster).
    """
    g = DAG([("Z[t-1]", "Z[t]"), ("Z[t]", "X[t]")], latent=["Z[t-1]", "Z[t]"])
    return g, {"clusters": {"t = 1..T": ["Z[t]", "X[t]"]}, "observed": {"X[t]"}, "rankdir": "LR"}


def unrolled(hmm, T: int) -> CausalModel:
    """:func:`to_model` kept per HMM and parameter set (the last few lengths), so repeated queries unroll once."""
    params = hmm.checked_params()
    em = hmm.emission_model
    key = (int(T), type(em).__name__, repr(sorted(vars(em).items())),
           tuple((k, np.shape(v), np.asarray(v).tobytes()) for k, v in sorted(params.items())))
    kept = _UNROLLED.setdefault(hmm, {})
    if key not in kept:
        while len(kept) >= _KEEP:
            kept.pop(next(iter(kept)))
        kept[key] = to_model(hmm, T)
    return kept[key]


# -- requests: the HMM's arguments as the front door's ---------------------------------


def _parse_name(name) -> tuple[str, int]:
    m = _NAME.match(name) if isinstance(name, str) else None
    if not m:
        raise EvidenceError(f"HMM nodes are named 'Z[t]' and 'X[t]', got {name!r}")
    return m.group(1), int(m.group(2))


def _targets(targets) -> tuple[list, bool]:
    single = isinstance(targets, str)
    if not single and not isinstance(targets, (list, tuple, set, frozenset)):
        raise EvidenceError(f"targets must be a node name 'Z[t]' / 'X[t]' or a list of them; got {targets!r}")
    names = [targets] if single else list(targets)
    if not names:
        raise EvidenceError("give at least one target")
    return names, single


def _sequence_evidence(hmm, params, evidence) -> dict:
    """A whole sequence ``(T[, d])`` or a batch ``(n, T[, d])`` as ``{"X[t]": value}`` (values checked by the request)."""
    width = hmm.emission_model.evidence_width(params)
    try:
        a = np.asarray(evidence)
    except (TypeError, ValueError) as e:
        raise EvidenceError(f"evidence: expected a rectangular array; got a ragged sequence ({e})") from None
    want = 2 if width else 1
    if a.ndim not in (want, want + 1):
        shape = "(T)" if not width else "(T, d)"
        raise ShapeError(f"observations must be {shape} or (n, {shape[1:-1]}), got {a.shape}")
    if a.shape[a.ndim - want] == 0:
        raise EvidenceError("empty observation sequence")
    a = a if a.ndim == want + 1 else a[None]                                         # (n, T[, d])
    scalar = bool(width) and width[0] == 1
    batched = np.ndim(evidence) == want + 1
    return {f"X[{t}]": (a[:, t, 0] if scalar else a[:, t]) if batched else (a[0, t, 0] if scalar else a[0, t])
            for t in range(a.shape[1])}


def _request_parts(hmm, targets, evidence, do, T) -> tuple[list, bool, dict, int]:
    """``(names, single, evidence dict, T)``: the unrolled length covers targets, do and evidence."""
    if T is not None:
        T = check_int(T, "T (the sequence length)", low=1, error=EvidenceError)
    params = hmm.checked_params()
    names, single = _targets(targets)
    if evidence is None:
        evidence = {}
    if isinstance(evidence, Mapping):
        for k in evidence:
            if _parse_name(k)[0] != "X":
                raise EvidenceError(f"hidden states are latent: evidence on {k!r} is not allowed (use do=)")
        ev = dict(evidence)
    else:                           # a whole sequence: a step set by do is no longer observed
        ev = _sequence_evidence(hmm, params, evidence)
    if do is not None and not isinstance(do, Mapping):
        raise ModelError(f"do must be a mapping node -> value, got {type(do).__name__}")
    if not isinstance(evidence, Mapping):
        ev = {k: v for k, v in ev.items() if k not in (do or {})}
    steps = [_parse_name(k)[1] + 1 for k in [*names, *ev, *(do or {})]]
    horizon = max([T or 0, *steps])
    if horizon == 0:
        raise EvidenceError("give T= or some evidence to fix the sequence length")
    return names, single, ev, horizon


# -- do-queries and counterfactuals ------------------------------------------------------------


def query(hmm, targets, *, evidence=None, do=None, T=None):
    """Posterior of ``Z[t]`` / ``X[t]`` targets given observations, under ``do``.

    Parameters
    ----------
    hmm : HMM
    targets : str or list of str
        ``"Z[t]"`` or ``"X[t]"``.
    evidence : array or dict, optional
        A whole observed sequence ``(T,)`` / ``(T, d)``, a batch ``(n, T[, d])``,
        or ``{"X[t]": value}`` for some steps (scalars or ``(n,)`` arrays).
    do : dict, optional
        ``{"Z[t]": k}`` cuts the transition into ``Z[t]`` and clamps it (a
        per-row array of states is allowed); ``{"X[t]": v}`` sets an
        observation (it then tells nothing about the hidden states).
    T : int, optional
        Sequence length when the evidence does not fix it.

    Returns
    -------
    distribution, or dict name -> distribution for a list of targets
        ``DiscreteDistribution`` for ``Z[t]`` and categorical ``X[t]``;
        ``GaussianMixture`` for a Gaussian ``X[t]``. ``.log_evidence`` holds
        ``log p(observations)`` under the intervention; ``.method`` names the
        engine (``"exact (HMM chain forward-backward)"``); ``.query`` the question.

    Raises
    ------
    EvidenceError, ModelError, ShapeError
        From the request (unknown nodes, states outside the alphabet, a
        target also observed, ...), checked once before any engine runs.
    """
    names, single, ev, horizon = _request_parts(hmm, targets, evidence, do, T)
    model = unrolled(hmm, horizon)
    out = {nm: run_query(model, nm, evidence=ev, do=do, method="exact") for nm in names}
    return out[names[0]] if single else out


def counterfactual(hmm, targets, *, evidence, do):
    """``P(targets in the world do(Z[t]=k, ...) | observations)`` by an exact twin chain.

    Parameters
    ----------
    hmm : HMM
    targets : str or list of str
        ``"Z[t]"`` / ``"X[t]"`` in the counterfactual world.
    evidence : array or dict
        Factual observations, as in :func:`query`.
    do : dict
        ``{"Z[t]": k}`` (one or more steps; states or per-row arrays).

    Returns
    -------
    distribution, or dict name -> distribution
        ``DiscreteDistribution`` for ``Z[t]`` and categorical ``X[t]``; for a
        Gaussian ``X[t]`` observed in the factual world, an
        ``EmpiricalDistribution`` over the ``K²`` exact atoms
        ``mu_b + L_b L_a^{-1}(x - mu_a)``; unobserved, a ``GaussianMixture``.
        ``.scm`` names the SCM; ``.query`` the question (``P(X[4]_{Z[2]=0} | X[0]=1, ...)``).
    """
    if not do or not any(_parse_name(k)[0] == "Z" for k in do):
        raise EvidenceError("a counterfactual needs do={'Z[t]': k} on some hidden state")
    names, single, ev, horizon = _request_parts(hmm, targets, evidence, do, None)
    model = unrolled(hmm, horizon)
    out = {nm: run_counterfactual(model, nm, evidence=ev, do=do, method="exact") for nm in names}
    return out[names[0]] if single else out
