"""Exact marginals of linear-Cauchy subgraphs: affine forms over independent sources.

Every :class:`~causalnet.mechanisms.cauchy.CauchyLinear` node with noise is a
*source*: its noise ``eps ~ Cauchy(0, 1)`` is independent per component and
of everything else. A node of a linear-Cauchy subgraph is then an affine form
``x = a + B · eps`` over the sources in its ancestry, and each component is
exactly ``Cauchy(a, Σ_j |B_j|)`` — the stability of the Cauchy law under
linear maps of *independent* variables. Summing the scales of the parents
instead (the independent-sum formula) is wrong as soon as two parents share a
source: ``X = U + V``, ``Y = U − V`` give ``X + Y = 2U`` with scale ``2γ_U``,
not ``2γ_U + 2γ_V``.

``B`` is never stored as a dense ``(n, size, sources)`` matrix. Because every
weight acts on the *last* axis of a value, the coefficient of source node
``g`` (per-row shape ``s_g``) in a node is the product ``M[out, in] · d[lead, in]``:
``d`` (shape ``(n, *s_g)``) is the source's own noise scale and ``M`` a small
operator on its trailing ``r`` axes (a scalar when ``r = 0``). The scale of a
component is then ``Σ_in |M[out, in]| · |d[lead, in]|``, one ``tensordot`` per
source — and sources that reach a node through the same operator are summed
first, so the CausalQwen head's ``scale_S = |W_cls| · (scale_U + |b_noise|)``
costs one matrix product. That formula is the special case of independent
components; the engine gives it whenever it applies and the exact answer
otherwise.

An affine intervention on a Cauchy node (:func:`causalnet.shift`,
:func:`causalnet.affine`: ``x -> s·x + b``) keeps it an affine form
(``s·a + b + s·B · eps``), so it stays exact; any other callable does not.

Non-Cauchy nodes may feed the subgraph (a location, a scale, a linear parent)
when their values are known: observed (evidence) or deterministic functions
of known values and constant interventions. Evidence on a Cauchy node, or on
anything downstream of Cauchy noise, has no closed form here: the engine
raises :class:`NoClosedForm` and the caller falls back to sampling.

Symbols: ``n`` batch, ``r`` contracted trailing source axes.

Examples
--------
>>> from causalnet.model import CausalModel
>>> from causalnet.mechanisms.cauchy import CauchyLinear
>>> m = CausalModel({
...     "U": CauchyLinear(scale=1.0), "V": CauchyLinear(scale=3.0),
...     "X": CauchyLinear(["U", "V"], [1.0, 1.0], scale=0.0),
...     "Y": CauchyLinear(["U", "V"], [1.0, -1.0], scale=0.0),
...     "Z": CauchyLinear(["X", "Y"], [1.0, 1.0], loc=5.0, scale=0.0),
... })
>>> d = cauchy_marginals(m, ["X", "Z"])
>>> float(d["X"].scale), float(d["Z"].loc), float(d["Z"].scale)
(4.0, 5.0, 2.0)
>>> round(float(d["Z"].prob_greater(5.0)), 3)
0.5
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

import numpy as np

from ..distributions import Cauchy, CauchyMarginals
from ..errors import EvidenceError, ModelError, ShapeError
from ..mechanisms.cauchy import CauchyLinear
from ..mechanisms.intervened import Intervened
from .engine import Engine, NoExactAnswer

__all__ = ["Cauchy", "CauchyMarginals", "NoClosedForm", "AffineCauchy", "affine_forms", "cauchy_marginals",
           "is_cauchy_node", "CauchyEngine", "METHOD"]

METHOD = "cauchy-affine (exact)"


class NoClosedForm(NoExactAnswer):
    """The Cauchy engine cannot answer this query exactly (e.g. evidence on a Cauchy node).

    The dispatcher catches it and falls back to sampling, stating so.
    """


# -- affine forms ------------------------------------------------------------------------------


class _Term:
    """Coefficient of one source in one node: ``B[lead, out; lead, in] = M[out, in] · d[lead, in]``.

    ``M`` has shape ``(*out, *in)`` where ``in`` is the last ``r`` axes of the
    source's shape; ``out_ndim = M.ndim - r``.
    """

    __slots__ = ("M", "r", "out_ndim", "absM")

    def __init__(self, M: np.ndarray, r: int, out_ndim: int, absM: np.ndarray | None = None) -> None:
        self.M = M
        self.r = r
        self.out_ndim = out_ndim
        self.absM = absM                 # |M| when known beforehand (a model's weight: cached on the model)

    def scaled(self, c: float) -> _Term:
        return self if c == 1 else _Term(c * self.M, self.r, self.out_ndim)

    def apply(self, w: np.ndarray, node_shape: tuple) -> _Term:
        """The term after weight `w` acts on the node's last axis."""
        if w.ndim == 0:
            return self.scaled(float(w))
        M, r, o = self.M, self.r, self.out_ndim
        if o >= 1:                                   # the last axis is an output axis of M: contract it
            if w.ndim == 2:
                if M.ndim == 0:
                    return _Term(w * M if M != 1 else w, r, o)
                M2 = np.moveaxis(np.tensordot(w, M, axes=([1], [o - 1])), 0, o - 1)  # (*out[:-1], k, *in)
                return _Term(M2, r, o)
            return _Term(np.tensordot(w, M, axes=([0], [o - 1])), r, o - 1)         # (*out[:-1], *in)
        # the last axis of the node is a lead axis of the source: it becomes an input axis
        if M.ndim == 0:
            if w.ndim == 2:
                return _Term(w if M == 1 else w * M, r + 1, 1)                       # (k, j)
            return _Term(w if M == 1 else w * M, r + 1, 0)                           # (j,)
        if w.ndim == 2:
            M2 = w.reshape(w.shape + (1,) * M.ndim) * M                              # (k, j, *in)
            return _Term(M2, r + 1, 1)
        return _Term(w.reshape(w.shape + (1,) * M.ndim) * M, r + 1, 0)               # (j, *in)

    def lifted(self, src_shape: tuple) -> _Term:
        """The same coefficients with one more contracted axis (a lead axis turned into in/out)."""
        lead = src_shape[:len(src_shape) - self.r]
        t = lead[-1]
        M, o = self.M, self.out_ndim
        out_shape, in_shape = M.shape[:o], M.shape[o:]
        eye = np.eye(t).reshape((t,) + (1,) * o + (t,) + (1,) * self.r)
        return _Term(eye * M.reshape((1,) + out_shape + (1,) + in_shape), self.r + 1, o + 1)  # (t, *out, t, *in)

    def plus(self, other: _Term, src_shape: tuple) -> _Term:
        a, b = self, other
        while a.r < b.r:
            a = a.lifted(src_shape)
        while b.r < a.r:
            b = b.lifted(src_shape)
        if a.r == 0:
            return _Term(np.asarray(a.M + b.M), 0, 0)
        if a.M.ndim == 0 or b.M.ndim == 0:   # a scalar with r > 0 cannot happen; guard anyway
            raise ModelError("internal: malformed Cauchy affine term")
        return _Term(a.M + b.M, a.r, a.out_ndim)


