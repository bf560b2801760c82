"""The quick d-separation path (causalnet.graph.bitsep) against brute force, networkx and the engines."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_dags import dags

import causalnet as cn
from causalnet import GraphError, runtime
from causalnet.graph import bitsep
from causalnet.graph import separation as sep


@st.composite
def queries(draw, max_nodes=8):
    g = draw(dags(max_nodes))
    roles = draw(st.lists(st.sampled_from("xyz.."), min_size=len(g) - 2, max_size=len(g) - 2))
    x = {g.nodes[0]} | {v for v, r in zip(g.nodes[2:], roles) if r == "x"}
    y = {g.nodes[1]} | {v for v, r in zip(g.nodes[2:], roles) if r == "y"}
    z = {v for v, r in zip(g.nodes[2:], roles) if r == "z"}
    return g, x, y, z


def brute_force_separated(g, xs, ys, zs) -> bool:
    """No simple path of the skeleton between X and Y is open given Z (every path enumerated)."""
    nbrs = {v: set(g.parents(v)) | set(g.children(v)) for v in g.nodes}
    below = {v: g.descendants(v, include_self=True) for v in g.nodes}

    def is_open(path):
        for a, b, c in zip(path, path[1:], path[2:]):
            collider = a in g.parents(b) and c in g.parents(b)
            if collider and not (below[b] & zs) or not collider and b in zs:
                return False
        return True

    def paths(path):
        if path[-1] in ys:
            yield path
            return
        for w in nbrs[path[-1]]:
            if w not in path:
                yield from paths(path + [w])

    return not any(is_open(p) for x in xs for p in paths([x]))


@pytest.fixture(params=["walk", "bitsets"])
def quick_mode(request, monkeypatch):
    """The quick path with An(Y ∪ Z) by a plain walk, or from the stored ancestor bitsets from the first query."""
    monkeypatch.setattr(bitsep, "MEMO_AFTER", 10**9 if request.param == "walk" else 0)
    monkeypatch.setattr(runtime, "_backends", {**runtime._backends, "graph": "numpy"})   # never the kernel
    return request.param


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(queries(), st.sampled_from([set, frozenset, list]), st.booleans())
def test_quick_path_equals_brute_force(quick_mode, q, kind, big):
    g, x, y, z = q
    expected = brute_force_separated(g, x, y, z)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bitsep, "BIG_SET", 0 if big else 64)     # Y by name (local Markov shortcut) or by index
        got = bitsep.quick_answer(g.index, kind(x), kind(y), kind(z))
        assert got is None or got is expected
        if not big:                                          # small sets: the quick path always answers
            assert got is expected
            assert bitsep.quick_answer(g.index, kind(y), kind(x), kind(z) or None) is expected
        assert g.d_separated(kind(x), kind(y), kind(z)) is expected
        assert g.d_connected(kind(y), kind(x), kind(z)) is (not expected)


def random_sparse_dag(rng, n, mean_out):
    """The benchmark's kind of graph: mean out-degree `mean_out`, names hiding the topological order."""
    m = int(mean_out * n)
    a, b = rng.integers(0, n, size=2 * m), rng.integers(0, n, size=2 * m)
    keep = a != b
    pairs = np.unique(np.stack([np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])], axis=1), axis=0)
    perm = rng.permutation(n)
    return cn.DAG([(f"v{perm[i]}", f"v{perm[j]}") for i, j in pairs[:m]], nodes=[f"v{i}" for i in range(n)])


