"""Variable-length batches against PyTorch's packed sequences (float64), and against each sequence run alone."""

import numpy as np
import pytest
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet import CausalNetError, EvidenceError, ModelError
from causalnet.models import recurrent

torch = pytest.importorskip("torch")
nn = torch.nn
rnn_utils = torch.nn.utils.rnn

T, D_IN, H = 6, 3, 4
LENGTHS = np.array([4, 6, 1, 3])


def _values(x, lengths):
    vals = {f"x[{t}]": x[:, t] for t in range(x.shape[1])}
    return {**vals, "lengths": lengths}


def _torch_packed(mod, x, lengths):
    packed = rnn_utils.pack_padded_sequence(torch.from_numpy(x), torch.from_numpy(lengths), batch_first=True,
                                            enforce_sorted=False)
    with torch.no_grad():
        out, state = mod(packed)
        out, _ = rnn_utils.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out.numpy(), state


@pytest.mark.parametrize("cls", [nn.RNN, nn.LSTM, nn.GRU])
@pytest.mark.parametrize("layers,bidir", [(1, False), (2, True)])
def test_matches_packed_torch(cls, layers, bidir):
    torch.manual_seed(3)
    mod = cls(D_IN, H, num_layers=layers, bidirectional=bidir, batch_first=True, dtype=torch.float64)
    m = recurrent.from_torch(mod, T, lengths=True)
    x = np.random.default_rng(3).standard_normal((len(LENGTHS), T, D_IN))
    out, state = _torch_packed(mod, x, LENGTHS)
    tr = m.forward(_values(x, LENGTHS))
    last = f"l{layers - 1}.y" if bidir else f"l{layers - 1}.h"
    assert_allclose(np.stack([tr[f"{last}[{t}]"] for t in range(T)], axis=1), out, rtol=0, atol=1e-10)
    h_n = (state[0] if cls is nn.LSTM else state).numpy()                 # (layers * dirs, n, H)
    dirs = 1 + bidir
    for k in range(layers):
        assert_allclose(tr[f"l{k}.h_n"], h_n[k * dirs], rtol=0, atol=1e-10)
        if bidir:
            assert_allclose(tr[f"l{k}.rev.h[0]"], h_n[k * dirs + 1], rtol=0, atol=1e-10)
        if cls is nn.LSTM:
            assert_allclose(tr[f"l{k}.c_n"], state[1].numpy()[k * dirs], rtol=0, atol=1e-10)


def test_each_row_as_if_alone():
    m = recurrent.gru(input_size=D_IN, hidden_size=H, T=T, layers=2, bidirectional=True, lengths=True, seed=1)
    sd = recurrent.random_weights("gru", input_size=D_IN, hidden_size=H, layers=2, bidirectional=True, seed=1)
    x = np.random.default_rng(4).standard_normal((len(LENGTHS), T, D_IN))
    tr = m.forward(_values(x, LENGTHS))
    for i, L in enumerate(LENGTHS):
        alone = recurrent.gru(sd, T=int(L), layers=2, bidirectional=True).forward(
            {f"x[{t}]": x[i:i + 1, t] for t in range(L)})
        for t in range(T):
            want = alone[f"l1.y[{t}]"][0] if t < L else np.zeros(2 * H)
            assert_allclose(tr[f"l1.y[{t}]"][i], want, rtol=0, atol=1e-12)
        assert_allclose(tr["l1.h_n"][i], alone[f"l1.h[{L - 1}]"][0], rtol=0, atol=1e-12)


def test_full_lengths_equal_the_fixed_length_model():
    m = recurrent.lstm(input_size=D_IN, hidden_size=H, T=T, lengths=True, seed=0)
    fixed = recurrent.lstm(input_size=D_IN, hidden_size=H, T=T, seed=0)
    x = np.random.default_rng(5).standard_normal((2, T, D_IN))
    a = m.forward(_values(x, np.array([T, T])))
    b = fixed.forward({f"x[{t}]": x[:, t] for t in range(T)})
    assert (a.method, b.method) == ("node by node", "recurrent loop")   # the loop sums in another order
    assert_allclose(a["l0.h_n"], b[f"l0.h[{T - 1}]"], rtol=1e-13, atol=1e-15)
    assert m.dag.has_edge("lengths", "l0.h[2]")


@pytest.mark.parametrize("bad", [np.array([0, 3]), np.array([7, 3]), np.array([2.5, 3.0]), np.array([[2, 3]]),
                                 np.array([2, 3, 4]), np.array([-1, 2])])
def test_bad_lengths_are_typed_errors(bad):
    m = recurrent.rnn(input_size=D_IN, hidden_size=H, T=T, lengths=True, seed=0)
    x = np.random.default_rng(6).standard_normal((2, T, D_IN))
    err = guarded(m.forward, _values(x, bad))
    assert isinstance(err, (EvidenceError, ModelError))
    assert "lengths" in str(err)


def test_lengths_input_is_required():
    m = recurrent.rnn(input_size=D_IN, hidden_size=H, T=2, lengths=True, seed=0)
    with pytest.raises(CausalNetError, match="lengths"):
        m.forward({"x[0]": np.zeros((1, D_IN)), "x[1]": np.zeros((1, D_IN))})


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, T), min_size=1, max_size=4), st.sampled_from(["rnn", "lstm", "gru"]))
def test_padding_never_leaks_into_a_row(lengths, kind):
    """Property: whatever the other rows' lengths, a row's outputs are those of the row run alone."""
    sd = recurrent.random_weights(kind, input_size=D_IN, hidden_size=H, bidirectional=True, seed=7)
    m = recurrent.build(kind, sd, T=T, bidirectional=True, lengths=True)
    lengths = np.array(lengths)
    x = np.random.default_rng(len(lengths)).standard_normal((len(lengths), T, D_IN))
    out = recurrent.run(m, x, lengths)
    for i, L in enumerate(lengths):
        alone = recurrent.run(recurrent.build(kind, sd, T=int(L), bidirectional=True), x[i:i + 1, :L])
        assert_allclose(out.output[i, :L], alone.output[0], rtol=0, atol=1e-12)
        assert np.all(out.output[i, L:] == 0)
        assert_allclose(out.h_n[:, i], alone.h_n[:, 0], rtol=0, atol=1e-12)
