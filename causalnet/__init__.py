"""causalnet: probabilistic graphical models as causal DAGs.

The public surface, re-exported from the modules that define it. See
``docs/index.md`` for a tour.
"""

from . import gallery
from .dag import DAG
from .distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian
from .errors import (
    CausalNetError,
    CausalNetWarning,
    EvidenceError,
    GraphError,
    ModelError,
    NotIdentifiable,
    RenderError,
    ShapeError,
)
from .inference.counterfactual import probability_of_necessity, probability_of_sufficiency, tian_pearl_bounds
from .io.dot import render, to_dot
from .mechanisms.base import Mechanism, Spec
from .mechanisms.function import Deterministic, Function
from .mechanisms.gaussian import LinearGaussian
from .mechanisms.tabular import CPT, Categorical
from .model import CausalModel, Samples, Trace
from .queries import parse_query
from .separation import Independence

__version__ = "0.1.0"

__all__ = [
    "DAG",
    "Independence",
    "CausalModel",
    "Samples",
    "Trace",
    "Mechanism",
    "Spec",
    "Categorical",
    "CPT",
    "LinearGaussian",
    "Function",
    "Deterministic",
    "DiscreteDistribution",
    "Gaussian",
    "EmpiricalDistribution",
    "parse_query",
    "probability_of_necessity",
    "probability_of_sufficiency",
    "tian_pearl_bounds",
    "render",
    "to_dot",
    "gallery",
    "CausalNetError",
    "CausalNetWarning",
    "EvidenceError",
    "GraphError",
    "ModelError",
    "NotIdentifiable",
    "RenderError",
    "ShapeError",
]
