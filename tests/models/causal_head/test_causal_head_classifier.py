"""CausalHeadClassifier: scikit-learn's full check_estimator, model selection, and a Cauchy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from causalnet.errors import ModelError  # noqa: E402
from causalnet.models.causal_head import CausalHeadClassifier  # noqa: E402

# Every check scikit-learn yields for a classifier runs, none is expected to fail
# (fewer steps than the default, for speed; the accuracy checks still pass).
# check_array_api_input is skipped by scikit-learn itself unless SCIPY_ARRAY_API is set.


@parametrize_with_checks([CausalHeadClassifier(steps=100, lr=0.1, progress=False)])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def _blobs(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-2, 1, (n, 2)), rng.normal(2, 1, (n, 2)), rng.normal([2, -2], 1, (n, 2))]
    y = np.repeat(["a", "b", "c"], n)
    return X, y


def test_probabilities_are_the_heads_cauchy_ovr_law():
    X, y = _blobs()
    clf = CausalHeadClassifier(steps=50, random_state=0, progress=False).fit(X, y)
    p = clf.head_.params
    loc_U = X @ p["W_loc"].T + p["b_loc"]
    scale_U = np.logaddexp(0, X @ p["W_scale"].T + p["b_scale"])
    loc_S = loc_U @ p["W_cls"].T + p["b_cls"]
    scale_S = (scale_U + np.abs(p["b_noise"])) @ np.abs(p["W_cls"]).T
    ovr = stats.cauchy.sf(p["thresholds"], loc=loc_S, scale=scale_S)  # independent oracle: P(S_k > C_k)
    np.testing.assert_allclose(clf.ovr_proba(X), ovr, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(clf.predict_proba(X), ovr / ovr.sum(1, keepdims=True), rtol=1e-12)
    assert (clf.predict(X) == clf.classes_[ovr.argmax(1)]).all()
    assert clf.score(X, y) > 0.9


def test_model_selection_clone_and_pipeline():
    X, y = _blobs(1)
    clf = CausalHeadClassifier(steps=60, random_state=0, progress=False)
    assert clone(clf).get_params() == clf.get_params()
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.8
    grid = GridSearchCV(clf, {"lr": [0.01, 0.1]}, cv=2).fit(X, y)
    assert grid.best_params_["lr"] in (0.01, 0.1)
    pipe = make_pipeline(StandardScaler(), clf).fit(X, y)
    assert pipe.score(X, y) > 0.9


@pytest.mark.parametrize("params, match", [({"steps": -1}, "steps"), ({"causal_dim": 0}, "causal_dim"),
                                           ({"lr": 0.0}, "lr"), ({"scale_init": np.nan}, "scale_init"),
                                           ({"progress": "yes"}, "progress")])
def test_bad_parameters_raise_model_error_at_fit_and_leave_it_unfitted(params, match):
    X, y = _blobs(2, n=5)
    clf = CausalHeadClassifier(**params)
    with pytest.raises(ModelError, match=match):
        clf.fit(X, y)
    assert not hasattr(clf, "head_") and not hasattr(clf, "classes_") and not hasattr(clf, "n_features_in_")
    fitted = CausalHeadClassifier(steps=5, progress=False).fit(X[:, :1], y)
    fitted.set_params(**params)
    with pytest.raises(ModelError, match=match):
        fitted.fit(X, y)
    assert fitted.n_features_in_ == 1 and fitted.head_.dims["H"] == 1


def test_save_load_exact_round_trip_and_typed_errors(tmp_path):
    X, y = _blobs(3, n=10)
    clf = CausalHeadClassifier(steps=20, random_state=4, progress=False).fit(X, y)
    clf.save(tmp_path / "clf.json")
    back = CausalHeadClassifier.load(tmp_path / "clf.json")
    assert back.get_params() == clf.get_params()
    assert back.classes_.tolist() == clf.classes_.tolist() and back.n_features_in_ == 2
    for k, v in clf.head_.params.items():
        np.testing.assert_array_equal(back.head_.params[k], v)
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    assert back.history_ == clf.history_
    with pytest.raises(FileNotFoundError):
        CausalHeadClassifier.load(tmp_path / "nope.json")
    clf.head_.save(tmp_path / "head.json")
    with pytest.raises(ModelError, match="not a 'causalnet.CausalHeadClassifier'"):
        CausalHeadClassifier.load(tmp_path / "head.json")
