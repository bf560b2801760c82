"""d-separation for a process's first queries: lazy integer rows, ancestor bitsets, nothing compiled.

This module is the front door of :meth:`causalnet.graph.dag.DAG.d_separated`
and :func:`causalnet.graph.separation.d_separated`. It is small and imports
nothing that a built DAG has not loaded already, so the first query of a
process pays little beyond its own search; it answers the plainly-typed
queries of graphs of up to :data:`QUICK_MAX_NODES` nodes in plain Python
until the compiled kernel of :mod:`causalnet.graph.kernels` is compiled (or
has paid for its compilation, see :mod:`causalnet.graph.separation`), and
leaves every other call, and every error, to the engines of
:mod:`causalnet.graph.separation` (:func:`~causalnet.graph.separation.d_separated_engines`),
which give the same answers.

What a graph's first queries build (:class:`QuickIndex`, kept with the
graph's :class:`~causalnet.graph.core.GraphIndex`):

* the CSR parent and child arrays as flat Python lists, once per direction
  (one ``tolist`` each, and none for the children when the graph's
  acyclicity test converted them already, :attr:`GraphIndex.chi_flat
  <causalnet.graph.core.GraphIndex>`; no list per node is built: a row is
  a slice taken when the search expands the node);
* An({v}), the ancestors of v (v included), as a Python int used as a
  bitset (bit ``i`` is node ``i``), for the nodes the queries needed, each
  from its parents' bitsets: one big-int OR per edge, filled once and
  kept; the bitsets together hold at most :data:`ANC_BYTES` bytes;
* the node names as a frozenset, for a large Y given by name.

Two searches:

* **the Bayes ball** (Shachter 1998) from X given Z, which only moves down
  into An(Y ∪ Z) (the OR of a dozen stored bitsets): a ball moving down out
  of it never bounces (no node of Z below) and never meets Y, so the pruning
  is exact and keeps the search to the small part of a sparse graph that
  matters;
* **the local Markov statement** X ⊥ Y | Z with Y a large set of names
  (the non-descendants of X other than its parents, say): when Z holds every
  parent of X and no descendant of X, the ball from X reaches exactly
  De(X), so the answer is whether Y avoids De(X): one C-level pass checks
  that Y names nodes, and no Python work is done per node of Y.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("A -> C <- B; C -> D")
>>> quick_answer(g.index, "A", "B", {"D"})      # D opens the collider C
False
>>> quick_answer(g.index, "A", {"B"}, None)
True
>>> quick_answer(g.index, "A", "nope", None) is None   # the checked path raises for it
True

References
----------
.. [1] R. D. Shachter, "Bayes-Ball: the rational pastime", UAI 1998.
.. [2] S. L. Lauritzen, A. P. Dawid, B. N. Larsen, H.-G. Leimer,
       "Independence properties of directed Markov fields", Networks 20, 1990.
"""

from __future__ import annotations

import sys
import time
from operator import itemgetter

import numpy as np

from .. import graph as _graph  # the engines (separation, reach) load on first use (graph/__init__.py)
from .. import runtime
from .core import DAGCore, GraphIndex

__all__ = ["ACTIVE", "ANC_BYTES", "BIG_SET", "FLAT_MAX_NODES", "KERNEL_MIN_NODES", "MARKOV_MEMO_AFTER", "MEMO_AFTER",
           "MEMO_MAX_NODES", "PYTHON_BUDGET_S", "QUICK_MAX_NODES", "STATE",
           "QuickIndex", "byte_mask", "connected", "d_separated", "node_ids", "quick_answer"]

#: Graphs of more nodes are left to the engines (a bitset test costs about n/60 machine words).
QUICK_MAX_NODES = 20_000
#: Most bytes the ancestor bitsets of one graph hold together; past it the engines answer.
ANC_BYTES = 32 * 2**20
#: Queries past this many on a graph of at most MEMO_MAX_NODES nodes take An(Y ∪ Z) from the stored bitsets;
#: earlier ones, and those on larger graphs (where a bitset is wide), by a plain walk.
MEMO_AFTER = 32
MEMO_MAX_NODES = 4096
#: The local Markov shortcut takes rows from the flat lists on graphs of at most this many nodes, else
#: from the CSR arrays one row at a time (it visits few nodes; the flat lists of a large graph cost more).
FLAT_MAX_NODES = 4096
#: Local Markov statements past this many on a graph take De(X) from memoized descendant sets (filling them
#: costs more than it saves over a graph's first few hundred statements).
MARKOV_MEMO_AFTER = 256
#: A set Y (or X) larger than this is tested by name instead of being mapped to indices.
BIG_SET = 64
#: The compiled kernel serves graphs of at least this many nodes ...
KERNEL_MIN_NODES = 32
#: ... once the Python searches of the process have taken this many seconds (backend ``"auto"``).
PYTHON_BUDGET_S = 1.0
#: Seconds spent in Python d-separation searches by this process (this module's and the engines').
STATE = {"python_s": 0.0}
#: Tests turn this off to pin one engine of :mod:`causalnet.graph.separation`.
ACTIVE = True

