"""Flat metrics of label sequences against scikit-learn's metrics on the flattened labels (the oracle)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet.errors import ShapeError
from causalnet.models.crf import metrics

sk = pytest.importorskip("sklearn.metrics")

_seq_pairs = st.lists(
    st.integers(1, 5).flatmap(
        lambda L: st.tuples(
            st.lists(st.sampled_from("ABCO"), min_size=L, max_size=L),
            st.lists(st.sampled_from("ABCD"), min_size=L, max_size=L),
        )
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=80, deadline=None)
@given(pairs=_seq_pairs, average=st.sampled_from(["micro", "macro", "weighted", None]), restrict=st.booleans())
def test_flat_metrics_equal_scikit_learn(pairs, average, restrict):
    yt, yp = [a for a, _ in pairs], [b for _, b in pairs]
    ft, fp = [v for s in yt for v in s], [v for s in yp for v in s]
    labels = ["A", "B", "C"] if restrict else None
    kw = {"labels": labels, "average": average, "zero_division": 0}
    assert metrics.flat_accuracy_score(yt, yp) == pytest.approx(sk.accuracy_score(ft, fp))
    for ours, theirs in [
        (metrics.flat_precision_score, sk.precision_score),
        (metrics.flat_recall_score, sk.recall_score),
        (metrics.flat_f1_score, sk.f1_score),
    ]:
        assert_allclose(ours(yt, yp, labels=labels, average=average), theirs(ft, fp, **kw), rtol=0, atol=1e-12)
    assert_allclose(
        metrics.flat_fbeta_score(yt, yp, 0.5, labels=labels, average=average),
        sk.fbeta_score(ft, fp, beta=0.5, **kw),
        rtol=0,
        atol=1e-12,
    )
    assert metrics.sequence_accuracy_score(yt, yp) == pytest.approx(sum(a == b for a, b in zip(yt, yp)) / len(yt))


def test_flat_metrics_errors():
    with pytest.raises(ShapeError, match="sequence 0 has 2 labels in y_true but 1 in y_pred"):
        metrics.flat_f1_score([["A", "B"]], [["A"]])
    with pytest.raises(ShapeError, match="no labels"):
        metrics.flat_accuracy_score([], [])
    with pytest.raises(ValueError, match="average must be"):
        metrics.flat_f1_score([["A"]], [["A"]], average="binary")


def test_crf_works_with_scikit_learn_model_selection():
    sklearn_ms = pytest.importorskip("sklearn.model_selection")
    from sklearn.base import clone

    from causalnet.models.crf import CRF, synthetic_tagging

    X, y = synthetic_tagging(30, mean_len=5, n_words=200, seed=0)
    crf = CRF(c2=0.1, max_iterations=5)
    assert clone(crf).get_params() == crf.get_params()
    scores = sklearn_ms.cross_val_score(crf, X, y, cv=3)
    assert scores.shape == (3,) and ((0 <= scores) & (scores <= 1)).all()
    grid = sklearn_ms.GridSearchCV(crf, {"c2": [0.01, 1.0]}, cv=2).fit(X, y)
    assert grid.best_params_["c2"] in (0.01, 1.0)
