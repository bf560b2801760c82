"""Interpretation by intervention: heads as sites, ablation, interchange, path patching, mediation.

A :class:`Site` is a node or a part of each row of it (one head). Ablation is
a ``do`` with a shift intervention that overwrites the site; an interchange
intervention patches sites with their values from another run; path patching
gives one edge its own copy of the parent (:func:`rewire`); :func:`mediation`
computes total, natural direct and natural indirect effects.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ...arguments import check_int
from ...errors import GraphError, ModelError, ShapeError
from ...mechanisms.base import Mechanism, Spec
from ...mechanisms.tensor import Attention, AttentionWeights, Identity, fmt_shape
from ...model import CausalModel, Trace

__all__ = ["Site", "sites", "head", "ablate", "interchange", "rewire", "path_patch", "mediation", "Effects",
           "natural_mechanism", "Rewired"]


@dataclass(frozen=True)
class Site:
    """A node, or a part of each row of it (e.g. one head).

    Attributes
    ----------
    node : hashable
    index : tuple
        Indexes each row (the batch axis is not included); ``()`` is the whole node.
    label : str
        For printing, e.g. ``"enc.0.attn.A[head 1]"``.
    kind, layer, head, position, shape
        What :func:`sites` says about the site: ``kind`` is ``"head"`` or
        ``"residual"``, ``shape`` the per-row shape of the part (None for a
        free size such as the sequence length). Not part of equality.
    """

    node: Hashable
    index: tuple = ()
    label: str = ""
    #: discovery metadata (from :func:`sites`); not part of the site's identity
    kind: str = field(default="", compare=False)
    layer: int | None = field(default=None, compare=False)
    head: int | None = field(default=None, compare=False)
    position: int | None = field(default=None, compare=False)
    shape: tuple = field(default=(), compare=False)

    def __str__(self) -> str:
        return self.label or str(self.node)

    def __hash__(self) -> int:  # slices are not hashable before Python 3.12
        key = tuple((i.start, i.stop, i.step) if isinstance(i, slice) else i for i in self.index)
        return hash((self.node, key))

    def get(self, values: np.ndarray) -> np.ndarray:
        """The site's part of a batch of node values ``(n, ...)``."""
        return values[(slice(None), *self.index)]


def _site(model: CausalModel, s) -> Site:
    if isinstance(s, Site):
        model.check_node(s.node, "node in site")
        return s
    model.check_node(s, "node")
    return Site(s)


def _heads_of(model: CausalModel, node) -> int | None:
    mech = model.mechanisms[node]
    h = getattr(natural_mechanism(mech), "heads", None)
    if h:
        return h
    for c in model.dag.children(node):
        h = getattr(natural_mechanism(model.mechanisms[c]), "heads", None)
        if h:
            return h
    return None


def head(model: CausalModel, node: Hashable, i: int) -> Site:
    """The part of `node` that belongs to head `i` (folded view).

    For attention weights ``(n, h, T, S)`` that is ``[:, i]``; for ``Q``,
    ``K``, ``V`` and ``A`` ``(n, T, D)`` it is the columns
    ``i*D/h : (i+1)*D/h``.

    Raises
    ------
    ModelError
        If the node has no heads or `i` is out of range.
    """
    model.check_node(node)
    h = _heads_of(model, node)
    if h is None:
        raise ModelError(f"node {node!r} has no heads (its mechanism and children declare none)")
    if not 0 <= i < h:
        raise ModelError(f"node {node!r} has {h} heads; head {i} is out of range")
    shape = model.spec(node).shape
    if len(shape) == 3 and shape[0] == h:
        return Site(node, (i,), f"{node}[head {i}]")
    if len(shape) == 2 and shape[1] is not None:
        dh = shape[1] // h
        return Site(node, (slice(None), slice(i * dh, (i + 1) * dh)), f"{node}[head {i}]")
    raise ModelError(f"node {node!r} of shape {fmt_shape(('n', *shape))} has no head axis")


