"""The graph commands: ``dsep``, ``adjust``, ``draw`` and ``gallery``.

Each command is a function ``run(args) -> exit status`` and an ``add_*`` function that
declares its arguments on the top-level parser; the sentences they print
(:func:`dsep_line`, :func:`adjust_lines`) are shared with the tour. With ``--json``,
``dsep``, ``adjust`` and ``gallery`` print one JSON document instead
(:func:`dsep_dict`, :func:`adjust_dict`; node names as strings, in the graph's order).

Examples
--------
>>> from causalnet import gallery
>>> from causalnet.cli.graphs import dsep_line
>>> dsep_line(gallery.graph("asia"), ["tub"], ["smoke"], [])
'tub ⊥ smoke: yes, d-separated'
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Hashable, Iterable
from typing import Any

from .. import gallery
from ..errors import RenderError
from ..graph.dag import DAG
from ..io.dot import render, to_dot
from .sources import load_graph, node_list

__all__ = ["dsep_line", "adjust_lines", "dsep_dict", "adjust_dict", "format_set", "format_nodes", "add_dsep", "add_adjust", "add_draw",
           "add_gallery", "SHOW_SETS", "MAX_SETS"]

SHOW_SETS = 12  #: at most this many adjustment sets are listed per kind
MAX_SETS = 1000  #: and at most this many are searched for
_JSON_HELP = "print the answer as one JSON document (for scripts)"
GRAPH_HELP = "a graph file (dagitty-like text or JSON), gallery:NAME, or graph text like 'A -> B'"


def format_set(g: DAG, nodes: Iterable[Hashable] | None) -> str:
    """``{a, b}`` in the graph's node order; ``none`` for None."""
    if nodes is None:
        return "none"
    pos = {v: i for i, v in enumerate(g.nodes)}
    items = sorted(nodes, key=lambda v: pos.get(v, len(pos)))
    return "{" + ", ".join(map(str, items)) + "}"


def format_nodes(g: DAG, nodes: Iterable[Hashable]) -> str:
    """One node by name, several as a set."""
    nodes = list(nodes)
    return str(nodes[0]) if len(nodes) == 1 else format_set(g, nodes)


def _format_sets(g: DAG, sets: list) -> str:
    if not sets:
        return "none"
    shown = ", ".join(format_set(g, s) for s in sets[:SHOW_SETS])
    if len(sets) >= MAX_SETS:
        return f"{shown}, ... (stopped after {len(sets)})"
    if len(sets) > SHOW_SETS:
        return f"{shown}, ... ({len(sets)} in all)"
    return shown


def dsep_line(g: DAG, x: list, y: list, given: list) -> str:
    """``X ⊥ Y | Z: yes, d-separated`` or ``...: no, d-connected; a minimal separator is ...``."""
    stmt = f"{format_nodes(g, x)} ⊥ {format_nodes(g, y)}" + (f" | {', '.join(map(str, given))}" if given else "")
    if g.d_separated(x, y, given=given):
        return f"{stmt}: yes, d-separated"
    sep = g.minimal_d_separator(x, y)
    if sep is None:
        tail = "no set of observed nodes separates them"
    else:
        tail = f"a minimal separator is {format_set(g, sep) if sep else 'the empty set'}"
    return f"{stmt}: no, d-connected; {tail}"


def adjust_lines(g: DAG, x: list, y: list) -> list[str]:
    """The backdoor, minimal and front-door adjustment sets for the effect of `x` on `y`, one line each."""
    xs = x[0] if len(x) == 1 else x
    ys = y[0] if len(y) == 1 else y
    return [
        f"backdoor adjustment sets: {_format_sets(g, g.backdoor_adjustment_sets(xs, ys, max_sets=MAX_SETS))}",
        f"minimal adjustment sets: {_format_sets(g, g.minimal_adjustment_sets(xs, ys, max_sets=MAX_SETS))}",
        f"front-door adjustment sets: {_format_sets(g, g.frontdoor_adjustment_sets(xs, ys, max_sets=MAX_SETS))}",
    ]


# -- commands -------------------------------------------------------------------------


def _names(g: DAG, nodes: Iterable[Hashable] | None) -> list[str] | None:
    """Node names as strings in the graph's order (JSON output); None stays None."""
    if nodes is None:
        return None
    pos = {v: i for i, v in enumerate(g.nodes)}
    return [str(v) for v in sorted(nodes, key=lambda v: pos.get(v, len(pos)))]


def dsep_dict(g: DAG, x: list, y: list, given: list) -> dict:
    """``dsep``'s answer as JSON values: x, y, given, ``d_separated`` and a ``minimal_separator`` when connected
    (None when no set of observed nodes separates them)."""
    out: dict[str, Any] = {"x": _names(g, x), "y": _names(g, y), "given": _names(g, given),
                           "d_separated": bool(g.d_separated(x, y, given=given))}
    if not out["d_separated"]:
        out["minimal_separator"] = _names(g, g.minimal_d_separator(x, y))
    return out


def adjust_dict(g: DAG, x: list, y: list) -> dict:
    """``adjust``'s answer as JSON values: the backdoor, minimal and front-door sets (each list capped at
    :data:`MAX_SETS`; ``truncated`` says which hit the cap)."""
    xs = x[0] if len(x) == 1 else x
    ys = y[0] if len(y) == 1 else y
    out: dict[str, Any] = {"x": _names(g, x), "y": _names(g, y), "truncated": []}
    for key, fn in (("backdoor", g.backdoor_adjustment_sets), ("minimal", g.minimal_adjustment_sets),
                    ("frontdoor", g.frontdoor_adjustment_sets)):
        sets = fn(xs, ys, max_sets=MAX_SETS)
        out[key] = [_names(g, s) for s in sets]
        if len(sets) >= MAX_SETS:
            out["truncated"].append(key)
    return out


