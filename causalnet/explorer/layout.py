"""The explorer's diagram: the library's own DOT, with room in each node for its posterior.

:func:`diagram_dot` draws the model exactly as :func:`causalnet.to_dot` does (its
node kinds and colours, latent nodes dashed), through the drawing hooks of
:mod:`causalnet.graph.drawing`, adding three things: every node is a rounded box
sized to hold one bar per state (at most :data:`MAX_ROWS` rows; a continuous
node has one row for ``mean ± sd``), and every node and edge carries an ``id``
(``cn-n-<i>``, ``cn-e-<i>-<j>`` with ``i``, ``j`` positions in the DAG's node
order) so that the page finds them in the SVG. :func:`diagram_svg` renders it
with :func:`causalnet.io.dot.render` (Graphviz ``dot``, else ``graphviz-pure``).

The sizes are in points (1/72 inch, the SVG's user unit); :data:`GEOMETRY` is
sent to the page, which draws the bars inside the boxes with the same numbers.

Examples
--------
>>> from causalnet import gallery
>>> line = diagram_dot(gallery.load("sprinkler")).splitlines()[2].strip()
>>> line.startswith('Rain [fillcolor="#dbe9f6" fixedsize=true height=0.694 id="cn-n-0" shape=box')
True
"""

from __future__ import annotations

import tempfile
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from ..errors import GraphError
from ..graph.core import DAGCore
from ..io.dot import render, to_dot
from ..mechanisms.base import DISCRETE, TENSOR
from ..model import CausalModel

__all__ = ["diagram_dot", "diagram_svg", "GEOMETRY", "MAX_ROWS", "node_rows"]

#: Most bar rows a node shows; a node with more states shows the most probable ones and "+k more".
MAX_ROWS = 6
#: Sizes in points shared with the page: header (the name), one row, padding, the bar, the value column.
GEOMETRY = {"header": 18.0, "row": 13.0, "pad": 6.0, "bar": 56.0, "value": 46.0, "char": 6.0, "name_char": 7.5,
            "max_rows": MAX_ROWS}


def node_rows(model: CausalModel | None, node: Hashable) -> int:
    """Bar rows drawn in `node`: one per state (at most :data:`MAX_ROWS`), one for a continuous node, 0 else."""
    if model is None:
        return 0
    spec = model.specs[node]
    if spec.kind == DISCRETE:
        return min(len(spec.states), MAX_ROWS)
    return 0 if spec.kind == TENSOR or spec.shape else 1


def _size(model: CausalModel | None, node: Hashable) -> tuple[float, float]:
    """(width, height) in points of `node`'s box."""
    g = GEOMETRY
    name = g["name_char"] * len(str(node)) + 2 * g["pad"] + 8
    rows = node_rows(model, node)
    if rows == 0:
        return max(54.0, name), 36.0
    if model.specs[node].kind == DISCRETE:
        label = g["char"] * min(max(len(str(s)) for s in model.states(node)), 12)
    else:
        label = g["char"] * 4
    width = max(name, label + g["bar"] + g["value"] + 3 * g["pad"])
    return width, g["header"] + rows * g["row"] + g["pad"]


class _Sized:
    """A drawable (:mod:`causalnet.graph.drawing` hooks) of a model or DAG with boxes sized for the bars."""

    def __init__(self, obj: Any) -> None:
        if not isinstance(obj, (DAGCore, CausalModel)):
            raise GraphError(f"the explorer draws a CausalModel or a DAG, got {type(obj).__name__}")
        self.model = obj if isinstance(obj, CausalModel) else None
        self.dag = obj.dag if self.model is not None else obj
        self._index = {v: i for i, v in enumerate(self.dag.nodes)}

    def dot_node_attrs(self, node: Hashable) -> dict:
        attrs = dict(self.model.dot_node_attrs(node)) if self.model is not None else {}
        attrs["id"] = f"cn-n-{self._index[node]}"
        if node_rows(self.model, node):
            w, h = _size(self.model, node)
            style = [s for s in attrs.get("style", "").split(",") if s and s != "rounded"]
            attrs.update(shape="box", style=",".join([*style, "rounded"]), fixedsize="true",
                         width=f"{w / 72:.3f}", height=f"{h / 72:.3f}")
        return attrs

    def dot_edge_attrs(self, parent: Hashable, child: Hashable) -> dict:
        return {"id": f"cn-e-{self._index[parent]}-{self._index[child]}"}


def diagram_dot(obj: Any, *, rankdir: str = "TB") -> str:
    """DOT text of the explorer's diagram of a model or DAG (module notes).

    Raises
    ------
    GraphError
        If `obj` is neither a DAG nor a model.
    """
    return to_dot(_Sized(obj), rankdir=rankdir)


def diagram_svg(obj: Any, *, rankdir: str = "TB", renderer: str = "auto") -> str:
    """The explorer's diagram of a model or DAG as SVG text.

    Raises
    ------
    RenderError
        If no renderer is found (the message says what to install) or it fails.
    """
    with tempfile.TemporaryDirectory(prefix="causalnet-explorer-") as tmp:
        path = Path(tmp) / "diagram.svg"
        render(_Sized(obj), path, renderer=renderer, rankdir=rankdir)
        return path.read_text(encoding="utf-8")
