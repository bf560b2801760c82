"""PC on mixed data keeps the conditional Gaussian restriction: no real -> discrete edge, discrete–real adjacencies
oriented discrete -> real, then Meek's rules.

Oracle: brute force over every orientation of the true skeleton — the acyclic ones with the true v-structures and
no real -> discrete edge are the CG members of the equivalence class; an edge must come out directed exactly when
all members agree on it (Meek's rules are complete under background knowledge, Meek 1995).
"""

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.learning.data import as_table
from causalnet.learning.pc import orient_pattern
from causalnet.learning.structure import cg_orientations

CLG = cn.ConditionalLinearGaussian
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@st.composite
def cg_dags(draw):
    n = draw(st.integers(3, 6))
    nodes = [f"v{i}" for i in range(n)]
    discrete = {v for v in nodes if draw(st.booleans())}
    edges = []
    for i, j in itertools.combinations(range(n), 2):
        a, b = nodes[i], nodes[j]
        if len(edges) < 9 and draw(st.booleans()):
            if b in discrete and a not in discrete:
                a, b = b, a                              # the only CG direction between a discrete and a real node
            edges.append((a, b))
    g = nx.DiGraph(edges)
    g.add_nodes_from(nodes)
    if not nx.is_directed_acyclic_graph(g):
        edges = [(a, b) if nodes.index(a) < nodes.index(b) or (a in discrete) != (b in discrete) else (b, a)
                 for a, b in edges]
        g = nx.DiGraph(edges)
        g.add_nodes_from(nodes)
    if not nx.is_directed_acyclic_graph(g):           # swaps to discrete -> real made a cycle: put discrete first
        order = sorted(nodes, key=lambda v: (v not in discrete, nodes.index(v)))
        edges = [(a, b) if order.index(a) < order.index(b) else (b, a) for a, b in edges]
    return nodes, discrete, edges


def _v_structures(nodes, edges):
    pa = {v: {a for a, b in edges if b == v} for v in nodes}
    adj = {frozenset(e) for e in edges}
    return {(min(x, y), z, max(x, y)) for z in nodes for x, y in itertools.combinations(sorted(pa[z]), 2)
            if frozenset((x, y)) not in adj}


def _cg_class_pattern(nodes, discrete, edges):
    """(directed, undirected) edges agreed by all CG members of the equivalence class, by enumeration."""
    vs = _v_structures(nodes, edges)
    members = []
    for flips in itertools.product([False, True], repeat=len(edges)):
        cand = [(b, a) if f else (a, b) for (a, b), f in zip(edges, flips)]
        if any(b in discrete and a not in discrete for a, b in cand):
            continue
        g = nx.DiGraph(cand)
        g.add_nodes_from(nodes)
        if nx.is_directed_acyclic_graph(g) and _v_structures(nodes, cand) == vs:
            members.append(set(cand))
    assert set(edges) in members
    directed = set.intersection(*members)
    undirected = {frozenset(e) for e in edges} - {frozenset(e) for e in directed}
    return directed, undirected


def _sepsets(nodes, edges):
    """A separating set of each non-adjacent pair: the parents of whichever is not an ancestor of the other."""
    g = nx.DiGraph(edges)
    g.add_nodes_from(nodes)
    out = {}
    for x, y in itertools.combinations(nodes, 2):
        if g.has_edge(x, y) or g.has_edge(y, x):
            continue
        first, second = (x, y) if y not in nx.descendants(g, x) else (y, x)
        out[frozenset((x, y))] = set(g.predecessors(first)) - {second}
    return out


@settings(max_examples=120, deadline=None)
@given(cg_dags())
def test_pc_orientation_under_the_cg_restriction_equals_brute_force(case):
    nodes, discrete, edges = case
    table = as_table({v: np.array(["a", "b"]) if v in discrete else np.array([0.1, 0.2]) for v in nodes})
    adj = {v: set() for v in nodes}
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    fixed = cg_orientations(table, adj)
    assert all(a in discrete and b not in discrete for a, b in fixed)
    p = orient_pattern(nodes, adj, _sepsets(nodes, edges), fixed)
    directed, undirected = _cg_class_pattern(nodes, discrete, edges)
    assert set(p.directed_edges) == directed
    assert {frozenset(e) for e in p.undirected_edges} == undirected


def _chain():
    return cn.CausalModel({
        "D": cn.Categorical([0.4, 0.6], states=["d0", "d1"]),
        "X": CLG(["D"], [0.0, 2.0], np.zeros((2, 0)), [1.0, 0.6]),
        "Y": cn.LinearGaussian(["X"], [0.9], bias=0.5, sigma=0.7),
        "E": cn.CPT(["D"], [[0.8, 0.2], [0.25, 0.75]], states=["e0", "e1"]),
    })


def test_pc_on_mixed_data_orients_discrete_to_real_and_propagates():
    m = _chain()
    df = m.sample(20_000, seed=3).to_pandas()
    got = cn.learn_structure(df, method="pc", alpha=0.01, progress=False)
    plain = m.dag.cpdag()
    assert not plain.directed_edges                                # the plain class orients nothing here
    assert set(got.directed_edges) == {("D", "X"), ("X", "Y")}    # D -> X by the restriction, X -> Y by Meek R1
    assert {frozenset(e) for e in got.undirected_edges} == {frozenset(("D", "E"))}


def test_pc_on_mixed_data_refuses_a_fixed_real_to_discrete_edge_and_honours_black_lists():
    df = _chain().sample(2_000, seed=4).to_pandas()
    with pytest.raises(cn.ModelError, match=r"fixed edge \('X', 'D'\).*'D'.*'X'.*CG restriction"):
        cn.learn_structure(df, method="pc", fixed_edges=[("X", "D")], progress=False)
    got = cn.learn_structure(df, method="pc", black_list=[("D", "X")], progress=False)   # with the CG one: no edge
    assert frozenset(("D", "X")) not in {frozenset(e) for e in got.directed_edges + got.undirected_edges}


@pytest.mark.parametrize("seed", range(4))
def test_pc_on_finite_mixed_data_never_points_a_real_node_into_a_discrete_one(seed):
    rng = np.random.default_rng(seed)
    m = cn.CausalModel({
        "A": cn.Categorical([0.5, 0.5], states=["a0", "a1"]),
        "X": CLG(["A"], rng.normal(0, 1, 2), np.zeros((2, 0)), [1.0, 1.0]),
        "B": cn.CPT(["A"], [[0.6, 0.4], [0.45, 0.55]], states=["b0", "b1"]),     # weak: often missed
        "Y": CLG(["B", "X"], rng.normal(0, 1, 2), [[0.4], [0.2]], [1.0, 0.8]),
        "Z": cn.LinearGaussian(["Y"], [0.5], bias=0.0, sigma=1.0),
    })
    df = m.sample(600, seed=seed).to_pandas()
    p = cn.learn_structure(df, method="pc", alpha=0.2, progress=False)      # a loose alpha: spurious edges too
    discrete = {"A", "B"}
    assert not [e for e in p.directed_edges if e[0] not in discrete and e[1] in discrete]
    assert not [e for e in p.undirected_edges if (e[0] in discrete) != (e[1] in discrete)]
