"""Issue 10 for the discrete engine: limits instead of blow-ups, typed errors on bad input.

A high-treewidth model (a grid of binary nodes, each with its up and left
neighbours as parents: treewidth about the grid side) must fail with a
ResourceError that names the estimate, the clique and the knob, before any
large table exists (peak traced memory stays small). Bad and extreme inputs
go through ``guarded`` (a valid answer or a CausalNetError; no NaN/inf; inputs
unchanged after a failure).
"""

import tracemalloc

import numpy as np
import pytest
from conftest import guarded
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import CausalNetError, ResourceError
from causalnet.inference.discrete.elimination import DiscreteBN, variable_elimination
from causalnet.inference.discrete.factors import Factor, factor_product


def grid(side: int) -> DiscreteBN:
    """A side x side grid of binary nodes G{r}_{c}; parents: the node above and the node to the left."""
    name = "G{}_{}".format
    edges = []
    for r in range(side):
        for c in range(side):
            if r:
                edges.append((name(r - 1, c), name(r, c)))
            if c:
                edges.append((name(r, c - 1), name(r, c)))
    dag = cn.DAG(edges, nodes=[name(r, c) for r in range(side) for c in range(side)])
    cpts = {}
    for v in dag.nodes:
        k = len(dag.parents(v))
        cpts[v] = np.full((2,) * k + (2,), 0.5)
        cpts[v][(0,) * k] = [0.9, 0.1]
    return DiscreteBN(dag, cpts, {v: 2 for v in dag.nodes})


def fails_without_allocating(fn, *args, **kwargs) -> ResourceError:
    tracemalloc.start()
    try:
        with pytest.raises(ResourceError) as info:
            fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"allocated {peak} bytes before refusing"
    return info.value


@pytest.fixture(scope="module")
def big_grid():
    return grid(40)                                   # treewidth ~40: 2^40-entry tables


def test_high_treewidth_query_fails_fast_with_a_clear_message(big_grid):
    e = fails_without_allocating(big_grid.query, ["G39_39"], {"G0_0": 1})
    msg = str(e)
    assert isinstance(e, MemoryError) and isinstance(e, CausalNetError)
    assert "max_table_bytes" in msg and "treewidth" in msg and "would need" in msg
    assert "G" in msg and ":2" in msg                 # the clique's variables and cards


@pytest.mark.parametrize("call", ["map", "junction_tree", "batched", "second query"])
def test_high_treewidth_every_entry_point_refuses(big_grid, call):
    if call == "map":
        fails_without_allocating(big_grid.map, None, {"G0_0": 1})
    elif call == "junction_tree":
        e = fails_without_allocating(big_grid.junction_tree)
        assert "junction-tree clique" in str(e)
    elif call == "batched":
        fails_without_allocating(big_grid.query, ["G39_39"], {"G0_0": np.array([0, 1, 1])})
    else:                                             # the prior tree is never attempted: still compiled
        for _ in range(2):
            fails_without_allocating(big_grid.query, ["G39_39"], {"G0_0": 0})


def test_limit_is_a_knob_and_answers_are_unchanged_within_it():
    bn = grid(4)
    want, _ = bn.query(["G3_3"], {"G0_0": 1})
    with cn.limits.override(max_table_bytes=64):      # 8 entries: a clique of 4 binary nodes is refused
        fresh = grid(4)                               # (tables a network already holds stay usable)
        for _ in range(3):
            e = guarded(fresh.query, ["G3_3"], {"G0_0": 1})
            assert isinstance(e, ResourceError) and "max_table_bytes" in str(e)
        assert isinstance(guarded(fresh.junction_tree), ResourceError)
    got, _ = fresh.query(["G3_3"], {"G0_0": 1})
    assert_allclose(got, want, rtol=0, atol=1e-15)


def test_joint_target_table_is_checked():
    names = [f"R{i}" for i in range(40)]
    dag = cn.DAG([], nodes=names)
    bn = DiscreteBN(dag, {v: [0.5, 0.5] for v in names}, {v: 2 for v in names})
    e = fails_without_allocating(bn.query, names)
    assert "joint table of the targets" in str(e)


