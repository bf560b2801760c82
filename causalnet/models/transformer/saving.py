"""Saving a network of tensor ops: JSON for the graph and settings, ``.npz`` for the weights; no pickle.

What every builder of :mod:`causalnet.models.transformer` returns — and any
:class:`~causalnet.model.CausalModel` made of the ops of
:mod:`causalnet.mechanisms.tensor` (an MLP, an RNN unrolled by
:mod:`causalnet.models.recurrent`) — is saved node by node, not by the builder
call that made it: ``save(model, "m.json")`` writes ``m.npz`` (every weight
array, shared arrays once, e.g. GPT-2's tied embedding) and then ``m.json``
(through :mod:`causalnet.io.bundle`, each file atomically, the JSON holding the
SHA-256 of the arrays). The JSON lists the nodes in the model's order, each
with its op (a class of :mod:`causalnet.mechanisms.tensor`), its parents and
its constructor arguments: numbers, strings and dtypes as JSON values, arrays
as ``{"array": key}`` references into the ``.npz``. Loading calls the same
constructors with the same arguments, so the weights come back bit for bit
and the loaded model gives the same outputs, the same node names, the same
``do`` sites and the same :func:`~causalnet.models.transformer.generate`
results.

Constant interventions (``model.do({"dec.0.self.A": 0.0})``) and affine ones
(:func:`causalnet.shift`) are saved with the node's natural op and re-applied on
load; a callable intervention or a mechanism that is not a tensor op holds
Python code, cannot be written without pickle, and is a ModelError naming the
node.

Loading never evaluates anything: op names are looked up among the tensor ops,
``np.load(allow_pickle=False)`` reads the arrays, and a missing, damaged or
mismatched file is a :class:`~causalnet.errors.ModelError` (or
:class:`~causalnet.errors.ModelFileNotFoundError`) naming the file and the
place in it, e.g. ``nodes[3].params.weight``.

Examples
--------
>>> import tempfile, pathlib, numpy as np
>>> from causalnet.models import transformer as tf
>>> m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "gpt.json"
>>> tf.save(m, path)
>>> m2 = tf.load(path)
>>> x = np.array([[1, 2, 3]])
>>> bool((m2.forward({"x": x})["I"] == m.forward({"x": x})["I"]).all()), m2.nodes == m.nodes
(True, True)
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import CausalNetError, ModelError
from ...io import bundle
from ...mechanisms import tensor as ops
from ...mechanisms.intervened import AffineIntervention, Intervened
from ...mechanisms.tensor import TensorOp
from ...model import CausalModel

__all__ = ["KIND", "OPS", "save", "load", "to_parts", "from_parts"]

#: The ``kind`` of a tensor-network file (:mod:`causalnet.io.bundle`).
KIND = "causalnet.TensorNetwork"

#: The ops a file may name: the tensor ops of :mod:`causalnet.mechanisms.tensor`.
OPS: dict[str, type] = {name: getattr(ops, name) for name in ops.__all__
                        if isinstance(getattr(ops, name), type) and issubclass(getattr(ops, name), TensorOp)
                        and getattr(ops, name) is not TensorOp}

#: Constructor arguments kept under another attribute name.
_ALIASES = {"padding": "has_padding"}
_PARENT_ARGS = ("parent", "parents")


def _arguments(cls: type) -> list[str]:
    """The constructor arguments of an op other than its parents, in order."""
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self" and p not in _PARENT_ARGS]


class _Writer:
    """Encodes constructor arguments as JSON values, collecting arrays (equal arrays once: tied weights)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._keys: dict[tuple, str] = {}

    def array(self, a: np.ndarray, key: str) -> dict:
        a = np.ascontiguousarray(a)
        sig = (a.dtype.str, a.shape, hashlib.sha1(a.reshape(-1).view(np.uint8)).hexdigest())
        old = self._keys.get(sig)
        if old is not None and self.arrays[old].tobytes() == a.tobytes():
            return {"array": old}
        while key in self.arrays:  # two nodes whose names collide once joined: keep both arrays
            key += "_"
        self._keys[sig] = key
        self.arrays[key] = a
        return {"array": key}

    def value(self, v: Any, key: str, node: str) -> Any:
        if isinstance(v, np.ndarray):
            return self.array(v, key)
        if isinstance(v, np.dtype):
            return {"dtype": v.str}
        if isinstance(v, (list, tuple)):
            if v and all(isinstance(a, np.ndarray) for a in v):
                return {"arrays": [self.array(a, f"{key}.{i}")["array"] for i, a in enumerate(v)]}
            return [self.value(a, f"{key}.{i}", node) for i, a in enumerate(v)]
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            raise ModelError(f"cannot save node {node!r}: argument {key!r} is {v!r}")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise ModelError(f"cannot save node {node!r}: argument {key!r} holds a {type(v).__name__}, which cannot "
                         f"be written without pickle")


