"""Saving a fitted CRF: JSON for the labels, attributes and settings, ``.npz`` for the weights.

A fitted :class:`~causalnet.models.crf.estimator.CRF` is its two weight arrays —
``state_weights_`` (F, K) and ``transition_weights_`` (K, K) — plus the names that give
their rows and columns a meaning: ``classes_`` (K labels) and ``attributes_`` (F names,
``"key:value"`` strings for dict features, column indices for dense input). The names go
into the JSON file as JSON values, so they come back with their types (``1`` stays an int,
``"1"`` a string); the weights go into the ``.npz``, bytes for bytes
(:mod:`causalnet.io.bundle`). The constructor parameters are kept, except ``callback``
(a function cannot be written without pickle; it is saved as ``None``), and so are
``training_log_`` and ``n_iter_``. Labels and attribute names must therefore be strings,
integers, finite floats, booleans or ``None``; other hashables (tuples, ...) are refused
with a ModelError naming one.

Examples
--------
>>> import tempfile, pathlib
>>> from causalnet.models.crf import CRF
>>> crf = CRF(c2=0.01, max_iterations=20).fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]])
>>> path = pathlib.Path(tempfile.mkdtemp()) / "tagger.json"
>>> crf.save(path)
>>> CRF.load(path).predict([[{"w": "b"}, {"w": "a"}]])
[['B', 'A']]
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from ...errors import ModelError
from ...io import bundle

__all__ = ["KIND", "save", "load"]

#: The ``kind`` of a CRF estimator file.
KIND = "causalnet.CRF"


def _json_name(value: Any, what: str) -> Any:
    if value is None or isinstance(value, (str, bool, int)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return _json_name(value.item(), what)
    raise ModelError(f"cannot save {what} {value!r} of type {type(value).__name__}: names must be strings, "
                     f"integers, finite floats, booleans or None")


def _json_params(params: dict) -> dict:
    out = {}
    for name, value in params.items():
        if name == "callback":
            out[name] = None
        elif isinstance(value, np.generic):
            out[name] = value.item()
        else:
            out[name] = value
    return out


def save(crf, path: str | os.PathLike) -> None:
    """Write the fitted `crf` to `path` (JSON) and its weights beside it (``.npz``); see the module."""
    meta = {
        "params": _json_params(crf.get_params()),
        "classes": [_json_name(c, "label") for c in crf.classes_],
        "attributes": [_json_name(a, "attribute name") for a in crf.attributes_],
        "training_log": crf.training_log_,
        "n_iter": int(crf.n_iter_),
    }
    arrays = {"state_weights": crf.state_weights_, "transition_weights": crf.transition_weights_}
    bundle.save(path, KIND, meta, arrays)


def load(cls, path: str | os.PathLike):
    """The CRF of class `cls` written by :func:`save` at `path` (exact weights, names and settings).

    Raises
    ------
    ModelFileNotFoundError
        If the JSON file or its ``.npz`` is missing.
    ModelError
        If either file is damaged, of another kind, or its parts disagree (shapes,
        repeated names, bad parameters).
    """
    meta, arrays = bundle.load(path, KIND)
    name = os.fspath(path)
    try:
        params, classes, attributes = dict(meta["params"]), list(meta["classes"]), list(meta["attributes"])
        log, n_iter = list(meta["training_log"]), meta["n_iter"]
        W, A = arrays["state_weights"], arrays["transition_weights"]
    except (KeyError, TypeError) as e:
        raise ModelError(f"{name!r}: malformed CRF file ({type(e).__name__}: {e})") from None
    if not isinstance(n_iter, int) or isinstance(n_iter, bool) or not all(isinstance(r, dict) for r in log):
        raise ModelError(f"{name!r}: malformed CRF file (n_iter must be an integer, training_log a list of records)")
    if W.dtype != np.float64 or A.dtype != np.float64:
        raise ModelError(f"{name!r}: CRF weights must be float64; got {W.dtype} and {A.dtype}")
    crf = cls.from_weights(W, A, classes, attributes)
    crf.set_params(**params)
    crf.training_log_ = log
    crf.n_iter_ = n_iter
    return crf
