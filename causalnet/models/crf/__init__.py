"""Linear-chain conditional random fields: a CRFsuite-like estimator on the shared chain engine.

One idea per module:

* :mod:`.features` -- python-crfsuite items (feature dicts) or dense arrays ->
  one sparse design matrix ``(N, F)``, and the attribute vocabulary;
* :mod:`.layout` -- ragged sequences placed in the chain engine's padded batch;
* :mod:`.objective` -- CRFsuite's penalised negative log-likelihood and its gradient;
* :mod:`.optimize` -- L-BFGS and OWL-QN (L1), which scipy does not have;
* :mod:`.estimator` -- :class:`CRF`: fit, predict, marginals, weights, sklearn protocol;
* :mod:`.saving` -- ``CRF.save`` / ``CRF.load``: JSON + ``.npz``, no pickle;
* :mod:`.causal` -- the CRF as a causal model: factor-node DAG, ``do`` on tokens;
* :mod:`.engine` -- the CRF chain engine the front door asks first on a factor network;
* :mod:`.synthetic` -- a seeded tagging task for tests and benchmarks;
* :mod:`.metrics` -- token-level (flat) scores of label sequences, as sklearn-crfsuite's.

Imports flow one way: features, layout, optimize -> objective -> causal ->
estimator (the estimator calls the causal and saving modules, never the reverse).

Examples
--------
>>> from causalnet.models.crf import CRF
>>> crf = CRF(c2=0.01, max_iterations=50).fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]])
>>> crf.predict([[{"w": "b"}, {"w": "a"}]])
[['B', 'A']]
"""

from __future__ import annotations

from ...runtime import lazy_exports

__all__ = ["CRF", "factor_evidence", "synthetic_tagging", "metrics"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "metrics": ".metrics",
    "factor_evidence": ".causal:factor_evidence",
    "CRF": ".estimator:CRF",
    "synthetic_tagging": ".synthetic:synthetic_tagging",
})