class AffineCauchy:
    """A node (or a linear combination of nodes) as ``a + B · eps`` over independent sources.

    Forms support ``+``, ``-`` and multiplication by a scalar, so a linear
    functional of several nodes that share sources — a difference of two
    scores, say — has an exact Cauchy law too (:meth:`marginal`).

    Attributes
    ----------
    loc : ndarray of shape (n, *shape)
        The location ``a`` (batch axis always present; ``batched`` says
        whether it is a real batch or a single query).
    shape : tuple
        Per-row shape.
    batched : bool
    """

    def __init__(self, loc: np.ndarray, terms: dict, sources: dict, shape: tuple, batched: bool) -> None:
        self.loc = loc
        self._terms = terms
        self._sources = sources
        self.shape = tuple(shape)
        self.batched = batched

    @property
    def sources(self) -> tuple:
        """The source nodes this form depends on."""
        return tuple(self._terms)

    @property
    def terms(self) -> dict:
        """source node -> its coefficient term (read-only use)."""
        return self._terms

    @property
    def source_scales(self) -> dict:
        """source node -> ``(noise scale d, source shape)``."""
        return self._sources

    def scale_array(self) -> np.ndarray:
        """``Σ_sources |B|`` per component, shape (n, *shape) — the Cauchy scale."""
        n = self.loc.shape[0]
        full = (n, *self.shape)
        total = None

        def add(total, c):
            if total is None:
                if isinstance(c, np.ndarray) and c.shape == full and c.flags.owndata and c.dtype == np.float64:
                    return c
                return np.array(np.broadcast_to(c, full), dtype=np.float64)
            total += c
            return total

        groups: dict = {}
        pointwise = []                                        # added last, in place, to a product's fresh array
        for g, t in self._terms.items():
            d, sg = self._sources[g]
            if t.r == 0:
                pointwise.append(np.abs(t.M) * np.abs(d))
                continue
            key = (id(t.M), t.r, sg)
            if key in groups:
                groups[key][1] = groups[key][1] + np.abs(d)
            else:
                groups[key] = [t, np.abs(d)]
        for (_, r, sg), (t, acc) in groups.items():
            acc = np.ascontiguousarray(np.broadcast_to(acc, (n, *sg)))   # BLAS, not numpy's loop on 0 strides
            absM = np.abs(t.M) if t.absM is None else t.absM
            if r == 1 and absM.ndim == 2:
                c = acc @ absM.T                              # (n, *lead, c) -> (n, *lead, k)
            elif r == 1 and absM.ndim == 1:
                c = acc @ absM                                # (n, *lead, c) -> (n, *lead)
            else:
                c = np.tensordot(acc, absM, axes=(list(range(acc.ndim - r, acc.ndim)),
                                                  list(range(t.out_ndim, absM.ndim))))  # (n, *lead, *out)
            total = add(total, c)
        for c in pointwise:
            total = add(total, c)
        return np.zeros(full) if total is None else total

    def marginal(self, *, method: str = METHOD, node: Hashable | None = None) -> Cauchy:
        """The exact componentwise law as a :class:`Cauchy` (batch axis dropped if not batched).

        Raises
        ------
        NoClosedForm
            If some component has zero scale (a point mass, not a Cauchy law).
        """
        loc, scale = self.loc, self.scale_array()
        if not self.batched:
            loc, scale = loc[0], scale[0]
        if scale.size and not scale.min() > 0:
            what = f"node {node!r}" if node is not None else "the form"
            raise NoClosedForm(f"{what} has zero Cauchy scale in some component (no noise reaches it: a point "
                               f"mass), so it has no Cauchy law")
        return Cauchy(loc, scale, method=method, node=node, copy=False)

    def dense(self) -> tuple[np.ndarray, np.ndarray, list]:
        """Explicit ``(a, B, sources)``: ``B`` of shape (n, *shape, m) over the m scalar sources.

        For checks on small models only (memory ``n · size · m``).
        """
        n = self.loc.shape[0]
        blocks, labels = [], []
        size = int(np.prod(self.shape, dtype=np.int64))
        for g, t in self._terms.items():
            d, sg = self._sources[g]
            d = np.broadcast_to(d, (n, *sg))
            lead = sg[:len(sg) - t.r]
            ins = sg[len(sg) - t.r:]
            L, Ii = int(np.prod(lead, dtype=np.int64)), int(np.prod(ins, dtype=np.int64))
            M = np.asarray(t.M)
            n_out = int(np.prod(M.shape[:t.out_ndim], dtype=np.int64)) if M.ndim else 1
            Mr = M.reshape(1, 1, n_out, 1, Ii)
            B = np.eye(L).reshape(1, L, 1, L, 1) * Mr * d.reshape(n, 1, 1, L, Ii)   # (n, L, out, L, in)
            blocks.append(B.reshape(n, size, L * Ii))
            labels.extend((g, idx) for idx in np.ndindex(*sg))
        if not blocks:
            return self.loc, np.zeros((n, *self.shape, 0)), []
        B = np.concatenate(blocks, axis=-1)
        return self.loc, B.reshape(n, *self.shape, B.shape[-1]), labels

    # -- algebra ---------------------------------------------------------------------------------

    def __add__(self, other) -> AffineCauchy:
        if isinstance(other, AffineCauchy):
            if other.shape != self.shape:
                raise ShapeError(f"cannot add Cauchy forms of shapes {self.shape} and {other.shape}")
            if other.loc.shape[0] != self.loc.shape[0] and 1 not in (other.loc.shape[0], self.loc.shape[0]):
                raise ShapeError(f"cannot add Cauchy forms of batch sizes {self.loc.shape[0]} and "
                                 f"{other.loc.shape[0]}")
            terms = dict(self._terms)
            sources = dict(self._sources)
            sources.update(other._sources)
            for g, t in other._terms.items():
                terms[g] = terms[g].plus(t, sources[g][1]) if g in terms else t
            return AffineCauchy(self.loc + other.loc, terms, sources, self.shape, self.batched or other.batched)
        c = np.asarray(other, dtype=np.float64)
        return AffineCauchy(self.loc + c, dict(self._terms), dict(self._sources), self.shape, self.batched)

    __radd__ = __add__

    def __mul__(self, c) -> AffineCauchy:
        c = np.asarray(c, dtype=np.float64)
        if c.ndim:
            raise ShapeError(f"a Cauchy form can be multiplied by a scalar only, got shape {c.shape}")
        c = float(c)
        return AffineCauchy(self.loc * c, {g: t.scaled(c) for g, t in self._terms.items()}, dict(self._sources),
                            self.shape, self.batched)

    __rmul__ = __mul__

    def __neg__(self) -> AffineCauchy:
        return self * -1.0

    def __sub__(self, other) -> AffineCauchy:
        return self + (-other)

    def __rsub__(self, other) -> AffineCauchy:
        return (-self) + other

    def __getitem__(self, idx) -> AffineCauchy:
        """Select per-row components on the last axis, e.g. ``form[..., k]`` (a weight picks them)."""
        if not (isinstance(idx, tuple) and len(idx) == 2 and idx[0] is Ellipsis):
            raise ModelError("AffineCauchy supports form[..., k] (a component of the last axis) only")
        if not self.shape:
            raise ShapeError("a scalar Cauchy form has no components")
        j = self.shape[-1]
        w = np.zeros(j)
        w[idx[1]] = 1.0
        terms = {g: t.apply(w, self.shape) for g, t in self._terms.items()}
        return AffineCauchy(self.loc[..., idx[1]], terms, dict(self._sources), self.shape[:-1], self.batched)

    def __repr__(self) -> str:
        return f"<AffineCauchy shape={self.shape} over sources {list(self._terms)}>"


