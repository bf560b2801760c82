"""Regression tests for issue 10 in the CRF: every bad input gets a typed error naming it,
and a failed call leaves the estimator and its arguments as they were."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from causalnet.errors import EvidenceError, ModelError, NumericalError, ShapeError
from causalnet.models.crf import CRF


def _toy():
    X = [
        [{"w": "the", "bias": 1.0}, {"w": "dog", "bias": 1.0}, {"w": "runs", "bias": 1.0}],
        [{"w": "a", "bias": 1.0}, {"w": "cat", "bias": 1.0}],
    ]
    y = [["D", "N", "V"], ["D", "N"]]
    return X, y


@pytest.fixture
def fitted():
    X, y = _toy()
    return CRF(c2=0.1, max_iterations=20).fit(X, y)


def _state(crf):
    return copy.deepcopy({k: v for k, v in vars(crf).items() if k != "_vocab"}), list(crf._vocab.names)


def _same_state(a, b):
    (da, va), (db, vb) = a, b
    assert va == vb and da.keys() == db.keys()
    for k in da:
        if isinstance(da[k], np.ndarray):
            assert_array_equal(da[k], db[k])
        else:
            assert da[k] == db[k], k


# -- from_weights --------------------------------------------------------------------------


def test_from_weights_without_labels_is_a_model_error():
    with pytest.raises(ModelError, match="at least one label"):
        CRF.from_weights(np.zeros((2, 0)), np.zeros((0, 0)), labels=[])


@pytest.mark.parametrize(
    "W, A, labels, match",
    [
        (np.zeros((2, 2)), np.zeros((2, 2)), "ab", "not one str"),
        (np.zeros((2, 2)), np.zeros((2, 2)), [["a"], ["b"]], "hashable"),
        (np.zeros((2, 2)), np.zeros((2, 2)), ["a", "a"], "distinct"),
        (np.zeros((2, 2), complex), np.zeros((2, 2)), ["a", "b"], "real numbers; got dtype complex"),
        ([["x", "y"]], np.zeros((2, 2)), ["a", "b"], "real numbers"),
        (np.zeros((2, 2)), np.full((2, 2), np.nan), ["a", "b"], "finite"),
    ],
)
def test_from_weights_rejects_bad_weights_and_labels(W, A, labels, match):
    with pytest.raises(ModelError, match=match):
        CRF.from_weights(W, A, labels)


# -- masks of given potentials -------------------------------------------------------------


@pytest.mark.parametrize("method", ["decode_potentials", "marginals_potentials"])
def test_potentials_mask_of_the_wrong_shape_is_a_shape_error(method):
    crf = CRF.from_weights(np.zeros((1, 3)), np.zeros((3, 3)), ["a", "b", "c"])
    unary = np.zeros((2, 3, 3))
    # (3, 2) has the right size and used to be reshaped to (2, 3), silently reinterpreted
    with pytest.raises(ShapeError, match=r"expected|\(n, T\) = \(2, 3\).*got \(3, 2\)"):
        getattr(crf, method)(unary, mask=np.ones((3, 2), bool))
    with pytest.raises(ShapeError, match=r"\(2, 3\).*got \(6,\)"):
        getattr(crf, method)(unary, mask=np.ones(6, bool))
    # a 2-D unary takes a (T,) mask or a (1, T) one
    out_a = getattr(crf, method)(unary[0], mask=np.array([1, 1, 0], bool))
    out_b = getattr(crf, method)(unary[0], mask=np.array([[1, 1, 0]], bool))
    assert str(out_a) == str(out_b)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_potentials_nan_or_plus_inf_is_an_evidence_error(bad):
    crf = CRF.from_weights(np.zeros((1, 2)), np.zeros((2, 2)), ["a", "b"])
    u = np.zeros((1, 2, 2))
    u[0, 1, 0] = bad
    with pytest.raises(EvidenceError, match="NaN or \\+inf"):
        crf.marginals_potentials(u)
    with pytest.raises(EvidenceError, match="real numbers"):
        crf.decode_potentials(np.zeros((1, 2, 2), complex))


# -- constructor parameters ----------------------------------------------------------------


@pytest.mark.parametrize(
    "params, match",
    [
        ({"c1": -0.1}, "c1 must be a finite number >= 0, got -0.1"),
        ({"c2": -1}, "c2 must be a finite number >= 0, got -1"),
        ({"c2": float("nan")}, "c2 must be a finite number"),
        ({"max_iterations": 0}, r"max_iterations \(None or an int\) must be a positive integer, got 0"),
        ({"max_iterations": -5}, r"max_iterations \(None or an int\) must be a positive integer, got -5"),
        ({"max_iterations": 2.5}, "max_iterations"),
        ({"num_memories": 0}, "num_memories must be a positive integer"),
        ({"algorithm": "l2sgd"}, "'l2sgd' .* not implemented"),
        ({"algorithm": "sgd"}, "algorithm must be 'lbfgs'; got 'sgd'"),
        ({"solver": "newton"}, "solver must be 'lbfgs' or 'scipy'"),
        ({"solver": "scipy", "c1": 0.5}, "L2 penalty only"),
        ({"all_possible_states": "yes"}, "all_possible_states must be True or False"),
        ({"callback": 3}, "callback must be callable"),
        ({"progress": "yes"}, "progress must be None, True or False"),
    ],
)
def test_bad_constructor_parameters_are_model_errors_at_fit(fitted, params, match):
    # scikit-learn's convention: the constructor and set_params store, fit validates
    X, y = [[{"w": "a"}, {"w": "b"}]], [["A", "B"]]
    with pytest.raises(ModelError, match=match):
        CRF(**params).fit(X, y)
    before = _learned(fitted)
    fitted.set_params(**params)
    assert all(fitted.get_params()[k] is v for k, v in params.items())
    with pytest.raises(ModelError, match=match):
        fitted.fit(X, y)
    _same_state(before, _learned(fitted))  # the failed fit changed no learned attribute


def _learned(crf):
    (attrs, vocab) = _state(crf)
    return {k: v for k, v in attrs.items() if k.endswith("_") or k.startswith("_")}, vocab


def test_set_params_refuses_unknown_names_and_sets_nothing():
    crf = CRF(c2=0.5)
    with pytest.raises(ModelError, match="no parameter 'c3'"):
        crf.set_params(c1=0.7, c3=1)
    assert crf.get_params() == CRF(c2=0.5).get_params()


def test_crfsuite_positional_algorithm_is_accepted():
    assert CRF("lbfgs", c1=0.1).algorithm == "lbfgs"


# -- training data -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, y, error, match",
    [
        ([], [], ShapeError, "X has no sequences"),
        ([[{"w": "a"}], [{"w": "b"}]], [["A"]], ShapeError, "X has 2 sequences but y has 1"),
        ([[{"w": "a"}, {"w": "b"}]], [["A"]], ShapeError, "sequence 0 has 2 items in X but 1 labels"),
        ([[{"w": "a"}], []], [["A"], []], ShapeError, "sequence 1 of X is empty"),
        ([[{"w": "a"}]], [[["A"]]], EvidenceError, "labels must be hashable"),
        ([[{"w": "a"}]], None, EvidenceError, "y must be a list of label sequences"),
        ([[{"w": "a"}]], ["A"], EvidenceError, "sequence 0 of y is a str"),
        ([[{"w": float("nan")}]], [["A"]], EvidenceError, "finite"),
        (np.zeros((1, 2, 2), complex), [["A", "B"]], EvidenceError, "real numbers; got dtype complex"),
        ([np.array([["a", "b"]])], [["A"]], EvidenceError, "real numbers"),
        (5, [["A"]], EvidenceError, "X must be a list of sequences"),
    ],
)
def test_bad_training_data_is_typed_and_leaves_the_fitted_estimator_unchanged(fitted, X, y, error, match):
    before = _state(fitted)
    with pytest.raises(error, match=match):
        fitted.fit(X, y)
    _same_state(before, _state(fitted))
    with pytest.raises(error, match=match):
        CRF(c2=0.1).fit(X, y)


def test_failed_fit_of_a_fresh_estimator_leaves_it_unfitted():
    crf = CRF()
    with pytest.raises(ShapeError):
        crf.fit([[{"w": "a"}]], [["A", "B"]])
    assert not hasattr(crf, "classes_") and not hasattr(crf, "state_weights_")


# -- prediction ----------------------------------------------------------------------------


def test_predict_on_empty_sequences_and_bad_input(fitted):
    with pytest.raises(ShapeError, match="sequence 0 of X is empty"):
        fitted.predict([[]])
    with pytest.raises(ShapeError, match="X has no tokens"):
        fitted.score([], [])  # used to be NaN
    with pytest.raises(EvidenceError, match="X must be a list of sequences"):
        fitted.predict_marginals({"w": "a"})


def test_unknown_labels_at_prediction(fitted):
    X, y = _toy()
    # an unknown label in y counts as an error in score (sklearn-crfsuite's metrics do the same) ...
    assert fitted.score(X, [["D", "N", "Z"], ["D", "N"]]) == pytest.approx(4 / 5)
    # ... and cannot be observed as evidence
    with pytest.raises(EvidenceError, match="'y\\[0\\]' has no state 'Z'; states: \\['D', 'N', 'V'\\]"):
        fitted.query("y[1]", X[0], evidence={"y[0]": "Z"})
    # an array of labels is a batch of queries, one per row (the front door's rule)
    both = fitted.query("y[1]", X[0], evidence={"y[0]": np.array(["D", "N"])})
    assert both.batched and both.probs.shape == (2, 3)
    for i, lab in enumerate(["D", "N"]):
        np.testing.assert_allclose(both.probs[i], fitted.query("y[1]", X[0], evidence={"y[0]": lab}).probs,
                                   rtol=0, atol=1e-14)


def test_overflowing_potentials_are_a_numerical_error():
    crf = CRF.from_weights(np.full((2, 2), 1e308), np.zeros((2, 2)), ["a", "b"])
    with pytest.raises(NumericalError, match="overflow"):
        crf.predict([np.ones((3, 2))])
    with pytest.raises(NumericalError, match="overflow"):
        crf.to_model(X=np.ones((3, 2)))


def test_query_and_to_model_arguments(fitted):
    X, _ = _toy()
    with pytest.raises(EvidenceError, match="evidence must be a mapping"):
        fitted.query("y[0]", X[0], evidence=[("y[0]", "D")])
    with pytest.raises(EvidenceError, match="do must be a mapping"):
        fitted.query("y[0]", X[0], do="x[0]")
    with pytest.raises(ModelError, match="positive integer"):
        fitted.to_model(T=0)
    with pytest.raises(ModelError, match="positive integer"):
        fitted.to_model(T=True)
    dense = CRF.from_weights(np.zeros((2, 2)), np.zeros((2, 2)), ["a", "b"])
    with pytest.raises(EvidenceError, match="row of 2 real numbers"):
        dense.query("y[0]", np.zeros((3, 2)), do={"x[1]": [1.0, 2.0, 3.0]})
    with pytest.raises(ShapeError, match="sequence 0 of X is empty"):
        dense.query("y[0]", np.zeros((0, 2)))


@pytest.mark.parametrize("item", [{b"\xff": 1.0}, {"w": b"\xfe"}, [b"\xff"]])
def test_bytes_that_are_not_utf8_are_refused_with_a_typed_error(item):
    from causalnet.errors import EvidenceError
    from causalnet.models.crf import CRF

    with pytest.raises(EvidenceError, match="not UTF-8"):
        CRF(max_iterations=3).fit([[item]], [["A"]])
