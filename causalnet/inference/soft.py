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
It is built once per model and likelihood (:func:`soft_network`, cached in
``model.cache``, the last :data:`CACHE_SIZE` kept), so repeating a query with
the same soft evidence compiles nothing new.

Queries take a shorter road when it is small (:func:`weigh_joint`): the
model's own network answers the joint ``P(targets, Y | e)`` (its compiled
programs are cached per query shape, whatever the likelihood values), which is
then weighted by ``L(y)`` and summed over ``y`` — used when that joint has at
most :data:`JOINT_ENTRIES` entries per row. MAP (:func:`soft_map`) and larger
joints use the augmented network; the twin network of a counterfactual gets
the same treatment (:func:`soft_query`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution
from ..errors import EvidenceError
from ..graph.dag import DAG
from .discrete import DiscreteBN, discrete_network, embed_point_masses, engine_evidence
from .engine import Engine

__all__ = ["SoftEvidenceEngine", "virtual_child", "augmented_network", "soft_network", "weigh_joint", "soft_query",
           "soft_map", "METHOD", "METHOD_JOINT", "JOINT_ENTRIES", "CACHE_SIZE"]

METHOD = "exact (variable elimination, soft evidence as virtual children)"
METHOD_JOINT = "exact (variable elimination, soft evidence weighing the joint)"
#: Largest joint (targets and soft-evidence nodes, per row) weighed directly instead of augmenting the network.
JOINT_ENTRIES = 1 << 12
#: Augmented networks kept per model.
CACHE_SIZE = 8


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


def augmented_network(net: DiscreteBN, soft: dict) -> tuple[DiscreteBN, dict, float | np.ndarray]:
    """`net` with one virtual child per soft-evidence node.

    Parameters
    ----------
    net : DiscreteBN
    soft : dict node -> ndarray of shape (K,) or (n, K)

    Returns
    -------
    bn : DiscreteBN
    observed : dict virtual node -> int or ndarray of shape (n,)
        The virtual children's evidence.
    log_scale : float or ndarray of shape (n,)
        ``Σ_k log C_k``: ``log P(virtual children | y)`` plus it is ``Σ_k log(L_k(y_k) / max L_k)``.
    """
    cpts, cards = dict(net.cpts), dict(net.cards)
    edges, nodes = list(net.dag.edges), list(net.dag.nodes)
    observed, log_scale = {}, 0.0
    for k, lik in soft.items():
        v = (k, "soft evidence")
        while v in cards:
            v = (v, "soft evidence")
        cpts[v], observed[v] = virtual_child(lik)
        if lik.ndim == 2:
            scaled = lik / lik.max(axis=1, keepdims=True)                           # (n, K)
            log_scale = log_scale + np.log(scaled.sum(axis=0).max())
        cards[v] = cpts[v].shape[1]
        edges.append((k, v))
        nodes.append(v)
    return DiscreteBN(DAG(edges, nodes=nodes), cpts, cards, row_evidence=net.row_evidence), observed, log_scale


def soft_network(model, soft: dict) -> tuple[DiscreteBN, dict, float | np.ndarray]:
    """:func:`augmented_network` of the model's network, cached in ``model.cache`` by the likelihoods' bytes."""
    key = tuple((str(k), k, a.shape, hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest())
                for k, a in sorted(soft.items(), key=lambda kv: str(kv[0])))
    cache = model.cache.setdefault("soft_networks", OrderedDict())
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = augmented_network(discrete_network(model), soft)
        while len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return hit


def weigh_joint(bn: DiscreteBN, free: list, soft: dict, idx: dict, n: int | None) -> np.ndarray | None:
    """``P(free | e, L)`` from the joint ``P(free, soft nodes | e)`` weighted by the likelihoods; None if too large.

    Parameters
    ----------
    bn : DiscreteBN
    free : list of nodes
        The unobserved targets.
    soft : dict node -> ndarray of shape (K,) or (n, K)
    idx : dict node int -> int or ndarray of shape (n,)
        Indexed evidence (as :meth:`DiscreteBN.index_evidence` gives it).
    n : int or None

    Returns
    -------
    ndarray of shape ([n,] *cards of free), or None when the joint exceeds :data:`JOINT_ENTRIES`.

    Raises
    ------
    EvidenceError
        If the likelihoods give every state consistent with the evidence weight zero.
    """
    extra = [k for k in soft if k not in free]
    keep = list(free) + extra
    cards = [bn.cards[v] for v in keep]
    if float(np.prod(cards)) > JOINT_ENTRIES:
        return None
    joint, _ = bn.query_indices(bn.target_indices(keep), idx, n)                   # ([n,] *cards)
    rows = next((a.shape[0] for a in soft.values() if a.ndim == 2), None)
    if n is None and rows is not None:                                             # only the likelihoods batch
        joint, n = np.broadcast_to(joint, (rows, *joint.shape)), rows
    lead = 0 if n is None else 1
    for k, lik in soft.items():
        axis = lead + keep.index(k)
        shape = [1] * joint.ndim
        shape[axis] = lik.shape[-1]
        if lik.ndim == 2:
            shape[0] = lik.shape[0]
        joint = joint * lik.reshape(shape)
    joint = joint.sum(axis=tuple(lead + len(free) + j for j in range(len(extra))))
    z = joint.reshape((n, -1) if n is not None else (1, -1)).sum(axis=1)
    if not np.all(z > 0):
        bad = ~(z > 0)
        rows = np.flatnonzero(bad)
        where = (f" in {rows.size} of {bad.size} rows (rows {rows[:5].tolist()}{'...' if rows.size > 5 else ''})"
                 if n is not None else "")
        raise EvidenceError(f"the evidence and soft evidence have probability zero{where}: the likelihoods give "
                            f"weight zero to every state the evidence allows")
    return joint / (z.reshape((n,) + (1,) * len(free)) if n is not None else z[0])


def soft_query(bn: DiscreteBN, free: list, soft: dict, idx: dict, n: int | None, *, model=None):
    """``(P(free | e, L), method text)``: :func:`weigh_joint` when small, else the augmented network.

    `model`, when given, caches the augmented network (:func:`soft_network`); `bn` is then its network.
    """
    probs = weigh_joint(bn, free, soft, idx, n)
    if probs is not None:
        return probs, METHOD_JOINT
    aug, observed, _ = soft_network(model, soft) if model is not None else augmented_network(bn, soft)
    vidx, vn = aug.index_evidence(observed)
    probs, _ = aug.query_indices(aug.target_indices(free), {**idx, **vidx}, n if n is not None else vn)
    return probs, METHOD


def soft_map(request) -> tuple[dict, np.ndarray | float]:
    """MAP or MPE with soft evidence (exact): max over the augmented network of :func:`soft_network`.

    The log-probability returned is ``log Σ P(assignment, rest, e) Π_k L_k(y_k) / max L_k``
    (each likelihood scaled to a maximum of 1).
    """
    m = request.model
    net = discrete_network(m)
    ev, idx, n = engine_evidence(request, net)
    aug, observed, log_scale = soft_network(m, request.soft)
    vidx, vn = aug.index_evidence(observed)
    index = aug.dag.index.pos
    assign, logp = aug.map_indices(tuple(index[t] for t in request.nodes), {**idx, **vidx},
                                   n if n is not None else vn)
    named = {}
    for k, v in assign.items():
        states = np.asarray(m.specs[k].states, dtype=object)
        named[k] = states[v] if np.ndim(v) else states[int(v)]
    return named, logp + log_scale


class SoftEvidenceEngine(Engine):
    """Exact queries with soft evidence on all-discrete models (the weighed joint, or an augmented network)."""

    name = "discrete (soft evidence)"
    soft_evidence = True

    def accepts(self, request) -> bool:
        return bool(request.soft) and not request.is_counterfactual and discrete_network(request.model) is not None

    def answer(self, request) -> DiscreteDistribution:
        m = request.model
        net = discrete_network(m)
        ev, idx, n = engine_evidence(request, net)
        names = request.nodes
        free = [t for t in names if t not in ev]
        probs, method = soft_query(net, free, request.soft, idx, n, model=m)
        if len(free) < len(names):
            probs = embed_point_masses(probs, free, names, ev, [net.cards[t] for t in names], request.n_rows)
        return DiscreteDistribution(names, probs, [m.specs[t].states for t in names], batched=request.batched,
                                    method=method)
