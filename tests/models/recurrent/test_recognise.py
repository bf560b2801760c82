"""A recurrent model saved and loaded (or rebuilt from its nodes) takes the recurrent loop again, and only then."""

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.forward import ForwardRequest
from causalnet.models import recurrent
from causalnet.models import transformer as tf
from causalnet.models.recurrent.recognise import RECOGNISED, recurrent_shape

TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def reference(model, values):
    """The node-by-node run of ``model.forward(values)``."""
    return ForwardRequest(model, values, None, None, None, None, model._forward_nodes).run_reference()


def _inputs(T, n, d, dtype, seed):
    rng = np.random.default_rng(seed)
    return {f"x[{t}]": rng.standard_normal((n, d)).astype(dtype) for t in range(T)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["rnn", "lstm", "gru"]), layers=st.integers(1, 2), bidirectional=st.booleans(),
       bias=st.booleans(), relu=st.booleans(), dtype=st.sampled_from(["float32", "float64"]),
       T=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_a_loaded_model_takes_the_loop_and_equals_the_reference(kind, layers, bidirectional, bias, relu, dtype,
                                                               T, seed):
    m = recurrent.build(kind, input_size=2, hidden_size=3, T=T, layers=layers, bidirectional=bidirectional,
                        bias=bias, nonlinearity="relu" if relu and kind == "rnn" else "tanh", dtype=dtype,
                        seed=seed)
    with tempfile.TemporaryDirectory() as d:
        tf.save(m, Path(d) / "m.json")
        loaded = tf.load(Path(d) / "m.json")
    assert "recurrent: shape" not in loaded.cache                         # a load starts with no cache
    xs = _inputs(T, 3, 2, dtype, seed)
    got = loaded.forward(xs)
    assert got.method == "recurrent loop"
    assert recurrent_shape(loaded) == (kind, layers, 2 if bidirectional else 1, T)
    want = m.forward(xs)                                                  # the original's loop: bit for bit
    ref = reference(loaded, xs)                                           # the loaded model node by node
    for k in ref:
        assert np.array_equal(np.asarray(got[k]), np.asarray(want[k])), k
        assert_allclose(np.asarray(got[k]), np.asarray(ref[k]), **TOL[dtype], err_msg=str(k))


def test_a_model_rebuilt_from_its_nodes_is_recognised():
    m = recurrent.gru(input_size=2, hidden_size=3, T=3, seed=0)
    again = cn.CausalModel(dict(m.mechanisms))
    assert again.forward(_inputs(3, 2, 2, "float64", 0)).method == "recurrent loop"


def test_a_step_with_other_weights_is_not_taken():
    m = recurrent.lstm(input_size=2, hidden_size=3, T=4, seed=0)
    other = recurrent.lstm(input_size=2, hidden_size=3, T=4, seed=1)
    mechs = dict(m.mechanisms)
    mechs["l0.f[2]"] = other.mechanisms["l0.f[2]"]                         # same parents, other weights
    odd = cn.CausalModel(mechs)
    xs = _inputs(4, 2, 2, "float64", 3)
    got = odd.forward(xs)
    assert got.method != "recurrent loop" and recurrent_shape(odd) is None and odd.cache[RECOGNISED] is False
    ref = reference(odd, xs)
    assert_allclose(got["l0.h[3]"], ref["l0.h[3]"], rtol=1e-12, atol=1e-12)
    assert not np.allclose(got["l0.h[3]"], m.forward(xs)["l0.h[3]"])       # the odd step is honoured


def test_other_models_are_not_taken():
    extra = dict(recurrent.rnn(input_size=2, hidden_size=3, T=2, seed=0).mechanisms)
    extra["y"] = cn.tensor.Tanh("l0.h[1]")                                  # one node more than the builder's
    assert recurrent_shape(cn.CausalModel(extra)) is None
    lengths = recurrent.lstm(input_size=2, hidden_size=3, T=2, lengths=True, seed=0)
    assert recurrent_shape(cn.CausalModel(dict(lengths.mechanisms))) is None
    assert recurrent_shape(cn.gallery.load("sprinkler")) is None
