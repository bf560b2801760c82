"""Markov networks: exact VE vs brute-force enumeration and pgmpy, Bethe log Z exact on trees, loopy, Gibbs, map, sampling."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, ModelError, ResourceError


def random_mn(rng, n_vars=6, n_factors=8, max_arity=3, zeros=False):
    names = [f"V{i}" for i in range(n_vars)]
    cards = {v: int(rng.integers(2, 4)) for v in names}
    fs = []
    for _ in range(n_factors):
        vs = list(rng.choice(names, size=int(rng.integers(1, max_arity + 1)), replace=False))
        t = rng.gamma(1.0, size=[cards[v] for v in vs])
        if zeros:
            t = np.where(rng.random(t.shape) < 0.1, 0.0, t)
            t.flat[0] += 1.0
        fs.append(cn.Factor(vs, t))
    for v in names:                                      # every variable in some factor
        fs.append(cn.Factor([v], rng.gamma(2.0, size=cards[v])))
    return cn.MarkovNetwork(fs)


def brute(mn):
    """The unnormalised joint over mn.variables by broadcasting."""
    V = mn.variables
    joint = np.ones([mn.cards[v] for v in V])
    for f in mn.factors:
        perm = sorted(range(len(f.variables)), key=lambda i: V.index(f.variables[i]))
        shape = [1] * len(V)
        for i in perm:
            shape[V.index(f.variables[i])] = mn.cards[f.variables[i]]
        joint = joint * np.transpose(f.table, perm).reshape(shape)
    return joint


def brute_query(mn, targets, evidence):
    joint = brute(mn)
    V = mn.variables
    for k, s in evidence.items():
        mask = np.zeros(mn.cards[k])
        mask[s] = 1
        joint = joint * mask.reshape([-1 if v == k else 1 for v in V])
    keep = [V.index(t) for t in targets]
    p = joint.sum(axis=tuple(i for i in range(len(V)) if i not in keep))
    p = np.transpose(p, np.argsort(np.argsort(keep)))
    return p / p.sum()


@pytest.mark.parametrize("s", range(6))
def test_exact_matches_brute_force(s):
    rng = np.random.default_rng(s)
    mn = random_mn(rng, zeros=s % 2 == 1)
    assert_allclose(mn.partition_function(), brute(mn).sum(), rtol=1e-10)
    ev = {"V0": 1}
    for targets in (["V3"], ["V2", "V5"]):
        assert_allclose(mn.query(targets, evidence=ev).probs, brute_query(mn, targets, ev), atol=1e-12)
    batch = mn.query("V4", evidence={"V0": [0, 1, 1], "V1": [1, 0, 1]})
    for i, (a, b) in enumerate([(0, 1), (1, 0), (1, 1)]):
        assert_allclose(batch.probs[i], brute_query(mn, ["V4"], {"V0": a, "V1": b}), atol=1e-12)


def test_exact_matches_pgmpy_markov_network(rng):
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteMarkovNetwork as PgMarkov

    mn = random_mn(rng, n_vars=5, n_factors=6, max_arity=2)
    pg = PgMarkov()
    pg.add_nodes_from(mn.variables)
    for f in mn.factors:
        if len(f.variables) == 2:
            pg.add_edge(*f.variables)
        pg.add_factors(DiscreteFactor(list(f.variables), list(f.table.shape), f.table.reshape(-1)))
    want = VariableElimination(pg).query(["V3"], evidence={"V1": 1}, show_progress=False)
    assert_allclose(mn.query("V3", evidence={"V1": 1}).probs, want.values / want.values.sum(), atol=1e-10)


def test_bethe_log_partition_is_exact_on_a_tree_and_close_on_a_loop(rng):
    chain = cn.MarkovNetwork.from_edges({("A", "B"): rng.gamma(1, size=(2, 3)), ("B", "C"): rng.gamma(1, size=(3, 2)),
                                         ("B", "D"): rng.gamma(1, size=(3, 2))}, unary={"A": [1.0, 2.0]})
    assert_allclose(chain.log_partition_function(method="loopy", tol=1e-12), chain.log_partition_function(),
                    atol=1e-9)
    ising = cn.gallery.load("ising-10x10")
    exact, bethe = ising.log_partition_function(), ising.log_partition_function(method="loopy")
    assert abs(exact - bethe) / abs(exact) < 0.01 and exact != bethe


def test_loopy_and_gibbs_on_the_ising_grid(seed):
    ising = cn.gallery.load("ising-10x10")
    ev = {"S[0,0]": "+1", "S[9,9]": "-1"}
    exact = ising.query("S[5,5]", evidence=ev)
    bp = ising.query("S[5,5]", evidence=ev, method="loopy")
    assert bp.converged and np.abs(bp.probs - exact.probs).max() < 0.02
    g = ising.query("S[5,5]", evidence=ev, method="gibbs", n_samples=20_000, seed=seed)
    assert np.all(np.abs(g.probs - exact.probs) <= 5 * g.std_err)
    assert np.all(g.diagnostics["r_hat"] < 1.05)


def test_auto_falls_back_to_loopy_past_the_limit():
    ising = cn.gallery.load("ising-10x10")
    with cn.limits.override(max_table_bytes=2**10):
        r = ising.query("S[5,5]")
        assert "loopy belief propagation" in r.method and "max_table_bytes" in r.method
        with pytest.raises(ResourceError):
            ising.query("S[5,5]", method="exact")


def test_map_exact_and_loopy_against_enumeration(rng):
    mn = random_mn(rng, n_vars=5, n_factors=5, max_arity=2)
    joint = brute(mn)
    best = np.unravel_index(np.argmax(joint), joint.shape)
    got, logp = mn.map()
    assert tuple(got[v] for v in mn.variables) == tuple(int(b) for b in best)
    assert_allclose(logp, np.log(joint.max() / joint.sum()))
    chain = cn.MarkovNetwork.from_edges({("A", "B"): [[4.0, 1.0], [1.0, 2.0]], ("B", "C"): [[1.0, 3.0], [2.0, 1.0]]})
    assert chain.map(method="loopy")[0] == chain.map()[0]
    got, logp = chain.map(evidence={"A": [0, 1]})
    assert list(got["B"]) == [0, 1] and logp.shape == (2,)


def test_log_prob_normalises_and_sample_matches_marginals(rng, seed):
    mn = random_mn(rng, n_vars=4, n_factors=4, max_arity=2)
    grid = list(itertools.product(*[range(mn.cards[v]) for v in mn.variables]))
    lp = mn.log_prob({v: [g[i] for g in grid] for i, v in enumerate(mn.variables)})
    assert_allclose(np.exp(lp).sum(), 1.0)
    s = mn.sample(20_000, seed=seed, thin=2)
    for v in mn.variables:
        freq = np.bincount(s[v], minlength=mn.cards[v]) / 20_000
        p = mn.query(v).probs
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / 20_000) * 3 + 1e-3)   # x3: autocorrelation


def test_bayesian_network_as_markov_network(asia):
    mn = asia.to_markov_network()
    assert_allclose(mn.partition_function(), 1.0)
    ev = {"xray": "yes", "dysp": "no"}
    assert_allclose(mn.query(["lung", "tub"], evidence=ev).probs, asia.query(["lung", "tub"], evidence=ev).probs,
                    atol=1e-12)
    assert ("either", "lung") in mn.edges() or ("lung", "either") in mn.edges()
    assert ("bronc", "either") in mn.edges() or ("either", "bronc") in mn.edges()      # married parents of dysp
    fg = mn.to_factor_graph()
    assert fg.cards.size == 8 and len(fg.factors) == 8


def test_to_dot_and_render(tmp_path):
    mn = cn.MarkovNetwork.from_edges({("A", "B"): np.ones((2, 2))})
    assert mn.to_dot() == 'graph {\n  "A";\n  "B";\n  "A" -- "B";\n}\n'
    assert mn.render(tmp_path / "g.dot").read_text() == mn.to_dot()


def test_bad_input():
    with pytest.raises(ModelError, match="repeats"):
        cn.Factor(["A", "A"], np.ones((2, 2)))
    with pytest.raises(cn.ShapeError, match="axes"):
        cn.Factor(["A", "B"], np.ones(2))
    with pytest.raises(ModelError, match="nonnegative"):
        cn.Factor(["A"], [-1.0, 1.0])
    with pytest.raises(ModelError, match="states"):
        cn.MarkovNetwork([cn.Factor(["A"], [1.0, 1.0]), cn.Factor(["A"], [1.0, 1.0], states={"A": ["x", "y"]})])
    mn = cn.MarkovNetwork.from_edges({("A", "B"): [[1.0, 0.0], [0.0, 1.0]]})
    with pytest.raises(EvidenceError, match="unknown"):
        mn.query("C")
    with pytest.raises(EvidenceError, match="probability zero"):
        cn.MarkovNetwork([cn.Factor(["A", "B"], [[1.0, 0.0], [0.0, 0.0]])]).query("A", evidence={"B": 1})
    with pytest.raises(ModelError, match="method"):
        mn.query("A", method="sampling")
