"""HMM: hmmlearn as the oracle (likelihood, posteriors, Viterbi, Baum-Welch), sampling, errors."""

import logging

import numpy as np
import pytest
from hmmlearn import hmm as hl
from numpy.testing import assert_allclose, assert_array_equal

import causalnet as cn
from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference.chain import forward_backward, log_partition
from causalnet.models.hmm import HMM

logging.getLogger("hmmlearn").setLevel(logging.ERROR)

K, S, D = 4, 6, 3


@pytest.fixture
def lengths(rng):
    return rng.integers(1, 40, size=12)


@pytest.fixture
def cat_params(rng):
    return dict(
        startprob=rng.dirichlet(np.ones(K)),
        transmat=rng.dirichlet(np.ones(K), size=K),
        emissionprob=rng.dirichlet(np.ones(S), size=K),
    )


def _gauss_params(rng, cov):
    means = rng.normal(size=(K, D)) * 2
    Q = rng.normal(size=(K, D, D))
    covars = {
        "spherical": lambda: rng.uniform(0.5, 2.0, size=K),
        "diag": lambda: rng.uniform(0.5, 2.0, size=(K, D)),
        "full": lambda: Q @ Q.transpose(0, 2, 1) + np.eye(D),
        "tied": lambda: Q[0] @ Q[0].T + np.eye(D),
    }[cov]()
    return dict(
        startprob=rng.dirichlet(np.ones(K)),
        transmat=rng.dirichlet(np.ones(K), size=K),
        means=means,
        covars=covars,
    )


def _path_logprob(p, X, lengths, z):
    """log p(x, z) of each sequence for categorical parameters ``p``."""
    out, start = [], 0
    for L in lengths:
        x, y = X[start : start + L], z[start : start + L]
        s = np.log(p["startprob"][y[0]]) + np.log(p["emissionprob"][y, x]).sum()
        out.append(s + np.log(p["transmat"][y[:-1], y[1:]]).sum())
        start += L
    return np.array(out)


def _assert_same_viterbi(p, X, lengths, z, z_h):
    # categorical data have exact ties (permuted runs of equal symbols score the same);
    # hmmlearn breaks them differently, so compare each path's score, and the paths elsewhere
    a, b = _path_logprob(p, X, lengths, z), _path_logprob(p, X, lengths, z_h)
    assert_allclose(a, b, rtol=1e-13, atol=0)
    seq = np.repeat(np.arange(len(lengths)), lengths)
    differ = np.unique(seq[z != z_h])
    assert len(differ) <= max(1, len(lengths) // 3)


def _hl_categorical(p, impl, **kw):
    h = hl.CategoricalHMM(K, n_features=S, implementation=impl, init_params="", **kw)
    h.startprob_, h.transmat_, h.emissionprob_ = (p["startprob"].copy(), p["transmat"].copy(), p["emissionprob"].copy())
    return h


def _hl_gaussian(p, cov, impl, **kw):
    h = hl.GaussianHMM(K, covariance_type=cov, implementation=impl, init_params="", **kw)
    h.startprob_, h.transmat_ = p["startprob"].copy(), p["transmat"].copy()
    h.means_, h.covars_ = p["means"].copy(), p["covars"].copy()
    return h


# ---------------------------------------------------------------------------
# inference against hmmlearn
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["log", "scaling"])
def test_categorical_inference_matches_hmmlearn(rng, lengths, cat_params, impl):
    X = rng.integers(0, S, size=lengths.sum())
    h = _hl_categorical(cat_params, impl)
    m = HMM(K, "categorical", **cat_params)
    assert_allclose(m.score(X, lengths), h.score(X[:, None], lengths), rtol=1e-12, atol=0)
    lp, post = m.score_samples(X[:, None], lengths)  # (N, 1) input too
    lp_h, post_h = h.score_samples(X[:, None], lengths)
    assert_allclose(lp, lp_h, rtol=1e-12, atol=0)
    assert_allclose(post, post_h, rtol=0, atol=1e-12)
    assert_allclose(m.predict_proba(X, lengths), post_h, rtol=0, atol=1e-12)
    lv, z = m.decode(X, lengths)
    lv_h, z_h = h.decode(X[:, None], lengths)
    assert_allclose(lv, lv_h, rtol=1e-12, atol=0)
    _assert_same_viterbi(cat_params, X, lengths, z, z_h)
    assert_allclose(_path_logprob(cat_params, X, lengths, z).sum(), lv, rtol=1e-12)
    assert_array_equal(m.predict(X, lengths), z)
    lm, zm = m.decode(X, lengths, algorithm="map")
    lm_h, zm_h = h.decode(X[:, None], lengths, algorithm="map")
    assert_allclose(lm, lm_h, rtol=1e-12, atol=0)
    assert_array_equal(zm, zm_h)


