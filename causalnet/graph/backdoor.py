"""Pearl's backdoor criterion: checking a set and listing every valid one.

Z satisfies the backdoor criterion for (X, Y) when no node of Z descends from
X and Z d-separates X and Y once the edges out of X are removed. It is
sufficient, not necessary (:mod:`~causalnet.graph.adjustment` has the complete
criterion). Terms, algorithms and references: :mod:`causalnet.graph.adjustment`.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("X <- A -> M <- B -> Y; X -> Y")
>>> is_backdoor_adjustment(g, "X", "Y", {"A"}), is_backdoor_adjustment(g, "X", "Y", {"M"})
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterator

from .core import DAGCore, closure
from .criteria import (
    check_max_sets,
    check_xy,
    check_xyz,
    collect_sets,
    cut_out,
    extend_ancestral,
    int_set,
    observed_int_set,
    separated_ints,
)
from .separators import minimal_d_separator_ints

__all__ = ["is_backdoor_adjustment", "backdoor_adjustment_sets", "all_separators"]


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
    xs, ys, zs = check_xyz(dag, "is_backdoor_adjustment", x, y, z)
    ix = dag.index
    xi, yi, zi = int_set(dag, xs), int_set(dag, ys), int_set(dag, zs)
    if zi & closure(ix.chi, xi):
        return False
    par, chi = cut_out(ix.par, ix.chi, xi)
    return separated_ints(par, chi, xi, yi, zi)


def all_separators(par: list, chi: list, xs: frozenset, ys: frozenset, allowed: frozenset) -> Iterator[frozenset]:
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
        return separated_ints(par, chi, xs, ys, cand, anc)

    if not separates(anc0, frozenset(), 0):
        return
    stack: list[tuple] = [(0, frozenset(), anc0, None)]  # (i, I, An(X ∪ Y ∪ I), node to add after a test)
    while stack:
        i, inc, anc, add = stack.pop()
        if add is not None:
            anc = extend_ancestral(par, anc, add)
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
    xs, ys = check_xy(dag, fn, x, y)
    check_max_sets(fn, max_sets)
    ix = dag.index
    xi, yi = int_set(dag, xs), int_set(dag, ys)
    allowed = observed_int_set(dag) - yi - closure(ix.chi, xi)
    par, chi = cut_out(ix.par, ix.chi, xi)
    if minimal:
        sets = minimal_d_separator_ints(par, xi, yi, allowed)
    else:
        sets = all_separators(par, chi, xi, yi, allowed)
    return collect_sets(dag, sets, max_sets)
