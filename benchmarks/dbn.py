"""DBN filtering and smoothing: causalnet's interface algorithm vs pyAgrum's LazyPropagation on the unrolled 2-TBN.

The workload (issue 28): a 10-variable discrete 2-TBN — three hidden
variables with temporal links (H1: 2 states, H2: 3, H3: 2; the interface,
12 joint states) and seven observed children (O1..O7, 2-3 states) — unrolled
over T = 1,000 steps; O1, O4, O7 observed every 10th step
(drawn from the model; denser evidence makes pyAgrum's P(evidence) underflow to 0).

* smoothing: the posterior of every hidden node ``H*[t]`` given all the
  evidence. causalnet: ``dbn.smooth``; pyAgrum: one ``LazyPropagation`` on the
  unrolled network with all the evidence, then ``posterior`` of the 3 T hidden nodes.
* filtering: ``P(H*[t] | evidence at steps 0..t)``. causalnet: ``dbn.filter``
  (every step); pyAgrum: for each of `--filter-steps` steps (spread over the
  horizon) the unrolled network's posterior with the evidence up to ``t``
  (one LazyPropagation per step, reusing the engine with ``eraseAllEvidence``).
  causalnet computes all T steps, pyAgrum only those, so the filtering ratio
  is a lower bound (pyAgrum's time is scaled to the same number of steps only
  if ``--extrapolate`` is given; the default prints both the raw and scaled ratio).

Construction is outside the timings for both (causalnet: the ``DBN``; pyAgrum:
the unrolled ``BayesNet``; each engine object is built inside the timing).
One thread each (pyAgrum ``setNumberOfThreads(1)``, BLAS held to one thread).
Answers are checked to agree (max abs difference < 1e-8) before any ratio is
printed; the script exits non-zero otherwise. Memory: tracemalloc's peak of
``dbn.smooth`` at T and at 4T (linear growth expected).

Run: ``python benchmarks/dbn.py [--T 1000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from discrete_common import limit_blas, median_time  # noqa: E402

import causalnet as cn  # noqa: E402
from causalnet.io.agrum import to_agrum  # noqa: E402

HIDDEN = {"H1": 2, "H2": 3, "H3": 2}
OBSERVED = {"O1": ("H1", 2), "O2": ("H1", 3), "O3": ("H2", 2), "O4": ("H2", 3), "O5": ("H3", 2),
            "O6": (("H1", "H3"), 2), "O7": (("H2", "H3"), 3)}


def build_dbn(seed: int = 0) -> cn.DBN:
    """The 10-variable 2-TBN of the module docstring."""
    rng = np.random.default_rng(seed)

    def cpt(parents, cards, k):
        table = rng.dirichlet(np.ones(k), size=tuple(cards)) if cards else rng.dirichlet(np.ones(k))
        return cn.CPT(parents, table) if parents else cn.Categorical(table)

    init = {"H1": cpt([], [], 2), "H2": cpt(["H1"], [2], 3), "H3": cpt(["H2"], [3], 2)}
    trans = {"H1": cpt(["H1[t-1]", "H3[t-1]"], [2, 2], 2), "H2": cpt(["H1", "H2[t-1]"], [2, 3], 3),
             "H3": cpt(["H2", "H3[t-1]"], [3, 2], 2)}
    for o, (pa, k) in OBSERVED.items():
        pa = list(pa) if isinstance(pa, tuple) else [pa]
        init[o] = cpt(pa, [HIDDEN[p] for p in pa], k)
        trans[o] = cpt(pa, [HIDDEN[p] for p in pa], k)
    return cn.DBN(init, trans)


def agrum_smooth(gum, bn, names, ev, T):
    ie = gum.LazyPropagation(bn)
    ie.setEvidence(ev)
    ie.makeInference()
    return {h: np.array([ie.posterior(names[f"{h}[{t}]"]).toarray() for t in range(T)]) for h in HIDDEN}


def agrum_filter(gum, bn, names, ev_steps, steps):
    ie = gum.LazyPropagation(bn)
    out = {h: [] for h in HIDDEN}
    for t in steps:
        ie.eraseAllEvidence()
        ie.setEvidence({k: v for s in range(t + 1) for k, v in ev_steps[s].items()})
        ie.makeInference()
        for h in HIDDEN:
            out[h].append(ie.posterior(names[f"{h}[{t}]"]).toarray())
    return {h: np.array(v) for h, v in out.items()}


def peak_bytes(fn) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--filter-steps", type=int, default=20)
    args = ap.parse_args()
    import pyagrum as gum

    gum.setNumberOfThreads(1)
    limit_blas(1)
    T = args.T
    dbn = build_dbn()
    data = dbn.sample(T, 1, seed=1)
    # every 10th step, O1, O4 and O7 observed: 3T/10 values (pyAgrum's LazyPropagation multiplies
    # unnormalised potentials, and P(evidence) of all 7T observations underflows to 0 there)
    seen = np.arange(T) % 10 == 0
    evidence = {o: np.where(seen, data[o][0], -1) for o in ("O1", "O4", "O7")}
    model = dbn.unroll(T)
    bn = to_agrum(model)
    names = {v: str(v) for v in model.nodes}
    ev_steps = [{names[f"{o}[{t}]"]: int(a[t]) for o, a in evidence.items() if a[t] >= 0} for t in range(T)]
    ev_all = {k: v for d in ev_steps for k, v in d.items()}
    steps = np.unique(np.linspace(0, T - 1, args.filter_steps).astype(int))

    # each causalnet call builds its DBN (template checks and slice program included), as each pyAgrum call
    # builds its LazyPropagation (junction tree) on the unrolled network
    t_cs, smooth = median_time(lambda: build_dbn().smooth(evidence, T), args.repeats)
    t_ps, ref_s = median_time(lambda: agrum_smooth(gum, bn, names, ev_all, T), args.repeats)
    t_cf, filt = median_time(lambda: build_dbn().filter(evidence, T), args.repeats)
    t_pf, ref_f = median_time(lambda: agrum_filter(gum, bn, names, ev_steps, steps), 1)

    err_s = max(np.abs(smooth.probs[h] - ref_s[h]).max() for h in HIDDEN)
    err_f = max(np.abs(filt.probs[h][steps] - ref_f[h]).max() for h in HIDDEN)
    print(f"agreement: smoothing max |diff| = {err_s:.2e}, filtering ({len(steps)} steps) max |diff| = {err_f:.2e}")
    if not (err_s < 1e-8 and err_f < 1e-8):
        print("DISAGREEMENT: no ratio printed", file=sys.stderr)
        return 1
    m1 = peak_bytes(lambda: dbn.smooth(evidence, T))
    ev4 = {o: np.tile(a, 4) for o, a in evidence.items()}
    m4 = peak_bytes(lambda: dbn.smooth(ev4, 4 * T))
    print(f"load: {open('/proc/loadavg').read().split()[:3]} on {os.cpu_count()} cores (other jobs share the machine)")
    print(f"10-variable 2-TBN, T = {T}, interface 12 joint states, O1, O4, O7 observed every 10th step, one thread each")
    print(f"smoothing (3T hidden posteriors): causalnet {t_cs * 1e3:.1f} ms, pyAgrum LazyPropagation "
          f"{t_ps * 1e3:.1f} ms -> {t_ps / t_cs:.1f}x (medians of {args.repeats})")
    print(f"filtering: causalnet {t_cf * 1e3:.1f} ms for every one of the {T} steps (one dbn.filter call); pyAgrum "
          f"{t_pf * 1e3:.1f} ms for {len(steps)} of them (one inference each) -> {t_pf / t_cf:.1f}x, with causalnet "
          f"answering {T // len(steps)} times as many targets (a lower bound)")
    print(f"memory (tracemalloc peak of dbn.smooth): T={T}: {m1 / 2**20:.1f} MiB, T={4 * T}: {m4 / 2**20:.1f} MiB "
          f"(ratio {m4 / m1:.2f}; linear in T is 4)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
