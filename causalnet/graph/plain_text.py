"""Reading the plainest graph text in one regular-expression pass and a few numpy passes.

Most graph text that is large is plain: statements of bare names joined by
``->`` or ``<-`` (``A -> B -> C``, ``Z[3] <- Z[2]``), separated by ``;`` or
new lines, maybe inside ``dag { ... }``. :func:`parse_plain_indexed` reads
such text with one C-level ``findall`` (names, arrows, separators) and numpy
over the token array — the grammar check, the numbering of names, the edges
— instead of a token at a time in Python. Anything else (braces,
attributes, quoted names, comments, ``<->``, a self-loop, any error) gives
None, and :func:`causalnet.graph.parse.parse_graph` reads it (and names the
error). On the text it accepts, :func:`parse_plain` returns exactly what
``parse_graph`` returns (a property test checks it).

Examples
--------
>>> parse_plain("A -> B <- C; D")
([('A', 'B'), ('C', 'B')], ['A', 'B', 'C', 'D'], [])
>>> parse_plain("U [latent]; U -> A") is None
True
"""

from __future__ import annotations

import re

import numpy as np

from .core import factorize_pays

__all__ = ["parse_plain", "parse_plain_indexed"]

_NAME = r"[A-Za-z_0-9][\w.]*(?:\[\d+\])*"          # as causalnet.graph.parse reads a bare name
_TOKENS = re.compile(rf"{_NAME}|->|<-|[;\n]")
_WRAPPED = re.compile(r"^(?:dag|digraph)\s*\{(.*)\}\s*$", re.DOTALL)


def parse_plain_indexed(text: str) -> tuple[tuple, np.ndarray, np.ndarray] | None:
    """Nodes in order of first appearance and the edges as index arrays ``src -> dst``; None unless plain.

    Returns
    -------
    (nodes, src, dst) or None
        `nodes` a tuple of str; `src`, `dst` int64 arrays of shape (m,), the
        edges in text order (repeats kept).
    """
    if not isinstance(text, str):
        return None
    body = text.strip()
    m = _WRAPPED.match(body)
    if m:
        body = m.group(1)
    tokens = _TOKENS.findall(body)
    blank = body.count(" ") + body.count("\t") + body.count("\r")
    if sum(map(len, tokens)) + blank != len(body):
        return None                                  # a character no plain token or blank accounts for
    t = np.array(tokens + [";"], dtype=object)      # (k + 1,), a separator pads the end
    forward = t == "->"
    arrow = forward | (t == "<-")
    name = ~(arrow | (t == ";") | (t == "\n"))
    at = np.flatnonzero(arrow)
    if (name[:-1] & name[1:]).any() or not (name[at - 1].all() and name[at + 1].all()):
        return None                                  # two names in a row, or an arrow without a name each side
    nodes, codes = _number(t[name])
    code = np.zeros(t.size, dtype=np.int64)
    code[name] = codes
    left, right, fw = code[at - 1], code[at + 1], forward[at]
    src, dst = np.where(fw, left, right), np.where(fw, right, left)
    if (src == dst).any():
        return None                                  # a self-loop: parse_graph names it
    return nodes, src, dst


def _number(names: np.ndarray) -> tuple[tuple, np.ndarray]:
    """Distinct names in order of first appearance, and each name's position among them."""
    if factorize_pays(names.size):
        import pandas as pd  # optional heavy dependency: one C hash pass numbers every name

        codes, uniques = pd.factorize(names, sort=False)
        return tuple(uniques.tolist()), codes.astype(np.int64, copy=False)
    listed = names.tolist()
    order = tuple(dict.fromkeys(listed))
    pos = dict(zip(order, range(len(order))))
    return order, np.fromiter(map(pos.__getitem__, listed), dtype=np.int64, count=len(listed))


def parse_plain(text: str) -> tuple[list[tuple[str, str]], list[str], list[str]] | None:
    """Edges, nodes (in order of first appearance) and latent nodes (none) of plain `text`, or None.

    Returns
    -------
    (edges, nodes, latent) or None
        As :func:`causalnet.graph.parse.parse_graph`; None when `text` is
        not plain (then ``parse_graph`` must read it).
    """
    read = parse_plain_indexed(text)
    if read is None:
        return None
    nodes, src, dst = read
    edges = list(zip(map(nodes.__getitem__, src.tolist()), map(nodes.__getitem__, dst.tolist())))
    return edges, list(nodes), []
