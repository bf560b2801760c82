"""Tests for causalnet.inference.discrete.elimination and junction_tree: the exact discrete engine.

Oracles: brute-force enumeration of the full joint (numpy broadcasting, no
einsum), pgmpy's VariableElimination on the same arrays (random networks and
the shipped asia / alarm networks), networkx d-separation for the pruning,
networkx chordality for elimination orders, and a log-space forward recursion
for a chain whose P(e) underflows float64.
"""

import warnings

import networkx as nx
import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp

import causalnet as cn
from causalnet import EvidenceError, GraphError, ModelError, ShapeError
from causalnet.inference.discrete import elimination as E
from causalnet.inference.discrete import junction_tree as JT
from causalnet.inference.discrete import policy as POL
from causalnet.inference.discrete import prior_tree as PT
from causalnet.inference.discrete import programs as P
from causalnet.inference.discrete.elimination import (
    ORDER_METHODS,
    DiscreteBN,
    elimination_cliques,
    elimination_order,
    moral_graph,
    variable_elimination,
)
from causalnet.inference.discrete.factors import MAX_EINSUM_AXES, Factor
from causalnet.inference.discrete.ordering import largest_table
from causalnet.inference.discrete.policy import QueryPolicy

# -- helpers ----------------------------------------------------------------------


@pytest.fixture
def seed():
    return 1729


def to_pgmpy(dag, cpts, card):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    m = DiscreteBayesianNetwork(list(dag.edges))
    m.add_nodes_from(dag.nodes)
    for v in dag.nodes:
        pa = list(dag.parents(v))
        vals = np.moveaxis(cpts[v], -1, 0).reshape(card[v], -1)     # (card, prod(parent_cards))
        m.add_cpds(TabularCPD(v, card[v], vals, evidence=pa or None, evidence_card=[card[p] for p in pa] or None))
    return m


def from_pgmpy(model):
    """dag, cpts, cards, state names from a pgmpy network (TabularCPD is (card, *evidence_cards)).

    The model's CPD rows are renormalized in place, so both engines see the same numbers.
    """
    dag = cn.DAG(list(model.edges()), nodes=list(model.nodes()))
    cpts, cards, states = {}, {}, {}
    for v in dag.nodes:
        cpd = model.get_cpds(v)
        cpd.values = cpd.values / cpd.values.sum(axis=0, keepdims=True)   # alarm's rows are off by 1e-7
        ev = list(cpd.variables[1:])
        t = np.moveaxis(cpd.values, 0, -1)                            # (*evidence_cards, card)
        pa = list(dag.parents(v))
        cpts[v] = np.transpose(t, [ev.index(p) for p in pa] + [len(pa)])
        cards[v] = int(cpd.cardinality[0])
        states[v] = list(cpd.state_names[v])
    return dag, cpts, cards, states


def pgmpy_example(name):
    pytest.importorskip("pgmpy")
    from pgmpy.utils import get_example_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_example_model(name)


def forward_sample(dag, cpts, card, n, rng):
    out = {}
    for v in dag.topological_order():
        t = cpts[v][tuple(out[p] for p in dag.parents(v))]            # (n, card) or (card,)
        u = rng.random((n, 1))
        out[v] = np.minimum((u > np.cumsum(t, axis=-1)).sum(-1), card[v] - 1)
    return out


@pytest.fixture
def cloudy_bn():
    """Russell & Norvig's sprinkler network with Cloudy, as a DiscreteBN (binary, integer states)."""
    g = cn.DAG.parse("Cloudy -> Sprinkler; Cloudy -> Rain; Sprinkler -> Wet; Rain -> Wet")
    cpts = {
        "Cloudy": np.array([0.5, 0.5]),
        "Sprinkler": np.array([[0.5, 0.5], [0.9, 0.1]]),
        "Rain": np.array([[0.8, 0.2], [0.2, 0.8]]),
        "Wet": np.array([[[1.0, 0.0], [0.1, 0.9]], [[0.1, 0.9], [0.01, 0.99]]]),
    }
    return DiscreteBN(g, cpts, {v: 2 for v in g.nodes})


# -- brute force --------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["prior tree", "compiled"])
@pytest.mark.parametrize("trial", range(12))
def test_query_matches_brute_force(seed, trial, engine):
    rng = np.random.default_rng([seed, trial])
    dag, cpts, card = random_network(rng, int(rng.integers(3, 9)))
    bn = DiscreteBN(dag, cpts, card)
    if engine == "compiled":
        bn._cache_policy = QueryPolicy(lambda: False)                # variable elimination for every query
    else:
        assert bn._cache_policy.build_tree()
    joint, names = brute_joint(dag, cpts, card)
    for _ in range(6):
        perm = [names[i] for i in rng.permutation(len(names))]
        ne = int(rng.integers(0, len(names) - 1))
        nt = int(rng.integers(1, min(3, len(names) - ne) + 1))
        evs, ts = perm[:ne], perm[ne:ne + nt]
        ev = {v: int(rng.integers(card[v])) for v in evs}
        want, pe = brute_query(joint, names, ts, ev)
        probs, log_e = bn.query(ts, ev)
        assert probs.shape == tuple(card[t] for t in ts)
        assert_allclose(probs, want, rtol=0, atol=1e-12)
        assert log_e == pytest.approx(np.log(pe), abs=1e-12)
        margs, log_e2 = bn.query(ts, ev, joint=False)
        for i, t in enumerate(ts):
            assert_allclose(margs[i], brute_query(joint, names, [t], ev)[0], rtol=0, atol=1e-12)
        assert log_e2 == pytest.approx(log_e, abs=1e-12)
    if engine == "compiled":                             # from the second plan on: the global order
        assert bn._cache_grank is not None and sorted(bn._cache_grank[0]) == list(range(len(names)))


def test_global_order_or_greedy_search(seed, monkeypatch):
    # the global order restricted to a query, or (its tables too large) the greedy search
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 14, max_parents=3)
    joint, names = brute_joint(dag, cpts, card)
    calls = []
    greedy = E.greedy_order
    monkeypatch.setattr(E, "greedy_order", lambda *a, **k: calls.append(a[3]) or greedy(*a, **k))
    for limit in (1 << 30, 0):
        monkeypatch.setattr(E, "_GLOBAL_ORDER_MAX", limit)
        bn = DiscreteBN(dag, cpts, card)
        bn._cache_policy = QueryPolicy(lambda: False)
        calls.clear()
        for r in range(6):
            perm = [names[i] for i in rng.permutation(len(names))]
            ev = {v: np.array([0, card[v] - 1]) if r % 2 else 0 for v in perm[:3]}
            got, _ = bn.query(perm[3:5], ev)
            for row in range(2):
                e = {v: (x if isinstance(x, int) else int(x[row])) for v, x in ev.items()}
                assert_allclose(got if r % 2 == 0 else got[row], brute_query(joint, names, perm[3:5], e)[0],
                                rtol=0, atol=1e-12)
        # one greedy search for the first plan, one for the global order, then greedy only when refused
        assert len(calls) == (2 if limit else 7)


