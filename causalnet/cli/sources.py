"""Command-line arguments that name things: a GRAPH, a MODEL, a list of nodes.

``GRAPH`` is a file holding dagitty-like text (see :meth:`causalnet.DAG.parse`) or JSON
(``{"nodes": [...], "edges": [[u, v], ...], "latent": [...]}``), ``gallery:NAME``, or graph
text given inline (``"A -> B <- C"``). ``MODEL`` is ``gallery:NAME`` or a model file: BIF
(``.bif``, ``.bif.gz``), XMLBIF (``.xml``, ``.xmlbif``) or causalnet JSON (``.json``). Node
lists are comma-separated (``X1,X2``); a name matches a node by ``str``.

Files are read through :mod:`causalnet.io.files` (bounded, binary refused), so a hostile
file ends in a one-line error, never a traceback.

Examples
--------
>>> from causalnet.cli.sources import load_graph, node_list
>>> g = load_graph("A -> B <- C")
>>> node_list(g, ["A,C"], "node")
['A', 'C']
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import gallery
from ..errors import GraphError, ModelError
from ..graph.dag import DAG
from ..io.bif import read_bif
from ..io.files import decode_text, read_model_bytes
from ..io.json import load_json
from ..io.json import parse as parse_json
from ..io.xmlbif import read_xmlbif
from ..model import CausalModel

__all__ = ["GALLERY", "load_graph", "load_model", "node_list", "MODEL_READERS"]

#: The prefix that names a gallery entry instead of a file.
GALLERY = "gallery:"
_JSON_KEYS = ("nodes", "edges", "latent")

#: Model file readers by (lower-case) file-name ending.
MODEL_READERS = (
    ((".bif", ".bif.gz"), read_bif),
    ((".xml", ".xmlbif", ".xml.gz", ".xmlbif.gz"), read_xmlbif),
    ((".json",), load_json),
)


def _dag_from_json(data: Any, source: str) -> DAG:
    if not isinstance(data, dict):
        raise GraphError(f"{source}: JSON graph must be an object with keys {list(_JSON_KEYS)}, "
                         f"got {type(data).__name__}")
    unknown = sorted(set(data) - set(_JSON_KEYS))
    if unknown:
        raise GraphError(f"{source}: unknown JSON keys {unknown}; allowed keys are {list(_JSON_KEYS)}")
    for key in _JSON_KEYS:
        if not isinstance(data.get(key, []), list):
            raise GraphError(f"{source}: JSON key {key!r} must be a list, got {type(data[key]).__name__}")
    return DAG(data.get("edges", []), nodes=data.get("nodes", []), latent=data.get("latent", []))


def _is_file(spec: str) -> bool:
    try:
        return Path(spec).exists()
    except (OSError, ValueError):  # e.g. graph text too long to be a file name, or holding NUL
        return False


def _graph_file(spec: str) -> DAG:
    path = Path(spec)
    text = decode_text(read_model_bytes(path), spec)
    looks_json = path.suffix.lower() == ".json" or text.lstrip().startswith("{")
    if looks_json:
        try:
            data = parse_json(text)
        except ModelError as e:
            if path.suffix.lower() == ".json":
                raise GraphError(f"{spec}: bad JSON at {e}") from None
        else:
            return _dag_from_json(data, spec)
    try:
        return DAG.parse(text)
    except GraphError as e:
        raise GraphError(f"{spec}: {e}") from None


def _gallery_hint(spec: str) -> str:
    return f"; did you mean '{GALLERY}{spec}'?" if spec in gallery.names() else ""


def load_graph(spec: str) -> DAG:
    """The DAG named by a command-line GRAPH argument.

    Parameters
    ----------
    spec : str
        ``gallery:NAME``; a path to a JSON file (``.json``, or text starting
        with ``{`` that parses as JSON) or a dagitty-like text file; or graph
        text such as ``"A -> B; U [latent]"``.

    Raises
    ------
    GraphError
        On an unknown gallery name, bad JSON or bad graph text, or a `spec`
        that is neither a file nor graph text.
    ModelError, ResourceError, ModelFileNotFoundError, ModelFilePermissionError
        If the file is binary, too large, or cannot be read.
    """
    if spec.startswith(GALLERY):
        return gallery.graph(spec[len(GALLERY):])
    if _is_file(spec):
        return _graph_file(spec)
    if any(tok in spec for tok in ("->", "<-", ";")):
        return DAG.parse(spec)
    raise GraphError(
        f"no such file {spec!r}{_gallery_hint(spec)} (GRAPH is a file, '{GALLERY}NAME' with NAME in "
        f"{gallery.names()}, or graph text like 'A -> B')"
    )


def load_model(spec: str) -> CausalModel:
    """The CausalModel named by a command-line MODEL argument (``gallery:NAME`` or a model file).

    Raises
    ------
    GraphError
        On an unknown gallery name, a gallery graph without mechanisms, a missing
        file or an unknown file type.
    ModelError
        On a malformed file (naming the line or key).
    """
    if spec.startswith(GALLERY):
        name = spec[len(GALLERY):]
        obj = gallery.load(name)
        if isinstance(obj, DAG):
            raise GraphError(f"gallery entry {name!r} is a graph without mechanisms; models: "
                             f"{[n for n in gallery.names() if gallery.kind(n) != 'graph']}")
        return obj
    if not _is_file(spec):
        raise GraphError(f"no such model file {spec!r}{_gallery_hint(spec)} (MODEL is a .bif/.bif.gz/.xmlbif/.json "
                         f"file or '{GALLERY}NAME')")
    name = Path(spec).name.lower()
    for endings, reader in MODEL_READERS:
        if name.endswith(endings):
            return reader(spec)
    raise GraphError(f"{spec}: unknown model file type; use .bif, .bif.gz, .xmlbif or .json")


def _unknown(g: DAG, name: str, what: str) -> GraphError:
    close = difflib.get_close_matches(name, [str(v) for v in g.nodes], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return GraphError(f"unknown {what} {name!r}{hint}")


def node_list(g: DAG, items: Iterable[str] | None, what: str) -> list:
    """Nodes of `g` from comma-separated arguments; a name matches a node by ``str``.

    Raises
    ------
    GraphError
        On an empty name or an unknown node (with a close match as a hint).
    """
    by_str = {str(v): v for v in g.nodes}
    out: list = []
    for item in items or ():
        for name in item.split(","):
            name = name.strip()
            if not name:
                raise GraphError(f"empty name in the {what} list {item!r}")
            v = name if name in g else by_str.get(name)
            if v is None:
                raise _unknown(g, name, what)
            if v not in out:
                out.append(v)
    return out
