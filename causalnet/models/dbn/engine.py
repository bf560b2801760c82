"""The DBN interface engine in the front door: exact queries on an unrolled discrete DBN.

:func:`dbn_shape` reads an unrolled DBN off a model (once per model, kept in
``model.cache``): every node is named ``var[t]`` for ``t = 0 .. T-1``; the
mechanisms of step 1 read steps 0 and 1 only, and every later step repeats
them (the same kind and parameters) shifted in time; any node may be under a
constant or per-row ``do`` (not a shift). A model built by
:meth:`~causalnet.models.dbn.network.DBN.unroll` is recognised at once, and
so is its ``.do(...)``, a hand-written unrolled model or one read from a file.

:class:`DBNEngine` (``QUERY_ENGINES``, name ``"DBN interface"``, ahead of
``"discrete"``) answers a single-target query on such a model by the
interface algorithm of :mod:`.interface` over the steps up to the last one
the request names (later unobserved steps sum to one). It is tested equal to
the generic discrete engine. ``.method`` is :data:`~.interface.METHOD`. It
leaves a model to a more specific family engine registered ahead of
``"discrete"`` (the HMM and CRF chains, imported here so that they are
registered first whatever the import order) whenever that one accepts it.

Symbols: ``n`` rows, ``T`` steps.
"""

from __future__ import annotations

import numpy as np

from ...distributions import DiscreteDistribution
from ...errors import CausalNetError
from ...inference.dispatch import QUERY_ENGINES
from ...inference.engine import Engine
from ...mechanisms.intervened import Intervened
from ...model import CausalModel
from ..crf import engine as crf_engine  # noqa: F401  (registered first: the family chains stay ahead of this one)
from ..hmm import engine as hmm_engine  # noqa: F401
from .interface import METHOD, SliceProgram
from .names import split_template, step_name
from .template import interface_of, slice_order, unroll_mechanisms, validate_template

__all__ = ["DBNShape", "dbn_shape", "DBNEngine"]


class DBNShape:
    """An unrolled discrete DBN read off a model: its slice program, horizon, steps and set nodes."""

    def __init__(self, program: SliceProgram, T: int, steps: dict, set_nodes: dict) -> None:
        self.program, self.T, self.steps, self.set_nodes = program, T, steps, set_nodes


def _same(a, b) -> bool:
    """True when mechanisms `a` and `b` are the same kind with the same parameters (parents aside)."""
    if type(a) is not type(b) or a.__dict__.keys() != b.__dict__.keys():
        return False
    for k, x in a.__dict__.items():
        y = b.__dict__[k]
        if k == "_parents" or x is y:
            continue
        try:
            if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
                if not (np.shape(x) == np.shape(y) and np.array_equal(x, y)):
                    return False
            elif not bool(x == y):
                return False
        except Exception:                   # incomparable parameters: not the same
            return False
    return True


def _split(node) -> tuple | None:
    if not isinstance(node, str) or not node.endswith("]") or "[" not in node:
        return None
    var, t = node[:-1].rsplit("[", 1)
    return (var, int(t)) if t.isdigit() and var and "[" not in var else None


def _template(model, steps: dict, variables: list, T: int):
    """``(initial, transition, set nodes)`` of an unrolled DBN, or None if the steps do not repeat."""
    nat, set_nodes = {}, {}
    for node, mech in model.mechanisms.items():
        if isinstance(mech, Intervened):
            if mech.is_shift:
                return None
            set_nodes[node] = mech
            mech = mech.natural
        nat[node] = mech
    init, trans = {}, {}
    for v in variables:
        m0, m1 = nat[step_name(v, 0)], nat[step_name(v, 1)]
        p0 = [_split(p) for p in m0.parents]
        p1 = [_split(p) for p in m1.parents]
        if any(p is None or p[1] != 0 for p in p0) or any(p is None or p[1] not in (0, 1) for p in p1):
            return None
        init[v] = m0.with_parents([p[0] for p in p0])
        trans[v] = m1.with_parents([p[0] if p[1] == 1 else f"{p[0]}[t-1]" for p in p1])
        for t in range(2, T):
            mt = nat[step_name(v, t)]
            want = [step_name(split_template(p)[0], t + split_template(p)[1]) for p in trans[v].parents]
            if list(mt.parents) != want or not _same(mt, m1):
                return None
    return init, trans, set_nodes


