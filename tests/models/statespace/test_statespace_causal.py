"""StateSpace as a causal model: the unrolled model, the Kalman engine equal to the generic engines, counterfactuals."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from statespace_oracles import joint_gaussian, random_model

import causalnet as cn
from causalnet.mechanisms.gaussian import LinearGaussian

KALMAN = "exact (Kalman filter and Rauch–Tung–Striebel smoother)"


def plain(model):
    """The same unrolled model with fresh mechanism objects: the Kalman engine does not recognise it."""
    return cn.CausalModel({v: LinearGaussian(m.parents, m.weights, bias=m.bias, sigma=m.sigma)
                           for v, m in model.mechanisms.items()})


@pytest.fixture
def tracker(rng):
    return random_model(rng, 2, 2)


def test_unrolled_model_is_the_joint_gaussian(tracker):
    T = 4
    m = tracker.to_model(T)
    nodes = [f"Z{i}[{t}]" for t in range(T) for i in range(2)] + [f"Y{i}[{t}]" for t in range(T) for i in range(2)]
    g = plain(m).query(nodes, method="exact")
    mean, cov = joint_gaussian(tracker, T)
    assert "linear-Gaussian" in g.method or "Gaussian" in g.method
    assert_allclose(g.mean, mean, rtol=0, atol=1e-10)
    assert_allclose(g.cov, cov, rtol=0, atol=1e-10)
    assert m.dag.d_separated("Z0[0]", "Z0[3]", given={"Z0[2]", "Z1[2]"})
    assert not m.dag.d_separated("Z0[0]", "Z0[3]", given={"Z0[2]"})


def test_query_with_evidence_equals_the_generic_engine(tracker, rng):
    _, y = tracker.sample(6, seed=rng)
    y[2] = np.nan
    y[4, 1] = np.nan
    targets = ["Z[1]", "Z1[4]", "Y1[4]", "Y[2]"]
    got = tracker.query(targets, evidence=y)
    assert got.method == KALMAN
    ev = {f"Y{i}[{t}]": y[t, i] for t in range(6) for i in range(2) if not np.isnan(y[t, i])}
    nodes = ["Z0[1]", "Z1[1]", "Z1[4]", "Y1[4]", "Y0[2]", "Y1[2]"]
    ref = plain(tracker.to_model(6)).query(nodes, evidence=ev, method="exact")
    assert got.variables == tuple(nodes)
    assert_allclose(got.mean, ref.mean, rtol=0, atol=1e-9)
    assert_allclose(got.cov, ref.cov, rtol=0, atol=1e-9)


def test_do_on_a_state_equals_the_mutilated_unrolled_model(tracker, rng):
    _, y = tracker.sample(8, seed=rng)
    do = {"Z[3]": [0.5, -1.0]}
    got = tracker.query(["Z[1]", "Z[5]", "Y1[6]"], evidence=y[:6], do=do)
    assert got.method == KALMAN
    ev = {f"Y{i}[{t}]": y[t, i] for t in range(6) for i in range(2)}
    nodes = ["Z0[1]", "Z1[1]", "Z0[5]", "Z1[5]", "Y1[6]"]
    ref = plain(tracker.to_model(7)).query(nodes, evidence=ev, do={"Z0[3]": 0.5, "Z1[3]": -1.0}, method="exact")
    assert_allclose(got.mean, ref.mean, rtol=0, atol=1e-9)
    assert_allclose(got.cov, ref.cov, rtol=0, atol=1e-9)
    # the do cuts Z[3] from its past: later states ignore the evidence before step 3 ...
    a = tracker.query("Z[5]", evidence={"Y[4]": y[4], "Y[0]": y[0]}, do=do)
    b = tracker.query("Z[5]", evidence={"Y[4]": y[4], "Y[0]": y[0] + 10.0}, do=do)
    assert_allclose(a.mean, b.mean, rtol=0, atol=1e-12)
    # ... and the earlier ones ignore the evidence after it
    c = tracker.query("Z[1]", evidence={"Y[1]": y[1], "Y[5]": y[5]}, do=do)
    e = tracker.query("Z[1]", evidence={"Y[1]": y[1]})
    assert_allclose(c.mean, e.mean, rtol=0, atol=1e-12)


def test_batched_evidence_and_per_row_do(tracker, rng):
    _, y = tracker.sample(5, 3, seed=rng)                                     # (3, 5, 2)
    ev = {f"Y[{t}]": y[:, t] for t in range(5)}
    rows = rng.normal(size=(3, 2))
    got = tracker.query("Z[4]", evidence=ev, do={"Z[2]": rows})
    assert got.mean.shape == (3, 2) and got.method == KALMAN
    for i in range(3):
        one = tracker.query("Z[4]", evidence={f"Y[{t}]": y[i, t] for t in range(5)}, do={"Z[2]": rows[i]})
        assert_allclose(got.mean[i], one.mean, rtol=0, atol=1e-10)
        assert_allclose(got.cov, one.cov, rtol=0, atol=1e-10)


def test_questions_outside_the_kalman_shape_go_to_the_generic_engine(tracker, rng):
    _, y = tracker.sample(4, seed=rng)
    part = tracker.query("Z1[3]", evidence={"Y[0]": y[0]}, do={"Z0[2]": 1.0})      # one component of a slice
    assert part.method != KALMAN
    ref = plain(tracker.to_model(4)).query("Z1[3]", evidence={"Y0[0]": y[0, 0], "Y1[0]": y[0, 1]},
                                           do={"Z0[2]": 1.0}, method="exact")
    assert_allclose(part.mean, ref.mean, rtol=0, atol=1e-10)
    state_ev = tracker.query("Z[3]", evidence={"Z0[1]": 0.3, "Y[2]": y[2]})    # evidence on a state
    assert state_ev.method != KALMAN


def test_counterfactual_is_the_shifted_factual(tracker, rng):
    """With the whole state set at step t, Z*[s] = Z[s] + A^(s-t) (v - Z[t]) for s > t (the same noises)."""
    _, y = tracker.sample(6, seed=rng)
    ev = {f"Y[{t}]": y[t] for t in range(6)}
    v = np.array([1.0, -2.0])
    cf = tracker.counterfactual("Z[5]", evidence=ev, do={"Z[2]": v})
    joint = tracker.query(["Z[5]", "Z[2]"], evidence=ev)
    A3 = np.linalg.matrix_power(tracker.transition, 3)
    L = np.hstack([np.eye(2), -A3])                                            # Z[5] - A^3 Z[2]
    assert_allclose(cf.mean, joint.mean[:2] + A3 @ (v - joint.mean[2:]), rtol=0, atol=1e-8)
    assert_allclose(cf.cov, L @ joint.cov @ L.T, rtol=0, atol=1e-8)
    same = tracker.counterfactual("Z[4]", evidence={"Y[3]": y[3]}, do={"Y[3]": y[3]})
    fact = tracker.query("Z[4]", evidence={"Y[3]": y[3]})
    assert_allclose(same.mean, fact.mean, rtol=0, atol=1e-9)


def test_scalar_model_names_and_query_errors():
    ss = cn.StateSpace([[0.9]], [[1.0]], [[0.1]], [[0.5]], [0.0], [[1.0]])
    m = ss.to_model(3)
    assert sorted(m.dag.nodes) == sorted(["Z[0]", "Z[1]", "Z[2]", "Y[0]", "Y[1]", "Y[2]"])
    g = ss.query("Z[2]", do={"Z[1]": 2.0})
    assert_allclose(g.mean, [1.8])
    assert_allclose(g.cov, [[0.1]])
    with pytest.raises(cn.EvidenceError, match="names no state or observation"):
        ss.query("X[2]")
    with pytest.raises(cn.EvidenceError, match="not a time-indexed name"):
        ss.query("Z")
    named = cn.StateSpace(np.eye(2), np.eye(2), np.eye(2), np.eye(2), [0, 0], np.eye(2),
                          state_names=["pos", "vel"], observation_names=["gps", "radar"])
    assert "vel[1]" in named.to_model(2).dag.nodes
    with pytest.raises(cn.EvidenceError, match=r"must be a scalar, a \(2,\) vector"):
        named.query("Z[1]", do={"Z[0]": [1.0, 2.0, 3.0]})


def test_kalman_engine_passes_the_conformance_checks(tracker, rng):
    from causalnet.models.statespace.engine import KalmanEngine
    from causalnet.testing import Case, check_engine

    m = tracker.to_model(4)
    _, y = tracker.sample(4, seed=rng)
    check_engine(KalmanEngine(), [
        Case("smoothed state", m, "query", ["Z0[1]", "Z1[2]"], evidence={"Y0[0]": y[0, 0], "Y1[3]": y[3, 1]}),
        Case("state under do", m, "query", "Z1[3]", evidence={"Y0[3]": y[3, 0]}, do={"Z0[1]": 0.5, "Z1[1]": 0.0}),
        Case("not an unrolled state-space model", plain(m), "query", "Z0[2]"),
    ])


def test_controls_enter_the_unrolled_model_and_the_kalman_engine(rng):
    ss = random_model(rng, 2, 1, control=1)
    u = rng.normal(size=(5, 1))
    _, y = ss.sample(6, seed=rng, controls=u)
    got = ss.query("Z[4]", evidence=y[:4], do={"Z[2]": [1.0, 0.0]}, controls=u)
    assert got.method == KALMAN
    ev = {f"Y[{t}]": y[t, 0] for t in range(4)}
    ref = plain(ss.to_model(5, u[:4])).query(["Z0[4]", "Z1[4]"], evidence=ev, do={"Z0[2]": 1.0, "Z1[2]": 0.0},
                                             method="exact")
    assert_allclose(got.mean, ref.mean, rtol=0, atol=1e-10)
    assert_allclose(got.cov, ref.cov, rtol=0, atol=1e-10)
    with pytest.raises(cn.ModelError, match="pass controls="):
        ss.query("Z[4]")


def test_do_on_an_observation_slice_equals_the_generic_engine(tracker, rng):
    _, y = tracker.sample(5, seed=rng)
    got = tracker.query(["Z[3]", "Y[3]"], evidence={"Y[1]": y[1], "Y[4]": y[4]}, do={"Y[3]": [0.5, -0.5]})
    assert got.method == KALMAN
    nodes = ["Z0[3]", "Z1[3]", "Y0[3]", "Y1[3]"]
    ev = {"Y0[1]": y[1, 0], "Y1[1]": y[1, 1], "Y0[4]": y[4, 0], "Y1[4]": y[4, 1]}
    ref = plain(tracker.to_model(5)).query(nodes, evidence=ev, do={"Y0[3]": 0.5, "Y1[3]": -0.5}, method="exact")
    assert_allclose(got.mean, ref.mean, rtol=0, atol=1e-10)
    assert_allclose(got.cov, ref.cov, rtol=0, atol=1e-10)
    assert_allclose(got.mean[2:], [0.5, -0.5])
