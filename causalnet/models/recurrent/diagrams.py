"""Diagrams of recurrent networks: the folded cell with its recurrence, and the unrolled DAG.

Two pictures of one model, as in drawings of dynamic Bayesian networks:

* ``view="unrolled"`` is the model's own DAG over time steps: one box per
  cell copy (layer, direction, step) holding the cell's gates, recurrence
  edges (a state of step ``t-1`` feeding step ``t``) drawn bold blue.
* ``view="folded"`` draws one cell per layer and direction, at a generic step
  ``t``: every node ``name[3]`` becomes ``name[t]``, and a state read from the
  previous step becomes a *delay* node ``h[t-1]`` (``h[t+1]`` in a backward
  direction), drawn as the small black square of Goodfellow et al.'s circuit
  diagrams. The recurrence ``h[t] -> h[t-1]`` is the edge from the state back
  into its delay, drawn against the flow (a back edge), so the folded picture
  shows the loop while its graph stays acyclic.

:func:`diagram` returns DOT text that is also a drawable object (its ``.dag``
and the hooks of :mod:`causalnet.graph.drawing`), so ``cn.render(d, "x.svg")``
renders it and ``cn.to_dot(d, rankdir="LR")`` redraws it with options.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

from ...errors import ModelError
from ...graph.dag import DAG
from ...graph.drawing import to_dot
from ...mechanisms.intervened import Intervened
from ...mechanisms.tensor import Affine, Input, Zeros
from ...model import CausalModel
from .lengths import AtLength, Masked

__all__ = ["diagram", "Diagram", "VIEWS"]

#: The views :func:`diagram` draws.
VIEWS = ("folded", "unrolled")

_STEP = re.compile(r"^(.*)\[(-?\d+)\]$")
_RECURRENCE = {"color": "#2171b5", "penwidth": "2"}
_DELAY = {"shape": "square", "style": "filled", "fillcolor": "black", "width": "0.15", "height": "0.15",
          "fixedsize": "true"}
_GATE = {"shape": "box", "style": "rounded,filled", "fillcolor": "#f6dbe6"}
_STATE = {"shape": "box", "style": "filled,bold", "fillcolor": "#fbe7c6"}
_OP = {"shape": "box", "style": "filled", "fillcolor": "#fdf3e1"}
_INPUT = {"shape": "ellipse", "style": "filled", "fillcolor": "#d9d9d9"}


def _split(node: Hashable) -> tuple[str, int | None]:
    """``"l0.h[3]"`` -> ``("l0.h", 3)``; a node without a step -> ``(name, None)``."""
    m = _STEP.match(str(node))
    return (m.group(1), int(m.group(2))) if m else (str(node), None)


def _prefix(base: str) -> str:
    return base.rsplit(".", 1)[0] if "." in base else ""


def _natural(model: CausalModel, node: Hashable):
    mech = model.mechanisms[node]
    mech = mech.natural if isinstance(mech, Intervened) else mech
    return mech.inner if isinstance(mech, Masked) else mech


def _role(model: CausalModel, node: Hashable) -> str:
    """``"input"``, ``"state"``, ``"gate"`` or ``"op"``: how a node is drawn."""
    mech = _natural(model, node)
    base, _ = _split(node)
    if isinstance(mech, Input):
        return "input"
    if base.rsplit(".", 1)[-1] in ("h", "c") or isinstance(mech, AtLength):
        return "state"
    if isinstance(mech, Affine) and mech.activation == "sigmoid":
        return "gate"
    return "op"


_ROLE_ATTRS = {"input": _INPUT, "state": _STATE, "gate": _GATE, "op": _OP}
_LEGEND = [("input", _INPUT), ("gate (sigmoid)", _GATE), ("cell op", _OP), ("state h, c", _STATE)]


class Diagram(str):
    """DOT text of a recurrent network that is also drawable (``.dag`` and the drawing hooks).

    Attributes
    ----------
    dag : DAG
        The graph drawn (for ``view="folded"``, the folded cell with its delay nodes).
    view : {"folded", "unrolled"}
    """

    def __new__(cls, dag: DAG, view: str, attrs: dict, edges: dict, clusters: dict, legend: list, **options):
        drawing = _Drawing(dag, attrs, edges, clusters, legend)
        self = super().__new__(cls, to_dot(drawing, **options))
        self.dag = dag
        self.view = view
        self._drawing = drawing
        return self

    @property
    def source(self) -> str:
        """The DOT text (the string itself)."""
        return str(self)

    def dot_node_attrs(self, node: Hashable) -> dict:
        return self._drawing.dot_node_attrs(node)

    def dot_edge_attrs(self, parent: Hashable, child: Hashable) -> dict:
        return self._drawing.dot_edge_attrs(parent, child)

    def dot_clusters(self) -> dict:
        return self._drawing.dot_clusters()

    def dot_legend(self) -> list:
        return self._drawing.dot_legend()


class _Drawing:
    """The hooks of :mod:`causalnet.graph.drawing` over fixed tables."""

    def __init__(self, dag, attrs, edges, clusters, legend):
        self.dag, self._attrs, self._edges, self._clusters, self._legend = dag, attrs, edges, clusters, legend

    def dot_node_attrs(self, node):
        return dict(self._attrs.get(node, {}))

    def dot_edge_attrs(self, parent, child):
        return dict(self._edges.get((parent, child), {}))

    def dot_clusters(self):
        return {k: list(v) for k, v in self._clusters.items()}

    def dot_legend(self):
        return list(self._legend)


def diagram(model: CausalModel, view: str = "folded", **options) -> Diagram:
    """A diagram of a recurrent network built by :mod:`causalnet.models.recurrent`.

    Parameters
    ----------
    model : CausalModel
        From :func:`~causalnet.models.recurrent.lstm` (``gru``, ``rnn``,
        ``from_torch``), possibly intervened on.
    view : {"folded", "unrolled"}
        One cell per layer and direction with its recurrence, or the DAG over
        time steps with one box per cell copy (module docstring).
    **options
        Passed to :func:`causalnet.graph.drawing.to_dot` (``rankdir``,
        ``legend``, ``title``, ``highlight_nodes``, ...) for the text; pass
        them to ``cn.render(d, path, **options)`` too, which redraws `d`.

    Returns
    -------
    Diagram
        DOT text (a ``str``) that :func:`causalnet.render` can render.

    Raises
    ------
    ModelError
        An unknown view.

    Examples
    --------
    >>> from causalnet.models import recurrent
    >>> m = recurrent.gru(input_size=2, hidden_size=3, T=4, seed=0)
    >>> d = diagram(m, view="folded")
    >>> sorted(d.dag.nodes)[:4]
    ['l0.h[t-1]', 'l0.h[t]', 'l0.hn[t]', 'l0.n[t]']
    >>> d.dot_edge_attrs("l0.h[t-1]", "l0.h[t]")["dir"]    # GRU: h[t-1] feeds h[t], and h[t] loops back
    'both'
    >>> d.startswith("digraph")
    True
    """
    if not isinstance(model, CausalModel):
        raise ModelError(f"diagram: expected a CausalModel, got {type(model).__name__}")
    if view == "unrolled":
        return _unrolled(model, **options)
    if view == "folded":
        return _folded(model, **options)
    raise ModelError(f"diagram view must be one of {list(VIEWS)}, got {view!r}")


def _unrolled(model: CausalModel, **options) -> Diagram:
    dag = model.dag
    attrs, clusters = {}, {}
    for v in model.nodes:
        base, t = _split(v)
        role = _role(model, v)
        p = _prefix(base)
        boxed = t is not None and p and role != "input" and not isinstance(_natural(model, v), Zeros)
        attrs[v] = {**_ROLE_ATTRS[role], "label": str(v).rsplit(".", 1)[-1] if boxed else str(v)}
        if boxed:
            clusters.setdefault(f"{_cell_label(p)}, t={t}", []).append(v)
    edges = {}
    for u, v in dag.edges:
        (bu, tu), (bv, tv) = _split(u), _split(v)
        if isinstance(_natural(model, v), Zeros):        # an initial state reads only the batch size
            edges[(u, v)] = {"style": "dotted", "color": "#999999", "tooltip": "batch size only"}
        elif tu is not None and tv is not None and tu != tv and _prefix(bu) == _prefix(bv):
            edges[(u, v)] = dict(_RECURRENCE)
    return Diagram(dag, "unrolled", attrs, edges, clusters, _LEGEND, **options)


def _cell_label(p: str) -> str:
    """``"l1.rev"`` -> ``"layer 1 (backward)"``; seq2seq: ``"enc"`` -> ``"encoder layer 0"``, ``"dec.l1"`` -> ``"decoder layer 1"``."""
    m = re.match(r"^(?:(enc|dec)(?:\.l(\d+))?|l(\d+))(\.rev)?$", p)
    if not m:
        return p
    side, deep, plain, rev = m.groups()
    head = f"{'encoder' if side == 'enc' else 'decoder'} " if side else ""
    return f"{head}layer {deep or plain or 0}" + (" (backward)" if rev else "")


def _fold_edges(model: CausalModel) -> tuple[dict, dict, set]:
    """Folded edges (in model order) -> whether they set an initial state; folded node -> an original; delays."""
    edges: dict = {}
    origin: dict = {}
    delays: set = set()
    for v in model.nodes:
        if isinstance(_natural(model, v), Zeros):            # zero initial states are just delay nodes
            continue
        bv, tv = _split(v)
        init = tv == -1                                      # an initial state computed from other nodes
        fv = bv if tv is None else f"{bv}[t-1]" if init else f"{bv}[t]"
        if init:
            delays.add(fv)
        origin.setdefault(fv, v)
        for u in model.mechanisms[v].parents if not isinstance(model.mechanisms[v], Intervened) else ():
            bu, tu = _split(u)
            if tu is None:
                fu = bu
            elif tv is not None and tu != tv and not init:
                fu = f"{bu}[t-1]" if tu < tv else f"{bu}[t+1]"
                delays.add(fu)
            else:
                fu = f"{bu}[t]"
            origin.setdefault(fu, u)
            edges[(fu, fv)] = init
    return edges, origin, delays


def _folded(model: CausalModel, **options) -> Diagram:
    folded, origin, delays = _fold_edges(model)
    edge_list, edge_set = list(folded), set(folded)
    edges: dict = {e: {"style": "dashed", "tooltip": "sets the initial state"} for e, init in folded.items() if init}
    for d in sorted(delays):
        state = re.sub(r"\[t[-+]1\]$", "[t]", d)
        loop = dict(_RECURRENCE, dir="both" if (d, state) in edge_set else "back", constraint="false",
                    tooltip=f"recurrence: {state} becomes {d} at the next step")
        edge_set.add((d, state))
        edges[(d, state)] = loop
    nodes = list(dict.fromkeys([origin_node for e in edge_list for origin_node in e] + list(origin)))
    dag = DAG(sorted(edge_set, key=lambda e: (nodes.index(e[0]), nodes.index(e[1]))), nodes=nodes)
    attrs, clusters = {}, {}
    for v in nodes:
        base, _ = _split(v)
        short = v.rsplit(".", 1)[-1] if "." in v else v
        p = _prefix(base)
        if v in delays:
            attrs[v] = {**_DELAY, "label": "", "xlabel": short, "tooltip": f"delay: {v}"}
        else:
            attrs[v] = {**_ROLE_ATTRS[_role(model, origin[v])], "label": short if p else v}
        if p and _role(model, origin[v]) != "input":
            clusters.setdefault(f"{_cell_label(p)} cell", []).append(v)
    legend = [*_LEGEND, ("delay (previous step)", _DELAY)]
    return Diagram(dag, "folded", attrs, edges, clusters, legend, **options)
