"""The explorer: a local page to look at a model and ask it causal questions by clicking.

``causalnet explore MODEL`` or :func:`explore` starts a small HTTP server on the
loopback address that serves one page (static HTML, CSS and JavaScript shipped
with the package; no CDN, it works offline) and a JSON API answered by the
library's own engines:

* :mod:`~causalnet.explorer.session` — :class:`Session`: every API request as a
  method on JSON values (tested without a server);
* :mod:`~causalnet.explorer.layout` — the diagram: the library's DOT with nodes sized
  to hold their posterior bars, rendered to SVG by ``dot`` or ``graphviz-pure``;
* :mod:`~causalnet.explorer.server` — :class:`Explorer` (``.url``, ``.stop()``, shown
  inline in Jupyter) and :func:`explore`.
"""

from .layout import diagram_dot, diagram_svg
from .server import Explorer, explore
from .session import Session, query_text

__all__ = ["explore", "Explorer", "Session", "query_text", "diagram_dot", "diagram_svg"]
