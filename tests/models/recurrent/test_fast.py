"""The fast loop (recurrent.run) equals the generic DAG execution, and PyTorch, on every cell and layout."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import CausalNetError
from causalnet.models import recurrent

torch = pytest.importorskip("torch")

T, D_IN, H = 5, 3, 4
LENGTHS = np.array([5, 2, 1])


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layers,bidir,lengths,bias", [(1, False, False, True), (2, True, False, False),
                                                       (2, True, True, True), (1, False, True, True)])
def test_fast_equals_generic(kind, layers, bidir, lengths, bias):
    m = recurrent.build(kind, input_size=D_IN, hidden_size=H, T=T, layers=layers, bidirectional=bidir, bias=bias,
                        lengths=lengths, nonlinearity="relu" if kind == "rnn" else "tanh", seed=2)
    x = np.random.default_rng(2).standard_normal((len(LENGTHS), T, D_IN))
    L = LENGTHS if lengths else None
    fast = recurrent.run(m, x, L)
    slow = _generic(m, x, L)
    for a, b in zip(fast, slow):
        if a is None:
            assert b is None
        else:
            assert_allclose(a, b, rtol=0, atol=1e-12)


def _generic(m, x, L):
    """The same outputs through the generic path (an intervention that changes nothing forces it)."""
    m2 = m.do({"x[0]": lambda v: v})
    return recurrent.run(m2, x, L)


def test_fast_matches_torch_lstm():
    torch.manual_seed(0)
    mod = torch.nn.LSTM(D_IN, H, num_layers=2, bidirectional=True, batch_first=True, dtype=torch.float64)
    m = recurrent.from_torch(mod, T)
    x = np.random.default_rng(0).standard_normal((2, T, D_IN))
    with torch.no_grad():
        out, (h, c) = mod(torch.from_numpy(x))
    got = recurrent.run(m, x)
    assert_allclose(got.output, out.numpy(), rtol=0, atol=1e-10)
    assert_allclose(got.h_n, h.numpy(), rtol=0, atol=1e-10)
    assert_allclose(got.c_n, c.numpy(), rtol=0, atol=1e-10)


def test_bad_inputs():
    m = recurrent.gru(input_size=D_IN, hidden_size=H, T=T, lengths=True, seed=0)
    x = np.zeros((2, T, D_IN))
    for bad_x, bad_len in [(np.zeros((2, T + 1, D_IN)), [1, 2]), (x, None), (x, [0, 2]), (x, [1, 2, 3])]:
        with pytest.raises(CausalNetError):
            recurrent.run(m, bad_x, bad_len)
    with pytest.raises(CausalNetError, match="not a model"):
        recurrent.run(recurrent.seq2seq(src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, seed=0), x)


# --- the compiled step loops (kernels) against the numpy references, both state layouts, both dtypes ----------

from causalnet.models.recurrent import fast, kernels, layouts  # noqa: E402
from tests.conftest import guarded  # noqa: E402

LAYOUTS = [layouts.FeatureMajor, layouts.TimeMajor]
TOL = {"float32": 2e-6, "float64": 1e-12}


def _run_with(monkeypatch, m, x, L, layout, compiled):
    """`recurrent.run` with the state layout forced and the compiled loops on or off (fresh prepared weights)."""
    with monkeypatch.context() as mp:
        mp.setattr(fast, "layout_for", lambda dtype: layout)
        if not compiled:
            mp.setattr(fast, "kernel", lambda *a: None)
        fast._PREPARED.pop(m, None)
        out = recurrent.run(m, x, L)
        fast._PREPARED.pop(m, None)
    return out


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("bidir,lengths", [(False, False), (True, True)])
def test_compiled_equals_numpy(monkeypatch, dtype, kind, bidir, lengths):
    """Each dtype's own layout (the compiled loops that run), against the numpy references in that layout."""
    layout = layouts.layout_for(dtype)
    T_ = 11                               # with blocks of 2 steps: several blocks and a partial one
    m = recurrent.build(kind, input_size=D_IN, hidden_size=H, T=T_, layers=2, bidirectional=bidir,
                        lengths=lengths, dtype=dtype, seed=4, nonlinearity="relu" if kind == "rnn" and lengths else "tanh")
    x = (3 * np.random.default_rng(4).standard_normal((3, T_, D_IN))).astype(dtype)
    L = np.array([11, 4, 1]) if lengths else None
    with monkeypatch.context() as mp:
        mp.setattr(layout, "block", 6)                                   # 2 steps a block
        got = _run_with(monkeypatch, m, x, L, layout, compiled=True)
        ref = _run_with(monkeypatch, m, x, L, layout, compiled=False)
    for a, b in zip(got, ref):
        if a is None:
            assert b is None
        else:
            assert a.dtype == np.dtype(dtype)
            assert_allclose(a, b, rtol=0, atol=TOL[dtype])


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda c: c.name)
def test_numpy_path_equals_generic(monkeypatch, layout):
    """Without numba (numpy references) either layout still equals the node-by-node execution."""
    m = recurrent.lstm(input_size=D_IN, hidden_size=H, T=T, layers=2, bidirectional=True, lengths=True, seed=5)
    x = np.random.default_rng(5).standard_normal((3, T, D_IN))
    got = _run_with(monkeypatch, m, x, LENGTHS, layout, compiled=False)
    for a, b in zip(got, _generic(m, x, LENGTHS)):
        assert_allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_loop_on_extreme_preactivations(dtype):
    """One compiled LSTM step against numpy on pre-activations from 1e-8 to 60 (the tanh clamps, tiny inputs)."""
    rng = np.random.default_rng(6)
    n, H_ = 5, 7
    mag = np.exp(rng.uniform(np.log(1e-8), np.log(60.0), (n, 4 * H_)))
    a = (mag * rng.choice([-1.0, 1.0], mag.shape)).astype(dtype)          # (n, 4 H) pre-activations
    c0 = rng.standard_normal((n, H_)).astype(dtype)
    keep = np.ones((1, n), dtype=dtype)
    zeros = np.zeros((4 * H_, H_), dtype=dtype)
    if layouts.layout_for(dtype) is layouts.FeatureMajor:                 # (4 H, n) pre-activations, (H, T, n) states
        c, y, h = np.ascontiguousarray(c0.T), np.zeros((H_, 1, n), dtype), np.zeros((H_, n), dtype)
        args = (zeros, np.zeros((4 * H_, n), dtype), np.ascontiguousarray(a.T[:, None]))
    else:                                                                 # (n, 4 H), (T, n, H)
        c, y, h = c0.copy(), np.zeros((1, n, H_), dtype), np.zeros((n, H_), dtype)
        args = (zeros.T.copy(), np.zeros((n, 4 * H_), dtype), a[None].copy())
    loop = kernels.kernel("lstm", layouts.layout_for(dtype).name, dtype)
    loop(*args, np.zeros(4 * H_, dtype), 0, False, True, keep, c, False, c, y, h)
    c_ref, h_ref = c0.copy(), np.zeros((n, H_), dtype=dtype)
    kernels.lstm_step_numpy(a.copy(), c_ref, h_ref, keep[0])
    tol = 1e-6 if dtype == "float32" else 1e-15
    feature = layouts.layout_for(dtype) is layouts.FeatureMajor
    assert_allclose(c.T if feature else c, c_ref, rtol=tol, atol=tol)
    assert_allclose(y[:, 0].T if feature else y[0], h_ref, rtol=tol, atol=tol)


