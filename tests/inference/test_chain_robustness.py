"""The chain engine on bad and extreme potentials (issue 10): ShapeError/ModelError naming expected vs given."""

import numpy as np
import pytest
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st

from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference.chain import (
    backward_messages,
    forward_backward,
    forward_messages,
    log_partition,
    sample_paths,
    viterbi,
)

ENTRY = [log_partition, forward_backward, viterbi, forward_messages, backward_messages, sample_paths]
U = np.zeros((2, 3, 2))
P = np.zeros((2, 2))


@pytest.mark.parametrize("fn", ENTRY)
def test_shapes_are_named(fn):
    with pytest.raises(ShapeError, match=r"expected \(2, 2\)"):
        fn(U, np.zeros((3, 3)))
    with pytest.raises(ShapeError, match=r"mask must have shape \(n, T\) = \(2, 3\)"):
        fn(U, P, np.ones((3, 2), bool))
    with pytest.raises(ShapeError, match=r"\(n, T, K\)"):
        fn(np.zeros((3, 2)), P)
    with pytest.raises(ShapeError, match="ragged"):
        fn([[[0.0, 0.0]], [[0.0]]], P)
    with pytest.raises(ShapeError):
        fn(U, P, [[1, 1, 1], [1]])
    with pytest.raises(ShapeError, match="boolean"):
        fn(U, P, np.full((2, 3), 0.5))


@pytest.mark.parametrize("fn", ENTRY)
def test_values_are_checked(fn):
    u = U.copy()
    u[1, 2, 0] = np.nan
    with pytest.raises(ModelError, match="row 1, step 2, state 0"):
        fn(u, P)
    with pytest.raises(ModelError, match="real numbers"):
        fn(U + 1j, P)
    with pytest.raises(ModelError, match="real numbers"):
        fn(U, np.full((2, 2), "a"))
    with pytest.raises(EvidenceError, match="length 0"):
        fn(np.zeros((1, 0, 2)), P)  # T = 0


def test_sample_paths_size_and_seed():
    for size in (-1, 1.5, "2"):
        with pytest.raises(ModelError):
            sample_paths(U, P, size=size)
    with pytest.raises(ModelError):
        sample_paths(U, P, seed="x")


_pot = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.floats(-1e300, 1e300)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 3), T=st.integers(0, 4), K=st.integers(0, 3), fill=_pot, extreme=_pot,
    pw_shape=st.sampled_from(["shared", "per-step", "wrong"]), lengths=st.lists(st.integers(-1, 5), max_size=3),
)
def test_any_potentials_give_an_answer_or_a_typed_error(n, T, K, fill, extreme, pw_shape, lengths):
    u = np.full((n, T, K), fill)
    if u.size:
        u.flat[0] = extreme
    pw = {"shared": np.zeros((K, K)), "per-step": np.zeros((n, max(T - 1, 0), K, K)),
          "wrong": np.zeros((K + 1, K))}[pw_shape]
    mask = None
    if len(lengths) == n:
        mask = np.arange(T)[None, :] < np.array(lengths, dtype=int)[:, None]
    for fn in (log_partition, forward_backward, viterbi):
        guarded(fn, u, pw, mask, allow_neginf=True)
    guarded(sample_paths, u, pw, mask, seed=0)
