"""One request object for every query, validated once before any engine runs.

``m.query``, ``m.counterfactual`` and ``m.map`` (keywords or a query string)
all become a :class:`Request`: the targets and the evidence as *variables*
``(world, node)`` — :data:`FACTUAL` for the world that was observed,
:data:`COUNTERFACTUAL` for the world where the intervention was applied — plus
the intervened model(s), the batch size and the options. Building it checks
everything an engine would otherwise check on its own:

* every node exists (the message suggests a close name);
* targets are distinct, and a node is not both a target and evidence *in the
  same world* (a counterfactual may ask what a node would have been while
  observing what it was);
* states decode by one rule (:func:`causalnet.values.decode_states`) and
  continuous values are finite reals of the node's shape;
* evidence arrays and per-row ``do`` arrays share one batch size;
* ``do`` values are legal for the node kind (a state, a per-row array of
  states, a finite value, or a callable of the natural value);
* ``method``, ``n_samples`` and ``seed`` are legal.

Engines (:mod:`causalnet.inference.engine`) then only decide whether they can
answer and answer. Nothing here changes the model or the caller's arguments.

Examples
--------
>>> import causalnet as cn
>>> m = cn.gallery.load("sprinkler")
>>> r = query_request(m, "P(Wet | do(Sprinkler=on), Rain=yes)")
>>> r.nodes, dict(r.observed), r.n_rows
(['Wet'], {'Rain': array(1)}, None)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import limits
from ..errors import EvidenceError, ModelError
from ..mechanisms.base import DISCRETE, as_generator
from ..mechanisms.intervened import Intervened
from ..queries import Query, Term, parse_query

__all__ = ["Request", "query_request", "counterfactual_request", "map_request", "FACTUAL", "COUNTERFACTUAL",
           "METHODS", "label"]

FACTUAL = "f"
COUNTERFACTUAL = "c"
METHODS = ("auto", "exact", "sampling")


def label(var: tuple) -> Hashable:
    """The name a result uses for a variable: ``Y`` (factual) or ``Y*`` (counterfactual)."""
    world, v = var
    if world == FACTUAL:
        return v
    return f"{v}*" if isinstance(v, str) else (v, "*")


class Request:
    """A validated query: what to compute, on which model(s), with which options.

    Attributes
    ----------
    model : CausalModel
        Plain queries: the model under the request's ``do``. Counterfactuals:
        the factual model.
    cf_model : CausalModel or None
        The counterfactual world's model (``model.do(world)``), None for plain queries.
    world : dict
        The counterfactual intervention (empty for plain queries).
    targets : tuple of (world, node)
    target_values : tuple or None
        For ``P(Y=y | ...)``: the asked states (the answer is a probability).
    evidence : dict (world, node) -> ndarray
        Decoded values: 0-d, or batch-first ``(n, ...)``.
    row_do : dict node -> ndarray
        Per-row intervention values (batch-first) of the world the targets live in.
    n_rows : int or None
        The batch size (None: one unbatched query).
    method : {"auto", "exact", "sampling"}
    n_samples : int
    seed : int, Generator or None
    """

    def __init__(self, *, model, cf_model, world, targets, target_values, evidence, row_do, n_rows, method,
                 n_samples, seed) -> None:
        self.model = model
        self.cf_model = cf_model
        self.world = dict(world)
        self.targets = tuple(targets)
        self.target_values = target_values
        self.evidence = dict(evidence)
        self.row_do = dict(row_do)
        self.n_rows = n_rows
        self.method = method
        self.n_samples = n_samples
        self.seed = seed

    @property
    def is_counterfactual(self) -> bool:
        return self.cf_model is not None

    @property
    def nodes(self) -> list:
        """Target nodes (without their worlds)."""
        return [v for _, v in self.targets]

    @property
    def labels(self) -> list:
        """Target names as results show them (``Y*`` for a counterfactual copy)."""
        return [label(t) for t in self.targets]

    @property
    def observed(self) -> dict:
        """Factual evidence, node -> value."""
        return {v: a for (w, v), a in self.evidence.items() if w == FACTUAL}

    @property
    def batched(self) -> bool:
        return self.n_rows is not None

    def rng(self) -> np.random.Generator:
        """The request's random generator (from `seed`)."""
        return as_generator(self.seed)

    def __repr__(self) -> str:
        kind = "counterfactual" if self.is_counterfactual else "query"
        return (f"<Request {kind}: targets {self.labels}, evidence {[label(k) for k in self.evidence]}, "
                f"n_rows={self.n_rows}, method={self.method!r}>")


# -- option and argument checks --------------------------------------------------------


def _check_options(method: Any, n_samples: Any, seed: Any) -> None:
    if not isinstance(method, str) or method not in METHODS:
        raise ModelError(f"method must be one of {list(METHODS)}, got {method!r}")
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ModelError(f"n_samples must be a positive integer, got {n_samples!r}")
    as_generator(seed)


def _mapping(arg: Any, what: str, exc: type) -> dict:
    if arg is None:
        return {}
    if not isinstance(arg, Mapping):
        raise exc(f"{what} must be a mapping node -> value, got {type(arg).__name__}")
    return dict(arg)


