"""from_huggingface against the transformers package: GPT-2 and BERT from small random configs, float64."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import ModelError
from causalnet.models import transformer as tf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

V, D, H, LAYERS, POS = 23, 16, 4, 2, 32


def _gpt2(cls=None, **kw):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=LAYERS, n_embd=D, n_head=H, vocab_size=V, n_positions=POS, bos_token_id=0,
                                  eos_token_id=0, **kw)
    return (cls or transformers.GPT2LMHeadModel)(cfg).double().eval()


def _bert(cls, **kw):
    torch.manual_seed(1)
    cfg = transformers.BertConfig(num_hidden_layers=LAYERS, hidden_size=D, num_attention_heads=H,
                                  intermediate_size=2 * D, vocab_size=V, max_position_embeddings=POS, **kw)
    return cls(cfg).double().eval()


def _ids(shape=(3, 9), seed=0, high=V):
    return np.random.default_rng(seed).integers(high, size=shape)


@pytest.mark.parametrize("act", ["gelu_new", "gelu", "relu", "gelu_pytorch_tanh"])
def test_gpt2_logits_match_transformers(act):
    g = _gpt2(activation_function=act)
    m = tf.from_huggingface(g)
    ids = _ids()
    with torch.no_grad():
        ref = g(torch.from_numpy(ids)).logits.numpy()
    assert_allclose(m.forward({"x": ids})["I"], ref, rtol=0, atol=1e-9)


def test_gpt2_state_dict_with_config_and_the_bare_model():
    g = _gpt2(cls=transformers.GPT2Model)
    sd = {k: v.numpy() for k, v in g.state_dict().items()}
    m = tf.from_huggingface(sd, g.config.to_dict())
    ids = _ids()
    with torch.no_grad():
        hidden = g(torch.from_numpy(ids)).last_hidden_state.numpy()
    tr = m.forward({"x": ids})
    assert_allclose(tr["Y"], hidden, rtol=0, atol=1e-9)
    assert_allclose(tr["I"], hidden @ sd["wte.weight"].T, rtol=0, atol=1e-9)   # the tied head


def test_gpt2_padding_matches_attention_mask():
    g = _gpt2()
    m = tf.from_huggingface(g, padding=True)
    ids = _ids((2, 6))
    mask = np.ones((2, 6), int)
    mask[0, 4:] = 0                                                       # right padding
    with torch.no_grad():
        ref = g(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)).logits.numpy()
    out = m.forward({"x": ids, "pad": mask == 0})["I"]
    assert_allclose(out[mask == 1], ref[mask == 1], rtol=0, atol=1e-9)


def test_gpt2_generate_matches_transformers_greedy_generate():
    g = _gpt2()
    m = tf.from_huggingface(g)
    prompt = _ids((2, 5), seed=3)
    with torch.no_grad():
        ref = g.generate(torch.from_numpy(prompt), max_new_tokens=8, do_sample=False,
                         attention_mask=torch.ones(2, 5, dtype=torch.long), pad_token_id=0).numpy()
    out, logits = tf.generate(m, prompt, 8, return_logits=True)
    assert (out == ref).all()
    with torch.no_grad():
        full = g(torch.from_numpy(out)).logits.numpy()[:, 4:-1]
    assert_allclose(logits, full, rtol=0, atol=1e-9)


def test_bert_model_hidden_states_and_pooler():
    b = _bert(transformers.BertModel)
    m = tf.from_huggingface(b)
    ids, tt = _ids(), _ids(seed=1, high=2)
    with torch.no_grad():
        out = b(torch.from_numpy(ids), token_type_ids=torch.from_numpy(tt))
    tr = m.forward({"x": ids, "token_type": tt})
    assert_allclose(tr["n"], out.last_hidden_state.numpy(), rtol=0, atol=1e-9)
    assert_allclose(tr["pooled"], out.pooler_output.numpy(), rtol=0, atol=1e-9)


def test_bert_padding_matches_attention_mask():
    b = _bert(transformers.BertModel)
    m = tf.from_huggingface(b, padding=True)
    ids, tt = _ids((2, 7)), np.zeros((2, 7), int)
    mask = np.ones((2, 7), int)
    mask[1, 3:] = 0
    with torch.no_grad():
        ref = b(torch.from_numpy(ids), token_type_ids=torch.from_numpy(tt),
                attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
    out = m.forward({"x": ids, "token_type": tt, "pad": mask == 0})["n"]
    assert_allclose(out[mask == 1], ref[mask == 1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("act", ["gelu", "relu", "gelu_new"])
def test_bert_masked_lm_logits(act):
    b = _bert(transformers.BertForMaskedLM, hidden_act=act)
    m = tf.from_huggingface(b)
    ids, tt = _ids(), _ids(seed=2, high=2)
    with torch.no_grad():
        ref = b(torch.from_numpy(ids), token_type_ids=torch.from_numpy(tt)).logits.numpy()
    assert_allclose(m.forward({"x": ids, "token_type": tt})["I"], ref, rtol=0, atol=1e-9)


def test_bert_pretraining_heads():
    b = _bert(transformers.BertForPreTraining)
    m = tf.from_huggingface(b)
    ids, tt = _ids(), _ids(seed=2, high=2)
    with torch.no_grad():
        out = b(torch.from_numpy(ids), token_type_ids=torch.from_numpy(tt))
    tr = m.forward({"x": ids, "token_type": tt})
    assert_allclose(tr["I"], out.prediction_logits.numpy(), rtol=0, atol=1e-9)
    assert_allclose(tr["nsp"], out.seq_relationship_logits.numpy(), rtol=0, atol=1e-9)


def test_unsupported_configs_and_unused_weights_are_named():
    g = _gpt2()
    sd = {k: v.numpy() for k, v in g.state_dict().items()}
    cfg = g.config.to_dict()
    cases = [
        ({**cfg, "activation_function": "silu"}, "activation_function='silu'"),
        ({**cfg, "scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
        ({**cfg, "rope_theta": 10000.0}, "rotary"),
        ({**cfg, "model_type": "llama"}, "llama"),
        ({**cfg, "n_layer": 3}, "n_layer=3"),
    ]
    for c, msg in cases:
        with pytest.raises(ModelError, match=msg):
            tf.from_huggingface(sd, c)
    with pytest.raises(ModelError, match="extra.weight"):
        tf.from_huggingface({**sd, "extra.weight": np.zeros(3)}, cfg)
    with pytest.raises(ModelError, match="missing 'transformer.h.1.ln_2.bias'"):
        tf.from_huggingface({k: v for k, v in sd.items() if k != "transformer.h.1.ln_2.bias"}, cfg)
    with pytest.raises(ModelError, match="config="):
        tf.from_huggingface(sd)
    b = _bert(transformers.BertModel)
    bsd = {k: v.numpy() for k, v in b.state_dict().items()}
    for c, msg in [({**b.config.to_dict(), "position_embedding_type": "relative_key"}, "relative_key"),
                   ({**b.config.to_dict(), "hidden_act": "swish"}, "swish"),
                   ({**b.config.to_dict(), "is_decoder": True}, "is_decoder")]:
        with pytest.raises(ModelError, match=msg):
            tf.from_huggingface(bsd, c)


def test_sites_and_do_on_a_gpt2_checkpoint():
    g = _gpt2()
    m = tf.from_huggingface(g)
    ss = tf.sites(m)
    assert sum(s.kind == "head" for s in ss) == LAYERS * H * 2
    site = tf.head(m, "dec.0.self.A", 2)
    prompt = _ids((1, 4))
    out, logits = tf.generate(m, prompt, 3, do={site: 0.0}, return_logits=True)
    ref = tf.ablate(m, site).forward({"x": out})["I"][:, 3:-1]
    assert_allclose(logits, ref, rtol=0, atol=1e-10)
