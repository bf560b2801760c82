"""Tests for causalnet.models.transformer: transformers as causal DAGs.

Oracles: PyTorch modules with the same weights (eval mode, float64, fast path
off) for every layer kind, with and without masks, batch > 1, ragged padding;
bit-for-bit invariance of earlier outputs to later tokens for the causal-mask
d-separation claim; exact additivity TE = NDE + NIE when the outcome reads the
residual stream linearly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from causalnet.errors import GraphError, ModelError, ShapeError
from causalnet.io.dot import to_dot
from causalnet.mechanisms import tensor as T
from causalnet.model import CausalModel
from causalnet.models import transformer as tf

try:
    import torch
except ImportError:  # torch is a test-only dependency
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
TOL = dict(rtol=0, atol=1e-10)
D, H, FF = 16, 4, 32


@pytest.fixture(autouse=True)
def _torch_reference_path():
    """PyTorch's math path (no fused fast path), so it is an independent reference."""
    if torch is None:
        yield
        return
    old = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(7)
    yield
    torch.backends.mha.set_fastpath_enabled(old)


def _sd(module) -> dict:
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def _t(a):
    return torch.from_numpy(np.asarray(a))


def _causal(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


def _ragged(n, t, lengths):
    pad = np.zeros((n, t), bool)
    for i, k in enumerate(lengths):
        pad[i, k:] = True
    return pad


def _weights(mha, x, kv, pad=None, mask=None):
    with torch.no_grad():
        return mha(_t(x), _t(kv), _t(kv), key_padding_mask=None if pad is None else _t(pad), attn_mask=mask,
                   need_weights=True, average_attn_weights=False)[1].numpy()


def _heads_P(tr, prefix, view, letter="P"):
    if view == "folded":
        return tr[f"{prefix}.{letter}"]
    return np.stack([tr[f"{prefix}.head.{i}.{letter}"] for i in range(H)], axis=1)


# -- parity with PyTorch ------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("view", ["folded", "expanded"])
@pytest.mark.parametrize("scores", [False, True])
@pytest.mark.parametrize("masks", ["none", "causal+padding"])
@pytest.mark.parametrize("cross", [False, True])
def test_attention_block_matches_torch_multihead_attention(rng, view, scores, masks, cross):
    n, t, s = 3, 5, 6
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True, dtype=torch.float64).eval()
    causal = masks != "none" and not cross
    padding = masks != "none"
    m = tf.from_torch(_sd(mha), heads=H, cross=cross, causal=causal, padding=padding, view=view, scores=scores)
    x = rng.normal(size=(n, t, D))
    mem = rng.normal(size=(n, s, D)) if cross else x
    pad = _ragged(n, mem.shape[1], [mem.shape[1], 3, 4]) if padding else None
    vals = {"e": x, **({"n": mem} if cross else {}), **({"pad": pad} if padding else {})}
    tr = m.forward(vals)
    mask = _causal(t) if causal else None
    with torch.no_grad():
        o = mha(_t(x), _t(mem), _t(mem), key_padding_mask=None if pad is None else _t(pad), attn_mask=mask)[0]
    assert_allclose(tr["attn.O"], o.numpy(), **TOL)
    assert_allclose(_heads_P(tr, "attn", view), _weights(mha, x, mem, pad, mask), **TOL)
    if scores:
        assert {"attn.B", "attn.S", "attn.M"} <= set(m.nodes) or view == "expanded"


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("view", ["folded", "expanded"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal+padding"])
def test_encoder_layer_matches_torch(rng, norm_first, activation, view, masks):
    layer = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=torch.float64,
                                             norm_first=norm_first, activation=activation).eval()
    padding, causal = masks != "none", masks == "causal+padding"
    m = tf.from_torch(_sd(layer), heads=H, padding=padding, causal=causal, norm_first=norm_first,
                      activation=activation, view=view)
    x = rng.normal(size=(3, 6, D))
    pad = _ragged(3, 6, [6, 2, 4]) if padding else None
    tr = m.forward({"e": x, **({"pad": pad} if padding else {})})
    mask = _causal(6) if causal else None
    with torch.no_grad():
        y = layer(_t(x), src_mask=mask, src_key_padding_mask=None if pad is None else _t(pad),
                  is_causal=causal).numpy()
        a_in = layer.norm1(_t(x)).numpy() if norm_first else x
    assert_allclose(tr["enc.0.n"], y, **TOL)
    assert_allclose(_heads_P(tr, "enc.0.attn", view), _weights(layer.self_attn, a_in, a_in, pad, mask), **TOL)


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", ["causal", "causal+padding"])
def test_decoder_layer_matches_torch(rng, norm_first, masks):
    layer = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=torch.float64,
                                             norm_first=norm_first).eval()
    padding = masks == "causal+padding"
    m = tf.from_torch(_sd(layer), heads=H, padding=padding, memory_padding=padding, norm_first=norm_first)
    n, t, s = 3, 5, 7
    x, mem = rng.normal(size=(n, t, D)), rng.normal(size=(n, s, D))
    pad, mpad = (_ragged(n, t, [5, 3, 4]), _ragged(n, s, [7, 7, 2])) if padding else (None, None)
    vals = {"e": x, "n": mem, **({"pad": pad, "mem_pad": mpad} if padding else {})}
    tr = m.forward(vals)
    with torch.no_grad():
        y = layer(_t(x), _t(mem), tgt_mask=_causal(t), tgt_key_padding_mask=None if pad is None else _t(pad),
                  memory_key_padding_mask=None if mpad is None else _t(mpad), tgt_is_causal=True).numpy()
    assert_allclose(tr["dec.0.Y"], y, **TOL)
    sa_in = layer.norm1(_t(x)).detach().numpy() if norm_first else x
    assert_allclose(tr["dec.0.self.P"], _weights(layer.self_attn, sa_in, sa_in, pad, _causal(t)), **TOL)
    ca_in = tr["dec.0.ln2"] if norm_first else tr["dec.0.J"]
    assert_allclose(tr["dec.0.cross.p"], _weights(layer.multihead_attn, ca_in, mem, mpad), **TOL)


