"""Graph layer: structure only (DAGs, d-separation, adjustment sets, DOT text); knows nothing of mechanisms.

``core`` (the structure and the contract algorithms use) <- ``parse``, ``separation``
<- ``criteria`` <- ``backdoor``, ``frontdoor`` <- ``adjustment``; ``expressions``,
``mixed`` <- ``id_algorithm`` <- ``identification``; ``drawing`` <- ``dag`` (the
:class:`DAG` users hold, whose methods delegate to those functions). One module
per question, as networkx's ``algorithms/``. See docs/graphs.md, "Where the code lives".
"""

from ..runtime import lazy_exports

__all__: list[str] = []

# The modules the DAG's methods delegate to, loaded on first use (PEP 562): reading a model file and
# querying it never loads identification, equivalence classes or instruments.
__getattr__, __dir__ = lazy_exports(__name__, {name: f".{name}" for name in (
    "adjustment", "bitsep", "drawing", "equivalence", "identification", "instruments", "paths", "reach", "separation",
    "separators", "parse", "plain_text")})
