"""d-separation speed: causalnet vs networkx vs pgmpy on the same random DAGs.

Usage::

    python benchmarks/dsep.py            # 10^3, 10^4, 10^5 nodes, 1,000 queries each
    python benchmarks/dsep.py --quick    # fewer queries for peers (smoke run)

Every graph has mean out-degree 2.5; each query is a random pair X, Y and a
random conditioning set Z of 10 other nodes. All three libraries answer the same
queries in one process and the answers are checked to be identical. Times are
per-query medians; causalnet's figure includes its one-off index build spread
over the queries (and is also shown separately). Peers are timed on a subset of
the queries when they are slow (``--peer-queries``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import networkx as nx
import numpy as np

import causalnet as cn


def random_dag(n: int, mean_out: float, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    m = int(mean_out * n)
    a = rng.integers(0, n, size=2 * m)
    b = rng.integers(0, n, size=2 * m)
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:m]]
    perm = rng.permutation(n)          # hide the topological order from the node names
    return [(f"v{perm[i]}", f"v{perm[j]}") for i, j in pairs]


def queries(nodes: list[str], k: int, zsize: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        pick = rng.choice(len(nodes), size=zsize + 2, replace=False)
        out.append((nodes[pick[0]], nodes[pick[1]], {nodes[i] for i in pick[2:]}))
    return out


def median_ms(fn, qs) -> tuple[float, list[bool]]:
    times, answers = [], []
    for x, y, z in qs:
        t0 = time.perf_counter()
        answers.append(fn(x, y, z))
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), answers


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--peer-queries", type=int, default=200, help="queries timed for networkx/pgmpy on graphs >= 10^5")
    ap.add_argument("--zsize", type=int, default=10)
    ap.add_argument("--no-pgmpy", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries, args.peer_queries = 200, 20
    print(f"{'nodes':>8} {'edges':>8} {'lib':>10} {'build s':>8} {'ms/query':>9} {'ratio':>7}  answers")
    for n in args.sizes:
        edges = random_dag(n, 2.5, seed=n)
        qs = queries(sorted({v for e in edges for v in e}), args.queries, args.zsize, seed=1)
        nodes = sorted({v for e in edges for v in e})
        # causalnet: DAG construction + index build are part of its cost
        t0 = time.perf_counter()
        g = cn.DAG(edges, nodes=nodes)
        t_dag = time.perf_counter() - t0
        t0 = time.perf_counter()
        g.d_separated(qs[0][0], qs[0][1], qs[0][2])   # builds the cached index
        t_index = time.perf_counter() - t0
        cn_ms, cn_ans = median_ms(lambda x, y, z, g=g: g.d_separated(x, y, z), qs)
        cn_amort = cn_ms + 1e3 * t_index / len(qs)
        print(f"{n:>8} {len(edges):>8} {'causalnet':>10} {t_dag + t_index:>8.2f} {cn_amort:>9.3f} {1.0:>7.1f}  "
              f"{sum(cn_ans)} separated / {len(cn_ans)} (index {t_index:.2f}s)")
        nq = len(qs) if n < 100_000 else min(args.peer_queries, len(qs))
        G = nx.DiGraph(edges)
        nx_ms, nx_ans = median_ms(lambda x, y, z, G=G: nx.is_d_separator(G, x, y, z), qs[:nq])
        same = nx_ans == cn_ans[:nq]
        print(f"{n:>8} {len(edges):>8} {'networkx':>10} {0.0:>8.2f} {nx_ms:>9.3f} {nx_ms / cn_amort:>7.1f}  "
              f"identical={same} on {nq}")
        if not same:
            raise SystemExit("answers differ from networkx")
        if not args.no_pgmpy:
            from pgmpy.base import DAG as PDAG

            t0 = time.perf_counter()
            P = PDAG(edges)
            t_build = time.perf_counter() - t0
            pg_ms, pg_ans = median_ms(lambda x, y, z, P=P: not P.is_dconnected(x, y, observed=list(z)), qs[:nq])
            same = pg_ans == cn_ans[:nq]
            print(f"{n:>8} {len(edges):>8} {'pgmpy':>10} {t_build:>8.2f} {pg_ms:>9.3f} {pg_ms / cn_amort:>7.1f}  "
                  f"identical={same} on {nq}")
            if not same:
                raise SystemExit("answers differ from pgmpy")


if __name__ == "__main__":
    main()