@needs_torch
def test_encoder_stack_matches_torch_layer_by_layer(rng):
    enc = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=torch.float64), 3,
        norm=torch.nn.LayerNorm(D, dtype=torch.float64), enable_nested_tensor=False).eval()
    m = tf.from_torch(_sd(enc), heads=H, padding=True)
    x = rng.normal(size=(2, 5, D))
    pad = _ragged(2, 5, [5, 3])
    tr = m.forward({"e": x, "pad": pad})
    h = _t(x)
    with torch.no_grad():
        for i, layer in enumerate(enc.layers):
            assert_allclose(tr[f"enc.{i}.attn.P"], _weights(layer.self_attn, h.numpy(), h.numpy(), pad), **TOL)
            h = layer(h, src_key_padding_mask=_t(pad))
            assert_allclose(tr[f"enc.{i}.n"], h.numpy(), **TOL)
        assert_allclose(tr["n"], enc(_t(x), src_key_padding_mask=_t(pad)).numpy(), **TOL)


@needs_torch
def test_decoder_stack_with_cross_attention_matches_torch(rng):
    dec = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=torch.float64), 2,
        norm=torch.nn.LayerNorm(D, dtype=torch.float64)).eval()
    m = tf.from_torch(_sd(dec), heads=H, memory_padding=True)
    assert "dec.1.cross.p" in m and "I" not in m
    x, mem = rng.normal(size=(2, 4, D)), rng.normal(size=(2, 5, D))
    mpad = _ragged(2, 5, [5, 3])
    tr = m.forward({"e": x, "n": mem, "mem_pad": mpad})
    with torch.no_grad():
        y = dec(_t(x), _t(mem), tgt_mask=_causal(4), memory_key_padding_mask=_t(mpad), tgt_is_causal=True)
    assert_allclose(tr["Y"], y.numpy(), **TOL)


