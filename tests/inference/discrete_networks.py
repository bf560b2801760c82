"""Random discrete networks and brute-force oracles shared by the discrete-engine tests.

The oracle enumerates the full joint with numpy broadcasting only (no einsum,
no elimination), so it shares no code with the engines it checks.
"""

import numpy as np

import causalnet as cn

__all__ = ["random_network", "network_model", "pick_question", "brute_joint", "brute_query"]


def random_network(rng, n_nodes, max_parents=3, cards=(2, 4), zeros=False):
    """A random DAG (nodes X0..X{n-1} in topological order) with Dirichlet CPTs."""
    names = [f"X{i}" for i in range(n_nodes)]
    edges = []
    for j in range(1, n_nodes):
        k = int(rng.integers(0, min(j, max_parents) + 1))
        for p in rng.choice(j, size=k, replace=False):
            edges.append((names[p], names[j]))
    dag = cn.DAG(edges, nodes=names)
    card = {v: int(rng.integers(cards[0], cards[1] + 1)) for v in names}
    cpts = {}
    for v in names:
        shape = [card[p] for p in dag.parents(v)]
        t = rng.dirichlet(np.ones(card[v]), size=shape)   # (*parent_cards, card)
        if zeros:                                          # some impossible states
            t = np.where(rng.random(t.shape) < 0.15, 0.0, t)
            t[..., 0] += (t.sum(-1) == 0)
            t = t / t.sum(-1, keepdims=True)
        cpts[v] = t
    return dag, cpts, card


def network_model(dag, cpts, card=None):
    """The CausalModel of `random_network`'s CPTs; with `card`, its states are named ``x0``, ``x1``, ... ."""
    mechs = {}
    for v in dag.nodes:
        ps = list(dag.parents(v))
        states = None if card is None else [f"{v.lower()}{i}" for i in range(card[v])]
        mechs[v] = cn.CPT(ps, cpts[v], states=states) if ps else cn.Categorical(cpts[v], states=states)
    return cn.CausalModel(mechs)


def pick_question(rng, names, n_targets, n_ev):
    """``(targets, evidence nodes)``: `n_targets` (at most all but one) and then up to `n_ev` distinct nodes of
    `names`, in a random order."""
    pick = rng.permutation(len(names))
    targets = [names[i] for i in pick[:min(n_targets, len(names) - 1)]]
    return targets, [names[i] for i in pick[len(targets):len(targets) + n_ev]]


def brute_joint(dag, cpts, card):
    """The full joint as an array with one axis per node in dag.nodes order (broadcasting only)."""
    names = list(dag.nodes)
    joint = np.ones([card[v] for v in names])
    for v in names:
        fam = [*dag.parents(v), v]
        t = cpts[v]
        perm = sorted(range(len(fam)), key=lambda i: names.index(fam[i]))
        shape = [1] * len(names)
        for i in perm:
            shape[names.index(fam[i])] = card[fam[i]]
        joint = joint * np.transpose(t, perm).reshape(shape)
    return joint, names


def brute_query(joint, names, targets, evidence):
    """(P(targets | e) with axes in targets order, P(e)) from the full joint."""
    idx = tuple(evidence.get(v, slice(None)) for v in names)
    sub = joint[idx]
    rest = [v for v in names if v not in evidence]
    pe = sub.sum()
    keep = sorted(rest.index(t) for t in targets)
    marg = sub.sum(axis=tuple(i for i in range(len(rest)) if i not in keep))
    cur = [rest[i] for i in keep]
    marg = np.transpose(marg, [cur.index(t) for t in targets]) if targets else marg
    with np.errstate(invalid="ignore", divide="ignore"):  # P(e) = 0: the caller checks pe
        return marg / pe, pe
