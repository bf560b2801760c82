"""The command line on bad and hostile input (issue 10) and its scripting surface (issue 12)."""

from __future__ import annotations

import gzip
import json
import os

import pytest

import causalnet as cn
from causalnet.cli import main
from causalnet.cli.app import COMMANDS


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(capsys, *argv, match: str = ""):
    code, out, err = run(capsys, *argv)
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("causalnet: error: "), err
    assert match in lines[0], lines[0]
    return lines[0]


# -- hostile files: one line, exit 2 ------------------------------------------------------------------


def test_binary_files(tmp_path, capsys):
    for name in ("x.bif", "x.json", "x.xmlbif", "x.txt"):
        (tmp_path / name).write_bytes(bytes(range(256)) * 16)
    for name in ("x.bif", "x.json", "x.xmlbif"):
        assert_one_line_error(capsys, "query", str(tmp_path / name), "P(A)", match="binary")
    assert_one_line_error(capsys, "dsep", str(tmp_path / "x.txt"), "A", "B", match="binary")


def test_deep_json(tmp_path, capsys):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line_error(capsys, "query", str(tmp_path / "deep.json"), "P(A)", match="max_nesting")
    assert_one_line_error(capsys, "dsep", str(tmp_path / "deep.json"), "A", "B", match="max_nesting")


def test_gzip_bomb(tmp_path, capsys):
    (tmp_path / "bomb.bif.gz").write_bytes(gzip.compress(b" " * (4 << 20)))
    with cn.limits.override(max_file_bytes=1 << 20):
        assert_one_line_error(capsys, "query", str(tmp_path / "bomb.bif.gz"), "P(A)", match="max_file_bytes")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero(capsys):
    assert_one_line_error(capsys, "dsep", "/dev/zero", "A", "B", match="binary")


def test_missing_and_malformed_files(tmp_path, capsys):
    assert_one_line_error(capsys, "query", str(tmp_path / "nope.bif"), "P(A)", match="no such model file")
    (tmp_path / "bad.bif").write_text("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.5; }")
    assert_one_line_error(capsys, "query", str(tmp_path / "bad.bif"), "P(A)", match="line 2")
    (tmp_path / "bad.json").write_text('{"format": "causalnet-model", "version": 1, "nodes": [3]}')
    assert_one_line_error(capsys, "query", str(tmp_path / "bad.json"), "P(A)", match="nodes[0]")
    (tmp_path / "m.txt").write_text("x")
    assert_one_line_error(capsys, "query", str(tmp_path / "m.txt"), "P(A)", match="unknown model file type")


def test_unknown_node_query_and_gallery_name(capsys):
    assert_one_line_error(capsys, "query", "gallery:sprinkler", "P(Wett)", match="Wett")
    assert_one_line_error(capsys, "query", "gallery:sprinkler", "P(", match="")
    assert_one_line_error(capsys, "query", "gallery:alarn", "P(A)", match="did you mean 'alarm'")
    assert_one_line_error(capsys, "dsep", "gallery:asia", "tub", "smoek", match="did you mean 'smoke'")


def test_tour_into_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert_one_line_error(capsys, "tour", "--out", str(tmp_path / "f"), "--renderer", "none", match="not a folder")


# -- gallery networks ship with causalnet ------------------------------------------------------------


def test_alarm_without_pgmpy(monkeypatch):
    import importlib.util

    from causalnet.io import bnlearn

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)      # no pgmpy to be found
    assert bnlearn.pgmpy_path("alarm") is None
    assert bnlearn.path("alarm").parent == bnlearn.DATA_DIR
    m = cn.gallery.load("alarm")
    assert len(m.nodes) == 37


def test_packaged_networks_all_read():
    from causalnet.io import bnlearn

    names = bnlearn.packaged_names()
    assert {"alarm", "asia", "insurance", "child", "sachs"} <= set(names)
    for name in names:
        if name == "munin1":
            continue                                   # large tables; parsed by the slow suite in test_io_bif
        m = cn.read_bif(bnlearn.path(name))
        assert m.nodes


# -- scripting: --json and --help ---------------------------------------------------------------------


def test_query_json_discrete(capsys):
    code, out, err = run(capsys, "query", "gallery:sprinkler", "P(Wet | Rain=yes)", "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    want = cn.gallery.load("sprinkler").query("Wet", evidence={"Rain": "yes"})
    assert d["type"] == "discrete" and d["variables"] == ["Wet"] and d["states"] == [["dry", "wet"]]
    assert d["probs"] == want.probs.tolist() and d["batched"] is False and "elimination" in d["method"]


def test_query_json_probability_gaussian_and_joint(capsys, tmp_path):
    q = "P(Wet_{Sprinkler=off}=wet | Sprinkler=on, Wet=wet)"
    d = json.loads(run(capsys, "query", "gallery:sprinkler", q, "--json")[1])
    assert d == {"query": q, "type": "probability", "value": cn.gallery.load("sprinkler").query(q)}
    d = json.loads(run(capsys, "query", "gallery:linear-gaussian", "P(Income | do(Education=16))", "--json")[1])
    assert d["type"] == "gaussian" and d["mean"] == [42.0] and d["cov"] == [[25.0]]
    d = json.loads(run(capsys, "query", "gallery:sprinkler", "P(Wet, Rain)", "--json")[1])
    assert d["variables"] == ["Wet", "Rain"] and d["states"] == [["dry", "wet"], ["no", "yes"]]
    assert len(d["probs"]) == 2 and len(d["probs"][0]) == 2


def test_query_accepts_every_model_form(tmp_path, capsys):
    m = cn.gallery.load("asia")
    cn.write_bif(m, tmp_path / "asia.bif.gz")
    cn.save_json(m, tmp_path / "asia.json")
    answers = {json.loads(run(capsys, "query", spec, "P(lung | xray=yes)", "--json")[1])["probs"][0]
               for spec in ("gallery:asia", str(tmp_path / "asia.bif.gz"), str(tmp_path / "asia.json"))}
    assert len(answers) == 1


def test_help_lists_every_command_with_an_example(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name, example in COMMANDS:
        assert f"  {name} " in out and example in out
    for name, _ in COMMANDS:
        code, out, _ = run(capsys, name, "--help")
        assert code == 0 and "examples:" in out and f"causalnet {name}" in out


def test_an_internal_error_is_one_line_with_status_1(capsys, monkeypatch):
    import causalnet.cli.graphs as graphs

    def boom(*args, **kwargs):
        raise TypeError("bug")

    monkeypatch.setattr(graphs, "dsep_line", boom)
    code, out, err = run(capsys, "dsep", "A -> B", "A", "B")
    assert code == 1 and err.count("\n") == 1 and "internal error: TypeError: bug" in err
    monkeypatch.setenv("CAUSALNET_TRACEBACK", "1")
    with pytest.raises(TypeError):
        main(["dsep", "A -> B", "A", "B"])


def test_tour_report_is_written_atomically(tmp_path, monkeypatch):
    from causalnet.cli import run_tour

    def section(ctx):
        return "ok"

    def failing(ctx):
        raise cn.ModelError("section failed")

    report = run_tour(tmp_path, renderer="none", sections=[("One", section)])
    before = report.read_text()
    with pytest.raises(cn.ModelError):
        run_tour(tmp_path, renderer="none", sections=[("One", section), ("Two", failing)])
    assert report.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
