"""d-separation speed: causalnet vs pyAgrum (``gum.DAG.dSeparation``) and networkx on the same random DAGs.

Usage::

    python benchmarks/dsep.py                    # 10^3, 10^4, 10^5 nodes; then networkx with build at 2*10^4
    python benchmarks/dsep.py --quick            # fewer queries (smoke run)
    python benchmarks/dsep.py --sizes 1000 --queries 500 --repeats 7
    python benchmarks/dsep.py --sizes 1000 10000 --nx-build-size 0   # the four rows of issue 30
    python benchmarks/dsep.py --sizes 1000 10000 --nx-build-size 0 --floor   # ... and the parents queries' floor

Every graph has mean out-degree 2.5 (node names hide the topological order).
Two query kinds, answered by every library in one process and checked to be
identical:

* **random**: a random pair X, Y and a random conditioning set Z of 10 other nodes;
* **parents**: the local Markov statement X ⊥ (non-descendants of X minus its
  parents) | parents(X), for random X: a large Y, a small Z.

causalnet gets node names (sets of str), pyAgrum node ids (lists of int), as
each is used. Times are CPU seconds (``time.process_time``) of the whole batch
of queries, median of ``--repeats`` batches, divided by the number of queries.
Ratios are peer time / causalnet time. networkx is timed on ``--peer-queries``
queries of each kind.

Two figures per size and kind:

* **first k**: the first 20, and the first ``--first-queries`` (200), queries
  of a fresh process, per query. Each
  library runs in its own child process (``--rounds`` rounds, causalnet and
  pyAgrum interleaved, median): it reads the graph and the queries from a
  file and builds its graph (not timed, for either library), then the clock
  runs over its first queries. The children load modules from bytecode, as
  after an install (a first, uncounted round writes it); both collect the
  garbage of reading the file before the clock starts, and causalnet's
  queries name nodes by the graph's own name objects, as queries built from
  ``g.nodes`` or ``g.descendants`` do (and as in the steady batches). For causalnet that includes whatever the first
  queries build (the graph's adjacency lists, the memoized ancestor sets) and
  the default backend ``"auto"``, which answers in plain Python until the
  compiled kernel would pay (see docs/performance.md); nothing is compiled
  or loaded beforehand.
* **construction + first 20** (a table after the main one): the same children's
  CPU seconds, in all, of building the graph (``cn.DAG(edges, nodes=...)``;
  pyAgrum's ``addNode``/``addArc`` loop) and answering the first 20 queries,
  plus, for causalnet, importing ``causalnet.graph.bitsep``, the d-separation
  front door, which a process's first d-separation query loads (the children
  import it before the first-k clock; this row puts it back, and prints it). Everything else each
  library loads (``import causalnet`` and the DAG class's modules, ``import
  pyagrum``) is loaded before any clock, for both.
* **steady**: this process, after the compiled kernel is compiled (or loaded
  from the per-user cache; the seconds are printed), every query of the list,
  ``--repeats`` times: what a long-running process gets.

Every child's answers, and those of the steady batches, are checked to be
identical across libraries before any ratio is printed (exit status 1 otherwise).

With ``--floor``, a table of what one C-level pass over a parents query's Y
costs in this process (``names >= Y`` with the name set built beforehand, and
``Y <= Y``, which reads only Y's own hash table), beside the whole query, and
the bound pyAgrum's first-20 figure sets for any query that must check Y's
names: pyAgrum's time / that pass.

The last table is networkx with graph construction included, at 2*10^4 nodes:
``nx.DiGraph(edges)`` plus the queries vs ``cn.DAG(edges)`` plus the queries.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

import causalnet as cn  # noqa: E402
from causalnet.graph import kernels  # noqa: E402


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


def random_queries(nodes: list[str], k: int, zsize: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        pick = rng.choice(len(nodes), size=zsize + 2, replace=False)
        out.append((nodes[pick[0]], nodes[pick[1]], {nodes[i] for i in pick[2:]}))
    return out


def parents_queries(g: cn.DAG, k: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    everything = frozenset(g.nodes)
    out = []
    for i in rng.permutation(len(g))[:k]:
        x = g.nodes[i]
        pa = set(g.parents(x))
        y = set(everything - g.descendants(x, include_self=True) - pa)
        if y:
            out.append((x, y, pa))
    return out


def batch_seconds(fn, qs, repeats: int) -> tuple[float, list]:
    """Median over `repeats` of the CPU seconds for answering every query in `qs`; the answers."""
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        answers = [fn(*q) for q in qs]
        times.append(time.process_time() - t0)
    return statistics.median(times), answers


def gum_dag(g: cn.DAG):
    import pyagrum as gum

    d = gum.DAG()
    ids = {v: d.addNode() for v in g.nodes}
    for u, v in g.edges:
        d.addArc(ids[u], ids[v])
    return d, ids


#: The first-query figure is given for the first FIRST queries and for the first --first-queries.
FIRST = 20
#: (nodes, kind, causalnet import s, causalnet import + build + first FIRST s, pyAgrum build + first FIRST s)
BUILD_ROWS: list = []


def first_child(path: str, lib: str) -> None:
    """A fresh process's side of the first-query figure: print CPU seconds of the first queries and the answers,
    of building the graph, and (causalnet) of importing its d-separation front door, which loads with the DAG
    class (so it is outside the first-query clock and inside the construction row's)."""
    with open(path) as f:
        spec = json.load(f)
    qs = spec["queries"]
    gc.collect()        # reading the file made garbage (up to 10^6 objects): not the import's nor the build's cost
    if lib == "causalnet":
        import causalnet.graph.core  # noqa: F401  (the structure every graph needs, numpy with it)

        t0 = time.process_time()
        import causalnet.graph.bitsep  # noqa: F401  (d-separation's front door, loaded by the first query: timed apart)
        t_import = time.process_time() - t0
        dag_class = cn.DAG                             # the class's other modules load here, as pyAgrum's library
        edges = [tuple(e) for e in spec["edges"]]
        t0 = time.process_time()
        g = dag_class(edges, nodes=spec["nodes"])
        t_build = time.process_time() - t0
        own = {v: v for v in g.nodes}.__getitem__     # the graph's own name objects, as in queries built from g
        qs = [(own(x) if isinstance(x, str) else set(map(own, x)), own(y) if isinstance(y, str) else set(map(own, y)),
               set(map(own, z))) for x, y, z in qs]
        gc.collect()                                   # the garbage of reading the file is not the queries' cost
        t0 = time.process_time()
        answers = [g.d_separated(x, y, z) for x, y, z in qs[:FIRST]]
        t_first = time.process_time() - t0
        answers += [g.d_separated(x, y, z) for x, y, z in qs[FIRST:]]
    else:
        import pyagrum as gum

        t_import = 0.0                                 # dSeparation is part of the library already loaded
        nodes, edges = spec["nodes"], spec["edges"]
        t0 = time.process_time()
        d = gum.DAG()
        ids = {v: d.addNode() for v in nodes}
        for u, v in edges:
            d.addArc(ids[u], ids[v])
        t_build = time.process_time() - t0
        qs = [(ids[x] if isinstance(x, str) else [ids[v] for v in x], ids[y] if isinstance(y, str)
               else [ids[v] for v in y], [ids[v] for v in z]) for x, y, z in qs]
        gc.collect()
        t0 = time.process_time()
        answers = [bool(d.dSeparation(x, y, z)) for x, y, z in qs[:FIRST]]
        t_first = time.process_time() - t0
        answers += [bool(d.dSeparation(x, y, z)) for x, y, z in qs[FIRST:]]
    print(json.dumps([t_first, time.process_time() - t0, answers, t_build, t_import]))


def first_queries(g: cn.DAG, qs: list, args) -> tuple[dict, list]:
    """Median CPU seconds per query of the first FIRST and the first `args.first_queries` queries of fresh
    causalnet and pyAgrum processes (interleaved, `args.rounds` rounds), and the answers (checked to agree).

    Returns ``({(lib, k): seconds per query}, answers)``; ``(lib, "build")`` holds the seconds of importing
    the d-separation code not loaded by ``import`` of the library (causalnet's front door; 0 for pyAgrum),
    building the graph and answering the first FIRST queries, ``(lib, "import")`` the first of them.
    """
    qs = qs[:args.first_queries]
    spec = {"nodes": list(g.nodes), "edges": [list(e) for e in g.edges],
            "queries": [[x if isinstance(x, str) else sorted(x), y if isinstance(y, str) else sorted(y), sorted(z)]
                        for x, y, z in qs]}
    tmp = tempfile.mkdtemp(prefix="cn-dsep-")
    # as after `pip install`: modules load from their bytecode (written by round 0, which is not counted)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pyc")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    path = os.path.join(tmp, "queries.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    times: dict = {(lib, k): [] for lib in ("causalnet", "pyagrum") for k in (FIRST, len(qs), "build", "import")}
    answers = None
    try:
        for r in range(args.rounds + 1):
            for lib in ("causalnet", "pyagrum") if r % 2 == 0 else ("pyagrum", "causalnet"):
                out = subprocess.run([sys.executable, __file__, "--first-child", path, lib], capture_output=True,
                                     text=True, check=True, env=env)
                t_first, t_all, a, t_build, t_import = json.loads(out.stdout.strip().splitlines()[-1])
                if answers is not None and a != answers:
                    raise SystemExit(f"first queries: {lib}'s answers differ (round {r})")
                answers = a
                if r:
                    times[lib, FIRST].append(t_first / min(FIRST, len(qs)))
                    times[lib, len(qs)].append(t_all / len(qs))
                    times[lib, "build"].append(t_import + t_build + t_first)     # whole seconds, not per query
                    times[lib, "import"].append(t_import)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {key: statistics.median(v) for key, v in times.items()}, answers


def compare(n: int, args) -> list[tuple]:
    edges = random_dag(n, 2.5, seed=n)
    nodes = sorted({v for e in edges for v in e})
    g = cn.DAG(edges, nodes=nodes)
    d, ids = gum_dag(g)
    G = nx.DiGraph(edges)
    rows = []
    kinds = {"random": random_queries(nodes, args.queries, args.zsize, seed=1),
             "parents": parents_queries(g, args.parent_queries, seed=2)}
    for kind, qs in kinds.items():
        qi = [(ids[x] if isinstance(x, str) else [ids[v] for v in x], [ids[v] for v in y] if isinstance(y, set)
               else ids[y], [ids[v] for v in z]) for x, y, z in qs]
        first, a_first = first_queries(g, qs, args) if args.first_queries else ({}, None)
        k = min(args.first_queries, len(qs))
        t_cn, a_cn = batch_seconds(lambda x, y, z: g.d_separated(x, y, z), qs, args.repeats)
        t_gum, a_gum = batch_seconds(lambda x, y, z: d.dSeparation(x, y, z), qi, args.repeats)
        nq = min(args.peer_queries, len(qs))
        t_nx, a_nx = batch_seconds(lambda x, y, z: nx.is_d_separator(G, x, y, z), qs[:nq], 1)
        if a_cn != a_gum or a_cn[:nq] != a_nx or (a_first is not None and a_first != a_cn[:len(a_first)]):
            raise SystemExit(f"answers differ at n={n}, {kind} queries")
        cn_ms, gum_ms, nx_ms = 1e3 * t_cn / len(qs), 1e3 * t_gum / len(qs), 1e3 * t_nx / nq
        rows.append((n, kind, len(qs), sum(a_cn), cn_ms, gum_ms, gum_ms / cn_ms, nx_ms, nx_ms / cn_ms))
        if first:
            BUILD_ROWS.append((n, kind, first["causalnet", "import"], first["causalnet", "build"],
                               first["pyagrum", "build"]))
        if args.floor and kind == "parents":
            FLOOR_ROWS.append((n, statistics.mean(len(y) for _, y, _ in qs), *floor_seconds(g, qs, args.repeats),
                               first.get(("pyagrum", FIRST)), first.get(("causalnet", FIRST))))
        cells = "".join(f"{1e3 * first[c]:>9.4f} {1e3 * first[p]:>9.4f} {first[p] / first[c]:>6.1f}x "
                        for c, p in ((("causalnet", FIRST), ("pyagrum", FIRST)), (("causalnet", k), ("pyagrum", k)))
                        if first)
        print(f"{n:>7} {kind:>8} {len(qs):>6} {sum(a_cn):>6} {cells}{cn_ms:>9.4f} {gum_ms:>9.4f} "
              f"{gum_ms / cn_ms:>6.1f}x {nx_ms:>9.3f} {nx_ms / cn_ms:>7.0f}x", flush=True)
    return rows


#: (nodes, mean |Y|, one pass over Y s, Y's own table s, causalnet's query s, pyAgrum first FIRST s, causalnet first FIRST s)
FLOOR_ROWS: list = []


def floor_seconds(g: cn.DAG, qs: list, repeats: int) -> tuple[float, float, float]:
    """CPU seconds per parents query of: checking that Y names nodes (``names >= Y``, one C pass over Y with
    the name set built beforehand), the same pass against Y's own table (``Y <= Y``: no lookup into any other
    table), and the whole query (``g.d_separated``, this process: the quick path's steady state)."""
    names = frozenset(g.nodes)
    t_names, ok = batch_seconds(lambda x, y, z: names >= y, qs, repeats)
    t_own, _ = batch_seconds(lambda x, y, z: y <= y, qs, repeats)
    t_query, _ = batch_seconds(lambda x, y, z: g.d_separated(x, y, z), qs, repeats)
    if not all(ok):
        raise SystemExit("a parents query names an unknown node")
    return t_names / len(qs), t_own / len(qs), t_query / len(qs)


def build_and_ask(n: int, k: int, zsize: int) -> tuple[float, list[bool]]:
    """causalnet's side of the construction-included workload: CPU seconds and answers."""
    edges = random_dag(n, 2.5, seed=n)
    qs = random_queries(sorted({v for e in edges for v in e}), k, zsize, seed=3)
    t0 = time.process_time()
    g = cn.DAG(edges)
    answers = [g.d_separated(x, y, z) for x, y, z in qs]
    return time.process_time() - t0, answers


def networkx_with_build(n: int, args) -> None:
    edges = random_dag(n, 2.5, seed=n)
    qs = random_queries(sorted({v for e in edges for v in e}), args.nx_build_queries, args.zsize, seed=3)
    t_cn, a_cn = build_and_ask(n, len(qs), args.zsize)
    fresh = subprocess.run([sys.executable, __file__, "--fresh-build", str(n), str(len(qs)), str(args.zsize)],
                           capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    t_fresh, fresh_answers = json.loads(fresh.stdout.strip().splitlines()[-1])
    t0 = time.process_time()
    G = nx.DiGraph(edges)
    a_nx = [nx.is_d_separator(G, x, y, z) for x, y, z in qs]
    t_nx = time.process_time() - t0
    if a_cn != a_nx or fresh_answers != a_nx:
        raise SystemExit("answers differ from networkx")
    print(f"\nnetworkx, construction included: {n} nodes, {len(edges)} edges, {len(qs)} random queries")
    print(f"  networkx {t_nx:.3f} s")
    print(f"  causalnet, kernel compiled earlier in the process: {t_cn:.3f} s   ratio {t_nx / t_cn:.0f}x")
    print(f"  causalnet in a fresh process, default backend 'auto' (compiles only once 1 s of Python search is spent): "
          f"{t_fresh:.3f} s   ratio {t_nx / t_fresh:.0f}x")


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--fresh-build"]:              # the child of networkx_with_build: nothing compiled yet
        print(json.dumps(build_and_ask(*map(int, argv[1:4]))))
        return
    if argv[:1] == ["--first-child"]:              # a child of first_queries
        first_child(argv[1], argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    ap.add_argument("--queries", type=int, default=1000, help="random queries per size")
    ap.add_argument("--parent-queries", type=int, default=200, help="parents-set queries per size")
    ap.add_argument("--peer-queries", type=int, default=50, help="queries of each kind timed for networkx")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--zsize", type=int, default=10)
    ap.add_argument("--first-queries", type=int, default=200,
                    help=f"queries timed at the start of fresh processes, the first {FIRST} of them also on their "
                         f"own (0: skip the first-query figures)")
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes per library for the first-query figures")
    ap.add_argument("--nx-build-size", type=int, default=20_000)
    ap.add_argument("--nx-build-queries", type=int, default=200)
    ap.add_argument("--floor", action="store_true",
                    help="also time one pass over the parents queries' Y (the floor of checking its names)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries, args.parent_queries, args.peer_queries, args.repeats, args.rounds = 200, 40, 10, 3, 3
        args.first_queries = min(args.first_queries, 40)
        args.nx_build_queries = 50
    args.compile_s = kernels.compile_kernel()
    print(f"causalnet kernel compiled (or loaded from the per-user cache) in {args.compile_s:.2f} s before the steady "
          f"figures; load: {os.getloadavg()[0]:.1f}")
    print(f"ms per query: 'first k' = over the first k queries of fresh processes (median of {args.rounds}), "
          f"'steady' = median of {args.repeats} batches in this process")
    k = args.first_queries
    head = (f"{'cn ' + str(FIRST):>9} {'gum ' + str(FIRST):>9} {'ratio':>7} {'cn ' + str(k):>9} {'gum ' + str(k):>9} "
            f"{'ratio':>7} ") if k else ""
    print(f"{'nodes':>7} {'kind':>8} {'queries':>6} {'sep':>6} {head}"
          f"{'cn steady':>9} {'gum steady':>9} {'ratio':>7} {'nx ms':>9} {'nx/cn':>8}")
    for n in args.sizes:
        compare(n, args)
    if BUILD_ROWS:
        print(f"\nconstruction + first {FIRST} queries of a fresh process, ms in all (median of {args.rounds}); "
              f"causalnet's includes importing its d-separation front door (loaded by a process's first d-separation query; the children import it before the first-k clock)")
        print(f"{'nodes':>7} {'kind':>8} {'cn import':>9} {'cn':>9} {'gum':>9} {'ratio':>7}")
        for n, kind, imp, c, p in BUILD_ROWS:
            print(f"{n:>7} {kind:>8} {1e3 * imp:>9.3f} {1e3 * c:>9.3f} {1e3 * p:>9.3f} {p / c:>6.1f}x")
    if FLOOR_ROWS:
        print("\nparents queries: the floor of checking Y's names, ms per query (this process, median of "
              f"{args.repeats} batches); bound = pyAgrum's first {FIRST} / the pass over Y, the best ratio a query that "
              "reads Y once can reach")
        print(f"{'nodes':>7} {'|Y| mean':>8} {'names>=Y':>9} {'Y<=Y':>9} {'query':>9} {'gum ' + str(FIRST):>9} "
              f"{'cn ' + str(FIRST):>9} {'bound':>7}")
        for n, size, t_names, t_own, t_query, gum_first, cn_first in FLOOR_ROWS:
            bound = f"{gum_first / t_names:>6.1f}x" if gum_first else "      -"
            gum = f"{1e3 * gum_first:>9.4f}" if gum_first else "        -"
            cnf = f"{1e3 * cn_first:>9.4f}" if cn_first else "        -"
            print(f"{n:>7} {size:>8.0f} {1e3 * t_names:>9.4f} {1e3 * t_own:>9.4f} {1e3 * t_query:>9.4f} {gum} {cnf} {bound}")
    if args.nx_build_size:
        networkx_with_build(args.nx_build_size, args)


if __name__ == "__main__":
    main()