_KERNELS = __name__.rpartition(".")[0] + ".kernels"


class QuickIndex:
    """What the quick path keeps with a graph: flat CSR lists, ancestor bitsets, the node-name set.

    Parameters
    ----------
    ix : GraphIndex

    Attributes
    ----------
    pp, pi : list of int or None
        ``p_ptr`` and ``p_idx`` as lists (parents of ``v``: ``pi[pp[v]:pp[v + 1]]``), on first use.
    cp, ci : list of int or None
        The same for children; on graphs over :data:`FLAT_MAX_NODES` nodes ``cp`` may be built alone, a
        child row then being one slice of the CSR index array (:meth:`child_row`).
    prow, crow : list of (list of int or None), length n
        The parent and child rows of the nodes a search has expanded
        (slices of the flat lists, taken once: no list per node is built for
        the nodes no query reaches).
    anc : list of int, length n, or None
        ``anc[v]`` is An({v}) as a bitset once computed, 0 before (the list is made on first use).
    left : int
        Bytes the bitsets may still take (:data:`ANC_BYTES` at first).
    names : frozenset or None
        The node names, on first use.
    queries : int
        Small-set queries answered (the bitsets serve those past :data:`MEMO_AFTER`).
    markov : int
        Local Markov statements asked (the descendant memo serves those past :data:`MARKOV_MEMO_AFTER`).
    desc : ClosureMemo or None
        The memoized descendant sets, once used.
    """

    __slots__ = ("ix", "pp", "pi", "cp", "ci", "prow", "crow", "anc", "left", "names", "queries", "markov", "desc")

    def __init__(self, ix: GraphIndex) -> None:
        self.ix = ix
        self.pp = self.pi = self.cp = self.ci = None
        self.prow: list = [None] * ix.n
        self.crow: list = [None] * ix.n
        self.anc: list | None = None
        self.left = ANC_BYTES
        self.names = None
        self.queries = self.markov = 0
        self.desc = None            # a reach.ClosureMemo once used (reach loads then)

    def parents(self) -> tuple[list, list]:
        """``(pp, pi)``, built on first use."""
        if self.pp is None:
            self.pp, self.pi = self.ix.p_ptr.tolist(), self.ix.p_idx.tolist()
        return self.pp, self.pi

    def children(self) -> tuple[list, list]:
        """``(cp, ci)``, built on first use."""
        if self.ci is None:
            if self.ix.chi_flat is not None:            # the acyclicity test converted them
                self.cp, self.ci = self.ix.chi_flat
            else:
                if self.cp is None:
                    self.cp = self.ix.c_ptr.tolist()
                self.ci = self.ix.c_idx.tolist()
        return self.cp, self.ci

    def flat_children(self) -> bool:
        """Whether searches read child rows from the flat lists: the graph is small, or its acyclicity test
        converted them already (else a row is a slice of the CSR index array)."""
        return self.ix.n <= FLAT_MAX_NODES or self.ix.chi_flat is not None

    def child_row(self, v: int) -> list:
        """The children of `v` (kept); from the flat lists once built, else from the CSR arrays (on large
        graphs a few rows cost less than the flat lists)."""
        r = self.crow[v]
        if r is None:
            if self.ci is None and self.flat_children():
                self.children()
            cp = self.cp
            if cp is None:              # the pointers alone as a list: a row is then one slice of the index array
                cp = self.cp = self.ix.c_ptr.tolist()
            if self.ci is not None:
                r = self.ci[cp[v]:cp[v + 1]]
            else:
                r = self.ix.c_idx[cp[v]:cp[v + 1]].tolist()
            self.crow[v] = r
        return r

    def parent_row(self, v: int) -> list:
        """The parents of `v` (kept); from the flat lists once a search has built them, else from the CSR arrays."""
        r = self.prow[v]
        if r is None:
            if self.pi is not None:
                r = self.pi[self.pp[v]:self.pp[v + 1]]
            else:
                ptr = self.ix.p_ptr
                r = self.ix.p_idx[ptr[v]:ptr[v + 1]].tolist()
            self.prow[v] = r
        return r

    def node_names(self) -> frozenset:
        """The node names as a frozenset (built once)."""
        if self.names is None:
            self.names = frozenset(self.ix.pos)     # from the name -> index dict: its stored hashes, presized
        return self.names

    def ancestors(self, nodes) -> int:
        """An(`nodes`) as a bitset: the OR of the stored An({v}); -1 once the byte budget is spent."""
        anc = self.anc
        if anc is None:
            anc = self.anc = [0] * self.ix.n
        out = 0
        for v in nodes:
            a = anc[v] or self._fill(v)
            if a < 0:
                return -1
            out |= a
        return out

    def ancestral_mask(self, nodes: list, base: bytearray | None = None) -> tuple[bytearray, int]:
        """An(`nodes`) ∪ `base` as one byte per node (1 for a member), by a plain walk up the parents.

        Returns the mask (a new one: `base` is left unchanged) and the number
        of nodes it has beyond `base`. The walk does not enter `base`, which
        must be ancestral (closed under parents). Nothing is stored.
        """
        pp, pi = self.parents()
        prow = self.prow
        mask = bytearray(self.ix.n) if base is None else bytearray(base)
        stack = []
        for v in nodes:
            if not mask[v]:
                mask[v] = 1
                stack.append(v)
        added = len(stack)
        while stack:
            v = stack.pop()
            ps = prow[v]
            if ps is None:
                ps = prow[v] = pi[pp[v]:pp[v + 1]]
            for p in ps:
                if not mask[p]:
                    mask[p] = 1
                    stack.append(p)
                    added += 1
        return mask, added

    def _fill(self, v: int) -> int:
        """Compute ``anc[v]`` and the missing bitsets above it, parents before children (post-order)."""
        pp, pi = self.parents()
        anc = self.anc
        prow = self.prow
        stack = [v]
        while stack:
            u = stack[-1]
            if anc[u]:
                stack.pop()
                continue
            ps = prow[u]
            if ps is None:
                ps = prow[u] = pi[pp[u]:pp[u + 1]]
            missing = [p for p in ps if not anc[p]]
            if missing:
                stack += missing        # acyclic: every path up the parents ends
                continue
            a = 1 << u
            for p in ps:
                a |= anc[p]
            self.left -= a.bit_length() // 8 + 32
            if self.left < 0:
                return -1
            anc[u] = a
            stack.pop()
        return anc[v]


