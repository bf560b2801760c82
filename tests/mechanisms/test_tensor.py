"""Tests for causalnet.mechanisms.tensor: tensor ops as deterministic mechanisms.

Oracles: PyTorch (same weights, float64) for every op it has; closed forms
(sinusoidal table from its formula); the fine-grained chain Scores -> Scale ->
Mask -> Softmax against the fused AttentionWeights (generic equals fast).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose

from causalnet.errors import ModelError, ShapeError
from causalnet.inference.tensor import Plan
from causalnet.mechanisms import tensor as T
from causalnet.model import CausalModel

try:
    import torch
except ImportError:  # torch is a test-only dependency
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
TOL = dict(rtol=0, atol=1e-10)


def _t(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


# -- one parametrized suite over every op --------------------------------------------------


def _cases(rng):
    d, ff = 6, 10
    w = rng.normal(size=(d, d))
    return {
        "Identity": ({"x": T.Input((None, d))}, T.Identity("x"), (5, d)),
        "Linear": ({"x": T.Input((None, d))}, T.Linear("x", rng.normal(size=(4, d)), rng.normal(size=4)), (5, 4)),
        "Embedding": ({"x": T.Input((None,), np.int64)}, T.Embedding("x", rng.normal(size=(7, d))), (5, d)),
        "PositionalEncoding": ({"x": T.Input((None, d))}, T.PositionalEncoding("x", d), (5, d)),
        "Scores": ({"x": T.Input((None, d))}, None, (2, 5, 5)),
        "Scale": ({"x": T.Input((None, d))}, T.Scale("x", 0.5), (5, d)),
        "Mask": ({"x": T.Input((None, None))}, T.Mask("x", causal=True), (5, 5)),
        "Softmax": ({"x": T.Input((None, d))}, T.Softmax("x"), (5, d)),
        "AttentionWeights": ({"x": T.Input((None, d))}, None, (3, 5, 5)),
        "Attention": ({"x": T.Input((None, d))}, None, (5, d)),
        "MultiHeadAttention": ({"x": T.Input((None, d))},
                               T.MultiHeadAttention("x", heads=2, in_proj_weight=rng.normal(size=(3 * d, d)),
                                                    out_proj_weight=w), (5, d)),
        "LayerNorm": ({"x": T.Input((None, d))}, T.LayerNorm("x", d=d), (5, d)),
        "ReLU": ({"x": T.Input((None, d))}, T.ReLU("x"), (5, d)),
        "GELU": ({"x": T.Input((None, d))}, T.GELU("x"), (5, d)),
        "Add": ({"x": T.Input((None, d)), "y": T.Input((None, d))}, T.Add(["x", "y"]), (5, d)),
        "Concat": ({"x": T.Input((None, d)), "y": T.Input((None, 2))}, T.Concat(["x", "y"]), (5, d + 2)),
        "Split": ({"x": T.Input((None, d))}, T.Split("x", 3, 1), (5, 2)),
        "Reshape": ({"x": T.Input((4, d))}, T.Reshape("x", (2, -1)), (2, 2 * d)),
        "Transpose": ({"x": T.Input((None, d))}, T.Transpose("x", (1, 0)), (d, 5)),
        "FeedForward": ({"x": T.Input((None, d))},
                        T.FeedForward("x", rng.normal(size=(ff, d)), None, rng.normal(size=(d, ff))), (5, d)),
    }


def _model_for(name, rng, dtype=np.float64):
    roots, op, _ = _cases(rng)[name]
    mechs = dict(roots)
    if name == "Scores":
        mechs["node"] = T.Scores(["x", "x2"], heads=2)
        mechs["x2"] = T.Identity("x")
    elif name == "AttentionWeights":
        mechs["x2"] = T.Identity("x")
        mechs["node"] = T.AttentionWeights(["x", "x2"], heads=3, causal=True)
    elif name == "Attention":
        mechs["p"] = T.AttentionWeights(["x", "x2"], heads=2)
        mechs["x2"] = T.Identity("x")
        mechs["node"] = T.Attention(["p", "x2"], heads=2)
    else:
        mechs["node"] = op
    return CausalModel(mechs)


def _inputs(m, rng, t=5):
    vals = {}
    for v in m.nodes:
        mech = m.mechanisms[v]
        if isinstance(mech, T.Input):
            shape = tuple(t if s is None else s for s in mech.shape)
            if mech.dtype.kind == "i":
                vals[v] = rng.integers(0, 7, size=(3, *shape))
            else:
                vals[v] = rng.normal(size=(3, *shape))
    return vals


OPS = list(_cases(np.random.default_rng(0)))


@pytest.mark.parametrize("name", OPS)
def test_every_op_is_a_deterministic_tensor_node_with_checked_shapes(name, rng):
    m = _model_for(name, rng)
    mech = m.mechanisms["node"]
    assert mech.deterministic and mech.kind == "tensor"
    out = m.forward(_inputs(m, rng))["node"]
    expected = _cases(rng)[name][2]
    assert out.shape == (3, *expected)
    spec = m.spec("node").shape
    assert len(spec) == len(expected)
    assert all(s is None or s == e for s, e in zip(spec, expected))
    assert np.all(np.isfinite(out) | (out == -np.inf))


@pytest.mark.parametrize("name", OPS)
def test_every_op_runs_in_float32(name, rng):
    m64 = _model_for(name, rng)
    m32 = CausalModel({k: v if isinstance(v, T.Input) or name == "Identity" else _with_dtype(v, np.float32)
                       for k, v in m64.mechanisms.items()})
    vals = _inputs(m64, rng)
    a = m64.forward(vals)["node"]
    b = m32.forward(vals)["node"]
    assert b.dtype == (np.float64 if name == "Identity" else np.float32)
    finite = np.isfinite(a)
    assert np.array_equal(finite, np.isfinite(b))
    assert_allclose(b[finite], a[finite], rtol=1e-4, atol=1e-4)


def _with_dtype(op, dtype):
    import copy

    new = copy.copy(op)
    new.dtype = np.dtype(dtype)
    for k, v in vars(op).items():
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            setattr(new, k, v.astype(dtype))
    return new


# -- PyTorch as the oracle ----------------------------------------------------------------------


@needs_torch
def test_linear_embedding_layernorm_activations_match_torch(rng):
    x = rng.normal(size=(3, 5, 6))
    lin = torch.nn.Linear(6, 4, dtype=torch.float64)
    emb = torch.nn.Embedding(9, 6, dtype=torch.float64)
    ln = torch.nn.LayerNorm(6, eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
    ids = rng.integers(0, 9, size=(3, 5))
    m = CausalModel({
        "x": T.Input((None, 6)), "ids": T.Input((None,), np.int64),
        "lin": T.Linear("x", lin.weight.detach().numpy(), lin.bias.detach().numpy()),
        "emb": T.Embedding("ids", emb.weight.detach().numpy(), scale=2.0),
        "ln": T.LayerNorm("x", ln.weight.detach().numpy(), ln.bias.detach().numpy(), eps=1e-6),
        "relu": T.ReLU("x"), "gelu": T.GELU("x"), "gelu_tanh": T.GELU("x", approximate="tanh"),
        "softmax": T.Softmax("x", axis=0),
    })
    tr = m.forward({"x": x, "ids": ids})
    with torch.no_grad():
        xt = _t(x)
        assert_allclose(tr["lin"], lin(xt).numpy(), **TOL)
        assert_allclose(tr["emb"], 2.0 * emb(torch.from_numpy(ids)).numpy(), **TOL)
        assert_allclose(tr["ln"], ln(xt).numpy(), **TOL)
        assert_allclose(tr["relu"], torch.relu(xt).numpy(), **TOL)
        assert_allclose(tr["gelu"], torch.nn.functional.gelu(xt).numpy(), **TOL)
        assert_allclose(tr["gelu_tanh"], torch.nn.functional.gelu(xt, approximate="tanh").numpy(), **TOL)
        assert_allclose(tr["softmax"], torch.softmax(xt, dim=1).numpy(), **TOL)


@needs_torch
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_matches_torch_and_its_parts(rng, activation):
    l1 = torch.nn.Linear(6, 12, dtype=torch.float64)
    l2 = torch.nn.Linear(12, 6, dtype=torch.float64)
    w = {k: v.detach().numpy() for k, v in (("w1", l1.weight), ("b1", l1.bias), ("w2", l2.weight), ("b2", l2.bias))}
    act = T.ReLU("h") if activation == "relu" else T.GELU("h")
    m = CausalModel({"x": T.Input((None, 6)), "F": T.FeedForward("x", **w, activation=activation),
                     "h": T.Linear("x", w["w1"], w["b1"]), "a": act, "F2": T.Linear("a", w["w2"], w["b2"])})
    x = rng.normal(size=(2, 4, 6))
    tr = m.forward({"x": x})
    f = torch.relu if activation == "relu" else torch.nn.functional.gelu
    with torch.no_grad():
        assert_allclose(tr["F"], l2(f(l1(_t(x)))).numpy(), **TOL)
    assert_allclose(tr["F"], tr["F2"], **TOL)


def _torch_weights(q, k, heads, causal, pad):
    n, t, dd = q.shape
    s = k.shape[1]
    dh = dd // heads
    qh = _t(q).reshape(n, t, heads, dh).transpose(1, 2)
    kh = _t(k).reshape(n, s, heads, dh).transpose(1, 2)
    sc = qh @ kh.transpose(-1, -2) / math.sqrt(dh)
    if causal:
        sc = sc.masked_fill(torch.ones(t, s, dtype=torch.bool).triu(1), float("-inf"))
    if pad is not None:
        sc = sc.masked_fill(torch.from_numpy(pad)[:, None, None, :], float("-inf"))
    return torch.softmax(sc, dim=-1).numpy()


@needs_torch
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padding", [False, True])
def test_attention_weights_match_torch_and_the_fine_chain(rng, causal, padding):
    n, t, dd, h = 3, 5, 8, 2
    q, k, v = rng.normal(size=(3, n, t, dd))
    pad = np.zeros((n, t), bool)
    pad[1, 3:] = True   # ragged padding
    pad[2, 4:] = True
    masks = ["pad"] if padding else []
    m = CausalModel({
        "q": T.Input((None, dd)), "k": T.Input((None, dd)), "v": T.Input((None, dd)), "pad": T.Input((None,), bool),
        "P": T.AttentionWeights(["q", "k", *masks], heads=h, causal=causal),
        "A": T.Attention(["P", "v"], heads=h),
        "B": T.Scores(["q", "k"], heads=h), "S": T.Scale("B", 1 / math.sqrt(dd // h)),
        "M": T.Mask(["S", *masks], causal=causal), "P2": T.Softmax("M"),
    })
    tr = m.forward({"q": q, "k": k, "v": v, "pad": pad})
    want = _torch_weights(q, k, h, causal, pad if padding else None)
    assert_allclose(tr["P"], want, **TOL)
    assert_allclose(tr["P2"], tr["P"], **TOL)
    vh = _t(v).reshape(n, t, h, dd // h).transpose(1, 2)
    a = (torch.from_numpy(want) @ vh).transpose(1, 2).reshape(n, t, dd).numpy()
    assert_allclose(tr["A"], a, **TOL)


@needs_torch
@pytest.mark.parametrize("cross", [False, True])
def test_multi_head_attention_op_matches_torch(rng, cross):
    n, t, s, dd, h = 2, 4, 6, 8, 4
    mha = torch.nn.MultiheadAttention(dd, h, batch_first=True, dtype=torch.float64).eval()
    sd = {k: v.detach().numpy() for k, v in mha.state_dict().items()}
    x = rng.normal(size=(n, t, dd))
    mem = rng.normal(size=(n, s if cross else t, dd))
    pad = np.zeros((n, mem.shape[1]), bool)
    pad[0, -2:] = True
    parents = ["x", "m", "pad"] if cross else ["x", "pad"]
    m = CausalModel({"x": T.Input((None, dd)), "m": T.Input((None, dd)), "pad": T.Input((None,), bool),
                     "O": T.MultiHeadAttention(parents, heads=h, in_proj_weight=sd["in_proj_weight"],
                                               in_proj_bias=sd["in_proj_bias"],
                                               out_proj_weight=sd["out_proj.weight"],
                                               out_proj_bias=sd["out_proj.bias"], causal=not cross,
                                               padding=True)})
    tr = m.forward({"x": x, "m": mem, "pad": pad})
    kv = _t(mem) if cross else _t(x)
    mask = None if cross else torch.ones(t, t, dtype=torch.bool).triu(1)
    with torch.no_grad():
        o, _ = mha(_t(x), kv, kv, key_padding_mask=torch.from_numpy(pad), attn_mask=mask)
    assert_allclose(tr["O"], o.numpy(), **TOL)


def test_positional_encoding_is_the_sinusoid_formula():
    pe = T.sinusoidal_encoding(7, 6)
    for pos in range(7):
        for i in range(6):
            ang = pos / 10000 ** ((i - i % 2) / 6)
            want = math.sin(ang) if i % 2 == 0 else math.cos(ang)
            assert pe[pos, i] == pytest.approx(want, abs=1e-14)
    m = CausalModel({"x": T.Input((None, 6)), "e": T.PositionalEncoding("x", 6),
                     "p": T.PositionalEncoding("x", 4, add=False)})
    x = np.ones((2, 7, 6))
    tr = m.forward({"x": x})
    assert_allclose(tr["e"], x + pe, **TOL)
    assert_allclose(tr["p"], np.broadcast_to(T.sinusoidal_encoding(7, 4), (2, 7, 4)), **TOL)


def test_split_concat_reshape_transpose_agree_with_numpy(rng):
    m = CausalModel({
        "x": T.Input((None, 6)),
        **{f"s{i}": T.Split("x", [1, 2, 3], i) for i in range(3)},
        "c": T.Concat(["s0", "s1", "s2"]),
        "r": T.Reshape("x", (-1, 3)), "t": T.Transpose("x", (1, 0)),
    })
    x = rng.normal(size=(2, 4, 6))
    tr = m.forward({"x": x})
    assert_allclose(tr["s1"], x[..., 1:3], **TOL)
    assert_allclose(tr["c"], x, **TOL)
    assert_allclose(tr["r"], x.reshape(2, 8, 3), **TOL)
    assert_allclose(tr["t"], x.transpose(0, 2, 1), **TOL)
    assert m.spec("r").shape == (None, 3)


def test_fully_masked_rows_give_zero_weights_not_nan():
    m = CausalModel({"q": T.Input((None, 2)), "pad": T.Input((None,), bool),
                     "P": T.AttentionWeights(["q", "q2", "pad"]), "q2": T.Identity("q")})
    pad = np.array([[True, True, True]])
    p = m.forward({"q": np.ones((1, 3, 2)), "pad": pad})["P"]
    assert np.all(p == 0.0)


def test_plan_equals_forward_and_frees_what_it_does_not_keep(rng):
    m = CausalModel({"x": T.Input((None, 3)), "a": T.ReLU("x"), "b": T.Scale("a", 2.0), "c": T.Add(["a", "b"])})
    x = rng.normal(size=(4, 5, 3))
    full = m.forward({"x": x})
    tr = Plan(m, outputs=["c"]).run({"x": x})
    assert set(tr) == {"c"}
    assert_allclose(tr["c"], full["c"], **TOL)
    tr2 = Plan(m, outputs=["c"], inputs=["a"]).run({"a": full["a"]}, keep=["b"])
    assert set(tr2) == {"b", "c"}
    with pytest.raises(ModelError, match="needs values"):
        Plan(m, outputs=["c"]).run({})


# -- properties -------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5)),
              elements=st.floats(-30, 30)), st.floats(-50, 50))
def test_softmax_rows_sum_to_one_and_ignore_a_shift(x, c):
    m = CausalModel({"x": T.Input((None, None)), "p": T.Softmax("x")})
    p = m.forward({"x": x})["p"]
    assert_allclose(p.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(m.forward({"x": x + c})["p"], p, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_causal_weights_are_zero_above_the_diagonal_and_rows_sum_to_one(t, h, seed):
    r = np.random.default_rng(seed)
    m = CausalModel({"q": T.Input((None, 2 * h)), "k": T.Input((None, 2 * h)),
                     "P": T.AttentionWeights(["q", "k"], heads=h, causal=True)})
    p = m.forward({"q": r.normal(size=(2, t, 2 * h)), "k": r.normal(size=(2, t, 2 * h))})["P"]
    assert np.all(p[..., np.triu_indices(t, 1)[0], np.triu_indices(t, 1)[1]] == 0.0)
    assert_allclose(p.sum(-1), 1.0, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(2, 6)), elements=st.floats(-1e3, 1e3)))
def test_layer_norm_without_affine_standardises_each_row(x):
    if np.ptp(x, axis=-1).min() < 0.1:      # keep eps / var below 1e-9 (ptp 2e-3 gave var 1 - 1e-6)
        x = x + np.arange(x.shape[-1])
    m = CausalModel({"x": T.Input((None,)), "n": T.LayerNorm("x", d=x.shape[-1], eps=1e-12)})
    y = m.forward({"x": x})["n"]
    assert_allclose(y.mean(-1), 0.0, rtol=0, atol=1e-9)
    assert_allclose(y.var(-1), 1.0, rtol=0, atol=1e-6)


# -- bad input: typed errors naming what and where ------------------------------------------------------


def test_shape_error_at_build_names_node_parent_and_both_shapes():
    with pytest.raises(ShapeError) as ei:
        CausalModel({"e": T.Input((None, 48)), "enc.0.attn.Q": T.Linear("e", np.zeros((64, 64)))})
    msg = str(ei.value)
    assert "'enc.0.attn.Q'" in msg and "'e'" in msg and "(n, ?, 64)" in msg and "(n, ?, 48)" in msg


def test_shape_error_at_run_time_names_both_shapes():
    m = CausalModel({"a": T.Input((None, 4)), "b": T.Input((None, 4)), "s": T.Add(["a", "b"])})
    with pytest.raises(ShapeError, match=r"node 's' \(Add\) expects \(2, 3, 4\) from 'b', got \(2, 5, 4\)"):
        m.forward({"a": np.zeros((2, 3, 4)), "b": np.zeros((2, 5, 4))})


def test_linear_rejects_wrong_width_given_at_run_time():
    m = CausalModel({"e": T.Input((None, None)), "Q": T.Linear("e", np.zeros((3, 4)))})
    with pytest.raises(ShapeError, match=r"'Q' \(Linear\) expects \(2, 5, 4\) from 'e', got \(2, 5, 6\)"):
        m.forward({"e": np.zeros((2, 5, 6))})


def test_heads_must_divide_the_width():
    with pytest.raises(ShapeError, match="4 heads do not divide the width 6 of 'q'"):
        CausalModel({"q": T.Input((None, 6)), "k": T.Input((None, 6)), "P": T.AttentionWeights(["q", "k"], heads=4)})
    with pytest.raises(ModelError, match="heads must be a positive int"):
        T.AttentionWeights(["q", "k"], heads=0)
    with pytest.raises(ModelError, match="3 heads do not divide the width 4"):
        T.MultiHeadAttention("x", heads=3, in_proj_weight=np.zeros((12, 4)), out_proj_weight=np.zeros((4, 4)))


def test_padding_mask_of_the_wrong_shape_or_type():
    base = {"q": T.Input((None, 4)), "k": T.Input((None, 4))}
    with pytest.raises(ShapeError, match="padding mask is \\(n, S\\)"):
        CausalModel({**base, "pad": T.Input((None, 2), bool), "P": T.AttentionWeights(["q", "k", "pad"])})
    with pytest.raises(ModelError, match="must be boolean"):
        CausalModel({**base, "pad": T.Input((None,), np.float64), "P": T.AttentionWeights(["q", "k", "pad"])})
    m = CausalModel({**base, "pad": T.Input((None,), bool), "P": T.AttentionWeights(["q", "k", "pad"])})
    with pytest.raises(ShapeError, match=r"node 'P' \(AttentionWeights\) expects \(2, 5\) from 'pad', got \(2, 4\)"):
        m.forward({"q": np.zeros((2, 3, 4)), "k": np.zeros((2, 5, 4)), "pad": np.zeros((2, 4), bool)})


def test_embedding_rejects_out_of_range_and_float_ids():
    m = CausalModel({"x": T.Input((None,), np.int64), "e": T.Embedding("x", np.zeros((5, 2)))})
    with pytest.raises(ShapeError, match="'e' \\(Embedding\\) has 5 rows; 'x' holds the id 7"):
        m.forward({"x": np.array([[1, 7]])})
    with pytest.raises(ShapeError, match="the id -1"):
        m.forward({"x": np.array([[-1, 0]])})
    with pytest.raises(ModelError, match="needs integer ids"):
        CausalModel({"x": T.Input((None,)), "e": T.Embedding("x", np.zeros((5, 2)))})


def test_bad_parameters_are_model_errors():
    with pytest.raises(ModelError, match="dtype must be float64 or float32"):
        T.ReLU("x", dtype="int32")
    with pytest.raises(ModelError, match="NaN or inf"):
        T.Linear("x", np.array([[np.nan]]))
    with pytest.raises(ShapeError, match="bias has 3 entries"):
        T.Linear("x", np.zeros((2, 2)), np.zeros(3))
    with pytest.raises(ShapeError, match="w2 must be"):
        T.FeedForward("x", np.zeros((4, 2)), None, np.zeros((4, 2)))
    with pytest.raises(ModelError, match="takes 2 parents"):
        T.Attention(["p"])
    with pytest.raises(ModelError, match="needs tensor parents"):
        from causalnet.mechanisms.gaussian import LinearGaussian

        CausalModel({"g": LinearGaussian(), "r": T.ReLU("g")})
    with pytest.raises(ModelError, match="input node 'x' needs a value"):
        CausalModel({"x": T.Input((2,)), "r": T.ReLU("x")}).forward(n=1)
    with pytest.raises(ShapeError, match="3 equal pieces do not divide the size 4"):
        CausalModel({"x": T.Input((4,)), "s": T.Split("x", 3, 0)})
