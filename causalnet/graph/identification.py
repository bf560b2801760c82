"""Identification of causal effects with hidden confounders: the ID and IDC algorithms.

A DAG with latent nodes says less about the observed variables than it seems:
only its **latent projection** matters, a *mixed graph* over the observed
nodes with a directed edge ``A -> B`` where A causes B through latent nodes
only, and a bidirected edge ``A <-> B`` where an unobserved common cause
reaches both. The bidirected edges cut the observed nodes into
**c-components** (districts): nodes joined by bidirected paths.

A query ``P(Y | do(X))`` is *identifiable* when it is the same function of the
observational distribution ``P(V)`` in every model with this graph. The ID
algorithm of Shpitser and Pearl [1]_ decides it and, when it succeeds, writes
the answer as an :class:`Estimand`: a formula of sums, products and
conditionals ``P(A | B)`` of observed variables. When it fails it has found a
**hedge**: two c-forests F' ⊂ F sharing their root set, F containing
treatments and F' not; no formula exists, and :class:`~causalnet.errors.NotIdentifiable`
names both. Conditional queries ``P(Y | do(X), Z)`` go through IDC [2]_,
which moves conditions into the intervention by do-calculus rule 2 where it
can and then divides.

When the effect has a back-door (or, more generally, an adjustment) set or a
front-door set, :func:`identify` returns the familiar formula
``Σ_Z P(Y | X, Z) P(Z)`` or ``Σ_Z P(Z | X) Σ_X' P(Y | X', Z) P(X')`` instead of
the raw output of ID. :meth:`Estimand.evaluate` computes an estimand on a
model or a data frame (the tables are in :mod:`causalnet.graph.evaluation`).

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG([("X", "Z"), ("Z", "Y"), ("U", "X"), ("U", "Y")], latent=["U"])
>>> print(identify(g, "Y", "X"))
Σ_{Z} P(Z | X) Σ_{X'} P(X') P(Y | X', Z)
>>> bow = with_bidirected(cn.DAG([("X", "Y")]), [("X", "Y")])
>>> identify(bow, "Y", "X")
Traceback (most recent call last):
...
causalnet.errors.NotIdentifiable: P(Y | do(X)) is not identifiable: hedge F = {X, Y}, F' = {Y} ...

References
----------
.. [1] Shpitser & Pearl, "Identification of joint interventional distributions
   in recursive semi-Markovian causal models", AAAI 2006.
.. [2] Shpitser & Pearl, "Identification of conditional interventional
   distributions", UAI 2006.

Where each part lives: :mod:`~causalnet.graph.expressions` (the formula
trees and their printing), :mod:`~causalnet.graph.mixed` (mixed graphs, latent
projection, c-components), :mod:`~causalnet.graph.id_algorithm` (ID, IDC,
do-calculus), this module (:class:`Estimand` and :func:`identify`, which
prefers the back-door and front-door formulas). This module re-exports the
names of all of them, so ``from causalnet.graph.identification import
MixedGraph`` works.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from ..errors import CausalNetWarning, EvidenceError, GraphError
from ..queries import parse_query
from . import adjustment
from .core import DAGCore
from .evaluation import Algebra, evaluate
from .expressions import (
    ONE,
    Expression,
    Fraction,
    Probability,
    Product,
    Sum,
    conditional,
    format_expression,
    fraction,
    marginal,
    product,
)
from .id_algorithm import do_calculus, id_algorithm, idc
from .mixed import (
    MixedGraph,
    as_graph,
    c_components,
    check_nodes,
    dag_of,
    district,
    latent_projection,
    node_list,
    with_bidirected,
)

__all__ = [
    "Expression", "Probability", "Sum", "Product", "Fraction", "ONE", "Algebra",
    "marginal", "product", "fraction", "conditional",
    "Estimand", "MixedGraph", "latent_projection", "c_components", "district", "with_bidirected",
    "identify", "id_algorithm", "do_calculus", "as_graph",
]


class Estimand:
    """An identified causal query and its formula over observed variables.

    Attributes
    ----------
    expression : Expression
        The formula tree (:class:`Probability`, :class:`Sum`,
        :class:`Product`, :class:`Fraction`).
    outcomes, treatments, given : tuple
        The query ``P(outcomes | do(treatments), given)``.
    values : dict
        Values written in the query string (``P(Y=1 | do(X=0))``), used by
        evaluation when no others are given.
    method : str
        ``"backdoor adjustment"``, ``"frontdoor adjustment"``, ``"ID"`` or ``"IDC"``.
    order : tuple
        Node order used to print (a topological order).

    Examples
    --------
    >>> import causalnet as cn
    >>> e = identify(cn.DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")]), "P(Y | do(X=1))")
    >>> str(e), e.method, sorted(e.variables), e.values
    ('Σ_{Z} P(Z) P(Y | X, Z)', 'backdoor adjustment', ['X', 'Y'], {'X': 1})
    >>> e.to_latex()
    '\\\\sum_{Z} P(Z) P(Y \\\\mid X, Z)'
    """

    def __init__(self, expression: Expression, outcomes: Iterable[Hashable], treatments: Iterable[Hashable] = (),
                 given: Iterable[Hashable] = (), *, values: Mapping | None = None, method: str = "ID",
                 order: Iterable[Hashable] = ()) -> None:
        self.expression = expression
        self.outcomes = tuple(outcomes)
        self.treatments = tuple(treatments)
        self.given = tuple(given)
        self.values = dict(values or {})
        self.method = method
        self.order = tuple(order)

    @property
    def variables(self) -> frozenset:
        """The free variables of the formula (outcomes, treatments and conditions it depends on)."""
        return self.expression.variables

    @property
    def query(self) -> str:
        """The question, e.g. ``P(Y | do(X), Z)``."""
        conds = ([f"do({', '.join(map(str, self.treatments))})"] if self.treatments else []) + list(map(str, self.given))
        tail = f" | {', '.join(conds)}" if conds else ""
        return f"P({', '.join(map(str, self.outcomes))}{tail})"

    def _taken(self) -> frozenset:
        """Names bound variables must not reuse: the query's variables (primed otherwise)."""
        return frozenset(map(str, self.expression.variables | set(self.outcomes + self.treatments + self.given)))

    def __str__(self) -> str:
        return format_expression(self.expression, self.order, self._taken())

    def to_latex(self) -> str:
        """The formula in LaTeX."""
        return format_expression(self.expression, self.order, self._taken(), latex=True)

    def evaluate(self, source: Any, *, do: Mapping | None = None, evidence: Mapping | None = None) -> Any:
        """The estimand's value on a model or a data frame; see :func:`causalnet.graph.evaluation.evaluate`."""
        return evaluate(self, source, do=do, evidence=evidence)

    def __repr__(self) -> str:
        return f"<Estimand {self.query} = {self} ({self.method})>"



_ANY = "__causalnet_any_value__"


def _fill_bare_conditions(text: str) -> str:
    """``P(Y | do(X), Z)`` -> ``P(Y | do(X=_ANY), Z=_ANY)``: the query grammar wants values, identify does not."""
    head, bar, tail = text.partition("|")
    if not bar:
        return _fill_items(text, in_do=True) if "do(" in text else text
    body, close = tail.rstrip(), ""
    if body.endswith(")"):
        body, close = body[:-1], ")"
    return head + bar + _fill_items(body, in_do=False) + close


def _fill_items(body: str, in_do: bool) -> str:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(body + ","):
        depth += ch in "({"
        depth -= ch in ")}"
        if ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    out = []
    for item in items:
        word = item.strip()
        if word.startswith("do(") and word.endswith(")"):
            inner = ",".join(a if "=" in a else f"{a}={_ANY}" for a in word[3:-1].split(","))
            out.append(f" do({inner})")
        elif word and "=" not in word and not in_do:
            out.append(f" {word}={_ANY}")
        else:
            out.append(item)
    return ",".join(out)


def _parse(outcomes: Any, treatments: Any, given: Any) -> tuple[list, list, list, dict]:
    if not (isinstance(outcomes, str) and outcomes.lstrip().startswith("P(")):
        return node_list(outcomes), node_list(treatments), node_list(given), {}
    if node_list(treatments) or node_list(given):
        raise EvidenceError("identify: give either a query string or outcomes/treatments/given, not both")
    q = parse_query(_fill_bare_conditions(outcomes))
    if q.is_counterfactual:
        raise EvidenceError(f"identify handles interventional queries; {outcomes!r} has counterfactual terms")
    values = {t.name: t.value for t in q.targets + q.evidence if t.value not in (None, _ANY)}
    values.update(q.do)
    return [t.name for t in q.targets], list(q.do), [t.name for t in q.evidence], values


def identify(graph: DAGCore | MixedGraph, outcomes: Any, treatments: Any = (), given: Any = (), *,
             simplify: bool = True) -> Estimand:
    """Identify ``P(outcomes | do(treatments), given)`` from the observational distribution.

    Parameters
    ----------
    graph : DAG, MixedGraph or str
        A DAG with latent nodes (bidirected edges as latent parents, see
        :func:`with_bidirected`), its latent projection, or a graph text
        such as ``"X -> Y; X <-> Y"`` (see :meth:`causalnet.DAG.parse`).
    outcomes : node, nodes, or a query string
        ``"P(Y | do(X), Z)"`` (values such as ``do(X=1)`` are kept in
        ``estimand.values``); then `treatments` and `given` must be empty.
    treatments, given : node or nodes, optional
    simplify : bool, default True
        Return the adjustment (back-door) or front-door formula when one
        applies, rather than the raw output of ID/IDC.

    Returns
    -------
    Estimand

    Raises
    ------
    NotIdentifiable
        When no formula exists; ``err.hedge`` is the pair of node sets (F, F').
    GraphError
        On unknown or latent nodes, overlapping roles, or a graph text that
        does not parse.

    Examples
    --------
    >>> import causalnet as cn
    >>> print(cn.identify("X -> M -> Y; X <-> Y", "P(Y | do(X))"))
    Σ_{M} P(M | X) Σ_{X'} P(X') P(Y | X', M)
    >>> cn.identify("X -> Y; X <-> Y", "P(Y | do(X))")
    Traceback (most recent call last):
    ...
    causalnet.errors.NotIdentifiable: P(Y | do(X)) is not identifiable: hedge F = {X, Y}, F' = {Y} ...
    """
    graph = as_graph(graph)
    y, x, z, values = _parse(outcomes, treatments, given)
    h = latent_projection(graph)
    ys, xs, zs = check_nodes(h, y, "outcome"), check_nodes(h, x, "treatment"), check_nodes(h, z, "condition")
    if not ys:
        raise GraphError("identify needs at least one outcome")
    if ys & xs or ys & zs or xs & zs:
        raise GraphError(f"outcomes {sorted(map(str, ys))}, treatments {sorted(map(str, xs))} and conditions "
                         f"{sorted(map(str, zs))} must be disjoint")
    label = Estimand(ONE, h.sorted(ys), h.sorted(xs), h.sorted(zs)).query
    expr, method = None, "IDC" if zs else "ID"
    if simplify and xs:
        expr, method = _adjustment(graph, h, ys, xs, zs)
    if expr is None:
        expr = idc(h, ys, xs, zs, label) if zs else id_algorithm(h, ys, xs, query=label)
        method = "IDC" if zs else "ID"
        extra = expr.variables - ys - xs - zs
        if extra:  # ID line 3 intervenes on nodes the answer does not depend on: average them out
            expr = marginal(product([Probability(h.sorted(extra)), expr]), extra)
        if simplify and not zs:
            expr, method = _frontdoor(graph, h, ys, xs) or (expr, method)
    return Estimand(expr, h.sorted(ys), h.sorted(xs), h.sorted(zs), values=values, method=method, order=h.nodes)


def _adjustment(graph, h: MixedGraph, ys: frozenset, xs: frozenset, zs: frozenset) -> tuple:
    """``Σ_S P(y | x, S, z) P(S | z)`` for a back-door set S ∪ z (z not caused by x); else (None, None)."""
    dag = dag_of(graph)
    if zs:
        if zs & dag.descendants(xs):
            return None, None
        candidates = [frozenset()] + [s - zs for s in adjustment.backdoor_adjustment_sets(dag, xs, ys, minimal=True,
                                                                                           max_sets=20)]
        ok = [s for s in candidates if adjustment.is_backdoor_adjustment(dag, xs, ys, s | zs)]
    else:
        ok = adjustment.minimal_adjustment_sets(dag, xs, ys, max_sets=1)
    if not ok:
        return None, None
    s = min(ok, key=len)
    outcome = Probability(h.sorted(ys), h.sorted(xs) + h.sorted(s) + h.sorted(zs))
    if not s:
        return outcome, "backdoor adjustment"
    expr = marginal(product([outcome, Probability(h.sorted(s), h.sorted(zs))]), s)
    return expr, "backdoor adjustment"


def _frontdoor(graph, h: MixedGraph, ys: frozenset, xs: frozenset) -> tuple | None:
    """``Σ_M P(M | X) Σ_X' P(Y | X', M) P(X')`` for a front-door set M, or None."""
    dag = dag_of(graph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CausalNetWarning)
        sets = adjustment.frontdoor_adjustment_sets(dag, xs, ys, minimal=True, max_sets=1, max_candidates=2000)
    if not sets or not sets[0]:
        return None
    m = sets[0]
    inner = Sum(product([Probability(h.sorted(ys), h.sorted(xs) + h.sorted(m)), Probability(h.sorted(xs))]),
                h.sorted(xs))
    expr = marginal(product([Probability(h.sorted(m), h.sorted(xs)), inner]), m)
    return expr, "frontdoor adjustment"