def _cmd_dsep(args: argparse.Namespace) -> int:
    g = load_graph(args.graph)
    x = node_list(g, [args.x], "node")
    y = node_list(g, [args.y], "node")
    z = node_list(g, args.given, "conditioning node")
    if args.json:
        print(json.dumps(dsep_dict(g, x, y, z), ensure_ascii=False))
    else:
        print(dsep_line(g, x, y, z))
    return 0


def _cmd_adjust(args: argparse.Namespace) -> int:
    g = load_graph(args.graph)
    x = node_list(g, [args.x], "treatment")
    y = node_list(g, [args.y], "outcome")
    if args.json:
        print(json.dumps(adjust_dict(g, x, y), ensure_ascii=False))
        return 0
    print(f"effect of {format_nodes(g, x)} on {format_nodes(g, y)}")
    for line in adjust_lines(g, x, y):
        print(f"  {line}")
    return 0


def _cmd_draw(args: argparse.Namespace) -> int:
    g = load_graph(args.graph)
    if args.do:
        g = g.do(node_list(g, args.do, "intervened node"))
    options: dict[str, Any] = {"rankdir": args.rankdir, "title": args.title}
    if args.highlight:
        options["highlight_path"] = node_list(g, [args.highlight], "path node")
    if args.given:
        options["separating_set"] = node_list(g, args.given, "separating-set node")
    if args.clusters:
        options["clusters"] = "prefix"
    if args.output is None:
        if args.format not in (None, "dot"):
            raise RenderError(f"--format {args.format} needs an output file (-o FILE)")
        sys.stdout.write(to_dot(g, **options))
        return 0
    path = render(g, args.output, format=args.format, renderer=args.renderer, **options)
    print(f"wrote {path}")
    return 0


def _cmd_gallery(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps([{"name": n, "kind": gallery.kind(n), "description": gallery.describe(n)}
                          for n in gallery.names()], ensure_ascii=False))
        return 0
    width = max(len(n) for n in gallery.names())
    for name in gallery.names():
        print(f"{name:<{width}}  {gallery.kind(name):<9}  {gallery.describe(name)}")
    return 0


# -- argument declarations -------------------------------------------------------------


def _epilog(*examples: str) -> str:
    return "examples:\n" + "\n".join(f"  {e}" for e in examples)


def add_dsep(sub: Any) -> None:
    """Declare ``causalnet dsep``."""
    d = sub.add_parser("dsep", help="are X and Y d-separated given Z?",
                       epilog=_epilog("causalnet dsep gallery:asia tub smoke --given dysp"))
    d.add_argument("graph", help=GRAPH_HELP)
    d.add_argument("x", help="node or comma-separated nodes")
    d.add_argument("y", help="node or comma-separated nodes")
    d.add_argument("--given", "-z", action="append", default=[], help="conditioning nodes (comma-separated; repeatable)")
    d.add_argument("--json", action="store_true", help=_JSON_HELP)
    d.set_defaults(func=_cmd_dsep)


def add_adjust(sub: Any) -> None:
    """Declare ``causalnet adjust``."""
    a = sub.add_parser("adjust", help="adjustment sets for the effect of X on Y",
                       epilog=_epilog("causalnet adjust gallery:frontdoor Smoking Cancer"))
    a.add_argument("graph", help=GRAPH_HELP)
    a.add_argument("x", help="treatment node(s)")
    a.add_argument("y", help="outcome node(s)")
    a.add_argument("--json", action="store_true", help=_JSON_HELP)
    a.set_defaults(func=_cmd_adjust)


def add_draw(sub: Any) -> None:
    """Declare ``causalnet draw``."""
    w = sub.add_parser("draw", help="draw a graph (SVG/PNG/DOT; DOT on stdout without -o)",
                       epilog=_epilog("causalnet draw gallery:m-bias --highlight X,U1,M,U2,Y -o m-bias.svg",
                                      "causalnet draw 'A -> B <- C' > g.dot"))
    w.add_argument("graph", help=GRAPH_HELP)
    w.add_argument("-o", "--output", help="output file; the format comes from its suffix (.svg, .png, .dot)")
    w.add_argument("--format", choices=["svg", "png", "dot"], help="override the format given by the suffix")
    w.add_argument("--highlight", help="a path to highlight, comma-separated (A,B,C)")
    w.add_argument("--do", action="append", default=[], help="nodes to intervene on (drawn with incoming edges cut)")
    w.add_argument("--given", "-z", action="append", default=[], help="nodes to mark as a separating set")
    w.add_argument("--clusters", action="store_true", help="box nodes by their dotted name prefix")
    w.add_argument("--title")
    w.add_argument("--rankdir", default="TB", choices=["TB", "LR", "BT", "RL"])
    w.add_argument("--renderer", default="auto", choices=["auto", "dot", "graphviz-pure"])
    w.set_defaults(func=_cmd_draw)


def add_gallery(sub: Any) -> None:
    """Declare ``causalnet gallery``."""
    s = sub.add_parser("gallery", help="list the named graphs and models",
                       epilog=_epilog("causalnet gallery", "causalnet gallery --json"))
    s.add_argument("--json", action="store_true", help=_JSON_HELP)
    s.set_defaults(func=_cmd_gallery)
