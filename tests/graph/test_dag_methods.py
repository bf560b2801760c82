"""The DAG's thin methods agree with the graph-layer functions they delegate to; `X <-> Y` in graph text."""

import networkx as nx
import pytest

import causalnet as cn
from causalnet.errors import GraphError
from causalnet.graph import equivalence, identification, instruments
from causalnet.graph.core import DAGCore
from causalnet.graph.identification import MixedGraph, with_bidirected

FRONT = cn.DAG.parse("X -> M -> Y; X <-> Y")
IV = cn.DAG([("Z", "X"), ("X", "Y"), ("U", "X"), ("U", "Y"), ("C", "Z"), ("C", "Y")], latent=["U"])


def test_identify_method_is_the_function():
    for kw in ({}, {"simplify": False}):
        assert str(FRONT.identify("Y", "X", **kw)) == str(identification.identify(FRONT, "Y", "X", **kw))
    e = FRONT.identify("Y", "X", given="M")
    assert e.method in ("IDC", "backdoor adjustment") and e.given == ("M",)
    with pytest.raises(cn.NotIdentifiable):
        cn.DAG.parse("X -> Y; X <-> Y").identify("Y", "X")


def test_districts_projection_do_calculus():
    assert FRONT.c_components() == identification.c_components(FRONT)
    assert FRONT.district("M") == frozenset({"M"}) and FRONT.district("X") == frozenset({"X", "Y"})
    h = FRONT.latent_projection()
    assert isinstance(h, MixedGraph) and h.bidirected_edges == (("X", "Y"),)
    g = cn.DAG([("Z", "X"), ("X", "Y"), ("Z", "Y")])
    assert g.do_calculus(2, "Y", z="X", w="Z") and not g.do_calculus(2, "Y", z="X")
    assert g.do_calculus(1, "Y", x="X", z="Z") is identification.do_calculus(g, 1, "Y", "X", "Z")


def test_instrument_methods():
    assert IV.instrumental_variables("X", "Y") == instruments.instrumental_variables(IV, "X", "Y")
    assert IV.instrumental_variables("X", "Y") == [("Z", frozenset({"C"}))]
    assert IV.is_instrument("Z", "X", "Y", given=["C"]) and not IV.is_instrument("Z", "X", "Y")


def test_equivalence_methods():
    chain, fork, collider = cn.DAG([("A", "B"), ("B", "C")]), cn.DAG([("B", "A"), ("B", "C")]), \
        cn.DAG([("A", "B"), ("C", "B")])
    assert chain.is_markov_equivalent(fork) and not chain.is_markov_equivalent(collider)
    assert collider.v_structures() == frozenset({("A", "B", "C")}) and chain.v_structures() == frozenset()
    assert chain.cpdag() == equivalence.cpdag(chain) and sorted(chain.cpdag().undirected_edges) == [("A", "B"), ("B", "C")]
    assert nx.utils.graphs_equal(collider.moral_graph(), nx.Graph([("A", "B"), ("C", "B"), ("A", "C")]))


def test_new_graphs_keep_the_class_they_came_from():
    """The algorithm modules import only graph.core: they build graphs of the class they are given."""
    core = DAGCore([("A", "B"), ("B", "C")])
    assert type(equivalence.cpdag(core).to_dag()) is DAGCore
    assert type(cn.DAG([("A", "B")]).cpdag().to_dag()) is cn.DAG
    assert type(cn.PDAG([], [("A", "B")]).to_dag()) is cn.DAG          # default: the registered DAG
    assert all(type(d) is cn.DAG for d in cn.PDAG([], [("A", "B")]).dags())
    assert type(with_bidirected(core, [("A", "C")])) is DAGCore
    assert type(identification.latent_projection(FRONT).to_dag()) is cn.DAG
    assert type(identification.latent_projection(with_bidirected(core, [("A", "C")])).to_dag()) is DAGCore
    assert type(MixedGraph([("X", "Y")], [("X", "Y")]).to_dag()) is cn.DAG
    assert str(identification.identify(with_bidirected(core, [("A", "C")]), "C", "A")) == \
        str(with_bidirected(cn.DAG(core.edges), [("A", "C")]).identify("C", "A"))


def test_parse_bidirected():
    g = cn.DAG.parse("X -> Y; X <-> Y")
    assert g == with_bidirected(cn.DAG([("X", "Y")]), [("X", "Y")])
    assert g.parents("Y") == ("X", "U[X,Y]") and g.latent == frozenset({"U[X,Y]"})
    # groups, chains, and a name already taken get a suffix
    g = cn.DAG.parse('A <-> {B C}; "U[A,B]" -> B')
    assert g.latent == frozenset({"U[A,B]2", "U[A,C]"}) and g.children("U[A,B]2") == ("A", "B")
    assert "U[A,B]" not in g.latent
    g = cn.DAG.parse("dag { W -> R -> X -> Y; W <-> X; W <-> Y }")
    assert [sorted(c) for c in g.c_components()] == [["W", "X", "Y"], ["R"]]
    with pytest.raises(GraphError, match="self-loop"):
        cn.DAG.parse("X <-> X")
    with pytest.raises(GraphError):
        cn.DAG.parse("X <-> ")
