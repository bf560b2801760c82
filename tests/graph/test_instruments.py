"""Instrumental variables against the definition checked by brute force over all conditioning sets."""

import itertools

import numpy as np
import pytest

import causalnet as cn
from causalnet.graph.instruments import (
    causal_path_graph,
    forbidden_for_instruments,
    instrumental_variables,
    is_instrument,
)


def test_classic_instrument():
    g = cn.DAG([("Z", "X"), ("X", "Y"), ("U", "X"), ("U", "Y")], latent=["U"])
    assert instrumental_variables(g, "X", "Y") == [("Z", frozenset())]
    assert is_instrument(g, "Z", "X", "Y")


def test_conditional_instrument_and_forbidden_conditioning():
    g = cn.DAG([("Z", "X"), ("X", "Y"), ("U", "X"), ("U", "Y"), ("C", "Z"), ("C", "Y"), ("Y", "D")],
               latent=["U"])
    assert instrumental_variables(g, "X", "Y") == [("Z", frozenset({"C"}))]
    assert not is_instrument(g, "Z", "X", "Y")
    assert is_instrument(g, "Z", "X", "Y", given={"C"})
    assert not is_instrument(g, "Z", "X", "Y", given={"C", "D"})   # D descends from Y
    assert forbidden_for_instruments(g, "X", "Y") == {"Y", "D"}


def test_mediated_effect_removes_first_edges_of_causal_paths():
    g = cn.DAG([("Z", "X"), ("X", "M"), ("M", "Y"), ("U", "X"), ("U", "Y")], latent=["U"])
    assert not causal_path_graph(g, "X", "Y").has_edge("X", "M")
    assert instrumental_variables(g, "X", "Y") == [("Z", frozenset())]
    assert "M" in forbidden_for_instruments(g, "X", "Y")


def test_front_door_graph_has_no_instrument():
    g = cn.DAG([("X", "M"), ("M", "Y"), ("U", "X"), ("U", "Y")], latent=["U"])
    assert instrumental_variables(g, "X", "Y") == []


def test_errors():
    g = cn.DAG([("Z", "X"), ("X", "Y"), ("U", "X"), ("U", "Y")], latent=["U"])
    with pytest.raises(cn.GraphError, match="did you mean"):
        instrumental_variables(g, "XX", "Y")
    with pytest.raises(cn.GraphError, match="not an ancestor"):
        instrumental_variables(g, "Y", "X")
    with pytest.raises(cn.GraphError, match="latent"):
        is_instrument(g, "U", "X", "Y")
    with pytest.raises(cn.GraphError, match="must not overlap"):
        is_instrument(g, "Z", "X", "Y", given=["Z"])
    with pytest.raises(cn.GraphError, match="one node"):
        is_instrument(g, ["Z", "X"], "X", "Y")


def _random_dag(seed, n=7, p=0.35, n_latent=2):
    rng = np.random.default_rng(seed)
    nodes = [f"V{i}" for i in range(n)]
    edges = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:] if rng.random() < p]
    return cn.DAG(edges, nodes=nodes, latent=[str(v) for v in rng.choice(nodes, n_latent, replace=False)])


def _definition(g, z, x, y, w):
    """Brito & Pearl's conditions, written out with networkx d-separation as the oracle."""
    import networkx as nx

    if set(w) & forbidden_for_instruments(g, x, y):
        return False
    gc = causal_path_graph(g, x, y).to_networkx()
    return nx.is_d_separator(gc, {z}, {y}, set(w)) and not nx.is_d_separator(gc, {z}, {x}, set(w))


@pytest.mark.parametrize("seed", range(40))
def test_against_brute_force(seed):
    g = _random_dag(seed)
    for x, y in itertools.permutations(g.observed, 2):
        if x not in g.ancestors(y):
            continue
        found = dict(instrumental_variables(g, x, y))
        gc = causal_path_graph(g, x, y)
        for z in g.observed:
            if z in (x, y):
                continue
            others = [v for v in g.observed if v not in (x, y, z)]
            ancestral = gc.ancestors({z, y}, include_self=True)
            exists = False
            for r in range(len(others) + 1):
                for w in itertools.combinations(others, r):
                    ok = _definition(g, z, x, y, w)
                    assert ok == is_instrument(g, z, x, y, w)
                    exists |= ok and set(w) <= ancestral
            assert (z in found) == exists, (x, y, z, g.edges)
            if z in found:
                assert _definition(g, z, x, y, found[z])


def _nearest_separator_reference(g, x, y):
    """The ancestral-instrument search written out with networkx (moral graphs built explicitly)."""
    import networkx as nx

    h = causal_path_graph(g, x, y).to_networkx()
    forbidden = forbidden_for_instruments(g, x, y)
    allowed = set(g.observed) - forbidden - {x}
    out = []
    for z in g.observed:
        if z in (x, y) or z in forbidden:
            continue
        anc = nx.ancestors(h, z) | nx.ancestors(h, y) | {z, y}
        moral = nx.moral_graph(h.subgraph(anc))
        walk = nx.subgraph(moral, (anc - allowed) | {y})             # y's side: through non-allowed nodes
        side = nx.node_connected_component(walk, y)
        near = {n for v in side for n in moral[v] if n not in side} & allowed
        if z in near or z in side:
            continue
        rest = moral.subgraph(anc - near)
        zside = nx.node_connected_component(rest, z)
        w = {n for v in zside for n in moral[v] if n in near}
        if not nx.is_d_separator(h, {z}, {x}, w):
            out.append((z, frozenset(w)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_medium_graphs_match_the_networkx_reference(seed):
    # 60-120 nodes with 15% latent nodes: the one-pass search (components of the moral graph of An(y),
    # one Bayes-ball per separator) against the per-candidate construction
    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 121))
    g = _random_dag(seed + 100, n=n, p=float(rng.uniform(1.5, 3.0)) / n, n_latent=int(0.15 * n))
    order = [v for v in g.topological_order() if v not in g.latent]
    checked = 0
    for x in order[len(order) // 3:]:
        for y in g.children(x):
            if y in g.latent or checked >= 4:
                continue
            assert instrumental_variables(g, x, y) == _nearest_separator_reference(g, x, y), (seed, x, y)
            checked += 1
    assert checked >= 2
