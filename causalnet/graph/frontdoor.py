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
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator

from ..errors import CausalNetWarning, GraphError
from .core import DAGCore, closure
from .separation import bayes_ball
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

# Internally nodes are the integers of the DAG's index (its node order), and a
# graph is a pair of adjacency lists ``par[v]`` / ``chi[v]``.


# -- validation ------------------------------------------------------------------


def _names(dag: DAGCore, nodes) -> list:
    return dag.in_order(nodes)


def _node_set(dag: DAGCore, nodes, fn: str, arg: str, role: str, allow_empty: bool) -> frozenset:
    try:
        out = dag.node_set(nodes, role, allow_empty=allow_empty)
    except GraphError as err:
        raise GraphError(f"{fn}: argument {arg}: {err}") from None
    hidden = out & dag.latent
    if hidden:
        verb = "is" if len(hidden) == 1 else "are"
        article = "an" if role[0] in "aeiou" else "a"
        raise GraphError(f"{fn}: argument {arg}: {_names(dag, hidden)} {verb} latent; {article} {role} must be observed")
    return out


def _check_xy(dag: DAGCore, fn: str, x, y) -> tuple[frozenset, frozenset]:
    if not isinstance(dag, DAGCore):
        raise GraphError(f"{fn}: expects a causalnet DAG, got {type(dag).__name__}")
    xs = _node_set(dag, x, fn, "x", "treatment", allow_empty=False)
    ys = _node_set(dag, y, fn, "y", "outcome", allow_empty=False)
    both = xs & ys
    if both:
        raise GraphError(f"{fn}: x and y overlap on {_names(dag, both)}; treatments and outcomes must be disjoint")
    return xs, ys


def _check_xyz(dag: DAGCore, fn: str, x, y, z) -> tuple[frozenset, frozenset, frozenset]:
    xs, ys = _check_xy(dag, fn, x, y)
    zs = _node_set(dag, z, fn, "z", "adjustment node", allow_empty=True)
    for arg, other, role in (("x", xs, "treatments"), ("y", ys, "outcomes")):
        both = zs & other
        if both:
            raise GraphError(f"{fn}: z overlaps {arg} on {_names(dag, both)}; z cannot contain {role}")
    return xs, ys, zs


def _check_max_sets(fn: str, max_sets) -> None:
    if max_sets is None:
        return
    if isinstance(max_sets, bool) or not isinstance(max_sets, int) or max_sets < 1:
        raise GraphError(f"{fn}: max_sets must be a positive int or None, got {max_sets!r}")


def _ints(dag: DAGCore, nodes: frozenset) -> frozenset:
    pos = dag.index.pos
    return frozenset(pos[v] for v in nodes)


def _observed_ints(dag: DAGCore) -> frozenset:
    pos = dag.index.pos
    return frozenset(pos[v] for v in dag.observed)


def _collect(dag: DAGCore, sets: Iterator[frozenset], max_sets: int | None) -> list[frozenset]:
    """Take at most `max_sets` integer sets, sort them, and map them to node names."""
    out: list[frozenset] = []
    for s in sets:
        out.append(s)
        if max_sets is not None and len(out) >= max_sets:
            break
    out.sort(key=lambda s: (len(s), sorted(s)))
    order = dag.nodes
    return [frozenset(order[i] for i in s) for s in out]


# -- graph primitives on integer adjacency lists ---------------------------------------


def _extend_ancestral(par: list, anc: set, v) -> set:
    """The ancestral set `anc` together with An(v) (a new set)."""
    out = set(anc)
    if v in out:
        return out
    out.add(v)
    stack = [v]
    while stack:
        for p in par[stack.pop()]:
            if p not in out:  # a node of `anc` brings its ancestors along already
                out.add(p)
                stack.append(p)
    return out


def _cut_out(par: list, chi: list, cut) -> tuple[list, list]:
    """Adjacency lists without the edges out of `cut` (Pearl's G with `cut` underlined)."""
    par2 = list(par)
    chi2 = list(chi)
    for u in cut:
        for c in chi[u]:
            par2[c] = [p for p in par2[c] if p not in cut]
        chi2[u] = []
    return par2, chi2


