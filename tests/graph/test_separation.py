"""d-separation against networkx, textbook cases, minimal separators, implied independencies."""

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet import GraphError, runtime
from causalnet.graph import bitsep, kernels
from causalnet.graph import separation as sep


def random_dag(rng, n, p):
    """Random DAG: edges i -> j (i < j in a random order) with probability p."""
    names = [f"v{i}" for i in rng.permutation(n)]
    edges = [(names[i], names[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    return cn.DAG(edges, nodes=names)


@st.composite
def dags(draw, max_nodes=9):
    n = draw(st.integers(2, max_nodes))
    bits = draw(st.lists(st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = [(f"n{i}", f"n{j}") for (i, j), b in zip(pairs, bits) if b]
    return cn.DAG(edges, nodes=[f"n{i}" for i in range(n)])


# -- oracle: networkx ------------------------------------------------------------


def use_engine(engine, monkeypatch):
    """Pin one search on any size: the quick path of causalnet.graph.bitsep ("quick"), the Python ball in the ancestral set from memoized closures from the
    first query ("python"), the same with the ancestral set by a plain search ("python-nomemo"), the numpy
    frontier search ("numpy"), or the compiled kernel ("kernel")."""
    monkeypatch.setattr(sep, "_NUMPY_MIN_NODES", 0 if engine == "numpy" else 10**9)
    monkeypatch.setattr(sep, "_MEMO_ELEMENTS", 0 if engine in ("numpy", "python-nomemo") else sep.MEMO_ELEMENTS)
    monkeypatch.setattr(sep, "_MEMO_AFTER", 10**9 if engine == "python-nomemo" else 0)
    monkeypatch.setattr(sep, "_KERNEL_MIN_NODES", 0)
    monkeypatch.setattr(bitsep, "ACTIVE", engine == "quick")   # the front door of graph.bitsep, or the engines
    monkeypatch.setattr(runtime, "_backends", {**runtime._backends,
                                               "graph": "numba" if engine == "kernel" else "numpy"})
    if engine == "kernel":
        kernels.compile_kernel()
    assert sep._use_kernel(10) is (engine == "kernel")


@pytest.mark.parametrize("engine", ["quick", "python", "python-nomemo", "numpy", "kernel"])
def test_matches_networkx_on_random_queries(engine, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    use_engine(engine, monkeypatch)
    n_queries = 0
    for size, p in [(8, 0.3), (15, 0.2), (30, 0.1), (60, 0.05), (120, 0.02), (200, 0.0125)]:
        for _ in range(3):
            g = random_dag(rng, size, p)
            G = g.to_networkx()
            nodes = list(g.nodes)
            for _ in range(120):
                kx, ky = rng.integers(1, 4, size=2)
                kz = int(rng.integers(0, min(11, size - kx - ky) + 1))
                pick = rng.choice(len(nodes), size=kx + ky + kz, replace=False)
                x = {nodes[i] for i in pick[:kx]}
                y = {nodes[i] for i in pick[kx:kx + ky]}
                z = {nodes[i] for i in pick[kx + ky:]}
                assert g.d_separated(x, y, z) == nx.is_d_separator(G, x, y, z), (x, y, z)
                n_queries += 1
    assert n_queries >= 2000


def test_large_graph_engines_agree(seed):
    rng = np.random.default_rng(seed)
    g = random_dag(rng, 600, 0.004)
    G = g.to_networkx()
    nodes = list(g.nodes)
    for _ in range(100):
        pick = rng.choice(len(nodes), size=12, replace=False)
        x, y, z = nodes[pick[0]], nodes[pick[1]], {nodes[i] for i in pick[2:]}
        ix = g.index
        args = ([ix.pos[x]], [ix.pos[y]], [ix.pos[v] for v in z])
        assert sep._reach_numpy(ix, *args) == sep._reach_python(ix, *args) == (not nx.is_d_separator(G, x, y, z))


@pytest.mark.parametrize("engine", ["python", "kernel"])
def test_large_sets_are_tested_by_name(engine, seed, monkeypatch):
    # X ⊥ non-descendants | parents (local Markov), and the same with a node of Y made adjacent
    use_engine(engine, monkeypatch)
    monkeypatch.setattr(sep, "_BIG_SET", 2)
    g = random_dag(np.random.default_rng(seed), 80, 0.05)
    G = g.to_networkx()
    for x in g.nodes[:40]:
        pa = set(g.parents(x))
        nd = set(g.nodes) - g.descendants(x, include_self=True) - pa
        if len(nd) > 2:
            assert g.d_separated(x, nd, pa) and g.d_separated(nd, x, frozenset(pa))
        if len(pa) > 0 and len(nd) > 2:
            p = pa.pop()
            assert g.d_separated(x, nd | {p}, pa) == nx.is_d_separator(G, {x}, nd | {p}, pa) is False
    with pytest.raises(GraphError, match="overlap"):
        g.d_separated(g.nodes[0], set(g.nodes[:10]))
    with pytest.raises(GraphError, match="unknown node 'nope'"):
        g.d_separated(g.nodes[0], set(g.nodes[1:10]) | {"nope"})


@st.composite
def dag_queries(draw, max_nodes=12):
    g = draw(dags(max_nodes))
    nodes = list(g.nodes)
    roles = draw(st.lists(st.sampled_from("xyz."), min_size=len(nodes), max_size=len(nodes)))
    x = [v for v, r in zip(nodes, roles) if r == "x"] or [nodes[0]]
    y = [v for v, r in zip(nodes, roles) if r == "y"] or [nodes[-1]]   # may overlap x: then both paths refuse
    z = [v for v, r in zip(nodes, roles) if r == "z" and v not in x and v not in y]
    kind = draw(st.sampled_from([set, frozenset, list]))
    return g, x, y, z, kind


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag_queries(), st.sampled_from(["python", "kernel"]), st.booleans())
def test_fast_path_equals_checked_path(q, engine, big):
    g, x, y, z, kind = q
    ix = g.index
    try:
        xs, ys, zs = sep.check_sets(g, x, y, z)
    except GraphError:   # X and Y overlap: the fast path leaves it to the checked path, which raises
        reference = None
    else:
        reference = not sep._reach_python(ix, *([ix.pos[v] for v in s] for s in (xs, ys, zs)))
    with pytest.MonkeyPatch.context() as mp:
        use_engine(engine, mp)
        mp.setattr(sep, "_BIG_SET", 0 if big else 64)
        assert sep._fast(ix, kind(x), kind(y), kind(z)) is reference
        assert sep._fast(ix, kind(y), kind(x), kind(z) or None) is reference
        if len(x) == 1 and len(y) == 1:
            assert sep._fast(ix, x[0], y[0], kind(z)) is reference


# -- textbook cases ----------------------------------------------------------------


def test_chain_fork_collider():
    chain = cn.DAG.parse("A -> B -> C")
    assert not chain.d_separated("A", "C") and chain.d_separated("A", "C", given="B")
    fork = cn.DAG.parse("A <- B -> C")
    assert not fork.d_separated("A", "C") and fork.d_separated("A", "C", given={"B"})
    coll = cn.DAG.parse("A -> B <- C; B -> D")
    assert coll.d_separated("A", "C")
    assert not coll.d_separated("A", "C", given="B")
    assert not coll.d_separated("A", "C", given="D")   # descendant of a collider
    assert coll.d_connected("A", "C", given="D")


def test_m_bias():
    g = cn.DAG.parse("A -> X; A -> M; B -> M; B -> Y; X -> Y")
    gb = g.backdoor_graph("X")
    assert gb.d_separated("X", "Y")
    assert not gb.d_separated("X", "Y", given="M")
    assert gb.d_separated("X", "Y", given={"M", "A"})


def test_asia():
    g = cn.DAG.parse("asia -> tub; smoke -> lung; smoke -> bronc; tub -> either; lung -> either; "
                     "either -> xray; either -> dysp; bronc -> dysp")
    assert g.d_separated("asia", "smoke")
    assert not g.d_separated("asia", "smoke", given="dysp")
    assert g.d_separated("xray", "dysp", given="either")
    assert not g.d_separated("xray", "bronc", given="dysp")
    assert g.d_separated("tub", "lung")
    assert not g.d_separated("tub", "lung", given="xray")


def test_sets_of_nodes_and_latent_conditioning():
    g = cn.DAG.parse("Z[0] -> Z[1] -> Z[2]; Z[0] -> X[0]; Z[1] -> X[1]; Z[2] -> X[2]; Z[0] [latent]; "
                     "Z[1] [latent]; Z[2] [latent]")
    assert g.d_separated({"X[0]"}, {"X[2]"}, given={"Z[1]"})   # HMM Markov property
    assert not g.d_separated("X[0]", {"X[1]", "X[2]"})


@pytest.mark.parametrize("engine", ["python", "kernel"])
@pytest.mark.parametrize("args, fragment", [
    (("X", "X", None), "overlap"),
    (("X", "Y", {"X"}), "overlaps X or Y"),
    (("X", ["Y", "X"], None), "overlap"),
    (("X", {"Y"}, ["Z", "Y"]), "overlaps X or Y"),
    ((set(), "Y", None), "empty"),
    (("X", [], None), "empty"),
    (("Q", "Y", None), "unknown node 'Q'"),
    (("X", {"Y", None}, None), "None cannot name a node"),
    (("X", [["Y"]], None), "not hashable"),
    (("X", "Y", {"nope"}), "unknown conditioning node 'nope'"),
    (("X", "Y", ("Z", "nope")), "unknown conditioning node 'nope'"),
])
def test_bad_queries(args, fragment, engine, monkeypatch):
    use_engine(engine, monkeypatch)
    g = cn.DAG.parse("Z -> X -> Y; Z -> Y")
    before = (g.edges, g.latent)
    with pytest.raises(GraphError, match=fragment):
        g.d_separated(*args)
    assert (g.edges, g.latent) == before


# -- properties (hypothesis) -----------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags())
def test_local_markov(g):
    for v in g.nodes:
        nd = set(g.nodes) - g.descendants(v, include_self=True) - set(g.parents(v))
        if nd:
            assert g.d_separated(v, nd, given=set(g.parents(v)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_minimal_separator_separates_and_is_minimal(g, data):
    x, y = data.draw(st.lists(st.sampled_from(g.nodes), min_size=2, max_size=2, unique=True))
    z = g.minimal_d_separator(x, y)
    if z is None:
        # none exists: then not even all other (observed) nodes in An(x, y) separate
        anc = g.ancestors({x, y}) - {x, y}
        assert not g.d_separated(x, y, anc)
        assert g.is_adjacent(x, y) or not nx.is_d_separator(g.to_networkx(), {x}, {y}, anc)
        return
    assert g.d_separated(x, y, z)
    for k in range(len(z)):
        for sub in itertools.combinations(z, k):
            assert not g.d_separated(x, y, set(sub))
    assert nx.is_minimal_d_separator(g.to_networkx(), x, y, z)


def test_minimal_separator_respects_restrict_and_include():
    g = cn.DAG.parse("X <- A -> B -> Y; A -> Y; X -> Y2; C -> X; C -> Y2")
    assert g.minimal_d_separator("X", "Y") == {"A"}
    assert g.minimal_d_separator("X", "Y", restrict={"B"}) is None
    z = g.minimal_d_separator("X", "Y", include={"C"})
    assert z == {"A", "C"} and g.d_separated("X", "Y", z)
    lat = cn.DAG.parse("X <- U -> Y; U [latent]")
    assert lat.minimal_d_separator("X", "Y") is None   # latent nodes are never chosen
    assert lat.minimal_d_separator("X", "Y", restrict={"U"}) == {"U"}


@settings(max_examples=100, deadline=None)
@given(dags())
def test_implied_independencies_are_true(g):
    basis = g.implied_independencies()
    non_adjacent = sum(1 for u, v in itertools.combinations(g.nodes, 2) if not g.is_adjacent(u, v))
    assert len(basis) == non_adjacent
    for s in basis:
        assert g.d_separated(s.x, s.y, s.given)
        assert s.given == set(g.parents(s.x))
    for s in g.implied_independencies(kind="local"):
        assert g.d_separated(s.x, s.y, s.given)


def test_implied_independencies_with_latent():
    g = cn.DAG.parse("U -> X; U -> Y; X -> M -> Y; U [latent]")
    stmts = {(s.x, s.y, s.given) for s in g.implied_independencies()}
    assert stmts == set()          # X-Y adjacent-by-latent: no observed separator; X-M adjacent; M-Y adjacent
    g2 = cn.DAG.parse("U -> A; U -> B; B -> C; U [latent]")
    assert {str(s) for s in g2.implied_independencies()} == {"C ⊥ A | B"}
    with pytest.raises(GraphError, match="kind"):
        g.implied_independencies(kind="all")
