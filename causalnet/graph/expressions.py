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
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from ..errors import CausalNetWarning, EvidenceError, GraphError, NotIdentifiable
from ..queries import parse_query
from . import adjustment, separation
from .core import DAGCore, default_dag_class
from .evaluation import Algebra, evaluate
from .parse import latent_parent_name, parse_graph

__all__ = [
    "Expression", "Probability", "Sum", "Product", "Fraction", "ONE", "Algebra",
    "marginal", "product", "fraction", "conditional",
    "Estimand", "MixedGraph", "latent_projection", "c_components", "district", "with_bidirected",
    "identify", "id_algorithm", "do_calculus", "as_graph",
]


# -- the expression tree -------------------------------------------------------------------------

class Expression:
    """A formula over observed variables: a node of the estimand tree.

    Attributes
    ----------
    variables : frozenset
        The free variables (those the formula is a function of).
    heads : frozenset
        Variables the expression is a normalized distribution over (for any
        value of its other free variables); empty when not known. Used by the
        simplifications (``Σ_a P(a | b) = 1``).
    """

    __slots__ = ("variables", "heads", "_hash")

    def fold(self, algebra: Algebra) -> Any:
        raise NotImplementedError

    def _key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return _Printer(None, _TEXT).show(self, frozenset(map(str, self.variables)))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"

    def to_latex(self, order: Iterable[Hashable] | None = None) -> str:
        """The formula in LaTeX (``\\sum_{z} P(y \\mid x, z) P(z)``)."""
        return _Printer(order, _LATEX).show(self, frozenset(map(str, self.variables)))


class Probability(Expression):
    """``P(heads | given)`` of the observational distribution."""

    __slots__ = ("head_vars", "given")

    def __init__(self, heads: Iterable[Hashable], given: Iterable[Hashable] = ()) -> None:
        self.head_vars = tuple(heads)
        self.given = tuple(given)
        self.heads = frozenset(self.head_vars)
        self.variables = self.heads | frozenset(self.given)
        self._hash = hash(self._key())

    def _key(self) -> tuple:
        return (self.heads, frozenset(self.given))

    def fold(self, algebra: Algebra) -> Any:
        return algebra.probability(self.head_vars, self.given)


class Sum(Expression):
    """``Σ_{over} expr``: the variables in `over` are bound."""

    __slots__ = ("expr", "over")

    def __init__(self, expr: Expression, over: Iterable[Hashable]) -> None:
        self.expr = expr
        self.over = tuple(over)
        over_set = frozenset(self.over)
        self.variables = expr.variables - over_set
        self.heads = expr.heads - over_set if over_set <= expr.heads else frozenset()
        self._hash = hash(self._key())

    def _key(self) -> tuple:
        return ("sum", self.expr, frozenset(self.over))

    def fold(self, algebra: Algebra) -> Any:
        return algebra.sum(self.expr.fold(algebra), self.over)


class Product(Expression):
    """A product of factors (no factor: the constant 1, :data:`ONE`)."""

    __slots__ = ("factors",)

    def __init__(self, factors: Iterable[Expression]) -> None:
        self.factors = tuple(factors)
        self.variables = frozenset().union(*(f.variables for f in self.factors))
        self.heads = _chain_heads(self.factors)
        self._hash = hash(self._key())

    def _key(self) -> tuple:
        return ("product", tuple(sorted(map(hash, self.factors))), frozenset(self.factors))

    def fold(self, algebra: Algebra) -> Any:
        return algebra.product([f.fold(algebra) for f in self.factors])


class Fraction(Expression):
    """``num / den``; `heads` is set when it is a conditional ``Q(A | B) = Q(A, B) / Q(B)``."""

    __slots__ = ("num", "den")

    def __init__(self, num: Expression, den: Expression, heads: Iterable[Hashable] = ()) -> None:
        self.num = num
        self.den = den
        self.variables = num.variables | den.variables
        self.heads = frozenset(heads)
        self._hash = hash(self._key())

    def _key(self) -> tuple:
        return ("fraction", self.num, self.den)

    def fold(self, algebra: Algebra) -> Any:
        return algebra.fraction(self.num.fold(algebra), self.den.fold(algebra))


