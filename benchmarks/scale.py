"""Cost against the number of clients n (issue 29): FedAsync on a shared-Hessian quadratic.

The scenario: FedAsync, d = 10, Q = 1, ``--steps`` server steps (default 10^6), the delays
of ``examples/fedasync_quadratic.toml`` (exponential download, compute, upload), at each n
of ``--ns`` (default 10^3, 10^4, 10^5, 10^6); then the same with client-specific Hessians
at ``--specific-n`` (default 10^5).  Each cell runs in a fresh process (its own peak
memory) after a warm-up run at n = 10 (compiling excluded).  One line per cell::

    n=... case=shared setup_s=... timeline_steps_per_s=... replay_updates_per_s=... \
total_s=... peak_mb=...

* ``total_s`` -- wall time of ``fedsim.engine.run`` of the whole scenario (first, so the
  problem is built in it);
* ``setup_s`` -- wall time of ``fedsim.engine.run`` of the scenario with a 1-step horizon
  and another problem seed (built afresh): every per-client piece (the problem, its
  decompositions, the delay models, the streams, the initial states) and one step;
* ``timeline_steps_per_s`` / ``replay_updates_per_s`` -- server steps per second of writing
  the event table, and client updates (steps x Q) per second of replaying it, each timed
  alone on a problem built beforehand (``fedsim.engine.setup.problem_for``,
  ``fedsim.engine.dispatch.write_tables``, ``fedsim.engine.replay.driver.replay_table``);
  ``n/a`` where the tree has no such functions;
* ``setup_cpu_s``, ``total_cpu_s`` -- the same as CPU seconds of the process (less
  sensitive to other load on a shared machine);
* ``peak_mb`` -- the cell process's largest resident set (``ru_maxrss``); the engine's
  up-front memory check is lifted (``FEDSIM_MEMORY_BUDGET``, default here 64G) so that
  the measured peak, not the estimate, decides.

The first line also shows ``NUMPY_MADVISE_HUGEPAGE`` (the cells inherit it): on a kernel
whose transparent huge pages are ``madvise`` with ``defrag = madvise`` but that never
grants one, NumPy's huge-page advice for arrays of 4 MB or more makes each fresh page
fault several times dearer (on the 2-core development VM, filling 384 MB of fresh
``np.empty``: 1.27 CPU s advised, 0.21 s with ``NUMPY_MADVISE_HUGEPAGE=0``); no number
depends on it.

Only public API (``fedsim.config.Scenario``, ``fedsim.engine.run``) is needed, so the file
runs unchanged against another checkout: ``--baseline-python /path/.venv/bin/python``
(with ``--baseline-tree``, the checkout it runs in; default the interpreter's
``../..``) runs every cell with n <= ``--baseline-max-n`` (default 10^5) there too, in the
same invocation, and prints its line (``tree=baseline``) beside this tree's
(``tree=this``).  The first line is the load average.  Quick run::

    .venv/bin/python benchmarks/scale.py --ns 1000 100000 --steps 100000 --specific-n 10000

The lead's run (about 10 minutes on 2 quiet cores, most of it the baseline)::

    .venv/bin/python benchmarks/scale.py --baseline-python /work/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def scenario_dict(n: int, steps: int, shared: bool) -> dict:
    """The cell's scenario as a dict (``Scenario.from_dict``)."""
    return {
        "name": f"scale-n{n}", "seed": 1,
        "problem": {"kind": "quadratic", "n": n, "dim": 10, "mu": 0.1, "L": 1.0,
                    "heterogeneity": 1.0, "noise": "additive", "noise_sd": 0.1,
                    "shared_hessian": shared, "seed": 0},
        "algorithm": {"name": "fedasync", "model": "physical", "client_rule": "sgd", "Q": 1,
                      "eta": 0.01, "batch": 1, "beta": 1.0},
        "delays": {"download": {"kind": "exponential", "rate": 10.0},
                   "compute": {"kind": "exponential", "rate": 1.0},
                   "upload": {"kind": "exponential", "rate": 10.0},
                   "compute_per": "round"},
        "trigger": {"kind": "every_upload"},
        "horizon": {"steps": steps},
        "record": {"every": max(1, steps // 1000), "metrics": ["grad_sq"]},
    }


def _phases():
    """``(problem_for, write_tables, replay_table)`` of this tree, or ``None``."""
    try:
        from fedsim.engine.dispatch import write_tables
        from fedsim.engine.replay.driver import replay_table
        from fedsim.engine.setup import problem_for
    except ImportError:
        return None
    return problem_for, write_tables, replay_table


def cell(n: int, steps: int, shared: bool) -> dict:
    """One cell's figures, in this process (the child of :func:`main`)."""
    from fedsim.config import Scenario
    from fedsim.engine import run

    run(Scenario.from_dict(scenario_dict(10, 100, shared)))  # compile, load caches
    sc = Scenario.from_dict(scenario_dict(n, steps, shared))
    t, c = time.perf_counter(), time.process_time()
    run(sc)
    total, total_cpu = time.perf_counter() - t, time.process_time() - c
    # another problem seed: the engine caches problems per problem table
    one = scenario_dict(n, 1, shared)
    one["problem"]["seed"] = 1
    t, c = time.perf_counter(), time.process_time()
    run(Scenario.from_dict(one))
    setup, setup_cpu = time.perf_counter() - t, time.process_time() - c
    out = {"setup_s": setup, "total_s": total, "setup_cpu_s": setup_cpu,
           "total_cpu_s": total_cpu, "timeline_steps_per_s": None,
           "replay_updates_per_s": None}
    ph = _phases()
    if ph is not None:
        problem_for, write_tables, replay_table = ph
        problem = problem_for(sc)
        t = time.perf_counter()
        written = write_tables(sc, problem, [0])
        tl = time.perf_counter() - t
        t = time.perf_counter()
        replay_table(sc, written.tables, written.client_rule, written.server_rule,
                     replicates=[0], problem=problem, extra_info=written.extra_info,
                     keep_personal=written.keep_personal)
        rp = time.perf_counter() - t
        done = int(written.tables[0].steps_done)
        out["timeline_steps_per_s"] = done / tl
        out["replay_updates_per_s"] = done * int(sc.algorithm.get("Q")) / rp
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def line(n: int, case: str, tree: str, r: dict) -> str:
    """The key=value line of one cell."""
    if "error" in r:
        return f"n={n} case={case} tree={tree} error={r['error']!r}"
    return (f"n={n} case={case} tree={tree} setup_s={r['setup_s']:.3f} "
            f"timeline_steps_per_s={_fmt(r['timeline_steps_per_s'], '.0f')} "
            f"replay_updates_per_s={_fmt(r['replay_updates_per_s'], '.0f')} "
            f"total_s={r['total_s']:.3f} peak_mb={r['peak_mb']:.0f} "
            f"setup_cpu_s={r['setup_cpu_s']:.3f} total_cpu_s={r['total_cpu_s']:.3f}")


def spawn(python: str, cwd: str, n: int, steps: int, shared: bool, timeout: float) -> dict:
    """Run :func:`cell` in a fresh ``python`` process in ``cwd``."""
    cmd = [python, str(Path(__file__).resolve()), "--child", str(n), str(steps),
           "1" if shared else "0"]
    # the engine's up-front memory estimate is not what is measured here (peak_mb is)
    env = {**os.environ, "FEDSIM_MEMORY_BUDGET": os.environ.get("FEDSIM_MEMORY_BUDGET", "64G")}
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=int, nargs="*", default=[10**3, 10**4, 10**5, 10**6])
    ap.add_argument("--steps", type=int, default=10**6)
    ap.add_argument("--specific-n", type=int, default=10**5,
                    help="n of the client-specific-Hessian cell (0: none)")
    ap.add_argument("--baseline-python", default=None,
                    help="an interpreter whose fedsim is another checkout (e.g. 3788ae3)")
    ap.add_argument("--baseline-tree", default=None,
                    help="the directory the baseline runs in (default: the venv's parent)")
    ap.add_argument("--baseline-max-n", type=int, default=10**5)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per cell")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        n, steps, shared = int(a.child[0]), int(a.child[1]), a.child[2] == "1"
        print(json.dumps(cell(n, steps, shared)))
        return 0
    with open("/proc/loadavg") as f:
        print(f"loadavg={f.read().split()[0]} steps={a.steps} cpus={os.cpu_count()} "
              f"NUMPY_MADVISE_HUGEPAGE={os.environ.get('NUMPY_MADVISE_HUGEPAGE', 'unset')}",
              flush=True)
    here = str(Path(__file__).resolve().parents[1])
    base_tree = a.baseline_tree
    if a.baseline_python and base_tree is None:
        base_tree = str(Path(a.baseline_python).absolute().parents[2])
    cells = [(n, True) for n in a.ns] + ([(a.specific_n, False)] if a.specific_n else [])
    for n, shared in cells:
        case = "shared" if shared else "specific"
        print(line(n, case, "this", spawn(sys.executable, here, n, a.steps, shared,
                                          a.timeout)), flush=True)
        if a.baseline_python and n <= a.baseline_max_n:
            print(line(n, case, "baseline", spawn(a.baseline_python, base_tree, n, a.steps,
                                                  shared, a.timeout)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
