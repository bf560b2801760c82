"""Validation of a state-space model's parameters and of the sequences given to it.

One rule per argument, checked before anything is stored or computed: real
and finite (a NaN in a parameter is a :class:`~causalnet.errors.ModelError`
naming it), the shape implied by the others (a
:class:`~causalnet.errors.ShapeError` with expected and given shapes), and
covariances symmetric positive semi-definite.

Symbols: ``n`` sequences, ``T`` steps, ``d`` state size, ``p`` observation size, ``k`` control size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import EvidenceError, ModelError, ShapeError

__all__ = ["Parameters", "check_parameters", "check_matrix", "check_cov", "Sequences", "as_sequences",
           "as_controls", "PSD_TOL", "MAX_ABS"]

#: relative tolerance on a covariance's asymmetry and on its most negative eigenvalue
PSD_TOL = 1e-9
#: largest observation accepted (squares and products of such values stay finite)
MAX_ABS = 1e100


@dataclass(frozen=True)
class Parameters:
    """A validated parameter set (read-only float64 arrays)."""

    transition: np.ndarray        # (d, d)
    observation: np.ndarray       # (p, d)
    transition_cov: np.ndarray    # (d, d)
    observation_cov: np.ndarray   # (p, p)
    initial_mean: np.ndarray      # (d,)
    initial_cov: np.ndarray       # (d, d)
    control: np.ndarray | None    # (d, k)

    @property
    def d(self) -> int:
        return self.transition.shape[0]

    @property
    def p(self) -> int:
        return self.observation.shape[0]

    @property
    def k(self) -> int:
        return 0 if self.control is None else self.control.shape[1]


def check_matrix(value, name: str, shape: tuple | None = None, *, ndim: int | None = None) -> np.ndarray:
    """`value` as a finite real float64 array of `shape` (or of `ndim` dimensions)."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"StateSpace {name} must be a real array, got {type(value).__name__}") from None
    if np.iscomplexobj(value):
        raise ModelError(f"StateSpace {name} must be real, got a complex array")
    if shape is not None and a.shape != shape:
        raise ShapeError(f"StateSpace {name} must have shape {shape}, got {a.shape}")
    if ndim is not None and a.ndim != ndim:
        raise ShapeError(f"StateSpace {name} must be a {ndim}-d array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ModelError(f"StateSpace {name} has non-finite entries (NaN or inf) at {np.argwhere(~np.isfinite(a))[0].tolist()}")
    a.setflags(write=False)
    return a


def check_cov(value, name: str, size: int) -> np.ndarray:
    """A symmetric positive semi-definite ``(size, size)`` covariance."""
    a = check_matrix(value, name, (size, size))
    scale = max(1.0, float(np.abs(a).max(initial=0.0)))
    if np.abs(a - a.T).max(initial=0.0) > PSD_TOL * scale:
        raise ModelError(f"StateSpace {name} must be symmetric, got an asymmetry of {np.abs(a - a.T).max():.3g}")
    low = float(np.linalg.eigvalsh(a).min(initial=0.0)) if size else 0.0
    if low < -PSD_TOL * scale:
        raise ModelError(f"StateSpace {name} must be positive semi-definite, got an eigenvalue of {low:.3g}")
    return a


def check_parameters(transition, observation, transition_cov, observation_cov, initial_mean, initial_cov,
                     control=None) -> Parameters:
    """Validate a full parameter set; the state size d comes from `transition`, p from `observation`."""
    A = check_matrix(transition, "transition", ndim=2)
    d = A.shape[0]
    if A.shape != (d, d) or d == 0:
        raise ShapeError(f"StateSpace transition must be a square (d, d) matrix with d >= 1, got shape {A.shape}")
    H = check_matrix(observation, "observation", ndim=2)
    if H.shape[1] != d or H.shape[0] == 0:
        raise ShapeError(f"StateSpace observation must have shape (p, {d}) (d = {d} from transition), got {H.shape}")
    p = H.shape[0]
    Q = check_cov(transition_cov, "transition_cov", d)
    R = check_cov(observation_cov, "observation_cov", p)
    m0 = check_matrix(initial_mean, "initial_mean", (d,))
    P0 = check_cov(initial_cov, "initial_cov", d)
    B = None
    if control is not None:
        B = check_matrix(control, "control", ndim=2)
        if B.shape[0] != d:
            raise ShapeError(f"StateSpace control must have shape ({d}, k), got {B.shape}")
    return Parameters(A, H, Q, R, m0, P0, B)


@dataclass
class Sequences:
    """Observation sequences laid out batch first, padded with NaN to one length."""

    y: np.ndarray          # (n, T, p)
    lengths: np.ndarray    # (n,) the real lengths
    batched: bool          # whether the caller gave a batch (a list or an (n, T, p) array)


def as_sequences(y, p: int) -> Sequences:
    """``(T,)`` (p = 1), ``(T, p)``, ``(n, T, p)`` or a list of ndarrays ``(T_i, p)`` as a padded ``(n, T, p)`` batch.

    Trailing NaN padding is exact for every sweep: a missing step adds nothing
    to the likelihood and, after the end, changes no earlier estimate.
    """
    if isinstance(y, (list, tuple)) and y and all(isinstance(s, np.ndarray) for s in y):   # a list of arrays
        seqs = [_one(s, p, f"y[{i}]") for i, s in enumerate(y)]
        T = max(s.shape[0] for s in seqs)
        out = np.full((len(seqs), T, p), np.nan)
        for i, s in enumerate(seqs):
            out[i, : s.shape[0]] = s
        return Sequences(out, np.array([s.shape[0] for s in seqs]), True)
    try:
        a = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ShapeError(f"y must be a real array of shape (T, {p}) or (n, T, {p}), got {type(y).__name__}") from None
    if a.ndim == 3:
        if a.shape[2] != p or a.shape[1] == 0 or a.shape[0] == 0:
            raise ShapeError(f"y must have shape (n, T, {p}) with n, T >= 1, got {a.shape}")
        _check_values(a, "y")
        return Sequences(a, np.full(a.shape[0], a.shape[1]), True)
    one = _one(a, p, "y")
    return Sequences(one[None], np.array([one.shape[0]]), False)


def _one(s, p: int, what: str) -> np.ndarray:
    try:
        a = np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError):
        raise ShapeError(f"{what} must be a real array of shape (T, {p}), got {type(s).__name__}") from None
    if a.ndim == 1 and p == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[1] != p or a.shape[0] == 0:
        raise ShapeError(f"{what} must have shape (T, {p}) with T >= 1, got {a.shape}")
    _check_values(a, what)
    return a