def _chain_heads(factors: tuple) -> frozenset:
    """Heads of a product of normalized factors that form a chain; empty when they do not.

    A product ``Π_i f_i(h_i | t_i)`` is normalized over ``∪ h_i`` when the
    heads are disjoint and the factors can be ordered so that no factor's
    tail holds the heads of a later one: then summing the last factor's heads
    removes it, and so on (the dependency graph must be acyclic).
    """
    owner: dict = {}
    for i, f in enumerate(factors):
        if not f.heads:
            return frozenset()
        for h in f.heads:
            if h in owner:
                return frozenset()
            owner[h] = i
    needs = [{owner[v] for v in f.variables - f.heads if v in owner} for f in factors]
    users: list = [[] for _ in factors]
    for i, deps in enumerate(needs):
        for j in deps:
            users[j].append(i)
    ready = [i for i, deps in enumerate(needs) if not deps]
    left = [len(deps) for deps in needs]
    done = 0
    while ready:                      # Kahn's algorithm on "i uses the heads of j"
        j = ready.pop()
        done += 1
        for i in users[j]:
            left[i] -= 1
            if not left[i]:
                ready.append(i)
    return frozenset(owner) if done == len(factors) else frozenset()


ONE = Product(())
"""The constant 1 (an empty product)."""


# -- simplifying constructors -----------------------------------------------------------------

def product(factors: Iterable[Expression]) -> Expression:
    """The product of `factors`, flattened, without ones; a single factor is returned as is."""
    flat: list = []
    for f in factors:
        flat.extend(f.factors if isinstance(f, Product) else (f,))
    flat = _merge_chain(flat)
    return flat[0] if len(flat) == 1 else Product(flat)


def _merge_chain(factors: list) -> list:
    """Merge ``P(A | C) P(B | A, C)`` into ``P(A, B | C)`` (the chain rule), as long as some pair merges."""
    while True:
        by_given = {frozenset(f.given): f for f in factors if isinstance(f, Probability)}
        pair = next(((a, by_given[a.variables]) for a in factors
                     if isinstance(a, Probability) and a.heads and a.variables in by_given), None)
        if pair is None:
            return factors
        a, b = pair
        factors = [f for f in factors if f is not a and f is not b]
        factors.append(Probability(a.head_vars + b.head_vars, a.given))


def marginal(expr: Expression, over: Iterable[Hashable]) -> Expression:
    """``Σ_{over} expr``, simplified: normalized factors summed over their own heads disappear.

    Every rewrite is an identity (``Σ_a P(a, b | c) = P(b | c)``,
    ``Σ_a f g = f Σ_a g`` when f does not depend on a, ...), so the result is
    always equal to the plain sum.
    """
    over = frozenset(over) & expr.variables
    if not over:
        return expr
    if isinstance(expr, Sum):
        return marginal(expr.expr, over | frozenset(expr.over))
    if over <= expr.heads:
        if isinstance(expr, Probability):
            rest = tuple(v for v in expr.head_vars if v not in over)
            return Probability(rest, expr.given) if rest else ONE
        if isinstance(expr, Fraction):
            return fraction(marginal(expr.num, over), expr.den, expr.heads - over) if expr.heads - over else ONE
    if isinstance(expr, Product):
        return _marginal_product(list(expr.factors), set(over))
    return Sum(expr, _stable(over))


def _counts(factors: list) -> dict:
    """How many factors each variable is free in."""
    count: dict = {}
    for f in factors:
        for v in f.variables:
            count[v] = count.get(v, 0) + 1
    return count


def _lift_sums(factors: list, over: set) -> tuple[list, set]:
    """``Σ_a f Σ_b g = Σ_{a,b} f g`` when b is not free in f: bring inner sums out, then merge chains."""
    count = _counts(factors)
    out: list = []
    for f in factors:
        bound = frozenset(f.over) if isinstance(f, Sum) else frozenset()
        if bound and not any(count.get(v, 0) or v in over for v in bound):
            over = over | bound
            out.extend(f.expr.factors if isinstance(f.expr, Product) else (f.expr,))
        else:
            out.append(f)
    merged = product(out)
    return (list(merged.factors) if isinstance(merged, Product) else [merged]), set(over)


