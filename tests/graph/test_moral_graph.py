"""One moralization (issue 22): the networkx view (``DAG.moral_graph``), the by-name view used by
elimination orders and the integer core of ``graph.separation`` all agree with networkx's
``moral_graph`` on the induced subgraph (the oracle)."""

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.graph.equivalence import moral_graph as nx_view
from causalnet.graph.separation import moral_graph as core
from causalnet.inference.discrete.ordering import moral_graph as by_name


def _random_dag(seed: int, n: int, p: float) -> cn.DAG:
    rng = np.random.default_rng(seed)
    names = [f"V{i}" for i in rng.permutation(n)]          # node order is not the topological order
    edges = [(names[i], names[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    return cn.DAG(edges, nodes=names)


def _as_sets(g: nx.Graph) -> dict:
    return {v: set(g[v]) for v in g}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 12), st.floats(0.0, 0.7), st.integers(0, 10**6))
def test_every_view_is_networkx_moral_graph(seed, n, p, subset_seed):
    dag = _random_dag(seed, n, p)
    g = nx.DiGraph(list(dag.edges))
    g.add_nodes_from(dag.nodes)
    want = _as_sets(nx.moral_graph(g))
    assert _as_sets(nx_view(dag)) == want
    assert by_name(dag) == want
    assert list(by_name(dag)) == list(dag.nodes)                      # node order
    ix = dag.index
    assert {ix.nodes[v]: {ix.nodes[u] for u in s} for v, s in core(ix.par, range(ix.n)).items()} == want
    keep = [v for i, v in enumerate(dag.nodes) if (subset_seed >> (i % 20)) & 1]
    assert by_name(dag, keep) == _as_sets(nx.moral_graph(g.subgraph(keep)))


def test_the_collider_marries_its_parents():
    dag = cn.DAG.parse("A -> C <- B; C -> D")
    assert by_name(dag) == {"A": {"B", "C"}, "C": {"A", "B", "D"}, "B": {"A", "C"}, "D": {"C"}}
    assert by_name(dag, ["A", "B", "D"]) == {"A": set(), "B": set(), "D": set()}   # C left out: no marriage
