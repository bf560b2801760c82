"""causalnet: probabilistic graphical models as causal DAGs.

The public surface, re-exported from the modules that define it. See
``docs/index.md`` for a tour.
"""

from . import gallery, limits
from .distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian, GaussianMixture
from .errors import (
    CausalNetError,
    CausalNetWarning,
    EvidenceError,
    GraphError,
    ModelError,
    ModelFileNotFoundError,
    ModelFilePermissionError,
    NotFittedError,
    NotIdentifiable,
    NumericalError,
    RenderError,
    ResourceError,
    ShapeError,
)
from .graph.comparison import compare as compare_graphs
from .graph.dag import DAG
from .graph.equivalence import PDAG
from .graph.identification import Estimand, identify
from .graph.separation import Independence
from .inference.cauchy import Cauchy
from .inference.counterfactual import probability_of_necessity, probability_of_sufficiency, tian_pearl_bounds
from .inference.effects import CausalEffects
from .io.bif import read_bif, read_xmlbif, write_bif, write_xmlbif
from .io.dot import render, to_dot
from .io.json import from_json, load_json, save_json, to_json
from .io.pgmpy import from_pgmpy, to_pgmpy
from .learning import learn_structure, score
from .mechanisms import tensor
from .mechanisms.base import Mechanism, Spec
from .mechanisms.cauchy import CauchyLinear
from .mechanisms.conditional_gaussian import ConditionalLinearGaussian
from .mechanisms.function import Deterministic, Function
from .mechanisms.gaussian import LinearGaussian
from .mechanisms.intervened import affine, shift
from .mechanisms.tabular import CPT, Categorical
from .model import CausalModel, Samples, Trace, fit
from .models import causal_head, crf, recurrent, transformer
from .models.crf import CRF
from .models.hmm import HMM
from .queries import cf, parse_query

__version__ = "0.1.0"

__all__ = [
    "DAG",
    "Independence",
    "identify",
    "Estimand",
    "CausalModel",
    "Samples",
    "Trace",
    "Mechanism",
    "Spec",
    "Categorical",
    "CPT",
    "LinearGaussian",
    "ConditionalLinearGaussian",
    "GaussianMixture",
    "Function",
    "Deterministic",
    "DiscreteDistribution",
    "Gaussian",
    "EmpiricalDistribution",
    "parse_query",
    "cf",
    "CausalEffects",
    "probability_of_necessity",
    "probability_of_sufficiency",
    "tian_pearl_bounds",
    "render",
    "to_dot",
    "save_json",
    "load_json",
    "to_json",
    "from_json",
    "read_bif",
    "write_bif",
    "read_xmlbif",
    "write_xmlbif",
    "from_pgmpy",
    "to_pgmpy",
    "gallery",
    "tensor",
    "transformer",
    "recurrent",
    "causal_head",
    "CRF",
    "crf",
    "HMM",
    "Cauchy",
    "CauchyLinear",
    "CausalNetError",
    "CausalNetWarning",
    "EvidenceError",
    "GraphError",
    "ModelError",
    "NotIdentifiable",
    "RenderError",
    "ResourceError",
    "NumericalError",
    "ModelFileNotFoundError",
    "ModelFilePermissionError",
    "ShapeError",
    "NotFittedError",
    "limits",
    "shift",
    "affine",
    "fit",
    "score",
    "learn_structure",
    "PDAG",
    "compare_graphs",
]
