"""Random influence diagrams and the oracles the decision tests compare against.

A diagram is described as plain data (:class:`Spec`), built both as a
``cn.InfluenceDiagram`` and as a pyAgrum ``InfluenceDiagram``; the oracles
work on the full joint table of the chance and decision nodes by enumeration,
independently of causalnet's solver:

* :func:`eu_brute`: the expected utility of a policy (tables over the
  decisions' declared parents), ``sum_x prod P(x_c | pa) prod pi(x_d | pa) U(x)``;
* :func:`best_over_all_policies`: every deterministic policy enumerated;
* :func:`expectimax`: the perfect-recall MEU by the strong elimination order
  (sum the unobserved, max the last decision, sum what it saw last, ...),
  with the ``Q`` tables of every decision over its no-forgetting information.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import causalnet as cn


@dataclass
class Spec:
    order: list             # every chance and decision node, topologically
    cards: dict
    chance: dict            # node -> (parents, table (*pcards, K))
    decisions: dict         # node -> parents (declared), in decision order
    utilities: dict         # node -> (parents, table (*pcards,))

    def model(self, **kw) -> cn.InfluenceDiagram:
        mechs = {}
        for v in self.order:
            if v in self.chance:
                ps, t = self.chance[v]
                mechs[v] = cn.CPT(ps, t) if ps else cn.Categorical(t)
            else:
                mechs[v] = cn.Decision(self.decisions[v], states=self.cards[v])
        for u, (ps, t) in self.utilities.items():
            mechs[u] = cn.Utility(ps, t)
        return cn.InfluenceDiagram(mechs, **kw)

    def info_sets(self) -> dict:
        """No-forgetting information of each decision (declared parents of it and the earlier ones, and those)."""
        out, known = {}, set()
        ds = list(self.decisions)
        for k, d in enumerate(ds):
            known |= set(self.decisions[d])
            out[d] = [v for v in self.order if v in known | set(ds[:k])]
        return out


def _ax(vars_all, ps):
    return [vars_all.index(p) for p in ps]


def joint(spec: Spec) -> tuple[list, np.ndarray, np.ndarray]:
    """``(vars, W, U)``: W the product of the chance CPTs over every chance and decision node, U the total utility."""
    vs = list(spec.order)
    shape = [spec.cards[v] for v in vs]
    W = np.ones(shape)
    for v, (ps, t) in spec.chance.items():
        W = W * broadcast(t, [*ps, v], vs, shape)
    U = np.zeros(shape)
    for ps, t in spec.utilities.values():
        U = U + broadcast(np.asarray(t, dtype=float), list(ps), vs, shape)
    return vs, W, U


def broadcast(t, tvars, vs, shape):
    order = sorted(range(len(tvars)), key=lambda i: vs.index(tvars[i]))
    t = np.transpose(np.asarray(t, dtype=float), order)
    sorted_vars = [tvars[i] for i in order]
    full = [shape[i] if v in sorted_vars else 1 for i, v in enumerate(vs)]
    return t.reshape(full)


def eu_brute(spec: Spec, tables: dict) -> float:
    """Expected utility when decision d follows tables[d] of shape (*declared_parent_cards, K)."""
    vs, W, U = joint(spec)
    shape = W.shape
    P = W
    for d, ps in spec.decisions.items():
        P = P * broadcast(tables[d], [*ps, d], vs, shape)
    return float(np.sum(P * U))


def deterministic_policies(spec: Spec):
    """Every deterministic policy, as tables over the declared parents."""
    per = []
    for d, ps in spec.decisions.items():
        pc = [spec.cards[p] for p in ps]
        n_states = int(np.prod(pc)) if pc else 1
        K = spec.cards[d]
        per.append([np.eye(K)[list(c)].reshape(*pc, K) for c in itertools.product(range(K), repeat=n_states)])
    for combo in itertools.product(*per):
        yield dict(zip(spec.decisions, combo))


def n_policies(spec: Spec) -> int:
    n = 1
    for d, ps in spec.decisions.items():
        n *= spec.cards[d] ** int(np.prod([spec.cards[p] for p in ps]) if ps else 1)
    return n


def best_over_all_policies(spec: Spec) -> tuple[float, list]:
    """(max EU, every policy within 1e-9 of it)."""
    scored = [(eu_brute(spec, p), p) for p in deterministic_policies(spec)]
    best = max(s for s, _ in scored)
    return best, [p for s, p in scored if s >= best - 1e-9 * max(1.0, abs(best))]


def expectimax(spec: Spec) -> tuple[float, dict]:
    """Perfect-recall MEU and, per decision, ``Q`` over (*no-forgetting info, action) (scaled by P(info) > 0)."""
    vs, W, U = joint(spec)
    G = W * U
    info = spec.info_sets()
    ds = list(spec.decisions)
    qs = {}
    cur_vars = list(vs)
    for k in range(len(ds) - 1, -1, -1):
        d = ds[k]
        keep = set(info[d]) | {d}
        drop = [i for i, v in enumerate(cur_vars) if v not in keep]
        G = G.sum(axis=tuple(drop))
        cur_vars = [v for v in cur_vars if v in keep]
        qs[d] = (list(cur_vars), G.copy())
        G = G.max(axis=cur_vars.index(d))
        cur_vars.remove(d)
    return float(G.sum()), qs


# -- random diagrams ------------------------------------------------------------------------


@st.composite
def diagrams(draw, perfect_recall: bool = True, max_chance: int = 4, max_decisions: int = 2,
             integer_utilities: bool | None = None):
    """A random small influence diagram; with `perfect_recall` the no-forgetting arcs are explicit."""
    n_chance = draw(st.integers(2, max_chance))
    n_dec = draw(st.integers(1, max_decisions))
    kinds = ["c"] * n_chance + ["d"] * n_dec
    perm = draw(st.permutations(kinds))
    names, cards, chance, decisions = [], {}, {}, {}
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    c_i = d_i = 0
    for kind in perm:
        if kind == "c":
            v = f"X{c_i}"
            c_i += 1
            cards[v] = draw(st.integers(2, 3))
            k = draw(st.integers(0, min(2, len(names))))
            ps = sorted(draw(st.permutations(names))[:k], key=names.index)
            pc = [cards[p] for p in ps]
            table = rng.dirichlet(np.ones(cards[v]) * 0.8, size=int(np.prod(pc)) if pc else 1).reshape(*pc, cards[v])
            if draw(st.booleans()) and pc:                        # some zeros: unreachable information states
                table = np.where(table < 0.15, 0.0, table)
                table[table.sum(-1) == 0] = 1.0 / cards[v]
                table = table / table.sum(-1, keepdims=True)
            chance[v] = (ps, table)
        else:
            v = f"D{d_i}"
            d_i += 1
            cards[v] = draw(st.integers(2, 3))
            chance_before = [p for p in names if p in chance]
            k = draw(st.integers(0, min(1, len(chance_before))))
            ps = draw(st.permutations(chance_before))[:k] if chance_before else []
            if decisions and (perfect_recall or draw(st.booleans())):
                prev = list(decisions)[-1]
                ps = list(ps) + [prev] + (list(decisions[prev]) if perfect_recall else [])
            decisions[v] = sorted(set(ps), key=names.index)
        names.append(v)
    utilities = {}
    ints = draw(st.booleans()) if integer_utilities is None else integer_utilities
    for j in range(draw(st.integers(1, 2))):
        k = draw(st.integers(1, min(3, len(names))))
        ps = sorted(draw(st.permutations(names))[:k], key=names.index)
        pc = [cards[p] for p in ps]
        t = rng.integers(-5, 6, size=pc) if ints else rng.normal(0, 5, size=pc)
        utilities[f"U{j}"] = (ps, np.asarray(t, dtype=float))
    # every decision should matter to some utility most of the time: one utility reads the last decision
    last = list(decisions)[-1]
    ps, t = utilities["U0"]
    if last not in ps and draw(st.booleans()):
        ps2 = sorted([*ps, last], key=names.index)
        pc = [cards[p] for p in ps2]
        utilities["U0"] = (ps2, rng.integers(-5, 6, size=pc).astype(float) if ints else rng.normal(0, 5, size=pc))
    return Spec(names, cards, chance, decisions, utilities)


# -- pyAgrum ------------------------------------------------------------------------------------


def to_pyagrum(spec: Spec):
    """The same diagram in pyAgrum (chance/decision variables keep their state order)."""
    import pyagrum as gum

    diag = gum.InfluenceDiagram()
    for v in spec.order:
        var = gum.LabelizedVariable(v, v, spec.cards[v])
        (diag.addChanceNode if v in spec.chance else diag.addDecisionNode)(var)
    for u in spec.utilities:
        diag.addUtilityNode(gum.LabelizedVariable(u, u, 1))
    for v in spec.order:
        ps = spec.chance[v][0] if v in spec.chance else spec.decisions[v]
        for p in ps:
            diag.addArc(p, v)
    for u, (ps, _) in spec.utilities.items():
        for p in ps:
            diag.addArc(p, u)
    for v, (ps, t) in spec.chance.items():
        _fill(diag.cpt(v), np.asarray(t, dtype=float), [*ps, v])
    for u, (ps, t) in spec.utilities.items():
        _fill(diag.utility(u), np.asarray(t, dtype=float)[..., None], [*ps, u])
    return diag


def _fill(pot, table, tvars):
    want = list(reversed(pot.names))                      # toarray / fillWith axis order
    arr = np.transpose(table, [tvars.index(v) for v in want])
    pot.fillWith(arr.reshape(-1).tolist())


def pyagrum_meu(spec: Spec, perfect_recall: bool) -> float:
    import pyagrum as gum

    diag = to_pyagrum(spec)
    ie = gum.ShaferShenoyLIMIDInference(diag)
    if perfect_recall:
        ie.addNoForgettingAssumption(list(spec.decisions))
    ie.makeInference()
    return float(ie.MEU()["mean"])


# -- causalnet's policies as tables over the declared parents ----------------------------------------


def rule_over(rule, parents, cards):
    """A rule's table broadcast over `parents` (a superset of the rule's own information)."""
    shape = [cards[p] for p in parents]
    out = np.empty((*shape, rule.table.shape[-1]))
    for idx in np.ndindex(*shape):
        sub = tuple(idx[parents.index(p)] for p in rule.parents)
        out[idx] = rule.table[sub]
    return out


def as_tables(spec, policy):
    return {d: rule_over(policy[d], list(ps), spec.cards) for d, ps in spec.decisions.items()}
