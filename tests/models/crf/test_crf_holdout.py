"""sklearn-crfsuite's held-out set (``fit(X, y, X_dev, y_dev)``), `training_log_` views, `size_`, NotFittedError."""

import itertools

import numpy as np
import pytest
from conftest import guarded

from causalnet.errors import CausalNetError, ModelError, NotFittedError, ShapeError
from causalnet.models.crf import CRF

X = [[{"w": "the"}, {"w": "dog"}, {"w": "runs"}], [{"w": "a"}, {"w": "cat"}], [{"w": "dog"}, {"w": "runs"}]]
Y = [["D", "N", "V"], ["D", "N"], ["N", "V"]]
X_DEV = [[{"w": "the"}, {"w": "cat"}, {"w": "runs"}], [{"w": "a"}, {"w": "dog"}]]


def brute_log_likelihood(crf, X, y):
    """sum_i log p(y_i | x_i) by enumerating every label path."""
    labels = crf.classes_
    idx = {lab: i for i, lab in enumerate(labels)}
    total = 0.0
    for xs, ys in zip(X, y):
        unary, _ = crf.unary_potentials([xs])  # (1, T, K)
        U, A = unary[0], crf.transition_weights_

        def score(path, U=U, A=A):
            return sum(U[t, k] for t, k in enumerate(path)) + sum(A[a, b] for a, b in zip(path, path[1:]))

        paths = itertools.product(range(len(labels)), repeat=len(xs))
        total += score([idx[v] for v in ys]) - np.logaddexp.reduce([score(p) for p in paths])
    return total


def test_held_out_figures_equal_brute_force_at_the_last_iteration():
    y_dev = [["D", "N", "V"], ["D", "V"]]
    crf = CRF(c2=0.05, max_iterations=30).fit(X, Y, X_DEV, y_dev)
    last = crf.training_log_.last_iteration
    assert last == crf.training_log_[-1] and crf.training_log_.iterations == list(crf.training_log_)
    assert last["dev_log_likelihood"] == pytest.approx(brute_log_likelihood(crf, X_DEV, y_dev), abs=1e-10)
    assert last["dev_item_accuracy"] == pytest.approx(crf.score(X_DEV, y_dev))
    pred = crf.predict(X_DEV)
    assert last["dev_instance_accuracy"] == pytest.approx(np.mean([p == t for p, t in zip(pred, y_dev)]))
    assert all("dev_item_accuracy" in rec for rec in crf.training_log_)


def test_held_out_set_does_not_change_the_training():
    plain = CRF(c2=0.05, max_iterations=30).fit(X, Y)
    held = CRF(c2=0.05, max_iterations=30).fit(X, Y, X_DEV, [["D", "N", "V"], ["D", "N"]])
    np.testing.assert_array_equal(plain.state_weights_, held.state_weights_)
    np.testing.assert_array_equal(plain.transition_weights_, held.transition_weights_)
    assert "dev_item_accuracy" not in plain.training_log_.last_iteration


def test_unknown_held_out_label_counts_as_an_error_and_has_no_log_likelihood():
    crf = CRF(c2=0.05, max_iterations=30).fit(X, Y, X_DEV, [["D", "N", "V"], ["D", "UNSEEN"]])
    last = crf.training_log_.last_iteration
    assert last["dev_log_likelihood"] is None
    assert last["dev_item_accuracy"] <= 4 / 5


@pytest.mark.parametrize(
    ("X_dev", "y_dev", "error"),
    [
        (X_DEV, None, ModelError),
        (None, [["D"]], ModelError),
        ([], [], ShapeError),
        (X_DEV, [["D", "N"]], ShapeError),
        (X_DEV, [["D", "N", "V"], ["D"]], ShapeError),
        ([np.zeros((2, 3))], [["D", "N"]], CausalNetError),
    ],
)
def test_bad_held_out_set_is_refused_before_training(X_dev, y_dev, error):
    crf = CRF(max_iterations=5)
    err = guarded(crf.fit, X, Y, X_dev, y_dev)
    assert isinstance(err, error)
    assert not hasattr(crf, "state_weights_")


def test_size_and_not_fitted():
    crf = CRF(max_iterations=5).fit(X, Y)
    assert crf.size_ == crf.state_weights_.nbytes + crf.transition_weights_.nbytes
    fresh = CRF()
    for call in (lambda: fresh.predict(X), lambda: fresh.size_, lambda: fresh.to_model(T=2)):
        with pytest.raises(NotFittedError) as info:
            call()
        assert isinstance(info.value, AttributeError) and isinstance(info.value, ValueError)
    assert not hasattr(fresh, "size_")
