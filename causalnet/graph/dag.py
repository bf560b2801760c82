"""Directed acyclic graphs: the structure, with the graph questions as methods.

A :class:`DAG` is an immutable set of nodes and directed edges with no cycle,
plus a set of *latent* (unobserved) nodes and a set of *intervened* nodes
(those a ``do`` has cut from their parents; kept for drawing). Every operation
returns a new DAG; the graph you hold never changes.

Nodes are any hashable values except None; strings are the convention
(``"Z[3]"`` for unrolled dynamic models, dotted paths for blocks). Node order
is the order of first appearance and is kept by every operation, so results
are deterministic.

The structure itself lives in :mod:`causalnet.graph.core` (:class:`DAGCore`,
which this class extends). The graph algorithms are functions over a graph in
their own modules — d-separation in :mod:`causalnet.graph.separation`,
open paths in :mod:`causalnet.graph.paths`, the listing of every minimal separator in
:mod:`causalnet.graph.separators`,
adjustment sets in :mod:`causalnet.graph.adjustment`, identification with
hidden confounders in :mod:`causalnet.graph.identification`, instruments in
:mod:`causalnet.graph.instruments`, Markov equivalence in
:mod:`causalnet.graph.equivalence`, DOT text in :mod:`causalnet.graph.drawing`,
text parsing in :mod:`causalnet.graph.parse` — and the methods below only
delegate to them. The algorithms import
:mod:`~causalnet.graph.core`, never this module, so the imports run one way.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("Z -> X -> Y; Z -> Y; U [latent]")
>>> g.parents("Y")
('Z', 'X')
>>> sorted(g.descendants("Z"))
['X', 'Y']
>>> g.do({"X"}).parents("X")
()
"""

from __future__ import annotations

from .. import graph as _graph  # its question modules, each loaded on first use (graph/__init__.py)
from ..errors import ModelError
from .core import DAGCore, register_dag_class

__all__ = ["DAG", "DATA_METHODS"]

#: Methods of a DAG that need data, registered by the layer that has them (name -> function(dag, data, ...)).
DATA_METHODS: dict = {}


