"""Discrete factors on numpy: product, marginalization, max-marginalization, evidence.

A *factor* φ over discrete variables ``(X_1, ..., X_k)`` with cards
``(K_1, ..., K_k)`` is a nonnegative array of shape ``(K_1, ..., K_k)``. A
*batched* factor holds n such tables at once, shape ``(n, K_1, ..., K_k)``: the
batch axis comes first and is never a variable. A batched and an unbatched
factor combine into a batched one (the unbatched table is shared by all rows).

All the algebra is tensor contraction with :func:`numpy.einsum`: a product of
many factors with some variables summed out is one einsum call (no tables of
rows, no Python loops over states). numpy's einsum takes at most 32 distinct
axes in one call on numpy 1.x (``NPY_MAXDIMS``); a contraction that would need
more is split into pairwise contractions whose axes are grouped (axes that play
the same role in both operands are merged by a reshape), so every call stays
within :data:`MAX_EINSUM_AXES` axes and :data:`MAX_EINSUM_OPERANDS` operands.

Legend: ``n`` batch, ``K`` states of one variable.

Examples
--------
>>> import numpy as np
>>> pa = Factor(["A"], [0.6, 0.4])
>>> pba = Factor(["A", "B"], [[0.9, 0.1], [0.2, 0.8]])   # P(B | A), A first
>>> pb = (pa * pba).marginalize(["A"])
>>> pb.vars, np.round(pb.values, 2).tolist()
(('B',), [0.62, 0.38])
>>> post, log_z = (pa * pba).reduce({"B": 1}).normalize()
>>> np.round(post.values, 4).tolist()
[0.1579, 0.8421]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from ... import limits
from ...errors import EvidenceError, ModelError, ShapeError

__all__ = [
    "Factor",
    "factor_product",
    "contract",
    "einsum_subscripts",
    "own_array",
    "as_state_index",
    "BATCH",
    "MAX_EINSUM_AXES",
    "MAX_EINSUM_OPERANDS",
]

#: Most distinct axes one einsum call may use (numpy 1.x's ``NPY_MAXDIMS``).
MAX_EINSUM_AXES = 32
#: Most operands one einsum call may take (numpy 1.x allows 32; we stay well below).
MAX_EINSUM_OPERANDS = 16

# einsum's subscript letters (string.ascii_letters, spelled out: the string module is not loaded for it)
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class _Batch:
    """The label of the batch axis (a singleton, never a variable name)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<batch>"


BATCH = _Batch()


# -- contraction ---------------------------------------------------------------


def einsum_subscripts(in_labels: Sequence[Sequence[Hashable]], out_labels: Sequence[Hashable]) -> str:
    """An einsum subscript string, one letter per distinct label (memoized).

    At most 52 distinct labels (the ASCII letters); callers keep to
    :data:`MAX_EINSUM_AXES`.

    >>> einsum_subscripts([("A", "B"), ("B", "C")], ("A", "C"))
    'ab,bc->ac'
    """
    key = (tuple(map(tuple, in_labels)), tuple(out_labels))
    got = _SUBSCRIPTS.get(key)
    if got is None:
        if len(_SUBSCRIPTS) > 100_000:
            _SUBSCRIPTS.clear()
        got = _SUBSCRIPTS[key] = _make_subscripts(*key)
    return got


_SUBSCRIPTS: dict = {}


def _make_subscripts(in_labels, out_labels) -> str:
    letters: dict = {}
    for labs in in_labels:
        for lab in labs:
            if lab not in letters:
                letters[lab] = _LETTERS[len(letters)]
    ins = ",".join("".join(letters[lab] for lab in labs) for labs in in_labels)
    return ins + "->" + "".join(letters[lab] for lab in out_labels)


def _n_labels(in_labels: Sequence[Sequence[Hashable]]) -> int:
    return len({lab for labs in in_labels for lab in labs})


