"""HMMs as causal models: the chain engine's do-queries and twin-chain counterfactuals
against the generic engines on the unrolled network."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import EvidenceError, ModelError, ShapeError
from causalnet.models.hmm import HMM
from causalnet.models.hmm import causal as hc


def random_hmm(rng, K=3, S=4):
    return HMM(K, "categorical", startprob=rng.dirichlet(np.ones(K)), transmat=rng.dirichlet(np.ones(K), size=K),
               emissionprob=rng.dirichlet(np.ones(S), size=K))


@pytest.mark.parametrize("trial", range(6))
def test_do_queries_match_unrolled_network(trial, seed):
    rng = np.random.default_rng(seed + trial)
    h = random_hmm(rng, K=int(rng.integers(2, 4)), S=3)
    T = int(rng.integers(2, 6))
    X = rng.integers(0, 3, size=T)
    m = hc.to_model(h, T)
    ev = {f"X[{t}]": int(x) for t, x in enumerate(X)}
    t0 = int(rng.integers(0, T))
    k = int(rng.integers(0, h.n_states))
    for tgt in [f"Z[{t}]" for t in range(T)]:
        a = hc.query(h, tgt, evidence=X, do={f"Z[{t0}]": k})
        b = m.query(tgt, evidence=ev, do={f"Z[{t0}]": k})
        assert_allclose(a.probs, b.probs, atol=1e-12)
    # predictive X beyond the observed part
    part = {f"X[{t}]": int(x) for t, x in enumerate(X[:-1])}
    a = hc.query(h, f"X[{T - 1}]", evidence=X[:-1], do={f"Z[{t0}]": k})
    b = m.query(f"X[{T - 1}]", evidence=part, do={f"Z[{t0}]": k})
    assert_allclose(a.probs, b.probs, atol=1e-12)


@pytest.mark.parametrize("trial", range(6))
def test_counterfactuals_match_unrolled_twin_network(trial, seed):
    rng = np.random.default_rng(100 + seed + trial)
    h = random_hmm(rng, K=int(rng.integers(2, 4)), S=3)
    T = int(rng.integers(2, 6))
    X = rng.integers(0, 3, size=T)
    m = hc.to_model(h, T)
    ev = {f"X[{t}]": int(x) for t, x in enumerate(X)}
    t0 = int(rng.integers(0, T))
    k = int(rng.integers(0, h.n_states))
    try:
        m.query("Z[0]", evidence=ev)
    except EvidenceError:
        return
    for tgt in [f"Z[{t}]" for t in range(T)] + [f"X[{t}]" for t in range(T)]:
        a = hc.counterfactual(h, tgt, evidence=X, do={f"Z[{t0}]": k})
        b = m.counterfactual(tgt, evidence=ev, do={f"Z[{t0}]": k})
        assert_allclose(a.probs, b.probs, atol=1e-12)
        assert a.scm == b.scm


def test_batched_sequences_equal_one_by_one(seed):
    rng = np.random.default_rng(seed)
    h = random_hmm(rng)
    X = rng.integers(0, 4, size=(5, 6))
    a = hc.query(h, "Z[3]", evidence=X, do={"Z[1]": 2})
    c = hc.counterfactual(h, "X[5]", evidence=X, do={"Z[2]": 0})
    assert a.batched and a.probs.shape == (5, 3)
    for i in range(5):
        assert_allclose(a.probs[i], hc.query(h, "Z[3]", evidence=X[i], do={"Z[1]": 2}).probs, atol=1e-13)
        assert_allclose(c.probs[i], hc.counterfactual(h, "X[5]", evidence=X[i], do={"Z[2]": 0}).probs, atol=1e-13)


def test_gaussian_counterfactual_matches_sampled_generic(seed):
    h = HMM(2, "gaussian", startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.4, 0.6]], means=[[0.0], [3.0]],
            covars=[[1.0], [2.0]])
    X = np.array([[0.1], [2.5], [3.3]])
    exact = hc.counterfactual(h, "X[2]", evidence=X, do={"Z[1]": 0})
    m = hc.to_model(h, 3)
    approx = m.counterfactual("X[2]", evidence={"X[0]": 0.1, "X[1]": 2.5, "X[2]": 3.3}, do={"Z[1]": 0},
                              seed=seed, n_samples=200_000)
    assert abs(exact.mean()[0] - approx.mean()) < 5 * approx.std_err() + 1e-3
    q = hc.query(h, "X[3]", evidence=X)
    assert q.weights.shape == (2,) and q.mean.shape == (1,)


def test_do_on_observation_and_errors():
    h = HMM(2, "categorical", startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.4, 0.6]],
            emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
    X = np.array([0, 1, 2])
    # setting X[2] makes it uninformative about Z: Z[2] | X[0:2] only
    a = hc.query(h, "Z[2]", evidence=X, do={"X[2]": 0})
    b = hc.query(h, "Z[2]", evidence=X[:2], T=3)
    assert_allclose(a.probs, b.probs, atol=1e-13)
    with pytest.raises(EvidenceError, match="'X\\[1\\]' has no state 5"):       # the request's one rule
        hc.query(h, "Z[0]", evidence=np.array([0, 5]))
    with pytest.raises(EvidenceError, match="both targets and evidence"):
        hc.query(h, "X[1]", evidence=X)
    with pytest.raises(EvidenceError, match="named 'Z\\[t\\]'"):
        hc.query(h, "Y[1]", evidence=X)
    with pytest.raises(EvidenceError, match="latent"):
        hc.query(h, "X[1]", evidence={"Z[0]": 1})
    with pytest.raises(ModelError, match="'Z\\[0\\]' has no state 7"):         # model.do's rule
        hc.query(h, "Z[1]", evidence=X, do={"Z[0]": 7})
    with pytest.raises(ShapeError):
        hc.query(h, "Z[1]", evidence=np.zeros((2, 2, 2), dtype=int))
    with pytest.raises(EvidenceError, match="needs do"):
        hc.counterfactual(h, "X[1]", evidence=X, do={})


def test_markov_property_on_unrolled_dag():
    h = HMM(2, "categorical", startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.4, 0.6]],
            emissionprob=[[0.5, 0.5], [0.1, 0.9]])
    g = hc.to_model(h, 6).dag
    assert g.d_separated("X[0]", "X[5]", given={"Z[3]"})
    assert not g.d_separated("X[0]", "X[5]", given={"X[3]"})
    assert g.latent == {f"Z[{t}]" for t in range(6)}
    fold, opts = hc.folded_dag()
    assert "cluster" in fold.to_dot(**opts)