# -- the engine --------------------------------------------------------------------------------------


def _cauchy_mech(mech) -> CauchyLinear | None:
    """The CauchyLinear mechanism behind `mech` (itself, or under an affine intervention), else None."""
    if isinstance(mech, CauchyLinear):
        return mech
    if isinstance(mech, Intervened) and mech.affine is not None and isinstance(mech.natural, CauchyLinear):
        return mech.natural
    return None


def is_cauchy_node(model, node: Hashable) -> bool:
    """Whether `node` has a :class:`CauchyLinear` mechanism (possibly under an affine intervention)."""
    return _cauchy_mech(model.mechanisms[node]) is not None


def _as_list(targets) -> list:
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        return [targets]
    return list(targets)


def affine_forms(model, targets, *, evidence: Mapping | None = None, do: Mapping | None = None) -> dict:
    """Affine forms ``a + B · eps`` of Cauchy nodes given known non-Cauchy values.

    Parameters
    ----------
    model : CausalModel
    targets : node or list of nodes
        CauchyLinear nodes.
    evidence : mapping node -> value, optional
        Values of non-Cauchy nodes upstream of the targets (e.g. backbone
        features ``z`` of shape (n, T, H)); arrays with a batch axis answer n
        queries at once.
    do : mapping node -> value, optional
        Interventions (constants, per-row arrays or affine ones; see
        :meth:`CausalModel.do`). A node under a constant do is a known value.

    Returns
    -------
    dict node -> AffineCauchy

    Raises
    ------
    NoClosedForm
        Evidence on a Cauchy node or downstream of Cauchy noise; a random
        non-Cauchy ancestor that is not observed; a non-linear function of a
        Cauchy node upstream of a target; a non-affine shift intervention on a
        Cauchy node; a target that is not a Cauchy node.
    ModelError, EvidenceError, ShapeError
        Unknown nodes, bad values.
    """
    if evidence is not None and not isinstance(evidence, Mapping):
        raise EvidenceError(f"evidence must be a mapping node -> value, got {type(evidence).__name__}")
    if do:
        model = model.do(do)
    targets = _as_list(targets)
    for t in targets:
        model.check_node(t, "target")
    ev = {}
    for k, v in (evidence or {}).items():
        model.check_node(k, "node in evidence", EvidenceError)
        ev[k] = model.coerce(k, v)
    return decoded_affine_forms(model, targets, ev)


