"""Compiled query shapes: what the front door learns once about a repeated question.

A *query shape* is what stays the same when a user asks the same question
with new evidence values: the targets, the evidence nodes in the order given,
and the method. The first two times a shape is asked, the front door builds and
validates the full :class:`~causalnet.inference.request.Request` as always
(the first time it only notes that the shape was asked, so that a question
asked once costs what it did); the second time it also asks the registry
which engine would answer it
(:meth:`~causalnet.inference.engine.Registry.first_exact`). When that engine
is the discrete one and the question is a plain, unbatched query (no ``do``,
no soft evidence, no per-row values, no ``P(Y=y | ...)`` value), the shape is
compiled into a :class:`QueryShape` and kept in the model's cache
(``model.cache[CACHE_KEY]``, the one per-model store every engine uses).

A compiled shape holds everything the request would have re-derived: the
target and evidence node ints of the model's
:class:`~causalnet.inference.discrete.network.DiscreteNetwork`, each evidence
node's *state map* (every value :func:`causalnet.values.decode_states`
accepts as a plain ``str`` or ``int``, mapped to its state index; cached per
node in ``model.cache[STATE_MAPS]``), the target states and the text of the
question. A later call of the same shape then only looks its values up in the
state maps and runs the network's arithmetic. Any value outside the maps (an
unknown state, a numpy scalar, an array, ``None``) sends the call down the
full path, which raises the error it always raised; so does any
:class:`~causalnet.errors.ResourceError` or
:class:`~causalnet.inference.engine.NoExactAnswer` of the engine, so that
``method="auto"`` moves on to the next engine exactly as before.

What a shape learned stays valid as long as its model and its registry do:
models are immutable (``CausalModel.do``, ``fit`` and every builder return a
new model with an empty cache), and the registry's
:attr:`~causalnet.inference.engine.Registry.version` is recorded with each
shape, so registering or removing an engine drops every shape learned before.

Examples
--------
>>> import causalnet as cn
>>> m = cn.gallery.load("sprinkler")
>>> a = m.query("Wet", evidence={"Rain": "yes"})         # validated
>>> b = m.query("Wet", evidence={"Rain": "no"})          # validated, then compiled
>>> b = m.query("Wet", evidence={"Rain": "no"})          # the compiled shape answers
>>> b.query, b.method
('P(Wet | Rain=no)', 'exact (variable elimination)')
>>> len(m.cache[CACHE_KEY])
1
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from ..distributions import DiscreteDistribution
from ..errors import EvidenceError, ResourceError
from ..values import decode_states
from .discrete import DiscreteEngine, discrete_network
from .discrete.engine import METHOD
from .engine import NoExactAnswer
from .request import QUESTION_TERMS, question_text

__all__ = ["QueryShape", "shape_key", "find_shape", "learn_shape", "state_map", "CACHE_KEY", "STATE_MAPS",
           "MAX_SHAPES", "UNKNOWN", "NEW"]

CACHE_KEY = "query shapes"
"""``model.cache`` entry: shape key -> ``(registry version, QueryShape or None)``."""
STATE_MAPS = "state maps"
"""``model.cache`` entry: node -> its state map (:func:`state_map`)."""
MAX_SHAPES = 4096
"""Shapes remembered per model (then forgotten all at once)."""
UNKNOWN = object()
"""What :func:`find_shape` returns for a shape asked once, not learned yet (None: learned, not compilable)."""
NEW = object()
"""What :func:`find_shape` returns for a shape never asked (under the registry's current version)."""
_SCALARS = (str, int)
_SEEN = object()
_DEFAULT_SAMPLES = 100_000


def shape_key(targets, evidence, do, method, n_samples, seed, soft_evidence, options) -> tuple | None:
    """The shape of a ``model.query`` call, or None when the call is not one a shape can answer.

    Only plain calls qualify: ``method`` ``"auto"`` or ``"exact"``, no ``do``,
    no soft evidence, no options, no seed, the default ``n_samples``, evidence
    None or a ``dict``, and targets a node name (not a query string) or a
    list or tuple of node names.
    """
    if (do is not None or soft_evidence is not None or options or seed is not None
            or type(n_samples) is not int or n_samples != _DEFAULT_SAMPLES or method not in ("auto", "exact")):
        return None
    if evidence is None:
        ev_nodes: tuple = ()
    elif type(evidence) is dict:
        ev_nodes = tuple(evidence)
    else:
        return None
    if type(targets) is str:
        if "(" in targets:
            return None
        tkey: Hashable = targets
    elif type(targets) in (list, tuple):
        tkey = ("list", tuple(targets))
    else:
        return None
    key = (method, tkey, ev_nodes)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def find_shape(model, key: tuple, version: int):
    """The learned shape of `key` on `model`: a :class:`QueryShape`, None (not compilable), :data:`UNKNOWN`
    (asked once only) or :data:`NEW` (never asked, or only under another registry version)."""
    got = model.cache.get(CACHE_KEY, {}).get(key)
    if got is None or got[0] != version:
        return NEW
    return UNKNOWN if got[1] is _SEEN else got[1]


def learn_shape(model, key: tuple, request, registry) -> None:
    """Learn from the validated `request` of shape `key`: the first time, only that it was asked (then
    `request` is not read and may be None); the second time, its :class:`QueryShape` (or None when it
    has none). A question asked once costs nothing more than before."""
    shapes = model.cache.setdefault(CACHE_KEY, {})
    prev = shapes.get(key)
    if prev is None or prev[0] != registry.version:
        shape = _SEEN
    else:
        shape = None
        plain = not (request.is_counterfactual or request.batched or request.target_values is not None
                     or request.soft or request.options or request.row_do)
        if plain and isinstance(registry.first_exact(request), DiscreteEngine):
            net = discrete_network(request.model)
            if net is not None and not net.row_evidence:
                shape = QueryShape(request.model, net, request.nodes, list(request.observed))
    if len(shapes) >= MAX_SHAPES:
        shapes.clear()
    shapes[key] = (registry.version, shape)


def state_map(model, node: Hashable) -> dict:
    """``{value: state index}`` for every plain ``str`` or ``int`` value of discrete `node` that
    :func:`~causalnet.values.decode_states` accepts (its names, and its indices unless its names are
    integers); cached in ``model.cache[STATE_MAPS]``."""
    maps = model.cache.setdefault(STATE_MAPS, {})
    got = maps.get(node)
    if got is None:
        states = model.specs[node].states
        if all(type(s) is str for s in states):           # names, then indices: decode_states' rule
            got = {i: i for i in range(len(states))}
            got.update({s: i for i, s in enumerate(states)})
        else:
            got = {}
            for value in [s for s in states if type(s) in _SCALARS] + list(range(len(states))):
                try:
                    got[value] = int(decode_states(node, states, value))
                except EvidenceError:
                    continue
        maps[node] = got
    return got


class QueryShape:
    """A compiled plain discrete query: targets and evidence nodes fixed, evidence values free.

    Parameters
    ----------
    model : CausalModel
        An all-discrete model (its network has no per-row ``do``).
    net : DiscreteNetwork
        ``discrete_network(model)``.
    targets : list of node
        Distinct, none of them observed (validated by the request that taught the shape).
    evidence : list of node
        The observed nodes, in the order the caller gives them.
    """

    __slots__ = ("_model", "_net", "_names", "_states", "_tidx", "_ev", "_head")

    def __init__(self, model, net, targets: list, evidence: list) -> None:
        pos = net.dag.index.pos
        self._model = model
        self._net = net
        self._names = tuple(targets)
        self._states = tuple(tuple(model.specs[t].states) for t in targets)
        self._tidx = tuple(pos[t] for t in targets)
        self._ev = [(v, pos[v], state_map(model, v), [str(s) for s in model.specs[v].states]) for v in evidence]
        self._head = f"P({', '.join(map(str, targets))}"

    def answer(self, evidence: Mapping | None) -> DiscreteDistribution | None:
        """The answer for these evidence values, or None when the full front door must answer.

        Parameters
        ----------
        evidence : dict node -> state name or index, or None
            Its keys are the shape's evidence nodes, in the shape's order.

        Returns
        -------
        DiscreteDistribution or None
            None for a value outside the state maps, or when the engine
            declines (a ResourceError or NoExactAnswer).
        """
        ev: dict = {}
        got = []
        if evidence:
            for value, (_, i, smap, _) in zip(evidence.values(), self._ev):
                if type(value) not in _SCALARS:
                    return None
                k = smap.get(value)
                if k is None:
                    return None
                ev[i] = k
                got.append(k)
        try:
            probs, log_ev = self._net.query_indices(self._tidx, ev, None, joint=True)
        except (ResourceError, NoExactAnswer):
            return None
        return DiscreteDistribution(self._names, probs, self._states, method=METHOD, log_evidence=log_ev,
                                    query=self._text(got))

    def _text(self, got: list) -> str:
        """The question as the full front door writes it (:func:`~causalnet.inference.request.question_text`)."""
        if not got:
            return self._head + ")"
        if len(got) > QUESTION_TERMS:
            terms = [(str(v), v, np.asarray(k)) for (v, _, _, _), k in zip(self._ev, got)]
            return question_text(self._model, [str(t) for t in self._names], terms, decoded=True)
        return self._head + " | " + ", ".join([f"{e[0]}={e[3][k]}" for e, k in zip(self._ev, got)]) + ")"

    def __repr__(self) -> str:
        return f"<QueryShape {self._head}{' | ' if self._ev else ''}{', '.join(str(e[0]) for e in self._ev)})>"
