"""ID algorithm speed on random mixed graphs, side by side with y0.

Usage::

    python benchmarks/identification.py            # 100-node graphs, 20 bidirected edges, 20 queries
    python benchmarks/identification.py --quick

Each graph is a random DAG over 100 observed nodes (edges only forward in a
random order, mean out-degree --degree) plus 20 random bidirected edges. A
query is P(Y | do(X)) for one random treatment and one random outcome among
X's descendants. causalnet runs ``identify(h, y, x, simplify=False)`` (the raw
ID algorithm, the same work y0 does) and ``identify`` with the adjustment /
front-door shortcuts; y0 (if installed) runs ``identify_outcomes`` on the
same graph; both must agree on identifiability. Times are medians per query;
ratio = y0 time / causalnet time (above 1: causalnet faster).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import causalnet as cn
from causalnet.graph.identification import MixedGraph, identify


def random_mixed_graph(n: int, n_bidirected: int, degree: float, seed: int) -> MixedGraph:
    rng = np.random.default_rng(seed)
    names = [f"v{i}" for i in rng.permutation(n)]          # the causal order
    p = degree / (n - 1) * 2
    edges = [(names[i], names[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    pairs: set = set()
    while len(pairs) < n_bidirected:
        a, b = sorted(rng.choice(n, 2, replace=False))
        pairs.add((names[a], names[b]))
    return MixedGraph(edges, sorted(pairs), nodes=names)


def queries(h: MixedGraph, k: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    children = {v: [c for c in h.nodes if v in h.parents(c)] for v in h.nodes}
    while len(out) < k:
        x = h.nodes[int(rng.integers(len(h.nodes)))]
        desc, stack = set(), [x]
        while stack:
            for c in children[stack.pop()]:
                if c not in desc:
                    desc.add(c)
                    stack.append(c)
        if desc:
            out.append((x, sorted(desc)[int(rng.integers(len(desc)))]))
    return out


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    try:
        out = fn(*args, **kwargs)
    except cn.NotIdentifiable:
        out = None
    return time.perf_counter() - t0, out


def y0_runner():
    try:
        from y0.algorithm.identify import identify_outcomes
        from y0.dsl import Variable
        from y0.graph import NxMixedGraph
    except ImportError:
        return None

    def build(h):
        g = NxMixedGraph.from_edges(directed=[(Variable(a), Variable(b)) for a, b in h.directed_edges],
                                    undirected=[(Variable(a), Variable(b)) for a, b in h.bidirected_edges])
        g.directed.add_nodes_from(Variable(v) for v in h.nodes)
        g.undirected.add_nodes_from(Variable(v) for v in h.nodes)
        return g

    def run(g, x, y):
        return identify_outcomes(g, Variable(x), Variable(y))
    return build, run


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--bidirected", type=int, default=20)
    ap.add_argument("--degree", type=float, default=1.5)
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.graphs, args.queries = 1, 3
    y0 = y0_runner()
    ours_raw, ours_simple, theirs, identified, total = [], [], [], 0, 0
    for seed in range(args.graphs):
        h = random_mixed_graph(args.nodes, args.bidirected, args.degree, seed)
        dag = h.to_dag()
        g0 = y0[0](h) if y0 else None
        for x, y in queries(h, args.queries, seed):
            t_raw, e = timed(identify, h, y, x, simplify=False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cn.CausalNetWarning)
                t_simple, _ = timed(identify, dag, y, x)
            ours_raw.append(t_raw)
            ours_simple.append(t_simple)
            total += 1
            identified += e is not None
            if y0:
                t0 = time.perf_counter()
                res = y0[1](g0, x, y)
                theirs.append(time.perf_counter() - t0)
                if (res is not None) != (e is not None):
                    raise SystemExit(f"disagreement with y0 on P({y} | do({x}))")
    med = statistics.median
    print(f"{args.nodes} nodes, {args.bidirected} bidirected edges, {total} queries ({identified} identifiable)")
    print(f"causalnet ID (raw)          median {med(ours_raw) * 1e3:8.2f} ms   max {max(ours_raw) * 1e3:8.2f} ms")
    print(f"causalnet identify (simple) median {med(ours_simple) * 1e3:8.2f} ms   max {max(ours_simple) * 1e3:8.2f} ms")
    if theirs:
        print(f"y0 identify_outcomes        median {med(theirs) * 1e3:8.2f} ms   max {max(theirs) * 1e3:8.2f} ms")
        print(f"ratio y0 / causalnet ID (medians): {med(theirs) / med(ours_raw):.1f}x; answers agree on identifiability")


if __name__ == "__main__":
    main()
