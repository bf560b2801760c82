"""Conversion to pyAgrum's ``BayesNet`` (for comparisons with pyAgrum: tests and benchmarks).

pyAgrum is not a dependency of causalnet: it is imported when :func:`to_agrum`
runs (``pip install pyagrum``). The copy has one ``RangeVariable`` per node
(states ``0..K-1``, in causalnet's state order) and the same CPTs (the exact
engine's tables, so ``do`` and compact mechanisms are expanded). Evidence and
posteriors therefore use state indices on both sides.

Examples
--------
>>> import causalnet as cn
>>> bn = to_agrum(cn.gallery.load("asia"))             # doctest: +SKIP
>>> bn.size()                                          # doctest: +SKIP
8
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..inference.discrete import discrete_network

__all__ = ["to_agrum"]


def to_agrum(model):
    """A pyAgrum ``BayesNet`` with the nodes, states (by index) and CPTs of the discrete `model`.

    Raises
    ------
    ModelError
        If the model is not all-discrete and tabulable.
    ImportError
        If pyAgrum is not installed.
    """
    import pyagrum as gum  # optional: only this converter needs it

    net = discrete_network(model)
    if net is None:
        raise ModelError("to_agrum needs a discrete model (every node discrete and tabulable)")
    bn = gum.BayesNet()
    ids = {v: bn.add(gum.RangeVariable(str(v), "", 0, net.cards[v] - 1)) for v in model.dag.nodes}
    for v in model.dag.nodes:
        for p in model.dag.parents(v):
            bn.addArc(ids[p], ids[v])
    for v in model.dag.nodes:
        parents = [str(p) for p in model.dag.parents(v)]
        cpt = bn.cpt(ids[v])
        # a pyAgrum table's first variable (cpt.names[0]) varies fastest: fill with causalnet's axes reversed
        names = list(cpt.names)
        order = [parents.index(nm) if nm != str(v) else len(parents) for nm in names[::-1]]
        cpt.fillWith(np.transpose(net.cpts[v], order).reshape(-1).tolist())
    return bn
