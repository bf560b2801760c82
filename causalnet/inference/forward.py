"""The front door of ``model.forward``: one request, the first forward engine that takes it.

``CausalModel.forward`` runs the structural equations in topological order,
node by node (the *reference* run). Some model shapes have a faster way to
the same values, and they plug in here exactly as the query engines do in
:mod:`causalnet.inference.dispatch`: each call becomes one
:class:`ForwardRequest` and goes to the ordered
:class:`~causalnet.inference.engine.Registry` :data:`FORWARD_ENGINES`, whose
engines say cheaply whether they take it (``accepts``, which looks at the
model and the arguments' types and shapes, never computes) and answer it
(``answer``, a :class:`~causalnet.values.Trace` whose ``method`` names the
engine). An engine that finds while computing that it cannot give the
reference's values (a non-finite value, whose node the reference run names)
raises :class:`~causalnet.inference.engine.NoExactAnswer` and the next
engine runs. The engines, in order:

* ``recurrent loop`` (registered by :mod:`causalnet.models.recurrent`): a
  model of ``recurrent.rnn/lstm/gru/from_torch`` given every ``x[t]``: the
  fused block loop of :func:`causalnet.models.recurrent.run`; the other nodes
  (gates, cell states) are computed from its states when first read;
* ``tensor plan`` (:class:`causalnet.inference.tensor.PlanForward`): a model
  whose every node is a deterministic tensor node (transformers, seq2seq, a
  recurrent model with interventions): a compiled
  :class:`~causalnet.inference.tensor.Plan` per set of given nodes, kept in
  ``model.cache``; the first call of each input shape runs the reference
  (which validates it), later ones the compiled program with the fused
  kernels;
* ``node by node`` (:class:`ReferenceForward`): every other model, and any
  call the others decline (noise given, a batch size, values of another
  dtype...): ``CausalModel``'s own loop, which validates everything.

A fast engine computes only what it needs (the recurrent states, a tensor
model's sinks) and answers with a :class:`FilledTrace`: every node of the
model is in it, and a node not computed yet is computed from its parents,
by its own mechanism, the first time it is read (so a call that reads only
the outputs costs only the outputs, and one that reads everything gets the
reference's values).

Every fast engine is tested equal to the reference run
(``tests/inference/test_forward_engines.py``).

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.mechanisms import tensor as T
>>> m = cn.CausalModel({"x": T.Input((3,)), "y": T.ReLU("x")})
>>> x = np.array([[1.0, -1.0, 2.0]])
>>> [m.forward({"x": x}).method for _ in range(2)]      # the first call of a shape validates it
['node by node', 'tensor plan']
>>> m.forward({"x": x})["y"].tolist()
[[1.0, 0.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from .. import inference
from ..mechanisms.base import REAL
from ..values import Trace, check_finite
from .engine import Engine, LazyEngine, Registry

__all__ = ["ForwardRequest", "ReferenceForward", "FORWARD_ENGINES", "run_forward", "given_nodes", "FilledTrace"]


class ForwardRequest:
    """One ``model.forward`` call, as given (the reference engine validates it).

    Parameters
    ----------
    model : CausalModel
    values, noise : mapping node -> array, or None
        As passed to ``forward``.
    n : int or None
    seed : int, Generator or None
    keep : iterable of nodes or None
        ``forward``'s `keep` (read once, into a tuple).
    reference : callable (values, noise, n, seed, keep) -> Trace
        The node-by-node run (``CausalModel``'s own loop); :meth:`run_reference` calls it on this request.

    Attributes
    ----------
    method : str
        ``"exact"``: the registry asks its engines in order and never samples.
    """

    method = "exact"
    soft = None

    def __init__(self, model, values: Mapping | None, noise: Mapping | None, n: Any, seed: Any,
                 keep: Any, reference: Callable[..., Any]) -> None:
        self.model = model
        self.values = values
        self.noise = noise
        self.n = n
        self.seed = seed
        self.keep = None if keep is None else tuple(keep)
        self.reference = reference

    def run_reference(self):
        """The node-by-node :class:`~causalnet.values.Trace` of this call (it validates every argument)."""
        return self.reference(self.values, self.noise, self.n, self.seed, self.keep)

    @property
    def plain(self) -> bool:
        """Values only (a mapping), no noise and no batch size: the calls the fast engines consider."""
        return not self.noise and self.n is None and type(self.values) is dict

    def __repr__(self) -> str:
        given = [] if self.values is None else list(self.values)[:4]
        return f"<ForwardRequest values {given}{'...' if self.values and len(self.values) > 4 else ''}>"


class ReferenceForward(Engine):
    """The node-by-node run: takes every request (it is the last engine)."""

    name = "node by node"

    def accepts(self, request: ForwardRequest) -> bool:
        return True

    def answer(self, request: ForwardRequest):
        trace = request.run_reference()
        trace.method = self.name
        return trace


#: The forward engines, in order of preference (module docstring).
FORWARD_ENGINES = Registry([
    LazyEngine("tensor plan", lambda: inference.tensor.PlanForward()),
    ReferenceForward(),
], what="forward run")


def run_forward(request: ForwardRequest):
    """The :class:`~causalnet.values.Trace` of `request`, from the first engine that takes it."""
    return FORWARD_ENGINES.answer(request)


def given_nodes(request: ForwardRequest) -> frozenset[Hashable] | None:
    """The nodes given values, when every key is a node of the model (else None: the reference names it)."""
    mechs = request.model.mechanisms
    try:
        keys = frozenset(request.values)
    except TypeError:                       # an unhashable key
        return None
    return keys if all(k in mechs for k in keys) else None


class FilledTrace(Trace):
    """A :class:`~causalnet.values.Trace` of every node of `model`, some of them computed on first read.

    A fast forward engine fills it with what it computed (inputs, outputs,
    states); reading any other node computes it and its missing ancestors, in
    order, by their mechanisms (deterministic ones: the engines that use it
    take only such models), validated as the reference run validates them,
    and keeps the value. Iteration is over every node in the reference run's
    (topological) order.

    Parameters
    ----------
    values : dict node -> ndarray of shape (n, ...)
        The values already computed (kept, not copied).
    model : CausalModel
    n : int
        The batch size.
    method : str
        The engine's name (``Trace.method``).
    deferred : dict node -> callable, optional
        Nodes the engine can give together more cheaply than their
        mechanisms would (a layer's states from an array it already holds):
        reading one of them calls its callable once, which returns a dict
        node -> value covering it (and its group); these are kept as they are.
    """

    def __init__(self, values: dict, model, n: int, method: str, deferred: dict | None = None) -> None:
        super().__init__(values, model.specs, method=method)
        self._model = model
        self._rows = n
        self._deferred = deferred or {}

    def __getitem__(self, node):
        if node not in self._values and node in self._model.mechanisms:
            self._fill(node)
        return super().__getitem__(node)

    def _fill(self, node) -> None:
        """`node` and its missing ancestors, in order, by their mechanisms (all deterministic)."""
        mechs, specs, vals = self._model.mechanisms, self._model.specs, self._values
        stack = [node]
        while stack:
            v = stack[-1]
            if v in vals:
                stack.pop()
                continue
            if v in self._deferred:
                got = self._deferred[v]()
                vals.update(got)
                for k in got:
                    self._deferred.pop(k, None)
                continue
            missing = [p for p in mechs[v].parents if p not in vals]
            if missing:
                stack.extend(missing)
                continue
            with np.errstate(all="ignore"):
                x = mechs[v].evaluate(v, {p: vals[p] for p in mechs[v].parents}, None, specs[v], n=self._rows)
            if specs[v].kind == REAL:
                check_finite(v, x)
            vals[v] = specs[v].check_value(v, x, n=self._rows)
            stack.pop()

    def __iter__(self):
        return iter(self._model.dag.topological_order())

    def to_pandas(self):
        """:meth:`Samples.to_pandas <causalnet.values.Samples.to_pandas>` of every node (each computed first)."""
        self._values = {v: self[v] for v in self}           # every node, in the reference run's order
        return super().to_pandas()

    def __len__(self) -> int:
        return len(self._model.mechanisms)

    def __contains__(self, node) -> bool:
        return node in self._model.mechanisms
