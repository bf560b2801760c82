"""What a tour section gets: :class:`TourContext`, the output folder and a diagram writer.

A tour section is a function ``section(ctx) -> markdown``. It writes its files through
the context (:meth:`TourContext.diagram`, :meth:`TourContext.write_text`), which writes
each one atomically, and records problems that should not stop the tour (a renderer
that failed) in :attr:`TourContext.notes`, which the report lists.

Examples
--------
>>> import tempfile, pathlib
>>> from causalnet import gallery
>>> from causalnet.cli.tour_context import TourContext
>>> ctx = TourContext(out=pathlib.Path(tempfile.mkdtemp()), renderer="none")
>>> ctx.diagram(gallery.graph("sprinkler"), "s", "the sprinkler graph").startswith("*the sprinkler graph*")
True
>>> sorted(p.name for p in ctx.out.iterdir())
['s.dot']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RenderError
from ..io.dot import find_renderer, render, to_dot
from ..io.files import atomic_write

__all__ = ["TourContext", "Section"]


@dataclass
class TourContext:
    """What a tour section gets: the output directory and a diagram writer.

    Attributes
    ----------
    out : pathlib.Path
        Directory the section writes into (exists).
    renderer : str
        ``"auto"``, ``"dot"``, ``"graphviz-pure"`` or ``"none"`` (DOT only).
    notes : list of str
        Problems met while writing (e.g. a renderer that failed); the report
        lists them.
    """

    out: Path
    renderer: str = "auto"
    notes: list[str] = field(default_factory=list)

    def diagram(self, obj: Any, stem: str, caption: str, **to_dot_options: Any) -> str:
        """Write ``stem.dot`` and, when a renderer works, ``stem.svg``; return markdown linking them.

        Never raises for lack of a renderer: the DOT file is the fallback. Files are
        written atomically (DOT here, SVG by :func:`causalnet.io.dot.render`). Models
        (objects with mechanisms) are drawn with a legend of their node kinds.
        """
        if hasattr(obj, "mechanisms"):
            to_dot_options.setdefault("legend", True)
        atomic_write(self.out / f"{stem}.dot", to_dot(obj, **to_dot_options))
        if self.renderer != "none" and find_renderer(self.renderer) is not None:
            try:
                render(obj, self.out / f"{stem}.svg", renderer=self.renderer, **to_dot_options)
            except RenderError as e:
                self.notes.append(f"{stem}.svg was not rendered: {e}")
            else:
                return f"![{caption}]({stem}.svg)\n\n*{caption}* ([DOT source]({stem}.dot))"
        return f"*{caption}*: [{stem}.dot]({stem}.dot) (DOT text; render it with `dot -Tsvg` or `graphviz-pure -Tsvg`)"


    def write_text(self, name: str, text: str) -> Path:
        """Write a file of the section's own into :attr:`out`, atomically; returns its path."""
        path = self.out / name
        atomic_write(path, text)
        return path


#: A tour section: ``section(ctx) -> markdown``.
Section = Callable[[TourContext], str]