def _detect(model) -> DBNShape | None:
    hit = model.cache.get("dbn template")
    if hit is not None:
        dbn, T = hit
        if not dbn.is_discrete:
            return None
        steps = {step_name(v, t): (v, t) for v in dbn.variables for t in range(T)}
        return DBNShape(dbn.program(), T, steps, {})
    steps = {}
    for node in model.nodes:
        s = _split(node)
        if s is None:
            return None
        steps[node] = s
    variables = list(dict.fromkeys(v for v, _ in steps.values()))
    T = 1 + max(t for _, t in steps.values())
    if T < 3 or len(steps) != len(variables) * T:      # with 2 steps nothing repeats: not recognisably a DBN
        return None
    found = _template(model, steps, variables, T)
    if found is None:
        return None
    init, trans, set_nodes = found
    try:
        init, trans = validate_template(init, trans)
        order = slice_order(trans)
        two = CausalModel(unroll_mechanisms(init, trans, 2))
        program = SliceProgram(two, order, interface_of(trans, order))
    except CausalNetError:
        return None
    return DBNShape(program, T, steps, set_nodes)


def dbn_shape(model) -> DBNShape | None:
    """The unrolled-DBN shape of a discrete `model`, or None (computed once per model, kept in ``model.cache``)."""
    if "dbn shape" not in model.cache:
        model.cache["dbn shape"] = _detect(model)
    return model.cache["dbn shape"]


class DBNEngine(Engine):
    """Exact single-target queries on an unrolled discrete DBN by the interface algorithm."""

    name = "DBN interface"

    def accepts(self, request) -> bool:
        if request.is_counterfactual or len(request.targets) != 1 or request.soft:
            return False
        for e in QUERY_ENGINES:          # a more specific family engine (HMM or CRF chain) answers its own shape
            if e.name == "discrete":
                break
            if not isinstance(e, DBNEngine) and e.accepts(request):
                return False
        return dbn_shape(request.model) is not None

    def answer(self, request):
        model, shape = request.model, dbn_shape(request.model)
        n = request.n_rows or 1
        node = request.nodes[0]
        var, t = shape.steps[node]
        named = [shape.steps[v][1] for _, v in request.evidence] + [shape.steps[v][1] for v in shape.set_nodes]
        T = 1 + max([t, *named])
        ev, do = {}, {}
        for (_, v), value in request.evidence.items():
            w, s = shape.steps[v]
            a = ev.setdefault(w, np.full((n, T), -1, dtype=np.int64))
            a[:, s] = np.broadcast_to(np.asarray(value, dtype=np.int64), (n,))
        for v, mech in shape.set_nodes.items():
            w, s = shape.steps[v]
            if s < T:
                a = do.setdefault(w, np.full((n, T), -1, dtype=np.int64))
                a[:, s] = np.broadcast_to(np.asarray(model.coerce(v, mech.value), dtype=np.int64), (n,))
        prog = shape.program
        msgs = prog.messages(ev, do, n, T)
        p = prog.marginals(msgs, ev, do, n, T, [var], steps=[t])[var][:, 0]                  # (n, K)
        batched = request.batched
        return DiscreteDistribution([node], p if batched else p[0], [model.states(node)], batched=batched,
                                    method=METHOD, log_evidence=msgs.log_z if batched else float(msgs.log_z[0]))


QUERY_ENGINES.register(DBNEngine(), before="discrete")
