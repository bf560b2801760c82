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

Counterfactual requests may span several worlds. Each distinct subscript is a
:class:`World` (``"f"`` the factual one, ``"c"``, ``"c2"``, ... the others),
and a world may set a node to its value in another world (a nested
counterfactual, ``Y_{X=1, M=M_{X=0}}``). A request with more than one
counterfactual world, or a nested one, is *multi-world*
(:attr:`Request.is_multiworld`); its results name variables by their
subscripts (``Y_{X=1}``), while a one-world counterfactual keeps ``Y*``.

Engines (:mod:`causalnet.inference.engine`) then only decide whether they can
answer and answer. Nothing here changes the model or the caller's arguments.

Examples
--------
>>> import causalnet as cn
>>> m = cn.gallery.load("sprinkler")
>>> r = query_request(m, "P(Wet | do(Sprinkler=on), Rain=yes)")
>>> r.nodes, dict(r.observed), r.n_rows
(['Wet'], {'Rain': array(1)}, None)
>>> r = query_request(m, "P(Wet_{Sprinkler=on}=wet, Wet_{Sprinkler=off}=dry)")
>>> r.targets, r.labels, r.is_multiworld
((('c', 'Wet'), ('c2', 'Wet')), ['Wet_{Sprinkler=on}', 'Wet_{Sprinkler=off}'], True)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import limits
from ..arguments import check_int, check_real
from ..errors import EvidenceError, ModelError
from ..mechanisms.base import DISCRETE, as_generator
from ..mechanisms.intervened import AffineIntervention, Intervened
from ..mechanisms.tabular import is_plain_tabular
from ..queries import Query, Term, parse_query

__all__ = ["Request", "World", "query_request", "counterfactual_request", "map_request", "FACTUAL",
           "COUNTERFACTUAL", "METHODS", "OPTIONS", "PER_ROW", "label", "question_text", "show_value",
           "check_approximate_options", "decode_soft_evidence", "as_target_list", "QUESTION_TERMS", "plain_call",
           "plain_request"]

FACTUAL = "f"
COUNTERFACTUAL = "c"
METHODS = ("auto", "exact", "sampling", "loopy", "gibbs", "importance")
#: Options of the approximate engines, by method (``"auto"`` may run loopy belief propagation).
OPTIONS = {"loopy": ("max_iter", "tol", "damping", "schedule"), "gibbs": ("burn_in", "chains"),
           "importance": ("max_iter", "tol", "damping", "schedule"), "auto": ("max_iter", "tol", "damping", "schedule")}
QUESTION_TERMS = 12
"""At most this many evidence (or do) terms are written out in a question; a longer list shows its first
and last few around ``... (N observed)``."""
PER_ROW = "<per-row>"
"""How a question shows a value given per evidence row (batched evidence or a per-row ``do``):
``P(Wet | Rain=<per-row>)`` answers one query per row of the ``Rain`` array."""


def label(var: tuple) -> Hashable:
    """The name a result uses for a variable: ``Y`` (factual) or ``Y*`` (counterfactual)."""
    world, v = var
    if world == FACTUAL:
        return v
    return f"{v}*" if isinstance(v, str) else (v, "*")


