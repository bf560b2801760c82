"""Per-configuration moments (causalnet.learning.conditional.Moments): property tests against numpy.

Invariants: the moments of two sets of rows merge into the moments of their union (any split); weighted
rows equal repeated rows; ``solve`` equals ``numpy.linalg.lstsq`` on each configuration's rows; the raw-sum
constructor (EM's) equals the row constructor.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet.learning.conditional import Moments


def _data(seed, n, q, m, offset):
    rng = np.random.default_rng(seed)
    config = rng.integers(0, q, n)
    values = rng.normal(size=(n, m)) * rng.uniform(0.1, 3.0, m) + offset
    values[:, -1] += values[:, :-1] @ rng.normal(size=m - 1) + config       # a response that depends on both
    return config, values


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(20, 200), q=st.integers(1, 4), m=st.integers(1, 4),
       offset=st.sampled_from([0.0, 5.0, 1e4]), cut=st.floats(0.1, 0.9))
def test_moments_merge_and_solve_equal_numpy(seed, n, q, m, offset, cut):
    config, values = _data(seed, n, q, m, offset)
    whole = Moments.from_rows(config, q, values)
    k = int(cut * n)
    merged = Moments.from_rows(config[:k], q, values[:k]).merge(Moments.from_rows(config[k:], q, values[k:]))
    assert_allclose(merged.weight, whole.weight)
    assert_allclose(merged.mean, whole.mean, rtol=1e-10, atol=1e-9 * (1 + offset))
    scale = 1e-8 * (1 + offset) ** 2 * n
    assert_allclose(merged.scatter, whole.scatter, rtol=1e-8, atol=scale)
    b, w, var = whole.solve("y")
    for c in range(q):
        rows = config == c
        if rows.sum() < m + 1:
            continue
        X = np.column_stack([np.ones(rows.sum()), values[rows, :-1]])
        coef, *_ = np.linalg.lstsq(X, values[rows, -1], rcond=None)
        rss = np.sum((values[rows, -1] - X @ coef) ** 2)
        assert_allclose(np.r_[b[c], w[c]], coef, rtol=1e-6, atol=1e-6 * (1 + offset))
        assert_allclose(var[c], rss / rows.sum(), rtol=1e-6, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(5, 60), q=st.integers(1, 3), m=st.integers(1, 3))
def test_weights_are_repeated_rows_and_raw_sums_agree(seed, n, q, m):
    config, values = _data(seed, n, q, m, 1.0)
    reps = np.random.default_rng(seed + 1).integers(1, 4, n)
    weighted = Moments.from_rows(config, q, values, weights=reps.astype(float))
    repeated = Moments.from_rows(np.repeat(config, reps), q, np.repeat(values, reps, axis=0))
    assert_allclose(weighted.weight, repeated.weight)
    assert_allclose(weighted.mean, repeated.mean, rtol=1e-10, atol=1e-10)
    assert_allclose(weighted.scatter, repeated.scatter, rtol=1e-9, atol=1e-9)
    first = np.stack([np.bincount(config, weights=values[:, j], minlength=q) for j in range(m)], axis=-1)
    second = np.einsum("ni,nj,nk->kij", values, values, np.eye(q)[config])
    raw = Moments.from_raw(np.bincount(config, minlength=q).astype(float), first, second)
    plain = Moments.from_rows(config, q, values)
    assert_allclose(raw.mean, plain.mean, rtol=1e-10, atol=1e-10)
    assert_allclose(raw.scatter, plain.scatter, rtol=1e-8, atol=1e-8)
