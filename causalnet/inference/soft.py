"""Soft (virtual) evidence in the exact discrete engine: one extra observed child per soft-evidence node.

Pearl's virtual evidence (Pearl 1988, §2.2.2) on a node ``Y`` is a likelihood
``L(y)`` — how much more an unreported observation supports each state —
rather than a state. It multiplies the joint by ``L(Y)``:
``P(x | e, L) ∝ P(x, e) · L(y)``. Exactly that is obtained by adding a virtual
child ``V`` of ``Y`` and observing it:

* one likelihood ``L`` of shape ``(K,)`` (scaled so its largest entry is 1):
  ``V`` has two states, ``P(V=1 | y) = L(y)``, and ``V=1`` is observed;
* a batch ``L`` of shape ``(n, K)``: ``V`` has ``n + 1`` states,
  ``P(V=r | y) = L[r, y] / C`` for rows ``r < n`` and the remainder on state
  ``n``, with ``C = max_y Σ_r L[r, y]``; row ``r`` observes ``V = r``, so each
  row gets its own likelihood in one batched pass.

The augmented network goes to the same variable-elimination engine
(:class:`~causalnet.inference.discrete.elimination.DiscreteBN`); ``do`` has already
been applied to the request's model (soft evidence on the mutilated model).
"""

from __future__ import annotations

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution
from ..graph.dag import DAG
from .discrete import DiscreteBN, discrete_network, embed_point_masses, engine_evidence
from .engine import Engine

__all__ = ["SoftEvidenceEngine", "virtual_child", "METHOD"]

METHOD = "exact (variable elimination, soft evidence as virtual children)"


def virtual_child(lik: np.ndarray) -> tuple[np.ndarray, int | np.ndarray]:
    """The CPT of a virtual child carrying the likelihood `lik`, and its observed state(s).

    Parameters
    ----------
    lik : ndarray of shape (K,) or (n, K)
        Nonnegative, every row with a positive entry.

    Returns
    -------
    cpt : ndarray of shape (K, 2) or (K, n + 1)
        ``P(V | Y)``, rows summing to 1.
    observed : int or ndarray of shape (n,)
        ``1``, or ``arange(n)``.
    """
    if lik.ndim == 1:
        lik = lik / lik.max()
        return np.stack([1.0 - lik, lik], axis=-1), 1                       # (K, 2)
    n, K = lik.shape
    limits.check_bytes(8.0 * K * (n + 1), what="the virtual child of batched soft evidence",
                       cause=f"{n} rows x {K} states")
    scaled = (lik / lik.max(axis=1, keepdims=True)).T                       # (K, n)
    C = scaled.sum(axis=1).max()
    cpt = np.empty((K, n + 1))
    cpt[:, :n] = scaled / C
    cpt[:, n] = np.maximum(1.0 - cpt[:, :n].sum(axis=1), 0.0)
    cpt /= cpt.sum(axis=1, keepdims=True)
    return cpt, np.arange(n)


class SoftEvidenceEngine(Engine):
    """Exact queries with soft evidence on all-discrete models (variable elimination on an augmented network)."""

    name = "discrete (soft evidence)"
    soft_evidence = True

    def accepts(self, request) -> bool:
        return bool(request.soft) and not request.is_counterfactual and discrete_network(request.model) is not None

    def answer(self, request) -> DiscreteDistribution:
        m = request.model
        net = discrete_network(m)
        cpts, cards = dict(net.cpts), dict(net.cards)
        edges, nodes = list(m.dag.edges), list(m.dag.nodes)
        ev, _, _ = engine_evidence(request, net)
        for k, lik in request.soft.items():
            v = (k, "soft evidence")
            while v in cards:
                v = (v, "soft evidence")
            cpts[v], ev[v] = virtual_child(lik)
            cards[v] = cpts[v].shape[1]
            edges.append((k, v))
            nodes.append(v)
        bn = DiscreteBN(DAG(edges, nodes=nodes), cpts, cards)
        names = request.nodes
        free = [t for t in names if t not in ev]
        idx, n = bn.index_evidence(ev)                                     # validated by the request
        probs, _ = bn.query_indices(bn.target_indices(free), idx, n)
        if len(free) < len(names):
            probs = embed_point_masses(probs, free, names, ev, [net.cards[t] for t in names], request.n_rows)
        return DiscreteDistribution(names, probs, [m.specs[t].states for t in names], batched=request.batched,
                                    method=METHOD)
