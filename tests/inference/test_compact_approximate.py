"""The approximate engines on NoisyOR/NoisyMax/Logistic nodes never expand them: closed-form loopy messages
(equal to the expanded table's on small models, to an analytic answer with 30 parents), Gibbs and importance
sampling from the structural conditional (within 5 standard errors of brute force)."""

import numpy as np
import pytest
from discrete_networks import brute_joint
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import ResourceError
from causalnet.inference import approximate
from causalnet.inference.approximate import model_factor_graph
from causalnet.inference.discrete import discrete_network
from causalnet.inference.loopy import propagate
from causalnet.mechanisms.compact import Compact


def compact_network(rng, loopy=True):
    """Roots A, B, C; NoisyMax, NoisyOR and Logistic children sharing parents (loops when `loopy`)."""
    mechs = {"A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.2, 0.5, 0.3]), "C": cn.Categorical([0.7, 0.3])}
    mechs["MAX"] = cn.NoisyMax(["A", "B", "C"], [rng.dirichlet(np.ones(3), size=2), rng.dirichlet(np.ones(3), size=3),
                                                 rng.dirichlet(np.ones(3), size=2)], [0.8, 0.15, 0.05])
    mechs["M2"] = cn.NoisyMax(["MAX", "A"] if loopy else ["MAX"],
                              [rng.dirichlet(np.ones(2), size=3)] + ([rng.dirichlet(np.ones(2), size=2)] if loopy else []),
                              [0.9, 0.1])
    if loopy:
        mechs["SOFT"] = cn.Logistic(["A", "B"], [[0.0, 0.0], [1.0, -0.5], [-0.3, 0.8]], bias=[0.0, 0.2, -0.1])
        mechs["OR"] = cn.NoisyOR(["A", "B", "C"], [0.7, 0.5, 0.9], leak=0.05, on={"A": 1, "B": 2, "C": 1})
    return cn.CausalModel(mechs)


def brute(model, target, evidence):
    """P(target | evidence) by enumerating the joint of the expanded tables (broadcasting only)."""
    net = discrete_network(model)
    joint, names = brute_joint(model.dag, net.cpts, net.cards)
    for k, s in evidence.items():
        joint = np.take(joint, [s], axis=names.index(k))
    p = joint.sum(axis=tuple(i for i, v in enumerate(names) if v != target))
    return p / p.sum()


def test_noisy_max_messages_equal_the_expanded_tables(rng):
    m = compact_network(rng)
    closed, expanded = model_factor_graph(m), model_factor_graph(m, expand=True)
    assert closed.noisy_max is not None and expanded.noisy_max is None and expanded.noisy is None
    u = np.ones((3, closed.cards.size, closed.K))
    names = closed.names
    u[0, names.index("M2"), :2] = [0, 1]
    u[1, names.index("MAX")] = [0, 0, 1]
    u[2, names.index("B")] = [0.2, 1.0, 0.5]                                    # soft
    a = propagate(closed, u, tol=1e-12, max_iter=500)
    b = propagate(expanded, u, tol=1e-12, max_iter=500)
    assert a.converged.all() and a.iterations == b.iterations
    assert_allclose(a.beliefs, b.beliefs, atol=1e-12)


def test_loopy_on_a_noisy_max_tree_is_brute_force(rng):
    m = compact_network(rng, loopy=False)
    for ev in ({"M2": 1}, {"MAX": 2, "M2": 0}, {}):
        for t in ("A", "B", "MAX"):
            if t in ev:
                continue
            r = m.query(t, evidence=ev, method="loopy")
            assert "exact: the factor graph is a tree" in r.method
            assert_allclose(r.probs, brute(m, t, ev), atol=1e-10)


def test_large_logistic_uses_the_documented_approximation(rng, monkeypatch):
    m = compact_network(rng)
    ev = {"SOFT": 2, "M2": 1}
    exact = {t: brute(m, t, ev) for t in ("A", "B")}
    fitted = {t: m.query(t, evidence=ev, method="loopy").probs for t in ("A", "B")}
    monkeypatch.setattr(approximate, "LOGISTIC_TABLE_ENTRIES", 1)
    m2 = cn.CausalModel(dict(m.mechanisms))
    fg = model_factor_graph(m2)
    assert fg.logistic is not None and "SOFT" not in [fg.names[g.variables[0, -1]] for g in fg.groups
                                                      if g.variables.shape[1] == 3]
    for t in ("A", "B"):
        approx = m2.query(t, evidence=ev, method="loopy").probs
        assert np.abs(approx - exact[t]).max() < 0.03                        # probit approximation
        assert np.abs(approx - fitted[t]).max() > 1e-6                       # it is not the table's answer


def test_logistic_message_with_zero_weights_is_exact(rng, monkeypatch):
    """With no weight, the logit has no variance and the probit approximation is exact."""
    monkeypatch.setattr(approximate, "LOGISTIC_TABLE_ENTRIES", 1)
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7]), "B": cn.Categorical([0.5, 0.2, 0.3]),
                        "Y": cn.Logistic(["A", "B"], [0.0, 0.0], bias=0.4)})
    assert model_factor_graph(m).logistic is not None
    assert_allclose(m.query("Y", method="loopy").probs, [1 - 1 / (1 + np.exp(-0.4)), 1 / (1 + np.exp(-0.4))],
                    atol=1e-12)
    assert_allclose(m.query("B", evidence={"Y": 1}, method="loopy").probs, [0.5, 0.2, 0.3], atol=1e-12)


