"""Folded and unrolled diagrams of recurrent networks: structure, clusters, unique labels (no binary needed)."""

import re

import pytest

import causalnet as cn
from causalnet import ModelError
from causalnet.models import recurrent


def _clusters(d):
    """cluster label -> the labels of its nodes, read from the diagram's hooks; checked against the DOT text."""
    out = {}
    for label, nodes in d.dot_clusters().items():
        attrs = [d.dot_node_attrs(v) for v in nodes]
        out[label] = [a.get("xlabel") or a["label"] for a in attrs]
        assert f'label="{label}" style=rounded' in d
    assert d.count("subgraph cluster_") == len(out)
    return out


@pytest.mark.parametrize("kind,gates", [("lstm", {"i[t]", "f[t]", "g[t]", "o[t]", "c[t]", "h[t]"}),
                                        ("gru", {"r[t]", "z[t]", "n[t]", "h[t]"}), ("rnn", {"h[t]"})])
def test_folded_view_one_cell_per_layer_with_recurrence(kind, gates):
    m = recurrent.build(kind, input_size=2, hidden_size=3, T=4, layers=2, bidirectional=True, seed=0)
    d = recurrent.diagram(m, view="folded")
    assert isinstance(d, str) and d.startswith("digraph {")
    clusters = _clusters(d)
    assert sorted(clusters) == ["layer 0 (backward) cell", "layer 0 cell", "layer 1 (backward) cell", "layer 1 cell"]
    for label, members in clusters.items():
        assert len(members) == len(set(members)), label          # labels unique within a cell
        assert gates <= set(members)
        assert ("h[t+1]" if "backward" in label else "h[t-1]") in members
    # the recurrence: one back edge per state and layer, from the state into its delay node
    loops = re.findall(r'"(l\d(?:\.rev)?\.\w+)\[t([-+])1\]" -> "\1\[t\]" \[[^\]]*constraint=false', d)
    states = 2 if kind == "lstm" else 1
    assert len(loops) == 4 * states
    assert all(sign == ("+" if ".rev" in p else "-") for p, sign in loops)
    nodes = set(d.dag.nodes)
    assert "x[t]" in nodes and not any(re.search(r"\[\d+\]", v) for v in nodes)


def test_unrolled_view_is_the_model_dag_with_one_box_per_cell_copy():
    T = 3
    m = recurrent.lstm(input_size=2, hidden_size=3, T=T, lengths=True, seed=0)
    d = recurrent.diagram(m, view="unrolled", rankdir="LR")
    assert set(d.dag.nodes) == set(m.nodes) and set(d.dag.edges) == set(m.dag.edges)
    clusters = _clusters(d)
    assert sorted(clusters) == [f"layer 0, t={t}" for t in range(T)]
    for t in range(T):
        assert {f"{g}[{t}]" for g in "ifgoh"} <= set(clusters[f"layer 0, t={t}"])
    assert '"l0.h[0]" -> "l0.i[1]" [color="#2171b5" penwidth=2]' in d   # a recurrence edge, bold blue
    assert "rankdir=LR" in d
    labels = re.findall(r'^\t(?:"[^"]*"|\w+) \[label="?([^" \]]*)', d, flags=re.M)  # top-level nodes
    assert len(labels) == len(set(labels))


def test_diagram_is_drawable_and_marks_interventions(tmp_path):
    m = recurrent.gru(input_size=2, hidden_size=3, T=3, seed=0).do({"l0.h[1]": [0.0, 0.0, 0.0]})
    d = recurrent.diagram(m, view="unrolled")
    assert "peripheries=2" in d
    assert cn.to_dot(d, legend=True).count("__legend_") >= 4
    out = cn.render(d, tmp_path / "gru.dot")
    assert out.read_text() == str(d)
    with pytest.raises(ModelError, match="view"):
        recurrent.diagram(m, view="sideways")


@pytest.mark.needs_dot
def test_renders_svg(tmp_path):
    m = recurrent.lstm(input_size=2, hidden_size=3, T=2, seed=0)
    assert cn.render(recurrent.diagram(m), tmp_path / "lstm.svg").read_text().lstrip().startswith("<")


def test_seq2seq_folded_view():
    m = recurrent.seq2seq(src_vocab=5, tgt_vocab=4, embed=3, hidden=4, T_src=3, T_tgt=3, cell="lstm",
                          attention="luong", seed=0)
    d = recurrent.diagram(m, view="folded")
    assert sorted(d.dot_clusters()) == ["decoder layer 0 cell", "encoder layer 0 cell"]
    assert {"attn[t]", "ctx[t]", "score[t]", "logits[t]"} <= set(d.dag.nodes)
    # the decoder starts from the encoder's state: dashed edges into its delay nodes, not a recurrence
    assert d.dot_edge_attrs("enc.h[t]", "dec.h[t-1]")["style"] == "dashed"
    assert d.dot_edge_attrs("enc.c[t]", "dec.c[t-1]")["style"] == "dashed"
    assert not any("[t+1]" in v for v in d.dag.nodes)


def test_deep_bidirectional_seq2seq_cells_are_labelled_alike():
    m = recurrent.seq2seq(src_vocab=5, tgt_vocab=4, embed=3, hidden=4, T_src=3, T_tgt=2, cell="gru",
                          layers=2, bidirectional=True, seed=0)
    assert sorted(recurrent.diagram(m, view="folded").dot_clusters()) == [
        "decoder layer 0 cell", "decoder layer 1 cell", "encoder layer 0 (backward) cell", "encoder layer 0 cell",
        "encoder layer 1 (backward) cell", "encoder layer 1 cell"]
