"""Linear-Gaussian state-space models (Kalman): the estimator, its numeric core, and the model as a causal model.

* :mod:`.model` — :class:`StateSpace`: ``filter``, ``smooth``,
  ``log_likelihood``, ``sample``, ``fit`` (EM), ``to_model``, ``query``,
  ``counterfactual``;
* :mod:`.kalman` — the array-in, array-out core: :func:`~.kalman.kalman_filter`,
  :func:`~.kalman.rts_smoother`, :func:`~.kalman.kalman_log_likelihood`
  (missing observations, per-step parameters, offsets, resets for ``do``),
  shared with the dynamic Bayesian networks' linear-Gaussian interface;
* :mod:`.kernels` — the compiled (numba) filter and smoother sweeps;
* :mod:`.em` — expectation-maximisation with missing data;
* :mod:`.checks` — parameter and sequence validation; :mod:`.results` — :class:`StateEstimates`;
* :mod:`.causal` — unrolling into scalar linear-Gaussian nodes, ``query`` and
  ``counterfactual`` through the front door; :mod:`.layout` — recognising an
  unrolled model; :mod:`.engine` — the Kalman engine in the query registry.

>>> from causalnet.models.statespace import StateSpace
>>> StateSpace([[1.0]], [[1.0]], [[1.0]], [[1.0]], [0.0], [[1.0]]).n_states
1
"""

from ...runtime import lazy_exports

__all__ = ["StateSpace", "StateEstimates", "kalman_filter", "rts_smoother", "kalman_smoother",
           "kalman_log_likelihood", "KalmanFilterResult", "KalmanSmootherResult"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "StateSpace": ".model:StateSpace",
    "StateEstimates": ".results:StateEstimates",
    "kalman_filter": ".kalman:kalman_filter",
    "rts_smoother": ".kalman:rts_smoother",
    "kalman_smoother": ".kalman:kalman_smoother",
    "kalman_log_likelihood": ".kalman:kalman_log_likelihood",
    "KalmanFilterResult": ".kalman:KalmanFilterResult",
    "KalmanSmootherResult": ".kalman:KalmanSmootherResult",
})
