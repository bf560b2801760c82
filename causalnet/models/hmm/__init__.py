"""Hidden Markov models: the estimator, its emission kinds, and the HMM as a causal model.

* :mod:`.estimator` — :class:`HMM`, hmmlearn-like (``fit``, ``score``,
  ``decode``, ``predict_proba``, ``sample``) on the chain engine;
* :mod:`.emissions` — the emission interface, categorical and Gaussian
  emissions; :mod:`.poisson` and :mod:`.mixture` — Poisson and Gaussian-mixture
  emissions; :mod:`.kinds` — the name -> class table;
* :mod:`.covariance` — hmmlearn's four covariance types, one class each;
* :mod:`.packing` — ``(X, lengths)`` to the chain layout and back;
* :mod:`.causal` — unrolling; ``HMM.query`` / ``HMM.counterfactual`` as
  requests of the front door;
* :mod:`.engine` — the chain engines the front door asks first (forward-backward,
  twin chain), registered in :mod:`causalnet.inference.dispatch`'s registries;
* :mod:`.mechanism` — the Gaussian and inverse-CDF emission mechanisms and the
  CDF overlaps of the inverse-CDF SCM.

>>> from causalnet.models.hmm import HMM
>>> HMM(2).n_states
2
"""

from ...runtime import lazy_exports

__all__ = ["HMM", "ConvergenceMonitor", "Emission", "CategoricalEmission", "GaussianEmission", "PoissonEmission",
           "GMMEmission"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "CategoricalEmission": ".emissions:CategoricalEmission",
    "Emission": ".emissions:Emission",
    "GaussianEmission": ".emissions:GaussianEmission",
    "HMM": ".estimator:HMM",
    "ConvergenceMonitor": ".estimator:ConvergenceMonitor",
    "GMMEmission": ".mixture:GMMEmission",
    "PoissonEmission": ".poisson:PoissonEmission",
})
