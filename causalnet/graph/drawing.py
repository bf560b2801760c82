"""DOT text for a graph: the marks of the graph layer, and hooks for richer styles.

:func:`dot_text` draws a :class:`~causalnet.graph.core.DAGCore` as Graphviz DOT
source, using the ``graphviz`` package only for quoting; no binary is needed.
It draws what the graph layer knows — latent, observed, intervened nodes, a
separating set, highlighted nodes and paths, clusters — and takes two optional
callables for what it does not (node kinds, tensor shapes): `node_style(node)`
and `edge_style(parent, child)` return DOT attributes. Files, rendering and
the styles of models live in :mod:`causalnet.io.dot`, which calls this.

Conventions
-----------
=====================  ==============================================
mark                   drawn as
=====================  ==============================================
latent node            dashed outline
observed node          shaded (``observed=`` option; off by default)
intervened node        double border; its incoming edges are absent
                       (the DAG from ``g.do(...)`` already lacks them)
separating set         blue fill and blue bold outline
highlighted node       red bold outline
highlighted path       red bold edges (either direction) and outlines
cluster                a box labelled with the block name
legend (``legend=``)   a box of sample nodes: the node kinds drawn
                       and the marks present
=====================  ==============================================

Style attributes are merged over the defaults; the marks above are merged
over them (``style`` values are combined, so a latent node of a filled kind is
``"dashed,filled"``), and the ``labels=`` option wins over a style's label.
Output is deterministic: nodes in DAG order (grouped by cluster), edges in
order of (parent, child) position, attributes sorted by name.

Drawable objects
----------------
:func:`to_dot` draws a DAG, or any object with a ``.dag`` attribute holding one
(a model). Such an object may add optional hooks, each consulted only if present:

``dot_node_attrs(node) -> dict``
    DOT attributes for one node (``shape``/``fillcolor`` for its kind, ``label``
    with a tensor shape), merged as described above.
``dot_edge_attrs(parent, child) -> dict``
    DOT attributes for one edge; a highlighted path is merged over them.
``dot_clusters() -> dict``
    Clusters used when ``clusters=None``: ``{"label": [nodes]}`` or ``"prefix"``.
``dot_legend() -> list``
    ``[(label, attributes)]``, the node kinds shown by ``legend=True``.

Examples
--------
>>> import causalnet as cn
>>> print(dot_text(cn.DAG.parse("U [latent]; U -> X -> Y; U -> Y")))  # doctest: +NORMALIZE_WHITESPACE
digraph {
    graph [rankdir=TB]
    U [style=dashed]
    X
    Y
    U -> X
    U -> Y
    X -> Y
}
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import GraphError, RenderError
from .core import DAGCore

__all__ = ["dot_text", "to_dot", "Drawable", "RANKDIRS", "legend_entries", "MARK_LEGEND", "RENDER_HOOK",
           "check_dot_options"]

#: ``{"render": causalnet.io.dot.render}`` once :mod:`causalnet.io.dot` is loaded: objects below the io layer
#: (a Markov network) render themselves through it without importing upward.
RENDER_HOOK: dict = {}

#: Layout directions :func:`dot_text` accepts.
RANKDIRS = ("TB", "LR", "BT", "RL")

# Colours of the marks (ColorBrewer-like, readable on white).
_RED = "#d62728"
_BLUE = "#2171b5"
_BLUE_FILL = "#c6dbef"
_GREY_FILL = "#d9d9d9"

Style = Callable[..., Mapping | None]


@dataclass
class _Cluster:
    label: str
    nodes: list = field(default_factory=list)
    children: list = field(default_factory=list)


@dataclass
class _Marks:
    """The node sets and labels that decide how each node is drawn."""

    latent: frozenset
    intervened: frozenset
    observed: frozenset
    separating: frozenset
    highlighted: frozenset
    labels: dict


def _str_attrs(attrs: Mapping | None, what: str) -> dict[str, str]:
    if attrs is None:
        return {}
    if not isinstance(attrs, Mapping):
        raise GraphError(f"{what} must return a mapping of DOT attributes, got {type(attrs).__name__}")
    return {str(k): _text(v) for k, v in attrs.items() if v is not None}


def _text(v: Any) -> str:
    """DOT-safe text: real newlines become DOT's ``\\n`` escape."""
    return str(v).replace("\r\n", "\n").replace("\n", "\\n")


