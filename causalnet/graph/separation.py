"""d-separation, minimal separators and the independencies a DAG implies.

Terms
-----
A path between X and Y is *blocked* by a set Z when it has a non-collider in
Z, or a collider ``a -> c <- b`` such that neither c nor any descendant of c
is in Z. X and Y are *d-separated* by Z when every path between them is
blocked; then X ⊥ Y | Z holds in every distribution that factorises over the
DAG (Pearl 1988; Geiger, Verma & Pearl 1990).

The test is the "Bayes-ball" reachability of Shachter (1998) / Koller &
Friedman (2009, Alg. 3.1): a search over (node, direction) states that never
visits a state twice, so it runs in time linear in the size of the graph.
It runs on an integer-indexed adjacency (CSR arrays) that is built once per
DAG and cached; on large graphs the search advances a whole frontier per numpy
step, and stops as soon as it reaches Y.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("A -> C <- B; C -> D")
>>> g.d_separated("A", "B")                 # collider blocks
True
>>> g.d_separated("A", "B", given={"D"})    # descendant of the collider opens it
False

References
----------
.. [1] R. D. Shachter, "Bayes-Ball: the rational pastime", UAI 1998.
.. [2] J. Tian, A. Paz, J. Pearl, "Finding minimal d-separators", 1998.
.. [3] B. van der Zander, M. Liśkiewicz, J. Textor, "Separators and adjustment
       sets in causal graphs: complete criteria and an algorithmic framework",
       Artificial Intelligence 270, 2019.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable

import numpy as np

from .. import limits, runtime
from ..errors import GraphError
from ..records import Record
from . import bitsep, kernels
from .core import DAGCore, GraphIndex, closure
from .reach import MEMO_ELEMENTS, ClosureMemo, ancestral_set, ball_reaches, bayes_ball, local_markov_reach

__all__ = [
    "d_separated",
    "d_separated_engines",
    "d_connected",
    "minimal_d_separator",
    "implied_independencies",
    "Independence",
    "bayes_ball",
    "moral_graph",
    "closure",
    "set_backend",
]

# Before the compiled kernel pays, a query runs the Bayes ball in plain Python
# inside the ancestral set of X, Y and Z (:mod:`causalnet.graph.reach`). The
# first _MEMO_AFTER queries on a graph find that set by a plain search; later
# ones from memoized per-node ancestor sets (filling the memo costs more than
# it saves over a graph's first few hundred queries: measured at 10^3 and 10^4
# nodes). Once a graph's memo is full (its budget of stored elements,
# _MEMO_ELEMENTS, is spent: graphs whose ancestor sets are huge), graphs at
# least _NUMPY_MIN_NODES large use the frontier-at-a-time numpy search
# (numpy's per-call overhead dominates on smaller ones).
_NUMPY_MIN_NODES = 8000
_MEMO_AFTER = 256
_MEMO_ELEMENTS = MEMO_ELEMENTS

# The compiled kernel serves graphs of at least this many nodes (on smaller
# ones the Python search is as fast), once the Python searches of this process
# have taken _PYTHON_BUDGET_S seconds in all (then its compile time has paid).
_KERNEL_MIN_NODES = bitsep.KERNEL_MIN_NODES
_PYTHON_BUDGET_S = bitsep.PYTHON_BUDGET_S

# A set Y larger than this is tested by name on the nodes the ball reaches
# instead of being mapped to indices.
_BIG_SET = 64

_state = bitsep.STATE     # seconds of Python searches in this process, the quick path's included

# Bytes of one Independence statement in a list (object, slots, list pointer);
# the conditioning sets are shared between statements.
_STATEMENT_BYTES = 120


class Independence(Record):
    """A conditional independence statement ``x ⊥ y | given`` (immutable, hashable; compares by its fields).

    Parameters
    ----------
    x, y : node
    given : frozenset of nodes
    """

    __slots__ = ("x", "y", "given")
    __match_args__ = ("x", "y", "given")

    x: Hashable
    y: Hashable
    given: frozenset

    def __init__(self, x: Hashable, y: Hashable, given: frozenset) -> None:
        self._set(x, y, given)

    def __str__(self) -> str:
        g = ", ".join(map(str, sorted(self.given, key=str)))
        return f"{self.x} ⊥ {self.y}" + (f" | {g}" if g else "")


def _gather(ptr: np.ndarray, idx: np.ndarray, front: np.ndarray) -> np.ndarray:
    """Concatenated CSR rows of `front` (neighbours of a frontier), vectorized."""
    if front.size == 0:
        return front
    starts = ptr[front]
    counts = ptr[front + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return front[:0]
    offsets = np.cumsum(counts) - counts
    return idx[np.arange(total) + np.repeat(starts - offsets, counts)]


def _dedupe(c: np.ndarray, stamp: np.ndarray) -> np.ndarray:
    """Unique entries of `c` without sorting (`stamp` is scratch of size n)."""
    if c.size < 2:
        return c
    order = np.arange(c.size)
    stamp[c] = order
    return c[stamp[c] == order]


def check_sets(dag: DAGCore, x, y, given, who: str = "d_separated",
               purpose: str = "d-separation") -> tuple[frozenset, frozenset, frozenset]:
    """`x`, `y`, `given` as node sets: X and Y non-empty, all three disjoint (`who`, `purpose` word the errors)."""
    if not isinstance(dag, DAGCore):
        raise GraphError(f"{who} expects a causalnet DAG, got {type(dag).__name__}")
    xs = dag.node_set(x, "node", allow_empty=False)
    ys = dag.node_set(y, "node", allow_empty=False)
    zs = dag.node_set(given, "conditioning node")
    if xs & ys:
        raise GraphError(f"X and Y overlap on {sorted(map(str, xs & ys))}; {purpose} needs disjoint sets")
    both = (xs | ys) & zs
    if both:
        raise GraphError(f"conditioning set overlaps X or Y on {sorted(map(str, both))}")
    return xs, ys, zs


def d_separated(dag: DAGCore, x, y, given=None) -> bool:
    """Whether `x` and `y` are d-separated by `given` in `dag`.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
        Non-empty, disjoint.
    given : node or iterable of nodes, optional
        The conditioning set, disjoint from `x` and `y`. Latent nodes are
        allowed: this is a question about the graph, not about data.

    Returns
    -------
    bool

    Raises
    ------
    GraphError
        If a node is unknown, a set is empty, or the sets overlap.

    Notes
    -----
    Linear in the size of the graph. Arguments that are a node name, or a set
    or list of node names, take the quick path of :mod:`causalnet.graph.bitsep`
    (what a fresh process uses: nothing compiled, little built) while the
    compiled kernel has not paid; then, and for anything else,
    :func:`d_separated_engines` answers, with the same answers, and raises
    every error.
    """
    return bitsep.d_separated(dag, x, y, given)


def d_separated_engines(dag: DAGCore, x, y, given=None) -> bool:
    """:func:`d_separated` by the engines: the compiled kernel, the memoized Python search, the numpy frontier.

    Arguments that are a node name, or a set or list of node names, take a
    fast path (:func:`_fast`) that maps them straight to indices; anything
    else, and every error, goes through the checked path, which gives the
    same answer. The first call on a DAG builds the structures the engine
    it uses needs; later calls reuse them.
    """
    if not isinstance(dag, DAGCore):
        raise GraphError(f"d_separated expects a causalnet DAG, got {type(dag).__name__}")
    answer = _fast(dag.index, x, y, given)
    if answer is not None:
        return answer
    xs, ys, zs = check_sets(dag, x, y, given)
    pos = dag.index.pos
    answer = _answer(dag.index, [pos[v] for v in xs], [pos[v] for v in ys], [pos[v] for v in zs], None)
    if answer is None:  # pragma: no cover - the sets were checked
        raise GraphError("d_separated: inconsistent node sets")
    return answer


def _fast(ix: GraphIndex, x, y, given) -> bool | None:
    """The answer for plainly-typed arguments, or None when the checked path must decide (or raise).

    The smaller of X and Y is mapped to indices; a large *set* Y is only
    checked against the node set (a C-level set operation that reads the
    hashes stored in the set) and then tested by name on the nodes the ball
    reaches, so a query ``X ⊥ (non-descendants) | parents`` costs no Python
    work per node of Y.
    """
    if type(y) is str or (type(x) is not str and _size(x) > _size(y)):
        x, y = y, x  # d-separation is symmetric; search from the smaller side
    xi = bitsep.node_ids(ix.pos, x)
    zi = [] if given is None else bitsep.node_ids(ix.pos, given)
    if not xi or zi is None:
        return None
    if (type(y) is set or type(y) is frozenset) and len(y) > _BIG_SET:
        if not _node_names(ix).issuperset(y):
            return None
        return _answer(ix, xi, None, zi, y)
    yi = bitsep.node_ids(ix.pos, y)
    if not yi:
        return None
    return _answer(ix, xi, yi, zi, None)


def _size(v) -> int:
    return len(v) if type(v) in (set, frozenset, list) else 1


def _node_names(ix: GraphIndex) -> frozenset:
    """The node names as a frozenset, kept with the index's scratch (built once)."""
    s = _scratch(ix)
    if s.names is None:
        s.names = frozenset(ix.nodes)
    return s.names


