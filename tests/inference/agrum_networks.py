"""pyAgrum copies of causalnet discrete models, for the approximate engines' oracle tests."""

import itertools

import numpy as np

from causalnet.inference.discrete import discrete_network

__all__ = ["to_agrum", "agrum_posterior"]


def to_agrum(model):
    """A pyAgrum BayesNet with the same nodes, states (by index) and CPTs as the discrete `model`."""
    import pyagrum as gum

    net = discrete_network(model)
    bn = gum.BayesNet()
    ids = {}
    for v in model.dag.nodes:
        ids[v] = bn.add(gum.RangeVariable(str(v), "", 0, net.cards[v] - 1))
    for v in model.dag.nodes:
        for p in model.dag.parents(v):
            bn.addArc(ids[p], ids[v])
    for v in model.dag.nodes:
        parents = list(model.dag.parents(v))
        t = net.cpts[v]
        for cfg in itertools.product(*[range(net.cards[p]) for p in parents]):
            bn.cpt(ids[v])[{str(p): int(s) for p, s in zip(parents, cfg)}] = t[cfg].tolist()
    return bn


def agrum_posterior(engine, model, node):
    """pyAgrum's posterior of `node` as an array in causalnet's state order."""
    return np.asarray(engine.posterior(str(node)).toarray(), dtype=np.float64)
