"""Answers of DBN filtering, smoothing and prediction: per-step marginals of every variable.

:class:`StepMarginals` holds, for a discrete DBN, the arrays
``probs[var]`` of shape ``(n, S, K_var)`` (``(S, K_var)`` for one unbatched row)
over ``S`` steps, and answers ``result["A[5]"]`` with the
:class:`~causalnet.distributions.DiscreteDistribution` of that node. For
models answered through the unrolled model (continuous variables) it holds the
front door's distribution of every node instead.
"""

from __future__ import annotations

import numpy as np

from ...distributions import DiscreteDistribution, Gaussian
from ...errors import EvidenceError
from .names import split_step

__all__ = ["StepMarginals"]


class StepMarginals:
    """Per-step marginals of a DBN's variables.

    Attributes
    ----------
    steps : ndarray of int, shape (S,)
        The steps covered.
    probs : dict var -> ndarray of shape (n, S, K) or (S, K)
        Discrete DBNs: ``probs[v][..., s, k] = P(v[steps[s]] = k | evidence)``.
    states : dict var -> tuple
    log_evidence : ndarray (n,) or float or None
        ``log P(evidence)`` (the evidence the marginals condition on).
    method : str
        How the answer was computed.
    batched : bool
    means, variances : dict var -> ndarray of shape (n, S) or (S,)
        Linear-Gaussian DBNs (Kalman): each variable's marginal mean and variance per step.
    dists : dict node -> distribution
        Models answered through the unrolled model: each unobserved node's distribution.
    """

    def __init__(self, steps, probs, states, *, method: str, batched: bool, log_evidence=None, dists=None,
                 means=None, variances=None) -> None:
        self.steps = np.asarray(steps, dtype=np.intp)
        self.probs = {v: (p if batched else p[0]) for v, p in (probs or {}).items()}
        self.states = dict(states)
        self.method = method
        self.batched = batched
        self.log_evidence = log_evidence if log_evidence is None or batched else float(np.asarray(log_evidence)[0])
        self.dists = dict(dists or {})
        self.means = {v: (p if batched else p[0]) for v, p in (means or {}).items()}
        self.variances = {v: (p if batched else p[0]) for v, p in (variances or {}).items()}

    def __getitem__(self, node: str):
        if node in self.dists:
            return self.dists[node]
        var, t = split_step(node, self.states)
        hit = np.flatnonzero(self.steps == t)
        if not hit.size or (var not in self.probs and var not in self.means):
            raise EvidenceError(f"{node!r} is not covered: steps {self.steps.min()}..{self.steps.max()}")
        if var in self.means:
            mean, var_ = self.means[var][..., hit[0]], self.variances[var][..., hit[0]]
            return Gaussian([node], mean[..., None], var_[..., None, None], batched=self.batched, method=self.method)
        p = self.probs[var][..., hit[0], :]
        return DiscreteDistribution([node], p, [self.states[var]], batched=self.batched, method=self.method)

    def __repr__(self) -> str:
        what = sorted(self.probs) or sorted(self.means) or sorted(self.dists)[:3]
        return f"StepMarginals(steps={len(self.steps)}, variables={what}, method={self.method!r})"
