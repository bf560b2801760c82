"""Junction tree == variable elimination == brute-force enumeration, on random small networks.

Also the clique tree's invariants (forest, families covered, running
intersection) straight from :func:`causalnet.inference.discrete.cliques.build_clique_tree`,
and the calibrated prior tree (:mod:`causalnet.inference.discrete.prior_tree`) against
the same oracle.
"""

import networkx as nx
import numpy as np
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet.inference.discrete.junction_tree as jt_module
from causalnet import EvidenceError
from causalnet.inference.discrete.cliques import build_clique_tree
from causalnet.inference.discrete.elimination import DiscreteBN
from causalnet.inference.discrete.hugin import propagate
from causalnet.inference.discrete.network import DiscreteNetwork
from causalnet.inference.discrete.prior_tree import build_prior_tree

networks = st.tuples(st.integers(0, 2**32 - 1), st.integers(2, 8), st.booleans())


def _evidence(rng, names, card, n=None):
    k = int(rng.integers(0, len(names)))
    picked = [names[i] for i in rng.permutation(len(names))[:k]]
    if n is None:
        return {v: int(rng.integers(card[v])) for v in picked}
    return {v: rng.integers(card[v], size=n) for v in picked}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks)
def test_junction_tree_equals_elimination_equals_enumeration(params):
    s, n_nodes, zeros = params
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, n_nodes, cards=(1, 3), zeros=zeros)
    joint, names = brute_joint(dag, cpts, card)
    bn = DiscreteBN(dag, cpts, card)
    ev = _evidence(rng, names, card)
    pe = joint[tuple(ev.get(v, slice(None)) for v in names)].sum()
    jt = bn.junction_tree()
    if pe == 0:
        for call in (lambda: jt.marginals(ev), lambda: bn.query([], ev)):
            try:
                call()
            except EvidenceError as e:
                assert "probability zero" in str(e)
            else:
                raise AssertionError("impossible evidence accepted")
        return
    marg, log_e = jt.marginals(ev, return_log_evidence=True)
    assert log_e == np.log(pe) or abs(log_e - np.log(pe)) < 1e-10
    for v in names:
        want = np.eye(card[v])[ev[v]] if v in ev else brute_query(joint, names, [v], ev)[0]
        assert_allclose(marg[v], want, rtol=0, atol=1e-10)
        if v not in ev:
            assert_allclose(bn.query([v], ev)[0], want, rtol=0, atol=1e-10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks, st.integers(1, 4))
def test_batched_calibration_equals_row_by_row(params, n):
    s, n_nodes, _ = params
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, n_nodes, cards=(2, 3))
    joint, names = brute_joint(dag, cpts, card)
    bn = DiscreteBN(dag, cpts, card)
    ev = _evidence(rng, names, card, n)
    if not ev:                                          # no arrays: not a batch
        return
    reduce = list(ev)[:1]
    marg, log_e = bn.junction_tree(reduce).marginals(ev, return_log_evidence=True)
    for r in range(n):
        row = {v: int(x[r]) for v, x in ev.items()}
        pe = joint[tuple(row.get(v, slice(None)) for v in names)].sum()
        assert abs(log_e[r] - np.log(pe)) < 1e-10
        for v in names:
            want = np.eye(card[v])[row[v]] if v in row else brute_query(joint, names, [v], row)[0]
            assert_allclose(marg[v][r], want, rtol=0, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(networks)
def test_clique_tree_invariants(params):
    s, n_nodes, _ = params
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, n_nodes + 6, cards=(2, 3))
    net = DiscreteNetwork(dag, cpts, card)
    t = build_clique_tree(net)
    g = nx.Graph()
    g.add_nodes_from(range(len(t.vars)))
    g.add_edges_from((c, p) for c, p in enumerate(t.parent) if p >= 0)
    assert nx.is_forest(g) and nx.number_connected_components(g) == t.n_trees
    cliques = [set(vs) for vs in t.vars]
    for v, c in t.assign:                               # each CPT's family lies in its clique
        assert set(net.family[v]) <= cliques[c]
    for v in range(len(net.card)):                      # running intersection
        holding = [i for i, c in enumerate(cliques) if v in c]
        assert holding and nx.is_connected(g.subgraph(holding))
        assert v in cliques[t.home[v]]
    assert sorted(t.pre) == list(range(len(t.vars))) and t.post == t.pre[::-1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks)
def test_prior_tree_equals_enumeration(params):
    s, n_nodes, _ = params
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, n_nodes, cards=(2, 3))
    joint, names = brute_joint(dag, cpts, card)
    net = DiscreteNetwork(dag, cpts, card)
    pt = build_prior_tree(net, build_clique_tree(net))
    ev = {names.index(v): x for v, x in _evidence(rng, names, card).items()}
    named = {names[u]: x for u, x in ev.items()}
    t = next(i for i in range(len(names)) if i not in ev)
    got = pt.query((t,), ev)
    want, pe = brute_query(joint, names, [names[t]], named)
    assert got is not None
    assert_allclose(got[0], want, rtol=0, atol=1e-10)
    assert abs(got[1] - np.log(pe)) < 1e-10


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks)
def test_one_hugin_propagation_equals_enumeration(params):
    """The first all-marginals request runs one Hugin propagation (causalnet.inference.discrete.hugin)."""
    s, n_nodes, zeros = params
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, n_nodes, max_parents=4, cards=(1, 3), zeros=zeros)
    joint, names = brute_joint(dag, cpts, card)
    net = DiscreteNetwork(dag, cpts, card)
    ev = _evidence(rng, names, card)
    got = propagate(net, build_clique_tree(net), {names.index(v): x for v, x in ev.items()})
    _, pe = brute_query(joint, names, [], ev)
    if pe == 0:
        assert got is None
        return
    post, log_z = got
    assert_allclose(log_z, np.log(pe), rtol=1e-10, atol=1e-12)
    for i, v in enumerate(names):
        want = np.eye(card[v])[ev[v]] if v in ev else brute_query(joint, names, [v], ev)[0]
        assert_allclose(post[i], want, rtol=0, atol=1e-10)
    # through the public entry point: the first three requests propagate, later ones use the prior tree
    jt = DiscreteBN(dag, cpts, card).junction_tree()
    for _ in range(5):
        m = jt.marginals(ev)
        for i, v in enumerate(names):
            assert_allclose(m[v], post[i], rtol=0, atol=1e-10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks)
def test_compiled_calibration_shared_messages_equal_enumeration(params):
    """Compiled calibrations (a tree with an evidence variable) with every clique sharing its
    small-separator messages, and evidence-free messages reused across evidence sets."""
    s, n_nodes, _ = params
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, n_nodes + 3, max_parents=3, cards=(2, 3))
    joint, names = brute_joint(dag, cpts, card)
    saved = jt_module._SHARED_SEP
    jt_module._SHARED_SEP = 3                        # separators of up to 3 entries; cliques over 3
    try:
        jt = DiscreteBN(dag, cpts, card).junction_tree([names[0]])
        for _ in range(3):                           # several evidence sets on one tree
            ev = {names[0]: int(rng.integers(card[names[0]]))} | _evidence(rng, names[1:], card)
            _, pe = brute_query(joint, names, [], ev)
            if pe == 0:
                continue
            marg = jt.marginals(ev)
            for v in names:
                want = np.eye(card[v])[ev[v]] if v in ev else brute_query(joint, names, [v], ev)[0]
                assert_allclose(marg[v], want, rtol=0, atol=1e-10)
    finally:
        jt_module._SHARED_SEP = saved
