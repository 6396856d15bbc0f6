"""The ``fedsim`` command.

Subcommands are registered by the module that owns them, each exposing
``add_parser(subparsers)`` (which sets ``func``) so this file stays a thin
dispatcher:

* ``fedsim run``       -- :mod:`fedsim.cli_run` (one simulated scenario -> CSV)
* ``fedsim bounds``    -- :mod:`fedsim.theory.cli` (evaluate a theorem's bound)
* ``fedsim validate``  -- :mod:`fedsim.validation.cli` (Monte-Carlo suites -> verdicts + PDF)
* ``fedsim report``    -- :mod:`fedsim.validation.cli` (rebuild the PDF of a run directory)
* ``fedsim search``    -- :mod:`fedsim.validation.search_cli` (bound violations /
  looseness over a family)

Every user error (bad option, bad TOML, inconsistent scenario, unusable output path,
a scenario over the memory budget) prints one line ``fedsim: error: ...`` on stderr and
exits with code 2, before any computation.  ``fedsim run`` exits 3 when the run diverged.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fedsim.errors import FedsimError

__all__ = ["main", "build_parser", "OneLineParser", "DESCRIPTION"]

_SUBCOMMAND_MODULES = ("fedsim.cli_run", "fedsim.theory.cli", "fedsim.validation.cli",
                       "fedsim.validation.search_cli")


class OneLineParser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"fedsim: error: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


DESCRIPTION = ("Simulate asynchronous and personalized federated learning and check "
               "published convergence theorems against the simulation.")


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every subcommand module."""
    from fedsim import __version__

    parser = OneLineParser(prog="fedsim", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"fedsim {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser, required=True)
    for modname in _SUBCOMMAND_MODULES:
        importlib.import_module(modname).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (130 on Ctrl-C, also while
    the subcommand modules are still being imported)."""
    try:
        parser = build_parser()  # imports numpy, scipy, pandas, simpy: seconds on a cold disk
    except KeyboardInterrupt:
        sys.stderr.write("fedsim: interrupted while starting\n")
        return 130
    except FedsimError as exc:  # a registry that cannot be built: one line, no traceback
        sys.stderr.write(f"fedsim: error: {str(exc).splitlines()[0] if str(exc) else exc!r}\n")
        return 2
    args = parser.parse_args(argv)  # a usage error raises SystemExit(2) after one line
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except FedsimError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"fedsim: error: {msg}\n")
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        sys.stderr.write(f"fedsim: error: {exc}\n")
        return 2
    except BrokenPipeError:  # `fedsim bounds ... | head`: the reader left; stop quietly
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not report the
    broken pipe again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
