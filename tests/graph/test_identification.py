"""ID / IDC: classic graphs, hedges, the latent projection; y0 as an extra oracle when installed."""

import itertools

import networkx as nx
import numpy as np
import pytest

import causalnet as cn
from causalnet.graph.identification import (
    Estimand,
    MixedGraph,
    Probability,
    c_components,
    district,
    identify,
    latent_projection,
    marginal,
    product,
    with_bidirected,
)

D = cn.DAG


def bi(edges, pairs):
    return with_bidirected(D(edges), pairs)


CLASSIC = {
    "backdoor": D([("Z", "X"), ("Z", "Y"), ("X", "Y")]),
    "frontdoor": bi([("X", "M"), ("M", "Y")], [("X", "Y")]),
    "napkin": bi([("W", "R"), ("R", "X"), ("X", "Y")], [("W", "X"), ("W", "Y")]),
    "bow": bi([("X", "Y")], [("X", "Y")]),
    "mbias": bi([("A", "M"), ("B", "M"), ("X", "Y")], [("A", "X"), ("B", "Y")]),
    "verma": bi([("A", "B"), ("B", "C"), ("C", "D")], [("B", "D")]),
}


def test_backdoor_formula():
    e = identify(CLASSIC["backdoor"], "Y", "X")
    assert str(e) == "Σ_{Z} P(Z) P(Y | X, Z)"
    assert e.method == "backdoor adjustment"
    assert e.variables == {"X", "Y"}
    assert e.query == "P(Y | do(X))"


def test_frontdoor_formula_primes_the_bound_treatment():
    e = identify(CLASSIC["frontdoor"], "Y", "X")
    assert str(e) == "Σ_{M} P(M | X) Σ_{X'} P(X') P(Y | X', M)"
    assert e.method == "frontdoor adjustment"
    assert e.to_latex() == "\\sum_{M} P(M \\mid X) \\sum_{X'} P(X') P(Y \\mid X', M)"


def test_frontdoor_raw_id_is_the_same_formula():
    assert str(identify(CLASSIC["frontdoor"], "Y", "X", simplify=False)) == "Σ_{M} P(M | X) Σ_{X'} P(X') P(Y | X', M)"


def test_napkin():
    e = identify(CLASSIC["napkin"], "Y", "X")
    assert e.method == "ID"
    # the raw ID answer is a function of R that does not depend on R: it is averaged over P(R)
    assert str(e) == "Σ_{R} P(R) [Σ_{W} P(W) P(X, Y | W, R)] / [Σ_{W} P(W) P(X | W, R)]"
    assert e.variables == {"X", "Y"}


def test_mbias_needs_no_adjustment():
    assert str(identify(CLASSIC["mbias"], "Y", "X")) == "P(Y | X)"


def test_verma():
    g = CLASSIC["verma"]
    assert str(identify(g, "D", "A")) == "P(D | A)"
    assert str(identify(g, "D", "A", simplify=False)) == "Σ_{B, C} P(B | A) P(C | B) P(D | A, B, C)"
    assert str(identify(g, "D", "B")) == "Σ_{C} P(C | B) Σ_{B'} P(B') P(D | B', C)"


def test_bow_arc_hedge():
    with pytest.raises(cn.NotIdentifiable, match=r"hedge F = \{X, Y\}, F' = \{Y\}") as info:
        identify(CLASSIC["bow"], "Y", "X")
    assert info.value.hedge == (frozenset({"X", "Y"}), frozenset({"Y"}))
    assert info.value.query == "P(Y | do(X))"


