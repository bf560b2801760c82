"""The ``explore`` command: open the explorer page on a model or a graph.

``causalnet explore MODEL [--port N] [--no-browser] [--timeout S]`` loads MODEL —
``gallery:NAME`` (a model, or a gallery graph such as ``m-bias``), a model file
(``.bif``, ``.bif.gz``, ``.xmlbif``, ``.json``), or a graph (a graph file or graph
text such as ``"A -> B <- C"``, offering the graph questions only) — starts
:func:`causalnet.explore` on 127.0.0.1, prints the URL, opens a browser unless
``--no-browser``, and serves until Ctrl-C.

Examples
--------
>>> from causalnet.cli.explore import load_explorable
>>> type(load_explorable("gallery:m-bias")).__name__, type(load_explorable("gallery:asia")).__name__
('DAG', 'CausalModel')
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import gallery
from ..explorer.server import explore
from .sources import GALLERY, MODEL_READERS, load_graph, load_model

__all__ = ["load_explorable", "add_explore"]


def load_explorable(spec: str) -> Any:
    """The model or graph named by `spec`: ``gallery:NAME``, a model file, a graph file or graph text.

    Raises
    ------
    GraphError, ModelError
        As :func:`~causalnet.cli.sources.load_model` and :func:`~causalnet.cli.sources.load_graph` do.
    """
    if spec.startswith(GALLERY):
        return gallery.load(spec[len(GALLERY):])
    name = Path(spec).name.lower()
    if any(name.endswith(endings) for endings, _ in MODEL_READERS if endings != (".json",)):
        return load_model(spec)
    if name.endswith(".json"):
        try:
            return load_model(spec)
        except Exception:  # noqa: BLE001 - a JSON graph file is not a model file; read it as a graph
            return load_graph(spec)
    return load_graph(spec)


def _cmd_explore(args: argparse.Namespace) -> int:
    obj = load_explorable(args.model)
    page = explore(obj, port=args.port, browser=not args.no_browser, timeout=args.timeout, title=args.model)
    print(f"causalnet explorer for {args.model} at {page.url} (Ctrl-C stops it)", flush=True)
    try:
        page.wait()
    finally:
        page.stop()
    print("stopped", file=sys.stderr)
    return 0


def add_explore(sub: Any) -> None:
    """Declare ``causalnet explore``."""
    e = sub.add_parser("explore", help="open the explorer page: click nodes to observe or intervene",
                       epilog="examples:\n  causalnet explore gallery:sprinkler\n"
                              "  causalnet explore asia.bif --port 8765 --no-browser\n"
                              "  causalnet explore 'X <- U1 -> M <- U2 -> Y; X -> Y'")
    e.add_argument("model", help="gallery:NAME, a model file (.bif, .bif.gz, .xmlbif, .json), a graph file or graph "
                                 "text like 'A -> B'")
    e.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    e.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    e.add_argument("--timeout", type=float, default=10.0, help="seconds one request may compute (default 10)")
    e.set_defaults(func=_cmd_explore)
