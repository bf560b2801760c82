"""CI tests for PC: statistics, degrees of freedom and p-values against scipy, causal-learn and pgmpy."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from causalnet.learning.citests import ChiSquare, FisherZ, GSquare, contingency_statistic
from causalnet.learning.data import as_table

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.fixture(scope="module")
def sparse_frame():
    """Three-state X and Y whose strata of (Z, W) often miss a row or a column: structural zeros."""
    rng = np.random.default_rng(3)
    n = 400
    z = rng.integers(0, 3, n)
    w = rng.integers(0, 2, n)
    x = np.where(rng.random(n) < 0.7, z, rng.integers(0, 3, n))
    y = np.where(rng.random(n) < 0.6, (x + w) % 3, np.minimum(z, 1))
    return pd.DataFrame({"X": x, "Y": y, "Z": z, "W": w})


@pytest.mark.parametrize("cls,lam", [(ChiSquare, "pearson"), (GSquare, "log-likelihood")])
@pytest.mark.parametrize("given", [(), ("Z",), ("Z", "W")])
def test_statistic_and_dof_equal_scipy_stratum_by_stratum(sparse_frame, cls, lam, given):
    df = sparse_frame
    t = cls(as_table(df))
    stat, dof = contingency_statistic(t.counts("X", "Y", given), cls.name)
    ref_stat, ref_dof = 0.0, 0
    groups = [df] if not given else [part for _, part in df.groupby(list(given))]
    for part in groups:
        tab = pd.crosstab(part.X, part.Y)                     # drops empty rows and columns
        if min(tab.shape) < 2:
            continue
        r = stats.chi2_contingency(tab, correction=False, lambda_=lam)
        ref_stat, ref_dof = ref_stat + r.statistic, ref_dof + r.dof
    assert dof == ref_dof
    assert_allclose(stat, ref_stat, rtol=1e-10, atol=1e-10)
    assert_allclose(t.pvalue("X", "Y", given), stats.chi2.sf(ref_stat, ref_dof), rtol=1e-9)


@pytest.mark.parametrize("cls,method", [(ChiSquare, "chisq"), (GSquare, "gsq")])
@pytest.mark.parametrize("given", [(), ("Z",), ("Z", "W")])
def test_pvalues_equal_causal_learn(sparse_frame, cls, method, given):
    cit = pytest.importorskip("causallearn.utils.cit")
    df = sparse_frame
    cols = list(df.columns)
    ref = cit.CIT(df.to_numpy(), method)
    p = ref(cols.index("X"), cols.index("Y"), [cols.index(v) for v in given])
    assert_allclose(cls(as_table(df)).pvalue("X", "Y", given), p, rtol=1e-9)


def test_pvalues_equal_pgmpy_when_no_stratum_has_an_empty_cell():
    pytest.importorskip("pgmpy")
    from pgmpy.estimators.CITests import chi_square, g_sq

    rng = np.random.default_rng(5)
    n = 3000
    z = rng.integers(0, 2, n)
    x = (z + rng.integers(0, 3, n)) % 3
    y = np.where(rng.random(n) < 0.05, (x + z) % 2, rng.integers(0, 2, n))
    df = pd.DataFrame({"X": x, "Y": y, "Z": z})
    table = as_table(df)
    for cls, ref in ((ChiSquare, chi_square), (GSquare, g_sq)):
        for given in ([], ["Z"]):
            _, p = ref("X", "Y", given, df, boolean=False)[:2]
            assert_allclose(cls(table).pvalue("X", "Y", tuple(given)), p, rtol=1e-8)


def test_fisher_z_equals_causal_learn():
    cit = pytest.importorskip("causallearn.utils.cit")
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 500))
    c = a - 0.5 * b + rng.normal(size=500)
    d = 0.3 * c + rng.normal(size=500)
    data = np.column_stack([a, b, c, d])
    ref = cit.CIT(data, "fisherz")
    t = FisherZ(as_table({"A": a, "B": b, "C": c, "D": d}))
    for x, y, s in ((0, 1, []), (0, 1, [2]), (0, 3, [2]), (1, 3, [0, 2])):
        names = "ABCD"
        assert_allclose(t.pvalue(names[x], names[y], tuple(names[i] for i in s)), ref(x, y, s), rtol=1e-7,
                        atol=1e-12)   # causal-learn takes 1 - cdf: no digits below 1e-16


def test_no_degrees_of_freedom_means_independent():
    df = pd.DataFrame({"X": [0, 0, 0, 1], "Y": [1, 1, 1, 1], "Z": [0, 1, 0, 1]})
    assert ChiSquare(as_table(df)).pvalue("X", "Y", ("Z",)) == 1.0


def test_pvalues_are_cached_and_symmetric(sparse_frame):
    t = ChiSquare(as_table(sparse_frame))
    p = t.pvalue("X", "Y", ("Z", "W"))
    assert t.pvalue("Y", "X", ("W", "Z")) == p
    assert t.calls == 1
