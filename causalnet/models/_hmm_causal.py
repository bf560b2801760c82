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
from scipy import linalg

from ..distributions import DiscreteDistribution, EmpiricalDistribution, GaussianMixture
from ..errors import EvidenceError, ModelError, ShapeError
from ..graph.dag import DAG
from ..inference import chain as _chain
from ..inference.counterfactual import SCM_DISCRETE
from ..mechanisms.base import REAL, TENSOR, Mechanism, Spec
from ..mechanisms.tabular import CPT, Categorical

__all__ = ["to_model", "folded_dag", "query", "counterfactual", "GaussianEmission"]

_NAME = re.compile(r"^([ZX])\[(\d+)\]$")
SCM_GAUSS_EMISSION = "Gaussian emission x = mu_z + L_z eps (eps shared between worlds)"


# -- unrolling ----------------------------------------------------------------------


class GaussianEmission(Mechanism):
    """``X = mu[z] + L[z] eps``, ``eps ~ N(0, I)``: a Gaussian observation of a discrete parent.

    Parameters
    ----------
    parent : node name (discrete, K states)
    means : array of shape (K, d)
    covars : array of shape (K, d) (diagonal) or (K, d, d) (full)
    """

    kind = REAL
    can_abduct = True

    def __init__(self, parent, means, covars) -> None:
        super().__init__([parent])
        self.means = np.asarray(means, dtype=np.float64)
        cv = np.asarray(covars, dtype=np.float64)
        K, d = self.means.shape
        if cv.shape == (K, d):
            cv = np.stack([np.diag(c) for c in cv])
        if cv.shape != (K, d, d):
            raise ShapeError(f"GaussianEmission: covars of shape {cv.shape}; expected ({K}, {d}) or ({K}, {d}, {d})")
        self.covars = cv
        self.chol = np.stack([linalg.cholesky(c, lower=True) for c in cv])     # (K, d, d)

    def spec(self, node, parent_specs) -> Spec:
        ps = parent_specs[self.parents[0]]
        if ps.kind != "discrete" or ps.card != len(self.means):
            raise ModelError(f"GaussianEmission {node!r}: parent needs {len(self.means)} discrete states, "
                             f"got {ps.describe()}")
        d = self.means.shape[1]
        return Spec(TENSOR, shape=(d,)) if d > 1 else Spec(REAL)

    def _d(self):
        return self.means.shape[1]

    def sample_noise(self, n, rng, spec):
        return rng.standard_normal((n, self._d()))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        z = np.asarray(parents[self.parents[0]])
        eps = np.zeros((len(z), self._d())) if noise is None else np.asarray(noise).reshape(len(z), -1)
        x = self.means[z] + np.einsum("nij,nj->ni", self.chol[z], eps)
        return x if spec.shape else x[:, 0]

    def abduct(self, node, value, parents, spec):
        z = np.asarray(parents[self.parents[0]])
        x = np.asarray(value, dtype=np.float64).reshape(len(z), -1)
        out = np.empty_like(x)
        for k in np.unique(z):
            rows = z == k
            out[rows] = linalg.solve_triangular(self.chol[k], (x[rows] - self.means[k]).T, lower=True).T
        return out

    def log_prob(self, node, value, parents, spec):
        eps = self.abduct(node, value, parents, spec)
        z = np.asarray(parents[self.parents[0]])
        logdet = np.log(np.abs(np.diagonal(self.chol, axis1=1, axis2=2))).sum(axis=1)   # (K,)
        d = self._d()
        return -0.5 * np.sum(eps ** 2, axis=1) - logdet[z] - 0.5 * d * np.log(2 * np.pi)