def _marginal_product(factors: list, over: set) -> Expression:
    factors, over = _lift_sums(factors, over)
    progress = True
    while over and progress:
        progress = False
        count = _counts(factors)
        for i, f in enumerate(factors):   # a variable free in one factor only, as a head: sum it there
            mine = frozenset(w for w in over & f.heads if count[w] == 1)
            if mine:
                factors[i] = marginal(f, mine)
                over -= mine
                progress = True
        factors = [f for f in factors if f != ONE]
        over &= frozenset().union(*(f.variables for f in factors)) if factors else frozenset()
    if not over:
        return product(factors)
    inner = [f for f in factors if f.variables & over]
    outer = [f for f in factors if not f.variables & over]
    return product(outer + [Sum(product(inner), _stable(over))])


def fraction(num: Expression, den: Expression, heads: Iterable[Hashable] = ()) -> Expression:
    """``num / den`` with common factors cancelled and ``P(A, B | C) / P(B | C) = P(A | B, C)``."""
    nf = list(num.factors) if isinstance(num, Product) else [num]
    df = list(den.factors) if isinstance(den, Product) else [den]
    for f in list(df):
        if f in nf:
            nf.remove(f)
            df.remove(f)
    num, den = product(nf), product(df)
    if den == ONE:
        return num
    if (isinstance(num, Probability) and isinstance(den, Probability)
            and frozenset(num.given) == frozenset(den.given) and den.heads < num.heads):
        rest = tuple(v for v in num.head_vars if v not in den.heads)
        return Probability(rest, num.given + den.head_vars)
    return Fraction(num, den, heads)


def conditional(dist: Expression, domain: Iterable[Hashable], target: Iterable[Hashable],
                given: Iterable[Hashable]) -> Expression:
    """``Q(target | given)`` from a distribution `dist` over the variables `domain`."""
    target, given = frozenset(target), frozenset(given)
    num = marginal(dist, frozenset(domain) - target - given)
    den = marginal(num, target)
    return fraction(num, den, target)


def _stable(nodes: Iterable[Hashable]) -> tuple:
    return tuple(sorted(nodes, key=str))


# -- printing ---------------------------------------------------------------------------------

_TEXT = {"sum": "Σ_{{{}}} ", "sep": " | ", "frac": "[{}] / [{}]", "group": "[{}]", "prime": "'", "one": "1",
         "mul": " "}
_LATEX = {"sum": "\\sum_{{{}}} ", "sep": " \\mid ", "frac": "\\frac{{{}}}{{{}}}", "group": "\\left[{}\\right]",
          "prime": "'", "one": "1", "mul": " "}


class _Printer:
    """Text or LaTeX of an expression; bound variables that shadow free ones get primes."""

    def __init__(self, order: Iterable[Hashable] | None, fmt: dict) -> None:
        self.rank = {v: i for i, v in enumerate(order)} if order is not None else {}
        self.fmt = fmt

    def _sorted(self, nodes: Iterable[Hashable]) -> list:
        return sorted(nodes, key=lambda v: (self.rank.get(v, len(self.rank)), str(v)))

    def _name(self, v: Hashable, names: dict) -> str:
        text = names.get(v, str(v))
        if self.fmt is _LATEX:
            text = text.replace("_", "\\_")
        return text

    def show(self, e: Expression, taken: frozenset, names: dict | None = None) -> str:
        names = names or {}
        if isinstance(e, Probability):
            heads = ", ".join(self._name(v, names) for v in e.head_vars)
            given = ", ".join(self._name(v, names) for v in e.given)
            return f"P({heads}{self.fmt['sep']}{given})" if given else f"P({heads})"
        if isinstance(e, Sum):
            names = dict(names)
            bound = []
            for v in self._sorted(e.over):
                label = str(v)
                while label in taken:
                    label += self.fmt["prime"]
                names[v] = label
                bound.append(self._name(v, names))
                taken = taken | {label}
            return self.fmt["sum"].format(", ".join(bound)) + self.show(e.expr, taken, names)
        if isinstance(e, Fraction):
            return self.fmt["frac"].format(self.show(e.num, taken, names), self.show(e.den, taken, names))
        return self._product(e, taken, names)

    def _product(self, e: Expression, taken: frozenset, names: dict) -> str:
        if not e.factors:
            return self.fmt["one"]
        plain = [f for f in e.factors if not isinstance(f, Sum)]
        sums = [f for f in e.factors if isinstance(f, Sum)]
        plain = sorted(plain, key=lambda f: max((self.rank.get(v, -1) for v in f.heads), default=-1))
        parts = [self.show(f, taken, names) for f in plain]
        parts += [self.fmt["group"].format(self.show(f, taken, names)) for f in sums[:-1]]
        parts += [self.show(f, taken, names) for f in sums[-1:]]
        return self.fmt["mul"].join(parts)


