"""``fedsim validate`` and ``fedsim report`` (issue 6 item 5, the command line).

``fedsim validate --suite quick|full [--replicates R] [--workers N] [--dask ADDR]
[--out DIR] [--report PDF]`` runs a named suite through
:func:`validation.suites.run_suite` (Monte-Carlo replicates, bounds, verdicts) and
says where ``verdicts.csv`` and the PDF went.  ``--suite paper`` runs the seed papers'
own experiments instead (:func:`validation.paper.run_paper_suite`: claimed ordering
against measured; ``runs/paper/paper_verdicts.csv``,
``reports/paper-experiments.pdf``).
Re-running the same command after an interruption resumes from the run directory
(see :mod:`validation.montecarlo`).

``fedsim report DIR [--out PDF]`` rebuilds the PDF of a run directory
(:func:`validation.report.build_report`); the default is ``DIR/report.pdf``.

Exit codes: 0 done; 1 a negative control of the suite did not get the verdict it must
get (``run_suite`` returned ``controls_ok=False``: the machinery cannot be trusted);
2 bad options (one line ``fedsim: error: ...`` on stderr, from
:class:`fedsim.cli.OneLineParser`) or a user error; 130 interrupted (re-run to resume).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fedsim.errors import FedsimError

__all__ = ["add_parser", "cmd_validate", "cmd_report", "SUITES"]

SUITES = ("quick", "full", "smoke", "paper")


def _int_at_least(lo: int, name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer >= {lo}, got {name}={text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{name} must be >= {lo}, got {name}={value}")
        return value

    parse.__name__ = name  # argparse names the type in some messages
    return parse


def _dask_address(text: str) -> str:
    if text == "local" or ("://" in text and text.split("://", 1)[1]):
        return text
    raise argparse.ArgumentTypeError(
        f"dask must be 'local' or a scheduler address like tcp://host:8786, got dask={text!r}")


def add_parser(subparsers: Any) -> None:
    """Register ``validate`` and ``report`` on the ``fedsim`` dispatcher."""
    p = subparsers.add_parser(
        "validate", help="run a validation suite: Monte-Carlo vs bounds -> verdicts.csv + PDF",
        description="Run a named validation suite (Monte-Carlo replicates of every scenario, "
        "the theorems' bounds at the same constants, verdicts with confidence intervals) and "
        "write verdicts.csv and the PDF report. Re-running the same command after an "
        "interruption resumes from the run directory.",
        epilog="exit codes: 0 done; 1 a negative control did not get its required verdict; "
        "2 bad options; 130 interrupted")
    p.add_argument("--suite", required=True, choices=SUITES, help="which suite to run")
    p.add_argument("--replicates", type=_int_at_least(2, "replicates"), default=None,
                   metavar="R", help="Monte-Carlo replicates per scenario (>= 2; suite default)")
    p.add_argument("--workers", type=_int_at_least(1, "workers"), default=None, metavar="N",
                   help="worker processes (default: all cores; 1 = in-process)")
    p.add_argument("--dask", type=_dask_address, default=None, metavar="ADDR",
                   help="run on Dask: 'local' (a LocalCluster) or tcp://host:port")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="run directory (default runs/<suite>); re-running resumes")
    p.add_argument("--report", type=Path, default=None, metavar="PDF",
                   help="where to write the PDF (default reports/validation-<suite>.pdf)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=cmd_validate)

    r = subparsers.add_parser("report", help="rebuild the PDF report of a run directory",
                              description="Rebuild the PDF report of a run directory "
                              "(verdicts.csv and meta/*.json) without recomputing anything.")
    r.add_argument("run_dir", type=Path, metavar="DIR", help="a run directory (verdicts.csv)")
    r.add_argument("--out", type=Path, default=None, metavar="PDF",
                   help="output PDF (default DIR/report.pdf)")
    r.set_defaults(func=cmd_report)


def _verdict_counts(csv: Path) -> str:
    try:
        from validation.compare import VERDICTS, read_verdicts

        v = read_verdicts(csv)
    except (OSError, FedsimError, ValueError):
        return ""
    counts = v["verdict"].value_counts()
    return ", ".join(f"{k} {int(counts.get(k, 0))}" for k in VERDICTS)


def cmd_validate(args: argparse.Namespace) -> int:
    """Run ``validation.suites.run_suite`` with the parsed options; print the outputs."""
    try:
        suites = importlib.import_module("validation.suites")
    except ModuleNotFoundError as exc:
        if exc.name != "validation.suites":
            raise
        raise FedsimError("validation suites are not installed (validation/suites.py "
                          "is missing)") from exc
    out = args.out if args.out is not None else Path("runs") / args.suite
    pdf = args.report if args.report is not None else (
        Path("reports") / ("paper-experiments.pdf" if args.suite == "paper"
                           else f"validation-{args.suite}.pdf"))
    if args.suite == "paper":  # the papers' own experiments (validation.paper)
        return _cmd_paper(args, out, pdf)
    kwargs: dict[str, Any] = dict(replicates=args.replicates, workers=args.workers,
                                  dask=args.dask, out=out, report=pdf)
    if args.no_progress:
        params = inspect.signature(suites.run_suite).parameters
        if "progress" in params or any(q.kind is q.VAR_KEYWORD for q in params.values()):
            kwargs["progress"] = False
    try:
        result = suites.run_suite(args.suite, **kwargs)
    except KeyboardInterrupt:
        sys.stderr.write(f"fedsim: interrupted; finished replicates are saved in {out}; "
                         "re-run the same command to resume\n")
        return 130
    csv: Path = out / "verdicts.csv"
    pdf_out: Path | None = pdf
    if isinstance(result, Mapping):
        csv = Path(result.get("verdicts") or csv)
        pdf_out = Path(result["report"]) if result.get("report") else (
            None if "report" in result else pdf)
    print(f"verdicts: {csv}")
    counts = _verdict_counts(csv)
    if counts:
        print(f"  {counts}")
    print(f"report:   {pdf_out if pdf_out is not None else '(not written)'}")
    if isinstance(result, Mapping) and result.get("in_regime_ok") is False:
        print("  note: some in-regime comparisons did not give 'holds' (see verdicts.csv)")
    if isinstance(result, Mapping) and result.get("controls_ok") is False:
        sys.stderr.write("fedsim: error: a negative control did not get its required verdict; "
                         "the validation is not trustworthy (see the control column of "
                         f"{csv})\n")
        return 1
    return 0


def _cmd_paper(args: argparse.Namespace, out: Path, pdf: Path) -> int:
    """``--suite paper``: :func:`validation.paper.run_paper_suite`; prints the verdicts."""
    from validation.paper import run_paper_suite

    try:
        result = run_paper_suite(out=out, report=pdf, workers=args.workers, dask=args.dask,
                                 progress=not args.no_progress, replicates=args.replicates)
    except KeyboardInterrupt:
        sys.stderr.write(f"fedsim: interrupted; finished replicates are saved in {out}; "
                         "re-run the same command to resume\n")
        return 130
    print(f"verdicts: {result['verdicts']}")
    for name, verdict in result["experiments"].items():
        print(f"  {name}: {verdict}")
    print(f"report:   {result['report']}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Rebuild the PDF of a run directory."""
    from validation.report import build_report

    if not args.run_dir.is_dir():
        raise FedsimError(f"run directory {args.run_dir} does not exist")
    pdf = args.out if args.out is not None else args.run_dir / "report.pdf"
    n = build_report(args.run_dir, pdf)
    print(f"report: {pdf} ({n} pages)")
    return 0
