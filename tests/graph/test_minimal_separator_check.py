"""`is_d_separator` and `is_minimal_d_separator` against networkx and brute force over subsets."""

import itertools

import networkx as nx
import numpy as np
import pytest

import causalnet as cn
from causalnet.errors import GraphError


def random_dag(rng, n, p):
    edges = [(f"v{i}", f"v{j}") for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    return cn.DAG(edges, nodes=[f"v{i}" for i in range(n)])


def brute_minimal(g, x, y, z):
    if not g.d_separated(x, y, z):
        return False
    return not any(g.d_separated(x, y, set(sub)) for k in range(len(z)) for sub in itertools.combinations(sorted(z), k))


@pytest.mark.parametrize("seed", range(60))
def test_equals_brute_force_and_networkx(seed):
    rng = np.random.default_rng(seed)
    g = random_dag(rng, 7, 0.35)
    G = nx.DiGraph(g.edges)
    G.add_nodes_from(g.nodes)
    x, y, *rest = rng.permutation(g.nodes).tolist()
    for k in range(4):
        for z in itertools.combinations(rest, k):
            z = set(z)
            assert g.is_d_separator(x, y, z) == nx.is_d_separator(G, {x}, {y}, z)
            got = g.is_minimal_d_separator(x, y, z)
            assert got == brute_minimal(g, x, y, z), (sorted(g.edges), x, y, z)
            assert got == nx.is_minimal_d_separator(G, {x}, {y}, z)


def test_every_enumerated_separator_is_minimal():
    g = cn.DAG.parse("X <- A -> M <- B -> Y; X <- C -> Y; A -> B")
    found = list(g.minimal_separators("X", "Y"))
    assert found and all(g.is_minimal_d_separator("X", "Y", z) for z in found)


def test_bad_sets_are_named():
    g = cn.DAG.parse("X -> M -> Y")
    with pytest.raises(GraphError):
        g.is_minimal_d_separator("X", "Y", {"nope"})
    with pytest.raises(GraphError):
        g.is_minimal_d_separator("X", "Y", {"X"})
