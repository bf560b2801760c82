"""HMM on bad and extreme input (issue 10): typed errors, no NaN, nothing changed by a failed call.

Regression tests for each case named in the issue, then hypothesis properties that drive
every entry point (fit, score, decode, predict_proba, sample, query, counterfactual)
through ``guarded``.
"""

import re
import warnings

import numpy as np
import pytest
from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import limits
from causalnet.errors import EvidenceError, ModelError, ResourceError, ShapeError
from causalnet.models.hmm import HMM

CAT = dict(startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]], emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])


@pytest.mark.parametrize(
    "kw",
    [
        {"n_iter": -1}, {"n_iter": 1.5}, {"n_iter": True}, {"n_init": 0}, {"tol": float("nan")}, {"tol": "x"},
        {"min_covar": 0.0}, {"min_covar": -1.0}, {"seed": "x"}, {"seed": -1}, {"progress": "yes"},
        {"emission": "weibull"}, {"covariance_type": "banana"}, {"n_mix": 0}, {"n_features": 0}, {"transmat_prior": float("nan")},
        {"startprob_prior": 1 + 2j}, {"n_symbols": 0}, {"params": "sx"}, {"init_params": 3},
    ],
)
def test_bad_constructor_parameters_raise_model_error(kw):
    with pytest.raises(ModelError):
        HMM(2, **kw)


def test_probabilities_summing_to_more_than_one_and_complex_are_refused():
    with pytest.raises(ModelError, match="sums to"):
        HMM(2, **{**CAT, "startprob": [0.6, 0.5]})
    with pytest.raises(ModelError, match="real probabilities"):
        HMM(2, **{**CAT, "startprob": np.array([0.6, 0.4]) + 0j})
    with pytest.raises(ModelError):
        HMM(2, "gaussian", means=[[0.0], [1j]])


@pytest.mark.parametrize("X", [[], np.zeros(0, int), np.zeros((0, 1))])
def test_fit_on_no_observations_is_typed(X):
    with pytest.raises(EvidenceError, match="no observations"):
        HMM(2).fit(X)
    with pytest.raises(EvidenceError):
        HMM(2, "gaussian").fit(np.zeros((0, 2)))


def test_failed_fit_changes_nothing():
    m = HMM(2)
    before = dict(m.__dict__)
    with pytest.raises(ShapeError):
        m.fit([0, 1, 2], lengths=[2])  # lengths disagree with X, after the alphabet was inferred
    assert m.n_symbols is None and m.__dict__.keys() == before.keys()
    fitted = HMM(2, seed=0).fit([0, 1, 2, 1, 0])
    snap = {k: np.copy(v) for k, v in fitted.__dict__.items() if isinstance(v, np.ndarray)}
    with pytest.raises(EvidenceError):
        fitted.fit([0, 1, 7, -1])
    for k, v in snap.items():
        assert np.array_equal(getattr(fitted, k), v)
    assert fitted.n_symbols == 3


@pytest.mark.parametrize(
    "X, err",
    [
        (np.zeros(0, int), EvidenceError),  # T = 0
        ([[0, 1], [2]], EvidenceError),  # ragged
        ([0.5, 1.0], EvidenceError),  # not symbols
        ([np.nan, np.nan], EvidenceError),  # every observation missing (one NaN is a missing step)
        (["a", "b"], EvidenceError),
        ([0, 3], EvidenceError),  # outside the alphabet
        (np.zeros((2, 2, 2), int), ShapeError),
    ],
)
def test_bad_categorical_observations(X, err):
    m = HMM(2, **CAT)
    for fn in (m.score, m.predict, m.predict_proba, m.decode):
        with pytest.raises(err):
            fn(X)


def test_bad_gaussian_observations_and_lengths():
    m = HMM(2, "gaussian", startprob=[0.5, 0.5], transmat=[[0.9, 0.1], [0.1, 0.9]], means=[[0.0], [3.0]],
            covars=[[1.0], [1.0]])
    for X in ([[np.nan], [np.nan]], [[0.0], [np.inf]], [[1j]], [["a"]], [[0.0, 1.0], [0.0]], np.zeros((0, 1))):
        with pytest.raises((EvidenceError, ShapeError)):
            m.score(X)
    for lengths in ([1, 1], [0, 3], [1.5, 1.5], [[1, 2]], [], [True, True, True]):
        with pytest.raises((EvidenceError, ShapeError)):
            m.score(np.zeros((3, 1)), lengths)


