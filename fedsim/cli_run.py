"""``fedsim run scenario.toml --seed 1 --out runs/run.csv``: simulate one scenario.

Writes the per-step trace (the CSV of ``Trace.to_pandas``, written by :mod:`fedsim.trace_csv`
without importing pandas) with the recorded metrics joined on the step, and prints a
one-line summary on stdout.  A tqdm progress bar goes to stderr
(``--no-progress`` turns it off).  ``--metrics-out`` writes the metric rows only;
``--set KEY=VALUE`` overrides one value of the scenario file (:mod:`fedsim.config.overrides`);
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
from dataclasses import replace
from pathlib import Path

from fedsim import safefile
from fedsim.cli import EXIT_FAILED_RESULT
from fedsim.errors import ConfigError, check_integer, check_sim_time, require
from fedsim.trace_csv import write_metrics_csv, write_trace_csv

__all__ = ["add_parser", "main_run", "check_output_file", "check_output_dir",
           "check_output_path", "EXIT_DIVERGED", "PLOT_SUFFIXES"]

EXIT_DIVERGED = EXIT_FAILED_RESULT

#: the module behind ``--bound`` (validation, above the core: looked up by name, as
#: :data:`fedsim.cli.SUBCOMMANDS` are)
RUN_BOUND = "fedsim.validation.run_bound"

#: the file types ``--plot`` writes
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def check_output_file(option: str, path: Path) -> None:
    """An output file in an existing, writable directory: a new path or a regular file, never
    a symlink, directory, device or FIFO (:func:`fedsim.safefile.check_output_file`)."""
    safefile.check_output_file(option, path, create_parents=False)


def check_output_dir(option: str, path: Path) -> None:
    """An output directory that can be used or created, not a symlink or a file
    (:func:`fedsim.safefile.check_output_dir`)."""
    safefile.check_output_dir(option, path)


def check_output_path(option: str, path: Path) -> None:
    """An output file whose missing directories will be created (``fedsim validate
    --report``): as :func:`check_output_file`, the nearest existing ancestor writable."""
    safefile.check_output_file(option, path, create_parents=True)


#: floating-point operations of the problem set-up above which ``fedsim run`` says, before
#: the (silent) set-up starts, that it can take a while (about 1 s of work on one core)
SETUP_FLOPS_NOTICE = 1e9


def setup_flops(scenario) -> float:
    """Rough floating-point work of building the scenario's problem before the first step:
    a quadratic factorises n d x d matrices (~10 n d^3), a logistic one touches n m d
    numbers a few times; the others are cheap."""
    pc = scenario.problem
    n = float(pc.n)
    d = float(pc.params.get("dim", 1) or 1)
    if pc.kind == "quadratic":
        return 10.0 * n * d**3
    if pc.kind == "logistic":
        return 10.0 * n * float(pc.params.get("samples_per_client", 1) or 1) * d
    return n * d


def _announce_setup(scenario) -> None:
    """One line on stderr before a set-up that takes more than about a second (the progress
    bar only starts with the first step)."""
    import sys

    f = setup_flops(scenario)
    if f >= SETUP_FLOPS_NOTICE:
        sys.stderr.write(f"fedsim: building the {scenario.problem.kind} problem "
                         f"({scenario.problem.n} clients, dim {scenario.problem.params.get('dim')}"
                         f"; ~{f:.1e} flops) before the first step; this can take a while\n")
        sys.stderr.flush()


#: the warm-up that compiles a scenario's kernels on a tiny instance (validation, above the
#: core: looked up by name)
WARMUP = "fedsim.validation.warmup"


def _compile_first(scenario) -> None:
    """Compile (or load from the disk cache) the run's kernels on a tiny instance of the
    scenario, with its own bar and line on stderr, so the run's bar and ETA start after
    the compilation (:func:`fedsim.validation.warmup.warm_up`; the problem is built once and
    shared through the engine's problem cache; the warm-up's result is thrown away)."""
    import importlib

    try:
        warmup = importlib.import_module(WARMUP)
    except ImportError:  # pragma: no cover - validation not installed
        return
    warmup.warm_up([{"scenario": scenario.to_dict()}], progress=True)


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
    p.add_argument("scenario", type=safefile.path_option("scenario"), help="scenario TOML file")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.add_argument("--replicate", type=int, default=0, help="replicate index (default 0)")
    p.add_argument("--out", type=safefile.path_option("--out"), default=None,
                   help="CSV file for the per-step trace with its metric columns (missing "
                   "parent folders are created)")
    p.add_argument("--metrics-out", type=safefile.path_option("--metrics-out"), default=None,
                   help="CSV file for the metric rows only (missing parent folders are created)")
    p.add_argument("--steps", type=int, default=None, help="override horizon.steps")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one value of the scenario file, e.g. --set algorithm.eta=0.05 "
                   "--set problem.n=20 (a TOML value; a table replaces the table; checked by "
                   "the scenario schema; repeatable, applied before --seed/--steps)")
    p.add_argument("--memory-budget", type=_size, default=None, metavar="SIZE",
                   help="refuse a scenario whose estimated memory exceeds SIZE (e.g. 8G; "
                   "default 4G or $FEDSIM_MEMORY_BUDGET)")
    p.add_argument("--plot", type=safefile.path_option("--plot"), default=None, metavar="FILE",
                   help="also draw the metrics against simulated time and the per-client "
                        "timeline (download/compute/upload) to FILE (.png, .pdf or .svg)")
    p.add_argument("--bound", default=None, metavar="THEOREM[,MODE]",
                   help="evaluate a theorem (fedsim bounds --list) with every constant the "
                   "scenario fixes, print bound/measured along the horizon and, with --plot, "
                   "draw the bound over the run's metric (fedsim.validation.run_bound)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=main_run)
    return p


def main_run(args: argparse.Namespace) -> int:
    """Run the scenario; returns the exit code (0, or 3 when it diverged)."""
    from fedsim import config
    from fedsim.api import MAX_REPLICATE
    from fedsim.config.budget import check_budget, set_memory_budget

    check_integer("--replicate", args.replicate, low=0, high=MAX_REPLICATE)
    if args.seed is not None:
        require(args.seed >= 0, "--seed", args.seed, "must be >= 0")
    if args.steps is not None:
        require(args.steps >= 1, "--steps", args.steps, "must be >= 1")
    for opt, path in (("--out", args.out), ("--metrics-out", args.metrics_out)):
        if path is not None:
            check_output_path(opt, path)
    if args.plot is not None:
        safefile.check_output_file("--plot", args.plot, suffixes=PLOT_SUFFIXES)
    from fedsim.output_paths import check_outputs

    check_outputs(outputs={"--out": args.out, "--metrics-out": args.metrics_out,
                           "--plot": args.plot}, inputs={"scenario": args.scenario})
    set_memory_budget(args.memory_budget)
    try:
        sc = config.load(args.scenario)
        if args.overrides:
            from fedsim.config.overrides import parse_assignments

            sc = sc.replace(parse_assignments(args.overrides))
        if args.seed is not None:
            sc = replace(sc, seed=args.seed)
        if args.steps is not None:
            sc = replace(sc, horizon=config.HorizonConfig(steps=args.steps,
                                                          time=sc.horizon.time))
        check_budget(sc)
        over = None
        if args.bound is not None:  # constants and mode checked before anything is simulated
            import importlib

            over = importlib.import_module(RUN_BOUND).prepare(sc, args.bound)
    finally:
        set_memory_budget(None)
    from fedsim.engine import run

    if not args.no_progress:
        _announce_setup(sc)
        _compile_first(sc)
    trace = run(sc, args.replicate, progress=not args.no_progress)
    check_sim_time(trace.sim_time, trace.steps_done)
    for path in (args.out, args.metrics_out):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
    if args.out is not None:  # the bytes of trace.to_pandas().to_csv, without pandas
        with safefile.atomic_writer(args.out) as fh:
            write_trace_csv(trace, fh)
    if args.metrics_out is not None:
        with safefile.atomic_writer(args.metrics_out) as fh:
            write_metrics_csv(trace, fh)
    panel = None
    if over is not None:
        import importlib

        rb = importlib.import_module(RUN_BOUND)
        rb.evaluate(over, trace)
        print(rb.tightness_table(over))

        def panel(ax):
            rb.draw(over, trace, ax)

    if args.plot is not None:
        from fedsim.plot import plot_run

        plot_run(sc, trace, args.plot, args.replicate, panel=panel)
    last = {k: float(v[-1]) for k, v in trace.metrics.items() if not k.startswith("avg_")}
    shown = " ".join(f"{k}={v:.6g}" for k, v in last.items())
    status = f"diverged at step {trace.diverged_step}" if trace.diverged else "ok"
    print(f"{sc.name}: {status}; steps={trace.steps_done} sim_time={trace.sim_time:.6g} "
          f"staleness_max={int(trace.staleness_steps.max())} "
          f"staleness_bound={trace.staleness_bound:g} {shown}")
    return EXIT_DIVERGED if trace.diverged else 0
