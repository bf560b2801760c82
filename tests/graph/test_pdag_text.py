"""PDAG text (``A -- B``): parsing, the str round trip, DAG.parse refusing it, and DOT without arrowheads."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.graph.equivalence import cpdag


def test_pdag_from_text():
    p = cn.PDAG("A -- B; B -> C\nD")
    assert p.undirected_edges == (("A", "B"),) and p.directed_edges == (("B", "C"),)
    assert p.nodes == ("A", "B", "C", "D")
    assert cn.PDAG.parse("pdag { X -- {Y Z} }").undirected_edges == (("X", "Y"), ("X", "Z"))
    assert p == cn.PDAG([("B", "C")], [("A", "B")], nodes=["D"])


def test_dag_parse_refuses_undirected_edges():
    with pytest.raises(cn.GraphError, match=r"A -- B is an undirected edge.*cn\.PDAG"):
        cn.DAG.parse("A -- B; B -> C")


@pytest.mark.parametrize("text, match", [
    ("A <-> B", "no latent"), ("U [latent]; U -- A", "no latent"), ("A -- ", "no node after"),
    ("A -- B -- A2; A2 -> A -> B", "more than one edge|cycle"), ("A -- A", "self-loop"),
])
def test_pdag_text_errors(text, match):
    with pytest.raises(cn.GraphError, match=match):
        cn.PDAG(text)


def test_pdag_text_with_other_arguments_is_refused():
    with pytest.raises(cn.GraphError, match="whole graph as text"):
        cn.PDAG("A -- B", [("B", "C")])


def test_str_round_trip_with_quoted_names():
    p = cn.PDAG([("my node", 'say "hi"')], [("X[2]", "my node")], nodes=["lone one", "dag"])
    assert cn.PDAG(str(p)) == p
    assert repr(cn.PDAG("A -- B")) == "PDAG(A -- B)"


@st.composite
def random_dags(draw):
    n = draw(st.integers(2, 7))
    edges = [(f"V{i}", f"V{j}") for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    return cn.DAG(edges, nodes=[f"V{i}" for i in range(n)])


@settings(max_examples=40, deadline=None)
@given(random_dags())
def test_cpdag_text_round_trip(g):
    p = cpdag(g)
    assert cn.PDAG.parse(str(p)) == p


def test_pdag_dot_draws_undirected_edges_without_arrowheads(tmp_path):
    p = cpdag(cn.DAG.parse("A -> B -> C; D -> C"))       # v-structure B -> C <- D; A -- B undirected
    dot = p.to_dot()
    assert "A -> B [dir=none]" in dot and "B -> C\n" in dot and "D -> C\n" in dot
    out = cn.render(p, tmp_path / "p.dot")
    assert out.read_text() == dot
    assert out.read_text().count(" -> ") == 3


def test_pdag_dot_is_acyclic_even_when_no_extension_exists():
    p = cn.PDAG([], [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A")])    # a 4-cycle: no consistent DAG
    assert p.to_dot().count("[dir=none]") == 4