class DAG(DAGCore):
    """An immutable directed acyclic graph with latent and intervened marks.

    Parameters
    ----------
    edges : iterable of (u, v) pairs, optional
        Directed edges ``u -> v``. A string is not an edge: ``DAG(["XY"])``
        is an error, not ``X -> Y``.
    nodes : node or iterable of nodes, optional
        Extra nodes (isolated nodes, or to fix the node order).
    latent : node or iterable of nodes, optional
        Nodes that are not observed. They must be nodes of the graph.
    intervened : node or iterable of nodes, optional
        Nodes marked as intervened on (set by :meth:`do`; used by diagrams).

    Raises
    ------
    GraphError
        On a cycle (the message names it), a self-loop, a malformed edge (the
        message names it), a name that is None or not hashable, or a
        latent/intervened node that is not in the graph.

    Examples
    --------
    >>> g = DAG([("Z", "X"), ("Z", "Y"), ("X", "Y")])
    >>> g.topological_order()
    ('Z', 'X', 'Y')
    """

    __slots__ = ()

    @classmethod
    def parse(cls, text: str) -> DAG:
        """Build a DAG from dagitty-like text (see :mod:`causalnet.graph.parse`).

        Statements are separated by ``;`` or new lines. A statement is a chain
        of nodes joined by ``->`` or ``<-`` (``A -> B <- C``), a single node
        (an isolated node), or a node followed by attributes in brackets:
        ``U [latent]`` (``unobserved`` is a synonym). ``{A B}`` groups nodes on
        one side of an arrow. Names are identifiers (letters, digits, ``_``,
        ``.``, an optional index ``[3]``) or double-quoted strings. A
        surrounding ``dag { ... }`` is accepted, and ``#`` / ``//`` start comments.
        ``X <-> Y`` (a hidden common cause) adds a latent node ``U[X,Y]`` with
        both as children, as :func:`causalnet.graph.identification.with_bidirected`.

        Examples
        --------
        >>> g = DAG.parse("A -> B -> C; D; U [latent]; U -> {A C}")
        >>> g.nodes
        ('A', 'B', 'C', 'D', 'U')
        >>> sorted(g.latent)
        ['U']
        >>> DAG.parse("X -> Y; X <-> Y").parents("Y")
        ('X', 'U[X,Y]')
        """
        # graph.plain_text and graph.parse load with the first text parsed (a model built from mechanisms
        # never loads them)
        plain = _graph.plain_text.parse_plain_indexed(text)   # bare names and arrows: numbered in C-level passes
        if plain is not None:
            return cls.from_indices(*plain)
        edges, nodes, latent = _graph.parse.parse_graph(text)
        return cls(edges, nodes=nodes, latent=latent)

    # -- separation (causalnet.graph.separation) --------------------------------

    def d_separated(self, x, y, given=None) -> bool:
        """Whether `x` and `y` are d-separated by `given`; see :func:`causalnet.graph.separation.d_separated`."""
        return _graph.bitsep.d_separated(self, x, y, given)

    def d_connected(self, x, y, given=None) -> bool:
        """Negation of :meth:`d_separated`."""
        return not _graph.bitsep.d_separated(self, x, y, given)

    def minimal_d_separator(self, x, y, include=None, restrict=None):
        """A minimal set separating `x` and `y`; see :func:`causalnet.graph.separation.minimal_d_separator`."""
        return _graph.separation.minimal_d_separator(self, x, y, include=include, restrict=restrict)

    def open_path(self, x, y, given=None):
        """An open (d-connecting) path between `x` and `y` given `given`, or None; see :func:`causalnet.graph.paths.open_path`."""
        return _graph.paths.open_path(self, x, y, given)

    def is_d_separator(self, x, y, z) -> bool:
        """Whether `z` d-separates `x` and `y`; see :func:`causalnet.graph.separators.is_d_separator`."""
        return _graph.separators.is_d_separator(self, x, y, z)

    def is_minimal_d_separator(self, x, y, z) -> bool:
        """Whether `z` is a minimal d-separator; see :func:`causalnet.graph.separators.is_minimal_d_separator`."""
        return _graph.separators.is_minimal_d_separator(self, x, y, z)

    def minimal_separators(self, a, b, include=(), restrict=None):
        """Every minimal d-separator of `a` and `b` (a generator); see :func:`causalnet.graph.separators.minimal_separators`."""
        return _graph.separators.minimal_separators(self, a, b, include=include, restrict=restrict)

    def implied_independencies(self, kind: str = "basis"):
        """Conditional independencies implied by the graph; see :func:`causalnet.graph.separation.implied_independencies`."""
        return _graph.separation.implied_independencies(self, kind=kind)

    def local_tests(self, data, **options):
        """Test the graph's implied independencies on `data`; see :func:`causalnet.estimation.local_tests.local_tests`.

        The graph layer knows no data: the test is the one registered in
        :data:`DATA_METHODS` by :mod:`causalnet.estimation` (loaded here on first use).
        """
        fn = DATA_METHODS.get("local_tests")
        if fn is None:      # ``import causalnet`` loads the estimation layer lazily: load it by name now
            import importlib

            importlib.import_module(__name__.rsplit(".", 2)[0] + ".estimation")
            fn = DATA_METHODS.get("local_tests")
        if fn is None:
            raise ModelError("local tests need causalnet.estimation, which registered none")
        return fn(self, data, **options)

    # -- adjustment (causalnet.graph.adjustment) ---------------------------------

    def is_backdoor_adjustment(self, x, y, z) -> bool:
        """Pearl's backdoor criterion; see :func:`causalnet.graph.adjustment.is_backdoor_adjustment`."""
        return _graph.adjustment.is_backdoor_adjustment(self, x, y, z)

    def backdoor_adjustment_sets(self, x, y, *, minimal: bool = False, max_sets: int | None = 1000):
        """All backdoor adjustment sets; see :func:`causalnet.graph.adjustment.backdoor_adjustment_sets`."""
        return _graph.adjustment.backdoor_adjustment_sets(self, x, y, minimal=minimal, max_sets=max_sets)

    def is_adjustment_set(self, x, y, z, *, effect: str = "total") -> bool:
        """The (complete) adjustment criterion; see :func:`causalnet.graph.adjustment.is_adjustment_set`."""
        return _graph.adjustment.is_adjustment_set(self, x, y, z, effect=effect)

    def adjustment_sets(self, x, y, *, effect: str = "total", minimal: bool = False, max_sets: int | None = 1000):
        """All adjustment sets, total or direct effect; see :func:`causalnet.graph.adjustment.adjustment_sets`."""
        return _graph.adjustment.adjustment_sets(self, x, y, effect=effect, minimal=minimal, max_sets=max_sets)

    def minimal_adjustment_sets(self, x, y, *, effect: str = "total", max_sets: int | None = None):
        """All minimal adjustment sets; see :func:`causalnet.graph.adjustment.minimal_adjustment_sets`."""
        return _graph.adjustment.minimal_adjustment_sets(self, x, y, effect=effect, max_sets=max_sets)

    def is_frontdoor_adjustment(self, x, y, z) -> bool:
        """Pearl's front-door criterion; see :func:`causalnet.graph.adjustment.is_frontdoor_adjustment`."""
        return _graph.adjustment.is_frontdoor_adjustment(self, x, y, z)

    def frontdoor_adjustment_sets(self, x, y, *, minimal: bool = False, max_sets: int | None = 1000,
                                  max_candidates: int | None = 100_000):
        """Front-door adjustment sets; see :func:`causalnet.graph.adjustment.frontdoor_adjustment_sets`."""
        return _graph.adjustment.frontdoor_adjustment_sets(self, x, y, minimal=minimal, max_sets=max_sets,
                                                    max_candidates=max_candidates)

    # -- diagrams (causalnet.graph.drawing) ---------------------------------------

    def to_dot(self, **options) -> str:
        """DOT text for this graph; see :func:`causalnet.io.dot.to_dot` for the options."""
        _graph.drawing.check_dot_options("to_dot", options, _graph.drawing.dot_text)
        return _graph.drawing.dot_text(self, **options)

    # -- identification (causalnet.graph.identification) ---------------------------

    def identify(self, outcomes, treatments=(), given=(), *, simplify: bool = True):
        """An :class:`~causalnet.graph.identification.Estimand` for the query; see :func:`causalnet.graph.identification.identify`."""
        return _graph.identification.identify(self, outcomes, treatments, given, simplify=simplify)

    def c_components(self) -> list[frozenset]:
        """The c-components (districts) of the observed nodes; see :func:`causalnet.graph.identification.c_components`."""
        return _graph.identification.c_components(self)

    def district(self, node) -> frozenset:
        """The c-component of `node`; see :func:`causalnet.graph.identification.district`."""
        return _graph.identification.district(self, node)

    def latent_projection(self):
        """The mixed graph over the observed nodes; see :func:`causalnet.graph.identification.latent_projection`."""
        return _graph.identification.latent_projection(self)

    def do_calculus(self, rule: int, y, x=(), z=(), w=()) -> bool:
        """Whether Pearl's rule `rule` applies; see :func:`causalnet.graph.identification.do_calculus`."""
        return _graph.identification.do_calculus(self, rule, y, x, z, w)

    # -- instruments (causalnet.graph.instruments) ----------------------------------

    def instrumental_variables(self, treatment, outcome):
        """Instruments with their conditioning sets; see :func:`causalnet.graph.instruments.instrumental_variables`."""
        return _graph.instruments.instrumental_variables(self, treatment, outcome)

    def is_instrument(self, z, x, y, given=()) -> bool:
        """Whether `z` is a (conditional) instrument; see :func:`causalnet.graph.instruments.is_instrument`."""
        return _graph.instruments.is_instrument(self, z, x, y, given)

    # -- Markov equivalence (causalnet.graph.equivalence) ---------------------------

    def cpdag(self):
        """The CPDAG (Markov equivalence class); see :func:`causalnet.graph.equivalence.cpdag`."""
        return _graph.equivalence.cpdag(self)

    def is_markov_equivalent(self, other) -> bool:
        """Same skeleton and v-structures; see :func:`causalnet.graph.equivalence.is_markov_equivalent`."""
        return _graph.equivalence.is_markov_equivalent(self, other)

    def v_structures(self) -> frozenset:
        """The v-structures ``(a, c, b)``; see :func:`causalnet.graph.equivalence.v_structures`."""
        return _graph.equivalence.v_structures(self)

    def moral_graph(self):
        """The moral graph (a networkx Graph); see :func:`causalnet.graph.equivalence.moral_graph`."""
        return _graph.equivalence.moral_graph(self)


register_dag_class(DAG)
