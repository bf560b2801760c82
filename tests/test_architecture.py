"""The house keeps its shape (issue 11): one-way layers, no import circle, no private imports.

Layers, lowest first (a module may import from its own layer or lower ones)::

    0  errors, limits, progress, io.files and io.bundle (file primitives: bounded reads,
       atomic writes, JSON + npz bundles; they import nothing above layer 0)
    1  graph/, queries, distributions   structure only; the query grammar; result containers
    2  mechanisms/, values
    3  inference/, learning/       engines behind one contract; fitting (a fit builds the model class it is given)
    4  model, models/              CausalModel and the model families
    5  io/, gallery, cli/, explorer/   files, diagrams, the command line, the explorer page

Inside the package, imports sit at the top of a module (optional heavy
dependencies excepted: they are not causalnet modules), never import another
module's ``_private`` name, and form no circle.
"""

import ast
from pathlib import Path

import networkx as nx
import pytest

import causalnet

ROOT = Path(causalnet.__file__).parent
LAYERS = {
    "errors": 0, "limits": 0, "progress": 0, "io.files": 0, "io.bundle": 0,
    "graph": 1, "queries": 1, "distributions": 1,
    "mechanisms": 2, "values": 2,
    "inference": 3, "learning": 3,
    "model": 4, "models": 4,
    "io": 5, "gallery": 5, "cli": 5, "explorer": 5,
}
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