def _node_entry(w: _Writer, node: Any, mech: Any) -> dict:
    if not isinstance(node, str):
        raise ModelError(f"cannot save node {node!r}: node names must be strings")
    cls = type(mech)
    if OPS.get(cls.__name__) is not cls:
        raise ModelError(f"cannot save node {node!r}: its mechanism {cls.__name__} is not a tensor op of "
                         f"causalnet.mechanisms.tensor (it may hold Python code)")
    params = {}
    for arg in _arguments(cls):
        attr = _ALIASES.get(arg, arg)
        if not hasattr(mech, attr):
            raise ModelError(f"cannot save node {node!r}: {cls.__name__} keeps no attribute for its argument "
                             f"{arg!r}")
        params[arg] = w.value(getattr(mech, attr), f"{node}.{arg}", node)
    return {"name": node, "op": cls.__name__, "parents": list(mech.parents), "params": params}


def _intervention(w: _Writer, node: str, mech: Intervened) -> dict:
    if isinstance(mech.value, AffineIntervention):
        return {"node": node, "affine": [mech.value.scale, mech.value.offset]}
    if callable(mech.value):
        raise ModelError(f"cannot save node {node!r}: its intervention is a Python callable; only constants and "
                         f"affine shifts (cn.shift, cn.affine) can be saved")
    return {"node": node, "value": w.array(np.asarray(mech.value), f"{node}.do")}


