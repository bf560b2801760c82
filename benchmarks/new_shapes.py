"""A model asked many *different* questions: N distinct query shapes on a freshly read network vs pyAgrum.

    python benchmarks/new_shapes.py                       # alarm and win95pts, 20, 100 and 400 shapes
    python benchmarks/new_shapes.py --networks alarm --counts 20 100 --rounds 5

Each round reads the BIF file afresh in both libraries (reading is not timed),
then asks N queries P(target | 3 evidence nodes), every (target, evidence
nodes) shape distinct, with evidence values from a forward sample (possible
evidence). causalnet: ``m.query(t, evidence=e)`` on the model just read (its
first query, and every later new shape, answered by the direct path until its
CPU budget is spent, then by the network and its prior tree). pyAgrum: one
``LazyPropagation`` kept across the queries (as causalnet keeps its model), its
evidence erased and each query's single target set (``setTargets``), as
``benchmarks/fresh_process.py``'s alarm row does. One thread
each (BLAS limited). The clock is ``time.process_time()`` around the N queries
(CPU time: the machine is shared); the libraries alternate by rounds; the
table shows the median over rounds of the total CPU ms and the ratio of medians
(pyAgrum / causalnet: above 1 causalnet is cheaper). Every answer is checked
against pyAgrum's (max absolute difference at most ``--tol``) before any ratio
is printed; a disagreement exits with status 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agreement import require_close  # noqa: E402
from discrete_common import limit_blas, plain_bif  # noqa: E402

from causalnet.io.bif import read_bif  # noqa: E402


def workload(m, count: int, seed: int) -> list:
    """`count` queries ``(target, {node: state name})`` of distinct (target, evidence nodes) shapes."""
    names = list(m.nodes)
    rng = np.random.default_rng(seed)
    sample = m.sample(count, seed=seed)
    seen, out = set(), []
    while len(out) < count:
        pick = rng.choice(len(names), 4, replace=False)
        key = (int(pick[0]), frozenset(int(i) for i in pick[1:]))
        if key in seen:
            continue
        seen.add(key)
        r = len(out)
        out.append((names[pick[0]], {names[i]: m.states(names[i])[int(sample[names[i]][r])] for i in pick[1:]}))
    return out


def run_causalnet(path: Path, queries: list) -> tuple[float, list]:
    m = read_bif(path)
    t0 = time.process_time()
    got = [m.query(t, evidence=e).probs for t, e in queries]
    return time.process_time() - t0, got


def run_pyagrum(path: Path, queries: list) -> tuple[float, list]:
    import pyagrum as gum

    bn = gum.loadBN(str(path))
    ev = [{k: bn.variable(k).labels().index(v) for k, v in e.items()} for _, e in queries]
    t0 = time.process_time()
    got = []
    ie = gum.LazyPropagation(bn)                # one engine for the run, as causalnet keeps one model
    for (t, _), e in zip(queries, ev):
        ie.eraseAllEvidence()
        ie.setTargets({t})
        ie.setEvidence(e)
        ie.makeInference()
        got.append(ie.posterior(t).toarray())
    return time.process_time() - t0, got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="alarm,win95pts")
    ap.add_argument("--counts", type=int, nargs="+", default=[20, 100, 400])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    limit_blas(1)
    print("command: python benchmarks/new_shapes.py " + " ".join(sys.argv[1:]))
    print(f"load average: {open('/proc/loadavg').read().split()[:3]} (the machine is shared)")
    print("CPU ms of the N queries (read excluded), median over rounds; ratio = pyAgrum / causalnet; one thread")
    rows = []
    for name in args.networks.split(","):
        path = plain_bif(name)
        for count in args.counts:
            queries = workload(read_bif(path), count, args.seed)
            times: dict = {"cn": [], "ag": []}
            for r in range(args.rounds):
                order = (("cn", run_causalnet), ("ag", run_pyagrum))
                for key, fn in (order if r % 2 == 0 else order[::-1]):
                    s, got = fn(path, queries)
                    times[key].append(s)
                    if r == 0:
                        times[key + "_ans"] = got
            d = require_close(f"{name}, {count} shapes", [a.tolist() for a in times["cn_ans"]],
                              [np.asarray(a).tolist() for a in times["ag_ans"]], args.tol)
            rows.append((name, count, statistics.median(times["ag"]), statistics.median(times["cn"]), d))
    print(f"{'network':<10} {'shapes':>6} {'pyAgrum ms':>11} {'causalnet ms':>13} {'ratio':>7} {'max diff':>9}")
    for name, count, ag, cn_s, d in rows:
        print(f"{name:<10} {count:>6} {1e3 * ag:11.1f} {1e3 * cn_s:13.1f} {ag / cn_s:6.2f}x {d:9.1e}")


if __name__ == "__main__":
    main()