@needs_torch
def test_full_transformer_matches_torch_with_padding(rng):
    model = torch.nn.Transformer(D, H, 2, 2, FF, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    m = tf.from_torch(_sd(model), heads=H, padding=True, target_padding=True)
    n, s, t = 3, 6, 4
    src, tgt = rng.normal(size=(n, s, D)), rng.normal(size=(n, t, D))
    spad, tpad = _ragged(n, s, [6, 4, 5]), _ragged(n, t, [4, 4, 2])
    tr = m.forward({"e": src, "dec.e": tgt, "pad": spad, "dec.pad": tpad})
    with torch.no_grad():
        mem = model.encoder(_t(src), src_key_padding_mask=_t(spad))
        assert_allclose(tr["n"], mem.numpy(), **TOL)
        h = _t(tgt)
        for i, layer in enumerate(model.decoder.layers):
            h = layer(h, mem, tgt_mask=_causal(t), tgt_key_padding_mask=_t(tpad), memory_key_padding_mask=_t(spad),
                      tgt_is_causal=True)
            assert_allclose(tr[f"dec.{i}.Y"], h.numpy(), **TOL)
        y = model(_t(src), _t(tgt), tgt_mask=_causal(t), src_key_padding_mask=_t(spad),
                  tgt_key_padding_mask=_t(tpad), memory_key_padding_mask=_t(spad), tgt_is_causal=True)
    assert_allclose(tr["Y"], y.numpy(), **TOL)


class _GPT(torch.nn.Module if torch is not None else object):
    """A decoder-only reference: embedding + sinusoidal positions + causal encoder stack + LM head."""

    def __init__(self, vocab, layers):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, D, dtype=torch.float64)
        self.enc = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=torch.float64,
                                             activation="gelu"),
            layers, enable_nested_tensor=False)
        self.lm_head = torch.nn.Linear(D, vocab, dtype=torch.float64)

    def forward(self, ids):
        t = ids.shape[1]
        e = self.embedding(ids) + _t(T.sinusoidal_encoding(t, D))
        return self.lm_head(self.enc(e, mask=_causal(t), is_causal=True))

    def weights(self):
        sd = _sd(self)
        return {k.removeprefix("enc."): v for k, v in sd.items()}


