r"""Time-varying treatments: the sequential back door and the g-formula by iterated conditional expectations.

For treatments ``A_0, ..., A_K`` (in time order) of an unrolled graph such as
``A[0] -> L[1] -> A[1] -> Y``, the effect of the regime ``do(A_0=a_0, ..., A_K=a_K)``
is identified by the **sequential back-door criterion** (Pearl & Robins 1995)
with covariate sets ``Z_0, ..., Z_K`` when, for each k, ``Z_k`` holds no
descendant of ``A_k, ..., A_K`` and

    Y ⊥ A_k | A_0..A_{k−1}, Z_0..Z_k   in the graph without the edges out of A_k
                                        and without the edges into A_{k+1}..A_K.

By default ``Z_k`` is every measured non-treatment node that is an ancestor
of a later treatment or of Y, is not a descendant of ``A_k``, and is not in an
earlier set; ``adjust=`` may give the sets (a list, one per treatment). A set
that fails the criterion is a :class:`~causalnet.errors.GraphError` naming the
treatment and the conditioning set.

The identified formula is the g-formula,
``Σ_{z} Π_k P(z_k | ā_{k−1}, z̄_{k−1}) E[Y | ā_K, z̄_K]``, evaluated as
iterated conditional expectations: ``Q_{K+1} = Y``; for k = K..0, ``Q_k`` is
the regression of ``Q_{k+1}`` on ``Z_0..Z_k`` among the rows with
``A_0..A_k = a_0..a_k``, predicted for every row; the estimate is the mean of
``Q_0``. The regressions are **saturated** (cell means over the combinations
of the history) when every history column is discrete (integer, boolean or
categorical) — then the estimate is exactly the plug-in g-formula with
empirical frequencies — and linear in the history otherwise. A regime whose
history cell has no rows is a positivity failure
(:class:`~causalnet.errors.EvidenceError`). Intervals: the bootstrap, all
replicates at once, or (``ci="analytic"``) the influence function of the
stacked estimating equations. With ``x_k`` the design of step k, ``m_k`` the
indicator of following the regime up to ``A_k``, ``B_k = E[m_k x_k x_kᵀ]``
and ``s_k = m_k x_k (Q_{k+1} − x_kᵀβ_k)`` the step's score, the regime mean's
influence is ``x_0ᵀβ_0 − μ + Σ_k u_kᵀ s_k`` where ``u_0 = B_0⁻¹ E[x_0]`` and
``u_{k+1} = B_{k+1}⁻¹ E[m_k x_{k+1} x_kᵀ] u_k`` (each step's coefficients move
the next step's target); the effect's is the treated regime's minus the
control regime's, and ``se = sqrt(mean(IF²) / n)``. For the saturated
regressions this is the nonparametric influence function of the plug-in
g-formula.

References
----------
.. [1] J. Pearl, J. Robins, "Probabilistic evaluation of sequential plans from
       causal models with hidden variables", UAI 1995.
.. [2] J. M. Robins, "A new approach to causal inference in mortality studies
       with a sustained exposure period", Mathematical Modelling 7, 1986.

Examples
--------
>>> import causalnet as cn
>>> g = cn.DAG.parse("A[0] -> L[1] -> A[1] -> Y; A[0] -> Y; L[1] -> Y; U -> L[1]; U -> Y; U [latent]")
>>> sequential_sets(g, ["A[0]", "A[1]"], "Y")
[frozenset(), frozenset({'L[1]'})]
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from ..errors import EvidenceError, GraphError, ModelError
from ..graph.core import DAGCore
from .estimators import Estimator, is_data
from .linear import cross_moments, solve_batched
from .prepare import encode

__all__ = ["SequentialGFormula", "SequentialData", "sequential_sets", "check_sequential_sets"]


def _cut(dag: DAGCore, k: int, treatments: Sequence[Hashable]) -> DAGCore:
    """The graph without the edges out of treatments[k] and into treatments[k+1:]."""
    later = set(treatments[k + 1:])
    drop = [(u, v) for u, v in dag.edges if u == treatments[k] or v in later]
    return dag.remove_edges(drop) if drop else dag


def check_sequential_sets(dag: DAGCore, treatments: Sequence[Hashable], outcome: Hashable, sets) -> list:
    """`sets` as a list of frozensets when they satisfy the sequential back-door criterion; else GraphError."""
    sets = [frozenset([s] if isinstance(s, str) else s) for s in sets]
    if len(sets) != len(treatments):
        raise GraphError(f"adjust= for {len(treatments)} treatments needs {len(treatments)} sets, got {len(sets)}")
    for k, a in enumerate(treatments):
        for v in sets[k]:
            if v not in dag or v in dag.latent:
                raise GraphError(f"adjustment node {v!r} is not a measured node of the graph{dag.hint(v)}")
        bad = sets[k] & dag.descendants(set(treatments[k:]), include_self=True)
        if bad:
            raise GraphError(f"{sorted(bad, key=str)[0]!r} in the set for {a!r} descends from {a!r} or a later treatment")
        given = set(treatments[:k]).union(*sets[:k + 1])
        if not _cut(dag, k, treatments).d_separated({outcome}, {a}, given=given):
            raise GraphError(f"the sequential back-door criterion fails at {a!r}: {outcome!r} and {a!r} are "
                             f"d-connected given {sorted(map(str, given))} once {a!r}'s out-edges and the later "
                             f"treatments' in-edges are removed")
    return sets


def sequential_sets(dag: DAGCore, treatments: Sequence[Hashable], outcome: Hashable) -> list:
    """The default covariate sets Z_0..Z_K (see the module), checked against the criterion."""
    seen: set = set()
    out = []
    measured = set(dag.observed) - set(treatments) - {outcome}
    for k in range(len(treatments)):
        relevant = dag.ancestors(set(treatments[k + 1:]) | {outcome})
        z = frozenset(v for v in measured & relevant if v not in seen) - dag.descendants(set(treatments[k:]),
                                                                                          include_self=True)
        seen |= z
        out.append(z)
    return check_sequential_sets(dag, treatments, outcome, out)


class SequentialData:
    """The columns of a sequential problem (the part of :class:`~causalnet.estimation.prepare.Prepared` it needs)."""

    kind = "sequence"

    def __init__(self, frame, treatments, outcome, sets, treated, control) -> None:
        self.frame, self.treatment, self.outcome = frame, tuple(treatments), outcome
        for v, role in [(a, "treatment") for a in treatments] + [(outcome, "outcome")]:
            if v not in frame.columns:
                raise EvidenceError(f"the {role} {v!r} is not a column of the data")
            if frame[v].isna().any():
                raise EvidenceError(f"the {role} column {v!r} has {int(frame[v].isna().sum())} missing values")
        self.y = frame[outcome].to_numpy(np.float64)
        self.n = len(self.y)
        cols = [frame[a].to_numpy() for a in self.treatment]
        levels = [np.unique(c) for c in cols]
        treated = tuple(lv[-1] for lv in levels) if treated is None else tuple(treated)
        control = tuple(lv[0] for lv in levels) if control is None else tuple(control)
        for reg, name in ((treated, "treated"), (control, "control")):
            if len(reg) != len(cols):
                raise ModelError(f"{name}= needs one value per treatment ({len(cols)}), got {reg!r}")
        self.treated, self.control = treated, control
        self.a = cols
        self.histories = []                                   # Z_0..Z_k as one matrix per step
        names: list = []
        for s in sets:
            names += [v for v in frame.columns if v in s]
            self.histories.append(encode(frame, names, "adjustment")[0])
        self.discrete = all(_is_discrete(frame[v]) for v in names)

    def target(self, estimand: str) -> np.ndarray:
        if estimand != "ate":
            raise ModelError(f"the g-formula estimates the regime contrast over all rows (estimand='ate'), "
                             f"got {estimand!r}")
        return np.ones(self.n)


def _is_discrete(col) -> bool:
    return col.dtype.kind in "iub" or col.dtype == object or str(col.dtype) == "category"


class SequentialGFormula(Estimator):
    """The g-formula for a sequence of treatments, by iterated conditional expectations (see the module)."""

    name = "g-formula"
    identification = "sequential"

    @classmethod
    def prepare(cls, frame, treatment, outcome, adjust, modifiers, treated, control, extra) -> SequentialData:
        if modifiers:
            raise ModelError("the g-formula takes no effect_modifiers")
        return SequentialData(frame, treatment, outcome, extra["sets"], treated, control)

    def __init__(self, prep, estimand, options):
        super().__init__(prep, estimand, options)
        self._paths: dict = {}
        self.designs = []
        for h in prep.histories:
            if prep.discrete:
                _, cell = np.unique(h, axis=0, return_inverse=True) if h.shape[1] else (None, np.zeros(prep.n, int))
                cell = np.asarray(cell).ravel()
                self.designs.append(np.eye(int(cell.max()) + 1)[cell])            # (n, cells) one-hot
            else:
                self.designs.append(np.column_stack([np.ones(prep.n), h]))       # (n, 1+k)

    def regime_mean(self, w: np.ndarray, regime: tuple) -> np.ndarray:
        """E[Y | do(regime)] under each weighting: w (b, n) -> (b,)."""
        p = self.prep
        q = np.broadcast_to(p.y, w.shape)                                         # (b, n)
        follows = np.ones(p.n, dtype=bool)
        masks, path = [], []
        for a, level in zip(p.a, regime):
            follows = follows & (a == level)
            masks.append(follows.copy())
        for k in range(len(regime) - 1, -1, -1):
            x, wk = self.designs[k], w * masks[k]                                 # (n, c), (b, n)
            if p.discrete:
                counts = wk @ x                                                   # (b, c)
                sums = (wk * q) @ x
                used = x.sum(axis=0) > 0
                if is_data(w) and np.any((counts[0] == 0) & used):
                    raise EvidenceError(f"positivity fails: no row follows the regime {dict(zip(p.treatment, regime))} "
                                        f"up to {p.treatment[k]!r} in some history cell of the data")
                with np.errstate(invalid="ignore", divide="ignore"):
                    beta = sums / counts                                          # (b, c) cell means
                q_next, q = q, beta @ x.T                                         # (b, n)
            else:
                if is_data(w) and masks[k].sum() <= x.shape[1]:
                    raise EvidenceError(f"positivity fails: {int(masks[k].sum())} rows follow the regime "
                                        f"{dict(zip(p.treatment, regime))} up to {p.treatment[k]!r}, too few for "
                                        f"a regression on {x.shape[1]} columns")
                beta = solve_batched(cross_moments(wk, x, x), (wk * q) @ x)       # (b, 1+k)
                q_next, q = q, beta @ x.T                                         # (b, n)
            if is_data(w):
                path.append((x, masks[k], q_next[0], beta[0]))
        if is_data(w):
            self._paths[regime] = path[::-1]                                      # steps 0..K
        return (w * q).sum(axis=1) / w.sum(axis=1)

    def influence(self, regime: tuple) -> np.ndarray:
        """The influence function (n,) of the regime mean (see the module), after a fit on the data."""
        steps = self._paths[regime]
        n = self.prep.n
        x0, _, _, beta0 = steps[0]
        pred = x0 @ beta0
        curve = pred - pred.mean()
        c = x0.mean(axis=0)                                                       # E[x_0]
        for k, (x, m, target, beta) in enumerate(steps):
            b = (x * m[:, None]).T @ x / n                                        # (c, c) B_k
            u = np.linalg.lstsq(b, c, rcond=None)[0]
            curve = curve + m * (target - x @ beta) * (x @ u)                    # u_kᵀ s_k
            if k + 1 < len(steps):
                nxt = steps[k + 1][0]
                c = (nxt * m[:, None]).T @ (x @ u) / n                            # E[m_k x_{k+1} x_kᵀ] u_k
        return curve

    def analytic(self):
        p = self.prep
        value = float(self.fit(np.ones((1, p.n)))[0])
        curve = self.influence(p.treated) - self.influence(p.control)
        return value, float(np.sqrt(np.mean(curve ** 2) / p.n))

    def fit(self, w):
        m1, m0 = self.regime_mean(w, self.prep.treated), self.regime_mean(w, self.prep.control)
        if is_data(w):
            self.means = np.array([m1[0], m0[0]])
        return m1 - m0


def sequential_formula(treatments, outcome, sets) -> str:
    """The g-formula as text, e.g. ``Σ_{L[1]} P(L[1] | A[0]) E[Y | A[0], L[1], A[1]]``."""
    terms, given, zs = [], [], []
    for a, s in zip(treatments, sets):
        names = sorted(map(str, s))
        if names:
            terms.append(f"P({', '.join(names)}{' | ' + ', '.join(given) if given else ''})")
            zs += names
        given += names + [str(a)]
    body = " ".join(terms + [f"E[{outcome} | {', '.join(given)}]"])
    return (f"Σ_{{{', '.join(zs)}}} {body}" if zs else body) + " (g-formula, sequential back door)"
