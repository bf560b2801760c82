"""The emission kinds an HMM can have, by name: ``make_emission("gaussian", ...)``.

>>> make_emission("poisson").letters
'l'
"""

from __future__ import annotations

from ...errors import ModelError
from .covariance import COVARIANCES
from .emissions import CategoricalEmission, GaussianEmission
from .mixture import GMMEmission
from .poisson import PoissonEmission

__all__ = ["KINDS", "COVARIANCE_TYPES", "make_emission"]

KINDS = ("categorical", "gaussian", "poisson", "gmm")
COVARIANCE_TYPES = tuple(COVARIANCES)


def make_emission(kind, **config):
    """The emission object of ``kind`` (one of :data:`KINDS`) configured from the estimator's settings.

    Settings a kind does not use are ignored; ModelError for an unknown kind.
    """
    nf = config.get("n_features")
    if kind == "categorical":
        return CategoricalEmission(config.get("n_symbols"), config.get("emissionprob_prior", 1.0))
    if kind == "gaussian":
        keys = ("min_covar", "means_prior", "means_weight", "covars_prior", "covars_weight")
        return GaussianEmission(config.get("covariance_type", "diag"), n_features=nf,
                                **{k: config[k] for k in keys if k in config})
    if kind == "poisson":
        return PoissonEmission(config.get("lambdas_prior", 0.0), config.get("lambdas_weight", 0.0), n_features=nf)
    if kind == "gmm":
        return GMMEmission(config.get("n_mix", 1), config.get("covariance_type", "diag"),
                           config.get("min_covar", 1e-3), config.get("weights_prior", 1.0), n_features=nf)
    raise ModelError(f"emission must be one of {list(KINDS)}; got {kind!r}")
