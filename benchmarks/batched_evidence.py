"""Batched evidence: n evidence rows with few distinct rows, causalnet vs pyAgrum and pgmpy.

Usage::

    python benchmarks/batched_evidence.py                       # pathfinder, munin1; 10^4 rows, 20 distinct
    python benchmarks/batched_evidence.py --networks alarm --rows 2000 --distinct 10

Workload: one target and three evidence nodes drawn at random (seeded); the
evidence takes `--distinct` forward-sampled rows (so ``P(e) > 0``), repeated at
random to `--rows` rows. Each engine runs in its own fresh process (so that
its peak RSS, from ``resource.getrusage``, is its own; the process's baseline
after imports and loading the network is printed too):

* **causalnet**: ``DiscreteBN.query([target], {node: (n,) array})`` on a
  fresh ``DiscreteBN`` each repeat (compilation included): each distinct row
  is answered once, in chunks under ``causalnet.limits.get("batch_bytes")``.
* **pyAgrum**: one ``LazyPropagation``, looping over the *distinct* rows only
  (``chgEvidence``, ``makeInference``, ``posterior``), engine creation
  included. On networks where a row takes seconds, only the first
  `--gum-rows` distinct rows are timed and the total is their median times
  the number of distinct rows (printed as an extrapolation).
* **pgmpy**: ``VariableElimination.query`` looping over *all* rows; the median
  of `--pgmpy-rows` rows times n (an extrapolation, printed as such).

Times are CPU seconds (``time.process_time``, one BLAS thread), the median
over `--repeats` repeats; the ratio is peer time / causalnet time. Answers
are checked against pyAgrum (max absolute difference; BIF files give
probabilities to a few digits, which the libraries renormalize differently,
so differences of 1e-7 are expected).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from discrete_common import (  # noqa: E402
    bif_path,
    forward_sample,
    in_subprocess,
    load_causalnet,
    load_pyagrum,
    peak_rss_mib,
)


def workload(name: str, rows: int, distinct: int, seed: int):
    """The DiscreteBN, target, evidence node names, distinct rows (dict of (d,)) and row picks (n,)."""
    bn, names, _ = load_causalnet(name)
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(names), 4, replace=False)
    target, ev_nodes = names[pick[0]], [names[j] for j in pick[1:]]
    s = forward_sample(bn, 50 * distinct, rng)
    seen, keep = set(), []
    for r in range(50 * distinct):
        key = tuple(int(s[v][r]) for v in ev_nodes)
        if key not in seen:
            seen.add(key)
            keep.append(r)
        if len(keep) == distinct:
            break
    uniq = {v: s[v][keep] for v in ev_nodes}
    picks = rng.integers(len(keep), size=rows)
    picks[: len(keep)] = np.arange(len(keep))                  # every distinct row occurs
    return bn, target, ev_nodes, uniq, picks


def run_causalnet(name, rows, distinct, seed, repeats):
    from causalnet.inference.discrete import DiscreteBN

    bn, target, ev_nodes, uniq, picks = workload(name, rows, distinct, seed)
    ev = {v: uniq[v][picks] for v in ev_nodes}
    base = peak_rss_mib()
    times = []
    for _ in range(repeats):
        fresh = DiscreteBN(bn.dag, bn.cpts, bn.cards)
        t0 = time.process_time()
        probs, _ = fresh.query([target], ev)
        times.append(time.process_time() - t0)
    first = [int(np.flatnonzero(picks == i)[0]) for i in range(len(uniq[ev_nodes[0]]))]
    return {"time": statistics.median(times), "base_mib": base, "answers": probs[first].tolist(),
            "target": target, "evidence": ev_nodes, "d": len(first)}


def run_pyagrum(name, rows, distinct, seed, repeats, max_rows):
    import pyagrum as gum

    _, target, ev_nodes, uniq, _ = workload(name, rows, distinct, seed)
    g = load_pyagrum(name)
    d = len(uniq[ev_nodes[0]])
    k = min(d, max_rows)
    base = peak_rss_mib()
    totals, per_row, answers = [], [], []
    for _ in range(repeats):
        t0 = time.process_time()
        ie = gum.LazyPropagation(g)
        answers = []
        for r in range(k):
            t1 = time.process_time()
            e = {v: int(uniq[v][r]) for v in ev_nodes}
            if r == 0:
                ie.setEvidence(e)
            else:
                for v, x in e.items():
                    ie.chgEvidence(v, x)
            ie.makeInference()
            answers.append(ie.posterior(target).toarray().tolist())
            per_row.append(time.process_time() - t1)
        totals.append(time.process_time() - t0)
        if k < d:
            break                                              # extrapolated: one pass is enough
    t = statistics.median(totals) if k == d else statistics.median(per_row) * d
    return {"time": t, "base_mib": base, "answers": answers, "timed_rows": k, "d": d}


def run_pgmpy(name, rows, distinct, seed, k):
    import gzip

    from pgmpy.inference import VariableElimination
    from pgmpy.readwrite import BIFReader

    _, target, ev_nodes, uniq, picks = workload(name, rows, distinct, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BIFReader(string=gzip.open(bif_path(name), "rt").read()).get_model()
        ve = VariableElimination(model)
        base = peak_rss_mib()
        states = {v: model.get_cpds(v).state_names[v] for v in ev_nodes}
        per = []
        for r in range(k):
            e = {v: states[v][int(uniq[v][picks[r]])] for v in ev_nodes}
            t0 = time.process_time()
            ve.query([target], evidence=e, show_progress=False)
            per.append(time.process_time() - t0)
    return {"time": statistics.median(per) * rows, "base_mib": base, "timed_rows": k}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="pathfinder,munin1")
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--distinct", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gum-rows", type=int, default=20, help="distinct rows pyAgrum answers (the rest extrapolated)")
    ap.add_argument("--pgmpy-rows", type=int, default=5, help="rows pgmpy answers (times n: extrapolated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-pgmpy", action="store_true")
    args = ap.parse_args(argv)
    print("command: python benchmarks/batched_evidence.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print("CPU s, median over repeats; ratio = peer / causalnet; RSS: peak of the engine's own process "
          "(baseline after loading in brackets)")
    for name in args.networks.split(","):
        w = (name, args.rows, args.distinct, args.seed)
        cn_r = in_subprocess("batched_evidence", "run_causalnet", *w, args.repeats)
        gum_r = in_subprocess("batched_evidence", "run_pyagrum", *w, args.repeats, args.gum_rows)
        diff = float(np.abs(np.array(cn_r["answers"][: len(gum_r["answers"])]) - np.array(gum_r["answers"])).max())
        print(f"\n{name}: {args.rows} rows, {cn_r['d']} distinct; P({cn_r['target']} | {', '.join(cn_r['evidence'])})")
        print(f"  causalnet DiscreteBN.query, all rows  {cn_r['time']:10.4f} s  RSS {cn_r['rss_mib']:7.0f} MiB "
              f"[{cn_r['base_mib']:.0f}]")
        note = "" if gum_r["timed_rows"] == gum_r["d"] else f"  (median of {gum_r['timed_rows']} rows x {gum_r['d']})"
        print(f"  pyAgrum LazyPropagation, distinct rows {gum_r['time']:10.4f} s  RSS {gum_r['rss_mib']:7.0f} MiB "
              f"[{gum_r['base_mib']:.0f}]  ratio {gum_r['time'] / cn_r['time']:8.1f}x  max diff {diff:.1e}{note}")
        if not args.no_pgmpy:
            pg = in_subprocess("batched_evidence", "run_pgmpy", *w, args.pgmpy_rows)
            print(f"  pgmpy VariableElimination, all rows   {pg['time']:10.4f} s  RSS {pg['rss_mib']:7.0f} MiB "
                  f"[{pg['base_mib']:.0f}]  ratio {pg['time'] / cn_r['time']:8.1f}x  "
                  f"(median of {pg['timed_rows']} rows x {args.rows})")


if __name__ == "__main__":
    main()
