"""The ``fedsim`` command.

Subcommands are registered by the module that owns them, each exposing
``add_parser(subparsers)`` (which sets ``func``) so this file stays a thin
dispatcher; :data:`SUBCOMMANDS` says which module registers which subcommand, and a
command line naming one imports that module only (``fedsim run`` starts without the
theorems or the suites):

* ``fedsim run``       -- :mod:`fedsim.cli_run` (one simulated scenario -> CSV)
* ``fedsim bounds``    -- :mod:`fedsim.theory.cli` (evaluate a theorem's bound)
* ``fedsim validate``  -- :mod:`fedsim.validation.cli` (Monte-Carlo suites -> verdicts + PDF)
* ``fedsim report``    -- :mod:`fedsim.validation.cli` (rebuild the PDF of a run directory)
* ``fedsim search``    -- :mod:`fedsim.validation.search_cli` (bound violations /
  looseness over a family)
* ``fedsim worstcase`` -- :mod:`fedsim.worstcase.cli` (the PEP worst case of a method)

Exit codes, the same for every subcommand (:data:`EXIT_CODES`; the fuzz test's oracle
accepts 0, 2 and 3 only):

* 0 -- the command finished and its result can be read as a success;
* 2 -- bad input or a user error (bad option, bad TOML, inconsistent scenario, unusable
  output path, a scenario over the memory budget, a non-finite simulated time): one line
  ``fedsim: error: ...`` on stderr, before any computation where the input allows it;
* 3 -- the command finished but its result is a failure that must not be read as a
  success: ``fedsim run`` diverged; ``fedsim validate`` had a negative control that did
  not get its required verdict (one line on stderr; the outputs are written for
  inspection);
* 130 -- interrupted (Ctrl-C); re-running resumes where a run directory exists.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from fedsim.errors import FedsimError

__all__ = ["main", "build_parser", "OneLineParser", "DESCRIPTION", "EXIT_CODES",
           "EXIT_FAILED_RESULT", "SUBCOMMANDS"]

#: the command finished, but its result is a failure (a diverged run, a failed control)
EXIT_FAILED_RESULT = 3
#: every exit code of ``fedsim`` and what it means (module doc)
EXIT_CODES = {0: "done", 2: "bad input or a user error (one line on stderr)",
              EXIT_FAILED_RESULT: "finished, but the result is a failure (a diverged run, "
              "a negative control without its required verdict)",
              130: "interrupted (re-run to resume)"}

#: subcommand -> the module that registers it (``add_parser``); ``fedsim run`` imports
#: ``fedsim.cli_run`` only, not the theorems or the suites (issue 19: start-up time).
#: tests/core/test_startup.py checks it against what each module registers.
SUBCOMMANDS = {"run": "fedsim.cli_run", "bounds": "fedsim.theory.cli",
               "validate": "fedsim.validation.cli", "report": "fedsim.validation.cli",
               "search": "fedsim.validation.search_cli", "worstcase": "fedsim.worstcase.cli"}
_SUBCOMMAND_MODULES = tuple(dict.fromkeys(SUBCOMMANDS.values()))


class OneLineParser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"fedsim: error: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


DESCRIPTION = ("Simulate asynchronous and personalized federated learning and check "
               "published convergence theorems against the simulation.")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: with every subcommand module, or with only the module that registers
    ``command`` (:data:`SUBCOMMANDS`; its siblings in that module come along)."""
    from fedsim import __version__

    parser = OneLineParser(prog="fedsim", description=DESCRIPTION,
                           epilog="exit codes: " + "; ".join(f"{k} {v}" for k, v in
                                                             EXIT_CODES.items()))
    parser.add_argument("--version", action="version", version=f"fedsim {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser, required=True)
    modules = (SUBCOMMANDS[command],) if command in SUBCOMMANDS else _SUBCOMMAND_MODULES
    for modname in modules:
        importlib.import_module(modname).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (130 on Ctrl-C, also while
    the subcommand modules are still being imported)."""
    _standard_streams()
    try:
        args_in = sys.argv[1:] if argv is None else list(argv)
        # the named subcommand's module only; anything else (--help, --version, a typo):
        # every module, so the top-level help and "invalid choice" list every subcommand
        command = args_in[0] if args_in and args_in[0] in SUBCOMMANDS else None
        parser = build_parser(command)
    except KeyboardInterrupt:
        sys.stderr.write("fedsim: interrupted while starting\n")
        return 130
    except FedsimError as exc:  # a registry that cannot be built: one line, no traceback
        sys.stderr.write(f"fedsim: error: {str(exc).splitlines()[0] if str(exc) else exc!r}\n")
        return 2
    except (OSError, MemoryError) as exc:  # e.g. too many open files while importing
        return _system_error(exc)
    args = parser.parse_args(argv)  # a usage error raises SystemExit(2) after one line
    stdout, sys.stdout = sys.stdout, _NamedStream(sys.stdout, "standard output")
    try:
        from fedsim.environment import check_environment

        check_environment()  # bad FEDSIM_* values: exit 2 for every command alike
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe or a full device shows here, inside the handlers
        return code
    except FedsimError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"fedsim: error: {msg}\n")
        return 2
    except BrokenPipeError:  # `fedsim bounds ... | head`: the reader left; stop quietly
        _silence_stdout()
        return 0
    except (OSError, MemoryError) as exc:
        return _system_error(exc)
    finally:
        sys.stdout = stdout


class _NamedStream:
    """A text stream whose write errors (a full device: ``> /dev/full``) name it; a closed
    pipe stays a BrokenPipeError."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream, self._name = stream, name

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            _silence_stdout()
            raise OSError(exc.errno, exc.strerror, self._name) from None

    def write(self, text: str) -> int:
        return self._call("write", text)

    def flush(self) -> None:
        self._call("flush")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


#: what to do about an OSError, by errno name (the cause named in the one-line message)
_FIXES = {"ENOSPC": "free some space and re-run; a run directory resumes",
          "EDQUOT": "the disk quota is reached; free some space and re-run",
          "EFBIG": "a file-size limit (ulimit -f) is reached; raise it and re-run",
          "EMFILE": "too many open files (ulimit -n); raise the limit and re-run",
          "ENFILE": "the system's open-file table is full; re-run later",
          "EROFS": "the file system is read-only; choose another path",
          "EACCES": "no permission; choose another path",
          "EPERM": "no permission; choose another path"}


def _system_error(exc: BaseException) -> int:
    """One line naming the path and the cause of an OSError (a full disk, a limit, a
    read-only file system) or a MemoryError; exit 2."""
    import errno

    if isinstance(exc, MemoryError):
        msg = ("out of memory; reduce the sizes (fedsim run --memory-budget, "
               "FEDSIM_MEMORY_BUDGET)")
    else:
        assert isinstance(exc, OSError)
        name = errno.errorcode.get(exc.errno or 0, "")
        where = f"{exc.filename}: " if exc.filename else ""
        what = exc.strerror or str(exc) or type(exc).__name__
        fix = _FIXES.get(name)
        msg = f"{where}{what}" + (f" ({fix})" if fix else "")
    try:
        sys.stderr.write(f"fedsim: error: {msg}\n")
    except (OSError, ValueError):
        pass
    return 2


def _standard_streams() -> None:
    """A closed stdout or stderr (``>&-``, ``2>&-``) becomes /dev/null: the messages and the
    exit codes stay those of an open one, and no file the command opens later can take the
    stream's descriptor and receive its text."""
    import os

    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        try:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if name != "stdin":
                setattr(sys, name, open(fd, "w", encoding="utf-8", closefd=False))
        except OSError:
            pass


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
