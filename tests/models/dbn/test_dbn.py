"""DBN: the interface algorithm against the unrolled model's generic engine, pyAgrum and hand computations."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import EvidenceError, GraphError, ModelError
from causalnet.inference.discrete import discrete_network
from causalnet.io.agrum import to_agrum


def _cpt(rng, parents, cards, k):
    table = rng.dirichlet(np.ones(k), size=tuple(cards)) if cards else rng.dirichlet(np.ones(k))
    return cn.CPT(parents, table) if parents else cn.Categorical(table)


def random_dbn(seed, k=2):
    """H1, H2 hidden (temporal links, H1 -> H2 within a slice), O1 | H1, O2 | H1, H2, O2[t-1]; cards k, 3, 2, k."""
    rng = np.random.default_rng(seed)
    init = {"H1": _cpt(rng, [], [], k), "H2": _cpt(rng, ["H1"], [k], 3),
            "O1": _cpt(rng, ["H1"], [k], 2), "O2": _cpt(rng, ["H1", "H2"], [k, 3], k)}
    trans = {"H1": _cpt(rng, ["H1[t-1]", "H2[t-1]"], [k, 3], k), "H2": _cpt(rng, ["H1", "H2[t-1]"], [k, 3], 3),
             "O1": _cpt(rng, ["H1"], [k], 2), "O2": _cpt(rng, ["H2", "O2[t-1]"], [3, k], k)}
    return cn.DBN(init, trans)


EVIDENCE = {"O1": [0, 1, -1, 1, 0], "O2": [1, -1, 0, 1, -1]}


def generic(model, node, evidence=None):
    """The generic discrete engine's (variable elimination) posterior: the oracle, bypassing the DBN engine."""
    probs, log_e = discrete_network(model).query([node], evidence or {})
    return probs, log_e


def _step_evidence(ev):
    return {f"{v}[{t}]": int(x) for v, seq in ev.items() for t, x in enumerate(seq) if x >= 0}


def test_interface_and_variables():
    dbn = random_dbn(0)
    assert dbn.interface == ("H1", "H2", "O2")
    assert set(dbn.variables) == {"H1", "H2", "O1", "O2"}
    assert dbn.variables.index("H1") < dbn.variables.index("H2")


@pytest.mark.parametrize("seed", [0, 1])
def test_smooth_equals_generic_engine_on_unrolled_model(seed):
    dbn = random_dbn(seed)
    T = 5
    post = dbn.smooth(EVIDENCE, T)
    model = dbn.unroll(T)
    ev = _step_evidence(EVIDENCE)
    for v in dbn.variables:
        for t in range(T):
            if f"{v}[{t}]" in ev:                       # observed: a point mass
                assert_allclose(post.probs[v][t], np.eye(len(post.probs[v][t]))[ev[f"{v}[{t}]"]])
                continue
            ref = generic(model, f"{v}[{t}]", ev)[0]
            assert_allclose(post.probs[v][t], ref, rtol=0, atol=1e-12)
    # log P(evidence): the generic engine's log_evidence
    assert_allclose(post.log_evidence, generic(model, "H1[0]", ev)[1], rtol=1e-12)


def test_filter_equals_truncated_unrolled_model():
    dbn = random_dbn(2)
    T = 5
    filt = dbn.filter(EVIDENCE, T)
    ev = _step_evidence(EVIDENCE)
    for t in range(T):
        model = dbn.unroll(t + 1)
        seen = {k: x for k, x in ev.items() if int(k.split("[")[1][:-1]) <= t}
        for v in dbn.variables:
            if f"{v}[{t}]" in seen:
                continue
            ref = generic(model, f"{v}[{t}]", seen)[0]
            assert_allclose(filt.probs[v][t], ref, rtol=0, atol=1e-12)


def test_smooth_and_filter_equal_pyagrum_lazy_propagation():
    gum = pytest.importorskip("pyagrum")
    dbn = random_dbn(3, k=3)
    T = 6
    ev_seq = {"O1": [0, 1, 1, 0, -1, 1], "O2": [2, -1, 0, 1, 2, -1]}
    post, filt = dbn.smooth(ev_seq, T), dbn.filter(ev_seq, T)
    model = dbn.unroll(T)
    bn = to_agrum(model)
    names = {v: str(v) for v in model.nodes}
    ev = {names[k]: x for k, x in _step_evidence(ev_seq).items()}
    ie = gum.LazyPropagation(bn)
    ie.setEvidence(ev)
    ie.makeInference()
    for v in dbn.variables:
        for t in range(T):
            ref = np.asarray(ie.posterior(names[f"{v}[{t}]"]).toarray())
            assert_allclose(post.probs[v][t], ref, rtol=0, atol=1e-10)
    last = {names[k]: x for k, x in _step_evidence(ev_seq).items()}
    ie2 = gum.LazyPropagation(bn)
    ie2.setEvidence({k: x for k, x in last.items() if int(k.rsplit("[", 1)[1].rstrip("]")) <= 2})
    ie2.makeInference()
    ref = np.asarray(ie2.posterior(names["H2[2]"]).toarray())
    assert_allclose(filt.probs["H2"][2], ref, rtol=0, atol=1e-10)


