"""The docs pages' examples run (doctest format) and the notebooks execute top to bottom."""

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: notebook -> modules it needs beyond the core install (other notebooks guard their optional peers themselves)
NOTEBOOK_EXTRAS = {"09-estimation.ipynb": ("causaldata",)}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_docs_examples(page):
    if page.name == "graphs.md":
        pytest.skip("run by tests/io/test_dot.py")
    result = doctest.testfile(str(page), module_relative=False, globs={},
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(nb, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    for extra in NOTEBOOK_EXTRAS.get(nb.name, ()):      # data or peers that `pip install ".[render]"` does not bring
        pytest.importorskip(extra)
    monkeypatch.chdir(tmp_path)
    book = nbformat.read(nb, as_version=4)
    client = nbclient.NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    left = sorted(p.name for p in tmp_path.iterdir())
    assert not left, f"{nb.name} left files in its working directory (write them to a temp dir): {left}"
