"""Factor graphs of discrete tables, compiled for vectorised message passing.

A factor graph is a bipartite graph between variables (``0..V-1``, variable
``v`` with ``cards[v]`` states) and factors (a tuple of distinct variables and
a nonnegative table whose axes follow the tuple). A Bayesian network gives one
factor per node (its CPT over its family); a Markov network gives its factors.

:class:`FactorGraph` validates the tables once and compiles them for
:mod:`causalnet.inference.loopy`: every (factor, variable) pair is an *edge*;
edges are numbered in variable order (so a variable's incoming messages are one
contiguous run, summed by one ``np.add.reduceat``), and factors of one arity
are stacked into one :class:`FactorGroup` (zero-padded to the largest card on
each axis, when that padding is cheap) whose messages are computed in one
``einsum`` per axis.

Symbols: ``V`` variables, ``E`` edges, ``F`` factors of a group, ``a`` their
arity, ``K`` the largest card.

Examples
--------
>>> import numpy as np
>>> fg = FactorGraph([2, 2], [((0,), [0.3, 0.7]), ((0, 1), [[0.9, 0.1], [0.2, 0.8]])])
>>> fg.n_edges, [g.tables.shape for g in fg.groups]
(3, [(1, 2), (1, 2, 2)])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import limits
from ..errors import ModelError, ShapeError

__all__ = ["FactorGraph", "FactorGroup", "NoisyOrFactors", "NoisyMaxFactors", "LogisticFactors",
           "network_factor_graph"]


class NoisyOrFactors:
    """Noisy-OR factors kept in closed form (never expanded to their 2^k tables), as flat slot arrays.

    Factor f ties a child variable (two states, absent first) to k ≥ 1 parent
    variables: ``P(child = absent | x) = (1 − leak_f) Π_{i: x_i = on_i} q_i``.
    Its parents are "slots" ``factor_start[f] .. factor_start[f+1]-1``.

    Attributes
    ----------
    child_edge, leak : ndarray of shape (N,)
    factor_start : ndarray of int, shape (N + 1,)
    slot_edge, slot_q, slot_on : ndarray of shape (S,)
        The parent's edge, ``q_i = 1 − p_i`` and its "on" state.
    """

    def __init__(self, child_edge, leak, factor_start, slot_edge, slot_q, slot_on) -> None:
        self.child_edge = np.asarray(child_edge, dtype=np.int64)
        self.leak = np.asarray(leak, dtype=np.float64)
        self.factor_start = np.asarray(factor_start, dtype=np.int64)
        self.slot_edge = np.asarray(slot_edge, dtype=np.int64)
        self.slot_q = np.asarray(slot_q, dtype=np.float64)
        self.slot_on = np.asarray(slot_on, dtype=np.int64)
        self.slot_factor = np.repeat(np.arange(self.leak.size), np.diff(self.factor_start))


class NoisyMaxFactors:
    """Noisy-MAX factors kept in closed form, as flat slot arrays padded to the graph's largest card ``K``.

    Factor f ties a child variable to k ≥ 1 parents by
    ``P(child ≤ y | x) = F_leak(y) Π_i F_i(y | x_i)`` (cumulative over the child's levels).

    Attributes
    ----------
    child_edge, child_card : ndarray of int, shape (N,)
    leak_cdf : ndarray of shape (N, K)
        ``F_leak``, padded with 1 from the child's last level on.
    factor_start : ndarray of int, shape (N + 1,)
    slot_edge : ndarray of int, shape (S,)
    slot_cdf : ndarray of shape (S, K, K)
        ``F_i(y | s)`` indexed ``[slot, parent state s, child level y]``; 1 from
        the child's last level on and on padded parent states.
    """

    def __init__(self, specs: list, edge_of, offset: int, K: int) -> None:
        N = len(specs)
        self.child_edge = np.array([edge_of[(offset + f, 0)] for f in range(N)], dtype=np.int64)
        self.child_card = np.array([s[3].size for s in specs], dtype=np.int64)
        self.leak_cdf = np.ones((N, K))
        for f, (_, _, _, leak) in enumerate(specs):
            self.leak_cdf[f, :leak.size - 1] = np.cumsum(leak)[:-1]
        self.factor_start = np.cumsum([0] + [len(ps) for _, ps, _, _ in specs]).astype(np.int64)
        self.slot_edge = np.array([edge_of[(offset + f, j + 1)] for f, (_, ps, _, _) in enumerate(specs)
                                   for j in range(len(ps))], dtype=np.int64)
        self.slot_cdf = np.ones((self.slot_edge.size, K, K))
        r = 0
        for _, _, tables, leak in specs:
            for t in tables:
                self.slot_cdf[r, :t.shape[0], :leak.size - 1] = np.cumsum(t, axis=1)[:, :-1]
                r += 1
        self.slot_factor = np.repeat(np.arange(N), np.diff(self.factor_start))

    @classmethod
    def from_noisy_or(cls, no: NoisyOrFactors, K: int) -> NoisyMaxFactors:
        """Noisy-OR factors as two-level noisy-MAX ones: leak ``(1 − leak, leak)``, parent i's on-state ``(q_i, p_i)``."""
        out = cls.__new__(cls)
        N, S = no.leak.size, no.slot_edge.size
        out.child_edge, out.child_card = no.child_edge, np.full(N, 2, dtype=np.int64)
        out.leak_cdf = np.ones((N, K))
        out.leak_cdf[:, 0] = 1.0 - no.leak
        out.factor_start, out.slot_edge, out.slot_factor = no.factor_start, no.slot_edge, no.slot_factor
        out.slot_cdf = np.ones((S, K, K))
        out.slot_cdf[np.arange(S), no.slot_on, 0] = no.slot_q
        return out


class LogisticFactors:
    """Logistic (softmax) factors kept in closed form, as flat slot arrays padded to ``K``.

    Factor f: ``P(child = c | x) = softmax_c(bias_f + Σ_i w_i x_i)`` with
    parent i entering as its state index and ``w_i`` its weights (one per child state).

    Attributes
    ----------
    child_edge, child_card : ndarray of int, shape (N,)
    bias : ndarray of shape (N, K)
        ``-inf`` beyond the child's card.
    factor_start : ndarray of int, shape (N + 1,)
    slot_edge, slot_card : ndarray of int, shape (S,)
    slot_w : ndarray of shape (S, K)
        The weights of each parent, one per child state (0 beyond the child's card).
    """

    def __init__(self, specs: list, edge_of, offset: int, K: int) -> None:
        N = len(specs)
        self.child_edge = np.array([edge_of[(offset + f, 0)] for f in range(N)], dtype=np.int64)
        self.child_card = np.array([b.size for *_, b in specs], dtype=np.int64)
        self.bias = np.full((N, K), -np.inf)
        for f, (*_, b) in enumerate(specs):
            self.bias[f, :b.size] = b
        self.factor_start = np.cumsum([0] + [len(ps) for _, ps, _, _ in specs]).astype(np.int64)
        self.slot_edge = np.array([edge_of[(offset + f, j + 1)] for f, (_, ps, _, _) in enumerate(specs)
                                   for j in range(len(ps))], dtype=np.int64)
        self.slot_w = np.zeros((self.slot_edge.size, K))
        r = 0
        for _, ps, w, b in specs:
            for j in range(len(ps)):
                self.slot_w[r, :b.size] = w[:, j]
                r += 1
        self.slot_factor = np.repeat(np.arange(N), np.diff(self.factor_start))
        self.slot_card = np.zeros(self.slot_edge.size, dtype=np.int64)


#: Padding allowed when stacking the factors of one arity in a single group (entries, padded / own).
PAD_FACTOR = 4


class FactorGroup:
    """Factors of one shape signature, stacked.

    Attributes
    ----------
    cards : tuple of int
        The (padded) cards of the factors' axes (length ``a``).
    tables : ndarray of shape (F, *cards)
        Zero beyond each factor's own cards.
    variables : ndarray of int, shape (F, a)
    edges : ndarray of int, shape (F, a)
        The edge number of each (factor, axis) pair.
    factors : ndarray of int, shape (F,)
        The factors' positions in :attr:`FactorGraph.factors`.
    """

    def __init__(self, cards: tuple, tables: np.ndarray, variables: np.ndarray, edges: np.ndarray,
                 factors: np.ndarray) -> None:
        self.cards = cards
        self.tables = tables
        self.variables = variables
        self.edges = edges
        self.factors = factors


class FactorGraph:
    """Variables with cards and factors over them, compiled in shape groups.

    Parameters
    ----------
    cards : sequence of int
        States of each variable.
    factors : sequence of (tuple of int, array_like)
        Each factor's variables (distinct) and its table of shape
        ``tuple(cards[v] for v in variables)``; nonnegative, finite, not all zero.
    names : sequence, optional
        Variable names (for messages); defaults to the ints.
    noisy_or : sequence of (int, tuple of int, array_like, float, array_like), optional
        Noisy-OR factors in closed form: ``(child, parents, probs, leak, on)``
        with a two-state child (absent first), ``probs[i]`` the activation
        probability of parent i and ``on[i]`` its "on" state.
    noisy_max : sequence of (int, tuple of int, sequence of array_like, array_like), optional
        Noisy-MAX factors in closed form: ``(child, parents, tables, leak)``
        with ``tables[i]`` of shape ``(cards[parent i], cards[child])`` (rows
        summing to 1) and ``leak`` of shape ``(cards[child],)``.
    logistic : sequence of (int, tuple of int, array_like, array_like), optional
        Logistic factors in closed form: ``(child, parents, weights (K_child, k), bias (K_child,))``.

    Attributes
    ----------
    cards : ndarray of int, shape (V,)
    factors : list of (tuple of int, ndarray)
    groups : list of FactorGroup
    edge_var : ndarray of int, shape (E,)
        The variable of each edge (nondecreasing).
    var_start : ndarray of int, shape (V,)
        The first edge of each variable (each variable has at least one edge:
        a variable in no factor gets a uniform unary one).

    Raises
    ------
    ModelError, ShapeError
        On a bad variable, a repeated variable in a factor, a table of the
        wrong shape, or a negative, non-finite or all-zero table.
    """

    def __init__(self, cards: Sequence[int], factors: Sequence, names: Sequence | None = None,
                 noisy_or: Sequence = (), noisy_max: Sequence = (), logistic: Sequence = ()) -> None:
        self.cards = np.asarray(cards, dtype=np.int64)
        V = self.cards.size
        self.names = list(range(V)) if names is None else list(names)
        if self.cards.ndim != 1 or (V and self.cards.min() < 1):
            raise ModelError(f"cards must be positive integers, got {list(cards)}")
        self.factors = [self._checked(i, f) for i, f in enumerate(factors)]
        self.noisy_specs = [self._checked_noisy(f) for f in noisy_or]
        self.max_specs = [self._checked_max(f) for f in noisy_max]
        self.logit_specs = [self._checked_logit(f) for f in logistic]
        covered = np.zeros(V, dtype=bool)
        for vs, _ in self.factors:
            covered[list(vs)] = True
        for child, parents, *_ in self.noisy_specs + self.max_specs + self.logit_specs:
            covered[[child, *parents]] = True
        for v in np.flatnonzero(~covered):
            self.factors.append(((int(v),), np.ones(int(self.cards[v]))))
        self._compile()

    def _checked(self, i: int, factor) -> tuple:
        try:
            vs, table = factor
        except (TypeError, ValueError):
            raise ModelError(f"factor {i} must be a pair (variables, table), got {type(factor).__name__}") from None
        vs = tuple(int(v) for v in vs)
        if len(set(vs)) != len(vs) or any(v < 0 or v >= self.cards.size for v in vs):
            raise ModelError(f"factor {i} has variables {vs}; they must be distinct variables 0..{self.cards.size - 1}")
        t = np.asarray(table, dtype=np.float64)
        want = tuple(int(self.cards[v]) for v in vs)
        if t.shape != want:
            raise ShapeError(f"factor {i} over {[self.names[v] for v in vs]} has shape {t.shape}, expected {want}")
        if not np.isfinite(t).all() or (t.size and t.min() < 0) or not t.any():
            raise ModelError(f"factor {i} over {[self.names[v] for v in vs]} must be finite, nonnegative and not "
                             f"all zero")
        return vs, t

    def _checked_noisy(self, spec) -> tuple:
        child, parents, probs, leak, on = spec
        child, parents = int(child), tuple(int(v) for v in parents)
        probs, on = np.asarray(probs, dtype=np.float64), np.asarray(on, dtype=np.int64)
        vs = (child, *parents)
        if len(set(vs)) != len(vs) or not parents or any(v < 0 or v >= self.cards.size for v in vs):
            raise ModelError(f"a noisy-OR factor needs a child and at least one distinct parent, got {vs}")
        if self.cards[child] != 2 or probs.shape != (len(parents),) or on.shape != (len(parents),):
            raise ModelError(f"the noisy-OR factor of {self.names[child]!r} needs a two-state child and one "
                             f"probability and on-state per parent")
        if np.any((probs < 0) | (probs > 1)) or not 0 <= leak < 1 or np.any((on < 0) | (on >= self.cards[list(parents)])):
            raise ModelError(f"the noisy-OR factor of {self.names[child]!r} has a probability outside [0, 1], a "
                             f"leak outside [0, 1) or an on-state out of range")
        return child, parents, probs, float(leak), on

    def _structural_vars(self, spec, kind: str) -> tuple:
        child, parents = int(spec[0]), tuple(int(v) for v in spec[1])
        vs = (child, *parents)
        if len(set(vs)) != len(vs) or not parents or any(v < 0 or v >= self.cards.size for v in vs):
            raise ModelError(f"a {kind} factor needs a child and at least one distinct parent, got {vs}")
        return child, parents

    def _checked_max(self, spec) -> tuple:
        child, parents = self._structural_vars(spec, "noisy-MAX")
        tables, leak = [np.asarray(t, dtype=np.float64) for t in spec[2]], np.asarray(spec[3], dtype=np.float64)
        K = int(self.cards[child])
        if leak.shape != (K,) or len(tables) != len(parents) or any(
                t.shape != (int(self.cards[p]), K) for t, p in zip(tables, parents)):
            raise ShapeError(f"the noisy-MAX factor of {self.names[child]!r} needs a leak of shape ({K},) and one "
                             f"table (parent states, {K}) per parent")
        if any(not np.isfinite(t).all() or t.min() < 0 for t in [leak, *tables]):
            raise ModelError(f"the noisy-MAX factor of {self.names[child]!r} must be finite and nonnegative")
        return child, parents, tables, leak

    def _checked_logit(self, spec) -> tuple:
        child, parents = self._structural_vars(spec, "logistic")
        w, b = np.asarray(spec[2], dtype=np.float64), np.asarray(spec[3], dtype=np.float64)
        K = int(self.cards[child])
        if w.shape != (K, len(parents)) or b.shape != (K,) or not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ShapeError(f"the logistic factor of {self.names[child]!r} needs finite weights of shape "
                             f"({K}, {len(parents)}) and a bias of shape ({K},)")
        return child, parents, w, b

    @property
    def structural(self) -> bool:
        """Whether some factor is kept in closed form (noisy-OR, noisy-MAX or logistic)."""
        return bool(self.noisy_specs or self.max_specs or self.logit_specs)

    def _compile(self) -> None:
        T = len(self.factors)
        pairs = [(v, f, j) for f, (vs, _) in enumerate(self.factors) for j, v in enumerate(vs)]
        offset = T
        for specs in (self.noisy_specs, self.max_specs, self.logit_specs):
            pairs += [(v, offset + f, j) for f, (c, ps, *_) in enumerate(specs) for j, v in enumerate((c, *ps))]
            offset += len(specs)
        pairs.sort()
        self.n_edges = E = len(pairs)
        self.edge_var = np.array([p[0] for p in pairs], dtype=np.int64)
        self.edge_of = edge_of = {(f, j): e for e, (_, f, j) in enumerate(pairs)}
        self.var_start = np.searchsorted(self.edge_var, np.arange(self.cards.size)).astype(np.int64)
        self.K = int(self.cards.max()) if self.cards.size else 1
        self.groups = []
        for sig, fs in self._grouping().items():
            limits.check_bytes(8.0 * len(fs) * int(np.prod(sig)), what=f"the stacked factors of shape {sig}",
                               cause=f"{len(fs)} factors", knob="batch_bytes")
            tables = np.zeros((len(fs),) + sig)                                        # (F, *sig), zero-padded
            for r, f in enumerate(fs):
                t = self.factors[f][1]
                tables[(r,) + tuple(slice(0, c) for c in t.shape)] = t
            variables = np.array([self.factors[f][0] for f in fs], dtype=np.int64).reshape(len(fs), len(sig))
            edges = np.array([[edge_of[(f, j)] for j in range(len(sig))] for f in fs],
                             dtype=np.int64).reshape(len(fs), len(sig))
            self.groups.append(FactorGroup(tuple(sig), tables, variables, edges, np.array(fs, dtype=np.int64)))
        self.edge_card = self.cards[self.edge_var] if E else np.zeros(0, dtype=np.int64)
        self.noisy = None
        if self.noisy_specs:
            ns = self.noisy_specs
            starts = np.cumsum([0] + [len(ps) for _, ps, *_ in ns])
            self.noisy = NoisyOrFactors(
                [edge_of[(T + f, 0)] for f in range(len(ns))], [leak for *_, leak, _ in ns], starts,
                [edge_of[(T + f, j + 1)] for f, (_, ps, *_) in enumerate(ns) for j in range(len(ps))],
                np.concatenate([1.0 - p for _, _, p, _, _ in ns]), np.concatenate([on for *_, on in ns]))
        offset = T + len(self.noisy_specs)
        self.noisy_max = NoisyMaxFactors(self.max_specs, edge_of, offset, self.K) if self.max_specs else None
        offset += len(self.max_specs)
        self.logistic = LogisticFactors(self.logit_specs, edge_of, offset, self.K) if self.logit_specs else None
        if self.logistic is not None:
            self.logistic.slot_card = self.edge_card[self.logistic.slot_edge]

    def _grouping(self) -> dict:
        """Factors stacked by padded shape, to run fewer ``einsum`` calls per sweep.

        The factors of one arity, in order of size, fill groups greedily: a
        factor joins the current group while the group's padded shape (the
        largest card on each axis) has at most ``PAD_FACTOR`` times the entries
        of the group's smallest factor.
        """
        by_arity: dict = {}
        for f, (_, t) in enumerate(self.factors):
            by_arity.setdefault(t.ndim, []).append(f)
        out: dict = {}
        for fs in by_arity.values():
            fs = sorted(fs, key=lambda f: (self.factors[f][1].size, self.factors[f][1].shape))
            caps, smallest, members = None, 0, []
            for f in fs:
                shape = self.factors[f][1].shape
                new = shape if caps is None else tuple(max(a, b) for a, b in zip(caps, shape))
                if caps is not None and int(np.prod(new)) > PAD_FACTOR * smallest:
                    out.setdefault(caps, []).extend(members)
                    new, members = shape, []
                if not members:
                    smallest = int(np.prod(shape))
                caps = new
                members.append(f)
            out.setdefault(caps, []).extend(members)
        return out

    def __repr__(self) -> str:
        return f"<FactorGraph {self.cards.size} variables, {len(self.factors)} factors, {self.n_edges} edges>"

    @property
    def max_views(self) -> list:
        """The noisy-MAX factors and the noisy-OR ones as two-level noisy-MAX factors (for max-product), cached."""
        if getattr(self, "_max_views", None) is None:
            views = [] if self.noisy is None else [NoisyMaxFactors.from_noisy_or(self.noisy, self.K)]
            self._max_views = views + ([] if self.noisy_max is None else [self.noisy_max])
        return self._max_views

    @property
    def is_tree(self) -> bool:
        """Whether the factor graph has no cycle (then belief propagation is exact)."""
        import networkx as nx  # loaded on first use, not by ``import causalnet``

        g = nx.Graph()
        g.add_nodes_from(("v", v) for v in range(self.cards.size))
        for f, (vs, _) in enumerate(self.factors):
            g.add_edges_from((("f", f), ("v", v)) for v in vs)
        for f, (c, ps, *_) in enumerate(self.noisy_specs + self.max_specs + self.logit_specs):
            g.add_edges_from((("n", f), ("v", v)) for v in (c, *ps))
        return nx.is_forest(g)


def network_factor_graph(cpts: dict, cards: dict, dag, noisy_or: dict | None = None, noisy_max: dict | None = None,
                         logistic: dict | None = None) -> FactorGraph:
    """The factor graph of a discrete Bayesian network: one factor per node over its family.

    Parameters
    ----------
    cpts : dict node -> ndarray of shape (*[cards[p] for p in dag.parents(v)], card)
    cards : dict node -> int
    dag : DAG
        Its node order numbers the variables.
    noisy_or : dict node -> (parents, probs, leak, on), optional
        Nodes kept as closed-form noisy-OR factors instead of tables.
    noisy_max : dict node -> (parents, tables, leak), optional
    logistic : dict node -> (parents, weights (K, k), bias (K,)), optional
        Nodes kept as closed-form noisy-MAX and logistic factors.

    Returns
    -------
    FactorGraph
        With ``own_edge`` (ndarray of int, shape (V,)): the edge from each
        node's own factor (its CPT or closed form) to the node.
    """
    names = list(dag.nodes)
    index = {v: i for i, v in enumerate(names)}
    closed = [dict(noisy_or or {}), dict(noisy_max or {}), dict(logistic or {})]
    tabled = [v for v in names if not any(v in c for c in closed)]
    factors = [(tuple(index[p] for p in dag.parents(v)) + (index[v],), cpts[v]) for v in tabled]
    specs = [[(index[v], tuple(index[p] for p in spec[0]), *spec[1:]) for v, spec in c.items()] for c in closed]
    fg = FactorGraph([cards[v] for v in names], factors, names, *specs)
    own = np.empty(len(names), dtype=np.int64)
    for f, v in enumerate(tabled):
        own[index[v]] = fg.edge_of[(f, len(factors[f][0]) - 1)]
    f = len(factors)
    for c in closed:
        for v in c:
            own[index[v]] = fg.edge_of[(f, 0)]
            f += 1
    fg.own_edge = own
    return fg
