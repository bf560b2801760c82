"""Compact discrete mechanisms with a structural form: noisy-OR, noisy-MAX and logistic (softmax) nodes.

A CPT over k binary parents has 2^k rows; a diagnostic network whose findings
each have dozens of causes (QMR-DT) cannot be written as tables at all. These
mechanisms give the conditional in a few numbers and, being structural
equations with their own exogenous noise, work with every engine that takes
"any mechanism" (sampling, ``do``, counterfactuals by noise abduction):

:class:`NoisyOR`
    ``Y = leak_fires OR any_i (X_i is on AND inhibitor i does not block)``:
    ``P(Y = absent | x) = (1 − leak) · Π_{i: x_i on} (1 − p_i)``. The noise is
    one uniform per parent and one for the leak (``u_i < p_i``: cause i fires).
:class:`NoisyMax`
    Graded: each parent contributes a level drawn from its row of
    ``tables[i]`` (shape ``(parent states, child levels)``), the leak one from
    ``leak``; ``Y`` is the largest. ``P(Y ≤ y | x) = F_leak(y) · Π_i F_i(y | x_i)``.
:class:`Logistic`
    ``P(Y = k | x) = softmax(bias + W x)_k`` over discrete parents (entering
    as their state index) and real ones; binary with a weight vector (the
    logit of state 1), or ``K`` states with ``weights`` of shape ``(K, n_parents)``.
    The noise is one standard Gumbel per state: ``Y = argmax(logits + g)``.

Each can expand itself into the table of shape ``(*parent_cards, card)``
(:meth:`Compact.table_for`), after checking its size against ``cn.limits``;
the exact discrete engine uses that, the approximate engines need not.

Examples
--------
>>> import causalnet as cn
>>> m = cn.CausalModel({"Flu": cn.Categorical([0.9, 0.1]), "Cold": cn.Categorical([0.7, 0.3]),
...                     "Fever": NoisyOR(["Flu", "Cold"], [0.8, 0.3], leak=0.05)})
>>> round(float(m.query("Fever", evidence={"Flu": 1, "Cold": 1}).probs[1]), 4)   # 1 - 0.95 * 0.2 * 0.7
0.867
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from .. import limits
from ..errors import ModelError
from .base import DISCRETE, REAL, Mechanism, Spec, as_real_array, as_real_scalar, check_states

__all__ = ["Compact", "NoisyOR", "NoisyMax", "Logistic"]


class Compact(Mechanism):
    """Base of the compact discrete mechanisms: a structural form that can expand to a table.

    Attributes
    ----------
    structural_noise : bool
        True: counterfactuals use the mechanism's own noise (never the
        inverse-CDF SCM of its expanded table).
    """

    kind = DISCRETE
    structural_noise = True

    def probabilities(self, node, parents: Mapping, spec: Spec) -> np.ndarray:
        """``P(Y = k | parents)`` for every row, shape ``(n, card)``."""
        raise NotImplementedError

    def table_for(self, node, parent_specs: Sequence[Spec]) -> np.ndarray | None:
        """The expanded CPT ``(*parent_cards, card)``, or None when a parent is not discrete.

        Raises
        ------
        ResourceError
            If the table exceeds ``limits.get("max_table_bytes")``.
        """
        if any(s.kind != DISCRETE for s in parent_specs):
            return None
        cards = [s.card for s in parent_specs]
        K = len(self.states_for(node))
        limits.check_bytes(8.0 * float(np.prod(cards)) * K, what=f"the expanded table of {type(self).__name__} "
                           f"node {node!r}", cause=f"{len(cards)} parents: {float(np.prod(cards)):.3g} rows of {K}")
        grid = np.indices(cards).reshape(len(cards), -1) if cards else np.zeros((0, 1), dtype=np.int64)
        p = self.probabilities(node, {q: grid[i] for i, q in enumerate(self.parents)},
                               Spec(DISCRETE, states=self.states_for(node), dtype=np.int64))
        return p.reshape(*cards, K)

    def states_for(self, node) -> tuple:
        return self._states

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        self._check_parents(node, parent_specs)
        return Spec(DISCRETE, states=self._states, shape=(), dtype=np.int64)

    def _check_parents(self, node, parent_specs) -> None:
        for p in self.parents:
            if parent_specs[p].kind != DISCRETE:
                raise ModelError(f"{type(self).__name__} for {node!r}: parent {p!r} is "
                                 f"{parent_specs[p].describe()}; it needs discrete parents")

    def log_prob(self, node, value, parents, spec):
        n = np.shape(value)[0] if np.ndim(value) else None
        p = self.probabilities(node, parents, spec)                             # (n, K)
        v = np.asarray(value)
        with np.errstate(divide="ignore"):
            if n is None:
                return np.log(p[0, v])
            return np.log(np.broadcast_to(p, (n, p.shape[1]))[np.arange(n), v])


def _on_states(on, parents: tuple, parent_specs: Mapping, who: str) -> np.ndarray:
    """The "on" state index of each parent: a state (name or index) for all, a mapping, or a list."""
    if isinstance(on, Mapping):
        missing = [p for p in parents if p not in on]
        if missing:
            raise ModelError(f"{who}: on= names no state for parents {missing}")
        picks = [on[p] for p in parents]
    elif isinstance(on, (list, tuple)):
        if len(on) != len(parents):
            raise ModelError(f"{who}: on= has {len(on)} entries for {len(parents)} parents")
        picks = list(on)
    else:
        picks = [on] * len(parents)
    out = []
    for p, s in zip(parents, picks):
        states = parent_specs[p].states
        if s is None:
            s = 1
            if len(states) < 2:
                raise ModelError(f"{who}: parent {p!r} has one state; give on=")
        elif s in states:
            s = states.index(s)
        elif not (isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < len(states)):
            raise ModelError(f"{who}: parent {p!r} has no state {s!r}; states: {list(states)}")
        out.append(int(s))
    return np.array(out, dtype=np.int64)


class NoisyOR(Compact):
    """A binary effect of independent causes (see the module docstring).

    Parameters
    ----------
    parents : sequence of node names
    probs : array_like of shape (k,)
        ``p_i``: the probability that parent i, when on, causes the effect on its own (no leak).
    leak : float in [0, 1)
        The probability of the effect with no cause on.
    on : state, mapping parent -> state, or list, optional
        Each parent's "on" state (name or index); default state 1.
    states : two names, optional
        The child's states, absent first (default ``(0, 1)``).
    """

    def __init__(self, parents: Sequence[Hashable], probs, leak: float = 0.0, *, on=None, states=None) -> None:
        super().__init__(parents)
        who = f"NoisyOR over parents {list(self.parents)}"
        self.probs = as_real_array(probs, who, "probs", shape=(len(self.parents),), nonnegative=True)
        if np.any(self.probs > 1):
            raise ModelError(f"{who}: probs must be in [0, 1], got {self.probs.tolist()}")
        self.leak = as_real_scalar(leak, who, "leak", nonnegative=True)
        if self.leak >= 1:
            raise ModelError(f"{who}: leak must be in [0, 1), got {self.leak}")
        self.on = on
        self._states = check_states(states, 2, who)
        self._on_idx = None

    def spec(self, node, parent_specs):
        self._check_parents(node, parent_specs)
        self._on_idx = _on_states(self.on, self.parents, parent_specs, f"NoisyOR for {node!r}")
        return Spec(DISCRETE, states=self._states, shape=(), dtype=np.int64)

    @property
    def on_index(self) -> np.ndarray:
        """Each parent's "on" state index (known once the model is built)."""
        if self._on_idx is None:
            raise ModelError("the NoisyOR's parents are known only once it is part of a model")
        return self._on_idx

    def _active(self, parents: Mapping) -> list:
        return [np.asarray(parents[p]) == k for p, k in zip(self.parents, self.on_index)]

    def probabilities(self, node, parents, spec):
        q = np.full(np.shape(np.asarray(parents[self.parents[0]])) if self.parents else (), 1.0 - self.leak)
        for a, p in zip(self._active(parents), self.probs):
            q = q * np.where(a, 1.0 - p, 1.0)
        q = np.atleast_1d(q)
        return np.stack([q, 1.0 - q], axis=-1)                                 # (n, 2)

    def sample_noise(self, n, rng, spec):
        return rng.random((n, len(self.parents) + 1))                          # leak, then one per parent

    def evaluate(self, node, parents, noise, spec, *, n=None):
        u = np.asarray(noise)
        fired = u[:, 0] < self.leak
        for j, (a, p) in enumerate(zip(self._active(parents), self.probs)):
            fired = fired | (a & (u[:, j + 1] < p))
        return fired.astype(np.int64)

    def abduct_sample(self, node, value, parents, spec, rng):
        """Inhibitors given the value: none fired if absent; at least one active cause fired if present."""
        y = np.asarray(value)
        n = y.shape[0]
        p = np.column_stack([np.full(n, self.leak)] + [np.where(a, pi, 0.0) for a, pi in
                                                        zip(self._active(parents), self.probs)])   # (n, k+1)
        tail = np.cumprod((1.0 - p)[:, ::-1], axis=1)[:, ::-1]                 # Π_{j >= i} (1 - p_j)
        fired = np.zeros(p.shape, dtype=bool)
        none_yet = np.ones(n, dtype=bool)
        for i in range(p.shape[1]):
            with np.errstate(divide="ignore", invalid="ignore"):
                need = np.where(tail[:, i] < 1.0, p[:, i] / (1.0 - tail[:, i]), 0.0)
            prob = np.where(y == 1, np.where(none_yet, need, p[:, i]), 0.0)
            fired[:, i] = rng.random(n) < prob
            none_yet &= ~fired[:, i]
        r = rng.random(p.shape)
        active = np.column_stack([np.ones(n, bool)] + self._active(parents))
        cut = np.column_stack([np.full(n, self.leak), np.broadcast_to(self.probs, (n, len(self.parents)))])
        u = np.where(fired, r * cut, cut + r * (1.0 - cut))
        return np.where(active, u, r)

    def to_dict(self) -> dict:
        on = self.on
        if isinstance(on, Mapping):
            on = {str(k): _plain(v) for k, v in on.items()}
        elif isinstance(on, (list, tuple)):
            on = [_plain(v) for v in on]
        else:
            on = _plain(on)
        return {"type": "NoisyOR", "parents": list(self.parents), "probs": self.probs.tolist(), "leak": self.leak,
                "on": on, "states": [_plain(v) for v in self._states]}

    def __repr__(self) -> str:
        return f"NoisyOR(parents={list(self.parents)}, probs={self.probs.tolist()}, leak={self.leak})"


