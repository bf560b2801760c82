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


# -- the three ways of computing the raw sums agree with a dense einsum -------------------------------


def _dense_sums(config, q, values):
    onehot = np.eye(q)[config]                                                              # (n, q)
    return (onehot.sum(axis=0), np.einsum("nk,ni->ki", onehot, values),
            np.einsum("nk,ni,nj->kij", onehot, values, values))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 300), q=st.sampled_from([2, 3, 5, 70, 300]), m=st.integers(1, 4),
       skew=st.booleans())
def test_sorted_laned_and_compiled_sums_equal_a_dense_einsum(seed, n, q, m, skew):
    from causalnet.learning import cg_kernel, conditional

    rng = np.random.default_rng(seed)
    config = (rng.integers(0, 2, n) if skew else rng.integers(0, q, n)).astype(np.int64)   # empty configurations too
    values = rng.normal(size=(n, m)) * 3.0
    cols = [np.ascontiguousarray(values[:, j]) for j in range(m)]
    want = _dense_sums(config, q, values)
    small = config.astype(np.uint8) if q <= 256 else config                                  # the 8-bit codes too
    for got in (conditional._sorted_sums(config, q, cols), conditional._bincount_sums(config, q, cols, cols, None),
                cg_kernel.moment_sums(config, q, cols), conditional._masked_sums(config, q, cols),
                conditional._masked_sums(small, q, cols), conditional._sorted_sums(small, q, cols),
                conditional._bincount_sums(small, q, cols, cols, None)):
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert_allclose(g, w, rtol=1e-12, atol=1e-9)


def test_compiled_and_numpy_fits_agree_on_a_mixed_network():
    import causalnet as cn
    from causalnet import runtime

    m = cn.gallery.load("waste-incinerator")
    df = m.sample(3000, seed=2).to_pandas()
    with runtime.backend("learning", "numpy"):
        ref = cn.fit(m.dag, df)
    with runtime.backend("learning", "numba"):
        got = cn.fit(m.dag, df)
    for v in m.nodes:
        a, b = ref.mechanisms[v], got.mechanisms[v]
        for attr in ("table", "intercept", "weights", "variance", "bias", "sigma"):
            if hasattr(a, attr):
                assert_allclose(np.asarray(getattr(b, attr)), np.asarray(getattr(a, attr)), rtol=1e-10, atol=1e-12)


def test_learning_backend_switch_decides_the_compiled_path():
    from causalnet import runtime
    from causalnet.learning import cg_kernel

    with runtime.backend("learning", "numpy"):
        assert not cg_kernel.use_compiled(10**7)
    with runtime.backend("learning", "numba"):
        assert cg_kernel.use_compiled(10)
    with runtime.backend("learning", "auto"):
        assert not cg_kernel.use_compiled(cg_kernel.AUTO_MIN_ROWS - 1)
        spent = cg_kernel.numpy_seconds()
        cg_kernel.record_numpy_time(cg_kernel.AUTO_BUDGET_S)          # the budget spent: large tables compile
        try:
            assert cg_kernel.use_compiled(cg_kernel.AUTO_MIN_ROWS)
            assert not cg_kernel.use_compiled(cg_kernel.AUTO_MIN_ROWS - 1)
        finally:
            cg_kernel.record_numpy_time(spent - cg_kernel.numpy_seconds())


def test_auto_backend_does_not_load_numba_for_one_fit():
    import subprocess
    import sys

    code = ("import sys, causalnet as cn; m = cn.gallery.load('waste-incinerator'); "
            "cn.fit(m.dag, m.sample(30000, seed=0).to_pandas()); "
            "assert 'numba' not in sys.modules, 'numba imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env={**__import__("os").environ,
                                                                   "CAUSALNET_LEARNING_BACKEND": "auto"})


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 400), cards=st.lists(st.integers(2, 7), min_size=1, max_size=4),
       missing=st.booleans())
def test_narrow_counts_and_configurations_equal_a_brute_force_count(seed, n, cards, missing):
    """The 8-bit configuration index and counting (few states: one count_nonzero per value) against a Python
    loop over the rows; with a missing cell or more than 256 configurations the 64-bit path answers."""
    from causalnet.learning.conditional import config_index
    from causalnet.learning.data import DiscreteColumn, Table, family_counts, narrow_config

    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, k, n) for k in cards]
    if missing:
        codes[0][rng.integers(0, n)] = -1
    names = [f"V{i}" for i in range(len(cards))]
    table = Table({v: DiscreteColumn(c, tuple(range(k))) for v, c, k in zip(names, codes, cards)}, n)
    want = np.zeros(cards, dtype=np.int64)
    for r in range(n):
        if all(c[r] >= 0 for c in codes):
            want[tuple(int(c[r]) for c in codes)] += 1
    got = family_counts(table, names[-1], names[:-1])
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    small, got_cards = narrow_config(table, names)
    assert got_cards == tuple(cards)
    if missing or np.prod(cards) > 256:
        assert small is None
    else:
        assert small.dtype == np.uint8
        np.testing.assert_array_equal(small, config_index(table, names)[0])
