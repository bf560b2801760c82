"""Diagram options that draw a transformer legibly: short labels, named shapes, nested clusters."""

from __future__ import annotations

from collections.abc import Mapping

from ...graph.dag import DAG
from ...mechanisms.tensor import Input, fmt_shape
from ...model import CausalModel
from .interpret import natural_mechanism
from .unroll import natural_parents

__all__ = ["diagram_options"]


def _symbolic_shapes(model: CausalModel, dims: Mapping | None) -> dict:
    """node -> per-row shape with free sizes named (``T``, ``S``) through the ops' own shape rules."""
    mechs = model.mechanisms
    nat_parents = {v: natural_parents(mechs[v]) for v in mechs}
    order = DAG([(p, v) for v in mechs for p in nat_parents[v]], nodes=list(mechs)).topological_order()
    two_streams = "dec.x" in mechs or "dec.e" in mechs
    out: dict = {}
    for v in order:
        op = natural_mechanism(mechs[v])
        spec_shape = model.specs[v].shape
        if isinstance(op, Input):
            name = (dims or {}).get(v)
            if name is None:
                if two_streams:   # encoder-decoder: source S, target T
                    name = "T" if str(v).startswith("dec.") else "S"
                else:             # one stream T; a decoder's memory S
                    name = "S" if v in ("n", "mem_pad") else "T"
            shp = list(op.shape)
            if shp and shp[0] is None:
                shp[0] = name
            out[v] = tuple("?" if s is None else s for s in shp)
            continue
        try:
            sh = op.infer_shape(v, [("n", *out[p]) for p in nat_parents[v]])[1:]
            out[v] = tuple("?" if s is None else s for s in sh)
        except Exception:  # a non-tensor op or a shape rule that needs numbers: fall back on the spec
            out[v] = tuple("?" if s is None else s for s in spec_shape)
    return out


def diagram_options(model: CausalModel, *, shapes: bool = True, clusters: bool = True,
                    dims: Mapping | None = None) -> dict:
    """Options for :func:`causalnet.io.dot.to_dot` that draw a transformer legibly.

    Labels are the last part of each dotted name (``Q``, ``P``, ``N``) with
    the tensor shape under it, free sizes named (``T`` for the target or only
    sequence, ``S`` for the source); clusters nest layers, blocks and heads by
    their dotted names (``enc.0`` > ``enc.0.attn`` > ``enc.0.attn.head.1``).
    Intervened nodes are drawn with a double border by ``to_dot`` itself.
    The folded or expanded picture is the model's own: build it with
    ``view="expanded"`` for one cluster per head.

    Parameters
    ----------
    model : CausalModel
    shapes : bool
        Put shapes in labels.
    clusters : bool
        Nest nodes in boxes by dotted names.
    dims : mapping root -> str, optional
        Names of the free sequence size of roots (default ``T``/``S``).

    Returns
    -------
    dict
        ``{"labels": {...}, "clusters": "prefix" or None}``; pass as
        ``cn.io.dot.to_dot(model, **diagram_options(model))``.

    Examples
    --------
    >>> from causalnet.models.transformer import attention
    >>> m = attention(d_model=8, heads=2, seed=0)
    >>> diagram_options(m)["labels"]["attn.P"]
    'P\\n(n, 2, T, T)'
    """
    sym = _symbolic_shapes(model, dims) if shapes else {}
    labels = {}
    for v in model.nodes:
        short = str(v).rsplit(".", 1)[-1] if clusters and "@" not in str(v) else str(v)  # keep "p@c" copies whole
        labels[v] = f"{short}\n{fmt_shape(('n', *sym[v]))}" if shapes else short
    return {"labels": labels, "clusters": "prefix" if clusters else None}
