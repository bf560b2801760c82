"""Unrolling a tensor model into one node per sequence position (what a causal mask allows)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import GraphError
from ...graph.dag import DAG
from ...mechanisms.tensor import (
    Attention,
    AttentionWeights,
    Embedding,
    Input,
    Mask,
    MultiHeadAttention,
    PositionalEncoding,
    Reshape,
    Scores,
    Softmax,
    TensorOp,
    Transpose,
)
from ...model import CausalModel
from .interpret import natural_mechanism

__all__ = ["position_graph", "natural_parents"]


def _pname(node, pos: tuple) -> str:
    return f"{node}[{','.join(map(str, pos))}]" if pos else str(node)


def _positions(axes: tuple) -> list[tuple]:
    lens = [a for a in axes if a is not None]
    return [tuple(ix) for ix in np.ndindex(*lens)] if lens else [()]


def position_graph(model: CausalModel, lengths) -> DAG:
    """Unroll a tensor model into one node per sequence position per tensor.

    Node ``"Q[3]"`` is row 3 of ``Q`` (all heads and features of that
    position); attention weights and scores have two position axes,
    ``"P[3,1]"`` (query 3, key 1). Edges are the dependencies the ops have
    position by position: a position-wise op (linear maps, norms, the
    feed-forward net, embeddings) links equal positions; attention links query
    ``t`` to the keys and values it may attend to. Entries a causal mask
    removes are constants (no parents) and carry no edge, so d-separation in
    this graph shows what the mask allows: with ``causal=True`` the output at
    position ``i`` is d-separated from every token after ``i``. Padding masks
    depend on the data and are not unrolled (every key counts as visible).

    Parameters
    ----------
    model : CausalModel
        Made of the ops of :mod:`causalnet.mechanisms.tensor` (interventions
        and rewired edges allowed).
    lengths : int or mapping root -> int
        The sequence length of each root (one int for all).

    Returns
    -------
    DAG

    Raises
    ------
    GraphError
        If a root's length is missing or an op mixes positions in a way the
        unrolling does not support (a Reshape of a sequence axis).

    Examples
    --------
    >>> from causalnet.models.transformer import decoder
    >>> m = decoder(layers=1, d_model=4, heads=2, d_ff=8, vocab=5, seed=0)
    >>> g = position_graph(m, 3)
    >>> g.d_separated({"x[2]"}, {"P[1]"}), g.d_separated({"x[0]"}, {"P[1]"})
    (True, False)
    """
    mechs = model.mechanisms
    natural = {v: natural_mechanism(m) for v, m in mechs.items()}
    # axes over the natural structure (an intervened node keeps its shape)
    nat_parents = {v: natural_parents(mechs[v]) for v in mechs}
    order = DAG([(p, v) for v in mechs for p in nat_parents[v]], nodes=list(mechs)).topological_order()
    axes: dict = {}
    for v in order:
        axes[v] = _axes(model, v, natural[v], [axes[p] for p in nat_parents[v]], lengths)
    edges: list = []
    nodes: list = []
    const: dict = {v: set() for v in mechs}  # positions that are masked constants (-inf scores, zero weights)
    for v in order:
        mech = mechs[v]
        pos_list = _positions(axes[v])
        nodes.extend(_pname(v, pos) for pos in pos_list)
        if getattr(mech, "is_shift", None) is False:  # a constant do: no parents
            continue
        op = natural[v]
        parents = list(mech.parents) if not (hasattr(mech, "is_shift") and mech.is_shift) else list(
            _natural_parents_of(mech))
        _edges_of(v, op, parents, axes, const, pos_list, edges)
    return DAG(edges, nodes=nodes)


def natural_parents(mech) -> tuple:
    if getattr(mech, "is_shift", None) is not None and mech.natural is not None:
        return natural_parents(mech.natural)
    return tuple(mech.parents)


def _natural_parents_of(mech) -> tuple:
    return natural_parents(mech)


def _axes(model, v, op, paxes: list, lengths) -> tuple:  # noqa: C901 - one short branch per op kind, read as a table
    """Per-row axes of node v: an int length for a sequence axis, None for a feature axis."""
    shape = model.specs[v].shape
    if isinstance(op, Input):
        if not shape:
            return ()
        if isinstance(lengths, Mapping):
            if v not in lengths:
                raise GraphError(f"position_graph needs the sequence length of root {v!r} (lengths={dict(lengths)})")
            t = lengths[v]
        else:
            t = lengths
        if not isinstance(t, (int, np.integer)) or t < 1:
            raise GraphError(f"the length of {v!r} must be a positive int, got {t!r}")
        return (int(t), *([None] * (len(shape) - 1)))
    if isinstance(op, (AttentionWeights, Scores)):
        tq, tk = paxes[0][0], paxes[1][0]
        return (None, tq, tk) if op.heads is not None else (tq, tk)
    if isinstance(op, Attention):
        return (paxes[0][-2], None)
    if isinstance(op, MultiHeadAttention):
        return (paxes[0][0], None)
    if isinstance(op, Embedding):
        return (*paxes[0], None)
    if isinstance(op, PositionalEncoding) and not op.add:
        return (paxes[0][0], None)
    if isinstance(op, Transpose):
        return tuple(paxes[0][a] for a in op.axes)
    if isinstance(op, Reshape):
        if any(a is not None for a in paxes[0]):
            raise GraphError(f"position_graph: node {v!r} reshapes a sequence axis")
        return tuple([None] * len(shape))
    if isinstance(op, TensorOp) and paxes:
        return paxes[0]
    if not paxes:
        return tuple([None] * len(shape))
    raise GraphError(f"position_graph: node {v!r} ({type(op).__name__}) is not a tensor op")


def _seq_index(axes: tuple) -> list[int]:
    return [i for i, a in enumerate(axes) if a is not None]


def _edges_of(v, op, parents, axes, const, pos_list, edges) -> None:
    """Position-level edges into node v (and the masked constants of v)."""
    if isinstance(op, Input) or (isinstance(op, PositionalEncoding) and not op.add):
        return
    if isinstance(op, (AttentionWeights, Scores, Mask, Attention, MultiHeadAttention)) or (
            isinstance(op, Softmax) and axes[parents[0]][op.axis % len(axes[parents[0]])] is not None):
        _attention_edges(v, op, parents, axes, const, pos_list, edges)
        return
    for pos in pos_list:
        for p in parents:
            edges.append((_pname(p, pos if _seq_index(axes[p]) else ()), _pname(v, pos)))


def _visible(op, t: int, s: int) -> bool:
    return not (getattr(op, "causal", False) and s > t)


def _weights_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    """AttentionWeights / Scores: query t and every visible key (and its padding) into ``v[t, s]``."""
    q, k = parents[0], parents[1]
    pad = parents[2] if len(parents) > 2 else None
    tk = axes[k][0]
    for t, s in pos_list:
        if isinstance(op, Scores):
            edges += [(_pname(q, (t,)), _pname(v, (t, s))), (_pname(k, (s,)), _pname(v, (t, s)))]
            continue
        if not _visible(op, t, s):
            const[v].add((t, s))
            continue
        edges.append((_pname(q, (t,)), _pname(v, (t, s))))
        for s2 in range(tk):
            if _visible(op, t, s2):
                edges.append((_pname(k, (s2,)), _pname(v, (t, s))))
                if pad is not None:
                    edges.append((_pname(pad, (s2,)), _pname(v, (t, s))))


def _mask_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    src = parents[0]
    pad = parents[1] if len(parents) > 1 else None
    for t, s in pos_list:
        if not _visible(op, t, s):
            const[v].add((t, s))
            continue
        edges.append((_pname(src, (t, s)), _pname(v, (t, s))))
        if pad is not None:
            edges.append((_pname(pad, (s,)), _pname(v, (t, s))))


def _softmax_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    """Softmax over the key axis: every unmasked key of row t into ``v[t, s]``."""
    src = parents[0]
    tk = axes[src][_seq_index(axes[src])[-1]]
    for t, s in pos_list:
        if (t, s) in const[src]:
            const[v].add((t, s))
            continue
        for s2 in range(tk):
            if (t, s2) not in const[src]:
                edges.append((_pname(src, (t, s2)), _pname(v, (t, s))))


def _mix_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    """Attention ``A = P V``: the unmasked weights of row t and their values into ``v[t]``."""
    p, val = parents
    tk = axes[val][0]
    for (t,) in pos_list:
        for s in range(tk):
            if (t, s) in const[p]:
                continue
            edges += [(_pname(p, (t, s)), _pname(v, (t,))), (_pname(val, (s,)), _pname(v, (t,)))]


def _block_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    """MultiHeadAttention in one node: the query row and every visible memory row into ``v[t]``."""
    x = parents[0]
    mem = parents[1] if op.cross else x
    pad = parents[-1] if op.has_padding else None
    tk = axes[mem][0]
    for (t,) in pos_list:
        edges.append((_pname(x, (t,)), _pname(v, (t,))))
        for s in range(tk):
            if _visible(op, t, s):
                edges.append((_pname(mem, (s,)), _pname(v, (t,))))
                if pad is not None:
                    edges.append((_pname(pad, (s,)), _pname(v, (t,))))


#: op class -> how its positions depend on its parents' positions
_EDGES = ((AttentionWeights, _weights_edges), (Scores, _weights_edges), (Mask, _mask_edges),
          (Softmax, _softmax_edges), (Attention, _mix_edges), (MultiHeadAttention, _block_edges))


def _attention_edges(v, op, parents, axes, const, pos_list, edges) -> None:
    for cls, fn in _EDGES:
        if isinstance(op, cls):
            fn(v, op, parents, axes, const, pos_list, edges)
            return
