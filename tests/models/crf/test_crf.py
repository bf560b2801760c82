"""Tests for causalnet.models.crf: brute-force enumeration, gradients, CRFsuite as oracle, input and errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import approx_fprime
from scipy.special import logsumexp

from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference.chain.layout import Layout
from causalnet.models.crf import CRF, synthetic_tagging
from causalnet.models.crf.features import ItemFeatures, encode_labels, parse_sequences
from causalnet.models.crf.objective import Objective, active_weights

# ---------------------------------------------------------------------------
# brute force: enumerate all K^T label sequences
# ---------------------------------------------------------------------------


def _path_scores(unary, A):
    """Scores of every label sequence: (K^T,) and the paths (K^T, T)."""
    T, K = unary.shape
    paths = np.array(list(itertools.product(range(K), repeat=T)))  # (K^T, T)
    s = unary[np.arange(T), paths].sum(1)
    s += A[paths[:, :-1], paths[:, 1:]].sum(1)
    return s, paths


def _brute(unary, A):
    """log Z, marginals (T, K) and best path of one sequence."""
    s, paths = _path_scores(unary, A)
    log_z = logsumexp(s)
    p = np.exp(s - log_z)
    T, K = unary.shape
    marg = np.zeros((T, K))
    for t in range(T):
        np.add.at(marg[t], paths[:, t], p)
    return log_z, marg, paths[np.argmax(s)]


def _random_dense(rng, n, F, max_len=6):
    lengths = rng.integers(1, max_len + 1, size=n)
    return [rng.normal(size=(L, F)) for L in lengths]


def _toy_dicts():
    X = [
        [{"w": "the", "bias": 1.0}, {"w": "dog", "bias": 1.0}, {"w": "runs", "bias": 1.0}],
        [{"w": "a", "bias": 1.0}, {"w": "cat", "bias": 1.0}],
        [{"w": "dogs", "bias": 1.0}, {"w": "run", "bias": 1.0}],
    ]
    y = [["D", "N", "V"], ["D", "N"], ["N", "V"]]
    return X, y


@pytest.fixture
def small_task(seed):
    X, y = synthetic_tagging(300, mean_len=8, n_words=3000, seed=seed)
    return X[:200], y[:200], X[200:], y[200:]


# ---------------------------------------------------------------------------
# inference against enumeration
# ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(1, 4), F=st.integers(1, 5))
def test_marginals_and_viterbi_match_enumeration(seed, K, F):
    rng = np.random.default_rng(seed)
    W, A = rng.normal(scale=1.5, size=(F, K)), rng.normal(scale=1.5, size=(K, K))
    crf = CRF.from_weights(W, A, labels=[f"y{k}" for k in range(K)])
    X = _random_dense(rng, 4, F, max_len=6 if K <= 3 else 5)
    marg = crf.predict_marginals(X)
    pred = crf.predict(X)
    for x, m, p in zip(X, marg, pred):
        _, ref_marg, ref_best = _brute(x @ W, A)
        got = np.array([[d[f"y{k}"] for k in range(K)] for d in m])
        assert_allclose(got, ref_marg, rtol=0, atol=1e-10)
        assert p == [f"y{k}" for k in ref_best]


def test_unary_potentials_are_features_times_weights(rng):
    W, A = rng.normal(size=(3, 2)), rng.normal(size=(2, 2))
    crf = CRF.from_weights(W, A, labels=["a", "b"])
    X = _random_dense(rng, 5, 3)
    unary, mask = crf.unary_potentials(X)
    assert unary.shape == (5, max(map(len, X)), 2)
    for i, x in enumerate(X):
        assert_allclose(unary[i, : len(x)], x @ W, rtol=0, atol=1e-12)
        assert_allclose(unary[i, len(x) :], 0.0, rtol=0, atol=0)
        assert mask[i].sum() == len(x) and mask[i, : len(x)].all()


def _objective(crf, X, y, c2, all_states=True):
    """The training objective of `crf` as a function of packed weights."""
    lengths, feats = parse_sequences(X, None)
    y_idx, labels = encode_labels(y, lengths, None)
    Xd = feats.design(feats.new_vocab(), lengths)
    si, ti = active_weights(Xd, y_idx, lengths, len(labels), all_states, all_states, 0.0)
    return Objective(Xd, y_idx, Layout(lengths), si, ti, len(labels), c2), labels


def test_objective_is_brute_force_negative_log_likelihood(rng):
    F, K = 3, 3
    X = _random_dense(rng, 6, F, max_len=5)
    y = [[str(v) for v in rng.integers(0, K, size=len(x))] for x in X]
    y[0][0], y[1][0], y[2][0] = "0", "1", "2"  # every label occurs
    obj, labels = _objective(CRF(), X, y, c2=0.3)
    theta = rng.normal(size=F * K + K * K)
    W, A = obj.unpack(theta)
    nll = 0.0
    for x, lab in zip(X, y):
        yi = [labels.index(v) for v in lab]
        s = (x @ W)[np.arange(len(x)), yi].sum() + A[yi[:-1], yi[1:]].sum()
        nll += _brute(x @ W, A)[0] - s
    f, _ = obj(theta)
    assert_allclose(f, nll + 0.3 * theta @ theta, rtol=1e-12, atol=0)


@pytest.mark.parametrize("all_states", [True, False])
def test_gradient_matches_finite_differences(rng, all_states):
    F, K = 4, 3
    X = _random_dense(rng, 8, F, max_len=5)
    y = [[str(v) for v in rng.integers(0, K, size=len(x))] for x in X]
    y[0][0], y[1][0], y[2][0] = "0", "1", "2"
    obj, _ = _objective(CRF(), X, y, c2=0.7, all_states=all_states)
    theta = rng.normal(size=obj.emp.size)
    _, g = obj(theta)
    num = approx_fprime(theta, lambda t: obj(t)[0], 1e-6)
    assert_allclose(g, num, rtol=0, atol=2e-4)


def test_gradient_vanishes_at_optimum(small_task):
    Xtr, ytr, _, _ = small_task
    # stops by CRFsuite's epsilon test, not by a failed line search or the cap
    crf = CRF(c2=1.0, epsilon=1e-5, delta=0.0, max_iterations=2000).fit(Xtr, ytr)
    last = crf.training_log_[-1]
    assert crf.n_iter_ < 2000
    assert last["grad_norm"] / max(1.0, last["weight_norm"]) < 1e-5


# ---------------------------------------------------------------------------
# training against CRFsuite on the same data
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("c1", "c2", "solver"), [(0.1, 0.1, "lbfgs"), (0.0, 0.1, "scipy"), (0.0, 0.1, "lbfgs")])
def test_accuracy_matches_crfsuite(small_task, c1, c2, solver):
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    Xtr, ytr, Xte, yte = small_task
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=50).fit(Xtr, ytr)
    ours = CRF(c1=c1, c2=c2, max_iterations=50, solver=solver).fit(Xtr, ytr)
    assert ours.score(Xte, yte) >= ref.score(Xte, yte) - 0.005


@pytest.mark.parametrize(("c1", "solver"), [(0.1, "lbfgs"), (0.0, "scipy")])
def test_loss_per_iteration_equals_crfsuite(small_task, c1, solver):
    # same objective, features and (for these solvers) the same line searches:
    # CRFsuite's OWL-QN backtracking, and More-Thuente in scipy's L-BFGS-B
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    Xtr, ytr, _, _ = small_task
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=0.1, max_iterations=15).fit(Xtr, ytr)
    ours = CRF(c1=c1, c2=0.1, max_iterations=15, solver=solver).fit(Xtr, ytr)
    want = [it["loss"] for it in ref.training_log_.iterations]
    got = [it["loss"] for it in ours.training_log_]
    assert_allclose(got, want, rtol=1e-6, atol=0)


def test_converged_weights_equal_crfsuite(small_task):
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    Xtr, ytr, _, _ = small_task
    kw = {"c1": 0.0, "c2": 1.0, "max_iterations": 1000, "epsilon": 1e-7, "delta": 1e-9}
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", **kw).fit(Xtr, ytr)
    ours = CRF(**kw).fit(Xtr, ytr)
    for mine, theirs in (
        (ours.state_features_, ref.state_features_),
        (ours.transition_features_, ref.transition_features_),
    ):
        keys = sorted(set(mine) | set(theirs))
        assert len(keys) == len(theirs)
        assert_allclose([mine.get(k, 0.0) for k in keys], [theirs.get(k, 0.0) for k in keys], rtol=0, atol=1e-4)
    assert ours.classes_ == ref.classes_


def test_predict_marginals_match_crfsuite_for_same_weights(small_task):
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    Xtr, ytr, Xte, _ = small_task
    ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.05, c2=0.1, max_iterations=40).fit(Xtr, ytr)
    ours = CRF(c1=0.05, c2=0.1, max_iterations=40).fit(Xtr, ytr)
    assert ours.predict(Xte) == [list(p) for p in ref.predict(Xte)]
    got = ours.predict_marginals(Xte[:20])
    want = ref.predict_marginals(Xte[:20])
    for gs, ws in zip(got, want):
        for g, w in zip(gs, ws):
            assert_allclose([g[k] for k in ref.classes_], [w[k] for k in ref.classes_], rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------
# behaviour
# ---------------------------------------------------------------------------


def test_unseen_features_are_ignored(small_task):
    Xtr, ytr, Xte, _ = small_task
    crf = CRF(c2=0.5, max_iterations=20).fit(Xtr, ytr)
    noisy = [[{**item, "never-seen": "x", "w": item["w"] + "#unseen"} for item in seq] for seq in Xte[:30]]
    stripped = [[{k: v for k, v in item.items() if k != "w"} for item in seq] for seq in Xte[:30]]
    assert crf.predict(noisy) == crf.predict(stripped)
    assert_allclose(crf.unary_potentials(noisy)[0], crf.unary_potentials(stripped)[0], rtol=0, atol=1e-12)


def test_item_formats_follow_pycrfsuite():
    X, y = _toy_dicts()
    crf = CRF(c2=0.01, max_iterations=30).fit(X, y)
    assert "w:dog" in crf.attributes_ and "bias" in crf.attributes_
    as_lists = [[["w:" + d["w"], "bias"] for d in seq] for seq in X]
    assert_allclose(crf.unary_potentials(as_lists)[0], crf.unary_potentials(X)[0], rtol=0, atol=0)
    nested = [[{"w": [d["w"]], "bias": True} for d in seq] for seq in X]
    assert_allclose(crf.unary_potentials(nested)[0], crf.unary_potentials(X)[0], rtol=0, atol=0)
    scaled = [[{"w": d["w"], "bias": 2.5} for d in seq] for seq in X]
    diff = crf.unary_potentials(scaled)[0] - crf.unary_potentials(X)[0]
    k = crf.attributes_.index("bias")
    assert_allclose(diff[0], np.tile(1.5 * crf.state_weights_[k], (3, 1)), rtol=0, atol=1e-12)
    off = [[{"w": d["w"], "bias": False} for d in seq] for seq in X]
    assert_allclose(crf.unary_potentials(off)[0][0], crf.unary_potentials([[{"w": d["w"]} for d in X[0]]])[0][0], rtol=0, atol=1e-12)
    assert crf.predict(X) == y


_values = st.one_of(
    st.sampled_from(["x", "y", "z:w", ""]),
    st.booleans(),
    st.floats(-3, 3, allow_nan=False),
    st.integers(-3, 3),
)
_items = st.dictionaries(st.sampled_from(["a", "b", "c:d", "e"]), _values, max_size=4)


@settings(max_examples=60, deadline=None)
@given(X=st.lists(st.lists(_items, min_size=1, max_size=5), min_size=1, max_size=6), irregular=st.booleans())
def test_vectorised_features_follow_pycrfsuite_rules(X, irregular):
    # the column-wise fast path builds the same design matrix as the item-by-item rules
    if irregular:  # enough distinct key sets to take the key-id grouping path
        X = X + [[{f"k{i}": 1.0}] for i in range(40)]
    lengths, feats = parse_sequences(X, None)
    assert feats.fast is not None  # dict items with str keys take the vectorised path
    vocab = feats.new_vocab()
    got = feats.design(vocab, lengths, grow=True)
    slow = ItemFeatures(X, lengths, vectorised=False)  # pycrfsuite's rules, item by item
    slow_vocab = slow.new_vocab()
    slow.design(slow_vocab, lengths, grow=True)
    assert set(vocab.names) == set(slow_vocab.names)
    want = slow.design(vocab, lengths).toarray()
    assert_allclose(got.toarray(), want, rtol=0, atol=0)
    again = parse_sequences(X, None)[1].design(vocab, lengths)  # prediction: no growth
    assert_allclose(again.toarray(), want, rtol=0, atol=0)


def test_mixed_and_exotic_feature_values():
    X = [
        [{"a": "x", "n": np.float32(0.5)}, {"a": 2.0, "n": np.int64(3)}, {"a": np.str_("y"), "n": True}],
        [{"a": b"x", "nest": {"p": "q", "r": 1.5}}, {"lst": ["u", "v"]}],
    ]
    lengths, feats = parse_sequences(X, None)
    vocab = feats.new_vocab()
    Xd = feats.design(vocab, lengths, grow=True).toarray()
    col = vocab.index
    assert Xd[0, col["a:x"]] == 1 and Xd[1, col["a"]] == 2.0 and Xd[2, col["a:y"]] == 1
    assert Xd[0, col["n"]] == 0.5 and Xd[1, col["n"]] == 3 and Xd[2, col["n"]] == 1
    assert Xd[3, col["a:x"]] == 1 and Xd[3, col["nest:p:q"]] == 1 and Xd[3, col["nest:r"]] == 1.5
    assert Xd[4, col["lst:u"]] == 1 and Xd[4, col["lst:v"]] == 1
    assert Xd.sum() == 1 + 0.5 + 2 + 3 + 1 + 1 + 1 + 1 + 1.5 + 1 + 1


def test_dense_input_array_with_mask_equals_list(rng):
    F, K = 3, 3
    X = _random_dense(rng, 30, F, max_len=6)
    y = [[str(v) for v in rng.integers(0, K, size=len(x))] for x in X]
    a = CRF(c2=0.1, max_iterations=20).fit(X, y)
    T = max(map(len, X))
    cube = np.zeros((len(X), T, F))
    mask = np.zeros((len(X), T), bool)
    ylab = np.full((len(X), T), "0", dtype=object)
    for i, x in enumerate(X):
        cube[i, : len(x)], mask[i, : len(x)], ylab[i, : len(x)] = x, True, y[i]
    b = CRF(c2=0.1, max_iterations=20).fit(cube, ylab, mask=mask)
    assert_allclose(a.state_weights_, b.state_weights_, rtol=0, atol=1e-12)
    assert a.predict(X) == b.predict(cube, mask=mask)
    assert a.score(X, y) == b.score(cube, ylab, mask=mask)


def test_ragged_lengths_and_buckets_give_per_sequence_answers(rng):
    W, A = rng.normal(size=(2, 3)), rng.normal(size=(3, 3))
    crf = CRF.from_weights(W, A, labels=["a", "b", "c"])
    lengths = [1, 2, 3, 40, 41, 90, 2, 1, 7] * 12
    X = [rng.normal(size=(L, 2)) for L in lengths]
    batch = crf.predict(X)
    marg = crf.predict_marginals(X)
    for x, p, m in zip(X[:9], batch[:9], marg[:9]):
        assert p == crf.predict_single(x)
        single = crf.predict_marginals_single(x)
        assert_allclose([[d[k] for k in "abc"] for d in m], [[d[k] for k in "abc"] for d in single], rtol=0, atol=1e-14)
        assert len(p) == len(x)
        assert_allclose([sum(d.values()) for d in m], 1.0, rtol=0, atol=1e-12)


def test_weight_views_and_from_weights_roundtrip():
    X, y = _toy_dicts()
    crf = CRF(c2=0.01, max_iterations=30).fit(X, y)
    assert crf.classes_ == ["D", "N", "V"]
    for (attr, lab), w in crf.state_features_.items():
        assert crf.state_weights_[crf.attributes_.index(attr), crf.classes_.index(lab)] == w
    assert len(crf.state_features_) == np.count_nonzero(crf.state_weights_)
    for (a, b), w in crf.transition_features_.items():
        assert crf.transition_weights_[crf.classes_.index(a), crf.classes_.index(b)] == w
    # CRFsuite's default: no weight for a transition never seen in training (V -> D)
    assert ("V", "D") not in crf.transition_features_
    twin = CRF.from_weights(crf.state_weights_, crf.transition_weights_, crf.classes_, crf.attributes_)
    assert twin.predict(X) == crf.predict(X)
    assert twin.state_features_ == crf.state_features_


def test_all_possible_states_and_transitions():
    X, y = _toy_dicts()
    crf = CRF(c2=0.01, max_iterations=30, all_possible_states=True, all_possible_transitions=True).fit(X, y)
    assert np.count_nonzero(crf.state_weights_) == crf.state_weights_.size
    assert np.count_nonzero(crf.transition_weights_) == 9
    assert crf.transition_weights_[crf.classes_.index("V"), crf.classes_.index("D")] < 0


def test_callback_gets_each_iteration_and_can_stop():
    X, y = _toy_dicts()
    seen = []
    CRF(c2=0.01, max_iterations=7, epsilon=0.0, delta=0.0, callback=seen.append).fit(X, y)
    assert [d["iteration"] for d in seen] == list(range(1, 8))
    assert {
        "iteration",
        "loss",
        "log_likelihood",
        "grad_norm",
        "weight_norm",
        "active_features",
        "n_evals",
        "seconds",
    } <= set(seen[0])
    assert seen[-1]["loss"] < seen[0]["loss"]
    crf = CRF(c2=0.01, max_iterations=50, callback=lambda d: d["iteration"] == 3).fit(X, y)
    assert crf.n_iter_ == 3


def test_fit_is_deterministic_and_l1_gives_sparsity(small_task):
    Xtr, ytr, _, _ = small_task
    a = CRF(c1=1.0, c2=0.01, max_iterations=40).fit(Xtr, ytr)
    b = CRF(c1=1.0, c2=0.01, max_iterations=40).fit(Xtr, ytr)
    assert_array_equal(a.state_weights_, b.state_weights_)
    dense = CRF(c1=0.0, c2=0.01, max_iterations=40).fit(Xtr, ytr)
    assert len(a.state_features_) < 0.5 * len(dense.state_features_)


def test_score_counts_unknown_labels_as_errors():
    X, y = _toy_dicts()
    crf = CRF(c2=0.01, max_iterations=30).fit(X, y)
    assert crf.score(X, y) == 1.0
    y2 = [list(s) for s in y]
    y2[0][0] = "UNSEEN"
    assert crf.score(X, y2) == pytest.approx(6 / 7, abs=1e-12)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def test_errors_on_bad_sequences():
    X, y = _toy_dicts()
    with pytest.raises(ShapeError, match="X has 3 sequences but y has 2"):
        CRF().fit(X, y[:2])
    with pytest.raises(ShapeError, match="sequence 1 has 2 items in X but 1 labels"):
        CRF().fit(X, [y[0], ["D"], y[2]])
    with pytest.raises(ShapeError, match="sequence 1 of X is empty"):
        CRF().fit([X[0], [], X[2]], [y[0], [], y[2]])
    with pytest.raises(ShapeError, match="X has no sequences"):
        CRF().fit([], [])
    crf = CRF(c2=0.1, max_iterations=5).fit(X, y)
    with pytest.raises(ShapeError, match="sequence 0 of X is empty"):
        crf.predict([[]])
    assert crf.predict([]) == [] and crf.predict_marginals([]) == []


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), np.float64("-inf")])
def test_errors_on_non_finite_features(bad):
    X, y = _toy_dicts()
    X[2][1] = {"w": "run", "bias": bad}
    with pytest.raises(EvidenceError, match=r"feature 'bias' of item 1 in sequence 2 is .*finite"):
        CRF().fit(X, y)


def test_errors_on_bad_values_and_dense_input(rng):
    X, y = _toy_dicts()
    X[1][0] = {"w": None}
    with pytest.raises(EvidenceError, match="feature 'w' of item 0 in sequence 1 has a value of type NoneType"):
        CRF().fit(X, y)
    with pytest.raises(EvidenceError, match="sequence 0 of X is a str"):
        CRF().fit(["abc"], [["a", "b", "c"]])
    D = [rng.normal(size=(3, 2)), rng.normal(size=(2, 2))]
    D[1][1, 0] = np.nan
    with pytest.raises(EvidenceError, match="column 0 of item 1 in sequence 1"):
        CRF().fit(D, [["a"] * 3, ["a"] * 2])
    crf = CRF.from_weights(np.zeros((2, 2)), np.zeros((2, 2)), ["a", "b"])
    with pytest.raises(ShapeError, match="dense X has 3 feature columns; the model has 2"):
        crf.predict([rng.normal(size=(3, 3))])
    with pytest.raises(ShapeError, match="mask row 1 is not left-aligned"):
        crf.predict(np.zeros((2, 3, 2)), mask=np.array([[1, 1, 0], [0, 1, 1]], bool))
    with pytest.raises(ShapeError, match=r"shape \(F, 2\)"):
        CRF.from_weights(np.zeros((2, 3)), np.zeros((2, 2)), ["a", "b"])


def test_scikit_learn_clone_and_params():
    sklearn_base = pytest.importorskip("sklearn.base")
    crf = CRF(c1=0.2, c2=0.3, max_iterations=7)
    twin = sklearn_base.clone(crf)
    assert twin.get_params() == crf.get_params() and twin is not crf
    assert crf.set_params(c2=1.5).c2 == 1.5
    with pytest.raises(ModelError, match="no parameter 'c3'"):
        crf.set_params(c3=1)


def test_errors_on_parameters_and_unfitted():
    X, y = _toy_dicts()
    with pytest.raises(ModelError, match="not fitted"):
        CRF().predict(X)
    with pytest.raises(ModelError, match="c2 must be a finite number >= 0, got -1"):
        CRF(c2=-1).fit(X, y)
    with pytest.raises(ModelError, match="solver='scipy'"):
        CRF(c1=0.1, solver="scipy").fit(X, y)
    with pytest.raises(ModelError, match="max_iterations"):
        CRF(max_iterations=1.5).fit(X, y)