def test_pgmpy_1638_forward_query():
    # the structure of pgmpy issue #1638 (A[0] -> A[1], A[0] -> B[0], A[1] -> B[1], B[0] -> B[1]);
    # P(B[1] | A[0] = a) by hand: sum_{a1, b0} P(a1 | a) P(b0 | a) P(B[1] | a1, b0)
    pa = [0.5, 0.5]
    pb_a = np.array([[0.8, 0.2], [0.3, 0.7]])
    pa_a = np.array([[0.6, 0.4], [0.1, 0.9]])
    pb_ab = np.array([[[0.9, 0.1], [0.4, 0.6]], [[0.7, 0.3], [0.2, 0.8]]])   # (A[t], B[t-1], B[t])
    dbn = cn.DBN(initial={"A": cn.Categorical(pa), "B": cn.CPT(["A"], pb_a)},
                 transition={"A": cn.CPT(["A[t-1]"], pa_a), "B": cn.CPT(["A", "B[t-1]"], pb_ab)})
    for a in (0, 1):
        hand = np.einsum("i,j,ijk->k", pa_a[a], pb_a[a], pb_ab)
        got = dbn.query("B[1]", evidence={"A[0]": a})
        assert_allclose(got.probs, hand, rtol=0, atol=1e-14)
        assert got.method.startswith("exact (DBN interface")


def test_do_over_time_equals_mutilated_unrolled_model():
    dbn = random_dbn(4)
    T = 5
    do = {"H1[2]": 1, "O2[3]": 0}
    ev = {"O1[0]": 1, "O1[4]": 0, "O2[4]": 1}
    post = dbn.smooth(ev, T, do=do)
    model = dbn.unroll(T).do(do)
    for v in dbn.variables:
        for t in range(T):
            if f"{v}[{t}]" in ev or f"{v}[{t}]" in do:
                continue
            ref = generic(model, f"{v}[{t}]", ev)[0]
            assert_allclose(post.probs[v][t], ref, rtol=0, atol=1e-12)
    q = dbn.query("H2[4]", evidence=ev, do=do)
    assert_allclose(q.probs, generic(model, "H2[4]", ev)[0], rtol=0, atol=1e-12)


def test_policy_equals_do_dict():
    dbn = random_dbn(5)
    pol = {"H1": lambda t: 0 if t in (1, 3) else None}
    a = dbn.smooth({"O1": [1, 0, 1, 1]}, 4, policy=pol)
    b = dbn.smooth({"O1": [1, 0, 1, 1]}, 4, do={"H1[1]": 0, "H1[3]": 0})
    c = dbn.smooth({"O1": [1, 0, 1, 1]}, 4, policy={"H1[1]": 0, "H1[3]": 0})
    for v in dbn.variables:
        assert_allclose(a.probs[v], b.probs[v], rtol=0, atol=1e-14)
        assert_allclose(c.probs[v], b.probs[v], rtol=0, atol=1e-14)


def test_batched_rows_equal_single_rows():
    dbn = random_dbn(6)
    rng = np.random.default_rng(0)
    O1 = rng.integers(-1, 2, size=(7, 5))
    do_rows = rng.integers(0, 2, size=7)
    post = dbn.smooth({"O1": O1}, 5, do={"H1[2]": do_rows})
    assert post.probs["H2"].shape == (7, 5, 3)
    for r in range(7):
        one = dbn.smooth({"O1": O1[r]}, 5, do={"H1[2]": int(do_rows[r])})
        for v in dbn.variables:
            assert_allclose(post.probs[v][r], one.probs[v], rtol=0, atol=1e-12)
    q = dbn.query("H1[4]", evidence={"O1[0]": O1[:, 0].clip(0)})
    assert q.probs.shape == (7, 2)