# -- the mixed graph --------------------------------------------------------------------------

class MixedGraph:
    """An acyclic directed mixed graph (ADMG): directed edges plus bidirected edges.

    Nodes are kept in a topological order of the directed part. Built by
    :func:`latent_projection` from a DAG with latent nodes; every method
    returns a new graph.

    Examples
    --------
    >>> h = MixedGraph([("X", "Z"), ("Z", "Y")], [("X", "Y")])
    >>> [sorted(c) for c in h.c_components()]
    [['X', 'Y'], ['Z']]
    >>> h.bidirected_edges
    (('X', 'Y'),)
    """

    __slots__ = ("nodes", "_pa", "_bi", "_rank", "dag_class")

    def __init__(self, directed: Iterable[tuple] = (), bidirected: Iterable[tuple] = (),
                 nodes: Iterable[Hashable] = (), *, dag_class: type | None = None) -> None:
        directed, bidirected = list(directed), list(bidirected)
        self.dag_class = dag_class or default_dag_class()
        dag = DAGCore(directed, nodes=list(nodes) + [v for e in bidirected for v in _pair(e)])
        self.nodes = dag.topological_order()
        self._rank = {v: i for i, v in enumerate(self.nodes)}
        self._pa = {v: frozenset(dag.parents(v)) for v in self.nodes}
        bi: dict = {v: set() for v in self.nodes}
        for e in bidirected:
            a, b = _pair(e)
            if a == b:
                raise GraphError(f"bidirected self-loop on {a!r}")
            bi[a].add(b)
            bi[b].add(a)
        self._bi = {v: frozenset(s) for v, s in bi.items()}

    @classmethod
    def _build(cls, nodes: tuple, pa: dict, bi: dict, dag_class: type) -> MixedGraph:
        self = cls.__new__(cls)
        self.dag_class = dag_class
        self.nodes = nodes
        self._rank = {v: i for i, v in enumerate(nodes)}
        self._pa, self._bi = pa, bi
        return self

    @property
    def directed_edges(self) -> tuple:
        """``(parent, child)`` pairs in node order."""
        return tuple((p, v) for v in self.nodes for p in self.sorted(self._pa[v]))

    @property
    def bidirected_edges(self) -> tuple:
        """``(a, b)`` pairs, each once, ``a`` before ``b`` in node order."""
        return tuple((a, b) for a in self.nodes for b in self.sorted(self._bi[a]) if self._rank[a] < self._rank[b])

    def sorted(self, nodes: Iterable[Hashable]) -> list:
        """`nodes` in the graph's (topological) order."""
        return sorted(nodes, key=self._rank.__getitem__)

    def parents(self, v: Hashable) -> frozenset:
        return self._pa[v]

    def siblings(self, v: Hashable) -> frozenset:
        """Nodes joined to `v` by a bidirected edge."""
        return self._bi[v]

    def ancestors(self, nodes: Iterable[Hashable]) -> frozenset:
        """Ancestors of `nodes`, the nodes included."""
        out = set(nodes)
        stack = list(out)
        while stack:
            for p in self._pa[stack.pop()]:
                if p not in out:
                    out.add(p)
                    stack.append(p)
        return frozenset(out)

    def subgraph(self, nodes: Iterable[Hashable]) -> MixedGraph:
        keep = frozenset(nodes)
        return MixedGraph._build(tuple(v for v in self.nodes if v in keep),
                                 {v: self._pa[v] & keep for v in self.nodes if v in keep},
                                 {v: self._bi[v] & keep for v in self.nodes if v in keep}, self.dag_class)

    def do(self, nodes: Iterable[Hashable]) -> MixedGraph:
        """Remove every edge into `nodes` (directed and bidirected)."""
        cut = frozenset(nodes)
        return MixedGraph._build(self.nodes,
                                 {v: frozenset() if v in cut else self._pa[v] for v in self.nodes},
                                 {v: frozenset() if v in cut else self._bi[v] - cut for v in self.nodes},
                                 self.dag_class)

    def remove_outgoing(self, nodes: Iterable[Hashable]) -> MixedGraph:
        """Remove every directed edge out of `nodes` (bidirected edges stay)."""
        cut = frozenset(nodes)
        return MixedGraph._build(self.nodes, {v: self._pa[v] - cut for v in self.nodes}, self._bi, self.dag_class)

    def c_components(self) -> list[frozenset]:
        """The c-components (districts): classes of nodes joined by bidirected paths, in node order."""
        seen: set = set()
        out = []
        for v in self.nodes:
            if v in seen:
                continue
            comp = {v}
            stack = [v]
            while stack:
                for s in self._bi[stack.pop()]:
                    if s not in comp:
                        comp.add(s)
                        stack.append(s)
            seen |= comp
            out.append(frozenset(comp))
        return out

    def to_dag(self) -> DAGCore:
        """The canonical DAG: one latent node ``U[a,b]`` per bidirected edge, of the class :attr:`dag_class`."""
        return with_bidirected(self.dag_class(self.directed_edges, nodes=self.nodes), self.bidirected_edges)

    def m_separated(self, x: Iterable[Hashable], y: Iterable[Hashable], given: Iterable[Hashable] = ()) -> bool:
        """m-separation (d-separation in the canonical DAG)."""
        return separation.d_separated(self.to_dag(), set(x), set(y), given=set(given))

    def to_dot(self) -> str:
        """DOT text: directed edges solid, bidirected edges dashed with two arrowheads."""
        q = _dot_id
        lines = ["digraph {"] + [f"  {q(v)};" for v in self.nodes]
        lines += [f"  {q(a)} -> {q(b)};" for a, b in self.directed_edges]
        lines += [f"  {q(a)} -> {q(b)} [dir=both, style=dashed, constraint=false];" for a, b in self.bidirected_edges]
        return "\n".join(lines + ["}"])

    def __repr__(self) -> str:
        return f"<MixedGraph {len(self.nodes)} nodes, {len(self.directed_edges)} directed, " \
               f"{len(self.bidirected_edges)} bidirected>"


