"""Issue 10 for the transformer builders, checkpoint import and generation.

Bad sizes, dtypes, vocabulary ids and state dicts end in a typed error that
names what is wrong; large inputs give finite outputs or a NumericalError;
random weights past the memory limit are refused before they are drawn.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import ModelError, ResourceError, ShapeError
from causalnet.models import transformer as tf

try:
    import torch
except ImportError:  # torch is a test-only dependency
    torch = None


@pytest.fixture(scope="module")
def gpt():
    return tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=6, seed=0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_encoder_layer_on_large_inputs_is_finite_or_a_numerical_error(dtype):
    m = tf.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0, dtype=dtype)
    x = np.random.default_rng(0).normal(size=(2, 5, 8))
    for big in (1e3, 1e10, 1e20, 1e150, 1e300):
        if big > float(np.finfo(dtype).max) / 10:
            continue
        try:
            out = m.forward({"e": (x * big).astype(dtype)})["enc.0.n"]
        except cn.NumericalError as e:
            assert "overflowed" in str(e) and "enc.0" in str(e)
            continue
        assert np.all(np.isfinite(out))
        # the post-LN output is normalised: rows have mean 0 and (weighted) bounded entries
        assert np.abs(out).max() < 100


def test_fully_padded_sequence_gives_finite_probabilities():
    m = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=6, seed=0, padding=True)
    tr = m.forward({"x": np.zeros((2, 3), int), "pad": np.ones((2, 3), bool)})
    assert np.all(np.isfinite(tr["P"]))
    np.testing.assert_allclose(tr["dec.0.self.P"], 0.0)


def test_empty_prompt_and_bad_steps_are_typed_errors(gpt):
    with pytest.raises(ShapeError, match="at least one"):
        tf.generate(gpt, np.zeros((2, 0), int), 3)
    with pytest.raises(ModelError, match="steps"):
        tf.generate(gpt, np.zeros((2, 1), int), True)
    with pytest.raises(ShapeError, match="'x' holds the id 9"):
        tf.generate(gpt, np.full((2, 1), 9), 2)
    with pytest.raises(ShapeError, match="integer token ids"):
        tf.generate(gpt, np.ones((2, 1), complex), 2)


@pytest.mark.parametrize("kwargs", [
    dict(d_model=-4), dict(d_model=8, heads=0), dict(d_model=8, d_ff=16.5), dict(d_model=8, eps=-1.0),
    dict(d_model=8, eps=1j), dict(d_model=8, dtype="complex128"), dict(d_model=8, dtype="int64"),
    dict(d_model=8, heads=3), dict(d_model=8, activation="swish"), dict(d_model=8, view="x"),
])
def test_builder_arguments(kwargs):
    base = dict(d_model=8, heads=2, d_ff=16, seed=0)
    with pytest.raises(ModelError):
        tf.encoder_layer(**{**base, **kwargs})


def test_random_weights_past_the_limit_are_refused_before_drawing():
    with cn.limits.override(max_table_bytes=2 ** 20):
        with pytest.raises(ResourceError, match="random weights.*d_model=4096"):
            tf.encoder_layer(d_model=4096, heads=2, d_ff=16, seed=0)
        with pytest.raises(ResourceError, match="vocab=100000"):
            tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=100_000, seed=0)


def _attn_sd(rng, d=4):
    return {"in_proj_weight": rng.normal(size=(3 * d, d)), "in_proj_bias": np.zeros(3 * d),
            "out_proj.weight": rng.normal(size=(d, d)), "out_proj.bias": np.zeros(d)}


@pytest.mark.parametrize("change, key", [
    (lambda sd: sd.update({"extra.weight": np.ones(2)}), "extra.weight"),
    (lambda sd: sd.update({"in_proj_weight": sd["in_proj_weight"] * 1j}), "in_proj_weight"),
    (lambda sd: sd.update({"out_proj.bias": np.array(["a"] * 4)}), "out_proj.bias"),
    (lambda sd: sd.update({"out_proj.bias": np.full(4, np.nan)}), "out_proj.bias"),
    (lambda sd: sd.update({"bias_k": np.zeros((1, 1, 4))}), "bias_k"),
    (lambda sd: sd.update({"out_proj.weight": np.ones((4, 5))}), "out_proj.weight"),
])
def test_from_torch_refuses_what_it_cannot_represent_naming_the_key(change, key):
    sd = _attn_sd(np.random.default_rng(0))
    change(sd)
    with pytest.raises(ModelError, match=key.replace(".", "\\.")):
        tf.from_torch(sd, heads=2)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_from_torch_refuses_bfloat16_tensors_naming_the_key():
    sd = {k: torch.from_numpy(v) for k, v in _attn_sd(np.random.default_rng(0)).items()}
    sd["in_proj_weight"] = sd["in_proj_weight"].to(torch.bfloat16)
    with pytest.raises(ModelError, match="in_proj_weight"):
        tf.from_torch(sd, heads=2)


@settings(max_examples=40, deadline=None)
@given(ids=st.lists(st.lists(st.integers(-3, 9), min_size=0, max_size=4), min_size=1, max_size=3),
       steps=st.one_of(st.integers(-2, 3), st.floats(0, 2), st.none()))
def test_generate_on_bad_prompts(gpt, ids, steps):
    width = {len(r) for r in ids}
    prompt = np.array(ids if len(width) == 1 else [r + [0] * (4 - len(r)) for r in ids], dtype=np.int64)
    guarded(tf.generate, gpt, prompt, steps)


@settings(max_examples=40, deadline=None)
@given(d=st.integers(-2, 9), heads=st.integers(-1, 4), ff=st.integers(-1, 9),
       layers=st.integers(-1, 2), vocab=st.one_of(st.none(), st.integers(-1, 5)))
def test_builders_on_generated_sizes(d, heads, ff, layers, vocab):
    out = guarded(tf.decoder, layers=layers, d_model=d, heads=heads, d_ff=ff, vocab=vocab, seed=0)
    if isinstance(out, cn.CausalModel):
        root = "x" if vocab else "e"
        val = np.zeros((2, 3), int) if vocab else np.ones((2, 3, d))
        guarded(out.forward, {root: val})


@settings(max_examples=30, deadline=None)
@given(scale=st.sampled_from([0.0, 1e-300, 1.0, 1e5, 1e30, 1e100, 1e200, 1e307]),
       t=st.integers(0, 4), dtype=st.sampled_from(["float64", "float32"]))
def test_forward_on_extreme_embeddings(scale, t, dtype):
    m = tf.decoder(layers=1, d_model=4, heads=2, d_ff=8, seed=1, dtype=dtype)
    with np.errstate(over="ignore"):
        x = (np.random.default_rng(t).normal(size=(2, t, 4)) * scale).astype(dtype)
    if not np.all(np.isfinite(x)):
        return
    guarded(m.forward, {"e": x})


_ODD = st.one_of(st.none(), st.integers(-2, 8), st.floats(-1, 3), st.sampled_from([float("nan"), float("inf")]),
                 st.booleans(), st.text(max_size=2))


@settings(max_examples=60, deadline=None)
@given(temperature=_ODD, top_k=_ODD, top_p=_ODD, seed=st.one_of(st.none(), st.integers(0, 5)),
       cache=st.booleans())
def test_generate_on_odd_sampling_arguments(gpt, temperature, top_k, top_p, seed, cache):
    guarded(tf.generate, gpt, np.array([[1, 2]]), 2, temperature=temperature, top_k=top_k, top_p=top_p,
            seed=seed, cache=cache)


@settings(max_examples=40, deadline=None)
@given(node=st.sampled_from(["dec.0.J", "dec.0.self.P", "dec.0.self.A", "I", "x", "nope"]),
       value=st.one_of(st.floats(-1e6, 1e6), st.just(np.zeros(3)), st.just(np.zeros(8)), st.just(np.ones((2, 8))),
                       st.just(float("nan")), st.just(lambda v: v * 2), st.just(lambda v: v[:1])),
       cache=st.booleans())
def test_generate_on_odd_interventions(gpt, node, value, cache):
    guarded(tf.generate, gpt, np.array([[1, 2], [3, 4]]), 2, do={node: value}, cache=cache)