@pytest.mark.parametrize("trial", range(8))
def test_batched_query_matches_per_row_brute_force(seed, trial):
    rng = np.random.default_rng([seed, 100 + trial])
    dag, cpts, card = random_network(rng, int(rng.integers(3, 9)))
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    n = 7
    perm = [names[i] for i in rng.permutation(len(names))]
    ne = int(rng.integers(1, len(names)))
    evs, ts = perm[:ne], perm[ne:ne + 2]
    ev = {v: rng.integers(card[v], size=n) for v in evs}
    if ne > 1:
        ev[evs[0]] = int(ev[evs[0]][0])             # a scalar mixed into a batched query
    probs, log_e = bn.query(ts, ev)
    assert probs.shape == (n, *[card[t] for t in ts]) and log_e.shape == (n,)
    margs, _ = bn.query(ts, ev, joint=False)
    for r in range(n):
        row = {v: (x if isinstance(x, int) else int(x[r])) for v, x in ev.items()}
        want, pe = brute_query(joint, names, ts, row)
        assert_allclose(probs[r], want, rtol=0, atol=1e-12)
        assert log_e[r] == pytest.approx(np.log(pe), abs=1e-12)
        for i, t in enumerate(ts):
            assert_allclose(margs[i][r], brute_query(joint, names, [t], row)[0], rtol=0, atol=1e-12)


def test_ten_node_joint_without_evidence(seed):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 10, cards=(2, 3))
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    probs, log_e = bn.query(list(names))
    assert_allclose(probs, joint, rtol=0, atol=1e-14)
    assert log_e == pytest.approx(0.0, abs=1e-12)
    probs, log_e = bn.query([])                          # no targets: just P(e)
    assert probs.shape == () and log_e == 0.0


@pytest.mark.parametrize("method", ORDER_METHODS)
def test_every_order_method_gives_the_same_answer(seed, method):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 9, max_parents=4)
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    ev = {"X8": 1, "X5": 0}
    want, _ = brute_query(joint, names, ["X0", "X3"], ev)
    probs, _ = bn.query(["X0", "X3"], ev, order=method)
    assert_allclose(probs, want, rtol=0, atol=1e-12)
    explicit = list(reversed(names))                     # an explicit (poor) order works too
    probs, _ = bn.query(["X0", "X3"], ev, order=explicit)
    assert_allclose(probs, want, rtol=0, atol=1e-12)


def test_pairwise_grouped_paths_on_large_steps(seed, monkeypatch):
    # force every step through the precompiled pairwise path on grouped axes
    monkeypatch.setattr(P, "_BIG", 1)
    modes = []
    init = P._Pair.__init__

    def spy(self, *args):
        init(self, *args)
        modes.append(self.mode)

    monkeypatch.setattr(P._Pair, "__init__", spy)
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 9, max_parents=4)
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    ev = {"X7": np.array([0, 1, 1]), "X2": 1, "X8": np.array([1, 0, 2]) % card["X8"]}
    probs, log_e = bn.query(["X0", "X4"], ev)
    marg = bn.junction_tree().marginals(ev)
    for r in range(3):
        row = {"X7": int(ev["X7"][r]), "X2": 1, "X8": int(ev["X8"][r])}
        want, pe = brute_query(joint, names, ["X0", "X4"], row)
        assert_allclose(probs[r], want, rtol=0, atol=1e-12)
        assert log_e[r] == pytest.approx(np.log(pe), abs=1e-12)
        for v in ("X1", "X3", "X5"):
            assert_allclose(marg[v][r], brute_query(joint, names, [v], row)[0], rtol=0, atol=1e-12)
    probs1, _ = bn.query(["X0", "X4"], {"X7": 0, "X2": 1, "X8": 1})
    assert_allclose(probs1, probs[0], rtol=0, atol=1e-12)
    assert {"matmul", "kpc,kcq->kpq", "pck,cqk->pqk"} <= set(modes)


def test_sprinkler_worked_example(cloudy_bn):
    # P(Rain=T | Wet=T) = 0.4581 / 0.6471 = 0.7079 (Russell & Norvig's sprinkler network)
    probs, log_e = cloudy_bn.query(["Rain"], {"Wet": 1})
    assert probs[1] == pytest.approx(0.70793, abs=5e-5)
    assert np.exp(log_e) == pytest.approx(0.6471, abs=5e-5)


# -- MAP ------------------------------------------------------------------------------


@pytest.mark.parametrize("trial", range(10))
def test_map_matches_brute_force(seed, trial):
    rng = np.random.default_rng([seed, 200 + trial])
    dag, cpts, card = random_network(rng, int(rng.integers(3, 9)))
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    perm = [names[i] for i in rng.permutation(len(names))]
    ne = int(rng.integers(0, len(names) - 1))
    ev = {v: int(rng.integers(card[v])) for v in perm[:ne]}
    sub = joint[tuple(ev.get(v, slice(None)) for v in names)]
    rest = [v for v in names if v not in ev]
    # MPE
    assign, lp = bn.map(None, ev)
    assert set(assign) == set(rest)
    assert lp == pytest.approx(np.log(sub.max()), abs=1e-12)
    assert sub[tuple(assign[v] for v in rest)] == pytest.approx(sub.max(), rel=1e-12)
    # marginal MAP over two targets
    ts = rest[:2]
    marg = sub.sum(axis=tuple(i for i, v in enumerate(rest) if v not in ts))
    assign, lp = bn.map(ts, ev)
    assert lp == pytest.approx(np.log(marg.max()), abs=1e-12)
    assert marg[tuple(assign[t] for t in ts)] == pytest.approx(marg.max(), rel=1e-12)


def test_batched_map_equals_per_row_map(seed):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 8)
    bn = DiscreteBN(dag, cpts, card)
    ev = {"X7": rng.integers(card["X7"], size=6), "X3": rng.integers(card["X3"], size=6), "X1": 0}
    for targets in (None, ["X0", "X5"]):
        assign, lp = bn.map(targets, ev)
        assert lp.shape == (6,)
        for r in range(6):
            a1, l1 = bn.map(targets, {k: (x if isinstance(x, int) else int(x[r])) for k, x in ev.items()})
            assert {k: int(v[r]) for k, v in assign.items()} == a1
            assert lp[r] == pytest.approx(l1, abs=1e-12)


