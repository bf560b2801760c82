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

import math
import time
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ModelError, ShapeError
from ..mechanisms.base import TENSOR
from ..mechanisms.intervened import Intervened
from ..mechanisms.tensor import AttentionWeights, Input, LayerNorm, Linear, TensorOp, check_output, fused
from ..values import Trace
from .engine import Engine
from .forward import FilledTrace, ForwardRequest, given_nodes

__all__ = ["Plan", "Program", "Incremental", "PlanForward"]


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
        self._program = Program(model, self.inputs, self.nodes, self.outputs)
        self._checked: set = set()
        specs = model.specs
        # the fast path's per-input test, and the specs of what it returns
        self._fast_inputs = tuple((v, specs[v].dtype, len(specs[v].shape) + 1, specs[v].dtype.kind == "f")
                                  for v in self.inputs)
        self._out_specs = {v: specs[v] for v in self.outputs}

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
        if keep is None and self._checked:
            fast = self._run_program(values)
            if fast is not None:
                return Trace(fast, self._out_specs)
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
        signature = tuple(vals[v].shape for v in self.inputs)     # the fast path checks the dtypes itself
        out = self._run_checked(vals, nb, keep_set)       # raises, naming the node, where the fast run went non-finite
        if not keep and len(self._checked) < 64:
            self._checked.add(signature)                  # every shape checked once: later runs take the program
        return out

    def run_compiled(self, values: Mapping) -> dict | None:
        """The outputs by the compiled program, or None when `values` need the checked path.

        None unless `values` are exactly the inputs, as arrays of their nodes'
        dtypes and shapes already run once by :meth:`run` (or :meth:`admit`),
        finite, and every output came out finite; the caller then takes a
        checked path, which names the node at fault.
        """
        return self._run_program(values)

    def admit(self, values: Mapping) -> None:
        """Let :meth:`run_compiled` take `values`' shapes: a run node by node just validated them."""
        arrays = [values.get(v) for v in self.inputs]
        if all(type(a) is np.ndarray and a.dtype == dt and a.ndim == nd
               for a, (_, dt, nd, _) in zip(arrays, self._fast_inputs)) and len(self._checked) < 64:
            self._checked.add(tuple(a.shape for a in arrays))

    def _run_program(self, values: Mapping) -> dict | None:
        """The compiled program on inputs that need no conversion and whose shapes were checked; else None."""
        if len(values) != len(self.inputs):
            return None
        with np.errstate(all="ignore"):       # one for the tests (r @ r may overflow) and the program
            return self._run_program_quietly(values)

    def _run_program_quietly(self, values: Mapping) -> dict | None:
        """Finiteness first by one BLAS dot product per array, ``isfinite(r @ r)`` on the flattened array.

        A NaN or an infinity makes it NaN or +inf (squares are never negative,
        so infinities cannot cancel); only when it is not finite (which may be
        an overflow of the squares alone) does the full test run.
        """
        arrs = []
        shapes = []
        dot, isfinite = _dot, math.isfinite
        for v, dtype, ndim, is_float in self._fast_inputs:
            a = values.get(v)
            if type(a) is not np.ndarray or a.dtype != dtype or a.ndim != ndim:
                return None
            if is_float:
                r = a.reshape(-1)
                if not isfinite(dot(r, r)) and not np.isfinite(a).all():
                    return None                    # the checked path names the input
            arrs.append(a)
            shapes.append(a.shape)
        if tuple(shapes) not in self._checked or (len(shapes) > 1 and len({s[0] for s in shapes}) > 1):
            return None
        program = self._program
        if program.fusable and not fused.active():
            t0 = time.perf_counter()
            out = program._body(*arrs)
            fused.spend(time.perf_counter() - t0)       # repeated runs earn the fused kernels' compilation
        else:
            out = program._body(*arrs)
        if len(out) >= _JOINT_CHECK and arrs and arrs[0].size <= _JOINT_CHECK_SIZE:
            # many small outputs (a forward run keeping every node): one product over all of them; only a
            # non-finite sum (a NaN, an infinity, -inf where a node allows it, an overflow) checks them one by one
            r = np.concatenate([a.reshape(-1) for a in out if a.dtype.kind == "f"])
            if isfinite(dot(r, r)):
                return dict(zip(program._names, out))
        for a, ok in zip(out, program.neginf_ok):
            if a.dtype.kind == "f":
                r = a.reshape(-1)
                if not isfinite(dot(r, r)) and not _finite(a, ok):
                    return None
        return dict(zip(program._names, out))

    def _run_checked(self, vals: dict, nb: int, keep_set: set):
        """Node by node through ``evaluate``: shapes, sizes and finiteness checked at every node."""
        model = self.model
        for i, (v, mech, parents, spec) in enumerate(self._steps):
            vals[v] = mech.evaluate(v, {p: vals[p] for p in parents}, None, spec, n=nb)
            for p in self._free[i]:
                if p not in keep_set:
                    del vals[p]
        return Trace({k: a for k, a in vals.items() if k in keep_set}, model.specs)

    def __repr__(self) -> str:
        return f"<Plan {len(self.nodes)} nodes; inputs {list(self.inputs)} -> outputs {list(self.outputs)}>"


