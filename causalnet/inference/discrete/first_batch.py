"""The first batched query of a fresh discrete model, on the network of its ancestral set only.

A model asked one batched question (``m.query(target, evidence=df)`` on a
model just read) should not validate and copy every CPT of a large network
into the model's :class:`~causalnet.inference.discrete.network.DiscreteNetwork`
when the question involves a few of them: every node that is not an
ancestor of a target or an evidence node is *barren* (its CPT sums out to 1),
so ``P(targets | e)`` and ``P(e)`` are exactly those of the *ancestral
network*, the CPTs of the ancestral set under the induced sub-DAG.
:func:`first_batch_network` builds that network (a
:class:`~causalnet.inference.discrete.elimination.DiscreteBN`, validated as
any) for the discrete engine's first batched query of a model whose nodes are
all :class:`~causalnet.mechanisms.tabular.Tabular` CPTs; it is not cached, and
the model's next query builds and caches the whole network as before. The
scalar first query has its own path (:mod:`.direct`).

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]]),
...                     "C": cn.CPT(["B"], [[0.5, 0.5], [0.1, 0.9]])})
>>> ancestral_network(m, ["A", "B"]).nodes                          # C is barren for P(A | B)
('A', 'B')
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from ...graph.core import closure
from ...mechanisms.tabular import is_plain_tabular
from .elimination import DiscreteBN

__all__ = ["first_batch_network", "ancestral_network", "DONE"]

#: ``model.cache`` key set once a model's first batched query has been answered on its ancestral network
DONE = "discrete_first_batch_done"


def ancestral_network(model, nodes: Iterable[Hashable]) -> DiscreteBN:
    """The :class:`DiscreteBN` of the ancestral set of `nodes` in an all-``Tabular`` `model`.

    Parameters
    ----------
    model : CausalModel
        Every node a ``Tabular`` CPT (:func:`~causalnet.mechanisms.tabular.is_plain_tabular`).
    nodes : iterable of nodes of `model`

    Returns
    -------
    DiscreteBN
        On the induced sub-DAG of the ancestors of `nodes` (and `nodes`), each CPT with its axes in
        that DAG's parent order.
    """
    dag = model.dag
    pos, par, names = dag.index.pos, dag.index.par, dag.nodes
    keep = closure(par, [pos[v] for v in nodes])                 # the ancestral set (node ints)
    sub = dag.subgraph([names[i] for i in sorted(keep)])
    spos, spar, snames = sub.index.pos, sub.index.par, sub.nodes
    mechs, specs = model.mechanisms, model.specs
    cpts, cards = {}, {}
    for v in snames:
        mech = mechs[v]
        cards[v] = len(specs[v].states)
        order = [snames[i] for i in sorted(spar[spos[v]])]                    # the sub-DAG's parent order
        table = mech.table                                                    # (*parent_cards, K), mech order
        given = list(mech.parents)
        if given != order:
            table = np.transpose(table, [given.index(p) for p in order] + [len(given)])
        cpts[v] = table
    return DiscreteBN(sub, cpts, cards)


def first_batch_network(request) -> DiscreteBN | None:
    """The ancestral network for the first batched plain query of a fresh all-``Tabular`` model, or None.

    None (the model's whole network answers) unless the request is batched,
    plain (no soft evidence, no per-row ``do``), the model has no network yet
    and has not answered a batched query this way before; marks the model
    (:data:`DONE`) when it returns a network.
    """
    m = request.model
    if (not request.batched or request.soft or request.row_do or "discrete_bn" in m.cache
            or m.cache.get(DONE) or not is_plain_tabular(m)):
        return None
    m.cache[DONE] = True
    return ancestral_network(m, [*request.nodes, *request.observed])
