"""Tests for causalnet.graph.separators (every minimal d-separator).

Oracle: brute force over every subset of the allowed nodes, each tested with
networkx's ``is_d_separator`` on a networkx copy of the graph (latent nodes
are ordinary nodes there), keeping the sets with no separating proper subset
that still contains the included nodes.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import GraphError
from causalnet.graph.separators import minimal_separators
from tests.conftest import guarded


def random_dag(rng: np.random.Generator, n: int, p: float, p_latent: float) -> cn.DAG:
    topo = rng.permutation(n)
    names = [f"v{i}" for i in range(n)]
    edges = [(names[topo[i]], names[topo[j]]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    latent = [v for v in names if rng.random() < p_latent]
    return cn.DAG(edges, nodes=names, latent=latent)


def layered_dag(rng: np.random.Generator, p_latent: float) -> cn.DAG:
    """A source layer, 2-3 middle layers of 1-3 nodes, a sink layer: many separators between the ends."""
    sizes = [1] + [int(rng.integers(1, 4)) for _ in range(int(rng.integers(2, 4)))] + [1]
    layers, k = [], 0
    for s in sizes:
        layers.append([f"v{k + i}" for i in range(s)])
        k += s
    edges = [(u, v) for i in range(len(layers) - 1) for j in range(i + 1, len(layers))
             for u in layers[i] for v in layers[j] if rng.random() < (0.6 if j == i + 1 else 0.1)]
    names = [v for layer in layers for v in layer]
    latent = [v for v in names[1:-1] if rng.random() < p_latent]
    return cn.DAG(edges, nodes=names, latent=latent)


def nx_of(g: cn.DAG) -> nx.DiGraph:
    h = nx.DiGraph()
    h.add_nodes_from(g.nodes)
    h.add_edges_from(g.edges)
    return h


def brute_force(g: cn.DAG, a: set, b: set, include: set, restrict: set) -> set:
    """Separators minimal relative to `include`, inside `restrict`, by listing every subset."""
    h = nx_of(g)
    free = sorted(restrict - a - b - include)
    seps = [frozenset(include | set(c)) for k in range(len(free) + 1) for c in itertools.combinations(free, k)
            if nx.is_d_separator(h, a, b, include | set(c))]
    return {z for z in seps if not any(w < z for w in seps)}


def random_query(rng: np.random.Generator, g: cn.DAG):
    nodes = list(g.topological_order())
    observed = list(g.observed)
    third = max(1, len(nodes) // 3)                    # A early and B late: room for several separators
    a = {nodes[i] for i in rng.choice(third, size=1 + int(rng.random() < 0.3 and third > 1), replace=False)}
    rest = [v for v in nodes[-third:] if v not in a] or [v for v in nodes if v not in a]
    b = {rest[i] for i in rng.choice(len(rest), size=1 + int(rng.random() < 0.3 and len(rest) > 1), replace=False)}
    pool = [v for v in observed if v not in a | b]
    include = {v for v in pool if rng.random() < 0.12}
    restrict = set(observed) if rng.random() < 0.6 else include | {v for v in pool if rng.random() < 0.7}
    return a, b, include, restrict


def test_matches_brute_force_with_latent_nodes():
    rng = np.random.default_rng(14)
    nonempty = 0
    for i in range(300):
        if i % 2:
            g = random_dag(rng, int(rng.integers(7, 12)), float(rng.uniform(0.15, 0.35)), 0.2)
        else:
            g = layered_dag(rng, 0.15)
        a, b, include, restrict = random_query(rng, g)
        if i % 2 == 0:
            a, b = {g.nodes[0]}, {g.nodes[-1]}
            include, restrict = include - a - b, restrict - a - b
        got = list(minimal_separators(g, a, b, include=include, restrict=restrict))
        assert len(got) == len(set(got))                  # each separator once
        assert set(got) == brute_force(g, a, b, include, restrict), (g, a, b, include, restrict)
        nonempty += len(got) > 1
    assert nonempty >= 20                                   # the cases do exercise the enumeration


def test_method_and_default_restrict_skip_latent_nodes():
    g = cn.DAG.parse("U [latent]; X <- U -> Y; X <- A -> U")
    # U would separate alone, but it is latent: only {A}... which leaves X <- U -> Y open, so nothing
    assert list(g.minimal_separators("X", "Y")) == []
    g = cn.DAG.parse("U [latent]; X <- U -> C -> Y; X <- A -> Y")
    assert sorted(map(sorted, g.minimal_separators("X", "Y"))) == [["A", "C"]]


def test_is_lazy_on_exponentially_many_separators():
    # k disjoint paths X -> p_i -> q_i -> Y: 2**k minimal separators (one of p_i, q_i per path)
    k = 24
    g = cn.DAG([e for i in range(k) for e in (("X", f"p{i}"), (f"p{i}", f"q{i}"), (f"q{i}", "Y"))])
    first = list(itertools.islice(g.minimal_separators("X", "Y"), 50))
    assert len(set(first)) == 50
    h = nx_of(g)
    for z in first:
        assert len(z) == k and nx.is_d_separator(h, {"X"}, {"Y"}, set(z))


def test_adjacent_nodes_have_no_separator_and_include_is_kept():
    g = cn.DAG.parse("A -> B; B -> C; A -> D -> C")
    assert list(g.minimal_separators("A", "B")) == []
    assert sorted(map(sorted, g.minimal_separators("A", "C"))) == [["B", "D"]]
    assert list(g.minimal_separators("B", "D", include={"C"})) == []   # the collider C opens B -> C <- D
    g = cn.DAG.parse("A -> B -> C; A -> D -> C; C -> E")
    assert sorted(map(sorted, g.minimal_separators("A", "E"))) == [["B", "D"], ["C"]]
    assert sorted(map(sorted, g.minimal_separators("A", "E", include="B"))) == [["B", "C"], ["B", "D"]]
    # the empty set, when nothing needs blocking
    assert list(cn.DAG.parse("A -> C <- B").minimal_separators("A", "B")) == [frozenset()]


@pytest.mark.parametrize("kwargs, match", [
    (dict(a="Q", b="Y"), "unknown"),
    (dict(a="X", b="X"), "overlap"),
    (dict(a=[], b="Y"), "empty"),
    (dict(a="X", b="Y", include="U"), "latent"),
    (dict(a="X", b="Y", restrict={"U", "A"}), "latent"),
    (dict(a="X", b="Y", include="X"), "overlaps"),
    (dict(a="X", b="Y", include="A", restrict={"C"}), "outside restrict"),
])
def test_bad_input_raises_before_the_first_answer(kwargs, match):
    g = cn.DAG.parse("U [latent]; X <- U -> Y; X <- A -> Y; C")
    err = guarded(minimal_separators, g, **kwargs)
    assert isinstance(err, GraphError) and match in str(err)
    with pytest.raises(GraphError):
        minimal_separators("not a graph", "X", "Y")


@st.composite
def cases(draw):
    n = draw(st.integers(4, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    g = random_dag(rng, n, draw(st.floats(0.1, 0.6)), draw(st.sampled_from([0.0, 0.2, 0.4])))
    return g, *random_query(rng, g)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_answers_are_minimal_separators(case):
    g, a, b, include, restrict = case
    h = nx_of(g)
    anc = g.ancestors(a | b | include, include_self=True)
    for z in minimal_separators(g, a, b, include=include, restrict=restrict):
        assert include <= z <= restrict and not z & g.latent
        assert z <= anc                                     # minimal separators are ancestral
        assert nx.is_d_separator(h, a, b, set(z))
        # inside An(A u B u I), separation is monotone in the moral graph: dropping one node suffices
        assert not any(nx.is_d_separator(h, a, b, set(z - {v})) for v in z - include)
        assert g.d_separated(a, b, given=z)