def _finite(a: np.ndarray, neginf_ok: bool) -> bool:
    """Every entry finite, or -inf where the node allows it: the full test, once the cheap one failed."""
    if not neginf_ok:
        return bool(np.isfinite(a).all())
    return not (np.isnan(a).any() or np.isposinf(a).any())


_dot = np.dot
#: outputs from which a plan checks its outputs' finiteness in one product, when its first input has at most
#: _JOINT_CHECK_SIZE numbers (above that each array's own product costs less than copying them all into one)
_JOINT_CHECK = 8
_JOINT_CHECK_SIZE = 1 << 14


def _fusable(mech) -> bool:
    """Whether the op's compiled function can call a kernel of :mod:`~causalnet.mechanisms.tensor.fused`."""
    if type(mech) is LayerNorm:
        return len(mech.parents) == 2
    return type(mech) is AttentionWeights and not mech.has_padding and mech.heads is not None


class Program:
    """A plan compiled into a flat list of calls on numbered slots: the fast path of :class:`Plan`.

    Each step is ``slots[out] = fn(*slots[args])`` followed by freeing the
    slots no later step reads; no dict is built and no shape is inferred per
    call (the :class:`Plan` runs a shape signature through the checked path
    once before it takes the program). Linear maps of one parent (``Q``,
    ``K``, ``V``) are fused into one matrix product whose column blocks are
    the nodes' values. Tensor ops contribute ``op.compiled()``; any other
    mechanism (an intervention, a rewired edge) runs through ``evaluate``.
    """

    def __init__(self, model, inputs: tuple, nodes: tuple, outputs: tuple) -> None:
        mechs = model.mechanisms
        slot = {v: i for i, v in enumerate((*inputs, *nodes))}
        nslots = len(slot)
        fused, nslots = _fuse_linears(model, nodes, slot, nslots)
        steps: list = []
        done: set = set()
        for v in nodes:
            if v in done:
                continue
            if v in fused:
                fn, members, fslot = fused[v]
                steps.append((fn, (slot[mechs[v].parents[0]],), fslot))
                for node, piece in members:
                    steps.append((piece, (fslot,), slot[node]))
                    done.add(node)
                continue
            mech = mechs[v]
            steps.append((_callable(v, mech, model.specs[v]), tuple(slot[p] for p in mech.parents), slot[v]))
        last: dict = {}
        for i, (_, args, _) in enumerate(steps):
            for a in args:
                last[a] = i
        keep = {slot[v] for v in outputs}
        frees: list[list] = [[] for _ in steps]
        for a, i in last.items():
            if a not in keep:
                frees[i].append(a)
        self.steps = [(fn, args, out, tuple(fr)) for (fn, args, out), fr in zip(steps, frees)]
        self.nslots = nslots
        self.inputs = tuple(slot[v] for v in inputs)
        self.outputs = tuple((v, slot[v]) for v in outputs)
        self.fusable = any(_fusable(mechs[v]) for v in nodes)          # ops with a fused kernel (fused.py)
        self.neginf_ok = tuple(bool(getattr(mechs[v], "allows_neginf", False)) for v in outputs)
        self._names = tuple(v for v, _ in self.outputs)
        self._body = _compile(self.steps, self.inputs, tuple(i for _, i in self.outputs))

    def run(self, values: list) -> dict:
        with np.errstate(all="ignore"):                   # the plan tests the outputs (and names the node)
            return dict(zip(self._names, self._body(*values)))


