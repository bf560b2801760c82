"""The DBN interface engine in the front door: recognised shapes, answers equal to the generic engine."""

import numpy as np
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.discrete import discrete_network
from causalnet.models.dbn.engine import DBNEngine, dbn_shape
from causalnet.models.dbn.interface import METHOD
from causalnet.testing import Case, check_engine

from .test_dbn import random_dbn


def test_unrolled_model_queries_reach_the_interface_engine():
    dbn = random_dbn(12)
    m = dbn.unroll(7)
    ev = {"O1[1]": 1, "O2[6]": 0, "O1[4]": 0}
    q = m.query("H2[3]", evidence=ev)
    assert q.method == METHOD
    ref, log_e = discrete_network(m).query(["H2[3]"], ev)
    assert_allclose(q.probs, ref, rtol=0, atol=1e-12)
    assert_allclose(q.log_evidence, log_e, rtol=1e-12)


def test_do_on_the_unrolled_model_is_recognised():
    dbn = random_dbn(13)
    md = dbn.unroll(6).do({"H1[2]": 1, "O2[4]": np.array([0, 1, 1])})
    assert dbn_shape(md) is not None
    ev = {"O1[5]": np.array([0, 1, 0])}
    q = md.query("H2[5]", evidence=ev)
    assert q.method == METHOD
    ref, _ = discrete_network(md).query(["H2[5]"], ev)
    assert_allclose(q.probs, ref, rtol=0, atol=1e-12)


def test_hand_written_chain_recognised_and_non_repeating_one_refused():
    stay = [[0.9, 0.1], [0.2, 0.8]]
    mechs = {"Z[0]": cn.Categorical([0.5, 0.5])}
    for t in range(1, 5):
        mechs[f"Z[{t}]"] = cn.CPT([f"Z[{t - 1}]"], stay)
    chain = cn.CausalModel(mechs)
    assert dbn_shape(chain) is not None
    q = chain.query("Z[4]", evidence={"Z[0]": 0})
    assert q.method == METHOD
    assert_allclose(q.probs, (np.linalg.matrix_power(np.array(stay), 4))[0], atol=1e-14)
    mechs["Z[3]"] = cn.CPT(["Z[2]"], [[0.5, 0.5], [0.5, 0.5]])          # step 3 differs: not a DBN
    other = cn.CausalModel(mechs)
    assert dbn_shape(other) is None
    assert other.query("Z[4]", evidence={"Z[0]": 0}).method != METHOD


def test_engine_contract():
    dbn = random_dbn(14)
    m = dbn.unroll(3)
    check_engine(DBNEngine(), [Case("smoothing", m, "query", "H1[1]", {"O1[2]": 1, "O2[0]": 0}),
                               Case("do", m, "query", "O2[2]", {"O1[0]": 1}, {"H2[1]": 2}),
                               Case("not a DBN", cn.gallery.load("sprinkler"), "query", "Wet")])
