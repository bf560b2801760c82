"""hmmlearn and scikit-learn conventions of cn.HMM: names, input layouts, params protocol, saving, progress."""

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import causalnet as cn
from causalnet.errors import ModelError, ModelFileNotFoundError, ShapeError
from causalnet.inference.chain import compiled

hl = pytest.importorskip("hmmlearn.hmm")

START = [0.6, 0.4]
TRANS = [[0.7, 0.3], [0.4, 0.6]]
EMIS = [[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]]


def _ours(**kw):
    return cn.HMM(n_components=2, startprob=START, transmat=TRANS, emissionprob=EMIS, **kw)


def _theirs(**kw):
    h = hl.CategoricalHMM(n_components=2, **kw)
    h.startprob_, h.transmat_, h.emissionprob_ = np.array(START), np.array(TRANS), np.array(EMIS)
    return h


@pytest.fixture
def data(rng):
    X = rng.integers(0, 3, size=40)
    return X, [15, 25]


@pytest.mark.parametrize("backend", ["numba", "numpy"] if compiled.AVAILABLE else ["numpy"])
@pytest.mark.parametrize("algorithm", ["viterbi", "map"])
def test_names_and_algorithm_match_hmmlearn(data, algorithm, backend):
    X, L = data
    m, h = _ours(algorithm=algorithm), _theirs(algorithm=algorithm)
    with compiled.backend(backend):
        assert m.n_states == m.n_components == 2
        assert_allclose(m.score(X, L), h.score(X[:, None], L), rtol=1e-12)
        lp, z = m.decode(X, L)
        lp_h, z_h = h.decode(X[:, None], L)
        assert_allclose(lp, lp_h, rtol=1e-12)
        assert_array_equal(z, z_h)
        assert_array_equal(m.predict(X, L), h.predict(X[:, None], L))
        lp, post = m.score_samples(X, L)
        lp_h, post_h = h.score_samples(X[:, None], L)
        assert_allclose(post, post_h, rtol=0, atol=1e-12)
        assert_allclose(m.predict_proba(X, L), post_h, rtol=0, atol=1e-12)


def test_aliases_must_agree():
    assert cn.HMM(n_states=3, n_components=3).n_states == 3
    assert cn.HMM(random_state=5).seed == 5
    with pytest.raises(ModelError, match="n_components"):
        cn.HMM(n_states=3, n_components=4)
    with pytest.raises(ModelError, match="random_state"):
        cn.HMM(seed=1, random_state=2)
    with pytest.raises(ModelError, match="algorithm"):
        cn.HMM(2, algorithm="forward")


def test_random_state_equals_seed(rng):
    X = rng.integers(0, 3, size=200)
    a = cn.HMM(n_components=2, random_state=3, n_iter=5).fit(X)
    b = cn.HMM(2, seed=3, n_iter=5).fit(X)
    assert_array_equal(a.transmat_, b.transmat_)


def test_sklearn_clone_and_set_params(data):
    from sklearn.base import clone

    X, L = data
    m = _ours(n_iter=7, random_state=0)
    c = clone(m)
    assert c.get_params()["n_iter"] == 7 and c is not m
    assert_allclose(c.score(X, L), m.score(X, L), rtol=0, atol=0)
    assert m.set_params(n_iter=3, tol=1e-4) is m
    assert (m.n_iter, m.tol) == (3, 1e-4)
    m.set_params(random_state=9)
    assert m.seed == 9 and m.random_state == 9
    before = m.get_params()
    with pytest.raises(ModelError, match="no parameter 'bogus'"):
        m.set_params(bogus=1)
    with pytest.raises(ModelError):
        m.set_params(n_iter=-1)
    assert m.get_params() == before  # nothing changed on error


