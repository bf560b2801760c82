"""save/load of tensor networks: an exact round trip for every builder, and clear errors for bad files."""

import json
import zipfile

import numpy as np
import pytest
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet import ModelError
from causalnet.errors import ModelFileNotFoundError
from causalnet.mechanisms import tensor as T
from causalnet.models import transformer as tf


def _arrays(model):
    """Every array a node holds (natural mechanism under do), keyed by node and attribute."""
    out = {}
    for node, mech in model.mechanisms.items():
        mech = getattr(mech, "natural", mech)
        for k, v in vars(mech).items():
            if isinstance(v, np.ndarray):
                out[node, k] = v
    return out


def _same(m1, m2, inputs, outputs):
    assert m2.nodes == m1.nodes
    assert m2.dag == m1.dag
    a1, a2 = _arrays(m1), _arrays(m2)
    assert a1.keys() == a2.keys()
    for k in a1:
        assert a1[k].dtype == a2[k].dtype and a1[k].tobytes() == a2[k].tobytes(), k
    t1, t2 = m1.forward(inputs), m2.forward(inputs)
    for node in outputs:
        assert t1[node].dtype == t2[node].dtype
        if t1.method == t2.method:          # the same forward engine: the same bits
            assert np.array_equal(t1[node], t2[node]), node
        else:                               # a built recurrent model takes the loop, the loaded one the plan
            np.testing.assert_allclose(t1[node], t2[node], rtol=1e-13, atol=1e-15, err_msg=str(node))
    for node in m1.nodes:
        assert type(m2.mechanisms[node]) is type(m1.mechanisms[node])
        assert m2.spec(node) == m1.spec(node)


def _roundtrip(model, tmp_path, name="m.json"):
    path = tmp_path / name
    tf.save(model, path)
    return tf.load(path)


IDS = np.array([[1, 2, 3, 4], [4, 3, 2, 0]])
E = np.random.default_rng(0).normal(size=(2, 4, 8))


@pytest.mark.parametrize("build, inputs, outputs", [
    (lambda: tf.attention(d_model=8, heads=2, seed=0), {"e": E}, ["attn.O"]),
    (lambda: tf.encoder_layer(d_model=8, heads=2, d_ff=16, padding=True, seed=1),
     {"e": E, "pad": np.zeros((2, 4), bool)}, ["enc.0.n"]),
    (lambda: tf.encoder_layer(d_model=8, heads=2, d_ff=16, view="expanded", scores=True, norm_first=True,
                              activation="gelu", seed=2), {"e": E}, ["enc.0.n", "enc.0.attn.head.1.M"]),
    (lambda: tf.decoder_layer(d_model=8, heads=2, d_ff=16, memory_padding=True, seed=3),
     {"e": E, "n": E[:, :3], "mem_pad": np.zeros((2, 3), bool)}, ["dec.0.Y"]),
    (lambda: tf.encoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=7, final_norm=True, seed=4), {"x": IDS}, ["n"]),
    (lambda: tf.decoder(layers=2, d_model=8, heads=4, d_ff=16, vocab=7, dtype="float32", seed=5), {"x": IDS},
     ["I", "P"]),
    (lambda: tf.transformer(layers=(1, 2), d_model=8, heads=2, d_ff=16, vocab=(7, 9), padding=True, seed=6),
     {"x": IDS, "dec.x": IDS[:, :3], "pad": np.zeros((2, 4), bool)}, ["n", "I"]),
    (lambda: cn.recurrent.lstm(input_size=3, hidden_size=4, T=3, layers=2, bidirectional=True, seed=7),
     {f"x[{t}]": E[:, t, :3] for t in range(3)}, ["l1.y[2]"]),
    (lambda: cn.recurrent.gru(input_size=3, hidden_size=4, T=2, seed=8), {f"x[{t}]": E[:, t, :3] for t in range(2)},
     ["l0.h[1]"]),
])
def test_every_builder_round_trips_exactly(tmp_path, build, inputs, outputs):
    m = build()
    _same(m, _roundtrip(m, tmp_path), inputs, outputs)


def test_no_pickle_anywhere(tmp_path):
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=7, seed=0)
    tf.save(m, tmp_path / "m.json")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["kind"] == tf.saving.KIND and doc["nodes" if "nodes" in doc else "meta"]


def test_generate_and_sites_survive_a_round_trip(tmp_path):
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)
    m2 = _roundtrip(m, tmp_path)
    prompt = np.array([[1, 2, 3]])
    for kw in ({}, {"temperature": 1.0, "top_k": 5, "seed": 3}):
        a, la = tf.generate(m, prompt, 5, return_logits=True, **kw)
        b, lb = tf.generate(m2, prompt, 5, return_logits=True, **kw)
        assert np.array_equal(a, b) and np.array_equal(la, lb)
    assert [str(s) for s in tf.sites(m)] == [str(s) for s in tf.sites(m2)]
    site = tf.head(m, "dec.1.self.A", 1)
    x = {"x": prompt}
    assert np.array_equal(tf.ablate(m, site).forward(x)["I"], tf.ablate(m2, tf.head(m2, "dec.1.self.A", 1)).forward(x)["I"])


def test_interventions_are_saved(tmp_path):
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=7, seed=0)
    md = m.do({"dec.0.self.A": np.zeros((4, 8)), "dec.0.F": cn.shift(0.5)})
    m2 = _roundtrip(md, tmp_path)
    assert set(m2.interventions) == {"dec.0.self.A", "dec.0.F"}
    assert m2.dag.intervened == md.dag.intervened
    _same(md, m2, {"x": IDS}, ["I"])
    with pytest.raises(ModelError, match="callable"):
        tf.save(m.do({"dec.0.F": lambda v: v * 2}), tmp_path / "c.json")


