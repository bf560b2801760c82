"""The house keeps its shape (issue 11): one-way layers, no import circle, no private imports.

Layers, lowest first (a module may import from its own layer or lower ones)::

    0  errors, limits, runtime, progress, arguments, io.files and io.bundle (file primitives: bounded
       reads, atomic writes, JSON + npz bundles; they import nothing above layer 0)
    1  graph/, queries, distributions   structure only; the query grammar; result containers
    2  mechanisms/, values
    3  inference/, learning/, estimation/   engines behind one contract; fitting; effects from data
    4  model, models/              CausalModel and the model families
    5  io/, gallery, cli/, explorer/   files, diagrams, the command line, the explorer page
    6  testing                     the public conformance checks: they use everything

docs/architecture.md's layer table is this same map (a test parses it).

Inside the package, imports sit at the top of a module (optional heavy
dependencies excepted: they are not causalnet modules), never import another
module's ``_private`` name, and form no circle. No module is over
``MAX_MODULE_LINES`` lines and no function over ``MAX_FUNCTION_LINES`` (compiled
numba kernels excepted: one kernel is one compiled unit). Every ``tests/...``
path the docs cite exists.
"""

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

import causalnet

ROOT = Path(causalnet.__file__).parent
LAYERS = {
    "errors": 0, "limits": 0, "records": 0, "runtime": 0, "progress": 0, "arguments": 0, "io.files": 0, "io.bundle": 0,
    "graph": 1, "queries": 1, "distributions": 1,
    "mechanisms": 2, "values": 2,
    "inference": 3, "learning": 3, "estimation": 3,
    "model": 4, "models": 4,
    "io": 5, "gallery": 5, "cli": 5, "explorer": 5,
    "testing": 6,
}
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100
DOCS = ROOT.parent / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [ROOT.parent / "README.md", ROOT.parent / "benchmarks" / "README.md"]
MODULES = sorted(p for p in ROOT.rglob("*.py") if p.name != "__main__.py" and p.parent != ROOT or
                 p.name not in ("__init__.py", "__main__.py"))


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int | None:
    parts = module.split(".")[1:]
    for k in range(len(parts), 0, -1):            # the longest listed prefix decides (io.files before io)
        key = ".".join(parts[:k])
        if key in LAYERS:
            return LAYERS[key]
    return None


def _imports(path: Path):
    """(line, imported module, names, top-level?) for every causalnet import in `path`."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    package = _name(path) if path.name == "__init__.py" else _name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("causalnet"):
                names = [a.name for a in node.names]
                subs = [n for n in names if _is_module(f"{mod}.{n}")]
                if subs:                           # `from .. import limits` imports the module causalnet.limits
                    for n in subs:
                        yield node.lineno, f"{mod}.{n}", [], id(node) in top
                    names = [n for n in names if n not in subs]
                    if not names:
                        continue
                yield node.lineno, mod, names, id(node) in top
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("causalnet"):
                    yield node.lineno, a.name, [], id(node) in top


def _is_module(dotted: str) -> bool:
    path = ROOT.parent / Path(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in MODULES:
        src = _name(path)
        for _, mod, _, _ in _imports(path):
            if mod != src:
                g.add_edge(src, mod)
    return g


def test_every_layer_is_known():
    unknown = sorted({_name(p) for p in MODULES if _layer(_name(p)) is None})
    assert not unknown, f"modules outside the layer map: {unknown}"


def test_imports_run_down_the_layers():
    bad = []
    for path in MODULES:
        src = _name(path)
        for line, mod, _, _ in _imports(path):
            if mod == "causalnet":
                bad.append(f"{src}:{line} imports the package itself")
            elif _layer(mod) is not None and _layer(mod) > _layer(src):
                bad.append(f"{src}:{line} (layer {_layer(src)}) imports {mod} (layer {_layer(mod)})")
    assert not bad, "\n".join(bad)


def test_no_import_inside_a_function_and_no_private_names():
    bad = []
    for path in MODULES:
        lines = path.read_text().splitlines()
        for line, mod, names, top in _imports(path):
            # a module that exists to wrap an optional heavy dependency (scikit-learn, torch)
            # may be loaded on first use; the line says so
            if not top and "optional heavy dependency" not in lines[line - 1]:
                bad.append(f"{_name(path)}:{line}: import of {mod} inside a function")
            bad += [f"{_name(path)}:{line}: imports private {mod}.{n}" for n in names
                    if n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


def test_no_import_circle():
    g = _graph()
    g.remove_nodes_from([n for n in list(g) if n.count(".") == 1 and (ROOT / n.split(".")[1] / "__init__.py").exists()
                         and n not in {_name(p) for p in MODULES}])
    cycles = list(nx.simple_cycles(g, length_bound=6))
    # a package's __init__ re-exporting its own modules is not a circle of ideas
    cycles = [c for c in cycles if not any(a.startswith(b + ".") or b.startswith(a + ".") for a in c for b in c)]
    assert not cycles, f"import circles: {cycles[:5]}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _name(p))
def test_every_module_documents_itself_and_lists_its_names(path):
    tree = ast.parse(path.read_text())
    if path.name == "__init__.py" and not tree.body:
        return
    assert ast.get_docstring(tree), f"{_name(path)} has no module docstring"
    if path.name != "__init__.py":
        assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
                   for n in tree.body), f"{_name(path)} has no __all__"


def _page_layers() -> dict[str, int]:
    """The layer map drawn in docs/architecture.md: module or package -> layer, from the table's first two columns."""
    text = (DOCS / "architecture.md").read_text()
    section = text.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]     # past the header and its rule
    found = {}
    for row in rows:
        layer, where = (cell.strip() for cell in row.strip("|").split("|")[:2])
        for token in re.findall(r"`([^`]+)`", where):
            name = token.removesuffix("/").removesuffix(".py").replace("/", ".")
            assert name not in found, f"docs/architecture.md lists {token} twice"
            found[name] = int(layer)
    return found


