"""The explorer's questions, answered on the library's own engines: the JSON API as methods.

A :class:`Session` holds one model (or one bare graph) and answers the page's
requests, each a JSON object, with a JSON object. Nothing here knows about HTTP:
:mod:`causalnet.explorer.server` only moves these dicts over the wire, so the
API is tested without a server too.

===================  ==========================================  ================================================
request              payload                                     answer
===================  ==========================================  ================================================
``model``            none                                        nodes (name, kind, states, latent, parents), edges
``query``            ``{"evidence": {...}, "do": {...}}``        ``query`` text, ``posteriors`` of every node, ``method``
``counterfactual``   ``{"evidence": {...}, "do": {...}}``        counterfactual and factual ``posteriors``, ``scm``
``adjust``           ``{"treatment": X, "outcome": Y}``          minimal adjustment sets, front-door sets,
                                                                 ``identifiable`` and ``estimand``, and the
                                                                 interventional next to the observational
                                                                 distribution of Y for each value of X
``dsep``             ``{"x": X, "y": Y, "given": [...]}``        ``d_separated`` and an open ``path`` when not
===================  ==========================================  ================================================

Posteriors are ``{state: probability}`` for a discrete node and ``{"mean", "sd"}``
for a continuous one; an observed or intervened node gets its value (a point
mass, or sd 0). All posteriors of one update come from one request: an
all-discrete model asks :func:`~causalnet.inference.discrete.all_marginals` on
the model's own network (one Hugin propagation of its junction tree when no
clique exceeds :data:`JT_MAX_CLIQUE` entries, else one cached requisite program
per node; a ``do`` reuses both); another model is asked on the mutilated model
``m.do(do)`` (cached for the next updates), node by node, or, when linear-Gaussian,
all nodes in one joint query. A request is bounded in time: the
loop over nodes stops at the session's `timeout` with a
:class:`~causalnet.errors.ResourceError` (the server also stops waiting for any
request then), and an exact engine that refuses a
model as too large (``ResourceError``) is replaced by likelihood weighting,
which ``method`` then says. Bad input raises the library's typed errors
(:class:`~causalnet.errors.EvidenceError`, :class:`~causalnet.errors.GraphError`,
:class:`~causalnet.errors.ModelError`) naming the node and what was expected.

Examples
--------
>>> from causalnet import gallery
>>> s = Session(gallery.load("sprinkler"))
>>> r = s.query({"evidence": {"Rain": "yes"}, "do": {"Sprinkler": "on"}})
>>> r["query"], round(r["posteriors"]["Wet"]["wet"], 4)
('P(· | do(Sprinkler=on), Rain=yes)', 0.99)
>>> s.dsep({"x": "Sprinkler", "y": "Wet", "given": ["Rain"]})["path"]
['Sprinkler', 'Wet']
"""

from __future__ import annotations

import difflib
import math
import re
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from ..distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian, GaussianMixture
from ..errors import CausalNetError, EvidenceError, GraphError, ModelError, NotIdentifiable, ResourceError
from ..graph.core import DAGCore
from ..graph.paths import open_path
from ..inference.discrete import all_marginals, discrete_network
from ..mechanisms.base import DISCRETE, TENSOR
from ..model import CausalModel

__all__ = ["Session", "query_text", "MAX_SETS", "SAMPLES", "JT_MAX_CLIQUE"]

#: At most this many adjustment sets of each kind are listed.
MAX_SETS = 50
#: Samples drawn when an exact engine refuses a model as too large.
SAMPLES = 20_000
_CACHE = 8                                     # mutilated models kept for the next updates
#: Largest clique (entries) for which one junction-tree propagation gives all posteriors; past it, one cached
#: requisite program per node (see :mod:`causalnet.inference.discrete.every_node`).
JT_MAX_CLIQUE = 10**6
_NAME = re.compile(r"[A-Za-z_][\w.]*(?:\[\d+\])*\Z")