def to_model(hmm, T: int):
    """The HMM unrolled over `T` steps as a CausalModel: ``Z[t]`` (latent) and ``X[t]``."""
    if not isinstance(T, (int, np.integer)) or T < 1:
        raise ModelError(f"T must be a positive integer, got {T!r}")
    _check_fitted(hmm)
    K = hmm.n_states
    zstates = list(range(K))
    mechs = {"Z[0]": Categorical(hmm.startprob_, states=zstates)}
    for t in range(1, T):
        mechs[f"Z[{t}]"] = CPT([f"Z[{t - 1}]"], hmm.transmat_, states=zstates)
    for t in range(T):
        if hmm.emission == "categorical":
            S = hmm.emissionprob_.shape[1]
            mechs[f"X[{t}]"] = CPT([f"Z[{t}]"], hmm.emissionprob_, states=list(range(S)))
        else:
            mechs[f"X[{t}]"] = GaussianEmission(f"Z[{t}]", hmm.means_, hmm.covars_)
    order = [f"{v}[{t}]" for t in range(T) for v in ("Z", "X")]
    from ..model import CausalModel

    return CausalModel({k: mechs[k] for k in order}, latent=[f"Z[{t}]" for t in range(T)])


def folded_dag() -> tuple[DAG, dict]:
    """The folded (plate) drawing: ``Z[t-1] -> Z[t] -> X[t]``, with a plate over t.

    Returns the DAG and ``to_dot`` options (the plate as a cluster).
    """
    g = DAG([("Z[t-1]", "Z[t]"), ("Z[t]", "X[t]")], latent=["Z[t-1]", "Z[t]"])
    return g, {"clusters": {"t = 1..T": ["Z[t]", "X[t]"]}, "observed": {"X[t]"}, "rankdir": "LR"}


def _check_fitted(hmm) -> None:
    needed = ["startprob_", "transmat_"] + (["emissionprob_"] if hmm.emission == "categorical" else
                                             ["means_", "covars_"])
    missing = [a for a in needed if getattr(hmm, a, None) is None]
    if missing:
        raise ModelError(f"the HMM has no {missing} yet: fit it or give the parameters")


# -- parsing requests ------------------------------------------------------------------


def _parse_name(name, T=None) -> tuple[str, int]:
    m = _NAME.match(name) if isinstance(name, str) else None
    if not m:
        raise EvidenceError(f"HMM nodes are named 'Z[t]' and 'X[t]', got {name!r}")
    t = int(m.group(2))
    if T is not None and t >= T:
        raise EvidenceError(f"{name!r} is beyond the sequence (T = {T}, steps 0..{T - 1})")
    return m.group(1), t


def _observations(hmm, evidence, T):
    """-> (obs (n, T[, d]), observed (n, T) bool, batched, T)."""
    cat = hmm.emission == "categorical"
    d = None if cat else hmm.means_.shape[1]
    if evidence is None:
        evidence = {}
    if isinstance(evidence, Mapping):
        items = {}
        for k, v in evidence.items():
            kind, t = _parse_name(k)
            if kind != "X":
                raise EvidenceError(f"hidden states are latent: evidence on {k!r} is not allowed (use do=)")
            items[t] = np.asarray(v)
        tmax = max(items, default=-1) + 1
        T = max(T or 0, tmax)
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
        a = np.asarray(evidence)
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
        obs = np.zeros((a.shape[0], T, *a.shape[2:]), dtype=np.int64 if cat else np.float64)
        obs[:, :Te] = a
        observed = np.zeros(obs.shape[:2], dtype=bool)
        observed[:, :Te] = True
    if cat:
        S = hmm.emissionprob_.shape[1]
        if obs.size and (obs.min() < 0 or obs.max() >= S):
            bad = np.argwhere((obs < 0) | (obs >= S))[0]
            raise EvidenceError(f"observation X[{bad[1]}] = {obs[tuple(bad)]} (row {bad[0]}) is outside the "
                                f"alphabet 0..{S - 1}")
    elif obs.shape[-1] != d:
        raise ShapeError(f"observations have width {obs.shape[-1]}, the HMM emits {d}")
    return obs, observed, batched, T


