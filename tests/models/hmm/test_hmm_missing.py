"""HMM with missing observations (NaN rows) and partially labelled states, against brute-force enumeration and hmmlearn."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn

START = np.array([0.6, 0.4])
TRANS = np.array([[0.7, 0.3], [0.2, 0.8]])
EMIS = np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])


def _hmm(**kw):
    return cn.HMM(2, "categorical", n_symbols=3, startprob=START, transmat=TRANS, emissionprob=EMIS, **kw)


def brute(X, lengths, labels=None):
    """log p, posteriors, best paths and EM-updated (start, trans, emission) by enumerating every path."""
    K, S = 2, 3
    out_ll, out_post, out_best = 0.0, [], []
    cs, ct, ce = np.zeros(K), np.zeros((K, K)), np.zeros((K, S))
    offset = 0
    for L in lengths:
        x = X[offset:offset + L]
        lab = None if labels is None else labels[offset:offset + L]
        offset += L
        total, post, best = 0.0, np.zeros((L, K)), (-1.0, None)
        es, et, ee = np.zeros(K), np.zeros((K, K)), np.zeros((K, S))
        for path in itertools.product(range(K), repeat=L):
            if lab is not None and any(a >= 0 and a != z for a, z in zip(lab, path)):
                continue
            p = START[path[0]] * np.prod([TRANS[path[t - 1], path[t]] for t in range(1, L)])
            p *= np.prod([EMIS[path[t], int(x[t])] for t in range(L) if not np.isnan(x[t])])
            total += p
            es[path[0]] += p
            for t in range(L):
                post[t, path[t]] += p
                if not np.isnan(x[t]):
                    ee[path[t], int(x[t])] += p
                if t:
                    et[path[t - 1], path[t]] += p
            if p > best[0]:
                best = (p, path)
        out_ll += np.log(total)
        out_post.append(post / total)
        out_best.append(best[1])
        cs += es / total
        ct += et / total
        ce += ee / total
    return (out_ll, np.concatenate(out_post), np.concatenate(out_best),
            (cs / cs.sum(), ct / ct.sum(1, keepdims=True), ce / ce.sum(1, keepdims=True)))


X = np.array([0, np.nan, 2, 1, np.nan, 0, np.nan, np.nan, 2])
LENGTHS = [5, 4]


def test_score_posteriors_and_paths_with_missing_rows_equal_brute_force():
    ll, post, best, _ = brute(X, LENGTHS)
    h = _hmm()
    assert_allclose(h.score(X, LENGTHS), ll, rtol=0, atol=1e-12)
    assert_allclose(h.predict_proba(X, LENGTHS), post, rtol=0, atol=1e-12)
    assert (h.predict(X, LENGTHS) == best).all()
    assert (h.decode(X, LENGTHS, algorithm="map")[1] == post.argmax(1)).all()
    assert_allclose(h.log_likelihood([X[:5], X[5:]]), [brute(X[:5], [5])[0], brute(X[5:], [4])[0]], atol=1e-12)


def test_one_em_step_with_missing_rows_equals_brute_force_expected_counts():
    _, _, _, (s, t, e) = brute(X, LENGTHS)
    h = _hmm(init_params="", n_iter=1).fit(X.reshape(-1, 1), LENGTHS)
    assert_allclose(h.startprob_, s, rtol=0, atol=1e-12)
    assert_allclose(h.transmat_, t, rtol=0, atol=1e-12)
    assert_allclose(h.emissionprob_, e, rtol=0, atol=1e-12)


def test_partially_labelled_states_clamp_the_posterior():
    labels = np.array([0, -1, -1, 1, -1, -1, 1, -1, -1])
    ll, _, _, (s, t, e) = brute(X, LENGTHS, labels)
    h = _hmm(init_params="", n_iter=1).fit(X.reshape(-1, 1), LENGTHS, states=labels)
    assert_allclose(h.transmat_, t, rtol=0, atol=1e-12)
    assert_allclose(h.emissionprob_, e, rtol=0, atol=1e-12)
    assert_allclose(h.startprob_, s, rtol=0, atol=1e-12)
    assert_allclose(h.history_[0], ll, rtol=0, atol=1e-12)            # log p(X, known states)
    full = _hmm(init_params="", n_iter=5, tol=-np.inf).fit(X.reshape(-1, 1), LENGTHS, states=labels)
    assert (np.diff(full.history_) >= -1e-10).all()


def test_trailing_missing_rows_equal_hmmlearn_on_the_observed_part():
    hmmlearn = pytest.importorskip("hmmlearn.hmm")
    rng = np.random.default_rng(0)
    Xg = rng.normal(size=(30, 2)) + np.repeat([[0, 0], [3, 3]], 15, axis=0)
    ours = cn.HMM(2, "gaussian", covariance_type="diag", startprob=START, transmat=TRANS,
                  means=[[0.0, 0.0], [3.0, 3.0]], covars=[[1.0, 1.5], [0.8, 1.0]])
    ref = hmmlearn.GaussianHMM(2, covariance_type="diag", init_params="")
    ref.startprob_, ref.transmat_, ref.means_ = START, TRANS, ours.means_
    ref.covars_ = np.array([[1.0, 1.5], [0.8, 1.0]])
    gap = np.vstack([Xg, np.full((6, 2), np.nan)])
    assert_allclose(ours.score(gap), ref.score(Xg), rtol=1e-10)
    assert (ours.predict(gap)[:30] == ref.predict(Xg)).all()
    # a middle gap: the posterior there is the chain's prediction from both sides (brute force over 2 steps)
    mid = Xg.copy()
    mid[10] = np.nan
    lik = np.exp(ours.log_emission(Xg[None])[0])                         # (30, K)
    lik[10] = 1.0
    alpha = START * lik[0]
    for t in range(1, 30):
        alpha = (alpha @ TRANS) * lik[t]
    assert_allclose(ours.score(mid), np.log(alpha.sum()), rtol=1e-10)


def test_missing_data_errors():
    h = _hmm()
    with pytest.raises(cn.EvidenceError, match="row 0 is partly NaN"):
        cn.HMM(2, "gaussian", covariance_type="diag", startprob=START, transmat=TRANS, means=[[0.0, 0.0], [1.0, 1.0]],
               covars=[[1.0, 1.0], [1.0, 1.0]]).score(np.array([[0.0, np.nan], [1.0, 1.0]]))
    with pytest.raises(cn.EvidenceError, match="every observation is missing"):
        h.score(np.array([np.nan, np.nan]))
    with pytest.raises(cn.ShapeError, match=r"states must have one label per observation, shape \(9,\)"):
        _hmm(init_params="").fit(X.reshape(-1, 1), LENGTHS, states=[0, 1])
    with pytest.raises(cn.EvidenceError, match="outside -1 .. 1"):
        _hmm(init_params="").fit(X.reshape(-1, 1), LENGTHS, states=[5] * 9)
