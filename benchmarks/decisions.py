"""Solving an influence diagram: causalnet vs pyAgrum's ShaferShenoyLIMIDInference.

Usage::

    python benchmarks/decisions.py                    # 40 nodes, 4 decisions, perfect recall
    python benchmarks/decisions.py --limid            # the same diagram as a LIMID (decisions see their parents)
    python benchmarks/decisions.py --seed 3 --repeats 7

Workload: a random influence diagram (seeded) of 40 nodes in four stages:
30 discrete chance nodes (2 or 3 states, up to 3 parents from earlier stages
and the stage's decision), 4 decisions (3 actions; each sees two chance nodes
of its stage and the previous decision, so the decisions are totally ordered)
and 6 utilities (2 or 3 parents). The same tables are given to both libraries.

* **causalnet**: ``InfluenceDiagram.solve()`` on a cleared model cache each time (perfect recall: requisite
  information by d-separation, then backward induction; ``--limid``: single
  policy updating), on a diagram built outside the timing.
* **pyAgrum**: ``ShaferShenoyLIMIDInference(diagram)`` with
  ``addNoForgettingAssumption`` over the four decisions (not with
  ``--limid``), built outside the timing, then ``makeInference()`` timed.

Times are CPU seconds (``time.process_time``, one BLAS thread), the median over
`--repeats` repeats; the ratio is pyAgrum time / causalnet time. The maximum
expected utilities are checked to agree (``--tol``, default 1e-9 relative)
before any ratio is printed; a disagreement exits with status 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agreement import require_close  # noqa: E402

import causalnet as cn  # noqa: E402


def random_diagram(seed: int, stages: int = 4, per_stage: int = 7, n_chance: int = 30, n_util: int = 6):
    """Plain data: order, cards, chance {v: (parents, table)}, decisions {d: parents}, utilities {u: (parents, table)}."""
    rng = np.random.default_rng(seed)
    order, cards, chance, decisions, utilities = [], {}, {}, {}, {}
    stage_of = {}
    counts = [per_stage] * stages
    counts[-1] += n_chance - per_stage * stages
    x = 0
    prev_decision = None
    for s in range(stages):
        nodes_s = []
        for j in range(counts[s]):
            v = f"X{x}"
            x += 1
            cards[v] = int(rng.integers(2, 4))
            pool = [u for u in order if stage_of[u] >= s - 1 and u not in utilities]
            k = int(rng.integers(0, min(3, len(pool)) + 1))
            ps = [pool[i] for i in sorted(rng.choice(len(pool), size=k, replace=False))] if k else []
            pc = [cards[p] for p in ps]
            chance[v] = (ps, rng.dirichlet(np.ones(cards[v]), size=pc or None))
            order.append(v)
            stage_of[v] = s
            nodes_s.append(v)
            if j == counts[s] // 2:                 # the stage's decision, halfway through its chance nodes
                d = f"D{s}"
                seen = [nodes_s[i] for i in sorted(rng.choice(len(nodes_s), size=min(2, len(nodes_s)),
                                                              replace=False))]
                decisions[d] = seen + ([prev_decision] if prev_decision else [])
                cards[d] = 3
                order.append(d)
                stage_of[d] = s
                prev_decision = d
    pool = list(order)
    for j in range(n_util):
        k = int(rng.integers(2, 4))
        ps = [pool[i] for i in sorted(rng.choice(len(pool), size=k, replace=False))]
        d = f"D{j % stages}"
        if d not in ps:
            ps = [p for p in order if p in set(ps) | {d}][:4]
        utilities[f"U{j}"] = (ps, rng.normal(0, 10, size=[cards[p] for p in ps]))
    return order, cards, chance, decisions, utilities


def to_causalnet(spec, limid: bool) -> cn.InfluenceDiagram:
    order, cards, chance, decisions, utilities = spec
    mechs = {}
    for v in order:
        if v in chance:
            ps, t = chance[v]
            mechs[v] = cn.CPT(ps, t) if ps else cn.Categorical(t)
        else:
            mechs[v] = cn.Decision(decisions[v], states=cards[v])
    for u, (ps, t) in utilities.items():
        mechs[u] = cn.Utility(ps, t)
    return cn.InfluenceDiagram(mechs, limid=limid)


def _fill(pot, table, tvars):
    want = list(reversed(pot.names))
    pot.fillWith(np.transpose(table, [tvars.index(v) for v in want]).reshape(-1).tolist())


def to_pyagrum(spec):
    import pyagrum as gum

    order, cards, chance, decisions, utilities = spec
    diag = gum.InfluenceDiagram()
    for v in order:
        (diag.addChanceNode if v in chance else diag.addDecisionNode)(gum.LabelizedVariable(v, v, cards[v]))
    for u in utilities:
        diag.addUtilityNode(gum.LabelizedVariable(u, u, 1))
    for v in order:
        for p in (chance[v][0] if v in chance else decisions[v]):
            diag.addArc(p, v)
    for u, (ps, _) in utilities.items():
        for p in ps:
            diag.addArc(p, u)
    for v, (ps, t) in chance.items():
        _fill(diag.cpt(v), np.asarray(t, dtype=float), [*ps, v])
    for u, (ps, t) in utilities.items():
        _fill(diag.utility(u), np.asarray(t, dtype=float)[..., None], [*ps, u])
    return diag


def run(args) -> None:
    import pyagrum as gum

    spec = random_diagram(args.seed)
    n_nodes = len(spec[0]) + len(spec[4])
    m = to_causalnet(spec, args.limid)
    diag = to_pyagrum(spec)
    ours, theirs = [], []
    meu_ours = meu_theirs = None
    for _ in range(args.repeats):
        m.cache.clear()       # every solve starts cold, as each pyAgrum inference object does
        t0 = time.process_time()
        sol = m.solve()
        ours.append(time.process_time() - t0)
        meu_ours = sol.meu
        ie = gum.ShaferShenoyLIMIDInference(diag)
        if not args.limid:
            ie.addNoForgettingAssumption(list(spec[3]))
        t0 = time.process_time()
        ie.makeInference()
        theirs.append(time.process_time() - t0)
        meu_theirs = float(ie.MEU()["mean"])
    mode = "LIMID (single policy updating)" if args.limid else "perfect recall"
    print(f"influence diagram: {n_nodes} nodes, {len(spec[3])} decisions, {len(spec[4])} utilities, {mode}, "
          f"seed {args.seed}; {sol.method}")
    print(f"MEU causalnet {meu_ours:.12g}  pyAgrum {meu_theirs:.12g}")
    if args.limid and not sol.exact:
        print("(not soluble: both give local optima; the MEUs need not agree)")
    else:
        require_close("the maximum expected utility", meu_ours, meu_theirs, args.tol * max(1.0, abs(meu_ours)))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"causalnet solve      {a * 1e3:9.2f} ms (median of {args.repeats})")
    print(f"pyAgrum makeInference {b * 1e3:8.2f} ms (median of {args.repeats})")
    print(f"ratio pyAgrum / causalnet: {b / a:.2f}x")
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--limid", action="store_true")
    ap.add_argument("--tol", type=float, default=1e-9)
    run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