def natural_mechanism(mech: Mechanism) -> Mechanism:
    while True:
        if hasattr(mech, "natural") and getattr(mech, "is_shift", None) is not None:
            if mech.natural is None:
                return mech
            mech = mech.natural
        elif isinstance(mech, Rewired):
            mech = mech.inner
        else:
            return mech


def _run_patched(model: CausalModel, inputs: Mapping, patches: Mapping[Site, np.ndarray],
                 keep: Iterable | None = None) -> Trace:
    """Forward with whole nodes clamped and parts of nodes overwritten."""
    whole = {s.node: v for s, v in patches.items() if not s.index}
    parts: dict = {}
    for s, v in patches.items():
        if s.index:
            if s.node in whole:
                raise ModelError(f"site {s} overlaps a patch of the whole node {s.node!r}")
            parts.setdefault(s.node, []).append((s.index, v))
    clash = set(whole) & set(inputs)
    if clash:
        raise ModelError(f"nodes {sorted(map(str, clash))} are both inputs and patched")
    m = model
    if parts:
        m = model.do({node: _setter(items) for node, items in parts.items()})
    return m.forward({**inputs, **whole}, keep=keep)


def ablate(model: CausalModel, sites, *, how: str = "zero", reference: Mapping | None = None) -> CausalModel:
    """Zero or mean ablation of nodes or parts of nodes (such as heads): a new model.

    Parameters
    ----------
    model : CausalModel
    sites : node, Site, or iterable of them
    how : {"zero", "mean"}
        ``"zero"`` sets each site to 0; ``"mean"`` to its average over the
        rows of a run on `reference` (per position and feature), the same for
        every row.
    reference : mapping node -> array, optional
        Inputs of the reference run (``how="mean"``).

    Returns
    -------
    CausalModel
        ``model.do(...)`` with a shift intervention per node, so the rest of
        each node (other heads) keeps its natural value.

    Examples
    --------
    >>> import numpy as np
    >>> from causalnet.models.transformer import attention
    >>> m = attention(d_model=4, heads=2, seed=0)
    >>> m0 = ablate(m, head(m, "attn.P", 1))
    >>> p = m0.forward({"e": np.ones((1, 3, 4))})["attn.P"]
    >>> float(abs(p[:, 1]).max()), float(p[:, 0].sum())
    (0.0, 3.0)
    """
    if how not in ("zero", "mean"):
        raise ModelError(f"how must be 'zero' or 'mean', got {how!r}")
    sites = _sites(model, sites)
    if how == "mean":
        if reference is None:
            raise ModelError("mean ablation needs reference= inputs")
        ref = model.forward(reference, keep={s.node for s in sites})
        values = {s: s.get(ref[s.node]).mean(axis=0) for s in sites}
    else:
        values = {s: 0.0 for s in sites}
    per_node: dict = {}
    for s, v in values.items():
        per_node.setdefault(s.node, []).append((s.index, v))
    return model.do({node: _setter(items) for node, items in per_node.items()})


def _setter(items):
    """A shift intervention writing `items` (per-row index, value) into the natural value."""
    def f(natural):
        out = np.array(natural, copy=True)
        for idx, v in items:
            out[(slice(None), *idx)] = v
        return out
    return f


def interchange(model: CausalModel, base: Mapping, source: Mapping, sites, *, keep=None) -> Trace:
    """An interchange intervention: run on `base` with `sites` taken from a run on `source`.

    Parameters
    ----------
    model : CausalModel
    base, source : mapping node -> array
        Inputs of the two runs (same batch size; row ``i`` of the source
        feeds row ``i`` of the base).
    sites : node, Site, or iterable of them
        What to transplant (whole nodes, or parts such as :func:`head`).
    keep : iterable of nodes, optional
        As in ``forward``.

    Returns
    -------
    Trace
        The base run under the intervention.

    Examples
    --------
    >>> import numpy as np
    >>> from causalnet.models.transformer import encoder_layer
    >>> m = encoder_layer(d_model=4, heads=2, d_ff=8, seed=0)
    >>> x, x2 = np.random.default_rng(1).normal(size=(2, 1, 3, 4))
    >>> tr = interchange(m, {"e": x}, {"e": x2}, "enc.0.attn.A")
    >>> bool(np.allclose(tr["enc.0.attn.A"], m.forward({"e": x2})["enc.0.attn.A"]))
    True
    """
    sites = _sites(model, sites)
    src = model.forward(source, keep={s.node for s in sites})
    return _run_patched(model, base, {s: s.get(src[s.node]) for s in sites}, keep=keep)


