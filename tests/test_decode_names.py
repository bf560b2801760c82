"""Arrays of state names decode by one rule, fast (one lookup per distinct name): equal to a row-by-row oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from causalnet.errors import EvidenceError
from causalnet.values import decode_states


@settings(max_examples=60, deadline=None)
@given(K=st.sampled_from([1, 2, 5, 256, 257, 300]), n=st.integers(0, 60), seed=st.integers(0, 2**16),
       bad_row=st.none() | st.integers(0, 59))
def test_name_arrays_decode_as_row_by_row(K, n, seed, bad_row):
    states = tuple(f"s{i}" for i in range(K))
    rng = np.random.default_rng(seed)
    want = rng.integers(0, K, n)                                                      # (n,) oracle indices
    names = np.asarray(states, dtype=object)[want] if n else np.empty(0, dtype=object)
    if bad_row is not None and bad_row < n:
        names = names.copy()
        names[bad_row:] = [f"nope{j % 3}" for j in range(n - bad_row)]              # several bad names
        with pytest.raises(EvidenceError, match=rf"'X' has no state 'nope0' \(row {bad_row}\)"):
            decode_states("X", states, names)
        return
    got = decode_states("X", states, names)
    assert got.dtype == np.int64 and got.shape == (n,)
    assert got.tolist() == [states.index(s) for s in names.tolist()]
    assert decode_states("X", states, list(names)).tolist() == got.tolist()           # a list decodes alike
