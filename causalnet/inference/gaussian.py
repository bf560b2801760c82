"""Exact inference in linear-Gaussian models.

Every node of a linear-Gaussian SCM is an affine function of the independent
standard-normal noises ``u``: ``x = c + M u``, built in one topological pass
(``c_i = b_i + Σ_j w_ij c_j``, ``M_i = Σ_j w_ij M_j + σ_i e_i``). The joint is
then ``N(c, M Mᵀ)``; conditioning is the usual Schur complement, computed with
a least-squares solve so that deterministic nodes (σ = 0) and exactly
collinear evidence work, and evidence outside the support is an error.
Counterfactuals reuse the same ``u`` for both worlds (a twin network in
closed form). An affine intervention ``x -> a·x + b`` (:func:`causalnet.shift`,
:func:`causalnet.affine`) keeps the form affine: ``c_i -> a·c_i + b``,
``M_i -> a·M_i``, so it is answered exactly too.

Symbols: ``n`` batch, ``d`` nodes, ``m`` noise sources (one per node).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..distributions import Gaussian
from ..errors import EvidenceError, ModelError, NumericalError
from ..mechanisms.base import REAL
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.intervened import Intervened
from .engine import Engine

__all__ = ["AffineForm", "affine_form", "is_linear_gaussian", "condition", "gaussian_query", "GaussianEngine",
           "METHOD"]

METHOD = "exact (joint Gaussian)"


class AffineForm:
    """``x = c + M u`` for every node, ``u ~ N(0, I)`` indexed like the nodes.

    Attributes
    ----------
    nodes : tuple
    c : ndarray of shape (d,) or (n, d)
    M : ndarray of shape (d, m)
    """

    def __init__(self, nodes: Sequence[Hashable], c: np.ndarray, M: np.ndarray) -> None:
        self.nodes = tuple(nodes)
        self.index = {v: i for i, v in enumerate(self.nodes)}
        self.c = c
        self.M = M
        self._cov = None

    @property
    def cov(self) -> np.ndarray:
        """``M Mᵀ``, shape (d, d), computed once."""
        if self._cov is None:
            self._cov = self.M @ self.M.T
        return self._cov

    @property
    def batched(self) -> bool:
        return self.c.ndim == 2


def is_linear_gaussian(model) -> bool:
    """Whether every mechanism is LinearGaussian, a constant intervention on a real node,
    or an affine intervention (:class:`~causalnet.mechanisms.intervened.AffineIntervention`) on a LinearGaussian node."""
    for node, mech in model.mechanisms.items():
        if isinstance(mech, LinearGaussian):
            continue
        if isinstance(mech, Intervened) and model.specs[node].kind == REAL and model.specs[node].shape == ():
            if not mech.is_shift or (mech.affine is not None and isinstance(mech.natural, LinearGaussian)):
                continue
        return False
    return True


def affine_form(model) -> AffineForm:
    """The affine form of a linear-Gaussian model (see :func:`is_linear_gaussian`).

    Per-row intervention values make ``c`` batched ``(n, d)``. Computed once
    per model (models are immutable) and cached on it.
    """
    cached = model.cache.get("affine_form")
    if cached is not None:
        return cached

    nodes = model.dag.topological_order()
    idx = {v: i for i, v in enumerate(nodes)}
    d = len(nodes)
    rows = None
    for v in nodes:
        mech = model.mechanisms[v]
        if isinstance(mech, Intervened) and np.ndim(mech.value) == 1:
            rows = np.shape(mech.value)[0]
    c = np.zeros((rows, d)) if rows is not None else np.zeros(d)
    M = np.zeros((d, d))
    for v in nodes:
        i = idx[v]
        mech = model.mechanisms[v]
        natural = mech.natural if isinstance(mech, Intervened) and mech.affine is not None else mech
        if isinstance(natural, LinearGaussian):
            c[..., i] = natural.bias
            for w, p in zip(natural.weights, natural.parents):
                j = idx[p]
                c[..., i] += w * c[..., j]
                M[i] += w * M[j]
            M[i, i] += natural.sigma
            if natural is not mech:                           # x -> scale·x + offset
                c[..., i] = mech.affine.scale * c[..., i] + mech.affine.offset
                M[i] *= mech.affine.scale
        elif isinstance(mech, Intervened) and not mech.is_shift:
            c[..., i] = np.asarray(mech.value, dtype=np.float64)
        else:
            raise ModelError(f"node {v!r} is {type(mech).__name__}, not linear-Gaussian")
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(M))):
        raise NumericalError("the joint Gaussian overflows (an affine intervention or weights too large for "
                             "float64)")
    form = model.cache["affine_form"] = AffineForm(nodes, c, M)
    return form


def condition(mean: np.ndarray, cov: np.ndarray, obs_idx: Sequence[int], values: np.ndarray,
              names: Sequence[Hashable] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Condition ``N(mean, cov)`` on ``x[obs_idx] = values``.

    Parameters
    ----------
    mean : ndarray of shape (D,) or (n, D)
    cov : ndarray of shape (D, D)
    obs_idx : sequence of int, length E
    values : ndarray of shape (E,) or (n, E)
    names : names of the observed coordinates, for error messages

    Returns
    -------
    mean : ndarray of shape (D,) or (n, D)
        Conditional mean (observed coordinates equal the values).
    cov : ndarray of shape (D, D)
        Conditional covariance (zero on observed coordinates).
    log_evidence : ndarray of shape () or (n,)
        Log density of the evidence (-inf never: impossible evidence raises).

    Raises
    ------
    EvidenceError
        If the values lie outside the support (a degenerate direction of the
        covariance), i.e. the evidence has probability zero.
    """
    from scipy import linalg  # loaded on first use, not by ``import causalnet``
    obs_idx = list(obs_idx)
    if not obs_idx:
        return mean, cov, np.zeros(mean.shape[:-1])
    S_ee = cov[np.ix_(obs_idx, obs_idx)]              # (E, E)
    S_xe = cov[:, obs_idx]                            # (D, E)
    resid = values - mean[..., obs_idx]               # (E,) or (n, E)
    w, V = linalg.eigh(S_ee)                          # S_ee = V diag(w) Vᵀ
    tol = max(w.max(initial=0.0), 1.0) * 1e-10 * len(obs_idx)
    pos = w > tol
    r_proj = resid @ V                                 # (..., E) coordinates in the eigenbasis
    null = r_proj[..., ~pos]
    scale = 1.0 + np.abs(values).max(axis=-1, initial=0.0)
    if null.size and np.any(np.abs(null).max(axis=-1) > 1e-8 * scale):
        bad = [str(n) for n in names] if names else obs_idx
        raise EvidenceError(f"the evidence on {bad} is impossible under the model: the observed values break "
                            f"an exact linear relation between them (probability zero)")
    Vp, wp = V[:, pos], w[pos]
    K = (S_xe @ Vp) / wp                              # (D, r) gain in the eigenbasis
    new_mean = mean + (r_proj[..., pos]) @ K.T        # (..., D)
    new_cov = cov - K @ (S_xe @ Vp).T                 # (D, D)
    new_cov = (new_cov + new_cov.T) / 2
    with np.errstate(over="ignore"):
        maha = np.sum(r_proj[..., pos] ** 2 / wp, axis=-1)
    log_ev = -0.5 * (maha + np.sum(np.log(wp)) + pos.sum() * np.log(2 * np.pi))
    return new_mean, new_cov, log_ev


