"""The DAG core: construction, parsing, validation, family queries, surgery."""

import networkx as nx
import pytest

import causalnet as cn
from causalnet import GraphError


@pytest.fixture
def confounded():
    return cn.DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")])


def test_edges_nodes_and_order(confounded):
    assert confounded.nodes == ("Z", "X", "Y")
    assert set(confounded.edges) == {("Z", "X"), ("Z", "Y"), ("X", "Y")}
    assert confounded.parents("Y") == ("Z", "X")
    assert confounded.children("Z") == ("X", "Y")
    assert confounded.topological_order() == ("Z", "X", "Y")
    assert len(confounded) == 3 and "X" in confounded and "Q" not in confounded


def test_parse_matches_edge_list(confounded):
    assert cn.DAG.parse("Z -> X; Z -> Y; X -> Y") == confounded
    assert cn.DAG.parse("X <- Z -> Y\nX -> Y") == confounded
    assert cn.DAG.parse("dag { Z -> {X Y}; X -> Y }") == confounded


def test_parse_chains_isolated_latent_and_quotes():
    g = cn.DAG.parse('A -> B -> C <- D; E; U [latent]; U -> A # comment\n"my node" -> E // c2')
    assert g.nodes == ("A", "B", "C", "D", "E", "U", "my node")
    assert set(g.edges) == {("A", "B"), ("B", "C"), ("D", "C"), ("U", "A"), ("my node", "E")}
    assert g.latent == {"U"}
    assert g.observed == ("A", "B", "C", "D", "E", "my node")


def test_parse_indexed_names():
    g = cn.DAG.parse("Z[0] -> Z[1] -> Z[2]; Z[1] -> X[1]; Z[0] [latent]")
    assert g.parents("X[1]") == ("Z[1]",)
    assert g.latent == {"Z[0]"}


@pytest.mark.parametrize("text, fragment", [
    ("A -> ", "no node after"),
    ("A -> B -> ;", "no node after"),
    ("-> B", "expected a node"),
    ("A B", "expected '->'"),
    ("A -> {B C", "unclosed"),
    ("A -> B; B -> A", "cycle"),
    ("A -> A", "self-loop"),
    ("A $ B", "cannot parse"),
])
def test_parse_errors(text, fragment):
    with pytest.raises(GraphError, match=fragment):
        cn.DAG.parse(text)


def test_cycle_is_named():
    with pytest.raises(GraphError, match=r"cycle A -> B -> C -> A"):
        cn.DAG([("A", "B"), ("B", "C"), ("C", "A")])


def test_bad_items_are_named():
    with pytest.raises(GraphError, match=r"\['x'\]"):
        cn.DAG([(["x"], "B")])
    with pytest.raises(GraphError, match="not a \\(parent, child\\) pair"):
        cn.DAG([("A", "B", "C")])
    with pytest.raises(GraphError, match="latent node 'Q' is not a node"):
        cn.DAG([("A", "B")], latent=["Q"])


def test_unknown_node_suggests(confounded):
    with pytest.raises(GraphError, match="unknown node 'Yy'; did you mean 'Y'"):
        confounded.parents("Yy")


def test_networkx_round_trip():
    g = cn.DAG.parse("A -> B -> C; U -> A; U -> C; U [latent]; I")
    G = g.to_networkx()
    assert isinstance(G, nx.DiGraph) and G.nodes["U"]["latent"] and not G.nodes["A"]["latent"]
    assert cn.DAG.from_networkx(G) == g
    G.add_edge("C", "A")  # the copy is ours to mutate; g is unchanged
    assert not g.has_edge("C", "A")
    with pytest.raises(GraphError, match="cycle"):
        cn.DAG.from_networkx(G)


def test_ancestors_descendants_blanket():
    g = cn.DAG.parse("A -> B -> C; D -> C; C -> E; F -> E")
    assert g.ancestors("C") == {"A", "B", "D"}
    assert g.ancestors({"C"}, include_self=True) == {"A", "B", "C", "D"}
    assert g.descendants("B") == {"C", "E"}
    assert g.markov_blanket("C") == {"B", "D", "E", "F"}
    assert g.descendants({"A", "F"}) == {"B", "C", "E"}


