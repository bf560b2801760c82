"""Model files: JSON save and load with an exact round trip.

A model file is plain JSON in a versioned schema::

    {"format": "causalnet-model", "version": 1,
     "nodes": [
      {"name": "Rain", "mechanism": {"type": "Categorical", "probs": [0.8, 0.2], "states": ["no", "yes"]}},
      {"name": "Wet", "mechanism": {"type": "CPT", "parents": ["Rain"], "table": [[0.9, 0.1], [0.2, 0.8]],
                                    "states": ["dry", "wet"]}}
     ],
     "latent": [],
     "interventions": {"Rain": "yes"}}

``nodes`` keeps the model's node order; each mechanism is its own
``to_dict()``, read back by the loader registered for its ``"type"`` (see
:func:`register_mechanism`; built in: ``Categorical``, ``CPT``,
``LinearGaussian``, ``CauchyLinear``, ``ConditionalLinearGaussian`` (its
``intercept``, ``weights`` and ``variance`` nested one level per discrete parent), the compact ``NoisyOR``, ``NoisyMax``
and ``Logistic``, which keep their structural parameters, never a table), and the influence diagram's ``Decision`` and ``Utility``.
A file with decisions or utilities loads as a
:class:`~causalnet.InfluenceDiagram`; its optional top-level ``"order"`` (the
decision order) and ``"limid"`` fields round-trip too. ``interventions`` (present only for an intervened model)
maps a node to its constant ``do`` value — a state name for a discrete node,
a number or nested list otherwise, or a list of those (one per row) — and
the file stores the node's natural mechanism, so loading rebuilds the model
and applies the ``do``.

Floats are written with ``repr`` precision (Python's shortest round-trip
form), so a load gives back every table, weight and value bit for bit.
State names may be strings, integers, booleans or floats; node names are
strings.

Loading never evaluates or unpickles anything. The whole file is checked
before a model is built; any problem — malformed JSON (with line and
column), an unknown format, version or mechanism type, a missing field or
one of the wrong type, a table of the wrong shape or with negative
probabilities, an unknown parent — is a :class:`~causalnet.errors.ModelError`
naming the place in the file as a JSON path, e.g.
``nodes[3].mechanism.table``. Mechanisms that hold Python code
(``Function``, ``Deterministic``, shift interventions) cannot be saved; the
error names the node.

Examples
--------
>>> import causalnet as cn
>>> from causalnet.io.json import from_json, to_json
>>> m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.LinearGaussian(["X"], [2.0], bias=0.1)})
>>> m2 = from_json(to_json(m))
>>> m2.mechanisms["Y"].bias == 0.1 and m2.dag == m.dag
True
>>> from_json('{"format": "causalnet-model", "version": 7, "nodes": []}')
Traceback (most recent call last):
...
causalnet.errors.ModelError: version: this causalnet reads model files of version 1; the file has version 7 (written by a newer causalnet?)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from .. import limits
from ..errors import CausalNetError, GraphError, ModelError, ResourceError
from ..mechanisms.base import DISCRETE, Mechanism
from ..mechanisms.cauchy import CauchyLinear
from ..mechanisms.compact import Logistic, NoisyMax, NoisyOR
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.decisions import Decision, Utility
from ..mechanisms.function import Deterministic, Function
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.intervened import Intervened
from ..mechanisms.tabular import CPT, Categorical
from ..model import CausalModel
from ..models.decisions.diagram import InfluenceDiagram
from .files import atomic_write, nesting_depth, parse, read_model_bytes

__all__ = [
    "FORMAT",
    "VERSION",
    "save_json",
    "load_json",
    "to_json",
    "from_json",
    "register_mechanism",
    "mechanism_from_dict",
    "parse",
    "nesting_depth",
]

FORMAT = "causalnet-model"
VERSION = 1

_TOP_FIELDS = ("format", "version", "nodes", "latent", "interventions", "order", "limid")


class _FieldError(ModelError):
    """A problem at a JSON path relative to the mechanism being loaded."""

    def __init__(self, path: str, msg: str) -> None:
        super().__init__(f"{path}: {msg}")
        self.path = path
        self.msg = msg


# -- validation helpers ---------------------------------------------------------------


def _kind(v: Any) -> str:
    """The JSON name of a Python value's type, for messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _need(d: dict, key: str, path: str) -> Any:
    if key not in d:
        raise _FieldError(path, f"missing field {key!r}")
    return d[key]