def _dot_id(v: Hashable) -> str:
    text = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _pair(e: Any) -> tuple:
    try:
        a, b = e
    except (TypeError, ValueError):
        raise GraphError(f"edge {e!r} is not a pair of nodes") from None
    return a, b


def as_graph(graph: Any, fn: str = "identify") -> DAGCore | MixedGraph:
    """`graph` itself (a DAG or a mixed graph), or the DAG that a graph text describes.

    Text is dagitty-like (:meth:`causalnet.DAG.parse`): ``"X -> Y; X <-> Y"``,
    each ``A <-> B`` a latent common parent ``U[A,B]``.
    """
    if isinstance(graph, str):
        edges, nodes, latent = parse_graph(graph)
        return default_dag_class()(edges, nodes=nodes, latent=latent)
    if not isinstance(graph, (DAGCore, MixedGraph)):
        raise GraphError(f"{fn} expects a DAG, a MixedGraph or a graph text such as 'X -> Y; X <-> Y', "
                         f"got {type(graph).__name__}")
    return graph


def latent_projection(dag: DAGCore | MixedGraph | str) -> MixedGraph:
    """The mixed graph over the observed nodes of `dag` (a DAG, a mixed graph, or a graph text).

    ``A -> B`` when a directed path leads from A to B through latent nodes
    only; ``A <-> B`` when a latent node has directed paths to both A and B
    through latent nodes only. The projection keeps every d-separation among
    observed nodes and every identification result.
    """
    dag = as_graph(dag, "latent_projection")
    if isinstance(dag, MixedGraph):
        return dag
    lat = dag.latent
    reach: dict = {}  # latent -> observed nodes it reaches through latent nodes only
    for v in reversed(dag.topological_order()):
        if v in lat:
            out: set = set()
            for c in dag.children(v):
                out |= reach[c] if c in lat else {c}
            reach[v] = frozenset(out)
    directed = []
    for v in dag.observed:
        for c in dag.children(v):
            directed.extend((v, o) for o in ([c] if c not in lat else reach[c]))
    bidirected = set()
    for u in lat:
        r = sorted(reach[u], key=dag.nodes.index)
        bidirected.update((a, b) for i, a in enumerate(r) for b in r[i + 1:])
    order = [v for v in dag.topological_order() if v not in lat]
    graph = MixedGraph(set(directed), sorted(bidirected, key=str), nodes=order, dag_class=type(dag))
    return graph