# -- junction tree ----------------------------------------------------------------------


def _networks():
    return st.integers(0, 2**32 - 1).map(lambda s: np.random.default_rng(s))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_networks(), st.integers(2, 12), st.booleans())
def test_junction_tree_equals_variable_elimination(rng, n_nodes, reduce_evidence):
    dag, cpts, card = random_network(rng, n_nodes, max_parents=3, cards=(1, 4))
    bn = DiscreteBN(dag, cpts, card)
    names = list(dag.nodes)
    evs = [names[i] for i in rng.permutation(n_nodes)[: int(rng.integers(0, n_nodes))]]
    n = 4
    ev = {v: rng.integers(card[v], size=n) for v in evs}
    jt = bn.junction_tree(evs if reduce_evidence else None)
    marg, log_e = jt.marginals(ev, return_log_evidence=True)
    for v in names:
        assert marg[v].shape == ((n, card[v]) if ev else (card[v],))
        if v in ev:
            assert_array_equal(marg[v], np.eye(card[v])[ev[v]])
            continue
        p, le = bn.query([v], ev)
        assert_allclose(marg[v], p, rtol=0, atol=1e-10)
        assert_allclose(log_e, le, rtol=0, atol=1e-10)


def test_junction_tree_structure(seed):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 30, max_parents=3)
    bn = DiscreteBN(dag, cpts, card)
    jt = bn.junction_tree()
    assert jt is bn.junction_tree()                       # cached per structure
    cliques = [set(c) for c in jt.cliques]
    tree = nx.Graph()
    tree.add_nodes_from(range(len(cliques)))
    tree.add_edges_from(jt.edges)
    assert nx.is_forest(tree)
    for v in dag.nodes:                                   # every family lies in a clique
        fam = {*dag.parents(v), v}
        assert any(fam <= c for c in cliques)
        holding = [i for i, c in enumerate(cliques) if v in c]   # running intersection
        assert nx.is_connected(tree.subgraph(holding))
    for i, c in enumerate(cliques):                      # cliques are maximal
        assert not any(c < d for j, d in enumerate(cliques) if j != i)
    for (c, p), s in zip(jt.edges, jt.separators):
        assert set(s) == cliques[c] & cliques[p]


def test_junction_tree_needs_its_evidence(cloudy_bn):
    jt = cloudy_bn.junction_tree(["Wet"])
    assert jt.evidence_vars == ("Wet",)
    assert all("Wet" not in c for c in jt.cliques)
    with pytest.raises(EvidenceError, match="built for evidence on \\['Wet'\\]; no evidence given for 'Wet'"):
        jt.marginals({"Rain": 1})
    m = jt.marginals({"Wet": 1, "Rain": 1})               # extra evidence: indicator factors
    p, _ = cloudy_bn.query(["Cloudy"], {"Wet": 1, "Rain": 1})
    assert_allclose(m["Cloudy"], p, rtol=0, atol=1e-12)
    assert_allclose(jt.log_evidence({"Wet": 1}), cloudy_bn.query([], {"Wet": 1})[1], rtol=0, atol=1e-12)


# -- the calibrated prior tree (scalar evidence) ----------------------------------------------


def _no_compile(bn):
    """Make the compiled engine unreachable, so an answer must come from the prior tree."""
    def boom(*args, **kwargs):
        raise AssertionError("the compiled engine ran")

    bn._compile = boom


def _einsum_only(pt):
    """Drop every precomputed matrix of a prior tree: each step is then a contraction."""
    for store in (pt._pass, pt._leaf, pt._group, pt._sel, pt._bel):
        store.clear()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_networks(), st.integers(2, 9), st.booleans(), st.booleans())
def test_prior_tree_matches_brute_force(rng, n_nodes, zeros, matrices):
    # random forests (nodes may have no parents), cards 1..4, some impossible states
    dag, cpts, card = random_network(rng, n_nodes, max_parents=3, cards=(1, 4), zeros=zeros)
    bn = DiscreteBN(dag, cpts, card)
    pt = bn._cache_policy.build_tree()
    assert pt and bn._cache_policy.tree is pt
    if not matrices:
        _einsum_only(pt)
    joint, names = brute_joint(dag, cpts, card)
    jt = bn.junction_tree()
    for _ in range(4):
        perm = [names[i] for i in rng.permutation(n_nodes)]
        k = int(rng.integers(0, min(3, n_nodes - 1) + 1))
        ev = {v: int(rng.integers(card[v])) for v in perm[:k]}
        t = perm[k]
        pe = joint[tuple(ev.get(v, slice(None)) for v in names)].sum()
        if pe == 0:
            with pytest.raises(EvidenceError, match="probability zero"):
                bn.query([t], ev)
            with pytest.raises(EvidenceError, match="probability zero"):
                jt.marginals(ev)
            continue
        compile_ = bn._compile
        _no_compile(bn)                                    # one target: always a clique of its own
        want, _ = brute_query(joint, names, [t], ev)
        got, log_e = bn.query([t], ev)
        assert_allclose(got, want, rtol=0, atol=1e-10)
        assert log_e == pytest.approx(np.log(pe), abs=1e-10)
        got, log_e = bn.query([], ev)                      # P(e) only
        assert got.shape == () and log_e == pytest.approx(np.log(pe), abs=1e-10)
        marg, log_e = jt.marginals(ev, return_log_evidence=True)
        assert log_e == pytest.approx(np.log(pe), abs=1e-10)
        for v in names:
            want_v = np.eye(card[v])[ev[v]] if v in ev else brute_query(joint, names, [v], ev)[0]
            assert_allclose(marg[v], want_v, rtol=0, atol=1e-10)
        bn._compile = compile_
        ts = perm[k:k + 2]                                 # a pair: one clique, or the compiled engine
        want, _ = brute_query(joint, names, ts, ev)
        got, log_e = bn.query(ts, ev)
        assert_allclose(got, want, rtol=0, atol=1e-10)
        each, log_e2 = bn.query(ts, ev, joint=False)
        for v, p in zip(ts, each):
            assert_allclose(p, brute_query(joint, names, [v], ev)[0], rtol=0, atol=1e-10)
        assert log_e == pytest.approx(log_e2, abs=1e-10)


