"""causalnet: probabilistic graphical models as causal DAGs.

The public surface, re-exported from the modules that define it. See
``docs/index.md`` for a tour.
"""

from .dag import DAG
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
from .separation import Independence

__version__ = "0.1.0"

__all__ = [
    "DAG",
    "Independence",
    "CausalNetError",
    "CausalNetWarning",
    "EvidenceError",
    "GraphError",
    "ModelError",
    "NotIdentifiable",
    "RenderError",
    "ShapeError",
]
