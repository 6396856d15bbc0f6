"""``fedsim.validation.validate``: run a suite or a list of cases from Python and get the
verdict table as a DataFrame."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from fedsim.validation.scenarios import Case
from fedsim.validation.suites import SUITES, run_cases, run_suite

from fedsim.errors import ConfigError, check_integer

__all__ = ["validate", "IN_PROCESS_REPLICATES"]

#: at most this many simulated replicates run in the calling process by default; more run
#: on a process pool with one worker per core
IN_PROCESS_REPLICATES = 64


def _replicates(cases: Sequence[Case]) -> int:
    return sum(run.replicates for case in cases for run in case.runs)


def _as_option(name: str, value: object, low: int, high: int) -> int:
    """``value`` checked by the ``fedsim validate --<name>`` option's own parser, with its
    message (an integer type first: ``2.0`` and ``True`` are not counts)."""
    import argparse

    from fedsim.validation.cli import int_at_least

    check_integer(name, value)
    try:
        return int_at_least(low, name, high)(str(value))
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(str(exc)) from None


def validate(what: str | Sequence[Case], *, out: str | os.PathLike | None = None,
             replicates: int | None = None, workers: int | None = None,
             report: str | os.PathLike | None = None, progress: bool = False) -> pd.DataFrame:
    """Validate a named suite (``"smoke"``, ``"quick"``, ``"full"``) or a list of
    :class:`~fedsim.validation.scenarios.Case` objects; returns the verdict table (the rows
    of ``verdicts.csv``: measured mean, its 99% CI, the bound, the verdict, the status and
    the hypotheses of every comparison).

    ``out`` is the run directory (resumable: a second call reuses the stored replicates);
    ``None`` runs in a temporary directory that is removed afterwards. ``replicates``
    overrides a suite's replicates per in-regime run set. ``workers=None`` runs small work
    (at most :data:`IN_PROCESS_REPLICATES` simulated replicates) in this process and larger
    work on one process per core; ``workers=1`` always runs in this process. ``report``
    also writes the PDF report there. Every argument is checked as ``fedsim validate``
    checks its option, with the same limits and messages, before any work; worker processes
    are refused from a script that calls this at its top level without ``if __name__ ==
    "__main__":`` (each worker would re-import the script and start again). For the
    papers' experiments use ``fedsim validate --suite paper``
    (:func:`fedsim.validation.paper.run_paper_suite`).
    """
    from fedsim.validation.cli import MAX_REPLICATES, MAX_WORKERS
    from fedsim.validation.montecarlo_backends import check_main_guarded

    from fedsim.environment import check_environment
    from fedsim.output_paths import check_outputs
    from fedsim.safefile import check_output_dir, check_output_file

    check_environment()  # what `fedsim validate` checks, with its messages, before any work
    if replicates is not None:
        _as_option("replicates", replicates, 2, MAX_REPLICATES)
    if workers is not None:
        _as_option("workers", workers, 1, MAX_WORKERS)
    if out is not None:
        check_output_dir("out", out)
    if report is not None:
        check_output_file("report", report, create_parents=True)
    check_outputs(outputs={"report": report}, run_dirs={"out": out})
    if isinstance(what, str) and workers != 1:
        check_main_guarded()  # a suite is pool work: an unguarded script is refused at once
    if isinstance(what, str):
        if what not in SUITES:
            raise ConfigError(f"suite must be one of {sorted(SUITES)}, got {what!r} (the "
                              "paper suite: fedsim validate --suite paper)")
        from fedsim.validation.suites import build_cases

        cases = build_cases(what, replicates)
    else:
        cases = list(what)
        if not cases or not all(isinstance(c, Case) for c in cases):
            raise ConfigError("validate() takes a suite name or a non-empty list of Case "
                              "objects")
    if workers is None and _replicates(cases) <= IN_PROCESS_REPLICATES:
        workers = 1
    if workers != 1:
        check_main_guarded()  # an unguarded script: refused now, not after the workers die
    with tempfile.TemporaryDirectory(prefix="fedsim-validate-") as tmp:
        run_dir = Path(out) if out is not None else Path(tmp) / "run"
        if isinstance(what, str):
            run_suite(what, replicates=replicates, workers=workers, out=run_dir,
                      report=report, progress=progress)
            return pd.read_csv(run_dir / "verdicts.csv")
        return run_cases(cases, run_dir, workers=workers, report=report, progress=progress)
