"""Batched evidence: n evidence rows with few distinct rows, causalnet vs pyAgrum and pgmpy.

Usage::

    python benchmarks/batched_evidence.py                       # pathfinder, munin1; 10^4 rows, 20 distinct
    python benchmarks/batched_evidence.py --networks alarm --rows 2000 --distinct 10

Workload: one target and three evidence nodes drawn at random (seeded); the
evidence takes `--distinct` forward-sampled rows (so ``P(e) > 0``), repeated at
random to `--rows` rows. Each engine runs in its own fresh process (so that
its peak RSS, from ``resource.getrusage``, is its own; the process's baseline
after imports and loading the network is printed too):

* **causalnet**, the ordinary call (the headline):
  ``m.query(target, evidence={node: (n,) array of state indices})`` (as
  pyAgrum is given state indices; the same call with ``(n,)`` object arrays
  of state *names* is printed under it) on the
  model read from the BIF file, its cache cleared inside the timing each
  repeat (so the network's tables, validation and compilation are all
  timed, as for a model just read): each distinct row is answered once, in
  chunks under ``causalnet.limits.get("batch_bytes")``. Also (same process)
  the engine call ``DiscreteBN.query([target], {node: (n,) array})`` on a
  ``DiscreteBN`` built inside the timing.
* **pyAgrum**: a ``LazyPropagation`` built inside the timing, given the same
  single target (``addTarget``: it computes that one posterior, not every
  node's), looping over the *distinct* rows only (``chgEvidence``,
  ``makeInference``, ``posterior``). On networks where a row takes seconds,
  only the first `--gum-rows` distinct rows are timed and the total is their
  median times the number of distinct rows (printed as an extrapolation; the
  engine's construction is then the first row's).
* **pgmpy**: ``VariableElimination.query`` looping over *all* rows; the median
  of `--pgmpy-rows` rows times n (an extrapolation, printed as such).
* **all targets** (apart, unless ``--no-all-targets``): every node's
  posterior for every row. causalnet: ``junction_tree().marginals`` of the
  evidence arrays on a ``DiscreteBN`` built inside the timing; pyAgrum: the
  same loop over distinct rows with no target (every node one) and
  ``posterior(v)`` for every node.

Times are CPU seconds (``time.process_time``, one BLAS thread), the median
over `--repeats` repeats; the ratio is peer time / causalnet time. Answers
are checked against pyAgrum before the ratios are printed (max absolute
difference at most ``--tol``, default 1e-6; BIF files give probabilities to a
few digits, which the libraries renormalize differently, so differences of
1e-7 are expected), pgmpy's on its timed rows; a disagreement exits with
status 1.
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

from agreement import require_close  # noqa: E402
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


def run_causalnet(name, rows, distinct, seed, repeats, all_targets=False):
    from causalnet.inference.discrete import DiscreteBN

    bn, target, ev_nodes, uniq, picks = workload(name, rows, distinct, seed)
    ev = {v: uniq[v][picks] for v in ev_nodes}
    base = peak_rss_mib()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fresh = DiscreteBN(bn.dag, bn.cpts, bn.cards)
        probs, _ = fresh.query([target], ev)
        times.append(time.process_time() - t0)
    first = [int(np.flatnonzero(picks == i)[0]) for i in range(len(uniq[ev_nodes[0]]))]
    out = {"time": statistics.median(times), "base_mib": base, "answers": probs[first].tolist(),
           "target": target, "evidence": ev_nodes, "d": len(first)}
    from causalnet.io.bif import read_bif

    m = read_bif(bif_path(name))                       # the ordinary call: m.query with (n,) arrays of states
    named = {v: np.asarray(m.states(v), dtype=object)[ev[v]] for v in ev_nodes}
    for key, given in (("query", ev), ("query_names", named)):     # indices, as pyAgrum is given; names
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            m.cache.clear()                            # a model just read: nothing derived from it yet
            got = m.query(target, evidence=given).probs
            times.append(time.process_time() - t0)
        out[f"{key}_time"] = statistics.median(times)
        out[f"{key}_answers"] = got[first].tolist()
    if all_targets:
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            marg = DiscreteBN(bn.dag, bn.cpts, bn.cards).junction_tree().marginals(ev)
            times.append(time.process_time() - t0)
        out["all_time"] = statistics.median(times)
        out["all_answers"] = {v: np.asarray(m)[first].tolist() for v, m in marg.items()}
    return out


def run_pyagrum(name, rows, distinct, seed, repeats, max_rows, all_targets=False):
    import pyagrum as gum

    gum.setNumberOfThreads(1)          # one thread, as causalnet (its CPU time is compared)

    _, target, ev_nodes, uniq, _ = workload(name, rows, distinct, seed)
    g = load_pyagrum(name)
    names = [g.variable(i).name() for i in g.nodes()]
    d = len(uniq[ev_nodes[0]])
    k = min(d, max_rows)
    base = peak_rss_mib()

    def loop(targets):
        totals, per_row, answers = [], [], []
        for _ in range(repeats):
            t0 = time.process_time()
            ie = gum.LazyPropagation(g)
            for v in targets:
                ie.addTarget(v)
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
                answers.append({v: ie.posterior(v).toarray().tolist() for v in (targets or names)})
                per_row.append(time.process_time() - (t0 if r == 0 else t1))   # row 0 carries the construction
            totals.append(time.process_time() - t0)
            if k < d:
                break                                              # extrapolated: one pass is enough
        t = statistics.median(totals) if k == d else statistics.median(per_row) * d
        return t, answers

    t, answers = loop([target])
    out = {"time": t, "base_mib": base, "answers": [a[target] for a in answers], "timed_rows": k, "d": d}
    if all_targets:
        t, answers = loop([])
        out["all_time"] = t
        out["all_answers"] = {v: [a[v] for a in answers] for v in names}
    return out


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
        per, answers = [], []
        for r in range(k):
            e = {v: states[v][int(uniq[v][picks[r]])] for v in ev_nodes}
            t0 = time.process_time()
            f = ve.query([target], evidence=e, show_progress=False)
            per.append(time.process_time() - t0)
            answers.append(np.asarray(f.values, dtype=float).tolist())
    return {"time": statistics.median(per) * rows, "base_mib": base, "timed_rows": k, "answers": answers,
            "picks": [int(x) for x in picks[:k]]}


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
    ap.add_argument("--no-all-targets", action="store_true", help="skip the all-targets figures")
    ap.add_argument("--tol", type=float, default=1e-6, help="largest absolute difference allowed between engines")
    args = ap.parse_args(argv)
    alls = not args.no_all_targets
    print("command: python benchmarks/batched_evidence.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print("CPU s, median over repeats, engine construction inside every timing; ratio = peer / causalnet; "
          "RSS: peak of the engine's own process (baseline after loading in brackets)")
    for name in args.networks.split(","):
        w = (name, args.rows, args.distinct, args.seed)
        cn_r = in_subprocess("batched_evidence", "run_causalnet", *w, args.repeats, alls)
        gum_r = in_subprocess("batched_evidence", "run_pyagrum", *w, args.repeats, args.gum_rows, alls)
        k = len(gum_r["answers"])
        diff = require_close(f"{name}: one target, causalnet vs pyAgrum", cn_r["answers"][:k], gum_r["answers"],
                             args.tol)
        diff_q = require_close(f"{name}: one target, causalnet m.query vs pyAgrum", cn_r["query_answers"][:k],
                               gum_r["answers"], args.tol)
        diff_n = require_close(f"{name}: one target, causalnet m.query (names) vs pyAgrum",
                               cn_r["query_names_answers"][:k], gum_r["answers"], args.tol)
        if alls:
            mine = {v: m[:k] for v, m in cn_r["all_answers"].items()}
            diff_all = require_close(f"{name}: all targets, causalnet vs pyAgrum", mine, gum_r["all_answers"],
                                     args.tol)
        pg = None
        if not args.no_pgmpy:
            pg = in_subprocess("batched_evidence", "run_pgmpy", *w, args.pgmpy_rows)
            order = [int(np.flatnonzero(np.array(pg["picks"]) == i)[0]) if i in pg["picks"] else None
                     for i in range(cn_r["d"])]
            pairs = [(cn_r["answers"][i], pg["answers"][j]) for i, j in enumerate(order) if j is not None]
            require_close(f"{name}: causalnet vs pgmpy", [a for a, _ in pairs], [b for _, b in pairs], args.tol)
        print(f"\n{name}: {args.rows} rows, {cn_r['d']} distinct; P({cn_r['target']} | {', '.join(cn_r['evidence'])})")
        note = "" if gum_r["timed_rows"] == gum_r["d"] else f"  (median of {gum_r['timed_rows']} rows x {gum_r['d']})"
        print(f"  pyAgrum LazyPropagation, distinct rows {gum_r['time']:10.4f} s  RSS {gum_r['rss_mib']:7.0f} MiB "
              f"[{gum_r['base_mib']:.0f}]{note}")
        print(f"  causalnet m.query (ordinary call)     {cn_r['query_time']:10.4f} s  RSS {cn_r['rss_mib']:7.0f} MiB "
              f"[{cn_r['base_mib']:.0f}]  ratio {gum_r['time'] / cn_r['query_time']:8.2f}x  max diff {diff_q:.1e}")
        print(f"  causalnet m.query, state names        {cn_r['query_names_time']:10.4f} s  (same process)        "
              f"ratio {gum_r['time'] / cn_r['query_names_time']:8.2f}x  max diff {diff_n:.1e}")
        print(f"  causalnet DiscreteBN.query, all rows  {cn_r['time']:10.4f} s  (same process)        "
              f"ratio {gum_r['time'] / cn_r['time']:8.2f}x  max diff {diff:.1e}")
        if pg is not None:
            print(f"  pgmpy VariableElimination, all rows   {pg['time']:10.4f} s  RSS {pg['rss_mib']:7.0f} MiB "
                  f"[{pg['base_mib']:.0f}]  ratio {pg['time'] / cn_r['time']:8.1f}x  "
                  f"(median of {pg['timed_rows']} rows x {args.rows})")
        if alls:
            print(f"  all targets: causalnet junction_tree().marginals {cn_r['all_time']:10.4f} s; pyAgrum, distinct "
                  f"rows {gum_r['all_time']:10.4f} s  ratio {gum_r['all_time'] / cn_r['all_time']:8.1f}x  "
                  f"max diff {diff_all:.1e}{note}")


if __name__ == "__main__":
    main()