@pytest.mark.parametrize("edges, pairs, x, y", [
    ([("X", "Z"), ("Z", "Y")], [("X", "Z")], "X", "Y"),                  # confounded first step
    ([("X", "Y"), ("Z", "Y")], [("X", "Z"), ("Z", "Y")], "X", "Y"),      # bidirected path X <-> Z <-> Y
    ([("X", "Z"), ("Z", "Y")], [("X", "Z"), ("Z", "Y")], "X", "Y"),
    ([("W", "X"), ("X", "Y")], [("W", "Y"), ("X", "Y")], "X", "Y"),
    ([("X", "Y1"), ("W", "Y2")], [("X", "W"), ("W", "Y1")], "X", ["Y1", "Y2"]),  # Shpitser-Pearl Fig. 1(g)
])
def test_textbook_hedges(edges, pairs, x, y):
    g = bi(edges, pairs)
    with pytest.raises(cn.NotIdentifiable) as info:
        identify(g, y, x)
    _check_hedge(latent_projection(g), info.value.hedge, {x} if isinstance(x, str) else set(x),
                 {y} if isinstance(y, str) else set(y))


def _check_hedge(h: MixedGraph, hedge, xs, ys):
    """A hedge (Shpitser & Pearl 2006, Def. 5): F' ⊂ F, each one c-component, both R-rooted
    (every node reaches the roots R of F' by directed paths inside the forest), F meets X, F' does not,
    and R ⊂ An(Y) with the edges into X removed."""
    forest, sub = hedge
    assert sub < forest
    assert forest & xs and not sub & xs
    assert len(h.subgraph(forest).c_components()) == 1
    assert len(h.subgraph(sub).c_components()) == 1
    roots = {v for v in sub if not any(v in h.parents(c) for c in sub)}
    for part in (forest, sub):
        inside = h.subgraph(part)
        assert inside.ancestors(roots) == part
    assert roots <= h.do(xs).ancestors(ys)


def test_query_string_and_values():
    e = identify(CLASSIC["backdoor"], "P(Y=1 | do(X=0))")
    assert e.values == {"Y": 1, "X": 0}
    e = identify(CLASSIC["frontdoor"], "P(Y | do(X), M)")
    assert e.given == ("M",) and e.method == "IDC"
    assert e.query == "P(Y | do(X), M)"


def test_idc_conditional_backdoor():
    g = D([("Z", "X"), ("Z", "Y"), ("X", "Y"), ("W", "Z")])
    e = identify(g, "Y", "X", given="W")
    assert e.method == "backdoor adjustment"
    assert str(e) == "Σ_{Z} P(Z | W) P(Y | X, Z, W)"


def test_idc_rule2_moves_condition_into_do():
    # Y | do(X), Z with Z a cause of Y unconfounded with it: P(Y | do(X), Z) = P(Y | do(X, Z))
    g = bi([("X", "Y"), ("Z", "Y")], [("X", "Z")])
    e = identify(g, "Y", "X", given="Z", simplify=False)
    assert str(e) == "P(Y | X, Z)"


def test_errors():
    g = CLASSIC["frontdoor"]
    with pytest.raises(cn.GraphError, match="did you mean 'Y'"):
        identify(g, "YY", "X")
    with pytest.raises(cn.GraphError, match="latent"):
        identify(g, "Y", "U[X,Y]")
    with pytest.raises(cn.GraphError, match="disjoint"):
        identify(g, "Y", ["X", "Y"])
    with pytest.raises(cn.GraphError, match="at least one outcome"):
        identify(g, [], "X")
    with pytest.raises(cn.EvidenceError, match="counterfactual"):
        identify(g, "P(Y_{X=0}=1 | X=1)")
    with pytest.raises(cn.EvidenceError, match="not both"):
        identify(g, "P(Y | do(X))", "X")


def test_no_treatment_is_observational():
    assert str(identify(CLASSIC["backdoor"], "Y", given="X")) == "P(Y | X)"


def test_latent_projection_and_c_components():
    g = D([("U", "X"), ("U", "L"), ("L", "Y"), ("X", "M"), ("M", "L2"), ("L2", "Y")], latent=["U", "L", "L2"])
    h = latent_projection(g)
    assert set(h.nodes) == {"X", "M", "Y"}
    assert set(h.directed_edges) == {("X", "M"), ("M", "Y")}
    assert h.bidirected_edges == (("X", "Y"),)
    assert c_components(g) == [frozenset({"X", "Y"}), frozenset({"M"})]
    assert district(g, "Y") == {"X", "Y"}
    assert "dir=both, style=dashed" in h.to_dot()
    # the projection keeps d-separation among observed nodes
    for a, b in itertools.combinations(h.nodes, 2):
        for z in [(), ("M",), ("X",), ("Y",)]:
            if a in z or b in z:
                continue
            assert h.m_separated([a], [b], z) == g.d_separated(a, b, given=set(z))


