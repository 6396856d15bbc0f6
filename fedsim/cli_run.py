"""``fedsim run scenario.toml --seed 1 --out runs/run.csv``: simulate one scenario.

Writes the per-step trace (``Trace.to_pandas``) with the recorded metrics joined on the
step, and prints a one-line summary on stdout.  A tqdm progress bar goes to stderr
(``--no-progress`` turns it off).  ``--metrics-out`` writes the metric rows only;
``--plot FILE`` draws the metrics against simulated time and the per-client timeline
(:mod:`fedsim.plot`).  Both
CSVs carry a ``diverged`` column (1 on every row of a diverged run, else 0).

Bad input (a bad TOML file, an inconsistent scenario, an output path that cannot be
written, a scenario over the memory budget) is one line on stderr, exit code 2, before
anything is simulated.

Exit codes: 0 the run finished; 2 bad input; 3 the run diverged (a non-finite or
exploding iterate: the trace stops at the divergence step and is still written).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from fedsim.errors import ConfigError, require

__all__ = ["add_parser", "main_run", "check_output_file", "check_output_dir",
           "check_output_path", "EXIT_DIVERGED"]

EXIT_DIVERGED = 3


def check_output_file(option: str, path: Path) -> None:
    """An output file can be created: its directory exists and is writable, and the path
    is not a directory (ConfigError naming the option, before any computation)."""
    require(not path.is_dir(), option, str(path), "must be a file path, not a directory")
    parent = path.parent if str(path.parent) else Path(".")
    require(parent.is_dir(), option, str(path),
            f"must be in an existing directory ({str(parent)!r} does not exist)")
    require(os.access(parent, os.W_OK), option, str(path),
            f"must be in a writable directory ({str(parent)!r} is not writable)")
    require(not path.exists() or os.access(path, os.W_OK), option, str(path),
            "must be a writable file")


def check_output_dir(option: str, path: Path) -> None:
    """An output directory can be used or created: not an existing file, and its nearest
    existing ancestor is a writable directory."""
    require(not (path.exists() and not path.is_dir()), option, str(path),
            "must be a directory (a file of that name exists)")
    anc = path
    while not anc.exists():
        anc = anc.parent
    require(anc.is_dir() and os.access(anc, os.W_OK), option, str(path),
            f"must be creatable ({str(anc)!r} is not a writable directory)")


def check_output_path(option: str, path: Path) -> None:
    """An output file whose missing directories will be created (``fedsim validate
    --report``): not a directory, the nearest existing ancestor writable."""
    require(not path.is_dir(), option, str(path), "must be a file path, not a directory")
    anc = path.parent
    while not anc.exists():
        anc = anc.parent
    require(anc.is_dir() and os.access(anc, os.W_OK), option, str(path),
            f"must be creatable ({str(anc)!r} is not a writable directory)")
    require(not path.exists() or os.access(path, os.W_OK), option, str(path),
            "must be a writable file")


def _size(text: str) -> int:
    from fedsim.config.budget import parse_size

    try:
        return parse_size(text, "--memory-budget")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``fedsim run``."""
    p = subparsers.add_parser(
        "run", help="simulate one scenario and write its trace as CSV",
        description=__doc__.split("\n\n")[0],
        epilog=f"exit codes: 0 the run finished; 2 bad input (one line on stderr, nothing "
        f"simulated); {EXIT_DIVERGED} the run diverged (the CSVs are still written, with "
        "diverged = 1)")
    p.add_argument("scenario", type=Path, help="scenario TOML file")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.add_argument("--replicate", type=int, default=0, help="replicate index (default 0)")
    p.add_argument("--out", type=Path, default=None,
                   help="CSV file for the per-step trace with its metric columns (missing "
                   "parent folders are created)")
    p.add_argument("--metrics-out", type=Path, default=None,
                   help="CSV file for the metric rows only (missing parent folders are created)")
    p.add_argument("--steps", type=int, default=None, help="override horizon.steps")
    p.add_argument("--memory-budget", type=_size, default=None, metavar="SIZE",
                   help="refuse a scenario whose estimated memory exceeds SIZE (e.g. 8G; "
                   "default 4G or $FEDSIM_MEMORY_BUDGET)")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE",
                   help="also draw the metrics against simulated time and the per-client "
                        "timeline (download/compute/upload) to FILE (.png or .pdf)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=main_run)
    return p


def main_run(args: argparse.Namespace) -> int:
    """Run the scenario; returns the exit code (0, or 3 when it diverged)."""
    from fedsim import config
    from fedsim.config.budget import check_budget, set_memory_budget

    require(args.replicate >= 0, "--replicate", args.replicate, "must be >= 0")
    if args.seed is not None:
        require(args.seed >= 0, "--seed", args.seed, "must be >= 0")
    if args.steps is not None:
        require(args.steps >= 1, "--steps", args.steps, "must be >= 1")
    for opt, path in (("--out", args.out), ("--metrics-out", args.metrics_out)):
        if path is not None:
            check_output_path(opt, path)
    set_memory_budget(args.memory_budget)
    try:
        sc = config.load(args.scenario)
        if args.seed is not None:
            sc = replace(sc, seed=args.seed)
        if args.steps is not None:
            sc = replace(sc, horizon=config.HorizonConfig(steps=args.steps,
                                                          time=sc.horizon.time))
        check_budget(sc)
    finally:
        set_memory_budget(None)
    from fedsim.engine import run

    trace = run(sc, args.replicate, progress=not args.no_progress)
    div = int(bool(trace.diverged))
    for path in (args.out, args.metrics_out):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
    if args.out is not None:
        trace.to_pandas().to_csv(args.out, index=False)
    if args.metrics_out is not None:
        m = trace.metrics_frame()
        m["diverged"] = div
        m.to_csv(args.metrics_out, index=False)
    if args.plot is not None:
        from fedsim.plot import plot_run

        plot_run(sc, trace, args.plot, args.replicate)
    last = {k: float(v[-1]) for k, v in trace.metrics.items() if not k.startswith("avg_")}
    shown = " ".join(f"{k}={v:.6g}" for k, v in last.items())
    status = f"diverged at step {trace.diverged_step}" if trace.diverged else "ok"
    print(f"{sc.name}: {status}; steps={trace.steps_done} sim_time={trace.sim_time:.6g} "
          f"staleness_max={int(trace.staleness_steps.max())} "
          f"staleness_bound={trace.staleness_bound:g} {shown}")
    return EXIT_DIVERGED if trace.diverged else 0