def _compile(steps: list, inputs: tuple, outputs: tuple):
    """The steps as one Python function of the inputs' slots returning the outputs' (no per-step loop).

    Slot ``i`` is the local variable ``s<i>``, freed by ``del`` after its last
    read; a column block of a fused product is a slice in the source. The
    source holds only slot numbers and the names ``f<k>`` of the step
    functions, never a node name.
    """
    env: dict = {}
    lines = [f"def body({', '.join(f's{i}' for i in inputs)}):"]
    for k, (fn, args, out, frees) in enumerate(steps):
        block = getattr(fn, "block", None)
        if block is not None:
            lines.append(f"    s{out} = s{args[0]}[..., {block[0]}:{block[1]}]")
        else:
            env[f"f{k}"] = fn
            lines.append(f"    s{out} = f{k}({', '.join(f's{a}' for a in args)})")
        if frees:
            lines.append(f"    del {', '.join(f's{a}' for a in frees)}")
    lines.append(f"    return ({''.join(f's{i}, ' for i in outputs)})")
    exec("\n".join(lines), env)  # noqa: S102 -- source built above from integers only
    return env["body"]


def _callable(node, mech, spec):
    """What a program calls for `node`: the op's compiled arithmetic, or evaluate for other mechanisms."""
    compiled = getattr(mech, "compiled", None)
    if isinstance(mech, TensorOp) and compiled is not None:
        return compiled(node)
    parents = mech.parents

    def run(*xs):
        n = xs[0].shape[0] if xs and getattr(xs[0], "ndim", 0) else None
        return mech.evaluate(node, dict(zip(parents, xs)), None, spec, n=n)

    return run


def _fuse_linears(model, nodes: tuple, slot: dict, nslots: int) -> tuple[dict, int]:
    """Group Linear nodes that read one parent into one product; returns {first node: (fn, members, slot)}."""
    groups: dict = {}
    for v in nodes:
        m = model.mechanisms[v]
        if type(m) is Linear:
            groups.setdefault((m.parents[0], m.dtype.str, m.bias is not None), []).append(v)
    fused: dict = {}
    for (_, _dt, has_bias), members in groups.items():
        if len(members) < 2:
            continue
        ops = [model.mechanisms[v] for v in members]
        w = np.ascontiguousarray(np.concatenate([op.weight for op in ops], axis=0).T)   # (d_in, sum d_out)
        b = np.concatenate([op.bias for op in ops]) if has_bias else None
        cuts = np.cumsum([0] + [op.d_out for op in ops])
        pieces = [(v, _column_block(int(lo), int(hi))) for v, lo, hi in zip(members, cuts[:-1], cuts[1:])]
        fused[members[0]] = (_fused_product(w, b), pieces, nslots)
        nslots += 1
    return fused, nslots


def _fused_product(w: np.ndarray, b: np.ndarray | None):
    def run(x):
        y = x.reshape(-1, x.shape[-1]).astype(w.dtype, copy=False) @ w         # (n * ..., sum d_out)
        if b is not None:
            y += b
        return y.reshape(*x.shape[:-1], w.shape[1])
    return run


def _column_block(lo: int, hi: int):
    """Columns ``lo:hi`` of the last axis (a view); the compiled source inlines it as a slice."""
    def piece(y):
        return y[..., lo:hi]
    piece.block = (lo, hi)
    return piece


class _Growing:
    """A node's values along a growing sequence axis (axis 1), in a buffer that doubles when full."""

    def __init__(self) -> None:
        self.buf: np.ndarray | None = None
        self.length = 0

    def append(self, x: np.ndarray) -> np.ndarray:
        t = x.shape[1]
        if self.buf is None or self.length + t > self.buf.shape[1]:
            cap = max(2 * (self.length + t), 16)
            new = np.empty((x.shape[0], cap, *x.shape[2:]), dtype=x.dtype)
            if self.buf is not None:
                new[:, :self.length] = self.buf[:, :self.length]
            self.buf = new
        self.buf[:, self.length:self.length + t] = x
        self.length += t
        return self.buf[:, :self.length]