def _target_list(model, targets) -> list:
    if isinstance(targets, (str, bytes)) or not isinstance(targets, (Sequence, set, frozenset)):
        targets = [targets]
    targets = list(targets)
    if not targets:
        raise EvidenceError("a query needs at least one target")
    for t in targets:
        model.check_node(t, "target", EvidenceError)
    return targets


def _resolve_literal(model, node, value):
    """Query-string literals: a token like 1 names the state "1" when there is one."""
    spec = model.specs[node]
    if spec.kind == DISCRETE and value not in spec.states and str(value) in spec.states:
        return str(value)
    return value


def _parsed(model, text: str) -> Query:
    """A query string, parsed, with its nodes checked and its literals resolved."""
    q = parse_query(text)
    for t in q.targets + q.evidence:
        model.check_node(t.name, "node in the query", EvidenceError)
        for k in t.world_dict:
            model.check_node(k, "intervened node in the query", EvidenceError)
    for k in q.do:
        model.check_node(k, "intervened node in the query", EvidenceError)

    def world(w):
        return None if w is None else tuple((k, _resolve_literal(model, k, v)) for k, v in w)

    targets = [Term(t.name, world(t.world), None if t.value is None else _resolve_literal(model, t.name, t.value))
               for t in q.targets]
    evidence = [Term(t.name, world(t.world), _resolve_literal(model, t.name, t.value)) for t in q.evidence]
    return Query(targets, evidence, {k: _resolve_literal(model, k, v) for k, v in q.do.items()})


def _is_query_string(targets) -> bool:
    return isinstance(targets, str) and "(" in targets


# -- building requests --------------------------------------------------------------------------


def query_request(model, targets, evidence=None, do=None, *, method="auto", n_samples=100_000, seed=None) -> Request:
    """The request of ``model.query(targets, evidence=..., do=...)`` (a query string allowed).

    A query string with counterfactual terms (``Y_{X=0}``) gives a counterfactual request.

    Raises
    ------
    EvidenceError, ModelError, ShapeError
        See the module docstring; raised before anything is computed.
    """
    _check_options(method, n_samples, seed)
    evidence = _mapping(evidence, "evidence", EvidenceError)
    do = _mapping(do, "do", ModelError)
    if _is_query_string(targets):
        q = _parsed(model, targets)
        for k, v in evidence.items():
            q.evidence.append(Term(k, None, v))
        for k, v in q.do.items():
            if k in do:
                raise EvidenceError(f"{k!r} is intervened on both in the query string and in do=")
            do[k] = v
        if q.is_counterfactual:
            if do:
                raise EvidenceError("a counterfactual query cannot also contain do(...) outside the subscripts; "
                                    "put the intervention in the subscript, e.g. P(Y_{X=0} | X=1)")
            return _counterfactual(model, q, method, n_samples, seed)
        names = [t.name for t in q.targets]
        values = [t.value for t in q.targets]
        ev_terms = q.evidence
    else:
        names = _target_list(model, targets)
        values = [None]
        ev_terms = [Term(k, None, v) for k, v in evidence.items()]
    _distinct(names)
    ev_raw = _evidence_dict(model, ev_terms)
    both = set(names) & {v for _, v in ev_raw}
    if both:
        raise EvidenceError(f"{sorted(map(str, both))} are both targets and evidence")
    m = model.do(do) if do else model
    ev, row_do, n_rows = _decode(m, ev_raw, do)
    return Request(model=m, cf_model=None, world={}, targets=[(FACTUAL, v) for v in names],
                   target_values=None if values[0] is None else tuple(values), evidence=ev, row_do=row_do,
                   n_rows=n_rows, method=method, n_samples=int(n_samples), seed=seed)


def counterfactual_request(model, targets, evidence=None, do=None, *, method="auto", n_samples=100_000,
                           seed=None) -> Request:
    """The request of ``model.counterfactual(targets, evidence=..., do=...)``.

    `targets` are read in the world ``do`` (counterfactual), `evidence` is
    factual; a query string with subscripts may be given instead.
    """
    _check_options(method, n_samples, seed)
    evidence = _mapping(evidence, "evidence", EvidenceError)
    do = _mapping(do, "do", ModelError)
    if _is_query_string(targets):
        if do:
            raise EvidenceError("give the intervention either in the query string or in do=, not both")
        q = _parsed(model, targets)
        for k, v in evidence.items():
            q.evidence.append(Term(k, None, v))
        if q.do:
            raise EvidenceError("a counterfactual query cannot also contain do(...) outside the subscripts; "
                                "put the intervention in the subscript, e.g. P(Y_{X=0} | X=1)")
        return _counterfactual(model, q, method, n_samples, seed)
    if not do:
        raise EvidenceError("a counterfactual needs an intervention: do={node: value}")
    for k in do:
        model.check_node(k, "intervened node", EvidenceError)
    names = _target_list(model, targets)
    targets = [(COUNTERFACTUAL, t) for t in names]
    _distinct(targets)
    ev_raw = _evidence_dict(model, [Term(k, None, v) for k, v in evidence.items()])
    return _counterfactual_parts(model, do, targets, ev_raw, None, method, n_samples, seed)


