"""The CRF's state-weight products on the packed weights: numba kernels, with scipy as the reference.

Only *active* state weights are trained (:func:`.objective.active_weights`),
stored attribute by attribute in the packed vector ``theta``: attribute
``a``'s weights are ``theta[aptr[a]:aptr[a+1]]``, for the labels
``lab[aptr[a]:aptr[a+1]]``. Two products over the design matrix ``X``
(CSR, ``N x F``) make the objective's state part:

* scores: ``U[i, lab[q]] += X[i, a] * theta[q]`` over the weights ``q`` of
  every attribute ``a`` of token ``i`` -- the unary log-potentials ``X @ W``;
* gradient: ``g[q] += X[i, a] * M[i, lab[q]]`` -- the expected state-feature
  counts ``(X^T M)[a, lab[q]]`` for token marginals ``M``.

Run straight on the packed weights they touch ``theta`` (~1 MB on the
benchmark) instead of a dense ``(F, K)`` matrix (~7 MB) and need no
transposed copy of ``X``. Both visit the entries in the order scipy's
``X @ W`` and ``X.T @ M`` do (tokens ascending), so the sums agree with the
reference to the last bit apart from exact zeros.

The backend is ``"numba"`` when numba is importable, else ``"numpy"`` (the
scipy sparse products on a dense ``W``, :func:`scores_numpy` and
:func:`gradient_numpy`). The environment variable ``CAUSALNET_CRF_BACKEND``
(``"numpy"``, ``"numba"`` or ``"auto"``) sets it at import; :func:`set_backend`
and the context manager :func:`backend` at run time. The kernels compile on
first use (no on-disk cache: see :mod:`causalnet.inference.chain.compiled`).

>>> import numpy as np, scipy.sparse as sp
>>> X = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]))   # N = 2 tokens, F = 2 attributes
>>> blocks = StateBlocks(X, np.array([0, 3]), K=2)          # weights (attr 0, label 0) and (attr 1, label 1)
>>> state_scores(blocks, np.array([0.5, -1.0]), np.empty((2, 2)), "numpy").tolist()
[[0.5, -2.0], [0.0, -1.0]]
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from ...errors import ModelError

try:  # numba is a regular dependency; scipy's products remain the reference
    import numba
except ImportError:  # pragma: no cover - exercised only without numba
    numba = None

__all__ = [
    "AVAILABLE", "ENV_VAR", "BACKENDS", "enabled", "get_backend", "set_backend", "backend",
    "StateBlocks", "scores_kernel", "gradient_kernel", "state_scores", "state_gradient",
    "scores_numpy", "gradient_numpy",
]  # fmt: skip

# Symbols: N tokens, F attributes, K labels, S trained state weights, nnz entries of X.

AVAILABLE = numba is not None
ENV_VAR = "CAUSALNET_CRF_BACKEND"
BACKENDS = ("auto", "numba", "numpy")

_state = {"name": "auto"}


def _resolve(name):
    if not isinstance(name, str) or name not in BACKENDS:
        raise ModelError(f"CRF backend must be one of {list(BACKENDS)}; got {name!r}")
    if name == "numba" and not AVAILABLE:
        raise ModelError("CRF backend 'numba' was requested but numba is not installed (pip install numba)")
    return name


def enabled():
    """True when the numba kernels run (backend ``"numba"``, or ``"auto"`` with numba importable)."""
    return AVAILABLE and _state["name"] != "numpy"


def get_backend():
    """The backend in force: ``"numba"`` or ``"numpy"``."""
    return "numba" if enabled() else "numpy"


def set_backend(name):
    """Choose ``"numba"``, ``"numpy"`` or ``"auto"``; returns the previous setting.

    Raises
    ------
    ModelError
        For an unknown name, or ``"numba"`` when numba is not installed.
    """
    prev = _state["name"]
    _state["name"] = _resolve(name)
    return prev


@contextmanager
def backend(name):
    """Run a block with the given backend (see :func:`set_backend`), then restore the previous one."""
    prev = set_backend(name)
    try:
        yield
    finally:
        _state["name"] = prev


_env = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
_state["name"] = _env if _env in BACKENDS and (_env != "numba" or AVAILABLE) else "auto"


def _njit(fn):
    """``numba.njit`` with numpy's float semantics, compiled on first use, no on-disk cache."""
    if numba is None:  # pragma: no cover
        return fn
    return numba.njit(cache=False, nogil=True, error_model="numpy")(fn)