def decoded_affine_forms(model, targets: list, ev: Mapping) -> dict:
    """:func:`affine_forms` on an intervened model with already decoded evidence (the engine's entry)."""
    mechs, specs = model.mechanisms, model.specs
    order, constants = _walk(model, targets, ev)
    per_row = {k: v for k, v in ev.items() if np.ndim(v) == len(specs[k].shape) + 1}
    for k in constants:
        v = np.asarray(mechs[k].value)
        if v.ndim == len(specs[k].shape) + 1:
            per_row[k] = v
    nb = model.batch_size(per_row, None, "evidence and do values") if per_row else None
    batched = nb is not None
    nb = nb if batched else 1
    values: dict = {}
    forms: dict = {}
    sources: dict = {}
    abs_weights = model.cache.setdefault("linear-Cauchy: |W|", {})
    for v in order:
        spec = specs[v]
        if v in ev:
            x = ev[v]
            values[v] = x if np.ndim(x) == len(spec.shape) + 1 else np.broadcast_to(x, (nb, *np.shape(x)))
            continue
        m = mechs[v]
        cm = _cauchy_mech(m)
        if cm is not None:
            forms[v] = _node_form(v, cm, spec, forms, values, sources, nb, batched, abs_weights)
            if cm is not m:                                              # x -> scale·x + offset
                forms[v] = forms[v] * m.affine.scale + m.affine.offset
            continue
        hit = [p for p in m.parents if p in forms]
        if hit:
            raise NoClosedForm(f"{v!r} ({type(m).__name__}) is a non-linear function of Cauchy node {hit[0]!r}"
                               f" and feeds a target: no closed form")
        x = m.evaluate(v, {p: values[p] for p in m.parents}, None, spec, n=nb)
        values[v] = x if np.ndim(x) == len(spec.shape) + 1 else np.broadcast_to(x, (nb, *np.shape(x)))
    out = {}
    for t in targets:
        f = forms[t]
        out[t] = AffineCauchy(f.loc, f.terms, {g: sources[g] for g in f.terms}, f.shape, batched)
    return out


