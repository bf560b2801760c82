"""Generation with a key/value cache: equal to full recomputation, seeded sampling, held interventions, sites."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet import CausalModel, ModelError, ShapeError
from causalnet.inference.tensor import Incremental
from causalnet.mechanisms import tensor as T
from causalnet.models import transformer as tf
from causalnet.models.transformer.generate import pick_tokens


def _full_logits(model, tokens, t0, **inputs):
    """Oracle: one forward pass over the final tokens gives every step's logits (the model is causal)."""
    vals = {"x": tokens, **inputs}
    return model.forward(vals, keep=["I"])["I"][:, t0 - 1:-1]          # (n, steps, L)


DECODERS = {
    "folded": dict(),
    "expanded": dict(view="expanded"),
    "scores": dict(scores=True),
    "pre-LN": dict(norm_first=True, final_norm=True, activation="gelu"),
}


@pytest.mark.parametrize("opts", DECODERS.values(), ids=DECODERS.keys())
def test_cached_logits_equal_full_recomputation(opts):
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, seed=1, **opts)
    prompt = np.random.default_rng(0).integers(13, size=(3, 4))
    a, la = tf.generate(m, prompt, 6, return_logits=True)
    b, lb = tf.generate(m, prompt, 6, cache=False, return_logits=True)
    assert (a == b).all()
    assert_allclose(la, lb, rtol=0, atol=1e-10)
    assert_allclose(la, _full_logits(m, a, 4), rtol=0, atol=1e-10)


def test_cached_logits_with_padding_root_and_sampling():
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, padding=True, seed=2)
    prompt = np.array([[1, 2], [3, 4]])
    a, la = tf.generate(m, prompt, 5, temperature=0.8, top_k=6, top_p=0.9, seed=3, return_logits=True)
    b, lb = tf.generate(m, prompt, 5, temperature=0.8, top_k=6, top_p=0.9, seed=3, cache=False, return_logits=True)
    assert (a == b).all()
    assert_allclose(la, lb, rtol=0, atol=1e-10)
    assert_allclose(la, _full_logits(m, a, 2, pad=np.zeros(a.shape, bool)), rtol=0, atol=1e-10)


def test_encoder_decoder_cache_equals_recomputation():
    m = tf.transformer(layers=1, d_model=8, heads=2, d_ff=16, vocab=(9, 11), padding=True, seed=4)
    src = np.array([[1, 2, 3, 0], [4, 5, 6, 7]])
    pad = np.array([[False, False, False, True], [False] * 4])
    a, la = tf.generate(m, np.zeros((2, 1), int), 5, source=src, source_padding=pad, return_logits=True)
    b, lb = tf.generate(m, np.zeros((2, 1), int), 5, source=src, source_padding=pad, cache=False,
                        return_logits=True)
    assert (a == b).all()
    assert_allclose(la, lb, rtol=0, atol=1e-10)


def test_interventions_hold_in_the_encoder_and_cross_attention():
    m = tf.transformer(layers=1, d_model=8, heads=2, d_ff=16, vocab=(9, 11), seed=4)
    src = np.array([[1, 2, 3, 4], [4, 5, 6, 7]])
    do = {tf.head(m, "enc.0.attn.A", 1): 0.0, "dec.0.cross.k": lambda k: 2 * k}
    start = np.zeros((2, 1), int)
    a, la = tf.generate(m, start, 4, source=src, do=do, return_logits=True)
    b, lb = tf.generate(m, start, 4, source=src, do=do, cache=False, return_logits=True)
    assert (a == b).all()
    assert_allclose(la, lb, rtol=0, atol=1e-10)
    oracle = tf.ablate(m, tf.head(m, "enc.0.attn.A", 1)).do({"dec.0.cross.k": lambda k: 2 * k})
    ref = oracle.forward({"x": src, "dec.x": a}, keep=["I"])["I"][:, :-1]
    assert_allclose(la, ref, rtol=0, atol=1e-10)
    plain = tf.generate(m, start, 4, source=src, return_logits=True)[1]
    assert np.abs(plain - la).max() > 1e-6


def test_sampling_is_reproducible_by_seed_and_limits_hold():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=13, seed=5)
    prompt = np.zeros((4, 1), int)
    s1 = tf.generate(m, prompt, 8, temperature=1.5, seed=7)
    s2 = tf.generate(m, prompt, 8, temperature=1.5, seed=np.random.default_rng(7))
    assert (s1 == s2).all()
    assert not (s1 == tf.generate(m, prompt, 8, temperature=1.5, seed=8)).all()
    greedy = tf.generate(m, prompt, 8)
    assert (tf.generate(m, prompt, 8, temperature=2.0, top_k=1, seed=0) == greedy).all()
    assert (tf.generate(m, prompt, 8, temperature=2.0, top_p=1e-9, seed=0) == greedy).all()


def test_pick_tokens_follows_the_filtered_softmax():
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    rng = np.random.default_rng(0)
    n = 40_000
    picks = pick_tokens(np.repeat(logits, n, 0), temperature=1.0, rng=rng)
    assert_allclose(np.bincount(picks, minlength=4) / n, [0.5, 0.3, 0.15, 0.05], atol=0.01)
    picks = pick_tokens(np.repeat(logits, n, 0), temperature=1.0, top_k=2, rng=rng)
    assert_allclose(np.bincount(picks, minlength=4) / n, [0.625, 0.375, 0, 0], atol=0.01)
    picks = pick_tokens(np.repeat(logits, n, 0), temperature=1.0, top_p=0.7, rng=rng)   # {0, 1} reach 0.8
    assert_allclose(np.bincount(picks, minlength=4) / n, [0.625, 0.375, 0, 0], atol=0.01)
    picks = pick_tokens(np.repeat(logits, n, 0), temperature=0.5, rng=rng)             # p ** 2, renormalised
    q = np.array([0.5, 0.3, 0.15, 0.05]) ** 2
    assert_allclose(np.bincount(picks, minlength=4) / n, q / q.sum(), atol=0.01)