def _answer(ix: GraphIndex, xi: list[int], yi: list[int] | None, zi: list[int], ynames) -> bool | None:
    """d-separation on indices; Y as indices `yi`, or by name (`ynames`) when `yi` is None.

    None when two of the sets overlap (the checked path then raises). A
    query whose Z holds the parents of X and nothing below X is answered
    from De(X) (:func:`causalnet.graph.reach.local_markov_reach`); others by
    the compiled kernel once it pays (:func:`_use_kernel`), else in Python.
    """
    order = ix.nodes
    zs = set(zi)
    if yi is None:
        if any(order[i] in ynames for i in xi) or any(order[i] in ynames for i in zi):
            return None
    elif not zs.isdisjoint(yi) or not set(xi).isdisjoint(yi):
        return None
    if not zs.isdisjoint(xi):
        return None
    s = _scratch(ix)
    s.queries += 1
    memo = s.memo if s.queries > _MEMO_AFTER else None
    if yi is None:
        de = local_markov_reach(memo, ix.par, ix.chi, xi, zs)
        if de is not None:
            return ynames.isdisjoint(map(order.__getitem__, de))
    if _use_kernel(ix.n):
        return _answer_kernel(ix, xi, yi, zi, ynames)
    t0 = time.perf_counter()
    if yi is None:
        up, down = bayes_ball(ix.par, ix.chi, xi, zs)
        answer = ynames.isdisjoint([order[i] for i in up | down])
    elif s.memo.full and ix.n >= _NUMPY_MIN_NODES:
        answer = not _reach_numpy(ix, xi, yi, zi)
    else:
        anc = ancestral_set(memo, ix.par, [*xi, *yi, *zi])
        answer = not ball_reaches(ix.par, ix.chi, anc, xi, set(yi), zs)
    _state["python_s"] += time.perf_counter() - t0
    return answer


