"""Diagrams of graphs and models: model styles, files, and rendering to SVG/PNG.

The DOT text of a graph or a model is the graph layer's (:func:`causalnet.graph.drawing.to_dot`,
re-exported here): it draws a DAG or a model, asking the model's style hooks
(below); it needs no binary. This module adds files and rendering. :func:`render` writes a file atomically (a temporary file beside the
target, then ``os.replace``): DOT text as is, or SVG/PNG through the Graphviz
``dot`` program, else through the ``graphviz-pure`` command
(``pip install causalnet[render]``; no system libraries), each looked up on
``PATH`` and then beside ``sys.executable``; else it raises
:class:`~causalnet.errors.RenderError` saying where it looked and what to install.

Marks
-----
The marks (latent, observed, intervened, separating set, highlighted nodes and
paths, clusters, the ``legend=`` box) and the deterministic output order are
those of :mod:`causalnet.graph.drawing`, whose docstring has the table and the
hooks a drawable object (a model) may define.

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

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from ..errors import (
    GraphError,
    ModelFileNotFoundError,
    ModelFilePermissionError,
    ModelFileWriteError,
    RenderError,
)
from ..graph.dag import DAG
from ..graph.drawing import RENDER_HOOK, Drawable, check_dot_options, to_dot
from .files import atomic_fill

__all__ = ["to_dot", "render", "find_renderer", "Drawable", "FORMATS", "RENDERERS"]

#: Output formats :func:`render` writes.
FORMATS = ("svg", "png", "dot")
#: Renderer programs :func:`render` can use, in the order ``"auto"`` tries them.
RENDERERS = ("dot", "graphviz-pure")

_SUFFIX_FORMAT = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot"}
_INSTALL_HINT = (
    "install the Graphviz 'dot' program (e.g. `apt-get install graphviz`) "
    "or the pure renderer (`pip install causalnet[render]`, which provides 'graphviz-pure')"
)


# -- render --------------------------------------------------------------------


def _script_dirs() -> list[Path]:
    """Folders where pip puts commands for this interpreter (the venv need not be active)."""
    dirs = [Path(sys.executable).parent]
    scripts = sysconfig.get_path("scripts")
    if scripts:
        dirs.append(Path(scripts))
    return list(dict.fromkeys(dirs))


def _which(name: str) -> str | None:
    exe = shutil.which(name)
    if exe:
        return exe
    for d in _script_dirs():
        for exe in (d / name, d / f"{name}.exe"):
            if exe.is_file() and os.access(exe, os.X_OK):
                return str(exe)
    return None


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def find_renderer(renderer: str = "auto") -> str | None:
    """Path of the renderer program `render` would use, or None if absent.

    Programs are looked up on ``PATH``, then beside the running Python
    (``sys.executable``'s folder and the interpreter's scripts folder), so a
    ``graphviz-pure`` installed into a virtual environment is found even when
    the environment is not activated.

    Parameters
    ----------
    renderer : {"auto", "dot", "graphviz-pure"}
        ``"auto"`` tries ``dot`` first, then ``graphviz-pure``.
    """
    if not isinstance(renderer, str) or (renderer != "auto" and renderer not in RENDERERS):
        raise RenderError(f"renderer must be 'auto' or one of {list(RENDERERS)}, got {renderer!r}")
    for name in RENDERERS if renderer == "auto" else (renderer,):
        exe = _which(name)
        if exe:
            return exe
    return None


def _no_renderer_message(renderer: str) -> str:
    places = "on PATH or in " + ", ".join(repr(str(d)) for d in _script_dirs())
    wanted = "no renderer for SVG/PNG found" if renderer == "auto" else f"renderer {renderer!r} not found"
    if _installed("graphviz-pure") and renderer in ("auto", "graphviz-pure"):
        return (f"{wanted} {places}: the graphviz-pure package is installed but its 'graphviz-pure' command "
                f"is not in those folders; put its folder on PATH, or write .dot instead")
    return f"{wanted} {places}; {_INSTALL_HINT}, or write .dot instead"


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


def _as_path(path: Any) -> Path:
    try:
        out = Path(path)
    except TypeError:
        raise RenderError(f"path must be a str or path-like, got {type(path).__name__}") from None
    if not out.name:
        raise RenderError(f"cannot write {str(path)!r}: it names no file")
    return out


def _run(exe: str, fmt: str, source: str, out: str, name: str) -> None:
    """Run the renderer on `source`, writing `out`; RenderError on failure."""
    try:
        proc = subprocess.run([exe, f"-T{fmt}", "-o", out], input=source.encode("utf-8"),
                              capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RenderError(f"renderer {exe!r} could not run: {e}") from None
    if proc.returncode != 0 or os.path.getsize(out) == 0:
        err = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}, no output"
        raise RenderError(f"renderer {Path(exe).name!r} failed on {name!r}: {err}")


def _write_atomically(path: Path, fmt: str, fill) -> None:
    """Write `path` through :func:`~causalnet.io.files.atomic_fill`: `fill(tmp_name)` writes the temporary file.

    A failure leaves the old file (or none) and removes the temporary file; a file error
    (folder not writable, a full disk, the file-size limit) becomes a RenderError naming `path`.
    """
    try:
        atomic_fill(path, lambda f, tmp: fill(tmp), suffix=f".{fmt}.tmp")
    except (ModelFileNotFoundError, ModelFilePermissionError, ModelFileWriteError) as e:
        raise RenderError(str(e)) from e


def render(
    obj: Any,
    path: str | os.PathLike,
    format: str | None = None,
    *,
    renderer: str = "auto",
    **to_dot_options: Any,
) -> Path:
    """Write a diagram of `obj` to `path` as SVG, PNG or DOT text.

    The file is written atomically: into a temporary file in the same folder,
    then moved over `path`, so a failure leaves the old file (or none), never
    half of one.

    Parameters
    ----------
    obj : DAG, Drawable, or an object with its own ``to_dot()`` (a MarkovNetwork)
    path : str or path-like
        The output file; its directory must exist.
    format : {"svg", "png", "dot"}, optional
        Defaults to the suffix of `path` (``.gv`` counts as ``dot``).
    renderer : {"auto", "dot", "graphviz-pure"}
        Program for SVG/PNG. ``"auto"`` uses ``dot`` when found, else
        ``graphviz-pure`` (see :func:`find_renderer` for where they are
        looked up). Ignored for DOT output.
    **to_dot_options
        Passed to :func:`to_dot` (``highlight_path``, ``separating_set``, ...).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    RenderError
        If the format is unknown, the folder is missing or not writable, no
        renderer is found (the message says where it looked and how to
        install one), or the renderer fails (its stderr is included).
    GraphError
        From :func:`to_dot`, on bad options.
    """
    check_dot_options("render", to_dot_options)
    path = _as_path(path)
    fmt = _format_of(path, format)
    if not isinstance(obj, DAG) and not hasattr(obj, "dag") and callable(getattr(obj, "to_dot", None)):
        if to_dot_options:                       # an undirected model (MarkovNetwork): its own DOT text
            raise GraphError(f"a {type(obj).__name__} diagram takes no drawing options, got "
                             f"{sorted(to_dot_options)}")
        source = obj.to_dot()
    else:
        source = to_dot(obj, **to_dot_options)
    if not path.parent.is_dir():
        raise RenderError(f"cannot write {str(path)!r}: directory {str(path.parent)!r} does not exist")
    if fmt == "dot":
        _write_atomically(path, fmt, lambda tmp: Path(tmp).write_text(source, encoding="utf-8"))
        return path
    exe = find_renderer(renderer)
    if exe is None:
        raise RenderError(_no_renderer_message(renderer))
    _write_atomically(path, fmt, lambda tmp: _run(exe, fmt, source, tmp, path.name))
    return path


RENDER_HOOK["render"] = render
