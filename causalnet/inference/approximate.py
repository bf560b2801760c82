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
from ..mechanisms.compact import Compact, Logistic, NoisyMax, NoisyOR
from .discrete import model_tables, node_table
from .factor_graph import FactorGraph, network_factor_graph

__all__ = ["model_factor_graph", "local_evidence", "hard_evidence", "is_discrete_request", "rows_text",
           "model_families", "LOGISTIC_TABLE_ENTRIES"]

#: A logistic node whose expanded table has at most this many entries is a table factor in loopy
#: propagation (exact messages); a larger one is a closed-form factor with approximate messages
#: (:mod:`causalnet.inference.compact_messages`).
LOGISTIC_TABLE_ENTRIES = 1 << 16


def _compact(model, v) -> Compact | None:
    """The node's compact mechanism when it has parents (an intervened node is not compact)."""
    mech = model.mechanisms[v]
    return mech if isinstance(mech, Compact) and mech.parents else None


def model_families(model) -> tuple[dict, dict, dict] | None:
    """Each node's conditional without expanding compact mechanisms, cached on the model.

    Returns
    -------
    tables : dict node -> ndarray of shape (*parent_cards, card)
        The tables of the nodes that are not compact (``do`` applied).
    compact : dict node -> Compact
        NoisyOR, NoisyMax and Logistic nodes, evaluated from their structural form.
    row_evidence : dict node -> ndarray of shape (n,)
        Per-row ``do`` states.

    None when the model is not all-discrete or a node is not tabulable.
    """
    cached = model.cache.get("approximate_families", False)
    if cached is not False:
        return cached
    specs = model.specs
    out = None
    if all(s.kind == DISCRETE for s in specs.values()):
        cards = {v: specs[v].card for v in model.nodes}
        tables, compact, row_ev = {}, {}, {}
        for v in model.nodes:
            if _compact(model, v) is not None:
                compact[v] = model.mechanisms[v]
                continue
            table = node_table(model, v, cards, row_ev)
            if table is None:
                break
            tables[v] = table
        else:
            out = (tables, compact, row_ev)
    model.cache["approximate_families"] = out
    return out


def model_factor_graph(model, *, expand: bool = False) -> FactorGraph | None:
    """The factor graph of an all-discrete model, cached on the model; None when a node is not tabulable.

    One factor per node: its table (:func:`causalnet.inference.discrete.node_table`,
    which applies ``do``), except that, unless `expand`, a
    :class:`~causalnet.mechanisms.compact.NoisyOR` or
    :class:`~causalnet.mechanisms.compact.NoisyMax` node stays a closed-form
    factor (exact messages in O(k) per factor), and so does a
    :class:`~causalnet.mechanisms.compact.Logistic` node whose table would
    exceed :data:`LOGISTIC_TABLE_ENTRIES` (approximate messages). The graph's
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
    if expand:                                          # every table expanded: the discrete engine's own, cached
        expanded = model_tables(model)
        fams = None if expanded is None else (expanded[0], {}, expanded[2])
    else:
        fams = model_families(model)
    fg = None
    if fams is not None:
        tables, compact, row_ev = fams
        fg = _closed_form_graph(model, dict(tables), compact)
        fg.row_evidence = row_ev
    model.cache[key] = fg
    return fg


def _closed_form_graph(model, cpts: dict, compact: dict) -> FactorGraph:
    cards = {v: model.specs[v].card for v in model.nodes}
    noisy_or, noisy_max, logistic = {}, {}, {}
    for v, mech in compact.items():
        ps = list(mech.parents)
        if isinstance(mech, NoisyOR):
            noisy_or[v] = (ps, mech.probs, mech.leak, mech.on_index)
        elif isinstance(mech, NoisyMax):
            noisy_max[v] = (ps, mech.tables, mech.leak)
        elif isinstance(mech, Logistic) and float(np.prod([cards[p] for p in ps])) * cards[v] > LOGISTIC_TABLE_ENTRIES:
            logistic[v] = (ps, mech.weights, mech.bias)
        else:
            cpts[v] = node_table(model, v, cards, {})
    return network_factor_graph(cpts, cards, model.dag, noisy_or, noisy_max, logistic)


def is_discrete_request(request) -> bool:
    """A plain (not counterfactual) query on an all-discrete model."""
    return not request.is_counterfactual and model_families(request.model) is not None


def hard_evidence(request) -> dict:
    """Observed states plus per-row ``do`` states (observed uniform roots): node -> int or ``(n,)`` ints."""
    row_evidence = model_families(request.model)[2]
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
