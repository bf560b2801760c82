"""causalnet.runtime: a light import, the per-user kernel cache, one backend switch per kernel family.

The import and cache tests run in a fresh interpreter (``subprocess``), with the
environment pointing the cache at a temporary directory, so that they see what a
user's first process sees and leave this process's state alone. Answers of every
backend are compared with the numpy/Python reference (networkx for d-separation,
the numpy sweeps for chains, numpy's LayerNorm and softmax for the tensor
kernels).
"""

import json
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import runtime
from causalnet.errors import CausalNetWarning, ModelError

ROOT = Path(cn.__file__).resolve().parent.parent

#: what ``import causalnet`` must leave unloaded (loaded on first use instead)
HEAVY = ("numba", "llvmlite", "scipy", "scipy.stats", "scipy.special", "scipy.sparse", "pandas", "tqdm",
         "torch", "sklearn", "networkx", "graphviz", "causalnet.gallery", "causalnet.model", "causalnet.inference",
         "causalnet.graph.dag", "causalnet.learning", "causalnet.models")


def _child(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=ROOT,
                          timeout=600)


def test_import_leaves_heavy_modules_unloaded():
    r = _child(f"import sys, json, causalnet; print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []


#: what reading a BIF file and answering discrete queries (the fresh-process "alarm" row) must leave unloaded
NOT_FOR_BIF_QUERIES = ("causalnet.learning.fitting", "causalnet.learning.em", "causalnet.learning.partitions",
                       "causalnet.graph.identification", "causalnet.graph.adjustment", "causalnet.graph.equivalence",
                       "causalnet.graph.drawing", "causalnet.inference.markov", "causalnet.inference.effects",
                       "causalnet.inference.gibbs", "causalnet.inference.loopy", "causalnet.inference.counterfactual",
                       "causalnet.inference.cauchy", "causalnet.inference.conditional_gaussian",
                       "causalnet.inference.discrete.junction_tree", "causalnet.inference.discrete.prior_tree",
                       "causalnet.learning.data", "causalnet.io.bnlearn", "causalnet.io.xmlbif",
                       "causalnet.graph.parse", "causalnet.graph.plain_text", "causalnet.graph.separation",
                       "causalnet.graph.reach", "causalnet.graph.kernels", "causalnet.distributions.cauchy",
                       "causalnet.distributions.mixed", "causalnet.inference.forward", "causalnet.inference.frames",
                       "causalnet.learning.strings", "causalnet.inference.discrete.every_node",
                       "causalnet.mechanisms.compact", "causalnet.io.bif_parser", "copy",
                       "subprocess", "difflib", "scipy", "networkx", "pandas", "numba", "tqdm",
                       "json", "gzip", "dataclasses", "string")


def test_reading_a_bif_file_and_querying_it_leaves_learning_and_helpers_unloaded():
    bif = ROOT / "causalnet" / "data" / "asia.bif.gz"
    r = _child(f"import sys, causalnet as cn; m = cn.read_bif({str(bif)!r}); "
               f"m.query('lung', evidence={{'smoke': 'yes', 'dysp': 'yes'}}); "
               f"out = [m for m in {list(NOT_FOR_BIF_QUERIES)!r} if m in sys.modules]; "
               f"import json; print(json.dumps(out))")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []


#: every causalnet module the fresh-process "alarm" workload (read alarm.bif, queries with 3 evidence nodes) may
#: load; a module joining that path is a cost in every script's first read and must be added here on purpose
BIF_QUERY_PATH = {
    "causalnet", "causalnet.arguments", "causalnet.errors", "causalnet.limits", "causalnet.records", "causalnet.runtime",
    "causalnet.graph", "causalnet.graph.core", "causalnet.graph.dag", "causalnet.queries",
    "causalnet.distributions", "causalnet.distributions.checks", "causalnet.distributions.results",
    "causalnet.mechanisms", "causalnet.mechanisms.base", "causalnet.mechanisms.intervened",
    "causalnet.mechanisms.tabular", "causalnet.values", "causalnet.learning", "causalnet.model",
    "causalnet.inference", "causalnet.inference.engine", "causalnet.inference.request", "causalnet.inference.shapes",
    "causalnet.inference.dispatch", "causalnet.inference.discrete", "causalnet.inference.discrete.batches",
    "causalnet.inference.discrete.direct", "causalnet.inference.discrete.elimination",
    "causalnet.inference.discrete.engine", "causalnet.inference.discrete.factors",
    "causalnet.inference.discrete.network", "causalnet.inference.discrete.ordering",
    "causalnet.inference.discrete.policy", "causalnet.inference.discrete.programs",
    "causalnet.io", "causalnet.io.bif", "causalnet.io.bif_scan", "causalnet.io.files", "causalnet.io.tables",
}


def test_reading_alarm_and_querying_it_loads_only_the_modules_of_that_path():
    bif = ROOT / "causalnet" / "data" / "alarm.bif.gz"
    code = f"""
import sys, json, causalnet as cn
m = cn.read_bif({str(bif)!r})
answers = [m.query(t, evidence=ev).probs.tolist() for t, ev in [
    ("HYPOVOLEMIA", {{"CVP": "LOW", "BP": "LOW", "HR": "HIGH"}}), ("LVFAILURE", {{"HISTORY": "TRUE", "CO": "LOW",
    "PAP": "NORMAL"}}), ("KINKEDTUBE", {{"PRESS": "HIGH", "VENTLUNG": "ZERO", "SAO2": "LOW"}})] * 5]
print(json.dumps([sorted(k for k in sys.modules if k.startswith("causalnet")), answers[0]]))
"""
    r = _child(code)
    assert r.returncode == 0, r.stderr
    loaded, first = json.loads(r.stdout)
    assert sorted(set(loaded) - BIF_QUERY_PATH) == []
    assert {"causalnet.io.bif_scan", "causalnet.inference.discrete.elimination"} <= set(loaded)   # the path ran
    assert first == pytest.approx(cn.read_bif(bif).query("HYPOVOLEMIA", evidence={"CVP": "LOW", "BP": "LOW",
                                                                                   "HR": "HIGH"}).probs.tolist())


def test_public_names_still_resolve_and_load_on_first_use():
    code = """
import sys, json, causalnet as cn
before = "causalnet.graph.dag" in sys.modules
dag = cn.DAG
out = {"before": before, "after": "causalnet.graph.dag" in sys.modules, "numba": "numba" in sys.modules,
       "names": [n for n in cn.__all__ if getattr(cn, n, None) is None]}
print(json.dumps(out))
"""
    r = _child(code)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out == {"before": False, "after": True, "numba": False, "names": []}


def test_every_public_name_is_listed_by_dir_and_unknown_names_raise():
    assert set(cn.__all__) <= set(dir(cn))
    assert cn.DAG is cn.graph.dag.DAG and cn.fit is cn.model.fit and cn.learning.fit is not cn.learning.fit_model
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        cn.no_such_name  # noqa: B018


def _lazy_packages():
    """Every package whose ``__init__.py`` re-exports through :func:`runtime.lazy_exports`."""
    for init in sorted((ROOT / "causalnet").rglob("__init__.py")):
        if "lazy_exports(" in init.read_text(encoding="utf-8"):
            yield ".".join(init.parent.relative_to(ROOT).parts)


@pytest.mark.parametrize("package", list(_lazy_packages()))
def test_every_lazy_package_resolves_its_public_names(package):
    import importlib

    mod = importlib.import_module(package)
    assert set(mod.__all__) <= set(dir(mod))
    assert [n for n in mod.__all__ if getattr(mod, n, None) is None] == []


def test_small_dsep_and_small_chain_never_load_numba():
    code = """
import sys, numpy as np, causalnet as cn
from causalnet.inference.chain import forward_backward
g = cn.DAG([(f"v{i}", f"v{i + 1}") for i in range(50)])
assert not g.d_separated("v0", "v50") and g.d_separated("v0", "v50", given={"v25"})
post = forward_backward(np.zeros((2, 10, 3)), np.zeros((3, 3)))
print("numba" in sys.modules)
"""
    r = _child(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


_CHAIN = """
import sys, warnings, json, numpy as np
warnings.simplefilter("always")
from causalnet import runtime
from causalnet.inference.chain import compiled, forward_backward
rng = np.random.default_rng(0)
u, pw = np.log(rng.random((1, 300, 3))), np.log(rng.random((3, 3)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with runtime.backend("chain", "numba"):
        fast = forward_backward(u, pw)
with runtime.backend("chain", "numpy"):
    ref = forward_backward(u, pw)
print(json.dumps({"err": float(abs(fast.marginals - ref.marginals).max()), "logz": float(abs(fast.log_z - ref.log_z).max()),
                  "warnings": [str(w.message) for w in caught if issubclass(w.category, Warning)],
                  "compiled": bool(compiled.forward_kernel.signatures or compiled.backward_kernel.signatures)}))
"""


def test_numba_warm_turns_true_after_the_first_compiled_kernel_runs():
    code = ("from causalnet import runtime\n"
            "from causalnet.learning import string_kernel\n"
            "import numpy as np\n"
            "before = runtime.numba_warm()\n"
            "string_kernel.remap_kernel(np.zeros(2, np.uint8), np.arange(1))\n"
            "print(before, runtime.numba_warm())")
    child = _child(code)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["False", "True"]


def test_numba_warm_turns_true_once_compile_now_compiles_given_signatures():
    # compile_now with signatures compiles (or loads) at once, as the tensor family's fused kernels are made:
    # numba has set itself up then; without signatures nothing is compiled yet
    code = ("from causalnet import runtime\n"
            "import numba\n"
            "def twice(x):\n"
            "    return 2 * x\n"
            "lazy = runtime.compile_now(twice)\n"
            "after_lazy = runtime.numba_warm()\n"
            "eager = runtime.compile_now(twice, [numba.int64(numba.int64)])\n"
            "print(after_lazy, runtime.numba_warm(), eager(21))")
    child = _child(code)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["False", "True", "42"]


def test_kernel_cache_is_written_per_user_and_version_and_reused(tmp_path):
    env = {"CAUSALNET_CACHE_DIR": str(tmp_path)}
    first = _child(_CHAIN, env)
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["err"] < 1e-12 and out["logz"] < 1e-9 and out["warnings"] == []
    version_dir = tmp_path / "numba"
    (sub,) = version_dir.iterdir()
    assert sub.name.startswith(f"{cn.__version__}-numba")
    files = sorted(p.name for p in sub.rglob("*.nbi"))
    assert files, "no kernel index was written to the cache"
    assert not list((ROOT / "causalnet").rglob("*.nbi")), "a kernel cache was written inside the package"
    second = _child(_CHAIN, env)                     # loads, same answers
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["err"] < 1e-12
    assert sorted(p.name for p in sub.rglob("*.nbi")) == files


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_warns_once_and_answers(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        r = _child(_CHAIN, {"CAUSALNET_CACHE_DIR": str(ro)})
    finally:
        ro.chmod(stat.S_IRWXU)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["err"] < 1e-12
    assert len(out["warnings"]) == 1 and "cannot be written" in out["warnings"][0]


def test_unwritable_cache_path_warns_once_and_answers(tmp_path):
    # a file where the cache directory should be: unwritable for every user, root included
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = _child(_CHAIN, {"CAUSALNET_CACHE_DIR": str(blocker)})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["err"] < 1e-12 and out["logz"] < 1e-9
    assert len(out["warnings"]) == 1 and "cannot be written" in out["warnings"][0]
    assert not list((ROOT / "causalnet").rglob("*.nbi"))


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
def test_full_cache_warns_once_and_answers(tmp_path):
    # a file-size limit makes every write of a kernel to the cache fail (EFBIG), as a full disk would
    full = "import resource, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); " \
           "resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))\n"
    r = _child(full + _CHAIN, {"CAUSALNET_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["err"] < 1e-12 and out["logz"] < 1e-9
    assert len(out["warnings"]) == 1 and "could not be" in out["warnings"][0]


def test_cache_off_compiles_in_memory_without_warning(tmp_path):
    r = _child(_CHAIN, {"CAUSALNET_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["err"] < 1e-12 and out["warnings"] == []


# -- one switch per family ----------------------------------------------------------------------------


@pytest.mark.parametrize("family", runtime.FAMILIES)
def test_backend_switch_round_trips_and_rejects_bad_names(family):
    before = runtime.get_backend(family)
    with runtime.backend(family, "numpy"):
        assert runtime.get_backend(family) == "numpy"
        with runtime.backend(family, "numba"):
            assert runtime.get_backend(family) == "numba"
        assert runtime.get_backend(family) == "numpy"
    assert runtime.get_backend(family) == before
    with pytest.raises(ModelError, match="backend must be one of"):
        runtime.set_backend(family, "fortran")
    with pytest.raises(ModelError, match="unknown kernel family"):
        runtime.get_backend("quantum")


def test_family_modules_read_the_runtime_switch():
    from causalnet.graph import separation
    from causalnet.inference.chain import compiled
    from causalnet.mechanisms.tensor import fused

    with runtime.backend("chain", "numpy"):
        assert compiled.get_backend() == "numpy" and not compiled.enabled()
    with runtime.backend("tensor", "numba"):
        assert fused.get_backend() == "numba" and fused.active()
    with runtime.backend("tensor", "numpy"):
        assert not fused.active()
    prev = separation.set_backend("python")
    try:
        assert runtime.get_backend("graph") == "numpy"
    finally:
        separation.set_backend(prev)


def _random_dag(n, seed):
    rng = np.random.default_rng(seed)
    edges = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(3 * n, 2)) if a < b}
    return [(f"v{a}", f"v{b}") for a, b in sorted(edges)]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_graph_backends_agree_with_networkx(backend):
    from causalnet.graph import separation

    edges = _random_dag(60, 3)
    g, G = cn.DAG(edges), nx.DiGraph(edges)
    rng = np.random.default_rng(4)
    prev = separation.set_backend("python" if backend == "numpy" else backend)
    try:
        for _ in range(60):
            x, y, *z = rng.choice(list(g.nodes), size=5, replace=False).tolist()
            assert g.d_separated(x, y, set(z)) == nx.is_d_separator(G, {x}, {y}, set(z))
    finally:
        separation.set_backend(prev)


def test_chain_backends_agree_and_are_decided_once_per_chain():
    from causalnet.inference.chain import Chain, compiled, forward_backward

    rng = np.random.default_rng(5)
    u, pw = np.log(rng.random((3, 200, 4))), np.log(rng.random((4, 4)))
    with runtime.backend("chain", "numba"):
        fast = forward_backward(u, pw)
    with runtime.backend("chain", "numpy"):
        ref = forward_backward(u, pw)
    assert_allclose(fast.marginals, ref.marginals, rtol=0, atol=1e-12)
    assert_allclose(fast.log_z, ref.log_z, rtol=1e-12)
    ch = Chain(np.zeros((100, 1, 2)), np.zeros((2, 2)), np.array([100]), None)
    with runtime.backend("chain", "numba"):
        assert compiled.serves(ch) and ch.backend == "numba"
    with runtime.backend("chain", "numpy"):
        assert compiled.serves(ch)                     # decided once: the chain keeps its backend
    short = Chain(np.zeros((10, 1, 2)), np.zeros((2, 2)), np.array([10]), None)
    with runtime.backend("chain", "auto"):
        assert not compiled.serves(short) and short.backend == "numpy"   # a short chain never waits for numba


def test_tensor_backends_agree_with_numpy():
    from causalnet.mechanisms.tensor import erf, fused

    rng = np.random.default_rng(6)
    x0, x1 = rng.standard_normal((2, 16, 32)).astype(np.float64)
    w, b = rng.standard_normal(32), rng.standard_normal(32)
    s = x0 + x1
    ref = (s - s.mean(-1, keepdims=True)) / np.sqrt(s.var(-1, keepdims=True) + 1e-5) * w + b
    with runtime.backend("tensor", "numba"):
        got = fused.add_layer_norm(x0, x1, w, b, 1e-5)
        g_fast = erf.gelu_erf(x0)
    assert got is not None
    assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    with runtime.backend("tensor", "numpy"):
        assert not fused.active()
        g_ref = erf.gelu_erf(x0)
    assert_allclose(g_fast, g_ref, rtol=1e-14, atol=1e-15)


# -- environment convention -----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("", False), ("0", False), ("false", False), ("No", False),
                                                 ("off", False), ("1", True), ("true", True), ("yes", True)])
def test_env_flag_convention(monkeypatch, value, expected):
    monkeypatch.setenv("CAUSALNET_TEST_FLAG", value)
    assert runtime.env_flag("CAUSALNET_TEST_FLAG") is expected
    monkeypatch.setenv("CI", value)
    assert runtime.in_ci() is expected


def test_env_choice_warns_on_unknown_value(monkeypatch):
    monkeypatch.setenv("CAUSALNET_TEST_BACKEND", "Numba")
    assert runtime.env_choice("CAUSALNET_TEST_BACKEND", runtime.BACKENDS, "auto") == "numba"
    monkeypatch.setenv("CAUSALNET_TEST_BACKEND", "gpu")
    with pytest.warns(CausalNetWarning, match="not one of"):
        assert runtime.env_choice("CAUSALNET_TEST_BACKEND", runtime.BACKENDS, "auto") == "auto"


def test_backend_environment_variable_sets_the_start_up_backend():
    code = "from causalnet import runtime; print(runtime.get_backend('chain'), runtime.get_backend('graph'))"
    r = _child(code, {"CAUSALNET_CHAIN_BACKEND": "numpy", "CAUSALNET_GRAPH_BACKEND": "python"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["numpy", "numpy"]


def test_progress_bars_follow_the_one_ci_rule(monkeypatch):
    from causalnet.progress import progress_enabled

    monkeypatch.setenv("CI", "true")
    assert not progress_enabled(None) and progress_enabled(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monkeypatch.setenv("CI", "0")
        assert progress_enabled(False) is False


@pytest.mark.parametrize("spent", [0.0, 1e9], ids=["kahn", "csgraph"])
def test_both_acyclicity_tests_agree_with_networkx(monkeypatch, spent):
    # the light first-use path (Kahn in Python) and scipy's strongly connected components give one answer
    from causalnet.graph import core

    monkeypatch.setattr(core, "_kahn", {"spent": spent})
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(2, 30))
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(int(rng.integers(1, 3 * n)), 2)) if a != b}
        edges = [(f"v{a}", f"v{b}") for a, b in sorted(pairs)]
        acyclic = nx.is_directed_acyclic_graph(nx.DiGraph(edges))
        if acyclic:
            assert set(cn.DAG(edges).edges) == set(edges)
        else:
            with pytest.raises(cn.GraphError, match="cycle"):
                cn.DAG(edges)
