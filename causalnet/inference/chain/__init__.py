"""Exact inference on linear chains: the engine under HMMs and linear-chain CRFs.

A batch of ``n`` chains over ``T`` steps with ``K`` states each is given by
potentials in **log space**:

* ``unary`` of shape ``(n, T, K)``: ``unary[r, t, k]`` scores state ``k`` at step ``t``;
* ``pairwise`` of shape ``(K, K)`` (shared by every step and row) or
  ``(n, T-1, K, K)``: ``pairwise[..., t, i, j]`` scores ``i`` at step ``t``
  followed by ``j`` at step ``t+1``;
* ``mask`` of shape ``(n, T)``, bool, True on real steps. Ragged rows are
  left-aligned (row ``r`` has ``lengths[r] = mask[r].sum()`` real steps, all at
  the front); ``None`` means every step is real.

The distribution of row ``r`` over paths ``y`` of its length ``L`` is

    p(y) = exp(sum_t unary[r, t, y_t] + sum_t pairwise[r, t, y_t, y_{t+1}]) / Z_r

An HMM is the special case ``unary[:, 0] = log pi + log b(x_0)``,
``unary[:, t] = log b(x_t)``, ``pairwise = log A``; then ``log Z`` is the
log-likelihood of the observations.

Engines
-------
Sums run in probability space with per-step normalisers ("scaling", Rabiner
1989): each step is one batched ``alpha @ A`` product over the whole batch, so
Python loops only over time. Every row whose normalisers underflow (or whose
forward and backward passes disagree, the sign of silently lost mass) is
recomputed in log space with log-sum-exp (itself normalised per step, so
nothing is lost to rounding over 10^5 steps), so the answer is finite wherever
the exact answer is. Maxima (Viterbi) run in log space; with a shared finite
pairwise each step's max-plus product ``max_i (d_i + P_ij)`` is one compiled
pass (shifted to be non-negative, it is a Chebyshev distance, so
``scipy.spatial.distance.cdist`` does it for the whole batch), otherwise a
broadcast-and-reduce. The path is recovered by re-deriving each back-pointer
from the stored max-marginals, ``O(n K)`` per step (no back-pointer table).

Rows are internally sorted by length (longest first), so at step ``t`` only a
prefix of the batch is live and padding costs nothing. Long and narrow batches
(say one sequence of 10^5 steps) are cut into ~sqrt(T) chunks that are swept
side by side, joined by the chunks' transfer matrices; chunk boundaries are
checked against each other and a row that disagrees is redone step by step.

Modules
-------
One idea each: :mod:`.potentials` (validation and the internal layout,
:class:`Chain`), :mod:`.scaled` and :mod:`.log_space` (the two kinds of sweep),
:mod:`.time_chunks` (long narrow batches), :mod:`.sum_product` (likelihood,
marginals, edge counts, messages), :mod:`.max_product` (Viterbi),
:mod:`.sampling` (posterior paths), :mod:`.kernels` (shared numeric helpers),
:mod:`.layout` (flat ragged token values placed in a padded batch),
:mod:`.compiled` (the numba sweeps), :mod:`.unrolled` (generated few-state
sweeps: log-partition, scaled forward, Viterbi) and :mod:`.ragged` (one
forward-backward over flat ragged sequences, for CRF training).

The engine's contract for model builders (HMM, CRF) is the batch-first public
functions plus, for callers that build the internal layout themselves,
:class:`Chain` with :func:`chain_posterior`, :func:`chain_log_partition`,
:func:`chain_viterbi` and :func:`raise_if_impossible`.

Legend: ``n`` batch rows, ``T`` steps, ``K`` states.

Examples
--------
>>> import numpy as np
>>> from causalnet.inference.chain import forward_backward, viterbi
>>> unary = np.log([[[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]])   # (1, 3, 2)
>>> pairwise = np.log([[0.7, 0.3], [0.3, 0.7]])              # (2, 2)
>>> post = forward_backward(unary, pairwise)
>>> post.marginals.shape, np.allclose(post.marginals.sum(-1), 1)
((1, 3, 2), True)
>>> paths, scores = viterbi(unary, pairwise)
>>> paths.tolist()
[[0, 1, 1]]

References
----------
.. [1] L. R. Rabiner, "A tutorial on hidden Markov models and selected
       applications in speech recognition", Proc. IEEE 77(2), 1989.
.. [2] C. Sutton, A. McCallum, "An introduction to conditional random
       fields", Foundations and Trends in ML 4(4), 2012, sec. 4.1.
"""

from __future__ import annotations

from ...runtime import lazy_exports

__all__ = [
    # batch-first functions
    "ChainPosterior",
    "log_partition",
    "forward_backward",
    "viterbi",
    "sample_paths",
    "forward_messages",
    "backward_messages",
    # the internal-layout contract for model builders
    "Chain",
    "validate_potentials",
    "chain_posterior",
    "chain_log_partition",
    "chain_log_messages",
    "chain_viterbi",
    "chain_sample",
    "raise_if_impossible",
    "BLAS_MNK",
    "CHUNK_ELEMS",
    "FB_TOL",
    "SCALE_FLOOR",
    "log_backward",
    "log_forward",
    "log_space_posterior",
    "scaled_forward",
    "scaled_log_partition",
    "TC_MAX_NK3",
    "TC_MAX_NK3_VITERBI",
    "TC_MIN_T",
    "use_time_chunks",
]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "BLAS_MNK": ".kernels:BLAS_MNK",
    "CHUNK_ELEMS": ".kernels:CHUNK_ELEMS",
    "FB_TOL": ".kernels:FB_TOL",
    "SCALE_FLOOR": ".kernels:SCALE_FLOOR",
    "log_backward": ".log_space:log_backward",
    "log_forward": ".log_space:log_forward",
    "log_space_posterior": ".log_space:log_space_posterior",
    "chain_viterbi": ".max_product:chain_viterbi",
    "viterbi": ".max_product:viterbi",
    "Chain": ".potentials:Chain",
    "ChainPosterior": ".potentials:ChainPosterior",
    "raise_if_impossible": ".potentials:raise_if_impossible",
    "validate_potentials": ".potentials:validate_potentials",
    "chain_sample": ".sampling:chain_sample",
    "sample_paths": ".sampling:sample_paths",
    "scaled_forward": ".scaled:scaled_forward",
    "scaled_log_partition": ".scaled:scaled_log_partition",
    "backward_messages": ".sum_product:backward_messages",
    "chain_log_messages": ".sum_product:chain_log_messages",
    "chain_log_partition": ".sum_product:chain_log_partition",
    "chain_posterior": ".sum_product:chain_posterior",
    "forward_backward": ".sum_product:forward_backward",
    "forward_messages": ".sum_product:forward_messages",
    "log_partition": ".sum_product:log_partition",
    "TC_MAX_NK3": ".time_chunks:TC_MAX_NK3",
    "TC_MAX_NK3_VITERBI": ".time_chunks:TC_MAX_NK3_VITERBI",
    "TC_MIN_T": ".time_chunks:TC_MIN_T",
    "use_time_chunks": ".time_chunks:use_time_chunks",
})