def test_prior_tree_answers_pairs_in_one_clique(cloudy_bn):
    # Sprinkler and Rain share a clique with Cloudy (their common parent) or Wet (their child)
    bn = cloudy_bn
    bn._cache_policy.build_tree()
    _no_compile(bn)
    names = list(bn.nodes)
    joint, _ = brute_joint(bn.dag, bn.cpts, bn.cards)
    want, pe = brute_query(joint, names, ["Rain", "Sprinkler"], {"Wet": 1})
    got, log_e = bn.query(["Rain", "Sprinkler"], {"Wet": 1})
    assert_allclose(got, want, rtol=0, atol=1e-12)
    assert log_e == pytest.approx(np.log(pe), abs=1e-12)
    got, _ = bn.query(["Sprinkler", "Rain"], {"Wet": 1})   # axes in the order asked
    assert_allclose(got, want.T, rtol=0, atol=1e-12)


def test_prior_tree_evidence_in_another_tree():
    # two components: evidence on D leaves A's posterior at its prior but enters P(e)
    g = cn.DAG.parse("A -> B; C -> D")
    cpts = {"A": np.array([0.3, 0.7]), "B": np.array([[0.9, 0.1], [0.4, 0.6]]),
            "C": np.array([0.2, 0.8]), "D": np.array([[0.5, 0.5], [0.1, 0.9]])}
    bn = DiscreteBN(g, cpts, {v: 2 for v in "ABCD"})
    bn._cache_policy.build_tree()
    _no_compile(bn)
    p_d1 = 0.2 * 0.5 + 0.8 * 0.9
    p, log_e = bn.query(["A"], {"D": 1})
    assert_allclose(p, [0.3, 0.7], rtol=0, atol=1e-15)
    assert log_e == pytest.approx(np.log(p_d1), abs=1e-15)
    p, log_e = bn.query(["A"], {"D": 1, "B": 0})
    p_b0 = 0.3 * 0.9 + 0.7 * 0.4
    assert_allclose(p, [0.3 * 0.9 / p_b0, 0.7 * 0.4 / p_b0], rtol=0, atol=1e-15)
    assert log_e == pytest.approx(np.log(p_d1 * p_b0), abs=1e-15)
    m, log_e = bn.junction_tree().marginals({"D": 1}, return_log_evidence=True)
    assert_allclose(m["A"], [0.3, 0.7], rtol=0, atol=1e-15)
    assert_allclose(m["C"], [0.2 * 0.5 / p_d1, 0.8 * 0.9 / p_d1], rtol=0, atol=1e-15)
    assert_array_equal(m["D"], [0.0, 1.0])
    assert log_e == pytest.approx(np.log(p_d1), abs=1e-15)


def test_prior_tree_waits_for_its_budget(cloudy_bn, monkeypatch):
    # a few quick questions never pay for the tree; once compiled queries have cost the budget, it is built
    bn = cloudy_bn
    answers = [bn.query(["Rain"], {"Wet": 1})[0] for _ in range(5)]
    assert not bn._cache_policy.built and bn._cache_policy._compiled_s < POL.PRIOR_TREE_AFTER_S
    monkeypatch.setattr(POL, "PRIOR_TREE_AFTER_S", bn._cache_policy._compiled_s)
    p, _ = bn.query(["Rain"], {"Wet": 1})
    assert bn._cache_policy.tree
    assert_allclose(p, answers[0], rtol=0, atol=1e-15)


def test_prior_tree_is_built_at_the_second_scalar_query(cloudy_bn, monkeypatch):
    monkeypatch.setattr(POL, "PRIOR_TREE_AFTER_S", 0.0)
    bn = cloudy_bn
    p1, _ = bn.query(["Rain"], {"Wet": 1})
    assert not bn._cache_policy.built                                  # a one-query network never pays for it
    bn.query(["Rain"], {"Wet": np.array([0, 1])})          # batched: the compiled engine
    assert not bn._cache_policy.built
    p2, _ = bn.query(["Rain"], {"Wet": 1})
    assert bn._cache_policy.tree
    assert_allclose(p1, p2, rtol=0, atol=1e-15)
    # an explicit order always runs variable elimination with it
    seen = []
    compile_ = bn._compile
    monkeypatch.setattr(bn, "_compile", lambda *a: seen.append(a) or compile_(*a))
    bn.query(["Rain"], {"Wet": 1}, order="min-degree")
    assert seen
    # too large a tree: never built, the compiled engine answers
    monkeypatch.setattr(JT, "MAX_PRIOR_CLIQUE", 2)
    g = cn.DAG.parse("A -> B")
    small = DiscreteBN(g, {"A": [0.5, 0.5], "B": [[0.9, 0.1], [0.2, 0.8]]}, {"A": 2, "B": 2})
    for _ in range(3):
        p, _ = small.query(["A"], {"B": 0})
    assert small._cache_policy.built and small._cache_policy.tree is None
    assert_allclose(p, [0.45 / 0.55, 0.1 / 0.55], rtol=0, atol=1e-15)


def test_heavy_prior_tree_hands_repeated_shapes_to_plans(seed, monkeypatch):
    # on a network with large cliques, a query shape asked again is compiled (then cached)
    monkeypatch.setattr(PT, "_REDUCE_FROM", 1)
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 9)
    joint, names = brute_joint(dag, cpts, card)
    bn = DiscreteBN(dag, cpts, card)
    assert bn._cache_policy.build_tree().heavy
    ev = {"X8": 1, "X3": 0}
    compiled = []
    compile_ = bn._compile
    monkeypatch.setattr(bn, "_compile", lambda *a: compiled.append(a) or compile_(*a))
    for state, n_compiled in ((1, 0), (0, 1), (1, 1), (0, 1)):
        ev["X8"] = state % card["X8"]
        p, log_e = bn.query(["X0"], ev)
        want, pe = brute_query(joint, names, ["X0"], ev)
        assert_allclose(p, want, rtol=0, atol=1e-12)
        assert log_e == pytest.approx(np.log(pe), abs=1e-12)
        assert len(compiled) == n_compiled


def test_prior_tree_matrix_budget(seed, monkeypatch):
    # with no room for matrices every step contracts; answers do not change
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 25, max_parents=3)
    full = DiscreteBN(dag, cpts, card)
    assert full._cache_policy.build_tree()._pass
    monkeypatch.setattr(PT, "_MIN_BUDGET", 0)
    monkeypatch.setattr(PT, "_REDUCE_FROM", 1)              # and every clique is pre-summed
    lean = DiscreteBN(dag, cpts, card)
    pt = lean._cache_policy.build_tree()
    monkeypatch.setattr(pt, "_budget", 0)
    assert len(pt._pass) < len(full._cache_policy.tree._pass)
    names = list(dag.nodes)
    sample = forward_sample(dag, cpts, card, 10, rng)
    for r in range(10):
        perm = [names[i] for i in rng.permutation(len(names))]
        ev = {v: int(sample[v][r]) for v in perm[:4]}
        a, la = full.query([perm[4]], ev)
        b, lb = lean.query([perm[4]], ev)
        assert_allclose(a, b, rtol=0, atol=1e-12)
        assert la == pytest.approx(lb, abs=1e-12)
        ma, mb = full.junction_tree().marginals(ev), lean.junction_tree().marginals(ev)
        for v in names:
            assert_allclose(ma[v], mb[v], rtol=0, atol=1e-12)


