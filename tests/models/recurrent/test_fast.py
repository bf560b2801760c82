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
