"""Fresh-process figures: each workload as a new ``python -c`` child, causalnet against its peer.

Usage::

    python benchmarks/fresh_process.py                 # the four rows of issue 23, 5 rounds
    python benchmarks/fresh_process.py --rounds 3 --only import dsep
    python benchmarks/fresh_process.py --cli           # every CLI command and the tour (no peer)
    python benchmarks/fresh_process.py --code ../main  # the same rows for another checkout (a "before")

A user's script, a notebook after a restart and every ``causalnet`` command pay
the import and any compilation each time; the warm loops of the other
benchmarks do not. Here every workload runs as a fresh child process, the
causalnet child and the peer child interleaved (their order alternating by
round), ``--rounds`` rounds. For each child the benchmark records its **CPU
time** (user + system of the child, from ``resource.getrusage(RUSAGE_CHILDREN)``
deltas around it: the figure the machine's load does not inflate) and its wall
time. Each child prints its answer as JSON; the answers of both libraries are
checked to agree in every round, and the script exits with status 1 on a
disagreement before it prints any ratio.

Rows (ratio = peer CPU / causalnet CPU, median over rounds; above 1 causalnet is cheaper):

* ``import``: ``import causalnet`` vs ``import pgmpy``;
* ``dsep``: 200 d-separation queries (random X, Y, |Z| = 10) on a 1,000-node random DAG
  (mean out-degree 2.5) vs pyAgrum's ``DAG.dSeparation``; the DAG and queries are built
  by the same numpy code in both children;
* ``alarm``: read alarm.bif and answer 20 queries P(target | 3 evidence nodes) vs
  pyAgrum's ``loadBN`` and one ``LazyPropagation`` (kept across the queries, as causalnet keeps
  its model) given each query's one target (``setTargets``);
* ``hmm``: a categorical HMM, K = 4 states, 8 symbols, one sequence of 10^5 steps, 10
  Baum-Welch iterations from the same start vs hmmlearn's ``CategoricalHMM``
  (``implementation="scaling"``, ``tol=-inf``).

Round 0 is the first process after an install: it writes the bytecode
(``.pyc``) and fills the per-user kernel cache if they are missing; its
causalnet figure is shown as ``first`` and left out of the medians, which are
over the ``--rounds`` later rounds. The children run without
``PYTHONDONTWRITEBYTECODE`` (as a ``pip install``, which compiles bytecode, leaves
them), one BLAS thread, ``CI=true``. ``--cold-cache`` points
``CAUSALNET_CACHE_DIR`` at a fresh temporary directory for every child instead
(every process compiles its kernels).
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
CODE = ROOT           # the causalnet checkout the children import (--code: another one, e.g. a "before")

_DAG = """
import numpy as np
rng = np.random.default_rng(1000)
n, m = 1000, 2500
a = rng.integers(0, n, size=2 * m); b = rng.integers(0, n, size=2 * m)
keep = a != b
lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
pairs = pairs[rng.permutation(len(pairs))[:m]]
perm = rng.permutation(n)
edges = [(int(perm[i]), int(perm[j])) for i, j in pairs]
qrng = np.random.default_rng(1)
queries = [[int(v) for v in qrng.choice(n, size=12, replace=False)] for _ in range(200)]
"""

WORKLOADS = {
    "import": (
        "import causalnet; print('[]')",
        "import pgmpy; print('[]')",
    ),
    "dsep": (
        _DAG + """
import causalnet as cn
g = cn.DAG([(f"v{u}", f"v{v}") for u, v in edges], nodes=[f"v{i}" for i in range(n)])
out = [g.d_separated(f"v{q[0]}", f"v{q[1]}", {f"v{i}" for i in q[2:]}) for q in queries]
import json; print(json.dumps(out))
""",
        _DAG + """
import pyagrum as gum
d = gum.DAG()
for i in range(n):
    d.addNode()
for u, v in edges:
    d.addArc(u, v)
out = [bool(d.dSeparation(q[0], q[1], q[2:])) for q in queries]
import json; print(json.dumps(out))
""",
    ),
    "alarm": (
        """
