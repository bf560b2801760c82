"""causalnet.models: the model families, one sub-package each (loaded on first use).

``causalnet.models.hmm``, ``.statespace``, ``.dbn``, ``.crf``, ``.decisions``, ``.transformer``,
``.recurrent`` and ``.causal_head`` are imported when first named, so a program (or the
``causalnet`` command) that uses one family never loads the others.
"""

from ..runtime import lazy_exports

__all__ = ["causal_head", "crf", "dbn", "decisions", "hmm", "recurrent", "statespace", "transformer"]

__getattr__, __dir__ = lazy_exports(__name__, {name: f".{name}" for name in __all__})
