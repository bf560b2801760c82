"""Hidden Markov models on the chain engine, with an hmmlearn-like interface.

An HMM over ``K`` hidden states ``Z[t]`` and observations ``X[t]``::

    Z[0] ~ startprob,   Z[t+1] | Z[t] ~ transmat[Z[t]],   X[t] | Z[t] ~ emission(Z[t])

with categorical emissions (``emissionprob_`` of shape ``(K, S)`` over ``S``
symbols) or Gaussian ones (``means_`` ``(K, d)``, ``covars_`` ``(K, d)`` diagonal
or ``(K, d, d)`` full). Every computation packs the sequences into a batch
``(n, T, K)`` with a length mask and runs on :mod:`causalnet.inference.chain`
(scaled forward-backward with log-space fallback, batched Viterbi).

The interface follows hmmlearn so code can switch: ``fit(X, lengths)``,
``score``, ``score_samples``, ``predict``, ``decode``, ``predict_proba``,
``sample``; concatenated observations ``X`` with ``lengths``; fitted attributes
``startprob_``, ``transmat_``, ``emissionprob_`` / ``means_``, ``covars_``,
``monitor_``. Differences: the state count is ``n_states``, the symbol count
``n_symbols``; ``covars_`` keeps the shape of its type (``(K, d)`` for diag);
``seed=`` replaces ``random_state``; ``history_`` keeps every iteration's
log-likelihood; ``n_init`` random restarts keep the best.

Legend: ``n`` sequences, ``T`` longest length, ``K`` states, ``S`` symbols,
``d`` observation width, ``N`` total observations.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.models.hmm import HMM
>>> m = HMM(2, "categorical", startprob=[0.6, 0.4],
...         transmat=[[0.7, 0.3], [0.4, 0.6]],
...         emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
>>> X = np.array([0, 1, 2])
>>> round(m.score(X), 6)                      # log p(X)
-3.316489
>>> m.predict(X).tolist()                     # Viterbi path
[0, 0, 1]

References
----------
.. [1] L. R. Rabiner, "A tutorial on hidden Markov models and selected
       applications in speech recognition", Proc. IEEE 77(2), 1989.
.. [2] hmmlearn, https://hmmlearn.readthedocs.io (interface and M-step
       conventions, priors as Dirichlet concentrations).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, sparse

from ..errors import EvidenceError, ModelError, ShapeError
from ..inference import chain as _engine

__all__ = ["HMM", "ConvergenceMonitor"]

_SUM_TOL = 1e-8
_LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class ConvergenceMonitor:
    """EM progress, as hmmlearn's monitor: converged when the gain is below ``tol``.

    Attributes
    ----------
    tol : float
    n_iter : int
    history : list of float
        Log-likelihood of the data under the parameters entering each iteration.
    iter : int
        Iterations run.
    """

    tol: float
    n_iter: int
    history: list = field(default_factory=list)
    iter: int = 0

    @property
    def converged(self) -> bool:
        """True when the last gain fell below ``tol`` or ``n_iter`` iterations ran."""
        return self.iter == self.n_iter or (
            len(self.history) >= 2 and self.history[-1] - self.history[-2] < self.tol
        )


@dataclass
class _Packed:
    """Sequences packed time-major with rows sorted by length (longest first).

    Attributes
    ----------
    lengths : ndarray (n,)
        Caller's order.
    lens : ndarray (n,)
        Internal order (non-increasing).
    order : ndarray (n,) or None
        Internal row -> caller's sequence.
    pos : ndarray of int, shape (T, n)
        Index into the concatenated ``X`` of each real (t, row); 0 on padding.
    real : ndarray of bool, shape (T, n) or None
        None when no row is padded.
    X : ndarray
        Categorical: (T, n) symbols, padding = the extra symbol ``S``.
        Gaussian: (T, n, d), padding 0.
    Xflat : ndarray
        The concatenated observations (N,) or (N, d).
    """

    lengths: np.ndarray
    lens: np.ndarray
    order: np.ndarray | None
    pos: np.ndarray
    real: np.ndarray | None
    X: np.ndarray
    Xflat: np.ndarray
    _onehot: object = None

    @property
    def n(self):
        return len(self.lens)

    @property
    def T(self):
        return int(self.lens[0])


class HMM:
    """Hidden Markov model with categorical or Gaussian emissions.

    Parameters
    ----------
    n_states : int
        Number of hidden states ``K``.
    emission : {"categorical", "gaussian"}, default "categorical"
    covariance_type : {"diag", "full"}, default "diag"
        Gaussian emissions only.
    n_symbols : int, optional
        Alphabet size ``S`` (categorical); inferred from ``emissionprob`` or as
        ``max(X) + 1`` at the first fit.
    startprob, transmat, emissionprob, means, covars : array_like, optional
        Initial / fixed parameters, validated now. Parameters given here are not
        re-initialised by :meth:`fit` unless ``init_params`` names them.
    n_iter : int, default 100
        Maximum EM iterations.
    tol : float, default 1e-2
        Stop when the log-likelihood gain of an iteration is below ``tol``
        (hmmlearn's rule).
    n_init : int, default 1
        Random restarts; the run with the highest final log-likelihood is kept.
    params : str, optional
        Parameters EM updates: letters of ``"ste"`` (categorical, default all) or
        ``"stmc"`` (Gaussian): start, transitions, emissions / means, covars.
    init_params : str, optional
        Parameters initialised at random before EM. Default: those in ``params``
        not given at construction (restarts re-initialise the same set).
    startprob_prior, transmat_prior, emissionprob_prior : float or array_like, default 1.0
        Dirichlet concentrations as in hmmlearn: the M-step adds ``prior - 1``
        pseudo-counts (1.0 = no prior).
    means_prior, means_weight, covars_prior, covars_weight : float or array_like
        Normal / inverse-gamma (Wishart) priors of the Gaussian M-step, with
        hmmlearn's defaults 0, 0, 1e-2, 1.
    min_covar : float, default 1e-3
        Added to the data variance when covariances are initialised.
    progress : bool, default False
        Show a progress bar during fit when ``tqdm`` is installed.
    seed : int or numpy.random.Generator, optional
        Randomness of initialisation and restarts.

    Attributes
    ----------
    startprob_ : ndarray (K,)
    transmat_ : ndarray (K, K)
    emissionprob_ : ndarray (K, S)
    means_ : ndarray (K, d)
    covars_ : ndarray (K, d) for diag, (K, d, d) for full
    monitor_ : ConvergenceMonitor
    history_ : list of float
        Log-likelihood entering each EM iteration of the kept run.
    """

    def __init__(
        self,
        n_states,
        emission="categorical",
        *,
        covariance_type="diag",
        n_symbols=None,
        startprob=None,
        transmat=None,
        emissionprob=None,
        means=None,
        covars=None,
        n_iter=100,
        tol=1e-2,
        n_init=1,
        params=None,
        init_params=None,
        startprob_prior=1.0,
        transmat_prior=1.0,
        emissionprob_prior=1.0,
        means_prior=0.0,
        means_weight=0.0,
        covars_prior=1e-2,
        covars_weight=1.0,
        min_covar=1e-3,
        progress=False,
        seed=None,
    ):
        if isinstance(n_states, bool) or not isinstance(n_states, (int, np.integer)) or n_states < 1:
            raise ModelError(f"n_states must be a positive integer; got {n_states!r}")
        if emission not in ("categorical", "gaussian"):
            raise ModelError(f"emission must be 'categorical' or 'gaussian'; got {emission!r}")
        if covariance_type not in ("diag", "full"):
            raise ModelError(f"covariance_type must be 'diag' or 'full'; got {covariance_type!r}")
        self.n_states = int(n_states)
        self.emission = emission
        self.covariance_type = covariance_type
        self.n_symbols = None if n_symbols is None else int(n_symbols)
        if self.n_symbols is not None and self.n_symbols < 1:
            raise ModelError(f"n_symbols must be a positive integer; got {n_symbols!r}")
        letters = "ste" if emission == "categorical" else "stmc"
        if params is None:
            params = letters
        for name, val in (("params", params), ("init_params", init_params)):
            if val is not None and (not isinstance(val, str) or set(val) - set(letters)):
                raise ModelError(f"{name} must be a string of letters from {letters!r}; got {val!r}")
        self.params = params
        self.n_iter = int(n_iter)
        self.tol = float(tol)
        if n_init < 1:
            raise ModelError(f"n_init must be at least 1; got {n_init}")
        self.n_init = int(n_init)
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.min_covar = float(min_covar)
        self.progress = bool(progress)
        self.seed = seed

        given = ""
        if startprob is not None:
            self.startprob_ = np.array(startprob, dtype=np.float64)
            given += "s"
        if transmat is not None:
            self.transmat_ = np.array(transmat, dtype=np.float64)
            given += "t"
        if emission == "categorical":
            if means is not None or covars is not None:
                raise ModelError("means/covars are Gaussian parameters; this HMM has categorical emissions")
            if emissionprob is not None:
                self.emissionprob_ = np.array(emissionprob, dtype=np.float64)
                given += "e"
                if self.n_symbols is None and self.emissionprob_.ndim == 2:
                    self.n_symbols = self.emissionprob_.shape[1]
        else:
            if emissionprob is not None:
                raise ModelError("emissionprob is a categorical parameter; this HMM has Gaussian emissions")
            if means is not None:
                self.means_ = np.array(means, dtype=np.float64)
                given += "m"
            if covars is not None:
                self.covars_ = np.array(covars, dtype=np.float64)
                given += "c"
        if init_params is None:
            init_params = "".join(ch for ch in params if ch not in given)
        self.init_params = init_params
        self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter)
        self.history_ = []
        for code in given:
            self._check_param(code)

    # ------------------------------------------------------------------
    # parameter validation
    # ------------------------------------------------------------------

    def _check_param(self, code):
        K = self.n_states
        if code == "s":
            _check_simplex(self, "startprob_", (K,))
        elif code == "t":
            _check_simplex(self, "transmat_", (K, K))
        elif code == "e":
            p = np.asarray(self.emissionprob_, dtype=np.float64)
            if p.ndim != 2 or p.shape[0] != K:
                raise ShapeError(f"emissionprob_ must have shape (n_states, n_symbols) = ({K}, S); got {p.shape}")
            if self.n_symbols is not None and p.shape[1] != self.n_symbols:
                raise ShapeError(
                    f"emissionprob_ has {p.shape[1]} columns but n_symbols is {self.n_symbols}; "
                    f"expected shape ({K}, {self.n_symbols})"
                )
            _check_simplex(self, "emissionprob_", p.shape)
        elif code == "m":
            m = np.asarray(self.means_, dtype=np.float64)
            if m.ndim != 2 or m.shape[0] != K:
                raise ShapeError(f"means_ must have shape (n_states, d) = ({K}, d); got {m.shape}")
            if not np.isfinite(m).all():
                raise ModelError("means_ must be finite")
            self.means_ = m
        elif code == "c":
            c = np.asarray(self.covars_, dtype=np.float64)
            d = self.means_.shape[1] if hasattr(self, "means_") else (c.shape[1] if c.ndim >= 2 else None)
            if self.covariance_type == "diag":
                if c.shape != (K, d):
                    raise ShapeError(f"covars_ (diag) must have shape (n_states, d) = ({K}, {d}); got {c.shape}")
                bad = ~(c > 0) | ~np.isfinite(c)
                if bad.any():
                    k, j = np.argwhere(bad)[0]
                    raise ModelError(
                        f"covars_ (diag) must be positive and finite; state {k}, dimension {j} has variance {c[k, j]}"
                    )
            else:
                if c.shape != (K, d, d):
                    raise ShapeError(
                        f"covars_ (full) must have shape (n_states, d, d) = ({K}, {d}, {d}); got {c.shape}"
                    )
                for k in range(K):
                    if not np.allclose(c[k], c[k].T, rtol=1e-10, atol=1e-12) or not np.isfinite(c[k]).all():
                        raise ModelError(f"covars_ (full) for state {k} must be finite and symmetric")
                    try:
                        linalg.cholesky(c[k], lower=True)
                    except linalg.LinAlgError:
                        raise ModelError(f"covars_ (full) for state {k} is not positive definite") from None
            self.covars_ = c

    def _check(self):
        """Validate every parameter the model needs (before any computation)."""
        need = "st" + ("e" if self.emission == "categorical" else "mc")
        for code in need:
            name = _ATTR[code]
            if not hasattr(self, name):
                raise ModelError(f"HMM has no {name}; call fit() or pass {name[:-1]}= first")
        for code in need:
            self._check_param(code)

    # ------------------------------------------------------------------
    # packing
    # ------------------------------------------------------------------

    def _validate_X(self, X, *, fitting=False):
        if self.emission == "categorical":
            X = np.asarray(X)
            if X.ndim == 2 and X.shape[1] == 1:
                X = X[:, 0]
            if X.ndim != 1:
                raise ShapeError(
                    f"categorical observations must have shape (n_samples,) or (n_samples, 1); got {X.shape}"
                )
            if X.dtype == bool:
                X = X.astype(np.intp)
            if not np.issubdtype(X.dtype, np.integer):
                if not np.issubdtype(X.dtype, np.floating):
                    raise EvidenceError(f"categorical observations must be integers; got dtype {X.dtype}")
                nonint = ~(np.isfinite(X) & (X == np.round(X)))
                if nonint.any():
                    i = int(np.flatnonzero(nonint)[0])
                    raise EvidenceError(f"categorical observations must be integers; got {X[i]} at position {i}")
            X = X.astype(np.intp)
            if fitting and self.n_symbols is None and len(X):
                if X.min() < 0:
                    i = int(np.argmin(X))
                    raise EvidenceError(f"observation {X[i]} at position {i} is negative; symbols are 0..S-1")
                self.n_symbols = int(X.max()) + 1
            S = self.n_symbols if self.n_symbols is not None else self.emissionprob_.shape[1]
            out = (X < 0) | (X >= S)
            if out.any():
                i = int(np.flatnonzero(out)[0])
                raise EvidenceError(
                    f"observation {X[i]} at position {i} is outside the alphabet 0..{S - 1} (n_symbols={S})"
                )
            return X
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ShapeError(f"Gaussian observations must have shape (n_samples, d); got {X.shape}")
        if hasattr(self, "means_") and not (fitting and "m" in self.init_params):
            d = self.means_.shape[1]
            if X.shape[1] != d:
                raise ShapeError(f"observations have width {X.shape[1]} but means_ has d={d}; expected (n_samples, {d})")
        if not np.isfinite(X).all():
            i = int(np.argwhere(~np.isfinite(X))[0, 0])
            raise EvidenceError(f"Gaussian observations must be finite; row {i} is {X[i].tolist()}")
        return X

    def _pack(self, X, lengths, *, fitting=False):
        X = self._validate_X(X, fitting=fitting)
        N = len(X)
        lengths = _check_lengths(lengths, N)
        n = len(lengths)
        order = np.argsort(-lengths, kind="stable")
        if np.array_equal(order, np.arange(n)):
            order = None
        lens = lengths if order is None else lengths[order]
        T = int(lens[0])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        st = starts if order is None else starts[order]
        pos = st[None, :] + np.arange(T)[:, None]  # (T, n)
        real = None
        if lens[-1] < T:
            real = np.arange(T)[:, None] < lens[None, :]
            pos = np.where(real, pos, 0)
        if self.emission == "categorical":
            S = self._n_symbols()
            Xp = X[pos]  # (T, n)
            if real is not None:
                Xp[~real] = S  # padding symbol
        else:
            Xp = X[pos]  # (T, n, d)
            if real is not None:
                Xp[~real] = 0.0
        return _Packed(lengths, lens, order, pos, real, Xp, X)

    def _n_symbols(self):
        return self.n_symbols if self.n_symbols is not None else self.emissionprob_.shape[1]

    # ------------------------------------------------------------------
    # emissions
    # ------------------------------------------------------------------

    def _log_emission(self, X_packed):
        """Log emission densities of packed observations.

        Parameters
        ----------
        X_packed : ndarray
            ``(n, T)`` symbols (categorical; values in ``0..S-1``) or
            ``(n, T, d)`` observations (Gaussian), batch-first. Padding must hold
            valid values (e.g. 0); mask it afterwards.

        Returns
        -------
        ndarray of shape (n, T, K)
            ``log p(x[r, t] | Z = k)``.
        """
        if self.emission == "categorical":
            Xp = np.asarray(X_packed, dtype=np.intp)
            with np.errstate(divide="ignore"):
                logE = np.log(self.emissionprob_).T  # (S, K)
            return logE[Xp]
        Xp = np.asarray(X_packed, dtype=np.float64)
        flat = Xp.reshape(-1, Xp.shape[-1])
        return self._gauss_logpdf(flat).reshape(Xp.shape[:-1] + (self.n_states,))

    def _gauss_logpdf(self, X):
        """(N, d) -> (N, K) Gaussian log-densities."""
        mu = self.means_
        K, d = mu.shape
        out = np.empty((len(X), K))
        if self.covariance_type == "diag":
            cv = self.covars_
            logdet = np.log(cv).sum(axis=1)  # (K,)
            prec = 1.0 / cv
            for k in range(K):
                diff = X - mu[k]  # (N, d)
                out[:, k] = (diff * diff) @ prec[k]
            out += logdet
        else:
            for k in range(K):
                L = linalg.cholesky(self.covars_[k], lower=True)
                sol = linalg.solve_triangular(L, (X - mu[k]).T, lower=True)  # (d, N)
                out[:, k] = (sol * sol).sum(axis=0) + 2.0 * np.log(np.diagonal(L)).sum()
        out += d * _LOG_2PI
        out *= -0.5
        return out

    def _chain(self, pk, scaled=True):
        """The packed data as a chain (internal layout).

        With ``scaled`` the probability-space unaries ``(B, off)`` are built now
        (for sums); otherwise only the log unaries, on demand (for Viterbi).
        """
        K = self.n_states
        T, n = pk.T, pk.n
        with np.errstate(divide="ignore"):
            log_start = np.log(self.startprob_)
            pw = np.log(self.transmat_)
        if self.emission == "categorical":
            E = self.emissionprob_.T  # (S, K)
            S = E.shape[0]

            def u_fn():
                with np.errstate(divide="ignore"):
                    logE = np.full((S + 1, K), -np.inf)
                    logE[:S] = np.log(E)
                u = np.take(logE, pk.X, axis=0)  # (T, n, K)
                u[0] += log_start
                return u

            if not scaled:
                return _engine.Chain(None, pw, pk.lens, pk.order, shape=(T, n, K), u_fn=u_fn)
            colmax = E.max(axis=1)  # (S,)
            safe = np.where(colmax > 0, colmax, 1.0)
            table = np.zeros((S + 1, K))
            table[:S] = E / safe[:, None]
            logmax = np.zeros(S + 1)
            logmax[:S] = np.log(safe)
            B = np.take(table, pk.X, axis=0)  # (T, n, K), 0 on padding
            off = logmax[pk.X]  # (T, n)
        else:
            logp = self._gauss_logpdf(pk.Xflat)  # (N, K)
            u0 = logp[pk.pos]  # (T, n, K)
            if pk.real is not None:
                u0[~pk.real] = -np.inf
            u0[0] += log_start

            def u_fn():
                return u0

            if not scaled:
                return _engine.Chain(u0, pw, pk.lens, pk.order)
            off = u0.max(axis=-1)  # (T, n)
            off[~np.isfinite(off)] = 0.0
            B = np.exp(u0 - off[..., None])

        if self.emission == "categorical":
            b0 = B[0] * self.startprob_  # (n, K)
            m0 = b0.max(axis=1)
            ok = m0 > 0
            b0[ok] /= m0[ok, None]
            B[0] = b0
            with np.errstate(divide="ignore"):
                off[0] += np.where(ok, np.log(np.where(ok, m0, 1.0)), 0.0)
        return _engine.Chain(None, pw, pk.lens, pk.order, shape=(T, n, K), scaled_u=(B, off), u_fn=u_fn)

    # ------------------------------------------------------------------
    # inference
    # ------------------------------------------------------------------

    def score(self, X, lengths=None):
        """Total log-likelihood ``log p(X)`` of the sequences.

        Parameters
        ----------
        X : array_like of shape (N,) / (N, 1) (categorical) or (N, d) (Gaussian)
            Concatenated sequences.
        lengths : array_like of int, optional
            Sequence lengths, summing to ``N``; None for one sequence.

        Returns
        -------
        float
            ``-inf`` if some sequence is impossible under the model.
        """
        self._check()
        pk = self._pack(X, lengths)
        return float(_engine.chain_log_partition(self._chain(pk)).sum())

    def score_samples(self, X, lengths=None):
        """Log-likelihood and per-observation state posteriors.

        Returns
        -------
        log_prob : float
        posteriors : ndarray of shape (N, K)
        """
        self._check()
        pk = self._pack(X, lengths)
        gamma, log_z, _, _ = _engine.chain_posterior(self._chain(pk))
        return float(log_z.sum()), _unpack(pk, gamma)

    def predict_proba(self, X, lengths=None):
        """Posterior state probabilities ``p(Z[t] = k | X)``, shape (N, K)."""
        return self.score_samples(X, lengths)[1]

    def decode(self, X, lengths=None, algorithm="viterbi"):
        """Most likely state sequence.

        Parameters
        ----------
        algorithm : {"viterbi", "map"}
            ``"viterbi"``: the jointly most likely path; ``"map"``: the most
            likely state at each step (posterior argmax).

        Returns
        -------
        log_prob : float
            ``log p(X, path)`` summed over sequences (Viterbi); for MAP, as in
            hmmlearn, the sum over observations of the largest posterior
            probability (not a log-probability).
        states : ndarray of int, shape (N,)
        """
        if algorithm not in ("viterbi", "map"):
            raise ModelError(f"algorithm must be 'viterbi' or 'map'; got {algorithm!r}")
        self._check()
        pk = self._pack(X, lengths)
        ch = self._chain(pk, scaled=(algorithm == "map"))
        if algorithm == "map":
            gamma, _, _, _ = _engine.chain_posterior(ch)
            post = _unpack(pk, gamma)
            return float(post.max(axis=1).sum()), post.argmax(axis=1)
        z, score = _engine.chain_viterbi(ch, consume_u=True)  # ch.u was made for this call
        _engine.raise_if_impossible(ch, score)
        return float(score.sum()), _unpack(pk, z)

    def predict(self, X, lengths=None):
        """Viterbi state sequence, shape (N,)."""
        return self.decode(X, lengths)[1]

    # ------------------------------------------------------------------
    # as a causal model (see causalnet.models._hmm_causal)
    # ------------------------------------------------------------------

    def to_model(self, T):
        """The HMM unrolled over `T` steps: a CausalModel with latent ``Z[t]`` and observed ``X[t]``."""
        from . import _hmm_causal

        return _hmm_causal.to_model(self, T)

    @staticmethod
    def folded_dag():
        """The folded (plate) drawing: ``(DAG, to_dot options)``; draw with ``cn.render(dag, path, **options)``."""
        from . import _hmm_causal

        return _hmm_causal.folded_dag()

    def query(self, targets, *, evidence=None, do=None, T=None):
        """Posterior of ``Z[t]`` / ``X[t]`` given observations under ``do={"Z[t]": k}`` (transition cut, state
        clamped) — exact, on the chain engine. See :func:`causalnet.models._hmm_causal.query`."""
        from . import _hmm_causal

        return _hmm_causal.query(self, targets, evidence=evidence, do=do, T=T)

    def counterfactual(self, targets, *, evidence, do):
        """What ``X[t']`` / ``Z[t']`` would have been, given the observed sequence, had ``Z[t]`` been k — exact,
        by a twin chain over K×K joint states under the inverse-CDF SCM.
        See :func:`causalnet.models._hmm_causal.counterfactual`."""
        from . import _hmm_causal

        return _hmm_causal.counterfactual(self, targets, evidence=evidence, do=do)

    def sample(self, n_samples=1, seed=None):
        """Draw one sequence from the model.

        Parameters
        ----------
        n_samples : int
            Length of the sequence.
        seed : int or numpy.random.Generator, optional

        Returns
        -------
        X : ndarray
            ``(n_samples, 1)`` int symbols (categorical, as hmmlearn) or
            ``(n_samples, d)`` (Gaussian).
        Z : ndarray of int, shape (n_samples,)
            The hidden states.
        """
        self._check()
        rng = np.random.default_rng(seed)
        n_samples = int(n_samples)
        K = self.n_states
        u = rng.random(n_samples)
        start_cdf = np.cumsum(self.startprob_)
        trans_cdf = np.cumsum(self.transmat_, axis=1)
        Z = np.empty(n_samples, dtype=np.intp)
        if n_samples:
            z = min(int(np.searchsorted(start_cdf, u[0] * start_cdf[-1], side="right")), K - 1)
            Z[0] = z
            rows = trans_cdf.tolist()
            for t in range(1, n_samples):
                row = rows[z]
                z = min(bisect.bisect_right(row, u[t] * row[-1]), K - 1)
                Z[t] = z
        if self.emission == "categorical":
            cdf = np.cumsum(self.emissionprob_, axis=1)[Z]  # (N, S)
            v = rng.random(n_samples)[:, None] * cdf[:, -1:]
            X = np.minimum((cdf <= v).sum(axis=1), cdf.shape[1] - 1)
            return X[:, None], Z
        d = self.means_.shape[1]
        eps = rng.standard_normal((n_samples, d))
        if self.covariance_type == "diag":
            X = self.means_[Z] + eps * np.sqrt(self.covars_[Z])
        else:
            L = np.stack([linalg.cholesky(c, lower=True) for c in self.covars_])  # (K, d, d)
            X = self.means_[Z] + np.einsum("nij,nj->ni", L[Z], eps)
        return X, Z

    # ------------------------------------------------------------------
    # learning
    # ------------------------------------------------------------------

    def fit(self, X, lengths=None):
        """Estimate parameters by Baum-Welch (EM) from the sequences.

        Parameters
        ----------
        X : array_like
            Concatenated sequences, ``(N,)``/``(N, 1)`` ints or ``(N, d)`` floats.
        lengths : array_like of int, optional
            Sequence lengths summing to ``N``.

        Returns
        -------
        self
        """
        rng = np.random.default_rng(self.seed)
        pk = self._pack(X, lengths, fitting=True)
        best = None
        for _ in range(self.n_init):
            self._init_params(pk, rng)
            self._check()
            monitor = self._em(pk)
            final = monitor.history[-1] if monitor.history else -np.inf
            if best is None or final > best[0]:
                best = (final, self._get_params(), monitor)
        _, params, monitor = best
        for name, val in params.items():
            setattr(self, name, val)
        self.monitor_ = monitor
        self.history_ = list(monitor.history)
        return self

    def _get_params(self):
        names = ["startprob_", "transmat_"] + (
            ["emissionprob_"] if self.emission == "categorical" else ["means_", "covars_"]
        )
        return {k: getattr(self, k).copy() for k in names}

    def _init_params(self, pk, rng):
        K = self.n_states
        ip = self.init_params
        if "s" in ip:
            self.startprob_ = rng.dirichlet(np.ones(K))
        if "t" in ip:
            self.transmat_ = rng.dirichlet(np.ones(K), size=K)
        if self.emission == "categorical":
            if "e" in ip:
                self.emissionprob_ = rng.dirichlet(np.ones(self._n_symbols()), size=K)
            return
        Xf = pk.Xflat
        if "m" in ip:
            self.means_ = _kmeans(Xf, K, rng)
        if "c" in ip:
            d = Xf.shape[1]
            cv = np.atleast_2d(np.cov(Xf.T)) if len(Xf) > 1 else np.eye(d)
            cv = cv + self.min_covar * np.eye(d)
            if self.covariance_type == "diag":
                self.covars_ = np.tile(np.diag(cv), (K, 1))
            else:
                self.covars_ = np.tile(cv, (K, 1, 1))

    def _em(self, pk):
        monitor = ConvergenceMonitor(self.tol, self.n_iter)
        bar = _progress_bar(self.n_iter) if self.progress else None
        try:
            for _ in range(self.n_iter):
                stats, logprob = self._estep(pk)
                self._mstep(stats)
                monitor.history.append(logprob)
                monitor.iter += 1
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loglik=f"{logprob:.4f}")
                if monitor.converged:
                    break
        finally:
            if bar is not None:
                bar.close()
        return monitor

    def _estep(self, pk):
        ch = self._chain(pk)
        gamma, log_z, _, E = _engine.chain_posterior(ch, counts="t" in self.params)  # gamma (T, n, K)
        K = self.n_states
        stats = {"start": gamma[0].sum(axis=0), "trans": E}
        G = gamma.reshape(-1, K)  # (T*n, K), padding rows are 0
        if self.emission == "categorical":
            if "e" in self.params:
                stats["obs"] = _onehot(pk, self._n_symbols()) @ G  # (S, K)
        else:
            Xf = pk.X.reshape(-1, pk.X.shape[-1])  # (T*n, d)
            stats["post"] = G.sum(axis=0)  # (K,)
            stats["obs"] = G.T @ Xf  # (K, d)
            if "c" in self.params:
                if self.covariance_type == "diag":
                    stats["obs**2"] = G.T @ (Xf * Xf)
                else:
                    d = Xf.shape[1]
                    outer = (Xf[:, :, None] * Xf[:, None, :]).reshape(-1, d * d)
                    stats["obs*obs.T"] = (G.T @ outer).reshape(K, d, d)
        return stats, float(log_z.sum())

    def _mstep(self, stats):
        p = self.params
        if "s" in p:
            new = np.maximum(self.startprob_prior - 1.0 + stats["start"], 0.0)
            new = np.where(self.startprob_ == 0, 0.0, new)
            s = new.sum()
            if s > 0:
                self.startprob_ = new / s
        if "t" in p:
            new = np.maximum(self.transmat_prior - 1.0 + stats["trans"], 0.0)
            new = np.where(self.transmat_ == 0, 0.0, new)
            self.transmat_ = _normalize_rows(new, self.transmat_)
        if self.emission == "categorical":
            if "e" in p:
                new = np.maximum(self.emissionprob_prior - 1.0 + stats["obs"].T, 0.0)
                self.emissionprob_ = _normalize_rows(new, self.emissionprob_)
            return
        denom = stats["post"][:, None]  # (K, 1)
        mp, mw = self.means_prior, self.means_weight
        if "m" in p:
            self.means_ = (mw * mp + stats["obs"]) / (mw + denom)
        if "c" in p:
            cp, cw = self.covars_prior, self.covars_weight
            mu = self.means_
            meandiff = mu - mp
            if self.covariance_type == "diag":
                c_n = mw * meandiff**2 + stats["obs**2"] - 2 * mu * stats["obs"] + mu**2 * denom
                c_d = max(cw - 1, 0) + denom
                self.covars_ = (cp + c_n) / np.maximum(c_d, 1e-5)
            else:
                d = mu.shape[1]
                obsmean = stats["obs"][:, :, None] * mu[:, None, :]  # (K, d, d)
                c_n = (
                    mw * meandiff[:, :, None] * meandiff[:, None, :]
                    + stats["obs*obs.T"]
                    - obsmean
                    - obsmean.transpose(0, 2, 1)
                    + mu[:, :, None] * mu[:, None, :] * stats["post"][:, None, None]
                )
                cvweight = max(cw - d, 0)
                self.covars_ = (cp + c_n) / (cvweight + stats["post"][:, None, None])


_ATTR = {
    "s": "startprob_",
    "t": "transmat_",
    "e": "emissionprob_",
    "m": "means_",
    "c": "covars_",
}


def _check_simplex(model, name, shape):
    p = np.asarray(getattr(model, name), dtype=np.float64)
    if p.shape != shape:
        raise ShapeError(f"{name} must have shape {shape}; got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(p) | (p < 0))[0])
        raise ModelError(f"{name} must hold finite non-negative probabilities; got {p[where]} at {where}")
    s = p.sum(axis=-1)
    bad = np.abs(s - 1.0) > _SUM_TOL
    if bad.any():
        if p.ndim == 1:
            raise ModelError(f"{name} must sum to 1 (tolerance {_SUM_TOL:g}); it sums to {float(s)!r}")
        r = int(np.flatnonzero(bad)[0])
        raise ModelError(f"{name} row {r} sums to {float(s[r])!r}; each row must sum to 1 (tolerance {_SUM_TOL:g})")
    setattr(model, name, p)


def _check_lengths(lengths, N):
    if lengths is None:
        if N == 0:
            raise EvidenceError("X has no observations; every sequence needs at least one step")
        return np.array([N], dtype=np.intp)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or len(lengths) == 0:
        raise ShapeError(f"lengths must be a non-empty 1-d array of sequence lengths; got shape {lengths.shape}")
    if not np.issubdtype(lengths.dtype, np.integer):
        if not (np.issubdtype(lengths.dtype, np.floating) and (lengths == np.round(lengths)).all()):
            raise ShapeError(f"lengths must be integers; got dtype {lengths.dtype}")
    lengths = lengths.astype(np.intp)
    if (lengths <= 0).any():
        i = int(np.flatnonzero(lengths <= 0)[0])
        raise EvidenceError(f"sequence {i} has length {lengths[i]}; every sequence needs at least one step")
    if lengths.sum() != N:
        raise ShapeError(f"lengths sum to {int(lengths.sum())} but X has {N} observations")
    return lengths


def _unpack(pk, x):
    """Internal time-major (T, n, ...) -> concatenated (N, ...) in the caller's order."""
    if pk.real is None and pk.order is None:
        # equal lengths in the caller's order: sequence r is rows r*T .. (r+1)*T
        return np.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:])
    out = np.empty((len(pk.Xflat),) + x.shape[2:], dtype=x.dtype)
    if pk.real is None:
        out[pk.pos.reshape(-1)] = x.reshape((-1,) + x.shape[2:])
    else:
        out[pk.pos[pk.real]] = x[pk.real]
    return out


def _onehot(pk, S):
    """Sparse (S, T*n) indicator of the packed symbols (padding dropped); cached on pk."""
    if pk._onehot is None:
        Xf = pk.X.reshape(-1)
        keep = np.flatnonzero(Xf < S)
        pk._onehot = sparse.csr_matrix(
            (np.ones(len(keep)), (Xf[keep], keep)), shape=(S, Xf.size)
        )
    return pk._onehot


def _normalize_rows(new, old):
    """Rows of ``new`` normalised; a row with no mass keeps ``old``'s values."""
    s = new.sum(axis=1, keepdims=True)
    empty = s[:, 0] == 0
    out = new / np.where(s == 0, 1.0, s)
    if empty.any():
        out[empty] = old[empty]
    return out


def _kmeans(X, K, rng, n_iter=20):
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


def _progress_bar(total):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="Baum-Welch", leave=False)
