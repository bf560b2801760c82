"""The CRF training objective: CRFsuite's penalised negative log-likelihood and its gradient.

For labelled sequences ``(x_i, y_i)`` and weights ``w = (W, A)`` (state
weights ``W`` of shape (F, K), transition weights ``A`` of shape (K, K))::

    f(w) = sum_i -log p(y_i | x_i; w) + c2 * ||w||^2

(CRFsuite's convention: ``c2`` multiplies the squared norm itself, so the
penalty's gradient is ``2 * c2 * w``; the L1 part ``c1 * ||w||_1`` is left to
the optimiser, OWL-QN). The gradient is the expected minus the empirical
feature counts: ``X^T (marginals - onehot(y))`` for the state weights (one
sparse product) and expected minus observed transition counts for ``A``. The
expectations come from one forward-backward pass over the flat token array
(:mod:`causalnet.inference.chain.ragged`, a numba kernel; the padded chain
engine shared with the HMMs, :mod:`causalnet.inference.chain`, is its
reference and fallback).

Only the *active* weights are trained (pairs seen in the training data unless
``all_possible_states`` / ``all_possible_transitions``); they are packed into
one vector ``theta`` of length P, which is what the optimiser sees.

Examples
--------
>>> import numpy as np, scipy.sparse as sp
>>> from causalnet.inference.chain.layout import Layout
>>> X = sp.csr_matrix(np.eye(2))                       # two one-token sequences, F = 2
>>> obj = Objective(X, np.array([0, 1]), Layout(np.array([1, 1])),
...                 np.arange(4), np.arange(4), K=2, c2=0.0)
>>> f, g = obj(np.zeros(obj.size))
>>> bool(np.isclose(f, 2 * np.log(2)))                  # two uniform binary choices
True
"""

from __future__ import annotations

import numpy as np

from ...errors import EvidenceError, ModelError
from ...inference.chain import ragged
from .optimize import dot

__all__ = ["Objective", "active_weights"]

# Symbols: F attributes, K labels, N tokens, P trained weights.