def test_do_and_backdoor_graph_return_new_graphs(confounded):
    before = set(confounded.edges)
    d = confounded.do({"X"})
    assert d.parents("X") == () and d.intervened == {"X"} and d.has_edge("X", "Y")
    b = confounded.backdoor_graph("X")
    assert b.children("X") == () and b.parents("X") == ("Z",)
    assert set(confounded.edges) == before and confounded.intervened == frozenset()


def test_do_clears_latent_mark():
    g = cn.DAG.parse("U -> X -> Y; U [latent]")
    assert g.do("U").latent == frozenset()


def test_subgraph_keeps_marks():
    g = cn.DAG.parse("U -> X -> Y; U -> Y; U [latent]")
    s = g.subgraph({"U", "Y"})
    assert s.edges == (("U", "Y"),) and s.latent == {"U"}


def test_immutable():
    g = cn.DAG.parse("A -> B")
    with pytest.raises(AttributeError):
        g.foo = 1
    with pytest.raises(nx.NetworkXError):
        g._g.add_edge("B", "C")   # the internal graph is frozen
    with pytest.raises(GraphError):
        g.add_edges([("B", "A")])
    assert g.edges == (("A", "B"),)


def test_equality_and_hash():
    a = cn.DAG.parse("A -> B; C")
    b = cn.DAG([("A", "B")], nodes=["C"])
    assert a == b and hash(a) == hash(b)
    assert a != cn.DAG.parse("A -> B")


# -- layering (issue 11) ------------------------------------------------------------


def test_graph_layer_imports_run_one_way():
    import ast
    from pathlib import Path

    root = Path(cn.__file__).parent
    files = sorted((root / "graph").glob("*.py")) + [root / "io" / "dot.py"]
    deps = {}
    for path in files:
        text = path.read_text()
        tree = ast.parse(text)
        top = {n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        top |= {n for t in tree.body if isinstance(t, ast.Try) for n in t.body if isinstance(n, ast.Import)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and not any(a.name.startswith("causalnet") for a in node.names) or (
                    isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith("causalnet")):
                continue   # a third-party module loaded on first use, as tests/test_architecture.py allows
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in top:
                raise AssertionError(f"{path.name}: import inside a function at line {node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not any(a.name.startswith("_") and a.name != "__future__" for a in node.names
                               if node.module.startswith(("causalnet", ".")) or node.level), (path.name, node.module)
        deps[path.stem] = {a.name for n in top if isinstance(n, ast.ImportFrom) and n.level for a in n.names} | {
            n.module.split(".")[-1] for n in top if isinstance(n, ast.ImportFrom) and n.level and n.module}
    # structure first: core imports no sibling; the algorithms import core, never dag
    assert not deps["core"] & {"dag", "separation", "adjustment", "drawing", "parse"}
    for algo in ("separation", "adjustment", "drawing", "parse"):
        assert "dag" not in deps[algo], algo


def test_contract_names_are_public():
    from causalnet.graph.core import closure
    from causalnet.graph.separation import closure as closure_from_separation

    assert closure_from_separation is closure
    g = cn.DAG.parse("A -> B")
    assert g.node_set("A") == frozenset({"A"})
    assert g.check_node("A") == "A"


# -- the fast construction paths give what the checked paths give -------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from causalnet.graph import core  # noqa: E402
from causalnet.graph.parse import parse_graph  # noqa: E402
from causalnet.graph.plain_text import parse_plain  # noqa: E402

_names = st.sampled_from(["A", "B", "c1", "Z[0]", "Z[1]", "x.y", "_u", "7"])
_ws = st.sampled_from(["", " ", "  ", "\t", " \r"])


@st.composite
def plain_texts(draw):
    statements = []
    for _ in range(draw(st.integers(0, 6))):
        chain = [draw(_names)]
        for _ in range(draw(st.integers(0, 3))):
            chain += [draw(st.sampled_from(["->", "<-"])), draw(_names)]
        statements.append("".join(draw(_ws) + t for t in chain) + draw(_ws))
    seps = [draw(st.sampled_from([";", "\n", ";\n", "\n\n"])) for _ in statements]
    text = "".join(s + sep for s, sep in zip(statements, seps))
    return f"dag {{ {text} }}" if draw(st.booleans()) else text


@settings(max_examples=300, deadline=None)
@given(plain_texts())
def test_plain_text_reads_as_the_full_parser(text):
    full = parse_graph(text)
    if any(u == v for u, v in full[0]):
        assert parse_plain(text) is None        # a self-loop: the full parser's path names it
    else:
        assert parse_plain(text) == full


@pytest.mark.parametrize("text", ["A -> B [latent]", "A <-> B", "A -- B", 'A -> "b c"', "A -> {B C}",
                                  "A -> B # c", "A B", "A -> ", "-> B", "A ->-> B", "A -> B -> ;", "Z[x] -> A"])
def test_plain_text_leaves_the_rest_to_the_full_parser(text):
    assert parse_plain(text) is None


@st.composite
def edge_lists(draw):
    names = draw(st.lists(st.one_of(st.sampled_from("ABCDEFG"), st.integers(0, 5)), min_size=1, max_size=7,
                          unique=True))
    rank = {v: i for i, v in enumerate(names)}
    pairs = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=12))
    edges = [(u, v) if rank[u] < rank[v] else (v, u) for u, v in pairs if u != v]
    extra = draw(st.lists(st.sampled_from(names), max_size=3))
    return edges, extra