def test_list_and_padded_inputs_equal_concatenated(data):
    X, L = data
    m = _ours()
    seqs = [X[:15], X[15:]]
    padded = np.zeros((2, 25), dtype=int)
    padded[0, :15], padded[1] = X[:15], X[15:]
    ref = m.score(X, L)
    assert_allclose(m.score(seqs), ref, rtol=1e-14)
    assert_allclose(m.score(padded, L), ref, rtol=1e-14)
    z = m.predict(X, L)
    zl = m.predict(seqs)
    assert isinstance(zl, list) and len(zl) == 2
    assert_array_equal(np.concatenate(zl), z)
    zp = m.predict(padded, L)
    assert zp.shape == (2, 25) and (zp[0, 15:] == -1).all()
    assert_array_equal(zp[0, :15], z[:15])
    pp = m.predict_proba(padded, L)
    assert pp.shape == (2, 25, 2) and (pp[0, 15:] == 0).all()
    assert_allclose(pp[1], m.predict_proba(X, L)[15:], rtol=0, atol=1e-14)
    f1 = _ours(n_iter=3, tol=-np.inf, init_params="").fit(seqs)
    f2 = _ours(n_iter=3, tol=-np.inf, init_params="").fit(X, L)
    assert_allclose(f1.transmat_, f2.transmat_, rtol=0, atol=1e-14)
    with pytest.raises(ShapeError, match="lengths"):
        m.score(padded, [15])
    with pytest.raises(ShapeError, match="only 25 steps"):
        m.score(padded, [15, 30])


def test_gaussian_padded_batch(rng):
    X = rng.normal(size=(2, 30, 2))
    m = cn.HMM(2, "gaussian", n_iter=3, seed=0).fit(X.reshape(-1, 2), [30, 30])
    assert_allclose(m.score(X, [30, 30]), m.score(X.reshape(-1, 2), [30, 30]), rtol=1e-14)
    assert_allclose(m.score(X, [30, 10]), m.score(np.concatenate([X[0], X[1, :10]]), [30, 10]), rtol=1e-14)


@pytest.mark.parametrize("emission, kw", [("categorical", {}), ("gaussian", {"covariance_type": "full"}),
                                          ("gaussian", {"covariance_type": "diag"})])
def test_save_load_round_trip_exact(tmp_path, rng, emission, kw):
    X = rng.integers(0, 4, size=300) if emission == "categorical" else rng.normal(size=(300, 2))
    m = cn.HMM(3, emission, n_iter=4, tol=-np.inf, seed=1, **kw).fit(X)
    path = tmp_path / "m.json"
    m.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.npz"]
    doc = json.loads(path.read_text())
    assert doc["format"] == "causalnet.HMM"
    m2 = cn.HMM.load(path)
    for name in ("startprob_", "transmat_", "emissionprob_", "means_", "covars_"):
        if hasattr(m, name):
            assert_array_equal(getattr(m2, name), getattr(m, name))
    assert m2.history_ == m.history_ and m2.tol == -np.inf
    assert m2.get_params() == {**m.get_params()}
    assert m2.score(X) == m.score(X)


def test_load_errors(tmp_path):
    with pytest.raises(ModelFileNotFoundError):
        cn.HMM.load(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text('{"format": "other"}')
    with pytest.raises(ModelError, match="not a saved HMM"):
        cn.HMM.load(tmp_path / "x.json")
    with pytest.raises(ModelError, match=".json"):
        cn.HMM(2).save(tmp_path / "m.npz")


def test_progress_bar_silent_in_ci_and_when_off(monkeypatch, capsys, rng):
    X = rng.integers(0, 3, size=100)
    monkeypatch.setenv("CI", "true")
    cn.HMM(2, n_iter=3, seed=0).fit(X)
    cn.HMM(2, n_iter=3, seed=0, progress=False).fit(X)
    assert capsys.readouterr().err == ""
    monkeypatch.delenv("CI")
    cn.HMM(2, n_iter=3, seed=0, progress=True).fit(X)
    assert "Baum-Welch" in capsys.readouterr().err
    with pytest.raises(ModelError, match="progress"):
        cn.HMM(2, progress="yes")
