"""Discrete tables in and out of other formats: the checks BIF, XMLBIF and pgmpy share.

Every discrete interchange format (BIF, XMLBIF, pgmpy's ``TabularCPD``) carries the same
thing: per node a list of named states, a list of parents and a table of shape
``(*parent_cards, K)`` (after each reader's own reordering). This module holds what the
readers and writers of those formats agree on:

- :data:`DEFAULT_TOL` and :func:`check_tol`: files print probabilities to limited
  precision, so a row may sum to 1 only within a tolerance;
- :func:`fix_rows`: accept rows within the tolerance, rescale those off by more than the
  CPT tolerance (:data:`~causalnet.mechanisms.tabular.TOL`), keep the others bit for bit;
- :func:`check_table_size`: a reader that expands a short description (a BIF ``default``
  row) into a table checks the size against :mod:`causalnet.limits` *before* allocating;
- :func:`discrete_parts`: the ``(name, parents, states, table)`` view of a model that a
  writer serialises, refusing nodes the formats cannot hold;
- :func:`build_discrete_model`: the model from parsed parts.

Examples
--------
>>> import numpy as np
>>> from causalnet.io.tables import fix_rows
>>> fix_rows(np.array([[0.5, 0.5000001]]), 1e-6, None).sum(axis=-1).tolist()
[1.0]
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from .. import limits
from ..errors import GraphError, ModelError, ResourceError
from ..mechanisms.intervened import Intervened
from ..mechanisms.tabular import CPT, TABULAR_KEY, TOL, Categorical
from ..model import CausalModel

__all__ = ["DEFAULT_TOL", "check_tol", "fix_rows", "check_table_size", "discrete_parts", "build_discrete_model",
           "DiscretePart", "LATENT_PROPERTY", "is_latent_property", "is_float", "plural"]

#: Rows of a file's table must sum to 1 within this (bnlearn's own files are off by up to 3e-7).
DEFAULT_TOL = 1e-6

#: ``(name, parents, states, table)`` of one node, names and states as text, table ``(*parent_cards, K)``.
DiscretePart = tuple[str, tuple, list, np.ndarray]

#: A node property that marks it latent: ``latent = true`` (or yes, 1), in BIF and XMLBIF alike.
LATENT_PROPERTY = re.compile(r"\s*latent\s*=\s*(?:true|yes|1)\s*\Z", re.I)


def is_latent_property(text: str) -> bool:
    """Whether a property's text marks its node latent (see :data:`LATENT_PROPERTY`)."""
    return LATENT_PROPERTY.match(text) is not None


def is_float(token: str) -> bool:
    """Whether ``float(token)`` succeeds."""
    try:
        float(token)
    except ValueError:
        return False
    return True


def plural(n: int, word: str) -> str:
    """``"1 number"``, ``"2 numbers"``: counts in messages."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def check_tol(tol: Any) -> float:
    """`tol` as a float in ``[0, 1)``; anything else is a ModelError."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (0 <= tol < 1):
        raise ModelError(f"tol must be a number in [0, 1), got {tol!r}")
    return float(tol)


def _default_fail(row: tuple, msg: str) -> None:
    raise ModelError(f"row {row}: {msg}")


def fix_rows(table: np.ndarray, tol: float, fail_row: Callable[[tuple, str], None] | None) -> np.ndarray:
    """Check that every row of `table` (``(*parent_cards, K)``) sums to 1 within `tol`.

    Rows off by more than the CPT tolerance but within `tol` are rescaled;
    rows within the CPT tolerance are kept bit for bit. ``fail_row(index, message)``
    raises for a bad row (a plain ModelError when None).
    """
    fail_row = fail_row or _default_fail
    sums = table.sum(axis=-1)                                    # (*parent_cards,)
    off = np.abs(sums - 1.0)
    bad = ~(off <= tol)                                          # NaN sums are bad too
    if bad.any():
        row = tuple(int(i) for i in np.argwhere(bad)[0]) if table.ndim > 1 else ()
        fail_row(row, f"the probabilities sum to {float(sums[row])!r}, expected 1 "
                      f"(tolerance {tol:g}; pass a larger tol= to accept and rescale such rows)")
    fix = off > TOL
    if fix.any():
        table = table.copy()
        if table.ndim == 1:
            table /= sums
        else:
            table[fix] /= sums[fix][..., None]
    return table


def check_table_size(cards: Sequence[int], what: str) -> None:
    """Raise ResourceError before a table of shape `cards` is allocated past the limits.

    The entry count is checked against ``max_states`` and the float64 bytes against
    ``max_table_bytes``; the product is taken in floats, so it cannot overflow.
    """
    entries = math.prod(float(c) for c in cards)
    cap = limits.get("max_states")
    if entries > cap:
        raise ResourceError(f"{what} would have {entries:.3g} entries (shape {tuple(cards)}), over the limit "
                            f"max_states={cap}; raise it with causalnet.limits.set(max_states=...) or "
                            f"causalnet.limits.override(...)")
    limits.check_bytes(entries * 8, what=what, cause=f"shape {tuple(cards)}")


def discrete_parts(model: CausalModel, fmt: str) -> list[DiscretePart]:
    """``(name, parents, states, table)`` per node, for writers; names and states as text.

    Raises
    ------
    ModelError
        If `model` is not a CausalModel, a node is intervened on or is not a
        Categorical/CPT, or two names (or two states) are equal as text.
    """
    if not isinstance(model, CausalModel):
        raise ModelError(f"expected a CausalModel to convert to {fmt}, got {type(model).__name__}")
    out = []
    names: dict[str, Hashable] = {}
    for node, mech in model.mechanisms.items():
        if isinstance(mech, Intervened):
            raise ModelError(f"node {node!r} is intervened on (do); {fmt} has no interventions. "
                             f"Save the model with save_json, or write the model before the do")
        if not isinstance(mech, (Categorical, CPT)):
            raise ModelError(f"node {node!r} is a {type(mech).__name__}; {fmt} holds only discrete tables "
                             f"(Categorical and CPT nodes)")
        name = str(node)
        if name in names:
            raise ModelError(f"nodes {names[name]!r} and {node!r} have the same name {name!r} as text")
        names[name] = node
        states = [str(s) for s in mech.states]
        if len(set(states)) != len(states):
            raise ModelError(f"node {node!r}: states {list(mech.states)} are not distinct as text")
        out.append((name, tuple(str(p) for p in mech.parents), states, np.asarray(mech.table)))
    return out


def build_discrete_model(order: list, states: dict, parents: dict, tables: dict, latent: list,
                         source: str) -> CausalModel:
    """A model of Categorical (no parents) and CPT nodes in `order`; a cycle is a ModelError naming `source`."""
    mechs = {}
    for name in order:
        if parents[name]:
            mechs[name] = CPT(parents[name], tables[name], states=states[name])
        else:
            mechs[name] = Categorical(tables[name], states=states[name])
    try:
        model = CausalModel(mechs, latent=latent)
    except GraphError as e:
        raise ModelError(f"{source}: the parents form a cycle: {e}") from None
    model.cache[TABULAR_KEY] = True                     # every node a CPT: the first query need not scan them
    return model
