"""Loopy belief propagation: exact on trees (brute force, pgmpy), pyAgrum's LBP on loopy networks, batches, do, MAP."""

import numpy as np
import pytest
from agrum_networks import agrum_posterior, to_agrum
from discrete_networks import brute_joint
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, ModelError, ResourceError
from causalnet.inference.factor_graph import FactorGraph
from causalnet.inference.loopy import propagate


def random_tree(rng, n_nodes, cards=(2, 4)):
    """A random polytree-free directed tree: node j > 0 has one parent among 0..j-1."""
    names = [f"T{i}" for i in range(n_nodes)]
    mechs = {}
    card = {v: int(rng.integers(cards[0], cards[1] + 1)) for v in names}
    states = {v: [f"s{k}" for k in range(card[v])] for v in names}
    mechs[names[0]] = cn.Categorical(rng.dirichlet(np.ones(card[names[0]])), states=states[names[0]])
    for j in range(1, n_nodes):
        p = names[int(rng.integers(0, j))]
        mechs[names[j]] = cn.CPT([p], rng.dirichlet(np.ones(card[names[j]]), size=card[p]), states=states[names[j]])
    return cn.CausalModel(mechs)


def brute_posterior(model, target, evidence):
    """P(target | evidence) by enumerating the joint (broadcasting only)."""
    from causalnet.inference.discrete import discrete_network

    net = discrete_network(model)
    joint, names = brute_joint(model.dag, net.cpts, net.cards)
    for k, s in evidence.items():
        idx = [slice(None)] * len(names)
        idx[names.index(k)] = s
        mask = np.zeros(joint.shape[names.index(k)], dtype=bool)
        mask[s] = True
        joint = joint * mask.reshape([-1 if i == names.index(k) else 1 for i in range(len(names))])
    axes = tuple(i for i, v in enumerate(names) if v != target)
    p = joint.sum(axis=axes)
    return p / p.sum()


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 9), st.integers(0, 2**31 - 1), st.data())
def test_loopy_is_exact_on_trees(n_nodes, s, data):
    rng = np.random.default_rng(s)
    m = random_tree(rng, n_nodes)
    names = list(m.dag.nodes)
    observed = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=n_nodes - 1))
    ev = {k: int(rng.integers(0, m.specs[k].card)) for k in observed}
    target = next(v for v in names if v not in ev)
    r = m.query(target, evidence=ev, method="loopy")
    assert r.converged and "exact: the factor graph is a tree" in r.method
    assert_allclose(r.probs, brute_posterior(m, target, ev), atol=1e-9)


def test_loopy_matches_pgmpy_belief_propagation_on_a_tree(rng):
    from pgmpy.inference import BeliefPropagation

    m = random_tree(rng, 8)
    pg = cn.to_pgmpy(m)
    bp = BeliefPropagation(pg)
    ev = {"T5": "s1", "T2": "s0"}
    for v in ["T0", "T3", "T7"]:
        if v in ev:
            continue
        want = bp.query([v], evidence=ev, show_progress=False)
        got = m.query(v, evidence=ev, method="loopy")
        order = [want.state_names[v].index(s) for s in m.specs[v].states]
        assert_allclose(got.probs, want.values[order], atol=1e-9)


@pytest.mark.parametrize("name, evidence", [
    ("alarm", {"HRBP": 2, "CO": 0, "BP": 0}),
    ("child", {"LowerBodyO2": 0, "CO2Report": 1}),
    ("insurance", {"Age": 0, "PropCost": 3}),
])
def test_loopy_agrees_with_pyagrum_lbp_on_loopy_networks(name, evidence):
    import pyagrum as gum

    m = cn.gallery.load(name)
    ie = gum.LoopyBeliefPropagation(to_agrum(m))
    ie.setEpsilon(1e-12)
    ie.setMinEpsilonRate(1e-15)
    ie.setMaxIter(1000)
    ie.setEvidence({k: int(v) for k, v in evidence.items()})
    ie.makeInference()
    exact_gap = 0.0
    for v in m.dag.nodes:
        if v in evidence:
            continue
        got = m.query(v, evidence=evidence, method="loopy", max_iter=1000, tol=1e-12)
        assert got.converged
        assert_allclose(got.probs, agrum_posterior(ie, m, v), atol=2e-6)
        exact_gap = max(exact_gap, np.abs(got.probs - m.query(v, evidence=evidence).probs).max())
    assert exact_gap > 1e-6            # the networks have loops: the Bethe answer is not the exact one


