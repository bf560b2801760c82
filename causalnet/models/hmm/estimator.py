"""Hidden Markov models on the chain engine, with an hmmlearn-like interface.

An HMM over ``K`` hidden states ``Z[t]`` and observations ``X[t]``::

    Z[0] ~ startprob,   Z[t+1] | Z[t] ~ transmat[Z[t]],   X[t] | Z[t] ~ emission(Z[t])

with categorical emissions (``emissionprob_`` of shape ``(K, S)`` over ``S``
symbols), Gaussian ones (``means_`` ``(K, d)``, covariances of hmmlearn's four
``covariance_type`` s), Poisson counts (``lambdas_`` ``(K, d)``) or Gaussian
mixtures (``weights_`` ``(K, M)``, ``means_`` ``(K, M, d)``, ``covars_``). Every computation packs the sequences into a batch
``(n, T, K)`` with a length mask and runs on :mod:`causalnet.inference.chain`
(scaled forward-backward with log-space fallback, batched Viterbi).

The interface follows hmmlearn so code can switch: ``fit(X, lengths)``,
``score``, ``score_samples``, ``predict``, ``decode``, ``predict_proba``,
``sample``; concatenated observations ``X`` with ``lengths``; fitted attributes
``startprob_``, ``transmat_``, ``emissionprob_`` / ``means_``, ``covars_``,
``monitor_``. As in hmmlearn, a Gaussian HMM's ``covars_`` is always full
``(K, d, d)`` and ``_covars_`` holds the stored form of its type; a mixture's
``covars_`` is the stored form. Differences: the state count is also
``n_states``, the symbol count ``n_symbols``; ``seed=`` is another name for
``random_state``; ``history_`` keeps every iteration's
log-likelihood; ``n_init`` random restarts keep the best.

What depends on the kind of observation lives in an emission class
(:mod:`.emissions`); the causal side (unrolling, do-queries, exact
counterfactuals) in :mod:`.causal`; packing ``(X, lengths)`` into the chain
layout in :mod:`.packing`.

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
import copy
import math
import warnings

import numpy as np

from ...arguments import check_int, check_real
from ...errors import CausalNetWarning, ModelError, NotFittedError, NumericalError
from ...inference.chain import Chain, chain_log_partition, chain_posterior, chain_viterbi, raise_if_impossible
from ...mechanisms.base import as_generator
from ...progress import progress_bar
from . import causal, saving
from .conventions import (
    ATTR,
    INIT_ARG,
    PUBLIC,
    Conventions,
    ConvergenceMonitor,
    alias,
    alphabet_size,
    check_algorithm,
    check_alphabet,
    check_prior,
    is_sklearn_y,
)
from .emissions import CategoricalEmission, check_simplex, normalize_rows
from .kinds import COVARIANCE_TYPES, KINDS, make_emission
from .missing import check_states, masked_unaries, split_missing
from .packing import flatten_input, full_length_batch, gather, pack, unpack

__all__ = ["HMM", "ConvergenceMonitor"]



#: The estimator attributes an emission object is built from (the kind first; ``_n_features`` passed as ``n_features``).
_EMISSION_SETTINGS = ("emission", "n_symbols", "emissionprob_prior", "covariance_type", "min_covar", "means_prior",
                      "means_weight", "covars_prior", "covars_weight", "_n_features", "n_mix", "lambdas_prior",
                      "lambdas_weight", "weights_prior")


class HMM(Conventions):
    """Hidden Markov model with categorical, Gaussian, Poisson or Gaussian-mixture emissions.

    Parameters
    ----------
    n_states : int, default 1
        Number of hidden states ``K`` (alias ``n_components``).
    emission : {"categorical", "gaussian", "poisson", "gmm"}, default "categorical"
        hmmlearn's CategoricalHMM, GaussianHMM, PoissonHMM, GMMHMM.
    covariance_type : {"spherical", "diag", "full", "tied"}, default "diag"
        Gaussian and mixture emissions: the stored form of ``covars``
        (:mod:`causalnet.models.hmm.covariance`).
    n_symbols : int, optional
        Alphabet size ``S`` (categorical); inferred from ``emissionprob`` or as
        ``max(X) + 1`` at the first fit.
    n_features : int, optional
        hmmlearn's name: the alphabet size (categorical, same as
        ``n_symbols``) or the observation width ``d``. Read after a fit it is
        the fitted value.
    n_mix : int, default 1
        Mixture components ``M`` per state (``"gmm"``).
    startprob, transmat, emissionprob, means, covars, lambdas, weights : array_like, optional
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
        Added to the data variance when covariances are initialised, and the
        floor of the eigenvalues (variances) of any covariance an M-step leaves
        not positive definite (nearly singular data), as hmmlearn's.
    lambdas_prior, lambdas_weight : float or array_like, default 0.0
        Gamma prior of the Poisson rates (alpha, beta).
    weights_prior : float or array_like, default 1.0
        Dirichlet concentration of the mixture weights.
    algorithm : {"viterbi", "map"}, default "viterbi"
        What :meth:`decode` and :meth:`predict` return by default: the jointly
        most likely path, or the most likely state at each step.
    progress : bool or None, default None
        Show a progress bar (``tqdm.auto``: terminal or notebook) during fit.
        None: shown on an interactive terminal or notebook, hidden otherwise
        and when the environment variable ``CI`` is true; False: never.
    seed : int or numpy.random.Generator, optional
        Randomness of initialisation and restarts.
    n_components, random_state :
        hmmlearn's names for ``n_states`` and ``seed`` (give either name, or
        both with the same value).

    Attributes
    ----------
    startprob_ : ndarray (K,)
    transmat_ : ndarray (K, K)
    emissionprob_ : ndarray (K, S)
    means_ : ndarray (K, d), or (K, M, d) for a mixture
    covars_ : ndarray
        Gaussian: (K, d, d) whatever the type (read-only view of ``_covars_``,
        which is (K,) spherical, (K, d) diag, (K, d, d) full, (d, d) tied;
        assigning ``covars_`` sets the stored form). Mixture: the stored form
        (K, M), (K, M, d), (K, M, d, d), (K, d, d).
    lambdas_ : ndarray (K, d)
    weights_ : ndarray (K, M)
    monitor_ : ConvergenceMonitor
    history_ : list of float
        Log-likelihood entering each EM iteration of the kept run.
    """

    def __init__(
        self,
        n_states=None,
        emission="categorical",
        *,
        n_components=None,
        covariance_type="diag",
        n_symbols=None,
        n_features=None,
        n_mix=1,
        startprob=None,
        transmat=None,
        emissionprob=None,
        means=None,
        covars=None,
        lambdas=None,
        weights=None,
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
        lambdas_prior=0.0,
        lambdas_weight=0.0,
        weights_prior=1.0,
        algorithm="viterbi",
        progress=None,
        seed=None,
        random_state=None,
    ):
        K = alias("n_states", n_states, "n_components", n_components, default=1)
        # two names for one value: each kept as given (get_params), the value once (the properties)
        self._given = {"n_states": n_states, "n_components": n_components, "seed": seed, "random_state": random_state}
        self._K = check_int(K, "n_states", low=1)
        if not isinstance(emission, str) or emission not in KINDS:
            raise ModelError(f"emission must be one of {list(KINDS)}; got {emission!r}")
        if not isinstance(covariance_type, str) or covariance_type not in COVARIANCE_TYPES:
            raise ModelError(f"covariance_type must be one of {list(COVARIANCE_TYPES)}; got {covariance_type!r}")
        self.emission = emission
        self.covariance_type = covariance_type
        self._n_features = None if n_features is None else check_int(n_features, "n_features", low=1)
        if emission == "categorical":
            n_symbols = alias("n_symbols", n_symbols, "n_features", n_features, default=None)
        self.n_symbols = None if n_symbols is None else check_alphabet(check_int(n_symbols, "n_symbols", low=1))
        self.n_mix = check_int(n_mix, "n_mix", low=1)
        letters = "st" + make_emission(emission).letters
        self._params_arg, self._init_params_arg = params, init_params  # as given (get_params)
        params = letters if params is None else params
        for name, val in (("params", params), ("init_params", init_params)):
            if val is not None and (not isinstance(val, str) or set(val) - set(letters)):
                raise ModelError(f"{name} must be a string of letters from {letters!r}; got {val!r}")
        self.params = params
        self.n_iter = check_int(n_iter, "n_iter", low=0)
        self.tol = check_real(tol, "tol", allow_inf=True)
        self.n_init = check_int(n_init, "n_init", low=1)
        for name in ("startprob_prior", "transmat_prior", "emissionprob_prior", "means_prior", "means_weight",
                     "covars_prior", "covars_weight", "lambdas_prior", "lambdas_weight", "weights_prior"):
            setattr(self, name, check_prior(name, locals()[name]))
        self.min_covar = check_real(min_covar, "min_covar", positive=True)
        self.algorithm = check_algorithm(algorithm)
        if progress is not None and not isinstance(progress, (bool, np.bool_)):
            raise ModelError(f"progress must be True, False or None (automatic); got {progress!r}")
        self.progress = None if progress is None else bool(progress)
        seed = alias("seed", seed, "random_state", random_state, default=None)
        as_generator(seed)  # validates; the seed itself is kept as given
        self._seed = seed
        # the initial parameters as given (get_params / clone), validated copies in the ``_`` attributes
        self.startprob, self.transmat, self.emissionprob, self.means, self.covars = (
            startprob, transmat, emissionprob, means, covars)
        self.lambdas, self.weights = lambdas, weights
        given = self._take_initial(
            {"s": startprob, "t": transmat, "e": emissionprob, "m": means, "c": covars, "l": lambdas, "w": weights})
        self.init_params = "".join(c for c in params if c not in given) if init_params is None else init_params

    def _take_initial(self, values):
        """Validate and set the parameters given at construction (letter -> value); their letters."""
        em = self.emission_model
        for code, name in INIT_ARG.items():
            if values[code] is not None and code not in "st" + em.letters:
                raise ModelError(f"{name} is not a parameter of {self.emission} emissions "
                                 f"(their parameters: {[INIT_ARG[c] for c in em.letters]})")
        given = "".join(c for c, v in values.items() if v is not None)
        if "e" in given and self.n_symbols is None and np.ndim(values["e"]) == 2:
            self.n_symbols = int(np.shape(values["e"])[1])
        checked = self._checked({ATTR[c]: values[c] for c in given}, given)
        for name, value in checked.items():
            setattr(self, name, value)
        return given

    # ------------------------------------------------------------------
    # parameters
    # ------------------------------------------------------------------

    @property
    def emission_model(self):
        """The emission kind (:mod:`causalnet.models.hmm.emissions`) configured from this estimator.

        Built once per configuration: the object is kept with the settings it
        was built from and rebuilt only when one of them is no longer the same
        object (emission objects hold their settings by reference and are never
        mutated, so the kept one equals a fresh one).
        """
        config = tuple(getattr(self, a) for a in _EMISSION_SETTINGS)
        kept = self.__dict__.get("_emission_built")
        if kept is not None and all(a is b for a, b in zip(kept[0], config)):
            return kept[1]
        em = make_emission(self.emission, **{k.lstrip("_"): v for k, v in zip(_EMISSION_SETTINGS[1:], config[1:])})
        self.__dict__["_emission_built"] = (config, em)
        return em

    def __sklearn_is_fitted__(self):
        """True when every parameter the model needs is set (fitted, or given at construction)."""
        return all(ATTR[c] in self.__dict__ for c in "st" + self.emission_model.letters)

    @property
    def n_features(self):
        """hmmlearn's ``n_features``: the symbol count (categorical) or width ``d``; as given, else as fitted."""
        if self._n_features is not None:
            return self._n_features
        if self.emission == "categorical":
            return self.n_symbols
        em = self.emission_model
        return em.width(self.emission_params())

    @n_features.setter
    def n_features(self, value):
        self._n_features = value

    @property
    def n_features_in_(self):
        """Columns of ``X`` the fitted model takes (scikit-learn's attribute): 1 for symbols, else ``d``."""
        if not hasattr(self, "startprob_"):
            raise NotFittedError("this HMM is not fitted yet; call fit() first")
        return 1 if self.emission == "categorical" else self.n_features

    @property
    def covars_(self):
        """Covariances: full ``(K, d, d)`` for Gaussian emissions (any type), the stored form for a mixture."""
        if "_covars_" not in self.__dict__:
            raise NotFittedError(f"HMM has no covars_ ({self.emission} emissions); call fit() or pass covars= first")
        em = self.emission_model
        if self.emission == "gaussian":
            return em.full_covars(self.emission_params())
        return self._covars_

    @covars_.setter
    def covars_(self, value):
        if "c" not in self.emission_model.letters:
            raise ModelError(f"covars_ is not a parameter of {self.emission} emissions")
        self._covars_ = self._checked({"_covars_": value}, "c")["_covars_"]

    def emission_params(self):
        """The emission parameters set so far, as a dict attribute name -> array."""
        return {a: getattr(self, a) for a in self.emission_model.attrs.values() if hasattr(self, a)}

    def _checked(self, values, letters):
        """Validated copies of the parameters in ``values`` (named by ``letters``)."""
        K = self.n_states
        out = {}
        if "s" in letters:
            out["startprob_"] = check_simplex("startprob_", values["startprob_"], (K,))
        if "t" in letters:
            out["transmat_"] = check_simplex("transmat_", values["transmat_"], (K, K))
        em = self.emission_model
        own = "".join(c for c in letters if c in em.letters)
        out.update(em.check_params({**self.emission_params(), **values}, K, own))
        return out

    def checked_params(self):
        """Every parameter the model needs, validated (ModelError/ShapeError naming the bad one), as a dict."""
        need = "st" + self.emission_model.letters
        for code in need:
            if ATTR[code] not in self.__dict__:
                raise NotFittedError(f"HMM has no {PUBLIC[code]}; call fit() or pass {INIT_ARG[code]}= first")
        values = {ATTR[c]: getattr(self, ATTR[c]) for c in need}
        return self._checked(values, need)

    # ------------------------------------------------------------------
    # inference
    # ------------------------------------------------------------------

    def _flatten(self, X, lengths, y_allowed=False):
        """Any accepted form of the sequences -> concatenated ``(X, lengths)`` and the caller's layout.

        With ``y_allowed`` (``fit`` and ``score``, which scikit-learn calls as
        ``fit(X, y)``), a second argument with one entry per observation that
        is not a valid ``lengths`` (its entries do not sum to ``N`` as
        positive integers) is scikit-learn's ``y``, ignored as by every
        unsupervised scikit-learn estimator.
        """
        if y_allowed and is_sklearn_y(X, lengths, self.emission_model.obs_ndim):
            warnings.warn(CausalNetWarning(
                "the second argument has one entry per observation but is not valid sequence lengths: it is "
                "taken as scikit-learn's y and ignored (an HMM is unsupervised); pass lengths= for sequences"),
                stacklevel=3)
            lengths = None
        return flatten_input(X, lengths, self.emission_model.obs_ndim)

    def __sklearn_tags__(self):
        """scikit-learn's tags: an unsupervised estimator of 2-D float data without NaN (sklearn >= 1.6)."""
        from sklearn.utils import InputTags, Tags, TargetTags  # optional heavy dependency

        return Tags(estimator_type=None, target_tags=TargetTags(required=False), transformer_tags=None,
                    regressor_tags=None, classifier_tags=None,
                    input_tags=InputTags(one_d_array=False, two_d_array=True, categorical=self.emission == "categorical",
                                         allow_nan=False),
                    requires_fit=True)

    def _pack(self, X, lengths, params):
        em = self.emission_model
        X, missing = split_missing(X, em.obs_ndim)      # NaN rows: likelihood 1 (see .missing)
        pk = pack(em.check_observations(X, params), lengths)
        pk.X = em.pad(pk.Xflat, pk.pos, pk.real, params)
        if missing is not None:
            pk.observed = ~missing
            pk.missing = gather(pk.pos, missing) & (True if pk.real is None else pk.real)   # (T, n)
        return pk

    def _chain(self, pk, params, scaled=True):
        """The packed data as a chain (internal layout); probability-space unaries now when ``scaled``."""
        with np.errstate(divide="ignore"):
            pw = np.log(params["transmat_"])
        u_fn, sc = self.emission_model.unaries(params, pk, params["startprob_"], scaled)
        if pk.missing is not None or pk.labels is not None:
            u_fn, sc = masked_unaries(u_fn, params["startprob_"], pk.missing, pk.labels), None
        return Chain(None, pw, pk.lens, pk.order, shape=(pk.T, pk.n, self.n_states), scaled_u=sc, u_fn=u_fn)

    def _prepare(self, X, lengths, scaled=True):
        params = self.checked_params()
        pk = self._pack(X, lengths, params)
        return pk, self._chain(pk, params, scaled)

    def log_emission(self, X):
        """Emission log-likelihoods ``log p(x | Z = k)`` of observations batch-first.

        Parameters
        ----------
        X : ndarray of shape (n, T) (symbols) or (n, T, d)
            Any leading shape; padding must hold valid values.

        Returns
        -------
        ndarray of shape (n, T, K)
        """
        params = self.checked_params()
        return self.emission_model.log_likelihood(params, X)

    def score(self, X, lengths=None, *, y=None):
        """Total log-likelihood ``log p(X)`` of the sequences.

        Parameters
        ----------
        X : array_like of shape (N,) / (N, 1) (categorical) or (N, d) (Gaussian)
            Concatenated sequences; or a list of arrays, one per sequence; or
            a padded batch ``(n, T)`` / ``(n, T, d)`` with ``lengths`` (one
            per row). Per-observation results come back in
            the same form (padding -1 for states, 0 for probabilities).
        lengths : array_like of int, optional
            Sequence lengths, summing to ``N``; None for one sequence.

        Returns
        -------
        float
            ``-inf`` if some sequence is impossible under the model.
        """
        X, lengths, _ = self._flatten(X, lengths, y_allowed=True)
        _, ch = self._prepare(X, lengths)
        return float(chain_log_partition(ch).sum())

    def log_likelihood(self, X, lengths=None):
        """One log-likelihood ``log p(x_i)`` per sequence (:meth:`score` is their sum).

        Parameters
        ----------
        X : array_like
            A batch ``(n, T)`` (symbols) or ``(n, T, d)`` of full-length
            sequences; or, with `lengths`, concatenated sequences as in
            :meth:`score` (also a padded batch with one length per row, or a
            list of arrays without `lengths`).
        lengths : array_like of int, optional

        Returns
        -------
        ndarray of shape (n,)
            In the caller's order; ``-inf`` for an impossible sequence.
        """
        X, lengths = full_length_batch(X, lengths, self.emission_model.obs_ndim)
        X, lengths, _ = self._flatten(X, lengths)
        pk, ch = self._prepare(X, lengths)
        log_z = chain_log_partition(ch)                                   # (n,), internal order
        out = np.empty_like(log_z)
        out[pk.order if pk.order is not None else slice(None)] = log_z
        return out

    def score_samples(self, X, lengths=None):
        """Log-likelihood and per-observation state posteriors.

        Returns
        -------
        log_prob : float
        posteriors : ndarray of shape (N, K)
        """
        X, lengths, layout = self._flatten(X, lengths)
        pk, ch = self._prepare(X, lengths)
        gamma, log_z, _, _ = chain_posterior(ch)
        return float(log_z.sum()), layout.restore(unpack(pk, gamma), 0.0)

    def predict_proba(self, X, lengths=None):
        """Posterior state probabilities ``p(Z[t] = k | X)``, shape (N, K)."""
        return self.score_samples(X, lengths)[1]

    def decode(self, X, lengths=None, algorithm=None):
        """Most likely state sequence.

        Parameters
        ----------
        algorithm : {"viterbi", "map"}, optional
            ``"viterbi"``: the jointly most likely path; ``"map"``: the most
            likely state at each step (posterior argmax). Default: the
            estimator's ``algorithm``.

        Returns
        -------
        log_prob : float
            ``log p(X, path)`` summed over sequences (Viterbi); for MAP, as in
            hmmlearn, the sum over observations of the largest posterior
            probability (not a log-probability).
        states : ndarray of int, shape (N,)
        """
        algorithm = self.algorithm if algorithm is None else check_algorithm(algorithm)
        X, lengths, layout = self._flatten(X, lengths)
        pk, ch = self._prepare(X, lengths, scaled=(algorithm == "map"))
        if algorithm == "map":
            gamma, _, _, _ = chain_posterior(ch)
            post = unpack(pk, gamma)
            return float(post.max(axis=1).sum()), layout.restore(post.argmax(axis=1), -1)
        z, score = chain_viterbi(ch, consume_u=True)  # ch.u was made for this call
        raise_if_impossible(ch, score)
        return float(score.sum()), layout.restore(unpack(pk, z), -1)

    def predict(self, X, lengths=None):
        """Viterbi state sequence, shape (N,)."""
        return self.decode(X, lengths)[1]

    def n_parameters(self):
        """Free parameters EM estimates (those in ``params``), for :meth:`aic` / :meth:`bic`."""
        params = self.checked_params()
        K = self.n_states
        n = (K - 1) * ("s" in self.params) + K * (K - 1) * ("t" in self.params)
        em = self.emission_model
        return n + (em.n_parameters(params, K) if set(em.letters) & set(self.params) else 0)

    def aic(self, X, lengths=None):
        """Akaike information criterion ``-2 log p(X) + 2 p`` (lower is better)."""
        X, lengths, _ = self._flatten(X, lengths)
        return -2.0 * self.score(X, lengths) + 2.0 * self.n_parameters()

    def bic(self, X, lengths=None):
        """Bayesian information criterion ``-2 log p(X) + p log N`` (lower is better)."""
        X, lengths, _ = self._flatten(X, lengths)
        N = len(np.asarray(X))
        return -2.0 * self.score(X, lengths) + self.n_parameters() * math.log(N)

    # ------------------------------------------------------------------
    # saving (see causalnet.models.hmm.saving)
    # ------------------------------------------------------------------

    def save(self, path):
        """Save to ``path`` (JSON: parameters) and ``path`` with suffix ``.npz`` (arrays); exact, no pickle."""
        saving.save_hmm(self, path)

    @classmethod
    def load(cls, path):
        """The HMM saved by :meth:`save` at ``path``."""
        return saving.load_hmm(cls, path)

    # ------------------------------------------------------------------
    # as a causal model (see causalnet.models.hmm.causal)
    # ------------------------------------------------------------------

    def to_model(self, T):
        """The HMM unrolled over `T` steps: a CausalModel with latent ``Z[t]`` and observed ``X[t]``."""
        return causal.to_model(self, T)

    @staticmethod
    def folded_dag():
        """The folded (plate) drawing: ``(DAG, to_dot options)``; draw with ``cn.render(dag, path, **options)``."""
        return causal.folded_dag()

    def query(self, targets, *, evidence=None, do=None, T=None):
        """Posterior of ``Z[t]`` / ``X[t]`` given observations under ``do={"Z[t]": k}`` (transition cut, state
        clamped) — exact, on the chain engine. See :func:`causalnet.models.hmm.causal.query`."""
        return causal.query(self, targets, evidence=evidence, do=do, T=T)

    def counterfactual(self, targets, *, evidence, do):
        """What ``X[t']`` / ``Z[t']`` would have been, given the observed sequence, had ``Z[t]`` been k — exact,
        by a twin chain over K×K joint states under the inverse-CDF SCM.
        See :func:`causalnet.models.hmm.causal.counterfactual`."""
        return causal.counterfactual(self, targets, evidence=evidence, do=do)

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
        n_samples = check_int(n_samples, "n_samples", low=0)
        params = self.checked_params()
        rng = as_generator(seed)
        Z = _sample_states(params["startprob_"], params["transmat_"], rng.random(n_samples))
        return self.emission_model.sample(params, Z, rng), Z

    # ------------------------------------------------------------------
    # learning
    # ------------------------------------------------------------------

    def fit(self, X, lengths=None, *, y=None, states=None):
        """Estimate parameters by Baum-Welch (EM) from the sequences.

        The model changes only when the fit succeeds: it runs on a copy whose
        state is taken over at the end.

        Parameters
        ----------
        X : array_like
            Concatenated sequences, ``(N,)``/``(N, 1)`` ints or ``(N, d)`` floats.
        lengths : array_like of int, optional
            Sequence lengths summing to ``N``.
        states : array_like of int, shape (N,), optional
            Partially known hidden states, -1 where unknown: the known ones
            clamp the posterior (EM maximises ``log p(X, known states)``).
            A NaN row of ``X`` is a missing observation (likelihood 1).

        Returns
        -------
        self

        Raises
        ------
        EvidenceError, ShapeError
            If the observations or lengths are not valid (e.g. no observation).
        NumericalError
            If EM produced a non-finite parameter.
        """
        X, lengths, _ = self._flatten(X, lengths, y_allowed=True)
        work = copy.copy(self)
        work.__dict__ = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}
        work._fit(X, lengths, states)
        self.__dict__.update(work.__dict__)
        return self

    def _fit(self, X, lengths, states=None):
        rng = as_generator(self.seed)
        if isinstance(self.emission_model, CategoricalEmission) and self.n_symbols is None:
            self.n_symbols = alphabet_size(split_missing(X, 1)[0])
        fixed = {a: v for a, v in self.emission_params().items()
                 if not any(ATTR[c] == a for c in self.init_params)}
        pk = self._pack(X, lengths, fixed)
        if states is not None:
            labels = check_states(states, len(pk.Xflat), self.n_states)
            pk.labels = np.where(True if pk.real is None else pk.real, gather(pk.pos, labels), -1)   # (T, n)
        best = None
        for _ in range(self.n_init):
            params = self._initial(pk, rng)
            monitor, params = self._em(pk, params)
            final = monitor.history[-1] if monitor.history else -np.inf
            if best is None or final > best[0]:
                best = (final, params, monitor)
        _, params, monitor = best
        for name, val in params.items():
            if not np.isfinite(val).all():
                raise NumericalError(f"Baum-Welch gave a non-finite {name}; the data or priors are degenerate")
            setattr(self, name, val)
        self.monitor_ = monitor
        self.history_ = list(monitor.history)

    def _initial(self, pk, rng):
        """Current parameters with those in ``init_params`` drawn at random; validated."""
        K = self.n_states
        ip = self.init_params
        values = {ATTR[c]: getattr(self, ATTR[c]) for c in "st" + self.emission_model.letters
                  if hasattr(self, ATTR[c])}
        if "s" in ip:
            values["startprob_"] = rng.dirichlet(np.ones(K))
        if "t" in ip:
            values["transmat_"] = rng.dirichlet(np.ones(K), size=K)
        X = pk.Xflat if pk.observed is None else pk.Xflat[pk.observed]
        values.update(self.emission_model.init(values, X, K, rng, ip))
        for code in "st" + self.emission_model.letters:
            if ATTR[code] not in values:
                raise ModelError(f"HMM has no {ATTR[code]} and init_params={ip!r} does not initialise it")
        return {**values, **self._checked(values, "st" + self.emission_model.letters)}

    def _em(self, pk, params):
        monitor = ConvergenceMonitor(self.tol, self.n_iter)
        bar = None if self.progress is False or self.n_iter == 0 else _progress_bar(self.n_iter, self.progress)
        try:
            for _ in range(self.n_iter):
                stats, logprob = self._estep(pk, params)
                params = self._mstep(params, stats)
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
        return monitor, params

    def _estep(self, pk, params):
        ch = self._chain(pk, params)
        gamma, log_z, _, E = chain_posterior(ch, counts="t" in self.params)  # gamma (T, n, K)
        stats = {"start": gamma[0].sum(axis=0), "trans": E}
        G = gamma.reshape(-1, self.n_states)  # (T*n, K), padding rows are 0
        if pk.missing is not None:            # a missing observation says nothing of the emissions
            G = G * ~pk.missing.reshape(-1, 1)
        stats.update(self.emission_model.statistics(pk.X, G, self.params, pk.cache, params=params))
        return stats, float(log_z.sum())

    def _mstep(self, params, stats):
        p = self.params
        params = dict(params)
        if "s" in p:
            new = np.maximum(self.startprob_prior - 1.0 + stats["start"], 0.0)
            new = np.where(params["startprob_"] == 0, 0.0, new)
            s = new.sum()
            if s > 0:
                params["startprob_"] = new / s
        if "t" in p:
            new = np.maximum(self.transmat_prior - 1.0 + stats["trans"], 0.0)
            new = np.where(params["transmat_"] == 0, 0.0, new)
            params["transmat_"] = normalize_rows(new, params["transmat_"])
        params.update(self.emission_model.mstep(params, stats, p))
        return params


def _sample_states(start, trans, u):
    """Hidden states by the inverse CDF of uniforms ``u`` (N,)."""
    K = len(start)
    N = len(u)
    Z = np.empty(N, dtype=np.intp)
    if N == 0:
        return Z
    start_cdf = np.cumsum(start)
    rows = np.cumsum(trans, axis=1).tolist()
    z = min(int(np.searchsorted(start_cdf, u[0] * start_cdf[-1], side="right")), K - 1)
    Z[0] = z
    for t in range(1, N):
        row = rows[z]
        z = min(bisect.bisect_right(row, u[t] * row[-1]), K - 1)
        Z[t] = z
    return Z


def _progress_bar(total, progress):
    """The Baum-Welch bar: :func:`causalnet.progress.progress_bar` (on for a person watching, never in CI)."""
    return progress_bar(total, progress=progress, desc="Baum-Welch")