def test_predict_equals_unrolled_prior_continuation():
    dbn = random_dbn(7)
    pred = dbn.predict({"O1": [1, 0, 1]}, steps=3)
    assert pred.steps.tolist() == [3, 4, 5]
    model = dbn.unroll(6)
    for v in dbn.variables:
        for k, t in enumerate(range(3, 6)):
            ref = generic(model, f"{v}[{t}]", {"O1[0]": 1, "O1[1]": 0, "O1[2]": 1})[0]
            assert_allclose(pred.probs[v][k], ref, rtol=0, atol=1e-12)
    assert_allclose(pred["H1[4]"].probs, pred.probs["H1"][1])


def test_unrolled_model_and_counterfactual():
    dbn = random_dbn(8)
    m = dbn.unroll(4)
    assert m.dag.d_separated("H1[0]", "O1[3]", given={"H1[2]", "H2[2]", "O2[2]"})
    assert not m.dag.d_separated("H1[0]", "O1[3]", given={"H1[2]"})
    cf = dbn.counterfactual("O1[3]", evidence={"O1[1]": 1, "H1[2]": 0}, do={"H1[2]": 1})
    ref = m.counterfactual("O1[3]", evidence={"O1[1]": 1, "H1[2]": 0}, do={"H1[2]": 1})
    assert_allclose(cf.probs, ref.probs)
    assert "twin" in cf.method


def linear_gaussian_dbn():
    return cn.DBN(
        initial={"Z": cn.LinearGaussian(sigma=1.0), "U": cn.LinearGaussian(["Z"], [0.5], sigma=0.7),
                 "Y": cn.LinearGaussian(["Z", "U"], [1.0, -0.3], sigma=0.5)},
        transition={"Z": cn.LinearGaussian(["Z[t-1]", "U[t-1]"], [0.8, 0.2], bias=0.1, sigma=0.3),
                    "U": cn.LinearGaussian(["Z"], [0.5], sigma=0.7),
                    "Y": cn.LinearGaussian(["Z", "U"], [1.0, -0.3], sigma=0.5)})


@pytest.mark.parametrize("smooth", [True, False])
def test_linear_gaussian_kalman_equals_joint_gaussian_of_unrolled_model(smooth):
    dbn = linear_gaussian_dbn()
    ys = [0.3, -0.2, 1.1, 0.4]
    do = {"U[1]": 2.0}
    post = dbn.smooth({"Y": ys}, 4, do=do) if smooth else dbn.filter({"Y": ys}, 4, do=do)
    assert post.method.startswith("exact (DBN Kalman")
    for t in range(4):
        T = 4 if smooth else t + 1
        ev = {f"Y[{s}]": ys[s] for s in range(T)}
        model = dbn.unroll(T)
        model = model.do({k: v for k, v in do.items() if int(k[2]) < T})
        ref = model.query([f"Z[{t}]", f"U[{t}]"] if t != 1 else [f"Z[{t}]"], evidence=ev, method="exact")
        assert_allclose(post.means["Z"][t], ref.mean[0], rtol=0, atol=1e-12)
        assert_allclose(post.variances["Z"][t], ref.cov[0, 0], rtol=0, atol=1e-12)
        if t != 1:
            assert_allclose(post.means["U"][t], ref.mean[1], rtol=0, atol=1e-12)
    # log P(evidence): the joint Gaussian of the Y's on the mutilated unrolled model
    from scipy.stats import multivariate_normal

    joint = dbn.unroll(4).do(do).query([f"Y[{s}]" for s in range(4)])
    assert_allclose(post.log_evidence, multivariate_normal(joint.mean, joint.cov).logpdf(ys), rtol=1e-10)


def test_linear_gaussian_batched_rows_and_fallback():
    dbn = linear_gaussian_dbn()
    Y = np.array([[0.3, np.nan, 1.1], [-0.5, 0.2, np.nan]])
    post = dbn.smooth({"Y": Y}, 3)
    assert post.means["Z"].shape == (2, 3)
    for r in range(2):
        ev = {f"Y[{t}]": Y[r, t] for t in range(3) if not np.isnan(Y[r, t])}
        ref = dbn.unroll(3).query("Z[2]", evidence=ev)
        assert_allclose(post.means["Z"][r, 2], ref.mean[0], atol=1e-12)
    q = dbn.query("Z[2]", evidence={"Y[0]": 0.3}, do={"Z[1]": 1.0})
    assert_allclose(np.ravel(q.mean), [0.8 * 1.0 + 0.2 * 0.5 * 1.0 + 0.1], atol=1e-12)
    # a set variable that is also observed: singular innovation, answered on the unrolled model
    odd = dbn.smooth({"U[1]": 2.0, "Y[2]": 0.5}, 3, do={"U[1]": 2.0})
    assert "unrolled model" in odd.method
    ref = dbn.unroll(3).do({"U[1]": 2.0}).query("Z[2]", evidence={"U[1]": 2.0, "Y[2]": 0.5})
    assert_allclose(odd["Z[2]"].mean, ref.mean)