def c_components(dag: DAGCore) -> list[frozenset]:
    """The c-components (districts) of the observed nodes of `dag`; see :meth:`MixedGraph.c_components`."""
    return latent_projection(dag).c_components()


def district(dag: DAGCore, node: Hashable) -> frozenset:
    """The c-component of `node` (an observed node of `dag`)."""
    h = latent_projection(dag)
    _check_nodes(h, [node], "node")
    return next(c for c in h.c_components() if node in c)


def with_bidirected(dag: DAGCore, pairs: Iterable[tuple[Hashable, Hashable]]) -> DAGCore:
    """`dag` plus one latent common parent per pair (``X <-> Y``), named ``U[X,Y]``.

    A name already in the graph gets a numeric suffix. The pairs' nodes must
    exist (or are added).

    Examples
    --------
    >>> g = with_bidirected(DAGCore([("X", "Y")]), [("X", "Y")])
    >>> sorted(g.latent), g.parents("Y")
    (['U[X,Y]'], ('X', 'U[X,Y]'))
    """
    edges = list(dag.edges)
    names = set(dag.nodes)
    latent = set(dag.latent)
    for e in pairs:
        a, b = _pair(e)
        if a == b:
            raise GraphError(f"bidirected self-loop on {a!r}")
        name = latent_parent_name(a, b, names)
        names.add(name)
        latent.add(name)
        edges += [(name, a), (name, b)]
    return type(dag)(edges, nodes=list(dag.nodes) + [n for n in names if n not in dag], latent=latent,
               intervened=dag.intervened)


# -- ID and IDC -------------------------------------------------------------------------------

def _hedge(query: str, forest: frozenset, sub: frozenset, graph: MixedGraph) -> NotIdentifiable:
    f_text = "{" + ", ".join(map(str, graph.sorted(forest))) + "}"
    s_text = "{" + ", ".join(map(str, graph.sorted(sub))) + "}"
    err = NotIdentifiable(
        f"{query} is not identifiable: hedge F = {f_text}, F' = {s_text} (two c-forests with the same roots; "
        f"F holds the treatments {{{', '.join(map(str, graph.sorted(forest - sub)))}}} and F' none)")
    err.hedge = (forest, sub)
    err.query = query
    return err


def id_algorithm(graph: MixedGraph, y: frozenset, x: frozenset, dist: Expression | None = None,
                 query: str = "") -> Expression:
    """The ID algorithm (Shpitser & Pearl 2006, Fig. 3): ``P(y | do(x))`` as an expression.

    Parameters
    ----------
    graph : MixedGraph
        The mixed graph over the observed nodes.
    y, x : frozenset
        Outcomes and treatments (disjoint sets of nodes of `graph`).
    dist : Expression, optional
        The distribution over ``graph.nodes`` (default: ``P(V)``).

    Raises
    ------
    NotIdentifiable
        On a hedge; ``err.hedge`` is ``(F, F')``.
    """
    dist = Probability(graph.nodes) if dist is None else dist
    return _Id(graph, query).run(frozenset(y), frozenset(x), dist, graph)


