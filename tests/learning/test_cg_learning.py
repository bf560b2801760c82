"""Learning on mixed data: conditional linear-Gaussian fits, CG scores, the CG CI test, structure learning.

Oracles: least squares by ``numpy.linalg.lstsq`` on each configuration's rows (fits, priors as weighted
least squares on pseudo-rows, scores), pgmpy's ``LogLikelihoodCondGauss`` / ``BICCondGauss`` (up to their
documented ddof-1 variance), the discrete G² test, per-configuration correlations, and the true CPDAG.
"""

import warnings
from math import log, pi

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.learning.citests import ConditionalGaussianLRT, GSquare
from causalnet.learning.data import as_table
from causalnet.learning.scores import make_score

CLG = cn.ConditionalLinearGaussian


@pytest.fixture(scope="module")
def waste():
    m = cn.gallery.load("waste-incinerator")
    return m, m.sample(100_000, seed=11).to_pandas()


def _groups(df, disc):
    """Row indices per configuration of the discrete columns `disc` (C order over their categories)."""
    if not disc:
        return {(): np.arange(len(df))}
    codes = [df[d].cat.codes.to_numpy() for d in disc]
    cards = [len(df[d].cat.categories) for d in disc]
    out = {}
    for idx in np.ndindex(*cards):
        rows = np.flatnonzero(np.all([c == i for c, i in zip(codes, idx)], axis=0))
        out[idx] = rows
    return out


def _lstsq(df, rows, real, node, weights=None):
    """Intercept, weights, ML variance and RSS of `node` on `real` over `rows` (optionally weighted)."""
    X = np.column_stack([np.ones(len(rows)), *(df[r].to_numpy()[rows] for r in real)])
    y = df[node].to_numpy()[rows]
    w = np.ones(len(rows)) if weights is None else weights
    coef, *_ = np.linalg.lstsq(X * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)
    rss = float(np.sum(w * (y - X @ coef) ** 2))
    return coef[0], coef[1:], rss / w.sum(), rss, X


def test_fit_equals_least_squares_per_configuration_and_recovers_the_parameters(waste):
    m, df = waste
    f = cn.fit(m.dag, df)
    for v in ("Efficiency", "CO2", "Dust", "Metal"):
        mech, true = f.mechanisms[v], m.mechanisms[v]
        assert isinstance(mech, CLG)
        disc, real = mech.discrete_parents, mech.real_parents
        perm = [true.discrete_parents.index(d) for d in disc]       # the fit follows the DAG's parent order
        t_b, t_w, t_v = (np.transpose(a, perm + list(range(len(perm), a.ndim)))
                         for a in (true.intercept, true.weights, true.variance))
        for idx, rows in _groups(df, list(disc)).items():
            b, w, var, rss, X = _lstsq(df, rows, real, v)
            assert_allclose(mech.intercept[idx], b, rtol=1e-9, atol=1e-9)
            assert_allclose(mech.weights[idx], w, rtol=1e-9, atol=1e-9)
            assert_allclose(mech.variance[idx], var, rtol=1e-9)
            # recovery: the truth within 6 standard errors of OLS (covariance sigma^2 (X'X)^-1)
            se = np.sqrt(np.diag(var * np.linalg.inv(X.T @ X)))
            assert np.all(np.abs(np.r_[b, w] - np.r_[t_b[idx], t_w[idx]]) <= 6 * se)
            assert abs(var - t_v[idx]) <= 6 * t_v[idx] * np.sqrt(2.0 / len(rows))
    for v in ("Emission", "Light"):                                  # real parents only: LinearGaussian as before
        assert isinstance(f.mechanisms[v], cn.LinearGaussian)


def test_refit_keeps_the_model_and_its_parent_order(waste):
    m, df = waste
    f = m.fit(df.iloc[:20_000])
    for v in m.nodes:
        assert list(f.mechanisms[v].parents) == list(m.mechanisms[v].parents)
    assert_allclose(f.mechanisms["Efficiency"].intercept, m.mechanisms["Efficiency"].intercept, atol=0.03)


