"""The sensitivity contour plots: a figure whose contours are the adjusted estimate (partial R²) or the
bias factor (E-value) at the grid points, checked against the closed forms; skipped without matplotlib."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from simdata import graph_for, simulate

import causalnet as cn

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")


@pytest.fixture(scope="module")
def effect():
    return cn.estimate(graph_for(), simulate(1500, 3), "T", "Y", method="regression", ci="analytic")


def _contours(fig):
    from matplotlib.contour import ContourSet

    return [c for c in fig.axes[0].get_children() if isinstance(c, ContourSet)]


def test_partial_r2_contour_plot(effect):
    import matplotlib.pyplot as plt

    s = effect.sensitivity("partial-r2", benchmark="Z0", kd=0.1)
    fig = s.plot(limit=0.5)
    sets = _contours(fig)
    assert sets, "no contour drawn"
    v = s.values
    adjusted = cn.estimation.sensitivity.adjusted_estimate
    checked = 0
    for level, segs in zip(sets[0].levels, sets[0].allsegs):     # every drawn vertex lies on its level
        for seg in segs:
            assert_allclose(adjusted(v["estimate"], v["std_err"], v["dof"], seg[:, 0], seg[:, 1]), level,
                            rtol=0, atol=0.02 * abs(v["estimate"]))
            checked += len(seg)
    assert checked > 50
    assert_allclose(adjusted(v["estimate"], v["std_err"], v["dof"], 0.0, 0.0), v["estimate"])
    assert len(fig.axes[0].lines) == 1                           # the benchmark marker
    plt.close(fig)


def test_e_value_contour_plot(effect):
    import matplotlib.pyplot as plt

    s = effect.sensitivity("e-value")
    fig, ax = plt.subplots()
    assert s.plot(ax=ax) is fig
    sets = _contours(fig)
    rr = max(s.values["rr"], 1 / s.values["rr"])
    (red,) = [c for c in sets if np.allclose(c.levels, [rr])]        # the explain-away contour
    seg = np.concatenate(red.allsegs[0])
    assert_allclose(seg[:, 0] * seg[:, 1] / (seg[:, 0] + seg[:, 1] - 1), rr, rtol=1e-3)
    ev = s.values["e_value"]
    assert_allclose(ev * ev / (2 * ev - 1), rr, rtol=1e-12)          # the E-value lies on it
    plt.close(fig)
    with pytest.raises(cn.ModelError, match="limit"):
        effect.sensitivity("partial-r2").plot(limit=1.5)
