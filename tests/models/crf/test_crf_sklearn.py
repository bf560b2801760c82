"""scikit-learn's estimator contract for the CRF.

`check_estimator` cannot run the CRF: its X is a list of sequences (tag
``input_tags.two_d_array = False``), and scikit-learn then skips every check itself.
So the documented subset is:

- the input-agnostic API checks, run as scikit-learn wrote them (:data:`API_CHECKS`);
- the data checks that matter for model selection, rewritten on sequence data
  (fit returns self, parameters not overwritten, idempotent fit, clone, pickling in
  memory, order and subset invariance of predictions);
- `clone`, `cross_val_score`, `GridSearchCV` and a `Pipeline`.

Not run, and why:

- every check feeding a 2-D numeric array (``check_fit_score_takes_y``,
  ``check_estimators_dtypes``, ``check_fit2d_*``, ``check_estimators_nan_inf``, ...):
  a 2-D array is not a CRF input (it raises ShapeError naming the expected shapes);
- ``check_estimators_unfitted``: an unfitted CRF raises causalnet's ModelError (a
  ValueError), not scikit-learn's NotFittedError, since causalnet does not depend
  on scikit-learn;
- the classifier checks: the CRF is not tagged a classifier (targets are label
  sequences, which stratified splitters cannot take; sklearn-crfsuite does the same).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from causalnet.errors import ModelError
from causalnet.models.crf import CRF, synthetic_tagging

ec = pytest.importorskip("sklearn.utils.estimator_checks")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402

API_CHECKS = [
    "check_estimator_cloneable", "check_estimator_repr", "check_no_attributes_set_in_init",
    "check_do_not_raise_errors_in_init_or_set_params", "check_parameters_default_constructible",
    "check_get_params_invariance", "check_set_params", "check_estimator_tags_renamed", "check_valid_tag_types",
    "check_mixin_order",
]


@pytest.fixture(scope="module")
def data():
    return synthetic_tagging(24, mean_len=5, n_words=60, seed=1)


@pytest.mark.parametrize("check", API_CHECKS)
def test_scikit_learn_api_checks(check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "does not inherit from BaseEstimator": deliberate
        getattr(ec, check)("CRF", CRF(max_iterations=5, progress=False))


def test_two_d_tabular_input_is_declared_unsupported_so_check_estimator_skips():
    tags = CRF().__sklearn_tags__()
    assert tags.input_tags.two_d_array is False and tags.target_tags.required
    with pytest.warns(ec.SkipTestWarning, match="Can't test estimator CRF"):
        ec.check_estimator(CRF(max_iterations=5))


def test_fit_returns_self_and_keeps_parameters(data):
    X, y = data
    crf = CRF(c1=0.05, c2=0.1, max_iterations=5, progress=False)
    before = crf.get_params()
    assert crf.fit(X, y) is crf
    assert crf.get_params() == before
    assert not hasattr(clone(crf), "state_weights_")
    assert clone(crf).get_params() == before


def test_fit_is_idempotent_and_deterministic(data):
    X, y = data
    a = CRF(c2=0.1, max_iterations=8).fit(X, y)
    w = a.state_weights_.copy()
    a.fit(X, y)
    np.testing.assert_array_equal(a.state_weights_, w)
    np.testing.assert_array_equal(CRF(c2=0.1, max_iterations=8).fit(X, y).state_weights_, w)


def test_predictions_are_invariant_to_sequence_order_and_subsets(data):
    X, y = data
    crf = CRF(c2=0.1, max_iterations=8).fit(X, y)
    full = crf.predict(X)
    perm = np.random.default_rng(0).permutation(len(X))
    assert crf.predict([X[i] for i in perm]) == [full[i] for i in perm]
    assert crf.predict(X[:5]) + crf.predict(X[5:]) == full
    def flat(m):
        return np.array([[d[k] for k in crf.classes_] for seq in m for d in seq])

    marg = crf.predict_marginals(X)  # equal up to round-off (batch padding changes the summation order)
    np.testing.assert_allclose(flat(crf.predict_marginals([X[i] for i in perm])), flat([marg[i] for i in perm]),
                               rtol=0, atol=1e-12)


def test_pickling_in_memory_keeps_predictions(data):
    X, y = data
    crf = CRF(c2=0.1, max_iterations=5).fit(X, y)
    twin = pickle.loads(pickle.dumps(crf))
    assert twin.predict(X) == crf.predict(X)


def test_model_selection_and_pipelines(data):
    X, y = data
    crf = CRF(c2=0.1, max_iterations=5)
    scores = cross_val_score(crf, X, y, cv=KFold(3))
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    grid = GridSearchCV(crf, {"c2": [0.01, 1.0], "all_possible_transitions": [False, True]}, cv=2).fit(X, y)
    assert grid.best_params_["c2"] in (0.01, 1.0)
    assert grid.best_estimator_.predict(X[:2]) == grid.predict(X[:2])
    lower = FunctionTransformer(lambda seqs: [[{k: v.lower() if isinstance(v, str) else v for k, v in item.items()}
                                               for item in s] for s in seqs])
    pipe = Pipeline([("lower", lower), ("crf", CRF(c2=0.1, max_iterations=5))]).fit(X, y)
    assert pipe.predict(X[:3]) == pipe.named_steps["crf"].predict(lower.transform(X[:3]))
    assert 0 <= pipe.score(X, y) <= 1


def test_grid_search_with_a_bad_value_fails_at_fit_with_model_error(data):
    X, y = data
    crf = CRF(max_iterations=3).set_params(c2=-1.0)  # set_params stores, as scikit-learn asks
    assert crf.c2 == -1.0
    with pytest.raises(ModelError, match="c2 must be a finite number >= 0"):
        crf.fit(X, y)


def test_sklearn_crfsuite_views(data):
    X, y = data
    crf = CRF(c2=0.1, max_iterations=5).fit(X, y)
    assert crf.num_attributes_ == len(crf.attributes_) == crf.state_weights_.shape[0]
    W = crf.state_weights_
    assert crf.state_features_ == {(crf.attributes_[i], crf.classes_[k]): W[i, k]
                                   for i in range(W.shape[0]) for k in range(W.shape[1]) if W[i, k] != 0}
    marg = crf.predict_marginals_single(X[0])
    assert [max(d, key=d.get) for d in marg] == crf.predict_single(X[0])
    assert all(list(d) == crf.classes_ for d in marg)
