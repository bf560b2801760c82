"""Tests for causalnet.io.dot: golden DOT text (no binary), rendering, errors."""

from __future__ import annotations

import html
import os
import shutil
import stat
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet import DAG
from causalnet.errors import GraphError, RenderError
from causalnet.io import dot as dotmod
from causalnet.io.dot import find_renderer, render, to_dot

HAS_DOT = shutil.which("dot") is not None
HAS_PURE = shutil.which("graphviz-pure") is not None

needs_dot = [pytest.mark.needs_dot, pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` not on PATH")]
needs_pure = [
    pytest.mark.needs_graphviz_pure,
    pytest.mark.skipif(not HAS_PURE, reason="graphviz-pure not on PATH"),
]


def _marks(marks):
    def deco(fn):
        for m in marks:
            fn = m(fn)
        return fn

    return deco


def _renderer_params():
    return [
        pytest.param("dot", marks=needs_dot, id="dot"),
        pytest.param("graphviz-pure", marks=needs_pure, id="graphviz-pure"),
    ]


@pytest.fixture
def confounded():
    """Z -> X -> Y with Z -> Y."""
    return DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")])


def _golden(*lines: str) -> str:
    return "digraph {\n" + "".join(f"\t{line}\n" for line in lines) + "}\n"


# -- golden strings ----------------------------------------------------------------


def test_plain(confounded):
    assert to_dot(confounded) == _golden(
        "graph [rankdir=TB]",
        "Z",
        "X",
        "Y",
        "Z -> X",
        "Z -> Y",
        "X -> Y",
    )


def test_method_matches_function(confounded):
    assert confounded.to_dot(rankdir="LR") == to_dot(confounded, rankdir="LR")


def test_latent_dashed():
    g = DAG.parse("U [latent]; U -> X -> Y; U -> Y")
    assert to_dot(g) == _golden(
        "graph [rankdir=TB]",
        "U [style=dashed]",
        "X",
        "Y",
        "U -> X",
        "U -> Y",
        "X -> Y",
    )


def test_intervened_double_border_without_incoming_edges(confounded):
    assert to_dot(confounded.do("X")) == _golden(
        "graph [rankdir=TB]",
        "Z",
        "X [peripheries=2]",
        "Y",
        "Z -> Y",
        "X -> Y",
    )


def test_highlight_path_either_direction(confounded):
    # X <- Z -> Y walks the edge Z -> X backwards
    red = 'color="#d62728" penwidth=2'
    assert to_dot(confounded, highlight_path=["X", "Z", "Y"]) == _golden(
        "graph [rankdir=TB]",
        f"Z [{red}]",
        f"X [{red}]",
        f"Y [{red}]",
        'Z -> X [color="#d62728" penwidth=2.5]',
        'Z -> Y [color="#d62728" penwidth=2.5]',
        "X -> Y",
    )


def test_separating_set():
    g = DAG.parse("A -> B -> C")
    assert to_dot(g, separating_set={"B"}) == _golden(
        "graph [rankdir=TB]",
        "A",
        'B [color="#2171b5" fillcolor="#c6dbef" penwidth=2 style=filled]',
        "C",
        "A -> B",
        "B -> C",
    )


def test_highlight_nodes_and_observed():
    g = DAG.parse("U [latent]; U -> A -> B")
    assert to_dot(g, highlight_nodes="B", observed=True) == _golden(
        "graph [rankdir=TB]",
        "U [style=dashed]",
        'A [fillcolor="#d9d9d9" style=filled]',
        'B [color="#d62728" fillcolor="#d9d9d9" penwidth=2 style=filled]',
        "U -> A",
        "A -> B",
    )


def test_observed_and_latent_combine_styles():
    g = DAG.parse("U [latent]; U -> A")
    assert to_dot(g, observed=["U"]) == _golden(
        "graph [rankdir=TB]",
        'U [fillcolor="#d9d9d9" style="dashed,filled"]',
        "A",
        "U -> A",
    )


def test_explicit_clusters():
    g = DAG([("x", "h1"), ("x", "h2"), ("h1", "y"), ("h2", "y")])
    assert to_dot(g, clusters={"hidden layer": ["h2", "h1"]}) == _golden(
        "graph [rankdir=TB]",
        "x",
        "y",
        "subgraph cluster_0 {",
        '\tlabel="hidden layer" style=rounded',
        "\th1",
        "\th2",
        "}",
        "x -> h1",
        "x -> h2",
        "h1 -> y",
        "h2 -> y",
    )


def test_prefix_clusters_nest_and_collapse():
    g = DAG.parse("x -> enc.0.attn.Q -> enc.0.attn.A -> enc.0.ffn.F -> enc.1.F -> y")
    assert to_dot(g, clusters="prefix") == _golden(
        "graph [rankdir=TB]",
        "x",
        "y",
        "subgraph cluster_0 {",
        "\tlabel=enc style=rounded",
        "\tsubgraph cluster_1 {",
        '\t\tlabel="enc.0" style=rounded',
        "\t\tsubgraph cluster_2 {",
        '\t\t\tlabel="enc.0.attn" style=rounded',
        '\t\t\t"enc.0.attn.Q"',
        '\t\t\t"enc.0.attn.A"',
        "\t\t}",
        "\t\tsubgraph cluster_3 {",
        '\t\t\tlabel="enc.0.ffn" style=rounded',
        '\t\t\t"enc.0.ffn.F"',
        "\t\t}",
        "\t}",
        "\tsubgraph cluster_4 {",
        '\t\tlabel="enc.1" style=rounded',
        '\t\t"enc.1.F"',
        "\t}",
        "}",
        'x -> "enc.0.attn.Q"',
        '"enc.0.attn.Q" -> "enc.0.attn.A"',
        '"enc.0.attn.A" -> "enc.0.ffn.F"',
        '"enc.0.ffn.F" -> "enc.1.F"',
        '"enc.1.F" -> y',
    )


def test_prefix_collapses_single_child_chain():
    g = DAG.parse("a.b.c.X -> a.b.c.Y")
    assert to_dot(g, clusters="prefix") == _golden(
        "graph [rankdir=TB]",
        "subgraph cluster_0 {",
        '\tlabel="a.b.c" style=rounded',
        '\t"a.b.c.X"',
        '\t"a.b.c.Y"',
        "}",
        '"a.b.c.X" -> "a.b.c.Y"',
    )


def test_labels_title_rankdir():
    g = DAG([("x", "Q")])
    out = to_dot(g, labels={"Q": "Q\n(n, T, 64)"}, title="one <head>", rankdir="LR")
    assert out == _golden(
        'graph [label="one <head>" labelloc=t rankdir=LR]',
        "x",
        'Q [label="Q\\n(n, T, 64)"]',
        "x -> Q",
    )


def test_awkward_names_are_quoted():
    g = DAG([("a:b", "<s>"), ("node", "Z[3]"), ("two words", "Z[3]")])
    assert to_dot(g) == _golden(
        "graph [rankdir=TB]",
        '"a:b"',
        '"<s>"',
        '"node"',
        '"Z[3]"',
        '"two words"',
        '"a:b" -> "<s>"',
        '"node" -> "Z[3]"',
        '"two words" -> "Z[3]"',
    )


class _FakeModel:
    """A stand-in for a CausalModel: a .dag plus the drawing hooks."""

    def __init__(self, dag, clusters=None):
        self.dag = dag
        self._clusters = clusters

    def dot_node_attrs(self, node):
        if node == "Q":
            return {"shape": "box", "style": "filled", "fillcolor": "#fff2cc", "label": "Q\n(n, 4)"}
        return {}

    def dot_edge_attrs(self, u, v):
        return {"arrowhead": "vee"} if v == "Q" else None

    def dot_clusters(self):
        return self._clusters


def test_drawable_hooks_are_merged():
    m = _FakeModel(DAG.parse("U [latent]; U -> Q -> Y"))
    assert to_dot(m) == _golden(
        "graph [rankdir=TB]",
        "U [style=dashed]",
        'Q [label="Q\\n(n, 4)" fillcolor="#fff2cc" shape=box style=filled]',
        "Y",
        "U -> Q [arrowhead=vee]",
        "Q -> Y",
    )
    # marks merge over the hook: latent + filled kind, labels= beats the hook's label
    m2 = _FakeModel(DAG.parse("Q [latent]; Q -> Y"), clusters={"blk": ["Q", "Y"]})
    assert to_dot(m2, labels={"Q": "query"}, highlight_path=["Q", "Y"]) == _golden(
        "graph [rankdir=TB]",
        "subgraph cluster_0 {",
        "\tlabel=blk style=rounded",
        '\tQ [label=query color="#d62728" fillcolor="#fff2cc" penwidth=2 shape=box style="filled,dashed"]',
        '\tY [color="#d62728" penwidth=2]',
        "}",
        'Q -> Y [color="#d62728" penwidth=2.5]',
    )
    # a highlighted path merges over the edge hook
    assert '\tU -> Q [arrowhead=vee color="#d62728" penwidth=2.5]\n' in to_dot(m, highlight_path=["U", "Q"])
    # an explicit clusters= option overrides the hook
    assert "subgraph" not in to_dot(m2, clusters={})


def test_deterministic_and_edge_order_free():
    nodes = ["a", "b", "c", "d"]
    e = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    g1 = DAG(e, nodes=nodes)
    g2 = DAG(list(reversed(e)), nodes=nodes)
    assert to_dot(g1) == to_dot(g2) == to_dot(g1)


@st.composite
def _dags(draw):
    n = draw(st.integers(1, 7))
    names = [f"v{i}" for i in range(n)]
    pairs = [(names[i], names[j]) for i in range(n) for j in range(i + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    latent = draw(st.lists(st.sampled_from(names), unique=True))
    return DAG(edges, nodes=names, latent=latent)


@settings(max_examples=60, deadline=None)
@given(_dags(), st.data())
def test_every_node_and_edge_once(g, data):
    do = data.draw(st.lists(st.sampled_from(list(g.nodes)), unique=True))
    h = g.do(do) if do else g
    lines = to_dot(h).splitlines()
    edge_lines = [ln.strip() for ln in lines if "->" in ln]
    assert sorted(edge_lines) == sorted(f"{u} -> {v}" for u, v in h.edges)
    assert not any(ln.endswith(f"-> {v}") for ln in edge_lines for v in do)
    for v in h.nodes:
        (stmt,) = [ln.strip() for ln in lines if "->" not in ln and ln.strip().split(" ")[0] == v]
        assert ("dashed" in stmt) == (v in h.latent)
        assert ("peripheries=2" in stmt) == (v in do)


# -- errors ------------------------------------------------------------------------


def test_unknown_node_in_option(confounded):
    with pytest.raises(GraphError, match=r"unknown highlighted node 'Yy'; did you mean 'Y'\?"):
        to_dot(confounded, highlight_nodes=["Yy"])
    with pytest.raises(GraphError, match="unknown separating-set node 'W'"):
        to_dot(confounded, separating_set={"W"})
    with pytest.raises(GraphError, match="unknown labelled node 'Q'"):
        to_dot(confounded, labels={"Q": "q"})


def test_path_must_follow_edges():
    g = DAG.parse("A -> B; C -> B")
    with pytest.raises(GraphError, match="from 'A' to 'C', which are not adjacent"):
        to_dot(g, highlight_path=["A", "C"])
    with pytest.raises(GraphError, match="list of nodes"):
        to_dot(g, highlight_path="AB")


def test_bad_clusters_and_rankdir(confounded):
    with pytest.raises(GraphError, match="'X' is in two clusters"):
        to_dot(confounded, clusters={"a": ["X"], "b": ["X", "Y"]})
    with pytest.raises(GraphError, match="clusters must be"):
        to_dot(confounded, clusters="dots")
    with pytest.raises(RenderError, match="rankdir must be one of"):
        to_dot(confounded, rankdir="down")


def test_not_drawable():
    with pytest.raises(GraphError, match="cannot draw a dict"):
        to_dot({"a": 1})


def test_duplicate_dot_names():
    with pytest.raises(GraphError, match="same DOT name '1'"):
        to_dot(DAG([(1, "1")]))


# -- render ------------------------------------------------------------------------


def _svg_texts(path) -> list[str]:
    root = ET.parse(path).getroot()
    return [html.unescape("".join(t.itertext())) for t in root.iter("{http://www.w3.org/2000/svg}text")]


@pytest.mark.parametrize("renderer", _renderer_params())
def test_render_svg_has_every_label(renderer, tmp_path):
    g = DAG.parse('U [latent]; U -> X -> "Z[3]" -> Y; U -> Y; "a:b" -> X; "<s>" -> X; enc.0.Q -> Y')
    out = render(g.do("Z[3]"), tmp_path / "g.svg", renderer=renderer, highlight_path=["U", "Y"],
                 separating_set=["X"], clusters="prefix", title="title")
    assert out == tmp_path / "g.svg"
    texts = _svg_texts(out)
    for v in g.nodes:
        assert v in texts, (v, texts)
    assert "title" in texts and "enc.0" in texts
    assert [p.name for p in tmp_path.iterdir()] == ["g.svg"]  # no temporary left


@pytest.mark.parametrize("renderer", _renderer_params())
def test_render_png(renderer, tmp_path):
    out = render(DAG.parse("A -> B"), tmp_path / "g.png", renderer=renderer)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@_marks(needs_dot)
def test_render_auto_prefers_dot(tmp_path):
    assert os.path.basename(find_renderer()) == "dot"
    out = render(DAG.parse("A -> B"), tmp_path / "g.svg")
    assert "graphviz-pure" not in out.read_text()


def test_render_dot_text_needs_no_renderer(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    g = DAG.parse("A -> B")
    for name in ("g.dot", "g.gv"):
        out = render(g, tmp_path / name, separating_set=["A"])
        assert out.read_text() == to_dot(g, separating_set=["A"])
    out = render(g, tmp_path / "g.txt", format="dot")
    assert out.read_text() == to_dot(g)


def test_no_renderer_raises_with_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(dotmod, "_script_dirs", lambda: [tmp_path])
    monkeypatch.setattr(dotmod, "_installed", lambda name: False)
    assert find_renderer() is None
    with pytest.raises(RenderError, match="no renderer") as info:
        render(DAG.parse("A -> B"), tmp_path / "g.svg")
    assert "apt-get install graphviz" in str(info.value)
    assert "pip install causalnet[render]" in str(info.value)
    with pytest.raises(RenderError, match="renderer 'graphviz-pure' not found"):
        render(DAG.parse("A -> B"), tmp_path / "g.svg", renderer="graphviz-pure")
    assert not any(p.suffix == ".svg" for p in tmp_path.iterdir())


def test_no_renderer_via_which(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(dotmod, "_script_dirs", lambda: [tmp_path])
    with pytest.raises(RenderError, match="no renderer"):
        render(DAG.parse("A -> B"), tmp_path / "g.png")


def test_failing_renderer_reports_stderr(tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: layout exploded' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RenderError, match="renderer 'dot' failed on 'g.svg': Error: layout exploded"):
        render(DAG.parse("A -> B"), tmp_path / "g.svg", renderer="dot")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dot"]


def test_render_bad_format_and_directory(tmp_path):
    g = DAG.parse("A -> B")
    with pytest.raises(RenderError, match="suffix '.jpeg'"):
        render(g, tmp_path / "g.jpeg")
    with pytest.raises(RenderError, match="format must be one of"):
        render(g, tmp_path / "g.svg", format="pdf")
    with pytest.raises(RenderError, match="does not exist"):
        render(g, tmp_path / "nowhere" / "g.dot")
    with pytest.raises(RenderError, match="renderer must be"):
        render(g, tmp_path / "g.svg", renderer="neato")


# -- docs ----------------------------------------------------------------------------


def test_docs_graphs_md_examples_run():
    import doctest
    from pathlib import Path

    import causalnet as cn

    missing = [n for n in ("render", "to_dot", "gallery") if not hasattr(cn, n)]
    if missing:
        pytest.skip(f"causalnet does not export {missing} yet")
    path = Path(__file__).resolve().parents[2] / "docs" / "graphs.md"
    result = doctest.testfile(str(path), module_relative=False, globs={}, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 40
    assert result.failed == 0


def test_renderer_found_beside_the_interpreter(tmp_path, monkeypatch):
    # a venv's graphviz-pure is found although the venv is not activated (not on PATH)
    fake = tmp_path / "graphviz-pure"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(dotmod.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(dotmod.sysconfig, "get_path", lambda name: None)
    assert find_renderer() == str(fake)
    assert find_renderer("graphviz-pure") == str(fake)


def test_installed_but_unreachable_renderer_does_not_ask_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(dotmod, "_script_dirs", lambda: [tmp_path])
    monkeypatch.setattr(dotmod, "_installed", lambda name: name == "graphviz-pure")
    with pytest.raises(RenderError, match="graphviz-pure package is installed") as info:
        render(DAG.parse("A -> B"), tmp_path / "g.svg")
    assert "pip install" not in str(info.value)


def test_dot_file_written_atomically(tmp_path, monkeypatch):
    target = tmp_path / "g.dot"
    target.write_text("old")
    render(DAG.parse("A -> B"), target)
    assert "A -> B" in target.read_text()

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dotmod.os, "replace", boom)
    with pytest.raises(RenderError, match="No space left"):
        render(DAG.parse("X -> Y"), target)
    assert "A -> B" in target.read_text()          # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.dot"]   # no temporary left


def test_failed_render_keeps_the_old_file(tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho half > \"$3\"; exit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    target = tmp_path / "g.svg"
    target.write_text("<svg>old</svg>")
    with pytest.raises(RenderError, match="failed"):
        render(DAG.parse("A -> B"), target, renderer="dot")
    assert target.read_text() == "<svg>old</svg>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dot", "g.svg"]


def test_legend_lists_the_kinds_and_marks_present():
    m = cn.CausalModel({
        "U": cn.LinearGaussian(),
        "X": cn.Categorical([0.5, 0.5]),
        "Y": cn.Deterministic(["U"], lambda u: 2 * u),
    }, latent=["U"]).do({"X": 1})
    text = cn.to_dot(m, legend=True)
    assert "cluster_legend" in text
    for label in ("continuous", "discrete", "deterministic", "latent (unobserved)", "intervened: do(·)"):
        assert f"label={label}" in text or f'label="{label}"' in text, label
    assert "cluster_legend" not in cn.to_dot(m)                    # off by default: golden DOT unchanged
    plain = cn.to_dot(cn.DAG.parse("A -> B"), legend=True)          # a bare DAG: only the marks present
    assert "cluster_legend" not in plain