COVS = ["spherical", "diag", "full", "tied"]


@pytest.mark.parametrize("cov", COVS)
@pytest.mark.parametrize("impl", ["log", "scaling"])
def test_gaussian_inference_matches_hmmlearn(rng, lengths, cov, impl):
    p = _gauss_params(rng, cov)
    X = rng.normal(size=(lengths.sum(), D)) * 2
    h = _hl_gaussian(p, cov, impl)
    m = HMM(K, "gaussian", covariance_type=cov, **p)
    assert_allclose(m.score(X, lengths), h.score(X, lengths), rtol=1e-12, atol=0)
    assert_allclose(m.predict_proba(X, lengths), h.predict_proba(X, lengths), rtol=0, atol=1e-11)
    lv, z = m.decode(X, lengths)
    lv_h, z_h = h.decode(X, lengths)
    assert_allclose(lv, lv_h, rtol=1e-12, atol=0)
    assert_array_equal(z, z_h)
    # hmmlearn's covars_ is full (K, d, d) whatever the type; _covars_ the stored form
    assert_allclose(m.covars_, h.covars_, rtol=0, atol=0)
    assert_allclose(m._covars_, h._covars_, rtol=0, atol=0)
    assert m.n_features == h.n_features == D


def test_log_emission_helper(rng, cat_params):
    m = HMM(K, **cat_params)
    Xp = rng.integers(0, S, size=(3, 5))
    le = m.log_emission(Xp)
    assert le.shape == (3, 5, K)
    assert_allclose(le, np.log(cat_params["emissionprob"].T)[Xp], rtol=1e-15)
    # the HMM is the chain with unary = log emission (+ log start at t=0) and pairwise = log transmat
    u = le.copy()
    u[:, 0] += np.log(cat_params["startprob"])
    lz = log_partition(u, np.log(cat_params["transmat"]))
    assert_allclose(lz, [m.score(x) for x in Xp], rtol=1e-12)
    g = HMM(K, "gaussian", covariance_type="full", **_gauss_params(rng, "full"))
    Xg = rng.normal(size=(2, 4, D))
    assert_allclose(g.log_emission(Xg)[1, 2], g.emission_model.logpdf(g.checked_params(), Xg[1, 2][None])[0], rtol=1e-14)


def test_one_long_sequence_and_single_steps(rng, cat_params):
    h = _hl_categorical(cat_params, "scaling")
    m = HMM(K, **cat_params)
    X = rng.integers(0, S, size=3000)
    assert_allclose(m.score(X), h.score(X[:, None]), rtol=1e-12)
    ones = np.ones(7, dtype=int)
    X1 = X[:7]
    assert_allclose(m.score(X1, ones), h.score(X1[:, None], ones), rtol=1e-12)
    assert_array_equal(m.predict(X1, ones), h.predict(X1[:, None], ones))  # no ties at length 1
    _assert_same_viterbi(cat_params, X, [3000], m.predict(X), h.predict(X[:, None]))


# ---------------------------------------------------------------------------
# Baum-Welch against hmmlearn, same start
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["log", "scaling"])
def test_categorical_baum_welch_trajectory(rng, lengths, cat_params, impl):
    X = rng.integers(0, S, size=lengths.sum())
    h = _hl_categorical(cat_params, impl, n_iter=15, tol=-np.inf).fit(X[:, None], lengths)
    m = HMM(K, **cat_params, n_iter=15, tol=-np.inf).fit(X, lengths)
    assert len(m.history_) == 15 and m.monitor_.iter == 15
    assert_allclose(m.history_, list(h.monitor_.history), rtol=1e-8, atol=0)
    for name in ("startprob_", "transmat_", "emissionprob_"):
        assert_allclose(getattr(m, name), getattr(h, name), rtol=1e-8, atol=1e-12)
    assert np.all(np.diff(m.history_) > -1e-8)  # EM never decreases the likelihood