def contract(
    arrays: Sequence[np.ndarray],
    in_labels: Sequence[Sequence[Hashable]],
    out_labels: Sequence[Hashable],
    *,
    optimize: bool | str = True,
) -> np.ndarray:
    """Sum over every label not in `out_labels` of the product of `arrays`.

    Parameters
    ----------
    arrays : sequence of ndarray
        ``arrays[i]`` has one axis per label in ``in_labels[i]``.
    in_labels : sequence of sequences of hashable
        Labels of each operand's axes (no repeats within one operand).
    out_labels : sequence of hashable
        Labels of the result's axes, in order; each must occur in some operand.
    optimize : bool or str
        Passed to :func:`numpy.einsum` for calls within the limits.

    Returns
    -------
    ndarray
        One axis per label of `out_labels`.

    Notes
    -----
    Calls with at most :data:`MAX_EINSUM_AXES` labels and
    :data:`MAX_EINSUM_OPERANDS` operands are a single einsum; larger ones are
    folded pairwise, each pair with its axes grouped by role so that every
    einsum call has at most six axes.
    """
    if _n_labels(in_labels) <= MAX_EINSUM_AXES and len(arrays) <= MAX_EINSUM_OPERANDS:
        return np.einsum(einsum_subscripts(in_labels, out_labels), *arrays, optimize=optimize)
    return _contract_split(list(arrays), [tuple(lab) for lab in in_labels], tuple(out_labels), optimize)


def _contract_split(arrays, in_labels, out_labels, optimize):
    """Contract too many axes/operands: chunks of operands, then pairs with grouped axes."""
    # first bring the operand count down with chunked contractions (each within limits)
    while len(arrays) > MAX_EINSUM_OPERANDS:
        k = MAX_EINSUM_OPERANDS
        head, head_l = arrays[:k], in_labels[:k]
        rest_l = in_labels[k:]
        needed = set(out_labels).union(*map(set, rest_l))
        keep = tuple(dict.fromkeys(lab for labs in head_l for lab in labs if lab in needed))
        arrays = [contract(head, head_l, keep, optimize=optimize), *arrays[k:]]
        in_labels = [keep, *rest_l]
    if _n_labels(in_labels) <= MAX_EINSUM_AXES:
        return np.einsum(einsum_subscripts(in_labels, out_labels), *arrays, optimize=optimize)
    acc, acc_l = arrays[0], in_labels[0]
    if len(arrays) == 1:
        return _contract_grouped(acc, acc_l, None, (), out_labels)
    for i in range(1, len(arrays)):
        needed = set(out_labels).union(*map(set, in_labels[i + 1:]))
        both = tuple(dict.fromkeys((*acc_l, *in_labels[i])))
        keep = tuple(lab for lab in both if lab in needed)
        if i == len(arrays) - 1:
            keep = out_labels
        acc = _contract_grouped(acc, acc_l, arrays[i], in_labels[i], keep)
        acc_l = keep
    return acc


def _contract_grouped(a, la, b, lb, out_labels):
    """Contract one or two operands with axes merged into at most six role groups.

    The roles are (in a only / in b only / in both) x (kept / summed). Each
    operand is transposed so that each group is contiguous and reshaped so that
    each group is one axis; the einsum then has at most six axes, and the
    result is reshaped back and transposed into `out_labels` order.
    """
    sa = set(la)
    sb = set(lb) if b is not None else set()
    keep = set(out_labels)
    size: dict = {}
    for labs, arr in ((la, a), (lb, b)):
        if arr is not None:
            for lab, k in zip(labs, arr.shape):
                size[lab] = k
    roles = ("ak", "as", "bk", "bs", "ck", "cs")
    groups: dict[str, list] = {r: [] for r in roles}
    for lab in dict.fromkeys((*la, *lb)):
        side = "c" if (lab in sa and lab in sb) else ("a" if lab in sa else "b")
        groups[side + ("k" if lab in keep else "s")].append(lab)

    def merged(arr, labs, order):
        # transpose so groups are contiguous, then one axis per non-empty group
        flat = [lab for r in order for lab in groups[r]]
        pos = {lab: i for i, lab in enumerate(labs)}
        arr = np.transpose(arr, [pos[lab] for lab in flat])
        shape = [int(np.prod([size[lab] for lab in groups[r]], dtype=np.int64)) for r in order if groups[r]]
        return arr.reshape(shape), [r for r in order if groups[r]]

    a2, ga = merged(a, la, ("ck", "cs", "ak", "as"))
    ops, labs = [a2], [ga]
    if b is not None:
        b2, gb = merged(b, lb, ("ck", "cs", "bk", "bs"))
        ops.append(b2)
        labs.append(gb)
    out_groups = [r for r in ("ak", "bk", "ck") if groups[r]]
    res = np.einsum(einsum_subscripts(labs, out_groups), *ops)
    flat_out = [lab for r in out_groups for lab in groups[r]]
    res = res.reshape([size[lab] for lab in flat_out])
    pos = {lab: i for i, lab in enumerate(flat_out)}
    return np.transpose(res, [pos[lab] for lab in out_labels])