class Objective:
    """Negative log-likelihood + c2 * ||w||^2 and its gradient, w packed as theta.

    Follows the objective contract of :mod:`.optimize`: ``obj(theta) -> (f, grad)``,
    with ``n_evals`` and ``last = (theta, f, grad, nll)`` kept up to date.

    One evaluation is two sparse products and one forward-backward pass:
    over the flat token array by
    :func:`causalnet.inference.chain.ragged.forward_backward_ragged` (a numba
    kernel over the ragged sequences, no padding, into a buffer kept between
    calls), or, on the ``"numpy"`` backend, over the padded batch by the
    chain engine. The two agree to rounding; which one ``None`` picks can
    depend on what ran earlier in the process (a compiled kernel is used).

    Parameters
    ----------
    Xd : sparse matrix of shape (N, F)
        Design matrix of the training tokens.
    y_idx : ndarray of int, shape (N,)
        Label index of every token.
    layout : Layout
        The sequences (``layout.lengths``) and their placement in the chain engine's padded batch.
    state_idx : ndarray of int
        Flat indices into W (F*K) of the trained state weights.
    trans_idx : ndarray of int
        Flat indices into A (K*K) of the trained transition weights.
    K : int
    c2 : float
    backend : {"numba", "numpy"} or None
        The forward-backward's: ``"numba"`` the ragged kernel, ``"numpy"`` the
        padded chain engine (the reference); None:
        :func:`causalnet.inference.chain.ragged.auto_backend` (the kernel for
        batches of ``N K^2 >= 2^20`` or once compiled, so small fits do not
        pay its compile time).
    """

    def __init__(self, Xd, y_idx, layout, state_idx, trans_idx, K, c2, backend=None):
        self.X = Xd  # (N, F)
        self.XT = Xd.T.tocsr()  # (F, N)
        self.layout = layout
        self.F = Xd.shape[1]
        self.K = K
        self.state_idx = state_idx  # flat indices into W (F*K)
        self.trans_idx = trans_idx  # flat indices into A (K*K)
        self.S = state_idx.size
        self.size = self.S + trans_idx.size  # P
        self.dense_states = self.S == self.F * K
        self.c2 = c2
        if backend is not None and backend not in ragged.BACKENDS:
            raise ModelError(f"CRF objective backend must be None or one of {list(ragged.BACKENDS)}; got {backend!r}")
        self.backend = backend or ragged.auto_backend(y_idx.size, K)
        self.emp = self._empirical_counts(y_idx)  # (P,)
        self.n_evals = 0
        self.last = None  # (theta, f, g, nll)
        self._W = None
        self._M = None  # (N, K) marginals of the ragged kernel, reused by every call

    def _empirical_counts(self, y_idx):
        """Observed counts (P,) of the trained features."""
        K, N = self.K, y_idx.size
        onehot = np.zeros((N, K))  # (N, K)
        onehot[np.arange(N), y_idx] = 1.0
        emp_w = (self.XT @ onehot).ravel()  # (F*K,)
        lengths = self.layout.lengths
        nxt = np.ones(N, bool)
        nxt[np.cumsum(lengths) - lengths] = False  # tokens that have a predecessor
        emp_a = np.bincount(y_idx[np.flatnonzero(nxt) - 1] * K + y_idx[nxt], minlength=K * K).astype(float)
        return np.concatenate([emp_w[self.state_idx], emp_a[self.trans_idx]])  # (P,)

    def unpack(self, theta):
        """Weights (F, K) and (K, K) of packed `theta`; W may be a reused buffer."""
        F, K = self.F, self.K
        if self.dense_states:
            W = theta[: self.S].reshape(F, K)  # (F, K)
        else:
            if self._W is None:
                self._W = np.zeros(F * K)  # entries outside state_idx stay 0
            self._W[self.state_idx] = theta[: self.S]
            W = self._W.reshape(F, K)  # (F, K)
        A = np.zeros(K * K)
        A[self.trans_idx] = theta[self.S :]
        return W, A.reshape(K, K)

    def __call__(self, theta):
        W, A = self.unpack(theta)
        U = self.X @ W  # (N, K)
        try:
            log_z, M, E = self._posterior(U, A)
        except (ModelError, EvidenceError, ArithmeticError):
            if np.isfinite(U).all() and np.isfinite(A).all():
                raise
            return np.inf, np.full_like(theta, np.nan)  # overflow at a trial point: the line search backs off
        nll = float(log_z.sum()) - dot(theta, self.emp)
        if not np.isfinite(nll):
            return np.inf, np.full_like(theta, np.nan)
        G = self.XT @ M  # (F, K) expected state-feature counts
        Gf = G.ravel() if self.dense_states else G.ravel()[self.state_idx]
        grad = np.concatenate([Gf, E.ravel()[self.trans_idx]]) - self.emp  # (P,)
        f = nll + self.c2 * dot(theta, theta)
        grad += 2.0 * self.c2 * theta
        self.n_evals += 1
        self.last = (theta, f, grad, nll)
        return f, grad

    def _posterior(self, U, A):
        """log Z (n,), token marginals (N, K) and expected transition counts (K, K)."""
        lay = self.layout
        if self.backend == "numpy":
            return ragged.forward_backward_padded(U, A, lay.lengths, layout=lay)
        if self._M is None:
            self._M = np.empty_like(U)
        return ragged.forward_backward_ragged(U, A, lay.lengths, backend="numba", out=self._M)


def active_weights(Xd, y_idx, lengths, K, all_states, all_transitions, min_freq):
    """Flat indices of the weights that are trained (the rest stay zero).

    Returns
    -------
    state_idx : ndarray of int
        Into W raveled (F*K): pairs (attribute, label) seen together in training
        (all pairs if `all_states`), with summed value above `min_freq`.
    trans_idx : ndarray of int
        Into A raveled (K*K): label bigrams seen in training (all if `all_transitions`).
    """
    F = Xd.shape[1]
    if all_states and min_freq == 0:
        state_idx = np.arange(F * K)
    else:
        coo = Xd.tocoo()
        pair = coo.col * K + y_idx[coo.row]  # (nnz,)
        present = np.bincount(pair, minlength=F * K) > 0
        if all_states:
            present[:] = True
        if min_freq > 0:
            present &= np.bincount(pair, weights=coo.data, minlength=F * K) > min_freq
        state_idx = np.flatnonzero(present)
    if all_transitions:
        trans_idx = np.arange(K * K)
    else:
        first = np.cumsum(lengths) - lengths
        nxt = np.ones(y_idx.size, bool)
        nxt[first] = False
        trans_idx = np.unique(y_idx[np.flatnonzero(nxt) - 1] * K + y_idx[nxt])
    return state_idx, trans_idx