def _tiny():
    rng = np.random.default_rng(4)
    n = 60
    t = np.where(rng.random(n) < 0.5, "a", "b")
    x = rng.normal(size=n)
    y = np.where(t == "a", 1.0 + 2.0 * x, -1.0 + 0.5 * x) + rng.normal(scale=0.3, size=n)
    df = pd.DataFrame({"T": pd.Categorical(t, categories=["a", "b", "c"]), "X": x, "Y": y})
    return df


def test_mle_names_a_configuration_with_too_few_rows():
    df = _tiny()
    with pytest.raises(cn.ModelError, match=r"'Y'.*T='c'.*0 row"):
        cn.fit("T -> Y; X -> Y", df)
    df2 = df.copy()
    df2.loc[0, "T"] = "c"                                           # one row: 3 parameters need >= 3 rows
    with pytest.raises(cn.ModelError, match=r"T='c'.*1 row.*at least 3"):
        cn.fit("T -> Y; X -> Y", df2)


@pytest.mark.parametrize("prior,a", [("k2", 1.0), ("bdeu", 10.0 / 3)])
def test_bayes_pseudo_rows_equal_weighted_least_squares(prior, a):
    df = _tiny()
    f = cn.fit("T -> Y; X -> Y", df, method="bayes", prior=prior)
    mech = f.mechanisms["Y"]
    n = len(df)
    codes = df["T"].cat.codes.to_numpy()
    for k in range(3):
        own = np.flatnonzero(codes == k)
        rows = np.r_[own, np.arange(n)]                               # the rows, plus all rows at weight a/n
        w = np.r_[np.ones(len(own)), np.full(n, a / n)]
        b, wt, var, _, _ = _lstsq(df, rows, ["X"], "Y", weights=w)
        assert_allclose(mech.intercept[k], b, rtol=1e-9, atol=1e-12)
        assert_allclose(mech.weights[k], wt, rtol=1e-9, atol=1e-12)
        assert_allclose(mech.variance[k], var, rtol=1e-9)


def test_discrete_child_of_a_real_node_is_refused_naming_both():
    df = _tiny()
    with pytest.raises(cn.ModelError, match=r"'T' is discrete but its parent 'X' is continuous"):
        cn.fit("X -> T; T -> Y", df)
    with pytest.raises(cn.ModelError, match=r"'T'.*'X'"):
        cn.score("X -> T; T -> Y", df, "bic-cg")


# -- scores ------------------------------------------------------------------------------------------------------


def _hand_loglik(df, dag, ddof=0):
    """The CG log-likelihood by hand: counts for discrete nodes, lstsq per configuration for real ones."""
    total, params = 0.0, 0
    for v in dag.nodes:
        ps = dag.parents(v)
        disc = [p for p in ps if isinstance(df[p].dtype, pd.CategoricalDtype)]
        real = [p for p in ps if p not in disc]
        q = int(np.prod([len(df[d].cat.categories) for d in disc]))
        if isinstance(df[v].dtype, pd.CategoricalDtype):
            counts = df.groupby([*disc, v], observed=False).size().to_numpy().reshape(q, -1).astype(float)
            nj = counts.sum(axis=1, keepdims=True)
            pos = counts > 0
            total += float(np.sum(counts[pos] * np.log((counts / np.where(nj > 0, nj, 1))[pos])))
            params += q * (counts.shape[1] - 1)
            continue
        for rows in _groups(df, disc).values():
            _, _, _, rss, _ = _lstsq(df, rows, real, v)
            nk = len(rows)
            s2 = rss / (nk - ddof)
            total += -0.5 * nk * log(2 * pi * s2) - 0.5 * rss / s2
        params += q * (len(real) + 2)
    return total, params


