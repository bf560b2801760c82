"""Testing a graph against data: every conditional independence of a basis the graph implies.

A DAG implies conditional independencies among its observed variables; a
basis of them (one per non-adjacent pair: the later node, in topological
order, independent of the earlier given its parents — dagitty's
``impliedConditionalIndependencies``, :meth:`DAG.implied_independencies`)
implies all the others. :func:`local_tests` tests each statement on the data:

- ``"chi2"`` / ``"g2"``: stratified Pearson χ² / likelihood-ratio G² on
  discrete columns (:mod:`causalnet.learning.citests`);
- ``"fisher_z"``: Fisher's z of the partial correlation (continuous columns);
- ``"mixed"``: a partial-correlation test after one-hot encoding discrete
  columns: x and y are residualised on the conditioning set, and Bartlett's
  χ² of their canonical correlations, ``−(n − 1 − |S| − (p + q + 1)/2) Σ log(1 − ρ²)``
  on ``p q`` degrees of freedom, is the statistic (p, q: columns of x and y);
- ``"auto"``: ``"g2"`` when every column involved is discrete, ``"fisher_z"``
  when every one is continuous, ``"mixed"`` otherwise (statement by statement).

p-values are adjusted for multiplicity (Holm by default; Bonferroni,
Benjamini–Hochberg or none). The **permutation baseline** relabels the graph's
nodes at random (same skeleton size and shape) and counts how many relabelled
graphs have no more rejected statements than the graph given (as DoWhy's
falsification of a graph): a graph that fits no better than random relabellings
is not supported by the data.

Examples
--------
>>> import numpy as np, pandas as pd
>>> import causalnet as cn
>>> rng = np.random.default_rng(0)
>>> a = rng.normal(size=3000); b = a + rng.normal(size=3000); c = b + rng.normal(size=3000)
>>> table = local_tests(cn.DAG.parse("A -> B -> C"), pd.DataFrame({"A": a, "B": b, "C": c}))
>>> list(table["statement"]), bool(table["rejected"].any())
(['C ⊥ A | B'], False)
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
from scipy import special

from ..errors import EvidenceError, GraphError, ModelError
from ..graph.core import DAGCore
from ..graph.dag import DAG
from ..graph.separation import implied_independencies
from ..learning.citests import ChiSquare, FisherZ, GSquare
from ..learning.data import as_table
from .prepare import as_dag, as_frame, encode

__all__ = ["local_tests", "mixed_test", "adjust_pvalues", "TESTS", "CORRECTIONS", "permutation_baseline"]

TESTS = ("auto", "chi2", "g2", "fisher_z", "mixed")
CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "none")


def adjust_pvalues(p: np.ndarray, correction: str = "holm") -> np.ndarray:
    """Multiplicity-adjusted p-values (same order as `p`).

    Parameters
    ----------
    p : ndarray of shape (m,)
    correction : {"holm", "bonferroni", "fdr_bh", "none"}
    """
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if correction not in CORRECTIONS:
        raise ModelError(f"correction must be one of {list(CORRECTIONS)}, got {correction!r}")
    if m == 0 or correction == "none":
        return p.copy()
    if correction == "bonferroni":
        return np.minimum(p * m, 1.0)
    order = np.argsort(p)
    out = np.empty(m)
    if correction == "holm":
        adj = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    else:
        adj = np.minimum.accumulate((p[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    out[order] = np.minimum(adj, 1.0)
    return out


def mixed_test(frame, x: Hashable, y: Hashable, given) -> tuple[float, int, float]:
    """Bartlett's canonical-correlation χ² of x ⊥ y | given, discrete columns one-hot encoded.

    Returns
    -------
    (statistic, dof, p_value)
    """
    xm, _ = encode(frame, [x], "variable")
    ym, _ = encode(frame, [y], "variable")
    sm, _ = encode(frame, list(given), "variable")
    n = len(frame)
    base = np.column_stack([np.ones(n), sm])                                        # (n, 1+s)
    proj = base @ np.linalg.lstsq(base, np.column_stack([xm, ym]), rcond=None)[0]
    res = np.column_stack([xm, ym]) - proj                                          # (n, p+q)
    p, q = xm.shape[1], ym.shape[1]
    cov = res.T @ res
    cxx, cyy, cxy = cov[:p, :p], cov[p:, p:], cov[:p, p:]
    mat = np.linalg.pinv(cxx) @ cxy @ np.linalg.pinv(cyy) @ cxy.T                   # (p, p)
    rho2 = np.clip(np.real(np.linalg.eigvals(mat)), 0.0, 1 - 1e-15)
    stat = float(-(n - 1 - sm.shape[1] - (p + q + 1) / 2) * np.log1p(-rho2).sum())
    dof = p * q
    return stat, dof, float(special.chdtrc(dof, max(stat, 0.0)))


class _Tester:
    """Runs one statement with the test chosen for its columns."""

    def __init__(self, frame, test: str) -> None:
        import pandas as pd

        self.frame, self.test = frame, test
        self.discrete = {c: (isinstance(frame[c].dtype, pd.CategoricalDtype) or frame[c].dtype == object
                             or pd.api.types.is_bool_dtype(frame[c]) or pd.api.types.is_integer_dtype(frame[c]))
                         for c in frame.columns}
        self._tests: dict = {}

    def kind(self, cols) -> str:
        if self.test != "auto":
            return self.test
        flags = [self.discrete[c] for c in cols]
        return "g2" if all(flags) else "fisher_z" if not any(flags) else "mixed"

    def __call__(self, x, y, given) -> tuple[str, float]:
        cols = [x, y, *given]
        kind = self.kind(cols)
        if kind == "mixed":
            return kind, mixed_test(self.frame, x, y, given)[2]
        if kind not in self._tests:
            self._tests[kind] = self._build(kind)
        return kind, self._tests[kind].pvalue(x, y, tuple(given))


    def _build(self, kind: str):
        """The CI test object of `kind` over the columns it can take (real columns as floats for Fisher's z)."""
        import pandas as pd

        frame = self.frame
        if kind == "fisher_z":
            bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
            if bad:
                raise EvidenceError(f"test 'fisher_z' needs numeric columns; {bad[0]!r} is not (try test='mixed')")
            return FisherZ(as_table(frame.astype(np.float64)))
        cont = [c for c in frame.columns if not self.discrete[c]]
        if cont:
            raise EvidenceError(f"test {kind!r} needs discrete columns; {cont[0]!r} is continuous "
                                f"(try test='mixed' or 'auto')")
        return {"chi2": ChiSquare, "g2": GSquare}[kind](as_table(frame))


def _statements(dag: DAGCore, frame) -> list:
    missing = [v for v in dag.observed if v not in frame.columns]
    if missing:
        raise EvidenceError(f"the graph's observed nodes {missing[:10]} are not columns of the data; "
                            f"mark them latent or add them")
    return implied_independencies(dag, "basis")


def local_tests(graph: Any, data: Any, *, test: str = "auto", alpha: float = 0.05, correction: str = "holm",
                n_permutations: int = 0, seed: Any = None):
    """Test every independence of the graph's basis on the data.

    Parameters
    ----------
    graph : DAG, CausalModel or str
    data : pandas.DataFrame
        A column per observed node, complete.
    test : {"auto", "chi2", "g2", "fisher_z", "mixed"}
    alpha : float
        Level at which an adjusted p-value rejects.
    correction : {"holm", "bonferroni", "fdr_bh", "none"}
    n_permutations : int
        When positive, also run :func:`permutation_baseline` with that many relabellings
        (stored in ``table.attrs["permutation"]``).
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    pandas.DataFrame
        One row per statement: ``statement``, ``x``, ``y``, ``given``, ``test``,
        ``p_value``, ``adjusted_p``, ``rejected``; sorted by p-value (most evidence against first).
    """
    import pandas as pd

    dag = as_dag(graph, "local_tests")
    if test not in TESTS:
        raise ModelError(f"test must be one of {list(TESTS)}, got {test!r}")
    if not 0 < alpha < 1:
        raise ModelError(f"alpha must be in (0, 1), got {alpha!r}")
    frame = as_frame(data)
    cols = [c for c in dag.observed if c in frame.columns]
    if frame[cols].isna().any().any():
        raise EvidenceError("local tests need complete data: some of the graph's columns have missing values")
    tester = _Tester(frame[cols], test)
    rows = []
    for s in _statements(dag, frame):
        kind, p = tester(s.x, s.y, sorted(s.given, key=str))
        rows.append({"statement": str(s), "x": s.x, "y": s.y, "given": tuple(sorted(s.given, key=str)),
                     "test": kind, "p_value": p})
    table = pd.DataFrame(rows, columns=["statement", "x", "y", "given", "test", "p_value"])
    table["adjusted_p"] = adjust_pvalues(table["p_value"].to_numpy(), correction)
    table["rejected"] = table["adjusted_p"] < alpha
    table = table.sort_values("p_value", kind="stable").reset_index(drop=True)
    if n_permutations:
        table.attrs["permutation"] = permutation_baseline(dag, frame, n_permutations=n_permutations, test=test,
                                                          alpha=alpha, correction=correction, seed=seed,
                                                          observed=int(table["rejected"].sum()))
    return table


def permutation_baseline(dag: DAGCore, data: Any, *, n_permutations: int = 20, test: str = "auto",
                         alpha: float = 0.05, correction: str = "holm", seed: Any = None,
                         observed: int | None = None) -> dict:
    """How often a random relabelling of the graph's nodes fits the data as well as the graph.

    Returns
    -------
    dict
        ``rejected`` (the graph's number of rejected statements), ``permuted``
        (an array, one count per relabelling), ``share_as_good`` (fraction of
        relabellings with at most as many rejections) and ``p_value``
        ``(1 + #{permuted <= rejected}) / (1 + n_permutations)``: small when the
        graph fits better than its relabellings.
    """
    frame = as_frame(data)
    if dag.latent:
        raise GraphError("the permutation baseline needs a graph with no latent nodes")
    rng = np.random.default_rng(seed)
    if observed is None:
        observed = int(local_tests(dag, frame, test=test, alpha=alpha, correction=correction)["rejected"].sum())
    nodes = list(dag.nodes)
    counts = np.empty(n_permutations, dtype=np.int64)
    for i in range(n_permutations):
        relabel = dict(zip(nodes, rng.permutation(nodes)))
        g = DAG([(relabel[u], relabel[v]) for u, v in dag.edges], nodes=[relabel[v] for v in nodes])
        counts[i] = int(local_tests(g, frame, test=test, alpha=alpha, correction=correction)["rejected"].sum())
    as_good = int(np.sum(counts <= observed))
    return {"rejected": observed, "permuted": counts, "share_as_good": as_good / n_permutations,
            "p_value": (1 + as_good) / (1 + n_permutations)}
