r"""Covariate adjustment: backdoor, generalized adjustment and front-door sets.

Terms
-----
X are the *treatments* and Y the *outcomes* (disjoint, non-empty node sets).
A set Z of observed nodes is an *adjustment set* for (X, Y) when

    P(y | do(x)) = sum_z P(y | x, z) P(z)

in every distribution that factorises over the DAG, so the causal effect can be
estimated from observational data on X, Y and Z alone.

- A *backdoor path* from X is a path that starts with an arrow into X. Pearl's
  *backdoor criterion*: Z contains no descendant of X and blocks every backdoor
  path; equivalently Z d-separates X and Y in the graph with the edges out of X
  removed. It is sufficient, not necessary.
- A *proper causal path* is a directed path X -> ... -> Y that meets X only at
  its first node. The *adjustment criterion* (Shpitser, VanderWeele & Robins
  2010): no node of Z descends from a node (outside X) on a proper causal path,
  and Z blocks every proper non-causal path. It is sound and complete: Z is an
  adjustment set exactly when it holds. Constructively (van der Zander et al.
  2019), Z avoids the forbidden nodes and d-separates X and Y in the *proper
  back-door graph*, the DAG without the first edge of every proper causal path.
- The *front-door criterion* (Pearl 1995): Z intercepts every directed path
  from X to Y, no backdoor path from X to Z is open, and X blocks every
  backdoor path from Z to Y. Then
  P(y | do(x)) = sum_z P(z | x) sum_x' P(y | x', z) P(x'), which works even
  when X and Y share a latent confounder.
- The *single-door criterion* (Pearl 2009, Thm. 5.3.1) is the analogue for
  the *direct* effect of x on y along the edge x -> y: Z holds no descendant
  of y and d-separates x and y once that edge is removed (dagitty's
  ``effect = "direct"``). ``adjustment_sets(x, y, effect="direct")``.
- A valid set is *minimal* when no proper subset of it is valid.

Latent nodes are never chosen, and naming one as a treatment, outcome or
adjustment node is an error: what is not observed cannot be set or adjusted
for. Every search returns a list of frozensets sorted by size, then by node
order; an empty list means that no valid set exists.

The searches enumerate with polynomial delay: the time between two answers is
polynomial in the size of the graph, whatever the number of answers (which
can grow exponentially with the graph; `max_sets` caps it). All backdoor and
front-door sets are listed by branching on one node at a time and keeping
only branches that a polynomial test proves non-empty (van der Zander et al.
2019, ListSep; Jeong, Tian & Bareinboim 2022). Minimal adjustment sets (and
minimal backdoor sets) are the minimal vertex separators of X and Y in a
moral graph, restricted to the allowed nodes; they are listed by a branching
over separators "closest to Y", each branch yielding a new one. The one
exception is ``frontdoor_adjustment_sets(..., minimal=True)``: it lists with
polynomial delay the front-door sets that Y's side of the graph "touches" in
full, a family that holds every minimal set, and keeps the minimal ones; on
large graphs that family can be exponentially larger than the answer.

Examples
--------
M-bias: adjusting for the collider M opens a path that was closed.

>>> import causalnet as cn
>>> g = cn.DAG.parse("X <- A -> M <- B -> Y; X -> Y")
>>> g.is_adjustment_set("X", "Y", set()), g.is_adjustment_set("X", "Y", {"M"})
(True, False)
>>> g.minimal_adjustment_sets("X", "Y")
[frozenset()]
>>> [sorted(z) for z in g.backdoor_adjustment_sets("X", "Y")]
[[], ['A'], ['B'], ['A', 'M'], ['A', 'B'], ['B', 'M'], ['A', 'B', 'M']]

References
----------
.. [1] J. Pearl, "Causality: Models, Reasoning, and Inference", 2nd ed.,
       Cambridge University Press, 2009 (backdoor: Def. 3.3.1; front-door:
       Def. 3.3.3).
.. [2] I. Shpitser, T. VanderWeele, J. M. Robins, "On the validity of
       covariate adjustment for estimating causal effects", UAI 2010.
.. [3] E. Perković, J. Textor, M. Kalisch, M. H. Maathuis, "Complete graphical
       characterization and construction of adjustment sets in Markov
       equivalence classes of ancestral graphs", JMLR 18(220), 2018.
.. [4] B. van der Zander, M. Liśkiewicz, J. Textor, "Separators and adjustment
       sets in causal graphs: complete criteria and an algorithmic framework",
       Artificial Intelligence 270, 2019.
.. [5] H. Jeong, J. Tian, E. Bareinboim, "Finding and listing front-door
       adjustment sets", NeurIPS 2022.

Where each lives: :mod:`~causalnet.graph.backdoor` (the backdoor criterion),
this module (the complete adjustment criterion, total or direct effect),
:mod:`~causalnet.graph.frontdoor` (the front-door criterion),
:mod:`~causalnet.graph.criteria` (their shared argument checks and
primitives). This module re-exports all of them, so
``from causalnet.graph.adjustment import frontdoor_adjustment_sets`` works.
"""