def test_sample_and_fit_recover_parameters():
    dbn = random_dbn(9)
    data = dbn.sample(30, 400, seed=1)
    assert data["H1"].shape == (400, 30)
    fitted = dbn.fit(data)
    assert fitted.fit_info["method"] == "mle"
    # the MLE is the normalised count: compare with counts computed here
    H1, H2 = data["H1"][:, 1:], data["H2"][:, :-1]
    prev1 = data["H1"][:, :-1]
    counts = np.zeros((2, 3, 2))
    np.add.at(counts, (prev1.ravel(), H2.ravel(), H1.ravel()), 1)
    assert_allclose(fitted.transition["H1"].table, counts / counts.sum(-1, keepdims=True), atol=1e-12)
    assert np.abs(fitted.transition["H1"].table - dbn.transition["H1"].table).max() < 0.05


def test_em_non_decreasing_with_hidden_variable():
    dbn = random_dbn(10)
    data = dbn.sample(12, 60, seed=2)
    obs = {"O1": data["O1"], "O2": data["O2"]}                   # H1, H2 hidden
    start = random_dbn(11)
    fitted = start.fit(obs, n_iter=15)
    ll = np.array(fitted.fit_info["log_likelihood"])
    assert fitted.fit_info["method"] == "em"
    assert np.all(np.diff(ll) >= -1e-8 * np.abs(ll[:-1]))
    assert ll[-1] > ll[0]
    assert_allclose(fitted.log_likelihood(obs).sum(), ll[-1], rtol=1e-10)


def test_validation_errors_name_the_node():
    ok = {"A": cn.Categorical([0.5, 0.5])}
    with pytest.raises(GraphError, match="'A'.*'Q\\[t-1\\]'"):
        cn.DBN(ok, {"A": cn.CPT(["Q[t-1]"], [[0.5, 0.5], [0.5, 0.5]])})
    with pytest.raises(GraphError, match="cycle"):
        cn.DBN({"A": cn.Categorical([0.5, 0.5]), "B": cn.Categorical([0.5, 0.5])},
               {"A": cn.CPT(["B"], [[0.5, 0.5], [0.5, 0.5]]), "B": cn.CPT(["A"], [[0.5, 0.5], [0.5, 0.5]])})
    with pytest.raises(ModelError, match="'B'.*initial"):
        cn.DBN(ok, {"A": cn.Categorical([0.5, 0.5]), "B": cn.Categorical([0.5, 0.5])})
    with pytest.raises(ModelError, match="'A'"):
        cn.DBN(ok, {"A": cn.Categorical([0.2, 0.3, 0.5])})
    with pytest.raises(GraphError, match="step 0"):
        cn.DBN({"A": cn.CPT(["A[t-1]"], [[0.5, 0.5], [0.5, 0.5]])}, ok)
    dbn = random_dbn(0)
    with pytest.raises(EvidenceError, match="'Q\\[2\\]'"):
        dbn.query("Q[2]")
    with pytest.raises(EvidenceError, match="states"):
        dbn.smooth({"O1[1]": 5}, 3)
    with pytest.raises(EvidenceError, match="zero"):
        dbn.smooth({"O1[1]": 0}, 3, do={"O1[1]": 1})


def test_to_dot_folded_and_unrolled():
    dbn = random_dbn(0)
    folded = dbn.to_dot()
    assert "slice t-1" in folded and '"H1[t-1]" -> "H1[t]"' in folded and "O1[t-1]" not in folded
    unrolled = dbn.to_dot(unrolled=3)
    assert '"H1[1]" -> "H1[2]"' in unrolled and "t = 2" in unrolled


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(1, 6), obs=st.lists(st.integers(-1, 1), min_size=6, max_size=6))
def test_filter_at_last_step_equals_smooth_and_sums_to_one(seed, T, obs):
    dbn = random_dbn(seed % 50)
    ev = {"O1": obs[:T]}
    f, s = dbn.filter(ev, T), dbn.smooth(ev, T)
    for v in dbn.variables:
        assert_allclose(f.probs[v][-1], s.probs[v][-1], rtol=0, atol=1e-12)
        assert_allclose(s.probs[v].sum(-1), 1.0, atol=1e-12)
        assert_allclose(f.probs[v].sum(-1), 1.0, atol=1e-12)
    assert_allclose(f.log_evidence, s.log_evidence, rtol=1e-12)


