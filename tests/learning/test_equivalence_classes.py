"""PDAG / CPDAG against a brute-force oracle: members = DAGs on the skeleton with the same d-separations."""

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.graph.equivalence import (
    PDAG,
    cpdag,
    is_markov_equivalent,
    moral_graph,
    structural_hamming_distance,
    v_structures,
)


@st.composite
def small_dags(draw, max_nodes=5):
    n = draw(st.integers(1, max_nodes))
    nodes = [f"v{i}" for i in range(n)]
    pairs = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]]
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    perm = draw(st.permutations(nodes))
    rank = {v: i for i, v in enumerate(perm)}
    edges = [(a, b) if rank[a] < rank[b] else (b, a) for (a, b), k in zip(pairs, keep) if k]
    return cn.DAG(edges, nodes=nodes)


def dsep_signature(dag):
    g = dag.to_networkx()
    nodes = list(dag.nodes)
    sig = set()
    for x, y in itertools.combinations(nodes, 2):
        rest = [v for v in nodes if v not in (x, y)]
        for k in range(len(rest) + 1):
            for z in itertools.combinations(rest, k):
                if nx.is_d_separator(g, {x}, {y}, set(z)):
                    sig.add((x, y, z))
    return frozenset(sig)


def brute_members(dag):
    """Every orientation of dag's skeleton that is acyclic and has dag's d-separations."""
    sig = dsep_signature(dag)
    skel = [tuple(e) for e in dag.edges]
    out = set()
    for flips in itertools.product([False, True], repeat=len(skel)):
        edges = [(b, a) if f else (a, b) for (a, b), f in zip(skel, flips)]
        try:
            d = cn.DAG(edges, nodes=dag.nodes)
        except cn.GraphError:
            continue
        if dsep_signature(d) == sig:
            out.add(frozenset(d.edges))
    return out


@settings(max_examples=40, deadline=None)
@given(small_dags())
def test_cpdag_members_equal_brute_force(dag):
    members = brute_members(dag)
    p = cpdag(dag)
    listed = [frozenset(d.edges) for d in p.dags()]
    assert len(listed) == len(set(listed))
    assert set(listed) == members
    # an edge is directed in the CPDAG iff every member orients it the same way
    for a, b in p.directed_edges:
        assert all((a, b) in m for m in members)
    for a, b in p.undirected_edges:
        assert any((a, b) in m for m in members) and any((b, a) in m for m in members)
    ext = p.to_dag()
    assert frozenset(ext.edges) in members
    assert is_markov_equivalent(ext, dag)
    assert cpdag(ext) == p


def test_v_structures_and_moral_graph():
    g = cn.DAG([("A", "C"), ("B", "C"), ("C", "D"), ("A", "B2"), ("B2", "D")])
    assert v_structures(g) == {("A", "C", "B"), ("C", "D", "B2")}
    mg = moral_graph(g)
    assert mg.has_edge("A", "B") and mg.has_edge("C", "B2") and not mg.has_edge("A", "D")


def test_markov_equivalence_examples():
    chain = cn.DAG([("A", "B"), ("B", "C")])
    fork = cn.DAG([("B", "A"), ("B", "C")])
    collider = cn.DAG([("A", "B"), ("C", "B")])
    assert is_markov_equivalent(chain, fork)
    assert not is_markov_equivalent(chain, collider)
    assert not is_markov_equivalent(chain, cn.DAG([("A", "B")], nodes=["C"]))


def test_pdag_errors_and_shd():
    with pytest.raises(cn.GraphError, match="more than one edge"):
        PDAG([("A", "B")], [("B", "A")])
    with pytest.raises(cn.GraphError, match="cycle"):
        PDAG([("A", "B"), ("B", "A2"), ("A2", "A")])
    with pytest.raises(cn.GraphError, match="self-loop"):
        PDAG([], [("A", "A")])
    with pytest.raises(cn.GraphError, match="no consistent DAG extension"):
        PDAG([], [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A")]).to_dag()
    a = cpdag(cn.DAG([("A", "B"), ("B", "C")]))
    b = PDAG([("A", "B")], [("B", "C")])
    assert structural_hamming_distance(a, b) == 1
    assert structural_hamming_distance(a, cn.DAG([("A", "B")], nodes=["C"])) == 2
    assert "dir=none" in a.to_dot() and repr(a) == "PDAG(A -- B; B -- C)"
