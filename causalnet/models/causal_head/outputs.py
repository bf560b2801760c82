"""What one forward pass of the head gives: Cauchy decision laws, OvR probabilities, the numeric embedding."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import EvidenceError, ShapeError
from ...inference.cauchy import Cauchy

__all__ = ["HeadOutput", "ovr_probs", "softplus", "numeric_embedding", "real_array"]


def real_array(value, what: str, exc: type = ShapeError) -> np.ndarray:
    """`value` as a float64 array; complex, object or non-numeric input is refused (never silently cast)."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise exc(f"{what} must be a real numeric array, got {type(value).__name__}") from None
    if raw.dtype.kind not in "biuf":
        raise exc(f"{what} must hold real numbers, got dtype {raw.dtype}")
    return raw.astype(np.float64, copy=False)


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` without overflow."""
    return np.logaddexp(0.0, x)


def numeric_embedding(table: np.ndarray, w_num: np.ndarray, input_ids, numeric_values=None) -> np.ndarray:
    """Numerical-aware embedding ``table[ids] + sign(v) · ln(1 + |v|) · w_num``.

    Parameters
    ----------
    table : ndarray of shape (V, H)
    w_num : ndarray of shape (H,)
    input_ids : int array of shape (n, T)
    numeric_values : array of shape (n, T), optional
        The value at ``<NUM>`` positions, 0 elsewhere (``φ(0) = 0``).

    Returns
    -------
    ndarray of shape (n, T, H)
    """
    ids = np.asarray(input_ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise ShapeError(f"input_ids must be integer token ids, got {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise EvidenceError(f"token ids must lie in 0..{table.shape[0] - 1}, got [{ids.min()}, {ids.max()}]")
    e = table[ids]                                                   # (n, T, H)
    if numeric_values is not None:
        v = np.asarray(numeric_values, dtype=np.float64)
        if v.shape != ids.shape:
            raise ShapeError(f"numeric_values has shape {v.shape}; input_ids has {ids.shape}")
        if not np.all(np.isfinite(v)):
            raise EvidenceError("numeric_values contains NaN or inf")
        e = e + (np.sign(v) * np.log1p(np.abs(v)))[..., None] * w_num   # (n, T, H)
    return e


@dataclass
class HeadOutput:
    """Decision distributions of one forward pass.

    Attributes
    ----------
    loc_U, scale_U : ndarray of shape (n, T, C)
        The abducted individual ``U ~ Cauchy(loc_U, scale_U)``.
    loc_S, scale_S : ndarray of shape (n, T, V)
        Class scores ``S_k ~ Cauchy(loc_S, scale_S)``.
    loc_Y, scale_Y : ndarray of shape (n, T)
        Regression ``Y ~ Cauchy(loc_Y, scale_Y)``.
    thresholds : ndarray of shape (V,)
    mode : str
    u : ndarray of shape (n, T, C) or None
        The individual used (causal / individual modes).
    """

    loc_U: np.ndarray
    scale_U: np.ndarray
    loc_S: np.ndarray
    scale_S: np.ndarray
    loc_Y: np.ndarray
    scale_Y: np.ndarray
    thresholds: np.ndarray
    mode: str
    u: np.ndarray | None = None
    _probs: np.ndarray | None = field(default=None, repr=False)

    @property
    def probs(self) -> np.ndarray:
        """``(n, T, V)``: OvR probabilities ``P(S_k > C_k)``; softmax of ``loc_S`` in softmax mode."""
        from scipy.special import softmax  # loaded on first use, not by ``import causalnet``
        if self._probs is None:
            if self.mode == "softmax":
                self._probs = softmax(self.loc_S, axis=-1)
            else:
                self._probs = ovr_probs(self.loc_S, self.scale_S, self.thresholds)
        return self._probs

    @property
    def S(self) -> Cauchy:
        return Cauchy(self.loc_S, self.scale_S, method=f"causal head ({self.mode})")

    @property
    def Y(self) -> Cauchy:
        return Cauchy(self.loc_Y, self.scale_Y, method=f"causal head ({self.mode})")

    @property
    def U(self) -> Cauchy:
        return Cauchy(self.loc_U, self.scale_U, method="causal head (abduction)")

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens (n, T), values (n, T))``: argmax of :attr:`probs` and the median ``loc_Y``."""
        return np.argmax(self.probs, axis=-1), self.loc_Y

    def ovr_prob_sum(self) -> np.ndarray:
        """``(n, T)`` sum of the OvR probabilities (a calibration diagnostic; 1 is ideal)."""
        return ovr_probs(self.loc_S, self.scale_S, self.thresholds).sum(axis=-1)


def ovr_probs(loc_S: np.ndarray, scale_S: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """``P(S > C) = 1/2 + atan((loc − C)/scale)/π``, as ``atan2(scale, C − loc)/π`` (no tail cancellation)."""
    t = thresholds - loc_S                                               # (n, T, V), the only allocation
    np.arctan2(scale_S, t, out=t)
    t *= 1.0 / np.pi
    return t