def test_marginals_are_fresh_arrays(cloudy_bn):
    # writing into a result must not corrupt the tree's tables
    jt = cloudy_bn.junction_tree()
    first = jt.marginals({"Wet": 1})
    for evidence in ({"Wet": 1}, {}):
        m = jt.marginals(evidence)
        for p in m.values():
            p[:] = -1.0
    again = jt.marginals({"Wet": 1})
    for v in cloudy_bn.nodes:                     # (another engine may answer: equal to round-off)
        assert_allclose(again[v], first[v], rtol=0, atol=1e-15)
    assert_array_equal(again["Wet"], [0.0, 1.0])


def test_model_query_plain_lane_equals_general_path():
    # CausalModel.query answers node targets with scalar evidence without building a Query;
    # the result must equal the query-string path, and bad input still gets the full checks
    m = cn.gallery.load("asia")
    a = m.query("lung", evidence={"smoke": "yes", "xray": "yes"})
    b = m.query("P(lung | smoke=yes, xray=yes)")
    assert a.variables == b.variables and a.states == b.states and a.method == b.method
    assert_allclose(a.probs, b.probs, rtol=0, atol=1e-15)
    assert a.log_evidence == pytest.approx(b.log_evidence, abs=1e-15)
    c = m.query(["lung"], evidence={"smoke": 0, "xray": np.int64(0)})   # indices, numpy ints
    assert_allclose(c.probs, a.probs, rtol=0, atol=1e-15)
    d = m.query(("lung", "tub"), evidence={"smoke": "yes"})
    e = m.query(["lung", "tub"], evidence={"smoke": np.array(["yes"])})   # batched: general path
    assert_allclose(d.probs, e.probs[0], rtol=0, atol=1e-15)
    with pytest.raises(EvidenceError, match="unknown evidence node 'smok'; did you mean 'smoke'"):
        m.query("lung", evidence={"smok": "yes"})
    with pytest.raises(EvidenceError, match="'smoke' has no state 'maybe'"):
        m.query("lung", evidence={"smoke": "maybe"})
    with pytest.raises(EvidenceError, match="'smoke' has no state True"):
        m.query("lung", evidence={"smoke": True})
    with pytest.raises(EvidenceError, match="'smoke' has no state 2"):
        m.query("lung", evidence={"smoke": 2})
    with pytest.raises(EvidenceError, match="unknown target 'lugn'"):
        m.query("lugn", evidence={"smoke": "yes"})
    with pytest.raises(EvidenceError, match="both targets and evidence"):
        m.query("lung", evidence={"lung": "yes"})
    with pytest.raises(EvidenceError, match="listed twice"):
        m.query(["lung", "lung"])


# -- pgmpy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n_nodes", [15, 25, 40])
def test_random_networks_match_pgmpy(seed, n_nodes):
    pytest.importorskip("pgmpy")
    from pgmpy.inference import VariableElimination

    rng = np.random.default_rng([seed, n_nodes])
    dag, cpts, card = random_network(rng, n_nodes, max_parents=2, cards=(2, 3))
    bn = DiscreteBN(dag, cpts, card)
    ve = VariableElimination(to_pgmpy(dag, cpts, card))
    names = list(dag.nodes)
    sample = forward_sample(dag, cpts, card, 6, rng)
    for r in range(6):
        perm = [names[i] for i in rng.permutation(n_nodes)]
        ev = {v: int(sample[v][r]) for v in perm[:4]}
        ts = perm[4:6]
        want = ve.query(ts, evidence=ev, show_progress=False)
        probs, _ = bn.query(ts, ev)
        got = probs.transpose([ts.index(v) for v in want.variables])
        assert_allclose(got, want.values, rtol=0, atol=1e-10)


def test_asia_matches_pgmpy():
    model = pgmpy_example("asia")
    from pgmpy.inference import VariableElimination

    dag, cpts, cards, states = from_pgmpy(model)
    bn = DiscreteBN(dag, cpts, cards)
    ve = VariableElimination(model)
    cases = [("lung", {"smoke": 0, "xray": 0}), ("either", {"dysp": 1}), ("asia", {"dysp": 0, "bronc": 1, "tub": 0})]
    for t, ev in cases:
        want = ve.query([t], evidence={k: states[k][x] for k, x in ev.items()}, show_progress=False)
        got, _ = bn.query([t], ev)
        assert_allclose(got, want.values, rtol=0, atol=1e-10)
    # the same queries as one batch (both cases share evidence variables here)
    got, _ = bn.query(["lung"], {"smoke": np.array([0, 1, 0]), "xray": np.array([0, 0, 1])})
    for r, (s, x) in enumerate([(0, 0), (1, 0), (0, 1)]):
        want = ve.query(["lung"], evidence={"smoke": states["smoke"][s], "xray": states["xray"][x]},
                        show_progress=False)
        assert_allclose(got[r], want.values, rtol=0, atol=1e-10)


@pytest.fixture(scope="module")
def alarm():
    model = pgmpy_example("alarm")
    return model, *from_pgmpy(model)


def test_alarm_matches_pgmpy(alarm, seed):
    from pgmpy.inference import VariableElimination

    model, dag, cpts, cards, states = alarm
    bn = DiscreteBN(dag, cpts, cards)
    ve = VariableElimination(model)
    rng = np.random.default_rng(seed)
    names = list(dag.nodes)
    sample = forward_sample(dag, cpts, cards, 12, rng)
    jt = bn.junction_tree()
    assert jt.max_clique_size < 10_000            # treewidth scale, not hundreds of MiB
    for r in range(12):
        sel = rng.choice(len(names), 4, replace=False)
        t = names[sel[0]]
        ev = {names[j]: int(sample[names[j]][r]) for j in sel[1:]}
        want = ve.query([t], evidence={k: states[k][x] for k, x in ev.items()}, show_progress=False)
        got, _ = bn.query([t], ev)
        assert_allclose(got, want.values, rtol=0, atol=1e-10)
        assert_allclose(jt.marginals(ev)[t], want.values, rtol=0, atol=1e-10)
    # batched rows against pgmpy, row by row
    ev_b = {v: sample[v][:5] for v in ("HR", "BP", "PRESS")}
    got, _ = bn.query(["LVFAILURE"], ev_b)
    for r in range(5):
        want = ve.query(["LVFAILURE"], evidence={k: states[k][int(x[r])] for k, x in ev_b.items()},
                        show_progress=False)
        assert_allclose(got[r], want.values, rtol=0, atol=1e-10)


