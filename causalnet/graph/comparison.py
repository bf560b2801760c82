"""Comparing a learned graph with the true one, edge by edge, and drawing the difference.

For every pair of nodes adjacent in either graph, the comparison puts the pair
in one class:

- **correct**: adjacent in both, with the same mark (``a -> b`` in both, or
  ``a -- b`` in both);
- **missing**: adjacent in the true graph only;
- **extra**: adjacent in the learned graph only;
- **reversed**: ``a -> b`` learned, ``b -> a`` true;
- **unoriented**: adjacent in both, one directed and the other undirected
  (a PDAG left the direction open, or decided one the truth leaves open).

The counts of the last four add up to the structural Hamming distance
(:func:`causalnet.graph.equivalence.structural_hamming_distance`).
:meth:`GraphComparison.to_dot` (and ``cn.render(comparison, path)``) draws the
union of both graphs with the classes coloured (a legend in the graph label),
so a learned structure can be read against the truth at a glance. Each edge
is drawn as shown (as learned; as true when missing): the drawing graph keeps
the node order and turns arrowheads with ``dir=back`` (``dir=none`` for an
undirected edge), so it never has a cycle even when the two graphs disagree.

Examples
--------
>>> from causalnet import DAG
>>> c = compare(DAG.parse("A -> B; C -> B; C -> D"), DAG.parse("A -> B; B -> C; A -> D"))
>>> c.correct, c.reversed, c.extra, c.missing
((('A', 'B'),), (('C', 'B'),), (('C', 'D'),), (('A', 'D'),))
>>> c.shd
3
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ..errors import GraphError
from .core import DAGCore
from .drawing import to_dot
from .equivalence import PDAG
from .parse import parse_pdag

__all__ = ["GraphComparison", "compare", "EDGE_STYLES"]

#: DOT attributes of each class of edge in :meth:`GraphComparison.to_dot`.
EDGE_STYLES = {
    "correct": {"color": "black"},
    "missing": {"color": "#9e9e9e", "style": "dashed"},
    "extra": {"color": "#d62728", "penwidth": "2"},
    "reversed": {"color": "#ff7f0e", "penwidth": "2"},
    "unoriented": {"color": "#1f77b4", "penwidth": "2"},
}

_LEGEND = {"correct": "black: correct", "missing": "grey dashed: missing", "extra": "red: extra",
           "reversed": "orange: reversed", "unoriented": "blue: direction differs (one side undirected)"}


def _marks(graph: Any) -> tuple[tuple, dict]:
    """``(nodes, {frozenset pair: (a, b) directed or None undirected})`` of a DAG, PDAG, model or text."""
    if isinstance(graph, str):
        directed, undirected, nodes = parse_pdag(graph)
        graph = PDAG(directed, undirected, nodes)
    if not isinstance(graph, (DAGCore, PDAG)) and isinstance(getattr(graph, "dag", None), DAGCore):
        graph = graph.dag
    if isinstance(graph, DAGCore):
        return tuple(graph.nodes), {frozenset(e): tuple(e) for e in graph.edges}
    if isinstance(graph, PDAG):
        marks = {frozenset(e): tuple(e) for e in graph.directed_edges}
        marks.update({frozenset(e): None for e in graph.undirected_edges})
        return graph.nodes, marks
    raise GraphError(f"compare needs a DAG, a PDAG, a model or graph text, got {type(graph).__name__}")


@dataclass(frozen=True)
class GraphComparison:
    """The edges of a learned graph against the true one, by class (see the module docstring).

    Each class is a tuple of edges ``(a, b)``: as learned for ``correct``,
    ``extra``, ``reversed`` and ``unoriented``; as true for ``missing``.
    ``undirected`` holds the pairs drawn without an arrowhead.
    """

    nodes: tuple
    correct: tuple
    missing: tuple
    extra: tuple
    reversed: tuple
    unoriented: tuple
    undirected: frozenset

    @property
    def shd(self) -> int:
        """Structural Hamming distance: pairs missing, extra, reversed or differently oriented."""
        return len(self.missing) + len(self.extra) + len(self.reversed) + len(self.unoriented)

    def __str__(self) -> str:
        counts = ", ".join(f"{k} {len(getattr(self, k))}" for k in EDGE_STYLES)
        return f"GraphComparison({counts}; SHD {self.shd})"

    __repr__ = __str__

    @property
    def dag(self) -> DAGCore:
        """Every compared pair as a DAG for drawing, edges along the node order (:meth:`dot_edge_attrs` turns them)."""
        pos = {v: i for i, v in enumerate(self.nodes)}
        edges = [tuple(sorted(e, key=pos.__getitem__)) for k in EDGE_STYLES for e in getattr(self, k)]
        return DAGCore(edges, nodes=self.nodes)

    @functools.cached_property
    def _drawn(self) -> dict:
        """frozenset pair -> DOT attributes of its class, with ``dir`` relative to the node order."""
        pos = {v: i for i, v in enumerate(self.nodes)}
        out = {}
        for kind, attrs in EDGE_STYLES.items():
            for a, b in getattr(self, kind):
                pair = frozenset((a, b))
                turn = {"dir": "none"} if pair in self.undirected else {} if pos[a] < pos[b] else {"dir": "back"}
                out[pair] = {**attrs, **turn}
        return out

    def dot_edge_attrs(self, parent: Hashable, child: Hashable) -> dict:
        """Drawing hook: the class colour, and the arrowhead where the shown edge points (or none)."""
        return dict(self._drawn.get(frozenset((parent, child)), {}))

    def to_dot(self, *, title: str | None = None, legend: bool = True, **options) -> str:
        """DOT text of both graphs' union, each edge coloured by its class (:data:`EDGE_STYLES`).

        `legend` puts one line per class present under the `title`; other
        options as in :func:`causalnet.graph.drawing.to_dot`. ``cn.render``
        draws the comparison the same way (pass ``title=`` for a legend there).
        """
        lines = [title] if title else []
        if legend:
            lines += [_LEGEND[k] for k in EDGE_STYLES if getattr(self, k)]
        return to_dot(self, title="\n".join(lines) or None, **options)


def compare(learned: Any, true: Any) -> GraphComparison:
    """Class every edge of `learned` against `true` (DAGs, PDAGs, models or graph text).

    Raises
    ------
    GraphError
        If either argument is not a graph.
    """
    nodes_l, ml = _marks(learned)
    nodes_t, mt = _marks(true)
    nodes = tuple(dict.fromkeys((*nodes_t, *nodes_l)))
    pos = {v: i for i, v in enumerate(nodes)}
    out: dict[str, list] = {k: [] for k in EDGE_STYLES}
    undirected = set()
    for pair in sorted(set(ml) | set(mt), key=lambda p: sorted(pos[v] for v in p)):
        a, b = sorted(pair, key=pos.__getitem__)
        el, et = ml.get(pair, False), mt.get(pair, False)
        shown = (el or (a, b)) if el is not False else (et or (a, b))
        if (el if el is not False else et) is None:
            undirected.add(pair)
        if el is False:
            out["missing"].append(shown)
        elif et is False:
            out["extra"].append(shown)
        elif el == et:
            out["correct"].append(shown)
        elif el is None or et is None:
            out["unoriented"].append(shown)
        else:
            out["reversed"].append(shown)
    return GraphComparison(nodes, *(tuple(out[k]) for k in EDGE_STYLES), frozenset(undirected))
