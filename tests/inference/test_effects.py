"""m.effects (issue 14): total, controlled direct, natural direct and indirect effects, exact and batched."""

import numpy as np
import pytest
from conftest import guarded
from numpy.testing import assert_allclose
from test_worlds import W, _scm, brute_worlds, gaussian_mediation, mediation_model

import causalnet as cn
from causalnet import EvidenceError, ModelError
from causalnet.inference.effects import CausalEffects


def test_linear_gaussian_effects_closed_form_and_decomposition():
    g = gaussian_mediation()
    e = g.effects("X", "Y", treated=2.0, control=0.5)
    assert e.mediators == ("M",) and e.measure == "E[Y]"
    assert e.total == pytest.approx(1.5 * (W["XY"] + W["MY"] * W["XM"]), abs=1e-12)
    assert e.natural_direct == pytest.approx(1.5 * W["XY"], abs=1e-12)           # the product-of-coefficients
    assert e.natural_indirect == pytest.approx(1.5 * W["MY"] * W["XM"], abs=1e-12)  # estimate (Baron-Kenny)
    assert e.total == pytest.approx(e.natural_direct + e.natural_indirect, abs=1e-12)
    assert e.controlled_direct == pytest.approx(1.5 * W["XY"], abs=1e-12)
    assert "joint Gaussian" in e.method


def test_linear_gaussian_effects_match_monte_carlo(seed):
    g = gaussian_mediation()
    e = g.effects("X", "Y", treated=1.0, control=0.0)
    u = np.random.default_rng(seed).standard_normal((400_000, 4))
    _, m0, y0 = _scm(u, x1=0.0)
    _, m1, y1 = _scm(u, x1=1.0)
    _, _, y10 = _scm(u, x1=1.0, m_from=m0)
    _, _, y01 = _scm(u, x1=0.0, m_from=m1)
    assert e.total == pytest.approx((y1 - y0).mean(), abs=1e-9)          # the noise cancels exactly
    assert e.natural_direct == pytest.approx((y10 - y0).mean(), abs=1e-9)
    assert e.natural_indirect == pytest.approx((y01 - y0).mean(), abs=1e-9)
    # conditional on factual evidence: still the same in a linear model
    c = g.effects("X", "Y", treated=1.0, control=0.0, evidence={"Y": 2.0})
    assert c.natural_direct == pytest.approx(e.natural_direct, abs=1e-9)


def test_discrete_total_effect_is_the_interventional_contrast(seed):
    # regression (issue 14): patching gave 0.40 instead of 0.58 on a stochastic model
    for trial in range(5):
        m = mediation_model(np.random.default_rng(seed + trial))
        e = m.effects("X", "Y", treated=1, control=0)
        do1 = m.query("Y", do={"X": 1})[1]
        do0 = m.query("Y", do={"X": 0})[1]
        assert e.total == pytest.approx(do1 - do0, abs=1e-12)
        assert e.measure == "P(Y=1)" and "multi-world network" in e.method


@pytest.mark.parametrize("card_m", [2, 3])
def test_discrete_natural_and_controlled_effects_match_enumeration(card_m, seed):
    for trial in range(3):
        m = mediation_model(np.random.default_rng(seed + 11 * trial), card_m)
        e = m.effects("X", "Y", treated=1, control=0)
        worlds = [{}, {"X": 0}, {"X": 1}, {"X": 1, "M": ("from", 1)}, {"X": 0, "M": ("from", 2)}]
        p = {w: brute_worlds(m, worlds, [(w, "Y")])[1] for w in (1, 2, 3, 4)}
        assert e.total == pytest.approx(p[2] - p[1], abs=1e-12)
        assert e.natural_direct == pytest.approx(p[3] - p[1], abs=1e-12)
        assert e.natural_indirect == pytest.approx(p[4] - p[1], abs=1e-12)
        # TE = NDE - NIE(reverse) always
        rev = m.effects("X", "Y", treated=0, control=1)
        assert e.total == pytest.approx(e.natural_direct - rev.natural_indirect, abs=1e-12)
        for k in range(card_m):
            want = m.query("Y", do={"X": 1, "M": k})[1] - m.query("Y", do={"X": 0, "M": k})[1]
            assert e.controlled_direct[k] == pytest.approx(want, abs=1e-12)
        assert len(e.controlled()) == card_m


def test_conditional_effects_and_outcome_state(seed):
    m = mediation_model(np.random.default_rng(seed))
    e = m.effects("X", "Y", 1, 0, evidence={"X": 1, "Y": 0}, outcome_state=0)
    worlds = [{}, {"X": 0}, {"X": 1, "M": ("from", 1)}]
    ev = [((0, "X"), 1), ((0, "Y"), 0)]
    y0 = brute_worlds(m, worlds, [(1, "Y")], ev)[0]
    y10 = brute_worlds(m, worlds, [(2, "Y")], ev)[0]
    assert e.natural_direct == pytest.approx(y10 - y0, abs=1e-12)
    assert e.measure == "P(Y=0)"


