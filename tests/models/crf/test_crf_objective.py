"""Tests for the CRF objective's two forward-backward paths: the ragged numba kernel and the padded chain engine."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import approx_fprime

from causalnet.inference.chain import compiled, ragged
from causalnet.inference.chain.layout import Layout
from causalnet.inference.chain.ragged import AVAILABLE
from causalnet.models.crf import CRF, synthetic_tagging
from causalnet.models.crf.features import encode_labels, parse_sequences
from causalnet.models.crf.objective import Objective, active_weights

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def _objective(X, y, c2, backend, all_states=False):
    lengths, feats = parse_sequences(X, None)
    y_idx, labels = encode_labels(y, lengths, None)
    Xd = feats.design(feats.new_vocab(), lengths, grow=True)
    si, ti = active_weights(Xd, y_idx, lengths, len(labels), all_states, all_states, 0.0)
    return Objective(Xd, y_idx, Layout(lengths), si, ti, len(labels), c2, backend=backend)


@pytest.mark.parametrize("all_states", [False, True])
def test_backends_agree(rng, all_states):
    X, y = synthetic_tagging(60, mean_len=8, n_words=300, seed=1)
    objs = [_objective(X, y, 0.3, b, all_states) for b in ("numba", "numpy")]
    assert_allclose(objs[0].emp, objs[1].emp, rtol=0, atol=0)
    for scale in (0.0, 0.5, 3.0):
        theta = rng.normal(scale=scale, size=objs[0].size)
        (f1, g1), (f2, g2) = (o(theta) for o in objs)
        assert_allclose(f1, f2, rtol=1e-12, atol=0)
        assert_allclose(g1, g2, rtol=1e-9, atol=1e-9)


def test_gradient_matches_finite_differences(rng):
    X, y = synthetic_tagging(12, mean_len=5, n_words=40, seed=2)
    obj = _objective(X, y, 0.7, "numba")
    theta = rng.normal(size=obj.size)
    _, g = obj(theta)
    num = approx_fprime(theta, lambda t: obj(t)[0], 1e-6)
    assert_allclose(g, num, rtol=0, atol=2e-4)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_overflowing_trial_point_gives_inf(backend):
    X, y = synthetic_tagging(10, mean_len=5, n_words=40, seed=3)
    obj = _objective(X, y, 0.1, backend)
    f, g = obj(np.full(obj.size, 1e308))  # x·W overflows to inf
    assert f == np.inf and np.isnan(g).all()


def test_auto_backend_compiles_only_for_big_batches(monkeypatch):
    monkeypatch.setattr(ragged, "is_compiled", lambda: False)
    assert ragged.auto_backend(10_000, 9) == "numpy"  # N K^2 = 810,000 < 2^20
    assert ragged.auto_backend(20_000, 9) == "numba"
    monkeypatch.setattr(ragged, "is_compiled", lambda: True)
    assert ragged.auto_backend(10, 2) == "numba"
    with compiled.backend("numpy"):
        assert ragged.auto_backend(10**6, 9) == "numpy"


def test_fit_is_the_same_with_either_backend(monkeypatch):
    X, y = synthetic_tagging(80, mean_len=8, n_words=500, seed=4)
    monkeypatch.setattr(ragged, "AUTO_MIN_WORK", 0)
    fast = CRF(c1=0.05, c2=0.1, max_iterations=30).fit(X, y)
    with compiled.backend("numpy"):
        ref = CRF(c1=0.05, c2=0.1, max_iterations=30).fit(X, y)
    assert_allclose([r["loss"] for r in fast.training_log_], [r["loss"] for r in ref.training_log_], rtol=1e-9)
    assert_allclose(fast.state_weights_, ref.state_weights_, rtol=0, atol=1e-6)


def test_an_unknown_backend_is_refused_by_name():
    import scipy.sparse as sp

    from causalnet import ModelError

    with pytest.raises(ModelError, match="backend must be None or one of .*'nmupy'"):
        Objective(sp.csr_matrix(np.eye(2)), np.array([0, 1]), Layout(np.array([1, 1])), np.arange(4), np.arange(4),
                  K=2, c2=0.0, backend="nmupy")