def test_alarm_map_matches_pgmpy(alarm, seed):
    from pgmpy.inference import VariableElimination

    model, dag, cpts, cards, states = alarm
    bn = DiscreteBN(dag, cpts, cards)
    ve = VariableElimination(model)
    ev = {"HR": 2, "BP": 0, "PRESS": 1}
    targets = ["LVFAILURE", "HYPOVOLEMIA", "STROKEVOLUME"]
    want = ve.map_query(targets, evidence={k: states[k][x] for k, x in ev.items()}, show_progress=False)
    assign, lp = bn.map(targets, ev)
    assert {k: states[k][x] for k, x in assign.items()} == want
    probs, log_e = bn.query(targets, ev)
    assert lp == pytest.approx(np.log(probs.max()) + log_e, abs=1e-10)


# -- pruning -----------------------------------------------------------------------------------


@pytest.mark.parametrize("trial", range(6))
def test_pruned_nodes_are_barren_or_d_separated(seed, trial):
    rng = np.random.default_rng([seed, 300 + trial])
    dag, cpts, card = random_network(rng, 25, max_parents=2)
    bn = DiscreteBN(dag, cpts, card)
    g = dag.to_networkx()
    names = list(dag.nodes)
    for _ in range(5):
        perm = [names[i] for i in rng.permutation(len(names))]
        ts, evs = perm[:2], perm[2:6]
        rel = bn.relevant_nodes(ts, evs)
        anc = dag.ancestors(set(ts) | set(evs), include_self=True)
        for v in names:
            if v in evs or v in ts:
                continue
            sep = nx.is_d_separator(g, {v}, set(ts), set(evs))
            if v in rel:
                assert v in anc and not sep        # requisite: an open path to a target
            else:
                assert v not in anc or sep         # barren or d-separated


def test_pruning_drops_barren_and_separated_nodes(cloudy_bn):
    # Wet is barren for P(Rain | Cloudy); Sprinkler is d-separated from Rain by Cloudy
    assert cloudy_bn.relevant_nodes(["Rain"], ["Cloudy"]) == {"Rain"}
    assert cloudy_bn.relevant_nodes(["Rain"], ["Wet"]) == {"Cloudy", "Sprinkler", "Rain", "Wet"}
    assert cloudy_bn.relevant_nodes(["Rain"], []) == {"Cloudy", "Rain"}


def test_plans_are_cached_per_shape(cloudy_bn):
    cloudy_bn.query(["Rain"], {"Wet": 1})
    n = len(cloudy_bn._cache_plans)
    p0, _ = cloudy_bn.query(["Rain"], {"Wet": 0})
    assert len(cloudy_bn._cache_plans) == n                      # same shape, new values: no new plan
    p1, _ = cloudy_bn.query(["Rain"], {"Wet": 1})
    assert not np.allclose(p0, p1)
    cloudy_bn.query(["Rain"], {"Wet": np.array([0, 1])})
    assert len(cloudy_bn._cache_plans) == n + 1                  # batched is another shape


# -- limits and numerics ------------------------------------------------------------------------


@pytest.fixture
def wide():
    """Y has 40 one-state parents and 3 binary ones: its CPT has 44 axes."""
    rng = np.random.default_rng(7)
    ones = [f"U{i}" for i in range(40)]
    dag = cn.DAG([(u, "Y") for u in ones] + [(b, "Y") for b in "ABC"] + [("Y", "Z"), ("A", "Z")])
    cards = {**{u: 1 for u in ones}, "A": 2, "B": 2, "C": 2, "Y": 3, "Z": 2}
    cpts = {u: np.ones(1) for u in ones}
    for b in "ABC":
        cpts[b] = rng.dirichlet([1, 1])
    cpts["Y"] = rng.dirichlet([1, 1, 1], size=[cards[p] for p in dag.parents("Y")])
    cpts["Z"] = rng.dirichlet([1, 1], size=[cards[p] for p in dag.parents("Z")])
    # the same network without the one-state nodes (the oracle)
    small = cn.DAG([(b, "Y") for b in "ABC"] + [("Y", "Z"), ("A", "Z")])
    small_cpts = {v: cpts[v] for v in ("A", "B", "C", "Z")}
    small_cpts["Y"] = cpts["Y"].reshape(2, 2, 2, 3)
    small_cpts["Z"] = np.transpose(cpts["Z"], [dag.parents("Z").index(p) for p in small.parents("Z")] + [2])
    return (dag, cpts, cards), (small, small_cpts, {v: cards[v] for v in small.nodes})


def test_more_than_32_axes_never_reach_einsum(wide, monkeypatch):
    seen = []
    orig = np.einsum

    def spy(subs, *ops, **kw):
        seen.append(len(set(subs.split("->")[0].replace(",", ""))))
        return orig(subs, *ops, **kw)

    monkeypatch.setattr(np, "einsum", spy)
    (dag, cpts, cards), (small, scpts, scards) = wide
    bn = DiscreteBN(dag, cpts, cards)
    joint, names = brute_joint(small, scpts, scards)
    want, pe = brute_query(joint, names, ["Y"], {"Z": 1})
    p, le = bn.query(["Y"], {"Z": 1})
    assert_allclose(p, want, rtol=0, atol=1e-12)
    assert le == pytest.approx(np.log(pe), abs=1e-12)
    everything, _ = bn.query(list(dag.nodes))              # a joint table with 45 axes
    assert everything.ndim == 45
    order = [names.index(v) for v in dag.nodes if v in names]
    assert_allclose(everything.reshape([scards[v] for v in dag.nodes if v in names]),
                    np.transpose(joint, order), rtol=0, atol=1e-12)
    pb, _ = bn.query(["A", "Y"], {"Z": np.array([0, 1, 1])})
    assert_allclose(pb[1], brute_query(joint, names, ["A", "Y"], {"Z": 1})[0], rtol=0, atol=1e-12)
    assign, lp = bn.map(None, {"Z": 1})
    sub = joint[tuple({"Z": 1}.get(v, slice(None)) for v in names)]
    assert lp == pytest.approx(np.log(sub.max()), abs=1e-12)
    m = bn.junction_tree().marginals({"Z": 1})
    assert_allclose(m["Y"], want, rtol=0, atol=1e-12)
    # the prior tree with contractions only: its 44-node clique goes through contract()
    pt = bn._cache_policy.build_tree()
    assert pt and max(len(c) for c in pt._vars) > MAX_EINSUM_AXES
    _einsum_only(pt)
    _no_compile(bn)
    for t, ev in (("Y", {"Z": 1}), ("A", {"Z": 0, "C": 1}), ("Z", {"Y": 2})):
        p, le = bn.query([t], ev)
        w, pe = brute_query(joint, names, [t], ev)
        assert_allclose(p, w, rtol=0, atol=1e-12)
        assert le == pytest.approx(np.log(pe), abs=1e-12)
        m = bn.junction_tree().marginals(ev)
        for v in ("A", "B", "C", "Y", "Z"):
            if v not in ev:
                assert_allclose(m[v], brute_query(joint, names, [v], ev)[0], rtol=0, atol=1e-12)
    assert seen and max(seen) <= MAX_EINSUM_AXES


