"""HMMs as causal models: unrolling, do-queries and exact counterfactuals on the chain engine.

An HMM unrolled over ``T`` steps is the causal DAG ``Z[t-1] -> Z[t] -> X[t]``
with ``Z`` latent. Every mechanism is the inverse-CDF SCM of its row (the same
SCM the generic discrete engine uses), so:

* ``do(Z[t] = k)`` cuts the transition into ``Z[t]`` and clamps it: on the
  chain that is a one-hot unary at ``t`` and a constant pairwise potential into
  ``t``; forward-backward then answers every ``Z`` and ``X`` query at once.
* A counterfactual "given the observed sequence, what would ``X[t']`` have
  been had ``Z[t]`` been k" shares every node's exogenous ``u`` between the
  factual and the counterfactual chain. The pair ``(Z[t], Z*[t])`` is itself a
  Markov chain over ``K²`` states whose transition probability is the length
  of the overlap of the two CDF intervals the shared ``u`` must fall in, and
  whose unary is the factual emission likelihood. Forward-backward on that
  twin chain is exact; the counterfactual emission shares its ``u`` with the
  observed one the same way (interval overlaps for symbols; the same
  standardised residual for Gaussian emissions).

Symbols: ``n`` sequences, ``T`` steps, ``K`` states, ``S`` symbols, ``d`` width.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from ... import limits
from ...distributions import DiscreteDistribution
from ...errors import EvidenceError, ModelError, ShapeError
from ...graph.dag import DAG
from ...inference.chain import forward_backward
from ...inference.counterfactual import SCM_DISCRETE
from ...mechanisms.tabular import CPT, Categorical
from ...model import CausalModel
from .mechanism import GaussianEmissionMechanism, cdf_overlap

__all__ = ["to_model", "folded_dag", "query", "counterfactual", "GaussianEmissionMechanism"]

_NAME = re.compile(r"^([ZX])\[(\d+)\]$")


# -- unrolling ----------------------------------------------------------------------


def to_model(hmm, T: int):
    """The HMM unrolled over `T` steps as a CausalModel: ``Z[t]`` (latent) and ``X[t]``."""
    if not isinstance(T, (int, np.integer)) or T < 1:
        raise ModelError(f"T must be a positive integer, got {T!r}")
    params = hmm.checked_params()
    em = hmm.emission_model
    K = hmm.n_states
    zstates = list(range(K))
    mechs = {"Z[0]": Categorical(params["startprob_"], states=zstates)}
    for t in range(1, T):
        mechs[f"Z[{t}]"] = CPT([f"Z[{t - 1}]"], params["transmat_"], states=zstates)
    for t in range(T):
        mechs[f"X[{t}]"] = em.mechanism(f"Z[{t}]", params)
    order = [f"{v}[{t}]" for t in range(T) for v in ("Z", "X")]
    return CausalModel({k: mechs[k] for k in order}, latent=[f"Z[{t}]" for t in range(T)])


def folded_dag() -> tuple[DAG, dict]:
    """The folded (plate) drawing: ``Z[t-1] -> Z[t] -> X[t]``, with a plate over t.

    Returns the DAG and ``to_dot`` options (the plate as a cluster).
    """
    g = DAG([("Z[t-1]", "Z[t]"), ("Z[t]", "X[t]")], latent=["Z[t-1]", "Z[t]"])
    return g, {"clusters": {"t = 1..T": ["Z[t]", "X[t]"]}, "observed": {"X[t]"}, "rankdir": "LR"}


# -- parsing requests ------------------------------------------------------------------


def _parse_name(name, T=None) -> tuple[str, int]:
    m = _NAME.match(name) if isinstance(name, str) else None
    if not m:
        raise EvidenceError(f"HMM nodes are named 'Z[t]' and 'X[t]', got {name!r}")
    t = int(m.group(2))
    if T is not None and t >= T:
        raise EvidenceError(f"{name!r} is beyond the sequence (T = {T}, steps 0..{T - 1})")
    return m.group(1), t


def _observations(hmm, params, evidence, T):
    """-> (obs (n, T[, d]), observed (n, T) bool, batched, T)."""
    em = hmm.emission_model
    width = em.evidence_width(params)
    cat = not width
    d = width[0] if width else None
    if evidence is None:
        evidence = {}
    if isinstance(evidence, Mapping):
        items = {}
        for k, v in evidence.items():
            kind, t = _parse_name(k)
            if kind != "X":
                raise EvidenceError(f"hidden states are latent: evidence on {k!r} is not allowed (use do=)")
            items[t] = _evidence_array(k, v, cat)
        tmax = max(items, default=-1) + 1
        T = max(T or 0, tmax)
        _check_chain_size(1, T, hmm.n_states, "the HMM query chain", f"{hmm.n_states} states")
        if T == 0:
            raise EvidenceError("give T= or some evidence to fix the sequence length")
        rows = {a.shape[0] for a in items.values() if a.ndim == (1 if cat else 2)}
        if len(rows) > 1:
            raise ShapeError(f"evidence arrays have different lengths {sorted(rows)}")
        n = rows.pop() if rows else 1
        batched = bool(rows) or any(a.ndim == (1 if cat else 2) for a in items.values())
        obs = np.zeros((n, T) if cat else (n, T, d), dtype=np.int64 if cat else np.float64)
        observed = np.zeros((n, T), dtype=bool)
        for t, a in items.items():
            obs[:, t] = a if cat else np.broadcast_to(a.reshape(-1, d) if a.ndim else a, (n, d))
            observed[:, t] = True
    else:
        a = _evidence_array("evidence", evidence, cat)
        want = 1 if cat else 2
        if a.ndim == want:
            a = a[None]
            batched = False
        elif a.ndim == want + 1:
            batched = True
        else:
            raise ShapeError(f"observations must be (T{'' if cat else ', d'}) or (n, T{'' if cat else ', d'}), "
                             f"got {a.shape}")
        Te = a.shape[1]
        if Te == 0:
            raise EvidenceError("empty observation sequence")
        T = max(T or 0, Te)
        _check_chain_size(a.shape[0], T, hmm.n_states, "the HMM query chain", f"{hmm.n_states} states")
        obs = np.zeros((a.shape[0], T, *a.shape[2:]), dtype=np.int64 if cat else np.float64)
        obs[:, :Te] = a
        observed = np.zeros(obs.shape[:2], dtype=bool)
        observed[:, :Te] = True
    em.check_evidence(obs, params)
    return obs, observed, batched, T


def _evidence_array(name, v, integer):
    """``v`` as an array of symbols (``integer``) or reals; EvidenceError for ragged, non-numeric or
    non-integer symbols."""
    try:
        a = np.asarray(v)
    except (TypeError, ValueError) as e:
        raise EvidenceError(f"{name}: expected a rectangular array; got a ragged sequence ({e})") from None
    if a.dtype == bool or np.iscomplexobj(a) or not np.issubdtype(a.dtype, np.number):
        raise EvidenceError(f"{name}: expected {'integer symbols' if integer else 'real numbers'}; got dtype {a.dtype}")
    if not np.isfinite(a).all():
        raise EvidenceError(f"{name}: observations must be finite; got {v!r}")
    if integer and not np.issubdtype(a.dtype, np.integer):
        if not (a == np.round(a)).all() or (a.size and np.abs(a).max() >= 2**62):
            raise EvidenceError(f"{name}: expected integer symbols; got {v!r}")
        a = a.astype(np.int64)
    return a


def _clamps(hmm, do, T, n, *, allow_x=True):
    """-> (z_clamps {t: (n,) states}, x_do {t: value})."""
    K = hmm.n_states
    z, x = {}, {}
    for k, v in (do or {}).items():
        kind, t = _parse_name(k, T)
        if kind == "Z":
            a = _evidence_array(f"do on {k!r}", v, True)
            if a.size == 0 or a.ndim > 1 or (a.ndim == 1 and a.shape[0] != n):
                raise ShapeError(f"do on {k!r}: expected a state or ({n},) states, got shape {a.shape}")
            if not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() >= K:
                raise EvidenceError(f"do on {k!r}: states are 0..{K - 1}, got {v!r}")
            z[t] = np.broadcast_to(a, (n,)).astype(np.int64)
        elif allow_x:
            x[t] = v
    return z, x


def _horizon(names, do, T):
    """The smallest T covering the targets and interventions (and `T` if given)."""
    ts = [_parse_name(nm)[1] for nm in list(names) + list(do or {})]
    return max([T or 0] + [t + 1 for t in ts])


def _targets(targets):
    single = isinstance(targets, str)
    if not single and not isinstance(targets, (list, tuple, set, frozenset)):
        raise EvidenceError(f"targets must be a node name 'Z[t]' / 'X[t]' or a list of them; got {targets!r}")
    names = [targets] if single else list(targets)
    if not names:
        raise EvidenceError("give at least one target")
    return names, single


# -- do-queries ------------------------------------------------------------------------


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
        ``log p(observations)`` under the intervention.
    """
    params = hmm.checked_params()
    names, single = _targets(targets)
    obs, observed, batched, T = _observations(hmm, params, evidence, _horizon(names, do, T))
    for nm in names:
        _parse_name(nm, T)
    n = obs.shape[0]
    _check_chain_size(n, T, hmm.n_states, "the HMM query chain", f"{hmm.n_states} states")
    zc, xd = _clamps(hmm, do, T, n)
    for t in xd:
        observed[:, t] = False
    K = hmm.n_states
    em = hmm.emission_model
    with np.errstate(divide="ignore"):
        log_a = np.log(params["transmat_"])
        log_pi = np.log(params["startprob_"])
    logE = em.log_likelihood(params, obs)                          # (n, T, K)
    unary = np.where(observed[..., None], logE, 0.0)
    if 0 not in zc:
        unary[:, 0] += log_pi
    pairwise = np.broadcast_to(log_a, (n, max(T - 1, 0), K, K)).copy() if T > 1 else np.zeros((n, 0, K, K))
    for t, k in zc.items():
        with np.errstate(divide="ignore"):
            unary[:, t] += np.log(np.eye(K)[k])
        if t > 0:
            pairwise[:, t - 1] = 0.0
    post = forward_backward(unary, pairwise)
    marg = post.marginals                                          # (n, T, K)
    out = {}
    for nm in names:
        kind, t = _parse_name(nm, T)
        if kind == "Z":
            res = DiscreteDistribution([nm], marg[:, t] if batched else marg[0, t], [tuple(range(K))],
                                       batched=batched, method="exact (chain forward-backward)",
                                       log_evidence=post.log_z if batched else float(post.log_z[0]))
        elif t in xd:
            res = em.point(nm, params, xd[t], n, batched)
        elif observed[:, t].any():
            raise EvidenceError(f"{nm!r} is both a target and observed")
        else:
            res = em.predictive(nm, params, marg[:, t], batched, method="exact (chain forward-backward)")
        out[nm] = res
    return out[names[0]] if single else out


