"""CRF.save / CRF.load: exact round trip through JSON + .npz, and typed errors on broken files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from causalnet.errors import ModelError, ModelFileNotFoundError
from causalnet.io import bundle
from causalnet.models.crf import CRF, synthetic_tagging


@pytest.fixture(scope="module")
def fitted():
    X, y = synthetic_tagging(20, mean_len=5, n_words=50, seed=3)
    return CRF(c1=0.01, c2=0.1, max_iterations=10, all_possible_transitions=True).fit(X, y), X


def test_exact_round_trip(fitted, tmp_path):
    crf, X = fitted
    crf.save(tmp_path / "m.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.npz"]
    back = CRF.load(tmp_path / "m.json")
    np.testing.assert_array_equal(back.state_weights_, crf.state_weights_)
    np.testing.assert_array_equal(back.transition_weights_, crf.transition_weights_)
    assert back.classes_ == crf.classes_ and back.attributes_ == crf.attributes_
    assert back.get_params() == crf.get_params()
    assert back.training_log_ == crf.training_log_ and back.n_iter_ == crf.n_iter_
    assert back.predict(X) == crf.predict(X)
    assert back.predict_marginals(X) == crf.predict_marginals(X)  # same weights, same floats
    assert back.state_features_ == crf.state_features_


def test_label_and_attribute_types_survive_and_dense_input_works(tmp_path):
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(4, 3)), rng.normal(size=(3, 3))]
    y = [[1, 2, 1, 2], [2, 1, 1]]
    crf = CRF(c2=0.1, max_iterations=10).fit(X, y)
    crf.save(tmp_path / "dense")  # no suffix: arrays in dense.npz
    back = CRF.load(tmp_path / "dense")
    assert back.classes_ == [1, 2] and all(type(c) is int for c in back.classes_)
    assert back.attributes_ == [0, 1, 2]
    assert back.predict(X) == crf.predict(X)


def test_unsaveable_names_and_unfitted_are_model_errors(tmp_path):
    with pytest.raises(ModelError, match="not fitted"):
        CRF().save(tmp_path / "x.json")
    crf = CRF.from_weights(np.zeros((1, 2)), np.zeros((2, 2)), [("a", 1), "b"])
    with pytest.raises(ModelError, match=r"cannot save label \('a', 1\)"):
        crf.save(tmp_path / "x.json")
    assert list(tmp_path.iterdir()) == []


def test_callback_is_not_saved(fitted, tmp_path):
    crf, _ = fitted
    crf = CRF.from_weights(crf.state_weights_, crf.transition_weights_, crf.classes_, crf.attributes_)
    crf.set_params(callback=print)
    crf.save(tmp_path / "m.json")
    assert CRF.load(tmp_path / "m.json").callback is None


def test_missing_and_corrupted_files_are_typed(fitted, tmp_path):
    crf, _ = fitted
    path = tmp_path / "m.json"
    with pytest.raises(ModelFileNotFoundError, match="m.json"):
        CRF.load(path)
    with pytest.raises(FileNotFoundError):
        CRF.load(path)
    crf.save(path)
    npz = bundle.arrays_path(path)
    raw = npz.read_bytes()
    npz.unlink()
    with pytest.raises(ModelFileNotFoundError, match="m.npz"):
        CRF.load(path)
    npz.write_bytes(raw[:-10] + b"0123456789")
    with pytest.raises(ModelError, match="SHA-256 differs"):
        CRF.load(path)
    npz.write_bytes(raw)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ModelError, match="malformed JSON"):
        CRF.load(path)
    doc = json.loads(text)
    doc["kind"] = "causalnet.CausalHead"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="not a 'causalnet.CRF'"):
        CRF.load(path)
    doc["kind"] = "causalnet.CRF"
    doc["meta"]["classes"] = doc["meta"]["classes"][:-1]
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="shape"):
        CRF.load(path)
    doc["meta"]["classes"] = ["A"] * len(crf.classes_)
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="distinct"):
        CRF.load(path)
    del doc["meta"]["n_iter"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="malformed CRF file"):
        CRF.load(path)
