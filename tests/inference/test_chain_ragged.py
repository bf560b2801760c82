"""Tests for causalnet.inference.chain.ragged: the flat ragged forward-backward against enumeration,
the padded chain engine (its numpy reference) and its fallback for sequences it cannot do."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import logsumexp

from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference.chain import compiled
from causalnet.inference.chain.ragged import (
    AVAILABLE,
    forward_backward_padded,
    forward_backward_ragged,
)

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def _enumerate(unary, A, lengths):
    """log Z (n,), marginals (N, K) and expected transition counts (K, K) by summing over every label path."""
    K = unary.shape[1]
    log_z, marg, counts = [], np.zeros_like(unary), np.zeros((K, K))
    start = 0
    for L in lengths.tolist():
        u = unary[start : start + L]
        paths = np.array(list(itertools.product(range(K), repeat=L)))  # (K^L, L)
        s = u[np.arange(L), paths].sum(1) + A[paths[:, :-1], paths[:, 1:]].sum(1)  # (K^L,)
        lz = logsumexp(s)
        p = np.exp(s - lz)
        for t in range(L):
            np.add.at(marg[start + t], paths[:, t], p)
            if t:
                np.add.at(counts, (paths[:, t - 1], paths[:, t]), p)
        log_z.append(lz)
        start += L
    return np.array(log_z), marg, counts


def _batch(rng, n, K, max_len, scale=1.5):
    lengths = rng.integers(1, max_len + 1, size=n)
    return rng.normal(scale=scale, size=(int(lengths.sum()), K)), rng.normal(scale=scale, size=(K, K)), lengths


@needs_numba
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(1, 4))
def test_kernel_matches_enumeration(seed, K):
    rng = np.random.default_rng(seed)
    U, A, lengths = _batch(rng, 5, K, 5 if K <= 3 else 4)
    got = forward_backward_ragged(U, A, lengths, backend="numba")
    for g, w in zip(got, _enumerate(U, A, lengths)):
        assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@needs_numba
@pytest.mark.parametrize("K", [1, 2, 9, 17])
def test_kernel_matches_padded_engine(rng, K):
    U, A, lengths = _batch(rng, 60, K, 40, scale=3.0)
    out = np.empty_like(U)
    got = forward_backward_ragged(U, A, lengths, backend="numba", out=out)
    assert got[1] is out
    ref = forward_backward_padded(U, A, lengths)
    for g, w in zip(got, ref):
        assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    numpy = forward_backward_ragged(U, A, lengths, backend="numpy")
    for g, w in zip(numpy, ref):
        assert_allclose(g, w, rtol=0, atol=0)


@needs_numba
def test_underflowing_and_forbidden_sequences_are_redone(rng):
    K = 3
    U, A, lengths = _batch(rng, 6, K, 8)
    A[0, 1] = -np.inf  # a forbidden transition: fine for the kernel
    U[lengths[0] : lengths[0] + 2] = [[0.0, -np.inf, -np.inf], [-np.inf, 0.0, -900.0]]  # forces 0 -> 1 -> (1 or 2)
    A[0, 2] = -800.0  # ... whose weight underflows in probability space: sequence 1 is redone in log space
    got = forward_backward_ragged(U, A, lengths, backend="numba")
    ref = forward_backward_padded(U, A, lengths)
    assert np.isfinite(got[0]).all()
    for g, w in zip(got, ref):
        assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@needs_numba
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_bad_potentials_raise_the_engine_errors(rng, backend):
    U, A, lengths = _batch(rng, 4, 2, 3)
    bad = U.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ModelError):
        forward_backward_ragged(bad, A, lengths, backend=backend)
    with pytest.raises(ModelError):
        forward_backward_ragged(U, np.full((2, 2), np.nan), lengths, backend=backend)
    impossible = U.copy()
    impossible[0] = -np.inf
    with pytest.raises(EvidenceError):
        forward_backward_ragged(impossible, A, lengths, backend=backend)
    with pytest.raises(ModelError, match="backend"):
        forward_backward_ragged(U, A, lengths, backend="cuda")


def test_numpy_backend_follows_the_chain_switch(rng):
    U, A, lengths = _batch(rng, 5, 3, 6)
    with compiled.backend("numpy"):
        got = forward_backward_ragged(U, A, lengths)
    for g, w in zip(got, _enumerate(U, A, lengths)):
        assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_bad_arguments_are_refused_by_name_before_the_kernel_reads(backend):
    U = np.zeros((5, 3))
    with pytest.raises(ShapeError, match=r"\(K, K\) = \(3, 3\)"):
        forward_backward_ragged(U, np.zeros((2, 2)), np.array([2, 3]), backend=backend)
    with pytest.raises(ShapeError, match="sum to 4 but unary has N = 5"):
        forward_backward_ragged(U, np.zeros((3, 3)), np.array([2, 2]), backend=backend)
    with pytest.raises(ShapeError, match="sum to 6"):
        forward_backward_ragged(U, np.zeros((3, 3)), np.array([3, 3]), backend=backend)
    with pytest.raises(EvidenceError, match="at least one step"):
        forward_backward_ragged(U, np.zeros((3, 3)), np.array([0, 5]), backend=backend)
    with pytest.raises(ShapeError, match="1-D integer"):
        forward_backward_ragged(U, np.zeros((3, 3)), np.array([2.0, 3.0]), backend=backend)
    with pytest.raises(ShapeError, match="out must be a float64 array of shape"):
        forward_backward_ragged(U, np.zeros((3, 3)), np.array([2, 3]), backend=backend, out=np.empty((5, 2)))
    with pytest.raises(ModelError, match="share memory"):
        forward_backward_ragged(U, np.zeros((3, 3)), np.array([2, 3]), backend=backend, out=U)
    log_z, M, _ = forward_backward_ragged(U, np.zeros((3, 3)), [2, 3], backend=backend)   # a list of lengths is fine
    assert np.allclose(log_z, [2 * np.log(3), 3 * np.log(3)]) and np.allclose(M, 1 / 3)
