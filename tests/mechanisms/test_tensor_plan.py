"""Compiled plans: the flat program equals the checked node-by-node run, and keeps its checks."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import CausalModel, ModelError, NumericalError, ShapeError
from causalnet.inference.tensor import Plan
from causalnet.mechanisms import tensor as T
from causalnet.mechanisms.tensor import fused
from causalnet.models import transformer as tf


@pytest.fixture(autouse=True, params=["numpy", "numba"])
def backend(request):
    """Every test with numpy's ops and with the fused kernels (compiled plans' two ways of running)."""
    if request.param == "numba" and not fused.AVAILABLE:
        pytest.skip("numba is not installed")
    with fused.backend(request.param):
        yield request.param


def test_program_equals_checked_run_and_fuses_qkv():
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)
    plan = Plan(m, outputs=["I"])
    ids = np.random.default_rng(0).integers(11, size=(3, 6))
    first = plan.run({"x": ids})["I"]                      # checked path; records the shape
    assert plan._checked
    second = plan.run({"x": ids})["I"]                     # compiled program
    assert_allclose(second, first, rtol=0, atol=1e-12)
    assert_allclose(second, m.forward({"x": ids})["I"], rtol=0, atol=1e-12)
    fused = [fn for fn, *_ in plan._program.steps if "fused" in getattr(fn, "__qualname__", "")]
    assert len(fused) == 2                                 # one QKV product per layer


def test_program_keeps_data_checks_and_names_the_node():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)
    plan = Plan(m, outputs=["I"])
    plan.run({"x": np.zeros((1, 3), np.int64)})
    with pytest.raises(ShapeError, match="'x' holds the id 11"):
        plan.run({"x": np.full((1, 3), 11, np.int64)})
    enc = tf.encoder_layer(d_model=4, heads=2, d_ff=8, seed=0)
    p2 = Plan(enc, outputs=["enc.0.F"])
    x = np.ones((1, 2, 4))
    p2.run({"e": x})
    with pytest.raises(ModelError):
        p2.run({"e": np.full((1, 2, 4), np.nan)})
    lin = CausalModel({"x": T.Input((3,)), "y": T.Linear("x", np.full((2, 3), 1e308)), "z": T.ReLU("y")})
    p3 = Plan(lin, outputs=["z"])
    p3.run({"x": np.ones((1, 3)) * 1e-9})                 # shapes checked: later runs take the program
    with pytest.raises(NumericalError, match="'y'"):
        p3.run({"x": np.ones((1, 3))})                     # 3e308 overflows in node y


def test_program_runs_intervened_nodes():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)
    md = tf.ablate(m, tf.head(m, "dec.0.self.A", 1))
    plan = Plan(md, outputs=["I"])
    ids = np.array([[1, 2, 3]])
    a = plan.run({"x": ids})["I"]                          # checked path
    b = plan.run({"x": ids})["I"]                          # program (fused kernels: equal to rounding)
    assert_allclose(a, b, rtol=0, atol=1e-12)
    assert_allclose(b, md.forward({"x": ids})["I"], rtol=0, atol=1e-12)
