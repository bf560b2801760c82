"""Poisson and Gaussian-mixture emissions: hmmlearn's PoissonHMM / GMMHMM as oracles, EM monotone, saving."""

import logging

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import causalnet as cn
from causalnet.errors import EvidenceError, ModelError, ShapeError

hl = pytest.importorskip("hmmlearn.hmm")
logging.getLogger("hmmlearn").setLevel(logging.ERROR)

K, M, D = 3, 2, 2
COVS = ["spherical", "diag", "full", "tied"]


def _chain(rng):
    return dict(startprob=rng.dirichlet(np.ones(K)), transmat=rng.dirichlet(np.ones(K) * 2, size=K))


def _poisson(rng):
    return dict(**_chain(rng), lambdas=rng.uniform(0.5, 8.0, size=(K, D)))


def _gmm(rng, cov):
    Q = rng.normal(size=(K, M, D, D)) * 0.5
    full = Q @ np.swapaxes(Q, -1, -2) + 0.5 * np.eye(D)
    covars = {"spherical": rng.uniform(0.5, 2.0, size=(K, M)), "diag": rng.uniform(0.5, 2.0, size=(K, M, D)),
              "full": full, "tied": full[:, 0]}[cov]
    return dict(**_chain(rng), weights=rng.dirichlet(np.ones(M), size=K), means=rng.normal(size=(K, M, D)) * 3,
                covars=covars)


def _same_inference(m, h, X, lengths):
    assert_allclose(m.score(X, lengths), h.score(X, lengths), rtol=1e-10, atol=0)
    assert_allclose(m.predict_proba(X, lengths), h.predict_proba(X, lengths), rtol=0, atol=1e-10)
    lv, z = m.decode(X, lengths)
    lv_h, z_h = h.decode(X, lengths)
    assert_allclose(lv, lv_h, rtol=1e-10, atol=0)
    assert_array_equal(z, z_h)


