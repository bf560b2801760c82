"""The first query's lean front door and requisite walk.

Oracles: the general request builder (:func:`causalnet.inference.request.query_request`:
the same fields, the same errors), brute-force enumeration of the full joint
(``discrete_networks``), and pyAgrum's LazyPropagation (single target) on
freshly read shipped networks.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, pick_question, random_network
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.inference.request import plain_request, query_request


def _model(dag, cpts, names=True):
    mechs = {}
    for v in dag.nodes:
        ps = list(dag.parents(v))
        k = np.shape(cpts[v])[-1]
        states = [f"s{i}" for i in range(k)] if names else None
        mechs[v] = cn.CPT(ps, cpts[v], states=states) if ps else cn.Categorical(cpts[v], states=states)
    return cn.CausalModel(mechs)


def _fields(r):
    return (r.model, r.cf_model, r.world, r.targets, r.target_values, {k: (a.dtype, a.shape, int(a)) for k, a in
            r.evidence.items()}, r.row_do, r.n_rows, r.method, r.n_samples, r.seed, r.soft, r.options, r.text)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 7), n_targets=st.integers(1, 2),
       n_ev=st.integers(0, 3), by_index=st.booleans(), method=st.sampled_from(["auto", "exact"]))
def test_plain_request_equals_the_general_request(seed, n_nodes, n_targets, n_ev, by_index, method):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes)
    m = _model(dag, cpts)
    names = list(dag.nodes)
    targets, ev_nodes = pick_question(rng, names, n_targets, n_ev)
    evidence = {v: int(rng.integers(card[v])) for v in ev_nodes}
    if not by_index:
        evidence = {v: f"s{i}" for v, i in evidence.items()}
    one = targets[0] if len(targets) == 1 else targets
    got = plain_request(m, one, evidence, method)
    assert got is not None
    assert _fields(got) == _fields(query_request(m, one, evidence, method=method))


@pytest.mark.parametrize("targets, evidence", [
    ("B", {"A": "nope"}),               # unknown state: the general path raises
    ("B", {"A": True}),                 # a bool
    ("B", {"A": 5}),                    # an index out of range
    (["B", "B"], {}),                   # a target listed twice
    ("B", {"B": "b0"}),                 # a target observed
    ("Z", {}),                          # an unknown target
    ("B", {"Z": 0}),                    # an unknown evidence node
])
def test_plain_request_declines_and_the_general_path_raises(targets, evidence):
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7], states=["a0", "a1"]),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]], states=["b0", "b1"])})
    assert plain_request(m, targets, evidence, "auto") is None
    with pytest.raises(cn.EvidenceError):
        query_request(m, targets, evidence)
    with pytest.raises(cn.EvidenceError):
        m.query(targets, evidence=evidence)


def test_plain_request_declines_a_numpy_scalar_and_the_general_path_answers():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7], states=["a0", "a1"]),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]], states=["b0", "b1"])})
    assert plain_request(m, "B", {"A": np.int64(1)}, "auto") is None
    got = m.query("B", evidence={"A": np.int64(1)})
    np.testing.assert_allclose(got.probs, [0.2, 0.8])
    assert got.query == "P(B | A=a1)"


def test_plain_request_declines_integer_state_names():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7], states=[1, 0]),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
    assert plain_request(m, "B", {"A": 0}, "auto") is None                    # 0 names state 1 here
    got = m.query("B", evidence={"A": 0})
    np.testing.assert_allclose(got.probs, [0.2, 0.8])
    assert got.query == "P(B | A=0)"


def test_plain_request_declines_a_per_row_do():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
    md = m.do({"A": np.array([0, 1])})
    assert plain_request(md, "B", {}, "auto") is None
    np.testing.assert_allclose(md.query("B").probs, [[0.9, 0.1], [0.2, 0.8]])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 9), n_ev=st.integers(0, 4), zeros=st.booleans())
def test_first_query_with_far_evidence_equals_brute_force(seed, n_nodes, n_ev, zeros):
    # sparse random networks: evidence often apart from the target (deferred or eager log-evidence)
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, max_parents=int(rng.integers(1, 3)), zeros=zeros)
    names = list(dag.nodes)
    pick = rng.permutation(n_nodes)
    target = names[pick[0]]
    evidence = {names[i]: int(rng.integers(card[names[i]])) for i in pick[1:1 + n_ev]}
    joint, order = brute_joint(dag, cpts, card)
    want, pe = brute_query(joint, order, [target], evidence)
    m = _model(dag, cpts, names=False)
    if pe == 0:
        with pytest.raises(cn.EvidenceError):
            m.query(target, evidence=evidence)
        return
    got = m.query(target, evidence=evidence)
    assert m.cache["discrete_direct"].answered == 1 and "discrete_bn" not in m.cache
    np.testing.assert_allclose(got.probs, want, atol=1e-12)
    assert got.log_evidence == pytest.approx(math.log(pe), abs=1e-9)


@pytest.mark.parametrize("name", ["alarm", "win95pts", "andes", "munin1"])
def test_first_query_agrees_with_pyagrum_on_shipped_networks(name):
    gum = pytest.importorskip("pyagrum")
    from causalnet.io.agrum import to_agrum
    from causalnet.io.bif import read_bif

    path = Path(cn.__file__).parent / "data" / f"{name}.bif.gz"
    m = read_bif(path)
    g = to_agrum(m)
    rng = np.random.default_rng(7)
    sample = m.sample(8, seed=3)
    nodes = list(m.nodes)
    for r in range(4):
        pick = rng.choice(len(nodes), 4, replace=False)
        target = nodes[pick[0]]
        evidence = {nodes[j]: m.states(nodes[j])[int(sample[nodes[j]][r])] for j in pick[1:]}
        fresh = read_bif(path)
        got = fresh.query(target, evidence=evidence)
        assert fresh.cache["discrete_direct"].answered == 1 and "discrete_bn" not in fresh.cache
        ie = gum.LazyPropagation(g)
        ie.setTargets({target})
        ie.setEvidence({k: m.states(k).index(v) for k, v in evidence.items()})
        ie.makeInference()
        np.testing.assert_allclose(got.probs, ie.posterior(target).toarray(), atol=1e-7)
        assert got.log_evidence == pytest.approx(math.log(ie.evidenceProbability()), abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_factors=st.integers(1, 4))
def test_sum_out_equals_the_einsum_contraction(seed, n_factors):
    # every path of _sum_out (one table, vectors over z, a matrix over (z, c), the general einsum) against
    # _contract, which multiplies everything in one einsum
    from causalnet.inference.discrete.direct import _contract, _sum_out

    rng = np.random.default_rng(seed)
    card = {u: int(rng.integers(1, 4)) for u in range(5)}
    z = 0
    group = []
    for _ in range(n_factors):
        others = [int(u) for u in rng.choice(range(1, 5), size=int(rng.integers(0, 3)), replace=False)]
        labels = others[:]
        labels.insert(int(rng.integers(0, len(others) + 1)), z)
        group.append((rng.random([card[u] for u in labels]), labels))
    table, out = _sum_out(group, z, 64)
    assert z not in out
    assert sorted(out) == sorted({u for _, lab in group for u in lab} - {z})
    np.testing.assert_allclose(table, _contract(group, out), rtol=1e-12)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 8), n_ev=st.integers(1, 4))
def test_far_witness_only_claims_possible_evidence(seed, n_nodes, n_ev):
    # a True from the greedy witness must mean P(evidence) > 0 (brute force); it may say False when not sure
    from causalnet.inference.discrete.direct import _far_possible

    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, zeros=True)
    m = _model(dag, cpts, names=False)
    names = list(dag.nodes)
    evidence = {names[i]: int(rng.integers(card[names[i]])) for i in rng.permutation(n_nodes)[:n_ev]}
    ix = m.dag.index
    ev = {ix.pos[k]: x for k, x in evidence.items()}
    joint, order = brute_joint(dag, cpts, card)
    _, pe = brute_query(joint, order, [], evidence)
    if _far_possible(m, ix, ev, list(ev)):
        assert pe > 0
