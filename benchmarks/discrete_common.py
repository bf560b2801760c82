"""Shared helpers of the discrete-inference benchmarks: networks, peers, timing, memory.

A network is read once from its standard BIF file (``causalnet/data`` or pgmpy's
copy) by causalnet (``causalnet.io.bif.read_bif``) and by pyAgrum
(``gum.loadBN``), so both engines see the same numbers. Evidence is state
indices drawn from forward samples (``P(e) > 0``).

Timing: :func:`median_time` runs a callable several times with garbage
collection off and returns the median wall time. Memory: :func:`in_subprocess`
runs one measurement in a fresh Python process and returns its result and the
peak RSS of that process (``resource.getrusage``), so each figure's memory is
its own.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["bif_path", "plain_bif", "load_causalnet", "load_pyagrum", "forward_sample", "median_time",
           "in_subprocess", "peak_rss_mib", "limit_blas"]

_DATA = Path(__file__).resolve().parents[1] / "causalnet" / "data"


def bif_path(name: str) -> Path:
    """A gzipped BIF file of network `name`: causalnet's copy, else pgmpy's."""
    p = _DATA / f"{name}.bif.gz"
    if p.exists():
        return p
    import pgmpy

    p = Path(pgmpy.__file__).parent / "utils" / "example_models" / f"{name}.bif.gz"
    if not p.exists():
        raise FileNotFoundError(f"no BIF file for network {name!r}")
    return p


def load_causalnet(name: str):
    """``(DiscreteBN, node names, cards)`` of network `name`."""
    from causalnet.inference.discrete import DiscreteBN, model_tables
    from causalnet.io.bif import read_bif

    model = read_bif(bif_path(name))
    cpts, cards, _ = model_tables(model)
    return DiscreteBN(model.dag, cpts, cards), list(model.dag.nodes), cards


def plain_bif(name: str) -> Path:
    """The BIF file of network `name`, uncompressed into the temporary directory (both libraries read it)."""
    tmp = Path(tempfile.gettempdir()) / f"causalnet-bench-{name}.bif"
    if not tmp.exists():
        part = tmp.with_suffix(f".{os.getpid()}.part")
        with gzip.open(bif_path(name), "rb") as src, open(part, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(part, tmp)
    return tmp


def load_pyagrum(name: str):
    """pyAgrum's ``BayesNet`` of network `name` (from the same BIF file)."""
    import pyagrum as gum

    return gum.loadBN(str(plain_bif(name)))


def forward_sample(bn, n: int, rng) -> dict:
    """`n` forward samples of every node of the DiscreteBN `bn` (state indices, (n,) each)."""
    cpts = bn.cpts
    dag = bn.dag
    out: dict = {}
    for v in dag.topological_order():
        t = cpts[v][tuple(out[p] for p in dag.parents(v))]          # (n, K) or (K,)
        u = rng.random((n, 1))
        out[v] = np.minimum((u > np.cumsum(t, axis=-1)).sum(-1), t.shape[-1] - 1)
    return out


def median_time(fn, repeats: int = 5, setup=None) -> tuple[float, object]:
    """Median wall time (s) of `repeats` calls of `fn` (after `setup`, untimed), and the last result."""
    times, out = [], None
    gc.disable()
    try:
        for _ in range(repeats):
            if setup is not None:
                setup()
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return statistics.median(times), out


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_subprocess(module: str, func: str, *args) -> dict:
    """Run ``module.func(*args)`` (returning a JSON-able dict) in a fresh process; adds ``rss_mib``."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import {module} as m; from discrete_common import peak_rss_mib, limit_blas; limit_blas(); "
            f"r = m.{func}(*json.loads(sys.argv[1])); r['rss_mib'] = peak_rss_mib(); print(json.dumps(r))")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(list(args))], capture_output=True, text=True,
                         env=env, cwd=str(Path(__file__).resolve().parents[1]))
    if out.returncode != 0:
        raise RuntimeError(f"{module}.{func}{args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def limit_blas(threads: int = 1) -> None:
    """Hold BLAS to `threads` threads (both libraries), when threadpoolctl is installed."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=threads, user_api="blas")
