"""The joint law of discrete and real variables: a mixture over discrete configurations.

In a conditional Gaussian network the joint posterior of some discrete
targets ``D`` and real targets ``X`` is ``Σ_k w_k · δ(D = d_k) · N(X; μ_k, Σ_k)``:
one component per configuration ``k`` of the discrete nodes the answer
depends on (the discrete targets and the discrete boundary of the real ones),
each fixing the discrete targets to ``d_k``. :meth:`MixedDistribution.marginal`
gives a :class:`~causalnet.distributions.DiscreteDistribution` for discrete
variables (summing the weights per state), a
:class:`~causalnet.distributions.GaussianMixture` for real ones and a smaller
:class:`MixedDistribution` for a mix.

Symbols: ``n`` batch rows, ``K`` components, ``t`` real variables.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from ..errors import EvidenceError, ModelError
from .results import DiscreteDistribution, GaussianMixture, result_label

__all__ = ["MixedDistribution"]


class MixedDistribution:
    """A joint law over discrete and real variables (a conditional Gaussian mixture).

    Parameters
    ----------
    variables : sequence
        All variables, in the order asked.
    discrete : sequence
        The discrete ones (a subsequence of `variables`), with `states` their state names.
    assignments : array_like of int, shape (K, len(discrete))
        The discrete variables' states in each component.
    weights : array_like of shape (K,) or (n, K)
    means : array_like of shape (K, t) or (n, K, t)
        Means of the real variables (the others, in their order in `variables`).
    covs : array_like of shape (K, t, t)

    Examples
    --------
    >>> mx = MixedDistribution(["T", "Y"], ["T"], [("a", "b")], [[0], [1]], [0.25, 0.75], [[0.0], [2.0]],
    ...                        [[[1.0]], [[1.0]]])
    >>> mx.marginal(["T"]).probs.tolist(), float(mx.marginal(["Y"]).mean[0])
    ([0.25, 0.75], 1.5)
    """

    def __init__(self, variables: Sequence[Hashable], discrete: Sequence[Hashable], states: Sequence[Sequence],
                 assignments, weights, means, covs, *, batched: bool = False, method: str = "exact",
                 scm: str | None = None, query: str | None = None, log_evidence=None) -> None:
        self.variables = tuple(variables)
        self.discrete = tuple(discrete)
        self.real = tuple(v for v in self.variables if v not in self.discrete)
        self.states = tuple(tuple(s) for s in states)
        self.assignments = np.asarray(assignments, dtype=np.int64).reshape(-1, len(self.discrete))
        self.batched = bool(batched)
        self.method, self.scm, self.query, self.log_evidence = method, scm, query, log_evidence
        self._mixture = GaussianMixture(self.real, weights, means, covs, batched=batched, method=method, scm=scm,
                                        query=query, log_evidence=log_evidence)
        if self.assignments.shape[0] != self._mixture.n_components or len(self.states) != len(self.discrete):
            raise ModelError(f"internal: {self.assignments.shape[0]} assignments for "
                             f"{self._mixture.n_components} components")

    @property
    def weights(self) -> np.ndarray:
        """Component weights, shape (K,) or (n, K)."""
        return self._mixture.weights

    @property
    def means(self) -> np.ndarray:
        """Means of the real variables per component, shape (K, t) or (n, K, t)."""
        return self._mixture.means

    @property
    def covs(self) -> np.ndarray:
        return self._mixture.covs

    @property
    def n_components(self) -> int:
        return self._mixture.n_components

    @property
    def label(self) -> str:
        return result_label(self.query, self.variables)

    @property
    def probs(self) -> np.ndarray:
        """The joint table of the discrete variables, shape (*cards) or (n, *cards)."""
        return self.marginal(self.discrete).probs

    @property
    def mean(self) -> np.ndarray:
        """Means of the real variables, shape (t,) or (n, t)."""
        return self._mixture.mean

    @property
    def var(self) -> np.ndarray:
        """Variances of the real variables, shape (t,) or (n, t)."""
        return self._mixture.var

    def marginal(self, variables):
        """The law of some of the variables: discrete, Gaussian mixture, or mixed.

        Raises
        ------
        EvidenceError
            If a variable is not one of this law's.
        """
        vs = [variables] if isinstance(variables, str) else list(variables)
        missing = [v for v in vs if v not in self.variables]
        if missing or not vs:
            raise EvidenceError(f"{missing[0] if missing else vs!r} is not a variable of this law; variables: "
                                f"{list(self.variables)}")
        disc = [v for v in vs if v in self.discrete]
        real = [v for v in vs if v in self.real]
        if not disc:
            return self._mixture.marginal(real)
        di = [self.discrete.index(v) for v in disc]
        states = [self.states[i] for i in di]
        if real:
            sub = self._mixture.marginal(real)
            return MixedDistribution(vs, disc, states, self.assignments[:, di], sub.weights, sub.means, sub.covs,
                                     batched=self.batched, method=self.method, scm=self.scm, query=self.query,
                                     log_evidence=self.log_evidence)
        cards = [len(s) for s in states]
        flat = np.ravel_multi_index(tuple(self.assignments[:, i] for i in di), cards)       # (K,)
        onehot = np.zeros((self.n_components, int(np.prod(cards))))
        onehot[np.arange(self.n_components), flat] = 1.0
        probs = (self.weights @ onehot).reshape(((self.weights.shape[0],) if self.batched else ()) + tuple(cards))
        return DiscreteDistribution(disc, probs, states, batched=self.batched, method=self.method, scm=self.scm,
                                    query=self.query, log_evidence=self.log_evidence)

    def __str__(self) -> str:
        lines = [f"{self.label}  method={self.method!r}" + (f"  scm={self.scm!r}" if self.scm else "")]
        if self.batched:
            lines.append(f"  {self.weights.shape[0]} rows, {self.n_components} components")
            return "\n".join(lines)
        for k in range(self.n_components):
            disc = ", ".join(f"{v}={self.states[i][self.assignments[k, i]]}" for i, v in enumerate(self.discrete))
            real = ", ".join(f"{v}~N({self.means[k, i]:.4g}, {self.covs[k, i, i]:.4g})"
                             for i, v in enumerate(self.real))
            lines.append(f"  {self.weights[k]:.4g}: {disc}; {real}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<MixedDistribution {self.label} over discrete {list(self.discrete)} and real {list(self.real)} "
                f"with {self.n_components} components, method={self.method!r}>")