def byte_mask(bits: int, n: int) -> bytes:
    """The bitset `bits` over `n` nodes as one byte per node (1 for a member), for fast tests ``mask[v]``."""
    packed = np.frombuffer(bits.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little").tobytes()


def connected(q: QuickIndex, xs: list, ys: set, zs: set, keep: bytes) -> bool:
    """Whether the Bayes ball from `xs` given `zs` reaches `ys`, moving down only into the nodes of `keep`.

    Parameters
    ----------
    q : QuickIndex
    xs : list of int
        X, disjoint from Y and Z.
    ys, zs : set of int
        Y and Z, disjoint.
    keep : bytes
        ``keep[v]`` is non-zero for the nodes of a set containing An(Y ∪ Z)
        (:func:`byte_mask`).

    Returns
    -------
    bool
        True when a node of Y is reached: X and Y are d-connected given Z.
    """
    pp, pi = q.parents()
    cp, ci = q.children()
    prow, crow = q.prow, q.crow
    up_seen = set(xs)           # reached from a child, or a source
    down_seen: set = set()      # reached from a parent
    up = list(up_seen)
    down: list = []
    # a node has 2-3 children here: testing keep[c] in the loop costs less than a C-level filter object per node
    while up or down:
        while up:                       # reached from a child: on to the parents and the children
            v = up.pop()
            if v in zs:
                continue
            ps = prow[v]
            if ps is None:
                ps = prow[v] = pi[pp[v]:pp[v + 1]]
            for p in ps:
                if p not in up_seen:
                    if p in ys:
                        return True
                    up_seen.add(p)
                    up.append(p)
            cs = crow[v]
            if cs is None:
                cs = crow[v] = ci[cp[v]:cp[v + 1]]
            for c in cs:
                if keep[c] and c not in down_seen:      # children outside An(Y ∪ Z) are dropped
                    if c in ys:
                        return True
                    down_seen.add(c)
                    down.append(c)
        while down:                     # reached from a parent: bounce up at Z, else on down
            v = down.pop()
            if v in zs:
                ps = prow[v]
                if ps is None:
                    ps = prow[v] = pi[pp[v]:pp[v + 1]]
                for p in ps:
                    if p not in up_seen:
                        if p in ys:
                            return True
                        up_seen.add(p)
                        up.append(p)
            else:
                cs = crow[v]
                if cs is None:
                    cs = crow[v] = ci[cp[v]:cp[v + 1]]
                for c in cs:
                    if keep[c] and c not in down_seen:
                        if c in ys:
                            return True
                        down_seen.add(c)
                        down.append(c)
    return False


def node_ids(pos: dict, v) -> list | None:
    """Indices of a node name (str or int) or of a set or list of names; None to leave `v` to the checked engines."""
    t = type(v)
    if t is str or t is int:
        i = pos.get(v)
        return None if i is None else [i]
    if t is set or t is frozenset or t is list:
        try:
            return [pos[u] for u in v]
        except (KeyError, TypeError):
            return None
    return None


def _defer(n: int) -> bool:
    """Whether the compiled kernel answers a small-set query on `n` nodes (it is compiled, or due to be)."""
    if n < KERNEL_MIN_NODES:
        return False
    backend = runtime.get_backend("graph")
    if backend == "numba":
        return True
    if backend != "auto":
        return False
    if STATE["python_s"] >= PYTHON_BUDGET_S:
        return runtime.numba_available()
    kernels = sys.modules.get(_KERNELS)     # the kernel can only be compiled once its module is loaded
    return kernels is not None and kernels.is_compiled()


def quick_answer(ix: GraphIndex, x, y, given=None) -> bool | None:
    """The answer to ``x ⊥ y | given`` on `ix`, or None to leave the query to the engines.

    None when an argument is not a node name or a set or list of names, a
    name is unknown, a set is empty, the sets overlap (the engines raise for
    those), the graph is larger than :data:`QUICK_MAX_NODES`, the compiled
    kernel answers (see :mod:`causalnet.graph.separation`), or Y is a large
    set and the statement is not a local Markov one.
    """
    q = ix.quick
    if q is None:
        if ix.n > QUICK_MAX_NODES:
            return None
        q = ix.quick = QuickIndex(ix)
    if not ACTIVE:
        return None
    tx, ty = type(x), type(y)
    if ty is str or (tx is not str and (len(x) if tx in (set, frozenset, list) else 1) >
                     (len(y) if ty in (set, frozenset, list) else 1)):
        x, y, tx, ty = y, x, ty, tx     # d-separation is symmetric: search from the smaller side
    big = (ty is set or ty is frozenset) and len(y) > BIG_SET
    if not big and _defer(ix.n):
        return None
    pos = ix.pos
    xs = node_ids(pos, x)
    zs = [] if given is None else node_ids(pos, given)
    if not xs or zs is None:
        return None
    if big:
        return _local_markov(q, xs, y, zs)
    ys = node_ids(pos, y)
    if not ys:
        return None
    zset = set(zs)
    yset = set(ys)
    if not zset.isdisjoint(xs) or not zset.isdisjoint(yset) or not yset.isdisjoint(xs):
        return None
    t0 = time.perf_counter()
    q.queries += 1
    start, stop, keep = _sides(q, xs, ys, zs)
    answer = not connected(q, start, set(stop), zset, keep)
    STATE["python_s"] += time.perf_counter() - t0
    return answer


def _sides(q: QuickIndex, xs: list, ys: list, zs: list) -> tuple[list, list, bytes | bytearray]:
    """Which side the ball starts from, the other, and An(other ∪ Z) as a byte mask.

    The ball walks up through the ancestors of the side it starts from, so
    it starts from the side with fewer ancestors (from the stored bitsets'
    sizes, or from how many nodes each side adds to An(Z) by a plain walk).
    """
    if q.queries > MEMO_AFTER and q.ix.n <= MEMO_MAX_NODES and q.left > 0:
        az, ax, ay = q.ancestors(zs), q.ancestors(xs), q.ancestors(ys)
        if az >= 0 and ax >= 0 and ay >= 0:
            if ax.bit_count() <= ay.bit_count():
                return xs, ys, byte_mask(ay | az, q.ix.n)
            return ys, xs, byte_mask(ax | az, q.ix.n)
    base = q.ancestral_mask(zs)[0] if zs else None
    kx, nx = q.ancestral_mask(xs, base)
    ky, ny = q.ancestral_mask(ys, base)
    return (xs, ys, ky) if nx <= ny else (ys, xs, kx)


def _local_markov(q: QuickIndex, xs: list, y, zs: list) -> bool | None:
    """X ⊥ Y | Z for a large set Y of names when Z holds pa(X) and nothing below X; None otherwise."""
    if not (q.names or q.node_names()).issuperset(y):
        return None
    name = q.ix.nodes.__getitem__
    zset = set(zs)
    if zs and (not zset.isdisjoint(xs) or not y.isdisjoint(map(name, zs))):
        return None
    prow = q.prow
    for x in xs:
        ps = prow[x]
        if not zset.issuperset(q.parent_row(x) if ps is None else ps):
            return None
    q.markov += 1
    if q.markov > MARKOV_MEMO_AFTER:  # a graph asked many times: De(X) from memoized descendant sets
        de = _stored_descendants(q, xs, zset)
    else:
        de = _descendants(q, xs, zset)    # De(X), or None when a node of Z is below X
    if de is None:
        return None
    if y.isdisjoint(itemgetter(*de)(q.ix.nodes) if len(de) > 1 else map(name, de)):   # the names of De(X), in C
        return True
    return None if not y.isdisjoint(map(name, xs)) else False     # X and Y overlap: the engines raise


def _stored_descendants(q: QuickIndex, xs: list, zset: set) -> set | frozenset | None:
    """De(X) as the union of memoized per-node descendant sets (:class:`causalnet.graph.reach.ClosureMemo`,
    filled along the rows :meth:`QuickIndex.child_row` gives); a plain walk once its budget is spent."""
    if q.desc is None:
        q.desc = _graph.reach.ClosureMemo(q.ix.n, _graph.reach.MEMO_ELEMENTS)
    rows = _Rows(q.child_row)
    sets = []
    for x in xs:
        s = q.desc.descendants(rows, x)
        if s is None:
            return _descendants(q, xs, zset)
        if not zset.isdisjoint(s):
            return None
        sets.append(s)
    return sets[0] if len(sets) == 1 else set().union(*sets)


class _Rows:
    """A read-only list-like view whose item ``v`` is ``row(v)`` (rows built on demand)."""

    __slots__ = ("row",)

    def __init__(self, row) -> None:
        self.row = row

    def __getitem__(self, v: int) -> list:
        return self.row(v)


def _descendants(q: QuickIndex, xs: list, zset: set) -> set | None:
    """De(X) by a plain walk down the children; None as soon as it meets a node of `zset`."""
    crow = q.crow
    if q.ci is None and q.flat_children():
        q.children()
    ci = q.ci
    if ci is None:                  # a large graph: rows are slices of the index array (see child_row)
        ci = q.ix.c_idx
        cp = q.cp
        if cp is None:
            cp = q.cp = q.ix.c_ptr.tolist()
    else:
        cp = q.cp
    flat = ci is q.ci
    de = set(xs)
    stack = list(de)
    while stack:
        v = stack.pop()
        cs = crow[v]
        if cs is None:
            cs = crow[v] = ci[cp[v]:cp[v + 1]] if flat else ci[cp[v]:cp[v + 1]].tolist()
        for c in cs:
            if c not in de:
                if c in zset:
                    return None
                de.add(c)
                stack.append(c)
    return de


def d_separated(dag: DAGCore, x, y, given=None) -> bool:
    """Whether `x` and `y` are d-separated by `given`: the quick path, else the engines.

    The same contract as :func:`causalnet.graph.separation.d_separated`
    (which calls this): the quick path answers what it can
    (:func:`quick_answer`), :func:`causalnet.graph.separation.d_separated_engines`
    the rest, with the same answers, and raises every error.
    """
    if isinstance(dag, DAGCore):
        answer = quick_answer(dag.index, x, y, given)
        if answer is not None:
            return answer
    return _graph.separation.d_separated_engines(dag, x, y, given)
