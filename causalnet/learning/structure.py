"""Structure learning from complete data: one entry point, :func:`learn_structure`, over four methods.

- ``"hill_climb"``, ``"tabu"`` — greedy search over DAGs with a decomposable
  score (:mod:`~causalnet.learning.search`); returns a :class:`~causalnet.graph.dag.DAG`.
- ``"pc"`` — the PC-stable algorithm with conditional independence tests
  (:mod:`~causalnet.learning.pc`, :mod:`~causalnet.learning.citests`);
  returns the Markov equivalence class as a :class:`~causalnet.graph.equivalence.PDAG`.
- ``"ges"`` — greedy equivalence search over CPDAGs (:mod:`~causalnet.learning.ges`);
  returns a :class:`~causalnet.graph.equivalence.PDAG`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import GraphError, ModelError
from ..graph.dag import DAG
from ..graph.equivalence import PDAG
from ..mechanisms.base import as_generator
from ..progress import progress_bar
from .citests import TESTS, ChiSquare, CITest, FisherZ, GSquare
from .data import Table, as_table
from .ges import GES
from .pc import PC
from .problem import as_dag
from .scores import make_score
from .search import DAGSearch, HillClimb, Tabu

__all__ = ["learn_structure", "cg_black_list", "cg_orientations", "DEFAULT_SCORE", "DEFAULT_TEST", "METHODS", "HillClimb", "Tabu", "PC", "GES", "CITest", "ChiSquare", "GSquare",
           "FisherZ", "TESTS"]

METHODS = ("hill_climb", "tabu", "pc", "ges")
#: The default score and test for discrete, continuous and mixed columns.
DEFAULT_SCORE = {"discrete": "bic", "continuous": "bic-g", "mixed": "bic-cg"}
DEFAULT_TEST = {"discrete": "chi2", "continuous": "fisher_z", "mixed": "cg-lrt"}


def _edge_set(edges, nodes, what: str) -> frozenset:
    out = set()
    for e in edges or ():
        try:
            a, b = e
        except (TypeError, ValueError):
            raise GraphError(f"{what}: {e!r} is not a (parent, child) pair") from None
        for v in (a, b):
            if v not in nodes:
                raise GraphError(f"{what} names {v!r}, which is not a column of the data; columns: {list(nodes)}")
        out.add((a, b))
    return frozenset(out)


# -- the public entry point -------------------------------------------------------------------


def _check_common(table: Table, max_indegree, alpha) -> None:
    if table.n == 0:
        raise ModelError("the data have no rows")
    for v in table.names:
        if not table.column(v).complete:
            raise ModelError(f"column {v!r} has missing cells; structure learning needs complete data (df.dropna())")
    if max_indegree is not None and (isinstance(max_indegree, bool) or not isinstance(max_indegree, int)
                                     or max_indegree < 0):
        raise ModelError(f"max_indegree must be an integer >= 0 or None, got {max_indegree!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ModelError(f"alpha must be in (0, 1), got {alpha!r}")


def cg_black_list(table: Table) -> frozenset:
    """Every edge real -> discrete: forbidden in conditional Gaussian models (the CG restriction)."""
    kinds = {v: table.column(v).is_discrete for v in table.names}
    return frozenset((u, v) for u in table.names for v in table.names if kinds[v] and not kinds[u])


def _cg_constraints(table: Table, constraints: dict) -> dict:
    """`constraints` with every real -> discrete edge black-listed; a fixed one is a ModelError naming both nodes."""
    cg = cg_black_list(table)
    bad = sorted(constraints["fixed"] & cg)
    if bad:
        raise ModelError(f"fixed edge {bad[0]!r} makes the discrete node {bad[0][1]!r} a child of the real "
                         f"node {bad[0][0]!r}: outside conditional Gaussian models (the CG restriction)")
    return {**constraints, "black": constraints["black"] | cg}


def cg_orientations(table: Table, adj: dict) -> frozenset:
    """Every adjacency of a discrete and a real node as the edge discrete -> real: the only direction a
    conditional Gaussian model allows (background knowledge for PC's orientation)."""
    disc = {v: table.column(v).is_discrete for v in table.names}
    return frozenset((d, x) for d in adj if disc[d] for x in adj[d] if not disc[x])


def _score_search(table, method, score, equivalent_sample_size, start, constraints, bar, tabu_length,
                  structure_prior=None, restarts: int = 0, perturb: int = 1, seed: Any = None) -> DAG:
    sc = make_score(score, table, equivalent_sample_size=equivalent_sample_size, structure_prior=structure_prior)
    nodes = list(table.names)
    if sc.discrete is None:                                       # a CG score: no real -> discrete edge
        constraints = _cg_constraints(table, constraints)
    start_dag = DAG(sorted(constraints["fixed"]), nodes=nodes) if start is None else as_dag(start)
    missing = constraints["fixed"] - set(start_dag.edges)
    if missing:
        start_dag = DAG([*start_dag.edges, *missing], nodes=nodes)
    def make_search(dag):
        return DAGSearch(nodes, dag, max_indegree=constraints["max_indegree"], black=constraints["black"],
                         white=constraints["white"], fixed=constraints["fixed"])

    algo = Tabu(sc, tabu_length=tabu_length) if method == "tabu" else HillClimb(sc)
    return algo.climb(make_search, start_dag, bar, restarts=restarts, perturb=perturb, rng=as_generator(seed))


def _pc(table: Table, test, alpha, max_cond_vars, constraints, kind: str, bar) -> PDAG:
    name = test or DEFAULT_TEST[kind]
    if name not in TESTS:
        raise ModelError(f"test must be one of {sorted(TESTS)}, got {name!r}")
    need = TESTS[name].discrete
    if need is not None and (kind == "mixed" or need != (kind == "discrete")):
        raise ModelError(f"test {name!r} needs {'discrete' if need else 'continuous'} columns; the data are "
                         f"{kind} (use test='cg-lrt' for mixed columns)")
    if isinstance(max_cond_vars, bool) or not isinstance(max_cond_vars, int) or max_cond_vars < 0:
        raise ModelError(f"max_cond_vars must be an integer >= 0, got {max_cond_vars!r}")
    nodes = list(table.names)
    if kind == "mixed":                                           # the CG restriction: no real -> discrete edge
        constraints = _cg_constraints(table, constraints)
    black = constraints["black"]
    forbidden = frozenset(frozenset(e) for e in black if (e[1], e[0]) in black)     # both directions: never an edge
    fixed = constraints["fixed"]
    clash = [e for e in fixed if frozenset(e) in forbidden]
    if clash:
        raise ModelError(f"fixed edge {clash[0]!r} is black-listed in both directions")
    pc = PC(TESTS[name](table), alpha=alpha, max_cond_vars=max_cond_vars)
    adj, sepsets = pc.skeleton(nodes, bar, frozenset(frozenset(e) for e in fixed), forbidden)
    if kind == "mixed":
        fixed = fixed | cg_orientations(table, adj)
    return pc.orient(nodes, adj, sepsets, fixed)


def _ges(table: Table, score, equivalent_sample_size, constraints, kind: str, bar, structure_prior=None) -> PDAG:
    if kind == "mixed":
        raise ModelError("method 'ges' needs all-discrete or all-continuous columns; for mixed columns use "
                         "method='hill_climb' (score 'bic-cg') or method='pc' (test 'cg-lrt')")
    discrete = kind == "discrete"
    for what in ("white", "fixed"):
        if constraints[what]:
            raise ModelError(f"method 'ges' does not take {what}_list" if what == "white" else
                             "method 'ges' does not take fixed_edges (use 'hill_climb', 'tabu' or 'pc')")
    sc = make_score(score or ("bic" if discrete else "bic-g"), table, equivalent_sample_size=equivalent_sample_size,
                    structure_prior=structure_prior)
    ges = GES(sc, max_indegree=constraints["max_indegree"], forbidden=constraints["black"])
    return ges.run(list(table.names), bar)


def learn_structure(data, *, method: str = "hill_climb", score: str | None = None, test: str | None = None,
                    alpha: float = 0.05, max_indegree: int | None = None, black_list: Iterable = (),
                    white_list: Iterable = (), fixed_edges: Iterable = (), start=None, max_cond_vars: int = 5,
                    equivalent_sample_size: float | None = None, tabu_length: int = 100, states=None,
                    seed: Any = None, progress: bool | None = None,
                    structure_prior: float | None = None, restarts: int = 0, perturb: int = 1) -> DAG | PDAG:
    """Learn a DAG (score-based search) or a CPDAG (PC, GES) from complete data.

    Parameters
    ----------
    data : pandas.DataFrame or mapping column -> array
        Every column is a node; n rows.
    method : {"hill_climb", "tabu", "pc", "ges"}
    score : str, optional
        For hill_climb, tabu and ges: ``"bic"`` (default for discrete data),
        ``"bic-g"`` (default for continuous), ``"bic-cg"`` (default for mixed
        data; also ``"aic-cg"``, ``"loglik-cg"``), ``"aic"``, ``"bdeu"``,
        ``"k2"``. With a conditional Gaussian score no edge real -> discrete
        is ever added (the CG restriction).
    test : {"chi2", "g2", "fisher_z", "cg-lrt"}, optional
        For PC (default ``"chi2"`` for discrete data, ``"fisher_z"`` for
        continuous, ``"cg-lrt"`` — the conditional Gaussian likelihood-ratio
        test — for mixed). On mixed data PC applies the CG restriction: no
        real -> discrete edge is fixed or found, and every discrete–real
        adjacency is oriented discrete -> real before the v-structures (a
        v-structure that would point a real node into a discrete one is not
        made) and Meek's rules, so the result is the pattern of the DAGs in
        the equivalence class that are conditional Gaussian models.
    alpha : float
        PC's significance level.
    max_indegree : int, optional
        Search and GES: at most this many parents per node.
    black_list, white_list, fixed_edges : iterables of (u, v)
        Search: edges never added; if given, the only edges that may be added;
        edges always present. PC: `fixed_edges` are never removed and keep
        their direction; a pair black-listed both ways is never adjacent.
        GES: black-listed edges are never inserted.
    start : DAG, optional
        Search: the starting DAG (default empty plus `fixed_edges`).
    max_cond_vars : int
        PC: the largest conditioning set tried.
    structure_prior : float, optional
        ``score="bdeu"`` only: add a binomial structure prior with this
        expected number of parents per node (each edge then costs
        ``log((m − 1 − s)/s)`` nats for m columns). ``1`` reproduces
        causal-learn's ``local_score_BDeu``; default none (uniform over DAGs).
    seed : int or Generator, optional
        Draws the perturbations of `restarts`; otherwise every method is
        deterministic (ties broken by column order).
    restarts, perturb : int
        hill_climb and tabu: after the first climb, `restarts` times apply
        `perturb` random legal moves to the best DAG so far and climb again,
        keeping the best (bnlearn's ``restart`` / ``perturb``; default no restart).
    progress : bool, optional
        A tqdm bar (steps / PC levels); ``False`` silences it.

    Returns
    -------
    DAG (hill_climb, tabu) or PDAG (pc, ges)

    Raises
    ------
    ModelError
        No rows, missing cells, an unknown method, score or test, a test or
        score of the wrong kind for the columns, a bad `alpha` or `max_indegree`.
    GraphError
        A constraint naming a column that does not exist.
    """
    table = as_table(data, states=states)
    _check_common(table, max_indegree, alpha)
    if method not in METHODS:
        raise ModelError(f"method must be one of {list(METHODS)}, got {method!r}")
    for name, val, low in (("restarts", restarts, 0), ("perturb", perturb, 1)):
        if isinstance(val, bool) or not isinstance(val, int) or val < low:
            raise ModelError(f"{name} must be an integer >= {low}, got {val!r}")
    nodes = list(table.names)
    kinds = {table.column(v).is_discrete for v in nodes}
    kind = "mixed" if len(kinds) > 1 else "discrete" if kinds == {True} else "continuous"
    constraints = {"black": _edge_set(black_list, nodes, "black_list"), "white": _edge_set(white_list, nodes,
                   "white_list"), "fixed": _edge_set(fixed_edges, nodes, "fixed_edges"), "max_indegree": max_indegree}
    with progress_bar(None, progress=progress, desc=method) as bar:
        if method == "pc":
            return _pc(table, test, alpha, max_cond_vars, constraints, kind, bar)
        if method == "ges":
            return _ges(table, score, equivalent_sample_size, constraints, kind, bar, structure_prior)
        return _score_search(table, method, score or DEFAULT_SCORE[kind], equivalent_sample_size,
                             start, constraints, bar, tabu_length, structure_prior, restarts, perturb, seed)