from __future__ import annotations

from ..errors import GraphError
from .backdoor import all_separators, backdoor_adjustment_sets, is_backdoor_adjustment
from .core import DAGCore, closure
from .criteria import (
    check_max_sets,
    check_xy,
    check_xyz,
    collect_sets,
    int_set,
    node_names,
    observed_int_set,
    separated_ints,
)
from .frontdoor import frontdoor_adjustment_sets, is_frontdoor_adjustment
from .separators import minimal_d_separator_ints

__all__ = [
    "is_backdoor_adjustment",
    "backdoor_adjustment_sets",
    "is_adjustment_set",
    "minimal_adjustment_sets",
    "adjustment_sets",
    "effect_graph",
    "is_frontdoor_adjustment",
    "frontdoor_adjustment_sets",
]


# -- the (complete) adjustment criterion ----------------------------------------------


def _proper_backdoor(ix, xi: frozenset, yi: frozenset) -> tuple[list, list, set]:
    """The proper back-door graph and the forbidden nodes for (X, Y).

    PCP: the nodes other than X on proper causal paths, i.e. descendants of X
    in the graph without edges into X, that are ancestors of Y in the graph
    without edges out of X. Forbidden: X and the descendants of PCP. The
    proper back-door graph drops every edge X -> v with v in PCP.
    """
    par, chi = ix.par, ix.chi
    down: set = set()  # De(X) \ X when edges into X are removed
    stack = list(xi)
    while stack:
        for c in chi[stack.pop()]:
            if c not in down and c not in xi:
                down.add(c)
                stack.append(c)
    up = set(yi)  # An(Y), Y included, when edges out of X are removed
    stack = list(yi)
    while stack:
        for p in par[stack.pop()]:
            if p not in up and p not in xi:
                up.add(p)
                stack.append(p)
    pcp = down & up
    forbidden = closure(chi, pcp) | xi
    par2 = list(par)
    chi2 = list(chi)
    for u in xi:
        if any(c in pcp for c in chi[u]):
            chi2[u] = [c for c in chi[u] if c not in pcp]
            for c in chi[u]:
                if c in pcp:
                    par2[c] = [p for p in par2[c] if p != u]
    return par2, chi2, forbidden


_EFFECTS = ("total", "direct")


def _check_effect(dag: DAGCore, fn: str, effect, xs: frozenset, ys: frozenset) -> None:
    if not isinstance(effect, str) or effect not in _EFFECTS:
        raise GraphError(f"{fn}: effect must be 'total' or 'direct', got {effect!r}")
    if effect == "direct" and (len(xs) != 1 or len(ys) != 1):
        raise GraphError(f"{fn}: effect='direct' is the effect of one treatment on one outcome along the edge "
                         f"x -> y; got x = {node_names(dag, xs)} and y = {node_names(dag, ys)}")


def _single_door(ix, xi: frozenset, yi: frozenset) -> tuple[list, list, set]:
    """The graph without the edge x -> y, and the forbidden nodes (x and De(y)), for the direct effect."""
    (x,), (y,) = xi, yi
    par2, chi2 = list(ix.par), list(ix.chi)
    if y in ix.chi[x]:
        chi2[x] = [c for c in ix.chi[x] if c != y]
        par2[y] = [p for p in ix.par[y] if p != x]
    return par2, chi2, closure(ix.chi, yi) | xi


