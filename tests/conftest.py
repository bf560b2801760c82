"""Shared fixtures: seeds, canonical models, and the robustness harness."""

import collections
import os
import pathlib
import tracemalloc

import numpy as np
import pytest

# Plans' fused numba kernels (causalnet.mechanisms.tensor.fused) start, under the default "auto", after a
# second of plan runs in a process: mid-suite, at a point that depends on test order. The suite runs numpy's
# ops unless a test asks for the kernels (tests/mechanisms/test_tensor_fused.py and the plan tests do).
os.environ.setdefault("CAUSALNET_TENSOR_BACKEND", "numpy")


@pytest.fixture
def seed() -> int:
    return 20261121


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- canonical models, each defined once ------------------------------------------


def make_sprinkler():
    """The README's sprinkler model: Rain -> Sprinkler -> Wet <- Rain."""
    import causalnet as cn

    return cn.CausalModel({
        "Rain": cn.Categorical([0.8, 0.2], states=["no", "yes"]),
        "Sprinkler": cn.CPT(["Rain"], [[0.6, 0.4], [0.99, 0.01]], states=["off", "on"]),
        "Wet": cn.CPT(["Rain", "Sprinkler"],
                      [[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]], states=["dry", "wet"]),
    })


def make_linear_gaussian():
    """A linear-Gaussian SCM with a confounder: Z -> X -> Y, Z -> Y."""
    import causalnet as cn

    return cn.CausalModel({
        "Z": cn.LinearGaussian([], [], bias=0.5, sigma=1.0),
        "X": cn.LinearGaussian(["Z"], [0.8], bias=0.0, sigma=0.7),
        "Y": cn.LinearGaussian(["X", "Z"], [1.5, -0.7], bias=1.0, sigma=0.5),
    })


@pytest.fixture
def sprinkler():
    return make_sprinkler()


@pytest.fixture
def asia():
    import causalnet as cn

    return cn.gallery.load("asia")


@pytest.fixture
def linear_gaussian():
    return make_linear_gaussian()


@pytest.fixture
def small_hmm():
    """A 2-state, 3-symbol categorical HMM with given parameters."""
    import causalnet as cn

    return cn.HMM(2, "categorical", n_symbols=3, startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]],
                  emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])


# -- robustness harness -------------------------------------------------------------
#
# Every bad-input / extreme-input property test calls the library through
# ``guarded`` so that the invariants of issue 10 are checked in one place:
# a valid answer or a CausalNetError; no NaN (and no inf unless allowed) in the
# answer; the arguments (and the model) unchanged after a failure; optionally (issue 31)
# files left whole after a failed write and the peak allocation bounded. The counts per
# outcome class are written to $CAUSALNET_ROBUSTNESS_REPORT when it is set.

ROBUSTNESS_COUNTS: collections.Counter = collections.Counter()


