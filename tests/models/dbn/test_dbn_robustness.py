"""Bad input to a DBN's questions: typed errors only, never NaN, nothing mutated (the `guarded` harness)."""

import numpy as np
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st

from .test_dbn import random_dbn

DBN = random_dbn(0)
NAMES = st.sampled_from(["O1[0]", "O1[3]", "O2[9]", "H1[2]", "Q[1]", "O1", "O2", "O1[t-1]", "H2[-1]", 3, None])
VALUES = st.one_of(st.integers(-3, 5), st.sampled_from(["a", None, np.nan, 1.5, "0"]),
                   st.lists(st.integers(-2, 3), min_size=0, max_size=7).map(np.array),
                   st.lists(st.lists(st.integers(-1, 2), min_size=3, max_size=3), min_size=1, max_size=3).map(np.array))


@settings(max_examples=60, deadline=None)
@given(ev=st.dictionaries(NAMES, VALUES, max_size=3), do=st.dictionaries(NAMES, VALUES, max_size=2),
       T=st.one_of(st.integers(-1, 6), st.none()), which=st.sampled_from(["filter", "smooth", "predict", "query"]))
def test_bad_questions_raise_typed_errors(ev, do, T, which):
    if which == "query":
        guarded(DBN.query, "H2[2]", evidence=ev, do=do, T=T)
    elif which == "predict":
        guarded(DBN.predict, ev, 2, do=do)
    else:
        guarded(getattr(DBN, which), ev, T, do=do)


def test_target_past_the_horizon_is_an_evidence_error():
    import pytest

    from causalnet.errors import EvidenceError
    with pytest.raises(EvidenceError, match=r"'H2\[2\]' is at step 2, past the horizon T=1"):
        DBN.query("H2[2]", T=1)
