"""cn.compare_graphs: edge classes against the truth, SHD agreement, coloured DOT."""

from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.graph.comparison import EDGE_STYLES
from causalnet.graph.equivalence import cpdag, structural_hamming_distance


def test_classes_of_a_learned_pdag():
    true = cn.DAG.parse("A -> B; B -> C; C -> D; A -> E")
    learned = cn.PDAG("A -- B; C -> B; C -> D; D -> F")
    c = cn.compare_graphs(learned, true)
    assert c.correct == (("C", "D"),)
    assert c.unoriented == (("A", "B"),)
    assert c.reversed == (("C", "B"),)
    assert c.missing == (("A", "E"),)
    assert c.extra == (("D", "F"),)
    assert c.shd == 4 == structural_hamming_distance(learned, true)
    assert "F" in c.nodes and str(c).endswith("SHD 4)")


def test_dot_colours_each_class(tmp_path):
    c = cn.compare_graphs("A -- B; C -> B; D -> F", cn.DAG.parse("A -> B; B -> C; A -> E"))
    dot = c.to_dot(title="learned vs true")
    assert 'A -> B [color="#1f77b4" dir=none penwidth=2]' in dot
    assert f'B -> C [color="{EDGE_STYLES["reversed"]["color"]}" dir=back penwidth=2]' in dot    # drawn C -> B
    assert 'A -> E [color="#9e9e9e" style=dashed]' in dot
    assert 'D -> F [color="#d62728" penwidth=2]' in dot
    assert "learned vs true" in dot and "red: extra" in dot
    assert "label" not in c.to_dot(legend=False)
    assert cn.render(c, tmp_path / "c.dot").read_text().count("color=") == 4


def test_drawing_never_has_a_cycle():
    c = cn.compare_graphs("A -> B; B -> C", "C -> A")          # union A -> B -> C -> A as shown
    assert c.to_dot().count("dir=back") == 1


def test_models_are_compared_by_their_dags(sprinkler):
    c = cn.compare_graphs(sprinkler, sprinkler.dag)
    assert c.shd == 0 and len(c.correct) == 3


@st.composite
def dag_pairs(draw):
    n = draw(st.integers(2, 6))
    nodes = [f"V{i}" for i in range(n)]
    pairs = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]]
    one = [p for p in pairs if draw(st.booleans())]
    two = [p if draw(st.booleans()) else p[::-1] for p in pairs if draw(st.booleans())]
    two_dag = cn.DAG(two if _acyclic(two) else [tuple(sorted(p)) for p in two], nodes=nodes)
    return cn.DAG(one, nodes=nodes), two_dag


def _acyclic(edges):
    try:
        cn.DAG(edges)
    except cn.GraphError:
        return False
    return True


@settings(max_examples=60, deadline=None)
@given(dag_pairs(), st.booleans())
def test_shd_agrees_with_structural_hamming_distance(pair, as_cpdag):
    a, b = pair
    learned = cpdag(a) if as_cpdag else a
    c = cn.compare_graphs(learned, b)
    assert c.shd == structural_hamming_distance(learned, b)
    assert len(c.correct) + len(c.reversed) + len(c.unoriented) + len(c.extra) == \
        len(a.edges)