@pytest.mark.parametrize("cov", COVS)
def test_gaussian_baum_welch_trajectory(rng, lengths, cov):
    p = _gauss_params(rng, cov)
    X = rng.normal(size=(lengths.sum(), D)) * 2 + np.arange(lengths.sum())[:, None] % 3
    h = _hl_gaussian(p, cov, "log", n_iter=12, tol=-np.inf).fit(X, lengths)
    m = HMM(K, "gaussian", covariance_type=cov, **p, n_iter=12, tol=-np.inf).fit(X, lengths)
    assert_allclose(m.history_, list(h.monitor_.history), rtol=1e-8, atol=0)
    assert_allclose(m.startprob_, h.startprob_, rtol=1e-8, atol=1e-12)
    assert_allclose(m.transmat_, h.transmat_, rtol=1e-8, atol=1e-12)
    assert_allclose(m.means_, h.means_, rtol=1e-8, atol=1e-12)
    if cov == "spherical":  # hmmlearn stores the fitted spherical variances tiled to (K, d)
        assert_allclose(np.broadcast_to(m._covars_[:, None], (K, D)), h._covars_, rtol=1e-8, atol=1e-12)
        assert_allclose(m.covars_, m._covars_[:, None, None] * np.eye(D), rtol=0, atol=0)
    else:
        assert_allclose(m._covars_, h._covars_, rtol=1e-8, atol=1e-12)
        assert_allclose(m.covars_, h.covars_, rtol=1e-8, atol=1e-12)


def test_trajectory_each_iteration_and_tol(rng, lengths, cat_params):
    # every iteration's log-likelihood equals hmmlearn's after the same number of iterations
    X = rng.integers(0, S, size=lengths.sum())
    m = HMM(K, **cat_params, n_iter=6, tol=-np.inf).fit(X, lengths)
    for it in range(1, 6):
        h = _hl_categorical(cat_params, "log", n_iter=it, tol=-np.inf).fit(X[:, None], lengths)
        assert_allclose(m.history_[it - 1], h.monitor_.history[-1], rtol=1e-10, atol=0)
    # tol: stop at the first gain below tol, as hmmlearn
    h = _hl_categorical(cat_params, "log", n_iter=200, tol=0.5).fit(X[:, None], lengths)
    m = HMM(K, **cat_params, n_iter=200, tol=0.5).fit(X, lengths)
    assert m.monitor_.iter == h.monitor_.iter and m.monitor_.converged
    assert_allclose(m.transmat_, h.transmat_, rtol=1e-8)


def test_priors_and_params_match_hmmlearn(rng, lengths, cat_params):
    X = rng.integers(0, S, size=lengths.sum())
    kw = dict(startprob_prior=2.0, transmat_prior=1.5, emissionprob_prior=3.0)
    h = _hl_categorical(cat_params, "log", n_iter=5, tol=-np.inf, **kw).fit(X[:, None], lengths)
    m = HMM(K, **cat_params, n_iter=5, tol=-np.inf, **kw).fit(X, lengths)
    assert_allclose(m.emissionprob_, h.emissionprob_, rtol=1e-8)
    assert_allclose(m.transmat_, h.transmat_, rtol=1e-8)
    # params="e": start and transitions stay fixed
    m = HMM(K, **cat_params, n_iter=3, params="e").fit(X, lengths)
    assert_array_equal(m.startprob_, cat_params["startprob"])
    assert_array_equal(m.transmat_, cat_params["transmat"])
    assert not np.allclose(m.emissionprob_, cat_params["emissionprob"])


def test_structural_zeros_are_kept(rng, lengths):
    # a left-to-right model: zeros in startprob/transmat stay zero under EM (as hmmlearn)
    start = np.array([1.0, 0.0, 0.0, 0.0])
    trans = np.triu(rng.dirichlet(np.ones(K), size=K))
    trans /= trans.sum(1, keepdims=True)
    emis = rng.dirichlet(np.ones(S), size=K)
    X = rng.integers(0, S, size=lengths.sum())
    m = HMM(K, startprob=start, transmat=trans, emissionprob=emis, n_iter=5, tol=-np.inf).fit(X, lengths)
    p = dict(startprob=start, transmat=trans, emissionprob=emis)
    h = _hl_categorical(p, "log", n_iter=5, tol=-np.inf).fit(X[:, None], lengths)
    assert_array_equal(m.transmat_ == 0, trans == 0)
    assert_allclose(m.transmat_, h.transmat_, rtol=1e-8, atol=1e-14)


