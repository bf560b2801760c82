"""Compiled (numba) chain sweeps against the numpy ones, and the backend switch."""

import os
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from causalnet.errors import EvidenceError, ModelError
from causalnet.inference import chain
from causalnet.inference.chain import compiled, unrolled

pytestmark = pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not installed")


def _both(fn):
    """``fn()`` under the numba backend and under the numpy backend."""
    with compiled.backend("numba"):
        a = fn()
    with compiled.backend("numpy"):
        b = fn()
    return a, b


def _chain_data(rng, n, T, K, ragged, neg_inf=0.0, scale=2.0):
    unary = rng.normal(size=(n, T, K)) * scale
    if neg_inf:
        unary[rng.random(unary.shape) < neg_inf] = -np.inf
        unary[:, :, 0] = np.maximum(unary[:, :, 0], -5.0)  # keep every row possible
    pairwise = rng.normal(size=(K, K)) * scale
    lengths = rng.integers(1, T + 1, size=n) if ragged else np.full(n, T)
    lengths[0] = T
    mask = np.arange(T)[None, :] < lengths[:, None]
    return unary, pairwise, mask


SHAPES = [
    (1, 1, 1, False), (1, 5, 1, False), (3, 1, 4, False), (4, 7, 3, True), (5, 60, 4, False),
    (6, 300, 6, True), (1, 3000, 5, False), (2, 2500, 16, True), (1, 400, 64, False),
    (3, 200, compiled.VITERBI_WIDE_K - 1, True), (3, 200, compiled.VITERBI_WIDE_K, True), (2, 150, 45, True),
]


@pytest.mark.parametrize("n, T, K, ragged", SHAPES)
def test_compiled_sum_product_equals_numpy(rng, n, T, K, ragged):
    unary, pairwise, mask = _chain_data(rng, n, T, K, ragged)
    a, b = _both(lambda: chain.forward_backward(unary, pairwise, mask, edges=True))
    assert_allclose(a.marginals, b.marginals, rtol=0, atol=1e-12)
    assert_allclose(a.log_z, b.log_z, rtol=1e-12, atol=1e-12)
    assert_allclose(a.edge_marginals, b.edge_marginals, rtol=0, atol=1e-12)
    assert_allclose(a.edge_counts, b.edge_counts, rtol=1e-12, atol=1e-12)
    a, b = _both(lambda: chain.forward_backward(unary, pairwise, mask, counts=True))
    assert_allclose(a.edge_counts, b.edge_counts, rtol=1e-12, atol=1e-12)
    a, b = _both(lambda: chain.log_partition(unary, pairwise, mask))
    assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    a, b = _both(lambda: chain.forward_messages(unary, pairwise, mask))
    real = mask[..., None] & np.ones(K, dtype=bool)
    assert_allclose(a[real], b[real], rtol=1e-12, atol=1e-9)
    assert (a[~real] == -np.inf).all() and (b[~real] == -np.inf).all()