def _reachable(par: list, chi: list, sources, given, cut=frozenset()) -> set:
    """Nodes with a path from `sources` that is open given `given` (Bayes-ball), edges out of `cut` removed."""
    up_seen, down_seen = bayes_ball(par, chi, sources, given, cut=frozenset(cut))
    return up_seen | down_seen


def _separated(par: list, chi: list, xs, ys, zs, keep: set | None = None) -> bool:
    """d-separation; with `keep`, an ancestral set holding X, Y and Z, the ball stays inside it."""
    up_seen, down_seen = bayes_ball(par, chi, xs, zs, stop=ys, keep=keep)
    return not ((up_seen | down_seen) & ys)


# -- backdoor ------------------------------------------------------------------------


def is_backdoor_adjustment(dag: DAGCore, x, y, z) -> bool:
    """Whether `z` satisfies Pearl's backdoor criterion relative to (`x`, `y`).

    For sets: no node of Z is a descendant of a node of X, and Z d-separates
    X and Y in the graph with every edge out of X removed (so Z blocks every
    path from X to Y that starts with an arrow into X). A set that passes is an
    adjustment set; the converse fails (see :func:`is_adjustment_set`).

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed.
    z : node or iterable of nodes
        The candidate adjustment set (may be empty): observed, disjoint from
        `x` and `y`.

    Returns
    -------
    bool

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, or the sets overlap.

    References
    ----------
    .. [1] J. Pearl, "Causality", 2nd ed., 2009, Def. 3.3.1 and Thm. 3.3.2.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("Z -> X -> Y; Z -> Y")
    >>> is_backdoor_adjustment(g, "X", "Y", {"Z"}), is_backdoor_adjustment(g, "X", "Y", set())
    (True, False)
    """
    xs, ys, zs = _check_xyz(dag, "is_backdoor_adjustment", x, y, z)
    ix = dag.index
    xi, yi, zi = _ints(dag, xs), _ints(dag, ys), _ints(dag, zs)
    if zi & closure(ix.chi, xi):
        return False
    par, chi = _cut_out(ix.par, ix.chi, xi)
    return _separated(par, chi, xi, yi, zi)


def _all_separators(par: list, chi: list, xs: frozenset, ys: frozenset, allowed: frozenset) -> Iterator[frozenset]:
    """Every Z ⊆ `allowed` that d-separates `xs` and `ys` (ListSep, van der Zander et al. 2019).

    A separator Z with I ⊆ Z ⊆ R exists iff R ∩ An(X ∪ Y ∪ I) is one, so each
    branch of the search (include or exclude one node v of R minus I) is
    entered only when it holds an answer. One of the two tests is free: when
    v is in An(X ∪ Y ∪ I), including it leaves that candidate unchanged;
    otherwise excluding it does. Excluding is explored first, so the first
    answer is a minimal separator and the early ones are small.

    The nodes are decided in a fixed order, the allowed ancestors of X ∪ Y
    first, so a range is ``I ∪ nodes[i:]`` and a frame is just ``(i, I, An)``;
    a branch that needs a test is pushed untested and tested when popped.
    On a large sparse graph most nodes are outside An(X ∪ Y ∪ I), where the
    descent is free: the first answer costs about |An(X ∪ Y)| tests, each
    confined to the ancestral set, instead of one test per node of the graph.
    """
    anc0 = closure(par, xs | ys)
    nodes = sorted(allowed & anc0) + sorted(allowed - anc0)
    rank = {v: i for i, v in enumerate(nodes)}

    def separates(anc: set, inc: frozenset, i: int) -> bool:
        # the largest candidate of the range I ∪ nodes[i:] inside the ancestral set `anc`
        cand = {v for v in anc if v in inc or rank.get(v, -1) >= i}
        return _separated(par, chi, xs, ys, cand, anc)

    if not separates(anc0, frozenset(), 0):
        return
    stack: list[tuple] = [(0, frozenset(), anc0, None)]  # (i, I, An(X ∪ Y ∪ I), node to add after a test)
    while stack:
        i, inc, anc, add = stack.pop()
        if add is not None:
            anc = _extend_ancestral(par, anc, add)
            inc = inc | {add}
            if not separates(anc, inc, i):
                continue
        while i < len(nodes):  # descend, excluding first
            v = nodes[i]
            i += 1
            if v not in anc:
                stack.append((i, inc, anc, v))      # including v needs a test, done when popped
            elif separates(anc, inc, i):
                stack.append((i, inc | {v}, anc, None))  # including v is free
            else:
                inc = inc | {v}                     # v cannot be left out
        yield inc


