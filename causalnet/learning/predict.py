"""Queries from a DataFrame: one posterior per row, batched by pattern of missing cells.

A row's observed cells are its evidence; a missing cell (NaN/None/pd.NA) means
that node is unobserved in that row. Rows that share the same observed columns
are answered by one batched query of the exact engine, so a table of n rows
costs one engine call per distinct pattern, not one per row.

:func:`predict_proba` gives ``P(node | row)`` per row; :func:`predict` fills
the missing cells (or whole named columns) with the most probable state of each
node's posterior marginal.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..errors import ModelError
from .data import as_table

__all__ = ["predict_proba", "predict"]


def _evidence_table(model: Any, df, exclude=()):
    cols = [c for c in df.columns if c in model.nodes and c not in exclude]
    unknown = [c for c in df.columns if c not in model.nodes]
    if unknown:
        raise ModelError(f"column {unknown[0]!r} is not a node of the model; nodes: {list(model.nodes)}")
    states = {c: model.states(c) for c in cols if model.spec(c).is_discrete}
    return as_table(df[cols], states=states), cols


def _patterns(table, cols):
    miss = np.column_stack([table.column(c).missing for c in cols]) if cols else np.zeros((table.n, 0), bool)
    patterns, inverse = np.unique(miss, axis=0, return_inverse=True)
    return patterns, inverse.reshape(-1)


def predict_proba(model: Any, df, node: Hashable) -> np.ndarray:
    """``(n, K)``: the posterior of discrete `node` given each row's observed cells (the node's own cell ignored).

    Raises
    ------
    ModelError
        If `node` is not a discrete node, or a column is not a node.
    EvidenceError
        If a row has probability zero under the model.
    """
    if node not in model.nodes or not model.spec(node).is_discrete:
        raise ModelError(f"predict_proba needs a discrete node of the model, got {node!r}")
    table, cols = _evidence_table(model, df, exclude=(node,))
    out = np.empty((table.n, len(model.states(node))))
    patterns, inverse = _patterns(table, cols)
    for p, pattern in enumerate(patterns):
        rows = np.flatnonzero(inverse == p)
        ev = {}
        for c, m in zip(cols, pattern):
            if not m:
                col = table.column(c)
                ev[c] = col.codes[rows] if col.is_discrete else col.values[rows]
        if not ev:
            out[rows] = model.query(node).probs
            continue
        out[rows] = model.query(node, evidence={c: _named(model, c, v) for c, v in ev.items()}).probs
    return out


def _named(model: Any, node, values):
    if model.spec(node).is_discrete:
        return np.asarray(model.states(node), dtype=object)[values]
    return values


def predict(model: Any, df, columns: Sequence[Hashable] | None = None):
    """A copy of `df` with missing cells of discrete nodes (or the whole `columns`) filled by MAP states.

    Each filled cell is the most probable state of that node's posterior given
    the row's observed cells (marginal MAP per node, not the joint MPE).
    """
    import pandas as pd

    out = df.copy()
    targets = [c for c in model.nodes if model.spec(c).is_discrete] if columns is None else list(columns)
    for c in targets:
        if c not in model.nodes:
            raise ModelError(f"predict: {c!r} is not a node of the model; nodes: {list(model.nodes)}")
        fill = np.ones(len(df), dtype=bool) if (columns is not None or c not in df.columns) else \
            np.asarray(pd.isna(df[c]), dtype=bool)
        if not fill.any():
            continue
        probs = predict_proba(model, df.loc[fill], c)
        states = list(model.states(c))
        col = df[c] if c in df.columns else pd.Series([None] * len(df), index=df.index)
        values = np.array(col.astype(object), dtype=object)
        values[fill] = np.asarray(states, dtype=object)[probs.argmax(axis=1)]
        out[c] = pd.Categorical(values, categories=states)
    return out
