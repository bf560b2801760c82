"""CausalHead.save / load: exact round trip (JSON + .npz, no pickle), typed errors on broken files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from causalnet.errors import ModelError, ModelFileNotFoundError, ShapeError
from causalnet.io import bundle
from causalnet.models.causal_head import CausalHead


@pytest.fixture
def head():
    h = CausalHead.initialise(vocab_size=5, hidden=3, num_id=4, causal_dim=2, alpha=0.25, lam=0.5,
                              detach_gate=True, seed=0)
    rng = np.random.default_rng(1)
    z, lab = rng.normal(size=(4, 3, 3)), rng.integers(0, 5, (4, 3))
    return h.fit(z, lab, rng.normal(size=(4, 3)), steps=5, seed=0, progress=False), z


def test_exact_round_trip(head, tmp_path):
    h, z = head
    h.save(tmp_path / "head.json")
    back = CausalHead.load(tmp_path / "head.json")
    assert back.meta() == h.meta() and back.history_ == h.history_
    assert back.params.keys() == h.params.keys()
    for k, v in h.params.items():
        np.testing.assert_array_equal(back.params[k], v)
        assert back.params[k].shape == v.shape
    a, b = h.forward(z), back.forward(z)
    np.testing.assert_array_equal(a.probs, b.probs)
    np.testing.assert_array_equal(a.loc_Y, b.loc_Y)


def test_missing_damaged_and_inconsistent_files_are_typed(head, tmp_path):
    h, _ = head
    path = tmp_path / "head.json"
    with pytest.raises(ModelFileNotFoundError):
        CausalHead.load(path)
    h.save(path)
    doc = json.loads(path.read_text())
    doc["meta"]["settings"]["num_id"] = 9
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="num_id"):
        CausalHead.load(path)
    doc["meta"]["settings"]["num_id"] = True
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="wrong types"):
        CausalHead.load(path)
    doc["meta"]["settings"]["num_id"] = 4
    doc["meta"]["history"] = {"loss": ["x"]}
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="malformed CausalHead file"):
        CausalHead.load(path)
    # a consistent pair whose arrays have the wrong shapes: refused by the constructor's checks
    p = h.params
    p["W_cls"] = p["W_cls"][:, :1]
    bundle.save(path, "causalnet.CausalHead", {"settings": h.meta(), "history": {}}, p)
    with pytest.raises(ShapeError, match="has shape"):
        CausalHead.load(path)
    bundle.arrays_path(path).write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ModelError, match="SHA-256"):
        CausalHead.load(path)
