"""A chain whose finite potentials overflow says so (NumericalError), not that its sequence is impossible."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from causalnet import EvidenceError, NumericalError
from causalnet.inference.chain import forward_backward, log_partition, sample_paths, viterbi


@settings(max_examples=25, deadline=None)
@given(row=st.integers(0, 2), step=st.integers(0, 3), big=st.floats(1e308, 1.79e308), shared=st.booleans())
def test_overflow_is_named_as_an_overflow(row, step, big, shared):
    unary = np.zeros((3, 4, 3))
    unary[row, step] = big                                # every state: each path's weight overflows
    unary[row, (step + 1) % 4] = big
    pairwise = np.zeros((3, 3)) if shared else np.zeros((3, 3, 3, 3))
    with np.errstate(all="ignore"):
        with pytest.raises(NumericalError, match=rf"sequence \(row\) \[{row}\]: .*overflows.*rescale"):
            forward_backward(unary, pairwise)
        with pytest.raises(NumericalError, match="overflows"):
            log_partition(unary, pairwise)
        with pytest.raises(NumericalError, match=rf"\[{row}\]: .*overflows"):
            sample_paths(unary, pairwise, size=2, seed=0)
        post = forward_backward(np.delete(unary, row, axis=0), pairwise if shared else np.delete(pairwise, row, 0))
    assert np.allclose(post.marginals.sum(-1), 1.0)        # the other rows alone are fine


def test_an_impossible_row_is_still_an_evidence_error():
    pairwise = np.full((2, 2), -np.inf)                    # no transition possible
    with pytest.raises(EvidenceError, match=r"sequence \(row\) \[0, 1\] has probability zero"):
        forward_backward(np.zeros((2, 3, 2)), pairwise)
    with pytest.raises(EvidenceError, match="probability zero"):
        viterbi(np.zeros((2, 3, 2)), pairwise)