def test_tiny_evidence_probability_is_not_zero(seed):
    # a 1600-step chain observed at every other node: P(e) ~ 1e-380 underflows float64
    rng = np.random.default_rng(seed)
    T, K = 1600, 3
    names = [f"Z[{t}]" for t in range(T)]
    dag = cn.DAG(list(zip(names[:-1], names[1:])))
    trans = rng.dirichlet(np.ones(K), size=K)
    cpts = {names[0]: np.ones(K) / K, **{v: trans for v in names[1:]}}
    bn = DiscreteBN(dag, cpts, {v: K for v in names})
    obs = rng.integers(K, size=T)
    ev = {names[t]: int(obs[t]) for t in range(1, T, 2)}
    probs, log_e = bn.query([names[0]], ev)
    # oracle: backward recursion in log space
    logb = np.zeros(K)
    for t in range(T - 1, 0, -1):
        lt = np.log(trans) + logb[None, :]                  # (K_prev, K_t)
        if names[t] in ev:
            logb = lt[:, ev[names[t]]]
        else:
            logb = logsumexp(lt, axis=1)
    post = np.log(cpts[names[0]]) + logb
    assert log_e == pytest.approx(logsumexp(post), abs=1e-8)
    assert log_e < -746                                     # below float64's smallest subnormal
    assert_allclose(probs, np.exp(post - logsumexp(post)), rtol=0, atol=1e-10)
    m, le = bn.junction_tree().marginals(ev, return_log_evidence=True)
    assert le == pytest.approx(log_e, abs=1e-8)
    assert_allclose(m[names[0]], probs, rtol=0, atol=1e-10)


def test_impossible_evidence_raises(seed):
    g = cn.DAG.parse("A -> B; B -> C")
    cpts = {"A": np.array([1.0, 0.0]), "B": np.array([[0.7, 0.3], [0.5, 0.5]]), "C": np.array([[1.0, 0.0], [0.2, 0.8]])}
    bn = DiscreteBN(g, cpts, {"A": 2, "B": 2, "C": 2})
    with pytest.raises(EvidenceError, match=r"probability zero: P\(A=1\) = 0"):
        bn.query(["C"], {"A": 1})
    with pytest.raises(EvidenceError, match="probability zero"):
        bn.query(["A"], {"B": 0, "C": 1})
    with pytest.raises(EvidenceError, match=r"in 1 of 3 rows \(rows \[2\]; row 2: P\(B=0, C=1\) = 0\)"):
        bn.query(["A"], {"B": np.array([1, 1, 0]), "C": np.array([1, 0, 1])})
    with pytest.raises(EvidenceError, match="probability zero"):
        bn.map(None, {"A": 1})
    with pytest.raises(EvidenceError, match="probability zero"):
        bn.junction_tree().marginals({"B": np.array([0, 0]), "C": np.array([0, 1])})
    with pytest.raises(EvidenceError, match="probability zero"):
        bn.junction_tree(["C"]).marginals({"C": 1, "B": 0})
    p, _ = bn.query(["A"], {"B": 1, "C": 1})                # possible evidence still works
    assert_allclose(p, [1.0, 0.0], rtol=0, atol=0)


@pytest.mark.parametrize("trial", range(4))
def test_networks_with_zero_entries(seed, trial):
    rng = np.random.default_rng([seed, 400 + trial])
    dag, cpts, card = random_network(rng, 7, zeros=True)
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    for _ in range(8):
        perm = [names[i] for i in rng.permutation(len(names))]
        ev = {v: int(rng.integers(card[v])) for v in perm[:3]}
        want, pe = brute_query(joint, names, perm[3:4], ev) if joint[tuple(
            ev.get(v, slice(None)) for v in names)].sum() > 0 else (None, 0.0)
        if pe == 0:
            with pytest.raises(EvidenceError):
                bn.query(perm[3:4], ev)
        else:
            assert_allclose(bn.query(perm[3:4], ev)[0], want, rtol=0, atol=1e-12)


# -- bad input ---------------------------------------------------------------------------------


def test_bad_model_input():
    g = cn.DAG.parse("Rain -> Wet; Sprinkler -> Wet")
    good = {"Rain": [0.8, 0.2], "Sprinkler": [0.6, 0.4], "Wet": np.full((2, 2, 2), 0.5)}
    cards = {"Rain": 2, "Sprinkler": 2, "Wet": 2}
    with pytest.raises(ShapeError, match=r"CPT for 'Wet' has shape \(2, 3\); parents \('Rain', 'Sprinkler'\) "
                                         r"have cards \(2, 2\) and 'Wet' has 2 states, so expected \(2, 2, 2\)"):
        DiscreteBN(g, {**good, "Wet": np.full((2, 3), 0.5)}, cards)
    with pytest.raises(ModelError, match="no CPT for node 'Sprinkler'"):
        DiscreteBN(g, {k: v for k, v in good.items() if k != "Sprinkler"}, cards)
    with pytest.raises(ModelError, match="cpts names 'Rian', which is not a node of the DAG; did you mean 'Rain'"):
        DiscreteBN(g, {**good, "Rian": [1.0]}, cards)
    with pytest.raises(ModelError, match="no card"):
        DiscreteBN(g, good, {"Rain": 2, "Wet": 2})
    with pytest.raises(ModelError, match="card of 'Rain' must be a positive integer, got 0"):
        DiscreteBN(g, good, {**cards, "Rain": 0})
    with pytest.raises(ModelError, match=r"CPT for 'Rain': the row for parent states \(\) sums to 1.1"):
        DiscreteBN(g, {**good, "Rain": [0.9, 0.2]}, cards)
    with pytest.raises(ModelError, match="negative or non-finite"):
        DiscreteBN(g, {**good, "Rain": [1.5, -0.5]}, cards)
    with pytest.raises(ModelError, match="expects a causalnet DAG"):
        DiscreteBN(nx.DiGraph(), good, cards)