class Incremental:
    """Runs a deterministic tensor model over a sequence that grows, computing only the new positions.

    The growing inputs (token ids, their padding) get new positions at each
    :meth:`step`; every node that depends on them is computed on the new
    positions only (``op.run_step``), except that the parents an op needs
    whole (``op.key_parents``: keys, values) are kept for every position so
    far — the key/value cache. Nodes that do not depend on the growing inputs
    (an encoder's memory, cross-attention keys) are computed once, on the
    first step. This gives the values a full recomputation gives, provided
    earlier positions never see later ones: every attention over growing keys
    must be causal (checked when the plan is built).

    Parameters
    ----------
    model : CausalModel
    outputs : iterable of nodes
    growing : iterable of nodes
        Input nodes that grow along their first per-row axis.
    static : iterable of nodes
        Input nodes given once (to :meth:`step` on the first call).
    patches : mapping node -> callable(value, start) -> value, optional
        Applied to the new positions of a node as soon as they are computed
        (interventions held at every step).

    Raises
    ------
    ModelError
        A node that depends on the sequence but cannot be computed position by
        position (a Reshape across positions, a non-causal attention over the
        growing sequence, a constant ``do``).
    """

    def __init__(self, model, outputs: Iterable[Hashable], growing: Iterable[Hashable],
                 static: Iterable[Hashable] = (), patches: Mapping[Hashable, Any] | None = None) -> None:
        growing, static = tuple(growing), tuple(static)
        plan = Plan(model, outputs=outputs, inputs=[*growing, *static])
        self.model = model
        self.outputs = plan.outputs
        self.growing_inputs = tuple(v for v in plan.inputs if v in set(growing))
        self.static_inputs = tuple(v for v in plan.inputs if v in set(static))
        patches = dict(patches or {})
        grows = set(self.growing_inputs)
        cached: set = set()
        self._static_steps: list = []
        self._steps: list = []
        for v in plan.nodes:
            mech = model.mechanisms[v]
            op, shift = mech, None
            if isinstance(mech, Intervened):
                if not mech.is_shift:
                    if any(p in grows for p in mech.natural.parents):
                        raise ModelError(f"node {v!r} holds a constant do, which has no value per new position; "
                                         f"pass the intervention to generate(do=...) or use cache=False")
                op, shift = mech.natural, mech.value
            if not any(p in grows for p in op.parents):
                self._static_steps.append((v, mech, mech.parents, patches.get(v)))
                continue
            grows.add(v)
            if not getattr(op, "steppable", False):
                raise ModelError(f"node {v!r} ({type(op).__name__}) mixes sequence positions in a way an incremental "
                                 f"run cannot follow; use cache=False")
            keys = tuple(op.key_parents)
            if any(op.parents[i] in grows for i in keys) and not op.causal_in_keys:
                raise ModelError(f"node {v!r} ({type(op).__name__}) attends to later positions (causal=False); a "
                                 f"key/value cache needs causal attention; use cache=False")
            cached.update(op.parents[i] for i in keys if op.parents[i] in grows)
            self._steps.append((v, op, op.parents, keys, shift, patches.get(v)))
        self._cached = cached
        self._grows = grows
        self.reset()

    def reset(self) -> None:
        """Forget every position (the next step starts a new sequence)."""
        self.start = 0
        self._static: dict | None = None
        self._history = {v: _Growing() for v in self._cached}

    def step(self, new: Mapping[Hashable, Any], static: Mapping[Hashable, Any] | None = None) -> dict:
        """Feed the next positions; returns the outputs at those positions.

        Parameters
        ----------
        new : mapping node -> array
            One ``(n, t, ...)`` array per growing input: the new positions.
        static : mapping node -> array, optional
            The static inputs, on the first step only.

        Returns
        -------
        dict node -> array
            Each output at the new positions (growing outputs) or whole (static ones).
        """
        model = self.model
        vals: dict = {}
        for v in self.growing_inputs:
            if v not in new:
                raise ModelError(f"incremental step needs the new positions of {v!r}")
            vals[v] = model.coerce(v, new[v], ModelError)
        t = next(iter(vals.values())).shape[1] if vals else 0
        if self._static is None:
            self._static = self._run_static(static or {}, next(iter(vals.values())).shape[0] if vals else None)
        full = self._static
        start = self.start
        for v in self._cached & set(vals):
            full_v = self._history[v].append(vals[v])
            vals[v] = (vals[v], full_v)
        for v, op, parents, keys, shift, patch in self._steps:
            xs = []
            for i, p in enumerate(parents):
                x = vals[p] if p in vals else full[p]
                if isinstance(x, tuple):
                    x = x[1] if i in keys else x[0]
                xs.append(x)
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                out = op.run_step(start, *xs)
            if shift is not None:
                out = np.asarray(shift(out))
            if patch is not None:
                out = patch(out, start)
            check_output(v, op, out, allow_neginf=op.allows_neginf)
            vals[v] = (out, self._history[v].append(out)) if v in self._cached else out
        self.start = start + t
        res = {}
        for v in self.outputs:
            x = vals[v] if v in vals else full[v]
            res[v] = x[0] if isinstance(x, tuple) else x
        return res

    def _run_static(self, static: Mapping, nb: int | None) -> dict:
        model = self.model
        missing = [v for v in self.static_inputs if v not in static]
        if missing:
            raise ModelError(f"incremental run needs the static inputs {missing} on its first step")
        vals = {v: model.coerce(v, static[v], ModelError) for v in self.static_inputs}
        for v, mech, parents, patch in self._static_steps:
            vals[v] = mech.evaluate(v, {p: vals[p] for p in parents}, None, model.specs[v], n=nb)
            if patch is not None:
                vals[v] = patch(vals[v], 0)
        return vals

    def __repr__(self) -> str:
        return (f"<Incremental {len(self._steps)} growing nodes, {len(self._cached)} cached; "
                f"{self.start} positions so far>")