@needs_torch
def test_decoder_only_stack_and_greedy_generation_match_torch(rng):
    gpt = _GPT(11, 2).eval()
    m = tf.from_torch(gpt.weights(), heads=H, kind="decoder", activation="gelu")
    ids = rng.integers(0, 11, size=(3, 5))
    tr = m.forward({"x": ids})
    with torch.no_grad():
        logits = gpt(_t(ids))
    assert_allclose(tr["I"], logits.numpy(), **TOL)
    assert_allclose(tr["P"], torch.softmax(logits, -1).numpy(), **TOL)
    out = tf.generate(m, ids[:, :2], 4)
    want = _t(ids[:, :2])
    with torch.no_grad():
        for _ in range(4):
            want = torch.cat([want, gpt(want)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert np.array_equal(out, want.numpy())


@needs_torch
def test_encoder_decoder_greedy_generation_matches_torch(rng):
    model = torch.nn.Transformer(D, H, 1, 2, FF, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    src_emb = torch.nn.Embedding(9, D, dtype=torch.float64)
    tgt_emb = torch.nn.Embedding(8, D, dtype=torch.float64)
    head = torch.nn.Linear(D, 8, dtype=torch.float64)
    sd = {**_sd(model), "src_embedding.weight": src_emb.weight.detach().numpy(),
          "tgt_embedding.weight": tgt_emb.weight.detach().numpy(), "lm_head.weight": head.weight.detach().numpy(),
          "lm_head.bias": head.bias.detach().numpy()}
    m = tf.from_torch(sd, heads=H)
    src = rng.integers(0, 9, size=(2, 6))
    out = tf.generate(m, np.zeros((2, 1), np.int64), 5, source=src)

    def pe(t):
        return _t(T.sinusoidal_encoding(t, D))

    with torch.no_grad():
        mem = model.encoder(src_emb(_t(src)) + pe(6))
        y = torch.zeros(2, 1, dtype=torch.int64)
        for _ in range(5):
            t = y.shape[1]
            h = model.decoder(tgt_emb(y) + pe(t), mem, tgt_mask=_causal(t), tgt_is_causal=True)
            y = torch.cat([y, head(h)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert np.array_equal(out, y.numpy())


def test_float32_models_stay_close_to_float64(rng):
    m64 = tf.encoder(layers=2, d_model=D, heads=H, d_ff=FF, seed=3)
    m32 = tf.encoder(layers=2, d_model=D, heads=H, d_ff=FF, seed=3, dtype="float32")
    x = rng.normal(size=(2, 5, D))
    a, b = m64.forward({"e": x})["n"], m32.forward({"e": x})["n"]
    assert b.dtype == np.float32
    assert_allclose(b, a, rtol=0, atol=1e-4)


def test_random_builders_are_reproducible_and_name_nodes_as_the_chapter():
    m = tf.transformer(layers=1, d_model=8, heads=2, d_ff=16, vocab=(7, 5), seed=1)
    for node in ("x", "e", "enc.0.attn.Q", "enc.0.attn.P", "enc.0.N", "enc.0.F", "enc.0.n", "n", "dec.x", "dec.e",
                 "dec.0.self.P", "dec.0.J", "dec.0.cross.q", "dec.0.cross.k", "dec.0.cross.v", "dec.0.cross.p",
                 "dec.0.cross.a", "dec.0.j", "dec.0.Y", "Y", "I", "P"):
        assert node in m, node
    m2 = tf.transformer(layers=1, d_model=8, heads=2, d_ff=16, vocab=(7, 5), seed=1)
    ids = np.array([[1, 2, 3]])
    assert np.array_equal(m.forward({"x": ids, "dec.x": ids})["P"], m2.forward({"x": ids, "dec.x": ids})["P"])
    ex = tf.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0, view="expanded", scores=True)
    assert {"enc.0.attn.head.1.P", "enc.0.attn.head.1.B", "enc.0.attn.head.1.S", "enc.0.attn.head.1.M"} <= set(ex.nodes)


# -- the causal mask as d-separation ------------------------------------------------------------------


@pytest.mark.parametrize("view,scores", [("folded", False), ("expanded", True)])
def test_causal_mask_dseparation_holds_bit_for_bit(rng, view, scores):
    t = 5
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, view=view, scores=scores, seed=4)
    g = tf.position_graph(m, t)
    ids = rng.integers(0, 13, size=(4, t))
    base = m.forward({"x": ids}, keep=["P"])["P"]
    for i in range(t):
        for j in range(t):
            sep = g.d_separated({f"x[{j}]"}, {f"P[{i}]"})
            assert sep == (j > i), (i, j)
        later = ids.copy()
        later[:, i + 1:] = (later[:, i + 1:] + 1 + rng.integers(0, 11, size=later[:, i + 1:].shape)) % 13
        out = m.forward({"x": later}, keep=["P"])["P"]
        assert np.array_equal(out[:, : i + 1], base[:, : i + 1])   # bit for bit
        if i < t - 1:
            assert not np.array_equal(out[:, i + 1:], base[:, i + 1:])


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 6), st.data())
def test_earlier_outputs_never_see_later_tokens(t, data):
    m = _small_decoder()
    i = data.draw(st.integers(0, t - 2))
    r = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    ids = r.integers(0, 7, size=(2, t))
    other = ids.copy()
    other[:, i + 1:] = r.integers(0, 7, size=(2, t - i - 1))
    a = m.forward({"x": ids}, keep=["Y"])["Y"]
    b = m.forward({"x": other}, keep=["Y"])["Y"]
    assert np.array_equal(a[:, : i + 1], b[:, : i + 1])


_SMALL: dict = {}


def _small_decoder():
    if "m" not in _SMALL:
        _SMALL["m"] = tf.decoder(layers=2, d_model=8, heads=2, d_ff=8, vocab=7, seed=5)
    return _SMALL["m"]


def test_position_graph_without_a_mask_connects_every_position():
    m = tf.encoder(layers=1, d_model=8, heads=2, d_ff=8, vocab=7, seed=0)
    g = tf.position_graph(m, 3)
    assert not any(g.d_separated({f"x[{j}]"}, {f"n[{i}]"}) for i in range(3) for j in range(3))
    mt = tf.transformer(layers=1, d_model=8, heads=2, d_ff=8, vocab=7, seed=0)
    g2 = tf.position_graph(mt, {"x": 4, "dec.x": 3})
    assert g2.d_separated({"dec.x[2]"}, {"P[1]"}) and not g2.d_separated({"dec.x[1]"}, {"P[1]"})
    assert not any(g2.d_separated({f"x[{s}]"}, {"P[0]"}) for s in range(4))
    with pytest.raises(GraphError, match="sequence length of root 'dec.x'"):
        tf.position_graph(mt, {"x": 4})


def test_position_graph_of_a_one_node_attention_block(rng):
    d = 4
    m = CausalModel({"e": T.Input((None, d)), "O": T.MultiHeadAttention(
        "e", heads=2, in_proj_weight=rng.normal(size=(3 * d, d)), out_proj_weight=rng.normal(size=(d, d)),
        causal=True), "y": T.ReLU("O")})
    g = tf.position_graph(m, 4)
    assert g.parents("O[2]") == ("e[0]", "e[1]", "e[2]")
    assert g.d_separated({"e[3]"}, {"y[2]"}) and not g.d_separated({"e[0]"}, {"y[2]"})


def test_a_do_on_attention_weights_reconnects_the_future():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=8, vocab=7, seed=0)
    g = tf.position_graph(m.do({"dec.0.self.P": np.full((1, 2, 3, 3), 1 / 3)}), 3)
    assert not g.d_separated({"x[2]"}, {"P[0]"})   # V[2] now reaches A[0] through constant weights