def _term(text: Any) -> str:
    """A name or value as the query grammar writes it: bare when it is an identifier, else quoted."""
    if isinstance(text, float):
        return repr(text)
    s = str(text)
    if _NAME.match(s) or re.fullmatch(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?", s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def query_text(evidence: Mapping, do: Mapping, *, world: bool = False) -> str:
    """``P(· | do(Sprinkler=on), Rain=yes)``; with `world`, the counterfactual ``P(·_{Sprinkler=off} | ...)``.

    Examples
    --------
    >>> query_text({"Rain": "yes"}, {"Sprinkler": "on"})
    'P(· | do(Sprinkler=on), Rain=yes)'
    >>> query_text({"Wet": "wet"}, {"Sprinkler": "off"}, world=True)
    'P(·_{Sprinkler=off} | Wet=wet)'
    >>> query_text({}, {})
    'P(·)'
    """
    assigns = ", ".join(f"{_term(k)}={_term(v)}" for k, v in do.items())
    conds = [f"{_term(k)}={_term(v)}" for k, v in evidence.items()]
    if world:
        head = "·_{" + assigns + "}" if do else "·"
    else:
        head = "·"
        if do:
            conds.insert(0, f"do({assigns})")
    return f"P({head} | {', '.join(conds)})" if conds else f"P({head})"


def _float(x: Any) -> float:
    v = float(x)
    return v if math.isfinite(v) else 0.0


class Session:
    """The explorer's view of one model or graph: every API request as a method on JSON values.

    Parameters
    ----------
    obj : CausalModel or DAG
        A DAG (or a model without mechanisms) offers the graph questions only.
    timeout : float, default 10.0
        Seconds one request may compute before it stops with a ResourceError.
    title : str, optional
        Shown at the top of the page.

    Raises
    ------
    ModelError
        If `obj` is neither a model nor a DAG, or `timeout` is not positive.
    """

    def __init__(self, obj: Any, *, timeout: float = 10.0, title: str | None = None) -> None:
        if isinstance(obj, CausalModel):
            self.model: CausalModel | None = obj
            self.dag = obj.dag
        elif isinstance(obj, DAGCore):
            self.model, self.dag = None, obj
        else:
            raise ModelError(f"the explorer shows a CausalModel or a DAG, got {type(obj).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ModelError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.title = title or (repr(obj) if len(repr(obj)) < 80 else type(obj).__name__)
        self._by_name = {str(v): v for v in self.dag.nodes}
        self._mutilated: OrderedDict = OrderedDict()

    # -- the model --------------------------------------------------------------------

    def kind(self, node: Hashable) -> str:
        """``"discrete"``, ``"continuous"``, ``"tensor"``, or ``"graph"`` (no mechanism)."""
        if self.model is None:
            return "graph"
        spec = self.model.specs[node]
        if spec.kind == DISCRETE:
            return "discrete"
        return "tensor" if spec.kind == TENSOR or spec.shape else "continuous"

    def model_info(self) -> dict:
        """``GET /api/model``: the title, the nodes (name, kind, states, latent, parents) and the edges."""
        nodes = []
        for v in self.dag.nodes:
            kind = self.kind(v)
            nodes.append({"name": str(v), "kind": kind, "latent": v in self.dag.latent,
                          "states": [str(s) for s in self.model.states(v)] if kind == "discrete" else None,
                          "parents": [str(p) for p in self.dag.parents(v)]})
        return {"title": self.title, "has_mechanisms": self.model is not None, "nodes": nodes,
                "edges": [[str(u), str(v)] for u, v in self.dag.edges], "timeout": self.timeout}

    # -- validation -------------------------------------------------------------------

    def node(self, name: Any, what: str = "node", exc: type = GraphError) -> Hashable:
        """The node called `name` (a string as sent by the page); `exc` names it with a close match otherwise."""
        if not isinstance(name, str):
            raise exc(f"{what} must be a node name (a string), got {type(name).__name__} {name!r}")
        v = self._by_name.get(name)
        if v is None:
            close = difflib.get_close_matches(name, list(self._by_name), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise exc(f"unknown {what} {name!r}{hint}")
        return v

    def nodes(self, names: Any, what: str, exc: type = GraphError) -> list:
        """Nodes from a name or a list of names."""
        if names is None:
            return []
        items = [names] if isinstance(names, str) else names
        if not isinstance(items, list):
            raise exc(f"{what} must be a node name or a list of names, got {type(names).__name__}")
        return list(dict.fromkeys(self.node(n, what, exc) for n in items))

    def _payload(self, payload: Any, keys: tuple) -> dict:
        if not isinstance(payload, Mapping):
            raise EvidenceError(f"the request body must be a JSON object with keys {list(keys)}, "
                                f"got {type(payload).__name__}")
        unknown = sorted(set(map(str, payload)) - set(keys))
        if unknown:
            raise EvidenceError(f"unknown keys {unknown} in the request; allowed keys are {list(keys)}")
        return dict(payload)

    def _assignment(self, values: Any, what: str) -> dict:
        """`values` ({name: state or number}) as {node: value}, each value checked by the model."""
        if values is None:
            return {}
        if not isinstance(values, Mapping):
            raise EvidenceError(f"{what} must be an object {{node: value}}, got {type(values).__name__}")
        out = {}
        for name, value in values.items():
            v = self.node(name, f"{what} node", EvidenceError)
            if self.kind(v) == "tensor":
                raise EvidenceError(f"{what} on tensor node {name!r} is not offered by the explorer")
            if isinstance(value, (list, dict)) or value is None:
                raise EvidenceError(f"{what} value for {name!r} must be one state or number, got {value!r}")
            self.model.coerce(v, value)            # raises EvidenceError naming the node and its states
            out[v] = value
        return out

    def _questions(self, payload: Any, *, counterfactual: bool = False) -> tuple[dict, dict]:
        if self.model is None:
            raise ModelError("this is a graph without mechanisms: it answers graph questions (adjustment sets, "
                             "d-separation), not probabilities")
        p = self._payload(payload, ("evidence", "do"))
        ev = self._assignment(p.get("evidence"), "evidence")
        do = self._assignment(p.get("do"), "do")
        both = [str(v) for v in ev if v in do]
        if both and not counterfactual:            # a counterfactual may observe X and ask "had X been x"
            raise EvidenceError(f"{both} are both observed and intervened on; clear one first")
        order = {v: i for i, v in enumerate(self.dag.nodes)}
        return (dict(sorted(ev.items(), key=lambda kv: order[kv[0]])),
                dict(sorted(do.items(), key=lambda kv: order[kv[0]])))

    # -- posteriors -------------------------------------------------------------------

    def _point(self, node: Hashable, value: Any) -> dict:
        if self.kind(node) == "discrete":
            k = int(self.model.coerce(node, value))
            return {str(s): float(i == k) for i, s in enumerate(self.model.states(node))}
        return {"mean": _float(value), "sd": 0.0}

    def _summary(self, node: Hashable, dist: Any) -> dict:
        if isinstance(dist, DiscreteDistribution):
            return {str(s): _float(p) for s, p in zip(self.model.states(node), np.ravel(dist.probs))}
        if isinstance(dist, (Gaussian, GaussianMixture)):          # a mixture (mixed models): its moments
            return {"mean": _float(np.ravel(dist.mean)[0]), "sd": _float(np.ravel(dist.std)[0])}
        if isinstance(dist, EmpiricalDistribution):
            if self.kind(node) == "discrete":
                x = np.asarray(dist.samples[node]).astype(int)
                freq = np.bincount(x, weights=dist.weights, minlength=len(self.model.states(node)))
                return {str(s): _float(p) for s, p in zip(self.model.states(node), freq)}
            return {"mean": _float(dist.mean(node)), "sd": _float(np.sqrt(dist.var(node)))}
        loc, scale = getattr(dist, "loc", None), getattr(dist, "scale", None)
        if loc is not None and scale is not None:                  # Cauchy: no mean; its loc and scale
            return {"mean": _float(np.ravel(loc)[0]), "sd": _float(np.ravel(scale)[0]), "cauchy": True}
        raise ModelError(f"the explorer cannot show a {type(dist).__name__} for {node!r}")

    def _joint(self, model: CausalModel, targets: list, ev: dict, ask) -> dict | None:
        """All continuous targets from one joint answer (a Gaussian or weighted samples), else None."""
        if any(self.kind(t) != "continuous" for t in targets) or not targets:
            return None
        dist = ask(model, targets)
        if isinstance(dist, Gaussian):
            mean, sd = np.ravel(dist.mean), np.ravel(dist.std)
            return {t: {"mean": _float(mean[i]), "sd": _float(sd[i])} for i, t in enumerate(targets)}, dist.method
        if isinstance(dist, EmpiricalDistribution):
            return {t: self._summary(t, dist) for t in targets}, dist.method
        return None

    def _calibrated(self, targets: list, ev: dict, do: dict, deadline: float) -> tuple[dict, str] | None:
        """All posteriors of an all-discrete model from the engine's
        :func:`~causalnet.inference.discrete.all_marginals` on the model's own network (its junction
        tree when no clique exceeds :data:`JT_MAX_CLIQUE` entries, else one cached requisite program
        per node; a ``do`` reuses both); None for another model."""
        bn = discrete_network(self.model) if self.model is not None else None
        if bn is None or bn.row_evidence or not targets:
            return None
        coerce = self.model.coerce
        post, _, method = all_marginals(bn, {v: int(coerce(v, x)) for v, x in ev.items()},
                                        do={v: int(coerce(v, x)) for v, x in do.items()},
                                        max_clique=JT_MAX_CLIQUE, deadline=deadline)
        return {t: {str(s): _float(p) for s, p in zip(self.model.states(t), np.ravel(post[t]))}
                for t in targets}, method

    def _each(self, targets: list, ask, deadline: float) -> tuple[dict, list]:
        """One query per target, stopping at the deadline."""
        out, methods = {}, []
        for i, t in enumerate(targets):
            if time.monotonic() > deadline:
                raise ResourceError(f"the posteriors took longer than the {self.timeout:g} s allowed per request "
                                    f"({i} of {len(targets)} nodes done); observe fewer nodes or use a smaller model")
            dist = ask(t)
            out[t] = self._summary(t, dist)
            methods.append(dist.method)
        return out, methods

    def _intervened(self, do: dict) -> CausalModel:
        key = tuple((str(k), repr(v)) for k, v in do.items())
        m = self._mutilated.pop(key, None)
        if m is None:
            m = self.model.do(do) if do else self.model
        self._mutilated[key] = m
        while len(self._mutilated) > _CACHE:
            self._mutilated.popitem(last=False)
        return m

    def _posteriors(self, ev: dict, do: dict, deadline: float) -> tuple[dict, str]:
        """Every node's posterior under `do` given `ev`, and the method(s) that answered."""
        targets = [v for v in self.dag.nodes if v not in ev and v not in do and self.kind(v) != "tensor"]
        methods: list = []
        if not targets:
            self._check_possible(self._intervened(do), {**ev, **do})
        m = self.model
        try:
            joint = self._calibrated(targets, ev, do, deadline)
            if joint is None:
                m = self._intervened(do)
                joint = self._joint(m, targets, ev, lambda mm, ts: mm.query(ts, evidence=ev, seed=0))
            if joint is not None:
                post, methods = joint[0], [joint[1]]
            else:
                post, methods = self._each(targets, lambda t: m.query(t, evidence=ev, seed=0), deadline)
        except ResourceError as e:
            if time.monotonic() > deadline:
                raise
            m = self._intervened(do)
            post, methods = self._each(targets, lambda t: m.query(t, evidence=ev, method="sampling",
                                                                  n_samples=SAMPLES, seed=0), deadline)
            methods = [f"{methods[0] if methods else 'likelihood weighting'}, {SAMPLES} samples "
                       f"(approximate: the exact engine refused: {e})"]
        post.update({v: self._point(v, x) for v, x in {**ev, **do}.items()})
        return post, "; ".join(dict.fromkeys(methods)) or "none (every node observed or intervened on)"

    def _check_possible(self, m: CausalModel, values: dict) -> None:
        """With every node given, the evidence must still have positive probability (EvidenceError if not)."""
        if any(self.kind(v) != "discrete" for v in values):
            return
        lp = float(m.log_prob({v: np.asarray([self.model.coerce(v, x)]) for v, x in values.items()})[0])
        if lp == -np.inf:
            given = ", ".join(f"{k}={x}" for k, x in values.items())
            raise EvidenceError(f"the evidence has probability zero: P({given}) = 0")

    def _named(self, post: dict) -> dict:
        return {str(v): post[v] for v in self.dag.nodes if v in post}

    def query(self, payload: Any) -> dict:
        """``POST /api/query``: every node's posterior given ``evidence`` under ``do``.

        Returns
        -------
        dict
            ``query`` (``"P(· | do(X=x), Z=z)"``), ``posteriors`` ({node: {state: p}} or
            {node: {"mean", "sd"}}), ``method``, ``evidence`` and ``do`` (as given), ``seconds``.
        """
        start = time.monotonic()
        ev, do = self._questions(payload)
        post, method = self._posteriors(ev, do, start + self.timeout)
        return {"query": query_text(ev, do), "posteriors": self._named(post), "method": method,
                "evidence": {str(k): v for k, v in ev.items()}, "do": {str(k): v for k, v in do.items()},
                "seconds": time.monotonic() - start}

    def counterfactual(self, payload: Any) -> dict:
        """``POST /api/counterfactual``: each node had ``do`` been applied, given ``evidence`` in the factual world.

        Returns
        -------
        dict
            ``query`` (``"P(·_{X=x} | Z=z)"``), ``posteriors`` (the counterfactual world),
            ``factual`` (the posteriors given the evidence alone), ``method``, ``scm``, ``seconds``.
        """
        start = time.monotonic()
        ev, do = self._questions(payload, counterfactual=True)
        deadline = start + self.timeout
        factual, _ = self._posteriors(ev, {}, deadline)
        targets = [v for v in self.dag.nodes if self.kind(v) != "tensor"]
        m, scms = self.model, []

        def ask(t):
            d = m.counterfactual(t, evidence=ev, do=do, seed=0)
            scms.append(getattr(d, "scm", None))
            return d

        joint = self._joint(m, targets, ev, lambda mm, ts: ask(ts)) if do else None
        if not do:                                  # no intervention: the counterfactual world is the factual one
            post, methods = factual, ["no intervention: the factual posteriors"]
        elif joint is not None:
            post, methods = joint[0], [joint[1]]
        else:
            post, methods = self._each(targets, ask, deadline)
        return {"query": query_text(ev, do, world=True), "posteriors": self._named(post),
                "factual": self._named(factual), "method": "; ".join(dict.fromkeys(methods)),
                "scm": next((s for s in scms if s), None), "evidence": {str(k): v for k, v in ev.items()},
                "do": {str(k): v for k, v in do.items()}, "seconds": time.monotonic() - start}

    # -- graph questions --------------------------------------------------------------

    def _sets(self, sets: list) -> list:
        order = {v: i for i, v in enumerate(self.dag.nodes)}
        return [[str(v) for v in sorted(s, key=order.__getitem__)] for s in sets]

    def adjust(self, payload: Any) -> dict:
        """``POST /api/adjust``: how to estimate the effect of ``treatment`` on ``outcome``.

        Returns
        -------
        dict
            ``minimal`` (every minimal adjustment set, as ``g.minimal_adjustment_sets`` lists them),
            ``frontdoor`` (the minimal front-door sets), ``identifiable``, ``estimand`` (its formula,
            or None with the ``reason``), and, for a model, ``effect``: per value of the treatment,
            the outcome's ``interventional`` and ``observational`` distributions.
        """
        p = self._payload(payload, ("treatment", "outcome"))
        x = self.node(p.get("treatment"), "treatment")
        y = self.node(p.get("outcome"), "outcome")
        if x == y:
            raise GraphError(f"treatment and outcome are both {str(x)!r}; pick two different nodes")
        g = self.dag
        minimal = g.minimal_adjustment_sets(x, y, max_sets=MAX_SETS)
        front = g.frontdoor_adjustment_sets(x, y, minimal=True, max_sets=MAX_SETS)
        try:
            estimand, reason = str(g.identify(y, x)), None
        except NotIdentifiable as e:
            estimand, reason = None, str(e)
        out = {"treatment": str(x), "outcome": str(y), "minimal": self._sets(minimal),
               "frontdoor": self._sets(front), "identifiable": estimand is not None, "estimand": estimand,
               "reason": reason, "truncated": len(minimal) >= MAX_SETS or len(front) >= MAX_SETS}
        if self.model is not None and self.kind(x) != "tensor" and self.kind(y) != "tensor":
            out["effect"] = self._effect(x, y, time.monotonic() + self.timeout)
        return out

    def _values(self, x: Hashable) -> list:
        if self.kind(x) == "discrete":
            return list(self.model.states(x))
        d = self.model.query(x, seed=0)
        mean, sd = self._summary(x, d)["mean"], self._summary(x, d)["sd"]
        return [round(mean - sd, 6), round(mean, 6), round(mean + sd, 6)]

    def _effect(self, x: Hashable, y: Hashable, deadline: float) -> list:
        """Per value of `x`: ``P(y | do(x))`` next to ``P(y | x)`` (None where ``P(x) = 0``)."""
        rows = []
        for value in self._values(x):
            if time.monotonic() > deadline:
                raise ResourceError(f"the effect table took longer than the {self.timeout:g} s allowed per request")
            row = {"value": value if isinstance(value, float) else str(value),
                   "interventional": self._summary(y, self.model.query(y, do={x: value}, seed=0))}
            try:
                row["observational"] = self._summary(y, self.model.query(y, evidence={x: value}, seed=0))
            except EvidenceError:
                row["observational"] = None
            rows.append(row)
        return rows

    def dsep(self, payload: Any) -> dict:
        """``POST /api/dsep``: are ``x`` and ``y`` d-separated given ``given``? An open path when not.

        Returns
        -------
        dict
            ``statement`` (``"X ⊥ Y | Z"``), ``d_separated`` and ``path`` (a list of nodes, or None).
        """
        p = self._payload(payload, ("x", "y", "given"))
        xs = self.nodes(p.get("x"), "node")
        ys = self.nodes(p.get("y"), "node")
        zs = self.nodes(p.get("given"), "conditioning node")
        if not xs or not ys:
            raise GraphError("pick a node for x and a node for y")
        sep = self.dag.d_separated(xs, ys, zs)
        path = None if sep else open_path(self.dag, xs, ys, zs)
        stmt = f"{', '.join(map(str, xs))} ⊥ {', '.join(map(str, ys))}" + (
            f" | {', '.join(map(str, zs))}" if zs else "")
        return {"statement": stmt, "d_separated": bool(sep), "path": None if path is None else [str(v) for v in path],
                "x": [str(v) for v in xs], "y": [str(v) for v in ys], "given": [str(v) for v in zs]}

    def answer(self, name: str, payload: Any = None) -> dict:
        """Dispatch a request by name (``"model"``, ``"query"``, ``"counterfactual"``, ``"adjust"``, ``"dsep"``)."""
        handlers = {"model": lambda _: self.model_info(), "query": self.query, "counterfactual": self.counterfactual,
                    "adjust": self.adjust, "dsep": self.dsep}
        if name not in handlers:
            raise CausalNetError(f"unknown request {name!r}; requests: {sorted(handlers)}")
        return handlers[name](payload)

