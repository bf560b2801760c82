"""The d-separation search in plain Python, on memoized ancestor and descendant sets.

This is the search a process uses before the compiled kernel of
:mod:`causalnet.graph.kernels` has paid for its compilation (see
:func:`causalnet.graph.separation.d_separated`): the first queries of a
script, a notebook cell after a restart, a command-line call. It needs
nothing beyond the standard library, and each query costs tens of
microseconds on graphs of 10^3 to 10^4 nodes.

Terms
-----
*An(S)*, the ancestral set of S, is S with every ancestor of a node of S;
*De(S)* the same with descendants. Two facts answer a query X ⊥ Y | Z:

1. Only An(X ∪ Y ∪ Z) matters (Lauritzen et al. 1990: the answer is read
   off the moral graph of that set), so the Bayes ball never needs to move
   down out of it: :func:`ball_reaches` runs the ball inside it, which on
   sparse graphs is a small part of the graph even when the whole graph
   is reachable from X.
2. The local Markov shortcut: when every parent of every node of X is in
   Z and no node of Z descends from X, the Bayes ball from X is stopped at
   the parents and only ever moves down, so it reaches exactly De(X);
   then X ⊥ Y | Z exactly when Y avoids De(X) (:func:`local_markov_reach`).
   The statement ``X ⊥ non-descendants | parents`` is answered this way
   without touching each node of its large Y more than once.

:class:`ClosureMemo` keeps An({v}) and De({v}) of the nodes that queries
have needed, as frozensets (each built from its parents' or children's sets,
so a query's ancestral set is the union of a dozen stored sets: C-level
work, no Python loop per node). The total number of stored elements is
bounded (:data:`MEMO_ELEMENTS`); past it, queries compute the sets they
need by a plain search, with the same answers. Filling the memo costs more
than it saves over a graph's first few hundred queries, so
:mod:`causalnet.graph.separation` passes ``memo=None`` (the plain search)
until then.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("A -> C <- B; C -> D")
>>> ix = g.index
>>> memo = ClosureMemo(ix.n)
>>> sorted(ix.nodes[i] for i in memo.ancestors(ix.par, ix.pos["D"]))
['A', 'B', 'C', 'D']
>>> a = ancestral_set(memo, ix.par, [ix.pos[v] for v in "ABD"])
>>> ball_reaches(ix.par, ix.chi, a, [ix.pos["A"]], {ix.pos["B"]}, {ix.pos["D"]})  # D opens the collider C
True

References
----------
.. [1] S. L. Lauritzen, A. P. Dawid, B. N. Larsen, H.-G. Leimer,
       "Independence properties of directed Markov fields", Networks 20, 1990.
.. [2] R. D. Shachter, "Bayes-Ball: the rational pastime", UAI 1998.
"""

from __future__ import annotations

from collections.abc import Iterable

from .core import closure

__all__ = ["MEMO_ELEMENTS", "ClosureMemo", "ancestral_set", "ball_reaches", "bayes_ball", "local_markov_reach"]

#: Most elements (node indices) the sets of one :class:`ClosureMemo` hold together, about 30 bytes each.
MEMO_ELEMENTS = 1_000_000


class ClosureMemo:
    """Ancestor and descendant sets of single nodes, computed on demand and kept.

    Parameters
    ----------
    n : int
        The number of nodes of the graph (indices ``0 .. n-1``).
    budget : int, optional
        The most elements all stored sets may hold together (default
        :data:`MEMO_ELEMENTS`). Once it is spent, :meth:`ancestors` and
        :meth:`descendants` return None for a node whose set is not stored.

    Attributes
    ----------
    anc, desc : list of (frozenset or None), length n
        ``anc[v]`` is An({v}) (``v`` included), once computed.
    left : int
        The part of the budget still free.
    full : bool
        True once a set did not fit: no set is added after that (a query
        then needs no walk to find out).
    """

    __slots__ = ("anc", "desc", "left", "full")

    def __init__(self, n: int, budget: int = MEMO_ELEMENTS) -> None:
        self.anc: list = [None] * n
        self.desc: list = [None] * n
        self.left = budget
        self.full = budget <= 0

    def ancestors(self, par: list, v: int) -> frozenset | None:
        """An({v}) as a frozenset of indices (`par`: parent lists); None when the budget is spent."""
        s = self.anc[v]
        return s if s is not None or self.full else self._fill(self.anc, par, v)

    def descendants(self, chi: list, v: int) -> frozenset | None:
        """De({v}) as a frozenset of indices (`chi`: child lists); None when the budget is spent."""
        s = self.desc[v]
        return s if s is not None or self.full else self._fill(self.desc, chi, v)

    def _fill(self, memo: list, adj: list, v: int) -> frozenset | None:
        """Compute ``memo[v]`` and the sets below it along `adj`, neighbours before the node (post-order)."""
        stack = [v]
        get = memo.__getitem__
        while stack:
            u = stack[-1]
            if memo[u] is not None:
                stack.pop()
                continue
            nbrs = adj[u]
            missing = [w for w in nbrs if memo[w] is None]
            if missing:
                stack.extend(missing)       # acyclic: every path down `adj` ends
                continue
            s = frozenset((u,)).union(*map(get, nbrs)) if nbrs else frozenset((u,))
            if len(s) > self.left:
                self.full = True
                return None
            self.left -= len(s)
            memo[u] = s
            stack.pop()
        return memo[v]


