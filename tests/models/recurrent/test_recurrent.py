"""Unrolled RNN / LSTM / GRU against PyTorch with the same weights (float64), and do on hidden states."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import ModelError
from causalnet.models import recurrent

torch = pytest.importorskip("torch")
nn = torch.nn

T, D_IN, H = 5, 3, 4


def _inputs(x):
    return {f"x[{t}]": x[:, t] for t in range(x.shape[1])}


def _stack(tr, layer, bidir):
    name = f"l{layer}.y" if bidir else f"l{layer}.h"
    return np.stack([tr[f"{name}[{t}]"] for t in range(T)], axis=1)      # (n, T, D*H)


@pytest.mark.parametrize("cls", [nn.RNN, nn.LSTM, nn.GRU])
@pytest.mark.parametrize("layers,bidir,bias", [(1, False, True), (2, True, True), (2, False, False)])
def test_matches_torch(cls, layers, bidir, bias):
    torch.manual_seed(0)
    mod = cls(D_IN, H, num_layers=layers, bidirectional=bidir, bias=bias, batch_first=True, dtype=torch.float64).eval()
    m = recurrent.from_torch(mod, T)
    x = np.random.default_rng(0).standard_normal((2, T, D_IN))
    with torch.no_grad():
        out, state = mod(torch.from_numpy(x))
    h_n = (state[0] if cls is nn.LSTM else state).numpy()                   # (layers * dirs, n, H)
    tr = m.forward(_inputs(x))
    assert_allclose(_stack(tr, layers - 1, bidir), out.numpy(), rtol=0, atol=1e-10)
    for k in range(layers):
        assert_allclose(tr[f"l{k}.h[{T - 1}]"], h_n[k * (1 + bidir)], rtol=0, atol=1e-10)
        if bidir:
            assert_allclose(tr[f"l{k}.rev.h[0]"], h_n[k * 2 + 1], rtol=0, atol=1e-10)
        if cls is nn.LSTM:
            assert_allclose(tr[f"l{k}.c[{T - 1}]"], state[1].numpy()[k * (1 + bidir)], rtol=0, atol=1e-10)


def test_relu_rnn_and_state_dict_and_random_builders():
    torch.manual_seed(1)
    mod = nn.RNN(D_IN, H, nonlinearity="relu", dtype=torch.float64)
    sd = {k: v.detach().numpy() for k, v in mod.state_dict().items()}
    m = recurrent.from_torch(sd, T, nonlinearity="relu")
    x = np.random.default_rng(1).standard_normal((2, T, D_IN))
    with torch.no_grad():
        out, _ = mod(torch.from_numpy(x.transpose(1, 0, 2)))               # seq-first module
    assert_allclose(_stack(m.forward(_inputs(x)), 0, False), out.numpy().transpose(1, 0, 2), rtol=0, atol=1e-10)
    assert recurrent.from_torch({k: v.detach().numpy() for k, v in nn.GRU(D_IN, H).state_dict().items()}, 2).spec(
        "l0.z[1]").shape == (H,)
    g = recurrent.gru(input_size=D_IN, hidden_size=H, T=3, layers=2, bidirectional=True, seed=0)
    assert g.spec("l1.y[2]").shape == (2 * H,)


def test_do_on_a_hidden_state_changes_only_later_steps():
    m = recurrent.lstm(input_size=D_IN, hidden_size=H, T=T, seed=0)
    x = _inputs(np.random.default_rng(2).standard_normal((2, T, D_IN)))
    base = m.forward(x)
    patched = m.do({"l0.h[2]": np.zeros(H)}).forward(x)
    for t in range(T):
        same = np.allclose(patched[f"l0.h[{t}]"], base[f"l0.h[{t}]"])
        assert same == (t < 2)
    assert m.dag.d_separated({"x[3]"}, {"l0.h[2]"})


def test_errors_are_typed():
    with pytest.raises(ModelError, match="proj_size"):
        recurrent.from_torch(nn.LSTM(D_IN, H, proj_size=2), T)
    with pytest.raises(ModelError, match="cannot rebuild"):
        recurrent.from_torch(nn.Linear(2, 2), T)
    sd = {k: v.detach().numpy() for k, v in nn.GRU(D_IN, H).state_dict().items()}
    with pytest.raises(ModelError, match="not used"):
        recurrent.from_torch({**sd, "extra": np.zeros(2)}, T)
    with pytest.raises(ModelError, match="hidden_size"):
        recurrent.lstm(input_size=D_IN, T=2)
    with pytest.raises(ModelError, match="nonlinearity"):
        recurrent.rnn(input_size=D_IN, hidden_size=H, T=2, nonlinearity="gelu")
    with pytest.raises(ModelError):
        recurrent.lstm(sd, T=2)                                            # GRU weights: 3H rows, not 4H
