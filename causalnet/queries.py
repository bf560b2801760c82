"""Query strings: ``P(Y | do(X=1), Z=0)`` and counterfactual terms, parsed by a grammar.

Grammar (whitespace is free)::

    query    := "P" "(" terms [ "|" conds ] ")"
    terms    := term ("," term)*
    term     := name [ "_{" assigns "}" ] [ "=" value ]     # Y, Y=1, Y_{X=0}=1
    conds    := cond ("," cond)*
    cond     := "do" "(" assigns ")" | term                # evidence terms need "=" value
    assigns  := name "=" (nested | value) ("," name "=" (nested | value))*
    nested   := name "_{" assigns "}"                        # M=M_{X=0}
    name     := identifier (letters, digits, _, ., [k] indices) | "quoted"
    value    := identifier | number | "quoted"

A term with a subscript ``Y_{X=0}`` is the value of Y in the world where X
was set to 0: a counterfactual term. ``P(Y_{X=0}=1 | X=1, Y=1)`` is the
probability of necessity. Terms may live in different worlds:
``P(Y_{X=1}=1, Y_{X=0}=0)`` is the probability of necessity and sufficiency,
and a subscript may set a node to its value in another world —
``Y_{X=1, M=M_{X=0}}`` (a *nested* counterfactual, the outcome of natural
direct effects). :func:`cf` builds the same terms from Python. Nothing is
ever evaluated as Python.

Examples
--------
>>> q = parse_query("P(Y | do(X=1), Z=0)")
>>> q.targets, q.do, q.evidence
([Term(name='Y', world=None, value=None)], {'X': 1}, [Term(name='Z', world=None, value=0)])
>>> parse_query("P(Y_{X=0}=1 | X=1, Y=1)").is_counterfactual
True
>>> t = parse_query("P(Y_{X=1, M=M_{X=0}})").targets[0]
>>> t.world
(('M', Term(name='M', world=(('X', 0),), value=None)), ('X', 1))
>>> cf("Y", {"X": 1, "M": cf("M", {"X": 0})}) == t
True
"""

from __future__ import annotations

import re
from typing import Any

from .errors import EvidenceError
from .records import Record

__all__ = ["parse_query", "Query", "Term", "cf"]


class Term(Record):
    """One variable of a query: its name, its world (a do-dict) and an optional value.

    A value in the world may itself be a :class:`Term` without a value: the
    node is set to what that term would have been (a nested counterfactual).
    Immutable and hashable; two terms are equal when their fields are.

    Parameters
    ----------
    name : str
    world : tuple, optional
        Sorted ``((node, value), ...)`` of the subscript; None is the factual world.
    value : optional
    """

    __slots__ = ("name", "world", "value")
    __match_args__ = ("name", "world", "value")

    name: str
    world: tuple | None
    value: Any

    def __init__(self, name: str, world: tuple | None = None, value: Any = None) -> None:
        self._set(name, world, value)

    @property
    def world_dict(self) -> dict:
        return dict(self.world or ())

    def __str__(self) -> str:
        text = str(self.name)
        if self.world:
            text += "_{" + ", ".join(f"{k}={v}" for k, v in self.world) + "}"
        return text if self.value is None else f"{text}={self.value}"


def _sorted_world(items) -> tuple:
    return tuple(sorted(items, key=lambda kv: str(kv[0])))


def cf(node, do=None) -> Term:
    """The counterfactual variable ``node_{do}``: `node` in the world where `do` was applied.

    Use it wherever a query takes a node (targets, evidence keys) to ask
    questions across worlds from Python; a value in `do` may be another
    ``cf(...)`` (the node set to its value in that world).

    Parameters
    ----------
    node : hashable
    do : mapping node -> value or Term, optional
        Empty or None: the factual variable.

    Examples
    --------
    >>> str(cf("Y", {"X": 1, "M": cf("M", {"X": 0})}))
    'Y_{M=M_{X=0}, X=1}'
    """
    if do is None:
        do = {}
    if not isinstance(do, dict):
        raise EvidenceError(f"cf({node!r}, do): do must be a dict node -> value, got {type(do).__name__}")
    for k, v in do.items():
        if isinstance(v, Term) and v.value is not None:
            raise EvidenceError(f"cf({node!r}): the nested term for {k!r} must not carry a value, got {v}")
    return Term(node, _sorted_world(do.items()) if do else None)


class Query:
    """A parsed query string: target terms, evidence terms and the ``do`` assignments.

    Parameters
    ----------
    targets : list of Term
    evidence : list of Term, optional
    do : dict, optional
        Node -> value.
    """

    __slots__ = ("targets", "evidence", "do")
    __match_args__ = ("targets", "evidence", "do")
    __hash__ = None                                  # mutable, compared by its fields

    def __init__(self, targets: list[Term], evidence: list[Term] | None = None, do: dict | None = None) -> None:
        self.targets = targets
        self.evidence = [] if evidence is None else evidence
        self.do = {} if do is None else do

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.targets, self.evidence, self.do) == (other.targets, other.evidence, other.do)

    def __repr__(self) -> str:
        return f"Query(targets={self.targets!r}, evidence={self.evidence!r}, do={self.do!r})"

    def __reduce__(self):
        return (Query, (self.targets, self.evidence, self.do))

    @property
    def is_counterfactual(self) -> bool:
        return any(t.world is not None for t in self.targets + self.evidence)


