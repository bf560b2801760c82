"""Diagrams: DOT text for graphs and models, and rendering to SVG/PNG.

:func:`to_dot` builds DOT text with the ``graphviz`` Python package (for
quoting) and needs no binary. :func:`render` writes a file: DOT text as is, or
SVG/PNG through the Graphviz ``dot`` program when it is on ``PATH``, else
through the ``graphviz-pure`` command (``pip install causalnet[render]``; no
system libraries), else it raises :class:`~causalnet.errors.RenderError` with
the install hint.

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
=====================  ==============================================

Output is deterministic: nodes in DAG order (grouped by cluster), edges in
order of (parent, child) position, attributes sorted by name, so the text is
stable enough for golden-string tests.

Drawable objects
----------------
:func:`to_dot` draws a :class:`~causalnet.graph.dag.DAG`, or any object with a
``.dag`` attribute holding one (a model). Such an object may add optional
hooks, all private by convention and all consulted only if present:

``_dot_node_attrs(node) -> dict``
    DOT attributes for one node (e.g. ``shape``/``fillcolor`` for its kind,
    ``label`` with a tensor shape). They are merged over the defaults; the
    marks above are merged over them (``style`` values are combined, so a
    latent node of a filled kind is ``"dashed,filled"``), and the ``labels=``
    option wins over a hook's label.
``_dot_edge_attrs(parent, child) -> dict``
    DOT attributes for one edge; a highlighted path is merged over them.
``_dot_clusters() -> dict``
    Clusters used when ``clusters=None``: ``{"label": [nodes]}`` or the
    string ``"prefix"`` (see the `clusters` option).

Examples
--------
>>> import causalnet as cn
>>> print(cn.DAG.parse("U [latent]; U -> X -> Y; U -> Y").to_dot())  # doctest: +NORMALIZE_WHITESPACE
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

import os
import shutil
import subprocess
import tempfile
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import graphviz
from graphviz.quoting import a_list, quote

from ..errors import GraphError, RenderError
from ..graph.dag import DAG

__all__ = ["to_dot", "render", "find_renderer", "Drawable", "FORMATS", "RENDERERS"]

#: Output formats :func:`render` writes.
FORMATS = ("svg", "png", "dot")
#: Renderer programs :func:`render` can use, in the order ``"auto"`` tries them.
RENDERERS = ("dot", "graphviz-pure")

_RANKDIRS = ("TB", "LR", "BT", "RL")
_SUFFIX_FORMAT = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot"}
_INSTALL_HINT = (
    "install the Graphviz 'dot' program (e.g. `apt-get install graphviz`) "
    "or the pure renderer (`pip install causalnet[render]`, which provides 'graphviz-pure')"
)

# Colours of the marks (ColorBrewer-like, readable on white).
_RED = "#d62728"
_BLUE = "#2171b5"
_BLUE_FILL = "#c6dbef"
_GREY_FILL = "#d9d9d9"


@runtime_checkable
class Drawable(Protocol):
    """Anything with a ``.dag``; see the module docstring for the optional hooks."""

    dag: DAG


# -- to_dot -------------------------------------------------------------------


@dataclass
class _Cluster:
    label: str
    nodes: list = field(default_factory=list)
    children: list = field(default_factory=list)


def _as_dag(obj: Any) -> DAG:
    if isinstance(obj, DAG):
        return obj
    dag = getattr(obj, "dag", None)
    if isinstance(dag, DAG):
        return dag
    raise GraphError(f"cannot draw a {type(obj).__name__}: expected a DAG or an object with a .dag attribute")


def _hook(obj: Any, name: str):
    if isinstance(obj, DAG):
        return None
    fn = getattr(obj, name, None)
    return fn if callable(fn) else None


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
            for p in v.split(","):
                p = p.strip()
                if p and p not in parts:
                    parts.append(p)
            out["style"] = ",".join(parts)
        else:
            out[k] = v
    return out


def _node_set(dag: DAG, nodes: Any, what: str) -> frozenset:
    if nodes is None:
        return frozenset()
    return dag._as_set(nodes, what)


def _path_edges(dag: DAG, path: Any) -> list[tuple]:
    if path is None:
        return []
    if isinstance(path, str) or not isinstance(path, Iterable):
        raise GraphError(f"highlight_path must be a list of nodes, got {path!r}")
    nodes = [dag._check_node(v, "path node") for v in path]
    edges = []
    for u, v in zip(nodes, nodes[1:]):
        if dag.has_edge(u, v):
            edges.append((u, v))
        elif dag.has_edge(v, u):
            edges.append((v, u))
        else:
            raise GraphError(f"highlight_path steps from {u!r} to {v!r}, which are not adjacent")
    return edges


def _explicit_clusters(dag: DAG, clusters: Mapping) -> list[_Cluster]:
    out = []
    owner: dict = {}
    for label, members in clusters.items():
        c = _Cluster(str(label))
        for v in dag._sorted(dag._as_set(members, f"node of cluster {label!r}")):
            if v in owner:
                raise GraphError(f"node {v!r} is in two clusters, {owner[v]!r} and {label!r}")
            owner[v] = label
            c.nodes.append(v)
        out.append(c)
    return out


def _prefix_clusters(dag: DAG) -> tuple[list, list[_Cluster]]:
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

    def collapse(c: _Cluster) -> _Cluster:
        c.children = [collapse(ch) for ch in c.children]
        if not c.nodes and len(c.children) == 1:
            return c.children[0]
        return c

    root.children = [collapse(ch) for ch in root.children]
    return root.nodes, root.children


def _layout_clusters(dag: DAG, clusters: Any, obj: Any) -> tuple[list, list[_Cluster]]:
    """Top-level nodes and the cluster forest, in deterministic order."""
    if clusters is None:
        hook = _hook(obj, "_dot_clusters")
        clusters = hook() if hook else None
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
        ``_dot_clusters()`` if it has one, else no boxes.
    title : str, optional
        A title above the graph.
    rankdir : {"TB", "LR", "BT", "RL"}
        Layout direction.

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
    if rankdir not in _RANKDIRS:
        raise RenderError(f"rankdir must be one of {list(_RANKDIRS)}, got {rankdir!r}")
    path_edges = _path_edges(dag, highlight_path)
    path_nodes = {v for e in path_edges for v in e}
    hl = _node_set(dag, highlight_nodes, "highlighted node") | path_nodes
    sep = _node_set(dag, separating_set, "separating-set node")
    if observed is True:
        obs = frozenset(dag.observed)
    elif observed is False:
        obs = frozenset()
    else:
        obs = _node_set(dag, observed, "observed node")
    label_map: dict = {}
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise GraphError(f"labels must be a mapping of node -> text, got {type(labels).__name__}")
        for v, text in labels.items():
            label_map[dag._check_node(v, "labelled node")] = _text(text)

    names: dict = {}
    for v in dag.nodes:
        s = str(v)
        if s in names:
            raise GraphError(f"nodes {names[s]!r} and {v!r} have the same DOT name {s!r}")
        names[s] = v
    node_hook = _hook(obj, "_dot_node_attrs")
    edge_hook = _hook(obj, "_dot_edge_attrs")

    def node_attrs(v) -> dict[str, str]:
        attrs = _str_attrs(node_hook(v), "_dot_node_attrs") if node_hook else {}
        if v in label_map:
            attrs["label"] = label_map[v]
        if v in dag.latent:
            attrs = _merge(attrs, {"style": "dashed"})
        if v in obs:
            attrs = _merge(attrs, {"style": "filled", "fillcolor": _GREY_FILL})
        if v in sep:
            attrs = _merge(attrs, {"style": "filled", "fillcolor": _BLUE_FILL, "color": _BLUE, "penwidth": "2"})
        if v in dag.intervened:
            attrs = _merge(attrs, {"peripheries": "2"})
        if v in hl:
            attrs = _merge(attrs, {"color": _RED, "penwidth": "2"})
        return attrs

    graph_attr = {"rankdir": rankdir}
    if title is not None:
        graph_attr.update(label=graphviz.nohtml(_text(title)), labelloc="t")
    dot = graphviz.Digraph(graph_attr=graph_attr)

    def add_node(target, v) -> None:
        attrs = node_attrs(v)
        label = attrs.pop("label", None)
        target.node(graphviz.nohtml(str(v)), label=None if label is None else graphviz.nohtml(label), **attrs)

    top, forest = _layout_clusters(dag, clusters, obj)
    for v in top:
        add_node(dot, v)
    counter = [0]

    def add_cluster(target, c: _Cluster) -> None:
        name = f"cluster_{counter[0]}"
        counter[0] += 1
        with target.subgraph(name=name) as sub:
            sub.attr(label=graphviz.nohtml(c.label), style="rounded")
            for v in c.nodes:
                add_node(sub, v)
            for ch in c.children:
                add_cluster(sub, ch)

    for c in forest:
        add_cluster(dot, c)

    pos = dag._pos
    on_path = set(path_edges)
    for u, v in sorted(dag.edges, key=lambda e: (pos[e[0]], pos[e[1]])):
        attrs = _str_attrs(edge_hook(u, v), "_dot_edge_attrs") if edge_hook else {}
        if (u, v) in on_path:
            attrs = _merge(attrs, {"color": _RED, "penwidth": "2.5"})
        # Written by hand: Digraph.edge would read a ':' in a name as a port.
        tail = quote(graphviz.nohtml(str(u)))
        head = quote(graphviz.nohtml(str(v)))
        attr_text = a_list(attributes={k: graphviz.nohtml(x) for k, x in sorted(attrs.items())})
        dot.body.append(f"\t{tail} -> {head}" + (f" [{attr_text}]" if attr_text else "") + "\n")
    return dot.source


# -- render --------------------------------------------------------------------


def find_renderer(renderer: str = "auto") -> str | None:
    """Path of the renderer program `render` would use, or None if absent.

    Parameters
    ----------
    renderer : {"auto", "dot", "graphviz-pure"}
        ``"auto"`` tries ``dot`` first, then ``graphviz-pure``.
    """
    if renderer == "auto":
        for name in RENDERERS:
            exe = shutil.which(name)
            if exe:
                return exe
        return None
    if renderer not in RENDERERS:
        raise RenderError(f"renderer must be 'auto' or one of {list(RENDERERS)}, got {renderer!r}")
    return shutil.which(renderer)


def _format_of(path: Path, format: str | None) -> str:
    if format is None:
        fmt = _SUFFIX_FORMAT.get(path.suffix.lower())
        if fmt is None:
            raise RenderError(
                f"cannot tell the format of {str(path)!r} from its suffix {path.suffix!r}; "
                f"use .svg, .png or .dot, or pass format= one of {list(FORMATS)}"
            )
        return fmt
    fmt = str(format).lower()
    if fmt not in FORMATS:
        raise RenderError(f"format must be one of {list(FORMATS)}, got {format!r}")
    return fmt


def render(
    obj: Any,
    path: str | os.PathLike,
    format: str | None = None,
    *,
    renderer: str = "auto",
    **to_dot_options: Any,
) -> Path:
    """Write a diagram of `obj` to `path` as SVG, PNG or DOT text.

    Parameters
    ----------
    obj : DAG or Drawable
    path : str or path-like
        The output file; its directory must exist.
    format : {"svg", "png", "dot"}, optional
        Defaults to the suffix of `path` (``.gv`` counts as ``dot``).
    renderer : {"auto", "dot", "graphviz-pure"}
        Program for SVG/PNG. ``"auto"`` uses ``dot`` when on ``PATH``, else
        ``graphviz-pure``. Ignored for DOT output.
    **to_dot_options
        Passed to :func:`to_dot` (``highlight_path``, ``separating_set``, ...).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    RenderError
        If the format is unknown, no renderer is installed (the message says
        how to install one), or the renderer fails (its stderr is included).
    GraphError
        From :func:`to_dot`, on bad options.
    """
    path = Path(path)
    fmt = _format_of(path, format)
    source = to_dot(obj, **to_dot_options)
    if not path.parent.is_dir():
        raise RenderError(f"cannot write {str(path)!r}: directory {str(path.parent)!r} does not exist")
    if fmt == "dot":
        path.write_text(source, encoding="utf-8")
        return path
    exe = find_renderer(renderer)
    if exe is None:
        wanted = "no renderer for SVG/PNG found on PATH" if renderer == "auto" else f"renderer {renderer!r} not found on PATH"
        raise RenderError(f"{wanted}; {_INSTALL_HINT}, or write .dot instead")
    # Render into a temporary file beside the target so a failed run leaves no partial output.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".{fmt}", dir=path.parent)
    os.close(fd)
    try:
        try:
            proc = subprocess.run(
                [exe, f"-T{fmt}", "-o", tmp],
                input=source.encode("utf-8"),
                capture_output=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RenderError(f"renderer {exe!r} could not run: {e}") from None
        if proc.returncode != 0 or os.path.getsize(tmp) == 0:
            err = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}, no output"
            raise RenderError(f"renderer {Path(exe).name!r} failed on {path.name!r}: {err}")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)        # mkstemp makes 0600; a written diagram gets the usual mode
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