class _Id:
    """One run of ID; `order` is a topological order shared by every subgraph."""

    def __init__(self, graph: MixedGraph, query: str) -> None:
        self.graph = graph
        self.query = query

    def kernel(self, dist: Expression, g: MixedGraph, v: Hashable) -> Expression:
        """``P(v | v_π^(i-1))`` from `dist` over ``g.nodes``."""
        pred = g.nodes[:g.nodes.index(v)]
        if isinstance(dist, Probability) and not dist.given and dist.heads == frozenset(g.nodes):
            # P(V) of an ancestral set is Markov to g: v depends on its predecessors only
            # through its Markov pillow (its district among them and the district's parents)
            upto = g.subgraph(pred + (v,))
            dist_v = next(c for c in upto.c_components() if v in c)
            pillow = (dist_v | frozenset().union(*(g.parents(u) for u in dist_v))) - {v}
            return Probability([v], g.sorted(pillow))
        return conditional(dist, g.nodes, [v], pred)

    def run(self, y: frozenset, x: frozenset, dist: Expression, g: MixedGraph) -> Expression:
        v_all = frozenset(g.nodes)
        if not x:                                                   # line 1
            return marginal(dist, v_all - y)
        an = g.ancestors(y)
        if an != v_all:                                             # line 2
            return self.run(y, x & an, marginal(dist, v_all - an), g.subgraph(an))
        w = (v_all - x) - g.do(x).ancestors(y)
        if w:                                                       # line 3
            return self.run(y, x | w, dist, g)
        comps = g.subgraph(v_all - x).c_components()
        if len(comps) > 1:                                          # line 4
            parts = [self.run(s, v_all - s, dist, g) for s in comps]
            return marginal(product(parts), v_all - y - x)
        s = comps[0]
        whole = g.c_components()
        if len(whole) == 1:                                         # line 5
            raise _hedge(self.query, v_all, s, g)
        if s in whole:                                              # line 6
            return marginal(product(self.kernel(dist, g, v) for v in g.sorted(s)), s - y)
        big = next(c for c in whole if s < c)                       # line 7
        sub = g.subgraph(big)
        new = product(self.kernel(dist, g, v) for v in sub.nodes)
        return self.run(y, x & big, new, sub)


def _idc(graph: MixedGraph, y: frozenset, x: frozenset, z: frozenset, query: str) -> Expression:
    """IDC (Shpitser & Pearl 2006b): move conditions into the intervention by rule 2, then divide."""
    for w in graph.sorted(z):
        rest = z - {w}
        if graph.do(x).remove_outgoing([w]).m_separated(y, [w], x | rest):
            return _idc(graph, y, x | {w}, rest, query)
    joint = id_algorithm(graph, y | z, x, query=query)
    return fraction(joint, marginal(joint, y), y)


# -- the user-facing estimand ------------------------------------------------------------------

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
        return _Printer(self.order, _TEXT).show(self.expression, self._taken())

    def to_latex(self) -> str:
        """The formula in LaTeX."""
        return _Printer(self.order, _LATEX).show(self.expression, self._taken())

    def evaluate(self, source: Any, *, do: Mapping | None = None, evidence: Mapping | None = None) -> Any:
        """The estimand's value on a model or a data frame; see :func:`causalnet.graph.evaluation.evaluate`."""
        return evaluate(self, source, do=do, evidence=evidence)

    def __repr__(self) -> str:
        return f"<Estimand {self.query} = {self} ({self.method})>"


