"""The plain-Python d-separation search (causalnet.graph.reach) against networkx and brute force."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_dags import dags

import causalnet as cn
from causalnet.graph import bitsep, reach
from causalnet.graph import separation as sep
from causalnet.graph.reach import ClosureMemo, ancestral_set, ball_reaches, local_markov_reach


def brute_ancestors(g, v):
    """An({v}) by walking parents one edge at a time until nothing changes."""
    out = {v}
    while True:
        more = {p for u in out for p in g.parents(u)} - out
        if not more:
            return out
        out |= more


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.integers(0, 60))
def test_memo_sets_are_the_closures(g, budget):
    # with any budget: a set is either right or None (never a partial set), and None only once full
    ix = g.index
    memo = ClosureMemo(ix.n, budget=budget)
    G = g.to_networkx()
    for v in g.nodes:
        i = ix.pos[v]
        a, d = memo.ancestors(ix.par, i), memo.descendants(ix.chi, i)
        if a is not None:
            assert {ix.nodes[k] for k in a} == brute_ancestors(g, v) == nx.ancestors(G, v) | {v}
        else:
            assert memo.full
        if d is not None:
            assert {ix.nodes[k] for k in d} == nx.descendants(G, v) | {v}
        else:
            assert memo.full
    stored = sum(len(s) for s in memo.anc + memo.desc if s is not None)
    assert stored + memo.left == budget and memo.left >= 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data(), st.sampled_from([None, 0, 5, reach.MEMO_ELEMENTS]))
def test_ball_in_the_ancestral_set_matches_networkx(g, data, budget):
    ix = g.index
    nodes = list(g.nodes)
    roles = data.draw(st.lists(st.sampled_from("xyz.."), min_size=len(nodes), max_size=len(nodes)))
    x = {v for v, r in zip(nodes, roles) if r == "x"} or {nodes[0]}
    y = {v for v, r in zip(nodes, roles) if r == "y"} - x or ({nodes[-1]} - x)
    if not y:
        return
    z = {v for v, r in zip(nodes, roles) if r == "z"} - x - y
    xi, yi, zi = ([ix.pos[v] for v in s] for s in (x, y, z))
    memo = None if budget is None else ClosureMemo(ix.n, budget=budget)     # None: the plain search
    anc = ancestral_set(memo, ix.par, [*xi, *yi, *zi])
    assert {ix.nodes[k] for k in anc} == set().union(*(brute_ancestors(g, v) for v in x | y | z))
    assert ball_reaches(ix.par, ix.chi, anc, xi, set(yi), set(zi)) is not nx.is_d_separator(g.to_networkx(), x, y, z)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data(), st.booleans())
def test_local_markov_shortcut_is_exact(g, data, with_memo):
    # When it answers, Y avoids the returned set exactly when networkx says d-separated, for every Y;
    # it answers whenever Z holds the parents of X and no descendant of X.
    ix = g.index
    G = g.to_networkx()
    nodes = list(g.nodes)
    x = {data.draw(st.sampled_from(nodes))}
    if data.draw(st.booleans()):
        x |= {data.draw(st.sampled_from(nodes))}
    de = set().union(*(nx.descendants(G, v) | {v} for v in x))
    pa = set().union(*(set(g.parents(v)) for v in x)) - x
    rest = [v for v in nodes if v not in x and v not in pa]
    extra = set(data.draw(st.lists(st.sampled_from(rest), max_size=3))) if rest else set()
    if data.draw(st.booleans()) and pa:
        pa.discard(sorted(pa)[0])            # a parent missing from Z: the shortcut must refuse
    z = pa | extra
    if z & x:
        return
    xi, zi = [ix.pos[v] for v in x], {ix.pos[v] for v in z}
    got = local_markov_reach(ClosureMemo(ix.n) if with_memo else None, ix.par, ix.chi, xi, zi)
    applies = all(set(g.parents(v)) <= z for v in x) and not (z & de)
    assert (got is not None) is applies
    if got is None:
        return
    assert {ix.nodes[k] for k in got} == de
    for v in nodes:
        if v not in x and v not in z:
            assert (ix.pos[v] not in got) is nx.is_d_separator(G, x, {v}, z)


def random_sparse_dag(rng, n, mean_out):
    m = int(mean_out * n)
    a, b = rng.integers(0, n, size=2 * m), rng.integers(0, n, size=2 * m)
    keep = a != b
    pairs = np.unique(np.stack([np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])], axis=1), axis=0)
    perm = rng.permutation(n)
    return cn.DAG([(f"v{perm[i]}", f"v{perm[j]}") for i, j in pairs[:m]], nodes=[f"v{i}" for i in range(n)])


@pytest.mark.parametrize(("budget", "memo_after"), [(sep.MEMO_ELEMENTS, 0), (300, 0), (sep.MEMO_ELEMENTS, 100)])
def test_default_python_path_matches_networkx_on_a_sparse_graph(seed, budget, memo_after, monkeypatch):
    # the path a fresh process takes (kernel not compiled), on the benchmark's kind of graph; a small
    # budget fills the memo part way, so both the stored sets and the plain search answer; with
    # memo_after=100 the first 100 queries use the plain search and the rest the memo
    monkeypatch.setattr(sep, "_MEMO_ELEMENTS", budget)
    monkeypatch.setattr(sep, "_MEMO_AFTER", memo_after)
    monkeypatch.setattr(sep, "_use_kernel", lambda n: False)
    monkeypatch.setattr(bitsep, "ACTIVE", False)        # the engines' Python path, not the quick one
    rng = np.random.default_rng(seed)
    g = random_sparse_dag(rng, 400, 2.5)
    G = g.to_networkx()
    nodes = list(g.nodes)
    for _ in range(150):
        pick = rng.choice(len(nodes), size=8, replace=False)
        x, y, z = nodes[pick[0]], nodes[pick[1]], {nodes[i] for i in pick[2:]}
        assert g.d_separated(x, y, z) is nx.is_d_separator(G, {x}, {y}, z)
    for x in nodes[:60]:        # local Markov statements, and the same with a parent left out of Z
        pa = set(g.parents(x))
        nd = set(nodes) - g.descendants(x, include_self=True) - pa
        if nd:
            assert g.d_separated(x, nd, pa)
        if pa and nd:
            p = sorted(pa)[0]
            assert g.d_separated(x, nd | {p}, pa - {p}) is nx.is_d_separator(G, {x}, nd | {p}, pa - {p})
    memo = g.index.scratch.memo
    assert memo.full if budget < sep.MEMO_ELEMENTS else memo.left < budget     # the memo did serve
    assert g.index.scratch.queries > memo_after


def test_memo_budget_is_shared_and_counted():
    g = cn.DAG([(f"a{i}", f"a{i + 1}") for i in range(30)])     # a chain: An(a_k) has k + 1 nodes
    ix = g.index
    memo = ClosureMemo(ix.n, budget=100)
    assert len(memo.ancestors(ix.par, ix.pos["a10"])) == 11
    assert memo.left == 100 - sum(range(1, 12))
    assert memo.ancestors(ix.par, ix.pos["a29"]) is None and memo.full
    assert memo.ancestors(ix.par, ix.pos["a5"]) == frozenset(range(6))     # stored sets still answer
    assert ancestral_set(memo, ix.par, [ix.pos["a29"]]) == set(range(30))  # the plain search past the budget


def test_first_queries_of_a_process_never_load_numba():
    # a script's first queries are answered in Python: numba is not even imported (issue 23)
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(cn.__file__).parent.parent
    code = """
import sys, json, numpy as np, causalnet as cn
rng = np.random.default_rng(0)
names = [f"v{i}" for i in range(2000)]
a, b = rng.integers(0, 2000, 5000), rng.integers(0, 2000, 5000)
g = cn.DAG([(names[min(i, j)], names[max(i, j)]) for i, j in zip(a, b) if i != j], nodes=names)
out = [g.d_separated(names[i], names[i + 1], set(names[i + 2:i + 12])) for i in range(0, 1000, 5)]
x = names[1500]
out.append(g.d_separated(x, set(names) - g.descendants(x, include_self=True) - set(g.parents(x)), set(g.parents(x))))
print(json.dumps(["numba" in sys.modules, out]))
"""
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CAUSALNET_GRAPH_BACKEND", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr
    numba_loaded, answers = json.loads(r.stdout)
    assert numba_loaded is False and answers[-1] is True and len(answers) == 201
