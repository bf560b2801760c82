"""Compiled contraction programs: variable elimination as a fixed list of einsum calls.

Terms
-----
A *program* is what one query shape (targets, evidence variables, which of
them are batched) compiles to. Its *slots* hold arrays, one axis per node
(node ints), plus a trailing batch axis when the slot is *batched*:

* *input* slots: a CPT with its evidence axes last, indexed per query by the
  evidence values (one numpy index each);
* *constant* slots: tables known at compile time (CPTs without evidence, and
  every step whose inputs are all constant: *constant folding*);
* *op* slots: the result of a contraction of other slots.

:class:`ProgramBuilder` assembles a program step by step (``const``, ``input``,
``emit`` for ``sum over labels not kept of prod(slots)``, ``emit_max`` for
MAP); :meth:`ContractionProgram.run` fills the inputs and runs the ops, optionally
rescaling each op's output by its maximum (log-scales kept) so that a tiny
``P(e)`` does not underflow. Large steps follow a pairwise path fixed at
compile time, each pair with its axes grouped by role into at most four long
axes (a ``matmul`` when the summed group is wide). No einsum call has more
than :data:`~causalnet.inference.discrete.factors.MAX_EINSUM_AXES` axes.

Shared by variable elimination (:mod:`causalnet.inference.discrete.elimination`) and
junction-tree calibration (:mod:`causalnet.inference.discrete.junction_tree`).

Legend: ``n`` batch, ``K`` states; ``BATCH`` labels the batch axis.

Examples
--------
>>> import numpy as np
>>> b = ProgramBuilder([2, 2], ev_order=[1])
>>> a = b.const(np.array([0.3, 0.7]), (0,))                       # P(A)
>>> ba = b.input(np.array([[0.9, 0.1], [0.2, 0.8]]), (1,), (0,), False)   # P(B=b | A), B observed
>>> joint = b.emit([a, ba], (0,))                                 # P(A, B=b)
>>> slots, _ = b.program().run([1], False)
>>> np.round(slots[joint], 2).tolist()
[0.03, 0.56]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import partial

import numpy as np

from .factors import BATCH, MAX_EINSUM_AXES, MAX_EINSUM_OPERANDS, contract, einsum_subscripts

__all__ = ["ProgramBuilder", "ContractionProgram", "FoldCache", "TINY"]

#: Below this ``P(e)`` a query is recomputed with rescaling (products of many
#: probabilities underflow float64 near 1e-308).
TINY = 1e-280
_BIG = 1 << 13            # steps iterating over this many entries go pairwise on grouped axes


def _contract_fn(in_labels, out_labels, *arrays):
    return contract(arrays, in_labels, out_labels, optimize=False)


class _Pair:
    """Contract two arrays after grouping their axes by role.

    Axes only in one operand and not kept are summed first. The rest are
    transposed into groups (shared kept K, own kept P / Q, shared summed C) and
    each group merged into one axis, so the contraction is ``(K, P, C) x
    (K, C, Q) -> (K, P, Q)``: a ``matmul`` (BLAS) when the summed group is
    wide (C >= 8), else one einsum over these long axes, where an einsum over
    many small axes would crawl (its inner loop would have length 2). A batched
    operand goes second, so the batch is in the innermost group; when both are
    batched the shared group holding the batch is innermost (einsum).
    """

    __slots__ = ("swap", "a_sum", "b_sum", "perm_a", "perm_b", "na", "nb", "mode", "perm_out")

    def __init__(self, la: tuple, lb: tuple, out: tuple, card) -> None:
        self.swap = BATCH in la and BATCH not in lb
        if self.swap:
            la, lb = lb, la
        both = BATCH in la and BATCH in lb
        sa, sb, keep = set(la), set(lb), set(out)
        self.a_sum = tuple(i for i, v in enumerate(la) if v not in sb and v not in keep)
        self.b_sum = tuple(i for i, v in enumerate(lb) if v not in sa and v not in keep)
        la2 = [v for i, v in enumerate(la) if i not in self.a_sum]
        lb2 = [v for i, v in enumerate(lb) if i not in self.b_sum]
        ck = [v for v in la2 if v in sb and v in keep]
        cs = [v for v in la2 if v in sb and v not in keep]
        ak = [v for v in la2 if v not in sb]
        bk = [v for v in lb2 if v not in sa]
        wide = math.prod(card[v] for v in cs) >= 8
        if both:        # (P, C, K) x (C, Q, K) -> (P, Q, K): K holds the batch, innermost
            ga, gb, res = (ak, cs, ck), (cs, bk, ck), ak + bk + ck
            self.mode = "pck,cqk->pqk"
        else:           # (K, P, C) x (K, C, Q) -> (K, P, Q)
            ga, gb, res = (ck, ak, cs), (ck, cs, bk), ck + ak + bk
            self.mode = "matmul" if wide else "kpc,kcq->kpq"
        self.perm_a = tuple(la2.index(v) for g in ga for v in g)
        self.perm_b = tuple(lb2.index(v) for g in gb for v in g)
        self.na = tuple(len(g) for g in ga)
        self.nb = tuple(len(g) for g in gb)
        self.perm_out = tuple(res.index(v) for v in out)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.swap:
            a, b = b, a
        if self.a_sum:
            a = a.sum(axis=self.a_sum)
        if self.b_sum:
            b = b.sum(axis=self.b_sum)
        a = np.transpose(a, self.perm_a)
        b = np.transpose(b, self.perm_b)
        i, j = self.na[0], self.na[0] + self.na[1]
        ga = (a.shape[:i], a.shape[i:j], a.shape[j:])
        i, j = self.nb[0], self.nb[0] + self.nb[1]
        gb = (b.shape[:i], b.shape[i:j], b.shape[j:])
        a3 = a.reshape([math.prod(g) for g in ga])
        b3 = b.reshape([math.prod(g) for g in gb])
        if self.mode == "matmul":
            r = np.matmul(a3, b3)                                      # (K, P, Q)
            shape = ga[0] + ga[1] + gb[2]
        elif self.mode == "kpc,kcq->kpq":
            r = np.einsum(self.mode, a3, b3)                           # (K, P, Q)
            shape = ga[0] + ga[1] + gb[2]
        else:
            r = np.einsum(self.mode, a3, b3)                           # (P, Q, K)
            shape = ga[0] + gb[1] + ga[2]
        return np.transpose(r.reshape(shape), self.perm_out)


class _Single:
    """Sum one array over the axes not kept, then order the rest as `out`."""

    __slots__ = ("axes", "perm")

    def __init__(self, la: tuple, out: tuple) -> None:
        keep = set(out)
        self.axes = tuple(i for i, v in enumerate(la) if v not in keep)
        rest = [v for v in la if v in keep]
        self.perm = tuple(rest.index(v) for v in out)

    def __call__(self, a: np.ndarray, _=None) -> np.ndarray:
        if self.axes:
            a = a.sum(axis=self.axes)
        return np.transpose(a, self.perm)


class _Contraction:
    """``sum over labels not in out of prod(arrays)``, compiled once.

    Small problems (fewer than ``_BIG`` entries in the iteration space, counting
    the batch) are one einsum call. Large ones follow a greedy pairwise path,
    fixed at compile time, each pair a :class:`_Pair` (grouped axes).
    """

    __slots__ = ("subs", "size", "bidx", "steps")

    def __init__(self, fin: list, fout: tuple, card) -> None:
        self.subs = einsum_subscripts(fin, fout)
        union = {v for lab in fin for v in lab}
        self.size = math.prod(card[v] for v in union if v is not BATCH)
        self.bidx = next((i for i, lab in enumerate(fin) if BATCH in lab), -1)
        labels = {i: tuple(lab) for i, lab in enumerate(fin)}
        steps = []
        nxt = len(fin)

        def cost(lab):
            return math.prod(card[v] for v in lab if v is not BATCH)

        while len(labels) > 1:
            best = None
            ids = list(labels)
            for x in range(len(ids)):
                for y in range(x + 1, len(ids)):
                    i, j = ids[x], ids[y]
                    need = set(fout).union(*(labels[m] for m in ids if m != i and m != j))
                    kept = tuple(dict.fromkeys(v for v in labels[i] + labels[j] if v in need))
                    c = (cost(kept), cost(labels[i]) + cost(labels[j]))
                    if best is None or c < best[0]:
                        best = (c, i, j, kept)
            _, i, j, kept = best
            if len(labels) == 2:
                kept = tuple(fout)
            steps.append((i, j, _Pair(labels[i], labels[j], kept, card)))
            del labels[i], labels[j]
            labels[nxt] = kept
            nxt += 1
        (last, lab), = labels.items()
        if lab != tuple(fout):
            steps.append((last, None, _Single(lab, tuple(fout))))
        self.steps = steps

    def __call__(self, *arrays):
        size = self.size
        if self.bidx >= 0:
            size *= arrays[self.bidx].shape[-1]
        if size < _BIG:
            return np.einsum(self.subs, *arrays)
        vals = list(arrays)
        for i, j, fn in self.steps:
            vals.append(fn(vals[i], None if j is None else vals[j]))
        return vals[-1]


def _max_fn(product, axis, *arrays):
    p = product(*arrays)
    return p.max(axis=axis), p.argmax(axis=axis)


class ContractionProgram:
    """A compiled contraction program (see :class:`ProgramBuilder`).

    Attributes
    ----------
    template : list
        The slots: constants filled in, the rest None.
    inputs : list
        ``(slot, table, evidence positions, flat table, multipliers)`` per input slot.
    ops : list
        ``(fn, input slots, output slot, rescale?)`` in run order.
    batched : list of bool
        Whether each slot carries a trailing batch axis.
    labels : list of tuple
        The node of each axis of each slot (before the batch axis).
    row_entries : int
        Entries, per batch row, of all batched slots together: a batch of n
        rows holds about ``8 * n * row_entries`` bytes at once.
    """

    __slots__ = ("template", "inputs", "ops", "batched", "labels", "row_entries")

    def _fill(self, values: list) -> list:
        slots = self.template.copy()
        for slot, table, pos, flat, mults in self.inputs:
            if flat is None:                                   # scalar evidence: a view
                slots[slot] = table[(Ellipsis, *[values[p] for p in pos])]
            else:                                              # batched: (*rest, n), contiguous
                idx = 0
                for p, m in zip(pos, mults):
                    idx = idx + values[p] * m
                slots[slot] = flat.take(idx, axis=-1)
        return slots

    def run(self, values: list, scaled: bool) -> tuple[list, list | None]:
        """Fill the input slots from `values` and run every op.

        Returns the slots and, when `scaled`, the log-scale of each slot (each
        op's output is then divided by its maximum, per row when batched).
        """
        slots = self._fill(values)
        if not scaled:
            for fn, ins, out, _ in self.ops:
                slots[out] = fn(*[slots[i] for i in ins])
            return slots, None
        logs: list = [0.0] * len(slots)
        with np.errstate(divide="ignore"):
            for fn, ins, out, norm in self.ops:
                r = fn(*[slots[i] for i in ins])
                ls = 0.0
                for i in ins:
                    ls = ls + logs[i]
                if norm and r.size:
                    r, lm = _rescale(r, self.batched[out])
                    ls = ls + lm
                slots[out] = r
                logs[out] = ls
        return slots, logs


def _rescale(r: np.ndarray, batched: bool) -> tuple[np.ndarray, float | np.ndarray]:
    """`r` divided by its maximum (per row, batch last, when batched), and the log of that maximum."""
    if batched:
        m = r.max(axis=tuple(range(r.ndim - 1)))                  # (n,), batch last
        return r / np.where(m > 0, m, 1.0), np.log(m)
    m = r.max()
    return r / (m if m > 0 else 1.0), np.log(m)


class FoldCache:
    """Constant-folded tables shared by the programs of one network.

    A folded slot made only of CPTs (no evidence, no maximization) equals the
    sum, over every variable of its CPTs not among its labels, of the product
    of those CPTs: it is determined by (its CPT nodes, its labels), whichever
    query produced it. Bounded by total size.
    """

    __slots__ = ("tables", "nbytes", "limit")

    def __init__(self, limit: int = 256 * 2**20) -> None:
        self.tables: dict = {}
        self.nbytes = 0
        self.limit = limit

    def get(self, key):
        return self.tables.get(key)

    def put(self, key, value: np.ndarray) -> None:
        size = np.asarray(value).nbytes
        if self.nbytes + size > self.limit:
            self.tables.clear()
            self.nbytes = 0
        self.tables[key] = value
        self.nbytes += size


class ProgramBuilder:
    """Builds a :class:`ContractionProgram`, folding every step whose inputs are constant.

    A slot holds an array with one axis per label (node ints), then a trailing
    batch axis when the slot is batched. Input slots are filled per query by
    indexing a table with evidence values; constant slots are known now.
    Constants made of CPTs only carry their CPT nodes (``src``), so that their
    folds can be shared through a :class:`FoldCache`.
    """

    def __init__(self, card: Sequence[int], ev_order: Sequence[int], folds: FoldCache | None = None) -> None:
        self.card = card
        self.pos = {u: i for i, u in enumerate(ev_order)}
        self.folds = folds
        self.template: list = []
        self.labels: list = []
        self.batched: list = []
        self.src: list = []
        self.inputs: list = []
        self.ops: list = []

    def _new(self, labels, batched, value=None, src=None) -> int:
        self.template.append(value)
        self.labels.append(tuple(labels))
        self.batched.append(bool(batched))
        self.src.append(src)
        return len(self.template) - 1

    def const(self, arr: np.ndarray, labels, src: frozenset | None = None) -> int:
        return self._new(labels, False, arr, src)

    def input(self, table: np.ndarray, evs: Sequence[int], labels, batched: bool) -> int:
        """A slot filled per query: `table` (evidence axes last) indexed by the values of `evs`.

        Batched slots index a copy of `table` with the evidence axes flattened,
        so that the result is a contiguous ``(*rest, n)`` array.
        """
        slot = self._new(labels, batched)
        pos = tuple(self.pos[u] for u in evs)
        flat = mults = None
        if batched:
            ev_shape = table.shape[len(table.shape) - len(evs):]
            flat = np.ascontiguousarray(table.reshape(*table.shape[: table.ndim - len(evs)], -1))
            mults = tuple(int(np.prod(ev_shape[i + 1:], dtype=np.int64)) for i in range(len(evs)))
        self.inputs.append((slot, table, pos, flat, mults))
        return slot

    def is_const(self, slot: int) -> bool:
        return self.template[slot] is not None

    def op(self, fn, ins, labels, batched, norm=True) -> int:
        ins = tuple(ins)
        if all(self.template[s] is not None for s in ins):
            return self._new(labels, False, fn(*[self.template[s] for s in ins]))
        slot = self._new(labels, batched)
        self.ops.append((fn, ins, slot, norm))
        return slot

    def _full(self, slot):
        """Axis labels of a slot's array: the batch axis, when there is one, is last."""
        return (*self.labels[slot], BATCH) if self.batched[slot] else self.labels[slot]

    def emit(self, ins: Sequence[int], out: Sequence[int]) -> int:
        """Slot for ``sum over labels not in out of prod(ins)``, axes ``out``."""
        ins = list(ins)
        out = tuple(out)
        if len(ins) == 1 and self.labels[ins[0]] == out:
            return ins[0]
        key = None
        if self.folds is not None and all(self.src[s] is not None for s in ins):
            key = (frozenset().union(*(self.src[s] for s in ins)), out)
            got = self.folds.get(key)
            if got is not None:
                return self._new(out, False, got, key[0])
            slot = self._emit(ins, out)
            self.src[slot] = key[0]
            self.folds.put(key, self.template[slot])
            return slot
        return self._emit(ins, out)

    def _emit(self, ins: list, out: tuple) -> int:
        while len(ins) > MAX_EINSUM_OPERANDS:
            # one op per chunk of operands, so rescaling can act between chunks
            head, ins = ins[:MAX_EINSUM_OPERANDS], ins[MAX_EINSUM_OPERANDS:]
            need = set(out).union(*(self.labels[s] for s in ins))
            lab = tuple(dict.fromkeys(v for s in head for v in self.labels[s] if v in need))
            ins.append(self.emit(head, lab))
        bat = any(self.batched[s] for s in ins)
        fin = [self._full(s) for s in ins]
        fout = (*out, BATCH) if bat else out
        union = {lab for s in ins for lab in self.labels[s]}
        if len(union) + bat > MAX_EINSUM_AXES:
            return self.op(partial(_contract_fn, fin, fout), ins, out, bat)
        if bat:
            return self._emit_batched(ins, out)
        if math.prod(self.card[v] for v in union) >= _BIG:
            return self.op(_Contraction(fin, fout, self.card), ins, out, bat)
        return self.op(partial(np.einsum, einsum_subscripts(fin, fout)), ins, out, bat)

    def _emit_batched(self, ins: list, out: tuple) -> int:
        """A batched step as (unbatched operands folded into one) x (batched ones multiplied).

        The unbatched operands are mostly constants, so their product is folded
        at compile time; the batched ones are multiplied by one einsum whose
        inner loop runs over the batch (the last, contiguous axis); the two
        meet in one contraction (on grouped axes, the batch innermost, when the
        problem is large).
        """
        un = [s for s in ins if not self.batched[s]]
        bs = [s for s in ins if self.batched[s]]
        lab_b = {v for s in bs for v in self.labels[s]}

        if un:
            need = set(out) | lab_b
            u_lab = tuple(dict.fromkeys(v for s in un for v in self.labels[s] if v in need))
            un = [self.emit(un, u_lab)]
        if len(bs) > 1 and un:
            need = set(out) | set(self.labels[un[0]])
            b_lab = tuple(dict.fromkeys(v for s in bs for v in self.labels[s] if v in need))
            fin = [self._full(s) for s in bs]
            bs = [self.op(_Contraction(fin, (*b_lab, BATCH), self.card), bs, b_lab, True)]
        ins = un + bs
        fin = [self._full(s) for s in ins]
        return self.op(_Contraction(fin, (*out, BATCH), self.card), ins, out, True)

    def emit_max(self, ins: Sequence[int], z: int) -> tuple[int, int]:
        """Slots for ``max over z of prod(ins)`` and the maximizing state of z."""
        ins = list(ins)
        while len(ins) > MAX_EINSUM_OPERANDS:
            head, ins = ins[:MAX_EINSUM_OPERANDS], ins[MAX_EINSUM_OPERANDS:]
            ins.append(self.emit(head, tuple(dict.fromkeys(v for s in head for v in self.labels[s]))))
        bat = any(self.batched[s] for s in ins)
        union = tuple(dict.fromkeys(v for s in ins for v in self.labels[s]))
        out = tuple(v for v in union if v != z)
        fin = [self._full(s) for s in ins]
        fu = (*union, BATCH) if bat else union
        if len(union) + bat > MAX_EINSUM_AXES:
            product = partial(_contract_fn, fin, fu)
        elif bat:
            product = partial(np.einsum, einsum_subscripts(fin, fu))
        else:
            product = _Contraction(fin, fu, self.card)
        pair = self.op(partial(_max_fn, product, fu.index(z)), ins, (), bat, norm=False)
        val = self.op(operator.itemgetter(0), [pair], out, bat)
        arg = self.op(operator.itemgetter(1), [pair], out, bat, norm=False)
        return val, arg

    def program(self) -> ContractionProgram:
        prog = ContractionProgram()
        prog.template = self.template
        prog.inputs = self.inputs
        prog.ops = self.ops
        prog.batched = self.batched
        prog.labels = self.labels
        prog.row_entries = sum(math.prod(self.card[v] for v in lab)
                               for lab, bat in zip(self.labels, self.batched) if bat)
        return prog