@settings(max_examples=200, deadline=None)
@given(edge_lists(), st.booleans())
def test_fast_construction_equals_checked_construction(case, factorize):
    edges, extra = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "_FACTORIZE_IMPORT", 0 if factorize else 10**9)
        g = cn.DAG(edges, nodes=extra)
    order, _, ids = core._intern_checked(edges, extra)
    assert g.nodes == order
    seen = list(dict.fromkeys(zip(ids[0::2].tolist(), ids[1::2].tolist())))
    by_parent = sorted(seen, key=lambda e: e[0])        # stable: children keep insertion order
    assert g.edges == tuple((order[u], order[v]) for u, v in by_parent)
    for v in order:
        assert g.parents(v) == tuple(sorted({order[a] for a, b in seen if order[b] == v}, key=order.index))
    G = nx.DiGraph(list(g.edges))
    G.add_nodes_from(order)
    assert set(g.topological_order()) == set(order) and nx.is_directed_acyclic_graph(G)
    assert cn.DAG(list(g.edges), nodes=g.nodes) == g


@pytest.mark.parametrize("factorize", [True, False])
def test_large_construction_keeps_every_error(factorize, monkeypatch):
    monkeypatch.setattr(core, "_FACTORIZE_IMPORT", 0 if factorize else 10**9)
    monkeypatch.setattr(core, "_FACTORIZE_MIN", 0 if factorize else 10**9)
    n = 30_000
    chain_edges = [(f"v{i}", f"v{i + 1}") for i in range(n)]
    assert len(cn.DAG(chain_edges).topological_order()) == n + 1
    text = "\n".join(f"{u} -> {v}" for u, v in chain_edges[::-1]) + "\nsolo"
    g = cn.DAG.parse(text)
    assert g == cn.DAG(chain_edges, nodes=["solo"]) and g.nodes[:2] == (f"v{n - 1}", f"v{n}")
    with pytest.raises(GraphError, match="cycle"):
        cn.DAG.parse(text + "\nv0 <- v9")
    with pytest.raises(GraphError, match=r"cycle v0 -> v1 -> .* -> v0"):
        cn.DAG(chain_edges[:50] + [("v50", "v0")] + chain_edges[50:])
    with pytest.raises(GraphError, match="self-loop on 'v7'"):
        cn.DAG(chain_edges + [("v7", "v7")])
    with pytest.raises(GraphError, match="None cannot name a node"):
        cn.DAG(chain_edges + [(None, "v7")])
    with pytest.raises(GraphError, match="not hashable"):
        cn.DAG(chain_edges + [(["x"], "v7")])
    with pytest.raises(GraphError, match="not a \\(parent, child\\) pair"):
        cn.DAG(chain_edges + [("v1", "v2", "v3")])
    with pytest.raises(GraphError, match="a str is not an edge"):
        cn.DAG(chain_edges + ["AB"])
    g = cn.DAG(iter(chain_edges + chain_edges[:10]), nodes=["solo"])   # a generator; repeats are one edge
    assert len(g.edges) == n and g.nodes[0] == "solo" and g.parents("v10") == ("v9",)
