"""``model.forward``'s engines (issue 30): each fast engine equals the node-by-node reference run.

The reference is ``CausalModel``'s own loop (``ForwardRequest.run_reference``,
the path every model took before the engines); the oracle for the weights is
PyTorch where a module exists. Property tests draw batch sizes and inputs.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import ModelError, ShapeError
from causalnet.inference.forward import FORWARD_ENGINES, ForwardRequest
from causalnet.models import recurrent
from causalnet.models import transformer as tf

TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def reference(model, values, keep=None):
    """The node-by-node run of ``model.forward(values, keep=keep)``."""
    req = ForwardRequest(model, values, None, None, None, keep, model._forward_nodes)
    return req.run_reference()


def assert_same_trace(got, want, dtype):
    assert list(got) == list(want)
    for k in want:
        a, b = np.asarray(got[k]), np.asarray(want[k])
        assert a.shape == b.shape and a.dtype == b.dtype, k
        np.testing.assert_allclose(a, b, **TOL[dtype], err_msg=str(k))


def test_registry_order():
    assert FORWARD_ENGINES.names() == ["recurrent loop", "tensor plan", "node by node"]


def test_other_models_run_node_by_node(sprinkler, linear_gaussian):
    for m in (sprinkler, linear_gaussian):
        tr = m.forward(n=50, seed=3)
        assert tr.method == "node by node"
        ref = ForwardRequest(m, None, None, 50, 3, None, m._forward_nodes).run_reference()
        assert list(tr) == list(ref)
        for k in ref:
            np.testing.assert_array_equal(tr[k], ref[k])
            np.testing.assert_array_equal(m.sample(50, seed=3)[k], ref[k])


# -- transformers: the tensor plan ------------------------------------------------------------------------------

LAYERS = {dt: tf.encoder_layer(d_model=16, heads=2, d_ff=32, dtype=dt, seed=0) for dt in ("float32", "float64")}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_encoder_layer_takes_the_plan(dtype):
    m = LAYERS[dtype]
    x = np.random.default_rng(0).standard_normal((2, 5, 16)).astype(dtype)
    first, second = m.forward({"e": x}), m.forward({"e": x})
    assert (first.method, second.method) == ("node by node", "tensor plan")
    assert_same_trace(second, reference(m, {"e": x}), dtype)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 4), T=st.integers(1, 7), seed=st.integers(0, 2**31), dtype=st.sampled_from(["float32", "float64"]),
       keep=st.booleans())
def test_plan_equals_reference_property(n, T, seed, dtype, keep):
    m = LAYERS[dtype]
    x = np.random.default_rng(seed).standard_normal((n, T, 16)).astype(dtype) * 3
    kept = ["enc.0.n", "enc.0.attn.P"] if keep else None
    m.forward({"e": x}, keep=kept)                       # admits the shape
    got = m.forward({"e": x}, keep=kept)
    assert got.method == "tensor plan"
    assert_same_trace(got, reference(m, {"e": x}, kept), dtype)


def test_plan_matches_torch_float32():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    m = tf.from_torch(layer)
    assert m.spec("enc.0.n").dtype == np.float32
    x = np.random.default_rng(1).standard_normal((3, 6, 32)).astype(np.float32)
    m.forward({"e": x}, keep=["enc.0.n"])                # the first call of a plan and shape validates
    got = m.forward({"e": x}, keep=["enc.0.n"])
    assert got.method == "tensor plan"
    with torch.no_grad():
        want = layer(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got["enc.0.n"], want, rtol=1e-4, atol=1e-4)


def test_plan_refuses_bad_input_as_the_reference_does():
    m = LAYERS["float64"]
    x = np.random.default_rng(0).standard_normal((2, 4, 16))
    m.forward({"e": x})
    assert m.forward({"e": x}).method == "tensor plan"
    bad = x.copy()
    bad[1, 2, 3] = np.nan
    for values, err in (({"e": bad}, ModelError), ({"e": x[..., :15]}, ShapeError), ({"nope": x}, ModelError)):
        with pytest.raises(err) as got:
            m.forward(values)
        with pytest.raises(err) as want:
            reference(m, values)
        assert str(got.value) == str(want.value)


def test_plan_names_the_node_that_overflows():
    m = tf.encoder_layer(d_model=8, heads=1, d_ff=16, dtype="float32", seed=0)
    x = np.ones((1, 3, 8), np.float32)
    m.forward({"e": x})
    assert m.forward({"e": x}).method == "tensor plan"
    with pytest.raises(cn.errors.NumericalError) as got:
        m.forward({"e": x * np.float32(3e38)})
    with pytest.raises(cn.errors.NumericalError) as want:
        reference(m, {"e": x * np.float32(3e38)})
    assert str(got.value) == str(want.value)


def test_constant_do_runs_node_by_node_and_a_shift_takes_the_plan():
    m = LAYERS["float64"]
    x = np.random.default_rng(0).standard_normal((2, 4, 16))
    for patched, method in ((m.do({"enc.0.N": np.zeros((4, 16))}), "node by node"),
                            (m.do({"enc.0.N": lambda v: 2 * v}), "tensor plan")):
        patched.forward({"e": x})
        got = patched.forward({"e": x})
        assert got.method == method
        assert_same_trace(got, reference(patched, {"e": x}), "float64")


def test_seq2seq_takes_the_plan():
    m = recurrent.seq2seq(src_vocab=7, tgt_vocab=6, embed=5, hidden=4, T_src=3, T_tgt=2, seed=0)
    rng = np.random.default_rng(0)
    values = {**{f"src[{s}]": rng.integers(0, 7, 3) for s in range(3)},
              **{f"tgt[{t}]": rng.integers(0, 6, 3) for t in range(2)}}
    m.forward(values)
    got = m.forward(values)
    assert got.method == "tensor plan"
    assert_same_trace(got, reference(m, values), "float64")


# -- recurrent models: the block loop ---------------------------------------------------------------------------

def _inputs(T, n, d, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return {f"x[{t}]": (scale * rng.standard_normal((n, d))).astype(dtype) for t in range(T)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (2, True)])
def test_recurrent_loop_equals_reference(kind, layers, bidirectional, dtype):
    m = recurrent.build(kind, input_size=3, hidden_size=5, T=6, layers=layers, bidirectional=bidirectional,
                        dtype=dtype, seed=1)
    xs = _inputs(6, 4, 3, dtype)
    got = m.forward(xs)
    assert got.method == "recurrent loop"
    assert len(got) == len(m.nodes) and all(v in got for v in m.nodes)
    assert_same_trace(got, reference(m, xs), dtype)      # every node, the gates computed on first read
    keep = ["l0.c[2]" if kind == "lstm" else "l0.h[2]", f"l{layers - 1}.h[5]", "x[1]"]
    kept = m.forward(xs, keep=keep)
    assert kept.method == "recurrent loop" and set(kept) == set(keep)
    assert_same_trace(kept, reference(m, xs, keep), dtype)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 5), seed=st.integers(0, 2**31), dtype=st.sampled_from(["float32", "float64"]),
       scale=st.sampled_from([0.1, 1.0, 10.0]), kind=st.sampled_from(["rnn", "lstm", "gru"]))
def test_recurrent_loop_property(n, seed, dtype, scale, kind):
    m = RECURRENT[(kind, dtype)]
    xs = _inputs(5, n, 2, dtype, seed, scale)
    got = m.forward(xs)
    assert got.method == "recurrent loop"
    assert_same_trace(got, reference(m, xs), dtype)


RECURRENT = {(k, dt): recurrent.build(k, input_size=2, hidden_size=3, T=5, layers=2, dtype=dt, seed=2)
             for k in ("rnn", "lstm", "gru") for dt in ("float32", "float64")}


def test_recurrent_loop_matches_torch_lstm():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    mod = torch.nn.LSTM(4, 6, num_layers=2, batch_first=True).eval()
    m = recurrent.from_torch(mod, 7)
    x = np.random.default_rng(0).standard_normal((3, 7, 4)).astype(np.float32)
    tr = m.forward({f"x[{t}]": x[:, t] for t in range(7)}, keep=[f"l1.h[{t}]" for t in range(7)])
    assert tr.method == "recurrent loop"
    with torch.no_grad():
        want = mod(torch.from_numpy(x))[0].numpy()
    np.testing.assert_allclose(np.stack([tr[f"l1.h[{t}]"] for t in range(7)], axis=1), want, rtol=1e-5, atol=1e-5)


def test_recurrent_declines_what_it_does_not_take():
    m = RECURRENT[("lstm", "float64")]
    xs = _inputs(5, 2, 2, "float64")
    clamped = {**xs, "l0.h[1]": np.zeros((2, 3))}                     # a clamp: not the loop's inputs
    m.forward(clamped)
    got = m.forward(clamped)
    assert got.method == "tensor plan"
    assert_same_trace(got, reference(m, clamped), "float64")
    assert m.forward(xs, noise={}).method == "recurrent loop"        # empty noise is no noise
    assert m.forward(xs, n=2).method != "recurrent loop"
    with_lengths = recurrent.lstm(input_size=2, hidden_size=3, T=5, lengths=True, seed=0)
    vals = {**xs, "lengths": np.array([5, 3])}
    with_lengths.forward(vals)
    got = with_lengths.forward(vals)
    assert got.method == "tensor plan"
    assert_same_trace(got, reference(with_lengths, vals), "float64")
    shifted = m.do({"l0.h[2]": lambda h: h + 1})
    shifted.forward(xs)
    assert shifted.forward(xs).method == "tensor plan"
    assert_same_trace(shifted.forward(xs), reference(shifted, xs), "float64")


def test_recurrent_bad_input_errors_as_the_reference():
    m = RECURRENT[("gru", "float64")]
    xs = _inputs(5, 2, 2, "float64")
    bad = dict(xs)
    bad["x[3]"] = np.array([[np.inf, 0.0], [0.0, 0.0]])
    short = {k: v for k, v in xs.items() if k != "x[4]"}
    ragged = {**xs, "x[2]": np.zeros((3, 2))}
    for values in (bad, short, ragged):
        with pytest.raises(cn.errors.CausalNetError) as got:
            m.forward(values)
        with pytest.raises(cn.errors.CausalNetError) as want:
            reference(m, values)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value)


def test_recurrent_overflow_is_named():
    w = recurrent.random_weights("rnn", input_size=2, hidden_size=3, seed=0)
    w = {k: v * 1e20 for k, v in w.items()}
    m = recurrent.rnn(w, T=4, nonlinearity="relu", dtype="float32")
    xs = _inputs(4, 2, 2, "float32", scale=1e15)
    with pytest.raises(cn.errors.NumericalError) as got:
        m.forward(xs)
    with pytest.raises(cn.errors.NumericalError) as want:
        reference(m, xs)
    assert str(got.value) == str(want.value)


# -- from_torch keeps the module's dtype ------------------------------------------------------------------------

@pytest.mark.parametrize("tdtype,want", [("float32", np.float32), ("float64", np.float64)])
def test_from_torch_keeps_the_dtype(tdtype, want):
    torch = pytest.importorskip("torch")
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, dtype=getattr(torch, tdtype))
    lstm = torch.nn.LSTM(3, 4, dtype=getattr(torch, tdtype))
    for m in (tf.from_torch(layer.eval()), tf.from_torch(layer.state_dict(), heads=2),
              recurrent.from_torch(lstm, 3), recurrent.from_torch(lstm.state_dict(), 3)):
        assert {s.dtype for v, s in m.specs.items() if s.dtype.kind == "f"} == {np.dtype(want)}
    other = "float64" if tdtype == "float32" else "float32"
    for m in (tf.from_torch(layer.eval(), dtype=other), recurrent.from_torch(lstm, 3, dtype=other)):
        assert {s.dtype for v, s in m.specs.items() if s.dtype.kind == "f"} == {np.dtype(other)}


def test_from_torch_half_precision_needs_a_dtype():
    torch = pytest.importorskip("torch")
    lstm = torch.nn.LSTM(3, 4).half()
    with pytest.raises(ModelError, match="float16.*dtype="):
        recurrent.from_torch(lstm, 3)
    assert recurrent.from_torch(lstm, 3, dtype="float32").spec("l0.h[0]").dtype == np.float32
    sd = {k: v.numpy().astype(np.float16) for k, v in torch.nn.MultiheadAttention(4, 2).state_dict().items()}
    with pytest.raises(ModelError, match="float16.*dtype="):
        tf.from_torch(sd, heads=2)
    with pytest.raises(ModelError, match="float64 or float32, got int8"):
        tf.from_torch(sd, heads=2, dtype="int8")


def test_causal_decoder_with_masked_scores_takes_the_plan():
    # the masked scores hold -inf where the node allows it: the joint finiteness test fails, the per-node one passes
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=7, view="expanded", scores=True, seed=0)
    ids = np.random.default_rng(0).integers(0, 7, size=(2, 5))
    m.forward({"x": ids})
    got = m.forward({"x": ids})
    assert got.method == "tensor plan"
    assert any(np.isneginf(np.asarray(got[v])).any() for v in got if np.asarray(got[v]).dtype.kind == "f")
    assert_same_trace(got, reference(m, {"x": ids}), "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_plan_trace_computes_intermediates_when_read(dtype):
    """Without keep the plan runs the sinks only; any other node is computed on first read, equal to the reference."""
    m = tf.encoder_layer(d_model=8, heads=2, d_ff=16, dtype=dtype, seed=3)
    x = np.random.default_rng(3).standard_normal((2, 5, 8)).astype(dtype)
    m.forward({"e": x})
    got = m.forward({"e": x})
    assert got.method == "tensor plan"
    children = {p for mech in m.mechanisms.values() for p in mech.parents}
    sinks = {v for v in m.mechanisms if v not in children}
    assert set(got._values) == sinks | {"e"}                 # nothing else made yet
    want = reference(m, {"e": x})
    middle = [v for v in m.dag.topological_order() if v not in sinks and v != "e"]
    k = middle[len(middle) // 2]
    np.testing.assert_allclose(got[k], want[k], **TOL[dtype])  # read out of order: its ancestors filled in
    assert k in got._values and len(got._values) < len(want)
    assert_same_trace(got, want, dtype)
    assert len(got) == len(want) and all(v in got for v in want)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_earlier_layers_laid_out_when_read(bidirectional):
    """Only the last layer's states are laid out per call; reading one earlier state gives its whole layer,
    equal to the reference, and a gate read first pulls its layer in the same way."""
    m = recurrent.build("lstm", input_size=3, hidden_size=4, T=5, layers=3, bidirectional=bidirectional,
                        dtype="float64", seed=2)
    xs = _inputs(5, 3, 3, "float64", seed=4)
    want = reference(m, xs)
    got = m.forward(xs)
    held = set(got._values)
    assert "l2.h[4]" in held and "l0.h[0]" not in held and "l1.h[3]" not in held
    np.testing.assert_allclose(got["l0.h[3]"], want["l0.h[3]"], **TOL["float64"])
    assert {f"l0.h[{t}]" for t in range(5)} <= set(got._values) and "l1.h[0]" not in got._values
    np.testing.assert_allclose(got["l1.f[2]"], want["l1.f[2]"], **TOL["float64"])   # a gate: needs l0, l1 states
    assert "l1.h[1]" in got._values
    assert_same_trace(got, want, "float64")


def test_recurrent_loop_overflow_in_an_inner_layer_goes_to_the_reference():
    """Layer 0 overflows while the last layer stays finite (relu of -inf): every layer is checked, and the
    reference run names the node, as for a last-layer overflow."""
    w = recurrent.random_weights("rnn", input_size=1, hidden_size=3, layers=2, seed=0)
    w = {k: (v * 1e20 if k == "weight_ih_l0" else -np.abs(v) if k.startswith("weight") else np.zeros_like(v))
         for k, v in w.items()}                      # one step, one input: +-inf in layer 0, never NaN
    m = recurrent.rnn(w, T=1, layers=2, nonlinearity="relu", dtype="float32")
    xs = {"x[0]": np.array([[1e19], [-1e19]], np.float32)}
    with pytest.raises(cn.errors.NumericalError) as want:
        reference(m, xs)
    assert "l0." in str(want.value)
    with pytest.raises(cn.errors.NumericalError) as got:
        m.forward(xs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_recurrent_loop_keeps_float32_everywhere(kind):
    """No silent float64 upcast: the loop's weights and every value of the trace (states, gates) are float32."""
    m = recurrent.build(kind, input_size=3, hidden_size=4, T=3, layers=2, dtype="float32", seed=0)
    got = m.forward(_inputs(3, 2, 3, "float32"))
    assert got.method == "recurrent loop"
    assert {got[k].dtype for k in got} == {np.dtype(np.float32)}
    out = recurrent.run(m, np.ones((2, 3, 3), np.float32))
    assert {a.dtype for a in out if a is not None} == {np.dtype(np.float32)}


def test_filled_trace_to_pandas_has_every_scalar_node():
    """A column per 1-d node, those not computed yet included, equal to the reference's frame."""
    pd = pytest.importorskip("pandas")
    from causalnet.mechanisms import tensor as T
    m = cn.CausalModel({"x": T.Input(()), "y": T.ReLU("x"), "z": T.ReLU("y")})
    x = np.array([1.0, -1.0, 2.0])
    m.forward({"x": x})
    got = m.forward({"x": x})
    assert got.method == "tensor plan" and "y" not in got._values
    assert list(got.to_pandas().columns) == ["x", "y", "z"]
    pd.testing.assert_frame_equal(got.to_pandas(), reference(m, {"x": x}).to_pandas())