@pytest.mark.parametrize("seed", range(10))
def test_full_covariance_on_nearly_singular_data(seed):
    # hmmlearn issue #2: a constant and a duplicated column made 9 of 10 seeds fail with LinAlgError
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(300, 1))
    X = np.hstack([a, a, np.full((300, 1), 5.0), rng.normal(size=(300, 1))])
    m = HMM(3, "gaussian", covariance_type="full", n_iter=50, seed=seed).fit(X)
    assert np.isfinite(m.covars_).all() and np.isfinite(m.means_).all()
    assert np.isfinite(m.score(X))
    for c in m.covars_:
        assert np.linalg.eigvalsh(c).min() > 0
    assert np.isfinite(m.predict_proba(X)).all()


def test_floor_leaves_well_conditioned_fits_alone():
    # positive definite covariances are kept exactly: the floor only repairs what is broken
    from causalnet.models.hmm.covariance import COVARIANCES

    full = COVARIANCES["full"]
    c = np.array([[[2.0, 1e-3], [1e-3, 1e-5]]])  # positive definite, small variance
    assert np.array_equal(full.floor(c, 1e-3), c)
    assert np.array_equal(COVARIANCES["tied"].floor(c[0], 1e-3), c[0])
    bad = np.array([[[1.0, 1.0], [1.0, 1.0 - 1e-12]]])
    fixed = full.floor(bad, 1e-3)
    assert np.linalg.eigvalsh(fixed[0]).min() >= 1e-3 * (1 - 1e-9)


def test_counterfactual_twin_chain_respects_the_table_limit(small_hmm):
    X = np.array([0, 1, 2, 1])
    ok = small_hmm.counterfactual("X[3]", evidence=X, do={"Z[1]": 0})
    with limits.override(max_table_bytes=300):  # the query chain fits, the twin does not
        with pytest.raises(ResourceError, match="twin chain"):
            small_hmm.counterfactual("X[3]", evidence=X, do={"Z[1]": 0})
        with pytest.raises(ResourceError):
            small_hmm.query("Z[10000000]", evidence=X)
    assert_allclose(small_hmm.counterfactual("X[3]", evidence=X, do={"Z[1]": 0}).probs, ok.probs)


def test_query_evidence_is_decoded_strictly(small_hmm):
    for ev in ([[0, 1], [2]], [0.5, 1.0], ["a"], {"X[0]": 1.5}, {"X[0]": np.nan}):
        with pytest.raises(EvidenceError):
            small_hmm.query("Z[0]", evidence=ev)
    with pytest.raises((EvidenceError, ShapeError)):
        small_hmm.query("Z[1]", evidence=[0, 1], do={"Z[0]": []})


def test_sample_sizes_and_seeds(small_hmm):
    for bad in (-1, 1.5, "3", None):
        with pytest.raises(ModelError):
            small_hmm.sample(bad)
    with pytest.raises(ModelError):
        small_hmm.sample(3, seed="x")
    X, Z = small_hmm.sample(0, seed=0)
    assert X.shape == (0, 1) and Z.shape == (0,)


def test_aic_bic():
    m = HMM(2, **CAT)
    X = np.array([0, 1, 2, 2, 1])
    ll = m.score(X)
    p = 1 + 2 + 2 * 2
    assert m.n_parameters() == p
    assert_allclose(m.aic(X), -2 * ll + 2 * p)
    assert_allclose(m.bic(X), -2 * ll + p * np.log(len(X)))


# -- properties -----------------------------------------------------------------

_settings = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_values = st.one_of(
    st.integers(-3, 5), st.floats(allow_nan=True, allow_infinity=True, width=32), st.just(1e300),
    st.text(max_size=2), st.booleans(),
)
_observations = st.one_of(
    st.lists(_values, max_size=6),
    st.lists(st.lists(st.integers(-1, 4), max_size=3), max_size=3),
    st.lists(st.integers(0, 2), min_size=1, max_size=8).map(np.array),
    st.just(np.zeros((0,), int)),
)
_lengths = st.one_of(st.none(), st.lists(st.integers(-1, 5), max_size=4), st.just([1.5]), st.just("ab"))


