"""The fast exact GELU (causalnet.mechanisms.tensor.erf) against scipy's erf, on a dense grid and extremes.

Oracle: ``0.5 x (1 + scipy.special.erf(x / sqrt 2))`` in float64 (scipy's erf is
correctly rounded to about an ulp). float64 must agree to 1e-12 relative (up to
the cancellation of ``1 + erf`` far left, where both round the same ~1e-16
error in erf); float32 within a few float32 ulps of ``max(|x|, 1)``, as the
float32 formula with an exact erf.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import erf

from causalnet import runtime
from causalnet.mechanisms.tensor import erf as E
from causalnet.mechanisms.tensor.activations import gelu

EPS32 = float(np.finfo(np.float32).eps)
GRID = np.concatenate([np.linspace(-12.0, 12.0, 480_001), np.geomspace(1e-30, 1e6, 2001),
                       -np.geomspace(1e-30, 1e6, 2001), [0.0, -0.0, 3.8, 3.9, 3.95, 5.5, 5.52, 5.6]])
BACKENDS = [E.gelu_numpy] + ([E.gelu_numba] if E.AVAILABLE else [])


def exact(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def test_fitted_erf_meets_its_documented_error():
    u = np.linspace(0.0, E.ERF32_CLAMP, 400_001)[1:]
    p = np.polyval(E.ERF32_P[::-1], u * u)
    q = np.polyval(E.ERF32_Q[::-1], u * u)
    assert np.max(np.abs(u * p / q - erf(u)) / erf(u)) < 2.5e-9


@pytest.mark.parametrize("fn", BACKENDS, ids=lambda f: f.__name__)
def test_float64_matches_scipy(fn):
    x = np.concatenate([GRID, [1e300, -1e300, 5e-324, -5e-324]])
    got, ref = fn(x), exact(x)
    assert got.dtype == np.float64
    bound = 1e-12 * np.abs(ref) + 1e-15 * np.abs(x)     # the second term: erf's last ulp in 1 + erf, far left
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("fn", BACKENDS, ids=lambda f: f.__name__)
def test_float32_within_round_off(fn):
    x32 = GRID.astype(np.float32)
    got = fn(x32)
    assert got.dtype == np.float32
    ref = exact(x32)
    assert np.all(np.abs(got - ref) <= 4 * EPS32 * np.maximum(np.abs(x32), 1.0))
    right = x32 >= -1                                     # no cancellation in 1 + erf: relative round-off
    assert_allclose(got[right], ref[right], rtol=4 * EPS32, atol=1e-44)


@pytest.mark.parametrize("fn", BACKENDS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_limits_are_exact(fn, dtype):
    x = np.array([np.inf, 1e30, 40.0, 0.0, -40.0, -1e30], dtype)
    with np.errstate(all="ignore"):
        got = fn(x)
        nan = fn(np.array([np.nan], dtype))
    assert got[0] == np.inf and got[1] == x[1] and got[2] == 40.0
    assert np.all(got[3:] == 0) and not np.any(np.signbit(got[3:]) != np.signbit(x[3:]))
    assert np.isnan(nan[0])


def test_numpy_fallback_is_used_without_numba(monkeypatch):
    x = np.linspace(-6, 6, 1001).astype(np.float32)
    monkeypatch.setattr(E, "AVAILABLE", False)
    assert np.array_equal(E.gelu_erf(x), E.gelu_numpy(x))
    assert np.array_equal(gelu(x), E.gelu_numpy(x))


@pytest.mark.skipif(not E.AVAILABLE, reason="numba not installed")
def test_backends_agree_and_keep_shape():
    x = np.random.default_rng(0).standard_normal((3, 5, 7)).astype(np.float32) * 3
    a, b = E.gelu_numba(x), E.gelu_numpy(x)
    assert a.shape == x.shape
    assert_allclose(a, b, rtol=4 * EPS32, atol=4 * EPS32)
    with runtime.backend("tensor", "numba"):                     # tests run with the numpy backend
        assert np.array_equal(gelu(x), a)
        y = x.copy()
        assert E.gelu_erf_(y) is y and np.array_equal(y, a)   # in place, same values
    with runtime.backend("tensor", "numpy"):
        assert np.array_equal(gelu(x), b)                        # the numpy backend: numpy's values
