"""Every elimination path of the direct first query, forced in turn, against brute force.

The direct path (:mod:`causalnet.inference.discrete.direct`) picks its steps by
size: one plain ``einsum`` for a few small factors, absorption and a greedy
order otherwise, several variables summed in one product when no other factor
holds them, and large products two factors at a time by batched matrix
products. Small random networks would only ever take the first; the size
thresholds are set to zero here so that each test runs the path it names.

Oracles: brute-force enumeration of the full joint (``discrete_networks``) and
one ``einsum`` of every factor (:func:`~causalnet.inference.discrete.direct._contract`).
"""

import math

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, network_model, pick_question, random_network
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.inference.discrete import direct

#: Thresholds per path (one einsum, pair products, scan): 0 turns the cheap choice off; a small one-einsum
#: bound lets the greedy order run a few steps and leave the rest to one einsum.
PATHS = {
    "one einsum": {},
    "absorb and greedy scan": {"_ONE_EINSUM": 0},
    "greedy finished by one einsum": {"_ONE_EINSUM": 64},
    "greedy heap and pair products": {"_ONE_EINSUM": 0, "_PAIR_MATMUL": 0, "_SCAN": 0},
}


@pytest.mark.parametrize("path", list(PATHS))
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 10), n_targets=st.integers(1, 2),
       n_ev=st.integers(0, 4), zeros=st.booleans())
def test_each_path_equals_brute_force(path, seed, n_nodes, n_targets, n_ev, zeros):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, max_parents=4, cards=(1, 4), zeros=zeros)
    names = list(dag.nodes)
    targets, ev_nodes = pick_question(rng, names, n_targets, n_ev)
    evidence = {v: int(rng.integers(card[v])) for v in ev_nodes}
    joint, order = brute_joint(dag, cpts, card)
    want, pe = brute_query(joint, order, targets, evidence)
    m = network_model(dag, cpts)
    saved = {k: getattr(direct, k) for k in PATHS[path]}
    try:
        for k, v in PATHS[path].items():
            setattr(direct, k, v)
        got = direct.direct_query(m, targets, evidence)
    finally:
        for k, v in saved.items():
            setattr(direct, k, v)
    if got is None:                                    # declined: impossible (or underflowing) evidence only
        assert pe < direct.TINY
        return
    probs, log_ev = got
    np.testing.assert_allclose(probs, want, atol=1e-12)
    log_ev = log_ev() if callable(log_ev) else log_ev
    assert log_ev == pytest.approx(math.log(pe), abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), n_factors=st.integers(1, 5), n_drop=st.integers(0, 4),
       pair=st.booleans())
def test_product_sum_equals_one_einsum(seed, n_factors, n_drop, pair):
    # the product of `group` with the labels of `drop` summed out, by one einsum or by pairs of batched
    # matrix products (`pair`: the threshold set to 0), against _contract's single einsum
    rng = np.random.default_rng(seed)
    card = {u: int(rng.integers(1, 5)) for u in range(6)}
    group = []
    for _ in range(n_factors):
        labels = [int(u) for u in rng.choice(6, size=int(rng.integers(1, 5)), replace=False)]
        group.append((rng.random([card[u] for u in labels]), labels))
    present = list(dict.fromkeys(u for _, lab in group for u in lab))
    drop = [int(u) for u in rng.permutation(present)[:n_drop]]
    out = [u for u in present if u not in drop]
    table, labels = direct._product_sum(group, drop, 10**9 if pair else 0)
    assert labels == out
    np.testing.assert_allclose(table, direct._contract(group, out), rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_a=st.integers(0, 4), n_b=st.integers(0, 4), n_drop=st.integers(0, 5))
def test_pair_equals_one_einsum(seed, n_a, n_b, n_drop):
    # one batched matrix product for every split of labels: shared kept (batch), shared summed (inner),
    # summed labels one factor holds alone (summed there first), labels of one factor only
    rng = np.random.default_rng(seed)
    card = {u: int(rng.integers(1, 4)) for u in range(6)}
    la = [int(u) for u in rng.choice(6, size=n_a, replace=False)]
    lb = [int(u) for u in rng.choice(6, size=n_b, replace=False)]
    a, b = rng.random([card[u] for u in la]), rng.random([card[u] for u in lb])
    present = list(dict.fromkeys(la + lb))
    drop = {int(u) for u in rng.permutation(present)[:n_drop]} if present else set()
    table, labels = direct._pair(a, la, b, lb, drop)
    assert sorted(labels) == sorted(u for u in present if u not in drop)
    np.testing.assert_allclose(table, direct._contract([(a, la), (b, lb)], labels), rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 8), n_targets=st.integers(1, 2),
       n_ev=st.integers(0, 3), by_index=st.booleans())