def test_tied_embedding_is_stored_once_and_hand_made_networks_save(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(5, 3))
    m = cn.CausalModel({"x": T.Input((None,), np.int64), "e": T.Embedding("x", w), "I": T.Linear("e", w)})
    m2 = _roundtrip(m, tmp_path)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        assert len(z.files) == 1
    _same(m, m2, {"x": np.array([[0, 4]])}, ["I"])


def test_huggingface_checkpoints_round_trip(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    g = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_embd=16, n_head=4, vocab_size=23,
                                                             n_positions=16)).eval()
    m = tf.from_huggingface(g, dtype="float32")
    m2 = _roundtrip(m, tmp_path, "gpt2.json")
    _same(m, m2, {"x": IDS}, ["I"])
    assert np.array_equal(tf.generate(m, IDS[:, :2], 4), tf.generate(m2, IDS[:, :2], 4))
    b = transformers.BertForPreTraining(transformers.BertConfig(num_hidden_layers=1, hidden_size=16,
                                                                num_attention_heads=4, intermediate_size=32,
                                                                vocab_size=23, max_position_embeddings=16)).eval()
    m = tf.from_huggingface(b, padding=True)
    _same(m, _roundtrip(m, tmp_path, "bert.json"),
          {"x": IDS, "token_type": np.zeros_like(IDS), "pad": np.zeros(IDS.shape, bool)}, ["n", "I", "nsp"])
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True).eval()
    m = tf.from_torch(layer)
    _same(m, _roundtrip(m, tmp_path, "torch.json"), {"e": E}, ["enc.0.n"])


# -- bad files -------------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=7, seed=0)
    path = tmp_path / "m.json"
    tf.save(m, path)
    return path


def _edit(path, fn):
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def test_missing_files(saved):
    assert isinstance(guarded(tf.load, saved.with_name("nope.json")), ModelFileNotFoundError)
    saved.with_suffix(".npz").unlink()
    assert isinstance(guarded(tf.load, saved), ModelFileNotFoundError)


@pytest.mark.parametrize("damage, match", [
    (lambda p: p.write_text("{ not json"), "JSON|json"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00"), ""),
    (lambda p: _edit(p, lambda d: d.update(kind="causalnet.CRF")), "CRF"),
    (lambda p: _edit(p, lambda d: d.update(version=99)), "version"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"][3].update(op="os.system")), "unknown op"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"][3]["params"].update(weight={"array": "zz"})), "no array"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"][3]["params"].pop("bias")), r"nodes\[3\]\.params"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"][3].update(parents=["ghost"])), "ghost"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"][5]["params"].update(weight={"array": "e0.weight"})), "nodes"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"].append(d["meta"]["nodes"][2])), "twice"),
    (lambda p: _edit(p, lambda d: d["meta"].update(interventions=[{"node": "I"}])), "value"),
    (lambda p: _edit(p, lambda d: d["meta"]["nodes"][1]["params"].update(dtype={"dtype": "zz"})), "dtype"),
])
def test_damaged_json_is_a_model_error(saved, damage, match):
    damage(saved)
    err = guarded(tf.load, saved)
    assert isinstance(err, ModelError)
    assert err.__class__ is not ModelFileNotFoundError
    if match:
        import re
        assert re.search(match, str(err)), str(err)


def test_damaged_or_foreign_npz_is_refused(saved, tmp_path):
    npz = saved.with_suffix(".npz")
    raw = bytearray(npz.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    npz.write_bytes(bytes(raw))
    assert "SHA-256" in str(guarded(tf.load, saved))
    other = tmp_path / "o.json"
    tf.save(tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=7, seed=1), other)
    npz.write_bytes(other.with_suffix(".npz").read_bytes())
    assert "SHA-256" in str(guarded(tf.load, saved))
    with zipfile.ZipFile(npz, "w") as z:
        z.writestr("junk.txt", "x")
    assert isinstance(guarded(tf.load, saved), ModelError)


def test_unsaveable_models_are_refused_before_writing(tmp_path):
    m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.Function(["X"], lambda x: x)})
    assert "not a tensor op" in str(guarded(tf.save, m, tmp_path / "f.json"))
    assert "CausalModel" in str(guarded(tf.save, "model", tmp_path / "g.json"))
    assert not list(tmp_path.iterdir())


def test_saving_into_a_missing_folder_is_named(tmp_path):
    m = tf.attention(d_model=4, heads=2, seed=0)
    assert isinstance(guarded(tf.save, m, tmp_path / "nowhere" / "m.json"), ModelFileNotFoundError)


@settings(max_examples=12, deadline=None)
@given(heads=st.sampled_from([1, 2, 4]), view=st.sampled_from(["folded", "expanded"]), scores=st.booleans(),
       norm_first=st.booleans(), activation=st.sampled_from(["relu", "gelu", "gelu_tanh"]),
       dtype=st.sampled_from(["float32", "float64"]), padding=st.booleans(), seed=st.integers(0, 2**16))
def test_round_trip_property(tmp_path_factory, heads, view, scores, norm_first, activation, dtype, padding, seed):
    m = tf.encoder_layer(d_model=8, heads=heads, d_ff=12, view=view, scores=scores, norm_first=norm_first,
                         activation=activation, dtype=dtype, padding=padding, seed=seed)
    inputs = {"e": E.astype(dtype)}
    if padding:
        inputs["pad"] = np.array([[False] * 4, [False, False, True, True]])
    _same(m, _roundtrip(m, tmp_path_factory.mktemp("p")), inputs, ["enc.0.n", "enc.0.attn.A"])
