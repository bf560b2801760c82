"""Evaluating an identified estimand on a model or on data.

An :class:`~causalnet.graph.identification.Estimand` is a formula over
observed variables: sums, products and fractions of observational terms
``P(A | B)``. Evaluating it needs only the observational distribution of the
observed nodes, and that is all this module uses:

- a model (a :class:`~causalnet.model.CausalModel`, or anything with
  ``query(nodes, method="exact")`` and ``latent``): each term ``P(A, B)`` is
  the exact marginal ``m.query([A..., B...])`` (latent nodes are summed out by
  the engine, never looked at);
- a pandas ``DataFrame``: empirical frequencies of the observed columns.

Each sub-formula becomes a table over its free variables; the answer is the
table over (treatments, conditions, outcomes) read at the requested values,
one row per value when they are arrays. A conditional whose conditioning
event has probability zero is *undefined*; ``0 × undefined`` counts as 0 (a
zero-weight term of a sum), anything else undefined in the answer raises
:class:`~causalnet.errors.EvidenceError` naming the term (positivity fails).

The module sits in the graph layer and knows no model class: a model source is
duck-typed, so :meth:`Estimand.evaluate <causalnet.graph.identification.Estimand.evaluate>`
calls :func:`evaluate` without an import circle.

Examples
--------
>>> import causalnet as cn
>>> m = cn.CausalModel({"Z": cn.Categorical([0.6, 0.4]),
...                     "X": cn.CPT(["Z"], [[0.8, 0.2], [0.3, 0.7]]),
...                     "Y": cn.CPT(["X", "Z"], [[[0.9, 0.1], [0.5, 0.5]], [[0.6, 0.4], [0.2, 0.8]]])})
>>> e = m.dag.identify("Y", "X")
>>> round(float(e.evaluate(m, do={"X": 1})[1]), 6), round(float(m.query("Y", do={"X": 1})[1]), 6)
(0.56, 0.56)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from ..distributions import DiscreteDistribution
from ..errors import EvidenceError

__all__ = ["Algebra", "evaluate", "FormulaTable", "Tables", "ModelSource", "DataSource"]


class Algebra:
    """What an expression is folded into (:meth:`Expression.fold`): one method per node kind.

    This module implements it with probability tables (:class:`Tables`);
    printing uses the tree directly.
    """

    def probability(self, heads: tuple, given: tuple) -> Any:
        raise NotImplementedError

    def sum(self, value: Any, over: tuple) -> Any:
        raise NotImplementedError

    def product(self, values: list) -> Any:
        raise NotImplementedError

    def fraction(self, num: Any, den: Any) -> Any:
        raise NotImplementedError


class FormulaTable:
    """Values of a sub-formula over its free variables, with a mask of undefined entries.

    Attributes
    ----------
    variables : tuple
        One axis per variable.
    values : ndarray of shape (*cards)
    undefined : ndarray of bool, same shape
    """

    __slots__ = ("variables", "values", "undefined")

    def __init__(self, variables: Sequence[Hashable], values: np.ndarray, undefined: np.ndarray | None = None) -> None:
        self.variables = tuple(variables)
        self.values = values
        self.undefined = np.zeros(values.shape, dtype=bool) if undefined is None else undefined

    def aligned(self, order: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
        """Values and mask transposed to `order` with size-1 axes for missing variables (broadcastable)."""
        perm = [self.variables.index(v) for v in order if v in self.variables]
        shape = [self.values.shape[self.variables.index(v)] if v in self.variables else 1 for v in order]
        return (np.transpose(self.values, perm).reshape(shape),
                np.transpose(self.undefined, perm).reshape(shape))


class _Source:
    """Observational marginals ``P(vars)`` and state names, cached per variable set."""

    def __init__(self) -> None:
        self._cache: dict = {}

    def states(self, v: Hashable) -> tuple:
        raise NotImplementedError

    def _joint(self, variables: tuple) -> np.ndarray:
        raise NotImplementedError

    def joint(self, variables: tuple) -> np.ndarray:
        """``P(variables)`` as an array with one axis per variable, in the order given."""
        key = frozenset(variables)
        if key not in self._cache:
            canon = tuple(sorted(variables, key=str))
            self._cache[key] = (canon, self._joint(canon))
        canon, table = self._cache[key]
        return np.transpose(table, [canon.index(v) for v in variables]) if variables else table


class ModelSource(_Source):
    """Observational marginals of a model's observed nodes, by its exact engine."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self._states: dict = {}

    def states(self, v: Hashable) -> tuple:
        if v not in self._states:
            if v in self.model.latent:
                raise EvidenceError(f"{v!r} is latent: an estimand may only use observed nodes")
            d = self.model.query([v], method="exact")
            self._states[v] = tuple(d.states)
        return self._states[v]

    def _joint(self, variables: tuple) -> np.ndarray:
        if not variables:
            return np.array(1.0)
        for v in variables:
            self.states(v)
        return self.model.query(list(variables), method="exact").probs


