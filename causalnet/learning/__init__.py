"""Models from data: parameters (MLE, Bayesian, EM), scores, structure search.

The map:

- :mod:`~causalnet.learning.data` — a DataFrame or mapping of arrays as integer
  codes and real columns; family counts by ``np.bincount``.
- :mod:`~causalnet.learning.strings` — string columns factorised once per column
  (Arrow's dictionary encoding, ``pandas.factorize`` or a compiled kernel), shared
  by every path that reads a DataFrame.
- :mod:`~causalnet.learning.string_words` — few short Arrow strings coded by numpy
  word compares (no numba), the first try of the ``numpy`` path.
- :mod:`~causalnet.learning.problem` — a structure and a table validated together.
- :mod:`~causalnet.learning.parameters` — Dirichlet priors (none, BDeu, K2,
  explicit) and least squares.
- :mod:`~causalnet.learning.fitting` — :func:`fit` and :func:`fit_model`.
- :mod:`~causalnet.learning.em` — EM for missing cells and latent nodes.
- :mod:`~causalnet.learning.scores` — decomposable scores with cached local scores.
- :mod:`~causalnet.learning.structure` — :func:`learn_structure`, the entry point of:
- :mod:`~causalnet.learning.search` — hill climbing and tabu search over DAGs;
- :mod:`~causalnet.learning.pc` and :mod:`~causalnet.learning.citests` — PC and its CI tests;
- :mod:`~causalnet.learning.ges` — greedy equivalence search.
- :mod:`~causalnet.learning.conditional` — conditional Gaussian families: per-configuration
  moments and least squares; :mod:`~causalnet.learning.cg_kernel` — their sums as one
  compiled pass (numba, the ``"learning"`` backend of :mod:`causalnet.runtime`).
- :mod:`~causalnet.learning.partitions` — Dask DataFrames: sufficient statistics
  summed over partitions.

Queries and predictions from a DataFrame (``m.query(targets, evidence=df)``,
``m.predict(df)``) are a front door of the engines: :mod:`causalnet.inference.frames`.
"""

from ..runtime import lazy_exports

__all__ = ["fit", "fit_model", "fit_info", "FitInfo", "score", "learn_structure", "is_dask_collection",
           "is_pandas_frame"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "is_dask_collection": "..arguments:is_dask_collection",
    "is_pandas_frame": "..arguments:is_pandas_frame",
    "FitInfo": ".em:FitInfo",
    "fit_info": ".em:fit_info",
    "fit": ".fitting:fit",
    "fit_model": ".fitting:fit_model",
    "score": ".partitions:score",
    "learn_structure": ".structure:learn_structure",
    "partitions": ".partitions",
})