def _sites(model, sites) -> list[Site]:
    if isinstance(sites, (Site, str)) or not isinstance(sites, Iterable):
        sites = [sites]
    return [_site(model, s) for s in sites]


class Rewired(Mechanism):
    """A mechanism whose parents are renamed (path patching): reads `mapping[p]` where it read `p`."""

    def __init__(self, inner: Mechanism, mapping: Mapping) -> None:
        self.inner = inner
        self.mapping = dict(mapping)
        self.back = {v: k for k, v in self.mapping.items()}
        super().__init__([self.mapping.get(p, p) for p in inner.parents])
        self.kind = inner.kind
        self.deterministic = inner.deterministic

    def spec(self, node, parent_specs) -> Spec:
        return self.inner.spec(node, {self.back.get(p, p): s for p, s in parent_specs.items()})

    def sample_noise(self, n, rng, spec):
        return self.inner.sample_noise(n, rng, spec)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        return self.inner.evaluate(node, {self.back.get(p, p): v for p, v in parents.items()}, noise, spec, n=n)

    def __getattr__(self, name):  # heads, causal, ... of the wrapped op
        if name.startswith("__") or name in ("inner", "mapping", "back"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"Rewired({self.inner!r}, {self.mapping})"


def _copy_name(parent, child) -> str:
    return f"{parent}@{child}"


def rewire(model: CausalModel, edges) -> tuple[CausalModel, dict]:
    """Give each edge ``parent -> child`` its own copy of the parent's value.

    The copy node ``"{parent}@{child}"`` (an :class:`Identity` of the parent)
    is what the child reads along that edge, so a ``do`` on the copy changes
    what the parent sends along that one edge only. Without an intervention
    the rewired model computes exactly what the original does.

    Parameters
    ----------
    model : CausalModel
    edges : (parent, child) or iterable of them

    Returns
    -------
    model : CausalModel
    copies : dict
        (parent, child) -> copy node name.

    Raises
    ------
    GraphError
        If an edge is not in the model's DAG.
    """
    if isinstance(edges, tuple) and len(edges) == 2 and not isinstance(edges[0], tuple):
        edges = [edges]
    edges = [tuple(e) for e in edges]
    mechs = dict(model.mechanisms)
    copies: dict = {}
    per_child: dict = {}
    for p, c in edges:
        model.check_node(p, "node in edge")
        model.check_node(c, "node in edge")
        if not model.dag.has_edge(p, c):
            raise GraphError(f"no edge {p!r} -> {c!r} in the model; {c!r} has parents {list(model.dag.parents(c))}")
        name = _copy_name(p, c)
        if name in mechs:
            raise ModelError(f"node name {name!r} for the copy of edge {p!r} -> {c!r} is taken")
        mechs[name] = Identity(p)
        copies[(p, c)] = name
        per_child.setdefault(c, {})[p] = name
    for c, mapping in per_child.items():
        mechs[c] = Rewired(model.mechanisms[c], mapping)
    return CausalModel(mechs, latent=model.latent), copies


def path_patch(model: CausalModel, base: Mapping, source: Mapping, edges, *, keep=None) -> Trace:
    """Run on `base` with the value sent along each edge taken from a run on `source`.

    Each edge ``(parent, child)`` carries the parent's value from the source
    run to that child only; the parent's other children read its base value.

    Returns
    -------
    Trace
        Of the rewired model (see :func:`rewire`), including the copy nodes.
    """
    rewired, copies = rewire(model, edges)
    src = model.forward(source, keep={p for p, _ in copies})
    return rewired.forward({**base, **{c: src[p] for (p, _), c in copies.items()}}, keep=keep)


@dataclass(frozen=True)
class Effects:
    """Total, natural direct and natural indirect effects through one mediator, per row.

    Attributes
    ----------
    total, direct, indirect : ndarray of shape (n,)
        ``TE = y(x') - y(x)``, ``NDE = y(x', M(x)) - y(x)``, ``NIE = y(x, M(x')) - y(x)``
        (``scale="difference"``), or each ratio to ``y(x)`` minus 1
        (``scale="ratio"``, as in Vig et al. 2020).
    scale : str
    """

    total: np.ndarray
    direct: np.ndarray
    indirect: np.ndarray
    scale: str

    def mean(self) -> dict:
        """Averages over rows: ``{"total": ..., "direct": ..., "indirect": ...}``."""
        return {"total": float(np.mean(self.total)), "direct": float(np.mean(self.direct)),
                "indirect": float(np.mean(self.indirect))}


def mediation(model: CausalModel, base: Mapping, treated: Mapping, mediators, outcome, *,
              scale: str = "difference") -> dict:
    """Causal mediation analysis of an input change through internal sites.

    The treatment changes the inputs from `base` (``x``) to `treated`
    (``x'``); for each mediator ``M`` (a node or a :class:`Site` such as a head)

    * total effect ``TE = y(x') - y(x)``,
    * natural direct effect ``NDE = y(x', M(x)) - y(x)``: treated inputs, the
      mediator held at its base value,
    * natural indirect effect ``NIE = y(x, M(x')) - y(x)``: base inputs, the
      mediator set to its treated value.

    When the outcome is additive in the mediator's contribution (a residual
    stream read linearly) ``TE = NDE + NIE`` exactly.

    Parameters
    ----------
    model : CausalModel
    base, treated : mapping node -> array
        Inputs of the two runs, same batch size.
    mediators : node, Site, list of them, or mapping label -> (node, Site, or list for a joint mediator)
    outcome : node or callable
        A node whose rows are scalars, or ``f(trace) -> (n,)`` array.
    scale : {"difference", "ratio"}

    Returns
    -------
    dict
        label -> :class:`Effects` (labels are the sites' names when
        `mediators` is not a mapping).

    References
    ----------
    .. [1] Pearl, "Direct and indirect effects", UAI 2001.
    .. [2] Vig et al., NeurIPS 2020.
    """
    if scale not in ("difference", "ratio"):
        raise ModelError(f"scale must be 'difference' or 'ratio', got {scale!r}")
    if isinstance(mediators, Mapping):
        groups = {str(k): _sites(model, v) for k, v in mediators.items()}
    else:
        groups = {str(s): [s] for s in _sites(model, mediators)}
    if callable(outcome):
        f, keep = outcome, None
    else:
        model.check_node(outcome, "outcome node")
        if model.spec(outcome).shape != ():
            raise ShapeError(f"outcome node {outcome!r} holds {fmt_shape(('n', *model.spec(outcome).shape))} per batch; "
                             f"pass a callable trace -> (n,) to reduce it")
        f, keep = (lambda tr: tr[outcome]), {outcome}
    nodes = {s.node for ss in groups.values() for s in ss}
    keep_m = None if keep is None else keep | nodes

    def y(tr):
        v = np.asarray(f(tr), dtype=np.float64)
        if v.ndim != 1:
            raise ShapeError(f"the outcome must be (n,) per run, got {v.shape}")
        return v

    tb = model.forward(base, keep=keep_m)
    tt = model.forward(treated, keep=keep_m)
    y0, y1 = y(tb), y(tt)

    def contrast(v):
        return v - y0 if scale == "difference" else v / y0 - 1.0

    out = {}
    for label, ss in groups.items():
        direct = y(_run_patched(model, treated, {s: s.get(tb[s.node]) for s in ss}, keep=keep))
        indirect = y(_run_patched(model, base, {s: s.get(tt[s.node]) for s in ss}, keep=keep))
        out[label] = Effects(contrast(y1), contrast(direct), contrast(indirect), scale)
    return out


_LAYER = re.compile(r"^(?:enc|dec)\.(\d+)\.")
#: residual-stream nodes of a layer (post-LN names and pre-LN sums) and of a stack
_RESIDUAL = ("N", "n", "J", "j", "Y")


def _layer_of(node) -> int | None:
    m = _LAYER.match(str(node))
    return int(m.group(1)) if m else None


def sites(model: CausalModel, length: int | None = None) -> list[Site]:
    """Every patchable site of a transformer: each head of each attention block, and the residual stream.

    Parameters
    ----------
    model : CausalModel
        Built by this package's builders (folded or expanded view).
    length : int, optional
        Also list one residual site per position ``0 .. length-1``.

    Returns
    -------
    list of Site
        Head sites (``kind="head"``): the attention weights ``P`` of head
        ``i`` (per-row shape ``(T, S)``) and its slice of the mixed values
        ``A`` (``(T, d_head)``), which is the usual place to ablate a head.
        Residual sites (``kind="residual"``): the embedding ``e`` and the
        residual sums of each layer (``N``/``n`` in an encoder, ``J``/``j``/``Y``
        in a decoder), whole (``(T, d)``) or, with `length`, per position
        (``(d,)``, ``index=(t,)``). Each site carries ``layer`` (None for the
        embedding and the stack output), ``head`` and ``position``. Any site
        can be passed to :func:`ablate`, :func:`interchange` or
        ``generate(do={site: value})``.

    Examples
    --------
    >>> from causalnet.models.transformer import decoder
    >>> m = decoder(layers=1, d_model=4, heads=2, d_ff=8, vocab=5, seed=0)
    >>> [str(s) for s in sites(m) if s.kind == "head"]
    ['dec.0.self.P[head 0]', 'dec.0.self.A[head 0]', 'dec.0.self.P[head 1]', 'dec.0.self.A[head 1]']
    >>> s = sites(m, length=3)[-1]
    >>> s.label, s.position, s.shape
    ('Y[pos 2]', 2, (4,))
    """
    if length is not None:
        check_int(length, "length", low=1)
    out: list[Site] = []
    for v in model.dag.topological_order():
        mech = natural_mechanism(model.mechanisms[v])
        shape = model.spec(v).shape
        layer = _layer_of(v)
        if isinstance(mech, AttentionWeights):
            out.extend(_head_sites(model, v, mech, layer))
        elif _is_residual(v, shape):
            if length is None:
                out.append(Site(v, (), str(v), kind="residual", layer=layer, shape=shape))
            else:
                out.extend(Site(v, (t,), f"{v}[pos {t}]", kind="residual", layer=layer, position=t, shape=shape[1:])
                           for t in range(int(length)))
    return out


def _is_residual(v, shape) -> bool:
    name = str(v)
    last = name.rsplit(".", 1)[-1]
    return len(shape) == 2 and shape[0] is None and (name in ("e", "dec.e", "n", "Y") or (
        _layer_of(v) is not None and name.count(".") == 2 and last in _RESIDUAL))


def _head_sites(model: CausalModel, p_node, mech, layer) -> list[Site]:
    """Head sites of one attention-weights node: P per head and its slice of the mixing node A."""
    mix = [c for c in model.dag.children(p_node)
           if isinstance(natural_mechanism(model.mechanisms[c]), Attention)]
    found = re.search(r"\.head\.(\d+)\.", str(p_node))
    if mech.heads is None:  # expanded view: one node per head
        i = int(found.group(1)) if found else None
        res = [Site(p_node, (), str(p_node), kind="head", layer=layer, head=i, shape=model.spec(p_node).shape)]
        res += [Site(a, (), str(a), kind="head", layer=layer, head=i, shape=model.spec(a).shape) for a in mix]
        return res
    res = []
    for i in range(mech.heads):
        hs = head(model, p_node, i)
        res.append(Site(hs.node, hs.index, hs.label, kind="head", layer=layer, head=i,
                        shape=model.spec(p_node).shape[1:]))
        for a in mix:
            ha = head(model, a, i)
            d = model.spec(a).shape[1]
            res.append(Site(ha.node, ha.index, ha.label, kind="head", layer=layer, head=i,
                            shape=(None, d // mech.heads)))
    return res