def test_with_bidirected_names_and_dag_roundtrip():
    g = with_bidirected(D([("X", "Y")], nodes=["U[X,Y]"]), [("X", "Y")])
    assert "U[X,Y]2" in g.latent and g.parents("Y") == ("X", "U[X,Y]2")
    with pytest.raises(cn.GraphError, match="self-loop"):
        with_bidirected(D([("X", "Y")]), [("X", "X")])
    h = latent_projection(CLASSIC["napkin"])
    assert latent_projection(h.to_dag()).bidirected_edges == h.bidirected_edges


def test_identify_accepts_a_mixed_graph():
    h = MixedGraph([("X", "M"), ("M", "Y")], [("X", "Y")])
    assert str(identify(h, "Y", "X")) == "Σ_{M} P(M | X) Σ_{X'} P(X') P(Y | X', M)"


def test_simplifications_are_identities():
    # Σ_a P(a | b) P(b) = P(b) summed gives the marginal; the chain rule merges
    e = marginal(product([Probability(["A"], ["B"]), Probability(["B"])]), {"A"})
    assert e == Probability(["B"])
    assert str(product([Probability(["B"], ["A"]), Probability(["A"])])) == "P(A, B)"
    assert isinstance(identify(CLASSIC["backdoor"], "Y", "X"), Estimand)


# -- random graphs: hedges are hedges; agreement with y0 ----------------------------------------

def random_admg(seed, n=6, p=0.4, n_bi=3):
    rng = np.random.default_rng(seed)
    nodes = [f"V{i}" for i in range(n)]
    edges = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:] if rng.random() < p]
    pairs = {tuple(sorted(rng.choice(nodes, 2, replace=False))) for _ in range(n_bi)}
    return MixedGraph(edges, sorted(pairs), nodes=nodes)


def random_queries(h, seed, k=8):
    rng = np.random.default_rng(seed)
    for _ in range(k):
        perm = list(rng.permutation(h.nodes))
        nx_, ny_ = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        yield [str(v) for v in perm[:nx_]], [str(v) for v in perm[nx_:nx_ + ny_]]


@pytest.mark.parametrize("seed", range(30))
def test_hedges_on_random_graphs(seed):
    h = random_admg(seed)
    for xs, ys in random_queries(h, seed):
        try:
            e = identify(h, ys, xs)
        except cn.NotIdentifiable as err:
            _check_hedge(h, err.hedge, set(xs), set(ys))
        else:
            assert e.variables <= set(xs) | set(ys)


def _y0_graph(h):
    from y0.dsl import Variable
    from y0.graph import NxMixedGraph

    g = NxMixedGraph.from_edges(
        nodes=[Variable(v) for v in h.nodes],
        directed=[(Variable(a), Variable(b)) for a, b in h.directed_edges],
        undirected=[(Variable(a), Variable(b)) for a, b in h.bidirected_edges])
    g.directed.add_nodes_from(Variable(v) for v in h.nodes)   # y0 loses isolated nodes otherwise
    g.undirected.add_nodes_from(Variable(v) for v in h.nodes)
    return g


@pytest.mark.parametrize("seed", range(12))
def test_identifiability_agrees_with_y0(seed):
    pytest.importorskip("y0")
    from y0.algorithm.identify import identify_outcomes
    from y0.dsl import Variable

    h = random_admg(seed, n=6, n_bi=4)
    g0 = _y0_graph(h)
    for xs, ys in random_queries(h, seed, k=5):
        try:
            identify(h, ys, xs)
            ours = True
        except cn.NotIdentifiable:
            ours = False
        try:
            theirs = identify_outcomes(g0, {Variable(v) for v in xs}, {Variable(v) for v in ys}) is not None
        except (KeyError, nx.NetworkXError):   # y0 0.2 loses nodes isolated by the intervention
            continue
        assert ours == theirs, (xs, ys, h.directed_edges, h.bidirected_edges)