def test_batched_rows_equal_single_queries(asia):
    ev = {"xray": ["yes", "no", "yes", "no"], "dysp": ["yes", "yes", "no", "no"]}
    batch = asia.query("lung", evidence=ev, method="loopy")
    assert batch.probs.shape == (4, 2) and batch.batched
    for i in range(4):
        one = asia.query("lung", evidence={k: v[i] for k, v in ev.items()}, method="loopy")
        assert_allclose(batch.probs[i], one.probs, atol=1e-10)


def test_joint_of_targets_by_chain_rule_is_exact_on_a_tree(rng):
    m = random_tree(rng, 7)
    ev = {"T6": "s0"}
    got = m.query(["T1", "T3", "T4"], evidence=ev, method="loopy")
    assert_allclose(got.probs, m.query(["T1", "T3", "T4"], evidence=ev).probs, atol=1e-9)


def test_do_on_the_mutilated_model_constant_and_per_row(rng):
    m = random_tree(rng, 6)
    for do in ({"T2": "s1"}, {"T2": ["s0", "s1", "s0"]}):
        got = m.query("T5", evidence={"T4": "s0"}, do=do, method="loopy")
        want = m.query("T5", evidence={"T4": "s0"}, do=do)
        assert_allclose(got.probs, want.probs, atol=1e-9)


@pytest.mark.parametrize("schedule, damping", [("flooding", 0.5), ("residual", 0.0), ("residual", 0.3),
                                              ("parallel-residual", 0.0), ("parallel-residual", 0.3)])
def test_schedules_and_damping_reach_the_same_fixed_point(schedule, damping):
    m = cn.gallery.load("alarm")
    ev = {"HRBP": 2, "CO": 0}
    base = m.query("LVFAILURE", evidence=ev, method="loopy", tol=1e-12, max_iter=2000)
    got = m.query("LVFAILURE", evidence=ev, method="loopy", tol=1e-12, max_iter=2000, schedule=schedule,
                  damping=damping)
    assert got.converged and schedule in got.method
    assert_allclose(got.probs, base.probs, atol=1e-7)


def test_not_converged_is_reported_not_hidden():
    m = cn.gallery.load("alarm")
    r = m.query("LVFAILURE", evidence={"HRBP": 2}, method="loopy", max_iter=2)
    assert r.iterations == 2 and r.converged is False and "not converged" in r.method


def test_impossible_evidence_is_an_error():
    m = cn.gallery.load("sprinkler")                     # Wet is dry for sure when neither rains nor sprinkles
    with pytest.raises(EvidenceError, match="probability zero"):
        m.query("Rain", evidence={"Wet": "wet"}, do={"Sprinkler": "off", "Rain": "no"}, method="loopy")


def test_bad_options_are_model_errors(asia):
    for bad in ({"max_iter": 0}, {"tol": -1.0}, {"damping": 1.0}, {"schedule": "random"}, {"chains": 2}):
        with pytest.raises(ModelError):
            asia.query("lung", method="loopy", **bad)
    with pytest.raises(ModelError, match="does not apply"):
        cn.CausalModel({"X": cn.LinearGaussian()}).query("X", method="loopy")


def grid_network(side, seed=0):
    """A side x side grid Bayesian network: X[i,j] with parents X[i-1,j] and X[i,j-1] (treewidth `side`)."""
    rng = np.random.default_rng(seed)
    mechs = {}
    for i in range(side):
        for j in range(side):
            parents = [f"X[{a},{b}]" for a, b in ((i - 1, j), (i, j - 1)) if a >= 0 and b >= 0]
            mechs[f"X[{i},{j}]"] = cn.CPT(parents, rng.dirichlet(np.ones(2), size=(2,) * len(parents)))
    return cn.CausalModel(mechs)