def _answer_kernel(ix: GraphIndex, xi: list[int], yi: list[int] | None, zi: list[int], ynames) -> bool | None:
    s = _scratch(ix)
    if s.kernel is None:
        s.kernel = (*kernels.scratch(ix.n), np.empty(ix.n, dtype=np.int64))
    work, stack, epoch, out = s.kernel
    xa = np.array(xi, dtype=np.int64)
    za = np.array(zi, dtype=np.int64)
    ya = za[:0] if yi is None else np.array(yi, dtype=np.int64)
    r = kernels.bayes_ball_kernel(ix.p_ptr, ix.p_idx, ix.c_ptr, ix.c_idx, xa, ya, za,
                                  work, stack, epoch, yi is not None, out)
    if r == kernels.OVERLAP:
        return None
    if r == kernels.CONNECTED:
        return False
    if yi is not None:
        return True
    order = ix.nodes
    return ynames.isdisjoint([order[i] for i in out[:r].tolist()])


class _Scratch:
    """What d-separation keeps with a graph's index: the closure memo, the node names, the kernel's arrays.

    The kernel's arrays (:func:`causalnet.graph.kernels.scratch` and an
    output row) are allocated on the kernel's first query on the graph.
    """

    __slots__ = ("memo", "names", "kernel", "queries")

    def __init__(self, n: int) -> None:
        self.memo = ClosureMemo(n, _MEMO_ELEMENTS)
        self.queries = 0                # queries answered on the graph (the memo serves those past _MEMO_AFTER)
        self.names = None
        self.kernel = None