def test_cg_scores_equal_least_squares_by_hand(waste):
    m, df = waste
    df = df.iloc[:5000]
    ll, k = _hand_loglik(df, m.dag)
    n = len(df)
    assert_allclose(cn.score(m.dag, df, "loglik-cg"), ll, rtol=1e-9)
    assert_allclose(cn.score(m.dag, df, "bic-cg"), ll - 0.5 * log(n) * k, rtol=1e-9)
    assert_allclose(cn.score(m.dag, df, "aic-cg"), ll - k, rtol=1e-9)


@pytest.mark.slow
def test_cg_loglik_equals_pgmpy_with_its_ddof_one_variances(waste):
    pytest.importorskip("pgmpy")
    warnings.simplefilter("ignore", FutureWarning)
    from pgmpy.structure_score import BICCondGauss, LogLikelihoodCondGauss

    m, df = waste
    df = df.iloc[:3000]
    sdf = df.astype({c: str for c in ("Burning", "Filter", "Waste")})
    ll_pg, bic_pg = LogLikelihoodCondGauss(sdf), BICCondGauss(sdf)
    ours = make_score("bic-cg", as_table(df))
    for v in ("Efficiency", "CO2", "Dust", "Metal", "Filter"):
        ps = tuple(m.dag.parents(v))
        sub = cn.DAG([(p, v) for p in ps], nodes=[v, *ps])
        hand1, _ = _hand_loglik(df, sub, ddof=1)                 # pgmpy: RSS_k / (n_k - 1)
        hand1 -= sum(_hand_loglik(df, cn.DAG([], nodes=[p]), ddof=1)[0] for p in ps)
        assert_allclose(ll_pg.local_score(v, ps), hand1, rtol=1e-9)
        # same penalty (all states occur): BIC - loglik agrees
        pen_pg = ll_pg.local_score(v, ps) - bic_pg.local_score(v, ps)
        pen = make_score("loglik-cg", as_table(df)).local(v, ps) - ours.local(v, ps)
        assert_allclose(pen, pen_pg, rtol=1e-12)


def test_a_degenerate_family_scores_minus_inf_in_search_and_raises_in_score():
    df = _tiny()
    df.loc[0, "T"] = "c"
    sc = make_score("bic-cg", as_table(df))
    assert sc.local("Y", ("T", "X")) == -np.inf
    with pytest.raises(cn.ModelError, match=r"'Y'.*T='c'"):
        cn.score("T -> Y; X -> Y", df, "loglik-cg")


# -- the CI test ---------------------------------------------------------------------------------------------------


def test_cg_lrt_two_reals_is_per_configuration_partial_correlation(waste):
    _, df = waste
    df = df.iloc[:4000]
    t = ConditionalGaussianLRT(as_table(df))
    from scipy.stats import chi2

    stat = 0.0
    groups = _groups(df, ["Waste"])
    for rows in groups.values():
        r = np.corrcoef(df["Metal"].to_numpy()[rows], df["CO2"].to_numpy()[rows])[0, 1]
        stat += -len(rows) * np.log(1 - r * r)
    assert_allclose(t.pvalue("Metal", "CO2", ("Waste",)), chi2.sf(stat, len(groups)), rtol=1e-9)


def test_cg_lrt_two_discrete_given_discrete_is_g2(waste):
    _, df = waste
    df = df.iloc[:4000]
    tab = as_table(df)
    disc = as_table(df[["Filter", "Burning", "Waste"]])
    assert_allclose(ConditionalGaussianLRT(tab).pvalue("Filter", "Burning", ("Waste",)),
                    GSquare(disc).pvalue("Filter", "Burning", ("Waste",)), rtol=1e-9)


# -- structure learning --------------------------------------------------------------------------------------------


def _two_roots():
    return cn.CausalModel({
        "A": cn.Categorical([0.4, 0.6], states=["a0", "a1"]),
        "B": cn.Categorical([0.3, 0.3, 0.4], states=["b0", "b1", "b2"]),
        "X": CLG(["A", "B"], [[0.0, 1.0, -1.0], [1.5, 0.5, 2.0]], [[[]] * 3] * 2, [[1.0, 0.5, 1.0], [0.8, 1.0, 0.6]]),
        "C": cn.Categorical([0.5, 0.5], states=["c0", "c1"]),
        "Y": CLG(["C", "X"], [0.0, 1.0], [[0.8], [0.3]], [0.5, 0.7]),
        "Z": cn.LinearGaussian(["Y"], [1.2], bias=0.3, sigma=0.8),
    })


