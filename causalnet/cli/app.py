"""The ``causalnet`` command's front: the argument parser and :func:`main`.

Every command lives in its own module and declares its arguments with an ``add_*``
function (:mod:`~causalnet.cli.graphs`, :mod:`~causalnet.cli.query`,
:mod:`~causalnet.cli.tour`, :mod:`~causalnet.cli.completion`); this module assembles
them and runs one.

Errors: a user mistake (a :class:`~causalnet.errors.CausalNetError`, an ``OSError``
from a file, a bad argument) prints one line ``causalnet: error: ...`` on stderr and
exits with status 2. Anything else is a bug in causalnet: it prints one line
``causalnet: internal error: ...`` and exits with status 1 (set the environment
variable ``CAUSALNET_TRACEBACK=1`` to see the traceback instead).

Examples
--------
>>> from causalnet.cli.app import main
>>> main(["dsep", "A -> B -> C", "A", "C", "--given", "B"])
A ⊥ C | B: yes, d-separated
0
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import os
import sys

from ..errors import CausalNetError
from .completion import add_completion
from .explore import add_explore
from .graphs import add_adjust, add_draw, add_dsep, add_gallery
from .query import add_query
from .tour import add_tour

__all__ = ["main", "build_parser", "PROG", "COMMANDS"]

PROG = "causalnet"

#: Every command with one example, in the order ``--help`` lists them.
COMMANDS = (
    ("query", 'causalnet query gallery:sprinkler "P(Wet | do(Sprinkler=on), Rain=yes)" [--json]'),
    ("dsep", "causalnet dsep gallery:asia tub smoke --given dysp"),
    ("adjust", "causalnet adjust gallery:frontdoor Smoking Cancer"),
    ("draw", "causalnet draw gallery:m-bias --highlight X,U1,M,U2,Y -o m-bias.svg"),
    ("gallery", "causalnet gallery"),
    ("tour", "causalnet tour --out causalnet-tour"),
    ("explore", "causalnet explore gallery:sprinkler [--port 8765] [--no-browser]"),
    ("completion", 'eval "$(causalnet completion bash)"'),
)

_DECLARE = {"query": add_query, "dsep": add_dsep, "adjust": add_adjust, "draw": add_draw, "gallery": add_gallery,
            "tour": add_tour, "explore": add_explore}

_EPILOG = (
    "commands, with an example each:\n"
    + "\n".join(f"  {name:<10} {example}" for name, example in COMMANDS)
    + "\n\nMODEL is gallery:NAME or a model file (.bif, .bif.gz, .xmlbif, .json); GRAPH is gallery:NAME,\n"
      "a graph file (dagitty-like text or JSON) or graph text like 'A -> B <- C'. 'causalnet COMMAND --help'\n"
      "describes a command; query, dsep, adjust and gallery take --json for scripts. Bad input prints one\n"
      "line on stderr and exits with status 2."
)


class UsageError(Exception):
    """A bad command line (raised instead of argparse's print-usage-and-exit)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # noqa: D401 - argparse hook
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    """The ``causalnet`` argument parser, with every command of :data:`COMMANDS`."""
    p = _Parser(prog=PROG, description="Causal DAGs and models: d-separation, adjustment sets, queries, diagrams.",
                epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"%(prog)s {importlib.metadata.version('causalnet')}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    declare = {**_DECLARE, "completion": functools.partial(add_completion, root=p)}
    for name, _ in COMMANDS:
        declare[name](sub)
    return p


def _one_line(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        raise UsageError(f"choose a command: {', '.join(n for n, _ in COMMANDS)} (see '{PROG} --help')")
    return args.func(args)


def main(argv: list[str] | None = None) -> int:
    """Run the ``causalnet`` command; returns the exit status (2 on a user error)."""
    try:
        return _run(argv)
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 0
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
    except (UsageError, CausalNetError, OSError) as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a bug: one line, not a traceback, unless asked
        if os.environ.get("CAUSALNET_TRACEBACK"):
            raise
        print(f"{PROG}: internal error: {type(e).__name__}: {_one_line(e)} (a bug in causalnet; set "
              f"CAUSALNET_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 1
