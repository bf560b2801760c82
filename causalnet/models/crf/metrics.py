"""Token-level ("flat") metrics of label sequences, as in ``sklearn_crfsuite.metrics``.

A tagger is scored on the concatenation of all its sequences: every token is
one classification. With ``tp_k``, ``fp_k``, ``fn_k`` the true positives,
false positives and false negatives of label ``k``::

    precision_k = tp_k / (tp_k + fp_k)     recall_k = tp_k / (tp_k + fn_k)
    f1_k = 2 tp_k / (2 tp_k + fp_k + fn_k)

``average`` combines them as scikit-learn does: ``"micro"`` (pool the counts),
``"macro"`` (mean over labels), ``"weighted"`` (mean weighted by support), or
None (one value per label). A ratio with a zero denominator counts as 0
(scikit-learn's ``zero_division=0``), so the answer is never NaN. ``labels``
restricts the score to some labels (e.g. all but ``"O"`` in named-entity
tagging); by default the labels are the sorted union of both arguments' labels,
and the default ``average`` is ``"macro"`` (sklearn-crfsuite passes its keywords
to scikit-learn, whose default ``"binary"`` does not apply to several labels).

Examples
--------
>>> y_true = [["B", "I", "O"], ["O", "B"]]
>>> y_pred = [["B", "O", "O"], ["O", "B"]]
>>> flat_accuracy_score(y_true, y_pred)
0.8
>>> round(flat_f1_score(y_true, y_pred, average="macro"), 4)
0.6
>>> sequence_accuracy_score(y_true, y_pred)
0.5
"""

from __future__ import annotations

from itertools import chain as _iter_chain

import numpy as np

from ...errors import EvidenceError, ShapeError

__all__ = [
    "flat_accuracy_score",
    "flat_precision_score",
    "flat_recall_score",
    "flat_f1_score",
    "flat_fbeta_score",
    "sequence_accuracy_score",
]


def _flatten(y_true, y_pred):
    """Flat label lists of two equally shaped lists of sequences."""
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ShapeError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    for s, (a, b) in enumerate(zip(y_true, y_pred)):
        if len(a) != len(b):
            raise ShapeError(f"sequence {s} has {len(a)} labels in y_true but {len(b)} in y_pred")
    t, p = list(_iter_chain.from_iterable(y_true)), list(_iter_chain.from_iterable(y_pred))
    if not t:
        raise ShapeError("y_true has no labels to score")
    return t, p


def _counts(y_true, y_pred, labels):
    """Labels and their (tp, fp, fn, support) arrays of shape (L,)."""
    t, p = _flatten(y_true, y_pred)
    try:
        labels = _sorted(set(t) | set(p)) if labels is None else list(labels)
        index = {lab: i for i, lab in enumerate(labels)}
    except TypeError as err:
        raise EvidenceError(f"labels must be hashable; {err}") from err
    L = len(labels)
    ti = np.fromiter((index.get(v, -1) for v in t), np.intp, len(t))
    pi = np.fromiter((index.get(v, -1) for v in p), np.intp, len(p))
    hit = ti == pi
    tp = np.bincount(ti[hit & (ti >= 0)], minlength=L).astype(float)
    fp = np.bincount(pi[pi >= 0], minlength=L) - tp
    support = np.bincount(ti[ti >= 0], minlength=L).astype(float)
    return labels, tp, fp, support - tp, support


def _sorted(values):
    try:
        return sorted(values)
    except TypeError:  # labels of mixed types
        return sorted(values, key=repr)


def _ratio(num, den):
    return np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)


def _average(values, num, den, support, average):
    if average is None:
        return values
    if average == "micro":
        return float(_ratio(np.array([num.sum()]), np.array([den.sum()]))[0])
    if average == "macro":
        return float(values.mean()) if values.size else 0.0
    if average == "weighted":
        return float(_ratio(np.array([(values * support).sum()]), np.array([support.sum()]))[0])
    raise EvidenceError(f"average must be 'micro', 'macro', 'weighted' or None; got {average!r}")


def flat_accuracy_score(y_true, y_pred) -> float:
    """Fraction of tokens whose predicted label is the true one."""
    t, p = _flatten(y_true, y_pred)
    return float(np.mean([a == b for a, b in zip(t, p)]))


def flat_precision_score(y_true, y_pred, *, labels=None, average="macro"):
    """Token precision ``tp / (tp + fp)`` per label, combined by `average`."""
    _, tp, fp, fn, support = _counts(y_true, y_pred, labels)
    return _average(_ratio(tp, tp + fp), tp, tp + fp, support, average)


def flat_recall_score(y_true, y_pred, *, labels=None, average="macro"):
    """Token recall ``tp / (tp + fn)`` per label, combined by `average`."""
    _, tp, fp, fn, support = _counts(y_true, y_pred, labels)
    return _average(_ratio(tp, tp + fn), tp, tp + fn, support, average)


def flat_fbeta_score(y_true, y_pred, beta, *, labels=None, average="macro"):
    """Token F-beta ``(1 + b²) tp / ((1 + b²) tp + b² fn + fp)`` per label, combined by `average`."""
    _, tp, fp, fn, support = _counts(y_true, y_pred, labels)
    b2 = float(beta) ** 2
    num, den = (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp
    return _average(_ratio(num, den), num, den, support, average)


def flat_f1_score(y_true, y_pred, *, labels=None, average="macro"):
    """Token F1 ``2 tp / (2 tp + fp + fn)`` per label, combined by `average`."""
    return flat_fbeta_score(y_true, y_pred, 1.0, labels=labels, average=average)


def sequence_accuracy_score(y_true, y_pred) -> float:
    """Fraction of sequences predicted entirely right."""
    _flatten(y_true, y_pred)
    return float(np.mean([list(a) == list(b) for a, b in zip(y_true, y_pred)]))
