"""Batched evidence from one joint table (row_joint) and a fresh model's first batched query (first_batch).

Both fast paths are checked against brute-force enumeration of the joint
(row by row, :mod:`discrete_networks`: broadcasting only) and against the
reference path they replace: the row-by-row compiled programs (the joint
table switched off) and the model's whole network (its second query).
"""

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import EvidenceError
from causalnet.inference.discrete import first_batch, row_joint
from causalnet.inference.discrete.batches import EvidenceRows
from causalnet.inference.discrete.elimination import DiscreteBN


def _case(seed, n, distinct, scalar):
    """A random network, targets, and evidence: batched nodes (few distinct rows) plus maybe one scalar node."""
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, int(rng.integers(3, 8)), cards=(2, 3))    # no zeros: rows possible
    names = list(dag.nodes)
    pick = rng.permutation(len(names))
    n_ev = int(rng.integers(1, min(3, len(names) - 1) + 1))
    ev_names = [names[i] for i in pick[:n_ev]]
    targets = [names[i] for i in pick[n_ev:n_ev + int(rng.integers(1, 3))]]
    pool = {v: rng.integers(card[v], size=distinct) for v in ev_names}
    rows = rng.integers(distinct, size=n)
    ev = {v: x[rows] for v, x in pool.items()}
    if scalar and len(ev_names) > 1:
        ev[ev_names[0]] = int(pool[ev_names[0]][0])
    return dag, cpts, card, targets, ev


@settings(max_examples=40, deadline=None,       # monkeypatch: undone per example by its context manager
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.integers(2, 50), st.integers(1, 12), st.booleans())
def test_joint_table_equals_row_by_row_and_brute_force(monkeypatch, seed, n, distinct, scalar):
    dag, cpts, card, targets, ev = _case(seed, n, distinct, scalar)
    bn = DiscreteBN(dag, cpts, card)
    idx, n_ = bn.evidence_indices(ev)
    tidx = bn.target_indices(targets)
    rows = EvidenceRows(idx, n_, bn.card)
    with monkeypatch.context() as mp:
        mp.setattr(row_joint, "STATES_PER_ROW", 10**9)                    # the joint table whenever it fits
        got = row_joint.joint_rows_query(bn, tidx, idx, rows, "weighted-min-fill")
        assert got is not None                                            # taken: these rows are all possible
        fast = bn.query(targets, ev)
        fast_m = bn.query(targets, ev, joint=False) if len(targets) == 1 else None
    assert_allclose(got[0], fast[0], rtol=0, atol=0)
    with monkeypatch.context() as mp:
        mp.setattr(row_joint, "STATES_PER_ROW", 0)                         # never: row by row
        ref = DiscreteBN(dag, cpts, card).query(targets, ev)
    assert fast[0].shape == ref[0].shape == (n, *(card[t] for t in targets))
    assert_allclose(fast[0], ref[0], rtol=0, atol=1e-12)
    assert_allclose(fast[1], ref[1], rtol=1e-12, atol=1e-12)
    if fast_m is not None:
        assert_allclose(fast_m[0][0], ref[0], rtol=0, atol=1e-12)
    joint, order = brute_joint(dag, cpts, card)
    for r in range(n):
        row = {v: (x if type(x) is int else int(x[r])) for v, x in ev.items()}
        want, pe = brute_query(joint, order, targets, row)
        assert_allclose(fast[0][r], want, rtol=0, atol=1e-10)
        assert_allclose(fast[1][r], np.log(pe), rtol=1e-10)


def test_the_joint_table_is_taken_only_when_it_pays():
    bn = DiscreteBN(cn.DAG.parse("A -> B; A -> C"), {"A": [0.3, 0.7], "B": [[0.9, 0.1], [0.2, 0.8]],
                                                     "C": [[0.5, 0.5], [0.4, 0.6]]}, {"A": 2, "B": 2, "C": 2})
    one = {1: np.zeros(10, dtype=np.intp), 2: np.zeros(10, dtype=np.intp)}     # 1 distinct row, 4 joint states
    assert row_joint.joint_rows_query(bn, (0,), one, EvidenceRows(one, 10, bn.card), "weighted-min-fill") is not None
    net = DiscreteBN(cn.DAG([], nodes=[f"X{i}" for i in range(10)]), {f"X{i}": [0.5, 0.5] for i in range(10)},
                     {f"X{i}": 2 for i in range(10)})
    big = {i: np.zeros(6, dtype=np.intp) for i in range(1, 10)}
    assert row_joint.joint_rows_query(net, (0,), big, EvidenceRows(big, 6, net.card), "weighted-min-fill") is None


