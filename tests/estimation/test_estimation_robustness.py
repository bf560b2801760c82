"""Bad input to cn.estimate, refute, sensitivity and local tests: a typed error or a finite answer, never
NaN, an untyped exception or a mutated frame (the `guarded` harness of tests/conftest.py)."""

import numpy as np
import pandas as pd
from conftest import guarded
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn

RNG = np.random.default_rng(0)
N = 120
Z = RNG.normal(size=N)
T = (Z + RNG.normal(size=N) > 0).astype(int)
FRAME = pd.DataFrame({"Z": Z, "T": T, "Y": T + Z + RNG.normal(size=N), "C": RNG.choice(list("abc"), N)})
GRAPH = cn.DAG.parse("Z -> T -> Y; Z -> Y; C -> Y")
junk = st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=4),
                 st.lists(st.sampled_from(["Z", "C", "T", "Y", "Q"]), max_size=3))


@settings(max_examples=60, deadline=None)
@given(method=st.one_of(st.sampled_from(["auto", "regression", "ipw", "aipw", "plugin", "iv"]), junk),
       estimand=st.one_of(st.sampled_from(["ate", "att", "atc", "cate"]), junk),
       adjust=junk, treated=junk, ci=st.one_of(st.sampled_from(["analytic", "bootstrap"]), junk),
       trim=st.one_of(st.none(), st.floats(-1, 1)), modifiers=junk)
def test_estimate_on_bad_options(method, estimand, adjust, treated, ci, trim, modifiers):
    out = guarded(cn.estimate, GRAPH, FRAME, "T", "Y", method=method, estimand=estimand, adjust=adjust,
                  treated=treated, ci=ci, n_bootstrap=5, trim=trim, effect_modifiers=modifiers, seed=0)
    if isinstance(out, cn.Effect):
        assert np.isfinite([out.value, out.std_err, *out.ci]).all()


@settings(max_examples=40, deadline=None)
@given(treatment=st.sampled_from(["T", "Z", "C", "Y", "Q"]), outcome=st.sampled_from(["Y", "T", "Z", "Q"]),
       data=st.sampled_from(["full", "nan", "constant", "list"]))
def test_estimate_on_bad_columns(treatment, outcome, data):
    frame = {"full": FRAME, "nan": FRAME.assign(Y=np.where(np.arange(N) == 0, np.nan, FRAME["Y"])),
             "constant": FRAME.assign(T=0), "list": [1, 2, 3]}[data]
    guarded(cn.estimate, GRAPH, frame, treatment, outcome, ci="analytic")


@settings(max_examples=30, deadline=None)
@given(method=st.one_of(st.sampled_from(["placebo-treatment", "dummy-outcome", "e-value", "partial-r2"]), junk),
       n=st.integers(-2, 4), benchmark=junk)
def test_refute_and_sensitivity_on_bad_options(method, n, benchmark):
    e = cn.estimate(GRAPH, FRAME, "T", "Y", method="regression", ci="analytic")
    guarded(e.refute, method, n_simulations=n, seed=0)
    guarded(e.sensitivity, method, benchmark=benchmark)


@settings(max_examples=30, deadline=None)
@given(test=st.one_of(st.sampled_from(["auto", "chi2", "g2", "fisher_z", "mixed"]), junk),
       correction=st.one_of(st.sampled_from(["holm", "none"]), junk), alpha=st.floats(-1, 2))
def test_local_tests_on_bad_options(test, correction, alpha):
    guarded(GRAPH.local_tests, FRAME, test=test, correction=correction, alpha=alpha)