def _walk(model, targets: list, ev: Mapping) -> tuple[list, list]:
    """``(needed nodes in topological order, constant-do nodes)`` for `targets` given evidence on ``ev``'s keys.

    It depends on the model, the targets and which nodes are observed only, so
    it is kept in ``model.cache`` (a model is immutable); a request it refuses
    raises :class:`NoClosedForm` each time.
    """
    key = ("linear-Cauchy: walk", tuple(targets), frozenset(ev))
    got = model.cache.get(key)
    if got is None:
        mechs = model.mechanisms
        cauchy = {k for k, m in mechs.items() if _cauchy_mech(m) is not None}
        _check_cauchy_targets(targets, cauchy, mechs, ev, model.dag)
        need = _needed(targets, mechs, ev)
        got = ([v for v in model.dag.topological_order() if v in need],
               [k for k, m in mechs.items() if isinstance(m, Intervened) and not m.is_shift])
        walks = model.cache.setdefault("linear-Cauchy: walks", [])
        if len(walks) >= 64:                          # a bounded number of query shapes per model
            model.cache.pop(walks.pop(0), None)
        walks.append(key)
        model.cache[key] = got
    return got


def _check_cauchy_targets(targets, cauchy, mechs, ev, dag) -> None:
    for t in targets:
        if t not in cauchy:
            why = "observed" if t in ev else ("intervened on" if isinstance(mechs[t], Intervened)
                                              else f"a {type(mechs[t]).__name__} node")
            raise NoClosedForm(f"target {t!r} is {why}, not a Cauchy node; the Cauchy engine answers Cauchy "
                               f"targets only")
    if cauchy and ev:
        downstream = dag.descendants(cauchy, include_self=True)
        bad = [k for k in ev if k in downstream]
        if bad:
            raise NoClosedForm(f"evidence on {bad[0]!r}, which depends on Cauchy noise: conditioning a Cauchy "
                               f"subgraph has no closed form here (use sampling)")


