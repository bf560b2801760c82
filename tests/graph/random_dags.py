"""Hypothesis strategy shared by the graph tests: small random DAGs whose node order hides the topological order."""

import hypothesis.strategies as st

import causalnet as cn


@st.composite
def dags(draw, max_nodes=10):
    """A DAG on ``n0 .. n{k-1}`` (2 <= k <= `max_nodes`), each forward pair of a random permutation an edge or not."""
    n = draw(st.integers(2, max_nodes))
    bits = draw(st.lists(st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    perm = draw(st.permutations(range(n)))                 # node order is not the topological order
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = [(f"n{perm[i]}", f"n{perm[j]}") for (i, j), b in zip(pairs, bits) if b]
    return cn.DAG(edges, nodes=[f"n{i}" for i in range(n)])
