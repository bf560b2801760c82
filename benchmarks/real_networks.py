"""Real networks: first query and all marginals, causalnet vs pyAgrum LazyPropagation.

Usage::

    python benchmarks/real_networks.py                  # alarm, win95pts, andes, pathfinder, munin1
    python benchmarks/real_networks.py --networks munin1 --queries 2 --repeats 1 --no-marginals
    python benchmarks/real_networks.py --queries 10 --repeats 5 --no-marginals --rounds 5   # issue 30's row

Networks come from the standard repository BIF files (``causalnet/data``, or
pgmpy's copies), read by each library from the same file. Queries: a target
and three evidence nodes drawn at random per query (seeded), evidence states
from forward samples (``P(e) > 0``); every query has its own (target,
evidence nodes), so nothing compiled for one serves another.

Workloads, each engine in its own fresh process (peak RSS from
``resource.getrusage``; the baseline after loading the network in brackets):

* **ordinary first query**, the headline: each library reads the
  (uncompressed) BIF file and answers one query for one target through its
  ordinary calls, state names as evidence. causalnet: ``m = read_bif(path)``,
  then ``m.query(t, evidence=e)`` (a fresh model: whatever the query needs is
  built inside it); pyAgrum: ``loadBN(path)``, ``LazyPropagation(bn)``, then
  ``setTargets({t})``, ``setEvidence(e)``, ``makeInference``,
  ``posterior(t)``. Three ratios from the same runs: the query alone
  (pyAgrum's ``LazyPropagation`` excluded), ``+ construction`` (the file
  read excluded: issue 30's figure) and ``+ read`` (everything); the time
  spent reading alone is printed under them.
* **first query**: a fresh engine answers one query for one target. causalnet:
  ``query([t], e)`` on a ``DiscreteBN`` just built; pyAgrum: on a
  ``LazyPropagation(bn)`` just built, ``addTarget(t)`` (so it computes that
  one posterior, as causalnet does, not every node's), ``setEvidence``,
  ``makeInference``, ``posterior(t)``. Both constructions are timed the same
  way: each figure is given without and with (``+ construction``) building the
  engine (causalnet: the ``DiscreteBN`` from the parsed file's tables,
  validating and renormalizing them; pyAgrum: ``LazyPropagation(bn)``), in the
  same runs; reading the file (``read_bif``, ``loadBN``) is timed by neither.
* **all marginals, first** (all targets, reported apart): a fresh engine gives
  every node's posterior for one evidence. causalnet:
  ``junction_tree().marginals(e)``; pyAgrum: ``LazyPropagation`` with no
  target (every node is one), ``setEvidence``, ``makeInference``,
  ``posterior(v)`` for every node; without and with construction, as above.
* **all marginals, repeated**: the same engine, the same evidence nodes,
  `--queries` new evidence values (pyAgrum: ``chgEvidence``); the median per
  request after the first.

Times are CPU seconds (``time.process_time``, one BLAS thread): the median
over queries of the median over `--repeats` repeats. With ``--rounds R`` the
two processes of a network run R times, alternately (causalnet, pyAgrum,
causalnet, ...), and each figure is the median over the rounds, with the
per-round ratios of the first-query rows printed under the table: the two
libraries run in separate processes, so on a shared machine whose speed
drifts a single round can move a sub-millisecond ratio by ±40%. Ratio = pyAgrum time /
causalnet time. Before a network's figures are printed its answers are checked
against pyAgrum (max absolute difference at most ``--tol``, default 1e-6: the
BIF numbers carry a few digits, renormalized differently by the two libraries,
so about 1e-7 is expected); a disagreement exits with status 1.
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
from discrete_common import (  # noqa: E402
    forward_sample,
    in_subprocess,
    load_causalnet,
    load_pyagrum,
    peak_rss_mib,
    plain_bif,
)


def queries(name: str, k: int, seed: int):
    """`k` queries ``(target, {node: state})`` and, for the repeated workload, k rows on one node set."""
    bn, names, _ = load_causalnet(name)
    rng = np.random.default_rng(seed)
    s = forward_sample(bn, k, rng)
    out = []
    for r in range(k):
        pick = rng.choice(len(names), 4, replace=False)
        out.append((names[pick[0]], {names[j]: int(s[names[j]][r]) for j in pick[1:]}))
    fixed = list(out[0][1])
    rows = [{v: int(s[v][r]) for v in fixed} for r in range(k)]
    return bn, names, out, rows


def _median_of(fn, repeats: int, setup=None) -> tuple[float, object]:
    """Median CPU time of `fn(setup())` (setup untimed) over `repeats`, and the last result."""
    times, got = [], None
    for _ in range(repeats):
        arg = setup() if setup is not None else None
        t0 = time.process_time()
        got = fn(arg) if setup is not None else fn()
        times.append(time.process_time() - t0)
    return statistics.median(times), got


def _with_construction(build, fn, repeats: int) -> tuple[float, float, object]:
    """Median CPU time of `fn(build())` without and with `build` (timed in the same runs), and the last result."""
    excl, incl, got = [], [], None
    for _ in range(repeats):
        t0 = time.process_time()
        arg = build()
        t1 = time.process_time()
        got = fn(arg)
        t2 = time.process_time()
        del arg                             # freed outside the clock
        excl.append(t2 - t1)
        incl.append(t2 - t0)
    return statistics.median(excl), statistics.median(incl), got


def _read_first(read, build, ask, qs, repeats) -> dict:
    """The ordinary first query, timed in three nested spans of the same runs (CPU medians).

    ``net = read()`` (the file), ``engine = build(net)`` (the inference engine;
    causalnet has none apart from its model: ``build`` is the identity and the
    model's first ``query`` builds what it needs), ``ask(engine, t, e)``.
    ``first_q``: the query alone; ``first_qc``: + construction (the issue's
    figure, read excluded); ``read_first``: + reading the file.
    """
    q, qc, total, reads, answers = [], [], [], [], []
    for t, e in qs:
        a, b, c, r, got = [], [], [], [], None
        for _ in range(repeats):
            t0 = time.process_time()
            net = read()
            t1 = time.process_time()
            engine = build(net)
            t2 = time.process_time()
            got = ask(engine, t, e)
            t3 = time.process_time()
            del engine, net                 # freed outside the clock (not charged to the next run's spans)
            a.append(t3 - t2)
            b.append(t3 - t1)
            c.append(t3 - t0)
            r.append(t1 - t0)
        q.append(statistics.median(a))
        qc.append(statistics.median(b))
        total.append(statistics.median(c))
        reads.append(statistics.median(r))
        answers.append(np.asarray(got, dtype=float).tolist())
    return {"first_q": statistics.median(q), "first_qc": statistics.median(qc), "read_first": statistics.median(total),
            "read_only": statistics.median(reads), "read_answers": answers}


def _causalnet_read_first(name, qs, repeats) -> dict:
    """The ordinary calls on a freshly read network: ``read_bif(path)``, then ``m.query(t, evidence={name: state})``."""
    from causalnet.io.bif import read_bif

    path = str(plain_bif(name))
    m0 = read_bif(path)
    named = [(t, {v: m0.states(v)[i] for v, i in e.items()}) for t, e in qs]
    return _read_first(lambda: read_bif(path), lambda m: m, lambda m, t, e: m.query(t, evidence=e).probs, named,
                       repeats)


def _pyagrum_read_first(name, qs, repeats) -> dict:
    """The same with pyAgrum: ``loadBN``; ``LazyPropagation``; ``setTargets({t})``, ``setEvidence`` (labels),
    ``makeInference``, ``posterior(t)``."""
    import pyagrum as gum

    path = str(plain_bif(name))
    g0 = gum.loadBN(path)
    named = [(t, {v: g0.variable(v).label(i) for v, i in e.items()}) for t, e in qs]

    def ask(ie, t, e):
        ie.setTargets({t})
        ie.setEvidence(e)
        ie.makeInference()
        return ie.posterior(t).toarray()

    return _read_first(lambda: gum.loadBN(path), gum.LazyPropagation, ask, named, repeats)


def run_causalnet(name, k, seed, repeats, marginals):
    from causalnet.inference.discrete import DiscreteBN

    bn, names, qs, rows = queries(name, k, seed)
    dag, cpts, cards = bn.dag, bn.cpts, bn.cards
    base = peak_rss_mib()
    def fresh():
        return DiscreteBN(dag, cpts, cards)

    first, first_in, answers = [], [], []
    for t, e in qs:
        dt, dt_in, got = _with_construction(fresh, lambda bn, t=t, e=e: bn.query([t], e)[0], repeats)
        first.append(dt)
        first_in.append(dt_in)
        answers.append(got.tolist())
    ctor, _ = _median_of(fresh, 5 * repeats)
    out = {"first": statistics.median(first), "first_in": statistics.median(first_in), "answers": answers,
           "base_mib": base, "ctor": ctor}
    out.update(_causalnet_read_first(name, qs, repeats))
    if marginals:
        allm, allm_in, margs = [], [], []
        for _, e in qs:
            dt, dt_in, got = _with_construction(fresh, lambda bn, e=e: bn.junction_tree().marginals(e), repeats)
            allm.append(dt)
            allm_in.append(dt_in)
            margs.append({v: got[v].tolist() for v in names})
        jt = DiscreteBN(dag, cpts, cards).junction_tree()
        rep = []
        for i, e in enumerate(rows):
            t0 = time.process_time()
            jt.marginals(e)
            if i:
                rep.append(time.process_time() - t0)
        out.update(allm=statistics.median(allm), allm_in=statistics.median(allm_in), margs=margs,
                   rep=statistics.median(rep) if rep else None)
    return out


def run_pyagrum(name, k, seed, repeats, marginals):
    import pyagrum as gum

    gum.setNumberOfThreads(1)          # one thread, as causalnet (its CPU time is compared)

    _, names, qs, rows = queries(name, k, seed)
    g = load_pyagrum(name)
    base = peak_rss_mib()

    def fresh():
        return gum.LazyPropagation(g)

    def one(ie, t, e):
        ie.addTarget(t)
        ie.setEvidence(e)
        ie.makeInference()
        return ie.posterior(t).toarray()

    def every(ie, e):
        ie.setEvidence(e)
        ie.makeInference()
        return {v: ie.posterior(v).toarray() for v in names}

    first, first_in, answers = [], [], []
    for t, e in qs:
        dt, dt_in, got = _with_construction(fresh, lambda ie, t=t, e=e: one(ie, t, e), repeats)
        first.append(dt)
        first_in.append(dt_in)
        answers.append(got.tolist())
    ctor, _ = _median_of(fresh, 5 * repeats)
    out = {"first": statistics.median(first), "first_in": statistics.median(first_in), "answers": answers,
           "base_mib": base, "ctor": ctor}
    out.update(_pyagrum_read_first(name, qs, repeats))
    if marginals:
        allm, allm_in, margs = [], [], []
        for _, e in qs:
            dt, dt_in, got = _with_construction(fresh, lambda ie, e=e: every(ie, e), repeats)
            allm.append(dt)
            allm_in.append(dt_in)
            margs.append({v: got[v].tolist() for v in names})
        ie = gum.LazyPropagation(g)
        rep = []
        for i, e in enumerate(rows):
            t0 = time.process_time()
            if i == 0:
                ie.setEvidence(e)
            else:
                for v, x in e.items():
                    ie.chgEvidence(v, x)
            ie.makeInference()
            for v in names:
                ie.posterior(v)
            if i:
                rep.append(time.process_time() - t0)
        out.update(allm=statistics.median(allm), allm_in=statistics.median(allm_in), margs=margs,
                   rep=statistics.median(rep) if rep else None)
    return out


def _over_rounds(runs: list) -> dict:
    """One process's figures over the rounds: times by their median, peak RSS by its maximum."""
    out = dict(runs[0])
    for key, value in runs[0].items():
        if key in ("rss_mib", "base_mib"):
            out[key] = max(r[key] for r in runs)
        elif isinstance(value, float):
            out[key] = statistics.median(r[key] for r in runs)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="alarm,win95pts,andes,pathfinder,munin1")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-marginals", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="alternate rounds of the two processes per network")
    ap.add_argument("--tol", type=float, default=1e-6, help="largest absolute difference allowed from pyAgrum")
    args = ap.parse_args(argv)
    print("command: python benchmarks/real_networks.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print("CPU ms: median over queries of the median over repeats (and over rounds); ratio = pyAgrum / causalnet; "
          "one target per first query for both (pyAgrum addTarget), every node for all marginals; "
          "RSS: peak of the engine's own process [baseline after loading]")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'network':<11} {'workload':<29} {'pyAgrum ms':>11} {'causalnet ms':>13} {'ratio':>8} "
          f"{'max diff':>9} {'RSS pyAgrum':>12} {'RSS causalnet':>14}")
    spread = []
    for name in args.networks.split(","):
        w = (name, args.queries, args.seed, args.repeats, not args.no_marginals)
        cs, gs = [], []
        for _ in range(args.rounds):            # alternately, so a drift of the machine's speed hits both
            c = in_subprocess("real_networks", "run_causalnet", *w)
            g = in_subprocess("real_networks", "run_pyagrum", *w)
            d_first = require_close(f"{name}, first query", c["answers"], g["answers"], args.tol)
            d_read = require_close(f"{name}, first query on a freshly read network", c["read_answers"],
                                   g["read_answers"], args.tol)
            d_all = None
            if not args.no_marginals:
                d_all = require_close(f"{name}, all marginals", c["margs"], g["margs"], args.tol)
            cs.append(c)
            gs.append(g)
        if args.rounds > 1:
            spread.append((name, [gr["first_qc"] / cr["first_qc"] for cr, gr in zip(cs, gs)],
                           [gr["first_q"] / cr["first_q"] for cr, gr in zip(cs, gs)]))
        c, g = _over_rounds(cs), _over_rounds(gs)
        mem = f"{g['rss_mib']:7.0f} [{g['base_mib']:.0f}] {c['rss_mib']:8.0f} [{c['base_mib']:.0f}]"
        rows = [("ordinary first query", "first_q", d_read), ("  + construction (read excl.)", "first_qc", None),
                ("  + read", "read_first", None), ("  of which reading the file", "read_only", None),
                ("first query (DiscreteBN)", "first", d_first), ("  + construction", "first_in", None)]
        if not args.no_marginals:
            rows += [("all marginals, first", "allm", d_all),
                     ("all marginals + construction", "allm_in", None),
                     ("all marginals, repeated", "rep", None)]
        print(f"{name:<11} {'construction':<29} {1e3 * g['ctor']:11.3f} {1e3 * c['ctor']:13.3f}")
        for label, key, d in rows:
            if c.get(key) is None:
                continue
            ds = f"{d:9.1e}" if d is not None else f"{'':>9}"
            print(f"{name:<11} {label:<29} {1e3 * g[key]:11.3f} {1e3 * c[key]:13.3f} {g[key] / c[key]:7.1f}x "
                  f"{ds} {mem}")
    for name, with_ctor, alone in spread:
        print(f"{name:<11} per round, ordinary first query + construction: "
              + ", ".join(f"{r:.1f}x" for r in with_ctor) + "; the query alone: "
              + ", ".join(f"{r:.1f}x" for r in alone))


if __name__ == "__main__":
    main()