def _scratch(ix: GraphIndex) -> _Scratch:
    s = ix.scratch
    if s is None:
        s = ix.scratch = _Scratch(ix.n)
    return s


def _use_kernel(n: int) -> bool:
    """Whether the compiled search answers a query on a graph of `n` nodes.

    The kernel's one-off compilation (about 2 s per process) is paid only
    once the Python searches have spent :data:`_PYTHON_BUDGET_S` seconds (so
    a script with a few queries never waits for it), unless the backend is
    ``"numba"`` or the kernel is already compiled.
    """
    backend = runtime.get_backend("graph")
    if backend == "numpy" or not kernels.AVAILABLE or n < _KERNEL_MIN_NODES:
        return False
    return backend == "numba" or kernels.is_compiled() or _state["python_s"] >= _PYTHON_BUDGET_S


def set_backend(name: str) -> str:
    """Choose the d-separation search: ``"auto"`` (default), ``"numba"`` or ``"python"``; returns the previous one.

    The graph family's switch of :mod:`causalnet.runtime` (``"python"`` is its
    ``"numpy"``; ``CAUSALNET_GRAPH_BACKEND`` sets it at start-up). ``"auto"``
    uses the compiled kernel once it pays (see :func:`_use_kernel`);
    ``"numba"`` always (compiling it now); ``"python"`` never. All give the
    same answers.

    Raises
    ------
    GraphError
        For another name, or ``"numba"`` when numba is not installed.
    """
    if name not in ("auto", "numba", "python", "numpy"):
        raise GraphError(f"d-separation backend must be 'auto', 'numba' or 'python', got {name!r}")
    if name == "numba" and not kernels.AVAILABLE:
        raise GraphError("d-separation backend 'numba' was requested but numba is not installed (pip install numba)")
    prev = runtime.set_backend("graph", name)
    if name == "numba":
        kernels.compile_kernel()
    return "python" if prev == "numpy" else prev


def d_connected(dag: DAGCore, x, y, given=None) -> bool:
    """Whether some path between `x` and `y` is open given `given` (not d-separated)."""
    return not d_separated(dag, x, y, given)


def _reach_python(ix: GraphIndex, xi: list[int], yi: list[int], zi: list[int]) -> bool:
    """Bayes-ball from X; True when some node of Y is reached (d-connected)."""
    targets = set(yi)
    up_seen, down_seen = bayes_ball(ix.par, ix.chi, xi, zi, stop=targets)
    return bool((up_seen | down_seen) & targets)