def _merge(base: dict[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """Merge `extra` over `base`; ``style`` lists are combined, not replaced."""
    out = dict(base)
    for k, v in extra.items():
        if k == "style" and out.get("style"):
            parts = [p.strip() for p in out["style"].split(",") if p.strip()]
            parts += [p for p in (q.strip() for q in v.split(",")) if p and p not in parts]
            out["style"] = ",".join(parts)
        else:
            out[k] = v
    return out


def _path_edges(dag: DAGCore, path: Any) -> list[tuple]:
    if path is None:
        return []
    if isinstance(path, str) or not isinstance(path, Iterable):
        raise GraphError(f"highlight_path must be a list of nodes, got {path!r}")
    nodes = [dag.check_node(v, "path node") for v in path]
    edges = []
    for u, v in zip(nodes, nodes[1:]):
        if dag.has_edge(u, v):
            edges.append((u, v))
        elif dag.has_edge(v, u):
            edges.append((v, u))
        else:
            raise GraphError(f"highlight_path steps from {u!r} to {v!r}, which are not adjacent")
    return edges


def _explicit_clusters(dag: DAGCore, clusters: Mapping) -> list[_Cluster]:
    out = []
    owner: dict = {}
    for label, members in clusters.items():
        c = _Cluster(str(label))
        for v in dag.in_order(dag.node_set(members, f"node of cluster {label!r}")):
            if v in owner:
                raise GraphError(f"node {v!r} is in two clusters, {owner[v]!r} and {label!r}")
            owner[v] = label
            c.nodes.append(v)
        out.append(c)
    return out


def _collapse(c: _Cluster) -> _Cluster:
    c.children = [_collapse(ch) for ch in c.children]
    if not c.nodes and len(c.children) == 1:
        return c.children[0]
    return c


def _prefix_clusters(dag: DAGCore) -> tuple[list, list[_Cluster]]:
    """Nested clusters from dotted names: ``enc.0.Q`` goes in ``enc`` > ``enc.0``."""
    root = _Cluster("")
    index: dict[tuple, _Cluster] = {(): root}
    for v in dag.nodes:
        parts = str(v).split(".")[:-1]
        parent = root
        for k in range(1, len(parts) + 1):
            key = tuple(parts[:k])
            c = index.get(key)
            if c is None:
                c = index[key] = _Cluster(".".join(key))
                parent.children.append(c)
            parent = c
        parent.nodes.append(v)
    root.children = [_collapse(ch) for ch in root.children]
    return root.nodes, root.children


def _layout_clusters(dag: DAGCore, clusters: Any) -> tuple[list, list[_Cluster]]:
    """Top-level nodes and the cluster forest, in deterministic order."""
    if clusters is None:
        return list(dag.nodes), []
    if isinstance(clusters, str):
        if clusters != "prefix":
            raise GraphError(f"clusters must be None, 'prefix' or a mapping of label -> nodes, got {clusters!r}")
        return _prefix_clusters(dag)
    if not isinstance(clusters, Mapping):
        raise GraphError(f"clusters must be None, 'prefix' or a mapping of label -> nodes, got {type(clusters).__name__}")
    forest = _explicit_clusters(dag, clusters)
    inside = {v for c in forest for v in c.nodes}
    return [v for v in dag.nodes if v not in inside], forest


def _marks(dag: DAGCore, path_nodes: set, highlight_nodes, separating_set, observed, labels) -> _Marks:
    def nodes(arg, what):
        return frozenset() if arg is None else dag.node_set(arg, what)

    if observed is True:
        obs = frozenset(dag.observed)
    elif observed is False:
        obs = frozenset()
    else:
        obs = nodes(observed, "observed node")
    label_map: dict = {}
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise GraphError(f"labels must be a mapping of node -> text, got {type(labels).__name__}")
        for v, text in labels.items():
            label_map[dag.check_node(v, "labelled node")] = _text(text)
    return _Marks(dag.latent, dag.intervened, obs, nodes(separating_set, "separating-set node"),
                  nodes(highlight_nodes, "highlighted node") | path_nodes, label_map)


def _node_attrs(v, marks: _Marks, node_style: Style | None) -> dict[str, str]:
    attrs = _str_attrs(node_style(v), "node_style") if node_style else {}
    if v in marks.labels:
        attrs["label"] = marks.labels[v]
    if v in marks.latent:
        attrs = _merge(attrs, {"style": "dashed"})
    if v in marks.observed:
        attrs = _merge(attrs, {"style": "filled", "fillcolor": _GREY_FILL})
    if v in marks.separating:
        attrs = _merge(attrs, {"style": "filled", "fillcolor": _BLUE_FILL, "color": _BLUE, "penwidth": "2"})
    if v in marks.intervened:
        attrs = _merge(attrs, {"peripheries": "2"})
    if v in marks.highlighted:
        attrs = _merge(attrs, {"color": _RED, "penwidth": "2"})
    return attrs


def _check_names(dag: DAGCore) -> None:
    names: dict = {}
    for v in dag.nodes:
        s = str(v)
        if s in names:
            raise GraphError(f"nodes {names[s]!r} and {v!r} have the same DOT name {s!r}")
        names[s] = v


def _node_line(v, name: str, marks: _Marks, node_style: Style | None) -> str:
    import graphviz  # loaded by the first drawing, not by ``import causalnet``
    from graphviz.quoting import attr_list

    attrs = _node_attrs(v, marks, node_style)
    if not attrs:
        return f"\t{name}\n"
    label = attrs.pop("label", None)
    attrs = {k: graphviz.nohtml(x) for k, x in attrs.items()}
    text = attr_list(None if label is None else graphviz.nohtml(label), kwargs=attrs)
    return f"\t{name}{text}\n"


def _edge_lines(dag: DAGCore, names: list[str], path_edges: list, edge_style: Style | None) -> list[str]:
    import graphviz  # loaded by the first drawing, not by ``import causalnet``
    from graphviz.quoting import a_list

    ix = dag.index
    on_path = {(ix.pos[u], ix.pos[v]) for u, v in path_edges}
    out = []
    for u in range(ix.n):
        for c in sorted(ix.chi[u]):  # edges in order of (parent, child) position
            attrs = _str_attrs(edge_style(ix.nodes[u], ix.nodes[c]), "edge_style") if edge_style else {}
            if (u, c) in on_path:
                attrs = _merge(attrs, {"color": _RED, "penwidth": "2.5"})
            # Written by hand: Digraph.edge would read a ':' in a name as a port.
            attr_text = a_list(attributes={k: graphviz.nohtml(x) for k, x in sorted(attrs.items())}) if attrs else ""
            out.append(f"\t{names[u]} -> {names[c]}" + (f" [{attr_text}]" if attr_text else "") + "\n")
    return out


def dot_text(
    dag: DAGCore,
    *,
    highlight_path: Iterable[Hashable] | None = None,
    highlight_nodes: Iterable[Hashable] | None = None,
    separating_set: Iterable[Hashable] | None = None,
    observed: bool | Iterable[Hashable] | None = None,
    labels: Mapping[Hashable, str] | None = None,
    clusters: str | Mapping[str, Iterable[Hashable]] | None = None,
    title: str | None = None,
    rankdir: str = "TB",
    node_style: Style | None = None,
    edge_style: Style | None = None,
    legend: Iterable[tuple[str, Mapping[str, str]]] | None = None,
) -> str:
    """DOT text for `dag`; see :func:`causalnet.io.dot.to_dot` for the options.

    `node_style(node)` and `edge_style(parent, child)`, when given, return
    DOT attributes (a mapping, or None) merged under the marks. `legend`, when
    given, is a sequence of ``(label, node attributes)``: one sample node per
    entry, in a box titled "legend" (see :func:`legend_entries`); the
    "observed" row is added when nodes are drawn shaded as observed.

    Raises
    ------
    GraphError
        If an option names an unknown node, a path steps between non-adjacent
        nodes, a node is in two clusters, or two nodes print alike.
    RenderError
        If `rankdir` is not one of :data:`RANKDIRS`.
    """
    import graphviz  # loaded by the first drawing, not by ``import causalnet``
    from graphviz.quoting import quote

    if not isinstance(dag, DAGCore):
        raise GraphError(f"cannot draw a {type(dag).__name__}: expected a DAG")
    if not isinstance(rankdir, str) or rankdir not in RANKDIRS:
        raise RenderError(f"rankdir must be one of {list(RANKDIRS)}, got {rankdir!r}")
    path_edges = _path_edges(dag, highlight_path)
    marks = _marks(dag, {v for e in path_edges for v in e}, highlight_nodes, separating_set, observed, labels)
    _check_names(dag)
    graph_attr = {"rankdir": rankdir}
    if title is not None:
        graph_attr.update(label=graphviz.nohtml(_text(title)), labelloc="t")
    dot = graphviz.Digraph(graph_attr=graph_attr)
    top, forest = _layout_clusters(dag, clusters)
    names = [quote(graphviz.nohtml(str(v))) for v in dag.nodes]  # DOT ids, quoted once
    pos = dag.index.pos
    dot.body.extend(_node_line(v, names[pos[v]], marks, node_style) for v in top)
    counter = [0]

    def add_cluster(target, c: _Cluster) -> None:
        import graphviz  # loaded by the first drawing, not by ``import causalnet``

        name = f"cluster_{counter[0]}"
        counter[0] += 1
        with target.subgraph(name=name) as sub:
            sub.attr(label=graphviz.nohtml(c.label), style="rounded")
            sub.body.extend(_node_line(v, names[pos[v]], marks, node_style) for v in c.nodes)
            for ch in c.children:
                add_cluster(sub, ch)

    for c in forest:
        add_cluster(dot, c)
    dot.body.extend(_edge_lines(dag, names, path_edges, edge_style))
    if legend:
        rows = list(legend)
        if marks.observed and MARK_LEGEND["observed"] not in rows:
            rows.append(MARK_LEGEND["observed"])
        _add_legend(dot, rows)
    return dot.source


#: What each node mark looks like, for legends: (label, DOT attributes).
MARK_LEGEND = {
    "latent": ("latent (unobserved)", {"style": "dashed"}),
    "intervened": ("intervened: do(·)", {"peripheries": "2"}),
    "observed": ("observed (evidence)", {"style": "filled", "fillcolor": _GREY_FILL}),
}


def legend_entries(dag: DAGCore, kinds: Iterable[tuple[str, Mapping[str, str]]] = ()) -> list:
    """Legend rows for `dag`: the node `kinds` given (label, attributes), then the marks present.

    A mark (latent, intervened) is listed only when some node of `dag` carries it.
    """
    rows = list(kinds)
    if dag.latent:
        rows.append(MARK_LEGEND["latent"])
    if dag.intervened:
        rows.append(MARK_LEGEND["intervened"])
    return rows


def _add_legend(dot, rows: list) -> None:
    """A box of sample nodes, one per legend row, chained by invisible edges (top to bottom)."""
    import graphviz  # loaded by the first drawing, not by ``import causalnet``

    with dot.subgraph(name="cluster_legend") as sub:
        sub.attr(label="legend", style="rounded", color="#999999", fontsize="10")
        ids = []
        for i, (label, attrs) in enumerate(rows):
            if not isinstance(label, str) or not isinstance(attrs, Mapping):
                raise GraphError(f"a legend row is (label, attributes), got {(label, attrs)!r}")
            node = f"__legend_{i}"
            sub.node(node, label=graphviz.nohtml(label), fontsize="10", **{k: str(v) for k, v in attrs.items()})
            ids.append(node)
        for a, b in zip(ids, ids[1:]):
            sub.edge(a, b, style="invis")


# -- drawing objects that hold a DAG (models) ------------------------------------


@runtime_checkable
class Drawable(Protocol):
    """Anything with a ``.dag``; see the module docstring for the optional hooks."""

    dag: DAGCore


# -- to_dot -------------------------------------------------------------------


def _as_dag(obj: Any) -> DAGCore:
    if isinstance(obj, DAGCore):
        return obj
    dag = getattr(obj, "dag", None)
    if isinstance(dag, DAGCore):
        return dag
    raise GraphError(f"cannot draw a {type(obj).__name__}: expected a DAG or an object with a .dag attribute")


def _hook(obj: Any, name: str):
    if isinstance(obj, DAGCore):
        return None
    fn = getattr(obj, name, None)
    if not callable(fn):
        return None

    def checked(*args):
        attrs = fn(*args)
        if attrs is not None and not isinstance(attrs, Mapping):
            raise GraphError(f"{name} must return a mapping of DOT attributes, got {type(attrs).__name__}")
        return attrs

    return checked


def to_dot(
    obj: Any,
    *,
    highlight_path: Iterable[Hashable] | None = None,
    highlight_nodes: Iterable[Hashable] | None = None,
    separating_set: Iterable[Hashable] | None = None,
    observed: bool | Iterable[Hashable] | None = None,
    labels: Mapping[Hashable, str] | None = None,
    clusters: str | Mapping[str, Iterable[Hashable]] | None = None,
    title: str | None = None,
    rankdir: str = "TB",
    legend: bool = False,
) -> str:
    """DOT text for a DAG or a model (anything with a ``.dag``).

    Parameters
    ----------
    obj : DAG or Drawable
        What to draw. A model's own hooks (module docstring) add node kinds,
        tensor shapes and clusters.
    highlight_path : sequence of nodes, optional
        A path ``[a, b, c, ...]``; consecutive nodes must be adjacent (edges
        may point either way). Its edges are drawn bold red.
    highlight_nodes : node or iterable of nodes, optional
        Nodes outlined bold red.
    separating_set : node or iterable of nodes, optional
        Nodes drawn as a conditioning / separating set (blue fill).
    observed : bool or iterable of nodes, optional
        Nodes drawn shaded as observed: an iterable of nodes, ``True`` for
        every observed (non-latent) node, or None (default) for none.
    labels : mapping of node to str, optional
        Label text per node, e.g. ``{"Q": "Q\\n(n, T, 64)"}``; newlines are kept.
    clusters : "prefix" or mapping of label to nodes, optional
        ``"prefix"`` nests nodes in boxes by their dotted name
        (``enc.0.attn.Q`` in ``enc.0.attn``; a box holding only one box is
        merged into it); a mapping ``{"label": [nodes]}`` draws one box per
        entry (a node in at most one). None uses the object's
        ``dot_clusters()`` if it has one, else no boxes.
    title : str, optional
        A title above the graph.
    rankdir : {"TB", "LR", "BT", "RL"}
        Layout direction.
    legend : bool, default False
        Add a legend box: the node kinds the object draws (its
        ``dot_legend()`` hook: ``[(label, attributes), ...]``) and the marks
        present (latent, intervened).

    Returns
    -------
    str
        DOT source, deterministic for equal inputs.

    Raises
    ------
    GraphError
        If an option names an unknown node, a path steps between
        non-adjacent nodes, or a node is in two clusters.
    RenderError
        If `rankdir` is not one of the four directions.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG([("A", "B"), ("B", "C")])
    >>> print(to_dot(g, highlight_path=["A", "B"], rankdir="LR"))  # doctest: +NORMALIZE_WHITESPACE
    digraph {
        graph [rankdir=LR]
        A [color="#d62728" penwidth=2]
        B [color="#d62728" penwidth=2]
        C
        A -> B [color="#d62728" penwidth=2.5]
        B -> C
    }
    """
    dag = _as_dag(obj)
    if clusters is None:
        hook = _hook(obj, "dot_clusters")
        clusters = hook() if hook else None
    return dot_text(dag, highlight_path=highlight_path, highlight_nodes=highlight_nodes,
                    separating_set=separating_set, observed=observed, labels=labels, clusters=clusters,
                    title=title, rankdir=rankdir, node_style=_hook(obj, "dot_node_attrs"),
                    edge_style=_hook(obj, "dot_edge_attrs"),
                    legend=_legend(obj, dag) if legend else None)


def check_dot_options(fn: str, options: Mapping[str, Any], target: Any = None) -> None:
    """Refuse drawing options that `target` (default :func:`to_dot`) does not take, naming them.

    Raises
    ------
    GraphError
        ``"to_dot() has no option 'colour'; options: [...]"``, with a close match when there is one.
    """
    takes = [name for name, p in inspect.signature(target or to_dot).parameters.items()
             if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = [k for k in options if k not in takes]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), takes, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise GraphError(f"{fn}() has no option {unknown[0]!r}{hint}; its options: {takes}")


def _legend(obj: Any, dag: DAGCore) -> list:
    hook = None if isinstance(obj, DAGCore) else getattr(obj, "dot_legend", None)
    kinds = hook() if callable(hook) else []
    return legend_entries(dag, kinds or [])