def test_fit_from_long_and_wide_dataframes_equals_arrays():
    pd = pytest.importorskip("pandas")
    dbn = random_dbn(15)
    data = dbn.sample(6, 40, seed=3)
    ref = dbn.fit(data)
    long = pd.DataFrame({"sequence": np.repeat(np.arange(40), 6),
                         **{v: data[v].reshape(-1) for v in dbn.variables}})
    wide = pd.DataFrame({f"{v}[{t}]": data[v][:, t] for v in dbn.variables for t in range(6)})
    for frame in (long, wide):
        got = dbn.fit(frame)
        for v in dbn.variables:
            assert_allclose(got.transition[v].table, ref.transition[v].table, atol=1e-14)
            assert_allclose(got.initial[v].table, ref.initial[v].table, atol=1e-14)


def test_fit_linear_gaussian_recovers_weights():
    dbn = linear_gaussian_dbn()
    data = dbn.sample(40, 500, seed=4)
    fitted = dbn.fit(data)
    z = fitted.transition["Z"]
    assert list(z.parents) == ["Z[t-1]", "U[t-1]"]
    # least squares on the stacked steps is the oracle
    X = np.column_stack([data["Z"][:, :-1].ravel(), data["U"][:, :-1].ravel(), np.ones(500 * 39)])
    coef = np.linalg.lstsq(X, data["Z"][:, 1:].ravel(), rcond=None)[0]
    assert_allclose(z.weights, coef[:2], atol=1e-8)
    assert_allclose(z.bias, coef[2], atol=1e-8)
    assert np.abs(np.asarray(z.weights) - [0.8, 0.2]).max() < 0.05


def test_fit_rejects_bad_sequences():
    dbn = random_dbn(0)
    with pytest.raises(EvidenceError):
        dbn.fit({"Q": np.zeros((2, 3), dtype=int)})
    with pytest.raises(cn.ShapeError):
        dbn.fit({"O1": np.zeros((2, 3), dtype=int), "O2": np.zeros((2, 4), dtype=int)})
    with pytest.raises(EvidenceError, match="states"):
        dbn.fit({"O1": np.full((2, 3), 7)})


def test_chunked_contractions_equal_one_pass(monkeypatch):
    import causalnet.models.dbn.interface as interface

    ev = {"O1": np.random.default_rng(0).integers(-1, 2, size=(5, 30))}
    whole = random_dbn(1).smooth(ev, 30)
    monkeypatch.setattr(interface, "_CHUNK_BYTES", 2000)             # a few (step, row) pairs per chunk
    chunked = random_dbn(1).smooth(ev, 30)
    for v in whole.probs:
        assert_allclose(chunked.probs[v], whole.probs[v], rtol=0, atol=1e-13)
    assert_allclose(chunked.log_evidence, whole.log_evidence, rtol=1e-13)


def test_direct_answers_name_their_question():
    """The interface and Kalman paths label their answers like the front door does (issue 22's rule)."""
    import causalnet as cn
    dbn = cn.DBN(initial={"A": cn.Categorical([0.5, 0.5], states=["off", "on"]),
                          "O": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])},
                 transition={"A": cn.CPT(["A[t-1]"], [[0.7, 0.3], [0.4, 0.6]], states=["off", "on"]),
                             "O": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
    r = dbn.query("A[4]", evidence={"O": [0, 1, -1, 0]}, do={"A[2]": 1})
    assert r.query == "P(A[4] | do(A[2]=on), O[0]=0, O[1]=1, O[3]=0)"
    unrolled = dbn.unroll(5).query("A[4]", evidence={"O[0]": 0, "O[1]": 1, "O[3]": 0}, do={"A[2]": 1})
    assert unrolled.query == r.query and abs(unrolled.probs - r.probs).max() < 1e-12
    policy = dbn.query("A[4]", evidence={"O[2]": [0, 1]}, policy={"A": lambda t: "on" if t == 1 else None})
    assert policy.query == "P(A[4] | do(A[1]=on), O[2]=<per-row>)"
    lg = cn.DBN(initial={"X": cn.LinearGaussian([], [], 0.0, 1.0)},
                transition={"X": cn.LinearGaussian(["X[t-1]"], [0.9], 0.0, 1.0)})
    assert lg.query("X[3]", evidence={"X[1]": 0.5}, do={"X[2]": 1.0}).query == "P(X[3] | do(X[2]=1), X[1]=0.5)"
