"""Gibbs and importance sampling against pyAgrum's GibbsSampling / ImportanceSampling on alarm with evidence:
at the same number of samples, causalnet's error against the exact answer is no larger than pyAgrum's (averaged
over seeds, within the noise of that average); and the pyAgrum copy (causalnet.io.agrum) is the same network."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.io.agrum import to_agrum

EVIDENCE = {"HRBP": 2, "CO": 0, "BP": 0, "HISTORY": 0}
TARGETS = ["LVFAILURE", "HYPOVOLEMIA", "STROKEVOLUME", "CVP", "ERRCAUTER"]


def test_to_agrum_is_the_same_network():
    import pyagrum as gum

    for name, ev in (("alarm", EVIDENCE), ("asia", {"xray": 0})):
        m = cn.gallery.load(name)
        ie = gum.LazyPropagation(to_agrum(m))
        ie.setEvidence({k: int(v) for k, v in ev.items()})
        ie.makeInference()
        for t in list(m.dag.nodes)[:8]:
            if t not in ev:
                assert_allclose(ie.posterior(t).toarray(), m.query(t, evidence=ev).probs, atol=1e-12)
    with pytest.raises(cn.ModelError, match="discrete model"):
        to_agrum(cn.CausalModel({"X": cn.LinearGaussian()}))


@pytest.mark.slow
@pytest.mark.parametrize("method, peer", [("gibbs", "GibbsSampling"), ("importance", "ImportanceSampling")])
def test_error_no_larger_than_pyagrums_at_the_same_sample_count(method, peer):
    import pyagrum as gum

    gum.setNumberOfThreads(1)
    m = cn.gallery.load("alarm")
    bn = to_agrum(m)
    exact = {t: m.query(t, evidence=EVIDENCE).probs for t in TARGETS}
    n, seeds = 2000, range(5)
    ours, theirs = [], []
    for s in seeds:
        ours.append(max(np.abs(m.query(t, evidence=EVIDENCE, method=method, n_samples=n, seed=s).probs
                               - exact[t]).max() for t in TARGETS))
        gum.initRandom(s + 1)
        ie = getattr(gum, peer)(bn)
        ie.setEvidence(EVIDENCE)
        ie.setMaxIter(n)
        ie.setEpsilon(1e-12)
        ie.setMinEpsilonRate(1e-15)
        ie.makeInference()
        assert ie.nbrIterations() == n
        theirs.append(max(np.abs(ie.posterior(t).toarray() - exact[t]).max() for t in TARGETS))
    ours, theirs = np.array(ours), np.array(theirs)
    noise = 2 * np.sqrt((ours.var(ddof=1) + theirs.var(ddof=1)) / len(ours))
    assert ours.mean() <= theirs.mean() + noise, (ours, theirs)
