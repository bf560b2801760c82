"""Linear-Gaussian state-space models (Kalman): the estimator, its numeric core, and the model as a causal model.

* :mod:`.kalman` — the array-in, array-out core: :func:`~.kalman.kalman_filter`,
  :func:`~.kalman.rts_smoother`, :func:`~.kalman.kalman_log_likelihood`
  (missing observations, per-step parameters, offsets, resets for ``do``);
* :mod:`.kernels` — the compiled (numba) filter and smoother sweeps;
"""

from ...runtime import lazy_exports

__all__ = ["kalman_filter", "rts_smoother", "kalman_smoother", "kalman_log_likelihood", "KalmanFilterResult",
           "KalmanSmootherResult"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "kalman_filter": ".kalman:kalman_filter",
    "rts_smoother": ".kalman:rts_smoother",
    "kalman_smoother": ".kalman:kalman_smoother",
    "kalman_log_likelihood": ".kalman:kalman_log_likelihood",
    "KalmanFilterResult": ".kalman:KalmanFilterResult",
    "KalmanSmootherResult": ".kalman:KalmanSmootherResult",
})
