"""causalnet.io.bundle: JSON + .npz estimator files, exact, atomic, no pickle, typed errors."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest

from causalnet import limits
from causalnet.errors import ModelError, ModelFileNotFoundError, ResourceError
from causalnet.io import bundle


def test_round_trip_is_bit_exact(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"W": rng.normal(size=(3, 4)), "b": np.array(np.pi), "i": np.arange(5, dtype=np.int32),
              "m": np.array([True, False]), "tiny": np.array([5e-324, -0.0, 1e308])}
    meta = {"x": 0.1 + 0.2, "names": ["a", 1, None, True]}
    bundle.save(tmp_path / "e.json", "k", meta, arrays)
    m, a = bundle.load(tmp_path / "e.json", "k")
    assert m == meta
    for k, v in arrays.items():
        assert a[k].dtype == v.dtype and a[k].shape == v.shape and a[k].tobytes() == v.tobytes()


def test_object_arrays_and_non_json_meta_are_refused_before_writing(tmp_path):
    with pytest.raises(ModelError, match="without pickle"):
        bundle.save(tmp_path / "e.json", "k", {}, {"o": np.array([{}], dtype=object)})
    with pytest.raises(ModelError, match="not plain JSON"):
        bundle.save(tmp_path / "e.json", "k", {"f": float("nan")}, {})
    assert list(tmp_path.iterdir()) == []


def test_a_pickled_npz_is_refused(tmp_path):
    path = tmp_path / "e.json"
    bundle.save(path, "k", {}, {"W": np.zeros(2)})
    buf = io.BytesIO()
    np.savez(buf, W=np.array([{"evil": 1}], dtype=object))
    raw = buf.getvalue()
    bundle.arrays_path(path).write_bytes(raw)
    doc = json.loads(path.read_text())
    doc["arrays"]["sha256"] = hashlib.sha256(raw).hexdigest()  # even with a matching hash
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="not a readable .npz"):
        bundle.load(path, "k")


def test_header_errors(tmp_path):
    path = tmp_path / "e.json"
    with pytest.raises(ModelFileNotFoundError):
        bundle.load(path, "k")
    path.write_text('{"format": "other"}')
    with pytest.raises(ModelError, match="not a causalnet estimator file"):
        bundle.load(path, "k")
    bundle.save(path, "k", {}, {"W": np.zeros(2)})
    doc = json.loads(path.read_text())
    doc["version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="version 99"):
        bundle.load(path, "k")
    doc["version"] = 1
    doc["arrays"]["index"]["V"] = {"shape": [2], "dtype": "<f8"}
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="lacks the array 'V'"):
        bundle.load(path, "k")
    with limits.override(max_file_bytes=100):
        with pytest.raises(ResourceError):
            bundle.load(path, "k")


def test_a_save_that_fails_on_the_json_file_leaves_the_old_pair_loadable(tmp_path, monkeypatch):
    """The arrays are replaced first; when the JSON write then fails (here: the file-size limit's typed error),
    the old arrays are put back, so the old pair still loads, and no stray file is left beside them."""
    import causalnet.io.bundle as bundle_module
    from causalnet.errors import ModelFileWriteError

    path = tmp_path / "m.json"
    bundle.save(path, "demo", {"v": 1}, {"W": np.eye(2)})
    before = sorted(p.name for p in tmp_path.iterdir())
    real = bundle_module.atomic_write

    def failing(target, data, **kw):
        if str(target).endswith(".json"):
            raise ModelFileWriteError(27, "File too large", str(target))
        return real(target, data, **kw)

    monkeypatch.setattr(bundle_module, "atomic_write", failing)
    with pytest.raises(ModelFileWriteError):
        bundle.save(path, "demo", {"v": 2}, {"W": 3 * np.eye(2)})
    monkeypatch.undo()
    meta, arrays = bundle.load(path, "demo")
    assert meta == {"v": 1} and arrays["W"].tolist() == np.eye(2).tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