# -- interventions ----------------------------------------------------------------------------------------


def test_head_ablation_is_the_same_in_folded_and_expanded_views(rng):
    folded = tf.encoder_layer(d_model=D, heads=H, d_ff=FF, seed=2)
    expanded = tf.encoder_layer(d_model=D, heads=H, d_ff=FF, seed=2, view="expanded")
    x = rng.normal(size=(2, 5, D))
    a = tf.ablate(folded, tf.head(folded, "enc.0.attn.P", 1)).forward({"e": x})
    b = expanded.do({"enc.0.attn.head.1.P": lambda p: 0 * p}).forward({"e": x})
    assert_allclose(a["enc.0.n"], b["enc.0.n"], **TOL)
    assert np.all(a["enc.0.attn.A"][..., 4:8] == 0)
    c = tf.ablate(folded, tf.head(folded, "enc.0.attn.A", 1)).forward({"e": x})
    assert_allclose(c["enc.0.n"], a["enc.0.n"], **TOL)
    assert not np.allclose(a["enc.0.n"], folded.forward({"e": x})["enc.0.n"])


def test_mean_ablation_uses_the_reference_mean(rng):
    m = tf.encoder_layer(d_model=D, heads=H, d_ff=FF, seed=2)
    ref = rng.normal(size=(6, 4, D))
    site = tf.head(m, "enc.0.attn.V", 2)
    mean = site.get(m.forward({"e": ref})["enc.0.attn.V"]).mean(axis=0)
    out = tf.ablate(m, site, how="mean", reference={"e": ref}).forward({"e": rng.normal(size=(3, 4, D))})
    assert_allclose(out["enc.0.attn.V"][..., 8:12], np.broadcast_to(mean, (3, 4, 4)), **TOL)
    with pytest.raises(ModelError, match="needs reference"):
        tf.ablate(m, site, how="mean")


def test_interchange_and_activation_patching(rng):
    m = tf.encoder(layers=2, d_model=D, heads=H, d_ff=FF, seed=1)
    x, x2 = rng.normal(size=(2, 3, 4, D))
    src = m.forward({"e": x2})
    full = tf.interchange(m, {"e": x}, {"e": x2}, "enc.0.n")
    assert_allclose(full["n"], src["n"], **TOL)   # everything downstream of a cut set comes from the source
    patched = m.do({"enc.0.n": src["enc.0.n"]}).forward({"e": x})
    assert_allclose(patched["n"], full["n"], **TOL)
    one = tf.interchange(m, {"e": x}, {"e": x2}, tf.head(m, "enc.1.attn.P", 0))
    assert_allclose(one["enc.1.attn.P"][:, 0], src["enc.1.attn.P"][:, 0], **TOL)
    assert_allclose(one["enc.1.attn.P"][:, 1:], m.forward({"e": x})["enc.1.attn.P"][:, 1:], **TOL)


