"""scikit-learn compatibility of cn.HMM: check_estimator (documented exceptions), clone, search, not-fitted errors."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import causalnet as cn
from causalnet.errors import CausalNetWarning, ModelError, NotFittedError

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError as SkNotFitted  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

# Checks cn.HMM fails on purpose, and why (docs/chains.md repeats this list).
EXPECTED_FAILED_CHECKS = {
    "check_fit_score_takes_y": "fit(X, lengths) and score(X, lengths) follow hmmlearn; y is a keyword (ignored)",
    "check_estimators_unfitted": "raises causalnet's NotFittedError (a ModelError, ValueError and AttributeError); "
                                 "sklearn wants its own class, which causalnet does not import at runtime",
    "check_do_not_raise_errors_in_init_or_set_params": "causalnet validates constructor parameters at once",
    "check_dtype_object": "a non-numeric object array raises EvidenceError (a ValueError), not TypeError",
    "check_methods_sample_order_invariance": "an HMM's answers depend on the order of the observations, and "
                                             "score_samples returns (log_prob, posteriors) as hmmlearn's",
    "check_methods_subset_invariance": "posteriors and the Viterbi path of a step depend on the whole sequence",
    "check_fit1d": "a 1-D X is read as one feature per observation (N,) -> (N, 1), as elsewhere in causalnet",
}


def test_check_estimator_with_documented_exceptions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(cn.HMM(2, "gaussian", n_iter=5, seed=0), expected_failed_checks=EXPECTED_FAILED_CHECKS)


def test_tags_and_not_fitted():
    m = cn.HMM(2, "gaussian")
    tags = m.__sklearn_tags__()
    assert tags.requires_fit and not tags.target_tags.required and not tags.input_tags.allow_nan
    with pytest.raises(NotFittedError) as e:
        m.predict(np.zeros((3, 1)))
    assert isinstance(e.value, ModelError) and isinstance(e.value, ValueError) and isinstance(e.value, AttributeError)
    assert not hasattr(m, "covars_") and not hasattr(m, "n_features_in_")
    with pytest.raises(SkNotFitted):
        check_is_fitted(m)
    X = np.random.default_rng(0).normal(size=(50, 2))
    m.fit(X)
    check_is_fitted(m)
    assert m.n_features_in_ == 2 == m.n_features and m.covars_.shape == (2, 2, 2)
    assert cn.HMM(2, "gaussian").get_params()["n_features"] is None  # fit does not overwrite parameters


def test_clone_grid_search_and_cross_val_score():
    true = cn.HMM(2, "gaussian", startprob=[0.5, 0.5], transmat=[[0.95, 0.05], [0.05, 0.95]],
                  means=[[-2.0], [2.0]], covars=[[0.5], [0.5]])
    X, _ = true.sample(600, seed=1)
    est = cn.HMM(1, "gaussian", n_iter=20, seed=0)
    c = clone(est)
    assert c.get_params() == est.get_params() and c is not est
    search = GridSearchCV(est, {"n_components": [1, 2]}, cv=3).fit(X)
    assert search.best_params_ == {"n_components": 2}
    assert search.best_estimator_.n_states == 2
    scores = cross_val_score(cn.HMM(2, "gaussian", n_iter=10, seed=0), X, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()


def test_aliases_survive_direct_assignment():
    m = cn.HMM(n_states=3, seed=4)
    m.n_components = 2  # sklearn's checks assign attributes directly
    assert m.n_states == 2 and clone(m).n_states == 2
    m.random_state = 7
    assert clone(m).seed == 7
    assert m.get_params()["n_states"] is None and m.get_params()["n_components"] == 2


def test_sklearn_y_is_ignored_with_a_warning():
    X = np.random.default_rng(0).normal(size=(40, 2))
    y = np.arange(40) % 3  # labels, one per observation: not sequence lengths
    a = cn.HMM(2, "gaussian", n_iter=3, seed=0).fit(X)
    with pytest.warns(CausalNetWarning, match="scikit-learn's y"):
        b = cn.HMM(2, "gaussian", n_iter=3, seed=0).fit(X, y)
    assert_array_equal(a.transmat_, b.transmat_)
    assert_allclose(a.score(X, y=y), a.score(X), rtol=0, atol=0)
