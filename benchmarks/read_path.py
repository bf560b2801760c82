"""Where a fresh process's CPU goes on the alarm row, for this checkout and others (an A/B of the read path).

Usage::

    python benchmarks/read_path.py --code ../main            # this checkout against another, 15 children each
    python benchmarks/read_path.py --children 5 --quick      # a smoke run

Each child is a new ``python -c`` process (bytecode cached, one BLAS thread) that
imports numpy, then times with ``time.process_time()``: causalnet's own import
(``causalnet.io.bif`` and ``causalnet.model``), ``read_bif`` of alarm.bif, the
first of the fresh-process benchmark's 20 queries (3 evidence nodes each) and
the 19 others; it reports how many causalnet modules it loaded. The children of
the checkouts alternate; medians over ``--children``. Then, in one warm child
per checkout and round, ``read_bif`` of alarm, win95pts, munin1 and (when pgmpy
ships it) pathfinder, median of ``--reads``. The answers of every checkout (the
20 posteriors, and every table read) must agree to 1e-12 before any figure is
printed; the script exits with status 1 otherwise. The peer comparison is
``benchmarks/fresh_process.py``: this script only shows where the time goes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

_PHASES = r'''
import json, sys, time
pt = time.process_time
import numpy
t0 = pt()
import causalnet.io.bif, causalnet.model
t1 = pt()
m = causalnet.io.bif.read_bif(sys.argv[1])
t2 = pt()
qs = json.loads(open(sys.argv[2]).read())
t3 = pt()
out = [m.query(qs[0][0], evidence=qs[0][1]).probs.tolist()]
t4 = pt()
out += [m.query(t, evidence=ev).probs.tolist() for t, ev in qs[1:]]
t5 = pt()
n = sum(k.startswith("causalnet") for k in sys.modules)
print(json.dumps({"times": [t1 - t0, t2 - t1, t4 - t3, t5 - t4], "modules": n, "answers": out}))
'''

_READS = r'''
import json, sys, time
import causalnet.io.bif, causalnet.model
out = {}
for path in sys.argv[2:]:
    m = causalnet.io.bif.read_bif(path)
    ts = []
    for _ in range(int(sys.argv[1])):
        t0 = time.process_time(); causalnet.io.bif.read_bif(path); ts.append(time.process_time() - t0)
    out[path] = [sorted(ts)[len(ts) // 2], {str(v): m.mechanisms[v].table.ravel().tolist() for v in m.nodes}]
print(json.dumps(out))
'''


def _env(code: Path, tmp: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", CI="true",
               PYTHONPYCACHEPREFIX=str(tmp / "pycache"), PYTHONPATH=str(code))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _child(code: Path, tmp: Path, script: str, args: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=_env(code, tmp),
                       cwd=tmp)
    if r.returncode != 0:
        sys.exit(f"child failed ({code}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def _files(tmp: Path, quick: bool) -> tuple[Path, Path, list[Path]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fresh_process  # the fresh-process benchmark's files and queries

    sys.path.insert(0, str(ROOT))
    extra = fresh_process._prepare(tmp)
    queries = tmp / "queries.json"
    queries.write_text(extra["alarm"][1])
    from causalnet.io import bnlearn

    nets = ["alarm"] if quick else ["alarm", "win95pts", "munin1", "pathfinder"]
    paths = []
    for name in nets:
        src = bnlearn.path(name)
        if src is not None:
            paths.append(tmp / f"{name}.bif")
            paths[-1].write_bytes(gzip.decompress(src.read_bytes()))
    return tmp / "alarm.bif", queries, paths


def _agree(a, b) -> bool:
    return len(a) == len(b) and all(np.allclose(x, y, rtol=0, atol=1e-12) for x, y in zip(a, b))


def main(argv=None) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="cn-readpath-"))
    try:
        return _main(argv, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _main(argv, tmp: Path) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, nargs="*", default=[], help="other checkouts to measure beside this one")
    ap.add_argument("--children", type=int, default=15)
    ap.add_argument("--reads", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3, help="warm-read children per checkout")
    ap.add_argument("--quick", action="store_true", help="3 children, alarm only")
    args = ap.parse_args(argv)
    codes = [ROOT] + [c.resolve() for c in args.code]
    children = 3 if args.quick else args.children
    bif, queries, paths = _files(tmp, args.quick)
    for code in codes:                                       # bytecode written before any clock
        _child(code, tmp, _PHASES, [str(bif), str(queries)])
    phases = {c: [] for c in codes}
    for i in range(children):
        for code in codes if i % 2 == 0 else codes[::-1]:
            phases[code].append(_child(code, tmp, _PHASES, [str(bif), str(queries)]))
    reads = {c: [] for c in codes}
    for i in range(1 if args.quick else args.rounds):
        for code in codes if i % 2 == 0 else codes[::-1]:
            reads[code].append(_child(code, tmp, _READS, [str(args.reads)] + [str(p) for p in paths]))
    first = phases[ROOT][0]["answers"]
    for code in codes:
        for run in phases[code]:
            if not _agree(run["answers"], first):
                print(f"answers of {code} disagree with {ROOT}", file=sys.stderr)
                return 1
        for run in reads[code]:
            for p in paths:
                if run[str(p)][1].keys() != reads[ROOT][0][str(p)][1].keys() or not all(
                        np.allclose(run[str(p)][1][v], reads[ROOT][0][str(p)][1][v], rtol=0, atol=1e-12)
                        for v in run[str(p)][1]):
                    print(f"tables of {p.name} read by {code} disagree with {ROOT}", file=sys.stderr)
                    return 1
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"fresh alarm children (CPU ms, median of {children}), then warm read_bif (median); load {load}")
    print(f"{'checkout':<28} {'import':>7} {'read':>6} {'query 1':>8} {'19 more':>8} {'modules':>8}  warm read_bif ms")
    for code in codes:
        cols = list(zip(*(r["times"] for r in phases[code])))
        med = [statistics.median(c) * 1e3 for c in cols]
        warm = "  ".join(f"{p.stem} {statistics.median(r[str(p)][0] for r in reads[code]) * 1e3:.2f}" for p in paths)
        print(f"{str(code)[-28:]:<28} {med[0]:>7.2f} {med[1]:>6.2f} {med[2]:>8.2f} {med[3]:>8.2f} "
              f"{phases[code][0]['modules']:>8}  {warm}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
