"""The HMM estimator's conventions: hmmlearn's names and scikit-learn's parameter protocol.

:class:`Conventions` is the part of :class:`~causalnet.models.hmm.HMM` that
speaks scikit-learn (``get_params``/``set_params``, validated before anything
changes) and hmmlearn (``n_components`` for ``n_states``, ``random_state`` for
``seed``: two names for one value). Beside it: the parameter tables (letter
``"s"`` -> ``startprob_`` ...), hmmlearn's :class:`ConvergenceMonitor`, and the
checks of the estimator's arguments that are the HMM's own (alphabet size,
priors, decoding algorithm, scikit-learn's ``y`` in ``fit(X, y)``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from ... import limits
from ...arguments import check_int
from ...errors import EvidenceError, ModelError
from ...mechanisms.base import as_generator
from .emissions import CategoricalEmission

__all__ = ["Conventions", "ConvergenceMonitor", "ATTR", "PUBLIC", "INIT_ARG", "STORED", "ALIASES", "alias",
           "check_alphabet", "check_prior", "check_algorithm", "is_sklearn_y", "alphabet_size", "is_scalar"]


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


def check_alphabet(n_symbols: int) -> int:
    if n_symbols > limits.get("max_states"):
        raise ModelError(f"n_symbols={n_symbols} is above the limit max_states={limits.get('max_states')} "
                         f"(raise it with causalnet.limits.set(max_states=...))")
    return n_symbols


def check_prior(name, value):
    a = np.asarray(value)
    if np.iscomplexobj(a) or not np.issubdtype(a.dtype, np.number) or a.dtype == bool or not np.isfinite(a).all():
        raise ModelError(f"{name} must be a finite real number or array; got {value!r}")
    return value


def alias(name, value, alias, alias_value, default):
    """The value of a parameter that has two names (ours and hmmlearn's); ModelError if they disagree."""
    if value is None:
        return default if alias_value is None else alias_value
    if alias_value is not None and alias_value is not value and not (
            is_scalar(value) and is_scalar(alias_value) and value == alias_value):
        raise ModelError(f"{name}={value!r} and {alias}={alias_value!r} disagree; {alias} is another name for "
                         f"{name}, give one of them")
    return value


def is_scalar(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def check_algorithm(algorithm):
    if not isinstance(algorithm, str) or algorithm not in ("viterbi", "map"):
        raise ModelError(f"algorithm must be 'viterbi' or 'map'; got {algorithm!r}")
    return algorithm


# Constructor parameters that are two names for one value (sklearn's set_params keeps them together).
ALIASES = (("n_states", "n_components"), ("seed", "random_state"))
# parameter letter -> the attribute that stores it, its public name, the constructor's name
ATTR = {"s": "startprob_", "t": "transmat_", "e": "emissionprob_", "m": "means_", "c": "_covars_",
         "l": "lambdas_", "w": "weights_"}
PUBLIC = {c: a.lstrip("_") for c, a in ATTR.items()}  # "c" -> "covars_"
INIT_ARG = {c: a[:-1] for c, a in PUBLIC.items()}  # "c" -> "covars"
STORED = {"n_features": "_n_features", "params": "_params_arg", "init_params": "_init_params_arg"}  # constructor parameters kept under another attribute


def is_sklearn_y(X, lengths, obs_ndim):
    """True when ``lengths`` has one entry per observation of a concatenated ``X`` but is not valid lengths.

    That is scikit-learn's ``y`` (``fit(X, y)``); a padded batch (one more
    dimension, one length per row) never is.
    """
    if lengths is None or isinstance(X, (list, tuple)) and X and isinstance(X[0], np.ndarray):
        return False
    try:
        a, L = np.asarray(X), np.asarray(lengths)
    except (TypeError, ValueError):
        return False
    padded = a.ndim == obs_ndim + 1 and not (obs_ndim == 1 and a.shape[-1] == 1)
    if padded or L.ndim != 1 or L.dtype == bool or a.ndim == 0 or len(L) != len(a) or len(a) == 0:
        return False
    valid = np.issubdtype(L.dtype, np.integer) and (L > 0).all() and int(L.sum()) == len(a)
    return not valid


def alphabet_size(X):
    """``max(X) + 1`` of integer symbols (the alphabet a first fit infers)."""
    probe = CategoricalEmission(n_symbols=np.iinfo(np.intp).max)
    sym = probe.check_observations(X, {})
    if sym.size == 0:
        raise EvidenceError("X has no observations; every sequence needs at least one step")
    if sym.min() < 0:
        i = int(np.argmin(sym))
        raise EvidenceError(f"observation {sym[i]} at position {i} is negative; symbols are 0..S-1")
    top = int(sym.max())
    if top >= limits.get("max_states"):
        i = int(np.argmax(sym))
        raise EvidenceError(f"observation {top} at position {i} would make an alphabet of {top + 1} symbols, above "
                            f"the limit max_states={limits.get('max_states')}; number the symbols 0..S-1 "
                            f"(or raise the limit with causalnet.limits.set(max_states=...))")
    return top + 1


class Conventions:
    """scikit-learn's parameter protocol and hmmlearn's alias names, for :class:`~causalnet.models.hmm.HMM`.

    The estimator keeps ``_K`` (states), ``_seed`` and ``_given`` (the
    constructor's arguments as given); this class reads and writes them.
    """

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep=True):
        """Constructor parameters as a dict (scikit-learn's estimator protocol; ``sklearn.base.clone`` works).

        Initial parameters (``startprob``, ...) are returned as they were given,
        not the fitted ``startprob_``; ``n_features`` as given (None if not).
        """
        return {name: self._given[name] if name in self._given else getattr(self, STORED.get(name, name))
                for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters (scikit-learn's protocol); validated, nothing changes on error.

        Returns
        -------
        self

        Raises
        ------
        ModelError
            For an unknown name or an invalid value.
        """
        names = self._param_names()
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ModelError(f"HMM has no parameter {unknown[0]!r}; parameters: {names}")
        merged = self.get_params()
        for a, b in ALIASES:  # a new value under one name replaces both
            if a in params and b not in params:
                merged[b] = None
            elif b in params and a not in params:
                merged[a] = None
        merged.update(params)
        probe = type(self)(**merged)  # validates everything before anything changes
        # the configuration is every attribute not ending in "_" (fitted ones do)
        self.__dict__.update({k: v for k, v in probe.__dict__.items() if not k.endswith("_")})
        for code, attr in ATTR.items():
            if hasattr(probe, attr) and INIT_ARG[code] in params:
                setattr(self, attr, getattr(probe, attr))
        return self

    @property
    def n_states(self):
        """Number of hidden states ``K`` (``n_components`` is the same value)."""
        return self._K

    @n_states.setter
    def n_states(self, value):
        self._set_alias("n_states", "n_components", check_int(value, "n_states", low=1), value)

    @property
    def n_components(self):
        """hmmlearn's name for :attr:`n_states`."""
        return self._K

    @n_components.setter
    def n_components(self, value):
        self._set_alias("n_components", "n_states", check_int(value, "n_components", low=1), value)

    @property
    def seed(self):
        """The seed of initialisation and restarts (``random_state`` is the same value)."""
        return self._seed

    @seed.setter
    def seed(self, value):
        as_generator(value)
        self._set_alias("seed", "random_state", value, value)

    @property
    def random_state(self):
        """hmmlearn's / scikit-learn's name for :attr:`seed`."""
        return self._seed

    @random_state.setter
    def random_state(self, value):
        as_generator(value)
        self._set_alias("random_state", "seed", value, value)

    def _set_alias(self, name, other, value, given):
        """Assign one of two names for one value: the other name's given value is dropped."""
        self._given = {**self._given, name: given, other: None}
        if name in ("n_states", "n_components"):
            self._K = value
        else:
            self._seed = value