def backdoor_adjustment_sets(dag: DAGCore, x, y, *, minimal: bool = False, max_sets: int | None = 1000) -> list[frozenset]:
    """All sets of observed nodes that satisfy the backdoor criterion.

    Candidates are the observed nodes other than X, Y and the descendants of
    X; a candidate set qualifies when it d-separates X and Y in the graph with
    the edges out of X removed (:func:`is_backdoor_adjustment`).

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed.
    minimal : bool, default False
        Only the minimal sets (no proper subset satisfies the criterion).
    max_sets : int or None, default 1000
        Return at most this many sets (None: all of them). When the cap is
        reached, the sets are the first found; the search explores leaving a
        node out before putting it in, so these lean towards small sets.

    Returns
    -------
    list of frozenset
        Sorted by size, then by node order; ``[]`` when no set qualifies.

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, the sets overlap,
        or `max_sets` is not a positive int or None.

    Notes
    -----
    Polynomial delay: all sets by ListSep [2]_, O(n (n + m)) between answers;
    minimal sets as minimal vertex separators in the moral graph of the
    ancestors of X ∪ Y, O(n (n + m)) between answers.

    References
    ----------
    .. [1] J. Pearl, "Causality", 2nd ed., 2009, Def. 3.3.1.
    .. [2] B. van der Zander, M. Liśkiewicz, J. Textor, "Separators and
           adjustment sets in causal graphs: complete criteria and an
           algorithmic framework", Artificial Intelligence 270, 2019.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("A -> X -> Y; A -> B -> Y")
    >>> [sorted(z) for z in backdoor_adjustment_sets(g, "X", "Y")]
    [['A'], ['B'], ['A', 'B']]
    >>> backdoor_adjustment_sets(g, "X", "Y", minimal=True) == [{"A"}, {"B"}]
    True
    """
    fn = "backdoor_adjustment_sets"
    xs, ys = _check_xy(dag, fn, x, y)
    _check_max_sets(fn, max_sets)
    ix = dag.index
    xi, yi = _ints(dag, xs), _ints(dag, ys)
    allowed = _observed_ints(dag) - yi - closure(ix.chi, xi)
    par, chi = _cut_out(ix.par, ix.chi, xi)
    if minimal:
        sets = minimal_d_separator_ints(par, xi, yi, allowed)
    else:
        sets = _all_separators(par, chi, xi, yi, allowed)
    return _collect(dag, sets, max_sets)


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
                         f"x -> y; got x = {_names(dag, xs)} and y = {_names(dag, ys)}")


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
    xs, ys, zs = _check_xyz(dag, "is_adjustment_set", x, y, z)
    _check_effect(dag, "is_adjustment_set", effect, xs, ys)
    xi, yi, zi = _ints(dag, xs), _ints(dag, ys), _ints(dag, zs)
    par, chi, forbidden = effect_graph(dag, xi, yi, effect)
    if zi & forbidden:
        return False
    return _separated(par, chi, xi, yi, zi)


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
    xs, ys = _check_xy(dag, fn, x, y)
    _check_effect(dag, fn, effect, xs, ys)
    _check_max_sets(fn, max_sets)
    xi, yi = _ints(dag, xs), _ints(dag, ys)
    par, _, forbidden = effect_graph(dag, xi, yi, effect)
    allowed = _observed_ints(dag) - yi - forbidden
    return _collect(dag, minimal_d_separator_ints(par, xi, yi, allowed), max_sets)


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
    xs, ys = _check_xy(dag, fn, x, y)
    _check_effect(dag, fn, effect, xs, ys)
    _check_max_sets(fn, max_sets)
    xi, yi = _ints(dag, xs), _ints(dag, ys)
    par, chi, forbidden = effect_graph(dag, xi, yi, effect)
    allowed = _observed_ints(dag) - yi - forbidden
    if minimal:
        return _collect(dag, minimal_d_separator_ints(par, xi, yi, allowed), max_sets)
    return _collect(dag, _all_separators(par, chi, xi, yi, allowed), max_sets)