# -- counterfactuals -------------------------------------------------------------------------


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
        ``.scm`` names the SCM.
    """
    params = hmm.checked_params()
    names, single = _targets(targets)
    obs, observed, batched, T = _observations(hmm, params, evidence, _horizon(names, do, None))
    n = obs.shape[0]
    zc, xd = _clamps(hmm, do, T, n, allow_x=False)
    if not zc:
        raise EvidenceError("a counterfactual needs do={'Z[t]': k} on some hidden state")
    K = hmm.n_states
    _check_twin_size(n, T, K)
    unary, pairwise = _twin_chain(hmm, params, obs, observed, zc)
    post = forward_backward(unary, pairwise)
    marg = post.marginals.reshape(n, T, K, K)                           # (n, T, a, b)
    em = hmm.emission_model
    out = {}
    method = f"exact (twin chain over {K}x{K} joint states)"
    for nm in names:
        kind, t = _parse_name(nm, T)
        w = marg[:, t]                                                  # (n, a, b)
        if kind == "Z":
            p = w.sum(axis=1)                                           # (n, K) cf state b
            out[nm] = DiscreteDistribution([nm + "*"], p if batched else p[0], [tuple(range(K))], batched=batched,
                                           method=method, scm=SCM_DISCRETE)
        elif observed[:, t].any():
            out[nm] = em.counterfactual_observed(nm + "*", params, w, obs[:, t], batched, method)
        else:
            out[nm] = em.predictive(nm + "*", params, w.sum(axis=1), batched, method=method, scm=SCM_DISCRETE)
    return out[names[0]] if single else out


def _check_twin_size(n, T, K):
    """ResourceError (causalnet.limits) when the twin chain's potentials would be too large."""
    _check_chain_size(n, T, K * K, "the HMM counterfactual twin chain", f"{K}x{K} joint states")


