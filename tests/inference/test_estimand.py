"""Evaluating estimands: on random discrete models with latent nodes, the identified formula
(which sees only the observational distribution of the observed nodes) equals the model's own
interventional answer; on data, empirical frequencies with a clear error when positivity fails."""

import itertools

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.graph.evaluation import evaluate
from causalnet.graph.identification import identify, latent_projection, with_bidirected


def random_model(seed, n_obs=6, n_lat=4, p=0.45):
    """A random discrete model: observed V0..V{n-1} in causal order, latent U_k with two observed children."""
    rng = np.random.default_rng(seed)
    obs = [f"V{i}" for i in range(n_obs)]
    edges = [(a, b) for i, a in enumerate(obs) for b in obs[i + 1:] if rng.random() < p]
    parents = {v: [a for a, b in edges if b == v] for v in obs}
    latent = []
    for k in range(n_lat):
        a, b = rng.choice(n_obs, 2, replace=False)
        parents[obs[a]].append(f"U{k}")
        parents[obs[b]].append(f"U{k}")
        latent.append(f"U{k}")
    cards = {v: int(rng.integers(2, 4)) for v in obs} | {u: 2 for u in latent}
    mechs = {u: cn.Categorical(rng.dirichlet(np.ones(2))) for u in latent}
    for v in obs:
        pc = tuple(cards[q] for q in parents[v])
        table = rng.dirichlet(np.ones(cards[v]), size=pc) if pc else rng.dirichlet(np.ones(cards[v]))
        mechs[v] = cn.CPT(parents[v], table) if pc else cn.Categorical(table)
    return cn.CausalModel(mechs, latent=latent), obs, cards


def _random_queries(obs, seed, k):
    rng = np.random.default_rng(seed)
    for _ in range(k):
        perm = [str(v) for v in rng.permutation(obs)]
        nx_, ny_, nz_ = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(0, 2))
        yield perm[:nx_], perm[nx_:nx_ + ny_], perm[nx_ + ny_:nx_ + ny_ + nz_]


def _grid(cards, nodes):
    return np.array(list(itertools.product(*[range(cards[v]) for v in nodes]))).reshape(-1, len(nodes))


@pytest.mark.parametrize("seed", range(25))
def test_identified_formula_equals_the_model(seed):
    """The backbone: every identifiable query, every treatment/condition value, to 1e-10."""
    m, obs, cards = random_model(seed)
    for xs, ys, zs in _random_queries(obs, seed, 8):
        for simplify in (True, False):
            try:
                e = identify(m.dag, ys, xs, zs, simplify=simplify)
            except cn.NotIdentifiable as err:
                forest, sub = err.hedge
                assert forest & set(xs) and sub < forest
                continue
            grid = _grid(cards, xs + zs)
            do = {v: grid[:, i] for i, v in enumerate(xs)}
            ev = {v: grid[:, len(xs) + i] for i, v in enumerate(zs)}
            want = m.query(ys, do=do, evidence=ev)
            got = e.evaluate(m, do=do, evidence=ev)
            assert got.batched and got.variables == tuple(e.outcomes)
            want_p = np.transpose(want.probs, [0] + [1 + want.variables.index(v) for v in got.variables])
            assert_allclose(got.probs, want_p, rtol=0, atol=1e-10, err_msg=f"{e.query} = {e}")


def test_some_random_queries_are_not_identifiable():
    hedges = 0
    for seed in range(10):
        m, obs, _ = random_model(seed)
        for xs, ys, zs in _random_queries(obs, seed, 8):
            try:
                identify(m.dag, ys, xs, zs)
            except cn.NotIdentifiable:
                hedges += 1
    assert hedges > 5