def _reach_numpy(ix: GraphIndex, xi: list[int], yi: list[int], zi: list[int]) -> bool:
    """Frontier-at-a-time Bayes-ball; same answer as :func:`_reach_python`."""
    n = ix.n
    stamp = np.empty(n, dtype=np.int64)
    inz = np.zeros(n, dtype=bool)
    z = np.asarray(zi, dtype=np.int64)
    inz[z] = True
    anc = inz.copy()
    front = z
    while front.size:
        p = _gather(ix.p_ptr, ix.p_idx, front)
        p = p[~anc[p]]
        p = _dedupe(p, stamp)
        anc[p] = True
        front = p
    target = np.zeros(n, dtype=bool)
    target[np.asarray(yi, dtype=np.int64)] = True
    up_seen = np.zeros(n, dtype=bool)
    down_seen = np.zeros(n, dtype=bool)
    up = np.asarray(xi, dtype=np.int64)
    up_seen[up] = True
    down = up[:0]
    while up.size or down.size:
        u = up[~inz[up]]
        d_pass = down[~inz[down]]
        d_coll = down[anc[down]]
        new_up = np.concatenate([_gather(ix.p_ptr, ix.p_idx, u), _gather(ix.p_ptr, ix.p_idx, d_coll)])
        new_down = np.concatenate([_gather(ix.c_ptr, ix.c_idx, u), _gather(ix.c_ptr, ix.c_idx, d_pass)])
        new_up = new_up[~up_seen[new_up]]
        new_down = new_down[~down_seen[new_down]]
        if target[new_up].any() or target[new_down].any():
            return True
        new_up = _dedupe(new_up, stamp)
        new_down = _dedupe(new_down, stamp)
        up_seen[new_up] = True
        down_seen[new_down] = True
        up, down = new_up, new_down
    return False


# -- minimal separators ------------------------------------------------------


def moral_graph(par: list, keep: Iterable[int]) -> dict:
    """Moral graph (integer adjacency) of the subgraph induced by `keep`.

    The one moralization of the package: each node is joined to its parents,
    and the parents of each node to one another. `par[v]` lists the parents of
    node ``v`` (ints) and must stay inside `keep` (true of an ancestral set;
    other callers pass the parent lists restricted to `keep`):
    :func:`causalnet.graph.equivalence.moral_graph` (a networkx graph) and
    :func:`causalnet.inference.discrete.ordering.moral_graph` (by node name)
    are views of it.

    Returns
    -------
    dict
        Node int -> set of neighbouring node ints, in the order of `keep`.
    """
    nb: dict = {v: set() for v in keep}
    for v in keep:
        ps = par[v]  # every parent of a node of an ancestral set is in it
        for i, p in enumerate(ps):
            nb[v].add(p)
            nb[p].add(v)
            for q in ps[i + 1:]:
                nb[p].add(q)
                nb[q].add(p)
    return nb


def _reach_undirected(nb: dict, start: Iterable, block: frozenset | set) -> set:
    """Nodes reachable from `start` where nodes in `block` are reached but not passed."""
    seen = set(start)
    stack = [v for v in seen if v not in block]
    while stack:
        for w in nb[stack.pop()]:
            if w not in seen:
                seen.add(w)
                if w not in block:
                    stack.append(w)
    return seen


def minimal_d_separator(dag: DAGCore, x, y, *, include=None, restrict=None) -> frozenset | None:
    """A minimal set Z with `include` ⊆ Z ⊆ `restrict` that d-separates `x` and `y`.

    Minimal means no proper subset of Z that still contains `include`
    separates. The algorithm works on the moral graph of the ancestral set
    of X ∪ Y ∪ I (van der Zander et al. 2019, FindMinSep) and takes time
    linear in the size of that moral graph.

    Parameters
    ----------
    dag : DAG
    x, y : node or iterable of nodes
    include : iterable of nodes, optional
        Nodes that must be in the separator (I).
    restrict : iterable of nodes, optional
        Nodes the separator may use (R). Defaults to the observed nodes, so a
        latent node is never chosen.

    Returns
    -------
    frozenset or None
        None when no separator within `restrict` exists (e.g. X and Y adjacent).
    """
    if not isinstance(dag, DAGCore):
        raise GraphError(f"minimal_d_separator expects a causalnet DAG, got {type(dag).__name__}")
    xs = dag.node_set(x, "node", allow_empty=False)
    ys = dag.node_set(y, "node", allow_empty=False)
    inc = dag.node_set(include, "included node")
    res = frozenset(dag.observed) if restrict is None else dag.node_set(restrict, "restricted node")
    if xs & ys:
        raise GraphError(f"X and Y overlap on {sorted(map(str, xs & ys))}")
    if inc & (xs | ys):
        raise GraphError(f"included nodes overlap X or Y on {sorted(map(str, inc & (xs | ys)))}")
    if not inc <= res:
        raise GraphError(f"included nodes {sorted(map(str, inc - res))} are outside the allowed set")
    ix = dag.index
    pos = ix.pos
    xi, yi, ii = ({pos[v] for v in vs} for vs in (xs, ys, inc))
    anc = closure(ix.par, xi | yi | ii)
    nb = moral_graph(ix.par, anc)
    cand = {pos[v] for v in res} & anc - xi - yi
    # Z' itself must separate in the moral ancestral graph, or nothing does.
    reach_x = _reach_undirected(nb, xi, cand)
    if reach_x & yi:
        return None
    zx = (reach_x & cand) | ii
    reach_y = _reach_undirected(nb, yi, zx)
    return frozenset(ix.nodes[i] for i in (reach_y & zx) | ii)