def test_tanh32_accuracy():
    x = np.concatenate([np.linspace(-12, 12, 200_001), np.geomspace(1e-30, 1e-3, 1000)]).astype(np.float32)
    got = kernels.tanh32(x)
    exact = np.tanh(x.astype(np.float64))
    assert got.dtype == np.float32
    assert np.abs(got - exact).max() <= 4e-7                              # 6.3 ulp of 1 at most
    assert np.max(np.abs(got - exact) / np.maximum(np.abs(exact), 1e-30)) <= 4e-7
    assert np.abs(got).max() <= 1.0
    assert_allclose(kernels.tanh32(-x), -got, rtol=0, atol=0)             # odd, exactly
    assert np.isnan(kernels.tanh32(np.float32(np.nan)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("compiled", [True, False])
def test_swap_outer(monkeypatch, dtype, compiled):
    if not compiled:
        monkeypatch.setattr(kernels, "_swap", lambda: None)              # as without numba
    a = (10 * np.random.default_rng(7).standard_normal((13, 3, 21))).astype(dtype)
    got = kernels.swap_outer(a)
    assert got.flags.c_contiguous and got.dtype == a.dtype
    assert_allclose(got, a.transpose(2, 1, 0), rtol=0, atol=0)
    assert_allclose(kernels.swap_outer(a[:, :, ::2]), a[:, :, ::2].transpose(2, 1, 0), rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fast_matches_torch_float32(kind):
    torch.manual_seed(1)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    mod = cls(D_IN, H, num_layers=2, bidirectional=True, batch_first=True, dtype=torch.float32)
    m = recurrent.from_torch(mod, 40, dtype="float32")
    x = np.random.default_rng(1).standard_normal((6, 40, D_IN)).astype(np.float32)
    with torch.no_grad():
        out, hc = mod(torch.from_numpy(x))
    got = recurrent.run(m, x)
    assert got.output.dtype == np.float32
    assert_allclose(got.output, out.numpy(), rtol=0, atol=1e-5)
    h = hc[0] if kind == "lstm" else hc
    assert_allclose(got.h_n, h.numpy(), rtol=0, atol=1e-5)
    if kind == "lstm":
        assert_allclose(got.c_n, hc[1].numpy(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e39])
def test_non_finite_x_is_refused(dtype, bad):
    m = recurrent.lstm(input_size=D_IN, hidden_size=H, T=T, dtype=dtype, seed=0)
    x = np.zeros((2, T, D_IN))
    x[1, 3, 2] = bad
    err = guarded(recurrent.run, m, x)
    if dtype == "float64" and bad == 1e39:
        assert not isinstance(err, CausalNetError)                        # finite in float64: a valid input
    else:
        assert isinstance(err, CausalNetError) and "NaN or inf" in str(err)


@pytest.mark.parametrize("dtype,big", [("float32", 3e38), ("float64", 1.7e308)])
def test_an_overflowing_state_raises_as_forward_does(dtype, big):
    from causalnet import NumericalError

    m = recurrent.rnn(input_size=3, hidden_size=4, T=3, nonlinearity="relu", seed=4, dtype=dtype)
    x = np.full((2, 3, 3), big, dtype) * np.array([1, -1, 1], dtype=dtype)
    with pytest.raises(NumericalError, match="'l0.h"):
        m.forward({f"x[{t}]": x[:, t] for t in range(3)})
    with pytest.raises(NumericalError, match="'l0.h"):
        recurrent.run(m, x)                                 # was inf with a RuntimeWarning


# --- the recurrent product in row blocks (kernels.gemm_rows): OpenBLAS's small-matrix kernels ------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(G_H=st.integers(1, 8192), H_=st.integers(1, 4096), n=st.integers(1, 4096))
def test_gemm_rows_keeps_each_product_small(G_H, H_, n):
    rows = kernels.gemm_rows(G_H, H_, n)
    if G_H * H_ * n <= kernels.SMALL_GEMM or 16 * H_ * n > kernels.SMALL_GEMM:
        assert rows == G_H                                                # one product: small already, or hopeless
    else:
        assert rows % 16 == 0 and 16 <= rows
        assert rows * H_ * n <= kernels.SMALL_GEMM < (rows + 16) * H_ * n   # the largest that fits


def test_gemm_rows_on_the_benchmark_lstm():
    assert kernels.gemm_rows(1024, 256, 32) == 112                        # 10 products a step (9 of 112, 1 of 16)


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba not installed")
@settings(max_examples=6, deadline=None)
@given(kind=st.sampled_from(["lstm", "gru", "rnn"]), dtype=st.sampled_from(["float32", "float64"]),
       n=st.integers(250, 330), seed=st.integers(0, 2**16))
def test_row_blocked_products_equal_numpy_and_generic(kind, dtype, n, seed):
    """Sizes where the feature-major loop splits ``W_hh h`` into row blocks (a partial last one included)."""
    from _pytest.monkeypatch import MonkeyPatch

    H_, T_ = 64, 4
    G_H = {"lstm": 4, "gru": 3, "rnn": 1}[kind] * H_
    rows = kernels.gemm_rows(G_H, H_, n)
    assert rows < G_H                                                     # the blocks are exercised
    m = recurrent.build(kind, input_size=D_IN, hidden_size=H_, T=T_, layers=2, dtype=dtype, seed=seed % 97)
    x = np.random.default_rng(seed).standard_normal((n, T_, D_IN)).astype(dtype)
    mp = MonkeyPatch()
    try:
        got = _run_with(mp, m, x, None, layouts.FeatureMajor, compiled=True)
        ref = _run_with(mp, m, x, None, layouts.FeatureMajor, compiled=False)
    finally:
        mp.undo()
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b, c in zip(got, ref, _generic(m, x, None)):
        if a is None:
            assert b is None and c is None
            continue
        assert a.dtype == np.dtype(dtype)
        assert_allclose(a, b, rtol=0, atol=tol)
        assert_allclose(a, c, rtol=0, atol=tol)
