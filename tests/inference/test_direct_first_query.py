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
from discrete_networks import brute_joint, brute_query, network_model, pick_question, random_network
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.inference.discrete.direct import _contract, _contract_pairwise, direct_query


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(2, 8), n_targets=st.integers(1, 2),
       n_ev=st.integers(0, 3), zeros=st.booleans())
def test_first_query_equals_brute_force_and_compiled(seed, n_nodes, n_targets, n_ev, zeros):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, zeros=zeros)
    names = list(dag.nodes)
    targets, ev_nodes = pick_question(rng, names, n_targets, n_ev)
    evidence = {v: int(rng.integers(card[v])) for v in ev_nodes}
    joint, order = brute_joint(dag, cpts, card)
    want, pe = brute_query(joint, order, targets, evidence)
    m = network_model(dag, cpts)
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
    np.testing.assert_allclose(_contract_pairwise(group, out), _contract(group, out), rtol=1e-12)


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


# --- sequences of queries: new shapes go direct, repeated shapes compile (DirectLedger) ---

def _shape_pool(rng, names, n_shapes):
    """Up to `n_shapes` distinct (targets, evidence nodes) shapes over `names`."""
    pool = {}
    for _ in range(4 * n_shapes):
        pick = [names[i] for i in rng.permutation(len(names))]
        nt = int(rng.integers(1, min(2, len(names) - 1) + 1))
        ne = int(rng.integers(0, min(3, len(names) - nt) + 1))
        targets, ev_nodes = tuple(pick[:nt]), tuple(pick[nt:nt + ne])
        pool.setdefault((targets, frozenset(ev_nodes)), (targets, ev_nodes))
        if len(pool) == n_shapes:
            break
    return list(pool.values())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(3, 8), n_shapes=st.integers(1, 5),
       n_queries=st.integers(1, 12), zeros=st.booleans())
def test_query_sequences_equal_brute_force_and_the_compiled_network(seed, n_nodes, n_shapes, n_queries, zeros):
    # a sequence mixing new and repeated shapes, with and without evidence, impossible evidence included:
    # every answer against brute force and against a separately built network (DiscreteBN.query); the
    # direct path answers exactly the first ask of each shape, the network is built only once a shape repeats
    # (or impossible evidence sends the query to the compiled path, which raises)
    from causalnet.inference.discrete import discrete_network

    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes, zeros=zeros)
    names = list(dag.nodes)
    pool = _shape_pool(rng, names, n_shapes)
    joint, order = brute_joint(dag, cpts, card)
    m = network_model(dag, cpts)
    oracle_net = discrete_network(network_model(dag, cpts))
    asked: dict = {}
    direct_answers, needs_net = 0, False
    for _ in range(n_queries):
        targets, ev_nodes = pool[int(rng.integers(len(pool)))]
        evidence = {v: int(rng.integers(card[v])) for v in ev_nodes}
        key = (targets, frozenset(ev_nodes))
        first = key not in asked
        asked[key] = asked.get(key, 0) + 1
        want, pe = brute_query(joint, order, list(targets), evidence)
        needs_net = needs_net or not first or pe == 0
        if pe == 0:
            with pytest.raises(cn.EvidenceError):
                m.query(list(targets), evidence=evidence)
            with pytest.raises(cn.EvidenceError):
                oracle_net.query(list(targets), evidence)
        else:
            got = m.query(list(targets), evidence=evidence)
            direct_answers += first
            np.testing.assert_allclose(got.probs, want, atol=1e-12)
            assert got.log_evidence == pytest.approx(math.log(pe), abs=1e-9)
            probs, log_e = oracle_net.query(list(targets), evidence)
            np.testing.assert_allclose(got.probs, probs, atol=1e-12)
            assert got.log_evidence == pytest.approx(log_e, abs=1e-9)
        assert m.cache["discrete_direct"].answered == direct_answers
        assert ("discrete_bn" in m.cache) == needs_net


def test_a_repeated_shape_is_compiled_and_a_new_one_is_not():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]]),
                        "C": cn.CPT(["B"], [[0.6, 0.4], [0.1, 0.9]])})
    m.query("A", evidence={"B": 1})
    m.query("C", evidence={"A": 0})
    m.query(["A", "C"])
    ledger = m.cache["discrete_direct"]
    assert ledger.answered == 3 and "discrete_bn" not in m.cache and ledger.spent > 0
    again = m.query("A", evidence={"B": 0})                        # the shape repeats: the network answers
    assert ledger.answered == 3 and "discrete_bn" in m.cache
    np.testing.assert_allclose(again.probs, [0.27 / 0.41, 0.14 / 0.41], atol=1e-12)
    m.query("B", evidence={"C": 1})                                # a new shape: direct again
    assert ledger.answered == 4


def test_the_budget_hands_new_shapes_to_the_network_with_the_time_credited(monkeypatch):
    from causalnet.inference.discrete import engine

    monkeypatch.setattr(engine, "DIRECT_BUDGET_S", 0.0)
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
    got = m.query("A", evidence={"B": 1})
    ledger = m.cache["discrete_direct"]
    assert ledger.answered == 0 and ledger.credited and "discrete_bn" in m.cache
    np.testing.assert_allclose(got.probs, [0.03 / 0.59, 0.56 / 0.59], atol=1e-12)


def test_a_usable_prior_tree_answers_new_shapes():
    m = cn.gallery.load("sprinkler")
    net = cn.inference.discrete.discrete_network(m)
    assert net.policy.build_tree() is not None
    nodes = list(m.nodes)
    got = m.query(nodes[0], evidence={nodes[-1]: m.states(nodes[-1])[0]})
    assert m.cache["discrete_direct"].answered == 0                 # the tree answered, not the direct path
    fresh = cn.gallery.load("sprinkler")
    want = fresh.query(nodes[0], evidence={nodes[-1]: m.states(nodes[-1])[0]})
    assert fresh.cache["discrete_direct"].answered == 1
    np.testing.assert_allclose(got.probs, want.probs, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(3, 7))
def test_do_and_fit_start_from_an_empty_ledger(seed, n_nodes):
    # models are immutable: do() and fit() return a model with an empty cache, so nothing the direct path
    # or the network kept about `m` can answer for them (brute force on the changed tables)
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, n_nodes)
    names = list(dag.nodes)
    m = network_model(dag, cpts)
    t, x = names[-1], names[0]
    m.query(t)
    m.query(t)                                                      # ledger and network both populated
    assert "discrete_direct" in m.cache and "discrete_bn" in m.cache
    k = int(rng.integers(card[x]))
    md = m.do({x: k})
    assert "discrete_direct" not in md.cache and "discrete_bn" not in md.cache
    cut = dict(cpts)
    cut[x] = np.broadcast_to(np.eye(card[x])[k], cpts[x].shape).copy()
    joint, order = brute_joint(dag, cut, card)
    np.testing.assert_allclose(md.query(t).probs, brute_query(joint, order, [t], {})[0], atol=1e-12)
    data = m.sample(200, seed=seed)
    mf = m.fit(data, method="bayes")
    assert "discrete_direct" not in mf.cache and "discrete_bn" not in mf.cache
    fitted = {v: np.asarray(mf.mechanisms[v].table) for v in names}
    joint, order = brute_joint(dag, fitted, card)
    np.testing.assert_allclose(mf.query(t).probs, brute_query(joint, order, [t], {})[0], atol=1e-12)
    assert mf.cache["discrete_direct"].answered == 1