def _check_nodes(graph: MixedGraph, nodes: Iterable[Hashable], role: str) -> frozenset:
    known = set(graph.nodes)
    out = []
    for v in nodes:
        try:
            hash(v)
        except TypeError:
            raise GraphError(f"{role} {v!r} is not hashable") from None
        if v not in known:
            close = difflib.get_close_matches(str(v), [str(n) for n in graph.nodes], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise GraphError(f"unknown or latent {role} {v!r}: identification uses observed nodes only{hint}")
        out.append(v)
    return frozenset(out)


def _as_list(nodes: Any) -> list:
    if nodes is None:
        return []
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        return [nodes]
    return list(nodes)


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
        return _as_list(outcomes), _as_list(treatments), _as_list(given), {}
    if _as_list(treatments) or _as_list(given):
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
    ys, xs, zs = _check_nodes(h, y, "outcome"), _check_nodes(h, x, "treatment"), _check_nodes(h, z, "condition")
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
        expr = _idc(h, ys, xs, zs, label) if zs else id_algorithm(h, ys, xs, query=label)
        method = "IDC" if zs else "ID"
        extra = expr.variables - ys - xs - zs
        if extra:  # ID line 3 intervenes on nodes the answer does not depend on: average them out
            expr = marginal(product([Probability(h.sorted(extra)), expr]), extra)
        if simplify and not zs:
            expr, method = _frontdoor(graph, h, ys, xs) or (expr, method)
    return Estimand(expr, h.sorted(ys), h.sorted(xs), h.sorted(zs), values=values, method=method, order=h.nodes)


def _dag_of(graph: DAGCore | MixedGraph) -> DAGCore:
    return graph.to_dag() if isinstance(graph, MixedGraph) else graph


def _adjustment(graph, h: MixedGraph, ys: frozenset, xs: frozenset, zs: frozenset) -> tuple:
    """``Σ_S P(y | x, S, z) P(S | z)`` for a back-door set S ∪ z (z not caused by x); else (None, None)."""
    dag = _dag_of(graph)
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
    dag = _dag_of(graph)
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


# -- do-calculus ------------------------------------------------------------------------------

def do_calculus(graph: DAGCore | MixedGraph, rule: int, y: Any, x: Any = (), z: Any = (), w: Any = ()) -> bool:
    """Whether Pearl's rule `rule` (1, 2 or 3) applies to ``P(y | do(x), z, w)``.

    1. ``P(y | do(x), z, w) = P(y | do(x), w)`` if Y ⊥ Z | X, W in G with edges into X removed;
    2. ``P(y | do(x), do(z), w) = P(y | do(x), z, w)`` if Y ⊥ Z | X, W in G with edges into X
       and out of Z removed;
    3. ``P(y | do(x), do(z), w) = P(y | do(x), w)`` if Y ⊥ Z | X, W in G with edges into X and into
       Z(W) removed, Z(W) being the nodes of Z that are not ancestors of W in G with edges into X removed.

    Latent nodes (or bidirected edges of a mixed graph) stay in the graph as unobserved causes.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG([("Z", "X"), ("X", "Y"), ("Z", "Y")])
    >>> do_calculus(g, 2, "Y", z="X", w="Z"), do_calculus(g, 2, "Y", z="X")
    (True, False)
    """
    dag = _dag_of(as_graph(graph, "do_calculus"))
    if rule not in (1, 2, 3):
        raise GraphError(f"do-calculus has rules 1, 2 and 3, got {rule!r}")
    h = latent_projection(dag)
    ys, xs, zs, ws = (_check_nodes(h, _as_list(v), role) for v, role in
                      ((y, "outcome"), (x, "treatment"), (z, "rule node"), (w, "condition")))
    if not ys or not zs:
        raise GraphError("do_calculus needs at least one outcome and one node in z")
    if len(ys | xs | zs | ws) != len(ys) + len(xs) + len(zs) + len(ws):
        raise GraphError("do_calculus: y, x, z and w must be disjoint")
    cut = dag.do(xs) if xs else dag
    if rule == 2:
        cut = cut.remove_edges([(a, b) for a in zs for b in cut.children(a)])
    elif rule == 3:
        z_w = zs - (cut.ancestors(ws, include_self=True) if ws else frozenset())
        cut = cut.do(z_w) if z_w else cut
    return separation.d_separated(cut, ys, zs, given=xs | ws)
