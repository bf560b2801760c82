"""Time-indexed node names of a dynamic Bayesian network.

A DBN's variables are plain names (``"A"``, ``"Health"``). Its two-slice
template names a parent in the same slice by the variable's name (``"A"``) and
one in the previous slice as ``"A[t-1]"``; the unrolled model's nodes, and
every question asked of a DBN, name a variable at step ``t`` as ``"A[5]"``.

>>> split_step("Health[12]")
('Health', 12)
>>> split_template("A[t-1]")
('A', -1)
>>> split_template("A")
('A', 0)
"""

from __future__ import annotations

import re
from collections.abc import Hashable

from ...errors import EvidenceError, GraphError

__all__ = ["step_name", "split_step", "split_template", "is_plain", "check_plain"]

_STEP = re.compile(r"^(.+)\[(\d+)\]$")
_TEMPLATE = re.compile(r"^(.+)\[t-1\]$")


def step_name(var: str, t: int) -> str:
    """The unrolled node name of `var` at step `t`: ``"A[5]"``."""
    return f"{var}[{t}]"


def split_step(name: Hashable, variables=None) -> tuple[str, int]:
    """``"A[5]" -> ("A", 5)``.

    Raises
    ------
    EvidenceError
        If `name` is not ``var[step]`` or (when `variables` is given) names an unknown variable.
    """
    m = _STEP.match(name) if isinstance(name, str) else None
    if m is None:
        raise EvidenceError(f"{name!r} is not a time-indexed name such as 'A[3]'")
    var, t = m.group(1), int(m.group(2))
    if variables is not None and var not in variables:
        raise EvidenceError(f"{name!r} names no variable of the DBN; variables: {sorted(variables)}")
    return var, t


def split_template(name: Hashable) -> tuple[Hashable, int]:
    """A template parent name to ``(variable, lag)``: ``"A" -> ("A", 0)``, ``"A[t-1]" -> ("A", -1)``."""
    m = _TEMPLATE.match(name) if isinstance(name, str) else None
    return (m.group(1), -1) if m else (name, 0)


def is_plain(var: Hashable) -> bool:
    """True when `var` can name a DBN variable: a string without brackets.

    Raises nothing; :class:`GraphError` is the caller's to raise.
    """
    return isinstance(var, str) and bool(var) and "[" not in var and "]" not in var


def check_plain(var: Hashable, where: str) -> None:
    """GraphError unless `var` is a plain variable name."""
    if not is_plain(var):
        raise GraphError(f"{where}: variable names are strings without brackets, got {var!r}")