import json, sys
import causalnet as cn
m = cn.read_bif(sys.argv[1])
out = []
for t, ev in json.loads(sys.argv[2]):
    d = m.query(t, evidence=ev)
    out.append([float(p) for p in d.probs])
print(json.dumps(out))
""",
        """
import json, sys
import pyagrum as gum
bn = gum.loadBN(sys.argv[1])
out = []
ie = gum.LazyPropagation(bn)
for t, ev in json.loads(sys.argv[2]):
    ie.eraseAllEvidence()
    ie.setTargets({t})
    ie.setEvidence(ev)
    ie.makeInference()
    out.append([float(p) for p in ie.posterior(t).toarray()])
print(json.dumps(out))
""",
    ),
    "hmm": (
        """
import json, sys
import numpy as np
X = np.load(sys.argv[1]); start, trans, emis = (np.load(p) for p in sys.argv[2:5])
from causalnet.models.hmm import HMM
m = HMM(4, "categorical", n_symbols=8, startprob=start, transmat=trans, emissionprob=emis, n_iter=10,
        tol=-np.inf).fit(X)
print(json.dumps([float(m.score(X))] + m.transmat_.ravel().tolist()))
""",
        """
import json, sys
import numpy as np
X = np.load(sys.argv[1]); start, trans, emis = (np.load(p) for p in sys.argv[2:5])
from hmmlearn import hmm
m = hmm.CategoricalHMM(n_components=4, n_features=8, implementation="scaling", init_params="",
                       params="ste", n_iter=10, tol=-np.inf)