def _check_values(a: np.ndarray, what: str) -> None:
    """Observations are finite (NaN: missing) and at most :data:`MAX_ABS` in size."""
    big = np.abs(np.nan_to_num(a, nan=0.0, posinf=np.inf, neginf=np.inf)) > MAX_ABS
    if big.any():
        where = np.argwhere(big)[0].tolist()
        raise EvidenceError(f"{what} must be finite and at most {MAX_ABS:g} in size (NaN marks a missing "
                            f"observation; rescale large data), got {a[tuple(where)]} at {where}")


def as_controls(controls, params: Parameters, n: int, T: int) -> np.ndarray | None:
    """Control inputs ``u`` as the offsets ``B u`` of the transitions, ``(n, T-1, d)`` (None without controls).

    `controls` has shape ``(T-1, k)`` or ``(n, T-1, k)``: entry ``t-1`` drives
    the transition into step ``t``. A model with a ``control`` matrix needs
    them; a model without refuses them.
    """
    if params.control is None:
        if controls is not None:
            raise ModelError("controls given, but the StateSpace has no control matrix (pass control= to build it)")
        return None
    if controls is None:
        raise ModelError(f"this StateSpace has a control matrix of shape {params.control.shape}: pass controls= of "
                         f"shape ({T - 1}, {params.k}) (entry t-1 drives the transition into step t)")
    u = np.asarray(controls, dtype=np.float64)
    if u.ndim == 1 and params.k == 1:
        u = u[:, None]
    if u.ndim == 2:
        u = u[None]
    if u.ndim != 3 or u.shape[1:] != (T - 1, params.k) or u.shape[0] not in (1, n):
        raise ShapeError(f"controls must have shape ({T - 1}, {params.k}) or ({n}, {T - 1}, {params.k}), "
                         f"got {np.shape(controls)}")
    if not np.isfinite(u).all():
        raise ModelError("controls have non-finite entries (NaN or inf)")
    return np.ascontiguousarray(np.broadcast_to(u @ params.control.T, (n, T - 1, params.d)))   # (n, T-1, d)