def to_parts(model: CausalModel) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)``: the JSON description of `model` and the arrays it refers to.

    Raises
    ------
    ModelError
        If a node is not a tensor op, its name is not a string, or it is under a callable intervention.
    """
    if not isinstance(model, CausalModel):
        raise ModelError(f"save expects a CausalModel, got {type(model).__name__}")
    w = _Writer()
    nodes, dos = [], []
    for node, mech in model.mechanisms.items():
        if isinstance(mech, Intervened):
            dos.append(_intervention(w, node, mech))
            mech = mech.natural
        nodes.append(_node_entry(w, node, mech))
    return {"nodes": nodes, "latent": sorted(model.latent), "interventions": dos}, w.arrays


def save(model: CausalModel, path: str | os.PathLike) -> None:
    """Write `model` to `path` (JSON) and its arrays beside it (``.npz``), each atomically; see the module.

    Parameters
    ----------
    model : CausalModel
        Made of tensor ops (any builder of :mod:`causalnet.models.transformer`).
    path : str or path-like
        The JSON file; ``m.json`` puts the arrays in ``m.npz``.

    Raises
    ------
    ModelError
        If a node cannot be saved without pickle (see :func:`to_parts`).
    ModelFileNotFoundError, ModelFilePermissionError
        If the folder does not exist or is not writable.
    """
    meta, arrays = to_parts(model)
    bundle.save(path, KIND, meta, arrays)


# -- loading ------------------------------------------------------------------------------------------


def _field(d: Any, key: str, kind: type | tuple, at: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise ModelError(f"{at}: missing field {key!r}")
    v = d[key]
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise ModelError(f"{at}.{key}: expected {getattr(kind, '__name__', kind)}, got {type(v).__name__}")
    return v


def _decode(v: Any, arrays: Mapping[str, np.ndarray], at: str) -> Any:
    if isinstance(v, list):
        return [_decode(a, arrays, f"{at}[{i}]") for i, a in enumerate(v)]
    if not isinstance(v, dict):
        return v
    if set(v) == {"array"} and isinstance(v["array"], str):
        if v["array"] not in arrays:
            raise ModelError(f"{at}: the array file has no array {v['array']!r}")
        return arrays[v["array"]]
    if set(v) == {"arrays"} and isinstance(v["arrays"], list):
        return [_decode({"array": k}, arrays, f"{at}[{i}]") for i, k in enumerate(v["arrays"])]
    if set(v) == {"dtype"} and isinstance(v["dtype"], str):
        try:
            return np.dtype(v["dtype"])
        except TypeError:
            raise ModelError(f"{at}: {v['dtype']!r} is not a numpy dtype") from None
    raise ModelError(f"{at}: expected a number, string, list, {{\"array\": key}} or {{\"dtype\": name}}, got {v!r}")


def _build_node(entry: Any, at: str, arrays: Mapping[str, np.ndarray]) -> tuple[str, TensorOp]:
    name = _field(entry, "name", str, at)
    op = _field(entry, "op", str, at)
    if op not in OPS:
        raise ModelError(f"{at}.op: unknown op {op!r}; a file may name the tensor ops {sorted(OPS)}")
    parents = _field(entry, "parents", list, at)
    if not all(isinstance(p, str) for p in parents):
        raise ModelError(f"{at}.parents: node names must be strings, got {parents!r}")
    raw = _field(entry, "params", dict, at)
    cls = OPS[op]
    args = _arguments(cls)
    if set(raw) != set(args):
        raise ModelError(f"{at}.params: {op} takes the arguments {args}; the file gives {sorted(raw)}")
    params = {k: _decode(v, arrays, f"{at}.params.{k}") for k, v in raw.items()}
    lead = () if op == "Input" else (parents,)
    if op == "Input" and parents:
        raise ModelError(f"{at}.parents: an Input has no parents, got {parents!r}")
    try:
        return name, cls(*lead, **params)
    except CausalNetError as e:
        raise ModelError(f"{at} (node {name!r}): {e}") from None
    except (TypeError, ValueError, IndexError) as e:
        raise ModelError(f"{at} (node {name!r}): bad arguments for {op} ({type(e).__name__}: {e})") from None


def _interventions(model: CausalModel, dos: Any, arrays: Mapping[str, np.ndarray]) -> CausalModel:
    if not isinstance(dos, list):
        raise ModelError(f"interventions: expected a list, got {type(dos).__name__}")
    values = {}
    for i, d in enumerate(dos):
        at = f"interventions[{i}]"
        node = _field(d, "node", str, at)
        if node not in model:
            raise ModelError(f"{at}.node: no node {node!r} in the file")
        if "affine" in d:
            a = _field(d, "affine", list, at)
            if len(a) != 2:
                raise ModelError(f"{at}.affine: expected [scale, offset], got {a!r}")
            values[node] = AffineIntervention(*a)
        else:
            values[node] = _decode(_field(d, "value", dict, at), arrays, f"{at}.value")
    return model.do(values) if values else model


def from_parts(meta: Mapping, arrays: Mapping[str, np.ndarray]) -> CausalModel:
    """The model described by :func:`to_parts` output (checked field by field)."""
    nodes = _field(meta, "nodes", list, "file")
    latent = _field(meta, "latent", list, "file")
    mechs: dict = {}
    for i, entry in enumerate(nodes):
        name, mech = _build_node(entry, f"nodes[{i}]", arrays)
        if name in mechs:
            raise ModelError(f"nodes[{i}].name: node {name!r} appears twice")
        mechs[name] = mech
    try:
        model = CausalModel(mechs, latent=latent)
    except CausalNetError as e:
        raise ModelError(f"nodes: the file's nodes do not form a model ({e})") from None
    return _interventions(model, _field(meta, "interventions", list, "file"), arrays)


def load(path: str | os.PathLike) -> CausalModel:
    """The model written by :func:`save` at `path` (exact weights, same nodes and interventions).

    Raises
    ------
    ModelFileNotFoundError
        If the JSON file or its ``.npz`` is missing (also ``FileNotFoundError``).
    ModelError
        If either file is damaged, of another kind, the ``.npz`` is not the one saved
        with the JSON, or a node's entry is malformed (named by its place in the file).
    ResourceError
        If a file is larger than ``max_file_bytes`` of :mod:`causalnet.limits` (raise it with
        ``cn.limits.override(max_file_bytes=...)`` for a large checkpoint).
    """
    meta, arrays = bundle.load(path, KIND)
    try:
        return from_parts(meta, arrays)
    except ModelError as e:
        raise ModelError(f"{os.fspath(path)!r}: {e}") from None