def effect_graph(dag: DAGCore, xi: frozenset, yi: frozenset, effect: str = "total") -> tuple[list, list, set]:
    """Adjacency lists (parents, children) in which adjustment is separation, and the forbidden nodes.

    On integer nodes. ``"total"``: the proper back-door graph and the
    descendants of proper causal paths (van der Zander et al. 2019);
    ``"direct"``: the graph without the edge x -> y and the descendants of y
    (Pearl's single-door criterion). Z is an adjustment set for that effect
    exactly when it avoids the forbidden nodes and d-separates X and Y in the
    graph.
    """
    if effect == "direct":
        return _single_door(dag.index, xi, yi)
    return _proper_backdoor(dag.index, xi, yi)


def is_adjustment_set(dag: DAGCore, x, y, z, *, effect: str = "total") -> bool:
    """Whether `z` is an adjustment set for (`x`, `y`) (complete criterion).

    Z is an adjustment set, ``P(y | do(x)) = sum_z P(y | x, z) P(z)`` for every
    distribution compatible with the DAG, exactly when (a) no node of Z is a
    descendant of a node outside X on a proper causal path from X to Y, and
    (b) Z blocks every proper non-causal path from X to Y (Shpitser et al.
    2010). It is tested in the constructive form of van der Zander et al.
    (2019): Z avoids the forbidden nodes and d-separates X and Y in the
    proper back-door graph. Linear in the size of the graph.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed.
    z : node or iterable of nodes
        The candidate set (may be empty): observed, disjoint from `x`, `y`.

    Returns
    -------
    bool

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, or the sets overlap.

    References
    ----------
    .. [1] I. Shpitser, T. VanderWeele, J. M. Robins, "On the validity of
           covariate adjustment for estimating causal effects", UAI 2010.
    .. [2] E. Perković, J. Textor, M. Kalisch, M. H. Maathuis, "Complete
           graphical characterization and construction of adjustment sets in
           Markov equivalence classes of ancestral graphs", JMLR 18, 2018.
    .. [3] B. van der Zander, M. Liśkiewicz, J. Textor, Artificial
           Intelligence 270, 2019.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("X -> M -> Y; X -> Y; M -> D")
    >>> is_adjustment_set(g, "X", "Y", set()), is_adjustment_set(g, "X", "Y", {"D"})
    (True, False)
    """
    xs, ys, zs = check_xyz(dag, "is_adjustment_set", x, y, z)
    _check_effect(dag, "is_adjustment_set", effect, xs, ys)
    xi, yi, zi = int_set(dag, xs), int_set(dag, ys), int_set(dag, zs)
    par, chi, forbidden = effect_graph(dag, xi, yi, effect)
    if zi & forbidden:
        return False
    return separated_ints(par, chi, xi, yi, zi)


def minimal_adjustment_sets(dag: DAGCore, x, y, *, effect: str = "total", max_sets: int | None = None) -> list[frozenset]:
    """All minimal adjustment sets for (`x`, `y`) under the complete criterion.

    A minimal adjustment set is one with no proper subset that is also an
    adjustment set (see :func:`is_adjustment_set`). They are the minimal
    d-separators of X and Y in the proper back-door graph that avoid the
    forbidden and latent nodes (van der Zander et al. 2019), and those are
    the minimal vertex separators of X and Y, each contracted to one vertex,
    in the moral graph of the ancestors of X ∪ Y, restricted to the allowed
    nodes. They are enumerated with polynomial delay, O(n (n + m)) between
    two answers, so graphs of thousands of nodes are fine as long as the
    number of answers is moderate (it can grow exponentially with the size of
    the graph; use `max_sets` to cap it).

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed.
    max_sets : int or None, default None
        Return at most this many sets (None: all). When the cap is reached
        the sets are the first found by the enumeration.

    Returns
    -------
    list of frozenset
        Sorted by size, then by node order; ``[]`` when the effect cannot be
        estimated by covariate adjustment.

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, they overlap, or
        `max_sets` is not a positive int or None.

    References
    ----------
    .. [1] I. Shpitser, T. VanderWeele, J. M. Robins, UAI 2010.
    .. [2] B. van der Zander, M. Liśkiewicz, J. Textor, "Separators and
           adjustment sets in causal graphs: complete criteria and an
           algorithmic framework", Artificial Intelligence 270, 2019.
    .. [3] K. Takata, "Space-optimal, backtracking algorithms to list the
           minimal vertex separators of a graph", Discrete Applied
           Mathematics 158, 2010.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("A -> X -> Y; A -> B -> Y; C -> B; C -> Y")
    >>> [sorted(z) for z in minimal_adjustment_sets(g, "X", "Y")]
    [['A'], ['B', 'C']]
    """
    fn = "minimal_adjustment_sets"
    xs, ys = check_xy(dag, fn, x, y)
    _check_effect(dag, fn, effect, xs, ys)
    check_max_sets(fn, max_sets)
    xi, yi = int_set(dag, xs), int_set(dag, ys)
    par, _, forbidden = effect_graph(dag, xi, yi, effect)
    allowed = observed_int_set(dag) - yi - forbidden
    return collect_sets(dag, minimal_d_separator_ints(par, xi, yi, allowed), max_sets)


