"""from_torch on PyTorch modules: settings read from the module, unrepresentable ones refused, learned positions."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import ModelError
from causalnet.models import transformer as tf

torch = pytest.importorskip("torch")
nn = torch.nn


def _x(shape=(2, 5, 8), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _run(module, x, **kw):
    """The module's math path: PyTorch's fused eval fast path computes exact GELU even for GELU('tanh')."""
    old = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            return module(torch.from_numpy(x), **kw).numpy()
    finally:
        torch.backends.mha.set_fastpath_enabled(old)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh_module", "relu_module"])
def test_encoder_layer_module_settings_are_read(norm_first, activation):
    torch.manual_seed(0)
    act = {"gelu_tanh_module": nn.GELU(approximate="tanh"), "relu_module": nn.ReLU()}.get(activation, activation)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=act, norm_first=norm_first,
                                       layer_norm_eps=1e-6, batch_first=True, dtype=torch.float64).eval()
    m = tf.from_torch(layer)
    x = _x()
    assert_allclose(m.forward({"e": x})["enc.0.n"], _run(layer, x), rtol=0, atol=1e-10)


def test_stacks_and_seq_first_modules():
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True,
                                       dtype=torch.float64)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, dtype=torch.float64),
                                enable_nested_tensor=False).eval()
    m = tf.from_torch(enc, batch_first=False)
    x = _x()                                                # (n, T, d); the module wants (T, n, d)
    ref = _run(enc, x.transpose(1, 0, 2)).transpose(1, 0, 2)
    assert_allclose(m.forward({"e": x})["n"], ref, rtol=0, atol=1e-10)
    full = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True, norm_first=True, activation="gelu",
                          dtype=torch.float64).eval()
    mt = tf.from_torch(full)
    src, tgt = _x((2, 4, 8), 1), _x((2, 3, 8), 2)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    with torch.no_grad():
        ref = full(torch.from_numpy(src), torch.from_numpy(tgt), tgt_mask=mask, tgt_is_causal=True).numpy()
    assert_allclose(mt.forward({"e": src, "dec.e": tgt})["Y"], ref, rtol=0, atol=1e-10)


def test_unrepresentable_settings_are_model_errors():
    torch.manual_seed(2)
    odd = nn.TransformerEncoderLayer(8, 2, 16, activation=lambda t: torch.tanh(t), batch_first=True)
    with pytest.raises(ModelError, match="activation"):
        tf.from_torch(odd)
    with pytest.raises(ModelError, match="add_zero_attn"):
        tf.from_torch(nn.MultiheadAttention(8, 2, add_zero_attn=True))
    layer = nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, batch_first=True)
    with pytest.raises(ModelError, match="heads=4"):
        tf.from_torch(layer, heads=4)
    with pytest.raises(ModelError, match="norm_first"):
        tf.from_torch(layer, norm_first=False)
    with pytest.raises(ModelError, match="cannot rebuild a Linear"):
        tf.from_torch(nn.Linear(2, 2))
    sd = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    with pytest.raises(ModelError, match="heads= is needed"):
        tf.from_torch(sd)
    with pytest.raises(ModelError, match="norm_frist"):
        tf.from_torch(sd, heads=2, norm_frist=True)
    with pytest.raises(ModelError, match="batch_first"):
        tf.from_torch(sd, heads=2, batch_first="yes")
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64).eval()
    x = _x()
    m = tf.from_torch(mha)
    with torch.no_grad():
        ref = mha(*(torch.from_numpy(x),) * 3, need_weights=False)[0].numpy()
    assert_allclose(m.forward({"e": x})["attn.O"], ref, rtol=0, atol=1e-10)


def test_learned_position_embeddings_in_a_state_dict():
    torch.manual_seed(3)
    L, d, tmax = 11, 8, 16
    layer = nn.TransformerEncoderLayer(d, 2, 16, dropout=0.0, batch_first=True, dtype=torch.float64)
    stack = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    sd = {k: v.detach().numpy() for k, v in stack.state_dict().items()}
    rng = np.random.default_rng(0)
    sd["embedding.weight"] = rng.standard_normal((L, d))
    sd["pos_embedding.weight"] = rng.standard_normal((tmax, d))
    m = tf.from_torch(sd, heads=2, kind="encoder")
    ids = rng.integers(L, size=(2, 6))
    e = sd["embedding.weight"][ids] + sd["pos_embedding.weight"][:6]
    assert_allclose(m.forward({"x": ids})["n"], _run(stack, e), rtol=0, atol=1e-10)
    with pytest.raises(ModelError, match="16 positions"):
        m.forward({"x": rng.integers(L, size=(1, 17))})