@pytest.mark.parametrize("method", ["gibbs", "importance", "loopy"])
def test_approximate_engines_never_expand_compact_nodes(method, rng, monkeypatch):
    m = compact_network(rng)
    ev = {"M2": 1, "SOFT": 2, "OR": 0}
    want = brute(cn.CausalModel(dict(m.mechanisms)), "B", ev)                  # expands, on another model

    def refuse(self, node, parent_specs):
        raise AssertionError(f"{node!r} was expanded into a table")

    monkeypatch.setattr(Compact, "table_for", refuse)
    monkeypatch.setattr(approximate, "LOGISTIC_TABLE_ENTRIES", 1)             # loopy: SOFT's closed form too
    r = m.query("B", evidence=ev, method=method, n_samples=8000, seed=3)
    tol = 0.03 if method == "loopy" else 5 * np.maximum(r.std_err, 2e-3)
    assert np.all(np.abs(r.probs - want) <= tol), (r.probs, want)
    with pytest.raises(AssertionError, match="expanded"):
        m.query("B", evidence=ev)                                             # the exact engine does expand


@pytest.mark.parametrize("method", ["gibbs", "importance"])
def test_sampling_engines_on_compact_nodes_match_brute_force(method, rng):
    m = compact_network(rng)
    ev = {"M2": 1, "SOFT": 2, "OR": 0}
    want = brute(m, "B", ev)
    r = m.query("B", evidence=ev, method=method, n_samples=12_000, seed=5)
    assert np.all(np.abs(r.probs - want) <= 5 * np.maximum(r.std_err, 2e-3)), (r.probs, want, r.std_err)
    batch = m.query("A", evidence={"M2": [0, 1], "SOFT": [2, 0]}, method=method, n_samples=12_000, seed=6)
    for row, e in enumerate(({"M2": 0, "SOFT": 2}, {"M2": 1, "SOFT": 0})):
        assert np.all(np.abs(batch.probs[row] - brute(m, "A", e)) <= 5 * np.maximum(batch.std_err[row], 2e-3))


def wide_noisy_max(k=30):
    """One three-level NoisyMax child of k binary roots: its table (2^k x 3) cannot be built."""
    rng = np.random.default_rng(11)
    prior = rng.uniform(0.05, 0.4, size=k)
    tables = [np.vstack([[1.0, 0.0, 0.0], rng.dirichlet([1.0, 1.0, 1.0])]) for _ in range(k)]
    leak = np.array([0.9, 0.08, 0.02])
    mechs = {f"D{i}": cn.Categorical([1 - prior[i], prior[i]]) for i in range(k)}
    mechs["Y"] = cn.NoisyMax([f"D{i}" for i in range(k)], tables, leak)
    return cn.CausalModel(mechs), prior, tables, leak


def analytic_posterior(prior, tables, leak, j, y):
    """P(D_j | Y = y) from P(Y <= y | d) = F_leak(y) prod_i F_i(y | d_i) with independent roots."""
    F = [np.cumsum(t, axis=1) for t in tables]                                # (2, 3) each
    t = np.array([(1 - p) * f[0] + p * f[1] for p, f in zip(prior, F)])      # (k, 3): E[F_i(y | D_i)]
    rest = np.cumsum(leak) * np.prod(np.delete(t, j, axis=0), axis=0)        # (3,)

    def p_y(s):
        G = rest * F[j][s]
        return G[y] - (G[y - 1] if y > 0 else 0.0)

    post = np.array([(1 - prior[j]) * p_y(0), prior[j] * p_y(1)])
    return post / post.sum()


def test_thirty_parent_noisy_max_against_the_analytic_posterior(seed):
    m, prior, tables, leak = wide_noisy_max()
    with pytest.raises(ResourceError):
        m.query("D3", evidence={"Y": 2}, method="exact")
    want = analytic_posterior(prior, tables, leak, 3, 2)
    lbp = m.query("D3", evidence={"Y": 2}, method="loopy")
    assert "exact: the factor graph is a tree" in lbp.method
    assert_allclose(lbp.probs, want, atol=1e-10)
    for method, n in (("importance", 6000), ("gibbs", 2000)):
        r = m.query("D3", evidence={"Y": 2}, method=method, n_samples=n, seed=seed)
        assert np.all(np.abs(r.probs - want) <= 5 * np.maximum(r.std_err, 2e-3)), (method, r.probs, want)


@pytest.mark.parametrize("block", [False, True])
def test_compiled_sweep_on_compact_families_draws_what_the_numpy_sweep_draws(rng, block):
    from causalnet.inference.gibbs import GibbsPlan, gibbs_run

    mechs = dict(compact_network(rng).mechanisms)
    if block:                                            # a deterministic table: A, C and AND sampled jointly
        mechs["AND"] = cn.CPT(["A", "C"], [[[1, 0], [1, 0]], [[1, 0], [0, 1]]])
    m = cn.CausalModel(mechs)
    plan = GibbsPlan(m)
    assert len(plan.compact) == 4
    fixed = {list(m.dag.nodes).index("M2")}
    blocks = plan.blocks(fixed)
    assert any(len(b[0]) > 1 for b in blocks) == block
    out = {}
    for backend in ("numpy", "numba"):
        g = np.random.default_rng(5)
        x = np.zeros((6, plan.cards.size), dtype=np.int64)
        x[:, list(fixed)] = 1
        plan.forward(x, np.isin(np.arange(plan.cards.size), list(fixed))[None].repeat(6, 0), g.random(x.shape))
        out[backend] = gibbs_run(plan, x, blocks, {}, [0, 1], 300, 20, g, backend=backend)
    assert np.array_equal(out["numpy"][0], out["numba"][0])
    assert np.array_equal(out["numpy"][1], out["numba"][1])
