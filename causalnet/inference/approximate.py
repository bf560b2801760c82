"""What the approximate discrete engines share: the model's factor graph and a request's local evidence.

Loopy belief propagation (:mod:`causalnet.inference.loopy`), importance
sampling (:mod:`causalnet.inference.importance`) and Gibbs sampling
(:mod:`causalnet.inference.gibbs`) all work on the tables of an all-discrete
model (:func:`causalnet.inference.discrete.node_table`, which already holds
``do``: one-hot roots for constant interventions, observed uniform roots for
per-row ones); loopy propagation keeps noisy-OR nodes in closed form. A request's hard evidence, per-row interventions and soft
evidence become one array of *local evidence* ``(n, V, K)``: a one-hot row for
an observed node, the likelihood vector for soft evidence, ones otherwise.

Symbols: ``n`` evidence rows (1 when unbatched), ``V`` nodes, ``K`` the largest card.
"""

from __future__ import annotations

import numpy as np

from .. import limits
from ..errors import EvidenceError
from ..mechanisms.base import DISCRETE
from ..mechanisms.compact import NoisyOR
from .discrete import node_table
from .factor_graph import FactorGraph, network_factor_graph

__all__ = ["model_factor_graph", "local_evidence", "hard_evidence", "is_discrete_request", "rows_text"]


def model_factor_graph(model, *, expand: bool = False) -> FactorGraph | None:
    """The factor graph of an all-discrete model, cached on the model; None when a node is not tabulable.

    One factor per node: its table (:func:`causalnet.inference.discrete.node_table`,
    which applies ``do``), except that a :class:`~causalnet.mechanisms.compact.NoisyOR`
    node stays a closed-form noisy-OR factor unless `expand`. The graph's
    ``row_evidence`` holds the per-row ``do`` states.

    Raises
    ------
    ResourceError
        If a table to expand exceeds ``cn.limits``.
    """
    key = "factor_graph_expanded" if expand else "factor_graph"
    cached = model.cache.get(key, False)
    if cached is not False:
        return cached
    specs = model.specs
    fg = None
    if all(s.kind == DISCRETE for s in specs.values()):
        cards = {v: specs[v].card for v in model.nodes}
        cpts, noisy, row_ev = {}, {}, {}
        for v in model.nodes:
            mech = model.mechanisms[v]
            if not expand and isinstance(mech, NoisyOR) and mech.parents:
                noisy[v] = (list(mech.parents), mech.probs, mech.leak, mech.on_index)
                continue
            table = node_table(model, v, cards, row_ev)
            if table is None:
                break
            cpts[v] = table
        else:
            fg = network_factor_graph(cpts, cards, model.dag, noisy)
            fg.row_evidence = row_ev
    model.cache[key] = fg
    return fg


def is_discrete_request(request) -> bool:
    """A plain (not counterfactual) query on an all-discrete model."""
    return not request.is_counterfactual and model_factor_graph(request.model) is not None


def hard_evidence(request) -> dict:
    """Observed states plus per-row ``do`` states (observed uniform roots): node -> int or ``(n,)`` ints."""
    row_evidence = model_factor_graph(request.model).row_evidence
    ev = {k: (int(v) if np.ndim(v) == 0 else np.asarray(v, dtype=np.int64)) for k, v in request.observed.items()}
    for k, arr in row_evidence.items():
        if k in ev:
            raise EvidenceError(f"{k!r} is both intervened on per row and observed")
        ev[k] = np.asarray(arr, dtype=np.int64)
    return ev


def local_evidence(request, fg: FactorGraph) -> np.ndarray:
    """The request's local evidence on the variables of `fg` (the model's node order).

    Returns
    -------
    ndarray of shape (n, V, K)
        One-hot rows for observed and per-row-intervened nodes, the
        (max-normalised) likelihood for soft evidence, ones elsewhere.
    """
    n = request.n_rows or 1
    V, K = fg.cards.size, fg.K
    limits.check_bytes(8.0 * n * V * K, what="the local evidence of the approximate engine",
                       cause=f"{n} rows x {V} nodes x {K} states", knob="batch_bytes")
    index = {v: i for i, v in enumerate(fg.names)}
    unary = np.ones((n, V, K))
    rows = np.arange(n)
    for k, s in hard_evidence(request).items():
        i = index[k]
        unary[:, i, :] = 0.0
        unary[rows, i, s] = 1.0
    for k, lik in request.soft.items():
        i = index[k]
        unary[:, i, :lik.shape[-1]] *= lik                                  # (K,) or (n, K)
    return unary


def rows_text(bad: np.ndarray, batched: bool) -> str:
    """``" in 3 of 10 rows (rows [0, 4, 7])"`` for a boolean row mask, empty when unbatched."""
    if not batched:
        return ""
    rows = np.flatnonzero(bad)
    return f" in {rows.size} of {bad.size} rows (rows {rows[:5].tolist()}{'...' if rows.size > 5 else ''})"
