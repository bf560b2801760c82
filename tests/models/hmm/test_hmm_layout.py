"""The HMM on the chain engine's ragged layout, and its emission object built once per configuration.

The layout is checked against a loop that places each sequence by hand; the
HMM's numbers against hmmlearn live in test_hmm*.py.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.inference.chain.layout import Layout
from causalnet.models.hmm import estimator
from causalnet.models.hmm.packing import pack, unpack


def _by_hand(lengths):
    """(T, n) token index, rows longest first (stable), 0 on padding; and the padding mask."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    T = max(lengths)
    pos = np.zeros((T, len(lengths)), int)
    real = np.zeros((T, len(lengths)), bool)
    for r, i in enumerate(order):
        for t in range(lengths[i]):
            pos[t, r], real[t, r] = starts[i] + t, True
    return order, pos, real


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6))
def test_pack_places_every_token_where_a_loop_does(lengths):
    N = sum(lengths)
    X = np.arange(N) * 10
    pk = pack(X, lengths)
    order, pos, real = _by_hand(lengths)
    assert pk.pos.tolist() == pos.tolist()
    assert (pk.real if pk.real is not None else np.ones_like(real)).tolist() == real.tolist()
    assert (pk.order if pk.order is not None else np.arange(len(lengths))).tolist() == order
    assert pk.lens.tolist() == sorted(lengths, reverse=True)
    assert unpack(pk, X[pk.pos]).tolist() == X.tolist()            # time-major (T, n) -> (N,) in input order
    y = np.stack([X, -X], axis=1)
    assert unpack(pk, y[pk.pos]).tolist() == y.tolist()              # trailing axes ride along


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=5))
def test_layout_unpad_inverts_pad(lengths):
    lay = Layout(np.array(lengths))
    tok = np.arange(sum(lengths), dtype=float)[:, None] + 1.0
    padded = lay.pad(tok).copy()                                     # (n, T, 1)
    assert lay.unpad(padded).tolist() == tok.tolist()
    assert lay.unpad(np.swapaxes(padded, 0, 1), time_major=True).tolist() == tok.tolist()
    assert lay.time_index().tolist() == _by_hand(lengths)[1].tolist()


def test_the_emission_object_is_built_once_per_configuration(monkeypatch):
    calls = []
    real = estimator.make_emission
    monkeypatch.setattr(estimator, "make_emission", lambda *a, **k: calls.append(a) or real(*a, **k))
    X = np.random.default_rng(0).normal(size=(60, 2))
    hmm = cn.HMM(n_states=2, emission="gaussian", n_iter=5, seed=0)
    calls.clear()
    hmm.fit(X, [30, 30])
    hmm.predict_proba(X, [30, 30])
    hmm.score(X)
    hmm.sample(5, seed=1)
    assert len(calls) <= 2            # the first configuration, and the one with n_features learned (if any)
    assert hmm.emission_model is hmm.emission_model
    before = hmm.emission_model
    hmm.set_params(covariance_type="full")
    assert hmm.emission_model is not before and hmm.emission_model.covariance_type == "full"


@pytest.mark.parametrize("kind", ["categorical", "gaussian", "poisson", "gmm"])
def test_a_kept_emission_equals_a_fresh_one(kind):
    rng = np.random.default_rng(1)
    X = {"categorical": rng.integers(0, 3, size=(40, 1)), "gaussian": rng.normal(size=(40, 2)),
         "poisson": rng.poisson(3.0, size=(40, 2)), "gmm": rng.normal(size=(40, 2))}[kind]
    hmm = cn.HMM(n_states=2, emission=kind, n_iter=3, seed=0).fit(X)
    fresh = cn.HMM(**hmm.get_params())
    fresh.__dict__.update({k: v for k, v in hmm.__dict__.items() if k.endswith("_")})
    fresh.__dict__.pop("_emission_built", None)
    assert hmm.score(X) == fresh.score(X)
    assert np.array_equal(hmm.predict_proba(X), fresh.predict_proba(X))