def _clamps(hmm, do, T, n, *, allow_x=True):
    """-> (z_clamps {t: (n,) states}, x_do {t: value})."""
    K = hmm.n_states
    z, x = {}, {}
    for k, v in (do or {}).items():
        kind, t = _parse_name(k, T)
        if kind == "Z":
            a = np.asarray(v)
            if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != n):
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
    _check_fitted(hmm)
    names, single = _targets(targets)
    obs, observed, batched, T = _observations(hmm, evidence, _horizon(names, do, T))
    for nm in names:
        _parse_name(nm, T)
    n = obs.shape[0]
    zc, xd = _clamps(hmm, do, T, n)
    for t in xd:
        observed[:, t] = False
    K = hmm.n_states
    with np.errstate(divide="ignore"):
        log_a = np.log(hmm.transmat_)
        log_pi = np.log(hmm.startprob_)
    logE = hmm._log_emission(obs)                                  # (n, T, K)
    unary = np.where(observed[..., None], logE, 0.0)
    if 0 not in zc:
        unary[:, 0] += log_pi
    pairwise = np.broadcast_to(log_a, (n, max(T - 1, 0), K, K)).copy() if T > 1 else np.zeros((n, 0, K, K))
    for t, k in zc.items():
        with np.errstate(divide="ignore"):
            unary[:, t] += np.log(np.eye(K)[k])
        if t > 0:
            pairwise[:, t - 1] = 0.0
    post = _chain.forward_backward(unary, pairwise)
    marg = post.marginals                                          # (n, T, K)
    out = {}
    for nm in names:
        kind, t = _parse_name(nm, T)
        if kind == "Z":
            res = DiscreteDistribution([nm], marg[:, t] if batched else marg[0, t], [tuple(range(K))],
                                       batched=batched, method="exact (chain forward-backward)",
                                       log_evidence=post.log_z if batched else float(post.log_z[0]))
        elif t in xd:
            res = _point(hmm, nm, xd[t], n, batched)
        elif observed[:, t].any():
            raise EvidenceError(f"{nm!r} is both a target and observed")
        elif hmm.emission == "categorical":
            p = marg[:, t] @ hmm.emissionprob_                      # (n, S)
            S = p.shape[1]
            res = DiscreteDistribution([nm], p if batched else p[0], [tuple(range(S))], batched=batched,
                                       method="exact (chain forward-backward)")
        else:
            res = GaussianMixture([nm], marg[:, t] if batched else marg[0, t], hmm.means_, _full_covs(hmm),
                                  batched=batched, method="exact (chain forward-backward)")
        out[nm] = res
    return out[names[0]] if single else out


def _full_covs(hmm):
    cv = np.asarray(hmm.covars_)
    return np.stack([np.diag(c) for c in cv]) if cv.ndim == 2 else cv


def _point(hmm, name, v, n, batched):
    if hmm.emission == "categorical":
        S = hmm.emissionprob_.shape[1]
        v = np.broadcast_to(np.asarray(v), (n,))
        p = np.eye(S)[v]
        return DiscreteDistribution([name], p if batched else p[0], [tuple(range(S))], batched=batched,
                                    method="exact (set by do)")
    d = hmm.means_.shape[1]
    atoms = np.broadcast_to(np.asarray(v, dtype=np.float64), (n, d))
    return EmpiricalDistribution([name], {name: atoms[:, None] if batched else atoms[:1]},
                                 np.ones((n, 1)) if batched else np.ones(1), batched=batched, method="exact (set by do)")


# -- counterfactuals -------------------------------------------------------------------------