def test_auto_falls_back_to_loopy_past_the_limit_and_names_it():
    m = grid_network(12)
    ev = {"X[11,11]": 1, "X[0,5]": 0}
    with cn.limits.override(max_table_bytes=16 * 2**10):
        r = m.query("X[6,6]", evidence=ev)
        assert "loopy belief propagation" in r.method and "max_table_bytes" in r.method
        with pytest.raises(ResourceError):
            m.query("X[6,6]", evidence=ev, method="exact")
    assert_allclose(r.probs, m.query("X[6,6]", evidence=ev, method="loopy").probs)
    assert_allclose(r.probs, m.query("X[6,6]", evidence=ev).probs, atol=0.05)   # the Bethe error here is small


def test_max_product_map_is_the_exact_mpe_on_a_tree(rng):
    for _ in range(5):
        m = random_tree(rng, 7)
        ev = {"T3": "s0"}
        got, logp = m.map(evidence=ev, method="loopy")
        want, want_logp = m.map(evidence=ev)
        assert got == want
        assert_allclose(logp, want_logp, atol=1e-9)


def test_max_product_map_batched_and_loopy_network(asia):
    got, logp = asia.map(evidence={"xray": ["yes", "no"]}, method="loopy")
    want, want_logp = asia.map(evidence={"xray": ["yes", "no"]})
    for k in want:
        assert list(got[k]) == list(want[k])
    assert_allclose(logp, want_logp)


def test_loopy_marginal_map_by_decimation_on_trees(rng):
    """One target: the exact marginal MAP and log P(target, e); several: a greedy answer whose Bethe log-probability
    is the exact log P(assignment, e) (a tree) and no larger than the exact optimum."""
    for _ in range(4):
        m = random_tree(rng, 8)
        ev = {"T7": ["s0", "s1"]}
        got, lp = m.map(["T2"], evidence=ev, method="loopy")
        want, want_lp = m.map(["T2"], evidence=ev)
        assert list(got["T2"]) == list(want["T2"])
        assert_allclose(lp, want_lp, atol=1e-9)
        got, lp = m.map(["T1", "T4", "T5"], evidence={"T7": "s0"}, method="loopy")
        _, best = m.map(["T1", "T4", "T5"], evidence={"T7": "s0"})
        joint = m.query(["T1", "T4", "T5"], evidence={"T7": "s0"})
        p_e = m.query("T7").probs[m.specs["T7"].states.index("s0")]
        exact_lp = np.log(joint[tuple(got[t] for t in ("T1", "T4", "T5"))]) + np.log(p_e)
        assert_allclose(lp, exact_lp, atol=1e-9)
        assert lp <= best + 1e-9


def test_factor_graph_checks_its_input():
    with pytest.raises(ModelError, match="distinct"):
        FactorGraph([2, 2], [((0, 0), np.ones((2, 2)))])
    with pytest.raises(cn.ShapeError, match="expected"):
        FactorGraph([2, 3], [((0, 1), np.ones((2, 2)))])
    with pytest.raises(ModelError, match="nonnegative"):
        FactorGraph([2], [((0,), [-1.0, 2.0])])
    out = propagate(FactorGraph([2, 3], [((0,), [1.0, 3.0])]), np.ones((1, 2, 3)))   # variable 1 in no factor
    assert_allclose(out.beliefs[0], [[0.25, 0.75, 0.0], [1 / 3, 1 / 3, 1 / 3]])


def test_loopy_map_warns_when_its_propagation_did_not_converge(asia, rng):
    """A max-product (or decimation) run stopped before its messages settled says so; a converged one is silent."""
    import warnings

    with pytest.warns(cn.CausalNetWarning, match=r"did not converge in 1 iterations.*method='exact'"):
        asia.map(evidence={"xray": "yes"}, method="loopy", max_iter=1)
    with pytest.warns(cn.CausalNetWarning, match=r"decimation.*did not converge.*in 1 of 2 rows|decimation.*converge"):
        asia.map(["lung"], evidence={"xray": ["yes", "no"]}, method="loopy", max_iter=1)
    m = random_tree(rng, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.map(evidence={"T2": "s0"}, method="loopy")
        m.map(["T1"], evidence={"T2": "s0"}, method="loopy")
