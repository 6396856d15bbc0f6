"""``fedsim validate`` and ``fedsim report`` (issue 6 item 5, the command line).

``fedsim validate --suite quick|full [--replicates R] [--workers N] [--dask ADDR]
[--dask-tls-ca PEM --dask-tls-cert PEM --dask-tls-key PEM] [--out DIR] [--report PDF]
[--theorem NAME[,NAME]] [--family NAME[,NAME]]`` runs a named suite (or, with ``--theorem``,
only those theorems' cases; with ``--family``, those families' rows at their default points:
:func:`fedsim.validation.suites.build_cases`) through
:func:`fedsim.validation.suites.run_suite` (Monte-Carlo replicates, bounds, verdicts) and
says where ``verdicts.csv`` and the PDF went.  ``--suite paper`` runs the seed papers'
own experiments instead (:func:`fedsim.validation.paper.run_paper_suite`: claimed ordering
against measured; ``runs/paper/paper_verdicts.csv``,
``reports/paper-experiments.pdf``).
Re-running the same command after an interruption resumes from the run directory
(see :mod:`fedsim.validation.montecarlo`).

``fedsim report DIR [--out PDF]`` rebuilds the PDF of a run directory
(:func:`fedsim.validation.report.build_report`); the default is ``DIR/report.pdf``.

Exit codes (the contract of every subcommand, :data:`fedsim.cli.EXIT_CODES`): 0 done;
2 bad options (one line ``fedsim: error: ...`` on stderr, from
:class:`fedsim.cli.OneLineParser`) or a user error; 3 the run finished but its result must
not be read as a success -- for ``validate``, a negative control did not get the verdict it
must get (``run_suite`` returned ``controls_ok=False``: the machinery cannot be trusted),
said in one line on stderr, the outputs still written for inspection; 130 interrupted
(re-run to resume).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fedsim.cli import EXIT_FAILED_RESULT
from fedsim.errors import FedsimError
from fedsim.safefile import path_option

__all__ = ["add_parser", "cmd_validate", "cmd_report", "dask_security", "SUITES", "int_at_least"]

SUITES = ("quick", "full", "smoke", "paper", "literature")


#: the largest --replicates / --workers accepted (a replicate is a stored record of 1-2 kB
#: plus a task object: 1e9 of them would need terabytes before the first one runs)
MAX_REPLICATES = 10**6
MAX_WORKERS = 4096


def int_at_least(lo: int, name: str, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``lo`` (and <= ``hi`` if given), with ``name`` in
    the error message."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer >= {lo}, got {name}={text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{name} must be >= {lo}, got {name}={value}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"{name} must be <= {hi}, got {name}={value}")
        return value

    parse.__name__ = name  # argparse names the type in some messages
    return parse


def _dask_address(text: str) -> str:
    """``local``, or a ``tcp://`` / ``tls://`` scheduler address with a host (checked
    before anything is built: another scheme, e.g. ``file://``, is a usage error)."""
    scheme, sep, rest = text.partition("://")
    if text == "local" or (sep and scheme in ("tcp", "tls") and rest.strip("/")):
        return text
    raise argparse.ArgumentTypeError(
        f"dask must be 'local' or a scheduler address tcp://host:port or tls://host:port, "
        f"got dask={text!r}")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < 1e9):
        raise argparse.ArgumentTypeError(f"dask-timeout must be a number of seconds > 0, got "
                                         f"dask-timeout={text!r}")
    return value