@pytest.mark.parametrize("impl", ["log", "scaling"])
def test_poisson_matches_hmmlearn(rng, impl):
    p = _poisson(rng)
    lengths = [30, 1, 45]
    X = rng.poisson(4.0, size=(sum(lengths), D))
    m = cn.HMM(K, "poisson", **p)
    h = hl.PoissonHMM(K, implementation=impl, init_params="")
    h.startprob_, h.transmat_, h.lambdas_ = p["startprob"], p["transmat"], p["lambdas"]
    _same_inference(m, h, X, lengths)
    assert m.n_features == D
    # one EM step from the same start (no priors): the same parameters
    h1 = hl.PoissonHMM(K, implementation=impl, init_params="", n_iter=1, tol=-np.inf)
    h1.startprob_, h1.transmat_, h1.lambdas_ = p["startprob"], p["transmat"], p["lambdas"]
    h1.fit(X, lengths)
    m1 = cn.HMM(K, "poisson", **p, n_iter=1, tol=-np.inf).fit(X, lengths)
    for name in ("startprob_", "transmat_", "lambdas_"):
        assert_allclose(getattr(m1, name), getattr(h1, name), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("cov", COVS)
def test_gmm_matches_hmmlearn(rng, cov):
    p = _gmm(rng, cov)
    lengths = [25, 40]
    X = rng.normal(size=(sum(lengths), D)) * 3
    m = cn.HMM(K, "gmm", n_mix=M, covariance_type=cov, **p)
    h = hl.GMMHMM(K, n_mix=M, covariance_type=cov, init_params="")
    h.startprob_, h.transmat_, h.weights_, h.means_, h.covars_ = (
        p["startprob"], p["transmat"], p["weights"], p["means"], p["covars"])
    _same_inference(m, h, X, lengths)
    assert_array_equal(m.covars_, p["covars"])  # a mixture's covars_ is the stored form, as GMMHMM's
    assert m.n_features == D and m.n_mix == M


@pytest.mark.parametrize("cov", COVS)
def test_gmm_em_never_decreases_the_likelihood(rng, cov):
    true = cn.HMM(K, "gmm", n_mix=M, covariance_type=cov, **_gmm(rng, cov))
    X, _ = true.sample(400, seed=1)
    m = cn.HMM(K, "gmm", n_mix=M, covariance_type=cov, n_iter=15, tol=-np.inf, seed=2).fit(X)
    assert len(m.history_) == 15
    assert np.all(np.diff(m.history_) > -1e-8 * np.abs(m.history_[1:]))
    assert m.weights_.shape == (K, M) and m.means_.shape == (K, M, D)
    assert m.covars_.shape == {"spherical": (K, M), "diag": (K, M, D), "full": (K, M, D, D), "tied": (K, D, D)}[cov]
    assert np.isfinite(m.score(X))


def test_poisson_em_never_decreases_and_recovers_rates(rng):
    p = _poisson(rng)
    p["transmat"] = np.full((K, K), 0.05) + 0.85 * np.eye(K)
    p["lambdas"] = np.array([[1.0, 10.0], [5.0, 5.0], [12.0, 1.0]])
    X, _ = cn.HMM(K, "poisson", **p).sample(3000, seed=3)
    m = cn.HMM(K, "poisson", n_iter=40, tol=-np.inf, seed=0).fit(X)
    assert np.all(np.diff(m.history_) > -1e-8 * np.abs(m.history_[1:]))
    got = m.lambdas_[np.argsort(m.lambdas_[:, 0])]
    assert_allclose(got, p["lambdas"], rtol=0.15)


@pytest.mark.parametrize("kind", ["poisson", "gmm", "gaussian-tied", "gaussian-spherical"])
def test_saving_round_trip_is_exact(rng, tmp_path, kind):
    if kind == "poisson":
        m = cn.HMM(K, "poisson", **_poisson(rng))
    elif kind == "gmm":
        m = cn.HMM(K, "gmm", n_mix=M, covariance_type="full", **_gmm(rng, "full"))
    else:
        cov = kind.split("-")[1]
        Q = rng.normal(size=(D, D))
        cv = Q @ Q.T + np.eye(D) if cov == "tied" else rng.uniform(0.5, 2, size=K)
        m = cn.HMM(K, "gaussian", covariance_type=cov, **_chain(rng), means=rng.normal(size=(K, D)), covars=cv)
    X, _ = m.sample(60, seed=0)
    m.set_params(n_iter=2).fit(X)
    m.save(tmp_path / "m.json")
    back = cn.HMM.load(tmp_path / "m.json")
    for name in ("startprob_", "transmat_", "_covars_", "lambdas_", "weights_", "means_"):
        if name in m.__dict__:
            assert_array_equal(back.__dict__[name], m.__dict__[name])
    assert back.score(X) == m.score(X)


def test_causal_side_of_new_kinds(rng):
    m = cn.HMM(K, "poisson", **_poisson(rng))
    X, _ = m.sample(5, seed=0)
    post = m.query("Z[2]", evidence=X)  # hidden states given counts: the chain engine
    assert_allclose(post.probs, m.predict_proba(X)[2], rtol=1e-12)
    with pytest.raises(ModelError, match="not available for poisson"):
        m.query("X[7]", evidence=X)
    g = cn.HMM(K, "gmm", n_mix=M, **_gmm(rng, "diag"))
    with pytest.raises(ModelError, match="counterfactual .* not available for gmm"):
        g.counterfactual("X[1]", evidence=g.sample(3, seed=0)[0], do={"Z[0]": 1})
    # the Gaussian kinds unroll whatever the covariance type
    t = cn.HMM(K, "gaussian", covariance_type="tied", **_chain(rng), means=rng.normal(size=(K, D)), covars=np.eye(D))
    assert "X[1]" in t.to_model(2).dag.nodes


def test_bad_parameters_and_observations(rng):
    p = _poisson(rng)
    with pytest.raises(ModelError, match="state 1, count 0 has rate -1.0"):
        cn.HMM(K, "poisson", **{**p, "lambdas": np.array([[1.0, 1.0], [-1.0, 1.0], [1.0, 1.0]])})
    with pytest.raises(EvidenceError, match="non-negative integer counts; row 1, column 0 is 1.5"):
        cn.HMM(K, "poisson", **p).score(np.array([[1, 2], [1.5, 2]]))
    with pytest.raises(ShapeError, match="n_features is 3"):
        cn.HMM(K, "poisson", n_features=3, **p)
    g = _gmm(rng, "diag")
    with pytest.raises(ShapeError, match=r"covars_ \(diag, n_mix=2\) must have shape \(3, 2, 2\)"):
        cn.HMM(K, "gmm", n_mix=M, **{**g, "covars": g["covars"][:, :, :1]})
    with pytest.raises(ModelError, match="weights_ row 0 sums to"):
        cn.HMM(K, "gmm", n_mix=M, **{**g, "weights": np.ones((K, M))})
    with pytest.raises(ModelError, match="lambdas is not a parameter of gaussian"):
        cn.HMM(K, "gaussian", lambdas=p["lambdas"])


@pytest.mark.parametrize("kind", ["poisson", "gmm"])
def test_unrolled_poisson_and_gmm_sample_their_emission_law(kind, rng, seed):
    # the unrolled node draws by inverse CDF from uniforms; Monte Carlo against the law's mean, and its
    # log_prob against the emission's own density
    m = cn.HMM(K, "poisson", **_poisson(rng)) if kind == "poisson" else cn.HMM(K, "gmm", n_mix=M, **_gmm(rng, "diag"))
    model = m.to_model(2)
    s = model.sample(40_000, seed=seed)
    x, z = np.asarray(s["X[0]"]).reshape(40_000, -1), np.asarray(s["Z[0]"])
    for k in range(K):
        rows = x[z == k]
        want = m.lambdas_[k] if kind == "poisson" else m.weights_[k] @ m.means_[k]
        se = rows.std(axis=0) / np.sqrt(len(rows))
        assert np.all(np.abs(rows.mean(axis=0) - want) < 5 * se + 1e-12)
    lp = model.mechanisms["X[0]"].log_prob("X[0]", x[:50], {"Z[0]": z[:50]}, model.specs["X[0]"])
    assert_allclose(lp, m.log_emission(x[:50])[np.arange(50), z[:50]], rtol=1e-12)
    # the chain engine answers queries on it through the front door, checking the kind's own domain
    if kind == "poisson":
        with pytest.raises(EvidenceError, match="non-negative integer counts"):
            m.query("Z[1]", evidence=x[:2] + 0.5)
    post = m.query("Z[1]", evidence=x[:2])
    assert post.method == "exact (HMM chain forward-backward)"
    assert_allclose(post.probs, m.predict_proba(x[:2])[1], rtol=1e-10)
