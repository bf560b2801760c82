"""Saving an HMM: constructor parameters as JSON, arrays in an ``.npz`` beside it; no pickle.

``HMM.save("m.json")`` writes ``m.npz`` (every array: fitted ``startprob_``,
``transmat_``, emission parameters, array-valued constructor arguments) and
then ``m.json`` (the format tag, the constructor parameters with arrays
replaced by ``{"array": name}`` references, the EM history), each atomically.
Floats go through JSON's shortest round-trip repr (``inf``/``nan`` as
``{"float": "inf"}``), arrays through ``.npz`` bit for bit, so the loaded model
equals the saved one exactly. A ``numpy.random.Generator`` seed is not
saved (it is state, not a parameter): it loads as None.

>>> import tempfile, os, numpy as np
>>> from causalnet.models.hmm import HMM
>>> m = HMM(2, startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.4, 0.6]],
...         emissionprob=[[0.5, 0.5], [0.1, 0.9]])
>>> path = os.path.join(tempfile.mkdtemp(), "m.json")
>>> save_hmm(m, path)
>>> np.array_equal(load_hmm(HMM, path).transmat_, m.transmat_)
True
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np

from ...errors import ModelError
from ...io.files import atomic_write, read_model_bytes

__all__ = ["FORMAT", "save_hmm", "load_hmm", "npz_path"]

FORMAT = "causalnet.HMM"
VERSION = 1
_FITTED = ("startprob_", "transmat_", "emissionprob_", "means_", "_covars_", "lambdas_", "weights_")
_RENAMED = {"covars_": "_covars_"}  # files written before the stored form moved to _covars_


def npz_path(path):
    """The arrays file that goes with the JSON file ``path`` (same name, ``.npz``)."""
    p = Path(path)
    if p.suffix == ".npz":
        raise ModelError(f"save the HMM under a .json name (the arrays go beside it as .npz); got {str(p)!r}")
    return p.with_suffix(".npz")


def _encode(value, name, arrays):
    if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and not isinstance(value, str)):
        arrays[name] = np.asarray(value)
        return {"array": name}
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(value, np.random.Generator):
        return None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    raise ModelError(f"cannot save HMM parameter {name!r} of type {type(value).__name__}")


def _decode(value, arrays):
    if isinstance(value, dict):
        if "array" in value:
            return arrays[value["array"]]
        if "float" in value:
            return float(value["float"])
    return value


def save_hmm(model, path):
    """Write ``model`` to ``path`` (JSON) and :func:`npz_path` (arrays), each atomically."""
    npz = npz_path(path)
    arrays = {}
    params = {k: _encode(v, f"param.{k}", arrays) for k, v in model.get_params().items()}
    fitted = {}
    for name in _FITTED:
        if name in model.__dict__:
            arrays[f"fitted.{name}"] = np.asarray(model.__dict__[name])
            fitted[name] = f"fitted.{name}"
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "arrays": npz.name,
        "params": params,
        "fitted": fitted,
        "history": [_encode(float(h), "history", arrays) for h in getattr(model, "history_", [])],
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(npz, buf.getvalue())
    atomic_write(path, json.dumps(doc, indent=1, allow_nan=False))


def load_hmm(cls, path):
    """The HMM saved at ``path`` by :func:`save_hmm`.

    Raises
    ------
    ModelFileNotFoundError
        If the JSON or its ``.npz`` is missing.
    ModelError
        If the file is not a saved HMM.
    """
    try:
        doc = json.loads(read_model_bytes(path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelError(f"{str(path)!r} is not a saved HMM (not JSON: {e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelError(f"{str(path)!r} is not a saved HMM (format tag {FORMAT!r} missing)")
    if doc.get("version") != VERSION:
        raise ModelError(f"{str(path)!r} has HMM file version {doc.get('version')!r}; this causalnet reads {VERSION}")
    raw = read_model_bytes(npz_path(path), text=False)
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        params = {k: _decode(v, arrays) for k, v in doc["params"].items()}
        model = cls(**params)
        for name, key in doc["fitted"].items():
            name = _RENAMED.get(name, name)
            if name not in _FITTED:
                raise ModelError(f"unknown fitted attribute {name!r}")
            model.__dict__[name] = arrays[key]
        if doc["history"]:
            model.history_ = [float(_decode(h, arrays)) for h in doc["history"]]
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError(f"{str(path)!r} is not a valid saved HMM ({type(e).__name__}: {e})") from None
    return model