def frontdoor_model():
    return cn.CausalModel({
        "U": cn.Categorical([0.4, 0.6]),
        "X": cn.CPT(["U"], [[0.8, 0.2], [0.3, 0.7]], states=["no", "yes"]),
        "M": cn.CPT(["X"], [[0.9, 0.1], [0.25, 0.75]]),
        "Y": cn.CPT(["M", "U"], [[[0.7, 0.3], [0.4, 0.6]], [[0.5, 0.5], [0.1, 0.9]]]),
    }, latent=["U"])


def test_frontdoor_on_model_scalar_and_batched():
    m = frontdoor_model()
    e = identify(m.dag, "Y", "X")
    d = e.evaluate(m, do={"X": "yes"})
    assert not d.batched and d.query == "P(Y | do(X=yes))" and d.method == "identified (frontdoor adjustment)"
    assert_allclose(d.probs, m.query("Y", do={"X": "yes"}).probs, rtol=0, atol=1e-12)
    b = e.evaluate(m, do={"X": ["no", "yes", 1, 0]})
    assert b.probs.shape == (4, 2)
    assert_allclose(b.probs, m.query("Y", do={"X": np.array([0, 1, 1, 0])}).probs, rtol=0, atol=1e-12)


def test_values_from_the_query_string():
    m = frontdoor_model()
    p = m.dag.identify("P(Y=1 | do(X=yes))").evaluate(m)
    assert p == pytest.approx(m.query("Y", do={"X": "yes"})[1], abs=1e-12)
    d = m.dag.identify("P(Y | do(X=no), M=1)").evaluate(m)
    assert_allclose(d.probs, m.query("Y", do={"X": "no"}, evidence={"M": 1}).probs, rtol=0, atol=1e-12)


def test_on_data_converges_to_the_model():
    m = frontdoor_model()
    df = m.sample(200_000, seed=0).to_pandas()
    e = identify(m.dag, "Y", "X")
    got = e.evaluate(df[["X", "M", "Y"]], do={"X": ["no", "yes"]})
    assert_allclose(got.probs, m.query("Y", do={"X": np.array([0, 1])}).probs, atol=0.01)


