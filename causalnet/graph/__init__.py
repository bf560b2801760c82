"""Graph layer: structure only (DAGs, d-separation, adjustment sets, DOT text); knows nothing of mechanisms.

``core`` (the structure and the contract algorithms use) <- ``parse``, ``separation``
<- ``criteria`` <- ``backdoor``, ``frontdoor`` <- ``adjustment``; ``expressions``,
``mixed`` <- ``id_algorithm`` <- ``identification``; ``drawing`` <- ``dag`` (the
:class:`DAG` users hold, whose methods delegate to those functions). One module
per question, as networkx's ``algorithms/``. See docs/graphs.md, "Where the code lives".
"""

__all__: list[str] = []