def adjustment_sets(dag: DAGCore, x, y, *, effect: str = "total", minimal: bool = False,
                    max_sets: int | None = 1000) -> list[frozenset]:
    """All adjustment sets for the total or the direct effect of `x` on `y`.

    ``effect="total"``: the sets of the complete adjustment criterion
    (:func:`is_adjustment_set`), ``P(y | do(x)) = Σ_z P(y | x, z) P(z)``; every
    backdoor set is one, and there can be more. ``effect="direct"``: Pearl's
    *single-door* criterion for the edge x -> y, as dagitty's
    ``adjustmentSets(..., effect = "direct")``: Z holds no descendant of y
    and d-separates x and y in the graph without the edge x -> y. In a
    linear model such a Z identifies the path coefficient of x -> y: it is
    the coefficient of x in the regression of y on x and Z (Pearl's
    single-door theorem).

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed; one node each
        for ``effect="direct"``.
    effect : {"total", "direct"}, default "total"
    minimal : bool, default False
        Only the minimal sets (as :func:`minimal_adjustment_sets`).
    max_sets : int or None, default 1000
        Return at most this many sets (None: all); the search explores
        leaving a node out before putting it in, so the first sets are small.

    Returns
    -------
    list of frozenset
        Sorted by size, then by node order; ``[]`` when no set qualifies.

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, they overlap,
        `effect` is not one of the two, or ``effect="direct"`` is asked for
        sets of nodes, or `max_sets` is not a positive int or None.

    Notes
    -----
    Both effects reduce to listing separators: Z is valid exactly when it
    avoids a set of forbidden nodes and d-separates x and y in a modified
    graph (:func:`effect_graph`), listed by ListSep (all sets) or as minimal
    vertex separators (:mod:`causalnet.graph.separators`), with polynomial
    delay either way.

    References
    ----------
    .. [1] J. Pearl, "Causality", 2nd ed., 2009, Thm. 5.3.1 (single door).
    .. [2] B. van der Zander, M. Liśkiewicz, J. Textor, Artificial
           Intelligence 270, 2019.
    .. [3] J. Textor et al., "Robust causal inference using directed acyclic
           graphs: the R package 'dagitty'", IJE 45(6), 2016.

    Examples
    --------
    A mediator M must not be adjusted for the total effect, and must be for
    the direct one:

    >>> import causalnet as cn
    >>> g = cn.DAG.parse("X -> M -> Y; X -> Y; C -> X; C -> Y")
    >>> [sorted(z) for z in adjustment_sets(g, "X", "Y")]
    [['C']]
    >>> [sorted(z) for z in adjustment_sets(g, "X", "Y", effect="direct")]
    [['C', 'M']]
    """
    fn = "adjustment_sets"
    xs, ys = check_xy(dag, fn, x, y)
    _check_effect(dag, fn, effect, xs, ys)
    check_max_sets(fn, max_sets)
    xi, yi = int_set(dag, xs), int_set(dag, ys)
    par, chi, forbidden = effect_graph(dag, xi, yi, effect)
    allowed = observed_int_set(dag) - yi - forbidden
    if minimal:
        return collect_sets(dag, minimal_d_separator_ints(par, xi, yi, allowed), max_sets)
    return collect_sets(dag, all_separators(par, chi, xi, yi, allowed), max_sets)
