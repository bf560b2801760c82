"""The linear-Gaussian state-space model (a Kalman model): the estimator and its causal reading.

:class:`StateSpace` holds ``A`` (transition), ``H`` (observation), ``Q``,
``R`` (their noise covariances), the initial law and an optional control
matrix ``B``::

    Z[0] ~ N(initial_mean, initial_cov)
    Z[t] = A Z[t-1] + B u[t] + w,  w ~ N(0, Q)        Y[t] = H Z[t] + v,  v ~ N(0, R)

Its sweeps (:meth:`~StateSpace.filter`, :meth:`~StateSpace.smooth`,
:meth:`~StateSpace.log_likelihood`) run the Kalman core of :mod:`.kalman`
on one sequence, an ``(n, T, p)`` batch or a list of sequences of different
lengths, with NaN for missing observations; :meth:`~StateSpace.fit` runs EM
(:mod:`.em`). As a causal model it unrolls (:meth:`~StateSpace.to_model`,
:mod:`.causal`) into scalar linear-Gaussian nodes, and its ``query`` /
``counterfactual`` are requests of the library's front door, where the
Kalman engine (:mod:`.engine`) answers state queries under ``do``.

Symbols: ``n`` sequences, ``T`` steps, ``d`` state size, ``p`` observation size, ``k`` control size.
"""

from __future__ import annotations

import numpy as np

from ...arguments import as_generator, check_int
from ...errors import ModelError
from . import causal, em
from .checks import Parameters, as_controls, as_sequences, check_parameters
from .kalman import kalman_filter, rts_smoother
from .results import StateEstimates

__all__ = ["StateSpace", "FILTER_METHOD", "SMOOTHER_METHOD"]

FILTER_METHOD = "exact (Kalman filter, Joseph form)"
SMOOTHER_METHOD = "exact (Rauch–Tung–Striebel smoother)"


