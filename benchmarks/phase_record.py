"""What the per-client phase record costs the SimPy writers that runs take.

The physical model's ``AsyncRun`` (a timer trigger), AREA's ``area_table`` (Algorithm 2) and
AsyPFL's ``asypfl_table`` are both the writers runs use and the ones that record phases
(``fedsim.engine.timeline_phases``).  This times each writer without a log (what a run pays
for the record being possible) and with one (what ``fedsim run --plot`` pays), best of
``--repeat`` in CPU seconds, one ``key=value`` line per case::

    .venv/bin/python benchmarks/phase_record.py
    git archive a7a0c04 fedsim | tar -x -C /tmp/base     # a tree without the record
    .venv/bin/python benchmarks/phase_record.py --tree /tmp/base

``--tree`` times the ``fedsim`` package under that directory instead (its writers take no
log, so only the ``log=none`` lines are printed).  Indicative only: run both on a quiet
machine and compare the lines of the same run.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

EX = Path(__file__).resolve().parents[1] / "examples"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=None,
                    help="time the fedsim package of this source tree")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--steps", type=int, default=20000)
    args = ap.parse_args(argv)
    if args.tree is not None:
        sys.path.insert(0, str(args.tree.resolve()))
    import fedsim
    from fedsim import config
    from fedsim.algorithms import get_algorithm
    from fedsim.engine import problem_for
    from fedsim.engine.models.area.simpy_writer import area_table
    from fedsim.engine.models.asypfl import asypfl_table
    from fedsim.engine.models.physical.simpy_writer import AsyncRun
    from fedsim.rng import Streams

    try:
        from fedsim.engine.models.phases import PhaseLog
    except ImportError:
        PhaseLog = None

    def load(name: str, steps: int, **over) -> config.Scenario:
        d = config.load(EX / name).to_dict()
        d["horizon"] = {"steps": steps}
        d.update(over)
        return config.Scenario.from_dict(d)

    cases = {
        "physical_timer": (load("fedbuff_quadratic.toml", args.steps,
                                trigger={"kind": "poisson", "rate": 4.0}),
                           lambda sc, p, log: AsyncRun(sc, p, Streams(sc.seed, 0), False,
                                                       get_algorithm(sc.algorithm.name),
                                                       *(() if log is None else (log,))
                                                       ).table()),
        "area_algorithm": (load("area_algorithm.toml", args.steps),
                           lambda sc, p, log: area_table(sc, p, Streams(sc.seed, 0),
                                                         *(() if log is None else (log,)))),
        "asypfl": (load("asypfl_logistic.toml", max(1, args.steps // 5)),
                   lambda sc, p, log: asypfl_table(
                       sc, p, Streams(sc.seed, 0),
                       **({} if log is None else {"phases": log}))),
    }
    print(f"tree={Path(inspect.getfile(fedsim)).parents[1]}")
    for name, (sc, write) in cases.items():
        p = problem_for(sc)
        for kind in ("none", "phaselog") if PhaseLog is not None else ("none",):
            write(sc, p, None if kind == "none" else PhaseLog(p.n))  # warm
            best = float("inf")
            for _ in range(args.repeat):
                log = None if kind == "none" else PhaseLog(p.n)
                t0 = time.process_time()
                write(sc, p, log)
                best = min(best, time.process_time() - t0)
            print(f"case={name} steps={sc.horizon.steps} log={kind} cpu_s={best:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
