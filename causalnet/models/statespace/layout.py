"""The layout of an unrolled state-space model, recognised again under ``do``.

:func:`~.causal.to_model` records, for the model it builds, the parameters
and which node is which component at which step (:class:`Unrolled`), and
:func:`remember` files the record under each of the model's mechanism
objects. A model derived by ``do`` keeps the other nodes' mechanism objects,
so :func:`unrolled_of` finds the record again from any of them and checks
the derived model node by node: the Kalman engine (:mod:`.engine`) asks it.

Symbols: ``T`` steps, ``d`` state size, ``p`` observation size.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from .checks import Parameters

__all__ = ["Unrolled", "remember", "unrolled_of"]

_RECORDS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()    # id(mechanism) -> Unrolled


@dataclass(eq=False)
class Unrolled:
    """What the Kalman engine needs to know of an unrolled model: the parameters and the node layout."""

    params: Parameters
    T: int
    offsets: np.ndarray | None                      # (T-1, d) control offsets, or None
    states: list                                    # states[t] = [node of each component]
    outputs: list                                   # outputs[t] = [node of each component]
    mechanisms: dict = field(default_factory=dict)  # node -> the mechanism object of the unrolled model
    steps: dict = field(default_factory=dict)       # node -> ("Z" | "Y", t, component)


def remember(model, record: Unrolled) -> None:
    """File `record` under `model` and each of its mechanism objects (kept while the record lives)."""
    for mech in record.mechanisms.values():
        _RECORDS[id(mech)] = record
    model.cache["statespace"] = record


def unrolled_of(model) -> Unrolled | None:
    """The layout of an unrolled state-space model, possibly under ``do`` (None for any other model).

    The model qualifies when its nodes are exactly those of an unrolled
    model and each keeps that model's mechanism object or is intervened.
    Cheap: node names and object identities, once per model (kept in ``model.cache``).
    """
    if "statespace_of" in model.cache:
        return model.cache["statespace_of"]
    record = model.cache.get("statespace")
    if record is None:
        for node, mech in model.mechanisms.items():
            record = _RECORDS.get(id(mech))
            if record is not None and record.mechanisms.get(node) is mech:
                break
            record = None
    if record is not None:
        natural = {v: getattr(m, "natural", m) for v, m in model.mechanisms.items()}
        if natural.keys() != record.mechanisms.keys() or any(natural[v] is not m for v, m in record.mechanisms.items()):
            record = None
    model.cache["statespace_of"] = record
    return record

