"""Issue 10 for the CausalQwen head: a diverging fit stops with a NumericalError and
leaves the head as it was; extreme or bad inputs give finite answers or typed errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st

from causalnet.errors import ModelError, NumericalError, ShapeError
from causalnet.models.causal_head import CausalHead, synthetic_number_task


@pytest.fixture(scope="module")
def task():
    return synthetic_number_task(8, 8, seed=0, hidden=6)


def _head(task):
    return CausalHead.initialise(len(task.vocab), task.hidden, num_id=task.num_id, seed=0)


@pytest.mark.parametrize("lr", [1e200, 1e300])
def test_too_large_a_learning_rate_stops_with_a_numerical_error(task, lr):
    head = _head(task)
    head.fit(task.z(), task.labels, task.targets, task.attention_mask, steps=2, lr=0.01)
    before = head.params
    history = head.history_
    with pytest.raises(NumericalError, match="step \\d+.*lr=" + re.escape(repr(lr))):
        head.fit(task.z(), task.labels, task.targets, task.attention_mask, steps=20, lr=lr)
    after = head.params
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert head.history_ is history
    assert np.all(np.isfinite(head.forward(task.z()).probs))


@pytest.mark.parametrize("kwargs", [
    dict(lr=float("inf")), dict(lr=-1.0), dict(lr=1j), dict(steps=-1), dict(steps=2.5), dict(batch_size=0),
    dict(betas=(1.0, 0.9)), dict(betas=0.9), dict(weight_decay=-0.1), dict(trainable=["nope"]),
])
def test_fit_arguments_are_checked_before_training(task, kwargs):
    head = _head(task)
    before = head.params
    with pytest.raises(ModelError):
        head.fit(task.z(), task.labels, task.targets, task.attention_mask, **kwargs)
    assert all(np.array_equal(before[k], v) for k, v in head.params.items())


def test_complex_features_are_refused_not_cast(task):
    with pytest.raises(ShapeError, match="real numbers"):
        _head(task).forward(task.z() * (1 + 1j))


def test_huge_regression_residuals_keep_the_loss_and_gradients_finite(task):
    head = _head(task)
    targets = np.where(task.labels == task.num_id, 1e300, 0.0)
    total, grads, _ = head.loss_and_grad(task.z(), task.labels, targets, task.attention_mask)
    assert np.isfinite(total) and all(np.all(np.isfinite(g)) for g in grads.values())


def test_overflowing_features_are_a_numerical_error(task):
    head = _head(task).set_params(W_loc=np.eye(task.hidden) * 1e300)
    with pytest.raises(NumericalError, match="overflowed"):
        head.forward(np.full((1, 2, task.hidden), 1e300))


_values = st.sampled_from([0.0, 1e-300, -1.0, 1e10, -1e150, 1e300, 1.7e308])


@settings(max_examples=40, deadline=None)
@given(v=_values, mode=st.sampled_from(["standard", "causal", "individual", "noise", "softmax", "bogus"]),
       shape=st.sampled_from([(1, 2, 6), (2, 0, 6), (0, 3, 6), (1, 2, 5), (2, 6)]))
def test_forward_and_predict_on_extreme_features(task, v, mode, shape):
    head = _head(task)
    z = np.full(shape, v)
    guarded(head.forward, z, mode=mode, seed=0)
    guarded(head.predict, z, mode=mode, seed=0)


@settings(max_examples=25, deadline=None)
@given(lr=st.sampled_from([1e-3, 1.0, 1e50, 1e200, 1e308]), scale=st.sampled_from([1.0, 1e100, 1e300]),
       label=st.integers(-1, 14))
def test_fit_on_extreme_inputs(task, lr, scale, label):
    head = _head(task)
    labels = task.labels.copy()
    labels[0, 0] = label
    guarded(head.fit, task.z() * scale, labels, task.targets * scale, task.attention_mask, steps=3, lr=lr)