m.startprob_, m.transmat_, m.emissionprob_ = start, trans, emis
m.fit(X[:, None])
print(json.dumps([float(m.score(X[:, None]))] + m.transmat_.ravel().tolist()))
""",
    ),
}

CLI = {
    "--help": ["--help"],
    "query": ["query", "gallery:alarm", "P(HYPOVOLEMIA | CVP=LOW, BP=LOW, HR=HIGH)"],
    "query --json": ["query", "gallery:sprinkler", "P(Wet | do(Sprinkler=on), Rain=yes)", "--json"],
    "dsep": ["dsep", "gallery:asia", "tub", "smoke", "--given", "dysp"],
    "adjust": ["adjust", "gallery:frontdoor", "Smoking", "Cancer"],
    "draw (DOT)": ["draw", "gallery:m-bias", "--highlight", "X,U1,M,U2,Y"],
    "gallery": ["gallery"],
    "completion": ["completion", "bash"],
    "tour": ["tour", "--out", "{tmp}/tour"],
}


def run_child(args: list[str], env: dict) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True, env=env, cwd=CODE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"child failed ({r.returncode}): {' '.join(args[:3])} ...\n{r.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, r.stdout


def _prepare(tmp: Path) -> dict[str, list[str]]:
    """Files and arguments the children read: alarm.bif unpacked, the queries, the HMM data."""
    bif = tmp / "alarm.bif"
    bif.write_bytes(gzip.decompress((ROOT / "causalnet" / "data" / "alarm.bif.gz").read_bytes()))
    rng = np.random.default_rng(23)
    import causalnet as cn  # the parent only picks the queries; its own cost is not measured

    m = cn.read_bif(bif)
    nodes = list(m.dag.nodes)
    queries = []
    for _ in range(20):
        pick = rng.choice(len(nodes), size=4, replace=False)
        t, ev = nodes[pick[0]], {nodes[i]: None for i in pick[1:]}
        sample = m.sample(1, seed=int(rng.integers(2**31)))
        ev = {v: str(m.mechanisms[v].states[int(sample[v][0])]) for v in ev}
        queries.append([t, ev])
    K, S, T = 4, 8, 100_000
    start, trans, emis = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), K), rng.dirichlet(np.ones(S), K)
    z, X = rng.choice(K, p=start), np.empty(T, dtype=np.int64)
    tc, ec, u = np.cumsum(trans, 1), np.cumsum(emis, 1), rng.random((T, 2))
    for t in range(T):
        X[t] = min(int((ec[z] < u[t, 0]).sum()), S - 1)
        z = min(int((tc[z] < u[t, 1]).sum()), K - 1)
    paths = []
    for name, a in (("X", X), ("start", start), ("trans", trans), ("emis", emis)):
        np.save(tmp / f"{name}.npy", a)
        paths.append(str(tmp / f"{name}.npy"))
    return {"import": [], "dsep": [], "alarm": [str(bif), json.dumps(queries)], "hmm": paths}


def _agree(name: str, a: str, b: str) -> bool:
    x, y = json.loads(a), json.loads(b)
    if name == "dsep":
        return x == y
    if name == "alarm":
        return len(x) == len(y) and all(np.allclose(p, q, rtol=0, atol=1e-6) for p, q in zip(x, y))
    if name == "hmm":
        return np.isclose(x[0], y[0], rtol=1e-8, atol=0) and np.allclose(x[1:], y[1:], rtol=0, atol=1e-8)
    return x == y


def _env(cold: bool, tmp: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", CI="true")
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # as after `pip install`: modules load from their .pyc
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")   # kept out of the source trees
    env["PYTHONPATH"] = str(CODE) + os.pathsep + env.get("PYTHONPATH", "")
    if cold:
        env["CAUSALNET_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp, prefix="cache-")
    return env


def peers(args, tmp: Path) -> int:
    extra = _prepare(tmp)
    rows = []
    for name in args.only or WORKLOADS:
        ours, theirs = WORKLOADS[name]
        t_cn, t_peer = [], []
        for r in range(args.rounds + 1):       # round 0: the first process (bytecode and kernel cache written)
            order = [(ours, t_cn), (theirs, t_peer)]
            for code, acc in order if r % 2 == 0 else order[::-1]:
                acc.append(run_child([sys.executable, "-c", code, *extra[name]], _env(args.cold_cache, tmp)))
            if not _agree(name, t_cn[-1][2], t_peer[-1][2]):
                print(f"{name}: answers disagree in round {r}\ncausalnet: {t_cn[-1][2][:500]}\n"
                      f"peer: {t_peer[-1][2][:500]}", file=sys.stderr)
                return 1
        rows.append((name, t_cn, t_peer))
    print(f"fresh processes ({CODE}), {args.rounds} rounds, CPU = user + sys of the child; load {_load()}")
    print(f"{'workload':<8} {'causalnet CPU s':>16} {'first':>6} {'peer CPU s':>11} {'ratio':>6} "
          f"{'causalnet wall s':>17} {'peer wall s':>12}")
    for name, a, b in rows:
        ca, cb = statistics.median(x[0] for x in a[1:]), statistics.median(x[0] for x in b[1:])
        wa, wb = statistics.median(x[1] for x in a[1:]), statistics.median(x[1] for x in b[1:])
        print(f"{name:<8} {ca:>16.3f} {a[0][0]:>6.2f} {cb:>11.3f} {cb / ca:>6.2f} {wa:>17.3f} {wb:>12.3f}")
    return 0


def cli(args, tmp: Path) -> int:
    print(f"fresh `python -m causalnet ...` processes ({CODE}), {args.rounds} rounds, median; load {_load()}")
    print(f"{'command':<14} {'CPU s':>7} {'wall s':>7}")
    for name, argv in CLI.items():
        argv = [a.format(tmp=tmp) for a in argv]
        times = [run_child([sys.executable, "-m", "causalnet", *argv], _env(args.cold_cache, tmp))
                 for _ in range(args.rounds + 1)][1:]
        print(f"{name:<14} {statistics.median(t[0] for t in times):>7.3f} "
              f"{statistics.median(t[1] for t in times):>7.3f}", flush=True)
    return 0


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", choices=sorted(WORKLOADS))
    ap.add_argument("--cli", action="store_true", help="the CLI commands and the tour instead of the peer rows")
    ap.add_argument("--cold-cache", action="store_true", help="a fresh, empty kernel cache for every child")
    ap.add_argument("--code", type=Path, default=ROOT, help="the causalnet checkout to measure (default: this one)")
    args = ap.parse_args(argv)
    global CODE
    CODE = args.code.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="cn-fresh-"))
    try:
        return cli(args, tmp) if args.cli else peers(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