# The token grammar, compiled by the first query string parsed (``re`` caches it): importing this module
# compiles nothing.
_TOKENS = r"""
    (?P<ws>\s+)
  | (?P<sub>_\{)
  | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.]))
  | (?P<name>[A-Za-z_][\w.]*?(?=_\{)|[A-Za-z_][\w.]*(?:\[\d+\])*)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<punct>[(),|=}])
    """


def _tokenize(text: str) -> list[tuple[str, Any, int]]:
    out = []
    pos = 0
    tokens = re.compile(_TOKENS, re.VERBOSE)
    while pos < len(text):
        m = tokens.match(text, pos)
        if not m:
            raise EvidenceError(f"cannot parse query at column {pos + 1}: unexpected {text[pos:pos + 10]!r} in {text!r}")
        kind = m.lastgroup
        val: Any = m.group()
        if kind == "num":
            val = int(val) if re.fullmatch(r"[-+]?\d+", val) else float(val)
        elif kind == "str":
            val = re.sub(r"\\(.)", r"\1", val[1:-1])
            kind = "name"
        if kind != "ws":
            out.append((kind, val, pos))
        pos = m.end()
    out.append(("end", None, len(text)))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> tuple:
        return self.toks[self.i]

    def take(self, kind: str, value: Any = None) -> Any:
        k, v, pos = self.toks[self.i]
        if k != kind or (value is not None and v != value):
            want = repr(value) if value is not None else kind
            got = "end of text" if k == "end" else repr(v)
            raise EvidenceError(f"cannot parse query {self.text!r}: expected {want} at column {pos + 1}, got {got}")
        self.i += 1
        return v

    def at(self, kind: str, value: Any = None) -> bool:
        k, v, _ = self.toks[self.i]
        return k == kind and (value is None or v == value)

    def value(self) -> Any:
        if self.at("num"):
            return self.take("num")
        return self.take("name")

    def assigned(self) -> Any:
        """The right side of ``name=...`` in a subscript: a value, or a nested term ``M_{X=0}``."""
        if self.at("name") and self.toks[self.i + 1][0] == "sub":
            name = self.take("name")
            self.take("sub")
            w = self.assigns()
            self.take("punct", "}")
            return Term(name, _sorted_world(w.items()))
        return self.value()

    def assigns(self, nested: bool = True) -> dict:
        out = {}
        while True:
            name = self.take("name")
            self.take("punct", "=")
            if name in out:
                raise EvidenceError(f"query {self.text!r} sets {name!r} twice")
            out[name] = self.assigned() if nested else self.value()
            if not self.at("punct", ","):
                return out
            # a comma may separate the next assignment, or end this group
            k, v, _ = self.toks[self.i + 1]
            k2, v2, _ = self.toks[self.i + 2] if self.i + 2 < len(self.toks) else ("end", None, 0)
            if k == "name" and k2 == "punct" and v2 == "=":
                self.take("punct", ",")
                continue
            return out

    def term(self) -> Term:
        name = self.take("name")
        world = None
        if self.at("sub"):
            self.take("sub")
            w = self.assigns()
            self.take("punct", "}")
            world = _sorted_world(w.items())
        value = None
        if self.at("punct", "="):
            self.take("punct", "=")
            value = self.value()
        return Term(name, world, value)

    def parse(self) -> Query:
        p = self.take("name")
        if p != "P":
            raise EvidenceError(f"cannot parse query {self.text!r}: a query starts with 'P(', got {p!r}")
        self.take("punct", "(")
        targets = [self.term()]
        while self.at("punct", ","):
            self.take("punct", ",")
            targets.append(self.term())
        evidence: list[Term] = []
        do: dict = {}
        if self.at("punct", "|"):
            self.take("punct", "|")
            while True:
                if self.at("name", "do") and self.toks[self.i + 1][1] == "(":
                    self.take("name")
                    self.take("punct", "(")
                    for k, v in self.assigns(nested=False).items():
                        if k in do:
                            raise EvidenceError(f"query {self.text!r} intervenes on {k!r} twice")
                        do[k] = v
                    self.take("punct", ")")
                else:
                    t = self.term()
                    if t.value is None:
                        raise EvidenceError(f"query {self.text!r}: evidence {t.name!r} needs a value ('{t.name}=...')")
                    evidence.append(t)
                if not self.at("punct", ","):
                    break
                self.take("punct", ",")
        self.take("punct", ")")
        self.take("end")
        valued = [t.value is not None for t in targets]
        if any(valued) and not all(valued):
            raise EvidenceError(f"query {self.text!r}: give a value for every target or for none")
        return Query(targets, evidence, do)


def parse_query(text: str) -> Query:
    """Parse a query string (see the module docstring for the grammar).

    Raises
    ------
    EvidenceError
        On a syntax error, naming the column and what was expected.
    """
    if not isinstance(text, str):
        raise EvidenceError(f"a query must be a string, got {type(text).__name__}")
    return _Parser(text).parse()