# -- front-door ----------------------------------------------------------------------


class _FrontDoor:
    """The three front-door conditions for fixed (X, Y), on integer node sets.

    (i) Z meets every directed path from X to Y; (ii) X and Z are d-separated
    (given nothing) once the edges out of X are removed; (iii) Z and Y are
    d-separated given X once the edges out of Z are removed. (ii) holds node
    by node, so it only trims the candidates. The sets meeting (ii) and (iii)
    are closed under union (removing edges out of more nodes only closes
    paths), so within any range R there is a largest one, reached by
    repeatedly dropping the nodes that violate (iii).

    The candidates split into the *core*, those in An(Y), and the rest. A
    valid set minus any node outside An(Y) is still valid (an open path given
    X through the out-edge of such a node would make it an ancestor of Y or
    of X), and whether the core part is valid does not depend on the rest.
    So the valid sets are exactly Z' ∪ W with Z' a valid core set and W any
    subset of the nodes w outside An(Y) that Z' ∪ {w} keeps valid; the core
    tests run inside An(X ∪ Y), where they depend on nothing else.
    """

    def __init__(self, ix, xi: frozenset, yi: frozenset, observed: frozenset) -> None:
        self.par, self.chi = ix.par, ix.chi
        self.xi, self.yi = xi, yi
        self.cand = frozenset(observed - xi - yi - _reachable(self.par, self.chi, xi, (), cut=xi))
        self.anx = frozenset(closure(self.par, xi))  # no candidate is in here
        self.any = frozenset(closure(self.par, yi))
        self.axy = self.anx | self.any
        self.core = self.cand & self.any

    def intercepts(self, z) -> bool:
        chi, yi, any_ = self.chi, self.yi, self.any
        seen = set(self.xi)
        stack = list(seen)
        while stack:
            for c in chi[stack.pop()]:
                if c in seen or c in z or c not in any_:  # a directed path to Y stays in An(Y)
                    continue
                if c in yi:
                    return False
                seen.add(c)
                stack.append(c)
        return True

    def violators(self, z) -> set:
        """Nodes of Z with an open backdoor path to Y given X (condition iii)."""
        if not z:
            return set()
        keep = self.axy if z <= self.any else None  # d-separation depends on An(X ∪ Y ∪ Z) only
        _, down = bayes_ball(self.par, self.chi, self.yi, self.xi, keep=keep, cut=frozenset(z))
        return down & set(z)

    def largest(self, rng) -> frozenset:
        """The largest subset of `rng` meeting (ii) and (iii)."""
        z = set(rng) & self.cand
        while True:
            bad = self.violators(z)
            if not bad:
                return frozenset(z)
            z -= bad

    def witness(self, inc: frozenset, rng: frozenset) -> frozenset | None:
        """The largest valid set Z with inc ⊆ Z ⊆ rng, or None when there is none."""
        w = self.largest(rng)
        if inc <= w and self.intercepts(w):
            return w
        return None

    def valid(self, z: frozenset) -> bool:
        return z <= self.cand and self.intercepts(z) and not self.violators(z)

    def has_valid_proper_subset(self, z: frozenset) -> bool:
        # a valid W ⊊ Z lies inside some Z - {u}, hence inside its largest (ii)+(iii) set
        return any(self.witness(frozenset(), z - {u}) is not None for u in z)

    def free(self, core_set: frozenset) -> list:
        """Candidates outside An(Y) that may join the valid core set `core_set`, in node order."""
        _, down = bayes_ball(self.par, self.chi, self.yi, self.xi, cut=core_set)
        return sorted(self.cand - self.any - down)

    def core_sets(self) -> Iterator[frozenset]:
        """Every valid core set, by branching on one node at a time (Jeong et al. 2022)."""
        w = self.witness(frozenset(), self.core)
        if w is None:
            return
        stack = [(frozenset(), w)]  # (I, R) with R the largest valid set of the range
        while stack:
            inc, rng = stack.pop()
            if inc == rng:
                yield inc
                continue
            v = min(rng - inc)
            stack.append((inc | {v}, rng))  # rng itself is a valid set containing inc + v
            w_out = self.witness(inc, rng - {v})
            if w_out is not None:
                stack.append((inc, w_out))

    def all_sets(self) -> Iterator[frozenset]:
        """Every valid set: each valid core set with every subset of its free nodes (fewest first)."""
        for z in self.core_sets():
            free = self.free(z)
            for count in itertools.count():
                if count >> len(free):
                    break
                # subsets in binary counting order from the end of `free`: the empty one first
                yield z | {free[-1 - b] for b in range(count.bit_length()) if count >> b & 1}

    def relevant(self) -> frozenset:
        """Candidates that can belong to a minimal set (see :meth:`minimal_sets`)."""
        par, chi, xi = self.par, self.chi, self.xi
        pool = self.cand & closure(par, self.yi)
        rel = set(pool & closure(chi, xi))
        guards = pool - rel
        hits = {g: bayes_ball(par, chi, (g,), xi, keep=self.axy)[1] & pool for g in guards}
        grown = True
        while grown:
            new = {g for g in guards if g not in rel and hits[g] & rel}
            rel |= new
            grown = bool(new)
        return frozenset(rel)

    # Cyclomatic complexity 16: one Bayes-ball state machine (up/down moves, stops, bounces);
    # split, its eight pieces of state would travel between functions.
    def closest_to_y(self, q: frozenset, stoppable: frozenset) -> tuple[set, set, set]:  # noqa: C901
        """Bayes-ball from Y given X that stops at candidates reached only from a child.

        Nodes of `q`, nodes outside `stoppable` (candidates) and nodes reached
        from a parent let the ball through; a candidate reached from a child
        and not in `q` stops it (it would be a front-door node that Y sees only
        through its children). Returns the stopping nodes and the nodes
        reached from a child (`up`) and from a parent (`down`).
        """
        par, chi, xi, cand, anx, axy = self.par, self.chi, self.xi, stoppable, self.anx, self.axy
        up = set(self.yi)
        down: set = set()
        stop: set = set()
        stack = [(y, True) for y in self.yi]  # (node, reached from a child)
        while stack:
            v, from_child = stack.pop()
            if from_child:
                if v in xi:
                    continue  # a conditioned non-collider
                if v in cand and v not in q and v not in down:
                    stop.add(v)
                    continue
                for p in par[v]:
                    if p not in up:
                        up.add(p)
                        stack.append((p, True))
                for c in chi[v]:
                    if c not in down and c in axy:  # below An(X ∪ Y) the ball never turns back up
                        down.add(c)
                        stack.append((c, False))
            else:
                if v in stop:  # reached from a parent after all: it cannot stop the ball
                    stop.discard(v)
                    stack.append((v, True))
                if v not in xi:
                    for c in chi[v]:
                        if c not in down and c in axy:
                            down.add(c)
                            stack.append((c, False))
                if v in anx:  # an open collider
                    for p in par[v]:
                        if p not in up:
                            up.add(p)
                            stack.append((p, True))
        return stop, up, down

    def minimal_sets(self, budget: int | None = None) -> Iterator[frozenset]:
        """Every inclusion-minimal valid set (stopping after `budget` candidate sets, if given).

        With X the conditioning set, condition (iii) says that the ball of
        Bayes-ball from Y, run in the graph without Z, reaches no node of Z
        from a parent ((ii) keeps Z out of An(X), so cutting the edges out of Z
        changes no collider). If Z is valid, so is the part of Z that the ball
        reaches (from a child), so a minimal Z is exactly that part. A call
        (Q, M) lists such sets Z with the nodes of Q let through and M ⊆ Z.
        The ball that stops as early as it can (:meth:`closest_to_y`) gives
        the set whose region is smallest; every other set of the call lets
        through a first node v_i of it (the earlier ones stay in Z), so the
        children (Q + v_i, M + {v_1..v_(i-1)}) partition the rest, and each
        call either fails at once or has its own set, yielded when minimal.

        Two reductions keep the search near the minimal sets. A node of a
        minimal set is an ancestor of Y; it is on a directed path from X, or
        it guards another one: from it, Bayes-ball (given X) reaches a node of
        the set from a parent. Guards that can reach no such relevant node
        even with every node let through are never needed, so only relevant
        nodes may stop the ball. And a stopping node whose passage would
        reach nothing new (and that has no parent in X) is redundant in every
        set of the call, so it is let through at once.
        """
        if self.intercepts(frozenset()):
            yield frozenset()  # no directed path from X to Y: the empty set is the only minimal one
            return
        par, chi, xi = self.par, self.chi, self.xi
        stoppable = self.relevant()

        def enter(q: frozenset, m: frozenset):
            stop, up, down = self.closest_to_y(q, stoppable)
            free = {
                s for s in stop
                if not any(p in xi or p not in up for p in par[s]) and all(c in down or c not in self.axy for c in chi[s])
            }
            if free & m:
                return None
            w = frozenset(stop - free)
            if not m <= w or not self.intercepts(w):
                return None
            return q | free, w

        self.truncated = False
        root = enter(frozenset(), frozenset())
        if root is None:
            return
        q, w = root
        if not self.has_valid_proper_subset(w):
            yield w
        stack = [[q, frozenset(), sorted(w), 0]]
        calls = 0
        while stack:
            calls += 1
            if budget is not None and calls > budget:
                self.truncated = True
                return
            frame = stack[-1]
            q, m, vs, i = frame
            if i == len(vs):
                stack.pop()
                continue
            frame[3] = i + 1
            m2 = m.union(vs[:i])
            got = enter(q | {vs[i]}, m2)
            if got is None:
                continue
            q2, w2 = got
            if not self.has_valid_proper_subset(w2):
                yield w2
            stack.append([q2, m2, sorted(w2 - m2), 0])


