"""EM on mixed data (missing cells in discrete and real columns, a latent class over real children).

Oracles: the observed-data log-likelihood by brute force — every configuration of the discrete nodes
enumerated, the joint Gaussian of the real nodes built from the structural equations, its observed part's
density in closed form (scipy) — which EM's trace must equal and never decrease; and scikit-learn's
GaussianMixture for a latent class with one real child.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.learning import fit_info


def _joint_gaussian(model, cfg: dict, reals: list):
    """Mean (d,) and covariance (d, d) of the real nodes given the discrete configuration `cfg`."""
    idx = {v: i for i, v in enumerate(reals)}
    d = len(reals)
    mean, B = np.zeros(d), np.zeros((d, d))
    for v in reals:                                          # topological order
        mech = model.mechanisms[v]
        if isinstance(mech, cn.ConditionalLinearGaussian):
            k = tuple(cfg[p] for p in mech.discrete_parents)
            b, w, s = mech.intercept[k], mech.weights[k], np.sqrt(mech.variance[k])
            rp = mech.real_parents
        else:
            b, w, s, rp = mech.bias, mech.weights, mech.sigma, mech.parents
        mean[idx[v]] = b + sum(wj * mean[idx[p]] for wj, p in zip(w, rp))
        for wj, p in zip(w, rp):
            B[idx[v]] += wj * B[idx[p]]
        B[idx[v], idx[v]] += s
    return mean, B @ B.T


def brute_loglik(model, df) -> float:
    from scipy.stats import multivariate_normal

    order = model.dag.topological_order()
    disc = [v for v in order if model.spec(v).is_discrete]
    reals = [v for v in order if not model.spec(v).is_discrete]
    total = 0.0
    for _, row in df.iterrows():
        p = 0.0
        for states in itertools.product(*(range(model.spec(v).card) for v in disc)):
            cfg = dict(zip(disc, states))
            if any(not (row[v] is None or row[v] != row[v]) and model.states(v).index(row[v]) != cfg[v]
                   for v in disc if v in row):
                continue
            prob = 1.0
            for v in disc:
                mech = model.mechanisms[v]
                prob *= mech.table[tuple(cfg[q] for q in mech.parents) + (cfg[v],)]
            mean, cov = _joint_gaussian(model, cfg, reals)
            obs = [i for i, v in enumerate(reals) if v in row and row[v] == row[v]]
            if obs:
                prob *= multivariate_normal(mean[obs], cov[np.ix_(obs, obs)]).pdf(
                    np.array([row[reals[i]] for i in obs], dtype=float))
            p += prob
        total += np.log(p)
    return total


@pytest.fixture(scope="module")
def holes():
    m = cn.gallery.load("waste-incinerator")
    df = m.sample(300, seed=2).to_pandas()
    rng = np.random.default_rng(5)
    df["Filter"] = df["Filter"].astype(object)
    df.loc[rng.random(300) < 0.25, "Filter"] = None                    # a discrete parent of Efficiency and Dust
    df.loc[rng.random(300) < 0.2, "Efficiency"] = np.nan               # a real parent of Dust
    df.loc[rng.random(300) < 0.2, "Dust"] = np.nan                     # a real child with real children
    return m, df


def test_em_trace_is_the_observed_loglik_and_never_decreases(holes):
    m, df = holes
    f = cn.fit(m.dag, df, method="em", n_iter=4, seed=1, progress=False, states={"Filter": ["intact", "defect"]})
    trace = np.array(fit_info(f).log_likelihood)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))
    assert_allclose(trace[-1], brute_loglik(f, df), rtol=1e-9)
    assert isinstance(f.mechanisms["Dust"], cn.ConditionalLinearGaussian)


@pytest.mark.slow
def test_em_from_the_model_refits_and_keeps_parent_order(holes):
    m, df = holes
    f = m.fit(df, method="em", n_iter=3, progress=False)
    assert list(f.mechanisms["Dust"].parents) == list(m.mechanisms["Dust"].parents)
    trace = np.array(fit_info(f).log_likelihood)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))
    assert trace[-1] >= brute_loglik(m, df) - 1e-6           # the truth is one point EM could have kept


def test_a_latent_class_over_a_real_child_is_a_gaussian_mixture():
    sk = pytest.importorskip("sklearn.mixture")
    rng = np.random.default_rng(0)
    z = rng.random(1500) < 0.35
    x = np.where(z, rng.normal(3.0, 0.7, 1500), rng.normal(-1.0, 1.2, 1500))
    import pandas as pd

    f = cn.fit("Z -> X", pd.DataFrame({"X": x}), method="em", latent=["Z"], states={"Z": 2}, n_iter=500,
               tol=1e-12, seed=3, progress=False)
    mech = f.mechanisms["X"]
    order = np.argsort(mech.intercept)
    ref = sk.GaussianMixture(2, tol=1e-12, max_iter=2000, random_state=0, reg_covar=0.0).fit(x[:, None])
    rorder = np.argsort(ref.means_[:, 0])
    assert_allclose(mech.intercept[order], ref.means_[rorder, 0], rtol=1e-5)
    assert_allclose(mech.variance[order], ref.covariances_[rorder, 0, 0], rtol=1e-5)
    assert_allclose(f.mechanisms["Z"].table[order], ref.weights_[rorder], rtol=1e-5)