# -- implied independencies -------------------------------------------------------


def implied_independencies(dag: DAGCore, kind: str = "basis") -> list[Independence]:
    """Conditional independencies among observed nodes implied by the DAG.

    Parameters
    ----------
    kind : {"basis", "local"}
        ``"basis"`` (default): one statement per non-adjacent pair of observed
        nodes, the later node (in topological order) separated from the
        earlier by its parents — the basis dagitty lists, from which every
        other implied independence follows by the semi-graphoid axioms. When a
        needed parent is latent, a minimal separator over observed nodes is
        used instead, and a pair with no observed separator gives no statement.
        ``"local"``: the local Markov list, each observed node independent of
        its non-descendants (other than its parents) given its parents.

    Returns
    -------
    list of Independence

    Raises
    ------
    GraphError
        If `kind` is not one of the two.
    ResourceError
        If the list would exceed the ``max_table_bytes`` limit: both lists
        grow with the square of the number of observed nodes.
    """
    if not isinstance(kind, str) or kind not in ("basis", "local"):
        raise GraphError(f"kind must be 'basis' or 'local', got {kind!r}")
    if not isinstance(dag, DAGCore):
        raise GraphError(f"implied_independencies expects a causalnet DAG, got {type(dag).__name__}")
    n_obs = len(dag.observed)
    pairs = n_obs * (n_obs - 1) / 2
    estimate = pairs - len(dag.edges) if kind == "basis" else 2 * pairs
    limits.check_bytes(max(estimate, 0) * _STATEMENT_BYTES, what=f"the {kind!r} list of implied independencies",
                       cause=f"about {max(estimate, 0):.3g} statements for {n_obs} observed nodes")
    if kind == "basis":
        return _basis(dag)
    return _local(dag)


def _basis(dag: DAGCore) -> list[Independence]:
    ix = dag.index
    order = dag.topological_order()
    latent = dag.latent
    out: list[Independence] = []
    obs = [ix.pos[v] for v in order if v not in latent]
    latent_i = {ix.pos[v] for v in latent}
    for j, v in enumerate(obs):
        pa_i = ix.par[v]
        near = set(pa_i) | set(ix.chi[v])
        pa = frozenset(ix.nodes[p] for p in pa_i)
        hidden = any(p in latent_i for p in pa_i)
        for u in obs[:j]:
            if u in near:
                continue
            z = minimal_d_separator(dag, ix.nodes[u], ix.nodes[v]) if hidden else pa
            if z is not None:
                out.append(Independence(ix.nodes[v], ix.nodes[u], frozenset(z)))
    return out


def _local(dag: DAGCore) -> list[Independence]:
    order = dag.topological_order()
    rank = {v: i for i, v in enumerate(order)}
    latent = dag.latent
    out: list[Independence] = []
    for v in order:
        if v in latent:
            continue
        pa = frozenset(dag.parents(v))
        if pa & latent:
            continue
        nondesc = frozenset(dag.nodes) - dag.descendants(v, include_self=True) - pa - latent
        for u in sorted(nondesc, key=rank.__getitem__):
            out.append(Independence(v, u, pa))
    return out


# names other modules used before the contract had public names
