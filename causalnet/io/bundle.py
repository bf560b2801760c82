"""Estimator files: a JSON document for the settings plus an ``.npz`` for the arrays, no pickle.

Estimators (the CRF, the CausalQwen head, HMMs, ...) save as two files side by side:

- ``model.json`` — readable text: the format, the estimator's `kind`, its settings and
  small metadata (``meta``), and an index of the arrays (name, shape, dtype) with the
  SHA-256 of the array file;
- ``model.npz`` — the arrays (numpy's zip of ``.npy``), read with ``allow_pickle=False``.

Floats round-trip exactly in both (JSON writes ``repr(float)``; ``.npy`` stores the bytes).
Writing is atomic per file (:func:`causalnet.io.files.atomic_write`), arrays first; a save that
fails on the JSON file puts the old arrays back, so the old pair still loads. The hash
in the JSON ties the pair together, so a crash between the two writes, an ``.npz`` from
another save, or a damaged one is refused on load with a :class:`~causalnet.errors.ModelError`
instead of giving a model with other weights. Reading goes through the bounded readers
(``max_file_bytes``, ``max_nesting``). A missing file raises
:class:`~causalnet.errors.ModelFileNotFoundError` (also ``FileNotFoundError``).

Examples
--------
>>> import tempfile, pathlib, numpy as np
>>> from causalnet.io import bundle
>>> path = pathlib.Path(tempfile.mkdtemp()) / "m.json"
>>> bundle.save(path, "demo", {"alpha": 0.1}, {"W": np.eye(2)})
>>> sorted(p.name for p in path.parent.iterdir())
['m.json', 'm.npz']
>>> meta, arrays = bundle.load(path, "demo")
>>> meta, arrays["W"].tolist()
({'alpha': 0.1}, [[1.0, 0.0], [0.0, 1.0]])
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from .files import as_path, atomic_write, decode_text, parse, read_model_bytes

__all__ = ["FORMAT", "VERSION", "arrays_path", "save", "load"]

#: The ``format`` field of every estimator file.
FORMAT = "causalnet.estimator"
#: The current version of the layout; files of a newer version are refused.
VERSION = 1


def arrays_path(path: str | os.PathLike) -> Path:
    """The ``.npz`` beside the JSON file `path` (``m.json`` -> ``m.npz``; ``m`` -> ``m.npz``)."""
    path = as_path(path, "the estimator file")
    return path.with_suffix(".npz") if path.suffix.lower() == ".json" else path.with_name(path.name + ".npz")


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def save(path: str | os.PathLike, kind: str, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
    """Write `meta` (JSON values) to `path` and `arrays` to :func:`arrays_path` of it.

    Parameters
    ----------
    path : str or path-like
        The JSON file; the arrays go beside it.
    kind : str
        What is saved (checked by :func:`load`), e.g. ``"causalnet.CRF"``.
    meta : mapping
        JSON values only (no NaN or infinity).
    arrays : mapping name -> ndarray
        Numeric or boolean arrays (object arrays would need pickle and are refused).

    Raises
    ------
    ModelError
        If `meta` is not JSON or an array holds Python objects.
    ModelFileNotFoundError, ModelFilePermissionError
        If the folder does not exist or is not writable.
    """
    path = as_path(path, "the estimator file")
    index = {}
    for name, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.kind not in "biufcU":
            raise ModelError(f"cannot save array {name!r} of dtype {a.dtype} without pickle; use numbers or strings")
        index[name] = {"shape": list(a.shape), "dtype": a.dtype.str}
    raw = _npz_bytes(arrays)
    doc = {"format": FORMAT, "version": VERSION, "kind": kind,
           "arrays": {"file": arrays_path(path).name, "sha256": hashlib.sha256(raw).hexdigest(), "index": index},
           "meta": meta}
    try:
        text = json.dumps(doc, indent=1, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise ModelError(f"cannot save {kind}: its settings are not plain JSON values ({e})") from None
    _write_pair(path, raw, text + "\n")


def _write_pair(path: Path, raw: bytes, text: str) -> None:
    """The arrays, then the JSON, each atomically; if the JSON write fails, the old arrays are put back.

    A hard link keeps the old ``.npz`` reachable while the new one replaces it, so a
    failed save (file-size limit, full disk, permissions) leaves the old pair loadable.
    """
    npz = arrays_path(path)
    keep = npz.with_name(f".{npz.name}.{os.getpid()}.old")
    try:
        os.link(npz, keep)
    except OSError:                                     # no old arrays, or no hard links here
        keep = None
    replaced = False
    try:
        atomic_write(npz, raw)
        replaced = True
        atomic_write(path, text)
    except BaseException:
        if keep is not None and replaced:
            os.replace(keep, npz)
        raise
    finally:
        if keep is not None and os.path.lexists(keep):     # a rename onto a link of the same file leaves it
            os.unlink(keep)


def _header(path: Path, kind: str) -> dict:
    doc = parse(decode_text(read_model_bytes(path), path.name))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelError(f"{str(path)!r} is not a causalnet estimator file (no \"format\": {FORMAT!r})")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= VERSION:
        raise ModelError(f"{str(path)!r}: estimator file version {version!r}; this causalnet reads 1..{VERSION}")
    if doc.get("kind") != kind:
        raise ModelError(f"{str(path)!r} holds a {doc.get('kind')!r}, not a {kind!r}")
    arrays = doc.get("arrays")
    if not (isinstance(arrays, dict) and isinstance(arrays.get("index"), dict) and isinstance(arrays.get("sha256"), str)
            and isinstance(doc.get("meta"), dict)):
        raise ModelError(f"{str(path)!r}: malformed estimator file (needs \"arrays\" with index and sha256, and "
                         f"\"meta\")")
    return doc


def load(path: str | os.PathLike, kind: str) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` from a pair written by :func:`save` for `kind`.

    Raises
    ------
    ModelFileNotFoundError
        If the JSON file or its ``.npz`` is missing (also ``FileNotFoundError``).
    ModelError
        If either file is malformed, of another kind or version, or the ``.npz`` is not the
        one saved with the JSON (hash), lacks an array or holds one of another shape or dtype.
    ResourceError
        If a file is larger than ``max_file_bytes``.
    """
    path = as_path(path, "the estimator file")
    doc = _header(path, kind)
    npz = arrays_path(path)
    raw = read_model_bytes(npz, text=False)
    if hashlib.sha256(raw).hexdigest() != doc["arrays"]["sha256"]:
        raise ModelError(f"{str(npz)!r} is not the array file saved with {str(path)!r} (its SHA-256 differs): "
                         f"damaged, or from another save")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ModelError(f"{str(npz)!r}: not a readable .npz ({e})") from None
    for name, spec in doc["arrays"]["index"].items():
        a = arrays.get(name)
        if a is None:
            raise ModelError(f"{str(npz)!r} lacks the array {name!r}")
        if not isinstance(spec, dict) or list(a.shape) != spec.get("shape") or a.dtype.str != spec.get("dtype"):
            raise ModelError(f"{str(npz)!r}: array {name!r} has shape {a.shape} and dtype {a.dtype.str}; the index "
                             f"says {spec!r}")
    return doc["meta"], {name: arrays[name] for name in doc["arrays"]["index"]}