class DataSource(_Source):
    """Empirical frequencies of the columns of a data frame (categorical or discrete values)."""

    def __init__(self, frame: Any) -> None:
        super().__init__()
        if len(frame) == 0:
            raise EvidenceError("cannot evaluate an estimand on an empty data frame")
        self.frame = frame
        self._codes: dict = {}
        self._states: dict = {}

    def states(self, v: Hashable) -> tuple:
        if v not in self._states:
            if v not in self.frame.columns:
                raise EvidenceError(f"the data have no column {v!r}; columns: {list(self.frame.columns)}")
            col = self.frame[v]
            if col.isna().any():
                raise EvidenceError(f"column {v!r} has missing values; drop or impute them first")
            if hasattr(col, "cat"):
                states, codes = tuple(col.cat.categories), col.cat.codes.to_numpy()
            else:
                uniq, codes = np.unique(col.to_numpy(), return_inverse=True)
                states = tuple(u.item() if hasattr(u, "item") else u for u in uniq)
            self._states[v], self._codes[v] = states, codes
        return self._states[v]

    def _joint(self, variables: tuple) -> np.ndarray:
        if not variables:
            return np.array(1.0)
        cards = [len(self.states(v)) for v in variables]
        flat = np.ravel_multi_index([self._codes[v] for v in variables], cards)   # (n,)
        counts = np.bincount(flat, minlength=int(np.prod(cards)))
        return (counts / counts.sum()).reshape(cards)                           # (*cards)


class Tables(Algebra):
    """Folds an expression into :class:`FormulaTable` objects over a source."""

    def __init__(self, source: _Source) -> None:
        self.source = source
        self.zero_terms: list = []

    def probability(self, heads: tuple, given: tuple) -> FormulaTable:
        variables = tuple(given) + tuple(heads)
        joint = self.source.joint(variables)                                     # (*given, *heads)
        axes = tuple(range(len(given), len(variables)))
        den = joint.sum(axis=axes, keepdims=True)                                # (*given, 1...)
        bad = np.broadcast_to(den == 0, joint.shape)
        if bad.any():
            tail = f" | {', '.join(map(str, given))}" if given else ""
            self.zero_terms.append(f"P({', '.join(map(str, heads))}{tail})")
        values = np.divide(joint, den, out=np.zeros_like(joint), where=den > 0)
        return FormulaTable(variables, values, bad.copy())

    def product(self, values: list) -> FormulaTable:
        order = tuple(dict.fromkeys(v for t in values for v in t.variables))
        out = np.ones([1] * len(order))
        undefined = np.zeros([1] * len(order), dtype=bool)
        zero = np.zeros([1] * len(order), dtype=bool)
        for t in values:
            val, und = t.aligned(order)
            out = out * val
            undefined = undefined | und
            zero = zero | ((val == 0) & ~und)
        shape = np.broadcast_shapes(out.shape, undefined.shape)
        return FormulaTable(order, np.broadcast_to(out, shape).copy(), np.broadcast_to(undefined & ~zero, shape).copy())

    def sum(self, value: FormulaTable, over: tuple) -> FormulaTable:
        axes = tuple(value.variables.index(v) for v in over if v in value.variables)
        keep = tuple(v for v in value.variables if v not in over)
        return FormulaTable(keep, value.values.sum(axis=axes), value.undefined.any(axis=axes))

    def fraction(self, num: FormulaTable, den: FormulaTable) -> FormulaTable:
        order = tuple(dict.fromkeys(num.variables + den.variables))
        nv, nu = num.aligned(order)
        dv, du = den.aligned(order)
        shape = np.broadcast_shapes(nv.shape, dv.shape)
        nv, dv = np.broadcast_to(nv, shape), np.broadcast_to(dv, shape)
        values = np.divide(nv, dv, out=np.zeros(shape), where=dv > 0)
        if (dv == 0).any():
            self.zero_terms.append("a denominator of the formula")
        return FormulaTable(order, values, np.broadcast_to(nu | du, shape) | (dv == 0))


def _source(source: Any) -> _Source:
    if hasattr(source, "query") and hasattr(source, "latent"):
        return ModelSource(source)
    if hasattr(source, "columns") and hasattr(source, "__len__"):
        return DataSource(source)
    raise EvidenceError(f"evaluate needs a CausalModel or a pandas DataFrame, got {type(source).__name__}")