def gaussian_query(model, targets: Sequence[Hashable], evidence: Mapping[Hashable, np.ndarray]):
    """Joint posterior of `targets` given real-valued `evidence` (values or (n,) arrays).

    Returns ``(mean, cov, log_evidence, batched)`` with mean (T,) or (n, T).
    """
    form = affine_form(model)
    mean = form.c
    cov = form.cov
    obs = list(evidence)
    vals = [np.asarray(evidence[v], dtype=np.float64) for v in obs]
    batched = form.batched or any(v.ndim == 1 for v in vals)
    if batched:
        n = {v.shape[0] for v in vals if v.ndim == 1} | ({mean.shape[0]} if form.batched else set())
        if len(n) > 1:
            raise EvidenceError(f"evidence arrays have different lengths {sorted(n)}")
        n = n.pop()
        vals = [np.broadcast_to(v, (n,)) for v in vals]
        mean = np.broadcast_to(mean, (n, mean.shape[-1]))
    values = np.stack(vals, axis=-1) if vals else np.zeros(mean.shape[:-1] + (0,))
    m, c, log_ev = condition(mean, cov, [form.index[v] for v in obs], values, obs)
    ti = [form.index[v] for v in targets]
    return m[..., ti], c[np.ix_(ti, ti)], log_ev, batched


class GaussianEngine(Engine):
    """Exact queries on linear-Gaussian models (also under constant, per-row and affine interventions)."""

    name = "linear-Gaussian"

    def accepts(self, request) -> bool:
        return not request.is_counterfactual and is_linear_gaussian(request.model)

    def answer(self, request) -> Gaussian:
        names = request.nodes
        with np.errstate(all="ignore"):
            mean, cov, _, batched = gaussian_query(request.model, names, request.observed)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
            raise NumericalError(f"the joint Gaussian of {names} overflows float64")
        return Gaussian(names, mean, cov, batched=batched, method=METHOD)
