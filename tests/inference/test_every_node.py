"""all_marginals: every posterior under evidence and do, both routes, against brute-force enumeration."""

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import EvidenceError, ResourceError
from causalnet.inference.discrete import DiscreteBN, all_marginals
from causalnet.inference.discrete.every_node import PER_NODE_METHOD, TREE_METHOD, requisite


def mutilated(dag, cpts, card, do):
    """The network under do: the intervened nodes lose their parents and get a point mass."""
    edges = [(u, v) for u, v in dag.edges if v not in do]
    g = cn.DAG(edges, nodes=list(dag.nodes))
    out = dict(cpts)
    for v, x in do.items():
        p = np.zeros(card[v])
        p[x] = 1.0
        out[v] = p
    return g, out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(0, 3), st.integers(0, 2), st.booleans())
def test_both_routes_match_enumeration_of_the_mutilated_network(seed, n_ev, n_do, zeros):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 7, zeros=zeros)
    names = list(dag.nodes)
    pick = [names[i] for i in rng.choice(len(names), size=n_ev + n_do, replace=False)]
    ev = {v: int(rng.integers(card[v])) for v in pick[:n_ev]}
    do = {v: int(rng.integers(card[v])) for v in pick[n_ev:]}
    g, mcpts = mutilated(dag, cpts, card, do)
    joint, jnames = brute_joint(g, mcpts, card)
    _, pe = brute_query(joint, jnames, [], {**ev, **do})
    bn = DiscreteBN(dag, cpts, card)
    for max_clique, method in ((10**9, TREE_METHOD), (0, PER_NODE_METHOD)):
        if not pe > 1e-300:
            with pytest.raises(EvidenceError, match="probability zero"):
                all_marginals(bn, ev, do=do, max_clique=max_clique)
            continue
        post, log_e, got = all_marginals(bn, ev, do=do, max_clique=max_clique)
        assert got == method
        assert log_e == pytest.approx(np.log(pe), abs=1e-9)
        for v in names:
            want = brute_query(joint, jnames, [v], {**ev, **do})[0] if v not in ev and v not in do else \
                np.eye(card[v])[{**ev, **do}[v]]
            np.testing.assert_allclose(post[v], want, atol=1e-10, rtol=0)


def test_repeated_updates_agree_with_fresh_networks():
    """The per-node route reuses programs across updates: later answers equal a fresh network's."""
    rng = np.random.default_rng(5)
    dag, cpts, card = random_network(rng, 12, max_parents=3)
    names = list(dag.nodes)
    bn = DiscreteBN(dag, cpts, card)
    for _ in range(8):
        pick = [names[i] for i in rng.choice(len(names), size=4, replace=False)]
        ev = {v: int(rng.integers(card[v])) for v in pick[:3]}
        do = {pick[3]: int(rng.integers(card[pick[3]]))} if rng.random() < 0.5 else {}
        got, _, _ = all_marginals(bn, ev, do=do, max_clique=0)
        fresh, _, _ = all_marginals(DiscreteBN(dag, cpts, card), ev, do=do, max_clique=0)
        tree, _, _ = all_marginals(bn, ev, do=do)
        for v in names:
            np.testing.assert_allclose(got[v], fresh[v], atol=1e-12, rtol=0)
            np.testing.assert_allclose(got[v], tree[v], atol=1e-10, rtol=0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_requisite_without_do_is_the_networks_relevant_set(seed):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 9)
    names = list(dag.nodes)
    bn = DiscreteBN(dag, cpts, card)
    pick = [int(i) for i in rng.choice(len(names), size=4, replace=False)]
    t, ev = pick[0], frozenset(pick[1:])
    want = bn.relevant_nodes([names[t]], [names[u] for u in ev])
    assert {names[v] for v in requisite(bn, t, ev)} == set(want)


def test_bad_input_raises_typed_errors():
    m = cn.gallery.load("sprinkler")
    bn = DiscreteBN(m.dag, *cn.inference.discrete.model_tables(m)[:2])
    with pytest.raises(EvidenceError, match="both observed and intervened"):
        all_marginals(bn, {"Rain": 1}, do={"Rain": 0})
    with pytest.raises(EvidenceError, match="Nope"):
        all_marginals(bn, {"Nope": 1})
    with pytest.raises(EvidenceError, match="arrays"):
        all_marginals(bn, {"Rain": np.array([0, 1])})
    with pytest.raises(ResourceError, match="longer than allowed"):
        all_marginals(bn, {"Rain": 1}, max_clique=0, deadline=0.0)
