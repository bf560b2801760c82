"""DAG construction speed: causalnet vs pyAgrum (``gum.DAG``) and networkx, from an edge list and from text.

Usage::

    python benchmarks/graph_build.py                  # 10^3, 10^4, 10^5 nodes
    python benchmarks/graph_build.py --sizes 100000 --repeats 3

Random DAGs with mean out-degree 2.5 (as in ``benchmarks/dsep.py``); node
names are strings ``v17`` that hide the topological order. Every repetition
gets a *fresh* edge list (new string objects, as after reading a file), so no
library profits from hashes another one computed.

* **edge list**: ``cn.DAG(edges, nodes=nodes)`` (validation, cycle check,
  index) vs pyAgrum's ``gum.DAG`` filled with ``addNode`` / ``addArc`` (its
  arcs are checked for cycles as they are added; names mapped to ids with a
  dict, as a user must) vs ``nx.DiGraph(edges)`` plus
  ``nx.is_directed_acyclic_graph`` (the same validation).
* **text**: ``cn.DAG.parse(text)`` vs ``gum.fastDAG(text)`` on the same
  ``"v1->v2;v3->v4;..."`` string.

Times are CPU seconds (``time.process_time``), median of ``--repeats``;
ratios are peer time / causalnet time.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import networkx as nx  # noqa: E402
from agreement import require  # noqa: E402
from dsep import random_dag  # noqa: E402

import causalnet as cn  # noqa: E402


def gum_from_edges(nodes, edges):
    import pyagrum as gum

    d = gum.DAG()
    ids = {v: d.addNode() for v in nodes}
    for u, v in edges:
        d.addArc(ids[u], ids[v])
    return d


def nx_from_edges(nodes, edges):
    G = nx.DiGraph(edges)
    G.add_nodes_from(nodes)
    if not nx.is_directed_acyclic_graph(G):
        raise ValueError("cycle")
    return G


def gum_from_text(text):
    import pyagrum as gum

    return gum.fastDAG(text)


def timed(build, n: int, repeats: int, text: bool) -> float:
    times = []
    for _ in range(repeats):
        edges = random_dag(n, 2.5, seed=n)              # fresh strings every time
        nodes = [f"v{i}" for i in range(n)]
        arg = (";".join(f"{u}->{v}" for u, v in edges),) if text else (nodes, edges)
        t0 = time.process_time()
        out = build(*arg)
        times.append(time.process_time() - t0)
        del out
    return statistics.median(times)


def check_same_graphs(n: int) -> None:
    """The four builds of one input give the same graph (exit status 1 otherwise, before any ratio)."""
    edges = random_dag(n, 2.5, seed=n)
    nodes = [f"v{i}" for i in range(n)]
    want = {(u, v) for u, v in edges}
    ours = cn.DAG(edges, nodes=nodes)
    require(len(ours.nodes) == n and set(ours.edges) == want, f"n={n}: cn.DAG from edges lost nodes or edges")
    parsed = cn.DAG.parse(";".join(f"{u}->{v}" for u, v in edges))
    require(set(parsed.edges) == want, f"n={n}: cn.DAG.parse differs from the edge list")
    g = gum_from_edges(nodes, edges)
    require({(nodes[a], nodes[b]) for a, b in g.arcs()} == want, f"n={n}: pyAgrum's DAG differs")
    t = gum_from_text(";".join(f"{u}->{v}" for u, v in edges))
    require({(t.nameFromId(a), t.nameFromId(b)) for a, b in t.arcs()} == want, f"n={n}: pyAgrum's fastDAG differs")
    require(set(nx_from_edges(nodes, edges).edges) == want, f"n={n}: networkx's DiGraph differs")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"load: {os.getloadavg()[0]:.1f}")
    print(f"{'nodes':>7} {'input':>9} {'causalnet s':>12} {'pyAgrum s':>10} {'gum/cn':>7} {'networkx s':>11} {'nx/cn':>6}")
    for n in args.sizes:
        check_same_graphs(n)
        cn_s = timed(lambda nodes, edges: cn.DAG(edges, nodes=nodes), n, args.repeats, False)
        gum_s = timed(gum_from_edges, n, args.repeats, False)
        nx_s = timed(nx_from_edges, n, args.repeats, False)
        print(f"{n:>7} {'edges':>9} {cn_s:>12.4f} {gum_s:>10.4f} {gum_s / cn_s:>6.1f}x {nx_s:>11.4f} {nx_s / cn_s:>5.1f}x",
              flush=True)
        cn_s = timed(cn.DAG.parse, n, args.repeats, True)
        gum_s = timed(gum_from_text, n, args.repeats, True)
        print(f"{n:>7} {'text':>9} {cn_s:>12.4f} {gum_s:>10.4f} {gum_s / cn_s:>6.1f}x", flush=True)


if __name__ == "__main__":
    main()
