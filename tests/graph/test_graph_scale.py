"""Every graph function on large sparse DAGs: 10^4 nodes always, 10^5 nodes in the slow profile.

No timing is asserted; the point is that each call finishes (issue 10: a
polynomial problem must not take minutes on 10^5 nodes, nor quadratic memory),
and that the answers are right: d-separation against networkx, every listed
adjustment set against its own predicate. Output that is quadratic by nature
(the list of implied independencies) is refused up front with a ResourceError
naming the knob.
"""

from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pytest

import causalnet as cn
from causalnet.graph import separation


def sparse_dag(n: int, mean_out: float = 2.5, seed: int = 0) -> cn.DAG:
    """Random DAG with about `mean_out` * n edges; names hide the topological order."""
    rng = np.random.default_rng(seed)
    m = int(mean_out * n)
    a = rng.integers(0, n, size=2 * m)
    b = rng.integers(0, n, size=2 * m)
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:m]]
    names = [f"v{i}" for i in rng.permutation(n)]
    return cn.DAG([(names[i], names[j]) for i, j in pairs], nodes=names)


def pick_pair(g: cn.DAG, frac: float) -> tuple[str, str]:
    order = g.topological_order()
    for x in order[int(frac * len(order)):]:
        desc = g.descendants(x)
        if len(desc) > 3:
            return x, [v for v in order if v in desc][len(desc) // 2]
    raise AssertionError("no treatment with descendants")


def exercise(n: int, seed: int) -> None:
    g = sparse_dag(n, seed=seed)
    assert len(g) == n and len(g.topological_order()) == n
    x, y = pick_pair(g, 0.1)
    rng = np.random.default_rng(seed)
    G = g.to_networkx()
    nodes = list(g.nodes)
    for _ in range(3):
        a, b, *z = (nodes[i] for i in rng.choice(n, size=12, replace=False))
        assert g.d_separated(a, b, set(z)) == nx.is_d_separator(G, {a}, {b}, set(z))
    sep = g.minimal_d_separator(x, y)
    assert sep is None or g.d_separated(x, y, sep)
    assert g.do({x}).parents(x) == ()
    for z in g.backdoor_adjustment_sets(x, y, max_sets=20):
        assert g.is_backdoor_adjustment(x, y, z)
    for z in g.backdoor_adjustment_sets(x, y, minimal=True, max_sets=5):
        assert g.is_backdoor_adjustment(x, y, z)
    for z in g.minimal_adjustment_sets(x, y, max_sets=5):
        assert g.is_adjustment_set(x, y, z)
    for z in g.frontdoor_adjustment_sets(x, y, max_sets=20):
        assert g.is_frontdoor_adjustment(x, y, z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cn.CausalNetWarning)   # the candidate budget may run out: it says so
        for z in g.frontdoor_adjustment_sets(x, y, minimal=True, max_sets=5, max_candidates=200):
            assert g.is_frontdoor_adjustment(x, y, z)
    with pytest.raises(cn.ResourceError, match="max_table_bytes"):
        g.implied_independencies()
    text = g.to_dot()
    assert text.count(" -> ") == len(g.edges)


def test_graph_functions_on_10_4_nodes():
    exercise(10_000, seed=1)


@pytest.mark.slow
def test_graph_functions_on_10_5_nodes():
    exercise(100_000, seed=2)


def test_frontdoor_listing_on_a_long_mediator_chain():
    # many valid sets: X -> M0 -> ... -> M(k-1) -> Y with a latent confounder, plus side branches
    k = 2_000
    edges = [("U", "X"), ("U", "Y"), ("X", "M0"), (f"M{k - 1}", "Y")]
    edges += [(f"M{i}", f"M{i + 1}") for i in range(k - 1)]
    edges += [(f"M{i}", f"S{i}") for i in range(k)]
    g = cn.DAG(edges, latent=["U"])
    sets = g.frontdoor_adjustment_sets("X", "Y", max_sets=50)
    assert len(sets) == 50
    assert all(g.is_frontdoor_adjustment("X", "Y", z) for z in sets)
    minimal = g.frontdoor_adjustment_sets("X", "Y", minimal=True, max_sets=3)
    assert len(minimal) == 3 and all(len(z) == 1 and next(iter(z)).startswith("M") for z in minimal)


def test_implied_independencies_within_the_limit_is_answered():
    g = sparse_dag(300, seed=3)
    with cn.limits.override(max_table_bytes=2**20):
        with pytest.raises(cn.ResourceError, match="statements for 300 observed nodes"):
            g.implied_independencies()
    assert len(g.implied_independencies()) == 300 * 299 // 2 - len(g.edges)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_dseparation_backends_agree_with_networkx_on_10_4_nodes(backend):
    g = sparse_dag(10_000, seed=4)
    G = g.to_networkx()
    rng = np.random.default_rng(4)
    nodes = list(g.nodes)
    previous = separation.set_backend(backend)
    try:
        for _ in range(20):                                   # random queries
            a, b, *z = (nodes[i] for i in rng.choice(len(nodes), size=12, replace=False))
            assert g.d_separated(a, b, set(z)) == nx.is_d_separator(G, {a}, {b}, set(z))
        for k, i in enumerate(rng.choice(len(nodes), size=4, replace=False)):   # local Markov: a large Y
            x = nodes[i]
            pa = set(g.parents(x))
            nd = set(nodes) - g.descendants(x, include_self=True) - pa
            assert g.d_separated(x, nd, pa) and (k > 0 or nx.is_d_separator(G, {x}, nd, pa))
            if pa:
                assert not g.d_separated(x, nd | {next(iter(pa))}, pa - {next(iter(pa))})
    finally:
        separation.set_backend(previous)
