"""MarkovNetwork on the discrete engine's elimination: a 4 x 40 Ising strip against a transfer-matrix oracle (Z,
marginals, MAP by Viterbi over column states), a 60-leaf star in closed form, limits and diagrams."""

import itertools
import shutil

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import logsumexp

import causalnet as cn
from causalnet import EvidenceError, ResourceError

ROWS, COLS = 4, 40


def ising_strip(rng):
    J = rng.normal(0.0, 0.7, size=(ROWS, COLS, 2))                # couplings right (…, 0) and down (…, 1)
    h = rng.normal(0.0, 0.5, size=(ROWS, COLS))
    spin = np.array([-1.0, 1.0])
    pair = lambda j: np.exp(j * np.outer(spin, spin))  # noqa: E731
    name = lambda r, c: f"s{r}_{c}"  # noqa: E731
    pairwise, unary = {}, {}
    for r, c in itertools.product(range(ROWS), range(COLS)):
        unary[name(r, c)] = np.exp(h[r, c] * spin)
        if c + 1 < COLS:
            pairwise[(name(r, c), name(r, c + 1))] = pair(J[r, c, 0])
        if r + 1 < ROWS:
            pairwise[(name(r, c), name(r + 1, c))] = pair(J[r, c, 1])
    return cn.MarkovNetwork.from_edges(pairwise, unary), J, h


def column_potentials(J, h):
    """log phi_c(state) within column c, and log T_c(state, state') between columns c and c + 1."""
    spin = np.array([-1.0, 1.0])
    states = np.array(list(itertools.product([0, 1], repeat=ROWS)))      # (16, ROWS)
    s = spin[states]                                                     # (16, ROWS)
    phi = np.stack([(h[:, c] * s).sum(1) + (J[:-1, c, 1] * s[:, :-1] * s[:, 1:]).sum(1) for c in range(COLS)])
    T = np.stack([(J[:, c, 0] * s[:, None, :] * s[None, :, :]).sum(-1) for c in range(COLS - 1)])
    return states, phi, T                                                # (16, R), (C, 16), (C-1, 16, 16)


def transfer_log_z(phi, T, clamp=None):
    """log Z by the forward recursion over columns (clamp: {col: mask over column states})."""
    clamp = {c: np.where(m > 0, 0.0, -np.inf) for c, m in (clamp or {}).items()}
    a = phi[0] + clamp.get(0, 0.0)
    for c in range(1, COLS):
        a = logsumexp(a[:, None] + T[c - 1], axis=0) + phi[c] + clamp.get(c, 0.0)
    return logsumexp(a)


def viterbi(phi, T):
    a, back = phi[0], []
    for c in range(1, COLS):
        m = a[:, None] + T[c - 1]
        back.append(m.argmax(0))
        a = m.max(0) + phi[c]
    path = [int(a.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return path[::-1], float(a.max())


def test_ising_strip_against_the_transfer_matrix(rng):
    mn, J, h = ising_strip(rng)
    states, phi, T = column_potentials(J, h)
    log_z = transfer_log_z(phi, T)
    assert_allclose(mn.log_partition_function(), log_z, rtol=1e-10)
    # P(s1_17 = +1 | s0_3 = -1, s3_30 = +1)
    clamp = {3: (states[:, 0] == 0).astype(float), 30: (states[:, 3] == 1).astype(float)}
    both = dict(clamp)
    both[17] = (states[:, 1] == 1).astype(float) * clamp.get(17, 1.0)
    want = np.exp(transfer_log_z(phi, T, both) - transfer_log_z(phi, T, clamp))
    got = mn.query("s1_17", evidence={"s0_3": 0, "s3_30": 1})
    assert got.method == "exact (variable elimination)"
    assert_allclose(got.probs[1], want, rtol=1e-9)
    batch = mn.query("s1_17", evidence={"s0_3": [0, 0], "s3_30": [1, 0]})
    assert_allclose(batch.probs[0], got.probs, rtol=1e-12)


def test_ising_strip_map_is_viterbi_over_column_states(rng):
    mn, J, h = ising_strip(rng)
    states, phi, T = column_potentials(J, h)
    path, best = viterbi(phi, T)
    assign, logp = mn.map()
    for c, k in enumerate(path):
        for r in range(ROWS):
            assert assign[f"s{r}_{c}"] == states[k, r]
    assert_allclose(logp, best - transfer_log_z(phi, T), rtol=1e-10)
    batch, blogp = mn.map(evidence={"s0_0": [0, 1]})
    assert batch["s1_5"].shape == (2,)
    for row, s in enumerate([0, 1]):
        one, lp = mn.map(evidence={"s0_0": s})
        assert all(batch[v][row] == one[v] for v in one) and blogp[row] == pytest.approx(lp)


def test_a_star_of_sixty_leaves_against_its_closed_form():
    """Each leaf agrees with the hub with weight 2: Z = 2 * 3**60; with every leaf at 1, P(hub=1) = 2**60 / (1 + 2**60)."""
    n = 60
    fs = [cn.Factor([f"x{i}", "hub"], [[2.0, 1.0], [1.0, 2.0]]) for i in range(n)]
    mn = cn.MarkovNetwork(fs)
    assert_allclose(mn.log_partition_function(), np.log(2.0) + n * np.log(3.0), rtol=1e-12)
    got = mn.query(["hub"], evidence={f"x{i}": 1 for i in range(n)})
    assert_allclose(got.probs, [1 / (1 + 2.0 ** n), 2.0 ** n / (1 + 2.0 ** n)], rtol=1e-12)


def test_exact_refuses_a_table_past_the_limits():
    fs = [cn.Factor([f"a{i}", f"b{j}"], np.ones((2, 2)) + (i == j)) for i in range(40) for j in range(40)]
    with pytest.raises(ResourceError):
        cn.MarkovNetwork(fs).query("a0", method="exact")
    with pytest.raises(EvidenceError, match="soft evidence on 'a0' has 3 rows; the evidence has 2"):
        cn.MarkovNetwork(fs[:3]).query("b0", evidence={"b1": [0, 1]}, soft_evidence={"a0": np.ones((3, 2))})


@pytest.mark.skipif(shutil.which("graphviz-pure") is None, reason="graphviz-pure not on PATH")
def test_render_through_graphviz_pure(tmp_path):
    mn = cn.MarkovNetwork.from_edges({("A", "B"): np.ones((2, 2)), ("B", "C"): np.ones((2, 2))})
    out = mn.render(tmp_path / "mn.svg", renderer="graphviz-pure")
    assert out.read_text().lstrip().startswith("<") and "svg" in out.read_text()[:400]
    cn.render(mn, tmp_path / "mn.dot")
    assert (tmp_path / "mn.dot").read_text() == mn.to_dot()
    with pytest.raises(cn.GraphError, match="takes no drawing options"):
        cn.render(mn, tmp_path / "x.dot", legend=True)