@pytest.mark.parametrize("n, T, K, ragged", SHAPES)
def test_compiled_viterbi_equals_numpy(rng, n, T, K, ragged):
    unary, pairwise, mask = _chain_data(rng, n, T, K, ragged)
    (pa, sa), (pb, sb) = _both(lambda: chain.viterbi(unary, pairwise, mask))
    assert_array_equal(pa, pb)  # continuous potentials: no ties
    assert_allclose(sa, sb, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("K", [2, 3, unrolled.VITERBI_UNROLL_MAX_K, unrolled.VITERBI_UNROLL_MAX_K + 1,
                               compiled.VITERBI_WIDE_K - 1, compiled.VITERBI_WIDE_K, 14, 15, 16, 40])
def test_compiled_viterbi_breaks_exact_ties_like_numpy(rng, K):
    """Integer potentials add exactly, so ties are real: every compiled sweep (unrolled up to
    VITERBI_UNROLL_MAX_K, its tournaments padded with -inf states; narrow below VITERBI_WIDE_K; wide
    from it: previous states in fours, then the 0-3 left over, destination states padded to a
    multiple of 8) keeps the lowest previous state, as argmax."""
    unary = rng.integers(-2, 1, size=(3, 120, K)).astype(float)
    pairwise = rng.integers(-2, 1, size=(K, K)).astype(float)
    pairwise[0, 1 % K] = -np.inf
    mask = np.arange(120)[None, :] < np.array([120, 77, 9])[:, None]
    (pa, sa), (pb, sb) = _both(lambda: chain.viterbi(unary, pairwise, mask))
    assert_array_equal(pa, pb)
    assert_array_equal(sa, sb)


def test_compiled_with_impossible_states_equals_numpy(rng):
    unary, pairwise, mask = _chain_data(rng, 5, 200, 4, True, neg_inf=0.3)
    pairwise[1, 2] = -np.inf
    a, b = _both(lambda: chain.forward_backward(unary, pairwise, mask, edges=True))
    assert_allclose(a.marginals, b.marginals, rtol=0, atol=1e-12)
    assert_allclose(a.log_z, b.log_z, rtol=1e-12, atol=0)
    assert_allclose(a.edge_marginals, b.edge_marginals, rtol=0, atol=1e-12)
    (pa, sa), (pb, sb) = _both(lambda: chain.viterbi(unary, pairwise, mask))
    assert_array_equal(pa, pb)
    assert_allclose(sa, sb, rtol=1e-12, atol=0)


def test_compiled_underflow_falls_back_to_log_space(rng):
    # potentials so small that the scaled normalisers underflow: the rows are
    # redone in log space, on both backends, with the same answer
    T, K = 400, 3
    unary = rng.normal(size=(2, T, K)) - 800.0
    pairwise = rng.normal(size=(K, K))
    ch = chain.Chain.from_batch(unary, pairwise, None)
    ref = chain.log_forward(ch)[1].sum(axis=0)
    a, b = _both(lambda: chain.forward_backward(unary, pairwise, counts=True))
    assert_allclose(a.log_z, ref, rtol=1e-12, atol=0)
    assert_allclose(a.marginals, b.marginals, rtol=0, atol=1e-12)
    assert_allclose(a.edge_counts, b.edge_counts, rtol=1e-12, atol=0)


def test_compiled_impossible_row_raises(rng):
    unary = np.zeros((2, 3, 2))
    unary[1, 1] = -np.inf
    with compiled.backend("numba"):
        with pytest.raises(EvidenceError, match=r"\[1\]"):
            chain.forward_backward(unary, np.zeros((2, 2)))
        with pytest.raises(EvidenceError, match=r"\[1\]"):
            chain.viterbi(unary, np.zeros((2, 2)))


def test_backend_switch_and_errors():
    prev = compiled.get_backend()
    with compiled.backend("numpy"):
        assert not compiled.enabled() and compiled.get_backend() == "numpy"
        with compiled.backend("numba"):
            assert compiled.enabled()
        assert compiled.get_backend() == "numpy"
    assert compiled.get_backend() == prev
    with pytest.raises(ModelError, match="backend"):
        compiled.set_backend("cuda")
    assert compiled.get_backend() == prev


@pytest.mark.parametrize("value, expected", [("numpy", "numpy"), ("auto", "numba"), ("bogus", "numba")])
def test_backend_from_environment(value, expected):
    env = {**os.environ, compiled.ENV_VAR: value}
    code = "from causalnet.inference.chain import compiled; print(compiled.get_backend())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


@pytest.mark.parametrize("scale", [0.0, 30.0, 100.0])
def test_lazy_rescaling_log_partition_equals_numpy(rng, scale):
    # the compiled log-partition rescales only when the mass leaves [1e-100, 1e100]: steps that
    # shrink it by ~e^-100 or more (some rows redone in log space) and flat potentials (growing mass) alike
    unary, pairwise, mask = _chain_data(rng, 3, 2000, 5, True, scale=scale)
    pairwise = np.abs(pairwise) + 1.0  # non-stochastic, > 1: the mass grows
    a, b = _both(lambda: chain.log_partition(unary, pairwise, mask))
    assert_allclose(a, b, rtol=1e-12, atol=1e-9)
    p, q = _both(lambda: chain.forward_backward(unary, pairwise, mask, counts=True))  # marginals over alpha
    assert_allclose(p.marginals, q.marginals, rtol=0, atol=1e-12)
    assert_allclose(p.edge_counts, q.edge_counts, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("K", [1, 2, 3, 4, 7, unrolled.UNROLL_MAX_K, unrolled.UNROLL_MAX_K + 1])
def test_unrolled_sweeps_equal_numpy(rng, K):
    # the unrolled log-partition and forward sweeps (each K in the narrowest width of WIDTHS,
    # zero-padded) and the looped ones above UNROLL_MAX_K, against the numpy sweeps; impossible
    # states make zero message entries
    unary, pairwise, mask = _chain_data(rng, 4, 300, K, True, neg_inf=0.2)
    a, b = _both(lambda: chain.log_partition(unary, pairwise, mask))
    assert_allclose(a, b, rtol=1e-12, atol=0)
    p, q = _both(lambda: chain.forward_backward(unary, pairwise, mask, counts=True))
    assert_allclose(p.log_z, q.log_z, rtol=1e-12, atol=0)
    assert_allclose(p.marginals, q.marginals, rtol=0, atol=1e-12)
    assert_allclose(p.edge_counts, q.edge_counts, rtol=1e-12, atol=1e-12)
    a, b = _both(lambda: chain.forward_messages(unary, pairwise, mask))
    assert_array_equal(np.isneginf(a), np.isneginf(b))
    real = np.isfinite(b)
    assert_allclose(a[real], b[real], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("K", [1, 2, 9, 32, 33])
def test_last_axis_max_equals_numpy(K):
    from causalnet.inference.chain.kernels import last_axis_max

    u = np.random.default_rng(K).standard_normal((3, 5, K))
    u[0, 1] = -np.inf
    u[1, 2, 0] = np.nan
    assert np.array_equal(last_axis_max(u), u.max(axis=-1), equal_nan=True)
