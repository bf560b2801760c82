"""Exact inference on discrete models: the engine behind every all-discrete query.

A model whose nodes are all discrete is tabulated (:mod:`.engine`: one CPT of
shape ``(*parent_cards, card)`` per node, ``do`` and shift interventions
included) into one validated :class:`DiscreteNetwork` — in practice the
:class:`DiscreteBN` that answers it — which these exact methods query, with
the same answers to round-off:

* a plain query of a shape the model was not asked before: direct variable
  elimination on the ancestral network of its targets and evidence
  (:mod:`.direct`), nothing revalidated, compiled or cached, until a budget
  of CPU time is spent (:class:`DirectLedger`); a repeated shape uses the rest;
* a fresh all-CPT model's first batched query: the same engine on the
  network of the ancestral set only (:mod:`.first_batch`);
* compiled variable-elimination programs (pruned, ordered, constant-folded,
  cached per query shape; batched evidence in one vectorized pass, or, when
  the batched evidence nodes have few joint states per distinct row, read off
  one joint table of the targets and those nodes (:mod:`.row_joint`); MAP);
* the calibrated prior tree (scalar evidence, nothing compiled);
* junction trees (every single-node posterior at once; Hugin propagation).

Which one answers a query is decided in one place, :mod:`.policy` (the
direct path aside: :class:`DirectLedger` routes new shapes before the
network is built). Evidence is
validated once, by the :class:`~causalnet.inference.request.Request`; the
engine hands node ints and states to :meth:`DiscreteBN.query_indices`
(:meth:`DiscreteBN.query` validates for direct callers).

Modules
-------
One idea each: :mod:`.engine` (model -> tables, the registry's
:class:`DiscreteEngine`), :mod:`.direct` (a fresh model's first query,
:func:`direct_query`), :mod:`.first_batch` (a fresh model's first batched
query, on its ancestral network), :mod:`.network` (validated arrays:
:class:`DiscreteNetwork`), :mod:`.elimination` (:class:`DiscreteBN`:
queries, MAP, log-probabilities), :mod:`.policy` (the route of each query),
:mod:`.factors` (the factor algebra, :class:`Factor`), :mod:`.ordering`
(elimination orders, clique sizes), :mod:`.programs` (compiled contraction
programs), :mod:`.batches` (distinct evidence rows, chunked), :mod:`.row_joint`
(batched rows read off one joint table),
:mod:`.cliques` (clique-tree structure), :mod:`.junction_tree`
(:class:`JunctionTree`), :mod:`.hugin` (one Hugin propagation),
:mod:`.prior_tree` (the calibrated prior tree), :mod:`.every_node` (every node's posterior
under evidence and ``do`` on one network's caches: :func:`all_marginals`).

Legend: ``n`` batch rows, ``K`` states.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.inference.discrete import DiscreteBN
>>> bn = DiscreteBN(cn.DAG.parse("A -> B"), {"A": [0.3, 0.7], "B": [[0.9, 0.1], [0.2, 0.8]]},
...                 {"A": 2, "B": 2})
>>> probs, log_e = bn.query(["A"], {"B": 1})
>>> np.round(probs, 4).tolist()
[0.0508, 0.9492]
"""

from __future__ import annotations

from ...mechanisms.tabular import is_plain_tabular  # its home since the BIF reader sets it too; kept here
from ...runtime import lazy_exports
from .batches import EvidenceRows
from .direct import direct_query
from .elimination import DiscreteBN, variable_elimination
from .engine import (
    DIRECT_BUDGET_S,
    DIRECT_KEY,
    DIRECT_SHAPES,
    METHOD,
    DirectLedger,
    DiscreteEngine,
    direct_answer,
    discrete_network,
    embed_point_masses,
    engine_evidence,
    model_tables,
    node_table,
    shift_map,
)
from .factors import Factor, factor_product
from .network import DiscreteNetwork
from .ordering import ORDER_METHODS, elimination_cliques, elimination_order, moral_graph
from .policy import MarginalsPolicy, QueryPolicy

__all__ = [
    # the engine
    "DiscreteEngine",
    "METHOD",
    "model_tables",
    "discrete_network",
    "engine_evidence",
    "embed_point_masses",
    "shift_map",
    "node_table",
    "direct_query",
    "direct_answer",
    "is_plain_tabular",
    "DirectLedger",
    "DIRECT_KEY",
    "DIRECT_BUDGET_S",
    "DIRECT_SHAPES",
    "first_batch_network",
    "ancestral_network",
    # networks and their exact methods
    "DiscreteNetwork",
    "DiscreteBN",
    "JunctionTree",
    "QueryPolicy",
    "MarginalsPolicy",
    "EvidenceRows",
    "joint_rows_query",
    "all_marginals",
    # factors and orders
    "Factor",
    "factor_product",
    "variable_elimination",
    "ORDER_METHODS",
    "moral_graph",
    "elimination_order",
    "elimination_cliques",
]

# Junction trees (and the calibrated prior tree, Hugin propagation and clique trees they use) load when a
# network first builds one (PEP 562): a process answering a few compiled queries never loads them; nor
# does it load every_node (all_marginals), which loads when first named, nor the batched-evidence helpers
# (first_batch, row_joint), which load with the first batch of evidence rows.
__getattr__, __dir__ = lazy_exports(__name__, {
    "first_batch_network": ".first_batch:first_batch_network",
    "ancestral_network": ".first_batch:ancestral_network",
    "first_batch": ".first_batch",
    "joint_rows_query": ".row_joint:joint_rows_query",
    "row_joint": ".row_joint",
    "all_marginals": ".every_node:all_marginals",
    "every_node": ".every_node",
    "JunctionTree": ".junction_tree:JunctionTree",
    "junction_tree": ".junction_tree",
    "prior_tree": ".prior_tree",
    "hugin": ".hugin",
    "cliques": ".cliques",
})