@_njit
def scores_kernel(indptr, indices, data, aptr, lab, theta, U):  # pragma: no cover - compiled
    """``U = X @ W`` from the packed weights: U (N, K) is overwritten."""
    N, K = U.shape
    for i in range(N):
        for k in range(K):
            U[i, k] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            a = indices[p]
            v = data[p]
            for q in range(aptr[a], aptr[a + 1]):
                U[i, lab[q]] += v * theta[q]


@_njit
def gradient_kernel(indptr, indices, data, aptr, lab, M, g):  # pragma: no cover - compiled
    """``g[q] = (X^T M)[a(q), lab[q]]`` for every packed state weight q: g (S,) is overwritten."""
    for q in range(g.size):
        g[q] = 0.0
    for i in range(M.shape[0]):
        for p in range(indptr[i], indptr[i + 1]):
            a = indices[p]
            v = data[p]
            for q in range(aptr[a], aptr[a + 1]):
                g[q] += v * M[i, lab[q]]


class StateBlocks:
    """The design matrix and the packed state weights' layout, as the kernels read them.

    Parameters
    ----------
    X : sparse matrix of shape (N, F)
    state_idx : ndarray of int, shape (S,)
        Sorted flat indices into the raveled ``(F, K)`` weight matrix.
    K : int

    Attributes
    ----------
    indptr, indices, data : X in CSR form (int64, int64, float64)
    aptr : ndarray of int, shape (F+1,)
        Attribute ``a``'s weights are ``theta[aptr[a]:aptr[a+1]]``.
    lab : ndarray of int, shape (S,)
        The label of every packed weight.
    """

    __slots__ = ("X", "XT", "state_idx", "K", "indptr", "indices", "data", "aptr", "lab", "_W")

    def __init__(self, X, state_idx, K):
        X = X.tocsr()
        self.X, self.XT, self.state_idx, self.K = X, None, state_idx, K
        self.indptr = X.indptr.astype(np.int64)
        self.indices = X.indices.astype(np.int64)
        self.data = X.data.astype(np.float64)
        self.aptr = np.zeros(X.shape[1] + 1, np.int64)
        np.cumsum(np.bincount(state_idx // K, minlength=X.shape[1]), out=self.aptr[1:])
        self.lab = (state_idx % K).astype(np.int64)  # (S,)
        self._W = None

    def dense(self, theta_s):
        """The (F, K) weight matrix of packed state weights (a reused buffer)."""
        F, K = self.X.shape[1], self.K
        if self.state_idx.size == F * K:  # every pair trained: theta_s is W, raveled
            return theta_s.reshape(F, K)
        if self._W is None:
            self._W = np.zeros(F * K)  # entries outside state_idx stay 0
        self._W[self.state_idx] = theta_s
        return self._W.reshape(F, K)  # (F, K)


def scores_numpy(blocks, theta_s, out):
    """Reference of :func:`scores_kernel`: ``X @ W`` by scipy, into `out` (N, K)."""
    out[...] = blocks.X @ blocks.dense(theta_s)
    return out


def gradient_numpy(blocks, M, out):
    """Reference of :func:`gradient_kernel`: ``(X^T M)`` at the packed weights, by scipy, into `out` (S,)."""
    if blocks.XT is None:
        blocks.XT = blocks.X.T.tocsr()  # (F, N)
    out[...] = (blocks.XT @ M).ravel()[blocks.state_idx]
    return out


def state_scores(blocks, theta_s, out, backend=None):
    """Unary log-potentials ``X @ W`` (N, K) of packed state weights `theta_s` (S,), into `out`.

    `backend` ``"numba"`` or ``"numpy"``; None: the one in force (:func:`get_backend`).
    """
    if (backend or get_backend()) == "numba":
        scores_kernel(blocks.indptr, blocks.indices, blocks.data, blocks.aptr, blocks.lab, theta_s, out)
        return out
    return scores_numpy(blocks, theta_s, out)


def state_gradient(blocks, M, out, backend=None):
    """Expected state-feature counts ``X^T M`` at the packed weights, (S,), into `out`.

    `M` (N, K) holds one row per token (marginals, or one-hot labels for the observed counts).
    """
    if (backend or get_backend()) == "numba":
        gradient_kernel(blocks.indptr, blocks.indices, blocks.data, blocks.aptr, blocks.lab, M, out)
        return out
    return gradient_numpy(blocks, M, out)
