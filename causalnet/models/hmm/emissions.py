"""Emission kinds of an HMM: one class per kind behind one small interface.

An HMM is a chain whose unary potential at step ``t`` is the emission
log-likelihood ``log p(x_t | Z_t = k)``. Everything that depends on what ``x``
is — checking observations and parameters, the log-likelihood ``(n, T, K)``,
initialisation, the M-step from state posteriors, sampling, the parameter
count, the mechanism of ``X[t]`` in the unrolled causal model and the answers
about ``X[t]`` in queries — lives in an :class:`Emission` subclass, so the
estimator never asks which kind it holds.

Learned parameters stay on the estimator (hmmlearn's ``emissionprob_``,
``means_``, ``covars_``); emission methods take them as a dict ``params``
keyed by those attribute names and return new dicts (they never mutate).

Legend: ``n`` sequences, ``T`` steps, ``K`` states, ``S`` symbols, ``d`` width,
``N`` observations.

Examples
--------
>>> import numpy as np
>>> e = CategoricalEmission(n_symbols=3)
>>> p = e.check_params({"emissionprob_": [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]}, 2)
>>> np.exp(e.log_likelihood(p, np.array([[0, 2]])))        # (n, T, K)
array([[[0.5, 0. ],
        [0. , 0.5]]])
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg, sparse

from ... import limits
from ...distributions import DiscreteDistribution, EmpiricalDistribution, GaussianMixture
from ...errors import EvidenceError, ModelError, ShapeError
from ...inference.counterfactual import SCM_DISCRETE
from ...mechanisms.tabular import CPT
from .covariance import COVARIANCES
from .mechanism import SCM_GAUSS_EMISSION, EmissionMechanism, GaussianEmissionMechanism, cdf_overlap
from .packing import gather

__all__ = ["Emission", "CategoricalEmission", "VectorEmission", "GaussianEmission", "check_simplex", "real_array",
           "normalize_rows", "kmeans", "SUM_TOL"]

SUM_TOL = 1e-8
_LOG_2PI = math.log(2.0 * math.pi)
_MAX_ABS = 1e100  # largest Gaussian observation accepted


def check_simplex(name, value, shape):
    """``value`` as a float array of ``shape`` whose last axis sums to 1; else ModelError/ShapeError."""
    p = _as_array(name, value)
    if np.iscomplexobj(p) or not (np.issubdtype(p.dtype, np.number) or p.dtype == bool):
        raise ModelError(f"{name} must hold real probabilities; got dtype {p.dtype}")
    p = p.astype(np.float64)
    if p.shape != shape:
        raise ShapeError(f"{name} must have shape {shape}; got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(p) | (p < 0))[0])
        raise ModelError(f"{name} must hold finite non-negative probabilities; got {p[where]} at {where}")
    s = p.sum(axis=-1)
    bad = np.abs(s - 1.0) > SUM_TOL
    if bad.any():
        if p.ndim == 1:
            raise ModelError(f"{name} must sum to 1 (tolerance {SUM_TOL:g}); it sums to {float(s)!r}")
        r = int(np.flatnonzero(bad)[0])
        raise ModelError(f"{name} row {r} sums to {float(s[r])!r}; each row must sum to 1 (tolerance {SUM_TOL:g})")
    return p


def _as_array(name, value, error=ModelError):
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nested sequences
        raise error(f"{name} must be a rectangular array; got a ragged sequence ({e})") from None


def real_array(name, value, error=ModelError):
    """``value`` as a float64 array; ``error`` (ModelError by default) for a ragged, sparse or non-real input.

    An object array of numbers is converted (as scikit-learn's ``check_array``).
    """
    if sparse.issparse(value):
        raise error(f"{name}: sparse input is not supported; pass a dense array (.toarray())")
    a = _as_array(name, value, error)
    if np.iscomplexobj(a):
        raise error(f"{name} must be a real array (Complex data not supported); got dtype {a.dtype}")
    if a.dtype == object:
        try:
            return a.astype(np.float64)
        except (TypeError, ValueError):
            raise error(f"{name} must be a real array; got an object array that is not all numbers") from None
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise error(f"{name} must be a real array; got dtype {a.dtype}")
    return a.astype(np.float64)


def normalize_rows(new, old):
    """Rows of ``new`` normalised; a row with no mass keeps ``old``'s values."""
    s = new.sum(axis=1, keepdims=True)
    empty = s[:, 0] == 0
    out = new / np.where(s == 0, 1.0, s)
    if empty.any():
        out[empty] = old[empty]
    return out


_HINT = "; real-valued observations need HMM(emission='gaussian'), counts emission='poisson'"

class Emission:
    """The interface every emission kind implements.

    Attributes
    ----------
    kind : str
        The ``emission=`` name of the kind.
    letters : str
        Letters of its parameters in ``params`` / ``init_params``.
    attrs : dict
        Letter -> estimator attribute (``"e"`` -> ``"emissionprob_"``).
    """

    kind = ""
    obs_ndim = 1  # dimensions of hmmlearn's concatenated X: (N,) symbols, (N, d) vectors
    letters = ""
    attrs: dict = {}

    def check_params(self, params, K, letters=None):
        """Validated copies of the parameters named by ``letters`` (default all) in ``params``."""
        raise NotImplementedError

    def check_observations(self, X, params):
        """``X`` as ``(N,)`` ints or ``(N, d)`` floats; EvidenceError/ShapeError naming the bad entry."""
        raise NotImplementedError

    def pad(self, X, pos, real, params):
        """Packed observations ``(T, n[, d])`` from ``X`` at ``pos``, padding filled with a valid value."""
        raise NotImplementedError

    def log_likelihood(self, params, X):
        """``log p(x | Z = k)`` for observations ``(..., )`` / ``(..., d)`` -> ``(..., K)``."""
        raise NotImplementedError

    def unaries(self, params, pk, startprob, scaled):
        """Chain unaries of packed data, the start folded into step 0.

        Returns ``(u_fn, scaled_u)``: ``u_fn()`` gives the log unaries
        ``(T, n, K)`` (``-inf`` on padding); ``scaled_u`` is ``(B, off)`` with
        ``B = exp(u - off)`` when ``scaled`` (else None). See
        :class:`causalnet.inference.chain.Chain`.
        """
        raise NotImplementedError

    def init(self, params, X, K, rng, letters):
        """Random initial parameters (those named by ``letters``) from observations ``X``."""
        raise NotImplementedError

    def statistics(self, Xp, G, letters, cache, params=None):
        """Sufficient statistics from packed observations and posteriors ``G`` ``(T*n, K)``.

        ``cache`` is a dict that lives as long as the packed data (one fit).
        """
        raise NotImplementedError

    def mstep(self, params, stats, letters):
        """New parameters (those named by ``letters``) from the statistics."""
        raise NotImplementedError

    def sample(self, params, Z, rng):
        """Observations for the hidden states ``Z`` ``(N,)``."""
        raise NotImplementedError

    def n_parameters(self, params, K):
        """Number of free emission parameters (for AIC / BIC)."""
        raise NotImplementedError

    def mechanism(self, parent, params):
        """The mechanism of ``X[t]`` given ``Z[t]`` in the unrolled causal model."""
        raise NotImplementedError


class CategoricalEmission(Emission):
    """``X[t] | Z[t] = k ~ Categorical(emissionprob_[k])`` over ``S`` symbols ``0..S-1``.

    Parameters
    ----------
    n_symbols : int, optional
        Alphabet size ``S``; None to take it from the parameters.
    prior : float or array_like, default 1.0
        Dirichlet concentration of the M-step (hmmlearn's ``emissionprob_prior``).
    """

    kind = "categorical"
    obs_ndim = 1
    letters = "e"
    attrs = {"e": "emissionprob_"}

    def __init__(self, n_symbols=None, prior=1.0):
        self.n_symbols = n_symbols
        self.prior = prior

    def symbols(self, params):
        """The alphabet size ``S``."""
        if self.n_symbols is not None:
            return self.n_symbols
        return np.shape(params["emissionprob_"])[1]

    def check_params(self, params, K, letters=None):
        if "e" not in (self.letters if letters is None else letters):
            return {}
        p = _as_array("emissionprob_", params["emissionprob_"])
        if p.ndim != 2 or p.shape[0] != K:
            raise ShapeError(f"emissionprob_ must have shape (n_states, n_symbols) = ({K}, S); got {p.shape}")
        if self.n_symbols is not None and p.shape[1] != self.n_symbols:
            raise ShapeError(
                f"emissionprob_ has {p.shape[1]} columns but n_symbols is {self.n_symbols}; "
                f"expected shape ({K}, {self.n_symbols})"
            )
        return {"emissionprob_": check_simplex("emissionprob_", p, p.shape)}

    def check_observations(self, X, params):
        X = _as_array("observations", X, EvidenceError)
        if X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        if X.ndim != 1:
            raise ShapeError(f"categorical observations must have shape (n_samples,) or (n_samples, 1); got {X.shape}{_HINT}")
        if X.dtype == bool:
            X = X.astype(np.intp)
        if not np.issubdtype(X.dtype, np.integer):
            if not np.issubdtype(X.dtype, np.floating):
                raise EvidenceError(f"categorical observations must be integers; got dtype {X.dtype}")
            nonint = ~(np.isfinite(X) & (X == np.round(X)))
            if nonint.any():
                i = int(np.flatnonzero(nonint)[0])
                raise EvidenceError(f"categorical observations must be integers; got {X[i]} at position {i}{_HINT}")
        S = self.symbols(params)
        out = (X < 0) | (X >= S)  # before the cast: a huge value would wrap around
        if out.any():
            i = int(np.flatnonzero(out)[0])
            raise EvidenceError(f"observation {X[i]} at position {i} is outside the alphabet 0..{S - 1} (n_symbols={S})")
        X = X.astype(np.intp, copy=False)
        return X

    def pad(self, X, pos, real, params):
        Xp = gather(pos, X) if real is None else X[pos]  # (T, n); a view for one sequence
        if real is not None:
            Xp[~real] = self.symbols(params)  # the padding symbol
        return Xp

    def log_likelihood(self, params, X):
        with np.errstate(divide="ignore"):
            logE = np.log(params["emissionprob_"]).T  # (S, K)
        return logE[np.asarray(X, dtype=np.intp)]

    def unaries(self, params, pk, startprob, scaled):
        E = np.asarray(params["emissionprob_"]).T  # (S, K)
        Xp = pk.X  # (T, n), padding = the symbol S
        S, K = E.shape

        def u_fn():
            with np.errstate(divide="ignore"):
                logE = np.full((S + 1, K), -np.inf)
                logE[:S] = np.log(E)
                u = np.take(logE, Xp, axis=0)  # (T, n, K)
                u[0] += np.log(startprob)
            return u

        if not scaled:
            return u_fn, None
        colmax = E.max(axis=1)  # (S,)
        safe = np.where(colmax > 0, colmax, 1.0)
        table = np.zeros((S + 1, K))
        table[:S] = E / safe[:, None]
        logmax = np.zeros(S + 1)
        logmax[:S] = np.log(safe)
        B = np.take(table, Xp, axis=0)  # (T, n, K), 0 on padding
        off = logmax[Xp]  # (T, n)
        b0 = B[0] * startprob  # (n, K)
        m0 = b0.max(axis=1)
        ok = m0 > 0
        b0[ok] /= m0[ok, None]
        B[0] = b0
        with np.errstate(divide="ignore"):
            off[0] += np.where(ok, np.log(np.where(ok, m0, 1.0)), 0.0)
        return u_fn, (B, off)

    def init(self, params, X, K, rng, letters):
        if "e" not in letters:
            return {}
        S = self.symbols(params)
        limits.check_bytes(8.0 * K * S * 3, what="the HMM emission table and its EM statistics",
                           cause=f"{K} states x {S} symbols")
        return {"emissionprob_": rng.dirichlet(np.ones(S), size=K)}

    def statistics(self, Xp, G, letters, cache, params=None):
        if "e" not in letters:
            return {}
        if "onehot" not in cache:  # the same data every EM iteration
            S = self.n_symbols
            Xf = Xp.reshape(-1)
            keep = np.flatnonzero(Xf < S)  # padding dropped
            cache["onehot"] = sparse.csr_matrix((np.ones(len(keep)), (Xf[keep], keep)), shape=(S, Xf.size))
        return {"obs": cache["onehot"] @ G}  # (S, K)

    def mstep(self, params, stats, letters):
        if "e" not in letters:
            return {}
        new = np.maximum(self.prior - 1.0 + stats["obs"].T, 0.0)
        return {"emissionprob_": normalize_rows(new, params["emissionprob_"])}

    def sample(self, params, Z, rng):
        cdf = np.cumsum(params["emissionprob_"], axis=1)[Z]  # (N, S)
        v = rng.random(len(Z))[:, None] * cdf[:, -1:]
        X = np.minimum((cdf <= v).sum(axis=1), cdf.shape[1] - 1)
        return X[:, None]

    def n_parameters(self, params, K):
        return K * (self.symbols(params) - 1)

    def mechanism(self, parent, params):
        S = self.symbols(params)
        return CPT([parent], params["emissionprob_"], states=list(range(S)))

    # -- answers about X[t] in causal queries --------------------------------

    def evidence_width(self, params):
        """Trailing shape of one observation: () for symbols."""
        return ()

    def check_evidence(self, obs, params):
        """Raise EvidenceError for a symbol outside the alphabet in ``obs`` ``(n, T)``."""
        S = self.symbols(params)
        if obs.size and (obs.min() < 0 or obs.max() >= S):
            bad = np.argwhere((obs < 0) | (obs >= S))[0]
            raise EvidenceError(
                f"observation X[{bad[1]}] = {obs[tuple(bad)]} (row {bad[0]}) is outside the alphabet 0..{S - 1}"
            )

    def predictive(self, name, params, w, batched, **kw):
        """Distribution of an unobserved ``X[t]`` given state probabilities ``w`` ``(n, K)``."""
        p = w @ params["emissionprob_"]  # (n, S)
        return DiscreteDistribution([name], p if batched else p[0], [tuple(range(p.shape[1]))], batched=batched, **kw)

    def point(self, name, params, v, n, batched):
        """The point mass of ``X[t]`` set by ``do``."""
        S = self.symbols(params)
        p = np.eye(S)[np.broadcast_to(np.asarray(v), (n,))]
        return DiscreteDistribution([name], p if batched else p[0], [tuple(range(S))], batched=batched,
                                    method="exact (set by do)")

    def counterfactual_observed(self, name, params, w, x, batched, method):
        """``X*[t]`` given the factual ``x`` ``(n,)`` and joint state weights ``w`` ``(n, K, K)``."""
        B = np.asarray(params["emissionprob_"])
        cond = cdf_overlap(B)[:, :, x, :]  # (a, b, n, S)
        denom = B[:, x]  # (a, n)
        with np.errstate(invalid="ignore", divide="ignore"):
            cond = np.where(denom[:, None, :, None] > 0, cond / denom[:, None, :, None], 0.0)
        p = np.einsum("nab,abns->ns", w, cond)
        return DiscreteDistribution([name], p if batched else p[0], [tuple(range(B.shape[1]))], batched=batched,
                                    method=method, scm=SCM_DISCRETE)


class VectorEmission(Emission):
    """Shared plumbing of emissions over ``(N, d)`` vectors with a dense log-likelihood.

    A subclass gives :meth:`logpdf` ``(N, d) -> (N, K)`` and :meth:`width`;
    padding, the chain unaries and the batch-first log-likelihood come from here.
    """

    obs_ndim = 2
    n_features = None  # the width ``d`` fixed by the estimator, if any

    def width(self, params):
        """The observation width ``d`` from the parameters (None if unknown)."""
        raise NotImplementedError

    def logpdf(self, params, X):
        """(N, d) -> (N, K) emission log-likelihoods."""
        raise NotImplementedError

    def check_width(self, d, what):
        """ShapeError when ``d`` disagrees with the estimator's ``n_features``."""
        if self.n_features is not None and d is not None and d != self.n_features:
            raise ShapeError(f"{what} has width d={d} but n_features is {self.n_features}")

    def _real_observations(self, X, params, kind):
        X = real_array("observations", X, EvidenceError)
        one_d = X.ndim == 1
        if one_d:
            X = X[:, None]
        if X.ndim != 2:
            raise ShapeError(f"{kind} observations must have shape (n_samples, d); got {X.shape}")
        if X.shape[1] == 0:
            raise ShapeError(f"{kind} observations have 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                             f"required.")
        d = self.width(params)
        d = self.n_features if d is None else d
        if d is not None and X.shape[1] != d:
            hint = f"; Reshape your data to (n_samples, {d}) " if one_d else ""
            raise ShapeError(f"X has {X.shape[1]} features, but HMM is expecting {d} features as input: "
                             f"observations of width {X.shape[1]} but the model has d={d}{hint}")
        if not np.isfinite(X).all():
            i = int(np.argwhere(~np.isfinite(X))[0, 0])
            raise EvidenceError(f"{kind} observations must be finite (no NaN or inf); row {i} is {X[i].tolist()}")
        return X

    def pad(self, X, pos, real, params):
        Xp = gather(pos, X) if real is None else X[pos]  # (T, n, d); a view for one sequence
        if real is not None:
            Xp[~real] = 0.0
        return Xp

    def log_likelihood(self, params, X):
        Xp = np.asarray(X, dtype=np.float64)
        flat = Xp.reshape(-1, Xp.shape[-1])
        out = self.logpdf(params, flat)
        return out.reshape(Xp.shape[:-1] + (out.shape[1],))

    def unaries(self, params, pk, startprob, scaled):
        u0 = gather(pk.pos, self.logpdf(params, pk.Xflat))  # (T, n, K)
        if pk.real is not None:
            u0[~pk.real] = -np.inf
        with np.errstate(divide="ignore"):
            u0[0] += np.log(startprob)

        def u_fn():
            return u0

        if not scaled:
            return u_fn, None
        off = u0.max(axis=-1)  # (T, n)
        off[~np.isfinite(off)] = 0.0
        return u_fn, (np.exp(u0 - off[..., None]), off)

    def evidence_width(self, params):
        return (self.width(params),)

    def unsupported(self, feature):
        """ModelError: this emission kind has no ``feature`` (a causal-side answer)."""
        raise ModelError(f"{feature} is not available for {self.kind} emissions (supported: categorical, gaussian)")

    def noise_width(self, params):
        """Uniforms per observation that :meth:`from_noise` turns into one draw."""
        raise NotImplementedError

    def from_noise(self, params, Z, u):
        """Observations ``(N, d)`` drawn by inverse CDF from uniforms ``u`` ``(N, noise_width)`` given states ``Z``."""
        raise NotImplementedError

    def mechanism(self, parent, params):
        """The unrolled node ``X[t]``: an :class:`EmissionMechanism` over this kind's inverse-CDF draw."""
        return EmissionMechanism(parent, self, params, len(params["startprob_"]))

    def predictive(self, name, params, w, batched, **kw):
        self.unsupported(f"the distribution of an unobserved {name!r}")

    def point(self, name, params, v, n, batched):
        self.unsupported(f"do() on {name!r}")

    def counterfactual_observed(self, name, params, w, x, batched, method):
        self.unsupported(f"the counterfactual {name!r}")


class GaussianEmission(VectorEmission):
    """``X[t] | Z[t] = k ~ N(means_[k], covars_[k])``, with hmmlearn's four covariance types.

    Parameters
    ----------
    covariance_type : {"spherical", "diag", "full", "tied"}
        The stored form of the covariances (``params["_covars_"]``):
        ``(K,)``, ``(K, d)``, ``(K, d, d)``, ``(d, d)``
        (:mod:`causalnet.models.hmm.covariance`).
    min_covar : float
        Added to the data variance at initialisation; the floor of the
        covariance eigenvalues (variances) whenever an M-step leaves a
        covariance that is not positive definite (nearly singular data).
    means_prior, means_weight, covars_prior, covars_weight :
        Normal / inverse-gamma (Wishart) priors of the M-step, as hmmlearn's.
    n_features : int, optional
        The width ``d``, checked against the parameters and observations.
    """

    kind = "gaussian"
    letters = "mc"
    attrs = {"m": "means_", "c": "_covars_"}

    def __init__(self, covariance_type="diag", min_covar=1e-3, means_prior=0.0, means_weight=0.0,
                 covars_prior=1e-2, covars_weight=1.0, n_features=None):
        self.covariance_type = covariance_type
        self.cov = COVARIANCES[covariance_type]
        self.min_covar = min_covar
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.n_features = n_features

    def width(self, params):
        mu = params.get("means_")
        return np.shape(mu)[1] if mu is not None and np.ndim(mu) == 2 else None

    def check_params(self, params, K, letters=None):
        letters = self.letters if letters is None else letters
        out = {}
        if "m" in letters:
            m = real_array("means_", params["means_"])
            if m.ndim != 2 or m.shape[0] != K:
                raise ShapeError(f"means_ must have shape (n_states, d) = ({K}, d); got {m.shape}")
            if not np.isfinite(m).all():
                raise ModelError("means_ must be finite")
            self.check_width(m.shape[1], "means_")
            out["means_"] = m
        if "c" in letters:
            c = real_array("covars_", params["_covars_"])
            d = self.width(params)
            if d is None:
                d = self.n_features if self.n_features is not None else _width_of(c, self.cov.name)
            out["_covars_"] = self.cov.check(c, K, d, unit="state")
        return out

    def check_observations(self, X, params):
        X = self._real_observations(X, params, "Gaussian")
        if X.size and np.abs(X).max() > _MAX_ABS:  # squares and sums of squares must not overflow
            i = int(np.argmax(np.abs(X).max(axis=1)))
            raise EvidenceError(f"Gaussian observations must be at most {_MAX_ABS:g} in size (rescale the data); "
                                f"row {i} is {X[i].tolist()}")
        return X

    def logpdf(self, params, X):
        """(N, d) -> (N, K) Gaussian log-densities."""
        return self.cov.logpdf(X, params["means_"], params["_covars_"])

    def init(self, params, X, K, rng, letters):
        out = {}
        if "m" in letters:
            out["means_"] = kmeans(X, K, rng)
        if "c" in letters:
            d = X.shape[1]
            cv = np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(d)
            out["_covars_"] = self.cov.from_full(cv + self.min_covar * np.eye(d), K)
        return out

    def statistics(self, Xp, G, letters, cache, params=None):
        K = G.shape[1]
        Xf = Xp.reshape(-1, Xp.shape[-1])  # (T*n, d)
        stats = {"post": G.sum(axis=0), "obs": G.T @ Xf}  # (K,), (K, d)
        if "c" in letters:
            if self.cov.diagonal:
                stats["obs**2"] = G.T @ (Xf * Xf)  # (K, d)
            else:
                d = Xf.shape[1]
                outer = (Xf[:, :, None] * Xf[:, None, :]).reshape(-1, d * d)
                stats["obs*obs.T"] = (G.T @ outer).reshape(K, d, d)
        return stats

    def mstep(self, params, stats, letters):
        post = stats["post"]  # (K,)
        seen = post > 0  # a state with no posterior mass keeps its parameters
        mp, mw = self.means_prior, self.means_weight
        out = {}
        mu = params["means_"]
        if "m" in letters:
            with np.errstate(invalid="ignore", divide="ignore"):
                new = (mw * mp + stats["obs"]) / (mw + post[:, None])
            mu = np.where(seen[:, None], new, mu)
            out["means_"] = mu
        if "c" in letters:
            out["_covars_"] = self._covars_mstep(params["_covars_"], mu, stats, seen)
        return out

    def _covars_mstep(self, old, mu, stats, seen):
        """hmmlearn's covariance M-step for each type, then the floor of :meth:`Covariance.floor`."""
        cp, cw, mp, mw = self.covars_prior, self.covars_weight, self.means_prior, self.means_weight
        post = stats["post"]
        meandiff = mu - mp
        name = self.cov.name
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.cov.diagonal:
                c_n = mw * meandiff**2 + stats["obs**2"] - 2 * mu * stats["obs"] + mu**2 * post[:, None]
                new = (cp + c_n) / np.maximum(max(cw - 1, 0) + post[:, None], 1e-5)  # (K, d)
                if name == "spherical":  # hmmlearn: the mean of the diagonal M-step
                    new = new.mean(axis=1)  # (K,)
                    return self.cov.floor(np.where(seen, new, old), self.min_covar)
                return self.cov.floor(np.where(seen[:, None], new, old), self.min_covar)
            d = mu.shape[1]
            obsmean = stats["obs"][:, :, None] * mu[:, None, :]  # (K, d, d)
            c_n = (mw * meandiff[:, :, None] * meandiff[:, None, :] + stats["obs*obs.T"] - obsmean
                   - obsmean.transpose(0, 2, 1) + mu[:, :, None] * mu[:, None, :] * post[:, None, None])
            cvw = max(cw - d, 0)
            if name == "tied":
                return self.cov.floor((cp + c_n.sum(axis=0)) / (cvw + post.sum()), self.min_covar)
            new = (cp + c_n) / (cvw + post[:, None, None])
        return self.cov.floor(np.where(seen[:, None, None], new, old), self.min_covar)

    def sample(self, params, Z, rng):
        mu = params["means_"]
        K, d = mu.shape
        eps = rng.standard_normal((len(Z), d))
        if self.cov.diagonal:
            return mu[Z] + eps * np.sqrt(self.cov.variances(params["_covars_"], K, d)[Z])
        L = self.cov.cholesky(params["_covars_"], K, d)  # (K, d, d)
        return mu[Z] + np.einsum("nij,nj->ni", L[Z], eps)

    def n_parameters(self, params, K):
        d = np.shape(params["means_"])[1]
        return K * d + self.cov.n_parameters(K, d)

    def full_covars(self, params):
        """Covariances as ``(K, d, d)`` whatever the type (hmmlearn's ``covars_``)."""
        K, d = np.shape(params["means_"])
        return self.cov.full(np.asarray(params["_covars_"]), K, d)

    def mechanism(self, parent, params):
        return GaussianEmissionMechanism(parent, params["means_"], self.full_covars(params))

    # -- answers about X[t] in causal queries --------------------------------

    def check_evidence(self, obs, params):
        d = np.shape(params["means_"])[1]
        if obs.shape[-1] != d:
            raise ShapeError(f"observations have width {obs.shape[-1]}, the HMM emits {d}")
        if not np.isfinite(obs).all():
            raise EvidenceError("Gaussian observations must be finite")

    def predictive(self, name, params, w, batched, **kw):
        return GaussianMixture([name], w if batched else w[0], params["means_"], self.full_covars(params),
                               batched=batched, **kw)

    def point(self, name, params, v, n, batched):
        d = np.shape(params["means_"])[1]
        atoms = np.broadcast_to(np.asarray(v, dtype=np.float64), (n, d))
        return EmpiricalDistribution([name], {name: atoms[:, None] if batched else atoms[:1]},
                                     np.ones((n, 1)) if batched else np.ones(1), batched=batched,
                                     method="exact (set by do)")

    def counterfactual_observed(self, name, params, w, x, batched, method):
        """The ``K²`` exact atoms ``mu_b + L_b L_a^{-1}(x - mu_a)`` weighted by ``w`` ``(n, a, b)``."""
        mu = np.asarray(params["means_"])
        K, d = mu.shape
        L = np.stack([linalg.cholesky(c, lower=True) for c in self.full_covars(params)])
        n = len(x)
        eps = np.stack([linalg.solve_triangular(L[a], (x - mu[a]).T, lower=True).T for a in range(K)], axis=1)
        atoms = mu[None, None, :, :] + np.einsum("bij,naj->nabi", L, eps)  # (n, a, b, d)
        samples = atoms.reshape(n, K * K, d)
        weights = w.reshape(n, K * K)
        return EmpiricalDistribution([name], {name: samples if batched else samples[0]},
                                     weights if batched else weights[0], batched=batched, method=method,
                                     scm=SCM_DISCRETE + "; " + SCM_GAUSS_EMISSION)


def _width_of(c, covariance_type):
    """The width ``d`` a stored covariance implies (None for spherical, which does not say)."""
    if covariance_type == "spherical":
        return None
    return c.shape[-1] if c.ndim >= 2 else None



def kmeans(X, K, rng, n_iter=20):
    """k-means++ seeding plus Lloyd iterations; (K, d) centres."""
    N = len(X)
    if N == 0:
        raise EvidenceError("cannot initialise Gaussian means from no observations")
    centres = np.empty((K, X.shape[1]))
    centres[0] = X[rng.integers(N)]
    d2 = ((X - centres[0]) ** 2).sum(axis=1)
    for k in range(1, K):
        tot = d2.sum()
        i = rng.choice(N, p=d2 / tot) if tot > 0 else rng.integers(N)
        centres[k] = X[i]
        d2 = np.minimum(d2, ((X - centres[k]) ** 2).sum(axis=1))
    for _ in range(n_iter):
        dist = ((X[:, None, :] - centres[None]) ** 2).sum(axis=2) if N * K < 4_000_000 else _sqdist(X, centres)
        lab = dist.argmin(axis=1)
        new = centres.copy()
        for k in range(K):
            sel = lab == k
            if sel.any():
                new[k] = X[sel].mean(axis=0)
        if np.allclose(new, centres):
            break
        centres = new
    return centres


def _sqdist(X, C):
    return (X * X).sum(1)[:, None] - 2 * X @ C.T + (C * C).sum(1)[None, :]
