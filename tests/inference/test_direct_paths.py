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
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.inference.discrete import direct

#: Thresholds per path: (one einsum, pair products, scan) -- 0 turns the cheap choice off.
PATHS = {
    "one einsum": {},
    "absorb and greedy scan": {"_ONE_EINSUM": 0},
    "greedy heap and pair products": {"_ONE_EINSUM": 0, "_PAIR_MATMUL": 0, "_SCAN": 0},
}


def _model(dag, cpts):
    mechs = {}
    for v in dag.nodes:
        ps = list(dag.parents(v))
        mechs[v] = cn.CPT(ps, cpts[v]) if ps else cn.Categorical(cpts[v])
    return cn.CausalModel(mechs)


@pytest.mark.parametrize("path", list(PATHS))
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 9), n_targets=st.integers(1, 2),
       n_ev=st.integers(0, 4), zeros=st.booleans())
def test_each_path_equals_brute_force(path, seed, n_nodes, n_targets, n_ev, zeros):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, cards=(1, 5), zeros=zeros)
    names = list(dag.nodes)
    pick = rng.permutation(n_nodes)
    targets = [names[i] for i in pick[:min(n_targets, n_nodes - 1)]]
    evidence = {names[i]: int(rng.integers(card[names[i]])) for i in pick[len(targets):len(targets) + n_ev]}
    joint, order = brute_joint(dag, cpts, card)
    want, pe = brute_query(joint, order, targets, evidence)
    m = _model(dag, cpts)
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