# ---------------------------------------------------------------------------
# fitting from scratch, restarts, sampling
# ---------------------------------------------------------------------------


def test_sample_shapes_seed_and_frequencies(cat_params, seed):
    m = HMM(K, **cat_params)
    X, Z = m.sample(20000, seed=seed)
    assert X.shape == (20000, 1) and Z.shape == (20000,)
    X2, Z2 = m.sample(20000, seed=seed)
    assert_array_equal(X, X2)
    assert_array_equal(Z, Z2)
    trans = np.zeros((K, K))
    np.add.at(trans, (Z[:-1], Z[1:]), 1)
    emp = trans / trans.sum(1, keepdims=True)
    assert_allclose(emp, cat_params["transmat"], rtol=0, atol=0.03)
    emis = np.array([np.bincount(X[Z == k, 0], minlength=S) / (Z == k).sum() for k in range(K)])
    assert_allclose(emis, cat_params["emissionprob"], rtol=0, atol=0.03)


def test_gaussian_sample(rng, seed):
    for cov in ("diag", "full"):
        p = _gauss_params(rng, cov)
        m = HMM(K, "gaussian", covariance_type=cov, **p)
        X, Z = m.sample(20000, seed=seed)
        assert X.shape == (20000, D)
        for k in range(K):
            sel = X[Z == k]
            assert_allclose(sel.mean(0), p["means"][k], rtol=0, atol=0.15)
            c = np.cov(sel.T)
            ref = np.diag(p["covars"][k]) if cov == "diag" else p["covars"][k]
            assert_allclose(c, ref, rtol=0, atol=0.25 * np.abs(ref).max())


def test_fit_from_scratch_recovers_model(seed):
    true = HMM(
        2,
        startprob=[0.5, 0.5],
        transmat=[[0.95, 0.05], [0.1, 0.9]],
        emissionprob=[[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]],
    )
    Xs, lens = [], []
    for i in range(20):
        x, _ = true.sample(200, seed=seed + i)
        Xs.append(x)
        lens.append(200)
    X = np.concatenate(Xs)
    m = HMM(2, n_iter=200, tol=1e-6, n_init=3, seed=seed).fit(X, lens)
    order = np.argsort(m.emissionprob_[:, 0])[::-1]  # label switching
    assert_allclose(m.transmat_[np.ix_(order, order)], true.transmat_, atol=0.05)
    assert_allclose(m.emissionprob_[order], true.emissionprob_, atol=0.05)
    assert m.monitor_.converged and m.history_ == list(m.monitor_.history)
    assert np.all(np.diff(m.history_) > -1e-8)
    assert m.n_symbols == 3
    # same seed, same fit
    m2 = HMM(2, n_iter=200, tol=1e-6, n_init=3, seed=seed).fit(X, lens)
    assert_array_equal(m.transmat_, m2.transmat_)


def test_gaussian_fit_from_scratch(rng, seed):
    true = HMM(
        2,
        "gaussian",
        startprob=[0.5, 0.5],
        transmat=[[0.9, 0.1], [0.2, 0.8]],
        means=[[0.0, 0.0], [4.0, 4.0]],
        covars=[[1.0, 1.0], [1.0, 1.0]],
    )
    X, _ = true.sample(3000, seed=seed)
    for cov in ("diag", "full"):
        m = HMM(2, "gaussian", covariance_type=cov, n_iter=100, seed=seed).fit(X)
        order = np.argsort(m.means_[:, 0])
        assert_allclose(m.means_[order], true.means_, atol=0.15)
        assert_allclose(m.transmat_[np.ix_(order, order)], true.transmat_, atol=0.05)