def test_data_with_plain_integer_columns_matches_manual_backdoor():
    df = pd.DataFrame({"Z": [0, 0, 1, 1, 1, 0, 1, 0], "X": [0, 1, 0, 1, 1, 0, 1, 1], "Y": [0, 1, 1, 1, 0, 0, 1, 1]})
    e = identify(cn.DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")]), "Y", "X")
    got = e.evaluate(df, do={"X": 1})
    want = sum(df[(df.X == 1) & (df.Z == z)].Y.mean() * (df.Z == z).mean() for z in (0, 1))
    assert got[1] == pytest.approx(want, abs=1e-12)


def test_zero_probability_conditioning_is_an_evidence_error():
    df = pd.DataFrame({"Z": [0, 0, 1, 1], "X": [0, 1, 1, 1], "Y": [0, 1, 1, 0]})   # X=0 never with Z=1
    e = identify(cn.DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")]), "Y", "X")
    with pytest.raises(cn.EvidenceError, match="probability zero.*positivity"):
        e.evaluate(df, do={"X": 0})
    assert e.evaluate(df, do={"X": 1})[1] == pytest.approx(0.5 * 1 + 0.5 * 0.5)


def test_zero_weight_terms_do_not_poison_the_sum():
    # P(Z=1) = 0: P(Y | X, Z=1) is undefined but weighted by 0
    df = pd.DataFrame({"Z": pd.Categorical([0, 0, 0, 0], categories=[0, 1]),
                       "X": [0, 1, 0, 1], "Y": [0, 1, 1, 1]})
    e = identify(cn.DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")]), "Y", "X")
    assert e.evaluate(df, do={"X": 0})[1] == pytest.approx(0.5)


def test_bad_inputs():
    m = frontdoor_model()
    e = identify(m.dag, "Y", "X")
    with pytest.raises(cn.EvidenceError, match="needs a value for treatment 'X'"):
        e.evaluate(m)
    with pytest.raises(cn.EvidenceError, match="no state 'maybe'"):
        e.evaluate(m, do={"X": "maybe"})
    with pytest.raises(cn.EvidenceError, match="neither a treatment"):
        e.evaluate(m, do={"X": 1, "M": 0})
    with pytest.raises(cn.EvidenceError, match="CausalModel or a pandas DataFrame"):
        e.evaluate([1, 2, 3], do={"X": 1})
    with pytest.raises(cn.EvidenceError, match="no column 'M'"):
        e.evaluate(pd.DataFrame({"X": [0, 1], "Y": [1, 0]}), do={"X": 1})
    with pytest.raises(cn.EvidenceError, match="an Estimand"):
        evaluate("P(Y | do(X))", m)  # the function refuses a non-estimand


def test_bidirected_helper_model_equivalence():
    # the same front-door graph written with a bidirected edge identifies the same way
    g = with_bidirected(cn.DAG([("X", "M"), ("M", "Y")]), [("X", "Y")])
    assert latent_projection(g).bidirected_edges == latent_projection(frontdoor_model().dag).bidirected_edges
    assert str(identify(g, "Y", "X")) == str(identify(frontdoor_model().dag, "Y", "X"))


# -- do-calculus rules, checked numerically on the model -------------------------------------------

def _rule_sides(m, rule, y, x, z, w, cards):
    grid = _grid(cards, x + z + w)
    col = {v: grid[:, i] for i, v in enumerate(x + z + w)}
    pick = lambda names: {v: col[v] for v in names}  # noqa: E731
    if rule == 1:
        return m.query(y, do=pick(x), evidence=pick(z + w)), m.query(y, do=pick(x), evidence=pick(w))
    if rule == 2:
        return m.query(y, do=pick(x + z), evidence=pick(w)), m.query(y, do=pick(x), evidence=pick(z + w))
    return m.query(y, do=pick(x + z), evidence=pick(w)), m.query(y, do=pick(x), evidence=pick(w))


@pytest.mark.parametrize("seed", range(12))
def test_do_calculus_rules_hold_numerically(seed):
    from causalnet.graph.identification import do_calculus

    m, obs, cards = random_model(seed, n_obs=5, n_lat=2)
    rng = np.random.default_rng(seed)
    applied = 0
    for _ in range(15):
        perm = [str(v) for v in rng.permutation(obs)]
        k = int(rng.integers(0, 2))
        y, x, z, w = [perm[0]], perm[1:1 + k], [perm[1 + k]], perm[2 + k:2 + k + int(rng.integers(0, 2))]
        for rule in (1, 2, 3):
            if do_calculus(m.dag, rule, y, x, z, w):
                applied += 1
                a, b = _rule_sides(m, rule, y, x, z, w, cards)
                pa, pb = np.broadcast_arrays(a.probs, b.probs)   # one side may have no batch
                assert_allclose(pa, pb, rtol=0, atol=1e-10, err_msg=f"rule {rule}: {y} {x} {z} {w}")
    assert applied > 0


BAD_VALUES = [None, "maybe", 7, -1, 1.5, [0, 1, 2, 5], [[0, 1]], np.array([np.nan]), [], {"a": 1}, True]


@pytest.mark.parametrize("value", BAD_VALUES, ids=[repr(v)[:20] for v in BAD_VALUES])
def test_bad_values_give_typed_errors(value):
    from conftest import guarded

    m = frontdoor_model()
    e = identify(m.dag, "Y", "X")
    guarded(e.evaluate, m, do={"X": value})
    guarded(e.evaluate, m, do={"X": [0, 1]}, evidence={"M": value})
    guarded(identify, m.dag, value, "X")
    guarded(identify, m.dag, "Y", value)


def test_value_arrays_of_different_lengths():
    m = frontdoor_model()
    e = identify(m.dag, "P(Y | do(X), M)")
    with pytest.raises(cn.EvidenceError, match="different lengths"):
        e.evaluate(m, do={"X": [0, 1]}, evidence={"M": [0, 1, 1]})
