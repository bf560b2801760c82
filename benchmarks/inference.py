"""Exact discrete inference: causalnet vs pgmpy on the same networks and queries.

Usage::

    python benchmarks/inference.py            # alarm, win95pts, andes; 100 queries; 10,000-row batch
    python benchmarks/inference.py --quick    # alarm and win95pts, 20 queries, 2,000-row batch

The networks ship with pgmpy (``get_example_model``, offline). Their CPD rows
are renormalized first (ALARM's are off by up to 1e-7) and both libraries use
the same numbers. Per network:

* **query**: single-node posteriors ``P(T | 3 evidence nodes)``, target and
  evidence nodes drawn at random, evidence states from forward samples (so
  ``P(e) > 0``). pgmpy runs ``VariableElimination.query``; causalnet runs
  ``DiscreteBN.query`` *cold* (its plan cache cleared: pruning, ordering,
  compilation and the run) and *warm* (the plan for that shape cached, as when
  the same kind of query comes again with other evidence values).
* **all marginals**: ``DiscreteBN.junction_tree().marginals(evidence)`` gives
  every node's posterior from one calibration; compared with pgmpy answering
  *one* query. Cold clears the tree's program cache (the tree itself, built
  once per network, is reported on its own).
* **batch**: one query shape (of the first ten, the one needing the most CPTs)
  with n evidence rows. causalnet answers them in
  one vectorized call; pgmpy answers row by row (its median time per row over
  ``--pgmpy-rows`` rows, times n). The batched junction tree is capped at
  ``--jt-entries`` (rows x largest clique) to bound its memory.

Each time is the minimum over ``--repeats`` runs of that query (the machine may
be shared; the minimum discards pre-emption), and the table shows the median
over queries. Garbage collection is off while timing, and BLAS is held to
``--blas-threads`` threads (default 1, via threadpoolctl when installed), for
both libraries: on a small shared machine multithreaded OpenBLAS can make a
millisecond ``matmul`` take a hundred times longer.
Answers are checked against pgmpy (max absolute difference). Peak memory is
measured with ``tracemalloc`` (numpy registers its buffers with it) around one
call, and the process's peak RSS is printed at the end.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time
import tracemalloc
import warnings

import numpy as np

import causalnet as cn
from causalnet.inference.elimination import DiscreteBN


def load(name: str):
    """pgmpy model (rows renormalized in place) and dag, cpts, cards, state names."""
    from pgmpy.utils import get_example_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = get_example_model(name)
    dag = cn.DAG(list(model.edges()), nodes=list(model.nodes()))
    cpts, cards, states = {}, {}, {}
    for v in dag.nodes:
        cpd = model.get_cpds(v)
        cpd.values = cpd.values / cpd.values.sum(axis=0, keepdims=True)
        ev = list(cpd.variables[1:])                          # pgmpy: (card, *evidence_cards)
        t = np.moveaxis(cpd.values, 0, -1)                    # (*evidence_cards, card)
        pa = list(dag.parents(v))
        cpts[v] = np.transpose(t, [ev.index(p) for p in pa] + [len(pa)])   # (*parent_cards, card)
        cards[v] = int(cpd.cardinality[0])
        states[v] = list(cpd.state_names[v])
    return model, dag, cpts, cards, states


def forward_sample(dag, cpts, cards, n: int, rng) -> dict:
    out = {}
    for v in dag.topological_order():
        t = cpts[v][tuple(out[p] for p in dag.parents(v))]   # (n, card) or (card,)
        u = rng.random((n, 1))
        out[v] = np.minimum((u > np.cumsum(t, axis=-1)).sum(-1), cards[v] - 1)
    return out


def best_of(fn, repeats: int, setup=None) -> tuple[float, object]:
    """Minimum wall time (s) of `repeats` calls and the last result; GC off."""
    best, out = float("inf"), None
    gc.disable()
    try:
        for _ in range(repeats):
            if setup is not None:
                setup()
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
    finally:
        gc.enable()
    return best, out


def peak_mib(fn) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def row(net, task, pg_ms, cn_ms, diff, mem=None, note=""):
    ratio = f"{pg_ms / cn_ms:9.1f}x" if pg_ms is not None else f"{'':>10}"
    pg = f"{pg_ms:10.3f}" if pg_ms is not None else f"{'':>10}"
    mem_s = f"{mem:9.1f}" if mem is not None else f"{'':>9}"
    diff_s = f"{diff:9.1e}" if diff is not None else f"{'':>9}"
    print(f"{net:<9} {task:<34} {pg} {cn_ms:11.3f} {ratio} {diff_s} {mem_s}  {note}")


def bench_network(name: str, args, rng) -> None:
    from pgmpy.inference import VariableElimination

    model, dag, cpts, cards, states = load(name)
    names = list(dag.nodes)
    t_bn, bn = best_of(lambda: DiscreteBN(dag, cpts, cards), 1)
    t_jt, jt = best_of(lambda: bn.junction_tree(), 1)
    ve = VariableElimination(model)
    print(f"\n{name}: {len(names)} nodes, {len(dag.edges)} edges; DiscreteBN {1e3 * t_bn:.1f} ms, "
          f"junction tree {1e3 * t_jt:.1f} ms: {len(jt.cliques)} cliques, width {jt.width}, "
          f"largest clique {jt.max_clique_size} entries ({jt.max_clique_size * 8 / 2**20:.3f} MiB)")

    # -- single queries --------------------------------------------------------
    sample = forward_sample(dag, cpts, cards, args.queries, rng)
    queries = []
    for r in range(args.queries):
        pick = rng.choice(len(names), 4, replace=False)
        queries.append((names[pick[0]], {names[j]: int(sample[names[j]][r]) for j in pick[1:]}))

    def pg_query(t, ev):
        named = {k: states[k][x] for k, x in ev.items()}
        return ve.query([t], evidence=named, show_progress=False).values

    pg_t, cold_t, warm_t, jt_cold_t, jt_warm_t = [], [], [], [], []
    diff = jt_diff = 0.0
    reps = args.repeats
    for t, ev in queries:
        tp, want = best_of(lambda t=t, ev=ev: pg_query(t, ev), reps)
        tc, (got, _) = best_of(lambda t=t, ev=ev: bn.query([t], ev), reps, setup=bn._plans.clear)
        tw, (got, _) = best_of(lambda t=t, ev=ev: bn.query([t], ev), reps)
        tjc, marg = best_of(lambda ev=ev: jt.marginals(ev), reps, setup=jt._programs.clear)
        tjw, marg = best_of(lambda ev=ev: jt.marginals(ev), reps)
        pg_t.append(tp)
        cold_t.append(tc)
        warm_t.append(tw)
        jt_cold_t.append(tjc)
        jt_warm_t.append(tjw)
        diff = max(diff, float(np.abs(got - want).max()))
        jt_diff = max(jt_diff, float(np.abs(marg[t] - want).max()))
    med = lambda xs: 1e3 * statistics.median(xs)  # noqa: E731
    pg_ms = med(pg_t)
    t0, ev0 = queries[0]
    mem_pg = peak_mib(lambda: pg_query(t0, ev0))
    bn._plans.clear()
    mem_cn = peak_mib(lambda: bn.query([t0], ev0))
    row(name, f"query, pgmpy VE ({len(queries)} queries)", None, pg_ms, None, mem_pg)
    row(name, "query, causalnet cold (compile+run)", pg_ms, med(cold_t), diff, mem_cn)
    row(name, "query, causalnet warm (plan cached)", pg_ms, med(warm_t), diff)
    jt._programs.clear()
    mem_jt = peak_mib(lambda: jt.marginals(ev0))
    row(name, f"all {len(names)} marginals, JT cold", pg_ms, med(jt_cold_t), jt_diff, mem_jt, "vs one pgmpy query")
    row(name, f"all {len(names)} marginals, JT warm", pg_ms, med(jt_warm_t), jt_diff, None, "vs one pgmpy query")

    # -- one shape, many evidence rows ------------------------------------------
    n = args.batch
    # a demanding shape: the one (of the first ten) whose answer needs the most CPTs
    t, ev0 = max(queries[:10], key=lambda q: len(bn.relevant_nodes([q[0]], list(q[1]))))
    ev_vars = list(ev0)
    rows = forward_sample(dag, cpts, cards, n, rng)
    ev_b = {v: rows[v] for v in ev_vars}
    k = min(args.pgmpy_rows, n)
    per_row, want = [], []
    for r in range(k):
        tr, w = best_of(lambda r=r: pg_query(t, {v: int(rows[v][r]) for v in ev_vars}), reps)
        per_row.append(tr)
        want.append(w)
    pg_row = statistics.median(per_row)
    tb, (got, _) = best_of(lambda: bn.query([t], ev_b), reps)
    bdiff = float(np.abs(got[:k] - np.array(want)).max())
    mem_b = peak_mib(lambda: bn.query([t], ev_b))
    row(name, f"batch of {n} rows, VE", 1e3 * pg_row * n, 1e3 * tb, bdiff, mem_b,
        f"pgmpy: median of {k} rows ({1e3 * pg_row:.2f} ms) x {n}")
    nj = min(n, max(1, args.jt_entries // jt.max_clique_size))
    ev_j = {v: x[:nj] for v, x in ev_b.items()}
    tjb, marg = best_of(lambda: jt.marginals(ev_j), reps)
    jdiff = float(np.abs(marg[t][:k] - np.array(want)[:nj]).max())
    mem_jb = peak_mib(lambda: jt.marginals(ev_j))
    row(name, f"batch of {nj} rows, JT all marginals", 1e3 * pg_row * nj, 1e3 * tjb, jdiff, mem_jb,
        "vs pgmpy answering one node per row")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default=None, help="comma-separated pgmpy example names")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--pgmpy-rows", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jt-entries", type=int, default=1 << 25,
                    help="cap on rows x largest clique for the batched junction tree")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--blas-threads", type=int, default=1, help="0: leave BLAS threading alone")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries, args.batch, args.pgmpy_rows, args.repeats = 20, 2_000, 50, 2
    nets = (args.networks or ("alarm,win95pts" if args.quick else "alarm,win95pts,andes")).split(",")
    rng = np.random.default_rng(args.seed)
    limiter = None
    if args.blas_threads:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            print("threadpoolctl is not installed: BLAS threading left as it is")
        else:
            limiter = threadpool_limits(limits=args.blas_threads, user_api="blas")
    print(f"{'network':<9} {'task':<34} {'pgmpy ms':>10} {'causalnet ms':>11} {'speed-up':>10} "
          f"{'max diff':>9} {'peak MiB':>9}")
    for name in nets:
        bench_network(name.strip(), args, rng)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process: {rss:.0f} MiB (both libraries, models and samples included)")
    if limiter is not None:
        limiter.restore_original_limits()


if __name__ == "__main__":
    main()
