"""Execution plans for deterministic tensor models.

A :class:`Plan` is compiled once from a model, the nodes whose values will be
given and the nodes wanted. It keeps only the nodes the wanted ones need
(ancestors, cut at the given nodes), runs them in topological order with no
noise handling, and frees each intermediate value after its last use. It gives
the same values as :meth:`CausalModel.forward` on the nodes it computes; it
is what :func:`causalnet.models.transformer.generate` uses to re-run a decoder
with the encoder's output held fixed.

Symbols: ``n`` batch.

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.mechanisms import tensor as T
>>> m = cn.CausalModel({"x": T.Input((3,)), "y": T.ReLU("x"), "z": T.Scale("y", 2.0)})
>>> plan = Plan(m, outputs=["z"], inputs=["y"])
>>> plan.nodes
('z',)
>>> plan.run({"y": np.array([[1.0, -1.0, 2.0]])})["z"].tolist()
[[2.0, -2.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ModelError, ShapeError
from ..mechanisms.tensor import Input
from ..values import Trace

__all__ = ["Plan"]


class Plan:
    """The nodes needed for `outputs` given `inputs`, ready to run.

    Parameters
    ----------
    model : CausalModel
        Every node the plan runs must be deterministic.
    outputs : iterable of nodes, optional
        Nodes wanted (default: every node).
    inputs : iterable of nodes, optional
        Nodes whose values :meth:`run` receives; their ancestors are not run.
        Default: the model's :class:`~causalnet.mechanisms.tensor.Input` roots
        that the outputs need.

    Attributes
    ----------
    nodes : tuple
        Nodes computed, in order.
    inputs : tuple
        Nodes whose values `run` needs.

    Raises
    ------
    ModelError
        Unknown nodes, or a needed node that is not deterministic or has no
        value (an ``Input`` root that is not among `inputs`).
    """

    def __init__(self, model, outputs: Iterable[Hashable] | None = None,
                 inputs: Iterable[Hashable] | None = None) -> None:
        self.model = model
        mechs = model.mechanisms
        outs = tuple(model.nodes) if outputs is None else tuple(model.check_node(v, "output node") for v in outputs)
        given = None if inputs is None else {model.check_node(v, "input node") for v in inputs}
        needed: set = set()
        stack = list(outs)
        while stack:
            v = stack.pop()
            if v in needed:
                continue
            needed.add(v)
            if given is not None and v in given:
                continue
            stack.extend(mechs[v].parents)
        order = [v for v in model.dag.topological_order() if v in needed]
        if given is None:
            given = {v for v in order if isinstance(mechs[v], Input)}
        self.inputs = tuple(v for v in order if v in given)
        self.nodes = tuple(v for v in order if v not in given)
        self.outputs = outs
        for v in self.nodes:
            m = mechs[v]
            if isinstance(m, Input):
                raise ModelError(f"plan: input node {v!r} is needed by {list(outs)} but is not among the inputs "
                                 f"{sorted(map(str, given))}")
            if not m.deterministic:
                raise ModelError(f"plan: node {v!r} ({type(m).__name__}) has noise; plans run deterministic nodes")
        pos = {v: i for i, v in enumerate(self.nodes)}
        last: dict = {}
        for v in self.nodes:
            for p in mechs[v].parents:
                last[p] = max(last.get(p, -1), pos[v])
        self._free: list[tuple] = [() for _ in self.nodes]
        frees: dict[int, list] = {}
        for p, i in last.items():
            frees.setdefault(i, []).append(p)
        for i, ps in frees.items():
            self._free[i] = tuple(ps)
        self._steps = [(v, mechs[v], mechs[v].parents, model.specs[v]) for v in self.nodes]

    def run(self, values: Mapping[Hashable, Any], *, keep: Iterable[Hashable] | None = None):
        """Run the plan on `values` (one batch-first array per input node).

        Parameters
        ----------
        values : mapping node -> array
            Exactly the plan's inputs (extra keys are an error).
        keep : iterable of nodes, optional
            Nodes to return besides the outputs (inputs included if named).

        Returns
        -------
        Trace
            The outputs and the kept nodes.
        """
        model = self.model
        missing = [v for v in self.inputs if v not in values]
        if missing:
            raise ModelError(f"plan needs values for {missing}")
        extra = [k for k in values if k not in self.inputs]
        if extra:
            raise ModelError(f"plan got values for {extra}, which are not among its inputs {list(self.inputs)}")
        keep_set = set(self.outputs) | ({model.check_node(k, "node in keep") for k in keep} if keep else set())
        vals: dict = {}
        sizes = {}
        for v in self.inputs:
            a = model.coerce(v, values[v], ModelError)
            if a.ndim == len(model.specs[v].shape) + 1:
                sizes[v] = a.shape[0]
            vals[v] = a
        if len(set(sizes.values())) > 1:
            raise ShapeError(f"plan inputs have different batch sizes: {sizes}")
        nb = next(iter(sizes.values())) if sizes else 1
        for v in self.inputs:
            if v not in sizes:
                vals[v] = np.broadcast_to(vals[v], (nb, *vals[v].shape))
            model.specs[v].check_value(v, vals[v])
        for i, (v, mech, parents, spec) in enumerate(self._steps):
            vals[v] = mech.evaluate(v, {p: vals[p] for p in parents}, None, spec, n=nb)
            for p in self._free[i]:
                if p not in keep_set:
                    del vals[p]
        return Trace({k: a for k, a in vals.items() if k in keep_set}, model.specs)

    def __repr__(self) -> str:
        return f"<Plan {len(self.nodes)} nodes; inputs {list(self.inputs)} -> outputs {list(self.outputs)}>"
