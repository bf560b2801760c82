"""Immutable records: the base of the library's small value classes (``Term``, ``Spec``, ``Independence``).

A record is a frozen dataclass without the dataclass machinery (whose import and class construction cost a fresh
process milliseconds): its fields are its ``__slots__``, set once by the subclass's ``__init__`` through
:meth:`Record._set`; it compares and hashes by its fields, prints as ``Name(field=value, ...)`` and pickles.

Example
-------
>>> class Point(Record):
...     __slots__ = ("x", "y")
...     __match_args__ = __slots__
...     def __init__(self, x, y=0):
...         self._set(x, y)
>>> Point(1) == Point(1, 0), Point(1, 2)
(True, Point(x=1, y=2))
"""

from __future__ import annotations

__all__ = ["Record"]

_SET = object.__setattr__


class Record:
    """An immutable record whose fields are the subclass's ``__slots__`` (in order)."""

    __slots__ = ()

    def _set(self, *values) -> None:
        """Set every field, in ``__slots__`` order (for the subclass's ``__init__`` only)."""
        for name, value in zip(self.__slots__, values):
            _SET(self, name, value)

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({inner})"

    def __reduce__(self):
        return (type(self), self._fields())
