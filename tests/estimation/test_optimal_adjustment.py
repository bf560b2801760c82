"""The optimal adjustment set and the reasons a set is invalid.

Oracles: the O-set's defining property (Henckel, Perković & Maathuis 2022) checked exactly: in a
linear Gaussian model the asymptotic variance of the adjusted coefficient, Var(Y | X, Z) / Var(X | Z)
computed from the model's covariance matrix, is smallest for the O-set among all valid sets; validity
against networkx's d-separation in the proper back-door graph.
"""

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.estimation.identify import causal_nodes, open_path, optimal_adjustment_set
from causalnet.graph.paths import is_open_path


def _random_dag(seed, n):
    rng = np.random.default_rng(seed)
    edges = [(f"V{i}", f"V{j}") for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
    return cn.DAG(edges, nodes=[f"V{i}" for i in range(n)]), rng


def _cond_var(cov, idx, a, given):
    s = list(given)
    if not s:
        return cov[idx[a], idx[a]]
    g = [idx[v] for v in s]
    c = cov[np.ix_(g, g)]
    b = cov[idx[a], g]
    return cov[idx[a], idx[a]] - b @ np.linalg.solve(c, b)


def _asymptotic_variance(cov, idx, x, y, z):
    """n * Var of the OLS coefficient of x in y ~ x + z (Henckel et al., Lemma 1)."""
    return _cond_var(cov, idx, y, [x, *z]) / _cond_var(cov, idx, x, z)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(4, 7))
def test_o_set_is_valid_and_has_the_smallest_asymptotic_variance(seed, n):
    g, rng = _random_dag(seed, n)
    x, y = "V0", f"V{n - 1}"
    if y not in g.descendants(x):
        return
    valid = g.adjustment_sets(x, y, max_sets=None)
    o = optimal_adjustment_set(g, x, y)
    assert (o is not None) == bool(valid)
    if o is None:
        return
    assert o in valid
    order = list(g.topological_order())
    idx = {v: i for i, v in enumerate(order)}
    b = np.zeros((n, n))
    for u, v in g.edges:
        b[idx[v], idx[u]] = rng.uniform(0.5, 1.5) * rng.choice([-1, 1])
    a = np.linalg.inv(np.eye(n) - b)
    cov = a @ np.diag(rng.uniform(0.5, 2.0, n)) @ a.T
    best = _asymptotic_variance(cov, idx, x, y, o)
    for z in valid:
        assert best <= _asymptotic_variance(cov, idx, x, y, z) * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 7))
def test_causal_nodes_match_networkx_paths(seed, n):
    g, _ = _random_dag(seed, n)
    x, y = "V0", f"V{n - 1}"
    nxg = g.to_networkx()
    expect = {v for path in nx.all_simple_paths(nxg, x, y) for v in path[1:]}
    assert causal_nodes(g, x, y) == frozenset(expect)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 6))
def test_open_path_is_none_exactly_for_valid_sets_and_is_a_real_open_path(seed, n):
    g, rng = _random_dag(seed, n)
    x, y = "V0", f"V{n - 1}"
    others = [v for v in g.nodes if v not in (x, y)]
    for r in range(len(others) + 1):
        for z in itertools.combinations(others, r):
            why = open_path(g, x, y, set(z))
            assert (why is None) == g.is_adjustment_set(x, y, set(z))
            if why is not None and "descends" not in why:
                nodes = why.replace("<-", "|").replace("->", "|").split("|")
                nodes = [v.strip() for v in nodes]
                assert nodes[0] == x and nodes[-1] == y
                for u, v in zip(nodes, nodes[1:]):
                    assert g.has_edge(u, v) or g.has_edge(v, u)
                assert is_open_path(g, nodes, set(z))                     # open given z, as the name says


def test_worked_example_o_set_and_error_messages():
    g = cn.DAG.parse("A -> X -> M -> Y; B -> M; C -> Y; A -> Y")
    assert optimal_adjustment_set(g, "X", "Y") == {"A", "B", "C"}
    with pytest.raises(cn.GraphError, match=r"X <- A -> Y"):
        cn.estimate(g, {"A": [0.0, 1.0], "X": [0, 1], "M": [0.0, 1.0], "B": [0.0, 1.0], "C": [1.0, 0.0],
                        "Y": [0.0, 1.0]}, "X", "Y", adjust=["C"])
    with pytest.raises(cn.GraphError, match="'M' descends"):
        cn.estimate(g, {"A": [0.0, 1.0], "X": [0, 1], "M": [0.0, 1.0], "B": [0.0, 1.0], "C": [1.0, 0.0],
                        "Y": [0.0, 1.0]}, "X", "Y", adjust=["A", "M"])


def test_latent_parent_falls_back_to_a_minimal_set():
    g = cn.DAG([("U", "M"), ("U", "W"), ("X", "M"), ("M", "Y"), ("W", "X")], latent=["U"])
    # the O-set would hold U (a parent of M); W blocks X <- W <- U -> M -> Y... W is the observed choice
    assert optimal_adjustment_set(g, "X", "Y") is None
    from causalnet.estimation.identify import default_adjustment_set
    assert default_adjustment_set(g, "X", "Y") == {"W"}