def _snapshot(obj, depth=0):
    """A comparable deep copy of `obj` (arrays, containers, plain objects' __dict__)."""
    if depth > 6:
        return None
    if isinstance(obj, np.ndarray):
        return ("nd", obj.dtype.str, obj.shape, obj.tobytes() if obj.dtype != object else repr(obj.tolist()))
    if isinstance(obj, dict) or type(obj).__name__ == "mappingproxy":
        return ("dict", tuple((repr(k), _snapshot(v, depth + 1)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return (type(obj).__name__, tuple(_snapshot(v, depth + 1) for v in items))
    if isinstance(obj, (str, bytes, int, float, complex, bool, type(None))):
        return ("v", repr(obj))
    if callable(obj) and not hasattr(obj, "__dict__"):
        return ("callable", id(obj))
    d = getattr(obj, "__dict__", None)
    if d is not None:
        # caches may legitimately fill in; only public and declared state is compared
        return (type(obj).__name__, tuple((k, _snapshot(v, depth + 1)) for k, v in sorted(d.items())
                                          if not k.startswith("_cache") and "cache" not in k))
    return ("obj", repr(obj))


def _numbers(obj, depth=0):
    """Yield the float arrays inside a result object."""
    if depth > 4:
        return
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc":
            yield obj
        return
    if isinstance(obj, (float, np.floating)):
        yield np.asarray(obj)
        return
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v, depth + 1)
        return
    if isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _numbers(v, depth + 1)
        return
    for attr in ("probs", "mean", "cov", "loc", "scale", "values", "weights", "std_error"):
        v = getattr(obj, attr, None)
        if v is not None and not callable(v):
            yield from _numbers(np.asarray(v) if isinstance(v, (float, int)) else v, depth + 1)


def _files_state(paths):
    """Each path's bytes (None when absent) and the listing of each path's folder (stray temporaries show)."""
    state = {}
    for p in paths:
        p = pathlib.Path(p)
        state[str(p)] = p.read_bytes() if p.is_file() else None
        folder = p.parent
        state[f"{folder}/*"] = sorted(x.name for x in folder.iterdir()) if folder.is_dir() else None
    return state


def guarded(fn, *args, allow_neginf=False, files=(), peak_bytes=None, **kwargs):
    """Call ``fn(*args, **kwargs)`` on possibly bad input and check issue 10's invariants.

    Returns the result, or the CausalNetError raised. Fails the test on any other
    exception, on NaN (or inf) in the result, or if a failed call changed an argument.

    `fn` may be a class: its constructor is checked the same way (the result objects'
    constructors refuse what no engine may return). ``files=`` names files a failed call
    must leave as they were (bytes, or absence) with no new file beside them (a writer's
    temporary). ``peak_bytes=`` fails the call if it allocated more than that at once
    (tracemalloc, which numpy reports to): "nothing allocated past ``cn.limits``".
    """
    from causalnet.errors import CausalNetError

    name = getattr(fn, "__qualname__", fn)
    target = getattr(fn, "__self__", None)
    before = _snapshot((args, kwargs, target))
    disk = _files_state(files)
    tracing = tracemalloc.is_tracing()
    if peak_bytes is not None:
        tracemalloc.start()
        tracemalloc.reset_peak()
    try:
        out = fn(*args, **kwargs)
    except CausalNetError as e:
        ROBUSTNESS_COUNTS["typed error"] += 1
        after = _snapshot((args, kwargs, target))
        if after != before:
            ROBUSTNESS_COUNTS["input mutated"] += 1
            raise AssertionError(f"{name} failed with {e!r} and changed its input") from e
        if _files_state(files) != disk:
            ROBUSTNESS_COUNTS["file changed"] += 1
            raise AssertionError(f"{name} failed with {e!r} and changed or left files beside {list(files)}") from e
        return e
    except Exception as e:  # noqa: BLE001 - the point is to catch the untyped ones
        ROBUSTNESS_COUNTS["untyped error"] += 1
        raise AssertionError(f"{name} raised untyped {type(e).__name__}: {e}") from e
    finally:
        if peak_bytes is not None:
            peak = tracemalloc.get_traced_memory()[1]
            if not tracing:
                tracemalloc.stop()
            if peak > peak_bytes:
                ROBUSTNESS_COUNTS["over the memory bound"] += 1
                raise AssertionError(f"{name} allocated {peak} bytes at its peak, over {peak_bytes}")
    for arr in _numbers(out):
        bad = np.isnan(arr) | (np.isinf(arr) & ~(allow_neginf & (np.real(arr) < 0)))
        if np.any(bad):
            ROBUSTNESS_COUNTS["nan/inf result"] += 1
            raise AssertionError(f"{getattr(fn, '__qualname__', fn)} returned NaN/inf: {arr}")
    ROBUSTNESS_COUNTS["valid answer"] += 1
    return out


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("CAUSALNET_ROBUSTNESS_REPORT")
    if path and ROBUSTNESS_COUNTS:
        with open(path, "w") as fh:
            for k, v in sorted(ROBUSTNESS_COUNTS.items()):
                fh.write(f"{k}\t{v}\n")


@pytest.fixture(scope="module")
def client():
    """A one-worker, one-thread in-process Dask cluster (tests that use it skip without dask.distributed)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c
