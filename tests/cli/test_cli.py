"""Tests for the `causalnet` command (causalnet.cli)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from causalnet import gallery
from causalnet.cli import TOUR_SECTIONS, load_graph, main, run_tour
from causalnet.errors import GraphError
from causalnet.io.dot import to_dot

HAS_RENDERER = shutil.which("dot") is not None or shutil.which("graphviz-pure") is not None


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(capsys, *argv, match: str):
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("causalnet: error: ")
    assert match in lines[0], lines[0]
    assert "Traceback" not in err


# -- dsep ---------------------------------------------------------------------------


def test_dsep_yes_and_no(capsys):
    assert run(capsys, "dsep", "gallery:asia", "tub", "smoke") == (0, "tub ⊥ smoke: yes, d-separated\n", "")
    code, out, _ = run(capsys, "dsep", "gallery:asia", "tub", "smoke", "--given", "dysp")
    assert code == 0
    assert out == "tub ⊥ smoke | dysp: no, d-connected; a minimal separator is the empty set\n"


def test_dsep_lists_and_repeated_given(capsys):
    code, out, _ = run(capsys, "dsep", "gallery:asia", "xray,asia", "dysp", "--given", "either", "-z", "bronc")
    assert (code, out) == (0, "{asia, xray} ⊥ dysp | either, bronc: yes, d-separated\n")
    code, out, _ = run(capsys, "dsep", "gallery:asia", "xray", "dysp")
    assert out == "xray ⊥ dysp: no, d-connected; a minimal separator is {either}\n"


def test_dsep_adjacent_has_no_separator(capsys):
    code, out, _ = run(capsys, "dsep", "gallery:sprinkler", "Rain", "Wet")
    assert out == "Rain ⊥ Wet: no, d-connected; no set of observed nodes separates them\n"


def test_dsep_inline_graph_text(capsys):
    assert run(capsys, "dsep", "A -> C <- B", "A", "B")[1] == "A ⊥ B: yes, d-separated\n"
    assert run(capsys, "dsep", "A -> C <- B", "A", "B", "--given", "C")[1].startswith("A ⊥ B | C: no")
    long_text = "; ".join(f"V{i} -> V{i + 1}" for i in range(60))  # too long to be a file name
    assert run(capsys, "dsep", long_text, "V0", "V60", "--given", "V30")[1] == "V0 ⊥ V60 | V30: yes, d-separated\n"


# -- adjust ---------------------------------------------------------------------------


def test_adjust_gallery_answers(capsys):
    code, out, _ = run(capsys, "adjust", "gallery:sprinkler", "Sprinkler", "Wet")
    assert code == 0
    assert out == (
        "effect of Sprinkler on Wet\n"
        "  backdoor adjustment sets: {Rain}\n"
        "  minimal adjustment sets: {Rain}\n"
        "  front-door adjustment sets: none\n"
    )
    out = run(capsys, "adjust", "gallery:frontdoor", "Smoking", "Cancer")[1]
    assert "  backdoor adjustment sets: none\n" in out
    assert "  front-door adjustment sets: {Tar}\n" in out
    out = run(capsys, "adjust", "gallery:m-bias", "X", "Y")[1]
    assert "  backdoor adjustment sets: {}\n" in out  # only the empty set; {M} would open a path
    out = run(capsys, "adjust", "gallery:asia", "lung", "dysp")[1]
    assert "  minimal adjustment sets: {smoke}, {bronc}\n" in out


def test_adjust_matches_library(capsys):
    g = gallery.graph("asia")
    out = run(capsys, "adjust", "gallery:asia", "lung", "dysp")[1]
    n_backdoor = len(g.backdoor_adjustment_sets("lung", "dysp"))
    assert n_backdoor == 12  # lung <- smoke -> bronc -> dysp: 3 choices to block x 4 free subsets of {asia, tub}
    assert out.splitlines()[1].count("{") == 12


def test_adjust_caps_long_lists(capsys):
    # 11 causes of X alone, each optional: 2**11 backdoor sets, the search stops at 1000
    text = "; ".join(f"W{i} -> X" for i in range(11)) + "; X -> Y"
    out = run(capsys, "adjust", text, "X", "Y")[1]
    assert out.splitlines()[1].endswith(", ... (stopped after 1000)")
    assert out.splitlines()[1].count("{") == 12


# -- graph files ----------------------------------------------------------------------


def test_json_and_text_files(tmp_path, capsys):
    j = tmp_path / "g.json"
    j.write_text(json.dumps({"nodes": ["X", "Y", "U"], "edges": [["U", "X"], ["U", "Y"], ["X", "Y"]], "latent": ["U"]}))
    g = load_graph(str(j))
    assert set(g.edges) == {("U", "X"), ("U", "Y"), ("X", "Y")} and g.latent == {"U"}
    t = tmp_path / "g.txt"
    t.write_text("dag {\n  U [latent]\n  U -> X -> Y\n  U -> Y\n}\n")
    assert load_graph(str(t)) == g
    braces = tmp_path / "braces.txt"  # dagitty text that starts with '{' is not JSON
    braces.write_text("{A B} -> C")
    assert set(load_graph(str(braces)).edges) == {("A", "C"), ("B", "C")}
    assert run(capsys, "adjust", str(j), "X", "Y")[1].splitlines()[1] == "  backdoor adjustment sets: none"


def test_json_int_nodes_match_by_name(tmp_path, capsys):
    j = tmp_path / "g.json"
    j.write_text(json.dumps({"edges": [[1, 2], [3, 2]]}))
    assert run(capsys, "dsep", str(j), "1", "3")[1] == "1 ⊥ 3: yes, d-separated\n"


def test_load_graph_errors(tmp_path):
    with pytest.raises(GraphError, match="did you mean 'gallery:asia'"):
        load_graph("asia")
    with pytest.raises(GraphError, match="no gallery entry 'asai'; did you mean 'asia'"):
        load_graph("gallery:asai")


# -- draw ---------------------------------------------------------------------------


def test_draw_to_stdout_is_to_dot(capsys):
    code, out, _ = run(capsys, "draw", "gallery:frontdoor", "--highlight", "Smoking,Tar,Cancer", "--rankdir", "LR")
    assert code == 0
    g = gallery.graph("frontdoor")
    assert out == to_dot(g, highlight_path=["Smoking", "Tar", "Cancer"], rankdir="LR")


def test_draw_do_and_given(capsys):
    out = run(capsys, "draw", "gallery:sprinkler", "--do", "Sprinkler", "--given", "Rain")[1]
    g = gallery.graph("sprinkler")
    assert out == to_dot(g.do("Sprinkler"), separating_set=["Rain"])
    assert "-> Sprinkler" not in out


def test_draw_dot_file(tmp_path, capsys):
    path = tmp_path / "m.dot"
    code, out, _ = run(capsys, "draw", "gallery:m-bias", "-o", str(path), "--clusters", "--title", "M")
    assert code == 0 and out == f"wrote {path}\n"
    assert path.read_text() == to_dot(gallery.graph("m-bias"), clusters="prefix", title="M")


@pytest.mark.skipif(not HAS_RENDERER, reason="no renderer on PATH")
def test_draw_svg(tmp_path, capsys):
    path = tmp_path / "asia.svg"
    code, _, _ = run(capsys, "draw", "gallery:asia", "-o", str(path), "--highlight", "lung,smoke,bronc")
    assert code == 0
    svg = path.read_text()
    for v in gallery.graph("asia").nodes:
        assert f">{v}</text>" in svg


# -- errors: one line, exit 2 -----------------------------------------------------------


def test_user_errors_are_one_line(tmp_path, capsys, monkeypatch):
    assert_user_error(capsys, "dsep", "gallery:asia", "tub", "smok", match="unknown node 'smok'; did you mean 'smoke'?")
    assert_user_error(capsys, "dsep", "gallery:nope", "a", "b", match="no gallery entry 'nope'")
    assert_user_error(capsys, "dsep", str(tmp_path / "missing.txt"), "a", "b", match="no such file")
    assert_user_error(capsys, "dsep", "gallery:asia", "tub", "tub", match="overlap")
    assert_user_error(capsys, "dsep", "gallery:asia", "tub,", "smoke", match="empty name")
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": ["A"], "edges": [["A", "B"]')
    assert_user_error(capsys, "adjust", str(bad), "A", "B", match="bad JSON at line 1")
    keys = tmp_path / "keys.json"
    keys.write_text('{"edges": [["A", "B"]], "latents": ["A"]}')
    assert_user_error(capsys, "adjust", str(keys), "A", "B", match="unknown JSON keys ['latents']")
    syntax = tmp_path / "g.txt"
    syntax.write_text("A -> -> B")
    assert_user_error(capsys, "dsep", str(syntax), "A", "B", match="cannot parse graph text")
    cyc = tmp_path / "cyc.txt"
    cyc.write_text("A -> B -> A")
    assert_user_error(capsys, "dsep", str(cyc), "A", "B", match="cycle")
    assert_user_error(capsys, "dsep", str(tmp_path), "A", "B", match="is a directory")
    assert_user_error(capsys, "draw", "gallery:asia", "--highlight", "asia,smoke", match="not adjacent")
    assert_user_error(capsys, "draw", "gallery:asia", "-o", str(tmp_path / "a.jpeg"), match="suffix '.jpeg'")
    assert_user_error(capsys, "draw", "gallery:asia", "--format", "svg", match="needs an output file")
    assert_user_error(capsys, "dsep", "gallery:asia", "tub", match="required")
    assert_user_error(capsys, "frobnicate", match="invalid choice")
    assert_user_error(capsys, match="choose a command")


def test_missing_renderer_is_a_user_error(tmp_path, capsys, monkeypatch):
    from causalnet.io import dot  # renderers are also looked up beside sys.executable: hide those too

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(dot, "_script_dirs", lambda: [tmp_path])
    monkeypatch.setattr(dot, "_installed", lambda name: False)
    assert_user_error(capsys, "draw", "gallery:asia", "-o", str(tmp_path / "a.svg"), match="apt-get install graphviz")
    assert not (tmp_path / "a.svg").exists()


def test_renderer_failure_is_one_line(tmp_path, capsys, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: line one' >&2\necho 'line two' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert_user_error(capsys, "draw", "gallery:asia", "-o", str(tmp_path / "a.svg"), match="Error: line one | line two")


def test_help_and_version(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "dsep" in out and "tour" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("causalnet ")


def test_gallery_listing(capsys):
    code, out, _ = run(capsys, "gallery")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == gallery.names()


def test_subprocess_error_exit_code():
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "causalnet", "dsep", "gallery:asia", "tub", "nope"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == ["causalnet: error: unknown node 'nope'"]


# -- tour ---------------------------------------------------------------------------


def test_tour_without_renderer_writes_dot_and_report(tmp_path, capsys):
    out_dir = tmp_path / "tour"
    code, out, err = run(capsys, "tour", "--out", str(out_dir), "--renderer", "none")
    assert code == 0 and err == ""
    report = (out_dir / "report.md").read_text()
    for name in ("sprinkler", "m-bias", "frontdoor", "asia"):
        assert (out_dir / f"{name}.dot").read_text().startswith("digraph {")
        assert f"## Graph: {name}" in report
        assert f"[{name}.dot]({name}.dot)" in report
    assert not list(out_dir.glob("*.svg"))
    assert "apt-get install graphviz" in report
    # answers printed and reported
    for line in ("tub ⊥ smoke: yes, d-separated", "front-door adjustment sets: {Tar}",
                 "backdoor adjustment sets: {Rain}", "xray ⊥ tub | either"):
        assert line in report and line in out
    assert out.rstrip().endswith(f"wrote {out_dir / 'report.md'}")
    check_legends_explain_the_pictures(out_dir)


def check_legends_explain_the_pictures(out_dir):
    """Every fill colour and every ``peripheries`` / dashed mark drawn in a diagram with a legend is in its legend."""
    node = re.compile(r'^\s*("?[^"\[]+"?|"[^"]*") \[(.*)\]$')
    checked = 0
    for path in out_dir.glob("*.dot"):
        text = path.read_text()
        if "cluster_legend" not in text:
            continue
        drawn, legend = set(), set()
        for line in text.splitlines():
            m = node.match(line)
            if not m or " -> " in line:
                continue
            marks = set(re.findall(r'fillcolor="(#\w+)"', m.group(2)))
            marks |= {"double"} if "peripheries=2" in m.group(2) else set()
            marks |= {"dashed"} if "dashed" in m.group(2) else set()
            (legend if m.group(1).startswith("__legend") else drawn).update(marks)
        assert drawn <= legend, f"{path.name}: {sorted(drawn - legend)} drawn but not in the legend"
        checked += 1
    assert checked >= 5


def test_tour_falls_back_when_renderer_missing(tmp_path, monkeypatch):
    from causalnet.io import dot  # renderers are also looked up beside sys.executable: hide those too

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(dot, "_script_dirs", lambda: [tmp_path])
    report = run_tour(tmp_path / "t").read_text()
    assert "no SVG renderer found" in report
    assert not list((tmp_path / "t").glob("*.svg"))


def test_tour_notes_a_failing_renderer(tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'boom' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    report = run_tour(tmp_path / "t").read_text()
    assert "## Notes" in report and "boom" in report
    assert "[asia.dot](asia.dot)" in report


@pytest.mark.skipif(not HAS_RENDERER, reason="no renderer on PATH")
def test_tour_with_renderer_writes_svgs(tmp_path):
    report = run_tour(tmp_path).read_text()
    for stem in ("sprinkler", "sprinkler-do", "m-bias", "frontdoor", "asia"):
        assert (tmp_path / f"{stem}.svg").read_text().lstrip().startswith("<?xml")
        assert f"]({stem}.svg)" in report
    assert "## Notes" not in report


def test_tour_sections_are_extensible(tmp_path, monkeypatch):
    def extra(ctx):
        link = ctx.diagram(gallery.graph("sprinkler"), "extra", "an extra diagram")
        (ctx.out / "extra.txt").write_text("hi")
        return f"an extra section\n\n{link}"

    monkeypatch.setattr("causalnet.cli.tour.TOUR_SECTIONS", [*TOUR_SECTIONS, ("Extra", extra)])
    report = run_tour(tmp_path, renderer="none").read_text()
    assert "- [Extra](#extra)" in report
    assert report.index("## Graph: asia") < report.index("## Extra\n\nan extra section")
    assert (tmp_path / "extra.dot").exists() and (tmp_path / "extra.txt").exists()


# -- causalnet query ----------------------------------------------------------------


def test_query_gallery_model(capsys):
    assert main(["query", "gallery:sprinkler", "P(Wet | do(Sprinkler=on), Rain=yes)"]) == 0
    out = capsys.readouterr().out
    assert "P(Wet | do(Sprinkler=on), Rain=yes)" in out and "0.990000" in out and "variable elimination" in out


def test_query_counterfactual_and_probability(capsys):
    assert main(["query", "gallery:sprinkler", "P(Wet_{Sprinkler=off}=wet | Sprinkler=on, Wet=wet)"]) == 0
    out = capsys.readouterr().out
    import causalnet as cn

    want = cn.gallery.load("sprinkler").query("P(Wet_{Sprinkler=off}=wet | Sprinkler=on, Wet=wet)")
    assert f"{want:.6g}" in out


def test_query_gaussian_and_files(tmp_path, capsys):
    import causalnet as cn

    assert main(["query", "gallery:linear-gaussian", "P(Income | do(Education=16))"]) == 0
    assert "mean [42.]" in capsys.readouterr().out
    m = cn.gallery.load("asia")
    cn.write_bif(m, tmp_path / "asia.bif")
    cn.save_json(m, tmp_path / "asia.json")
    cn.write_xmlbif(m, tmp_path / "asia.xmlbif")
    want = m.query("lung", evidence={"xray": "yes"})["yes"]
    for f in ("asia.bif", "asia.json", "asia.xmlbif"):
        assert main(["query", str(tmp_path / f), "P(lung=yes | xray=yes)"]) == 0
        assert f"{want:.6g}" in capsys.readouterr().out


@pytest.mark.parametrize("args, fragment", [
    (["query", "gallery:sprinkler", "P(Wet | Rain=maybe)"], "no state 'maybe'"),
    (["query", "gallery:m-bias", "P(Y)"], "graph without mechanisms"),
    (["query", "nofile.bif", "P(Y)"], "no such model file"),
    (["query", "gallery:sprinkler", "P(Wet | Rain=yes"], "expected"),
])
def test_query_user_errors(args, fragment, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("causalnet: error:") and fragment in err and err.count("\n") == 1