def _index(source: _Source, v: Hashable, value: Any, role: str) -> np.ndarray:
    """State indices of `value` (a state, an index, or an array of them) for `v`."""
    states = source.states(v)
    arr = np.asarray(value, dtype=object)
    flat = []
    for k in arr.reshape(-1):
        if k in states:
            flat.append(states.index(k))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 0 <= k < len(states):
            flat.append(int(k))
        else:
            raise EvidenceError(f"{role} {v!r} has no state {k!r}; states: {list(states)}")
    if arr.ndim > 1:
        raise EvidenceError(f"{role} values for {v!r} must be a scalar or a 1-d array, got shape {arr.shape}")
    return np.asarray(flat, dtype=np.intp).reshape(arr.shape)


def _values(estimand: Any, do: Mapping | None, evidence: Mapping | None) -> dict:
    wanted = {**{k: v for k, v in estimand.values.items() if k not in estimand.outcomes},
              **dict(do or {}), **dict(evidence or {})}
    for role, names in (("treatment", estimand.treatments), ("condition", estimand.given)):
        missing = [v for v in names if v not in wanted]
        if missing:
            raise EvidenceError(f"evaluate needs a value for {role} {missing[0]!r} of {estimand.query} "
                                f"(pass do= or evidence=, or write it in the query)")
    extra = [k for k in wanted if k not in estimand.treatments and k not in estimand.given]
    if extra:
        raise EvidenceError(f"{extra[0]!r} is neither a treatment nor a condition of {estimand.query}")
    return wanted


def evaluate(estimand: Any, source: Any, *, do: Mapping | None = None, evidence: Mapping | None = None):
    """The value of `estimand` on the observational distribution of `source`.

    Parameters
    ----------
    estimand : Estimand
        From :func:`~causalnet.graph.identification.identify`.
    source : CausalModel or pandas.DataFrame
        A model (its exact observational marginals over observed nodes) or
        data (empirical frequencies).
    do : mapping treatment -> value, optional
        Treatment values (states or indices), scalars or 1-d arrays of one
        length n for n answers; defaults to values in the query string.
    evidence : mapping condition -> value, optional
        Values of the conditions (``given``) of the estimand, likewise.

    Returns
    -------
    DiscreteDistribution
        Over the outcomes, batch-first when a value is an array; when the
        query string gave outcome values, their probability (float or array).

    Raises
    ------
    EvidenceError
        On a missing or unknown value, or when the answer needs a
        conditional on a zero-probability event (positivity fails).
    """
    if not all(hasattr(estimand, a) for a in ("expression", "outcomes", "treatments", "given", "values")):
        raise EvidenceError(f"evaluate needs an Estimand (from identify), got {type(estimand).__name__}")
    src = _source(source)
    wanted = _values(estimand, do, evidence)
    idx = {v: _index(src, v, wanted[v], "value of") for v in estimand.treatments + estimand.given}
    algebra = Tables(src)
    table = estimand.expression.fold(algebra)
    keys = estimand.treatments + estimand.given
    order = keys + estimand.outcomes
    cards = [len(src.states(v)) for v in order]
    vals, und = table.aligned(order)
    vals, und = np.broadcast_to(vals, cards), np.broadcast_to(und, cards)  # (*keys, *outcomes)
    batched = any(i.ndim == 1 for i in idx.values())
    lengths = {len(i) for i in idx.values() if i.ndim == 1}
    if len(lengths) > 1:
        raise EvidenceError(f"value arrays for {estimand.query} have different lengths {sorted(lengths)}; "
                            f"give one value per row, all of one length n")
    sel = tuple(np.broadcast_arrays(*[idx[v] for v in keys])) if keys else ()
    probs, bad = vals[sel], und[sel]                                          # (n, *outcome cards) or (*cards)
    if bad.any():
        terms = ", ".join(dict.fromkeys(algebra.zero_terms)) or "a conditional"
        raise EvidenceError(f"{estimand.query} cannot be evaluated at these values: {terms} conditions on an "
                            f"event of probability zero in the {'model' if isinstance(src, ModelSource) else 'data'} "
                            f"(positivity fails)")
    states = [src.states(v) for v in estimand.outcomes]
    label = _label(estimand, wanted)
    dist = DiscreteDistribution(estimand.outcomes, np.clip(probs, 0.0, None), states, batched=batched,
                                method=f"identified ({estimand.method})", query=label)
    if all(v in estimand.values for v in estimand.outcomes) and estimand.outcomes:
        return dist[tuple(estimand.values[v] for v in estimand.outcomes)]
    return dist


def _label(estimand: Any, wanted: dict) -> str:
    def show(v):
        val = wanted[v]
        return f"{v}={val}" if np.ndim(val) == 0 else str(v)
    conds = ([f"do({', '.join(show(v) for v in estimand.treatments)})"] if estimand.treatments else [])
    conds += [show(v) for v in estimand.given]
    return f"P({', '.join(map(str, estimand.outcomes))} | {', '.join(conds)})" if conds else estimand.query