def is_frontdoor_adjustment(dag: DAGCore, x, y, z) -> bool:
    """Whether `z` satisfies Pearl's front-door criterion relative to (`x`, `y`).

    For sets (Jeong et al. 2022): (i) every directed path from a node of X
    to a node of Y passes through Z; (ii) no backdoor path from X to Z is open,
    i.e. X and Z are d-separated by the empty set once the edges out of X are
    removed; (iii) X blocks every backdoor path from Z to Y, i.e. Z and Y are
    d-separated given X once the edges out of Z are removed. Then
    ``P(y | do(x)) = sum_z P(z | x) sum_x' P(y | x', z) P(x')``.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed.
    z : node or iterable of nodes
        The candidate mediator set: observed, disjoint from `x` and `y`. The
        empty set qualifies only when no directed path leads from X to Y.

    Returns
    -------
    bool

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, or the sets overlap.

    References
    ----------
    .. [1] J. Pearl, "Causality", 2nd ed., 2009, Def. 3.3.3 and Thm. 3.3.4.
    .. [2] H. Jeong, J. Tian, E. Bareinboim, "Finding and listing front-door
           adjustment sets", NeurIPS 2022.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("U [latent]; U -> Smoking; U -> Cancer; Smoking -> Tar -> Cancer")
    >>> is_frontdoor_adjustment(g, "Smoking", "Cancer", {"Tar"})
    True
    """
    xs, ys, zs = _check_xyz(dag, "is_frontdoor_adjustment", x, y, z)
    ix = dag.index
    fd = _FrontDoor(ix, _ints(dag, xs), _ints(dag, ys), _observed_ints(dag))
    return fd.valid(_ints(dag, zs))


