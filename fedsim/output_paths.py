"""The one check that no output of a command replaces one of its inputs or another of its
outputs (issue 31, Deliver 1).

Every door -- ``fedsim run --out/--metrics-out/--plot``, ``fedsim validate --out/--report``,
``fedsim report DIR --out``, ``fedsim search --out/--report``, ``fedsim.validation.validate
(out=, report=)`` -- calls :func:`check_outputs` with what it reads and what it writes,
before any work starts.  An output file is refused (one-line
:class:`~fedsim.errors.ConfigError`, exit 2 on the command line) when it resolves -- through
symlinks of its folders, ``..`` and hard links -- to:

* a file the command reads (the scenario TOML);
* another output of the same command, or one of its run directories;
* a file a run directory owns (:data:`RUN_DIR_FILES`, :data:`RUN_DIR_FOLDERS`: the store
  ``store.sqlite`` and its journal, ``verdicts.csv``, ``suite.json``, ``meta/``, ...).  The
  report PDF may live in the run directory (``report.pdf``, ``search.pdf`` are its
  defaults) under any other name.

The kind of each path (a symlink, a device, ...) is :mod:`fedsim.safefile`'s check, which
every door makes as well.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedsim.errors import ConfigError

__all__ = ["check_outputs", "RUN_DIR_FILES", "RUN_DIR_FOLDERS"]

#: files a run directory (``fedsim validate``/``search --out``) owns: never an output's target
RUN_DIR_FILES = frozenset({
    "store.sqlite", "store.sqlite-journal", "store.sqlite-wal", "store.sqlite-shm", ".lock",
    "verdicts.csv", "suite.json", "summary.json", "search.csv", "search.json",
    "paper_verdicts.csv", "paper_vs_previous.csv", "paper_summary.json"})
#: folders of a run directory whose every file it owns
RUN_DIR_FOLDERS = frozenset({"meta", "results", "points", "oracle-cache", "confirm", "paper"})

Paths = Mapping[str, Any]


def _resolved(path: Any) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve(strict=False)


def _same_file(a: Path, b: Path) -> bool:
    """Both paths exist and are one file (a hard link, or one path through a symlink)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _owned_by(out: Path, run_dir: Path) -> str | None:
    """What of ``run_dir`` the output ``out`` would replace, or None."""
    try:
        rel = out.relative_to(run_dir)
    except ValueError:
        return None
    parts = rel.parts
    if not parts:
        return "the run directory"
    if parts[0] in RUN_DIR_FOLDERS:
        return f"a file in the {parts[0]}/ folder of the run directory"
    if len(parts) == 1 and parts[0] in RUN_DIR_FILES:
        what = "store" if parts[0].startswith("store.sqlite") else parts[0]
        return f"the {what} of the run directory"
    return None


def check_outputs(*, outputs: Paths, inputs: Paths | None = None,
                  run_dirs: Paths | None = None) -> None:
    """Refuse an output that would replace an input, another output or a run directory's
    file (module doc).  Each mapping is ``{option: path}`` (``None`` values are skipped):
    ``outputs`` the files written, ``inputs`` the files read, ``run_dirs`` the run
    directories used (read, written or both)."""
    outs = {k: (p, _resolved(p)) for k, p in outputs.items() if p is not None}
    ins = {k: (p, _resolved(p)) for k, p in (inputs or {}).items() if p is not None}
    dirs = {k: (p, _resolved(p)) for k, p in (run_dirs or {}).items() if p is not None}
    seen: list[tuple[str, Any, Path]] = []
    for opt, (given, out) in outs.items():
        for iopt, (igiven, inp) in ins.items():
            if out == inp or _same_file(out, inp):
                raise ConfigError(f"{opt} {str(given)!r} is the {iopt} {str(igiven)!r} this "
                                  "command reads; choose another output path")
        for dopt, (dgiven, rd) in dirs.items():
            what = _owned_by(out, rd)
            if what is None and rd.is_relative_to(out):
                what = "a folder holding the run directory"
            if what is not None:
                raise ConfigError(f"{opt} {str(given)!r} would replace {what} "
                                  f"{str(dgiven)!r} ({dopt}); choose another output path")
        for sopt, sgiven, other in seen:
            if out == other or _same_file(out, other):
                raise ConfigError(f"{opt} {str(given)!r} and {sopt} {str(sgiven)!r} are the "
                                  "same file; give them different paths")
        seen.append((opt, given, out))
    for dopt, (dgiven, rd) in dirs.items():
        for iopt, (_, inp) in ins.items():
            if rd == inp:
                raise ConfigError(f"{dopt} {str(dgiven)!r} is the {iopt} this command "
                                  "reads; choose another run directory")