def _check_chain_size(n, T, K, what, states):
    """ResourceError when a chain of ``n`` rows, ``T`` steps, ``K`` states needs more than max_table_bytes."""
    nbytes = 8.0 * n * (2 * T * K + max(T - 1, 0) * K * K)  # unary, marginals, per-step pairwise
    limits.check_bytes(nbytes, what=what, cause=f"{n} sequences x {T} steps over {states}, K^2 pairwise per step")


def _twin_chain(hmm, params, obs, observed, zc):
    """Unary ``(n, T, K*K)`` and pairwise ``(n, T-1, K*K, K*K)`` log-potentials of the twin chain."""
    n, T = observed.shape
    K = hmm.n_states
    KK = K * K
    A = np.asarray(params["transmat_"])
    pair_T = cdf_overlap(A).reshape(KK, KK)          # pair (a, b) -> (a', b'), index a*K + b
    logE = hmm.emission_model.log_likelihood(params, obs)               # (n, T, K)
    fact = np.where(observed[..., None], logE, 0.0)                     # factual emissions only
    unary = np.broadcast_to(fact[..., :, None], (n, T, K, K)).reshape(n, T, KK).copy()
    # start: the same u gives the same state in both worlds, unless Z[0] is set
    pi = params["startprob_"]
    with np.errstate(divide="ignore"):
        if 0 in zc:
            start = pi[None, :, None] * np.eye(K)[zc[0]][:, None, :]    # (n, K, K)
        else:
            start = np.broadcast_to(np.diag(pi), (n, K, K))
        unary[:, 0] += np.log(start.reshape(n, KK))
        log_pair = np.log(pair_T)
    pairwise = np.broadcast_to(log_pair, (n, max(T - 1, 0), KK, KK)).copy() if T > 1 else np.zeros((n, 0, KK, KK))
    for t, k in zc.items():
        if t == 0:
            continue
        # into a set step: factual follows A; the counterfactual is k whatever its past
        hit = np.arange(K)[None, None, None, None, :] == k[:, None, None, None, None]      # (n,1,1,1,K)
        clamp = np.broadcast_to(A[None, :, None, :, None] * hit, (n, K, K, K, K)).reshape(n, KK, KK)
        with np.errstate(divide="ignore"):
            pairwise[:, t - 1] = np.log(clamp)
    return unary, pairwise
