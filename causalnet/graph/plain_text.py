"""Reading the plainest graph text in a few regular-expression passes.

Most graph text that is large is plain: statements of bare names joined by
``->`` or ``<-`` (``A -> B -> C``, ``Z[3] <- Z[2]``), separated by ``;`` or
new lines, maybe inside ``dag { ... }``. :func:`parse_plain` reads such text
with two C-level regular-expression passes (check the whole text, list its
names and arrows) and numpy over the token list, instead of a token at a time. Anything else —
braces, attributes, quoted names, comments, ``<->``, any error — returns
None, and :func:`causalnet.graph.parse.parse_graph` reads it (and names the
error). On the text it accepts, it returns exactly what ``parse_graph``
returns (a property test checks it).

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

__all__ = ["parse_plain"]

_NAME = r"[A-Za-z_0-9][\w.]*(?:\[\d+\])*"          # as causalnet.graph.parse reads a bare name
_WS = r"[^\S\n]*"                                    # white space within a line
_STATEMENT = rf"{_WS}(?:{_NAME}(?:{_WS}(?:->|<-){_WS}{_NAME})*{_WS})?"
_PLAIN = re.compile(rf"{_STATEMENT}(?:[;\n]{_STATEMENT})*")
_TOKENS = re.compile(rf"{_NAME}|->|<-")
_WRAPPED = re.compile(r"^(?:dag|digraph)\s*\{(.*)\}\s*$", re.DOTALL)


def parse_plain(text: str) -> tuple[list[tuple[str, str]], list[str], list[str]] | None:
    """Edges, nodes (in order of first appearance) and latent nodes (none) of plain `text`, or None.

    Returns
    -------
    (edges, nodes, latent) or None
        As :func:`causalnet.graph.parse.parse_graph`; None when `text` is
        not plain (then ``parse_graph`` must read it).
    """
    if not isinstance(text, str):
        return None
    body = text.strip()
    m = _WRAPPED.match(body)
    if m:
        body = m.group(1)
    if _PLAIN.fullmatch(body) is None:
        return None
    tokens = np.array(_TOKENS.findall(body) + [""], dtype=object)   # names and arrows; "" pads the end
    forward = tokens == "->"
    backward = tokens == "<-"
    at = np.flatnonzero(forward | backward)     # every arrow has its two names beside it (checked above)
    left, right = tokens[at - 1], tokens[at + 1]
    fw = forward[at]
    src = np.where(fw, left, right).tolist()
    dst = np.where(fw, right, left).tolist()
    names = tokens[:-1][~(forward | backward)[:-1]].tolist()
    return list(zip(src, dst)), list(dict.fromkeys(names)), []
