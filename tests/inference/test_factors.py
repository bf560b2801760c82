"""Tests for causalnet.inference.discrete.factors: the discrete factor algebra.

Oracles: numpy broadcasting and explicit indexing (independent of einsum), and
the sum/product exchange rule (Koller & Friedman eq. 9.6) as a property.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from causalnet import EvidenceError, ModelError, ShapeError
from causalnet.inference.discrete import factors as F
from causalnet.inference.discrete.factors import BATCH, MAX_EINSUM_AXES, Factor, contract, factor_product


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def _broadcast(values, vars_, union):
    """Reshape/transpose a table over `vars_` so it broadcasts over `union` (oracle)."""
    perm = sorted(range(len(vars_)), key=lambda i: union.index(vars_[i]))
    t = np.transpose(values, perm)
    shape = [1] * len(union)
    for i in perm:
        shape[union.index(vars_[i])] = values.shape[i]
    return t.reshape(shape)


@pytest.fixture
def abc(rng):
    fa = Factor(["A", "B"], rng.random((2, 3)))
    fb = Factor(["C", "B"], rng.random((4, 3)))
    return fa, fb


def test_product_matches_broadcasting(abc):
    fa, fb = abc
    p = fa * fb
    assert p.vars == ("A", "B", "C")
    assert p.cards == (2, 3, 4)
    union = ["A", "B", "C"]
    want = _broadcast(fa.values, fa.vars, union) * _broadcast(fb.values, fb.vars, union)
    assert_allclose(p.values, want, rtol=0, atol=1e-14)


def test_marginalize_and_keep_order(abc):
    fa, fb = abc
    p = factor_product([fa, fb], keep=["C", "A"])
    want = (_broadcast(fa.values, fa.vars, ["A", "B", "C"]) * _broadcast(fb.values, fb.vars, ["A", "B", "C"])).sum(1)
    assert p.vars == ("C", "A")
    assert_allclose(p.values, want.T, rtol=0, atol=1e-14)
    assert_allclose((fa * fb).marginalize(["B"]).values, want, rtol=0, atol=1e-14)


def test_max_marginalize_with_argmax(rng):
    f = Factor(["A", "B", "C"], rng.random((2, 3, 4)))
    m, arg = f.max_marginalize(["C", "A"])
    assert m.vars == ("B",)
    assert_allclose(m.values, f.values.max(axis=(0, 2)), rtol=0, atol=0)
    for b in range(3):
        assert f.values[arg["A"][b], b, arg["C"][b]] == m.values[b]


def test_reduce_scalar_and_batched(rng):
    f = Factor(["A", "B", "C"], rng.random((2, 3, 4)))
    r = f.reduce({"B": 2, "Z": 0})           # unknown vars are ignored
    assert r.vars == ("A", "C")
    assert_array_equal(r.values, f.values[:, 2, :])
    rows = np.array([0, 2, 1, 2, 0])
    rb = f.reduce({"B": rows, "A": 1})
    assert rb.batched and rb.n == 5 and rb.vars == ("C",)
    assert_array_equal(rb.values, f.values[1, rows, :])
    # reducing a batched factor again, per row
    c = np.array([3, 0, 1, 1, 2])
    rbb = f.reduce({"B": rows}).reduce({"C": c})
    assert_array_equal(rbb.values, f.values[:, rows, c].T)


def test_batched_times_unbatched(rng):
    f = Factor(["A", "B"], rng.random((2, 3)))
    g = Factor(["B"], rng.random((5, 3)), batched=True)
    p = factor_product([f, g], keep=["A"])
    assert p.batched and p.values.shape == (5, 2)
    assert_allclose(p.values, (f.values[None] * g.values[:, None, :]).sum(-1), rtol=0, atol=1e-14)


def test_normalize_and_zero_total(rng):
    f = Factor(["A"], [[0.2, 0.6], [0.0, 0.0]], batched=True)
    with pytest.raises(EvidenceError, match=r"sums to zero \(rows \[1\]\)"):
        f.normalize()
    g, log_z = Factor(["A"], [1.0, 3.0]).normalize()
    assert_allclose(g.values, [0.25, 0.75], rtol=0, atol=1e-15)
    assert log_z == pytest.approx(np.log(4.0), abs=1e-15)


def test_factor_is_immutable(rng):
    arr = rng.random((2, 2))
    f = Factor(["A", "B"], arr)
    arr[0, 0] = 99.0                          # the caller's array was copied
    assert f.values[0, 0] != 99.0
    with pytest.raises(ValueError):
        f.values[0, 0] = 1.0
    with pytest.raises(AttributeError):
        f.vars = ("X", "Y")


def test_bad_factors():
    with pytest.raises(ShapeError, match=r"expects values of shape \(K_A, K_B\), got shape \(3,\)"):
        Factor(["A", "B"], np.ones(3))
    with pytest.raises(ModelError, match="repeats the variable 'A'"):
        Factor(["A", "A"], np.ones((2, 2)))
    with pytest.raises(ModelError, match="negative or non-finite"):
        Factor(["A"], [0.5, -0.1])
    f = Factor(["A"], [0.5, 0.5])
    with pytest.raises(ModelError, match="cannot sum out 'B'"):
        f.marginalize(["B"])
    with pytest.raises(EvidenceError, match=r"'A' has 2 states \(0..1\); evidence gives state 2"):
        f.reduce({"A": 2})
    with pytest.raises(EvidenceError, match="must be an integer state index"):
        f.reduce({"A": 0.5})
    with pytest.raises(ModelError, match="'A' has 2 states in one factor and 3"):
        factor_product([f, Factor(["A"], np.ones(3))])
    with pytest.raises(ShapeError, match="disagree on the batch size: 2 and 3"):
        factor_product([Factor(["A"], np.ones((2, 2)), batched=True), Factor(["A"], np.ones((3, 2)), batched=True)])
    fb = f.reduce({"A": np.array([0, 1])})
    with pytest.raises(EvidenceError, match="has 3 rows; expected 2"):
        Factor(["A", "B"], np.ones((2, 2, 2)), batched=True).reduce({"B": np.array([0, 1, 1])})
    assert fb.n == 2


@pytest.fixture
def einsum_spy(monkeypatch):
    """Record the number of distinct axes of every einsum call."""
    seen = []
    orig = np.einsum

    def spy(*args, **kwargs):
        subs = args[0]
        if isinstance(subs, str):
            seen.append(len(set(subs.split("->")[0].replace(",", ""))))
        else:                                 # sublist form
            seen.append(len({lab for a in args[1::2] for lab in a}))
        return orig(*args, **kwargs)

    monkeypatch.setattr(np, "einsum", spy)
    return seen


def test_contract_more_than_32_axes(rng, einsum_spy):
    # 40 axes of size 1 and 4 of size 2: a product over 44 distinct labels
    labels_a = [f"u{i}" for i in range(40)] + ["a", "b"]
    labels_b = ["b", "c", "d"] + [f"u{i}" for i in range(0, 40, 3)]
    a = rng.random([1] * 40 + [2, 2])
    b = rng.random([2, 2, 2] + [1] * len(range(0, 40, 3)))
    out = ["d", *[f"u{i}" for i in range(5)], "a", *[f"u{i}" for i in range(30, 40)], "c"]
    got = contract([a, b], [labels_a, labels_b], out)
    small = np.einsum("ab,bcd->dac", a.reshape(2, 2), b.reshape(2, 2, 2))
    assert got.shape == (2, 1, 1, 1, 1, 1, 2, *[1] * 10, 2)
    assert_allclose(got.reshape(2, 2, 2), small, rtol=0, atol=1e-14)
    assert einsum_spy and max(einsum_spy) <= MAX_EINSUM_AXES
    # the Factor API too, and a single operand with > 32 axes
    fa = Factor(labels_a, a)
    m = fa.marginalize(labels_a[:20] + ["a"])
    assert m.vars == (*labels_a[20:40], "b")
    assert_allclose(m.values.reshape(2), a.reshape(2, 2).sum(0), rtol=0, atol=1e-14)
    assert max(einsum_spy) <= MAX_EINSUM_AXES


def test_contract_many_operands(rng, einsum_spy):
    vecs = [rng.random(3) for _ in range(40)]
    got = contract(vecs, [["x"]] * 40, ["x"])
    assert_allclose(got, np.prod(vecs, axis=0), rtol=1e-13, atol=0)
    assert max(einsum_spy) <= MAX_EINSUM_AXES
    got = contract(vecs, [["x"]] * 40, [])
    assert_allclose(got, np.prod(vecs, axis=0).sum(), rtol=1e-13, atol=0)


def test_batch_label_is_not_a_variable():
    assert repr(BATCH) == "<batch>"
    assert BATCH != "batch"
    assert F.MAX_EINSUM_OPERANDS <= 32


@st.composite
def _factor_pair(draw):
    """Two factors over random subsets of 5 variables; X occurs in the second only."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    names = ["X", "A", "B", "C", "D"]
    cards = {v: int(rng.integers(1, 4)) for v in names}
    va = [v for v in names[1:] if rng.random() < 0.6]
    vb = ["X"] + [v for v in names[1:] if rng.random() < 0.6]
    rng.shuffle(vb)
    fa = Factor(va, rng.random([cards[v] for v in va]))
    fb = Factor(vb, rng.random([cards[v] for v in vb]))
    return fa, fb


@settings(max_examples=60, deadline=None)
@given(_factor_pair())
def test_sum_exchanges_with_independent_factor(pair):
    # Koller & Friedman eq. 9.6: sum_X (fa * fb) = fa * sum_X fb when X is not in fa
    fa, fb = pair
    lhs = (fa * fb).marginalize(["X"])
    rhs = fa * fb.marginalize(["X"])
    assert_allclose(lhs.values, rhs.transpose(lhs.vars).values, rtol=1e-12, atol=1e-14)
