"""The CausalQwen head: abduction of an individual U, action with exogenous noise.

The head sits on backbone features ``z`` (n, T, H) and follows the
CausalQwen design:

* **numerical-aware embedding** (before the backbone):
  ``e = embed[ids] + sign(v) · ln(1 + |v|) · w_num``, with numbers replaced by
  a ``<NUM>`` token and their values aligned in ``numeric_values``;
* **abduction**: ``loc_U = W_loc z + b_loc``,
  ``scale_U = softplus(W_scale z + b_scale)`` — the individual
  ``U ~ Cauchy(loc_U, scale_U)`` (n, T, C);
* **action**: exogenous noise ``N ~ Cauchy(0, |b_noise|)`` is added,
  ``U' = U + N ~ Cauchy(loc_U, scale_U + |b_noise|)``, and linear decisions
  follow: scores ``S_k = W_cls,k · U' + b_cls,k`` (n, T, V) and a regression
  ``Y = W_reg · U' + b_reg`` (n, T), each exactly
  ``Cauchy(W · loc, |W| · (scale_U + |b_noise|))``;
* **one-vs-rest** probabilities ``P_k = P(S_k > C_k) = 1/2 + atan((loc_S − C_k)/scale_S)/π``
  with learnable thresholds ``C_k``;
* **loss**: OvR binary cross-entropy summed over the vocabulary, averaged
  over ``attention_mask``, plus ``λ`` × the gated Cauchy NLL of ``Y``,
  ``num_mask · (α + (1 − α) P_<NUM>) · nll``, averaged over ``num_mask``.

Inference modes (``mode=``): ``"standard"`` (analytic), ``"causal"`` (sample
an individual ``u ~ U`` per position, then ``U' ~ Cauchy(u, |b_noise|)``),
``"individual"`` (one fixed individual factor ``eps_seed ~ U(0,1)^C`` for a
whole sequence, ``u_t = loc_U,t + scale_U,t ⊙ tan(π(eps_seed − 1/2))``),
``"noise"`` (one fixed noise instance ``eps_noise ~ Cauchy(0, 1)^C``,
``U' ~ Cauchy(loc_U + |b_noise| ⊙ eps_noise, scale_U)``) and ``"softmax"``
(``loc_S`` as logits with top-k/top-p sampling).

:meth:`CausalHead.to_model` turns the head into a :class:`~causalnet.model.CausalModel`
whose ``U`` and ``noise`` are exogenous Cauchy nodes and ``S`` and ``Y`` are
:class:`~causalnet.mechanisms.cauchy.CauchyLinear` nodes, so ``do(U = u)``
and "same individual, other context" are ordinary queries; the affine-form
engine (:mod:`causalnet.inference.cauchy`) reproduces the head's formulas.

Symbols: ``n`` batch, ``T`` positions, ``H`` backbone width, ``C`` causal
width, ``V`` vocabulary (including ``<NUM>``), ``N = n · T`` rows.

References
----------
.. [1] CausalQwen mathematical overview (shared/references/causalqwen-math-zh.md).
.. [2] H. Zhang et al., "Distribution-consistency structural causal models",
       arXiv:2401.15911.

Examples
--------
>>> import numpy as np
>>> head = CausalHead.initialise(vocab_size=5, hidden=4, num_id=4, seed=0)
>>> z = np.random.default_rng(0).normal(size=(2, 3, 4))
>>> out = head.forward(z)
>>> out.loc_S.shape, out.scale_Y.shape
((2, 3, 5), (2, 3))
>>> bool(np.all((out.probs > 0) & (out.probs < 1)))
True
"""

from ...runtime import lazy_exports

__all__ = ["CausalHead", "CausalHeadClassifier", "HeadOutput", "NumberTask", "synthetic_number_task",
           "gradient_check", "numeric_embedding", "MODES", "PARAMS", "ovr_probs", "softplus"]


# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "CausalHeadClassifier": ".classifier:CausalHeadClassifier",   # needs scikit-learn (optional)
    "MODES": ".model:MODES",
    "PARAMS": ".model:PARAMS",
    "CausalHead": ".model:CausalHead",
    "gradient_check": ".model:gradient_check",
    "HeadOutput": ".outputs:HeadOutput",
    "numeric_embedding": ".outputs:numeric_embedding",
    "ovr_probs": ".outputs:ovr_probs",
    "softplus": ".outputs:softplus",
    "NumberTask": ".synthetic:NumberTask",
    "synthetic_number_task": ".synthetic:synthetic_number_task",
})