class StateSpace:
    """A linear-Gaussian state-space model.

    Parameters
    ----------
    transition : array_like of shape (d, d)
        ``A``: ``Z[t] = A Z[t-1] + B u[t] + w``.
    observation : array_like of shape (p, d)
        ``H``: ``Y[t] = H Z[t] + v``.
    transition_cov : array_like of shape (d, d)
        ``Q = Cov(w)``, symmetric positive semi-definite.
    observation_cov : array_like of shape (p, p)
        ``R = Cov(v)``, symmetric positive semi-definite.
    initial_mean : array_like of shape (d,)
    initial_cov : array_like of shape (d, d)
    control : array_like of shape (d, k), optional
        ``B``; the sweeps then take ``controls`` of shape ``(T-1, k)`` (entry
        ``t-1`` drives the transition into step ``t``).
    state_names, observation_names : sequence of str, optional
        Component names, used by the unrolled model's nodes (``pos[3]``,
        ``vel[3]``). Default ``("Z",)`` for a scalar state, else ``Z0, Z1, ...``;
        ``("Y",)`` or ``Y0, Y1, ...``. ``"Z[t]"`` and ``"Y[t]"`` always name the
        whole vectors in :meth:`query`.

    Raises
    ------
    ShapeError
        A parameter's shape disagrees with the others (expected and given shapes named).
    ModelError
        NaN or inf in a parameter; a covariance not symmetric positive semi-definite.

    Examples
    --------
    >>> import numpy as np
    >>> ss = StateSpace([[1.0]], [[1.0]], [[0.1]], [[0.5]], [0.0], [[1.0]])
    >>> est = ss.smooth(np.array([0.2, np.nan, 0.4]))
    >>> est.mean.shape, est.cov.shape
    ((3, 1), (3, 1, 1))
    >>> ss.query("Z[1]", evidence={"Y[0]": 0.2, "Y[2]": 0.4}).mean.round(4)
    array([0.2452])
    """

    def __init__(self, transition, observation, transition_cov, observation_cov, initial_mean, initial_cov,
                 control=None, *, state_names=None, observation_names=None) -> None:
        self.params = check_parameters(transition, observation, transition_cov, observation_cov, initial_mean,
                                       initial_cov, control)
        self.state_names, self.observation_names = causal.component_names(
            state_names, observation_names, self.params.d, self.params.p)
        self.history_: list[float] = []

    # -- parameters ------------------------------------------------------------------

    transition = property(lambda self: self.params.transition, doc="``A``, (d, d)")
    observation = property(lambda self: self.params.observation, doc="``H``, (p, d)")
    transition_cov = property(lambda self: self.params.transition_cov, doc="``Q``, (d, d)")
    observation_cov = property(lambda self: self.params.observation_cov, doc="``R``, (p, p)")
    initial_mean = property(lambda self: self.params.initial_mean, doc="(d,)")
    initial_cov = property(lambda self: self.params.initial_cov, doc="(d, d)")
    control = property(lambda self: self.params.control, doc="``B``, (d, k) or None")

    @property
    def n_states(self) -> int:
        """The state size d."""
        return self.params.d

    @property
    def n_outputs(self) -> int:
        """The observation size p."""
        return self.params.p

    def _with(self, params: Parameters) -> StateSpace:
        out = StateSpace.__new__(StateSpace)
        out.params, out.state_names, out.observation_names = params, self.state_names, self.observation_names
        out.history_ = []
        return out

    def __repr__(self) -> str:
        ctrl = "" if self.params.control is None else f", k={self.params.k}"
        return f"StateSpace(d={self.params.d}, p={self.params.p}{ctrl}, states={list(self.state_names)})"

    # -- sweeps ----------------------------------------------------------------------

    def _sweep(self, y, controls, *, smooth: bool, backend=None):
        seqs = as_sequences(y, self.params.p)
        n, T, _ = seqs.y.shape
        offsets = as_controls(controls, self.params, n, T)
        P = self.params
        f = kalman_filter(seqs.y, P.transition, P.observation, P.transition_cov, P.observation_cov,
                          P.initial_mean, P.initial_cov, offsets=offsets, backend=backend)
        s = rts_smoother(f, P.transition, backend=backend) if smooth else None
        return seqs, f, s

    def _estimates(self, seqs, mean, cov, ll, kind, method):
        if isinstance(seqs.y, np.ndarray) and seqs.batched and (seqs.lengths == seqs.y.shape[1]).all():
            return StateEstimates(mean, cov, ll, self.state_names, kind, method)
        if seqs.batched:                                   # a list: one estimate per sequence, its own length
            return [StateEstimates(mean[i, :L], cov[i, :L], float(ll[i]), self.state_names, kind, method)
                    for i, L in enumerate(seqs.lengths)]
        return StateEstimates(mean[0], cov[0], float(ll[0]), self.state_names, kind, method)

    def filter(self, y, controls=None, *, backend: str | None = None):
        """Filtered estimates ``E[Z[t] | Y[0..t]]``, ``Cov[Z[t] | Y[0..t]]``.

        Parameters
        ----------
        y : array_like of shape (T,) (p = 1), (T, p) or (n, T, p), or a list of ndarrays (T_i, p)
            NaN marks a missing observation (a whole row or some components).
        controls : array_like of shape (T-1, k) or (n, T-1, k), optional
            Required when the model has a control matrix.
        backend : {"numba", "numpy"}, optional
            The sweep (default: the chain family's switch, :mod:`causalnet.runtime`).

        Returns
        -------
        StateEstimates
            ``mean (T, d)``, ``cov (T, d, d)`` (batch first for an ``(n, T, p)``
            batch; a list of them for a list), ``log_likelihood``.
        """
        seqs, f, _ = self._sweep(y, controls, smooth=False, backend=backend)
        return self._estimates(seqs, f.filtered_means, f.filtered_covs, f.log_likelihood, "filtered", FILTER_METHOD)

    def smooth(self, y, controls=None, *, backend: str | None = None):
        """Smoothed estimates ``E[Z[t] | Y[0..T-1]]`` by the Rauch–Tung–Striebel recursion (arguments as :meth:`filter`)."""
        seqs, f, s = self._sweep(y, controls, smooth=True, backend=backend)
        return self._estimates(seqs, s.smoothed_means, s.smoothed_covs, f.log_likelihood, "smoothed", SMOOTHER_METHOD)

    def log_likelihood(self, y, controls=None, *, backend: str | None = None):
        """``log p(y)`` of the observed components: a float, or ``(n,)`` for a batch or a list."""
        seqs, f, _ = self._sweep(y, controls, smooth=False, backend=backend)
        return f.log_likelihood if seqs.batched else float(f.log_likelihood[0])

    def score(self, y, controls=None) -> float:
        """The total log-likelihood of all sequences (hmmlearn's ``score``)."""
        return float(np.sum(self.log_likelihood(y, controls)))

    def sample(self, T: int, n: int | None = None, *, seed=None, controls=None):
        """Draw states and observations.

        Parameters
        ----------
        T : int
            Steps.
        n : int, optional
            Sequences; None draws one.
        seed : int or Generator, optional
        controls : array_like of shape (T-1, k) or (n, T-1, k), optional

        Returns
        -------
        states : ndarray of shape (T, d) or (n, T, d)
        observations : ndarray of shape (T, p) or (n, T, p)
        """
        T = check_int(T, "T", low=1)
        m = 1 if n is None else check_int(n, "n", low=1)
        rng = as_generator(seed)
        P = self.params
        offsets = as_controls(controls, P, m, T)
        roots = [_root(c) for c in (P.initial_cov, P.transition_cov, P.observation_cov)]
        z = np.empty((m, T, P.d))
        z[:, 0] = P.initial_mean + rng.standard_normal((m, P.d)) @ roots[0].T                 # (m, d)
        for t in range(1, T):
            z[:, t] = z[:, t - 1] @ P.transition.T + rng.standard_normal((m, P.d)) @ roots[1].T
            if offsets is not None:
                z[:, t] += offsets[:, t - 1]
        y = z @ P.observation.T + rng.standard_normal((m, T, P.p)) @ roots[2].T                 # (m, T, p)
        return (z[0], y[0]) if n is None else (z, y)

    def fit(self, y, method: str = "em", *, controls=None, n_iter: int = 100, tol: float = 1e-8,
            estimate=None) -> StateSpace:
        """Fit the parameters by expectation-maximisation (Shumway & Stoffer).

        Parameters
        ----------
        y : as in :meth:`filter` (missing observations allowed)
        method : {"em"}
        controls : optional, as in :meth:`filter`
        n_iter : int
            At most this many EM iterations.
        tol : float
            Stop when the log-likelihood gains less than ``tol`` (absolute).
        estimate : iterable of str, optional
            The parameters to update, among ``"transition"``, ``"observation"``,
            ``"transition_cov"``, ``"observation_cov"``, ``"initial_mean"``,
            ``"initial_cov"``, ``"control"``; default all (the rest stay fixed).

        Returns
        -------
        self
            With the fitted parameters; ``history_`` lists the log-likelihood
            before each update (non-decreasing, as EM guarantees).
        """
        if method != "em":
            raise ModelError(f"method must be 'em', got {method!r}")
        params, history = em.fit_em(self.params, y, controls, n_iter=n_iter, tol=tol, estimate=estimate)
        self.params, self.history_ = params, history        # assigned only once the fit succeeded
        return self

    # -- the causal model ---------------------------------------------------------------

    def to_model(self, T: int, controls=None):
        """The model unrolled over `T` steps as a :class:`~causalnet.CausalModel` of scalar linear-Gaussian nodes.

        One node per component and step (``Z[t]``, or ``Z0[t], Z1[t], ...``; ``Y[t]``
        likewise); see :mod:`.causal` for how correlated noise is written with
        scalar nodes. `controls` ``(T-1, k)`` enter as the nodes' biases.
        """
        return causal.to_model(self, T, controls)

    def query(self, targets, *, evidence=None, do=None, controls=None):
        """Exact ``P(targets | evidence, do)`` on the unrolled model, answered by Kalman recursions.

        Parameters
        ----------
        targets : node name or list of names
            ``"Z[t]"`` (the whole state), a component ``"Z1[t]"``, ``"Y[t]"``, ...
        evidence : mapping name -> value, or array_like of shape (T, p), optional
            Observations (``"Y[t]"``: a ``(p,)`` vector, a scalar when p = 1, or
            ``(n, p)`` rows for a batch); an array is the whole sequence with
            NaN where missing.
        do : mapping name -> value, optional
            ``{"Z[10]": 0.0}`` sets the whole state at step 10 (a scalar, a
            ``(d,)`` vector or ``(n, d)`` rows): it cuts ``Z[10]`` from its past.
        controls : array_like of shape (T-1, k), optional

        Returns
        -------
        Gaussian
            Over the targets' component nodes; ``.method`` names the engine
            (``"exact (Kalman ...)"`` when the Kalman engine answered).
        """
        return causal.query(self, targets, evidence=evidence, do=do, controls=controls)

    def counterfactual(self, targets, *, evidence=None, do=None, controls=None):
        """``P(targets_{do} | evidence)`` on the unrolled model, exact by the Gaussian twin engine.

        Arguments as in :meth:`query`; the SCM is the unrolled model's (see
        :mod:`.causal`).
        """
        return causal.counterfactual(self, targets, evidence=evidence, do=do, controls=controls)


def _root(cov: np.ndarray) -> np.ndarray:
    """A square root ``S`` with ``S S^T = cov`` (eigen-decomposition: fine for semi-definite covariances)."""
    w, v = np.linalg.eigh(cov)
    return v * np.sqrt(np.clip(w, 0.0, None))
