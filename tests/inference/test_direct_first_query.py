"""The first query of a fresh all-CPT model (direct elimination on the ancestral network).

Oracles: brute-force enumeration of the full joint (``discrete_networks``,
broadcasting only), the compiled engine of the same model (a second query),
and pyAgrum's LazyPropagation on a shipped network.
"""

import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.inference.discrete.direct import _contract, _contract_pairwise, direct_query


def _model(dag, cpts):
    mechs = {}
    for v in dag.nodes:
        ps = list(dag.parents(v))
        mechs[v] = cn.CPT(ps, cpts[v]) if ps else cn.Categorical(cpts[v])
    return cn.CausalModel(mechs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 8), n_targets=st.integers(1, 2),
       n_ev=st.integers(0, 3), zeros=st.booleans())
def test_first_query_equals_brute_force_and_compiled(seed, n_nodes, n_targets, n_ev, zeros):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, zeros=zeros)
    names = list(dag.nodes)
    pick = rng.permutation(n_nodes)
    targets = [names[i] for i in pick[:min(n_targets, n_nodes - 1)]]
    ev_nodes = [names[i] for i in pick[len(targets):len(targets) + n_ev]]
    evidence = {v: int(rng.integers(card[v])) for v in ev_nodes}
    joint, order = brute_joint(dag, cpts, card)
    want, pe = brute_query(joint, order, targets, evidence)
    m = _model(dag, cpts)
    if pe == 0:
        with pytest.raises(cn.EvidenceError):
            m.query(targets, evidence=evidence)
        return
    got = m.query(targets, evidence=evidence)
    assert m.cache["discrete_direct"].answered == 1 and "discrete_bn" not in m.cache   # the direct path answered
    np.testing.assert_allclose(got.probs, want, atol=1e-12)
    assert got.log_evidence == pytest.approx(math.log(pe), abs=1e-9)
    assert got.method == "exact (variable elimination)"
    again = m.query(targets, evidence=evidence)                                    # compiled path
    assert "discrete_bn" in m.cache
    np.testing.assert_allclose(again.probs, got.probs, atol=1e-12)
    assert again.log_evidence == pytest.approx(got.log_evidence, abs=1e-9)


def test_impossible_evidence_raises_on_the_first_query():
    m = cn.CausalModel({"A": cn.Categorical([1.0, 0.0]), "B": cn.CPT(["A"], [[1.0, 0.0], [0.5, 0.5]])})
    with pytest.raises(cn.EvidenceError):
        m.query("A", evidence={"B": 1})


def test_direct_query_declines_what_it_cannot_answer():
    m = cn.CausalModel({"A": cn.Categorical([1.0, 0.0]), "B": cn.CPT(["A"], [[1.0, 0.0], [0.5, 0.5]])})
    assert direct_query(m, ("A",), {"B": 1}) is None                    # P(e) = 0: the compiled path raises
    probs, log_ev = direct_query(m, ("B",), {})
    np.testing.assert_allclose(probs, [1.0, 0.0])
    assert log_ev == 0.0


def test_resource_limit_raises_on_the_first_query():
    names = [f"X{i}" for i in range(12)]
    mechs = {"X0": cn.Categorical([0.5, 0.5])}
    for i in range(1, 12):                  # X0 -> every node, and a chain: evidence at the end couples all
        ps = ["X0"] if i == 1 else ["X0", names[i - 1]]
        mechs[names[i]] = cn.CPT(ps, np.full([2] * len(ps) + [2], 0.5))
    m = cn.CausalModel(mechs)
    with cn.limits.override(max_table_bytes=64):
        with pytest.raises(cn.ResourceError, match="X0:2"):
            m.query(["X1", "X2", "X3", "X4"], evidence={"X11": 1}, method="exact")
        assert "discrete: ResourceError" in m.query(["X1", "X2", "X3", "X4"], evidence={"X11": 1}).method
        assert "discrete: ResourceError" in m.query(["X1", "X2", "X3", "X4", "X5"], evidence={"X11": 1}).method


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_factors=st.integers(1, 4))
def test_pairwise_contraction_equals_einsum(seed, n_factors):
    rng = np.random.default_rng(seed)
    card = {u: int(rng.integers(1, 4)) for u in range(6)}
    group = []
    for _ in range(n_factors):
        labels = [int(u) for u in rng.choice(6, size=int(rng.integers(1, 4)), replace=False)]
        group.append((rng.random([card[u] for u in labels]), labels))
    present = sorted({u for _, lab in group for u in lab})
    out = [int(u) for u in rng.permutation(present)[: int(rng.integers(0, len(present) + 1))]]
    np.testing.assert_allclose(_contract_pairwise(group, out), _contract(group, out, card), rtol=1e-12)


