"""CRFs as causal models: the factor-node network (generic engine) equals the chain engine;
interventions on tokens."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet import EvidenceError
from causalnet.inference.dispatch import QUERY_ENGINES
from causalnet.inference.engine import Registry
from causalnet.inference.request import query_request
from causalnet.models.crf import CRF
from causalnet.models.crf import causal as cc


@pytest.fixture
def crf(rng):
    F, K = 6, 3
    attrs = [f"a{i}" for i in range(F)]
    return CRF.from_weights(rng.normal(size=(F, K)), rng.normal(size=(K, K)), ["A", "B", "C"], attrs)


def seq(rng, T, F=6):
    return [{f"a{j}": 1.0 for j in rng.choice(F, size=2, replace=False)} for _ in range(T)]


def brute_marginals(U, W):
    T, K = U.shape
    P = np.zeros((K,) * T)
    for path in itertools.product(range(K), repeat=T):
        P[path] = np.exp(sum(U[t, path[t]] for t in range(T)) + sum(W[path[t], path[t + 1]] for t in range(T - 1)))
    P /= P.sum()
    return [P.sum(axis=tuple(a for a in range(T) if a != t)) for t in range(T)]


@pytest.mark.parametrize("T", [1, 2, 4, 5])
def test_factor_network_equals_chain_engine(crf, rng, T):
    X = seq(rng, T)
    m = crf.to_model(X=X)
    ev = cc.factor_evidence(m)
    U = cc.sequence_unary(crf, X)
    ref = brute_marginals(U, np.asarray(crf.transition_weights_))
    for t in range(T):
        fast = crf.query(f"y[{t}]", X)
        generic = m.query(f"y[{t}]", evidence=ev)
        assert_allclose(fast.probs, generic.probs, atol=1e-12)
        assert_allclose(fast.probs, ref[t], atol=1e-12)


def test_do_on_a_token_changes_labels_downstream(crf, rng):
    X = seq(rng, 5)
    new = {"a0": 5.0}
    a = crf.query(["y[3]", "y[4]"], X, do={"x[4]": new})
    X2 = list(X)
    X2[4] = new
    b = crf.query(["y[3]", "y[4]"], X2)
    for k in a:
        assert_allclose(a[k].probs, b[k].probs, atol=1e-14)
    assert not np.allclose(a["y[4]"].probs, crf.query("y[4]", X).probs)
    # the factor network with the new token baked in agrees
    m = crf.to_model(X=X2)
    assert_allclose(m.query("y[3]", evidence=cc.factor_evidence(m)).probs, a["y[3]"].probs, atol=1e-12)


def test_label_evidence_clamps(crf, rng):
    X = seq(rng, 4)
    m = crf.to_model(X=X)
    ev = cc.factor_evidence(m) | {"y[1]": "B"}
    assert_allclose(crf.query("y[2]", X, evidence={"y[1]": "B"}).probs, m.query("y[2]", evidence=ev).probs,
                    atol=1e-12)


def test_structure_and_errors(crf, rng):
    g = crf.to_model(T=4).dag
    assert g.parents("f[2]") == ("x[2]", "y[2]") and g.parents("g[1]") == ("y[1]", "y[2]")
    assert g.d_separated("y[0]", "y[3]")                 # independent until the factors are observed
    assert not g.d_separated("y[0]", "y[3]", given={"g[0]", "g[1]", "g[2]"})
    X = seq(rng, 3)
    with pytest.raises(EvidenceError, match="beyond the sequence"):
        crf.query("y[5]", X)
    with pytest.raises(EvidenceError, match="no state 'Z'"):
        crf.query("y[1]", X, evidence={"y[0]": "Z"})
    with pytest.raises(EvidenceError, match="do applies to tokens"):
        crf.query("y[1]", X, do={"y[0]": "A"})


def test_given_potentials(crf, rng):
    from causalnet import ShapeError

    U = rng.normal(size=(2, 4, 3))
    labels, scores = crf.decode_potentials(U, mask=np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool))
    assert [len(x) for x in labels] == [4, 2]
    W = np.asarray(crf.transition_weights_)
    for i, T in enumerate([4, 2]):
        best = max(itertools.product(range(3), repeat=T),
                   key=lambda p: sum(U[i, t, p[t]] for t in range(T)) + sum(W[p[t], p[t + 1]] for t in range(T - 1)))
        assert labels[i] == [crf.classes_[k] for k in best]
        marg, _ = crf.marginals_potentials(U[i, :T])
        assert_allclose(marg[0], np.stack(brute_marginals(U[i, :T], W)), atol=1e-12)
    with pytest.raises(ShapeError, match="shape \\(n, T, 3\\)"):
        crf.decode_potentials(np.zeros((2, 4, 5)))


# -- the CRF chain engine in the query registry ----------------------------------------------


@st.composite
def factor_network_queries(draw):
    K, T = draw(st.integers(2, 3)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    crf = CRF.from_weights(rng.normal(size=(2, K)), rng.normal(size=(K, K)), [f"L{k}" for k in range(K)])
    m = crf.to_model(X=rng.normal(size=(T, 2)))
    n = draw(st.sampled_from([None, 3]))
    ev = {}
    for node in cc.factor_evidence(m):                  # each factor observed true, false or not at all
        v = draw(st.sampled_from(["true", "false", None]))
        if v is not None:
            ev[node] = v if n is None or draw(st.booleans()) else rng.choice(["true", "false"], size=n)
    t = draw(st.integers(0, T - 1))
    others = [s for s in range(T) if s != t]
    if others and draw(st.booleans()):
        ev[f"y[{draw(st.sampled_from(others))}]"] = f"L{int(rng.integers(K))}"
    return m, f"y[{t}]", ev


@settings(max_examples=50, deadline=None)
@given(factor_network_queries())
def test_crf_chain_engine_equals_the_generic_engine_through_the_registry(case):
    m, target, ev = case
    generic = Registry([e for e in QUERY_ENGINES if e.name != "CRF chain"])
    try:
        want = generic.answer(query_request(m, target, ev))
    except EvidenceError:                               # probability-zero evidence: both refuse
        with pytest.raises(EvidenceError, match="probability zero"):
            QUERY_ENGINES.answer(query_request(m, target, ev))
        return
    got = QUERY_ENGINES.answer(query_request(m, target, ev))
    assert got.method == "exact (CRF chain forward-backward)" and "variable elimination" in want.method
    assert_allclose(got.probs, want.probs, rtol=0, atol=1e-12)
    assert got.batched == want.batched


def test_crf_query_goes_through_the_front_door(crf, rng):
    X = seq(rng, 3)
    d = crf.query("y[2]", X, evidence={"y[0]": "B"})
    assert d.method == "exact (CRF chain forward-backward)"
    assert d.query.startswith("P(y[2] | f[0]=true, ") and d.query.endswith("y[0]=B)")