def test_batched_effects_equal_row_by_row(seed):
    m = mediation_model(np.random.default_rng(seed))
    t, c, z = np.array([1, 0, 1]), np.array([0, 1, 0]), np.array([0, 0, 1])
    e = m.effects("X", "Y", t, c, evidence={"Z": z})
    assert e.batched and e.total.shape == (3,) and e.controlled_direct.shape == (3, 2)
    for i in range(3):
        one = m.effects("X", "Y", int(t[i]), int(c[i]), evidence={"Z": int(z[i])})
        for k in ("total", "natural_direct", "natural_indirect", "controlled_direct"):
            assert_allclose(getattr(e, k)[i], getattr(one, k), atol=1e-12)
    g = gaussian_mediation()
    eg = g.effects("X", "Y", np.array([1.0, 3.0]), 0.0)
    assert_allclose(eg.natural_direct, [W["XY"], 3 * W["XY"]], atol=1e-12)


def test_default_and_several_mediators(seed):
    rng = np.random.default_rng(seed)
    d = rng.dirichlet
    m = cn.CausalModel({
        "X": cn.Categorical([0.4, 0.6]),
        "A": cn.CPT(["X"], d(np.ones(2), size=2)),
        "B": cn.CPT(["X", "A"], d(np.ones(2), size=4).reshape(2, 2, 2)),
        "Y": cn.CPT(["X", "A", "B"], d(np.ones(2), size=8).reshape(2, 2, 2, 2)),
        "S": cn.CPT(["Y"], d(np.ones(2), size=2)),
    })
    e = m.effects("X", "Y", 1, 0)
    assert e.mediators == ("A", "B") and e.controlled_direct.shape == (2, 2)
    worlds = [{}, {"X": 0}, {"X": 1, "A": ("from", 1), "B": ("from", 1)}]
    assert e.natural_direct == pytest.approx(brute_worlds(m, worlds, [(2, "Y")])[1]
                                             - brute_worlds(m, worlds, [(1, "Y")])[1], abs=1e-12)
    only_a = m.effects("X", "Y", 1, 0, mediators="A")
    assert only_a.mediators == ("A",) and only_a.total == pytest.approx(e.total, abs=1e-12)
    none = m.effects("S", "Y", 1, 0)                                   # no path: every effect is zero
    assert none.mediators == () and none.total == 0.0 and none.natural_indirect == 0.0


def test_repr_and_pandas():
    m = cn.CausalModel({"X": cn.Categorical([0.5, 0.5]), "M": cn.CPT(["X"], [[0.8, 0.2], [0.3, 0.7]]),
                        "Y": cn.CPT(["X", "M"], [[[0.9, 0.1], [0.5, 0.5]], [[0.6, 0.4], [0.2, 0.8]]])})
    e = m.effects("X", "Y", 1, 0)
    assert isinstance(e, CausalEffects)
    assert repr(e).startswith("<CausalEffects of X (1 vs 0) on P(Y=1) through ['M']: total: 0.5, natural direct: 0.3")
    pytest.importorskip("pandas")
    df = e.to_pandas()
    assert list(df.index) == ["total", "natural direct", "natural indirect", "controlled direct (M=0)",
                              "controlled direct (M=1)"]
    assert_allclose(df["effect"].to_numpy(), [0.5, 0.3, 0.2, 0.3, 0.3], atol=1e-12)


def test_effects_errors(sprinkler):
    g = gaussian_mediation()
    with pytest.raises(EvidenceError, match="unknown treatment"):
        g.effects("Q", "Y", 1.0, 0.0)
    with pytest.raises(EvidenceError, match="same node"):
        g.effects("Y", "Y", 1.0, 0.0)
    with pytest.raises(EvidenceError, match="treatment or the outcome"):
        g.effects("X", "Y", 1.0, 0.0, mediators=["M", "Y"])
    with pytest.raises(EvidenceError, match="outcome_state"):
        g.effects("X", "Y", 1.0, 0.0, outcome_state=1)
    with pytest.raises(ModelError, match="'X'"):
        g.effects("X", "Y", "high", 0.0)
    with pytest.raises(EvidenceError, match="wett"):
        sprinkler.effects("Sprinkler", "Wet", "on", "off", outcome_state="wett")


@pytest.mark.parametrize("args", [
    ("X", "Y", 1, 0), ("X", "Y", 5, 0), ("X", "Y", 1, 0, ["M", "M"]), ("X", "Y", np.array([1, 0]), np.array([0])),
    ("X", "Y", np.array([], dtype=int), 0), ("X", "Y", 1.5, 0), ("M", "X", 1, 0), ("Z", "Y", 1, 0, "X"),
    ("X", "Y", None, 0), ("X", "Y", {"a": 1}, 0),
])
def test_effects_robustness(args, seed):
    m = mediation_model(np.random.default_rng(seed))
    out = guarded(m.effects, *args)
    if not isinstance(out, cn.CausalNetError):
        for v in out.as_dict().values():
            assert np.all(np.isfinite(v)) and np.all(np.abs(v) <= 1 + 1e-12)
    g = gaussian_mediation()
    gargs = tuple(float(a) if isinstance(a, int) else a for a in args)
    out = guarded(g.effects, *gargs)
    if not isinstance(out, cn.CausalNetError):
        assert all(np.all(np.isfinite(v)) for v in out.as_dict().values())
