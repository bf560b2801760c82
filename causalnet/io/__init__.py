"""Files in and out: model files, interchange formats, diagrams.

Modules
-------
files
    Bounded reading (size cap, capped gunzip, binary refused, typed file errors)
    and atomic writing (temporary file + ``os.replace``), used by every reader and writer.
json
    causalnet's own model files (JSON, exact round trip, no code).
bif, xmlbif
    The BIF and XMLBIF formats of discrete Bayesian networks.
bif_scan, bif_parser
    The common BIF dialect (every bnlearn file) in whole-block passes: read_bif's quick path; every
    other text and every error, token by token.
tables
    What the discrete formats share: row tolerance, table-size checks, the writer's view.
pgmpy
    Conversion to and from pgmpy's discrete networks.
agrum
    Conversion to pyAgrum's ``BayesNet`` (pyAgrum imported on use; for comparisons).
bnlearn
    The bnlearn repository's networks shipped as package data (and pgmpy's copies).
dot
    DOT text and rendered diagrams.
"""

from ..runtime import lazy_exports

__all__ = ["agrum", "bif", "bif_parser", "bif_scan", "bnlearn", "bundle", "dot", "files", "json", "pgmpy", "tables", "xmlbif"]

# The sub-modules, loaded when first named (``cn.io.pgmpy.to_pgmpy``), as before issue 23 made imports lazy.
__getattr__, __dir__ = lazy_exports(__name__, {name: f".{name}" for name in __all__})
