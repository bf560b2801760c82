"""Data for an estimator: the treatment contrast, outcome, covariates and modifiers as arrays.

A treatment column is one of three kinds, decided from its values:

- ``"binary"``: two distinct values (0/1, False/True, or two labels; the
  contrast is ``treated`` versus ``control``, by default the larger versus the
  smaller value);
- ``"categorical"``: a pandas categorical, string or object column with more
  than two levels; ``treated=`` and ``control=`` name the two levels compared;
- ``"continuous"``: numbers with more than two distinct values; the contrast
  is ``do(T=treated)`` versus ``do(T=control)``, by default 1 versus 0, i.e.
  the effect per unit in a linear model. (Recode a numeric column with more
  levels as a pandas categorical to treat it as categorical.)

Covariates and effect modifiers that are categorical are one-hot encoded with
the first level dropped; every column must be complete (missing values raise
:class:`~causalnet.errors.EvidenceError` naming the column, rows are never
dropped silently).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..errors import EvidenceError, GraphError, ModelError
from ..graph.core import DAGCore
from ..graph.dag import DAG
from ..learning.strings import string_codes

__all__ = ["Prepared", "prepare", "as_frame", "as_dag", "indicators"]


def as_dag(graph: Any, who: str) -> DAGCore:
    """`graph` as a DAG: a DAG itself, a graph string, or a model's ``.dag``; `who` names the caller in the error."""
    if isinstance(graph, DAGCore):
        return graph
    if isinstance(graph, str):
        return DAG.parse(graph)
    dag = getattr(graph, "dag", None)
    if isinstance(dag, DAGCore):
        return dag
    raise GraphError(f"{who} needs a DAG, a CausalModel or a graph string, got {type(graph).__name__}")


def as_frame(data: Any):
    """`data` as a pandas DataFrame (a Dask DataFrame is computed; a mapping of columns is wrapped)."""
    import pandas as pd

    if hasattr(data, "compute") and hasattr(data, "npartitions"):
        data = data.compute()
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, dict):
        return pd.DataFrame(data)
    raise EvidenceError(f"data must be a pandas DataFrame (or a Dask DataFrame or a dict of columns), "
                        f"got {type(data).__name__}")


def _column(frame, name: Hashable, role: str) -> Any:
    if name not in frame.columns:
        raise EvidenceError(f"the {role} {name!r} is not a column of the data; columns: {list(frame.columns)[:20]}")
    col = frame[name]
    if col.isna().any():
        raise EvidenceError(f"the {role} column {name!r} has {int(col.isna().sum())} missing values; "
                            f"estimation needs complete data (drop or impute them first)")
    return col


def _is_discrete(col) -> bool:
    import pandas as pd

    return isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object or pd.api.types.is_string_dtype(col) \
        or pd.api.types.is_bool_dtype(col)


def indicators(col, levels: Sequence) -> np.ndarray:
    """``(n, len(levels))`` float indicators ``col == level``: a string column is factorised once and compared as codes.

    Other columns are compared value by value by numpy (``col.to_numpy() == level``).
    """
    coded = string_codes(col)
    if coded is not None:
        codes, uniques = coded
        where = {u: j for j, u in enumerate(uniques)}
        ids = np.array([where.get(lev, -2) if isinstance(lev, str) else -2 for lev in levels], dtype=np.int64)
        return (np.asarray(codes)[:, None] == ids[None, :]).astype(np.float64)                  # (n, j)
    t = col.to_numpy()
    return np.column_stack([(t == lev) for lev in levels]).astype(np.float64) if len(levels) else \
        np.empty((len(t), 0))