# fit/score take a per-observation second argument that is not valid lengths as scikit-learn's y: ignored, warned
@pytest.mark.filterwarnings("ignore:the second argument has one entry per observation")
@_settings
@given(X=_observations, lengths=_lengths)
def test_categorical_entry_points_on_any_input(X, lengths):
    m = HMM(2, **CAT)
    for fn in (m.score, m.predict_proba, m.predict):
        guarded(fn, X, lengths, allow_neginf=True)
    guarded(m.decode, X, lengths, algorithm="map")
    fresh = HMM(2, n_iter=3, seed=0)
    guarded(fresh.fit, X, lengths, allow_neginf=True)


@_settings
@given(
    X=st.one_of(
        st.lists(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=2), max_size=6),
        st.lists(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=3), max_size=4),
    ),
    cov=st.sampled_from(["diag", "full"]),
)
def test_gaussian_entry_points_on_any_input(X, cov):
    m = HMM(2, "gaussian", covariance_type=cov, n_iter=5, seed=0)
    out = guarded(m.fit, X)
    if isinstance(out, HMM):
        guarded(m.score, X, allow_neginf=True)
        guarded(m.predict_proba, X)
        guarded(m.decode, X, allow_neginf=True)


@_settings
@given(
    target=st.sampled_from(["Z[0]", "Z[2]", "X[3]", "X[1]", "Y[0]", "Z[-1]", 3]),
    evidence=st.one_of(st.none(), _observations, st.dictionaries(st.sampled_from(["X[0]", "X[2]", "Z[1]"]), _values,
                                                                    max_size=2)),
    do=st.one_of(st.none(), st.dictionaries(st.sampled_from(["Z[0]", "Z[1]", "X[2]"]), _values, max_size=2)),
)
def test_query_and_counterfactual_on_any_input(small_hmm, target, evidence, do):
    guarded(small_hmm.query, target, evidence=evidence, do=do, T=4)
    guarded(small_hmm.counterfactual, target, evidence=evidence, do=do)


@_settings
@given(n=st.one_of(st.integers(-2, 20), st.floats(), st.text(max_size=1)),
       seed=st.one_of(st.none(), st.integers(-1, 3), st.text(max_size=1)))
def test_sample_on_any_input(small_hmm, n, seed):
    guarded(small_hmm.sample, n, seed=seed)


def test_top_level_name_still_works():
    assert cn.HMM is HMM


@pytest.mark.parametrize("x", [np.array([1e300]), np.array([-1e300]), np.array([2**63 + 5], dtype=np.uint64)])
def test_huge_symbols_are_named_not_wrapped(x):
    """A symbol too large for an index used to wrap around in the cast (with a RuntimeWarning)."""
    h = cn.HMM(n_components=2, emission="categorical", n_iter=2, random_state=0).fit(np.array([0, 1, 1, 0, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(EvidenceError, match=re.escape(str(x[0]))):
            h.score(x)


def test_an_alphabet_above_the_states_limit_is_refused_before_allocating():
    import causalnet as cn

    with pytest.raises(cn.EvidenceError, match="3185223680 at position 0 .* max_states"):
        HMM(2, n_iter=3, seed=0).fit(np.array([[3185223680.0]]))     # was a 24 GiB MemoryError
    with pytest.raises(cn.ModelError, match="n_symbols=10000000000 is above the limit max_states"):
        HMM(2, n_symbols=10**10)
    with cn.limits.override(max_states=4):
        with pytest.raises(cn.EvidenceError, match="alphabet of 5 symbols"):
            HMM(2, seed=0).fit(np.array([[0], [4]]))


def test_an_emission_table_above_the_bytes_limit_is_refused_before_allocating():
    import causalnet as cn

    with pytest.raises(cn.ResourceError, match="300 states x 10000000 symbols"):
        HMM(300, seed=0).fit(np.array([[0], [9_999_999]]))          # 22 GiB: was numpy's MemoryError