def test_progress_bar_optional(monkeypatch, rng, cat_params):
    X = rng.integers(0, S, size=50)
    HMM(K, **cat_params, n_iter=2, progress=True).fit(X)
    import sys

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails -> no bar
    m = HMM(K, **cat_params, n_iter=2, progress=True).fit(X)
    assert len(m.history_) == 2


def test_matches_chain_engine(rng, cat_params, lengths):
    # posteriors from packing == the engine on an explicitly packed batch
    m = HMM(K, **cat_params)
    X = rng.integers(0, S, size=lengths.sum())
    n, T = len(lengths), lengths.max()
    Xp = np.zeros((n, T), dtype=int)
    mask = np.arange(T)[None, :] < lengths[:, None]
    Xp[mask] = X
    u = m.log_emission(Xp)
    u[:, 0] += np.log(m.startprob_)
    post = forward_backward(u, np.log(m.transmat_), mask)
    assert_allclose(m.predict_proba(X, lengths), post.marginals[mask], rtol=0, atol=1e-12)
    assert_allclose(m.score(X, lengths), post.log_z.sum(), rtol=1e-12)


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def test_observation_errors(cat_params):
    m = HMM(K, **cat_params)
    with pytest.raises(EvidenceError, match=r"observation 6 at position 2 is outside the alphabet 0..5"):
        m.score([0, 1, 6])
    with pytest.raises(EvidenceError, match=r"observation -1 at position 0"):
        m.predict([-1, 1])
    with pytest.raises(EvidenceError, match=r"must be integers; got 1.5 at position 1"):
        m.score(np.array([0.0, 1.5]))
    with pytest.raises(ShapeError, match=r"\(n_samples,\) or \(n_samples, 1\)"):
        m.score(np.zeros((3, 2), dtype=int))
    with pytest.raises(ShapeError, match="lengths sum to 4 but X has 3 observations"):
        m.score([0, 1, 2], lengths=[2, 2])
    with pytest.raises(EvidenceError, match="sequence 1 has length 0"):
        m.score([0, 1, 2], lengths=[3, 0])
    with pytest.raises(EvidenceError, match="no observations"):
        m.score(np.array([], dtype=int))
    g = HMM(K, "gaussian", **_gauss_params(np.random.default_rng(0), "diag"))
    with pytest.raises(ShapeError, match=r"width 2 but the model has d=3"):
        g.score(np.zeros((4, 2)))
    with pytest.raises(EvidenceError, match=r"must be finite \(no NaN or inf\); row 1"):
        g.score(np.array([[0.0, 0, 0], [np.nan, 0, 0]]))


def test_parameter_errors(cat_params):
    p = dict(cat_params)
    bad = p["transmat"].copy()
    bad[2] *= 0.97
    with pytest.raises(ModelError, match=r"transmat_ row 2 sums to 0.97.*tolerance 1e-08"):
        HMM(K, **{**p, "transmat": bad})
    with pytest.raises(ModelError, match="startprob_ must sum to 1"):
        HMM(K, **{**p, "startprob": p["startprob"] + 1e-6})
    neg = p["emissionprob"].copy()
    neg[1, 0] = -0.1
    neg[1, 1] += 0.1
    with pytest.raises(ModelError, match=r"emissionprob_ must hold finite non-negative probabilities; got -0.1 at \(1, 0\)"):
        HMM(K, **{**p, "emissionprob": neg})
    with pytest.raises(ShapeError, match=r"transmat_ must have shape \(4, 4\)"):
        HMM(K, **{**p, "transmat": np.eye(3)})
    with pytest.raises(ShapeError, match="n_symbols is 7"):
        HMM(K, n_symbols=7, **p)
    # attributes set after construction are validated on use, as hmmlearn
    m = HMM(K, **p)
    m.transmat_ = bad
    with pytest.raises(ModelError, match="row 2 sums to"):
        m.score([0, 1])
    with pytest.raises(ModelError, match="HMM has no startprob_; call fit"):
        HMM(K).predict([0, 1])
    with pytest.raises(ModelError, match="HMM has no emissionprob_"):
        HMM(K, startprob=p["startprob"], transmat=p["transmat"]).predict([0, 1])
    with pytest.raises(ModelError, match="n_states must be a positive integer"):
        HMM(0)
    with pytest.raises(ModelError, match="emission must be"):
        HMM(2, "weibull")
    with pytest.raises(ModelError, match="params must be a string of letters from 'ste'"):
        HMM(2, params="stmc")