def _overlap(P: np.ndarray) -> np.ndarray:
    """``O[a, b, i, j]`` = length of [F(i-1|a), F(i|a)) ∩ [F(j-1|b), F(j|b)) for a row-stochastic P (K, S)."""
    hi = np.cumsum(P, axis=1)
    hi[:, -1] = 1.0
    lo = hi - P
    lo[:, 0] = 0.0
    top = np.minimum(hi[:, None, :, None], hi[None, :, None, :])        # (K, K, S, S)
    bot = np.maximum(lo[:, None, :, None], lo[None, :, None, :])
    return np.clip(top - bot, 0.0, None)


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
    _check_fitted(hmm)
    names, single = _targets(targets)
    obs, observed, batched, T = _observations(hmm, evidence, _horizon(names, do, None))
    n = obs.shape[0]
    zc, xd = _clamps(hmm, do, T, n, allow_x=False)
    if not zc:
        raise EvidenceError("a counterfactual needs do={'Z[t]': k} on some hidden state")
    K = hmm.n_states
    KK = K * K
    A = np.asarray(hmm.transmat_)
    pair_T = _overlap(A).reshape(KK, KK)          # pair (a, b) -> (a', b'), index a*K + b
    logE = hmm._log_emission(obs)                                       # (n, T, K)
    fact = np.where(observed[..., None], logE, 0.0)                     # factual emissions only
    unary = np.broadcast_to(fact[..., :, None], (n, T, K, K)).reshape(n, T, KK).copy()
    # start: the same u gives the same state in both worlds, unless Z[0] is set
    with np.errstate(divide="ignore"):
        if 0 in zc:
            start = hmm.startprob_[None, :, None] * np.eye(K)[zc[0]][:, None, :]      # (n, K, K)
        else:
            start = np.broadcast_to(np.diag(hmm.startprob_), (n, K, K))
        unary[:, 0] += np.log(start.reshape(n, KK))
    with np.errstate(divide="ignore"):
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
    post = _chain.forward_backward(unary, pairwise)
    marg = post.marginals.reshape(n, T, K, K)                           # (n, T, a, b)
    out = {}
    method = f"exact (twin chain over {K}x{K} joint states)"
    if hmm.emission == "categorical":
        B = np.asarray(hmm.emissionprob_)
        emit_overlap = _overlap(B)                                       # (a, b, x, x*), once for all targets
    else:
        mu, covs = np.asarray(hmm.means_), _full_covs(hmm)
        L = np.stack([linalg.cholesky(c, lower=True) for c in covs])
    for nm in names:
        kind, t = _parse_name(nm, T)
        if kind == "Z":
            p = marg[:, t].sum(axis=1)                                     # (n, K) cf state b
            out[nm] = DiscreteDistribution([nm + "*"], p if batched else p[0], [tuple(range(K))], batched=batched,
                                           method=method, scm=SCM_DISCRETE)
        elif hmm.emission == "categorical":
            S = B.shape[1]
            if observed[:, t].any():
                x = obs[:, t]
                cond = emit_overlap[:, :, x, :]                            # (a, b, n, S)
                denom = B[:, x]                                            # (a, n)
                with np.errstate(invalid="ignore", divide="ignore"):
                    cond = np.where(denom[:, None, :, None] > 0, cond / denom[:, None, :, None], 0.0)
                p = np.einsum("nab,abns->ns", marg[:, t], cond)
            else:
                p = marg[:, t].sum(axis=1) @ B
            out[nm] = DiscreteDistribution([nm + "*"], p if batched else p[0], [tuple(range(S))], batched=batched,
                                           method=method, scm=SCM_DISCRETE)
        else:
            w = marg[:, t]                                                 # (n, a, b)
            if observed[:, t].any():
                x = obs[:, t]                                               # (n, d)
                eps = np.stack([linalg.solve_triangular(L[a], (x - mu[a]).T, lower=True).T for a in range(K)],
                               axis=1)                                      # (n, a, d)
                atoms = mu[None, None, :, :] + np.einsum("bij,naj->nabi", L, eps)   # (n, a, b, d)
                d = mu.shape[1]
                samples = atoms.reshape(n, KK, d)
                weights = w.reshape(n, KK)
                out[nm] = EmpiricalDistribution([nm + "*"], {nm + "*": samples if batched else samples[0]},
                                                weights if batched else weights[0], batched=batched, method=method,
                                                scm=SCM_DISCRETE + "; " + SCM_GAUSS_EMISSION)
            else:
                out[nm] = GaussianMixture([nm + "*"], w.sum(axis=1) if batched else w[0].sum(axis=0), mu, covs,
                                          batched=batched, method=method, scm=SCM_DISCRETE)
    return out[names[0]] if single else out
