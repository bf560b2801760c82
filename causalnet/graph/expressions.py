"""Estimand formulas as expression trees: probabilities, sums, products, fractions, printed as text or LaTeX.

An identified causal query is a formula over the observational distribution:
``Σ_{Z} P(Z) P(Y | X, Z)``. :class:`Probability`, :class:`Sum`,
:class:`Product` and :class:`Fraction` build it; the constructors
:func:`product`, :func:`marginal`, :func:`fraction` and :func:`conditional`
simplify as they build (a sum over a normalized factor's heads vanishes, one
factor needs no product); :func:`format_expression` prints it, priming bound
variables that shadow free ones. :mod:`causalnet.graph.identification` builds
these trees; :mod:`causalnet.graph.evaluation` computes them.

Examples
--------
>>> e = marginal(product([Probability(["Z"]), Probability(["Y"], ["X", "Z"])]), ["Z"])
>>> format_expression(e, order=["Z", "X", "Y"], taken=frozenset({"X", "Y"}))
'Σ_{Z} P(Z) P(Y | X, Z)'
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from .evaluation import Algebra

__all__ = [
    "Expression", "Probability", "Sum", "Product", "Fraction", "ONE", "Algebra",
    "marginal", "product", "fraction", "conditional", "format_expression",
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


def format_expression(expression: Expression, order: Iterable[Hashable] | None = None,
                      taken: frozenset = frozenset(), *, latex: bool = False) -> str:
    """`expression` as text (``Σ_{Z} P(Z) P(Y | X, Z)``) or LaTeX.

    Parameters
    ----------
    expression : Expression
    order : iterable of nodes, optional
        The order in which to print variables (a topological order reads best).
    taken : frozenset of str
        Names a bound (summed) variable must not reuse: it gets primes (``X'``).
    latex : bool, default False
    """
    return _Printer(order, _LATEX if latex else _TEXT).show(expression, frozenset(taken))