def test_long_batches_run_in_chunks_and_one_huge_row_is_refused():
    sprinkler = DiscreteBN(cn.DAG.parse("Rain -> Wet; Sprinkler -> Wet"), {
        "Rain": [0.8, 0.2], "Sprinkler": [0.6, 0.4],
        "Wet": [[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]]}, {"Rain": 2, "Sprinkler": 2, "Wet": 2})
    ev = {"Wet": np.arange(200_000) % 2, "Sprinkler": (np.arange(200_000) // 2) % 2}
    want, _ = sprinkler.query(["Rain"], {"Wet": 1, "Sprinkler": 0})
    with cn.limits.override(max_table_bytes=2**10, batch_bytes=64):   # a long batch is no error
        probs, log_e = sprinkler.query(["Rain"], ev)
        marg = sprinkler.junction_tree().marginals(ev)
    assert probs.shape == (200_000, 2) and log_e.shape == (200_000,)
    assert_allclose(probs[1], want, rtol=0, atol=1e-15)
    assert_allclose(marg["Rain"], probs, rtol=0, atol=1e-12)
    # one row whose tables alone exceed max_table_bytes is still refused, naming the knob
    g = cn.DAG.parse("A -> B; B -> C; C -> D; A -> D")
    rng = np.random.default_rng(0)
    bn = DiscreteBN(g, {v: rng.dirichlet(np.ones(4), size=[4] * len(g.parents(v))) for v in "ABCD"},
                    {v: 4 for v in "ABCD"})
    rows = {"A": np.array([0, 1]), "C": np.array([2, 3])}
    with cn.limits.override(max_table_bytes=100):
        e = guarded(bn.query, ["D"], rows)
        assert isinstance(e, ResourceError) and "max_table_bytes" in str(e) and "one evidence row" in str(e)
        e = guarded(bn.map, ["D"], rows)
        assert isinstance(e, ResourceError)


def test_factor_products_are_checked():
    fs = [Factor([f"V{i}"], [0.5, 0.5]) for i in range(40)]
    e = fails_without_allocating(factor_product, fs)
    assert "product of factors" in str(e) and "max_table_bytes" in str(e)
    e = fails_without_allocating(variable_elimination, fs, [f"V{i}" for i in range(40)])
    small = Factor(["A", "B"], np.ones((2, 2)))
    with cn.limits.override(max_table_bytes=1024):
        e = guarded(small.reduce, {"A": np.zeros(1000, dtype=int)})
        assert isinstance(e, ResourceError)


def test_huge_cardinality_is_refused_before_allocating():
    dag = cn.DAG([("A", "B")])
    e = guarded(DiscreteBN, dag, {"A": [1.0], "B": [[1.0]]}, {"A": 1, "B": 10**12})
    assert isinstance(e, CausalNetError)
    e = guarded(DiscreteBN, dag, {"A": np.ones(3) / 3, "B": [[1.0]] * 3}, {"A": 3, "B": 10**12})
    assert isinstance(e, ResourceError)


def test_all_zero_cpt_rows_are_refused():
    dag = cn.DAG([("A", "B")])
    e = guarded(DiscreteBN, dag, {"A": [0.5, 0.5], "B": [[0.0, 0.0], [0.5, 0.5]]}, {"A": 2, "B": 2})
    assert isinstance(e, cn.ModelError) and "sums to 0" in str(e)


def test_indicator_of_a_node_with_many_states_is_checked():
    # the junction tree observes a non-evidence-variable node through a K x K indicator table
    k = 20_000
    dag = cn.DAG([("A", "B")])
    bn = DiscreteBN(dag, {"A": np.full(k, 1.0 / k), "B": np.full((k, 2), 0.5)}, {"A": k, "B": 2})
    with cn.limits.override(max_table_bytes=2**20):
        e = guarded(bn.junction_tree(["B"]).marginals, {"B": np.array([0, 1]), "A": np.array([3, 4])})
    assert isinstance(e, ResourceError) and "'A' has 20000 states" in str(e)


# -- property tests: bad and extreme input, through guarded ------------------------------------


def _value(draw, card):
    """A possibly bad evidence value for a node with `card` states."""
    kind = draw(st.sampled_from(["ok", "ok", "ok", "array", "big", "neg", "float", "bool", "2d", "str", "ragged"]))
    if kind == "ok":
        return draw(st.integers(0, card - 1))
    if kind == "array":
        return np.array(draw(st.lists(st.integers(0, card - 1), min_size=3, max_size=3)))
    if kind == "ragged":
        return np.array(draw(st.lists(st.integers(0, card - 1), min_size=0, max_size=5)))
    return {"big": card, "neg": -1, "float": 0.5, "bool": True, "2d": np.zeros((2, 2), dtype=int),
            "str": "x"}[kind]


@st.composite
def bad_queries(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_nodes = draw(st.integers(2, 7))
    dag, cpts, card = random_network(rng, n_nodes, cards=(1, 3), zeros=draw(st.booleans()))
    names = list(dag.nodes)
    ev = {}
    for v in draw(st.lists(st.sampled_from(names + ["nope"]), max_size=4, unique=True)):
        ev[v] = _value(draw, card.get(v, 2))
    targets = draw(st.lists(st.sampled_from(names + ["nope"]), max_size=3))
    return dag, cpts, card, targets, ev


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad_queries())
def test_bad_queries_are_typed_errors_or_right_answers(q):
    dag, cpts, card, targets, ev = q
    bn = DiscreteBN(dag, cpts, card)
    for _ in range(2):                                    # the second query may use the prior tree
        got = guarded(bn.query, targets, ev)
    guarded(bn.query, targets, ev, joint=False)
    guarded(bn.map, targets or None, ev)
    guarded(bn.log_prob, ev, allow_neginf=True)
    jt = guarded(bn.junction_tree)
    guarded(jt.marginals, ev)
    if isinstance(got, CausalNetError) or any(np.ndim(x) for x in ev.values()):
        return
    joint, names = brute_joint(dag, cpts, card)
    want, _ = brute_query(joint, names, list(targets), ev)
    assert_allclose(got[0], want, rtol=0, atol=1e-10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 2, 5000]))
def test_batch_sizes_agree_with_row_by_row(s, n):
    rng = np.random.default_rng(s)
    dag, cpts, card = random_network(rng, 6, cards=(2, 3), zeros=True)
    bn = DiscreteBN(dag, cpts, card)
    names = list(dag.nodes)
    evs, t = names[:2], names[-1]
    ev = {v: rng.integers(card[v], size=n) for v in evs}
    got = guarded(bn.query, [t], ev)
    if isinstance(got, CausalNetError):                   # some row impossible: says which
        assert "probability zero" in str(got)
        return
    probs, log_e = got
    assert probs.shape == (n, card[t]) and log_e.shape == (n,)
    joint, _ = brute_joint(dag, cpts, card)
    for r in range(min(n, 5)):
        row = {v: int(x[r]) for v, x in ev.items()}
        assert_allclose(probs[r], brute_query(joint, names, [t], row)[0], rtol=0, atol=1e-10)
