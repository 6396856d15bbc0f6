"""``fedsim run scenario.toml --seed 1 --out run.csv``: simulate one scenario.

Writes the per-step trace (``Trace.to_pandas``) with the recorded metrics joined on the
step, and prints a one-line summary on stdout.  A tqdm progress bar goes to stderr
(``--no-progress`` turns it off).  ``--metrics-out`` writes the metric rows only;
``--plot FILE`` draws the metrics against simulated time and the per-client timeline
(:mod:`fedsim.plot`).
Bad input (a bad TOML file, an inconsistent scenario) is one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from fedsim.errors import require

__all__ = ["add_parser", "main_run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``fedsim run``."""
    p = subparsers.add_parser("run", help="simulate one scenario and write its trace as CSV",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", type=Path, help="scenario TOML file")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.add_argument("--replicate", type=int, default=0, help="replicate index (default 0)")
    p.add_argument("--out", type=Path, default=None, help="CSV file for the per-step trace")
    p.add_argument("--metrics-out", type=Path, default=None,
                   help="CSV file for the metric rows only")
    p.add_argument("--steps", type=int, default=None, help="override horizon.steps")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE",
                   help="also draw the metrics against simulated time and the per-client "
                        "timeline (download/compute/upload) to FILE (.png or .pdf)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=main_run)
    return p


def main_run(args: argparse.Namespace) -> int:
    """Run the scenario; returns the exit code."""
    from fedsim import config
    from fedsim.engine import run

    sc = config.load(args.scenario)
    if args.seed is not None:
        require(args.seed >= 0, "--seed", args.seed, "must be >= 0")
        sc = replace(sc, seed=args.seed)
    if args.steps is not None:
        sc = replace(sc, horizon=config.HorizonConfig(steps=args.steps, time=sc.horizon.time))
    trace = run(sc, args.replicate, progress=not args.no_progress)
    frame = trace.to_pandas()
    mf = trace.metrics_frame().drop(columns=["time"])
    if args.out is not None:
        frame.merge(mf, on="step", how="left").to_csv(args.out, index=False)
    if args.metrics_out is not None:
        trace.metrics_frame().to_csv(args.metrics_out, index=False)
    if args.plot is not None:
        from fedsim.plot import plot_run

        plot_run(sc, trace, args.plot, args.replicate)
    last = {k: float(v[-1]) for k, v in trace.metrics.items() if not k.startswith("avg_")}
    shown = " ".join(f"{k}={v:.6g}" for k, v in last.items())
    status = f"diverged at step {trace.diverged_step}" if trace.diverged else "ok"
    print(f"{sc.name}: {status}; steps={trace.steps_done} sim_time={trace.sim_time:.6g} "
          f"staleness_max={int(trace.staleness_steps.max())} "
          f"staleness_bound={trace.staleness_bound:g} {shown}")
    return 0