def _counterfactual(model, q: Query, method, n_samples, seed) -> Request:
    worlds = {t.world for t in q.targets + q.evidence if t.world is not None}
    if len(worlds) > 1:
        raise EvidenceError(f"counterfactual terms must share one world; got {len(worlds)}: "
                            f"{[dict(w) for w in worlds]}")
    world = dict(next(iter(worlds))) if worlds else {}
    for k in world:
        model.check_node(k, "intervened node", EvidenceError)
    targets = [(COUNTERFACTUAL if t.world else FACTUAL, t.name) for t in q.targets]
    _distinct(targets)
    values = [t.value for t in q.targets]
    return _counterfactual_parts(model, world, targets, _evidence_dict(model, q.evidence),
                                 None if values[0] is None else tuple(values), method, n_samples, seed)


def _counterfactual_parts(model, world: dict, targets: list, ev_raw: dict, values, method, n_samples,
                          seed) -> Request:
    both = set(targets) & set(ev_raw)
    if both:
        raise EvidenceError(f"{sorted(str(k[1]) for k in both)} are both targets and evidence in the same world")
    cf_model = model.do(world) if world else model
    ev_f, _, n_f = _decode(model, {k: v for k, v in ev_raw.items() if k[0] == FACTUAL}, {})
    ev_c, row_do, n_c = _decode(cf_model, {k: v for k, v in ev_raw.items() if k[0] == COUNTERFACTUAL}, world)
    n_rows = _one_size({"factual evidence": n_f, "counterfactual evidence and do": n_c})
    return Request(model=model, cf_model=cf_model, world=world, targets=targets, target_values=values,
                   evidence={**ev_f, **ev_c}, row_do=row_do, n_rows=n_rows, method=method,
                   n_samples=int(n_samples), seed=seed)


def map_request(model, targets=None, evidence=None, do=None) -> Request:
    """The request of ``model.map(targets, evidence=..., do=...)`` (``targets=None``: MPE)."""
    evidence = _mapping(evidence, "evidence", EvidenceError)
    do = _mapping(do, "do", ModelError)
    names = [] if targets is None else _target_list(model, targets)
    _distinct(names)
    ev_raw = _evidence_dict(model, [Term(k, None, v) for k, v in evidence.items()])
    both = set(names) & {v for _, v in ev_raw}
    if both:
        raise EvidenceError(f"{sorted(map(str, both))} are both targets and evidence")
    m = model.do(do) if do else model
    ev, row_do, n_rows = _decode(m, ev_raw, do)
    return Request(model=m, cf_model=None, world={}, targets=[(FACTUAL, v) for v in names], target_values=None,
                   evidence=ev, row_do=row_do, n_rows=n_rows, method="exact", n_samples=1, seed=None)


def _distinct(names: list) -> None:
    seen = set()
    for t in names:
        if t in seen:
            node = t[1] if isinstance(t, tuple) and len(t) == 2 and t[0] in (FACTUAL, COUNTERFACTUAL) else t
            raise EvidenceError(f"target {node!r} is listed twice")
        seen.add(t)


def _evidence_dict(model, terms) -> dict:
    out: dict = {}
    for t in terms:
        model.check_node(t.name, "evidence node", EvidenceError)
        key = (COUNTERFACTUAL if t.world else FACTUAL, t.name)
        if key in out:
            raise EvidenceError(f"evidence on {t.name!r} is given twice")
        out[key] = t.value
    return out


def _decode(m, ev_raw: dict, do: Mapping) -> tuple[dict, dict, int | None]:
    """Decoded evidence, per-row do values and the one batch size they share."""
    ev = {key: m.coerce(key[1], v, EvidenceError) for key, v in ev_raw.items()}
    sizes = {f"evidence on {key[1]!r}": a.shape[0] for key, a in ev.items()
             if a.ndim == len(m.specs[key[1]].shape) + 1}
    row_do = {}
    for node in do:
        mech = m.mechanisms[node]
        if isinstance(mech, Intervened) and not mech.is_shift:
            a = np.asarray(mech.value)
            if a.ndim == len(m.specs[node].shape) + 1:
                row_do[node] = a
                sizes[f"do on {node!r}"] = a.shape[0]
    n_rows = _one_size(sizes)
    if n_rows is not None:
        limits.check_bytes(8.0 * n_rows * len(m.nodes), what=f"a batch of {n_rows} queries",
                           cause=f"{n_rows} rows x {len(m.nodes)} nodes")
    return ev, row_do, n_rows


def _one_size(sizes: Mapping[str, int | None]) -> int | None:
    got = {k: v for k, v in sizes.items() if v is not None}
    empty = [k for k, v in got.items() if v == 0]
    if empty:
        raise EvidenceError(f"{empty[0]} is an empty batch; a batch needs at least one row")
    if len(set(got.values())) > 1:
        raise EvidenceError(f"batched values must share one length; got {', '.join(f'{k}: {v}' for k, v in got.items())}")
    return next(iter(got.values()), None)