def test_treatment_that_does_not_reach_the_outcome():
    # regression: an empty front-door set once sent the chain-rule merge into a loop
    g = with_bidirected(D([("X", "A"), ("B", "Y")]), [("X", "B")])
    assert str(identify(g, "Y", "X", simplify=False)) == "P(Y)"
    assert str(identify(g, "Y", "X")) == "Σ_{B} P(B) P(Y | X, B)"   # also right: {B} is an adjustment set
    h = MixedGraph([("V2", "V5"), ("V3", "V4")], [("V2", "V3"), ("V4", "V5")])
    assert identify(h, ["V4"], ["V5"]).variables == {"V4"}


def test_do_calculus_textbook_and_errors():
    from causalnet.graph.identification import do_calculus

    g = CLASSIC["frontdoor"]
    assert do_calculus(g, 2, "M", z="X")            # P(M | do(X)) = P(M | X)
    assert not do_calculus(g, 2, "Y", z="M")        # M <- X <-> Y is open
    assert do_calculus(g, 2, "Y", x="X", z="M")     # ... but not once X is set
    assert do_calculus(g, 3, "X", z="M")            # P(X | do(M)) = P(X)
    assert not do_calculus(g, 1, "Y", z="X")
    with pytest.raises(cn.GraphError, match="rules 1, 2 and 3"):
        do_calculus(g, 4, "Y", z="X")
    with pytest.raises(cn.GraphError, match="disjoint"):
        do_calculus(g, 1, "Y", x="X", z="X")
    with pytest.raises(cn.GraphError, match="at least one"):
        do_calculus(g, 1, "Y")


# -- graphs given as text ------------------------------------------------------------------------

TEXT = {
    "bow": "X -> Y; X <-> Y",
    "frontdoor": "X -> M -> Y; X <-> Y",
    "napkin": "W -> R -> X -> Y; W <-> X; W <-> Y",
    "verma": "A -> B -> C -> D; B <-> D",
    "mbias": "A -> M <- B; X -> Y; A <-> X; B <-> Y",
}


def test_identify_from_graph_text_raises_with_the_hedge():
    with pytest.raises(cn.NotIdentifiable, match=r"hedge F = \{X, Y\}, F' = \{Y\}") as info:
        cn.identify("X -> Y; X <-> Y", "P(Y | do(X))")
    assert info.value.hedge == (frozenset({"X", "Y"}), frozenset({"Y"}))
    _check_hedge(latent_projection("X -> Y; X <-> Y"), info.value.hedge, {"X"}, {"Y"})


@pytest.mark.parametrize("name", ["frontdoor", "napkin", "verma", "mbias"])
def test_graph_text_gives_the_same_estimand_as_the_graph(name):
    x, y = ("A", "D") if name == "verma" else ("X", "Y")
    from_text = cn.identify(TEXT[name], f"P({y} | do({x}))")
    from_graph = identify(CLASSIC[name], y, x)
    assert str(from_text) == str(from_graph) and from_text.method == from_graph.method
    assert set(latent_projection(TEXT[name]).bidirected_edges) == set(latent_projection(CLASSIC[name]).bidirected_edges)
    assert cn.DAG.parse(TEXT[name]).do_calculus(2, y, z=x) == CLASSIC[name].do_calculus(2, y, z=x)


def test_graph_text_errors():
    with pytest.raises(cn.GraphError, match="expects a DAG, a MixedGraph or a graph text"):
        cn.identify(42, "P(Y | do(X))")
    with pytest.raises(cn.GraphError):
        cn.identify("X -> -> Y", "P(Y | do(X))")
    with pytest.raises(cn.GraphError, match="unknown or latent"):
        cn.identify("X -> Y; X <-> Y", "Y", "U[X,Y]")
