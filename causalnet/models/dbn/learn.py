"""Fitting a DBN to sequences: maximum likelihood, and EM when some values are hidden.

Parameters are tied across steps: the initial tables are estimated from step
0 only, the transition tables from every step ``t >= 1`` together. With every
value observed, the maximum-likelihood tables are normalised family counts.
With hidden values (a variable absent from the data, or cells marked -1, None
or NaN), EM (Dempster, Laird & Rubin 1977; Murphy 2002, sec. 6.2) alternates
the interface algorithm's family posteriors (expected counts, :mod:`.interface`)
with normalising them; the log-likelihood never decreases. Continuous
variables (fully observed) are fitted by their mechanisms' own estimators
(:func:`causalnet.fit`) on the stacked pairs of consecutive steps.

Symbols: ``n`` sequences, ``T`` steps.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import EvidenceError, ModelError, ShapeError
from ...mechanisms.tabular import CPT, Categorical
from .evidence import step_arrays
from .names import split_step, step_name

__all__ = ["fit", "log_likelihood", "sequence_groups"]


def _from_frame(df, variables) -> list[dict]:
    """Long (``"sequence"`` column optional) or wide (``"A[t]"`` columns) DataFrame -> list of ``{var: (n, T)}``."""
    if any(isinstance(c, str) and c.endswith("]") for c in df.columns):
        return [{c: df[c].to_numpy() for c in df.columns}]
    unknown = [c for c in df.columns if c not in variables and c != "sequence"]
    if unknown:
        raise EvidenceError(f"columns {unknown} name no variable of the DBN; variables: {list(variables)}")
    groups = [g for _, g in df.groupby("sequence", sort=False)] if "sequence" in df.columns else [df]
    by_len: dict = {}
    for g in groups:
        by_len.setdefault(len(g), []).append(g)
    return [{v: np.stack([g[v].to_numpy(dtype=object) for g in gs]) for v in df.columns if v != "sequence"}
            for gs in by_len.values()]


def sequence_groups(dbn, data) -> list[tuple[dict, int, int]]:
    """``[(arrays, n, T)]``: `data` as groups of equal-length sequences, ``{var: (n, T)}`` each.

    Discrete variables become state indices (-1 where unobserved), continuous
    ones floats (NaN where unobserved).
    """
    if hasattr(data, "columns") and hasattr(data, "groupby"):
        parts = _from_frame(data, dbn.variables)
    elif isinstance(data, Mapping):
        parts = [dict(data)]
    else:
        raise EvidenceError(f"sequences must be a mapping or a pandas DataFrame, got {type(data).__name__}")
    out = []
    for part in parts:
        stepped = {k: v for k, v in part.items() if k not in dbn.variables}
        whole = {k: v for k, v in part.items() if k in dbn.variables}
        if stepped:                                   # {"A[t]": (n,)} -> {"A": (n, T)}
            T = 1 + max(split_step(k, dbn.variables)[1] for k in stepped)
            cols: dict = {}
            for k, v in stepped.items():
                var, t = split_step(k, dbn.variables)
                cols.setdefault(var, {})[t] = np.asarray(v, dtype=object)
            for var, ts in cols.items():
                n = len(next(iter(ts.values())))
                whole[var] = np.stack([ts.get(t, np.full(n, None, dtype=object)) for t in range(T)], axis=1)
        if not whole:
            raise EvidenceError("sequences name no variable of the DBN")
        shapes = {np.shape(v) for v in whole.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ShapeError(f"every variable's sequences must share one (n, T) shape, got {sorted(shapes)}")
        n, T = next(iter(shapes))
        arrays = {}
        for v in dbn.variables:
            if v not in whole:
                continue
            if dbn.spec(v).is_discrete:
                arrays[v] = step_arrays({v: whole[v]}, {v: dbn.states(v)}, T, "sequences")[0][v]
            else:
                arrays[v] = np.asarray(whole[v], dtype=float)
        out.append((arrays, n, T))
    return out


def log_likelihood(dbn, data) -> np.ndarray:
    """``(n,)`` log-probability of each sequence (discrete DBNs; hidden cells summed out)."""
    if not dbn.is_discrete:
        raise ModelError("log_likelihood needs a discrete DBN")
    prog = dbn.program()
    return np.concatenate([prog.messages(arr, {}, n, T).log_z for arr, n, T in sequence_groups(dbn, data)])


def _counts(prog, groups, families0, families1) -> tuple[dict, dict, float]:
    """Expected family counts at step 0 and at steps >= 1, and the total log-likelihood."""
    c0, c1, ll = {}, {}, 0.0
    for arr, n, T in groups:
        msgs = prog.messages(arr, {}, n, T)
        ll += float(msgs.log_z.sum())
        m0 = prog.marginals(msgs, arr, {}, n, T, list(families0.values()), steps=[0])
        for v, fam in families0.items():
            c0[v] = c0.get(v, 0.0) + m0[fam].sum(axis=(0, 1))
        if T > 1:
            m1 = prog.marginals(msgs, arr, {}, n, T, list(families1.values()), steps=np.arange(1, T))
            for v, fam in families1.items():
                c1[v] = c1.get(v, 0.0) + m1[fam].sum(axis=(0, 1))
    return c0, c1, ll


def _tables(dbn, c0, c1, pseudocount) -> tuple[dict, dict]:
    """New mechanisms from (expected) counts; a parent configuration never seen keeps its old row."""
    new0, new1 = {}, {}
    for counts, mechs, out in ((c0, dbn.initial, new0), (c1, dbn.transition, new1)):
        for v, mech in mechs.items():
            if v not in counts:
                continue
            c = np.asarray(counts[v], dtype=float) + pseudocount
            tot = c.sum(axis=-1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                table = c / tot
            if np.any(tot == 0):
                prev = getattr(mech, "table", None)
                table = np.where(tot == 0, prev if prev is not None else 1.0 / c.shape[-1], table)
            states = dbn.states(v)
            out[v] = CPT(list(mech.parents), table, states=states) if mech.parents else Categorical(table,
                                                                                                 states=states)
    return new0, new1


def _families(dbn) -> tuple[dict, dict]:
    return ({v: tuple(m.parents) + (v,) for v, m in dbn.initial.items()},
            {v: tuple(m.parents) + (v,) for v, m in dbn.transition.items()})


def fit(dbn, data, *, n_iter: int = 100, tol: float = 1e-8, pseudocount: float = 0.0):
    """A new DBN fitted to `data` (see the module docstring and :meth:`DBN.fit`)."""
    groups = sequence_groups(dbn, data)
    if not dbn.is_discrete:
        return _fit_continuous(dbn, groups)
    fam0, fam1 = _families(dbn)
    hidden = any(v not in arr or (arr[v] < 0).any() for arr, _, _ in groups for v in dbn.variables)
    trace = []
    current = dbn
    for _ in range(n_iter if hidden else 1):
        c0, c1, ll = _counts(current.program(), groups, fam0, fam1)
        trace.append(ll)
        if len(trace) > 1 and trace[-1] - trace[-2] < tol * max(1.0, abs(trace[-2])):
            break
        init, trans = _tables(current, c0, c1, pseudocount)
        current = current.replace(init, trans)
    if hidden:
        final = log_likelihood(current, data)
        trace.append(float(final.sum()))
    current.fit_info = {"log_likelihood": trace, "n_iter": len(trace) - 1, "method": "em" if hidden else "mle"}
    return current


def _fit_continuous(dbn, groups):
    """Fully observed sequences: each mechanism's estimator on step 0 and on stacked consecutive steps."""
    import pandas as pd

    for arr, _, _ in groups:
        missing = [v for v in dbn.variables if v not in arr or np.isnan(np.asarray(arr[v], dtype=float)).any()]
        if missing:
            raise ModelError(f"fitting a DBN with continuous variables needs fully observed sequences; "
                             f"{missing} have hidden values")
    first = pd.DataFrame({step_name(v, 0): np.concatenate([a[v][:, 0] for a, _, _ in groups])
                          for v in dbn.variables})
    pairs = {}
    for v in dbn.variables:
        pairs[step_name(v, 0)] = np.concatenate([a[v][:, :-1].reshape(-1) for a, _, T in groups if T > 1])
        pairs[step_name(v, 1)] = np.concatenate([a[v][:, 1:].reshape(-1) for a, _, T in groups if T > 1])
    one = dbn.unroll(1).fit(first)
    two = dbn.unroll(2).fit(pd.DataFrame(pairs))
    init = {v: one.mechanisms[step_name(v, 0)].with_parents(dbn.initial[v].parents) for v in dbn.variables}
    trans = {v: two.mechanisms[step_name(v, 1)].with_parents(dbn.transition[v].parents) for v in dbn.variables}
    out = dbn.replace(init, trans)
    out.fit_info = {"method": "mle", "n_iter": 0, "log_likelihood": []}
    return out
