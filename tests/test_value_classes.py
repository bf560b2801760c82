"""Spec, Term and Query: plain classes (no dataclass machinery at import) that behave as the dataclasses they were.

The oracle is the dataclass each class was before issue 23 made the import light, defined here:
the same repr, equality, hashing (and unhashability of the mutable Query), immutability of Spec and
Term, keyword and positional construction with the same defaults, pattern matching and pickling.
"""

import copy
import pickle
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from causalnet.mechanisms.base import Spec
from causalnet.queries import Query, Term, cf, parse_query


@dataclass(frozen=True)
class RefSpec:
    kind: str
    states: tuple | None = None
    shape: tuple = ()
    dtype: Any = field(default=np.float64)


@dataclass(frozen=True)
class RefTerm:
    name: str
    world: tuple | None = None
    value: Any = None


@dataclass
class RefQuery:
    targets: list
    evidence: list = field(default_factory=list)
    do: dict = field(default_factory=dict)


def _text(obj, ref_name, name):
    return repr(obj).replace(ref_name, name)


names = st.sampled_from(["X", "Y", "Z1", "a.b"])
values = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["on", "off"]))
worlds = st.one_of(st.none(), st.lists(st.tuples(names, st.integers(0, 2)), max_size=2).map(tuple))


@given(st.sampled_from(["discrete", "real", "tensor"]), st.one_of(st.none(), st.lists(names, max_size=3).map(tuple)),
       st.sampled_from([(), (3,), (None, 2)]), st.sampled_from([np.float64, np.int64]))
def test_spec_behaves_as_its_dataclass(kind, states, shape, dtype):
    a, ref = Spec(kind, states, shape, dtype), RefSpec(kind, states, shape, dtype)
    assert repr(a) == _text(ref, "RefSpec", "Spec")
    assert a == Spec(kind=kind, states=states, shape=shape, dtype=dtype) and hash(a) == hash(Spec(kind, states, shape,
                                                                                                   dtype))
    assert (a == Spec("other")) == (ref == RefSpec("other")) and a != ref
    assert pickle.loads(pickle.dumps(a)) == a and copy.deepcopy(a) == a
    with pytest.raises(AttributeError):
        a.kind = "real"
    with pytest.raises(AttributeError):
        del a.states
    match a:
        case Spec(k, s, sh, dt):
            assert (k, s, sh, dt) == (kind, states, shape, dtype)
    assert Spec(kind) == Spec(kind, None, (), np.float64) and repr(Spec(kind)) == _text(RefSpec(kind), "RefSpec", "Spec")


@given(names, worlds, values, names, worlds, values)
def test_term_behaves_as_its_dataclass(n1, w1, v1, n2, w2, v2):
    a, b = Term(n1, w1, v1), Term(n2, w2, v2)
    ra, rb = RefTerm(n1, w1, v1), RefTerm(n2, w2, v2)
    assert repr(a) == _text(ra, "RefTerm", "Term")
    assert (a == b) == (ra == rb) and (hash(a) == hash(b)) >= (a == b)
    assert len({a, b}) == len({ra, rb})
    assert pickle.loads(pickle.dumps(a)) == a and Term(name=n1, world=w1, value=v1) == a
    with pytest.raises(AttributeError):
        a.value = 1
    assert Term(n1) == Term(n1, None, None) and a != ra


@given(st.lists(st.builds(Term, names), min_size=1, max_size=2), st.lists(st.builds(Term, names, st.none(), values),
                                                                          max_size=2),
       st.dictionaries(names, st.integers(0, 2), max_size=2))
def test_query_behaves_as_its_dataclass(targets, evidence, do):
    q, ref = Query(targets, evidence, do), RefQuery(targets, evidence, do)
    assert repr(q) == _text(ref, "RefQuery", "Query")
    assert q == Query(targets=list(targets), evidence=list(evidence), do=dict(do)) and q != ref
    with pytest.raises(TypeError):
        hash(q)                                          # mutable, as the dataclass (eq=True) was
    q2 = Query(list(targets))
    assert q2.evidence == [] and q2.do == {} and q2.evidence is not Query(list(targets)).evidence
    q2.do["X"] = 1                                       # mutable, as before
    assert q2.do == {"X": 1} and pickle.loads(pickle.dumps(q)) == q


def test_the_parser_builds_the_same_values():
    q = parse_query("P(Y_{X=1, M=M_{X=0}} | do(Z=1), W=0)")
    assert q.targets == [cf("Y", {"X": 1, "M": cf("M", {"X": 0})})] and q.do == {"Z": 1}
    assert q.evidence == [Term("W", None, 0)] and q.is_counterfactual
    assert not parse_query("P(Y | X=1)").is_counterfactual
