"""A batch of chains, validated and laid out for the engine: the engine's input contract.

:meth:`Chain.from_batch` checks the caller's potentials (unary ``(n, T, K)``,
pairwise ``(K, K)`` or ``(n, T-1, K, K)``, left-aligned mask ``(n, T)``; every
mismatch is a :class:`~causalnet.errors.ShapeError` naming expected vs given,
NaN or ``+inf`` a :class:`~causalnet.errors.ModelError`), then stores them
time-major with rows sorted by length so the rows alive at step ``t`` are a
prefix of the batch. Model builders that already hold their data in this layout
(the HMM) construct :class:`Chain` directly.

>>> import numpy as np
>>> ch = Chain.from_batch(np.zeros((2, 3, 2)), np.zeros((2, 2)), [[1, 1, 1], [1, 0, 0]])
>>> ch.T, ch.n, ch.K, ch.lengths.tolist()
(3, 2, 2, [3, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import EvidenceError, ModelError, NumericalError, ShapeError
from .kernels import last_axis_max

__all__ = ["ChainPosterior", "Chain", "validate_potentials", "raise_if_impossible"]


@dataclass(frozen=True)
class ChainPosterior:
    """Posterior summaries of a batch of chains (see :func:`forward_backward`).

    Attributes
    ----------
    marginals : ndarray of shape (n, T, K)
        ``p(y_t = k)``; rows beyond a sequence's length are 0.
    log_z : ndarray of shape (n,)
        Log-partition (log-likelihood for an HMM) of each row.
    edge_marginals : ndarray of shape (n, T-1, K, K) or None
        ``p(y_t = i, y_{t+1} = j)``; transitions beyond a row's length are 0.
        Only when requested with ``edges=True``.
    edge_counts : ndarray of shape (K, K) or None
        Expected transition counts: ``edge_marginals`` summed over rows and
        steps. Only when requested with ``edges=True`` or ``counts=True``.
    """

    marginals: np.ndarray
    log_z: np.ndarray
    edge_marginals: np.ndarray | None = None
    edge_counts: np.ndarray | None = None


class Chain:  # the engine's input contract (HMM builds it directly)
    """A validated batch of chains in the engine's internal layout.

    Time-major, rows sorted by length (longest first) so that the rows alive at
    step ``t`` are the prefix ``[:counts[t]]``.

    Attributes
    ----------
    u : ndarray of shape (T, n, K)
        Log unary potentials; ``-inf`` on padding.
    pw : ndarray of shape (K, K) or (T-1, n, K, K)
        Log pairwise potentials (per-step ones are 0 on padding).
    lengths : ndarray of shape (n,)
        Lengths in internal order (non-increasing).
    order : ndarray of shape (n,) or None
        ``order[i]`` is the caller's row held at internal row ``i``; None when
        the two orders agree.
    counts : ndarray of shape (T,)
        Rows alive at each step.
    time_chunks : tuple or None
        State a time-chunked forward sweep leaves for its backward sweep
        (see :mod:`.time_chunks`); None otherwise.
    allow_time_chunks : bool
        False forces step-by-step sweeps (set on rows being redone).
    backend : {"numba", "numpy"} or None
        Which sweeps run on this chain, decided once by :func:`.compiled.serves`.

    Parameters
    ----------
    u : ndarray of shape (T, n, K) or None
        Log unaries in this layout; None when ``u_fn`` computes them on demand.
    pw : ndarray of shape (K, K) or (T-1, n, K, K)
    lengths, order : as the attributes.
    shape : tuple (T, n, K), optional
        Required when ``u`` is None.
    scaled_u : tuple (B, off), optional
        Probability-space unaries ``B = exp(u - off)`` with ``off`` (T, n), when
        the caller has them cheaper than ``u`` (HMMs); ``B`` is 0 on padding.
    u_fn : callable, optional
        Returns ``u`` when first needed (log-space fallback, Viterbi).
    """

    def __init__(self, u, pw, lengths, order, *, shape=None, scaled_u=None, u_fn=None):
        # Callers that hold probability-space unaries (HMMs) pass ``scaled_u=(B, off)``
        # and ``u_fn`` (computes ``u`` on demand, for log-space fallback and Viterbi).
        self._u = u
        self._u_fn = u_fn
        self.pw = pw
        self.lengths = lengths
        self.order = order
        self.T, self.n, self.K = u.shape if shape is None else shape
        self.shared = pw.ndim == 2
        self.ragged = bool(self.n and lengths[-1] < self.T)
        if self.ragged:
            srt = lengths[::-1]  # ascending
            self.counts = self.n - np.searchsorted(srt, np.arange(self.T), side="right")
        else:
            self.counts = np.full(self.T, self.n, dtype=np.intp)
        self._scaled_u = scaled_u
        self._scaled_pw = None
        self.time_chunks = None  # time-chunk state, set by a chunked forward sweep
        self.allow_time_chunks = True
        self.backend = None  # "numba" or "numpy", decided once by compiled.serves

    @property
    def u(self):
        """Log unary potentials ``(T, n, K)``, ``-inf`` on padding (computed on first use)."""
        if self._u is None:
            self._u = self._u_fn()
        return self._u

    def release_unary(self):
        """Forget ``u`` (a sweep that owns it is about to overwrite it in place)."""
        self._u = None

    # -- construction -------------------------------------------------------

    @classmethod
    def from_batch(cls, unary, pairwise, mask):
        unary, pairwise, mask, lengths = validate_potentials(unary, pairwise, mask)
        n, T, K = unary.shape
        order = None
        if n and lengths.min() < T:
            order = np.argsort(-lengths, kind="stable")
            if np.array_equal(order, np.arange(n)):
                order = None
        rows = slice(None) if order is None else order
        # copies whenever padding is overwritten, so the caller's arrays are never touched
        u = np.array(unary[rows].transpose(1, 0, 2), order="C", copy=True if mask is not None else None)  # (T, n, K)
        lens = lengths[rows]
        if mask is not None:
            real = np.arange(T)[:, None] < lens[None, :]  # (T, n)
            u[~real] = -np.inf
        if pairwise.ndim == 4:
            pw = np.array(pairwise[rows].transpose(1, 0, 2, 3), order="C", copy=True if mask is not None else None)  # (T-1, n, K, K)
            if mask is not None and T > 1:
                live = np.arange(T - 1)[:, None] < (lens[None, :] - 1)  # (T-1, n)
                pw[~live] = 0.0
        else:
            pw = pairwise
        return cls(u, pw, np.ascontiguousarray(lens), order)

    def subset(self, rows):
        """The chain restricted to internal rows ``rows`` (sorted ascending)."""
        lens = self.lengths[rows]
        T = int(lens[0]) if len(lens) else 0
        u = self.u[:T, rows]
        pw = self.pw if self.shared else self.pw[: max(T - 1, 0), rows]
        return Chain(np.ascontiguousarray(u), np.ascontiguousarray(pw), lens, None)

    # -- helpers -------------------------------------------------------------

    def real(self):
        """(T, n) bool: True on real steps (internal order)."""
        return np.arange(self.n)[None, :] < self.counts[:, None]

    def to_batch(self, x):
        """Internal time-major ``(T', n, ...)`` -> caller's ``(n, T', ...)``."""
        x = np.swapaxes(x, 0, 1)  # (n, T', ...)
        if self.order is None:
            return np.ascontiguousarray(x)
        out = np.empty_like(x)
        out[self.order] = x
        return out

    def rows_to_batch(self, x):
        """Internal ``(n, ...)`` -> caller's order."""
        if self.order is None:
            return x
        out = np.empty_like(x)
        out[self.order] = x
        return out

    def scaled_unary(self):
        """``B = exp(u - off)`` with ``off`` the per-(t, row) max; B is 0 on padding."""
        if self._scaled_u is None:
            u = self.u
            off = last_axis_max(u)  # (T, n)
            off[~np.isfinite(off)] = 0.0  # padding / impossible steps
            B = u - off[..., None]
            np.exp(B, out=B)  # (T, n, K)
            self._scaled_u = (B, off)
        return self._scaled_u

    def scaled_pairwise(self):
        """``A = exp(pw - pmax)`` with ``pmax`` the max over (i, j) (per step if per-step)."""
        if self._scaled_pw is None:
            pw = self.pw
            pmax = pw.max(axis=(-2, -1))  # () or (T-1, n)
            pmax = np.where(np.isfinite(pmax), pmax, 0.0)
            A = np.exp(pw - pmax[..., None, None])
            self._scaled_pw = (A, pmax)
        return self._scaled_pw

    def pair_offset(self):
        """Per-row sum of the pairwise scale offsets over real transitions, shape (n,)."""
        A, pmax = self.scaled_pairwise()
        if self.shared:
            return pmax * (self.lengths - 1)
        return pmax.sum(axis=0)  # padding offsets are 0


# Long by design (complexity 17): one pass that checks unary, pairwise and mask together so every
# error names expected vs given shapes; splitting it would re-derive the shapes in each piece.
def validate_potentials(unary, pairwise, mask):
    unary = _as_real(unary, "unary potentials")
    if unary.ndim != 3:
        raise ShapeError(f"unary potentials must have shape (n, T, K); got shape {unary.shape}")
    n, T, K = unary.shape
    if K == 0:
        raise ShapeError(f"unary potentials have K=0 states (shape {unary.shape}); a chain needs at least one state")
    pairwise = _as_real(pairwise, "pairwise potentials")
    if pairwise.ndim == 2:
        if pairwise.shape != (K, K):
            raise ShapeError(
                f"pairwise potentials have shape {pairwise.shape}; unary has K={K} states, so expected "
                f"({K}, {K}) or (n, T-1, K, K) = ({n}, {max(T - 1, 0)}, {K}, {K})"
            )
    elif pairwise.ndim == 4:
        if pairwise.shape != (n, max(T - 1, 0), K, K):
            raise ShapeError(
                f"per-step pairwise potentials have shape {pairwise.shape}; unary has shape {unary.shape}, so "
                f"expected (n, T-1, K, K) = ({n}, {max(T - 1, 0)}, {K}, {K})"
            )
    else:
        raise ShapeError(
            f"pairwise potentials must have shape (K, K) or (n, T-1, K, K); got shape {pairwise.shape}"
        )

    if mask is None:
        lengths = np.full(n, T, dtype=np.intp)
        real = None
    else:
        try:
            mask = np.asarray(mask)
        except (TypeError, ValueError) as e:
            raise ShapeError(f"mask must be an array of shape (n, T) = ({n}, {T}); got a ragged sequence ({e})") from None
        if mask.shape != (n, T):
            raise ShapeError(f"mask must have shape (n, T) = ({n}, {T}) like unary; got shape {mask.shape}")
        if mask.dtype != bool:
            if mask.dtype == object or not np.isin(mask, (0, 1)).all():
                raise ShapeError(f"mask must be boolean (or 0/1); got dtype {mask.dtype} with other values")
            mask = mask.astype(bool)
        lengths = mask.sum(axis=1).astype(np.intp)
        real = np.arange(T)[None, :] < lengths[:, None]  # (n, T)
        if not np.array_equal(real, mask):
            r = int(np.flatnonzero((real != mask).any(axis=1))[0])
            t = int(np.flatnonzero(mask[r] & ~real[r])[0])
            raise ShapeError(
                f"mask row {r} is not left-aligned: step {t} is real after a padding step; "
                f"ragged sequences must hold their steps at the front"
            )
        if mask.all():
            mask = None
            real = None
    if n and (T == 0 or lengths.min() == 0):
        r = int(np.flatnonzero(lengths == 0)[0])
        raise EvidenceError(f"sequence (row) {r} has length 0; every sequence needs at least one step")

    _check_finite(unary, "unary", real)
    if pairwise.ndim == 2:
        _check_finite(pairwise, "pairwise", None)
    elif T > 1:
        live = None if real is None else real[:, 1:]  # transition t -> t+1 is real iff step t+1 is
        _check_finite(pairwise, "pairwise", live)
    return unary, pairwise, mask, lengths


def _as_real(x, name):
    """``x`` as a float64 array; ShapeError for ragged input, ModelError for non-numeric or complex."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise ShapeError(f"{name} must be a rectangular array; got a ragged sequence ({e})") from None
    if np.iscomplexobj(a) or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ModelError(f"{name} must be real numbers; got dtype {a.dtype}")
    return a.astype(np.float64, copy=False)


def _check_finite(x, name, real):
    """Raise on NaN or +inf at real positions (``-inf`` is a legal log-zero)."""
    bad = np.isnan(x) | (x == np.inf)
    if not bad.any():
        return
    if real is not None:
        bad &= real.reshape(real.shape + (1,) * (x.ndim - real.ndim))
        if not bad.any():
            return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    val = x[where]
    axes = {"unary": ("row", "step", "state"), "pairwise": ("row", "step", "from", "to")}[name]
    if x.ndim == 2:
        axes = ("from", "to")
    at = ", ".join(f"{a} {i}" for a, i in zip(axes, where))
    raise ModelError(f"{name} potentials must be finite or -inf; got {val} at {at}")


def raise_if_impossible(ch, log_z):
    """Raise for the rows whose ``log Z`` (``(n,)``, in `ch`'s row order) is not finite, naming the cause.

    Raises
    ------
    NumericalError
        If a row's ``log Z`` is ``+inf`` or NaN: the potentials are finite (checked before), so their sums
        overflowed the largest float; the message says so and how to rescale.
    EvidenceError
        If a row's ``log Z`` is ``-inf``: no path has a positive weight.
    """
    bad = ~np.isfinite(log_z)
    if not bad.any():
        return
    over = bad & ~np.isneginf(log_z)                        # +inf, or NaN from inf - inf: an overflow
    rows = np.flatnonzero(over if over.any() else bad)
    orig = np.sort(rows if ch.order is None else ch.order[rows])
    more = "" if len(orig) <= 5 else f" (and {len(orig) - 5} more)"
    if over.any():
        raise NumericalError(
            f"sequence (row) {orig[:5].tolist()}{more}: the log-weight of its paths (log Z) overflows "
            f"({log_z[rows[0]]}): the finite "
            f"potentials' sums along its paths exceed the largest float ({np.finfo(np.float64).max:.3g}), so "
            f"posteriors and paths are undefined; rescale the potentials (subtract a constant from the unary "
            f"or pairwise log-potentials: the posteriors do not change)"
        )
    raise EvidenceError(
        f"sequence (row) {orig[:5].tolist()}{more} has probability zero under the potentials "
        f"(log Z = -inf): no path is possible, so posteriors and paths are undefined"
    )