def _only(d: dict, allowed: tuple, path: str) -> None:
    extra = [k for k in d if k not in allowed]
    if extra:
        raise _FieldError(path, f"unknown field {extra[0]!r}; expected fields {list(allowed)}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(v: Any, path: str) -> float:
    if not _is_number(v):
        raise _FieldError(path, f"expected a number, got {_kind(v)}")
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise _FieldError(path, f"expected a finite number, got {v!r}")
    return f


def _name(v: Any, path: str) -> str:
    if not isinstance(v, str):
        raise _FieldError(path, f"expected a node name (a string), got {_kind(v)}")
    return v


def _names(v: Any, path: str) -> list[str]:
    if not isinstance(v, list):
        raise _FieldError(path, f"expected a list of node names, got {_kind(v)}")
    out = [_name(x, f"{path}[{i}]") for i, x in enumerate(v)]
    for i, x in enumerate(out):
        if x in out[:i]:
            raise _FieldError(f"{path}[{i}]", f"{x!r} is listed twice")
    return out


def _is_state(v: Any) -> bool:
    return isinstance(v, (str, int, bool)) or (isinstance(v, float) and math.isfinite(v))


def _states(v: Any, card: int, path: str) -> list:
    if not isinstance(v, list):
        raise _FieldError(path, f"expected a list of state names, got {_kind(v)}")
    for i, s in enumerate(v):
        if not _is_state(s):
            raise _FieldError(f"{path}[{i}]", f"expected a state name (a string or number), got {_kind(s)}")
        if any(s == t and type(s) is type(t) for t in v[:i]):
            raise _FieldError(f"{path}[{i}]", f"state {s!r} is listed twice")
    if len(v) != card:
        raise _FieldError(path, f"{len(v)} state names for {card} probabilities per row")
    return v


def _array(v: Any, path: str, ndim: int | None = None, what: str = "numbers") -> np.ndarray:
    """A rectangular nested list of JSON numbers -> float64 array (no bools, strings or nulls)."""
    if not isinstance(v, list):
        raise _FieldError(path, f"expected a list of {what}, got {_kind(v)}")
    try:
        obj = np.array(v, dtype=object)
    except ValueError:
        obj = None
    if obj is None or any(isinstance(x, list) for x in obj.flat):
        _ragged(v, path)
        raise _FieldError(path, "is not a rectangular table")
    for i, x in enumerate(obj.flat):
        if not _is_number(x):
            idx = np.unravel_index(i, obj.shape)
            raise _FieldError(path + "".join(f"[{int(j)}]" for j in idx), f"expected a number, got {_kind(x)}")
    try:
        arr = obj.astype(np.float64)
    except OverflowError:
        arr = np.array([float("inf")])
    if not np.all(np.isfinite(arr)):
        raise _FieldError(path, "holds a number too large to be finite")
    if ndim is not None and arr.ndim != ndim:
        raise _FieldError(path, f"expected {ndim} nested level{'s' if ndim != 1 else ''} of lists, "
                                f"got shape {arr.shape}")
    return arr


def _ragged(v: Any, path: str) -> None:
    """Raise at the first place where a nested list is not rectangular (return if it is)."""
    if not isinstance(v, list):
        return
    lists = [isinstance(x, list) for x in v]
    if any(lists) and not all(lists):
        i = lists.index(not lists[0])
        raise _FieldError(f"{path}[{i}]", f"expected {'a list' if lists[0] else 'a number'}, got {_kind(v[i])} "
                                          f"(the entries of a table must be nested to the same depth)")
    if all(lists) and v:
        n = len(v[0])
        for i, x in enumerate(v):
            if len(x) != n:
                raise _FieldError(f"{path}[{i}]", f"has {len(x)} entries, the first list has {n} (tables must "
                                                  f"be rectangular)")
        for i, x in enumerate(v):
            _ragged(x, f"{path}[{i}]")


def _build(path: str, fn: Callable, *args, **kwargs) -> Mechanism:
    """Call a mechanism constructor; its own errors (bad values) are put at `path`."""
    try:
        return fn(*args, **kwargs)
    except _FieldError:
        raise
    except ModelError as e:
        raise _FieldError(path, str(e)) from None


# -- built-in mechanism loaders ---------------------------------------------------------


def _load_categorical(d: dict) -> Mechanism:
    _only(d, ("type", "probs", "states"), "")
    probs = _array(_need(d, "probs", ""), "probs", 1, "probabilities")
    states = _states(_need(d, "states", ""), probs.shape[0], "states")
    return _build("probs", Categorical, probs, states=states)


def _load_cpt(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "table", "states"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    if not parents:
        raise _FieldError("parents", "a CPT needs at least one parent (use Categorical for a root)")
    table = _array(_need(d, "table", ""), "table", len(parents) + 1, "probabilities")
    states = _states(_need(d, "states", ""), table.shape[-1], "states")
    return _build("table", CPT, parents, table, states=states)


def _load_linear_gaussian(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "weights", "bias", "sigma"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    weights = _array(_need(d, "weights", ""), "weights", 1)
    if weights.shape != (len(parents),):
        raise _FieldError("weights", f"{weights.shape[0]} weights for {len(parents)} parents {parents}")
    bias = _number(_need(d, "bias", ""), "bias")
    sigma = _number(_need(d, "sigma", ""), "sigma")
    if sigma < 0:
        raise _FieldError("sigma", f"the noise standard deviation must be >= 0, got {sigma!r}")
    return _build("", LinearGaussian, parents, weights, bias=bias, sigma=sigma)


def _load_cauchy_linear(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "weights", "loc", "scale", "loc_parent", "scale_parent", "shape"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    raw_w = _need(d, "weights", "")
    if not isinstance(raw_w, list) or len(raw_w) != len(parents):
        raise _FieldError("weights", f"one weight array per parent ({len(parents)}) expected")
    weights = [np.asarray(w, dtype=np.float64) for w in raw_w]
    for i, w in enumerate(weights):
        if not np.all(np.isfinite(w)):
            raise _FieldError(f"weights[{i}]", "weights must be finite")
    loc = np.asarray(_need(d, "loc", ""), dtype=np.float64)
    scale = np.asarray(_need(d, "scale", ""), dtype=np.float64)
    shape = d.get("shape")
    return _build("", CauchyLinear, parents, weights, loc=loc, scale=scale, loc_parent=d.get("loc_parent"),
                  scale_parent=d.get("scale_parent"), shape=None if shape is None else tuple(shape))


# -- compact discrete mechanisms (noisy-OR, noisy-MAX, logistic) ------------------------------


def _compact_states(d: dict, card: int) -> list:
    return _states(_need(d, "states", ""), card, "states")


def _on_value(v: Any, parents: list, path: str) -> Any:
    """NoisyOR's ``on``: null, one state, a list of states (one per parent) or an object parent -> state."""
    if v is None or _is_state(v):
        return v
    if isinstance(v, list) and all(_is_state(x) for x in v):
        return v
    if isinstance(v, dict) and all(_is_state(x) for x in v.values()):
        unknown = [k for k in v if k not in parents]
        if unknown:
            raise _FieldError(f"{path}.{unknown[0]}", f"is not a parent; parents: {parents}")
        return v
    raise _FieldError(path, f"expected null, a state, a list of states or an object of states, got {_kind(v)}")


def _load_noisy_or(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "probs", "leak", "on", "states"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    probs = _array(_need(d, "probs", ""), "probs", 1, "probabilities")
    leak = _number(_need(d, "leak", ""), "leak")
    on = _on_value(d.get("on"), parents, "on")
    return _build("", NoisyOR, parents, probs, leak=leak, on=on,
                  states=_compact_states(d, 2))


def _load_noisy_max(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "tables", "leak", "states"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    raw = _need(d, "tables", "")
    if not isinstance(raw, list) or len(raw) != len(parents):
        raise _FieldError("tables", f"expected one table per parent ({len(parents)}), got {_kind(raw)}")
    tables = [_array(t, f"tables[{i}]", 2, "probabilities") for i, t in enumerate(raw)]
    leak = _array(_need(d, "leak", ""), "leak", 1, "probabilities")
    return _build("", NoisyMax, parents, tables, leak, states=_compact_states(d, leak.size))


def _load_logistic(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "weights", "bias", "states"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    weights = _array(_need(d, "weights", ""), "weights", 2)
    bias = _array(_need(d, "bias", ""), "bias", 1)
    return _build("", Logistic, parents, weights, bias,
                  states=_compact_states(d, bias.size))


def _load_decision(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "states"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    states = _need(d, "states", "")
    if not isinstance(states, list) or not states:
        raise _FieldError("states", f"expected a non-empty list of action names, got {_kind(states)}")
    return _build("states", Decision, parents, states=_states(states, len(states), "states"))


def _load_utility(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "table"), "")
    parents = _names(_need(d, "parents", ""), "parents")
    raw = _need(d, "table", "")
    table = _number(raw, "table") if not parents else _array(raw, "table", len(parents))
    return _build("table", Utility, parents, table)


def _load_conditional_linear_gaussian(d: dict) -> Mechanism:
    _only(d, ("type", "parents", "intercept", "weights", "variance"), "")
    parents = _names(_need(d, "parents", ""), "parents")

    def table(key):                                   # a number when there is no discrete parent
        v = _need(d, key, "")
        return np.float64(_number(v, key)) if not isinstance(v, list) else _array(v, key)

    return _build("", ConditionalLinearGaussian, parents, table("intercept"), table("weights"), table("variance"))


_REGISTRY: dict[str, Callable[[dict], Mechanism]] = {
    "Categorical": _load_categorical,
    "CPT": _load_cpt,
    "LinearGaussian": _load_linear_gaussian,
    "CauchyLinear": _load_cauchy_linear,
    "NoisyOR": _load_noisy_or,
    "NoisyMax": _load_noisy_max,
    "Logistic": _load_logistic,
    "Decision": _load_decision,
    "Utility": _load_utility,
    "ConditionalLinearGaussian": _load_conditional_linear_gaussian,
}


def register_mechanism(type_name: str, from_dict: Callable[[dict], Mechanism], *, replace: bool = False) -> None:
    """Teach :func:`load_json` a mechanism type.

    Parameters
    ----------
    type_name : str
        The ``"type"`` field the mechanism's ``to_dict()`` writes.
    from_dict : callable
        ``from_dict(d) -> Mechanism`` for the mechanism's dict ``d`` (with its
        ``"type"``). It must not evaluate code. Any :class:`ModelError`,
        ``KeyError`` (a missing field), ``TypeError`` or ``ValueError`` it
        raises is reported with the node's JSON path.
    replace : bool, default False
        Allow replacing an existing loader.

    Raises
    ------
    ModelError
        If `type_name` is taken (and not `replace`) or `from_dict` is not callable.
    """
    if not isinstance(type_name, str) or not type_name:
        raise ModelError(f"type_name must be a non-empty string, got {type_name!r}")
    if not callable(from_dict):
        raise ModelError(f"from_dict for {type_name!r} must be callable, got {type(from_dict).__name__}")
    if type_name in _REGISTRY and not replace:
        raise ModelError(f"mechanism type {type_name!r} already has a loader; pass replace=True to replace it")
    _REGISTRY[type_name] = from_dict


def mechanism_from_dict(d: Any, where: str = "mechanism") -> Mechanism:
    """Build one mechanism from its dict with the registered loader.

    `where` is the JSON path used in error messages.

    Raises
    ------
    ModelError
        Unknown ``"type"``, or whatever the loader finds wrong, at ``where.field``.
    """
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object, got {_kind(d)}")
    t = d.get("type")
    if t is None:
        raise ModelError(f"{where}: missing field 'type'")
    if not isinstance(t, str):
        raise ModelError(f"{where}.type: expected a string, got {_kind(t)}")
    loader = _REGISTRY.get(t)
    if loader is None:
        raise ModelError(f"{where}.type: unknown mechanism type {t!r}; known types: {sorted(_REGISTRY)}")
    try:
        mech = loader(d)
    except _FieldError as e:
        at = f"{where}.{e.path}" if e.path else where
        raise ModelError(f"{at}: {e.msg}") from None
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None
    except KeyError as e:
        raise ModelError(f"{where}: missing field {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        raise ModelError(f"{where}: {e}") from None
    if not isinstance(mech, Mechanism):
        raise ModelError(f"{where}: the loader for {t!r} returned {type(mech).__name__}, not a Mechanism")
    return mech


# -- loading ---------------------------------------------------------------------------


def _decode_do(model: CausalModel, node: str, v: Any, path: str) -> Any:
    spec = model.specs[node]
    if spec.kind == DISCRETE:
        def state(s, p):
            if not _is_state(s) or not any(s == t and type(s) is type(t) for t in spec.states):
                raise ModelError(f"{p}: {node!r} has no state {s!r}; states: {list(spec.states)}")
            return s
        if isinstance(v, list):
            if not v:
                raise ModelError(f"{path}: expected a state name or a non-empty list of them, got []")
            return np.array([state(s, f"{path}[{i}]") for i, s in enumerate(v)], dtype=object)
        return state(v, path)
    if _is_number(v):
        return _number(v, path)
    try:
        return _array(v, path, what="numbers (or a number)")
    except _FieldError as e:
        raise ModelError(str(e)) from None


def _check_header(doc: Any) -> None:
    """The top level: an object with the right format, version and fields."""
    if not isinstance(doc, dict):
        raise ModelError(f"expected a JSON object at the top level, got {_kind(doc)}")
    fmt = doc.get("format")
    if fmt != FORMAT:
        if "format" not in doc:
            raise ModelError(f"missing field 'format'; a causalnet model file has \"format\": {FORMAT!r}")
        raise ModelError(f"format: expected {FORMAT!r}, got {fmt!r}; this is not a causalnet model file")
    ver = doc.get("version")
    if "version" not in doc:
        raise ModelError("missing field 'version'")
    if not isinstance(ver, int) or isinstance(ver, bool):
        raise ModelError(f"version: expected an integer, got {_kind(ver)}")
    if ver != VERSION:
        newer = " (written by a newer causalnet?)" if ver > VERSION else ""
        raise ModelError(f"version: this causalnet reads model files of version {VERSION}; the file has "
                         f"version {ver}{newer}")
    try:
        _only(doc, _TOP_FIELDS, "")
    except _FieldError as e:
        raise ModelError(e.msg) from None


def _node_entry(entry: Any, at: str, index: dict) -> str:
    """The name of one ``nodes[i]`` entry, after checking its fields."""
    if not isinstance(entry, dict):
        raise ModelError(f"{at}: expected an object with 'name' and 'mechanism', got {_kind(entry)}")
    for key in entry:
        if key not in ("name", "mechanism"):
            raise ModelError(f"{at}: unknown field {key!r}; expected fields ['name', 'mechanism']")
    if "name" not in entry:
        raise ModelError(f"{at}: missing field 'name'")
    name = entry["name"]
    if not isinstance(name, str):
        raise ModelError(f"{at}.name: expected a string, got {_kind(name)}")
    if name in index:
        raise ModelError(f"{at}.name: node {name!r} appears twice (also nodes[{index[name]}])")
    if "mechanism" not in entry:
        raise ModelError(f"{at}: missing field 'mechanism'")
    return name


def _read_nodes(nodes: Any) -> tuple[dict[str, Mechanism], dict[str, int]]:
    if not isinstance(nodes, list):
        raise ModelError(f"nodes: expected a list, got {_kind(nodes)}")
    mechs: dict[str, Mechanism] = {}
    index: dict[str, int] = {}
    for i, entry in enumerate(nodes):
        at = f"nodes[{i}]"
        name = _node_entry(entry, at, index)
        mechs[name] = mechanism_from_dict(entry["mechanism"], f"{at}.mechanism")
        index[name] = i
    _check_parents(mechs, index)
    return mechs, index


def _read_latent(doc: dict, mechs: dict) -> list[str]:
    try:
        latent = _names(doc.get("latent", []), "latent")
    except _FieldError as e:
        raise ModelError(str(e)) from None
    for j, v in enumerate(latent):
        if v not in mechs:
            raise ModelError(f"latent[{j}]: unknown node {v!r}")
    return latent


def _apply_interventions(model: CausalModel, dos: Any, latent: list[str]) -> CausalModel:
    if dos is None:
        return model
    if not isinstance(dos, dict):
        raise ModelError(f"interventions: expected an object node -> value, got {_kind(dos)}")
    values = {}
    for node, v in dos.items():
        at = f"interventions.{node}"
        if node not in model.mechanisms:
            raise ModelError(f"{at}: unknown node {node!r}")
        if node in latent:
            raise ModelError(f"{at}: {node!r} is listed as latent, but an intervened node is observed")
        values[node] = _decode_do(model, node, v, at)
    try:
        return model.do(values)
    except CausalNetError as e:
        raise ModelError(f"interventions: {e}") from None


def _from_doc(doc: Any) -> CausalModel:
    _check_header(doc)
    mechs, _ = _read_nodes(_need_top(doc, "nodes"))
    latent = _read_latent(doc, mechs)
    diagram = "order" in doc or "limid" in doc or any(isinstance(m, (Decision, Utility)) for m in mechs.values())
    try:
        if diagram:
            model = InfluenceDiagram(mechs, latent=latent, order=_read_order(doc, mechs),
                                     limid=_read_limid(doc))
        else:
            model = CausalModel(mechs, latent=latent)
    except (ModelError, GraphError) as e:
        raise ModelError(f"nodes: {e}") from None
    return _apply_interventions(model, doc.get("interventions"), latent)


def _read_order(doc: dict, mechs: dict) -> list | None:
    if "order" not in doc:
        return None
    try:
        order = _names(doc["order"], "order")
    except _FieldError as e:
        raise ModelError(str(e)) from None
    for j, v in enumerate(order):
        if not isinstance(mechs.get(v), Decision):
            raise ModelError(f"order[{j}]: {v!r} is not a decision node")
    return order


def _read_limid(doc: dict) -> bool:
    limid = doc.get("limid", False)
    if not isinstance(limid, bool):
        raise ModelError(f"limid: expected true or false, got {_kind(limid)}")
    return limid


def _need_top(doc: dict, key: str) -> Any:
    if key not in doc:
        raise ModelError(f"missing field {key!r}")
    return doc[key]


def _check_parents(mechs: dict, index: dict) -> None:
    """Unknown parents, and tables that do not fit their parents' cardinalities, at their JSON paths."""
    for name, mech in mechs.items():
        at = f"nodes[{index[name]}].mechanism"
        for j, p in enumerate(mech.parents):
            if p not in mechs:
                raise ModelError(f"{at}.parents[{j}]: unknown node {p!r}; it has no entry in nodes")
        if isinstance(mech, CPT) and all(isinstance(mechs[p], (Categorical, CPT)) for p in mech.parents):
            # (other parents: the model's own check says what is wrong)
            cards = [mechs[p].card for p in mech.parents]
            want = (*cards, mech.card)
            if mech.table.shape != want:
                raise ModelError(f"{at}.table: has shape {mech.table.shape}; parents {list(mech.parents)} have "
                                 f"{tuple(cards)} states and {name!r} has {mech.card}, so expected {want}")


def from_json(text: str | bytes) -> CausalModel:
    """A model from the text of a model file (see the module docstring for the schema).

    Raises
    ------
    ModelError
        On malformed JSON (line and column) or any invalid content (its JSON
        path); no model is built.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ModelError(f"the model file is not UTF-8 text ({e})") from None
    if isinstance(text, str) and len(text) > limits.get("max_file_bytes"):
        limit = limits.get("max_file_bytes")
        raise ResourceError(f"the model text has {len(text)} characters, over the limit max_file_bytes={limit}; "
                            f"raise it with causalnet.limits.set(max_file_bytes=...)")
    if not isinstance(text, str):
        raise ModelError(f"from_json expects the text of a model file, got {type(text).__name__}")
    return _from_doc(parse(text))


def load_json(path: str | Path) -> CausalModel:
    """Load a model saved by :func:`save_json`.

    Raises
    ------
    ModelFileNotFoundError, ModelFilePermissionError
        If the file is missing or unreadable (also ``FileNotFoundError`` /
        ``PermissionError``), naming the path.
    ResourceError
        If the file is larger than ``causalnet.limits`` ``max_file_bytes``.
    ModelError
        If the file is binary, malformed or invalid; the message starts with
        the file name and says what is wrong and where. Nothing is loaded.
    """
    data = read_model_bytes(path)
    try:
        return from_json(data)
    except ModelError as e:
        raise ModelError(f"{Path(path).name}: {e}") from None


# -- saving ----------------------------------------------------------------------------


def _np_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"{type(o).__name__} is not JSON data")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_np_default, allow_nan=False, ensure_ascii=False)


def _mech_text(node: Hashable, mech: Mechanism) -> str:
    if isinstance(mech, (Function, Deterministic)):
        raise ModelError(f"node {node!r} is a {type(mech).__name__}, which holds Python code; model files hold "
                         f"no code, so it cannot be saved")
    try:
        d = mech.to_dict()
    except ModelError as e:
        raise ModelError(f"node {node!r} cannot be saved: {e}") from None
    if not isinstance(d, dict) or d.get("type") not in _REGISTRY:
        t = d.get("type") if isinstance(d, dict) else None
        raise ModelError(f"node {node!r}: mechanism type {t!r} has no JSON loader; register one with "
                         f"causalnet.io.json.register_mechanism")
    states = d.get("states")
    if isinstance(states, (list, tuple)):
        for s in states:
            if isinstance(s, np.generic):
                s = s.item()
            if not _is_state(s):
                raise ModelError(f"node {node!r}: state {s!r} is a {type(s).__name__}; model files hold "
                                 f"string, integer, boolean or float state names")
    try:
        return _dumps(d)
    except (TypeError, ValueError) as e:
        raise ModelError(f"node {node!r}: its mechanism's to_dict() is not JSON data ({e})") from None


def _do_value(node: Hashable, spec, value: Any) -> Any:
    v = np.asarray(value)
    if spec.kind == DISCRETE:
        if v.ndim == 0:
            return spec.states[int(v)]
        return [spec.states[i] for i in v.astype(np.int64).tolist()]
    if v.dtype.kind not in "iuf":
        raise ModelError(f"node {node!r}: intervention value of dtype {v.dtype} cannot be saved")
    return v.tolist()


def to_json(model: CausalModel) -> str:
    """The text of a model file for `model` (see :func:`save_json`)."""
    if not isinstance(model, CausalModel):
        raise ModelError(f"to_json expects a CausalModel, got {type(model).__name__}")
    lines = []
    dos = {}
    for node, mech in model.mechanisms.items():
        if not isinstance(node, str):
            raise ModelError(f"node {node!r}: model files hold string node names, got {type(node).__name__}")
        if isinstance(mech, Intervened):
            if mech.is_shift:
                raise ModelError(f"node {node!r} has a shift intervention (a callable), which is Python code; "
                                 f"model files hold constant interventions only")
            dos[node] = _do_value(node, model.specs[node], mech.value)
            mech = mech.natural
        lines.append(f'  {{"name": {_dumps(node)}, "mechanism": {_mech_text(node, mech)}}}')
    latent = [v for v in model.nodes if v in model.latent]
    out = [f'{{"format": {_dumps(FORMAT)}, "version": {VERSION},', ' "nodes": [']
    out.append(",\n".join(lines))
    out.append(" ],")
    tail = f' "latent": {_dumps(latent)}'
    if dos:
        tail += f',\n "interventions": {_dumps(dos)}'
    if isinstance(model, InfluenceDiagram):
        mechs = model.mechanisms
        order = [d for d in model.decision_order
                 if isinstance(mechs[d].natural if isinstance(mechs[d], Intervened) else mechs[d], Decision)]
        tail += f',\n "order": {_dumps(order)}, "limid": {_dumps(model.limid)}'
    out.append(tail + "}")
    return "\n".join(x for x in out if x) + "\n"


def save_json(model: CausalModel, path: str | Path) -> None:
    """Save `model` as a JSON model file; :func:`load_json` gives it back exactly.

    Parameters
    ----------
    model : CausalModel
        Categorical, CPT and LinearGaussian nodes (and any registered type),
        latent marks, and constant interventions are saved.
    path : path

    Raises
    ------
    ModelError
        Naming the node, if a mechanism holds code (``Function``,
        ``Deterministic``, a shift intervention) or has no registered type.
        The file is not written then.

    Notes
    -----
    The file is written atomically: to a temporary file in the same folder,
    then renamed over `path`. A failure leaves the old file, or none.
    """
    text = to_json(model)
    atomic_write(path, text)