def test_first_query_agrees_with_pyagrum_on_alarm():
    gum = pytest.importorskip("pyagrum")
    from causalnet.io.agrum import to_agrum
    from causalnet.io.bif import read_bif

    path = Path(cn.__file__).parent / "data" / "alarm.bif.gz"
    m = read_bif(path)
    g = to_agrum(m)
    evidence = {"HRBP": m.states("HRBP")[2], "CO": m.states("CO")[0], "BP": m.states("BP")[1]}
    for target in ["LVFAILURE", "HYPOVOLEMIA", "KINKEDTUBE"]:
        fresh = read_bif(path)
        got = fresh.query(target, evidence=evidence)
        ie = gum.LazyPropagation(g)
        ie.setTargets({target})
        ie.setEvidence({k: m.states(k).index(v) for k, v in evidence.items()})
        ie.makeInference()
        assert fresh.cache["discrete_direct"].answered == 1 and "discrete_bn" not in fresh.cache
        np.testing.assert_allclose(got.probs, ie.posterior(target).toarray(), atol=1e-9)


def test_evidence_apart_from_the_target_is_summed_when_read():
    # A -> B and C -> D: the evidence on D does not touch A's posterior; P(D=1) > 0 is known (D's CPT has no zero)
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]]),
                        "C": cn.Categorical([0.0, 1.0]), "D": cn.CPT(["C"], [[0.5, 0.5], [0.25, 0.75]])})
    got = m.query("A", evidence={"B": 1, "D": 1})
    assert callable(got.__dict__["_log_evidence"])                  # deferred
    clone = pickle.loads(pickle.dumps(got))                          # pickling computes it
    want = math.log((0.3 * 0.1 + 0.7 * 0.8) * 0.75)
    assert clone.log_evidence == pytest.approx(want, abs=1e-12)
    assert got.log_evidence == pytest.approx(want, abs=1e-12)
    np.testing.assert_allclose(got.probs, [0.03 / 0.59, 0.56 / 0.59], atol=1e-12)
    # a zero in D's CPT at the observed state: computed at once, and impossible evidence raises
    m0 = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "C": cn.Categorical([0.0, 1.0]),
                         "D": cn.CPT(["C"], [[0.5, 0.5], [1.0, 0.0]])})
    with pytest.raises(cn.EvidenceError):
        m0.query("A", evidence={"D": 1})


def test_deferred_evidence_that_underflows_is_rescaled():
    # ten pairs R_i -> O_i apart from the target, P(O_i = 1) = 1e-30 each: P(e) = 1e-300, below the direct
    # path's floor; read later, the log-evidence comes from the network's rescaling program
    mechs = {"A": cn.Categorical([0.3, 0.7])}
    for i in range(10):
        mechs[f"R{i}"] = cn.Categorical([0.5, 0.5])
        mechs[f"O{i}"] = cn.CPT([f"R{i}"], [[1 - 1e-30, 1e-30], [1 - 1e-30, 1e-30]])
    m = cn.CausalModel(mechs)
    got = m.query("A", evidence={f"O{i}": 1 for i in range(10)})
    assert callable(got.__dict__["_log_evidence"])
    np.testing.assert_allclose(got.probs, [0.3, 0.7], atol=1e-15)
    assert got.log_evidence == pytest.approx(10 * math.log(1e-30), rel=1e-12)