def _needed(targets, mechs, ev) -> set:
    """Nodes whose values or forms the targets need, walking back from them."""
    need: set = set()
    stack = list(targets)
    while stack:
        v = stack.pop()
        if v in need:
            continue
        need.add(v)
        if v in ev:
            continue
        m = mechs[v]
        if isinstance(m, Intervened) and _cauchy_mech(m) is None:
            if not m.is_shift:
                continue
            if isinstance(m.natural, CauchyLinear):
                raise NoClosedForm(f"{v!r} is a Cauchy node under a shift intervention that is not affine (an "
                                   f"arbitrary function of its value); no closed form: use cn.shift or cn.affine")
            if not m.natural.deterministic:
                raise NoClosedForm(f"{v!r} ({type(m.natural).__name__}) is random and not observed; the Cauchy "
                                   f"engine needs every non-Cauchy input known")
        elif not (_cauchy_mech(m) is not None or m.deterministic):
            raise NoClosedForm(f"{v!r} ({type(m).__name__}) is random, not Cauchy, and not observed; the Cauchy "
                               f"engine needs every non-Cauchy input known")
        stack.extend(m.parents)
    return need


def _node_form(v, m: CauchyLinear, spec, forms, values, sources, nb, batched, abs_weights: dict) -> AffineCauchy:
    """The affine form of CauchyLinear node `v` from its parents' forms and values.

    `abs_weights` (``model.cache``'s, id -> ``(W, |W|)``) keeps ``|W|`` of the
    model's read-only weight matrices, which a term of a source that reaches
    `v` through one weight alone uses as its ``|M|``.
    """
    if m.scale_parent is not None and m.scale_parent in forms:
        raise NoClosedForm(f"the noise scale of {v!r} comes from Cauchy node {m.scale_parent!r}: the "
                           f"result is not Cauchy")
    pa = {p: (forms[p].loc if p in forms else values[p]) for p in m.parents}
    loc = m.center(v, pa, spec, n=nb)
    shape = loc.shape[1:]
    terms: dict = {}
    for p, w in m.linear_terms:
        if p not in forms:
            continue
        for g, t in forms[p].terms.items():
            t2 = t.apply(w, forms[p].shape)
            if t2.M is w and w.ndim and not w.flags.writeable:          # the model's own weight, as is
                hit = abs_weights.get(id(w))
                if hit is None or hit[0] is not w:
                    hit = abs_weights[id(w)] = (w, np.abs(w))
                t2.absM = hit[1]
            terms[g] = terms[g].plus(t2, sources[g][1]) if g in terms else t2
    if not m.deterministic:
        d = np.asarray(m.noise_scale(v, pa), dtype=np.float64)
        sources[v] = (d, tuple(shape))
        t_own = _Term(np.ones(()), 0, 0)
        terms[v] = terms[v].plus(t_own, shape) if v in terms else t_own
    return AffineCauchy(loc, terms, sources, shape, batched)


def cauchy_marginals(model, targets, *, evidence: Mapping | None = None, do: Mapping | None = None) -> dict:
    """Exact componentwise marginals of Cauchy nodes: ``{node: Cauchy}``.

    This is what ``model.query(targets, evidence=..., do=..., method="auto")``
    runs when every target is a :class:`CauchyLinear` node and no evidence is
    on a Cauchy node (or downstream of Cauchy noise). The result's ``method``
    is ``"cauchy-affine (exact)"``. Marginals only: nodes that share sources
    are dependent; use :func:`affine_forms` for linear functionals of several
    nodes.

    Parameters
    ----------
    model : CausalModel
    targets : node or list of nodes
    evidence : mapping node -> value, optional
        Non-Cauchy inputs, e.g. ``{"z": features}``; batch first.
    do : mapping node -> value, optional

    Returns
    -------
    dict node -> Cauchy
        ``loc``/``scale`` of shape ``(n, *shape)`` when the evidence or the
        do values are batched, ``shape`` otherwise.

    Raises
    ------
    NoClosedForm
        See :func:`affine_forms`; also a target with zero scale (a point mass).
    """
    forms = affine_forms(model, targets, evidence=evidence, do=do)
    return {t: f.marginal(node=t) for t, f in forms.items()}


class CauchyEngine(Engine):
    """Exact marginals of linear-Cauchy targets (affine forms over independent sources)."""

    name = "linear-Cauchy"

    def accepts(self, request) -> bool:
        m = request.model
        return not request.is_counterfactual and all(is_cauchy_node(m, t) for t in request.nodes)

    def answer(self, request):
        names = request.nodes
        forms = decoded_affine_forms(request.model, names, request.observed)
        res = {t: f.marginal(node=t) for t, f in forms.items()}
        return res[names[0]] if len(names) == 1 else CauchyMarginals(res, method=METHOD)
