"""Learning speed on ALARM: causalnet against pgmpy, side by side in one process.

Usage::

    python benchmarks/learning.py            # MLE 10^5 rows, hill climbing 10^4 rows, PC 10^4 rows
    python benchmarks/learning.py --quick    # fewer repeats, PC on 2*10^3 rows

Prints, per task, the median time of causalnet and of pgmpy and the ratio
(pgmpy time / causalnet time), plus the structural Hamming distance of each
learned structure to the true CPDAG. pgmpy runs are repeated fewer times (they
are slow); medians over the runs made.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import causalnet as cn
from causalnet.graph.equivalence import PDAG, cpdag, structural_hamming_distance


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def report(task: str, ours: float, peer: float | None, extra: str = "") -> None:
    ratio = f"{peer / ours:8.1f}x" if peer else "      n/a"
    peer_s = f"{peer:9.3f}s" if peer else "       n/a"
    print(f"{task:<34} causalnet {ours:8.3f}s  pgmpy {peer_s}  ratio {ratio}  {extra}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    try:
        import pgmpy.estimators as pe
        from pgmpy.models import DiscreteBayesianNetwork
    except ImportError:
        pe = None
    alarm = cn.gallery.load("alarm")
    true = cpdag(alarm.dag)
    rep = 1 if args.quick else 3

    df5 = alarm.sample(100_000, seed=0).to_pandas()
    ours, _ = timed(lambda: cn.fit(alarm.dag, df5), rep)
    peer = None
    if pe is not None:
        net = DiscreteBayesianNetwork(list(alarm.dag.edges))
        peer, _ = timed(lambda: pe.MaximumLikelihoodEstimator(net, df5).get_parameters(n_jobs=1), rep)
    report("MLE, ALARM, 10^5 rows", ours, peer)

    df4 = alarm.sample(10_000, seed=0).to_pandas()
    ours, g = timed(lambda: cn.learn_structure(df4, method="hill_climb", progress=False), rep)
    shd = structural_hamming_distance(cpdag(g), true)
    peer, extra = None, f"SHD causalnet {shd}"
    if pe is not None:
        peer, pg = timed(lambda: pe.HillClimbSearch(df4).estimate(scoring_method="bic-d", show_progress=False), 1)
        pshd = structural_hamming_distance(cpdag(cn.DAG(list(pg.edges()), nodes=list(df4.columns))), true)
        extra += f", pgmpy {pshd}"
    report("hill climbing BIC, ALARM, 10^4 rows", ours, peer, extra)

    dfp = df4.iloc[:2_000] if args.quick else df4
    ours, p = timed(lambda: cn.learn_structure(dfp, method="pc", alpha=0.01, progress=False), rep)
    shd = structural_hamming_distance(p, true)
    peer, extra = None, f"SHD causalnet {shd}"
    if pe is not None:
        peer, pp = timed(lambda: pe.PC(dfp).estimate(ci_test="chi_square", significance_level=0.01,
                                                     return_type="pdag", show_progress=False), 1)
        ref = PDAG(pp.directed_edges, [tuple(e) for e in {frozenset(e) for e in pp.undirected_edges}],
                   nodes=list(dfp.columns))
        extra += f", pgmpy {structural_hamming_distance(ref, true)}"
    report(f"PC chi2 alpha=0.01, ALARM, {len(dfp)} rows", ours, peer, extra)


if __name__ == "__main__":
    main()