def test_sparse_graph_matches_networkx_and_the_engines(quick_mode, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    g = random_sparse_dag(rng, 500, 2.5)
    G = g.to_networkx()
    nodes = list(g.nodes)
    engines = []
    for _ in range(200):
        pick = rng.choice(len(nodes), size=2 + int(rng.integers(0, 12)), replace=False)
        x, y, z = nodes[pick[0]], nodes[pick[1]], {nodes[i] for i in pick[2:]}
        got = bitsep.quick_answer(g.index, x, y, z)
        assert got is nx.is_d_separator(G, {x}, {y}, z)
        engines.append((x, y, z, got))
    monkeypatch.setattr(bitsep, "ACTIVE", False)
    assert all(sep.d_separated(g, x, y, z) is got for x, y, z, got in engines)   # the engines agree
    assert sum(got for *_, got in engines) not in (0, len(engines))                # both answers occur


@pytest.mark.parametrize("flat", [True, False])
@pytest.mark.parametrize("stored", [False, True])
def test_local_markov_statements_and_their_perturbations(quick_mode, seed, stored, flat, monkeypatch):
    # X ⊥ non-descendants | parents, answered by name (De(X) by a walk, or from the memoized descendant
    # sets; child rows from the flat lists, or, as on a large graph, sliced from the index array one by
    # one); then a child added to Y, a parent moved from Z to Y, a descendant added to Z (not local
    # Markov any more: the engines answer), each against networkx
    monkeypatch.setattr(bitsep, "MARKOV_MEMO_AFTER", 0 if stored else 10**9)
    monkeypatch.setattr(bitsep, "FLAT_MAX_NODES", 10**9 if flat else 0)
    rng = np.random.default_rng(seed)
    g = random_sparse_dag(rng, 300, 2.5)
    if not flat:
        g.index.chi_flat = None         # as when the acyclicity test left the lists unconverted (csgraph)
    G = g.to_networkx()
    nodes = list(g.nodes)
    answered = 0
    for x in nodes[:80]:
        pa = set(g.parents(x))
        de = g.descendants(x)
        nd = set(nodes) - de - pa - {x}
        if len(nd) <= bitsep.BIG_SET:
            continue
        assert bitsep.quick_answer(g.index, x, nd, pa) is True
        assert g.d_separated(nd, x, frozenset(pa)) is True
        answered += 1
        variants = []
        if g.children(x):
            variants.append((nd | {g.children(x)[0]}, pa))
        if pa:
            p = sorted(pa)[0]
            variants.append((nd | {p}, pa - {p}))
        if de:
            variants.append((nd, pa | {sorted(de)[0]}))
        for y, z in variants:
            got = bitsep.quick_answer(g.index, x, y, z)
            expected = nx.is_d_separator(G, {x}, y, z)
            assert got is None or got is expected
            assert g.d_separated(x, y, z) is expected
    assert answered >= 20
    q = g.index.quick
    assert (q.desc is not None) is stored
    assert (q.ci is not None) is flat
    for v, row in enumerate(q.crow):               # every row a walk kept is the node's children
        assert row is None or {g.nodes[c] for c in row} == set(g.children(g.nodes[v]))
    assert sum(row is not None for row in q.crow) > 20


def test_errors_come_from_the_checked_path():
    g = cn.DAG.parse("A -> B -> C; A -> D")
    big = set(g.nodes) - {"A"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bitsep, "BIG_SET", 1)
        assert bitsep.quick_answer(g.index, "A", big | {"nope"}, None) is None
        with pytest.raises(GraphError, match="unknown node 'nope'"):
            g.d_separated("A", big | {"nope"})
        with pytest.raises(GraphError, match="overlap"):
            g.d_separated("A", set(g.nodes))
        with pytest.raises(GraphError, match="overlap"):
            g.d_separated("D", {"B", "C"}, {"B"})
    for args in [("A", "nope", None), ("A", "C", {"nope"}), ("A", "A", None), ("A", set(), None),
                 ("A", "C", {"A"}), (("A",), "C", None), (1.5, "C", None)]:
        assert bitsep.quick_answer(g.index, *args) is None
    with pytest.raises(GraphError, match="unknown node 'nope'"):
        g.d_separated("A", "nope")
    with pytest.raises(GraphError, match="overlap"):
        g.d_separated("A", "C", {"A"})
    with pytest.raises(GraphError, match="causalnet DAG"):
        bitsep.d_separated(nx.DiGraph([("A", "B")]), "A", "B")


def test_an_exhausted_bitset_budget_falls_back_to_the_walk(seed, monkeypatch):
    monkeypatch.setattr(bitsep, "MEMO_AFTER", 0)
    monkeypatch.setattr(bitsep, "ANC_BYTES", 2000)           # room for a few dozen bitsets
    monkeypatch.setattr(runtime, "_backends", {**runtime._backends, "graph": "numpy"})
    rng = np.random.default_rng(seed)
    g = random_sparse_dag(rng, 400, 2.5)
    G = g.to_networkx()
    nodes = list(g.nodes)
    for _ in range(100):
        pick = rng.choice(len(nodes), size=8, replace=False)
        x, y, z = nodes[pick[0]], nodes[pick[1]], {nodes[i] for i in pick[2:]}
        assert g.d_separated(x, y, z) is nx.is_d_separator(G, {x}, {y}, z)
    q = g.index.quick
    assert q.left < 0 and 0 < sum(a > 0 for a in q.anc) < len(nodes)   # filled part way, then stopped


def test_ancestor_bitsets_and_masks_are_the_ancestral_sets(seed):
    rng = np.random.default_rng(seed)
    g = random_sparse_dag(rng, 200, 2.0)
    ix = g.index
    q = bitsep.QuickIndex(ix)
    for v in rng.choice(len(g), size=30, replace=False).tolist():
        expected = {ix.pos[u] for u in g.ancestors(g.nodes[v])} | {v}
        bits = q.ancestors([v])
        assert {i for i in range(len(g)) if bits >> i & 1} == expected
        mask, added = q.ancestral_mask([v])
        assert {i for i, b in enumerate(mask) if b} == expected and added == len(expected)
        assert bitsep.byte_mask(bits, len(g)) == bytes(mask)
        base, _ = q.ancestral_mask([0])
        both, added = q.ancestral_mask([v], base)
        assert {i for i, b in enumerate(both) if b} == expected | {i for i, b in enumerate(base) if b}
        assert added == sum(both) - sum(base)


def test_the_kernel_takes_over_once_compiled_or_due(monkeypatch):
    g = random_sparse_dag(np.random.default_rng(0), 100, 2.0)
    x, y, z = g.nodes[0], g.nodes[1], set(g.nodes[2:8])
    monkeypatch.setattr(runtime, "_backends", {**runtime._backends, "graph": "auto"})
    monkeypatch.setattr(bitsep, "STATE", {"python_s": 0.0})
    if not sep.kernels.is_compiled():
        assert bitsep.quick_answer(g.index, x, y, z) is not None
        assert bitsep.STATE["python_s"] > 0                   # the quick path's searches count
        monkeypatch.setitem(bitsep.STATE, "python_s", bitsep.PYTHON_BUDGET_S)
    assert (bitsep.quick_answer(g.index, x, y, z) is None) is runtime.numba_available()
    monkeypatch.setattr(runtime, "_backends", {**runtime._backends, "graph": "numpy"})
    assert bitsep.quick_answer(g.index, x, y, z) is g.d_separated(x, y, z)
    small = cn.DAG.parse("A -> B -> C")                         # below KERNEL_MIN_NODES: always quick
    monkeypatch.setattr(runtime, "_backends", {**runtime._backends, "graph": "auto"})
    assert bitsep.quick_answer(small.index, "A", "C", {"B"}) is True


def test_large_graphs_are_left_to_the_engines(monkeypatch):
    monkeypatch.setattr(bitsep, "QUICK_MAX_NODES", 10)
    g = cn.DAG([(f"a{i}", f"a{i + 1}") for i in range(20)])
    assert bitsep.quick_answer(g.index, "a0", "a5", {"a3"}) is None
    assert g.d_separated("a0", "a5", {"a3"}) is True


@pytest.mark.parametrize("kahn", [True, False])
def test_child_lists_of_the_acyclicity_test_are_reused(kahn, monkeypatch):
    # the Kahn pass of the acyclicity test converts the child arrays to lists; the searches read those (no
    # second conversion), and a graph tested by csgraph (no lists) converts them itself: same answers
    from causalnet.graph import core

    monkeypatch.setitem(core._kahn, "spent", 0.0)       # this process may have spent the Kahn budget already
    if not kahn:
        monkeypatch.setattr(core, "_KAHN_MAX_NODES", 0)
    rng = np.random.default_rng(7)
    g = random_sparse_dag(rng, 200, 2.5)
    ix = g.index
    if kahn:
        ptr, idx = ix.chi_flat
        assert ptr == ix.c_ptr.tolist() and idx == ix.c_idx.tolist()
    else:
        assert ix.chi_flat is None
    assert ix.chi == [ix.c_idx[ix.c_ptr[v]:ix.c_ptr[v + 1]].tolist() for v in range(ix.n)]
    G = g.to_networkx()
    nodes = list(g.nodes)
    for _ in range(40):
        x, y, *z = rng.choice(len(nodes), size=6, replace=False)
        x, y, z = nodes[x], nodes[y], {nodes[i] for i in z}
        assert g.d_separated(x, y, z) is nx.is_d_separator(G, {x}, {y}, z)
    x = nodes[0]
    nd = set(nodes) - set(g.descendants(x)) - set(g.parents(x)) - {x}
    assert g.d_separated(x, nd, set(g.parents(x))) is True
    assert (ix.quick.ci is ix.chi_flat[1]) if kahn else ix.quick.ci == ix.c_idx.tolist()