def test_the_first_call_lane_equals_the_general_route(seed, n_nodes, n_targets, n_ev, by_index):
    # model.query's first plain call of a shape skips the Request and the registry; the general route
    # (plain_request, then answer) on a twin model gives the same result: probabilities, P(e), text, method
    from causalnet.inference.dispatch import answer
    from causalnet.inference.request import plain_request
    from causalnet.inference.shapes import CACHE_KEY

    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, zeros=True)
    names = list(dag.nodes)
    targets, ev_nodes = pick_question(rng, names, n_targets, n_ev)
    m, twin = network_model(dag, cpts, card), network_model(dag, cpts, card)
    evidence = {v: (int(s) if by_index else m.states(v)[s]) for v, s in
                ((v, int(rng.integers(card[v]))) for v in ev_nodes)}
    query = targets if len(targets) > 1 else targets[0]
    try:
        want = answer(plain_request(twin, query, evidence, "auto"))
    except cn.EvidenceError:
        with pytest.raises(cn.EvidenceError):
            m.query(query, evidence=evidence)
        return
    got = m.query(query, evidence=evidence)
    np.testing.assert_array_equal(got.probs, want.probs)
    assert (got.query, got.method, got.variables, got.states) == (want.query, want.method, want.variables,
                                                                   want.states)
    assert got.log_evidence == want.log_evidence
    assert m.cache["discrete_direct"].answered == twin.cache["discrete_direct"].answered
    assert len(m.cache[CACHE_KEY]) == 1                                  # the shape is known as asked once


def test_an_engine_ahead_of_the_discrete_one_answers_the_first_call():
    from causalnet.distributions import DiscreteDistribution
    from causalnet.inference.dispatch import QUERY_ENGINES
    from causalnet.inference.engine import Engine

    class Uniform(Engine):
        name = "uniform (test)"

        def accepts(self, request):
            return len(request.nodes) == 1

        def answer(self, request):
            states = request.model.states(request.nodes[0])
            return DiscreteDistribution(request.nodes, np.full(len(states), 1 / len(states)), [states],
                                        method=self.name)

    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
    engine = Uniform()
    QUERY_ENGINES.register(engine, before="discrete")
    try:
        got = m.query("A", evidence={"B": 1})
    finally:
        QUERY_ENGINES.unregister(engine)
    assert got.method == "uniform (test)" and "discrete_direct" not in m.cache
    assert m.query("A", evidence={"B": 1}).probs.round(4).tolist() == [0.0508, 0.9492]


@pytest.mark.parametrize("path", list(PATHS))
def test_each_path_on_dense_networks(path, monkeypatch):
    # ten-node networks with up to five parents a node: the greedy order (and its early finish, its
    # several-variable sums, its pair products) runs on every one, which small random networks rarely need
    for k, v in PATHS[path].items():
        monkeypatch.setattr(direct, k, v)
    rng = np.random.default_rng(7)
    greedy = 0
    for _ in range(25):
        dag, cpts, card = random_network(rng, 10, max_parents=5, cards=(2, 3))
        names = list(dag.nodes)
        pick = rng.permutation(10)
        targets = [names[pick[0]]]
        evidence = {names[i]: int(rng.integers(card[names[i]])) for i in pick[1:4]}
        joint, order = brute_joint(dag, cpts, card)
        want, pe = brute_query(joint, order, targets, evidence)
        got = direct.direct_query(network_model(dag, cpts), targets, evidence)
        if got is None:
            assert pe < direct.TINY
            continue
        np.testing.assert_allclose(got[0], want, atol=1e-12)
        log_ev = got[1]() if callable(got[1]) else got[1]
        assert log_ev == pytest.approx(math.log(pe), abs=1e-9)
        greedy += 1
    assert greedy >= 20


def test_a_read_model_records_that_every_node_is_a_cpt():
    # the BIF reader builds CPTs only and says so in the model's cache, so the first query does not scan
    # the mechanisms; a model built by hand is scanned once, and a non-CPT node makes it False
    from pathlib import Path

    from causalnet.mechanisms.tabular import TABULAR_KEY, Tabular, is_plain_tabular

    m = cn.read_bif(Path(cn.__file__).parent / "data" / "asia.bif.gz")
    assert m.cache[TABULAR_KEY] is True and all(isinstance(x, Tabular) for x in m.mechanisms.values())
    by_hand = cn.CausalModel(dict(m.mechanisms))
    assert TABULAR_KEY not in by_hand.cache and is_plain_tabular(by_hand) and by_hand.cache[TABULAR_KEY]
    mixed = cn.CausalModel({"A": cn.Categorical([0.5, 0.5]), "Y": cn.LinearGaussian(sigma=1.0)})
    assert not is_plain_tabular(mixed)