# -- Factor -----------------------------------------------------------------------


def own_array(x) -> np.ndarray:
    """`x` as a C-contiguous array, copied only when it is not (0-d stays 0-d, unlike
    ``np.ascontiguousarray``)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()


def as_state_index(node: Hashable, value, card: int):
    """Validate one evidence value of `node` (with `card` states): an int state or a 1-D int array.

    Returns an ``int`` or an ``intp`` array of shape (n,); raises
    :class:`~causalnet.errors.EvidenceError` naming `node` on anything else
    (bools, floats, states out of range, other shapes).
    """
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        if arr.ndim == 0:
            return as_state_index(node, arr[()], card)
        if arr.ndim != 1:
            raise EvidenceError(f"evidence for {node!r} must be a state index or a 1-D array of them, got shape {arr.shape}")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise EvidenceError(f"evidence for {node!r} must hold integer state indices, got dtype {arr.dtype}")
        arr = arr.astype(np.intp, copy=False)
        if arr.size and (arr.min() < 0 or arr.max() >= card):
            bad = int(arr[(arr < 0) | (arr >= card)][0])
            raise EvidenceError(f"{node!r} has {card} states (0..{card - 1}); evidence gives state {bad}")
        return arr
    if isinstance(value, (bool, np.bool_)):
        raise EvidenceError(f"evidence for {node!r} must be an integer state index, got {value!r}")
    try:
        k = operator.index(value)
    except TypeError:
        raise EvidenceError(f"evidence for {node!r} must be an integer state index, got {value!r}") from None
    if not 0 <= k < card:
        raise EvidenceError(f"{node!r} has {card} states (0..{card - 1}); evidence gives state {k}")
    return k


class Factor:
    """An immutable table over discrete variables, optionally batched.

    Parameters
    ----------
    vars : sequence of hashable
        Variable names, one per table axis (after the batch axis).
    values : array_like of shape (*cards) or (n, *cards)
        Nonnegative finite entries; copied and made read-only.
    batched : bool, default False
        Whether the first axis of `values` is a batch axis.

    Attributes
    ----------
    vars : tuple
    cards : tuple of int
    values : ndarray of shape (*cards) or (n, *cards)
    batched : bool
    n : int or None
        Batch size, None when not batched.

    Raises
    ------
    ShapeError
        If `values` has the wrong number of axes for `vars`.
    ModelError
        On repeated variables or negative / non-finite values.
    """

    __slots__ = ("_vars", "_values", "_batched")

    def __init__(self, vars: Iterable[Hashable], values, *, batched: bool = False) -> None:
        vs = tuple(vars)
        arr = np.array(values, dtype=np.float64)
        if arr.ndim != len(vs) + bool(batched):
            want = ("(n, " if batched else "(") + ", ".join(f"K_{v}" for v in vs) + ")"
            raise ShapeError(f"factor over {vs} expects values of shape {want}, got shape {arr.shape}")
        if len(set(vs)) != len(vs):
            dup = next(v for v in vs if vs.count(v) > 1)
            raise ModelError(f"factor over {vs} repeats the variable {dup!r}")
        if arr.size and not (np.isfinite(arr).all() and (arr >= 0).all()):
            raise ModelError(f"factor over {vs} has negative or non-finite values")
        self._init(vs, arr, bool(batched))

    def _init(self, vs: tuple, arr: np.ndarray, batched: bool) -> None:
        if arr.flags.writeable:
            arr.flags.writeable = False
        self._vars = vs
        self._values = arr
        self._batched = batched

    @classmethod
    def _make(cls, vs: tuple, arr: np.ndarray, batched: bool) -> Factor:
        """Wrap an array we own (internal: no copy, no checks)."""
        self = cls.__new__(cls)
        self._init(vs, arr, batched)
        return self

    @classmethod
    def from_cpt(cls, node: Hashable, parents: Sequence[Hashable], table) -> Factor:
        """The factor ``P(node | parents)`` of a CPT of shape ``(*parent_cards, card)``."""
        return cls((*parents, node), table)

    # -- views ---------------------------------------------------------------

    @property
    def vars(self) -> tuple:
        return self._vars

    @property
    def cards(self) -> tuple:
        return tuple(self._values.shape[self._batched:])

    @property
    def values(self) -> np.ndarray:
        return self._values

    @property
    def batched(self) -> bool:
        return self._batched

    @property
    def n(self) -> int | None:
        return self._values.shape[0] if self._batched else None

    def _labels(self) -> tuple:
        return (BATCH, *self._vars) if self._batched else self._vars

    def __repr__(self) -> str:
        body = ", ".join(f"{v!r}:{k}" for v, k in zip(self._vars, self.cards))
        return f"<Factor({body}){f' batch n={self.n}' if self._batched else ''}>"

    def _check_vars(self, vars: Iterable[Hashable], what: str) -> tuple:
        vs = (vars,) if isinstance(vars, str) else tuple(vars)
        missing = [v for v in vs if v not in self._vars]
        if missing:
            raise ModelError(f"cannot {what} {missing[0]!r}: the factor is over {self._vars}")
        return vs

    # -- algebra -------------------------------------------------------------

    def __mul__(self, other: Factor) -> Factor:
        if not isinstance(other, Factor):
            return NotImplemented
        return factor_product([self, other])

    def product(self, *others: Factor) -> Factor:
        """The product of this factor and `others` (variables in order of first appearance)."""
        return factor_product([self, *others])

    def transpose(self, vars: Sequence[Hashable]) -> Factor:
        """The same factor with its axes in the order of `vars` (a permutation of :attr:`vars`)."""
        vs = self._check_vars(vars, "order by")
        if len(vs) != len(self._vars) or set(vs) != set(self._vars):
            raise ModelError(f"transpose needs a permutation of {self._vars}, got {vs}")
        pos = {v: i for i, v in enumerate(self._vars)}
        b = int(self._batched)
        perm = ([0] if b else []) + [pos[v] + b for v in vs]
        return Factor._make(vs, own_array(np.transpose(self._values, perm)), self._batched)

    def marginalize(self, vars: Iterable[Hashable]) -> Factor:
        """Sum out `vars` (each must be a variable of the factor)."""
        drop = set(self._check_vars(vars, "sum out"))
        keep = tuple(v for v in self._vars if v not in drop)
        out = (BATCH, *keep) if self._batched else keep
        return Factor._make(keep, own_array(contract([self._values], [self._labels()], out)), self._batched)

    def max_marginalize(self, vars: Iterable[Hashable]) -> tuple[Factor, dict[Hashable, np.ndarray]]:
        """Maximize out `vars`, with the maximizing states.

        Returns
        -------
        factor : Factor
            ``max`` over the states of `vars`, over the other variables.
        argmax : dict
            For each variable of `vars`, an int array of the shape of
            ``factor.values``: its state at the maximum (first maximum on ties).
        """
        drop = self._check_vars(vars, "maximize out")
        keep = tuple(v for v in self._vars if v not in drop)
        b = int(self._batched)
        pos = {v: i + b for i, v in enumerate(self._vars)}
        perm = list(range(b)) + [pos[v] for v in keep] + [pos[v] for v in drop]
        arr = np.transpose(self._values, perm)
        lead = arr.shape[: b + len(keep)]
        flat = arr.reshape(*lead, -1)                       # (n?, *keep_cards, prod(drop_cards))
        idx = np.argmax(flat, axis=-1) if flat.shape[-1] else np.zeros(lead, dtype=np.intp)
        best = np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
        states = np.unravel_index(idx, [self._values.shape[pos[v]] for v in drop])
        return Factor._make(keep, own_array(best), self._batched), dict(zip(drop, states))

    def reduce(self, evidence: Mapping[Hashable, int | np.ndarray]) -> Factor:
        """Fix variables to observed states and drop their axes.

        Parameters
        ----------
        evidence : mapping of variable -> int or int array of shape (n,)
            Variables not in the factor are ignored. An array value gives a
            batched factor (one row per entry); on an already batched factor
            it must have length n.

        Raises
        ------
        EvidenceError
            On a state out of range, a non-integer value, or batch lengths
            that disagree.
        """
        ev = {}
        cards = dict(zip(self._vars, self.cards))
        for v, val in evidence.items():
            if v in cards:
                ev[v] = as_state_index(v, val, cards[v])
        if not ev:
            return self
        arrays = {v: x for v, x in ev.items() if isinstance(x, np.ndarray)}
        n = self.n
        for v, x in arrays.items():
            if n is None:
                n = x.shape[0]
            elif x.shape[0] != n:
                raise EvidenceError(f"evidence for {v!r} has {x.shape[0]} rows; expected {n} (the batch size)")
        b = int(self._batched)
        pos = {v: i + b for i, v in enumerate(self._vars)}
        ev_vars = [v for v in self._vars if v in ev]
        rest = tuple(v for v in self._vars if v not in ev)
        arr = np.transpose(self._values, list(range(b)) + [pos[v] for v in ev_vars] + [pos[v] for v in rest])
        idx: list = [ev[v] for v in ev_vars]
        if b:
            idx.insert(0, np.arange(n) if arrays else slice(None))
        if arrays and not b:
            _check_table(rest, cards, n, "the evidence-reduced factor")
        out = arr[tuple(idx)]                               # (n?, *rest_cards)
        return Factor._make(rest, own_array(out), bool(b) or bool(arrays))

    def total(self) -> float | np.ndarray:
        """The sum of all entries: a float, or shape (n,) when batched."""
        if self._batched:
            return self._values.sum(axis=tuple(range(1, self._values.ndim)))
        return float(self._values.sum())

    def normalize(self) -> tuple[Factor, float | np.ndarray]:
        """Divide by the total (per row when batched).

        Returns
        -------
        factor : Factor
            Entries summing to 1 (per row).
        log_z : float or ndarray of shape (n,)
            The log of the total.

        Raises
        ------
        EvidenceError
            If a total is zero (the evidence that produced it is impossible).
        """
        z = self.total()
        if np.any(np.asarray(z) <= 0):
            rows = np.flatnonzero(np.asarray(z) <= 0)
            where = f" (rows {rows[:5].tolist()})" if self._batched else ""
            raise EvidenceError(f"factor over {self._vars} sums to zero{where}: the evidence has probability zero")
        if self._batched:
            vals = self._values / z.reshape(-1, *([1] * len(self._vars)))
            return Factor._make(self._vars, vals, True), np.log(z)
        return Factor._make(self._vars, self._values / z, False), float(np.log(z))


def factor_product(factors: Sequence[Factor], keep: Iterable[Hashable] | None = None) -> Factor:
    """Product of `factors`, optionally summing out every variable not in `keep`.

    Parameters
    ----------
    factors : sequence of Factor
        Batched factors must agree on n; unbatched ones broadcast over rows.
    keep : iterable of hashable, optional
        Variables of the result, in this order; all others are summed out.
        Default: every variable, in order of first appearance.

    Returns
    -------
    Factor

    Raises
    ------
    ModelError
        If `keep` names a variable of no factor, or two factors disagree on a
        variable's card.
    ShapeError
        If batched factors disagree on n.
    """
    factors = list(factors)
    cards: dict = {}
    n = None
    for f in factors:
        for v, k in zip(f.vars, f.cards):
            if cards.setdefault(v, k) != k:
                raise ModelError(f"variable {v!r} has {cards[v]} states in one factor and {k} in another")
        if f.batched:
            if n is None:
                n = f.n
            elif f.n != n:
                raise ShapeError(f"batched factors disagree on the batch size: {n} and {f.n}")
    if keep is None:
        out = tuple(cards)
    else:
        out = (keep,) if isinstance(keep, str) else tuple(keep)
        missing = [v for v in out if v not in cards]
        if missing:
            raise ModelError(f"cannot keep {missing[0]!r}: no factor has it (variables: {tuple(cards)})")
    if not factors:
        return Factor._make((), np.ones(()), False)
    _check_table(out, cards, n, "the product of factors")
    batched = n is not None
    out_l = (BATCH, *out) if batched else out
    vals = contract([f.values for f in factors], [f._labels() for f in factors], out_l)
    return Factor._make(out, own_array(vals), batched)


def _check_table(vars: Sequence[Hashable], cards: Mapping, n: int | None, what: str) -> None:
    """ResourceError before allocating a float64 table over `vars` (times n rows when batched)."""
    size = 8.0 * math.prod(float(cards[v]) for v in vars) * (1 if n is None else max(n, 1))
    if size > limits.get("max_table_bytes"):
        shown = ", ".join(f"{v!r}:{cards[v]}" for v in list(vars)[:12])
        rows = f" for each of {n} evidence rows" if n is not None else ""
        limits.check_bytes(size, what=f"{what} over {len(vars)} variables",
                           cause=f"variables {shown}{' ...' if len(vars) > 12 else ''}{rows}")
