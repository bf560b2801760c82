"""The command line for scripts and shells: --help lists every command, --json, completion, --no-progress."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from causalnet import gallery
from causalnet.cli import main, tour
from causalnet.cli.app import COMMANDS, build_parser
from causalnet.cli.completion import completion_script, completion_spec


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_command_with_an_example(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    declared = completion_spec(build_parser())["commands"]
    assert declared == [name for name, _ in COMMANDS]
    for name, example in COMMANDS:
        assert f"  {name:<10} {example}" in out
        assert example.lstrip('eval "$(').startswith("causalnet " + name)
    for name in declared:  # and every command's own --help has an example
        code, sub_help, _ = run(capsys, name, "--help")
        assert code == 0 and "examples:" in sub_help and f"causalnet {name}" in sub_help


def test_dsep_json(capsys):
    code, out, _ = run(capsys, "dsep", "gallery:asia", "tub", "smoke", "--given", "dysp", "--json")
    d = json.loads(out)
    assert code == 0 and d["d_separated"] is False and d["given"] == ["dysp"]
    g = gallery.graph("asia")
    assert g.d_separated(set(d["x"]), set(d["y"]), given=set(d["minimal_separator"]))
    d = json.loads(run(capsys, "dsep", "gallery:asia", "tub", "smoke", "--json")[1])
    assert d == {"x": ["tub"], "y": ["smoke"], "given": [], "d_separated": True}


def test_adjust_json_matches_the_library(capsys):
    code, out, _ = run(capsys, "adjust", "gallery:frontdoor", "Smoking", "Cancer", "--json")
    d = json.loads(out)
    g = gallery.graph("frontdoor")
    assert code == 0 and d["truncated"] == []
    assert sorted(map(sorted, d["frontdoor"])) == sorted(sorted(s) for s in g.frontdoor_adjustment_sets("Smoking",
                                                                                                       "Cancer"))
    assert d["backdoor"] == [] and d["minimal"] == []


def test_gallery_json(capsys):
    code, out, _ = run(capsys, "gallery", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["name"] for r in rows] == gallery.names()
    assert all(r["kind"] == gallery.kind(r["name"]) for r in rows)


def test_completion_script_names_every_command_option_and_choice(capsys):
    code, out, _ = run(capsys, "completion", "bash")
    assert code == 0 and out == completion_script("bash", build_parser())
    spec = completion_spec(build_parser())
    for name in spec["commands"]:
        assert name in out
        for opt in spec["options"][name]:
            assert opt in out
    assert "auto exact sampling" in out and "gallery:asia" in out
    zsh = run(capsys, "completion", "zsh")[1]
    assert zsh.startswith("# zsh") and "bashcompinit" in zsh and out in zsh
    code, _, err = run(capsys, "completion", "fish")
    assert code == 2 and "invalid choice" in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("words, cword, expected", [
    (["causalnet", "qu"], 1, "query"),
    (["causalnet", "query", "--me"], 2, "--method"),
    (["causalnet", "query", "--method", ""], 3, "auto exact sampling"),
    (["causalnet", "dsep", "gallery:as"], 2, "gallery:asia"),
    (["causalnet", "completion", "--he"], 2, "--help"),
])
def test_bash_completes(tmp_path, words, cword, expected):
    script = tmp_path / "c.sh"
    script.write_text(completion_script("bash", build_parser()))
    words_sh = " ".join(f"'{w}'" for w in words)
    cmd = f"source {script}; COMP_WORDS=({words_sh}); COMP_CWORD={cword}; _causalnet; echo \"${{COMPREPLY[*]}}\""
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    assert out.strip() == expected


def test_tour_no_progress_flag_is_silent_on_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tour, "TOUR_SECTIONS", [("One", lambda ctx: "body")])
    code, out, err = run(capsys, "tour", "--out", str(tmp_path / "t"), "--renderer", "none", "--no-progress")
    assert code == 0 and "## One" in out and err == ""
