"""Where a suite's time goes: the cost of each run set, and which path runs it.

``python benchmarks/suite_rows.py --suite quick --replicates 64 --sample 8`` builds the
suite's tasks, runs ``--sample`` replicates of each run set in this process (after one
warm-up call per run set, so compile time is not counted), extrapolates to the run set's
replicates and prints the run sets by estimated one-core seconds, with the algorithm, its
execution model, client rule, problem kind, horizon and whether ``run_batch`` replays the
scenario (``replay``) or runs the per-replicate engine (``engine``).
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections import OrderedDict

from fedsim.validation.suite_grids import build_cases
from fedsim.validation.suites import case_tasks
from fedsim.validation.warmup import tiny_scenario
from fedsim.validation.worker import run_replicates

from fedsim.config import Scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--replicates", type=int, default=None)
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--theorem", default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    tasks = case_tasks(build_cases(args.suite, args.replicates, theorem=args.theorem))
    print(f"built {len(tasks)} tasks in {time.perf_counter() - t0:.1f} s")
    runs: OrderedDict[str, list] = OrderedDict()
    for t in tasks:
        runs.setdefault(t.task_id.rsplit("/r", 1)[0], []).append(t)
    rows, total = [], 0.0
    for key, ts in runs.items():
        p0 = ts[0].payload
        run_replicates([dict(p0, scenario=tiny_scenario(p0["scenario"]))])  # compile
        sample = [t.payload for t in ts[: args.sample]]
        t1 = time.perf_counter()
        run_replicates(sample)
        est = (time.perf_counter() - t1) * len(ts) / len(sample)
        total += est
        sc, a = p0["scenario"], p0["scenario"]["algorithm"]
        supports = getattr(importlib.import_module("fedsim.engine"), "supports", None)
        path = ("?" if supports is None
                else "replay" if supports(Scenario.from_dict(sc)) else "engine")
        rows.append((est, key, len(ts), a.get("name"), a.get("model"), a.get("client_rule"),
                     sc["problem"].get("kind"), path, max(p0["horizons"])))
    for r in sorted(rows, reverse=True):
        print(f"{r[0]:8.2f} s  {r[1][:58]:58s} R={r[2]:<5d} {r[3]} {r[4]} {r[5]} {r[6]} "
              f"{r[7]} T={r[8]}")
    by_path: dict[str, float] = {}
    for r in rows:
        by_path[r[7]] = by_path.get(r[7], 0.0) + r[0]
    print(f"total {total:.1f} one-core s; " + ", ".join(f"{k} {v:.1f} s"
                                                      for k, v in sorted(by_path.items())))


if __name__ == "__main__":
    main()