class PlanForward(Engine):
    """The ``tensor plan`` forward engine (:mod:`causalnet.inference.forward`): compiled plans for tensor models.

    It takes a plain ``model.forward(values, keep=...)`` call on a model whose
    every node is a deterministic tensor node and whose every root is an
    :class:`~causalnet.mechanisms.tensor.Input` (a constant ``do`` goes node
    by node: a compiled program has no batch size for it). One :class:`Plan` per (given
    nodes, kept nodes) is kept in ``model.cache`` (the outputs: `keep`, or
    the model's sinks: without `keep` the answer is a
    :class:`~causalnet.inference.forward.FilledTrace` holding the inputs and
    sinks, which computes any other node the first time it is read, so
    that no intermediate array is made unless asked for). A call whose input shapes the plan has not run yet is
    answered by the reference run, which validates it and names any node at
    fault; the plan then admits those shapes, and later calls run its
    compiled program (and, once they have paid for their compilation, the
    fused kernels).
    """

    name = "tensor plan"
    #: plans kept per model (a model given ever new sets of nodes keeps the most recent ones)
    max_plans = 16

    def accepts(self, request: ForwardRequest) -> bool:
        model = request.model
        cache = model.cache
        ok = cache.get("forward: tensor plan")
        if ok is None:
            specs, mechs = model.specs, model.mechanisms
            ok = cache["forward: tensor plan"] = bool(mechs) and all(          # a root that is not an
                specs[v].kind == TENSOR and mechs[v].deterministic and             # input (a constant do)
                (mechs[v].parents or isinstance(mechs[v], Input)) for v in mechs)  # has no batch size to run
        return ok and request.plain and bool(request.values)

    def answer(self, request: ForwardRequest):
        plan = self._plan(request)
        if plan is None:
            return _reference(request)
        out = plan.run_compiled(request.values)
        if out is None:                       # a new shape, another dtype, or a value not finite
            trace = _reference(request)
            plan.admit(request.values)
            return trace
        if request.keep is not None:
            return Trace(out, plan._out_specs, method=self.name)
        values = request.values                 # every node: the plan ran the sinks, the rest on first read
        return FilledTrace({**values, **out}, request.model, values[plan.inputs[0]].shape[0], self.name)

    def _plan(self, request: ForwardRequest) -> Plan | None:
        """The cached plan of this call's given and kept nodes; None when no plan fits (the reference says why)."""
        given = given_nodes(request)
        keep = request.keep
        if given is None or (keep is not None and not all(k in request.model.mechanisms for k in keep)):
            return None
        plans = request.model.cache.setdefault("forward: plans", {})
        key = (given, keep)
        if key not in plans:
            if keep is not None:                  # in the reference run's order
                kept = set(keep)
                keep = tuple(v for v in request.model.dag.topological_order() if v in kept)
            outputs = keep
            if keep is None:                    # the sinks; FilledTrace computes the others when read
                children = {p for m in request.model.mechanisms.values() for p in m.parents}
                outputs = [v for v in request.model.mechanisms if v not in children and v not in given] or None
            try:
                plan = Plan(request.model, outputs=outputs, inputs=given)
            except ModelError:
                plan = None
            if len(plans) >= self.max_plans:
                plans.pop(next(iter(plans)))
            plans[key] = plan
        return plans[key]


def _reference(request: ForwardRequest):
    trace = request.run_reference()
    trace.method = "node by node"
    return trace
