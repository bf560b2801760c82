"""Affine interventions on linear-Cauchy nodes: closed form, against scipy.stats / Monte Carlo (median, IQR)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn


def _model():
    return cn.CausalModel({
        "U": cn.CauchyLinear(scale=1.0), "V": cn.CauchyLinear(scale=3.0),
        "X": cn.CauchyLinear(["U", "V"], [1.0, 1.0], scale=0.0),
        "Y": cn.CauchyLinear(["X", "U"], [2.0, -1.0], loc=1.0, scale=0.5),
    })


@pytest.mark.parametrize("scale, offset", [(1.0, 2.0), (-3.0, 0.5), (0.5, -1.0)])
def test_affine_on_a_cauchy_node_is_exact(scale, offset, rng):
    m = _model()
    d = m.query("Y", do={"X": cn.affine(scale, offset)})
    assert d.method == "cauchy-affine (exact)"
    # Y = 1 + 2 (s (U + V) + b) - U + 0.5 e = 1 + 2b + (2s - 1) U + 2s V + 0.5 e
    assert_allclose([d.loc, d.scale], [1 + 2 * offset, abs(2 * scale - 1) * 1 + abs(2 * scale) * 3 + 0.5],
                    rtol=1e-12)
    y = m.do({"X": cn.affine(scale, offset)}).sample(200_000, seed=rng)["Y"]
    q25, q50, q75 = np.quantile(y, [0.25, 0.5, 0.75])
    assert abs(q50 - d.loc) < 0.05 * d.scale + 0.02 and abs((q75 - q25) / 2 - d.scale) < 0.05 * d.scale


def test_opaque_shift_on_a_cauchy_node_falls_back(seed):
    m = _model()
    r = m.query("Y", do={"X": lambda x: x + 1}, seed=seed, n_samples=5000)
    assert "likelihood weighting" in r.method
    with pytest.raises(cn.ModelError, match="not affine"):
        m.query("Y", do={"X": lambda x: x + 1}, method="exact")
