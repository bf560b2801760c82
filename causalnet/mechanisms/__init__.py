"""causalnet.mechanisms: the node kinds (one module per family); submodules load when first named (PEP 562)."""

from ..runtime import lazy_exports

__all__: list[str] = []

# ``mechanisms.compact`` and the rest load when first named: a model of CPTs never loads noisy-OR's module.
__getattr__, __dir__ = lazy_exports(__name__, {name: f".{name}" for name in (
    "base",
    "cauchy",
    "compact",
    "conditional_gaussian",
    "decisions",
    "function",
    "gaussian",
    "intervened",
    "tabular",
    "tensor",
)})
