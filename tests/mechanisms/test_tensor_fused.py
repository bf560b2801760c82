"""The fused numba kernels of compiled plans against numpy's ops, PyTorch, and their own fallbacks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet import CausalModel, ModelError
from causalnet.inference.tensor import Plan
from causalnet.mechanisms import tensor as T
from causalnet.mechanisms.tensor import fused
from causalnet.models import transformer as tf

pytestmark = pytest.mark.skipif(not fused.AVAILABLE, reason="numba is not installed")

TOL = {"float32": 2e-6, "float64": 1e-13}


def _ops(op, *xs):
    """The op's compiled function with the kernels and with numpy's ops."""
    fn = op.compiled("node")
    with fused.backend("numba"):
        a = fn(*xs)
    with fused.backend("numpy"):
        b = fn(*xs)
    return a, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(1, 16, 64), (3, 5, 7), (2, 1, 1), (0, 4, 8), (2, 300, 128)])
def test_add_layer_norm_equals_numpy_and_the_formula(rng, dtype, affine, shape):
    d = shape[-1]
    w, b = (rng.standard_normal(d), rng.standard_normal(d)) if affine else (None, None)
    op = T.LayerNorm(["a", "b"], w, b, d=d, dtype=dtype)
    x0 = (3 + 2 * rng.standard_normal(shape)).astype(dtype)
    x1 = rng.standard_normal(shape).astype(dtype)
    a, ref = _ops(op, x0, x1)
    assert a.dtype == np.dtype(dtype) and a.shape == shape
    assert_allclose(a, ref, rtol=0, atol=TOL[dtype] * 10)
    x = x0.astype(float) + x1
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    if affine:
        want = want * w + b
    assert_allclose(a, want, rtol=0, atol=TOL[dtype] * 10)


def test_add_layer_norm_hands_overflowing_rows_back_to_numpy():
    op = T.LayerNorm(["a", "b"], d=3)
    big = np.array([[[1e300, -1e300, 0.0]]])                # squares overflow: numpy's path rescales the row
    a, ref = _ops(op, big, np.zeros_like(big))
    assert np.isfinite(a).all()
    assert_allclose(a, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n,t,s,heads,dh", [(1, 16, 16, 4, 16), (2, 5, 7, 3, 2), (1, 1, 1, 1, 1), (1, 9, 4, 2, 8)])
def test_attention_weights_equal_numpy_on_views(rng, dtype, causal, n, t, s, heads, dh):
    d = heads * dh
    qkv = rng.standard_normal((n, max(t, s), 3 * d)).astype(dtype)
    q, k = qkv[:, :t, :d], qkv[:, :s, d:2 * d]              # column blocks, as a fused QKV product gives them
    op = T.AttentionWeights(["q", "k"], heads=heads, causal=causal, dtype=dtype)
    a, ref = _ops(op, q, k)
    assert a.shape == (n, heads, t, s)
    assert_allclose(a, ref, rtol=0, atol=TOL[dtype])
    assert_allclose(a.sum(-1), 1.0, rtol=0, atol=TOL[dtype] * 10)
    if causal:
        assert not a[..., np.triu_indices(t, 1, s)[0], np.triu_indices(t, 1, s)[1]].any()


def test_attention_weights_leave_large_work_and_non_finite_scores_to_numpy(rng):
    op = T.AttentionWeights(["q", "k"], heads=2)
    big = rng.standard_normal((2, 128, 256))                # above SMALL_ATTENTION_WORK
    a, ref = _ops(op, big, big)
    assert np.array_equal(a, ref)
    q = np.full((1, 2, 4), 1e200)                           # scores overflow to inf: no finite maximum
    with fused.backend("numba"):
        assert fused.attention_weights(q, q, 2, 0.5, False) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 3), st.integers(1, 4), st.booleans(),
       st.integers(0, 2**31))
def test_plan_with_kernels_equals_forward_hypothesis(n, t, heads, dh, causal, seed):
    d = heads * dh
    build = tf.decoder if causal else tf.encoder
    kw = {"vocab": 7} if causal else {}
    m = build(layers=1, d_model=d, heads=heads, d_ff=2 * d, seed=seed % 1000, **kw)
    rng = np.random.default_rng(seed)
    name = "x" if causal else "e"
    x = rng.integers(7, size=(n, t)) if causal else rng.standard_normal((n, t, d))
    out = "I" if causal else "n"
    plan = Plan(m, outputs=[out])
    with fused.backend("numba"):
        plan.run({name: x})
        got = plan.run({name: x})[out]
    assert_allclose(got, m.forward({name: x})[out], rtol=0, atol=1e-11)


def test_encoder_layer_with_kernels_equals_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    m = tf.from_torch({k: v.detach().numpy() for k, v in layer.state_dict().items()}, heads=4)
    x = np.random.default_rng(1).standard_normal((2, 9, 32))
    plan = Plan(m, outputs=["enc.0.n"])
    with fused.backend("numba"):
        plan.run({"e": x})
        got = plan.run({"e": x})["enc.0.n"]
    with torch.no_grad():
        want = layer(torch.from_numpy(x)).numpy()
    assert_allclose(got, want, rtol=0, atol=1e-10)


def test_bad_input_still_names_the_node_with_the_kernels():
    enc = tf.encoder_layer(d_model=4, heads=2, d_ff=8, seed=0)
    plan = Plan(enc, outputs=["enc.0.n"])
    with fused.backend("numba"):
        plan.run({"e": np.ones((1, 2, 4))})
        with pytest.raises(ModelError, match="'e'"):
            plan.run({"e": np.full((1, 2, 4), np.nan)})


def test_backend_names_and_the_auto_budget(monkeypatch):
    with pytest.raises(ModelError, match="tensor backend must be one of"):
        fused.set_backend("fast")
    with fused.backend("auto"):                             # tests run with CAUSALNET_TENSOR_BACKEND=numpy
        monkeypatch.setattr(fused, "_state", {"spent": 0.0, "on": False})
        monkeypatch.setattr(fused, "AUTO_BUDGET_S", 0.0)
        m = CausalModel({"a": T.Input((3,)), "b": T.Input((3,)), "n": T.LayerNorm(["a", "b"], d=3)})
        plan = Plan(m, outputs=["n"])
        x = {"a": np.ones((1, 3)), "b": np.arange(3.0)[None]}
        first = plan.run(x)["n"]                                # checked path: no budget spent
        assert not fused.active()
        plan.run(x)                                             # the program: spends the (zero) budget, compiles
        assert fused.active() and fused.get_backend() == "auto"
        assert_allclose(plan.run(x)["n"], first, rtol=0, atol=1e-12)
        with fused.backend("numpy"):
            assert not fused.active()
        assert fused.active()


def test_mismatched_arguments_go_back_to_numpy_rather_than_into_the_kernel(rng):
    x32 = rng.standard_normal((2, 3, 4)).astype("float32")
    with fused.backend("numba"):
        w, b = np.ones(4, "float32"), np.zeros(4, "float32")
        assert fused.add_layer_norm(x32, x32, w, b, 1e-5) is not None
        assert fused.add_layer_norm(x32, x32.astype(float), w, b, 1e-5) is None       # float64 x1: numpy promotes
        assert fused.add_layer_norm(x32, x32, np.ones(4), b, 1e-5) is None            # weight of another dtype
        assert fused.add_layer_norm(x32, x32, np.ones(3, "float32"), b, 1e-5) is None  # wrong width
        assert fused.add_layer_norm(x32, x32, w[::-1], b, 1e-5) is not None          # a reversed view is copied
        q = rng.standard_normal((1, 4, 8))
        assert fused.attention_weights(q, q, 2, 0.5, False) is not None
        assert fused.attention_weights(q, q, 3, 0.5, False) is None                   # 3 heads do not divide 8
        assert fused.attention_weights(q, q[:, :, :4], 2, 0.5, False) is None         # keys of another width
