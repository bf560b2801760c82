"""The validated arrays of a discrete Bayesian network, shared by its exact engines.

A :class:`DiscreteNetwork` holds a DAG's nodes as ints ``0..N-1`` (in the DAG's
node order), each node's number of states, its *family* (parents in DAG order,
then the node) and its CPT of shape ``(*parent_cards, card)``, rows summing to
1. It validates user input once (cards, CPT shapes and rows, targets, evidence)
and offers what every engine needs: ancestral sets, the moral graph of a node
set with the evidence removed, and the evidence-reduced CPT slots of a
compiled program (:class:`~causalnet.inference.discrete.programs.ProgramBuilder`).

Variable elimination (:class:`~causalnet.inference.discrete.elimination.DiscreteBN`,
a subclass) and junction trees (:mod:`causalnet.inference.discrete.junction_tree`)
consume it; it knows nothing of either.

Examples
--------
>>> import causalnet as cn
>>> net = DiscreteNetwork(cn.DAG.parse("A -> B"),
...                       {"A": [0.3, 0.7], "B": [[0.9, 0.1], [0.2, 0.8]]}, {"A": 2, "B": 2})
>>> net.card, net.family
([2, 2], [(0,), (0, 1)])
>>> net.evidence_indices({"B": [0, 1, 1]})[1]      # n = 3 rows
3
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from ... import limits
from ...errors import EvidenceError, GraphError, ModelError, ShapeError
from ...graph.dag import DAG
from .factors import as_state_index
from .programs import FoldCache, ProgramBuilder

__all__ = ["DiscreteNetwork"]


def _validated_cards(names: Sequence, cards: Mapping) -> list[int]:
    card: list[int] = []
    for v in names:
        if v not in cards:
            raise ModelError(f"no card (number of states) for node {v!r}")
        try:
            k = operator.index(cards[v])
        except TypeError:
            raise ModelError(f"card of {v!r} must be a positive integer, got {cards[v]!r}") from None
        if k < 1:
            raise ModelError(f"card of {v!r} must be a positive integer, got {k}")
        card.append(k)
    return card


def _validated_tables(names: Sequence, parents: list, card: list[int], cpts: Mapping) -> list[np.ndarray]:
    """Float64 copies of the CPTs, checked, every row divided by its sum (read-only views of one buffer).

    The checks run once over all tables at once (one concatenated buffer:
    one finiteness and sign test, one segmented row sum); a failure is then
    located table by table for its message.
    """
    limit = limits.get("max_table_bytes")
    flat_parts, wants = [], []
    for i, v in enumerate(names):
        if v not in cpts:
            raise ModelError(f"no CPT for node {v!r}")
        want = tuple(card[p] for p in parents[i]) + (card[i],)
        size = math.prod(want)
        if 8.0 * size > limit:
            limits.check_bytes(8.0 * size, what=f"the CPT of {v!r}", cause=f"shape {want}")
        t = cpts[v]
        if type(t) is not np.ndarray or t.dtype != np.float64:
            try:
                t = np.asarray(t, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ModelError(f"CPT for {v!r} is not an array of real numbers: {exc}") from None
        if t.shape != want:
            raise ShapeError(
                f"CPT for {v!r} has shape {t.shape}; parents {tuple(names[p] for p in parents[i])} have cards "
                f"{want[:-1]} and {v!r} has {want[-1]} states, so expected {want}"
            )
        flat_parts.append(t.reshape(-1))
        wants.append(want)
    flat = np.concatenate(flat_parts) if flat_parts else np.zeros(0)            # a copy: ours alone
    row_len = np.repeat(np.array(card, dtype=np.intp), [math.prod(w[:-1]) for w in wants])   # (rows,)
    starts = np.zeros(row_len.size, dtype=np.intp)
    np.cumsum(row_len[:-1], out=starts[1:])
    sums = np.add.reduceat(flat, starts) if flat.size else np.zeros(0)        # (rows,)
    # a NaN or inf entry makes its row's sum non-finite: one check for both
    if flat.size and (not np.isfinite(sums).all() or flat.min() < 0 or (np.abs(sums - 1.0) > 1e-6).any()):
        _raise_bad_table(names, wants, flat)
    flat /= np.repeat(sums, row_len)            # exactly 1, so pruning never changes an answer
    flat.flags.writeable = False
    tables, a = [], 0
    for want in wants:
        b = a + math.prod(want)
        tables.append(flat[a:b].reshape(want))
        a = b
    return tables


def _raise_bad_table(names: Sequence, wants: list, flat: np.ndarray) -> None:
    """The ModelError of the first bad table in `flat` (a negative or non-finite entry, or a bad row)."""
    a = 0
    for v, want in zip(names, wants):
        b = a + math.prod(want)
        t = flat[a:b].reshape(want)
        a = b
        sums = t.sum(axis=-1)
        if not np.isfinite(sums).all() or t.min() < 0:
            raise ModelError(f"CPT for {v!r} has negative or non-finite entries")
        bad = np.abs(sums - 1.0) > 1e-6
        if bad.any():
            row = tuple(int(j) for j in np.argwhere(bad)[0])
            raise ModelError(
                f"CPT for {v!r}: the row for parent states {row} sums to {float(sums[row]):.6g}; "
                f"every row must sum to 1 on the last axis"
            )


class DiscreteNetwork:
    """The validated network: node ints, cards, families and CPTs.

    Parameters
    ----------
    dag : DAG
        The structure. Latent marks are ignored (any node may be observed).
    cpts : mapping of node -> array_like
        ``cpts[v]`` has shape ``(*[cards[p] for p in dag.parents(v)], cards[v])``;
        nonnegative, rows summing to 1 (within 1e-6) on the last axis. Copied,
        and each row divided by its sum.
    cards : mapping of node -> int
        Number of states of each node (at least 1).
    row_evidence : mapping of node -> int array of shape (n,), optional
        Nodes under a *per-row* ``do`` in the model the tables come from
        (:func:`~causalnet.inference.discrete.engine.discrete_network`): their
        CPT is a uniform root, observed at these states row by row
        (conditioning on a root is intervening on it). Empty by default.

    Attributes
    ----------
    card : list of int
        States of node i.
    family : list of tuple of int
        Parents of node i (DAG order), then i.
    cpt_list : list of ndarray
        Read-only CPT of node i, axes as `family`.
    rank : dict
        Node int -> itself (the tie-break order of greedy orderings).
    folds : FoldCache
        Constant-folded tables shared by every program compiled on this network.
    row_evidence : dict
        Node -> per-row states of a per-row ``do`` (see the parameter).

    Raises
    ------
    ModelError
        On a missing or unknown node, a bad card, a negative or non-finite
        entry, or a row that does not sum to 1.
    ShapeError
        On a CPT of the wrong shape.
    ResourceError
        On a CPT larger than ``limits.get("max_table_bytes")``.
    """

    def __init__(self, dag: DAG, cpts: Mapping[Hashable, np.ndarray], cards: Mapping[Hashable, int], *,
                 row_evidence: Mapping[Hashable, np.ndarray] | None = None) -> None:
        if not isinstance(dag, DAG):
            raise ModelError(f"{type(self).__name__} expects a causalnet DAG, got {type(dag).__name__}")
        for what, mapping in (("cards", cards), ("cpts", cpts)):
            if not isinstance(mapping, Mapping):
                raise ModelError(f"{what} must be a mapping of node -> value, got {type(mapping).__name__}")
        names = dag.nodes
        index = dag.index.pos
        for what, mapping in (("cards", cards), ("cpts", cpts)):
            if index.keys() >= mapping.keys():
                continue
            for k in mapping:
                if k not in index:
                    raise ModelError(f"{what} names {k!r}, which is not a node of the DAG{_hint(names, k)}")
        card = _validated_cards(names, cards)
        parents = [tuple(sorted(p)) for p in dag.index.par]          # DAG node order
        tables = _validated_tables(names, parents, card, cpts)
        self._dag = dag
        self._names = names
        self._index = index
        self._card = card
        self._parents = parents
        self._family = [(*parents[i], i) for i in range(len(names))]
        self._cpt = tables
        self._rank = {i: i for i in range(len(names))}
        self._cache_eyes: dict = {}
        self._cache_tables: dict = {}
        self._cache_folds = FoldCache()
        self._cache_children: list | None = None
        self.row_evidence = dict(row_evidence or {})

    # -- views -----------------------------------------------------------------

    @property
    def dag(self) -> DAG:
        return self._dag

    @property
    def nodes(self) -> tuple:
        return self._names

    @property
    def cards(self) -> dict:
        """Node -> number of states."""
        return dict(zip(self._names, self._card))

    @property
    def cpts(self) -> dict:
        """Node -> read-only CPT of shape ``(*parent_cards, card)``."""
        return dict(zip(self._names, self._cpt))

    @property
    def card(self) -> list[int]:
        return self._card

    @property
    def family(self) -> list[tuple]:
        return self._family

    @property
    def children(self) -> list[tuple]:
        """Each node's children (node ints), computed once."""
        kids = self._cache_children
        if kids is None:
            acc: list[list] = [[] for _ in self._names]
            for v, ps in enumerate(self._parents):
                for p in ps:
                    acc[p].append(v)
            kids = self._cache_children = [tuple(k) for k in acc]
        return kids

    @property
    def cpt_list(self) -> list[np.ndarray]:
        return self._cpt

    @property
    def rank(self) -> dict:
        return self._rank

    @property
    def folds(self) -> FoldCache:
        return self._cache_folds

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {len(self._names)} nodes, {sum(map(len, self._parents))} edges>"

    # -- validation ------------------------------------------------------------

    def node_index(self, v, what: str, error=GraphError) -> int:
        """The int of node `v`; `error` (naming `what`) if it is not a node."""
        try:
            return self._index[v]
        except (KeyError, TypeError):
            raise error(f"unknown {what} {v!r}{_hint(self._names, v)}") from None

    def target_indices(self, targets) -> tuple[int, ...]:
        """Validated targets (a node, or an iterable of distinct nodes) as ints."""
        if targets is None:
            return ()
        if isinstance(targets, str) or not isinstance(targets, Iterable):
            targets = [targets]
        out = tuple(self.node_index(t, "target node") for t in targets)
        if len(set(out)) != len(out):
            dup = next(t for t in out if out.count(t) > 1)
            raise GraphError(f"target {self._names[dup]!r} is listed twice")
        return out

    def evidence_indices(self, evidence) -> tuple[dict, int | None]:
        """Validated evidence: node int -> int state or int array (n,), and n (None if scalar)."""
        if evidence is None or (isinstance(evidence, (Mapping, list, tuple)) and not evidence):
            return {}, None
        if not isinstance(evidence, Mapping):
            raise EvidenceError(f"evidence must be a mapping of node -> state, got {type(evidence).__name__}")
        ev: dict = {}
        n = None
        first = None
        card = self._card
        for k, val in evidence.items():
            i = self.node_index(k, "evidence node", EvidenceError)
            if type(val) is int and 0 <= val < card[i]:
                ev[i] = val
                continue
            x = as_state_index(k, val, card[i])
            if isinstance(x, np.ndarray):
                if n is None:
                    n, first = x.shape[0], k
                elif x.shape[0] != n:
                    raise EvidenceError(
                        f"evidence for {k!r} has {x.shape[0]} rows but evidence for {first!r} has {n}; "
                        f"batched evidence arrays must have one length"
                    )
            ev[i] = x
        return ev, n

    def check_disjoint(self, tidx: tuple[int, ...], ev: Iterable[int]) -> None:
        """EvidenceError if a target (node int) is also observed (`ev`: the evidence node ints, or a mapping on them)."""
        both = set(tidx).intersection(ev)
        if both:
            raise EvidenceError(f"{self._names[min(both)]!r} is both a target and evidence")

    def index_evidence(self, evidence: Mapping) -> tuple[dict, int | None]:
        """Evidence validated already (node -> state, or int array of shape (n,)) keyed by node int.

        No checks: the caller (a :class:`~causalnet.inference.request.Request`)
        validated nodes, states and batch sizes. An ``int`` stays an ``int``,
        a 0-d array becomes one, an array becomes ``intp`` (no copy when it is
        one already), as :meth:`evidence_indices` would return them.

        Returns
        -------
        ev : dict of node int -> int or ndarray of shape (n,)
        n : int or None
        """
        ev: dict = {}
        n = None
        index = self._index
        for k, x in evidence.items():
            if type(x) is not int:
                x = np.asarray(x)
                if x.ndim == 0:
                    x = int(x)
                else:
                    x = x.astype(np.intp, copy=False)
                    if n is None:
                        n = x.shape[0]
            ev[index[k]] = x
        return ev, n

    def raise_impossible(self, ev: dict, z, n: int | None):
        """Raise the EvidenceError of evidence `ev` whose probability `z` is zero (in some row)."""
        items = sorted(ev.items())
        if n is None:
            desc = ", ".join(f"{self._names[u]}={x}" for u, x in items)
            raise EvidenceError(f"the evidence has probability zero: P({desc}) = 0")
        rows = np.flatnonzero(~(np.broadcast_to(z, (n,)) > 0))
        r = int(rows[0])
        desc = ", ".join(f"{self._names[u]}={x if type(x) is int else int(x[r])}" for u, x in items)
        raise EvidenceError(
            f"the evidence has probability zero in {rows.size} of {n} rows "
            f"(rows {rows[:5].tolist()}{'...' if rows.size > 5 else ''}; row {r}: P({desc}) = 0)"
        )

    # -- structure -------------------------------------------------------------

    def ancestral(self, start: Iterable[int]) -> set[int]:
        """`start` and all its ancestors (node ints)."""
        out = set(start)
        stack = list(out)
        par = self._parents
        while stack:
            for p in par[stack.pop()]:
                if p not in out:
                    out.add(p)
                    stack.append(p)
        return out

    def reduced(self, nodes: Iterable[int], ev: frozenset) -> tuple[dict, dict]:
        """Free (non-evidence) family variables of `nodes` and the moral graph over them."""
        fam_free = {}
        adj: dict = {}
        for v in nodes:
            ff = tuple(u for u in self._family[v] if u not in ev)
            fam_free[v] = ff
            for a in ff:
                s = adj.get(a)
                if s is None:
                    s = adj[a] = set()
                s.update(ff)
        for a, s in adj.items():
            s.discard(a)
        return fam_free, adj

    def evidence_table(self, v: int, evs: tuple[int, ...]) -> np.ndarray:
        """CPT of `v` with the axes of `evs` moved last (contiguous, cached)."""
        key = (v, evs)
        t = self._cache_tables.get(key)
        if t is None:
            fam = self._family[v]
            last = [fam.index(u) for u in evs]
            perm = [j for j in range(len(fam)) if j not in last] + last
            t = np.ascontiguousarray(np.transpose(self._cpt[v], perm))
            self._cache_tables[key] = t
        return t

    def eye(self, v: int) -> np.ndarray:
        """The identity of node v's states (its rows: the point masses), cached."""
        e = self._cache_eyes.get(v)
        if e is None:
            k = self._card[v]
            limits.check_bytes(8.0 * k * k, what=f"the indicator table of {self._names[v]!r}",
                               cause=f"{self._names[v]!r} has {k} states (a {k} x {k} table)")
            e = self._cache_eyes[v] = np.eye(k)
        return e

    def factor_slot(self, b: ProgramBuilder, v: int, ev: frozenset, batched: frozenset) -> int:
        """The slot of `b` holding node v's CPT reduced by the evidence nodes `ev`."""
        fam = self._family[v]
        evs = tuple(u for u in fam if u in ev)
        if not evs:
            return b.const(self._cpt[v], fam, frozenset((v,)))
        labels = tuple(u for u in fam if u not in ev)
        return b.input(self.evidence_table(v, evs), evs, labels, any(u in batched for u in evs))


def _hint(names: Sequence, v) -> str:
    import difflib  # only on a bad name: kept out of the import

    close = difflib.get_close_matches(str(v), [str(n) for n in names], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