def _discrete_chain():
    return cn.CausalModel({
        "A": cn.Categorical([0.4, 0.6], states=["a0", "a1"]),
        "B": cn.Categorical([0.3, 0.3, 0.4], states=["b0", "b1", "b2"]),
        "X": CLG(["A", "B"], [[0.0, 1.0, -1.0], [1.5, 0.5, 2.0]], [[[]] * 3] * 2, [[1.0, 0.5, 1.0], [0.8, 1.0, 0.6]]),
        "D": cn.CPT(["A"], [[0.7, 0.3], [0.2, 0.8]], states=["d0", "d1"]),
        "Y": CLG(["D", "X"], [0.0, 1.0], [[0.8], [-0.7]], [0.5, 0.7]),
    })


@pytest.mark.parametrize("make", [_two_roots, _discrete_chain])
def test_pc_with_the_cg_test_recovers_the_cpdag(make):
    m = make()
    df = m.sample(20_000, seed=5).to_pandas()
    got = cn.learn_structure(df, method="pc", alpha=0.01, progress=False)
    assert got == m.dag.cpdag()


@pytest.mark.parametrize("make", [_two_roots, _discrete_chain])
def test_hill_climb_with_bic_cg_and_restarts_recovers_the_cpdag_and_keeps_the_cg_restriction(make):
    m = make()
    df = m.sample(20_000, seed=5).to_pandas()
    got = cn.learn_structure(df, method="hill_climb", score="bic-cg", restarts=10, seed=0, progress=False)
    assert got.cpdag() == m.dag.cpdag()
    discrete = {v for v in m.nodes if m.spec(v).is_discrete}
    assert all(u in discrete for u, v in got.edges if v in discrete)
    plain = cn.learn_structure(df, method="hill_climb", score="bic-cg", progress=False)
    assert cn.score(got, df, "bic-cg") >= cn.score(plain, df, "bic-cg") - 1e-6


def test_structure_learning_errors_on_mixed_data():
    df = _tiny()
    with pytest.raises(cn.ModelError, match="cg-lrt"):
        cn.learn_structure(df, method="pc", test="chi2", progress=False)
    with pytest.raises(cn.ModelError, match="mixed"):
        cn.learn_structure(df, method="ges", progress=False)
    with pytest.raises(cn.ModelError, match=r"'T'.*'X'"):
        cn.learn_structure(df, method="hill_climb", fixed_edges=[("X", "T")], progress=False)
    with pytest.raises(cn.ModelError, match="restarts"):
        cn.learn_structure(df, method="hill_climb", restarts=-1, progress=False)


@pytest.mark.slow
def test_dask_frames_fit_cg_families_and_refuse_a_latent_cg_parent_by_name():
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(_tiny(), npartitions=2)
    got, want = cn.fit("T -> Y; X -> Y", ddf, method="bayes"), cn.fit("T -> Y; X -> Y", _tiny(), method="bayes")
    assert_allclose(got.mechanisms["Y"].weights, want.mechanisms["Y"].weights, rtol=1e-10)
    assert_allclose(cn.score("T -> Y; X -> Y", ddf, "bic-cg"), cn.score("T -> Y; X -> Y", _tiny(), "bic-cg"),
                    rtol=1e-10)
    rng = np.random.default_rng(0)
    lat = dd.from_pandas(pd.DataFrame({"X": rng.normal(size=40)}), npartitions=2)
    with pytest.raises(cn.ModelError, match=r"'X' has a hidden cell in its family .*\['Z'\].*compute"):
        cn.fit("Z -> X", lat, method="em", latent=["Z"], states={"Z": 2}, progress=False)
