"""The ``causalnet`` command.

Sub-commands::

    causalnet query MODEL "P(Y | do(X=1), Z=0)" [--json]   # a probability, do- or counterfactual query
    causalnet dsep GRAPH X Y [--given Z] [--json]          # d-separation
    causalnet adjust GRAPH X Y [--json]                    # backdoor / minimal / front-door sets
    causalnet draw GRAPH [-o FILE] [--highlight A,B,C] [--do X] ...
    causalnet gallery [--json]                             # list the gallery
    causalnet tour [--out DIR] [--no-progress]             # a guided report over the gallery
    causalnet explore MODEL [--port N] [--no-browser]       # the explorer page (click to observe / intervene)
    causalnet completion bash|zsh                          # a shell completion script

MODEL is ``gallery:NAME`` or a model file: BIF (``.bif``, ``.bif.gz``),
XMLBIF (``.xml``, ``.xmlbif``) or causalnet JSON (``.json``).

GRAPH is a file holding dagitty-like text (see :meth:`causalnet.DAG.parse`)
or JSON (``{"nodes": [...], "edges": [[u, v], ...], "latent": [...]}``),
``gallery:NAME``, or graph text given inline (``"A -> B <- C"``). Node lists
are comma-separated (``X1,X2``).

A user mistake (unknown node, bad or binary file, bad syntax, missing renderer)
prints one line ``causalnet: error: ...`` on stderr and exits with status 2.

The package: :mod:`~causalnet.cli.app` (parser, :func:`main`, error handling),
:mod:`~causalnet.cli.sources` (GRAPH, MODEL and node-list arguments),
:mod:`~causalnet.cli.graphs` (dsep, adjust, draw, gallery), :mod:`~causalnet.cli.query`
(query, ``--json``), :mod:`~causalnet.cli.explore` (the explorer page),
:mod:`~causalnet.cli.completion` (shell completion), and the tour: :mod:`~causalnet.cli.tour` (:data:`TOUR_SECTIONS`,
:func:`run_tour`), :mod:`~causalnet.cli.tour_context` (:class:`TourContext`),
:mod:`~causalnet.cli.tour_graphs` and :mod:`~causalnet.cli.tour_models` (the sections).
"""

from ..runtime import lazy_exports

__all__ = ["main", "load_graph", "load_model", "run_tour", "TourContext", "TOUR_SECTIONS"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "main": ".app:main",
    "load_graph": ".sources:load_graph",
    "load_model": ".sources:load_model",
    "TOUR_SECTIONS": ".tour:TOUR_SECTIONS",
    "run_tour": ".tour:run_tour",
    "TourContext": ".tour_context:TourContext",
})
