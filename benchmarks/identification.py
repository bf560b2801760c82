"""Identification benchmarks: ID against y0, instruments and minimal separators at 10^4 nodes, mediation against DoWhy.

Usage::

    python benchmarks/identification.py            # every part
    python benchmarks/identification.py --part id  # 100-node graphs, 20 bidirected edges, 20 queries
    python benchmarks/identification.py --part large        # instruments + minimal separators, 10^4 nodes
    python benchmarks/identification.py --part mediation    # needs dowhy (see below)
    python benchmarks/identification.py --quick

DoWhy would move scipy in the main environment, so it lives in a venv that
sees the main site-packages::

    python -m venv --system-site-packages /work/wt/dowhy-venv
    /work/wt/dowhy-venv/bin/pip install dowhy
    PYTHONPATH=. /work/wt/dowhy-venv/bin/python benchmarks/identification.py --part mediation

**ID.**
Each graph is a random DAG over 100 observed nodes (edges only forward in a
random order, mean out-degree --degree) plus 20 random bidirected edges. A
query is P(Y | do(X)) for one random treatment and one random outcome among
X's descendants. causalnet runs ``identify(h, y, x, simplify=False)`` (the raw
ID algorithm, the same work y0 does) and ``identify`` with the adjustment /
front-door shortcuts; y0 (if installed) runs ``identify_outcomes`` on the
same graph; both must agree on identifiability (exit status 1 otherwise, before
any figure is printed). Times are CPU times (``time.process_time``), medians per query;
ratio = y0 time / causalnet time (above 1: causalnet faster).

**Large graphs.** Random sparse DAGs of 10^4 nodes (mean out-degree 1.5 and
2.5, 5% latent nodes). ``g.instrumental_variables(x, y)`` for an edge x -> y
(every candidate instrument is examined), and ``g.minimal_separators(a, b)``
for a node b late in the causal order and an ancestor a: the time to the first
separator (peer: networkx's ``find_minimal_d_separator``, which finds one) and
to the first 100. CPU times (``time.process_time``), medians.

**Mediation.** Natural direct and indirect effects of a linear-Gaussian model
(confounder W, X -> M -> Y, X -> Y): causalnet's exact ``m.effects`` against
DoWhy's two-stage linear regression on 20 000 samples (an estimate, so the
numbers differ by sampling error); the times compare the two calls.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import networkx as nx
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
    t0 = time.process_time()
    try:
        out = fn(*args, **kwargs)
    except cn.NotIdentifiable:
        out = None
    return time.process_time() - t0, out


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


def run_id(args) -> None:
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
                t0 = time.process_time()
                res = y0[1](g0, x, y)
                theirs.append(time.process_time() - t0)
                if (res is not None) != (e is not None):
                    raise SystemExit(f"disagreement with y0 on P({y} | do({x}))")
    med = statistics.median
    print(f"{args.nodes} nodes, {args.bidirected} bidirected edges, {total} queries ({identified} identifiable)")
    print(f"causalnet ID (raw)          median {med(ours_raw) * 1e3:8.2f} ms   max {max(ours_raw) * 1e3:8.2f} ms")
    print(f"causalnet identify (simple) median {med(ours_simple) * 1e3:8.2f} ms   max {max(ours_simple) * 1e3:8.2f} ms")
    if theirs:
        print(f"y0 identify_outcomes        median {med(theirs) * 1e3:8.2f} ms   max {max(theirs) * 1e3:8.2f} ms")
        print(f"ratio y0 / causalnet ID (medians): {med(theirs) / med(ours_raw):.1f}x; answers agree on identifiability")




def large_dag(n: int, mean_out: float, seed: int, p_latent: float = 0.05) -> cn.DAG:
    """Random DAG with about `mean_out` * n edges; names hide the causal order."""
    rng = np.random.default_rng(seed)
    m = int(mean_out * n)
    a, b = rng.integers(0, n, size=2 * m), rng.integers(0, n, size=2 * m)
    keep = a != b
    pairs = np.unique(np.stack([np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:m]]
    names = [f"v{i}" for i in rng.permutation(n)]
    latent = [v for v in names if rng.random() < p_latent]
    return cn.DAG([(names[i], names[j]) for i, j in pairs], nodes=names, latent=latent)


def cpu(fn, *args, **kwargs):
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return time.process_time() - t0, out


def pick_edge(g: cn.DAG, order: list, rng) -> tuple:
    """An edge x -> y between observed nodes, x in the later half of the causal order."""
    while True:
        x = order[int(rng.integers(len(order) // 2, len(order)))]
        ys = [c for c in g.children(x) if c not in g.latent]
        if ys:
            return x, ys[0]


def run_large(args) -> None:
    n, reps = args.large_nodes, (1 if args.quick else 3)
    for degree in (1.5, 2.5):
        g = large_dag(n, degree, seed=0)
        rng = np.random.default_rng(1)
        order = [v for v in g.topological_order() if v not in g.latent]
        iv_times, iv_counts, first, hundred, peer, sizes = [], [], [], [], [], []
        h = g.to_networkx()
        observed = set(g.observed)
        for _ in range(reps):
            x, y = pick_edge(g, order, rng)
            t, ivs = cpu(g.instrumental_variables, x, y)
            iv_times.append(t)
            iv_counts.append(len(ivs))
            late = [order[int(i)] for i in rng.integers(len(order) * 9 // 10, len(order), size=50)]
            b = max(late, key=lambda v: len(g.ancestors(v)))          # a deep node: many separators
            pool = sorted(g.ancestors(b) - g.latent - set(g.parents(b)), key=str)
            if not pool:
                continue
            a = pool[int(rng.integers(len(pool)))]
            sizes.append(len(g.ancestors({a, b})))
            t0 = time.process_time()
            it = g.minimal_separators(a, b)
            z = next(it, None)
            first.append(time.process_time() - t0)
            more = list(itertools.islice(it, 99))
            hundred.append(time.process_time() - t0)
            t, ref = cpu(nx.find_minimal_d_separator, h, {a}, {b}, restricted=observed - {a, b})
            peer.append(t)
            if (ref is None) != (z is None):
                raise SystemExit(f"networkx and causalnet disagree on whether {a!r} and {b!r} can be separated")
            if z is not None and not nx.is_d_separator(h, {a}, {b}, set(z)):
                raise SystemExit(f"causalnet's first minimal separator {set(z)} does not separate {a!r} and {b!r}")
            del more
        med = statistics.median
        print(f"{n} nodes, mean out-degree {degree}, {len(g.edges)} edges, {len(g.latent)} latent")
        print(f"  instrumental_variables: median {med(iv_times):6.3f} s CPU  max {max(iv_times):6.3f} s  "
              f"({med(iv_counts)} instruments, median)")
        if first:
            line = f"  minimal_separators: first {med(first) * 1e3:7.2f} ms, first 100 {med(hundred) * 1e3:7.2f} ms"
            if peer:
                line += f"; networkx find_minimal_d_separator {med(peer) * 1e3:7.2f} ms (ratio {med(peer) / med(first):.1f}x)"
            print(line + f" (|An(a, b)| median {med(sizes)})")


def linear_mediation_model() -> cn.CausalModel:
    return cn.CausalModel({
        "W": cn.LinearGaussian(sigma=1.0),
        "X": cn.LinearGaussian(["W"], [0.8], sigma=1.0),
        "M": cn.LinearGaussian(["X", "W"], [1.5, -0.5], sigma=1.0),
        "Y": cn.LinearGaussian(["X", "M", "W"], [0.7, 2.0, 0.3], sigma=1.0),
    })


def run_mediation(args) -> None:
    try:
        import dowhy  # optional heavy dependency
        from dowhy.causal_estimators import linear_regression_estimator as lre  # optional heavy dependency
    except ImportError:
        print("mediation: dowhy is not installed (see the module docstring for its venv); skipped")
        return
    m = linear_mediation_model()
    t_ours, e = cpu(lambda: m.effects("X", "Y", treated=1.0, control=0.0, mediators=["M"]))
    df = m.sample(20_000, seed=0).to_pandas()
    kw = dict(method_name="mediation.two_stage_regression", confidence_intervals=False, test_significance=False,
              method_params={"first_stage_model": lre.LinearRegressionEstimator,
                             "second_stage_model": lre.LinearRegressionEstimator})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        cm = dowhy.CausalModel(data=df, treatment="X", outcome="Y", graph=nx.DiGraph(list(m.dag.edges)))
        got = [float(cm.estimate_effect(cm.identify_effect(estimand_type=k, proceed_when_unidentifiable=True), **kw).value)
               for k in ("nonparametric-nde", "nonparametric-nie")]
        t_theirs = time.process_time() - t0
    # DoWhy regresses on a sample: its estimates must be the exact effects up to sampling error (about 0.01 here)
    diff = max(abs(got[0] - e.natural_direct), abs(got[1] - e.natural_indirect))
    if diff > 0.1:
        raise SystemExit(f"DoWhy's mediation effects {got} differ from the exact ones by {diff:.3g} (> 0.1)")
    print("linear mediation W -> X -> M -> Y, X -> Y (truth: NDE 0.7, NIE 1.5 * 2.0 = 3.0)")
    print(f"  causalnet exact   NDE {e.natural_direct:.4f}  NIE {e.natural_indirect:.4f}   {t_ours * 1e3:8.2f} ms CPU")
    print(f"  DoWhy (n=20000)   NDE {got[0]:.4f}  NIE {got[1]:.4f}   {t_theirs * 1e3:8.2f} ms CPU")
    print(f"  |difference|      NDE {abs(got[0] - e.natural_direct):.4f}  NIE {abs(got[1] - e.natural_indirect):.4f}"
          f"   (sampling error of the regression; ratio of times {t_theirs / t_ours:.0f}x)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["all", "id", "large", "mediation"], default="all")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--bidirected", type=int, default=20)
    ap.add_argument("--degree", type=float, default=1.5)
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--large-nodes", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.graphs, args.queries = 1, 3
    if args.part in ("all", "id"):
        run_id(args)
    if args.part in ("all", "large"):
        run_large(args)
    if args.part in ("all", "mediation"):
        run_mediation(args)


if __name__ == "__main__":
    main()