def add_parser(subparsers: Any) -> None:
    """Register ``validate`` and ``report`` on the ``fedsim`` dispatcher."""
    p = subparsers.add_parser(
        "validate", help="run a validation suite: Monte-Carlo vs bounds -> verdicts.csv + PDF",
        description="Run a named validation suite (Monte-Carlo replicates of every scenario, "
        "the theorems' bounds at the same constants, verdicts with confidence intervals) and "
        "write verdicts.csv and the PDF report. Re-running the same command after an "
        "interruption resumes from the run directory.",
        epilog="exit codes: 0 done (every negative control got its required verdict); "
        "2 bad input, nothing run (one line on stderr); 3 a negative control did not get its "
        "required verdict: the validation is not trustworthy (one line on stderr; "
        "verdicts.csv and the PDF are still written, see their control column); "
        "130 interrupted (re-run to resume)")
    p.add_argument("--suite", required=True, choices=SUITES, help="which suite to run")
    p.add_argument("--replicates", type=int_at_least(2, "replicates", MAX_REPLICATES),
                   default=None,
                   metavar="R", help="Monte-Carlo replicates per scenario (>= 2; suite default)")
    p.add_argument("--workers", type=int_at_least(1, "workers", MAX_WORKERS), default=None,
                   metavar="N",
                   help="worker processes (default: all cores; 1 = in-process)")
    p.add_argument("--dask", type=_dask_address, default=None, metavar="ADDR",
                   help="run on Dask: 'local' (a LocalCluster on this machine) or a "
                   "scheduler address tls://host:port (with the --dask-tls-* options) or "
                   "tcp://host:port (unencrypted: trusted networks only)")
    p.add_argument("--dask-timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="with --dask: give up (exit 2, finished records kept) after SECONDS "
                   "without progress; by default a stall of 60 s prints one line and the "
                   "run keeps waiting")
    p.add_argument("--dask-tls-ca", type=Path, default=None, metavar="PEM",
                   help="CA certificate of a TLS Dask cluster (with --dask tls://...)")
    p.add_argument("--dask-tls-cert", type=Path, default=None, metavar="PEM",
                   help="this client's certificate, signed by that CA")
    p.add_argument("--dask-tls-key", type=Path, default=None, metavar="PEM",
                   help="this client's private key")
    p.add_argument("--out", type=path_option("--out"), default=None, metavar="DIR",
                   help="run directory (default runs/<suite>); re-running resumes")
    p.add_argument("--report", type=path_option("--report"), default=None, metavar="PDF",
                   help="where to write the PDF (default reports/validation-<suite>.pdf)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--theorem", default=None, metavar="NAME[,NAME]",
                   help="run only these theorems' cases of the suite (fedsim bounds --list)")
    p.add_argument("--family", default=None, metavar="NAME[,NAME]",
                   help="run these scenario families' suite rows (each at its default "
                   "point; fedsim search --list); with --theorem, in addition to its cases")
    p.add_argument("--batched", action="store_true",
                   help="accepted, no effect: the replay is the default path (as is "
                   "FEDSIM_BATCHED=1)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help=f"refused, with the reason: {NO_SET}")
    p.set_defaults(func=cmd_validate)

    r = subparsers.add_parser("report", help="rebuild the PDF report of a run directory",
                              description="Rebuild the PDF report of a run directory "
                              "(verdicts.csv and meta/*.json) without recomputing anything.")
    r.add_argument("run_dir", type=path_option("DIR"), metavar="DIR",
                   help="a run directory (verdicts.csv)")
    r.add_argument("--out", type=path_option("--out"), default=None, metavar="PDF",
                   help="output PDF (default DIR/report.pdf; fedsim validate --report writes "
                   "reports/validation-SUITE.pdf by default)")
    r.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    r.add_argument("--latex", type=path_option("--latex"), default=None, metavar="DIR",
                   help="also write the verdict tables as LaTeX (booktabs) and every panel "
                   "as a vector figure (PDF and SVG, named theorem__scenario__mode) to DIR")
    r.set_defaults(func=cmd_report)


def _verdict_counts(csv: Path) -> str:
    try:
        from fedsim.validation.compare import VERDICTS, read_verdicts

        v = read_verdicts(csv)
    except (OSError, FedsimError, ValueError):
        return ""
    counts = v["verdict"].value_counts()
    return ", ".join(f"{k} {int(counts.get(k, 0))}" for k in VERDICTS)


_TLS_FLAGS = (("dask_tls_ca", "--dask-tls-ca"), ("dask_tls_cert", "--dask-tls-cert"),
              ("dask_tls_key", "--dask-tls-key"))


def dask_security(args: argparse.Namespace) -> Any:
    """The ``distributed.Security`` for ``--dask`` (None without TLS options).

    The three TLS options go together, need a ``tls://`` scheduler address and existing
    files; the Security object requires encryption and mutual TLS (the scheduler checks
    this client's certificate against the CA, the client checks the scheduler's).
    A plain ``tcp://`` address that is not loopback gets a warning on stderr: such a
    scheduler runs whatever any client that reaches it submits.
    """
    given = {flag: getattr(args, dest, None) for dest, flag in _TLS_FLAGS}
    addr = args.dask or ""
    if addr.startswith("tls://") and all(v is None for v in given.values()):
        raise FedsimError(f"a tls:// scheduler needs --dask-tls-ca, --dask-tls-cert and "
                          f"--dask-tls-key, got dask={addr!r} without them")
    if not any(v is not None for v in given.values()):
        host = addr.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
        if addr.startswith("tcp://") and host not in ("127.0.0.1", "localhost", "::1"):
            sys.stderr.write(f"fedsim: warning: {addr} is an unencrypted, unauthenticated "
                             "Dask scheduler; anyone who can reach it can run code on its "
                             "workers (use tls:// with --dask-tls-ca/--dask-tls-cert/"
                             "--dask-tls-key)\n")
        return None
    missing = [f for f, v in given.items() if v is None]
    if missing:
        raise FedsimError(f"{', '.join(missing)} missing: --dask-tls-ca, --dask-tls-cert "
                          "and --dask-tls-key go together")
    if not addr.startswith("tls://"):
        raise FedsimError(f"the --dask-tls-* options need a tls:// scheduler address, got "
                          f"dask={args.dask!r}")
    for flag, path in given.items():
        if not path.is_file():
            raise FedsimError(f"{flag} {path}: no such file")
    try:
        from distributed import Security
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise FedsimError("the Dask backend needs dask[distributed]: "
                          "pip install 'fedsim[dask]'") from exc
    return Security(tls_ca_file=str(given["--dask-tls-ca"]),
                    tls_client_cert=str(given["--dask-tls-cert"]),
                    tls_client_key=str(given["--dask-tls-key"]), require_encryption=True)


#: why ``fedsim validate`` changes no scenario value, and what to use instead
NO_SET = ("a suite row derives its scenario, bound and hypotheses together from its family's "
          "point, so a changed scenario value would leave the row's constants stale; the "
          "suite's own overrides are --replicates, --workers, --theorem and --family; for one "
          "scenario use fedsim run FILE --set KEY=VALUE --bound THEOREM, for a family at "
          "another point fedsim search THEOREM --family FAMILY --fixed KEY=VALUE")


def cmd_validate(args: argparse.Namespace) -> int:
    """Run ``fedsim.validation.suites.run_suite`` with the parsed options; print the outputs.

    Ctrl-C anywhere in the command (imports, building the suite, the replicates, the
    report) ends it with one line on stderr and exit code 130; pool and Dask workers
    ignore SIGINT, so they print nothing (see :mod:`fedsim.validation.montecarlo_backends`).
    """
    if getattr(args, "overrides", None):
        raise FedsimError(f"fedsim validate takes no --set (got --set {args.overrides[0]}): "
                          f"{NO_SET}")
    out = args.out if args.out is not None else Path("runs") / args.suite
    from fedsim.validation.montecarlo_backends import set_dask_timeout

    set_dask_timeout(getattr(args, "dask_timeout", None))
    try:
        return _validate(args, out)
    except KeyboardInterrupt:
        sys.stderr.write(f"fedsim: interrupted; finished replicates are saved in {out}; "
                         "re-run the same command to resume\n")
        return 130
    finally:
        set_dask_timeout(None)


def _validate(args: argparse.Namespace, out: Path) -> int:
    try:
        suites = importlib.import_module("fedsim.validation.suites")
    except ModuleNotFoundError as exc:
        if exc.name != "fedsim.validation.suites":
            raise
        raise FedsimError("validation suites are not installed (validation/suites.py "
                          "is missing)") from exc
    pdf = args.report if args.report is not None else (
        Path("reports") / ({"paper": "paper-experiments.pdf",
                            "literature": "literature-experiments.pdf"}.get(
                               args.suite, f"validation-{args.suite}.pdf")))
    from fedsim.cli_run import check_output_dir, check_output_path

    check_output_dir("--out", out)  # output paths before any computation (issue 14)
    check_output_path("--report", pdf)
    from fedsim.output_paths import check_outputs

    check_outputs(outputs={"--report": pdf}, run_dirs={"--out": out})
    security = dask_security(args)  # TLS options before anything is built
    from fedsim.validation.worker import batched_enabled

    if getattr(args, "batched", False) or batched_enabled():
        sys.stderr.write("fedsim: note: --batched / FEDSIM_BATCHED have no effect any more: "
                         "the replay is the default path\n")
    if args.suite in ("paper", "literature"):  # paper experiments (validation.paper)
        for flag in ("theorem", "family"):
            if getattr(args, flag, None):
                raise FedsimError(f"--{flag} applies to the theorem suites (quick, full, "
                                  f"smoke), not to --suite {args.suite}")
        return _cmd_paper(args, out, pdf, security)

    kwargs: dict[str, Any] = dict(replicates=args.replicates, workers=args.workers,
                                  dask=args.dask, out=out, report=pdf)
    for name in ("theorem", "family"):  # part of the suite (run_suite checks the names)
        if getattr(args, name, None) is not None:
            kwargs[name] = getattr(args, name)
    if security is not None:
        kwargs["dask_security"] = security
    if args.no_progress:
        params = inspect.signature(suites.run_suite).parameters
        if "progress" in params or any(q.kind is q.VAR_KEYWORD for q in params.values()):
            kwargs["progress"] = False
    result = suites.run_suite(args.suite, **kwargs)
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
        return EXIT_FAILED_RESULT
    return 0


def _cmd_paper(args: argparse.Namespace, out: Path, pdf: Path, security: Any) -> int:
    """``--suite paper``: :func:`fedsim.validation.paper.run_paper_suite`; prints the verdicts."""
    from fedsim.validation.paper import run_paper_suite
    from fedsim.validation.paper.literature import LITERATURE

    only = list(LITERATURE) if args.suite == "literature" else None
    try:
        result = run_paper_suite(out=out, report=pdf, workers=args.workers, dask=args.dask,
                                 only=only,
                                 progress=not args.no_progress, replicates=args.replicates,
                                 dask_security=security)
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
    """Rebuild the PDF of a run directory.

    :func:`fedsim.validation.report.build_report` first checks the directory against its
    ``suite.json`` (:func:`fedsim.validation.rundir.check_run_dir`); a damaged directory ends
    with one line ``fedsim: error: run directory ... is damaged: <why>`` and exit 2.
    """
    from fedsim.validation.report import build_report

    pdf = args.out if args.out is not None else args.run_dir / "report.pdf"
    from fedsim.cli_run import check_output_path

    check_output_path("--out", pdf)
    latex = getattr(args, "latex", None)
    if latex is not None:
        from fedsim.cli_run import check_output_dir

        check_output_dir("--latex", latex)
    from fedsim.output_paths import check_outputs

    # a --latex folder may not hold or be the run directory either
    check_outputs(outputs={"--out": pdf, "--latex": latex}, run_dirs={"DIR": args.run_dir})
    n = build_report(args.run_dir, pdf, progress=not getattr(args, "no_progress", False))
    print(f"report: {pdf} ({n} pages)")
    if latex is not None:
        from fedsim.validation.report.latex import write_latex

        files = write_latex(args.run_dir, latex,
                            progress=not getattr(args, "no_progress", False))
        print(f"latex: {latex} ({sum(f.suffix == '.tex' for f in files)} tables, "
              f"{sum(f.suffix == '.pdf' for f in files)} figures as PDF and SVG)")
    return 0
