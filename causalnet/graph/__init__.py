"""Graph layer: structure only (DAGs, d-separation, adjustment sets, DOT text); knows nothing of mechanisms.

``core`` (the structure and the contract algorithms use) <- ``parse``, ``separation``
<- ``adjustment``, ``drawing`` <- ``dag`` (the :class:`DAG` users hold, whose
methods delegate to those functions). See docs/graphs.md, "Where the code lives".
"""

__all__: list[str] = []