def frontdoor_adjustment_sets(dag: DAGCore, x, y, *, minimal: bool = False, max_sets: int | None = 1000,
                              max_candidates: int | None = 100_000) -> list[frozenset]:
    """All sets of observed nodes that satisfy the front-door criterion.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Treatments and outcomes: non-empty, disjoint, observed.
    minimal : bool, default False
        Only the minimal sets (no proper subset satisfies the criterion).
    max_sets : int or None, default 1000
        Return at most this many sets (None: all). When the cap is reached the
        sets are the first found; the search explores leaving a node out
        before putting it in.
    max_candidates : int or None, default 100_000
        With `minimal`, stop after examining this many candidate sets and
        warn (:class:`~causalnet.errors.CausalNetWarning`) that the list may be
        incomplete — the candidates can outnumber the minimal sets
        exponentially (see Notes). None searches without a bound.

    Returns
    -------
    list of frozenset
        Sorted by size, then by node order; ``[]`` when no set qualifies.

    Raises
    ------
    GraphError
        If a node is unknown or latent, `x` or `y` is empty, they overlap, or
        `max_sets` is not a positive int or None.

    Notes
    -----
    All sets: polynomial delay. Within a range I ⊆ Z ⊆ R the sets meeting
    conditions (ii) and (iii) of :func:`is_frontdoor_adjustment` have a
    largest member, found by dropping violators until none is left; the range
    holds a front-door set iff that member contains I and meets (i) [2]_. The
    search branches on one node at a time and enters only ranges that hold
    an answer.

    Minimal sets: with X given, (iii) says that Bayes-ball from Y in the graph
    without Z reaches no node of Z from a parent, so the part of a front-door
    set that this ball reaches (from a child) is itself a front-door set, and
    a minimal set is all reached. Such "Y-closed" sets are listed with
    polynomial delay by a branching like the one for minimal separators (the
    set whose ball stops as early as it can, then sets that let one more of
    its nodes through), and the minimal ones are kept; nodes that cannot be
    in a minimal set are left out first. There can be exponentially many more
    Y-closed sets than minimal ones: on graphs of hundreds of nodes where Y
    has many observed ancestors this can run for minutes or longer (and
    `max_sets` does not bound the time). No polynomial-delay algorithm for
    minimal front-door sets is known to us.

    References
    ----------
    .. [1] J. Pearl, "Causality", 2nd ed., 2009, Def. 3.3.3.
    .. [2] H. Jeong, J. Tian, E. Bareinboim, "Finding and listing front-door
           adjustment sets", NeurIPS 2022.
    .. [3] M. Wienöbst, B. van der Zander, M. Liśkiewicz, "Linear-time
           algorithms for front-door adjustment in causal graphs", AAAI 2024.

    Examples
    --------
    >>> import causalnet as cn
    >>> g = cn.DAG.parse("U [latent]; U -> X; U -> Y; X -> M1 -> M2 -> Y")
    >>> [sorted(z) for z in frontdoor_adjustment_sets(g, "X", "Y")]
    [['M1'], ['M2'], ['M1', 'M2']]
    """
    fn = "frontdoor_adjustment_sets"
    xs, ys = _check_xy(dag, fn, x, y)
    _check_max_sets(fn, max_sets)
    ix = dag.index
    fd = _FrontDoor(ix, _ints(dag, xs), _ints(dag, ys), _observed_ints(dag))
    if not minimal:
        return _collect(dag, fd.all_sets(), max_sets)
    out = _collect(dag, fd.minimal_sets(max_candidates), max_sets)
    if getattr(fd, "truncated", False):
        warnings.warn(f"{fn}: stopped after {max_candidates} candidate sets; the {len(out)} minimal front-door "
                      f"sets returned may not be all of them (raise max_candidates to search further)",
                      CausalNetWarning, stacklevel=2)
    return out
