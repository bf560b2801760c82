"""Which exact method answers a discrete question: the prior tree, a Hugin propagation, or a compiled program.

The discrete engine has three exact methods that give the same answers (to
round-off) at different costs:

* a **compiled program** (:mod:`.programs`): pruned to the requisite nodes,
  ordered and constant-folded once per query *shape* (targets, evidence
  nodes, batched nodes), then cached. It answers everything (batched
  evidence, explicit orders, MAP, rescaling when ``P(e)`` underflows), but
  its first run pays for the compilation;
* the **calibrated prior tree** (:mod:`.prior_tree`): a junction tree
  calibrated once on the prior; a scalar query then costs about one numpy
  call per clique between the evidence and the targets, with nothing
  compiled. Building it costs many queries, so it is built only once a
  network's compiled scalar queries have spent :data:`PRIOR_TREE_AFTER_S`
  seconds of CPU (never at the first), and only when its cliques are small enough
  (:data:`~.junction_tree.MAX_PRIOR_CLIQUE`, :data:`~.junction_tree.MAX_PRIOR_TOTAL`);
* one **Hugin propagation** (:mod:`.hugin`) over the junction tree's cliques:
  every single-node marginal for scalar evidence, without building the prior
  tree, for the first few ``marginals`` requests of a tree.

This module is the one place that chooses. :class:`QueryPolicy` (one per
:class:`~.elimination.DiscreteBN`) routes ``DiscreteBN.query``;
:class:`MarginalsPolicy` (one per :class:`~.junction_tree.JunctionTree`)
routes ``JunctionTree.marginals``. A method that is chosen may still decline
at run time (the prior tree when the targets share no clique, or when
``P(e) < TINY``; Hugin when ``P(e) < TINY``): the compiled program then
answers, so every route ends in an answer or in the compiled program's error.

Examples
--------
>>> policy = QueryPolicy(build=lambda: False)          # a network with no usable prior tree
>>> policy.route((0,), {1: 1}, batched=False, order="weighted-min-fill")
'compiled program'
>>> policy.spent(1.0)                                   # compiled queries have paid for a tree
>>> policy.route((0,), {1: 1}, batched=False, order="weighted-min-fill")   # second query: build, none
'compiled program'
>>> policy.tree is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

__all__ = ["QueryPolicy", "MarginalsPolicy", "PRIOR_TREE", "COMPILED", "HUGIN", "PRIOR_TREE_FROM_QUERY",
           "PRIOR_TREE_AFTER_S", "HUGIN_CALLS", "MAX_SHAPES"]

#: Route names.
PRIOR_TREE = "prior tree"
COMPILED = "compiled program"
HUGIN = "Hugin propagation"

#: The scalar query of a network at which its prior tree is built (a network
#: answering a single query, such as a model under a new ``do``, never pays for it).
PRIOR_TREE_FROM_QUERY = 2
#: ... and only once the network's compiled scalar queries have taken this many CPU seconds (what the
#: tree costs on alarm, ~30 ms; it then answers in 0.15 ms against 0.6 ms compiled): a process asking
#: 20 questions is done before the tree would pay, one asking hundreds gets it.
PRIOR_TREE_AFTER_S = 0.03
#: Scalar ``marginals`` requests of a junction tree answered by one Hugin
#: propagation each before its prior tree is built.
HUGIN_CALLS = 3
#: Query shapes remembered on a network with heavy cliques (then forgotten all at once).
MAX_SHAPES = 4096


class QueryPolicy:
    """The route of ``DiscreteBN.query``: the calibrated prior tree or a compiled program.

    Parameters
    ----------
    build : callable () -> PriorTree or False
        Builds the network's prior tree (False when its tables would be too
        large or calibration too close to underflow). Called at most once.

    Notes
    -----
    In order, a query goes to a compiled program when

    1. its evidence is batched (the prior tree takes one evidence row);
    2. it names an elimination order other than the default
       ``"weighted-min-fill"`` (the caller asked for that program);
    3. it is the network's first scalar query (:data:`PRIOR_TREE_FROM_QUERY`), or its
       compiled scalar queries have not yet spent :data:`PRIOR_TREE_AFTER_S` CPU seconds;
    4. the network has no prior tree (built by the first query past both thresholds);
    5. the prior tree is *heavy* (a clique of
       :data:`~.prior_tree.HEAVY_CLIQUE` entries or more) and the same
       (targets, evidence nodes) shape was asked before: its pruned, cached
       program then runs faster than the tree;

    otherwise the prior tree answers (and may still decline, see the module notes).
    """

    def __init__(self, build: Callable[[], object]) -> None:
        self._build = build
        self._tree = None                 # None: not built yet; False: none; else the PriorTree
        self._scalar_queries = 0
        self._compiled_s = 0.0            # CPU seconds spent by compiled scalar queries
        self._shapes: dict = {}

    def spent(self, seconds: float) -> None:
        """Record the CPU time a compiled scalar query took (the prior tree's budget)."""
        self._compiled_s += seconds

    @property
    def tree(self):
        """The prior tree, or None (not built yet, or none usable)."""
        return self._tree or None

    @property
    def built(self) -> bool:
        """Whether the prior tree was built (or found unusable)."""
        return self._tree is not None

    def build_tree(self):
        """Build the prior tree now, whatever the query count; it, or None when unusable."""
        if self._tree is None:
            self._tree = self._build() or False
        return self.tree

    def route(self, targets: tuple, evidence: Iterable[Hashable], *, batched: bool, order) -> str:
        """:data:`PRIOR_TREE` or :data:`COMPILED` for a query (see the class notes for the rules).

        Parameters
        ----------
        targets : tuple of node ints
        evidence : iterable of node ints
            The observed nodes (their values do not matter).
        batched : bool
        order : str or sequence
            The query's elimination order.
        """
        if batched or type(order) is not str or order != "weighted-min-fill":
            return COMPILED
        if self._tree is None:
            self._scalar_queries += 1
            if self._scalar_queries < PRIOR_TREE_FROM_QUERY or self._compiled_s < PRIOR_TREE_AFTER_S:
                return COMPILED
        pt = self.build_tree()
        if pt is None:
            return COMPILED
        if pt.heavy:
            shape = (targets, frozenset(evidence))
            if shape in self._shapes:
                return COMPILED
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.clear()
            self._shapes[shape] = True
        return PRIOR_TREE


class MarginalsPolicy:
    """The route of ``JunctionTree.marginals``: a Hugin propagation, the prior tree, or a compiled program.

    Parameters
    ----------
    small : bool
        Whether the tree's cliques are small enough for a Hugin propagation
        and a prior tree (:data:`~.junction_tree.MAX_PRIOR_CLIQUE`,
        :data:`~.junction_tree.MAX_PRIOR_TOTAL`).
    has_evidence_vars : bool
        Whether the tree was built with evidence variables left out of its
        cliques (then only its compiled program applies).

    Notes
    -----
    In order: batched evidence, or a tree with evidence variables, goes to
    the compiled program; the first :data:`HUGIN_CALLS` scalar requests, on
    a small tree whose prior tree is not built, to one Hugin propagation
    each; later ones to the prior tree (built on first use), else to the
    compiled program.
    """

    def __init__(self, small: bool, has_evidence_vars: bool) -> None:
        self.small = small
        self.has_evidence_vars = has_evidence_vars
        self._hugin_calls = 0

    def route(self, *, batched: bool, tree_built: bool) -> str:
        """:data:`HUGIN`, :data:`PRIOR_TREE` or :data:`COMPILED` for one request.

        Parameters
        ----------
        batched : bool
        tree_built : bool
            Whether the tree's prior tree was already built (or found unusable).
        """
        if batched or self.has_evidence_vars:
            return COMPILED
        if not tree_built and self._hugin_calls < HUGIN_CALLS:
            self._hugin_calls += 1
            if self.small:
                return HUGIN
        return PRIOR_TREE
