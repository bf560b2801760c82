"""The table front door: queries from a pandas or Dask DataFrame, one posterior per row.

``m.query(targets, evidence=df)``, ``m.predict(df)`` and ``m.predict_proba(df, node)``
come here (:func:`query` also takes plain evidence and passes it to
:func:`causalnet.inference.dispatch.run_query`). Every batch below is one
request of that front door, validated once; nothing here calls back up into
the model.

A row's observed cells are its evidence; a missing cell (NaN/None/pd.NA) means
that node is unobserved in that row. Rows that share the same observed columns
(one *pattern*) are answered by one batched query, so a table of n rows costs
one engine call per distinct pattern, not one per row (and the batched engine
answers each distinct row of a pattern once).

:func:`query_frame` is ``model.query(targets, evidence=df)``: the answers of
the patterns scattered back to the rows, as one batched result.
:func:`predict_proba` gives ``P(node | row)`` per row; :func:`predict` fills
the missing cells (or whole named columns) with the most probable state of each
node's posterior marginal (the posterior mean for a continuous node).

A Dask DataFrame gives a lazy Dask DataFrame: :func:`query_partitions` and
:func:`predict_partitions` answer each partition as above, one at a time.

A merged result names its question with the frame's columns given per row:
``P(Wet | Rain=<per-row>, Sprinkler=<per-row>)`` (a missing cell leaves that
node unobserved in that row).

Symbols: ``n`` rows, ``r`` rows of one pattern, ``K`` states.

Examples
--------
>>> import pandas as pd
>>> import causalnet as cn
>>> m = cn.gallery.load("sprinkler")
>>> df = pd.DataFrame({"Rain": ["yes", None], "Sprinkler": ["off", "on"]})
>>> m.query("Wet", evidence=df).probs.round(3).tolist()      # one row per row of df
[[0.2, 0.8], [0.099, 0.901]]
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import learning
from ..arguments import is_dask_collection, is_frame
from ..distributions import DiscreteDistribution, Gaussian, GaussianMixture
from ..errors import EvidenceError, ModelError
from ..learning.strings import string_codes
from ..values import decode_states
from .dispatch import run_query
from .request import PER_ROW, as_target_list, question_text

__all__ = ["query", "query_frame", "row_answers", "predict_proba", "predict", "frame_groups", "predict_targets",
           "query_partitions", "predict_partitions"]


def query(model: Any, targets, *, evidence=None, do: Mapping | None = None, method: str = "auto",
          n_samples: int = 100_000, seed: Any = None, soft_evidence: Mapping | None = None, **options):
    """``model.query(...)``: a Dask or pandas DataFrame of evidence rows here, anything else to the front door.

    With a DataFrame, `soft_evidence` likelihoods are ``(K,)`` (every row) or
    ``(n, K)`` (one per row of the frame; pandas only), and the approximate
    engines' options pass through to every pattern's batched query.
    """
    if not is_frame(evidence):
        return run_query(model, targets, evidence=evidence, do=do, method=method, n_samples=n_samples, seed=seed,
                         soft_evidence=soft_evidence, **options)
    if is_dask_collection(evidence):
        return query_partitions(model, targets, evidence, do=do, method=method, n_samples=n_samples, seed=seed,
                                soft_evidence=soft_evidence, **options)
    return query_frame(model, targets, evidence, do=do, method=method, n_samples=n_samples, seed=seed,
                       soft_evidence=soft_evidence, **options)


def _state_indices(model: Any, node: Hashable, series) -> np.ndarray | None:
    """``(n,)`` state indices of a string column (-1 where missing), or None when another rule must read it.

    The column is factorised once (:func:`causalnet.learning.strings.string_codes`
    or a categorical's own codes) and only its distinct values are decoded, by
    the one rule of :func:`causalnet.values.decode_states`. Not for nodes whose
    state names are integers (indices would be read as names there).

    Raises
    ------
    EvidenceError
        Naming the column, the first row holding the value and the value.
    """
    states = tuple(model.states(node))
    if any(isinstance(s, (int, np.integer)) for s in states):
        return None
    if str(getattr(series, "dtype", "")) == "category":
        codes = np.asarray(series.cat.codes, dtype=np.int64)                              # (n,)
        uniques = series.cat.categories.tolist()
        if not all(isinstance(u, str) for u in uniques):
            return None
    else:
        coded = string_codes(series)
        if coded is None:
            return None
        codes, uniques = coded
    lut = np.empty(len(uniques) + 1, dtype=np.int64)                                      # (k+1,): -1 last
    lut[-1] = -1
    for j, u in enumerate(uniques):
        try:
            lut[j] = decode_states(node, states, u)
        except EvidenceError as e:
            if not np.any(codes == j):                                                    # an unused category
                lut[j] = -1
                continue
            row = int(np.flatnonzero(codes == j)[0])
            raise EvidenceError(f"column {node!r}, row {row} of the data frame: {e}") from None
    return lut[codes]                                                                     # (n,)


def _column_values(model: Any, node: Hashable, series) -> tuple[np.ndarray, np.ndarray]:
    """``(values (n,), missing (n,))``: state indices or names for a discrete node, floats for a real one."""
    if model.spec(node).is_discrete:
        coded = _state_indices(model, node, series)
        if coded is not None:
            return coded, coded < 0
    missing = np.asarray(series.isna(), dtype=bool)                                # (n,)
    if model.spec(node).is_discrete:
        values = np.array(series.astype(object), dtype=object)                       # (n,), a copy
        present = values[~missing]
        if present.size and all(isinstance(v, (float, np.floating)) for v in present.tolist()):
            x = np.asarray(present, dtype=float)
            if np.all(np.isfinite(x)) and np.all(x == np.round(x)):
                values[~missing] = x.astype(np.int64)                                   # 1.0 -> state 1
        return values, missing
    return np.where(missing, np.nan, np.asarray(series.astype(object), dtype=object)), missing


def frame_groups(model: Any, df, exclude: Sequence[Hashable] = ()) -> list[tuple[np.ndarray, dict]]:
    """``[(rows, evidence)]``: the rows of `df` sharing one pattern of missing cells, and their evidence.

    `evidence` maps each column observed in those rows to its ``(r,)`` values.
    Columns in `exclude` are ignored.

    Raises
    ------
    EvidenceError
        If a column is not a node of the model.
    """
    unknown = [c for c in df.columns if c not in model.nodes]
    if unknown:
        raise EvidenceError(f"column {unknown[0]!r} of the data frame is not a node of the model; "
                            f"nodes: {list(model.nodes)}")
    cols = [c for c in df.columns if c not in exclude]
    n = len(df)
    if not cols:
        return [(np.arange(n), {})]
    vals, miss = zip(*(_column_values(model, c, df[c]) for c in cols))
    patterns, inverse = np.unique(np.column_stack(miss), axis=0, return_inverse=True)    # (p, c), (n,)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")                                           # rows grouped by pattern
    bounds = np.cumsum(np.bincount(inverse, minlength=len(patterns)))[:-1]
    groups = []
    for pattern, rows in zip(patterns, np.split(order, bounds)):
        ev = {c: _typed(model, c, v[rows]) for c, v, m in zip(cols, vals, pattern) if not m}
        groups.append((rows, ev))
    return groups


def _typed(model: Any, node: Hashable, values: np.ndarray) -> np.ndarray:
    if model.spec(node).is_discrete:
        return values
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        bad = next(v for v in values.tolist() if not isinstance(v, (int, float, np.number)))
        raise EvidenceError(f"column {node!r} is a continuous node but holds the value {bad!r}; "
                            f"expected numbers") from None


def _rows_of_do(model: Any, do: Mapping | None, rows: np.ndarray, n: int) -> Mapping | None:
    """`do` with per-row values (a leading axis of n rows) restricted to `rows`."""
    if not do:
        return do
    out = {}
    for k, v in do.items():
        if not callable(v) and k in model.nodes and np.ndim(v) == len(model.spec(k).shape) + 1 \
                and np.shape(v)[0] == n:
            v = np.asarray(v, dtype=object if model.spec(k).is_discrete else None)[rows]
        out[k] = v
    return out


def _rows_of_soft(soft: Mapping | None, rows: np.ndarray, n: int) -> Mapping | None:
    """Soft evidence with per-row likelihoods ``(n, K)`` restricted to `rows` (``(K,)`` ones kept)."""
    if not soft:
        return soft
    out = {}
    for k, v in soft.items():
        a = np.asarray(v, dtype=object if isinstance(v, (str, bytes)) else None)
        if a.ndim == 2:
            if a.shape[0] != n:
                raise EvidenceError(f"soft evidence on {k!r} has {a.shape[0]} rows; the evidence data frame has {n}")
            v = a[rows]
        out[k] = v
    return out


def row_answers(model: Any, targets, df, *, do: Mapping | None = None, exclude: Sequence[Hashable] = (),
                soft_evidence: Mapping | None = None, **options) -> list[tuple[np.ndarray, Any]]:
    """``[(rows, answer)]``: one batched ``model.query`` per missing pattern of `df` (see :func:`query_frame`)."""
    tl = as_target_list(targets)
    for t in tl:
        if t in df.columns and t not in exclude and df[t].notna().any():
            raise EvidenceError(f"{t!r} is a target and a column of the evidence data frame with observed "
                                f"cells; drop the column (or use predict_proba, which ignores it)")
    skip = set(exclude) | {t for t in tl if t in df.columns}
    n = len(df)
    if n == 0:
        raise EvidenceError("the evidence data frame has no rows; a batch needs at least one row")
    return [(rows, run_query(model, targets, evidence=ev or None, do=_rows_of_do(model, do, rows, n),
                             soft_evidence=_rows_of_soft(soft_evidence, rows, n), **options))
            for rows, ev in frame_groups(model, df, exclude=[c for c in df.columns if c in skip])]


def query_frame(model: Any, targets, df, *, do: Mapping | None = None, exclude: Sequence[Hashable] = (),
                **options) -> Any:
    """``model.query(targets, evidence=df)``: one answer per row of `df`, batched by missing pattern.

    Parameters
    ----------
    model : CausalModel
    targets : node or list of nodes
    df : pandas.DataFrame
        One column per evidence node; a missing cell means unobserved in that row.
    do : mapping, optional
        Interventions; per-row arrays have one value per row of `df`.
    exclude : sequence of nodes
        Columns to ignore (predict_proba ignores the target's own column).
    **options
        ``method``, ``n_samples``, ``seed``, ``soft_evidence`` (``(K,)`` or
        ``(n, K)`` likelihoods, rows following `df`) and the approximate
        engines' options, as in ``model.query``.

    Returns
    -------
    DiscreteDistribution, Gaussian or GaussianMixture
        Batched: ``probs`` of shape ``(n, *cards)`` (``mean`` ``(n, d)``),
        row i answering row i of `df`; ``log_evidence`` ``(n,)`` when every
        pattern's engine gives it. Mixtures (real targets of a conditional
        Gaussian model) from several patterns merge exactly: the components
        of every pattern side by side, each row weighting only its own.

    Raises
    ------
    EvidenceError
        A column that is not a node; a target column with observed cells
        (drop it, or use ``predict_proba``); a row of probability zero.
    ModelError
        Real targets whose rows have different missing patterns (their
        Gaussians have different covariances): query each pattern apart.
    """
    answers = row_answers(model, targets, df, do=do, exclude=exclude, **options)
    result = _merge(answers, len(df))
    if len(answers) > 1 or not result.batched or result is not answers[0][1]:
        used = [c for c in df.columns if c not in exclude and c not in as_target_list(targets)]
        result.query = _frame_question(model, targets, used, do)
    return result


def _frame_question(model: Any, targets, columns: list, do: Mapping | None) -> str:
    """``P(targets | do(...), col=<per-row>, ...)``: the question a merged frame result answers."""
    base = question_text(model, [str(t) for t in as_target_list(targets)], [], list((do or {}).items()))
    if not columns:
        return base
    rows = ", ".join(f"{c}={PER_ROW}" for c in columns)
    return f"{base[:-1]}{', ' if ' | ' in base else ' | '}{rows})"


def _batched(d: Any, r: int, what: str) -> np.ndarray:
    """`d.<what>` with a leading axis of r rows (broadcast when the answer is unbatched)."""
    a = np.asarray(getattr(d, what))
    return a if d.batched else np.broadcast_to(a, (r, *a.shape))


def _merge(answers: list, n: int) -> Any:
    if len(answers) == 1 and answers[0][1].batched:
        return answers[0][1]
    first = answers[0][1]
    methods = " / ".join(dict.fromkeys(d.method for _, d in answers))
    if isinstance(first, DiscreteDistribution):
        probs = np.empty((n, *first.cards))                                            # (n, *cards)
        for rows, d in answers:
            probs[rows] = _batched(d, len(rows), "probs")
        extra = {}
        for what in ("log_evidence", "std_err"):
            if all(getattr(d, what) is not None for _, d in answers):
                arr = np.empty((n, *np.shape(getattr(answers[0][1], what))[1 if first.batched else 0:]))
                for rows, d in answers:
                    arr[rows] = _batched(d, len(rows), what)
                extra[what] = arr
        return DiscreteDistribution(first.variables, probs, [tuple(s) for s in _states(first)], batched=True,
                                    method=methods, scm=first.scm, **extra)
    if isinstance(first, GaussianMixture) and all(isinstance(d, GaussianMixture) for _, d in answers):
        return _merge_mixtures(answers, n, methods)
    if isinstance(first, Gaussian) and all(np.array_equal(d.cov, first.cov) for _, d in answers):
        mean = np.empty((n, len(first.variables)))                                     # (n, d)
        for rows, d in answers:
            mean[rows] = _batched(d, len(rows), "mean")
        return Gaussian(first.variables, mean, first.cov, batched=True, method=methods, scm=first.scm)
    raise ModelError(f"rows of the evidence data frame with different missing cells give {type(first).__name__} "
                     f"answers that do not merge into one batched result; query each missing pattern apart "
                     f"(see causalnet.inference.frames.frame_groups)")


def _merge_mixtures(answers: list, n: int, methods: str) -> GaussianMixture:
    """One batched mixture: every pattern's components side by side, each row weighting only its own."""
    first = answers[0][1]
    d = len(first.variables)
    sizes = [a.n_components for _, a in answers]
    offsets = np.cumsum([0, *sizes])
    weights = np.zeros((n, offsets[-1]))                                               # (n, K_total)
    means = np.zeros((n, offsets[-1], d))                                              # (n, K_total, d)
    for (rows, a), lo, hi in zip(answers, offsets[:-1], offsets[1:]):
        weights[np.ix_(rows, np.arange(lo, hi))] = _batched(a, len(rows), "weights")
        m = np.asarray(a.means)
        means[rows, lo:hi] = m if (a.batched and m.ndim == 3) else np.broadcast_to(m, (len(rows), *m.shape[-2:]))
    covs = np.concatenate([a.covs for _, a in answers], axis=0)                         # (K_total, d, d)
    extra = {}
    if all(a.log_evidence is not None for _, a in answers):
        log_ev = np.empty(n)
        for rows, a in answers:
            log_ev[rows] = np.broadcast_to(a.log_evidence, (len(rows),))
        extra["log_evidence"] = log_ev
    return GaussianMixture(first.variables, weights, means, covs, batched=True, method=methods, scm=first.scm,
                           **extra)


def _states(d: DiscreteDistribution) -> tuple:
    return (d.states,) if len(d.variables) == 1 else d.states


def predict_proba(model: Any, df, node: Hashable) -> np.ndarray:
    """``(n, K)``: the posterior of discrete `node` given each row's observed cells (the node's own cell ignored).

    Raises
    ------
    ModelError
        If `node` is not a discrete node.
    EvidenceError
        If a column is not a node, or a row has probability zero under the model.
    """
    if node not in model.nodes or not model.spec(node).is_discrete:
        raise ModelError(f"predict_proba needs a discrete node of the model, got {node!r}")
    return query_frame(model, node, df, exclude=(node,)).probs


def _fill_values(model: Any, df, node: Hashable) -> np.ndarray:
    """MAP state indices (discrete) or posterior means (real) of `node` for every row of `df`."""
    if model.spec(node).is_discrete:
        return predict_proba(model, df, node).argmax(axis=1)                        # (n,)
    if model.spec(node).shape != ():
        raise ModelError(f"predict fills discrete and scalar real nodes; {node!r} holds shape {model.spec(node).shape}")
    out = np.empty(len(df))
    for rows, ev in frame_groups(model, df, exclude=(node,)):
        out[rows] = _batched(run_query(model, node, evidence=ev or None), len(rows), "mean")[:, 0]
    return out


def predict_targets(model: Any, columns: Sequence[Hashable] | None) -> list:
    """The nodes :func:`predict` fills: every discrete node (`columns` None) or `columns`, checked."""
    targets = [c for c in model.nodes if model.spec(c).is_discrete] if columns is None else as_target_list(columns)
    for c in targets:
        if c not in model.nodes:
            raise ModelError(f"predict: {c!r} is not a node of the model; nodes: {list(model.nodes)}")
    return targets


def _filled_column(model: Any, df, c: Hashable, fill: np.ndarray):
    """Column `c` with the rows in `fill` predicted: state indices (-1 where missing) or floats."""
    n = len(df)
    discrete = model.spec(c).is_discrete
    out = np.full(n, -1, dtype=np.int64) if discrete else np.full(n, np.nan)
    if c in df.columns:
        values, missing = _column_values(model, c, df[c])
        keep = ~fill & ~missing
        if keep.any():
            out[keep] = model.coerce(c, _typed(model, c, values[keep]))
    if fill.any():
        out[fill] = _fill_values(model, df.loc[fill], c)
    return out


def predict(model: Any, df, columns: Sequence[Hashable] | None = None):
    """A copy of `df` with missing cells (or the whole `columns`) filled by each row's posterior.

    A discrete cell gets the most probable state of that node's posterior
    given the row's observed cells (marginal MAP per node, not the joint MPE);
    a real cell gets the posterior mean. With `columns=None` every discrete
    node of the model is filled where missing (added when absent), and so is
    every scalar real node that is a column of `df`; with
    `columns`, those columns are predicted in every row (their own cells
    ignored). Predicted discrete columns come back as pandas Categoricals over
    the node's states (given cells decoded by the usual rule: names or indices).

    Raises
    ------
    ModelError
        If a named column is not a node.
    EvidenceError
        If a column of `df` is not a node, a cell is not a state of its node,
        or a row has probability zero.
    """
    import pandas as pd  # optional heavy dependency, imported on use

    out = df.copy()
    targets = predict_targets(model, columns)
    if columns is None:
        targets += [c for c in df.columns if c in model.nodes and not model.spec(c).is_discrete
                    and model.spec(c).shape == () and df[c].isna().any()]
    for c in targets:
        fill = np.ones(len(df), dtype=bool) if (columns is not None or c not in df.columns) else \
            np.asarray(df[c].isna(), dtype=bool)
        values = _filled_column(model, df, c, fill)
        if model.spec(c).is_discrete:
            out[c] = pd.Categorical.from_codes(values, categories=list(model.states(c)))
        else:
            out[c] = values
    return out


# -- Dask DataFrames: one partition at a time --------------------------------------------------------------------------------


def _answer_columns(model: Any, targets: list) -> list:
    kinds = {model.spec(t).is_discrete for t in targets}
    if kinds == {True}:
        combos = itertools.product(*(model.states(t) for t in targets))
        return [c[0] if len(targets) == 1 else ",".join(map(str, c)) for c in combos]
    if kinds == {False} and all(model.spec(t).shape == () for t in targets):
        return [f"{a}({t})" for a in ("mean", "sd") for t in targets]
    raise ModelError(f"a query over a Dask DataFrame needs all-discrete or all-scalar-real targets, got {targets}")


def _answer_part(part, model: Any, targets: list, do, options: dict, columns: list):
    import pandas as pd  # optional heavy dependency, imported on use

    out = np.empty((len(part), len(columns)))                                   # (n, columns)
    if len(part):
        for rows, d in row_answers(model, targets, part, do=do, **options):
            if hasattr(d, "probs"):
                p = d.probs if d.batched else np.broadcast_to(d.probs, (len(rows), *d.probs.shape))
                out[rows] = p.reshape(len(rows), -1)
            else:
                mean = d.mean if d.batched else np.broadcast_to(d.mean, (len(rows), d.mean.shape[-1]))
                out[rows] = np.hstack([mean, np.broadcast_to(d.std, mean.shape)])
    return pd.DataFrame(out, columns=columns, index=part.index)


def query_partitions(model: Any, targets, ddf, *, do: Mapping | None = None, **options):
    """``model.query(targets, evidence=ddf)``: a lazy Dask DataFrame of the answers, one row per row.

    Columns: the states of one discrete target (``"a,b"`` joint states for
    several), or ``mean(X)`` and ``sd(X)`` per real target; the index of
    `ddf`. Each partition is answered as :func:`query_frame`
    answers a pandas DataFrame. Per-row ``do`` arrays are refused (their rows
    would not follow the partitions).
    """
    import pandas as pd  # optional heavy dependency, imported on use

    learning.partitions.check_dask_frame(ddf, EvidenceError)   # loaded with the first Dask frame
    tl = [targets] if isinstance(targets, (str, bytes)) or not isinstance(targets, (list, tuple)) else list(targets)
    for t in tl:
        model.check_node(t, "target")
    for k, v in (do or {}).items():
        if not callable(v) and k in model.nodes and np.ndim(v) == len(model.spec(k).shape) + 1:
            raise ModelError(f"do on {k!r} has one value per row; with a Dask DataFrame give a constant (per-row "
                             f"interventions do not follow the partitions)")
    for k, v in (options.get("soft_evidence") or {}).items():
        if np.ndim(v) != 1:
            raise ModelError(f"soft evidence on {k!r} must be one likelihood (K,) with a Dask DataFrame (per-row "
                             f"likelihoods do not follow the partitions)")
    columns = _answer_columns(model, tl)
    meta = pd.DataFrame(np.empty((0, len(columns))), columns=columns)
    fn = functools.partial(_answer_part, model=model, targets=tl, do=do, options=options, columns=columns)
    return ddf.map_partitions(fn, meta=meta)


def _predict_part(part, model: Any, columns, meta):
    return meta if len(part) == 0 else predict(model, part, columns)


def predict_partitions(model: Any, ddf, columns=None):
    """``model.predict(ddf)``: a lazy Dask DataFrame, each partition filled by :func:`predict`."""
    import pandas as pd  # optional heavy dependency, imported on use

    learning.partitions.check_dask_frame(ddf, EvidenceError)   # loaded with the first Dask frame
    meta = pd.DataFrame({c: pd.Series(dtype=dt) for c, dt in ddf.dtypes.items()})
    for c in predict_targets(model, columns):
        meta[c] = pd.Categorical([], categories=list(model.states(c))) if model.spec(c).is_discrete else \
            pd.Series(dtype=np.float64)
    return ddf.map_partitions(functools.partial(_predict_part, model=model, columns=columns, meta=meta), meta=meta)
