"""Every code example of README.md and docs/*.md runs, so the docs cannot drift from the code.

- ```python blocks with ``>>>`` prompts (and ```pycon blocks) are doctests: tests/test_docs.py runs them.
- Other ```python blocks of one page run in order, in one namespace, in a temporary folder.
- ```bash / ```console blocks: each line that calls ``causalnet`` runs the command-line
  interface in-process and must exit 0 — or the status its trailing comment ``# exit N``
  names (for examples of error messages); ``pip install`` lines are skipped (CI runs them).

A block preceded by the HTML comment ``<!-- example: skip -->`` is shown but not run
(kept for snippets that need a download or a GPU; none does today).
"""

import re
import shlex
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"(<!-- example: skip -->\s*)?```(\w*)\n(.*?)```", re.S)


def _blocks(page: Path, langs: set[str]) -> list[str]:
    out = []
    for skip, lang, body in _FENCE.findall(page.read_text()):
        if skip or lang not in langs:
            continue
        out.append(textwrap.dedent(body))
    return out


def _python_blocks(page: Path) -> list[str]:
    return [b for b in _blocks(page, {"python"}) if ">>>" not in b]


def _cli_lines(page: Path) -> list[str]:
    lines = []
    for block in _blocks(page, {"bash", "console", "sh", "shell"}):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("causalnet "):
                lines.append(line)
    return lines


PY_PAGES = [p for p in PAGES if _python_blocks(p)]
CLI_PAGES = [p for p in PAGES if _cli_lines(p)]


@pytest.mark.parametrize("page", PY_PAGES, ids=[p.name for p in PY_PAGES])
def test_python_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__example__"}
    for i, block in enumerate(_python_blocks(page)):
        try:
            exec(compile(block, f"{page.name}[block {i}]", "exec"), namespace)  # noqa: S102 - our own docs
        except Exception as e:
            pytest.fail(f"{page.name}, python block {i} raised {type(e).__name__}: {e}\n{block}")


@pytest.mark.parametrize("page", CLI_PAGES, ids=[p.name for p in CLI_PAGES])
def test_cli_examples_run(page, tmp_path, monkeypatch, capsys):
    from causalnet.cli import main

    monkeypatch.chdir(tmp_path)
    for line in _cli_lines(page):
        argv = shlex.split(line, comments=True)[1:]
        expected = re.search(r"#\s*exit (\d+)", line)
        expected = int(expected.group(1)) if expected else 0
        if argv and argv[0] == "tour":
            argv = [*argv, "--out", str(tmp_path / "tour")] if "--out" not in argv else argv
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        assert (code or 0) == expected, f"{page.name}: `{line}` exited {code}: {capsys.readouterr().err}"
