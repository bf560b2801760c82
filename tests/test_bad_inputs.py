"""Bad inputs that still got through (issue 31): one regression per item, through ``conftest.guarded``.

Each item of the issue's list becomes either a valid answer (checked against an
independent oracle) or a :class:`~causalnet.errors.CausalNetError` whose message
names the argument or node and what was given. The file writers are in
``tests/io/test_io_write_errors.py``, the counterfactual sizes in
``tests/inference/test_counterfactual_limits.py``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian, GaussianMixture
from causalnet.errors import CausalNetError, EvidenceError, GraphError, ModelError, NumericalError, ShapeError
from tests.conftest import guarded, make_linear_gaussian, make_sprinkler


def _hmm():
    return cn.HMM(2, "categorical", n_symbols=3, startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]],
                  emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])


def _ghmm():
    return cn.HMM(2, "gaussian", startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]], means=[[0.0], [1.0]],
                  covars=[[1.0], [1.0]])


def _decoder():
    return cn.transformer.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=11, seed=0)


def _head():
    from causalnet.models.causal_head import CausalHead

    return CausalHead.initialise(vocab_size=5, hidden=4, num_id=4, seed=0)


def _backbone(ids, vals):
    return np.ones(ids.shape + (4,))                                     # (n, t, H)


def _seq2seq():
    from causalnet.models.recurrent.seq2seq import seq2seq

    return seq2seq(src_vocab=7, tgt_vocab=6, embed=4, hidden=5, T_src=2, T_tgt=1, src_lengths=True, seed=0)


def _dbn():
    from tests.models.dbn.test_dbn import random_dbn

    return random_dbn(0)


def _adjust(z):
    from causalnet.estimation.identify import check_adjustment_set

    return check_adjustment_set(cn.DAG.parse("Z -> X -> Y; Z -> Y"), "X", "Y", z)


def _estimate(**kw):
    import pandas as pd

    rng = np.random.default_rng(0)
    z = rng.normal(size=200)
    t = (z + rng.normal(size=200) > 0).astype(int)
    frame = pd.DataFrame({"Z": z, "T": t, "Y": t + z + rng.normal(size=200)})
    return cn.estimate(cn.DAG.parse("Z -> T -> Y; Z -> Y"), frame, "T", "Y", ci="analytic", **kw)


def _overflowing_chain():
    from causalnet.inference.chain import log_partition

    u = np.full((1, 2, 2), 8.98846567431158e307)                        # (n, T, K): u0 + u1 overflows
    u[0, 0, 0] = 0.0
    return log_partition(u, np.zeros((2, 2)))


def _head_initialise(**kw):
    from causalnet.models.causal_head import CausalHead

    return CausalHead.initialise(**{"vocab_size": 5, "hidden": 4, "num_id": 4, "seed": 0, **kw})


_G = cn.DAG([("A", "B"), ("B", "C")])
_FD = cn.DAG.parse("U [latent]; U -> X; U -> Y; X -> M -> Y")
_CAUCHY = cn.Cauchy(0.0, 1.0)
_GAUSS = Gaussian(("X",), [0.0], [[1.0]])

# item -> (call, expected error type, fragments the message must hold)
ITEMS = {
    # accepted silently
    "DiscreteDistribution summing to 1.1": (lambda: DiscreteDistribution(("A",), [0.5, 0.6], (("a", "b"),)),
                                            ModelError, ["'A'", "sum to 1", "1.1"]),
    "DiscreteDistribution negative": (lambda: DiscreteDistribution(("A",), [1.5, -0.5], (("a", "b"),)),
                                      ModelError, [">= 0", "-0.5"]),
    "DiscreteDistribution batch row": (lambda: DiscreteDistribution(("A",), [[0.5, 0.5], [0.2, 0.3]], (("a", "b"),),
                                                                    batched=True),
                                       ModelError, ["row 1", "0.5"]),
    "DiscreteDistribution ragged": (lambda: DiscreteDistribution(("A",), [[0.5, 0.5], [1.0]], (("a", "b"),),
                                                                 batched=True),
                                    ModelError, ["probs", "rectangular"]),
    "Gaussian negative variance": (lambda: Gaussian(("X",), [0.0], [[-1.0]]), ModelError,
                                   ["variance of 'X'", "-1.0"]),
    "Gaussian not PSD": (lambda: Gaussian(("X", "Y"), [0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]), ModelError,
                         ["positive semidefinite", "-1.0"]),
    "Gaussian cov shape": (lambda: Gaussian(("X", "Y"), [0.0, 0.0], [[1.0]]), ModelError, ["cov", "d=2", "(1, 1)"]),
    "Gaussian mean shape": (lambda: Gaussian(("X",), [0.0, 1.0], [[1.0]]), ModelError, ["mean", "(2,)"]),
    "HMM.score zero length": (lambda: _hmm().score(np.array([0, 1, 2, 0]), lengths=[0, 4]), EvidenceError,
                              ["length 0"]),
    "HMM poisson without lambdas": (lambda: cn.HMM(2, "poisson", startprob=[0.5, 0.5],
                                                   transmat=[[0.5, 0.5], [0.5, 0.5]]).query("X[0]", T=2),
                                    ModelError, ["lambdas"]),
    "HMM.query negative T": (lambda: _hmm().query("Z[0]", T=-1), EvidenceError, ["T", "-1"]),
    "HMM.query T a string": (lambda: _hmm().query("Z[0]", T="x"), EvidenceError, ["T", "'x'"]),
    "DAG.parse empty group": (lambda: cn.DAG.parse("{A B} -> {}"), GraphError, ["empty group", "offset 9"]),
    "DAG.parse empty group left": (lambda: cn.DAG.parse("{} -> B"), GraphError, ["empty group", "offset 0"]),
    "DAG nodes=None": (lambda: cn.DAG([], nodes=None), GraphError, ["nodes=", "None"]),
    "descendants(None)": (lambda: _G.descendants(None), GraphError, ["descendants()", "None"]),
    "ancestors(None)": (lambda: _G.ancestors(None), GraphError, ["ancestors()", "None"]),
    "frontdoor max_candidates=0": (lambda: _FD.frontdoor_adjustment_sets("X", "Y", minimal=True, max_candidates=0),
                                   GraphError, ["max_candidates", "0"]),
    "frontdoor max_candidates='x'": (lambda: _FD.frontdoor_adjustment_sets("X", "Y", max_candidates="x"),
                                     GraphError, ["max_candidates", "'x'"]),
    "CausalHead.initialise hidden=0": (lambda: _head_initialise(hidden=0), ModelError, ["hidden", "0"]),
    "CausalHead.initialise num_id out of vocab": (lambda: _head_initialise(num_id=7), ModelError, ["num_id", "7"]),
    "CausalHead.generate max_new_tokens=-1": (lambda: _head().generate(_backbone, np.array([[1, 2]]),
                                                                       max_new_tokens=-1),
                                              ModelError, ["max_new_tokens", "-1"]),
    "CausalHead.generate eos outside": (lambda: _head().generate(_backbone, np.array([[1, 2]]), max_new_tokens=2,
                                                                 eos_id=9),
                                        ModelError, ["eos_id", "[0, 4]", "9"]),
    "transformer.generate eos outside": (lambda: cn.transformer.generate(_decoder(), np.array([[1, 2]]), 2, eos=11),
                                         ModelError, ["eos", "[0, 10]", "11"]),
    "padded encoder pad ids outside": (lambda: cn.transformer.encoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=11,
                                                                      padding=True, seed=0).forward(
        {"x": np.array([[1, 2, 3, 99]]), "pad": np.array([[False, False, False, True]])}),
        ShapeError, ["'x'", "99", "[0, 11)"]),
    "padded recurrent encoder ids outside": (lambda: _seq2seq().forward(
        {"src[0]": np.array([1, 2]), "src[1]": np.array([3, 99]), "tgt[0]": np.array([1, 1]),
         "src_lengths": np.array([2, 1])}),
        ShapeError, ["'src[1]'", "99", "[0, 7)"]),
    "DBN.filter empty per-row do": (lambda: _dbn().filter({}, None, do={"O1[0]": np.array([], dtype=int)}),
                                    EvidenceError, ["empty batch", "0 rows"]),
    "adjustment set 0": (lambda: _adjust(0), GraphError, ["adjustment node", "0"]),
    "estimate treated=[]": (lambda: _estimate(treated=[]), CausalNetError, ["treated", "[]"]),
    "estimate effect_modifiers=0": (lambda: _estimate(effect_modifiers=0), CausalNetError, ["0"]),
    "chain log_partition overflowing": (lambda: _overflowing_chain(), NumericalError, ["row 0", "+inf"]),
    # untyped
    "Gaussian.sample(-1)": (lambda: _GAUSS.sample(-1), ModelError, ["size", "-1"]),
    "Gaussian.sample('a')": (lambda: _GAUSS.sample("a"), ModelError, ["size", "'a'"]),
    "Cauchy.sample('a')": (lambda: _CAUCHY.sample("a"), ModelError, ["size", "'a'"]),
    "Cauchy.sample(-1)": (lambda: _CAUCHY.sample(-1), ModelError, ["size", "-1"]),
    "Cauchy.sample((2, -1))": (lambda: _CAUCHY.sample((2, -1)), ModelError, ["size", "-1"]),
    "Cauchy.ppf('a')": (lambda: _CAUCHY.ppf("a"), ModelError, ["ppf", "'a'"]),
    "HMM ragged emissionprob": (lambda: cn.HMM(2, "categorical", n_symbols=3, startprob=[0.6, 0.4],
                                               transmat=[[0.7, 0.3], [0.2, 0.8]],
                                               emissionprob=[[0.5, 0.5], [0.1, 0.3, 0.6]]),
                                ModelError, ["emissionprob", "ragged"]),
    "encoder_layer seed='x'": (lambda: cn.transformer.encoder_layer(d_model=4, d_ff=8, seed="x"), ModelError,
                               ["seed", "'x'"]),
    "transformer layers=(1,)": (lambda: cn.transformer.transformer(layers=(1,), d_model=4, d_ff=8, vocab=5),
                                ModelError, ["layers", "pair", "(1,)"]),
    "transformer vocab=(5, 5, 5)": (lambda: cn.transformer.transformer(layers=1, d_model=4, d_ff=8, vocab=(5, 5, 5)),
                                    ModelError, ["vocab", "pair"]),
    "transformer.generate seed='x'": (lambda: cn.transformer.generate(_decoder(), np.array([[1, 2]]), 2,
                                                                      temperature=1.0, seed="x"),
                                      ModelError, ["seed", "'x'"]),
    "g.to_dot(colour=...)": (lambda: _G.to_dot(colour="red"), GraphError, ["'colour'", "options"]),
    "m.to_dot(colour=...)": (lambda: make_sprinkler().to_dot(colour="red"), GraphError, ["'colour'"]),
    "render(colour=...)": (lambda: cn.render(_G, "never-written.dot", colour="red"), GraphError, ["'colour'"]),
    # NaN in, NaN out
    "Cauchy.cdf(NaN)": (lambda: _CAUCHY.cdf(np.nan), EvidenceError, ["Cauchy.cdf", "NaN"]),
    "Cauchy.log_prob(NaN)": (lambda: _CAUCHY.log_prob([0.0, np.nan]), EvidenceError, ["log_prob", "NaN", "1 of 2"]),
    "Cauchy.prob_greater(NaN)": (lambda: _CAUCHY.prob_greater(np.nan), EvidenceError, ["prob_greater", "NaN"]),
    "Cauchy.sf('a')": (lambda: _CAUCHY.sf("a"), EvidenceError, ["sf", "'a'"]),
    "Gaussian.log_prob(NaN)": (lambda: _GAUSS.log_prob(np.nan), EvidenceError, ["log_prob", "['X']", "NaN"]),
    # messages that do not name what was given
    "2-d evidence, discrete node": (lambda: make_sprinkler().query("Wet", evidence={"Rain": np.zeros((2, 2), int)}),
                                    EvidenceError, ["'Rain'", "(2, 2)"]),
    "2-d evidence, real node": (lambda: make_linear_gaussian().query("Y", evidence={"X": np.zeros((2, 2))}),
                                ShapeError, ["'X'", "scalar", "(n,)", "(2, 2)"]),
    "string evidence, real node": (lambda: make_linear_gaussian().query("Y", evidence={"X": "high"}), EvidenceError,
                                   ["'X'", "numeric", "'high'"]),
    "P(Y=1), continuous target": (lambda: make_linear_gaussian().query("P(Y=1 | X=0)"), EvidenceError,
                                  ["'Y'", "continuous", "P(Y=1)"]),
    "NaN in HMM evidence (categorical)": (lambda: _hmm().query("Z[0]", evidence={"X[1]": np.nan}), EvidenceError,
                                          ["'X[1]'", "nan"]),
    "NaN in HMM evidence (Gaussian)": (lambda: _ghmm().query("Z[0]", evidence={"X[1]": np.nan}), EvidenceError,
                                       ["'X[1]'", "NaN"]),
}


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_each_bad_input_is_a_typed_error_naming_what_was_given(item):
    call, kind, fragments = ITEMS[item]
    err = guarded(call)
    assert isinstance(err, kind), f"{item}: got {err!r}"
    for fragment in fragments:
        assert fragment in str(err), f"{item}: {fragment!r} not in {str(err)!r}"


# -- the valid neighbours of the refused inputs still answer, against oracles ---------------------------------


def test_valid_results_still_build():
    d = guarded(DiscreteDistribution, ("A",), [0.25, 0.75 + 1e-9], (("a", "b"),))   # rounding is not an error
    assert d["b"] == pytest.approx(0.75)
    g = guarded(Gaussian, ("X", "Y"), [0.0, 1.0], [[1.0, 1.0], [1.0, 1.0]])          # singular PSD is legal
    assert g.sample(3, seed=0).shape == (3, 2) and g.sample(0).shape == (0, 2)
    assert _CAUCHY.sample(0).shape == (0,) and _CAUCHY.sample((2, 3), seed=0).shape == (2, 3)


def test_cauchy_and_gaussian_at_infinity_and_against_scipy():
    from scipy import stats

    x = np.array([-np.inf, -3.0, 0.5, 7.0, np.inf])
    c = cn.Cauchy(0.5, 2.0)
    assert_allclose(c.cdf(x), stats.cauchy(0.5, 2.0).cdf(x), rtol=0, atol=1e-15)
    assert_allclose(c.prob_greater(x), stats.cauchy(0.5, 2.0).sf(x), rtol=0, atol=1e-15)
    assert_allclose(c.log_prob(x[1:-1]), stats.cauchy(0.5, 2.0).logpdf(x[1:-1]), rtol=1e-13)
    assert_allclose(_GAUSS.log_prob(x[1:-1]), stats.norm.logpdf(x[1:-1]), rtol=1e-13)


def test_hmm_query_with_a_valid_T_matches_the_start_distribution_propagated():
    h = _hmm()
    got = guarded(h.query, "Z[2]", T=3)
    want = np.array([0.6, 0.4]) @ np.linalg.matrix_power(np.array([[0.7, 0.3], [0.2, 0.8]]), 2)
    assert_allclose(got.probs, want, rtol=0, atol=1e-12)


def test_front_door_with_a_positive_max_candidates_still_lists():
    assert guarded(_FD.frontdoor_adjustment_sets, "X", "Y", minimal=True, max_candidates=10) == [frozenset({"M"})]
    assert guarded(_G.descendants, set()) == frozenset()


def test_transformer_with_a_layer_pair_still_builds():
    m = guarded(cn.transformer.transformer, layers=[1, 2], d_model=4, d_ff=8, vocab=(5, 6), seed=0)
    blocks = {".".join(str(v).split(".")[:2]) for v in m.nodes}
    assert {"enc.0", "dec.0", "dec.1"} <= blocks and "enc.1" not in blocks


# -- per-row do through JSON -------------------------------------------------------------------------------------


def _wet_given_do_sprinkler(s: int) -> np.ndarray:
    """Brute-force P(Wet | do(Sprinkler=s)) of the sprinkler model: sum over Rain."""
    rain = np.array([0.8, 0.2])
    wet = np.array([[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]])    # (Rain, Sprinkler, Wet)
    return rain @ wet[:, s, :]


def test_a_per_row_do_round_trips_through_json_and_answers_by_row(tmp_path):
    rows = np.array([0, 1, 1, 0])
    m = make_sprinkler().do({"Sprinkler": rows})
    path = tmp_path / "m.json"
    cn.save_json(m, path)
    back = cn.load_json(path)
    np.testing.assert_array_equal(back.interventions["Sprinkler"], rows)
    want = np.stack([_wet_given_do_sprinkler(s) for s in rows])              # (n, 2)
    for model in (m, back):
        got = guarded(model.query, "Wet")
        assert got.batched and got.probs.shape == (4, 2)
        assert_allclose(got.probs, want, rtol=0, atol=1e-12)
    assert cn.to_json(back) == cn.to_json(m)


def test_a_per_row_do_on_a_real_node_round_trips_and_matches_the_linear_algebra():
    m = make_linear_gaussian().do({"X": np.array([0.0, 1.0, -2.0])})
    back = cn.from_json(cn.to_json(m))
    got = guarded(back.query, "Y")
    # Y = 1 + 1.5 x - 0.7 Z + e, Z ~ N(0.5, 1), e ~ N(0, 0.5^2)
    assert_allclose(got.mean[:, 0], 1.0 + 1.5 * np.array([0.0, 1.0, -2.0]) - 0.7 * 0.5, rtol=0, atol=1e-12)
    assert_allclose(got.cov[0, 0], 0.7 ** 2 + 0.5 ** 2, rtol=0, atol=1e-12)


def test_a_per_row_do_whose_length_disagrees_with_the_evidence_is_refused():
    m = make_sprinkler().do({"Sprinkler": np.array([0, 1, 1])})
    err = guarded(m.query, "Wet", evidence={"Rain": np.array([0, 1])})
    assert isinstance(err, EvidenceError) and "do on 'Sprinkler': 3" in str(err) and "2" in str(err)


# -- the result objects' constructors, through guarded (hypothesis) -----------------------------------------------

_floats = st.one_of(st.floats(-3.0, 3.0), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 0.5, 1.0]))


@settings(max_examples=150, deadline=None)
@given(st.lists(_floats, min_size=1, max_size=6), st.integers(1, 3), st.booleans())
def test_discrete_distribution_constructor_is_guarded(values, k, batched):
    probs = np.asarray(values)
    states = (tuple(range(k)),)
    out = guarded(DiscreteDistribution, ("A",), probs.reshape(-1, k) if batched and probs.size % k == 0 else probs,
                  states, batched=batched)
    if not isinstance(out, CausalNetError):                     # accepted: a distribution (the oracle is the rule)
        p = out.probs.reshape(-1, k)
        assert np.all(p >= -1e-6) and np.allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-6)


@settings(max_examples=150, deadline=None)
@given(st.lists(_floats, min_size=4, max_size=4), st.lists(_floats, min_size=2, max_size=2))
def test_gaussian_constructor_is_guarded(cov, mean):
    out = guarded(Gaussian, ("X", "Y"), mean, np.reshape(cov, (2, 2)))
    if not isinstance(out, CausalNetError):
        assert np.linalg.eigvalsh(out.cov).min() >= -1e-8 * max(1.0, np.abs(out.cov).max())
        assert np.all(np.isfinite(out.sample(4, seed=0)))


@settings(max_examples=100, deadline=None)
@given(st.lists(_floats, min_size=1, max_size=4))
def test_other_result_constructors_are_guarded(weights):
    w = np.asarray(weights)
    guarded(EmpiricalDistribution, ("X",), {"X": np.arange(w.size, dtype=float)}, w)
    guarded(GaussianMixture, ("X",), w, np.zeros((w.size, 1)), np.ones((w.size, 1, 1)))
    guarded(cn.Cauchy, w, np.abs(w))