class World:
    """One world of a counterfactual request: the interventions that define it.

    Attributes
    ----------
    key : str
        ``"f"`` (factual), ``"c"``, ``"c2"``, ...
    do : dict node -> value
        Constant, per-row or shift interventions, as given to ``model.do``.
    nested : dict node -> (world key, node)
        Nodes set to their value in another world (``M=M_{X=0}``).
    model : CausalModel
        The factual model under `do` (nested nodes keep their natural
        mechanisms there: engines replace them by the other world's value).
    text : str
        The subscript as results show it, e.g. ``"X=1, M=M_{X=0}"``.
    """

    def __init__(self, key: str, do: dict, nested: dict, model, text: str) -> None:
        self.key = key
        self.do = dict(do)
        self.nested = dict(nested)
        self.model = model
        self.text = text

    @property
    def intervened(self) -> set:
        """Every node this world sets (by value or from another world)."""
        return set(self.do) | set(self.nested)

    def __repr__(self) -> str:
        return f"<World {self.key!r}: {{{self.text}}}>"


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
        The counterfactual intervention of a one-world counterfactual (empty
        for plain queries and multi-world requests).
    worlds : dict key -> World
        Every world of a counterfactual request, the factual one (``"f"``)
        first (empty for plain queries).
    targets : tuple of (world, node)
    target_values : tuple or None
        For ``P(Y=y | ...)``: the asked states (the answer is a probability).
    evidence : dict (world, node) -> ndarray
        Decoded values: 0-d, or batch-first ``(n, ...)``.
    row_do : dict node -> ndarray
        Per-row intervention values (batch-first) of the world the targets live in.
    n_rows : int or None
        The batch size (None: one unbatched query).
    method : {"auto", "exact", "sampling", "loopy", "gibbs", "importance"}
    n_samples : int
    seed : int, Generator or None
    text : str or None
        The question in its canonical text, e.g. ``P(Wet | do(Sprinkler=on), Rain=yes)`` or
        ``P(Wet_{Sprinkler=off} | Sprinkler=on, Wet=wet)`` (see :func:`question_text`); the front
        door sets it on every answer as ``result.query``.
    soft : dict node -> ndarray
        Soft (virtual) evidence: a likelihood over the node's states, shape
        ``(K,)`` or batch-first ``(n, K)``, nonnegative, no row all zero.
    options : dict
        Options of the approximate engines (:data:`OPTIONS`), checked.
    """

    def __init__(self, *, model, cf_model, world, targets, target_values, evidence, row_do, n_rows, method,
                 n_samples, seed, worlds=None, text=None, soft=None,
                 options=None) -> None:
        self.soft = dict(soft or {})
        self.options = dict(options or {})
        self.model = model
        self.cf_model = cf_model
        self.world = dict(world)
        self.worlds = dict(worlds or {})
        self.targets = tuple(targets)
        self.target_values = target_values
        self.evidence = dict(evidence)
        self.row_do = dict(row_do)
        self.n_rows = n_rows
        self.method = method
        self.n_samples = n_samples
        self.seed = seed
        self.text = text

    @property
    def is_counterfactual(self) -> bool:
        return self.cf_model is not None

    @property
    def is_multiworld(self) -> bool:
        """Whether the request spans more than one counterfactual world, or nests one in another."""
        return len(self.worlds) > 2 or any(w.nested for w in self.worlds.values())

    @property
    def nodes(self) -> list:
        """Target nodes (without their worlds)."""
        return [v for _, v in self.targets]

    def label(self, var: tuple) -> Hashable:
        """How results name the variable ``(world, node)``: ``Y``, ``Y*`` (one counterfactual world)
        or ``Y_{X=1}`` (several)."""
        world, v = var
        if world == FACTUAL or not self.is_multiworld:
            return label(var)
        sub = f"_{{{self.worlds[world].text}}}"
        return f"{v}{sub}" if isinstance(v, str) else (v, sub)

    @property
    def labels(self) -> list:
        """Target names as results show them (``Y*`` or ``Y_{X=1}`` for a counterfactual copy)."""
        return [self.label(t) for t in self.targets]

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
    check_int(n_samples, "n_samples", low=1)
    if seed is not None:        # validated now; None (fresh entropy) needs no check, nor numpy.random loaded
        as_generator(seed)


def _mapping(arg: Any, what: str, exc: type) -> dict:
    if arg is None:
        return {}
    if not isinstance(arg, Mapping):
        frame = " (a DataFrame of evidence rows is taken by model.query, predict and predict_proba)" \
            if hasattr(arg, "columns") and hasattr(arg, "dtypes") else ""
        raise exc(f"{what} must be a mapping node -> value, got {type(arg).__name__}{frame}")
    return dict(arg)


def as_target_list(targets) -> list:
    """`targets` as a list: one node (a string or any non-collection) becomes ``[node]``; not validated."""
    if isinstance(targets, (str, bytes)) or not isinstance(targets, (Sequence, set, frozenset)):
        return [targets]
    return list(targets)


def _target_list(model, targets) -> list:
    targets = as_target_list(targets)
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
    for k in q.do:
        model.check_node(k, "intervened node in the query", EvidenceError)

    def world(w):
        return None if w is None else tuple((k, resolved(k, v)) for k, v in w)

    def resolved(k, v):
        if isinstance(v, Term):
            model.check_node(v.name, "node in the query", EvidenceError)
            return Term(v.name, world(v.world), None)
        model.check_node(k, "intervened node in the query", EvidenceError)
        return _resolve_literal(model, k, v)

    targets = [Term(t.name, world(t.world), None if t.value is None else _resolve_literal(model, t.name, t.value))
               for t in q.targets]
    evidence = [Term(t.name, world(t.world), _resolve_literal(model, t.name, t.value)) for t in q.evidence]
    return Query(targets, evidence, {k: _resolve_literal(model, k, v) for k, v in q.do.items()})


def _is_query_string(targets) -> bool:
    return isinstance(targets, str) and "(" in targets


def _has_terms(targets, evidence: Mapping) -> bool:
    """Whether the caller used :func:`causalnet.queries.cf` terms (targets or evidence keys)."""
    if isinstance(targets, Term) or any(isinstance(k, Term) for k in evidence):
        return True
    return isinstance(targets, (list, tuple)) and any(isinstance(t, Term) for t in targets)


def _term_query(model, targets, evidence: Mapping) -> Query:
    """The :class:`Query` of API arguments written with ``cf(...)`` terms."""
    items = [targets] if isinstance(targets, Term) or not isinstance(targets, (list, tuple)) else list(targets)
    if not items:
        raise EvidenceError("a query needs at least one target")
    terms = []
    for t in items:
        t = t if isinstance(t, Term) else Term(t)
        if t.value is not None:
            raise EvidenceError(f"target {t} carries a value; give targets without values")
        model.check_node(t.name, "target", EvidenceError)
        terms.append(t)
    ev = [Term(k.name, k.world, v) if isinstance(k, Term) else Term(k, None, v) for k, v in evidence.items()]
    return Query(terms, ev, {})


# -- the question as text -------------------------------------------------------------------


def show_value(model, node, value, *, decoded: bool = False) -> str:
    """A value of `node` as a question shows it: a state name, a number (``.6g``), ``<per-row>``
    for one value per evidence row, ``shift(1.0)`` / a function's name for a shift intervention,
    or ``Y_{X=0}`` for a node set to its value in another world. `decoded`: `value` already went
    through ``model.coerce`` (state indices)."""
    if isinstance(value, Term):
        return str(value)
    if callable(value):
        return repr(value) if isinstance(value, AffineIntervention) else getattr(value, "__name__", None) or repr(value)
    spec = model.specs[node]
    if np.ndim(value) == len(spec.shape) + 1:
        return PER_ROW
    try:
        a = np.asarray(value if decoded else model.coerce(node, value, ModelError))
    except ModelError:
        return str(value)
    if spec.kind == DISCRETE:
        return str(spec.states[int(a)])
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return f"<array {a.shape}>"


def question_text(model, targets: Sequence[str], evidence: Sequence[tuple], do: Sequence[tuple] = (), *,
                  decoded: bool = False) -> str:
    """``P(targets | do(do), evidence)``: the canonical text of a question.

    Parameters
    ----------
    model : CausalModel
        The model whose states name the values (the factual model).
    targets : sequence of str
        Target labels, already written (``Wet``, ``Wet=wet``, ``Wet_{Sprinkler=off}``).
    evidence : sequence of (label, node, value)
    do : sequence of (node, value)
    decoded : bool
        The evidence values are already decoded (state indices).
    """
    given = [f"{k}={show_value(model, k, v)}" if k is not None else v for k, v in _elided(list(do), "set")]
    cond = ([f"do({', '.join(given)})"] if given else []) + \
        [f"{lab}={show_value(model, node, v, decoded=decoded)}" if node is not None else v
         for lab, node, v in _elided(list(evidence), "observed", width=3)]
    return f"P({', '.join(targets)}{' | ' + ', '.join(cond) if cond else ''})"


def _elided(items: list, what: str, width: int = 2) -> list:
    """Long lists of terms (a whole observed sequence) keep their first and last few around
    ``... (N observed)`` (an item whose node is None, shown as is)."""
    if len(items) <= QUESTION_TERMS:
        return items
    k = QUESTION_TERMS // 2 - 1
    gap = (None,) * (width - 1) + (f"... ({len(items)} {what})",)
    return [*items[:k], gap, *items[-k:]]


def _world_label(worlds: Mapping, var: tuple) -> str:
    """``Y`` (factual) or ``Y_{X=1}`` (the world it lives in)."""
    key, node = var
    text = worlds[key].text if key in worlds else ""
    return str(node) if key == FACTUAL or not text else f"{node}_{{{text}}}"


def _query_text(model, names, values, ev: Mapping, do: Mapping) -> str:
    targets = [str(t) if v is None else f"{t}={show_value(model, t, v)}"
               for t, v in zip(names, values if values[0] is not None else [None] * len(names))]
    return question_text(model, targets, [(str(node), node, v) for (_, node), v in ev.items()], list(do.items()),
                         decoded=True)


def _counterfactual_text(model, worlds: Mapping, targets, values, ev: Mapping) -> str:
    labels = [_world_label(worlds, t) for t in targets]
    if values is not None:
        labels = [f"{lab}={show_value(model, t[1], v)}" for lab, t, v in zip(labels, targets, values)]
    return question_text(model, labels, [(_world_label(worlds, k), k[1], v) for k, v in ev.items()], decoded=True)


# -- building requests --------------------------------------------------------------------------


def query_request(model, targets, evidence=None, do=None, *, method="auto", n_samples=100_000, seed=None,
                  soft_evidence=None, **options) -> Request:
    """The request of ``model.query(targets, evidence=..., do=...)`` (a query string allowed).

    `soft_evidence` maps discrete nodes to likelihood vectors (``(K,)`` or
    ``(n, K)``); `options` are the approximate engines' options
    (:data:`OPTIONS`).

    A query string with counterfactual terms (``Y_{X=0}``), or targets and
    evidence keys written with :func:`causalnet.queries.cf`, give a
    counterfactual request (several worlds allowed).

    Raises
    ------
    EvidenceError, ModelError, ShapeError
        See the module docstring; raised before anything is computed.
    """
    _check_options(method, n_samples, seed)
    options = check_approximate_options(method, options)
    soft_raw = _mapping(soft_evidence, "soft_evidence", EvidenceError)
    evidence = _mapping(evidence, "evidence", EvidenceError)
    do = _mapping(do, "do", ModelError)
    if _is_query_string(targets) or _has_terms(targets, evidence):
        if _is_query_string(targets):
            q = _parsed(model, targets)
            for k, v in evidence.items():
                q.evidence.append(Term(k, None, v))
        else:
            q = _term_query(model, targets, evidence)
        for k, v in q.do.items():
            if k in do:
                raise EvidenceError(f"{k!r} is intervened on both in the query string and in do=")
            do[k] = v
        if q.is_counterfactual:
            if do:
                raise EvidenceError("a counterfactual query cannot also contain do(...) outside the subscripts; "
                                    "put the intervention in the subscript, e.g. P(Y_{X=0} | X=1)")
            if options or method in OPTIONS and method != "auto":
                raise EvidenceError("the approximate methods answer plain queries, not counterfactual ones")
            return _counterfactual(model, q, method, n_samples, seed, soft_raw)
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
    soft = decode_soft_evidence(m, soft_raw, {v for _, v in ev_raw})
    n_rows = _soft_rows(n_rows, soft, "evidence and do")
    return Request(model=m, cf_model=None, world={}, targets=[(FACTUAL, v) for v in names],
                   target_values=None if values[0] is None else tuple(values), evidence=ev, row_do=row_do,
                   n_rows=n_rows, method=method, n_samples=int(n_samples), seed=seed, soft=soft, options=options,
                   text=_query_text(model, names, values, ev, do))


def plain_call(model, targets, evidence) -> tuple | None:
    """``(names, states, text)`` of a plain call, ``model.query(targets, evidence={name: state})``, or None.

    The call has already passed :func:`causalnet.inference.shapes.shape_key`
    (no ``do``, soft evidence, options or seed; the default ``n_samples``;
    `method` ``"auto"`` or ``"exact"``; `evidence` None or a dict). It is
    plain when every target and evidence node is a ``str`` node of the
    model, the targets distinct and unobserved, each evidence node discrete
    with a value that is one of its state names or (when its names are all
    strings) a state index, and no per-row ``do`` is in the model. Returns
    the target names (a list), the evidence as node -> state index (int) and
    the question's text (:func:`question_text`'s words); anything else gives
    None: :func:`query_request` then validates the call, and raises, as always.
    """
    mechs = model.mechanisms
    names = [targets] if type(targets) is str else list(targets)
    if not names or len(set(names)) != len(names):
        return None
    for t in names:
        if type(t) is not str or t not in mechs:
            return None
    ev: dict = {}
    shown: list = []
    if evidence:
        specs = model.specs
        for k, value in evidence.items():
            if type(k) is not str or k not in mechs or k in names:
                return None
            spec = specs[k]
            if spec.kind != DISCRETE:
                return None
            states = spec.states
            if type(value) is str:
                if value not in states:
                    return None
                i = states.index(value)
            elif type(value) is int and 0 <= value < len(states) and all(type(s) is str for s in states):
                i = value
            else:
                return None
            ev[k] = i
            shown.append(f"{k}={states[i]}")
    if not is_plain_tabular(model):                     # every node a CPT: no do (one scan, cached)
        for mech in mechs.values():
            if isinstance(mech, Intervened) and not mech.is_shift:
                return None                             # a per-row do, possibly: the general path decides
    if len(shown) > QUESTION_TERMS:                     # elided: question_text's rule
        text = _query_text(model, names, [None], {(FACTUAL, k): np.asarray(i, dtype=np.int64) for k, i in ev.items()},
                           {})
    else:                                               # question_text's words for names and state names
        text = f"P({', '.join(names)}{' | ' + ', '.join(shown) if shown else ''})"
    return names, ev, text


def plain_request(model, targets, evidence, method: str) -> Request | None:
    """The request of a plain call (:func:`plain_call`), ``model.query(targets, evidence={name: state})``,
    or None; it is the same :class:`Request` as :func:`query_request` builds, without its general parsing."""
    got = plain_call(model, targets, evidence)
    if got is None:
        return None
    names, ev, text = got
    return Request(model=model, cf_model=None, world={}, targets=[(FACTUAL, v) for v in names],
                   target_values=None, evidence={(FACTUAL, k): np.asarray(i, dtype=np.int64) for k, i in ev.items()},
                   row_do={}, n_rows=None, method=method, n_samples=100_000, seed=None, text=text)


def check_approximate_options(method: str, options: Mapping) -> dict:
    """The approximate engines' options, checked against `method` (:data:`OPTIONS`).

    Raises
    ------
    ModelError
        On an option the method does not take, or a bad value.
    """
    allowed = OPTIONS.get(method, ())
    for k, v in options.items():
        if k not in allowed:
            takes = f"takes {list(allowed)}" if allowed else "takes no options"
            raise ModelError(f"unknown option {k!r} for method={method!r}; {method!r} {takes}")
        if k in ("max_iter", "burn_in", "chains"):
            check_int(v, k, low=0 if k == "burn_in" else 1)
        elif k == "tol":
            check_real(v, "tol", positive=True, allow_inf=True)
        elif k == "damping" and not check_real(v, "damping", nonnegative=True) < 1:
            raise ModelError(f"damping must be a number in [0, 1), got {v!r}")
        elif k == "schedule" and v not in ("flooding", "residual", "parallel-residual"):
            raise ModelError(f"schedule must be 'flooding', 'residual' or 'parallel-residual', got {v!r}")
    return dict(options)


def decode_soft_evidence(m, soft: Mapping, hard: set) -> dict:
    """Soft evidence as float arrays ``(K,)`` or ``(n, K)``, checked (node, shape, values).

    Raises
    ------
    EvidenceError
        On an unknown or non-discrete node, a node also observed, a wrong
        length, a negative or non-finite entry, or a likelihood of all zeros.
    """
    out = {}
    for k, v in soft.items():
        m.check_node(k, "soft evidence node", EvidenceError)
        spec = m.specs[k]
        if spec.kind != DISCRETE:
            raise EvidenceError(f"soft evidence needs a discrete node; {k!r} is {spec.kind}")
        if k in hard:
            raise EvidenceError(f"{k!r} has both hard and soft evidence; give one")
        try:
            a = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise EvidenceError(f"soft evidence on {k!r} must be numbers, got {type(v).__name__}") from None
        K = spec.card
        if a.ndim not in (1, 2) or a.shape[-1] != K:
            raise EvidenceError(f"soft evidence on {k!r} must have shape ({K},) or (n, {K}) for its states "
                                f"{list(spec.states)}, got {a.shape}")
        if not np.isfinite(a).all() or a.min() < 0:
            raise EvidenceError(f"soft evidence on {k!r} must be finite and nonnegative")
        if a.ndim == 2 and a.shape[0] == 0:
            raise EvidenceError(f"soft evidence on {k!r} is an empty batch")
        zero = ~(a.reshape(-1, K).max(axis=1) > 0)
        if zero.any():
            where = f" (row {int(np.argmax(zero))})" if a.ndim == 2 else ""
            raise EvidenceError(f"soft evidence on {k!r} is all zeros{where}: no state is possible")
        out[k] = a / a.max(axis=-1, keepdims=True)
    return out


def counterfactual_request(model, targets, evidence=None, do=None, *, method="auto", n_samples=100_000,
                           seed=None, soft_evidence=None) -> Request:
    """The request of ``model.counterfactual(targets, evidence=..., do=..., soft_evidence=...)``.

    `targets` are read in the world ``do`` (counterfactual), `evidence` and
    `soft_evidence` are factual; a query string with subscripts, or
    ``cf(...)`` terms, may be given instead.
    """
    _check_options(method, n_samples, seed)
    soft_raw = _mapping(soft_evidence, "soft_evidence", EvidenceError)
    evidence = _mapping(evidence, "evidence", EvidenceError)
    do = _mapping(do, "do", ModelError)
    if _is_query_string(targets) or _has_terms(targets, evidence):
        if do:
            raise EvidenceError("give the intervention either in the query (string or cf terms) or in do=, "
                                "not both")
        if _is_query_string(targets):
            q = _parsed(model, targets)
            for k, v in evidence.items():
                q.evidence.append(Term(k, None, v))
        else:
            q = _term_query(model, targets, evidence)
        if q.do:
            raise EvidenceError("a counterfactual query cannot also contain do(...) outside the subscripts; "
                                "put the intervention in the subscript, e.g. P(Y_{X=0} | X=1)")
        return _counterfactual(model, q, method, n_samples, seed, soft_raw)
    if not do:
        raise EvidenceError("a counterfactual needs an intervention: do={node: value}")
    for k in do:
        model.check_node(k, "intervened node", EvidenceError)
    worlds = _Worlds(model)
    key = worlds.key(tuple(do.items()))
    names = _target_list(model, targets)
    targets = [(key, t) for t in names]
    _distinct(targets)
    ev_raw = _evidence_dict(model, [Term(k, None, v) for k, v in evidence.items()], worlds)
    return _counterfactual_parts(model, worlds.worlds, targets, ev_raw, None, method, n_samples, seed, soft_raw)


class _Worlds:
    """The worlds of one counterfactual request, each distinct subscript once (nested ones first)."""

    def __init__(self, model) -> None:
        self.model = model
        self.worlds: dict = {FACTUAL: World(FACTUAL, {}, {}, model, "")}
        self._keys: dict = {}

    def key(self, items) -> str:
        """The key of the world with these ``(node, value or Term)`` interventions (created if new)."""
        if not items:
            return FACTUAL
        do, nested, canon, text = {}, {}, [], []
        for node, v in items:
            self.model.check_node(node, "intervened node", EvidenceError)
            if isinstance(v, Term):
                nested[node] = self._nested(node, v)
                canon.append((node, "world", nested[node][0]))
            else:
                do[node] = v
                canon.append((node, "value", self._canon(node, v)))
            text.append(f"{node}={_show(v)}")
        canon = tuple(sorted(canon, key=str))
        if canon not in self._keys:
            key = COUNTERFACTUAL if len(self.worlds) == 1 else f"{COUNTERFACTUAL}{len(self.worlds)}"
            self.worlds[key] = World(key, do, nested, self.model.do(do) if do else self.model, ", ".join(text))
            self._keys[canon] = key
        return self._keys[canon]

    def _nested(self, node, term: Term) -> tuple:
        if term.value is not None:
            raise EvidenceError(f"the nested term {term} setting {node!r} must not carry a value")
        self.model.check_node(term.name, "node of a nested term", EvidenceError)
        if term.name != node:
            raise EvidenceError(f"a nested intervention sets a node to its own value in another world, e.g. "
                                f"{node}={node}_{{...}}; got {node}={term}")
        return self.key(term.world or ()), node

    def _canon(self, node, v) -> Hashable:
        if callable(v):
            return ("id", id(v))
        a = self.model.coerce(node, v, ModelError)
        return a.item() if a.ndim == 0 else ("id", id(v))


def _show(v) -> str:
    """A subscript value as the caller wrote it (results name counterfactual variables by it)."""
    if isinstance(v, Term) or np.ndim(v) == 0 and not callable(v):
        return str(v)
    return PER_ROW if not callable(v) else getattr(v, "__name__", None) or repr(v)


def _counterfactual(model, q: Query, method, n_samples, seed, soft_raw=None) -> Request:
    worlds = _Worlds(model)
    targets = [(worlds.key(t.world), t.name) for t in q.targets]
    _distinct(targets)
    values = [t.value for t in q.targets]
    return _counterfactual_parts(model, worlds.worlds, targets, _evidence_dict(model, q.evidence, worlds),
                                 None if values[0] is None else tuple(values), method, n_samples, seed, soft_raw)


def _counterfactual_parts(model, worlds: dict, targets: list, ev_raw: dict, values, method, n_samples,
                          seed, soft_raw=None) -> Request:
    both = set(targets) & set(ev_raw)
    if both:
        raise EvidenceError(f"{sorted(str(k[1]) for k in both)} are both targets and evidence in the same world")
    ev, sizes, row_do = {}, {}, {}
    for key, w in worlds.items():
        e, rows, n = _decode(w.model, {k: v for k, v in ev_raw.items() if k[0] == key}, w.do)
        ev.update(e)
        sizes["factual evidence" if key == FACTUAL else f"evidence and do of world {{{w.text}}}"] = n
        if key == COUNTERFACTUAL:
            row_do = rows
    soft = decode_soft_evidence(model, soft_raw or {}, {v for k, v in ev_raw if k == FACTUAL})
    n_rows = _soft_rows(_one_size(sizes), soft, "the evidence")
    if COUNTERFACTUAL not in worlds:            # only factual terms after all (e.g. cf(Y, {}))
        worlds = {**worlds, COUNTERFACTUAL: World(COUNTERFACTUAL, {}, {}, model, "")}
    cf = worlds[COUNTERFACTUAL]
    multi = len(worlds) > 2 or bool(cf.nested)
    return Request(model=model, cf_model=cf.model, world={} if multi else cf.do, targets=targets,
                   target_values=values, evidence=ev, row_do=row_do, n_rows=n_rows, method=method,
                   n_samples=int(n_samples), seed=seed, worlds=worlds, soft=soft,
                   text=_counterfactual_text(model, worlds, targets, values, ev))


def map_request(model, targets=None, evidence=None, do=None, soft_evidence=None) -> Request:
    """The request of ``model.map(targets, evidence=..., do=..., soft_evidence=...)`` (``targets=None``: MPE)."""
    soft_raw = _mapping(soft_evidence, "soft_evidence", EvidenceError)
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
    soft = decode_soft_evidence(m, soft_raw, {v for _, v in ev_raw})
    n_rows = _soft_rows(n_rows, soft, "evidence and do")
    return Request(model=m, cf_model=None, world={}, targets=[(FACTUAL, v) for v in names], target_values=None,
                   evidence=ev, row_do=row_do, n_rows=n_rows, method="exact", n_samples=1, seed=None, soft=soft)


def _soft_rows(n_rows, soft: dict, what: str) -> int | None:
    return _one_size({what: n_rows, **{f"soft evidence on {k!r}": a.shape[0] for k, a in soft.items()
                                       if a.ndim == 2}})


def _distinct(names: list) -> None:
    seen = set()
    for t in names:
        if t in seen:
            node = t[1] if isinstance(t, tuple) and len(t) == 2 and t[0] in (FACTUAL, COUNTERFACTUAL) else t
            raise EvidenceError(f"target {node!r} is listed twice")
        seen.add(t)


def _evidence_dict(model, terms, worlds: _Worlds | None = None) -> dict:
    out: dict = {}
    for t in terms:
        model.check_node(t.name, "evidence node", EvidenceError)
        key = (FACTUAL if worlds is None else worlds.key(t.world), t.name)
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
    for node, mech in m.mechanisms.items():        # the query's do and the model's own (a loaded m.do(...))
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