def test_bad_query_input(cloudy_bn):
    with pytest.raises(EvidenceError, match="unknown evidence node 'Wett'; did you mean 'Wet'"):
        cloudy_bn.query(["Rain"], {"Wett": 1})
    with pytest.raises(EvidenceError, match=r"'Wet' has 2 states \(0..1\); evidence gives state 2"):
        cloudy_bn.query(["Rain"], {"Wet": 2})
    with pytest.raises(EvidenceError, match=r"'Wet' has 2 states \(0..1\); evidence gives state -1"):
        cloudy_bn.query(["Rain"], {"Wet": np.array([0, -1])})
    with pytest.raises(EvidenceError, match="must be an integer state index, got 1.0"):
        cloudy_bn.query(["Rain"], {"Wet": 1.0})
    with pytest.raises(EvidenceError, match="must hold integer state indices, got dtype float64"):
        cloudy_bn.query(["Rain"], {"Wet": np.array([0.0, 1.0])})
    with pytest.raises(EvidenceError, match=r"1-D array of them, got shape \(2, 1\)"):
        cloudy_bn.query(["Rain"], {"Wet": np.zeros((2, 1), dtype=int)})
    with pytest.raises(EvidenceError, match="'Cloudy' has 3 rows but evidence for 'Wet' has 2"):
        cloudy_bn.query(["Rain"], {"Wet": np.array([0, 1]), "Cloudy": np.array([0, 1, 1])})
    with pytest.raises(EvidenceError, match="'Rain' is both a target and evidence"):
        cloudy_bn.query(["Rain"], {"Rain": 1})
    with pytest.raises(EvidenceError, match="'Rain' is both a target and evidence"):
        cloudy_bn.relevant_nodes(["Rain"], ["Rain"])
    with pytest.raises(GraphError, match="unknown target node 'Rian'; did you mean 'Rain'"):
        cloudy_bn.query(["Rian"])
    with pytest.raises(GraphError, match="target 'Rain' is listed twice"):
        cloudy_bn.query(["Rain", "Rain"])
    with pytest.raises(GraphError, match="unknown elimination order 'min-fil'"):
        cloudy_bn.query(["Rain"], order="min-fil")
    with pytest.raises(EvidenceError, match="unknown evidence node 'X'"):
        cloudy_bn.map(None, {"X": 0})


def test_log_prob_matches_joint(seed):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 6)
    bn = DiscreteBN(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    values = forward_sample(dag, cpts, card, 20, rng)
    lp = bn.log_prob(values)
    assert_allclose(lp, np.log(joint[tuple(values[v] for v in names)]), rtol=0, atol=1e-12)
    with pytest.raises(EvidenceError, match="needs a state for every node"):
        bn.log_prob({"X0": 0})


def test_batch_of_zero_rows(cloudy_bn):
    probs, log_e = cloudy_bn.query(["Rain"], {"Wet": np.array([], dtype=int)})
    assert probs.shape == (0, 2) and log_e.shape == (0,)


# -- orders and the generic engine ----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(ORDER_METHODS))
def test_elimination_fill_graph_is_chordal(s, method):
    rng = np.random.default_rng(s)
    g = nx.gnp_random_graph(int(rng.integers(2, 14)), float(rng.uniform(0.1, 0.6)), seed=int(rng.integers(1 << 30)))
    graph = {v: set(g[v]) for v in g}
    cards = {v: int(rng.integers(2, 5)) for v in g}
    order = elimination_order(graph, cards, method=method)
    assert sorted(order) == sorted(g.nodes)
    cliques = elimination_cliques(graph, order)
    filled = nx.Graph(g)
    for c in cliques:
        filled.add_edges_from((a, b) for a in c for b in c if a != b)
    assert nx.is_chordal(filled)
    # the order is a perfect elimination order of the filled graph: no more fill
    assert elimination_cliques({v: set(filled[v]) for v in filled}, order) == cliques
    biggest = max(len(c) for c in nx.chordal_graph_cliques(filled))
    assert max(len(c) for c in cliques) == biggest


def test_orders_on_known_graphs():
    tree = nx.balanced_tree(2, 4)
    graph = {v: set(tree[v]) for v in tree}
    for method in ORDER_METHODS:
        cl = elimination_cliques(graph, elimination_order(graph, method=method))
        assert max(map(len, cl)) == 2                  # trees have width 1
    grid = nx.grid_2d_graph(4, 4)
    graph = {v: set(grid[v]) for v in grid}
    cl = elimination_cliques(graph, elimination_order(graph, method="min-fill"))
    assert max(map(len, cl)) - 1 >= 4                  # treewidth of the 4x4 grid is 4
    with pytest.raises(GraphError, match="unknown elimination order"):
        elimination_order(graph, method="best")
    m = moral_graph(cn.DAG.parse("A -> C <- B; C -> D"))
    assert m == {"A": {"B", "C"}, "B": {"A", "C"}, "C": {"A", "B", "D"}, "D": {"C"}}


def test_generic_variable_elimination(seed):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 7)
    joint, names = brute_joint(dag, cpts, card)
    fs = [Factor.from_cpt(v, dag.parents(v), cpts[v]) for v in dag.nodes]
    ev = {"X6": np.array([0, 1]), "X2": 0}
    f = variable_elimination(fs, ["X1", "X0"], evidence=ev)
    assert f.vars == ("X1", "X0") and f.batched
    for r in range(2):
        want, pe = brute_query(joint, names, ["X1", "X0"], {"X6": int(ev["X6"][r]), "X2": 0})
        assert_allclose(f.values[r], want * pe, rtol=0, atol=1e-14)


def test_largest_table_stops_at_the_first_table_over_the_limit():
    def path():                                     # a - b - c - d, cards 2, 3, 4, 5
        return {0: {1}, 1: {0, 2}, 2: {1, 3}, 3: {2}}

    card = [2, 3, 4, 5]
    full = largest_table(path(), [0, 1, 2, 3], card)
    assert full == 4 * 5                            # eliminating c with d left: 20 entries
    assert largest_table(path(), [0, 1, 2, 3], card, stop=100) == full
    assert largest_table(path(), [3, 2, 1, 0], card, stop=5) == 5 * 4   # the first table (d with c) is over 5
    assert largest_table(path(), [1, 0, 2, 3], card, stop=5) == 3 * 2 * 4   # b first: b, a, c
