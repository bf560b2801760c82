"""Batched evidence: distinct rows answered once, in chunks; the same answers as row by row.

Every batched entry point (``DiscreteBN.query`` joint and per target,
``DiscreteBN.map``, ``JunctionTree.marginals``) must give, for a batch with
repeated rows, the same answers (1) with a tiny ``batch_bytes`` (many chunks),
(2) with a huge one (one chunk), and (3) row by row with scalar evidence, which
runs other code (the calibrated prior tree or a scalar plan); the oracle for (3)
is brute-force enumeration of the joint.
"""

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import EvidenceError
from causalnet.inference.discrete.batches import EvidenceRows
from causalnet.inference.discrete.elimination import DiscreteBN


def repeated_rows(rng, names, card, n, distinct):
    """Evidence on `names`: n rows drawn from `distinct` random rows."""
    pool = {v: rng.integers(card[v], size=distinct) for v in names}
    pick = rng.integers(distinct, size=n)
    return {v: x[pick] for v, x in pool.items()}


def all_entry_points(bn, targets, ev):
    probs, log_e = bn.query(targets, ev)
    margs, log_e2 = bn.query(targets, ev, joint=False)
    assign, lp = bn.map(targets, ev)
    jt, jt_log = bn.junction_tree().marginals(ev, return_log_evidence=True)
    return [probs, log_e, *margs, log_e2, *assign.values(), lp, *jt.values(), jt_log]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 6))
def test_chunked_equals_unchunked_equals_row_by_row(seed, n, distinct):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, int(rng.integers(3, 8)), cards=(2, 3))   # no zeros: every row possible
    names = list(dag.nodes)
    pick = rng.permutation(len(names))
    ev_names = [names[i] for i in pick[:2]]
    targets = [names[i] for i in pick[2:2 + int(rng.integers(1, 3))]]
    ev = repeated_rows(rng, ev_names, card, n, distinct)
    with cn.limits.override(batch_bytes=8):           # one row per chunk
        small = all_entry_points(DiscreteBN(dag, cpts, card), targets, ev)
    with cn.limits.override(batch_bytes=2**40):       # one chunk
        big = all_entry_points(DiscreteBN(dag, cpts, card), targets, ev)
    for a, b in zip(small, big):
        assert np.shape(a) == np.shape(b)
        assert_allclose(a, b, rtol=0, atol=1e-12)
    joint, order = brute_joint(dag, cpts, card)
    bn = DiscreteBN(dag, cpts, card)
    for r in range(n):
        row = {v: int(x[r]) for v, x in ev.items()}
        want, pe = brute_query(joint, order, targets, row)
        assert_allclose(big[0][r], want, rtol=0, atol=1e-10)
        assert_allclose(big[1][r], np.log(pe), rtol=1e-10)
        got, _ = bn.query(targets, row)                # scalar path
        assert_allclose(got, big[0][r], rtol=0, atol=1e-10)


def test_repeated_rows_are_answered_once():
    rows = EvidenceRows({0: np.array([3, 1, 3, 3, 1]), 1: np.array([0, 0, 0, 0, 0]), 2: 1}, 5, [4, 2, 2])
    assert rows.d == 2 and rows.ev[2] == 1
    assert rows.ev[0].tolist() == [1, 3]
    calls = []

    def fn(ev, m):
        calls.append(m)
        return {"x": ev[0] * 1.0}, np.ones(m)

    out, _ = rows.solve(fn, row_bytes=8.0, what="a test")
    assert calls == [2]
    assert rows.scatter(out)["x"].tolist() == [3, 1, 3, 3, 1]
    with cn.limits.override(batch_bytes=8):
        calls.clear()
        rows.solve(fn, row_bytes=8.0, what="a test")
        assert calls == [1, 1]


def test_rows_beyond_an_int64_code_are_still_deduplicated():
    card = [10**7] * 4                                 # 10^28 joint states: no single int code
    x = np.array([5, 9_999_999, 5])
    rows = EvidenceRows({v: x for v in range(4)}, 3, card)
    assert rows.d == 2 and rows.scatter(rows.ev[0]).tolist() == x.tolist()


@pytest.mark.parametrize("n", [0, 1, 7])
def test_degenerate_batches(n):
    bn = DiscreteBN(cn.DAG.parse("A -> B"), {"A": [0.3, 0.7], "B": [[0.9, 0.1], [0.2, 0.8]]}, {"A": 2, "B": 2})
    probs, log_e = bn.query(["A"], {"B": np.ones(n, dtype=int)})
    assert probs.shape == (n, 2) and log_e.shape == (n,)
    m = bn.junction_tree().marginals({"B": np.ones(n, dtype=int)})
    assert m["A"].shape == (n, 2)


def test_impossible_rows_are_named_by_their_given_index():
    bn = DiscreteBN(cn.DAG.parse("A -> B"), {"A": [1.0, 0.0], "B": [[0.9, 0.1], [0.2, 0.8]]}, {"A": 2, "B": 2})
    ev = {"A": np.array([0, 0, 1, 0, 1])}
    with pytest.raises(EvidenceError, match=r"2 of 5 rows \(rows \[2, 4\]"):
        bn.query(["B"], ev)
    with pytest.raises(EvidenceError, match=r"2 of 5 rows \(rows \[2, 4\]"):
        bn.junction_tree().marginals(ev)
    with cn.limits.override(batch_bytes=8), pytest.raises(EvidenceError, match=r"rows \[2, 4\]"):
        bn.map(["B"], ev)
