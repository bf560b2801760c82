"""Issue 10 for the tensor ops: never NaN from finite input, typed errors for bad arguments, size limits.

Oracles: the same computation in float64 on rescaled input (layer norm is scale
invariant), the closed-form limits of softmax and GELU, and PyTorch's own
messages' meaning (a masked row) written out.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import ModelError, NumericalError, ResourceError
from causalnet.mechanisms import tensor as T
from causalnet.model import CausalModel


def _layer_norm_oracle(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    m = np.abs(x).max(axis=-1, keepdims=True)
    x = x / m
    with np.errstate(over="ignore"):
        eps = eps / m ** 2
    m = 1.0
    y = x / m                                         # exact rescaling: LN(x) = LN(x/m) with eps/m^2
    y = y - y.mean(axis=-1, keepdims=True)
    return y / np.sqrt((y * y).mean(axis=-1, keepdims=True) + eps / m ** 2)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("big", [1e20, 1e38, 1e154, 1e300])
def test_layer_norm_is_stable_on_huge_inputs(dtype, big):
    if big > float(np.finfo(dtype).max):
        pytest.skip("not representable")
    m = CausalModel({"e": T.Input((None, 4), dtype), "y": T.LayerNorm("e", d=4, dtype=dtype)})
    x = (np.array([[[1.0, -1.0, 1.0, 0.0], [0.5, 0.25, -1.0, 0.0]]]) * big).astype(dtype)
    y = m.forward({"e": x})["y"]
    assert np.all(np.isfinite(y))
    assert_allclose(y, _layer_norm_oracle(x.astype(np.float64)), rtol=1e-5 if dtype == "float32" else 1e-12,
                    atol=1e-5 if dtype == "float32" else 1e-12)


def test_layer_norm_of_two_parents_whose_sum_overflows_is_a_numerical_error():
    m = CausalModel({"a": T.Input((None, 2)), "b": T.Input((None, 2)), "y": T.LayerNorm(["a", "b"], d=2)})
    x = np.array([[[1.7e308, 0.0]]])
    with pytest.raises(NumericalError, match="'y' \\(LayerNorm\\)"):
        m.forward({"a": x, "b": x})


def test_constant_rows_normalise_to_zero_even_when_huge():
    m = CausalModel({"e": T.Input((None, 3)), "y": T.LayerNorm("e", d=3)})
    y = m.forward({"e": np.full((1, 2, 3), 1e300)})["y"]
    assert_allclose(y, 0.0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gelu_and_softmax_on_extreme_values(dtype):
    big = np.finfo(dtype).max / 2
    m = CausalModel({"e": T.Input((None, 4), dtype), "g": T.GELU("e", dtype=dtype),
                     "t": T.GELU("e", approximate="tanh", dtype=dtype), "s": T.Softmax("e", dtype=dtype)})
    x = np.array([[[big, -big, 1e30, -1e30]]], dtype=dtype)
    with np.errstate(all="raise"):       # the ops keep numpy quiet: no stray RuntimeWarnings
        tr = m.forward({"e": x})
    for k in ("g", "t"):
        assert_allclose(tr[k], [[[big, 0.0, 1e30, 0.0]]], rtol=1e-6)
    assert_allclose(tr["s"], [[[1.0, 0.0, 0.0, 0.0]]])


def test_fully_masked_rows_get_zero_weights_and_empty_sequences_run():
    rng = np.random.default_rng(0)
    m = CausalModel({"q": T.Input((None, 4)), "pad": T.Input((None,), np.bool_), "k": T.Identity("q"),
                     "P": T.AttentionWeights(["q", "k", "pad"], heads=2),
                     "B": T.Scores(["q", "k"], heads=2), "M": T.Mask(["B", "pad"]), "S": T.Softmax("M")})
    q = rng.normal(size=(2, 3, 4))
    pad = np.array([[True, True, True], [False, True, True]])
    tr = m.forward({"q": q, "pad": pad})
    assert_allclose(tr["P"][0], 0.0)                  # every key masked: all-zero weights (PyTorch: NaN)
    assert_allclose(tr["P"][1].sum(-1), 1.0)
    assert_allclose(tr["S"], tr["P"])
    assert np.isneginf(tr["M"][0]).all()
    empty = m.forward({"q": np.zeros((2, 0, 4)), "pad": np.zeros((2, 0), bool)})
    assert empty["P"].shape == (2, 2, 0, 0)


def test_overflowing_scores_raise_numerical_error_naming_the_node():
    m = CausalModel({"q": T.Input((None, 2), "float32"), "k": T.Identity("q"),
                     "P": T.AttentionWeights(["q", "k"], dtype="float32")})
    with pytest.raises(NumericalError, match="'P' \\(AttentionWeights\\) overflowed float32"):
        m.forward({"q": np.full((1, 2, 2), 1e30, np.float32)})


def test_big_tensors_are_estimated_before_allocation():
    m = CausalModel({"q": T.Input((None, 8)), "k": T.Identity("q"), "P": T.AttentionWeights(["q", "k"], heads=2)})
    with cn.limits.override(max_table_bytes=2 ** 20):
        with pytest.raises(ResourceError, match="'P'.*max_table_bytes"):
            m.forward({"q": np.zeros((4, 512, 8))})          # (4, 2, 512, 512) float64 = 16 MiB
    mha = CausalModel({"x": T.Input((None, 4)), "O": T.MultiHeadAttention(
        "x", heads=2, in_proj_weight=np.eye(12, 4), out_proj_weight=np.eye(4))})
    with cn.limits.override(max_table_bytes=2 ** 20):
        with pytest.raises(ResourceError, match="'O'"):
            mha.forward({"x": np.zeros((4, 512, 4))})


@pytest.mark.parametrize("make", [
    lambda: T.Linear("x", np.ones((2, 2)) * 1j),
    lambda: T.Linear("x", [["a", "b"]]),
    lambda: T.Embedding("x", np.ones((3, 2)), scale=1j),
    lambda: T.Input((None, 4), complex),
    lambda: T.Input((None, -1)),
    lambda: T.Split("x", -2, 0),
    lambda: T.Split("x", 2, 2.0),
    lambda: T.Split("x", [2, -1], 0),
    lambda: T.Reshape("x", (2.5,)),
    lambda: T.Transpose("x", (0.0, 1)),
    lambda: T.Concat(["x", "y"], axis=1.5),
    lambda: T.Softmax("x", axis="last"),
    lambda: T.Scale("x", float("nan")),
    lambda: T.Scale("x", 2j),
    lambda: T.LayerNorm("x", d=-3),
    lambda: T.LayerNorm("x", d=3, eps=0j),
    lambda: T.PositionalEncoding("x", 4, base=-1.0),
    lambda: T.PositionalEncoding("x", True),
    lambda: T.AttentionWeights(["q", "k"], heads=0),
    lambda: T.Linear("x", np.ones(3)),
    lambda: T.Linear("x", np.ones((2, 2)), dtype="complex128"),
    lambda: T.sinusoidal_encoding(-1, 4),
])
def test_bad_arguments_are_model_errors(make):
    with pytest.raises(ModelError):
        make()


_OPS = {
    "Linear": lambda: T.Linear("x", np.eye(3)),
    "LayerNorm": lambda: T.LayerNorm("x", d=3),
    "GELU": lambda: T.GELU("x"),
    "GELU tanh": lambda: T.GELU("x", approximate="tanh"),
    "ReLU": lambda: T.ReLU("x"),
    "Softmax": lambda: T.Softmax("x"),
    "Scale": lambda: T.Scale("x", 3.0),
    "AttentionWeights": lambda: T.AttentionWeights(["x", "x2"], heads=3),
    "MultiHeadAttention": lambda: T.MultiHeadAttention("x", heads=3, in_proj_weight=np.eye(9, 3) * 2,
                                                       out_proj_weight=np.eye(3)),
    "FeedForward": lambda: T.FeedForward("x", np.eye(4, 3), None, np.eye(3, 4), activation="gelu"),
    "PositionalEncoding": lambda: T.PositionalEncoding("x", 3),
}

_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(_OPS)), dtype=st.sampled_from(["float64", "float32"]),
       x=arrays(np.float64, st.tuples(st.integers(0, 2), st.integers(0, 3), st.just(3)), elements=_floats))
def test_tensor_ops_on_extreme_finite_inputs(op, dtype, x):
    m = CausalModel({"x": T.Input((None, 3), dtype), "x2": T.Identity("x"), "y": _OPS[op]()})
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    if not np.all(np.isfinite(x)):
        with pytest.raises(cn.CausalNetError):
            m.forward({"x": x})
        return
    guarded(m.forward, {"x": x})


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4), dtype=st.sampled_from(
    ["float64", "int64", "bool", "complex128"]))
def test_tensor_ops_on_bad_shapes_and_dtypes(shape, dtype):
    m = CausalModel({"x": T.Input((None, 3)), "y": T.Linear("x", np.eye(2, 3))})
    guarded(m.forward, {"x": np.zeros(shape, dtype=dtype)})