def test_gaussian_parameter_errors(rng):
    p = _gauss_params(rng, "diag")
    cv = p["covars"].copy()
    cv[2, 1] = 0.0
    with pytest.raises(ModelError, match="state 2, dimension 1 has variance 0.0"):
        HMM(K, "gaussian", **{**p, "covars": cv})
    cv[2, 1] = -1.0
    with pytest.raises(ModelError, match="must be positive"):
        HMM(K, "gaussian", **{**p, "covars": cv})
    pf = _gauss_params(rng, "full")
    cvf = pf["covars"].copy()
    cvf[1] = -np.eye(D)
    with pytest.raises(ModelError, match="state 1 is not positive definite"):
        HMM(K, "gaussian", covariance_type="full", **{**pf, "covars": cvf})
    with pytest.raises(ShapeError, match=r"covars_ \(diag\) must have shape"):
        HMM(K, "gaussian", **{**p, "covars": pf["covars"]})
    with pytest.raises(ModelError, match="emissionprob is not a parameter of gaussian emissions"):
        HMM(K, "gaussian", emissionprob=np.ones((K, 2)) / 2)


def test_impossible_observation(cat_params):
    e = cat_params["emissionprob"].copy()
    e[:, 5] = 0.0
    e /= e.sum(1, keepdims=True)
    m = HMM(K, **{**cat_params, "emissionprob": e})
    assert m.score([0, 5, 1]) == -np.inf
    assert m.score([0, 5, 1, 2, 3], lengths=[3, 2]) == -np.inf
    with pytest.raises(EvidenceError, match=r"\[0\] has probability zero"):
        m.predict([0, 5, 1, 2, 3], lengths=[3, 2])
    with pytest.raises(EvidenceError, match="probability zero"):
        m.predict_proba([0, 5, 1])


# -- per-sequence log-likelihoods -------------------------------------------------------


@pytest.mark.parametrize("kind", ["categorical", "gaussian"])
def test_log_likelihood_per_sequence_matches_hmmlearn(kind, rng, lengths, cat_params):
    if kind == "categorical":
        ours = cn.HMM(K, "categorical", **cat_params)
        ref = hl.CategoricalHMM(K)
        ref.startprob_, ref.transmat_, ref.emissionprob_ = (cat_params[k] for k in ("startprob", "transmat",
                                                                                    "emissionprob"))
        X = rng.integers(0, S, size=int(lengths.sum()))
        col = X[:, None]
    else:
        p = _gauss_params(rng, "full")
        ours = cn.HMM(K, "gaussian", covariance_type="full", **p)
        ref = hl.GaussianHMM(K, covariance_type="full")
        ref.startprob_, ref.transmat_, ref.means_, ref.covars_ = p["startprob"], p["transmat"], p["means"], p["covars"]
        X = rng.normal(size=(int(lengths.sum()), D)) * 2
        col = X
    got = ours.log_likelihood(X, lengths)
    bounds = np.cumsum(lengths)[:-1]
    want = [ref.score(x) for x in np.split(col, bounds)]            # hmmlearn's score, one sequence at a time
    assert got.shape == (len(lengths),)
    assert_allclose(got, want, rtol=1e-10, atol=1e-9)
    assert_allclose(got.sum(), ours.score(X, lengths), rtol=1e-12)
    # a (n, T[, d]) batch of full-length sequences, without lengths
    T = 7
    batch = X[: 3 * T].reshape(3, T, *X.shape[1:])
    want = [ref.score(x if kind == "gaussian" else x[:, None]) for x in batch]
    assert_allclose(ours.log_likelihood(batch), want, rtol=1e-10, atol=1e-9)
    # one sequence: one value
    assert ours.log_likelihood(batch[0]).shape == (1,)


def test_log_likelihood_of_an_impossible_sequence_is_minus_inf():
    m = cn.HMM(2, "categorical", startprob=[1.0, 0.0], transmat=[[1.0, 0.0], [0.0, 1.0]],
               emissionprob=[[1.0, 0.0], [0.0, 1.0]])
    got = m.log_likelihood(np.array([[0, 0, 0], [0, 1, 0]]))
    assert got[0] == 0.0 and got[1] == -np.inf
