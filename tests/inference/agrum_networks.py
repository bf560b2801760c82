"""pyAgrum helpers for the approximate engines' oracle tests (the converter is :func:`causalnet.io.agrum.to_agrum`)."""

import numpy as np

from causalnet.io.agrum import to_agrum

__all__ = ["to_agrum", "agrum_posterior"]


def agrum_posterior(engine, model, node):
    """pyAgrum's posterior of `node` as an array in causalnet's state order."""
    return np.asarray(engine.posterior(str(node)).toarray(), dtype=np.float64)
