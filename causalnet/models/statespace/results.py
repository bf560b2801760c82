"""What the state-space sweeps return: per-step Gaussian estimates of the state.

A filter or smoother gives, at every step, the mean and covariance of the
state given the observations (up to that step, or all of them). The estimates
are not one joint law over all steps, so they are kept as a sequence; one
step's estimate is the library's :class:`~causalnet.distributions.Gaussian`
(``est[t]``), over the state nodes of the unrolled model (``Z[t]``, or
``pos[t]``, ``vel[t]`` with named components).

Symbols: ``n`` sequences, ``T`` steps, ``d`` state size.
"""

from __future__ import annotations

import numpy as np

from ...distributions import Gaussian
from ...errors import EvidenceError

__all__ = ["StateEstimates"]


class StateEstimates:
    """Per-step Gaussian estimates of the state.

    Attributes
    ----------
    mean : ndarray of shape (T, d), or (n, T, d) for a batch
    cov : ndarray of shape (T, d, d), or (n, T, d, d)
    log_likelihood : float, or ndarray (n,)
        ``log p(y)`` of the observed components.
    names : tuple of str
        The state components (``("Z",)`` for a scalar state).
    kind : {"filtered", "smoothed", "predicted"}
    method : str
        ``"exact (Kalman filter)"`` or ``"exact (Rauch–Tung–Striebel smoother)"``.

    Examples
    --------
    >>> import numpy as np
    >>> est = StateEstimates(np.zeros((3, 1)), np.ones((3, 1, 1)), -1.5, ("Z",), "filtered", "exact (Kalman filter)")
    >>> est[2].variables, float(est.std[2, 0])
    (('Z[2]',), 1.0)
    """

    def __init__(self, mean, cov, log_likelihood, names, kind: str, method: str) -> None:
        self.mean = np.asarray(mean, dtype=np.float64)
        self.cov = np.asarray(cov, dtype=np.float64)
        self.log_likelihood = log_likelihood
        self.names = tuple(names)
        self.kind = kind
        self.method = method

    @property
    def batched(self) -> bool:
        return self.mean.ndim == 3

    @property
    def T(self) -> int:
        return self.mean.shape[-2]

    @property
    def std(self) -> np.ndarray:
        """Marginal standard deviations, shape like `mean`."""
        return np.sqrt(np.maximum(np.diagonal(self.cov, axis1=-2, axis2=-1), 0.0))

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """The central marginal band ``mean -/+ z * std`` of each component, each of `mean`'s shape."""
        from scipy.special import ndtri

        if not 0.0 < level < 1.0:
            raise EvidenceError(f"level must be in (0, 1), got {level!r}")
        z = float(ndtri(0.5 + level / 2))
        return self.mean - z * self.std, self.mean + z * self.std

    def __getitem__(self, t: int) -> Gaussian:
        """The estimate at step `t` as a :class:`~causalnet.distributions.Gaussian` (batch first for a batch)."""
        if not isinstance(t, (int, np.integer)) or not -self.T <= t < self.T:
            raise EvidenceError(f"step {t!r} is outside 0..{self.T - 1}")
        t = int(t) % self.T
        cov = self.cov[..., t, :, :]
        if self.batched and not np.allclose(cov, cov[:1], rtol=0, atol=0):
            raise EvidenceError(f"the batch's sequences have different covariances at step {t} (different missing "
                                "observations): read est.mean[i, t] and est.cov[i, t] per sequence")
        return Gaussian([f"{c}[{t}]" for c in self.names], self.mean[..., t, :], cov[0] if self.batched else cov,
                        batched=self.batched, method=self.method)

    def to_pandas(self):
        """A DataFrame with one row per step (and sequence): ``mean_<c>``, ``sd_<c>`` for each component ``c``."""
        import pandas as pd

        mean = self.mean.reshape(-1, len(self.names))
        sd = self.std.reshape(-1, len(self.names))
        frame = pd.DataFrame({**{f"mean_{c}": mean[:, i] for i, c in enumerate(self.names)},
                              **{f"sd_{c}": sd[:, i] for i, c in enumerate(self.names)}})
        if self.batched:
            n, T = self.mean.shape[:2]
            frame.index = pd.MultiIndex.from_product([range(n), range(T)], names=["sequence", "t"])
        else:
            frame.index.name = "t"
        return frame

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.mean.shape))
        ll = self.log_likelihood
        ll = f"{float(ll):.6g}" if np.ndim(ll) == 0 else f"array of {np.size(ll)}"
        return f"<StateEstimates {self.kind}: mean {shape} over {list(self.names)}, log_likelihood {ll}, " \
               f"method={self.method!r}>"
