r"""Enumerating every minimal d-separator, with polynomial delay.

Terms
-----
A set Z *d-separates* A and B when it blocks every path between them (see
:mod:`causalnet.graph.separation`). Z is a *minimal* separator when no proper
subset of it separates; with a set I of nodes that must be included, Z is
minimal *relative to I* when ``I ⊆ Z`` and no Z' with ``I ⊆ Z' ⊊ Z``
separates. A graph can have exponentially many minimal separators, so they
are listed one at a time: the time between two answers is polynomial in the
size of the graph (van der Zander, Liśkiewicz & Textor 2019, ListMinSep).

How: a separator minimal relative to I lies in An(A ∪ B ∪ I), and a subset Z
of that ancestral set (with I ⊆ Z) d-separates A and B exactly when it
separates them in the moral graph of An(A ∪ B ∪ I) (Lauritzen et al. 1990).
With I deleted from that moral graph, the answers are the minimal vertex
separators of A and B (each contracted to one vertex) that lie inside the
allowed nodes, each with I added back. The vertex separators are listed by a
branching over separators "closest to B" (Takata 2010): each branch of the
search yields a new separator, so no branch is wasted.

The same machinery lists minimal adjustment sets
(:func:`causalnet.graph.adjustment.minimal_adjustment_sets`): they are the
minimal d-separators of X and Y in the proper back-door graph.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("A -> B -> D; A -> C -> D")
>>> sorted(sorted(z) for z in g.minimal_separators("A", "D"))
[['B', 'C']]
>>> g = cn.DAG.parse("X <- A -> M <- B -> Y; X <- C -> Y")
>>> sorted(sorted(z) for z in g.minimal_separators("X", "Y"))
[['C']]
>>> sorted(sorted(z) for z in g.minimal_separators("X", "Y", include={"M"}))
[['A', 'C', 'M'], ['B', 'C', 'M']]

References
----------
.. [1] B. van der Zander, M. Liśkiewicz, J. Textor, "Separators and adjustment
       sets in causal graphs: complete criteria and an algorithmic framework",
       Artificial Intelligence 270, 2019.
.. [2] K. Takata, "Space-optimal, backtracking algorithms to list the minimal
       vertex separators of a graph", Discrete Applied Mathematics 158, 2010.
.. [3] S. L. Lauritzen, A. P. Dawid, B. N. Larsen, H.-G. Leimer, "Independence
       properties of directed Markov fields", Networks 20, 1990.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import GraphError
from .core import DAGCore, closure
from .separation import d_separated, moral_graph

__all__ = [
    "minimal_separators",
    "minimal_vertex_separators",
    "minimal_d_separator_ints",
    "is_d_separator",
    "is_minimal_d_separator",
]


def _close(nb: dict, b: frozenset, allowed: frozenset, s: set, new) -> frozenset | None:
    """`s` plus `new`, closed under neighbours outside `allowed`; None if it touches `b`."""
    s = set(s)
    stack = []
    for v in new:
        if v in b:
            return None
        if v not in s:
            s.add(v)
            stack.append(v)
    while stack:
        for w in nb[stack.pop()]:
            if w in s:
                continue
            if w in b:
                return None
            if w not in allowed:
                s.add(w)
                stack.append(w)
    return frozenset(s)


def _closest(nb: dict, b: frozenset, s: frozenset) -> frozenset:
    """The minimal separator closest to `b` with `s` on the other side: N(C_b) in the graph minus N(s)."""
    ns = {w for u in s for w in nb[u] if w not in s}
    comp = closure(nb, b, ns)
    return frozenset(w for u in comp for w in nb[u] if w not in comp)


def minimal_vertex_separators(nb: dict, a: frozenset, b: frozenset, allowed: frozenset) -> Iterator[frozenset]:
    """All minimal vertex separators of `a` and `b` in the undirected graph `nb` that lie inside `allowed`.

    `nb` maps each vertex to its neighbours; `a` and `b` are disjoint vertex
    sets acting as two contracted vertices. A call (S, M) of the search lists
    the minimal separators Z with S inside the component of `a` in the graph
    minus Z and with M ⊆ Z. S is connected and closed: every neighbour of S
    outside `allowed` is absorbed into S (it cannot be in Z, so it lies on a's
    side); if b touches S, the call is empty. The minimal separator closest to
    b with S on a's side is Z0 = N(C_b), C_b the component of b in the graph
    minus N(S). Any other separator of the call has a first node v_i of
    Z0 minus M on a's side, and v_1 .. v_(i-1) in Z, so the children
    (S + v_i, M + {v_1..v_(i-1)}) partition the rest. A call is empty exactly
    when M is not inside its Z0 (each node of M must touch C_b), so every
    call that survives that test yields a separator: the delay is polynomial,
    O(n (n + m)). The search keeps an explicit stack (no recursion limit on
    large graphs).
    """
    s0 = _close(nb, b, allowed, set(), a)
    if s0 is None:
        return
    z0 = _closest(nb, b, s0)
    yield z0
    stack = [[s0, frozenset(), sorted(z0), 0]]
    while stack:
        frame = stack[-1]
        s, m, vs, i = frame
        if i == len(vs):
            stack.pop()
            continue
        frame[3] = i + 1
        s2 = _close(nb, b, allowed, s, (vs[i],))
        if s2 is None:
            continue
        m2 = m.union(vs[:i])
        z0 = _closest(nb, b, s2)
        if not m2 <= z0:
            continue
        yield z0
        stack.append([s2, m2, sorted(z0 - m2), 0])


def minimal_d_separator_ints(par: list, xs: frozenset, ys: frozenset, allowed: frozenset,
                             include: frozenset = frozenset()) -> Iterator[frozenset]:
    """Minimal d-separators (relative to `include`) of `xs` and `ys` inside `allowed` ∪ `include`.

    On integer nodes: `par` holds the parent lists of the graph (so a caller
    may pass a graph with some edges removed). Each answer contains
    `include`; the part outside it is a minimal vertex separator in the
    moral graph of An(X ∪ Y ∪ I) with I deleted (see the module docstring).
    """
    anc = closure(par, xs | ys | include)
    nb = moral_graph(par, anc)
    if include:
        nb = {v: ws - include for v, ws in nb.items() if v not in include}
    for z in minimal_vertex_separators(nb, xs, ys, frozenset(allowed & anc) - include):
        yield z | include


def _check(dag: DAGCore, a, b, include, restrict) -> tuple[frozenset, frozenset, frozenset, frozenset]:
    if not isinstance(dag, DAGCore):
        raise GraphError(f"minimal_separators expects a causalnet DAG, got {type(dag).__name__}")
    a_s = dag.node_set(a, "node", allow_empty=False)
    b_s = dag.node_set(b, "node", allow_empty=False)
    inc = dag.node_set(include, "included node")
    res = frozenset(dag.observed) if restrict is None else dag.node_set(restrict, "restricted node")
    if a_s & b_s:
        raise GraphError(f"a and b overlap on {dag.in_order(a_s & b_s)}; separation needs disjoint sets")
    if inc & (a_s | b_s):
        raise GraphError(f"include overlaps a or b on {dag.in_order(inc & (a_s | b_s))}")
    for what, nodes in (("include", inc), ("restrict", res)):
        hidden = nodes & dag.latent
        if hidden:
            raise GraphError(f"{what} holds latent nodes {dag.in_order(hidden)}; a separator must be observed")
    if not inc <= res:
        raise GraphError(f"included nodes {dag.in_order(inc - res)} are outside restrict")
    return a_s, b_s, inc, res


def minimal_separators(dag: DAGCore, a, b, include=(), restrict=None) -> Iterator[frozenset]:
    """Every minimal set Z with `include` ⊆ Z ⊆ `restrict` that d-separates `a` and `b`, one at a time.

    Parameters
    ----------
    dag : DAG
    a, b : node or iterable of nodes
        Non-empty and disjoint; latent nodes are allowed here (it is a
        question about the graph).
    include : node or iterable of nodes, optional
        Nodes every separator must contain (I); minimality is then relative
        to I: no separator Z' with I ⊆ Z' ⊊ Z exists.
    restrict : node or iterable of nodes, optional
        The nodes a separator may use (R). Defaults to the observed nodes; it
        may not hold latent nodes, so a latent node is never chosen.

    Yields
    ------
    frozenset
        Each minimal separator once, in the order the search finds them (no
        answer at all when no separator inside R exists, e.g. when a and b
        are adjacent). The time between two answers is polynomial in the size
        of the graph, O(n (n + m)), so taking the first few answers of a
        graph with exponentially many is cheap.

    Raises
    ------
    GraphError
        Before the first answer, when a node is unknown, a or b is empty, the
        sets overlap, `include` or `restrict` holds a latent node, or
        `include` is not inside `restrict`.

    References
    ----------
    .. [1] van der Zander, Liśkiewicz & Textor, Artificial Intelligence 270,
           2019 (ListMinSep).

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("X <- A -> Y; X <- B -> Y; A -> B")
    >>> sorted(sorted(z) for z in minimal_separators(g, "X", "Y"))
    [['A', 'B']]
    >>> list(minimal_separators(g, "X", "Y", restrict={"A"}))
    []
    """
    a_s, b_s, inc, res = _check(dag, a, b, include, restrict)
    return _named(dag, a_s, b_s, inc, res)


def _named(dag: DAGCore, a_s: frozenset, b_s: frozenset, inc: frozenset, res: frozenset) -> Iterator[frozenset]:
    ix = dag.index
    pos, nodes = ix.pos, ix.nodes
    ai, bi, ii = (frozenset(pos[v] for v in s) for s in (a_s, b_s, inc))
    allowed = frozenset(pos[v] for v in res) - ai - bi
    for z in minimal_d_separator_ints(ix.par, ai, bi, allowed, ii):
        yield frozenset(nodes[i] for i in z)


def is_d_separator(dag: DAGCore, x, y, z) -> bool:
    """Whether `z` d-separates `x` and `y` (networkx's ``is_d_separator`` argument order).

    The same test as ``dag.d_separated(x, y, given=z)``.

    Examples
    --------
    >>> import causalnet as cn
    >>> is_d_separator(cn.DAG.parse("X -> M -> Y"), "X", "Y", {"M"})
    True
    """
    return d_separated(dag, x, y, z)


def is_minimal_d_separator(dag: DAGCore, x, y, z) -> bool:
    """Whether `z` d-separates `x` and `y` and no proper subset of it does.

    How: a minimal separator lies in An(X ∪ Y); there, d-separation is
    separation in the moral graph of An(X ∪ Y), where separators are closed
    upwards, so Z is minimal exactly when every z in Z touches both the part
    reachable from X and the part reachable from Y without passing Z (Tian,
    Paz & Pearl 1998). Linear in the size of the graph.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
    z : node or iterable of nodes, disjoint from `x` and `y`

    Raises
    ------
    GraphError
        If a node is unknown or the sets overlap.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("X <- A -> B -> Y; X -> Y2")
    >>> is_minimal_d_separator(g, "X", "Y", {"A"}), is_minimal_d_separator(g, "X", "Y", {"A", "B"})
    (True, False)
    """
    if not d_separated(dag, x, y, z):
        return False
    xs, ys, zs = dag.node_set(x, "node"), dag.node_set(y, "node"), dag.node_set(z, "separator node")
    ix = dag.index
    pos = ix.pos
    xi, yi, zi = (frozenset(pos[v] for v in s) for s in (xs, ys, zs))
    anc = closure(ix.par, xi | yi)
    if not zi <= anc:
        return False
    nb = moral_graph(ix.par, anc)
    from_x = closure(nb, xi, zi)
    from_y = closure(nb, yi, zi)
    return all(nb[v] & from_x and nb[v] & from_y for v in zi)

