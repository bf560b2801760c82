"""Pearl's front-door criterion: checking a set and listing the valid ones with polynomial delay.

Z is a front-door set for (X, Y) when it intercepts every directed path from X
to Y, no backdoor path from X to Z is open, and X blocks every backdoor path
from Z to Y; then P(y | do(x)) = sum_z P(z | x) sum_x' P(y | x', z) P(x'),
even when X and Y share a latent confounder. Terms, algorithms and references
(Pearl 2009, Def. 3.3.3; Jeong, Tian & Bareinboim 2022):
:mod:`causalnet.graph.adjustment`.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("X -> M -> Y; U [latent]; U -> X; U -> Y")
>>> frontdoor_adjustment_sets(g, "X", "Y")
[frozenset({'M'})]
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator

from ..arguments import check_int
from ..errors import CausalNetWarning, GraphError
from .core import DAGCore, closure
from .criteria import check_max_sets, check_xy, check_xyz, collect_sets, int_set, observed_int_set, reachable_ints
from .separation import bayes_ball

__all__ = ["is_frontdoor_adjustment", "frontdoor_adjustment_sets"]


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
        self.cand = frozenset(observed - xi - yi - reachable_ints(self.par, self.chi, xi, (), cut=xi))
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
    xs, ys, zs = check_xyz(dag, "is_frontdoor_adjustment", x, y, z)
    ix = dag.index
    fd = _FrontDoor(ix, int_set(dag, xs), int_set(dag, ys), observed_int_set(dag))
    return fd.valid(int_set(dag, zs))


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
        `max_sets` or `max_candidates` is not a positive int or None.

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
    xs, ys = check_xy(dag, fn, x, y)
    check_max_sets(fn, max_sets)
    if max_candidates is not None:
        check_int(max_candidates, f"{fn}: max_candidates (None or an int)", low=1, error=GraphError)
    ix = dag.index
    fd = _FrontDoor(ix, int_set(dag, xs), int_set(dag, ys), observed_int_set(dag))
    if not minimal:
        return collect_sets(dag, fd.all_sets(), max_sets)
    out = collect_sets(dag, fd.minimal_sets(max_candidates), max_sets)
    if getattr(fd, "truncated", False):
        warnings.warn(f"{fn}: stopped after {max_candidates} candidate sets; the {len(out)} minimal front-door "
                      f"sets returned may not be all of them (raise max_candidates to search further)",
                      CausalNetWarning, stacklevel=2)
    return out