def test_the_architecture_page_draws_the_enforced_map():
    page = _page_layers()
    missing = {k: v for k, v in LAYERS.items() if k not in page}
    extra = {k: v for k, v in page.items() if k not in LAYERS}
    moved = {k: (page[k], v) for k, v in LAYERS.items() if k in page and page[k] != v}
    assert not (missing or extra or moved), (
        f"docs/architecture.md's layer table differs from LAYERS: missing {missing}, not enforced {extra}, "
        f"(page, enforced) layers differ for {moved}")


def _is_compiled(fn: ast.FunctionDef) -> bool:
    """A numba kernel: decorated with something named ...jit... (``numba.njit``, ``_njit``, ``jit(...)``)."""
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def test_no_module_is_over_the_line_limit():
    long = {_name(p): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by question): {long}"


def test_no_function_is_over_the_line_limit():
    long = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_compiled(node):
                if (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    long[f"{_name(path)}.{node.name}:{node.lineno}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_limits_can_fail():
    """The two size rules above see a long module and a long function (and spare a kernel)."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"def long():\n{body}\n\n@numba.njit\ndef kernel():\n{body}\n")
    long, kernel = tree.body
    assert long.end_lineno - long.lineno + 1 > MAX_FUNCTION_LINES and not _is_compiled(long)
    assert _is_compiled(kernel)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name if p.parent == DOCS else str(p.relative_to(ROOT.parent)))
def test_every_test_path_a_page_cites_exists(page):
    cited = {m.rstrip(".,;:") for m in re.findall(r"(?<![\w/])tests/[\w./-]*", page.read_text())}
    missing = sorted(c for c in cited if not (ROOT.parent / c).exists())
    assert not missing, f"{page.name} cites test paths that do not exist: {missing}"


def test_the_extras_list_each_package_once():
    tomllib = pytest.importorskip("tomllib")         # Python >= 3.11
    extras = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    seen = {}
    for extra, reqs in extras.items():
        for req in reqs:
            name = re.match(r"[A-Za-z0-9_.-]+", req).group().lower().replace("_", "-")
            if name != "causalnet":                      # an extra made of other extras names them, not their packages
                seen.setdefault(name, []).append(extra)
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, f"packages listed in several extras (list each once; compose extras instead): {twice}"


def _classes_defined_twice(paths, name=_name) -> dict:
    """Public (no leading ``_``) top-level class name -> the modules defining it, where there are several."""
    where: dict = {}
    for path in sorted(paths):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(name(path))
    return {cls: mods for cls, mods in where.items() if len(mods) > 1}


def test_no_public_class_name_is_defined_in_two_modules():
    # one name, one idea: a reader never meets two different `Program`s (a private `_` class may repeat)
    twice = _classes_defined_twice(ROOT.rglob("*.py"))
    assert not twice, f"public class names defined in more than one module: {twice}"


def test_the_duplicate_class_check_finds_a_duplicate(tmp_path):
    # `Same` in two modules is found; a private class and a class defined once are not
    for i in range(2):
        (tmp_path / f"m{i}.py").write_text(f'"""m."""\n\n\nclass Same:\n    pass\n\n\nclass _Private:\n    pass\n\n\n'
                                           f'class Only{i}:\n    pass\n')
    assert _classes_defined_twice(tmp_path.glob("*.py"), name=lambda p: p.stem) == {"Same": ["m0", "m1"]}
