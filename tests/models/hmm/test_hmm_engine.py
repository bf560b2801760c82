"""The HMM's chain engines in the query registries: equal to the generic engines there, named in ``.method``."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.dispatch import COUNTERFACTUAL_ENGINES, QUERY_ENGINES
from causalnet.inference.engine import Registry
from causalnet.inference.request import counterfactual_request, query_request
from causalnet.models.hmm.engine import chain_shape

GENERIC_QUERY = Registry([e for e in QUERY_ENGINES if e.name != "HMM chain"], what="query")
GENERIC_CF = Registry([e for e in COUNTERFACTUAL_ENGINES if e.name != "HMM twin chain"], what="counterfactual")


def _hmm(seed, K, S):
    rng = np.random.default_rng(seed)
    return cn.HMM(K, "categorical", startprob=rng.dirichlet(np.ones(K)), transmat=rng.dirichlet(np.ones(K), size=K),
                  emissionprob=rng.dirichlet(np.ones(S), size=K))


@st.composite
def chain_queries(draw):
    K, S, T = draw(st.integers(2, 3)), draw(st.integers(2, 3)), draw(st.integers(1, 5))
    h = _hmm(draw(st.integers(0, 2**31)), K, S)
    n = draw(st.sampled_from([None, 3]))
    steps = draw(st.lists(st.integers(0, T - 1), unique=True, max_size=T))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    ev = {f"X[{t}]": (int(rng.integers(S)) if n is None else rng.integers(0, S, size=n)) for t in steps}
    free = [f"Z[{t}]" for t in range(T)] + [f"X[{t}]" for t in range(T) if t not in steps]
    target = draw(st.sampled_from(free))
    do = {}
    if draw(st.booleans()) and len(free) > 1:
        node = draw(st.sampled_from([v for v in free if v != target]))
        card = K if node[0] == "Z" else S
        do[node] = int(rng.integers(card)) if n is None or draw(st.booleans()) else rng.integers(0, card, size=n)
    return h, T, target, ev, do


@settings(max_examples=60, deadline=None)
@given(chain_queries())
def test_chain_engine_equals_the_generic_engine_through_the_registry(case):
    h, T, target, ev, do = case
    m = h.to_model(T)
    req = query_request(m, target, ev, do)
    assert chain_shape(req.model) is not None
    try:
        want = GENERIC_QUERY.answer(query_request(m, target, ev, do))
    except cn.EvidenceError:                              # probability-zero evidence: both refuse
        with pytest.raises(cn.EvidenceError, match="probability zero"):
            QUERY_ENGINES.answer(req)
        return
    got = QUERY_ENGINES.answer(req)
    assert got.method == "exact (HMM chain forward-backward)"          # the do node is never the target
    assert want.method == "exact (variable elimination)"
    assert_allclose(got.probs, want.probs, rtol=0, atol=1e-12)
    assert got.batched == want.batched and got.variables == want.variables


@st.composite
def chain_counterfactuals(draw):
    K, S, T = draw(st.integers(2, 3)), draw(st.integers(2, 3)), draw(st.integers(1, 4))
    h = _hmm(draw(st.integers(0, 2**31)), K, S)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    n = draw(st.sampled_from([None, 2]))
    steps = draw(st.lists(st.integers(0, T - 1), unique=True, max_size=T))
    ev = {f"X[{t}]": (int(rng.integers(S)) if n is None else rng.integers(0, S, size=n)) for t in steps}
    t0 = draw(st.integers(0, T - 1))
    target = draw(st.sampled_from([f"Z[{t}]" for t in range(T)] + [f"X[{t}]" for t in range(T)]))
    return h, T, target, ev, {f"Z[{t0}]": int(rng.integers(K))}


@settings(max_examples=40, deadline=None)
@given(chain_counterfactuals())
def test_twin_chain_engine_equals_the_twin_network_through_the_registry(case):
    h, T, target, ev, do = case
    m = h.to_model(T)
    try:
        want = GENERIC_CF.answer(counterfactual_request(m, target, ev, do))
    except cn.EvidenceError:                              # probability-zero evidence: both refuse
        with pytest.raises(cn.EvidenceError):
            COUNTERFACTUAL_ENGINES.answer(counterfactual_request(m, target, ev, do))
        return
    got = COUNTERFACTUAL_ENGINES.answer(counterfactual_request(m, target, ev, do))
    assert got.method.startswith("exact (twin chain over") and "twin network" in want.method
    assert_allclose(got.probs, want.probs, rtol=0, atol=1e-12)
    assert got.variables == want.variables and got.scm == want.scm


def test_the_front_door_names_the_chain_engines_and_the_question(small_hmm):
    X = np.array([0, 1, 2, 1])
    q = small_hmm.query("Z[2]", evidence=X, do={"Z[1]": 0})
    assert q.method == "exact (HMM chain forward-backward)"
    assert q.query == "P(Z[2] | do(Z[1]=0), X[0]=0, X[1]=1, X[2]=2, X[3]=1)"
    c = small_hmm.counterfactual("X[3]", evidence=X, do={"Z[1]": 0})
    assert c.method == "exact (twin chain over 2x2 joint states)"
    assert c.query == "P(X[3]_{Z[1]=0} | X[0]=0, X[1]=1, X[2]=2, X[3]=1)"
    # the same answers from the unrolled model's own front door
    m = small_hmm.to_model(4)
    ev = {f"X[{t}]": int(x) for t, x in enumerate(X)}
    assert m.query("Z[2]", evidence=ev, do={"Z[1]": 0}).method == q.method
    assert_allclose(m.counterfactual("X[3]", evidence=ev, do={"Z[1]": 0}).probs, c.probs, rtol=0, atol=0)


def test_a_chain_too_big_for_the_limits_falls_back_and_says_why(small_hmm):
    X = np.array([0, 1, 2, 1])
    m = small_hmm.to_model(4)
    ev = {f"X[{t}]": int(x) for t, x in enumerate(X)}
    want = m.query("Z[2]", evidence=ev)
    with cn.limits.override(max_table_bytes=100):      # the chain's potentials do not fit; elimination's do
        r = m.query("Z[2]", evidence=ev)
    assert r.method.startswith("exact (variable elimination); exact engines passed: HMM chain: ResourceError")
    assert_allclose(r.probs, want.probs, rtol=0, atol=1e-12)


def test_shapes_the_engines_decline():
    # not an unrolled HMM: a chain of states with no observations, a shift intervention
    chain = cn.CausalModel({"Z[0]": cn.Categorical([0.5, 0.5]), "Z[1]": cn.CPT(["Z[0]"], [[0.9, 0.1], [0.2, 0.8]])})
    assert chain_shape(chain) is None and chain.query("Z[1]").method == "exact (variable elimination)"
    g = cn.HMM(2, "gaussian", startprob=[0.5, 0.5], transmat=[[0.9, 0.1], [0.1, 0.9]], means=[[0.0], [3.0]],
               covars=[[1.0], [1.0]]).to_model(3)
    assert chain_shape(g) is not None
    assert chain_shape(g.do({"X[1]": cn.shift(1.0)})) is None