def test_head_ablation_is_held_at_every_step():
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, seed=6)
    prompt = np.array([[1, 2, 3], [4, 5, 6]])
    site = tf.head(m, "dec.1.self.A", 0)
    for cache in (True, False):
        a, la = tf.generate(m, prompt, 5, do={site: 0.0}, cache=cache, return_logits=True)
        oracle = tf.ablate(m, site)                       # the interpret module's do, run on the final tokens
        assert_allclose(la, _full_logits(oracle, a, 3), rtol=0, atol=1e-10)
    plain = tf.generate(m, prompt, 5, return_logits=True)[1]
    assert np.abs(plain - la).max() > 1e-6


def test_residual_patch_at_one_position_and_a_callable():
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, seed=7)
    prompt = np.array([[1, 2, 3, 4]])
    vec = np.linspace(-1, 1, 8)
    site = next(s for s in tf.sites(m, length=8) if s.node == "dec.0.J" and s.position == 5)  # a generated position
    do = {site: vec, "dec.1.F": lambda f: 0.5 * f}
    la = tf.generate(m, prompt, 4, do=do, return_logits=True)
    lb = tf.generate(m, prompt, 4, do=do, cache=False, return_logits=True)
    assert (la[0] == lb[0]).all()
    assert_allclose(la[1], lb[1], rtol=0, atol=1e-10)

    def setter(j):
        j = j.copy()
        j[:, 5] = vec
        return j

    oracle = m.do({"dec.0.J": setter, "dec.1.F": lambda f: 0.5 * f})
    assert_allclose(la[1], _full_logits(oracle, la[0], 4), rtol=0, atol=1e-10)


def test_sites_list_heads_and_residual_positions():
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, seed=0)
    ss = tf.sites(m)
    heads = [s for s in ss if s.kind == "head"]
    assert len(heads) == 2 * 2 * 2                        # layers x heads x (P, A)
    assert {(s.layer, s.head) for s in heads} == {(i, h) for i in range(2) for h in range(2)}
    assert {s.shape for s in heads} == {(None, None), (None, 4)}
    res = [s for s in ss if s.kind == "residual"]
    assert [str(s) for s in res] == ["e", "dec.0.J", "dec.0.Y", "dec.1.J", "dec.1.Y", "Y"]
    assert all(s.shape == (None, 8) for s in res)
    per_pos = [s for s in tf.sites(m, length=3) if s.kind == "residual"]
    assert len(per_pos) == 6 * 3 and per_pos[0].shape == (8,) and per_pos[2].position == 2
    x = m.forward({"x": np.array([[1, 2, 3]])})
    for s in tf.sites(m, length=3):                       # each site indexes a real part of its node
        part = s.get(x[s.node])[0]
        assert all(a == b for a, b in zip(part.shape, s.shape) if b is not None)
    ex = tf.sites(tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=13, view="expanded", seed=0))
    assert {(s.node, s.head) for s in ex if s.kind == "head"} >= {("dec.0.self.head.1.P", 1)}
    with pytest.raises(ModelError, match="length"):
        tf.sites(m, length=0)


def test_generate_errors_are_typed():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=13, seed=0)
    p = np.zeros((1, 2), int)
    for kw in (dict(temperature=-1.0), dict(temperature=float("nan")), dict(top_k=0), dict(top_p=0.0),
               dict(top_p=1.5), dict(do=[("dec.0.J", 0)]), dict(do={"nope": 0}), dict(do={"x": 0})):
        with pytest.raises(ModelError):
            tf.generate(m, p, 2, **kw)
    with pytest.raises(ShapeError):
        tf.generate(m, p, 2, do={"dec.0.J": np.zeros(5)})


def test_cache_refuses_non_causal_attention_over_the_sequence():
    m = tf.decoder(layers=1, d_model=4, heads=1, d_ff=8, vocab=5, seed=0)
    mechs = dict(m.mechanisms)
    old = mechs["dec.0.self.P"]
    mechs["dec.0.self.P"] = T.AttentionWeights(list(old.parents), heads=old.heads, causal=False)
    bidir = CausalModel(mechs)
    with pytest.raises(ModelError, match="causal"):
        tf.generate(bidir, np.zeros((1, 2), int), 2)
    assert tf.generate(bidir, np.zeros((1, 2), int), 2, cache=False).shape == (1, 4)
    with pytest.raises(ModelError, match="constant do"):
        tf.generate(m.do({"dec.0.J": np.zeros((2, 4))}), np.zeros((1, 2), int), 2)


def test_incremental_step_by_step_equals_forward():
    m = tf.decoder(layers=2, d_model=8, heads=2, d_ff=16, vocab=13, seed=3, scores=True)
    ids = np.random.default_rng(1).integers(13, size=(2, 9))
    inc = Incremental(m, outputs=["I", "dec.1.self.P"], growing=["x"])
    chunks = [inc.step({"x": ids[:, a:b]}) for a, b in ((0, 4), (4, 5), (5, 9))]
    full = m.forward({"x": ids})
    assert_allclose(np.concatenate([c["I"] for c in chunks], axis=1), full["I"], rtol=0, atol=1e-10)
    p_last = chunks[-1]["dec.1.self.P"]                    # (n, h, 4 new queries, 9 keys)
    assert_allclose(p_last, full["dec.1.self.P"][:, :, 5:], rtol=0, atol=1e-12)
    inc.reset()
    assert_allclose(inc.step({"x": ids})["I"], full["I"], rtol=0, atol=1e-10)
