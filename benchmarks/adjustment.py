"""Adjustment-set enumeration speed on random DAGs.

Usage::

    python benchmarks/adjustment.py           # 200- and 1000-node DAGs, 10 treatment/outcome pairs each
    python benchmarks/adjustment.py --quick

For each pair (Y a descendant of X) it lists every minimal adjustment set
(polynomial-delay enumeration; capped at --cap sets, since some pairs have
more than 10^5 of them), one default call of ``backdoor_adjustment_sets``
(1,000 sets) and of ``frontdoor_adjustment_sets``, and prints times and
counts. Where pgmpy is installed, its ``get_minimal_adjustment_set`` (one
set) is timed on the same pair for scale, and (when our listing was not capped)
its set must be one of ours: otherwise the script exits with status 1.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from agreement import require
from dsep import random_dag  # the same generator as the d-separation benchmark (run from benchmarks/)

import causalnet as cn


def random_dag_with_latents(n: int, seed: int, p_latent: float = 0.1) -> cn.DAG:
    """The d-separation benchmark's random DAG (mean out-degree 2.5) with a random tenth of the nodes latent."""
    edges = random_dag(n, 2.5, seed)
    names = sorted({v for e in edges for v in e} | {f"v{i}" for i in range(n)}, key=lambda v: int(v[1:]))
    rng = np.random.default_rng(seed)
    latent = [names[i] for i in np.flatnonzero(rng.random(n) < p_latent)]
    return cn.DAG(edges, nodes=names, latent=latent)


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[200, 1000])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--cap", type=int, default=10_000, help="max minimal adjustment sets listed per pair")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.pairs, args.cap = [200], 3, 1000
    try:
        from pgmpy.base import DAG as PDAG
        from pgmpy.inference import CausalInference
    except ImportError:
        PDAG = None
    print(f"{'nodes':>6} {'pair':>14} {'minimal sets':>13} {'time s':>8} {'backdoor (1000) s':>18} "
          f"{'front-door s':>13} {'pgmpy one set s':>16}")
    for n in args.sizes:
        g = random_dag_with_latents(n, seed=n)
        rng = np.random.default_rng(0)
        obs = list(g.observed)
        done = 0
        while done < args.pairs:
            x = obs[int(rng.integers(len(obs)))]
            desc = [v for v in g.descendants(x) if v not in g.latent]
            if not desc:
                continue
            y = desc[int(rng.integers(len(desc)))]
            t_min, sets = timed(g.minimal_adjustment_sets, x, y, max_sets=args.cap)
            t_bd, _ = timed(g.backdoor_adjustment_sets, x, y)
            t_fd, _ = timed(g.frontdoor_adjustment_sets, x, y)
            pg = ""
            if PDAG is not None:
                P = PDAG(g.edges)
                P.add_nodes_from(g.nodes)
                try:
                    P.latents = set(g.latent)
                    t_pg, theirs = timed(CausalInference(P).get_minimal_adjustment_set, x, y)
                    pg = f"{t_pg:.4f}"
                    if len(sets) < args.cap:                 # every minimal set listed: pgmpy's is one of them
                        require((theirs is None) == (not sets) and
                                (theirs is None or frozenset(theirs) in {frozenset(z) for z in sets}),
                                f"n={n}, {x} -> {y}: pgmpy's minimal adjustment set {theirs} is not among ours")
                except Exception as e:  # pgmpy may refuse some graphs
                    pg = type(e).__name__
            count = f"{len(sets)}" + ("+ (capped)" if len(sets) >= args.cap else "")
            print(f"{n:>6} {x + ' -> ' + y:>14} {count:>13} {t_min:>8.4f} {t_bd:>18.4f} {t_fd:>13.4f} {pg:>16}")
            done += 1


if __name__ == "__main__":
    main()