def test_an_underflowing_row_goes_row_by_row_and_is_rescaled():
    tiny = 1e-300                                                              # P(B=1) ~ 1e-300 < TINY
    cpts = {"A": [0.4, 0.6], "B": [[1 - tiny, tiny], [1 - 3 * tiny, 3 * tiny]]}
    bn = DiscreteBN(cn.DAG.parse("A -> B"), cpts, {"A": 2, "B": 2})
    ev = {1: np.array([0, 1, 0, 1], dtype=np.intp)}
    assert row_joint.joint_rows_query(bn, (0,), ev, EvidenceRows(ev, 4, bn.card), "weighted-min-fill") is None
    probs, log_e = bn.query(["A"], {"B": ev[1]})
    assert_allclose(probs[1], [0.4 / (0.4 + 1.8), 1.8 / (0.4 + 1.8)], rtol=1e-12)
    assert_allclose(log_e[1], np.log(tiny * (0.4 + 1.8)), rtol=1e-12)
    assert_allclose(probs[0], [0.4, 0.6], rtol=1e-12)


def test_impossible_rows_are_still_named():
    bn = DiscreteBN(cn.DAG.parse("A -> B; A -> C"), {"A": [1.0, 0.0], "B": [[0.9, 0.1], [0.2, 0.8]],
                                                     "C": [[0.5, 0.5], [0.4, 0.6]]}, {"A": 2, "B": 2, "C": 2})
    with pytest.raises(EvidenceError, match=r"2 of 5 rows \(rows \[2, 4\]"):
        bn.query(["B"], {"A": np.array([0, 0, 1, 0, 1]), "C": np.array([0, 1, 0, 1, 0])})
    with pytest.raises(EvidenceError):                                        # impossible scalar evidence too
        bn.query(["B"], {"A": 1, "C": np.array([0, 1, 0, 1, 0])})


# --- a fresh model's first batched query, on its ancestral network ---------------------------------------------

def _model(seed):
    """A random model of CPTs whose parents are declared in a shuffled order (the tables transposed to match)."""
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, int(rng.integers(4, 9)), cards=(2, 3))
    mechs = {}
    for v in dag.nodes:
        ps = list(dag.parents(v))
        perm = list(rng.permutation(len(ps)))
        table = np.transpose(cpts[v], perm + [len(ps)])
        states = [f"s{j}" for j in range(card[v])]
        mechs[v] = cn.CPT([ps[i] for i in perm], table, states=states) if ps else cn.Categorical(table, states=states)
    return cn.CausalModel(mechs), dag, cpts, card, rng


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_first_batched_query_equals_the_whole_network_and_brute_force(seed, n):
    m, dag, cpts, card, rng = _model(seed)
    names = list(dag.nodes)
    pick = rng.permutation(len(names))
    target, ev_names = names[pick[0]], [names[i] for i in pick[1:1 + int(rng.integers(1, 3))]]
    ev = {v: rng.integers(card[v], size=n) for v in ev_names}
    first = m.query(target, evidence=ev)
    assert "discrete_bn" not in m.cache and m.cache[first_batch.DONE]          # the ancestral network answered
    second = m.query(target, evidence=ev)
    assert "discrete_bn" in m.cache                                            # the whole network, cached
    assert first.probs.shape == second.probs.shape == (n, card[target])
    assert_allclose(first.probs, second.probs, rtol=0, atol=1e-12)
    assert_allclose(first.log_evidence, second.log_evidence, rtol=1e-12, atol=1e-12)
    joint, order = brute_joint(dag, cpts, card)
    for r in range(n):
        want, pe = brute_query(joint, order, [target], {v: int(x[r]) for v, x in ev.items()})
        assert_allclose(first.probs[r], want, rtol=0, atol=1e-10)
        assert_allclose(first.log_evidence[r], np.log(pe), rtol=1e-10)


def test_the_ancestral_network_holds_the_ancestors_only():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]]),
                        "C": cn.CPT(["B"], [[0.5, 0.5], [0.1, 0.9]]), "D": cn.Categorical([0.5, 0.5])})
    assert first_batch.ancestral_network(m, ["B"]).nodes == ("A", "B")
    assert set(first_batch.ancestral_network(m, ["C", "D"]).nodes) == {"A", "B", "C", "D"}
    m.query("A", evidence={"B": [0, 1]})
    assert m.cache[first_batch.DONE]
    m2 = m.do({"A": 1})                                                        # not all CPTs: the whole network
    m2.query("B", evidence={"C": [0, 1]})
    assert not m2.cache.get(first_batch.DONE)
