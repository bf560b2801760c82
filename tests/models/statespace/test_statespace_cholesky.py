"""The one Cholesky factor both compiled Kalman sweeps use, against numpy's (and its refusals)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet.models.statespace.kernels import cholesky_into

numba = pytest.importorskip("numba")


@pytest.fixture(scope="module")
def compiled():
    chol = cholesky_into.dispatcher()                          # the numba function the sweeps inline

    @numba.njit
    def run(S, L, floor, symmetrise):  # pragma: no cover - compiled
        return chol(S, L, floor, symmetrise)
    return run


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 6), seed=st.integers(0, 2**16), symmetrise=st.booleans())
def test_factor_and_log_det_equal_numpy(compiled, p, seed, symmetrise):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((p, p))
    S = B @ B.T + 0.1 * np.eye(p)                              # (p, p) positive definite
    for fn in (compiled, cholesky_into.py_func):
        L = np.full((p, p), 7.0)
        logdet = fn(S, L, 0.0, symmetrise)
        assert_allclose(np.tril(L), np.linalg.cholesky(S), rtol=1e-10, atol=1e-12)
        assert_allclose(logdet, np.linalg.slogdet(S)[1], rtol=1e-10, atol=1e-12)


def test_symmetrise_factors_the_symmetric_part(compiled):
    S = np.array([[4.0, 2.0], [1.0, 3.0]])                     # not symmetric
    L = np.zeros((2, 2))
    compiled(S, L, 0.0, True)
    assert_allclose(np.tril(L), np.linalg.cholesky((S + S.T) / 2), rtol=1e-12)
    compiled(S, L, 0.0, False)                                 # the lower triangle only
    assert_allclose(np.tril(L), np.linalg.cholesky(np.tril(S) + np.tril(S, -1).T), rtol=1e-12)


@pytest.mark.parametrize("S,floor", [(np.array([[1.0, 2.0], [2.0, 1.0]]), 0.0),       # indefinite
                                     (np.array([[1.0, 1.0], [1.0, 1.0]]), 1e-300),    # singular
                                     (np.array([[np.nan]]), 0.0), (np.array([[1e-301]]), 1e-300)])
def test_not_positive_definite_gives_nan(compiled, S, floor):
    for fn in (compiled, cholesky_into.py_func):
        assert np.isnan(fn(S, np.zeros_like(S), floor, False))