def test_rewire_changes_nothing_until_an_edge_is_patched(rng):
    m = tf.encoder_layer(d_model=D, heads=H, d_ff=FF, seed=1)
    x, x2 = rng.normal(size=(2, 2, 4, D))
    r, copies = tf.rewire(m, [("e", "enc.0.attn.Q"), ("e", "enc.0.N")])
    assert copies[("e", "enc.0.N")] == "e@enc.0.N"
    assert r.mechanisms["enc.0.N"].parents == ("e@enc.0.N", "enc.0.attn.O")
    assert set(r.dag.children("e")) == {"e@enc.0.N", "e@enc.0.attn.Q", "enc.0.attn.K", "enc.0.attn.V"}
    assert np.array_equal(r.forward({"e": x})["enc.0.n"], m.forward({"e": x})["enc.0.n"])
    # Q has a single child, so patching its only out-edge is patching Q itself
    pp = tf.path_patch(m, {"e": x}, {"e": x2}, ("enc.0.attn.Q", "enc.0.attn.P"))
    ic = tf.interchange(m, {"e": x}, {"e": x2}, "enc.0.attn.Q")
    assert_allclose(pp["enc.0.n"], ic["enc.0.n"], **TOL)
    # patching the residual edge only: attention still reads the base input
    res = tf.path_patch(m, {"e": x}, {"e": x2}, ("e", "enc.0.N"))
    assert_allclose(res["enc.0.attn.O"], m.forward({"e": x})["enc.0.attn.O"], **TOL)
    want = m.do({"enc.0.attn.O": m.forward({"e": x})["enc.0.attn.O"]}).forward({"e": x2})["enc.0.N"]
    assert_allclose(res["enc.0.N"], want, **TOL)
    with pytest.raises(GraphError, match="no edge 'e' -> 'enc.0.F'"):
        tf.rewire(m, ("e", "enc.0.F"))


def _residual_model():
    m = tf.attention(d_model=D, heads=H, view="expanded", seed=3)
    return CausalModel({**m.mechanisms, "R": T.Add(["e", "attn.O"])})


def test_mediation_effects_add_up_on_a_linear_path(rng):
    m = _residual_model()
    w = rng.normal(size=D)
    x, x2 = rng.normal(size=(2, 5, 4, D))

    def outcome(tr):
        return tr["R"][:, -1] @ w

    per_head = tf.mediation(m, {"e": x}, {"e": x2}, [f"attn.head.{i}.A" for i in range(H)], outcome)
    for eff in per_head.values():
        assert_allclose(eff.total, eff.direct + eff.indirect, rtol=0, atol=1e-12)
    joint = tf.mediation(m, {"e": x}, {"e": x2}, {"all heads": [f"attn.head.{i}.A" for i in range(H)]}, outcome)
    eff = joint["all heads"]
    assert_allclose(eff.total, eff.direct + eff.indirect, rtol=0, atol=1e-12)
    # all heads held at base: the direct effect is the residual path alone
    y0 = outcome(m.forward({"e": x}))
    assert_allclose(eff.direct, (x2 - x)[:, -1] @ w, rtol=0, atol=1e-12)
    assert_allclose(eff.total, outcome(m.forward({"e": x2})) - y0, rtol=0, atol=1e-12)
    ratio = tf.mediation(m, {"e": x}, {"e": x2}, "attn.head.0.A", outcome, scale="ratio")["attn.head.0.A"]
    d = per_head["attn.head.0.A"]
    assert_allclose(ratio.indirect, d.indirect / y0, rtol=1e-12, atol=1e-12)
    assert set(d.mean()) == {"total", "direct", "indirect"}


def test_mediation_through_a_head_site_of_a_decoder(rng):
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=8, vocab=7, seed=2)
    ids = rng.integers(0, 7, size=(3, 4))
    ids2 = ids.copy()
    ids2[:, 0] = (ids[:, 0] + 1) % 7
    eff = tf.mediation(m, {"x": ids}, {"x": ids2}, [tf.head(m, "dec.0.self.P", 1)],
                       lambda tr: np.log(tr["P"][:, -1, 3]))["dec.0.self.P[head 1]"]
    assert eff.total.shape == (3,) and np.all(np.isfinite(eff.direct))
    with pytest.raises(ShapeError, match="pass a callable"):
        tf.mediation(m, {"x": ids}, {"x": ids2}, "dec.0.self.P", "P")


# -- bad input ----------------------------------------------------------------------------------------------


