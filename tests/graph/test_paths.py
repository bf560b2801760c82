"""Open paths: against networkx's d-separation and a brute-force enumeration of every simple path."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet import GraphError
from causalnet.graph.paths import is_open_path, open_path


@st.composite
def dags(draw, max_nodes=8):
    n = draw(st.integers(2, max_nodes))
    bits = draw(st.lists(st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    perm = draw(st.permutations(range(n)))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = [(f"n{perm[i]}", f"n{perm[j]}") for (i, j), b in zip(pairs, bits) if b]
    return cn.DAG(edges, nodes=[f"n{i}" for i in range(n)])


def brute_open(g, path, z):
    """The textbook definition, on networkx: colliders in An(Z) ∪ Z, non-colliders outside Z."""
    nxg = g.to_networkx()
    anz = set(z).union(*(nx.ancestors(nxg, v) for v in z)) if z else set()
    for a, v, b in zip(path, path[1:], path[2:]):
        collider = nxg.has_edge(a, v) and nxg.has_edge(b, v)
        if collider and v not in anz or not collider and v in z:
            return False
    return True


def all_open_paths(g, x, y, z):
    skel = g.to_networkx().to_undirected()
    return [p for p in nx.all_simple_paths(skel, x, y) if brute_open(g, p, z)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_open_path_exists_exactly_when_d_connected_and_is_open(g, data):
    x, y = data.draw(st.lists(st.sampled_from(g.nodes), min_size=2, max_size=2, unique=True))
    rest = [v for v in g.nodes if v not in (x, y)]
    z = set(data.draw(st.lists(st.sampled_from(rest), unique=True))) if rest else set()
    path = open_path(g, x, y, z)
    separated = nx.is_d_separator(g.to_networkx(), {x}, {y}, z)
    assert (path is None) == separated
    assert (path is None) == (not all_open_paths(g, x, y, z))     # brute force agrees with networkx
    if path is not None:
        assert path[0] == x and path[-1] == y and len(set(path)) == len(path)
        skel = g.to_networkx().to_undirected()
        assert all(skel.has_edge(a, b) for a, b in zip(path, path[1:]))
        assert brute_open(g, path, z)
        assert is_open_path(g, path, z)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_is_open_path_matches_the_definition_on_every_path(g, data):
    x, y = data.draw(st.lists(st.sampled_from(g.nodes), min_size=2, max_size=2, unique=True))
    rest = [v for v in g.nodes if v not in (x, y)]
    z = set(data.draw(st.lists(st.sampled_from(rest), unique=True))) if rest else set()
    for p in nx.all_simple_paths(g.to_networkx().to_undirected(), x, y):
        assert is_open_path(g, p, z) == brute_open(g, p, z)


def test_sets_start_and_end_once():
    g = cn.DAG.parse("A -> B -> C -> D; A -> D")
    p = open_path(g, {"A", "B"}, {"C", "D"})
    assert p[0] in {"A", "B"} and p[-1] in {"C", "D"}
    assert not set(p[1:]) & {"A", "B"} and not set(p[:-1]) & {"C", "D"}


def test_textbook_cases():
    m_bias = cn.gallery.graph("m-bias")
    assert open_path(m_bias.remove_edges([("X", "Y")]), "X", "Y", {"M"}) == ["X", "U1", "M", "U2", "Y"]
    assert open_path(m_bias.remove_edges([("X", "Y")]), "X", "Y") is None
    g = cn.DAG.parse("A -> C <- B; C -> D")
    assert open_path(g, "A", "B", {"D"}) == ["A", "C", "B"]          # a descendant of the collider opens it
    assert open_path(g, "A", "B") is None
    assert cn.DAG.parse("X -> M -> Y").open_path("X", "Y") == ["X", "M", "Y"]


def test_larger_random_graphs_agree_with_networkx():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = 60
        names = [f"v{i}" for i in rng.permutation(n)]
        g = cn.DAG([(names[i], names[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.06],
                   nodes=names)
        x, y, *z = rng.choice(names, size=8, replace=False)
        path = open_path(g, x, y, set(z))
        assert (path is None) == nx.is_d_separator(g.to_networkx(), {x}, {y}, set(z))
        if path is not None:
            assert brute_open(g, path, set(z)) and len(set(path)) == len(path)


def test_errors_are_typed():
    g = cn.DAG.parse("A -> B")
    with pytest.raises(GraphError, match="unknown"):
        open_path(g, "A", "Q")
    with pytest.raises(GraphError, match="overlap"):
        open_path(g, "A", "B", {"A"})
    with pytest.raises(GraphError, match="not adjacent"):
        is_open_path(cn.DAG.parse("A -> B; C"), ["A", "C"])
    with pytest.raises(GraphError, match="repeats"):
        is_open_path(g, ["A", "B", "A"])