def _plain(v):
    """A numpy scalar as its Python value (JSON-ready); anything else unchanged."""
    return v.item() if isinstance(v, np.generic) else v


class NoisyMax(Compact):
    """A graded effect: the largest of the levels its causes and the leak produce (see the module docstring).

    Parameters
    ----------
    parents : sequence of node names
    tables : sequence of array_like, one per parent, shape (parent states, K)
        Row s: the distribution of the level parent i produces in state s.
    leak : array_like of shape (K,)
        The distribution of the leak's level (``[1, 0, ...]``: no leak).
    states : K names, optional
    """

    def __init__(self, parents: Sequence[Hashable], tables, leak, *, states=None) -> None:
        super().__init__(parents)
        who = f"NoisyMax over parents {list(self.parents)}"
        self.leak = as_real_array(leak, who, "leak", ndim=1, nonnegative=True)
        K = self.leak.size
        if len(tables) != len(self.parents):
            raise ModelError(f"{who}: {len(tables)} tables for {len(self.parents)} parents")
        self.tables = [as_real_array(t, who, f"tables[{i}]", ndim=2, nonnegative=True) for i, t in enumerate(tables)]
        for i, t in enumerate([self.leak[None]] + self.tables):
            if t.shape[1] != K or np.any(np.abs(t.sum(axis=1) - 1) > 1e-9):
                name = "leak" if i == 0 else f"tables[{i - 1}]"
                raise ModelError(f"{who}: {name} must have {K} levels per row, each row summing to 1; got shape "
                                 f"{t.shape}")
        self._states = check_states(states, K, who)

    def spec(self, node, parent_specs):
        self._check_parents(node, parent_specs)
        for p, t in zip(self.parents, self.tables):
            if t.shape[0] != parent_specs[p].card:
                raise ModelError(f"NoisyMax for {node!r}: the table of {p!r} has {t.shape[0]} rows; {p!r} has "
                                 f"{parent_specs[p].card} states")
        return Spec(DISCRETE, states=self._states, shape=(), dtype=np.int64)

    def probabilities(self, node, parents, spec):
        F = np.atleast_2d(np.cumsum(self.leak))                                # (1, K)
        for p, t in zip(self.parents, self.tables):
            F = F * np.cumsum(t, axis=1)[np.asarray(parents[p])]                # (n, K)
        F[:, -1] = 1.0
        return np.diff(F, axis=1, prepend=0.0)

    def to_dict(self) -> dict:
        return {"type": "NoisyMax", "parents": list(self.parents), "tables": [t.tolist() for t in self.tables],
                "leak": self.leak.tolist(), "states": [_plain(v) for v in self._states]}

    def sample_noise(self, n, rng, spec):
        return rng.random((n, len(self.parents) + 1))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        u = np.asarray(noise)
        cdf = np.cumsum(self.leak)
        y = np.minimum((u[:, :1] >= cdf).sum(axis=1), self.leak.size - 1)
        for j, (p, t) in enumerate(zip(self.parents, self.tables)):
            rows = np.cumsum(t, axis=1)[np.asarray(parents[p])]                 # (n, K)
            y = np.maximum(y, np.minimum((u[:, j + 1:j + 2] >= rows).sum(axis=1), self.leak.size - 1))
        return y.astype(np.int64)