def test_typed_errors_name_what_and_where(rng):
    with pytest.raises(ModelError, match="3 heads do not divide the model width 16"):
        tf.encoder_layer(d_model=16, heads=3, d_ff=8, seed=0)
    m = tf.encoder_layer(d_model=8, heads=2, d_ff=8, seed=0, padding=True)
    with pytest.raises(ModelError, match="unknown node in do 'enc.0.atn.P'; did you mean 'enc.0.attn.P'"):
        m.do({"enc.0.atn.P": 0})
    with pytest.raises(ShapeError, match=r"'enc.0.attn.P' \(AttentionWeights\) expects \(2, 5\) from 'pad', got \(2, 4\)"):
        m.forward({"e": np.zeros((2, 5, 8)), "pad": np.zeros((2, 4), bool)})
    with pytest.raises(ShapeError, match=r"node 'e' expects shape \(n, \?, 8\), got \(2, 5, 6\)"):
        m.forward({"e": np.zeros((2, 5, 6)), "pad": np.zeros((2, 5), bool)})     # caught at the input
    with pytest.raises(ModelError, match="head 2 is out of range"):
        tf.head(m, "enc.0.attn.P", 2)
    with pytest.raises(ModelError, match="has no heads"):
        tf.head(m, "enc.0.N", 0)


@needs_torch
def test_bad_state_dicts_are_rejected():
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, dtype=torch.float64)
    sd = _sd(layer)
    with pytest.raises(ModelError, match="not used: \\['extra.weight'\\]"):
        tf.from_torch({**sd, "extra.weight": np.zeros(2)}, heads=2)
    with pytest.raises(ModelError, match="missing 'linear2.weight'"):
        tf.from_torch({k: v for k, v in sd.items() if k != "linear2.weight"}, heads=2)
    with pytest.raises(ShapeError, match="'norm1.weight' has shape \\(7,\\), expected \\(8\\)"):
        tf.from_torch({**sd, "norm1.weight": np.ones(7)}, heads=2)
    with pytest.raises(ModelError, match="3 heads do not divide"):
        tf.from_torch(sd, heads=3)
    with pytest.raises(ModelError, match="cannot tell the module"):
        tf.from_torch({"foo": np.zeros(1)}, heads=1)
    with pytest.raises(ShapeError, match="d_model=6"):
        tf.from_torch(sd, heads=2, d_model=6)


def test_generate_checks_its_arguments():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=8, vocab=7, seed=0)
    with pytest.raises(ShapeError, match="prompt must be"):
        tf.generate(m, np.zeros((2, 1)), 2)
    with pytest.raises(ModelError, match="source= is for encoder-decoder"):
        tf.generate(m, np.zeros((2, 1), int), 2, source=np.zeros((2, 3), int))
    out = tf.generate(m, np.zeros((2, 1), int), 3, eos=int(tf.generate(m, np.zeros((2, 1), int), 1)[0, 1]))
    assert out.shape == (2, 4) and len(set(out[0, 1:])) == 1


# -- diagrams -----------------------------------------------------------------------------------------------


def test_diagram_labels_carry_shapes_and_clusters_nest_heads():
    m = tf.transformer(layers=1, d_model=8, heads=2, d_ff=8, vocab=5, seed=0, view="expanded")
    opts = tf.diagram_options(m)
    assert opts["labels"]["dec.0.cross.head.1.p"] == "p\n(n, T, S)"
    assert opts["labels"]["enc.0.attn.Q"] == "Q\n(n, S, 8)"
    assert opts["labels"]["I"] == "I\n(n, T, 5)"
    dot = to_dot(m.do({"dec.0.cross.head.1.p": lambda p: 0 * p}), **opts)
    assert 'label="dec.0.cross.head.1"' in dot
    assert '"dec.0.cross.head.1.p" [label="p\\n(n, T, S)"' in dot
    line = next(s for s in dot.splitlines() if s.strip().startswith('"dec.0.cross.head.1.p" ['))
    assert "peripheries=2" in line
    folded = tf.encoder_layer(d_model=8, heads=2, d_ff=8, seed=0)
    assert tf.diagram_options(folded)["labels"]["enc.0.attn.P"] == "P\n(n, 2, T, T)"
    assert tf.diagram_options(folded, clusters=False, shapes=False)["labels"]["enc.0.attn.P"] == "enc.0.attn.P"