def ancestral_set(memo: ClosureMemo | None, par: list, start: Iterable[int]) -> set:
    """An(`start`): the union of the memo's ancestor sets; a plain search without a memo or once its budget is spent."""
    start = list(start)
    if memo is None:
        return closure(par, start)
    sets = []
    for v in start:
        s = memo.ancestors(par, v)
        if s is None:
            return closure(par, start)
        sets.append(s)
    return set().union(*sets)


def ball_reaches(par: list, chi: list, anc: set, xi: Iterable[int], yi: set, zi: set) -> bool:
    """Whether the Bayes ball from X given Z reaches Y, moving down only inside the ancestral set `anc`.

    With ``anc ⊇ An(X ∪ Y ∪ Z)`` this is d-connection (fact 1 of the module
    docstring). The search is Shachter's: a ball reaching a node from a
    child (or starting there) moves on to its parents and children unless
    the node is in Z; a ball reaching it from a parent moves on to its
    children when the node is not in Z, and bounces to its parents when it
    is. It returns at the first node of Y it reaches.

    Parameters
    ----------
    par, chi : list of list of int
        Parent and child lists of the whole graph.
    anc : set of int
        An ancestral set containing X, Y and Z (left unchanged).
    xi : iterable of int
        X, disjoint from Y and Z.
    yi, zi : set of int
        Y and Z, disjoint.

    Returns
    -------
    bool
        True when some node of Y is reached (X and Y are d-connected).
    """
    up, down = bayes_ball(par, chi, xi, zi, stop=yi, keep=anc)
    return not (yi.isdisjoint(up) and yi.isdisjoint(down))


def bayes_ball(par: list, chi: list, sources, given, *, stop=frozenset(), keep=None,
               cut=frozenset()) -> tuple[set, set]:
    """Bayes-ball from `sources` given `given` on integer adjacency lists.

    Returns the nodes reached from a child (the sources included) and those
    reached from a parent. A node of `given` is reached when a path ends there
    but no path passes through it as a non-collider; a ball that reaches a
    node of `given` from a parent bounces back to all its parents (Shachter
    1998), which opens exactly the colliders with a descendant in `given`.
    The search returns as soon as it reaches a node of `stop`, and never
    steps down to a child outside `keep` when `keep` is given (an ancestral
    set containing X, Y and Z: d-separation only depends on it). The edges
    out of the nodes of `cut` are treated as absent (Pearl's G with `cut`
    underlined), without copying the graph.
    """
    given = given if isinstance(given, (set, frozenset)) else set(given)
    up_seen = set(sources)      # reached from a child, or a source
    down_seen: set = set()      # reached from a parent
    up = list(up_seen)
    down: list = []
    while up or down:
        if up:
            v = up.pop()
            if v in given:
                continue
            ups, downs = par[v], chi[v]
        else:
            v = down.pop()
            ups = par[v] if v in given else ()            # bounce: the colliders above it open
            downs = chi[v] if v not in given else ()
        if cut:
            ups = [p for p in ups if p not in cut]
            downs = () if v in cut else downs
        for p in ups:
            if p not in up_seen:
                up_seen.add(p)
                if p in stop:
                    return up_seen, down_seen
                up.append(p)
        for c in downs:
            if c not in down_seen and (keep is None or c in keep):
                down_seen.add(c)
                if c in stop:
                    return up_seen, down_seen
                down.append(c)
    return up_seen, down_seen


def local_markov_reach(memo: ClosureMemo | None, par: list, chi: list, xi: list[int], zi: set) -> set | None:
    """De(X) when every parent of X is in Z and no node of Z descends from X; None otherwise.

    Under those two conditions the Bayes ball from X reaches, beyond Z,
    exactly De(X) (fact 2 of the module docstring), so X ⊥ Y | Z exactly when
    Y avoids the returned set (which contains X). De(X) comes from the memo,
    or from a plain search when `memo` is None. None also when the memo's
    budget is spent.
    """
    for x in xi:
        if not zi.issuperset(par[x]):
            return None
    if memo is None:
        de = closure(chi, xi)
        return None if not de.isdisjoint(zi) else de
    sets = []
    for x in xi:
        s = memo.descendants(chi, x)
        if s is None or not s.isdisjoint(zi):
            return None
        sets.append(s)
    return sets[0] if len(sets) == 1 else set().union(*sets)