class Logistic(Compact):
    """A binary or categorical node with a logistic (softmax) link (see the module docstring).

    Parameters
    ----------
    parents : sequence of node names
        Discrete parents enter as their state index, real parents as their value.
    weights : array_like of shape (n_parents,) or (K, n_parents)
        A vector: the logit of state 1 of a binary child. A matrix: one row of
        weights per state (softmax).
    bias : float or array_like of shape (K,)
    states : names, optional
    """

    def __init__(self, parents: Sequence[Hashable], weights, bias=0.0, *, states=None) -> None:
        super().__init__(parents)
        who = f"Logistic over parents {list(self.parents)}"
        w = as_real_array(weights, who, "weights")
        k = len(self.parents)
        if w.ndim == 1 and w.shape == (k,):
            b = as_real_scalar(bias, who, "bias")
            self.weights = np.vstack([np.zeros(k), w])                        # (2, k)
            self.bias = np.array([0.0, b])
        elif w.ndim == 2 and w.shape[1] == k and w.shape[0] >= 2:
            self.weights = w
            self.bias = as_real_array(bias, who, "bias", shape=(w.shape[0],)) if np.ndim(bias) else \
                np.full(w.shape[0], as_real_scalar(bias, who, "bias"))
        else:
            raise ModelError(f"{who}: weights must have shape ({k},) or (K, {k}), got {w.shape}")
        self._states = check_states(states, self.weights.shape[0], who)

    def spec(self, node, parent_specs):
        for p in self.parents:
            s = parent_specs[p]
            if not (s.kind == DISCRETE or (s.kind == REAL and s.shape == ())):
                raise ModelError(f"Logistic for {node!r}: parent {p!r} is {s.describe()}; it needs discrete or "
                                 f"real scalar parents")
        return Spec(DISCRETE, states=self._states, shape=(), dtype=np.int64)

    def _logits(self, parents) -> np.ndarray:
        z = np.atleast_2d(self.bias)                                          # (1, K)
        for j, p in enumerate(self.parents):
            z = z + np.asarray(parents[p], dtype=np.float64)[:, None] * self.weights[:, j]
        return z                                                              # (n, K)

    def probabilities(self, node, parents, spec):
        from scipy.special import log_softmax  # loaded on first use, not by ``import causalnet``

        return np.exp(log_softmax(self._logits(parents), axis=1))

    def to_dict(self) -> dict:
        """Weights as the ``(K, n_parents)`` matrix and the bias as a vector (a binary node's first row is 0)."""
        return {"type": "Logistic", "parents": list(self.parents), "weights": self.weights.tolist(),
                "bias": self.bias.tolist(), "states": [_plain(v) for v in self._states]}

    def sample_noise(self, n, rng, spec):
        return rng.gumbel(size=(n, self.weights.shape[0]))

    def evaluate(self, node, parents, noise, spec, *, n=None):
        z = self._logits(parents)
        return np.argmax(z + np.asarray(noise), axis=1).astype(np.int64)

    def abduct_sample(self, node, value, parents, spec, rng):
        """Gumbel noise given the argmax: the top one at logsumexp, the others truncated below it."""
        from scipy.special import logsumexp  # loaded on first use

        z = np.broadcast_to(self._logits(parents), (np.shape(value)[0], self.weights.shape[0]))
        y = np.asarray(value)
        rows = np.arange(z.shape[0])
        top = logsumexp(z, axis=1) + rng.gumbel(size=z.shape[0])                  # (n,)
        g = z + rng.gumbel(size=z.shape)
        trunc = -np.log(np.exp(-top)[:, None] + np.exp(-g))                       # below top
        total = trunc
        total[rows, y] = top
        return total - z