def encode(frame, names: Sequence[Hashable], role: str) -> tuple[np.ndarray, list]:
    """Columns `names` as a real matrix (n, k): numbers as they are, categories one-hot without the first level."""
    import pandas as pd

    blocks, labels = [], []
    for v in names:
        col = _column(frame, v, role)
        if _is_discrete(col) and not pd.api.types.is_bool_dtype(col):
            levels = list(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else sorted(col.unique(), key=str)
            if len(levels) > 1:
                blocks.append(indicators(col, levels[1:]))                                      # (n, k-1)
            labels.extend(f"{v}[{lev}]" for lev in levels[1:])
        else:
            blocks.append(col.to_numpy(np.float64))
            labels.append(str(v))
    n = len(frame)
    x = np.column_stack(blocks) if blocks else np.empty((n, 0))                # (n, k)
    return x, labels


class Prepared:
    """Arrays for one estimation problem.

    Attributes
    ----------
    n : int
    y : ndarray of shape (n,)
    t : ndarray of shape (n,)
        The treatment as numbers (continuous) or labels (binary, categorical).
    kind : {"binary", "categorical", "continuous"}
    treated, control : Any
        The contrast.
    a1, a0 : ndarray of shape (n,) or None
        Indicators of the treated and control levels (discrete treatments).
    d1, d0, d : ndarray of shape (n, j)
        The treatment columns of a regression design with every row set to
        the treated level, to the control level, and as observed.
    z : ndarray of shape (n, kz)
        Adjustment covariates (encoded), ``z_names`` their labels.
    m : ndarray of shape (n, km)
        Effect modifiers (encoded), ``m_names`` their labels.
    outcome_binary : bool
        Whether the outcome takes only the values 0 and 1.
    """

    def __init__(self, frame, treatment: Hashable, outcome: Hashable, adjust: Sequence[Hashable],
                 modifiers: Sequence[Hashable], treated: Any = None, control: Any = None) -> None:
        self.frame, self.treatment, self.outcome = frame, treatment, outcome
        ycol = _column(frame, outcome, "outcome")
        if _is_discrete(ycol) and not _binary_values(ycol):
            raise ModelError(f"the outcome {outcome!r} must be numeric (or 0/1, True/False); got dtype {ycol.dtype}")
        self.y = ycol.to_numpy(np.float64)                                     # (n,)
        self.n = len(self.y)
        self.outcome_binary = bool(np.isin(self.y, (0.0, 1.0)).all())
        self.z, self.z_names = encode(frame, adjust, "adjustment")
        self.m, self.m_names = encode(frame, modifiers, "effect modifier")
        self._treatment(_column(frame, treatment, "treatment"), treated, control)

    def _treatment(self, col, treated: Any, control: Any) -> None:
        import pandas as pd

        levels = list(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else sorted(col.unique(), key=_order)
        present = set(col.unique())
        if len(present) < 2:
            raise EvidenceError(f"the treatment {self.treatment!r} takes a single value {levels[0]!r} in the data; "
                                f"an effect needs both arms")
        if _is_discrete(col) or len(present) == 2:
            self.kind = "binary" if len(levels) == 2 else "categorical"
            if self.kind == "categorical" and (treated is None or control is None):
                raise ModelError(f"the treatment {self.treatment!r} has {len(levels)} levels {levels[:10]}; "
                                 f"name the contrast with treated= and control=")
            treated = levels[-1] if treated is None else treated
            control = levels[0] if control is None else control
            for v, role in ((treated, "treated"), (control, "control")):
                if v not in present:
                    raise EvidenceError(f"{role}={v!r} is not a value of the treatment {self.treatment!r} "
                                        f"in the data; values: {levels[:10]}")
            if treated == control:
                raise ModelError(f"treated and control are the same value {treated!r}")
            self.t = col.to_numpy()
            ref = control if self.kind == "binary" else levels[0]
            cols = [lev for lev in levels if lev != ref]
            arms = indicators(col, [treated, control, *cols])                                # (n, 2 + j)
            self.a1, self.a0 = arms[:, 0].copy(), arms[:, 1].copy()
            self.d = np.ascontiguousarray(arms[:, 2:])                                      # (n, j)
            self.d1 = np.tile([float(lev == treated) for lev in cols], (self.n, 1))         # (n, j)
            self.d0 = np.tile([float(lev == control) for lev in cols], (self.n, 1))         # (n, j)
        else:
            self.kind = "continuous"
            treated = 1.0 if treated is None else float(treated)
            control = 0.0 if control is None else float(control)
            self.t = col.to_numpy(np.float64)
            self.a1 = self.a0 = None
            self.d = self.t[:, None]                                                       # (n, 1)
            self.d1, self.d0 = np.full((self.n, 1), treated), np.full((self.n, 1), control)
        self.treated, self.control = treated, control

    def target(self, estimand: str) -> np.ndarray:
        """Indicator (n,) of the rows the estimand averages over (all, treated, or control)."""
        if estimand in ("ate", "cate"):
            return np.ones(self.n)
        if self.a1 is None:
            raise ModelError(f"estimand={estimand!r} needs a discrete treatment; {self.treatment!r} is continuous")
        return self.a1 if estimand == "att" else self.a0

    def design(self, d: np.ndarray) -> np.ndarray:
        """The regression design ``[1, D, Z, D ⊗ M]`` (n, k) for treatment columns `d` (n, j)."""
        inter = (d[:, :, None] * self.m[:, None, :]).reshape(self.n, -1)             # (n, j*km)
        return np.column_stack([np.ones(self.n), d, self.z, inter])                  # (n, 1+j+kz+j*km)

    def covariates(self) -> np.ndarray:
        """``[1, Z]`` (n, 1 + kz): the design of propensity and arm-wise outcome models (one array, reused)."""
        if getattr(self, "_xz", None) is None:
            self._xz = np.column_stack([np.ones(self.n), self.z])
        return self._xz


def _order(v: Any) -> tuple:
    return (0, v, "") if isinstance(v, (int, float, np.integer, np.floating, bool, np.bool_)) else (1, 0, str(v))


def _binary_values(col) -> bool:
    return set(col.unique()) <= {0, 1}          # True == 1 and False == 0 in a set


def prepare(frame, treatment: Hashable, outcome: Hashable, adjust: Sequence[Hashable] = (),
            modifiers: Sequence[Hashable] = (), treated: Any = None, control: Any = None) -> Prepared:
    """Validate and encode the columns of one estimation problem (see :class:`Prepared`)."""
    return Prepared(frame, treatment, outcome, list(adjust), list(modifiers), treated, control)
