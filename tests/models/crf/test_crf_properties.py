"""Property tests (issue 10) over the CRF's entry points with generated bad and extreme input.

Every call goes through ``conftest.guarded``: a valid answer or a CausalNetError, no NaN or
inf in the answer, and the estimator and the arguments unchanged after a failure. Valid
answers are also checked for what they must be (probabilities sum to one, labels known).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from causalnet.errors import CausalNetError
from causalnet.models.crf import CRF

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LABELS = ["A", "B", "C"]
ATTRS = ["w:a", "w:b", "n", "BOS"]

# -- strategies -----------------------------------------------------------------------------

_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, -1.0, 1e300, -1e300, 5e-324]),
)
_scalars = st.one_of(
    _floats,
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.none(),
    st.complex_numbers(max_magnitude=2),
)
_values = st.one_of(
    _scalars, st.lists(st.text(max_size=2), max_size=2), st.dictionaries(st.text(max_size=2), _floats, max_size=2)
)
_items = st.one_of(
    st.dictionaries(
        st.one_of(st.sampled_from(["w", "n", "BOS"]), st.text(max_size=2), st.integers(0, 3)), _values, max_size=3
    ),
    st.lists(st.sampled_from(ATTRS + ["zz"]), max_size=3),
    _scalars,
)
_sequences = st.one_of(st.lists(_items, max_size=4), _scalars)


@st.composite
def _arrays(draw, max_dims=4):
    ndim = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    kind = draw(st.sampled_from(["float", "float", "int", "bool", "complex", "str"]))
    size = int(np.prod(shape))
    if kind == "float":
        a = np.array(draw(st.lists(_floats, min_size=size, max_size=size)), float)
    elif kind == "int":
        a = np.array(draw(st.lists(st.integers(-5, 5), min_size=size, max_size=size)), int)
    elif kind == "bool":
        a = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool)
    elif kind == "complex":
        a = np.ones(size, complex)
    else:
        a = np.array(["x"] * size)
    return a.reshape(shape)


_labels = st.one_of(st.sampled_from(LABELS), st.integers(0, 2), st.none(), st.lists(st.just("A"), max_size=1))

_good_floats = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, 1e-300, 1e150, -1e150]))
_good_items = st.fixed_dictionaries(
    {"w": st.sampled_from(["a", "b", "c"])},
    optional={"n": _good_floats, "BOS": st.booleans(), "s": st.text(max_size=2)},
)


@st.composite
def _tagging(draw):
    """Mostly valid (X, y), sometimes with one thing broken."""
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    X = [[draw(_good_items) for _ in range(L)] for L in lengths]
    y = [[draw(st.sampled_from(LABELS)) for _ in range(L)] for L in lengths]
    broken = draw(st.sampled_from(["none", "none", "none", "label", "value", "empty", "length", "item"]))
    s = draw(st.integers(0, len(X) - 1))
    if broken == "label":
        y[s][0] = draw(_labels)
    elif broken == "value":
        X[s][0]["n"] = draw(_floats)
    elif broken == "empty":
        X[s], y[s] = [], []
    elif broken == "length":
        y[s] = y[s][1:]
    elif broken == "item":
        X[s][0] = draw(_items)
    return X, y


_X = st.one_of(
    _tagging().map(lambda Xy: Xy[0]),
    _tagging().map(lambda Xy: Xy[0]),
    st.lists(_sequences, max_size=4),
    _arrays(),
    st.lists(_arrays(max_dims=3), min_size=1, max_size=3),
    _scalars,
)
_y = st.one_of(st.lists(st.one_of(st.lists(_labels, max_size=4), _scalars), max_size=4), _arrays(max_dims=2), _scalars)
_mask = st.one_of(st.none(), _arrays(max_dims=3))


@pytest.fixture(scope="module")
def fitted():
    X = [[{"w": "a", "n": 1.0, "BOS": True}, {"w": "b", "n": 0.5}], [{"w": "b", "BOS": True}, {"w": "a"}, {"w": "a"}]]
    y = [["A", "B"], ["B", "C", "A"]]
    return CRF(c2=0.1, max_iterations=15).fit(X, y)


def _check_marginals(out):
    if isinstance(out, CausalNetError):
        return
    for seq in out:
        for d in seq:
            assert set(d) <= set(LABELS) and abs(sum(d.values()) - 1) < 1e-9


# -- properties -----------------------------------------------------------------------------


@SETTINGS
@given(Xy=st.one_of(_tagging(), _tagging(), st.tuples(_X, _y)), c1=st.sampled_from([0.0, 0.1]), states=st.booleans())
def test_fit_on_anything(Xy, c1, states):
    X, y = Xy
    crf = CRF(c1=c1, c2=0.1, max_iterations=3, all_possible_states=states)
    out = guarded(crf.fit, X, y)
    if not isinstance(out, CausalNetError):
        assert out is crf and np.isfinite(crf.state_weights_).all() and np.isfinite(crf.transition_weights_).all()
        guarded(crf.predict, X)


@SETTINGS
@given(Xy=st.one_of(_tagging(), st.tuples(_X, _y)))
def test_failed_refit_leaves_a_fitted_crf_unchanged(fitted, Xy):
    X, y = Xy
    twin = CRF(**fitted.get_params())  # refit a copy: the module fixture stays as it is
    twin.fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]])
    guarded(twin.fit, X, y)  # on failure, guarded checks `twin` is unchanged


@SETTINGS
@given(X=_X, mask=_mask)
def test_predict_and_marginals_on_anything(fitted, X, mask):
    out = guarded(fitted.predict, X, mask=mask)
    if not isinstance(out, CausalNetError):
        assert all(lab in LABELS for seq in out for lab in seq)
    _check_marginals(guarded(fitted.predict_marginals, X, mask=mask))


_good_unary = st.tuples(st.integers(0, 3), st.integers(0, 4)).flatmap(
    lambda nt: st.lists(_good_floats, min_size=nt[0] * nt[1] * 3, max_size=nt[0] * nt[1] * 3).map(
        lambda v, nt=nt: np.array(v, float).reshape(nt[0], nt[1], 3)
    )
)


@SETTINGS
@given(unary=st.one_of(_good_unary, _good_unary, _arrays()), mask=_mask)
def test_given_potentials_on_anything(fitted, unary, mask):
    out = guarded(fitted.decode_potentials, unary, mask=mask)
    if not isinstance(out, CausalNetError):
        assert all(lab in LABELS for seq in out[0] for lab in seq)
    out = guarded(fitted.marginals_potentials, unary, mask=mask)
    if not isinstance(out, CausalNetError) and out[0].size:
        m = mask if mask is not None else np.ones(out[0].shape[:2], bool)
        sums = out[0].sum(-1)[np.asarray(m, bool).reshape(out[0].shape[:2])]
        assert np.allclose(sums, 1.0)


@SETTINGS
@given(
    W=st.one_of(_arrays(max_dims=2), st.lists(st.lists(_floats, max_size=3), max_size=3)),
    A=_arrays(max_dims=2),
    labels=st.one_of(st.lists(_labels, max_size=3), st.text(max_size=3), st.integers()),
    attributes=st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=4)),
)
def test_from_weights_on_anything(W, A, labels, attributes):
    out = guarded(CRF.from_weights, W, A, labels, attributes)
    if not isinstance(out, CausalNetError):
        assert len(out.classes_) >= 1 and out.transition_weights_.shape == (len(out.classes_),) * 2
        T = 2
        guarded(out.to_model, T)


@SETTINGS
@given(
    targets=st.one_of(
        st.sampled_from(["y[0]", "y[1]", "y[5]", "x[0]", "z"]), st.lists(st.sampled_from(["y[0]", "y[1]"]))
    ),
    X=st.one_of(_sequences, _arrays(max_dims=3)),
    evidence=st.one_of(
        st.none(), st.dictionaries(st.sampled_from(["y[0]", "y[1]", "x[0]", "q"]), _labels, max_size=2), _scalars
    ),
    do=st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(["x[0]", "x[1]"]), _good_items, max_size=2),
        st.dictionaries(st.sampled_from(["x[0]", "x[1]", "y[0]"]), _items, max_size=2),
        _scalars,
    ),
)
def test_query_on_anything(fitted, targets, X, evidence, do):
    out = guarded(fitted.query, targets, X, evidence=evidence, do=do)
    if not isinstance(out, CausalNetError):
        for d in [out] if not isinstance(out, dict) else out.values():
            assert abs(float(np.sum(d.probs)) - 1) < 1e-9


@SETTINGS
@given(
    T=st.one_of(st.none(), st.integers(-2, 4), st.just(10**15), _scalars),
    X=st.one_of(st.none(), _tagging().map(lambda Xy: Xy[0][0]), _sequences, _arrays(max_dims=3)),
)
def test_to_model_on_anything(fitted, T, X):
    guarded(fitted.to_model, T, X)


@SETTINGS
@given(
    params=st.dictionaries(
        st.sampled_from(
            [
                "c1",
                "c2",
                "max_iterations",
                "algorithm",
                "solver",
                "num_memories",
                "period",
                "epsilon",
                "all_possible_transitions",
                "callback",
                "bogus",
            ]
        ),
        st.one_of(_scalars, st.sampled_from(["lbfgs", "scipy", "l2sgd"])),
        max_size=3,
    )
)
def test_parameters_on_anything(params):
    crf = CRF()
    out = guarded(crf.set_params, **params)
    if not isinstance(out, CausalNetError):
        assert CRF(**crf.get_params()).get_params() == crf.get_params()
    try:
        CRF(**params)
    except CausalNetError:
        pass
    except TypeError:  # an unknown keyword is Python's own error for a constructor
        assert "bogus" in params
