"""Replicates in lockstep: aggregate server updates/s of the batched replay (issue 10).

Quadratic cells (n=100, d=10, Q in {1, 10}, R in {1, 64, 256, 1024}): it times
``fedsim.engine.run_batch(..., output="records")`` on R replicates of ``--steps`` server steps (the
batch split across ``--procs`` worker processes, contiguous halves of the replicate
list; a replicate's numbers do not depend on the split) and, in the same run, today's
per-replicate ``fedsim.engine.run`` on ``--engine-reps`` replicates of the same scenario.
Other models (logistic d=64 batch 8; the AREA iterate model on [A] Theorem 7's quadratic
instance and on the [A] Theorem 8 norm family at n=30, their tables written by
:func:`fedsim.engine.models.area.area_table_set` and replayed by the one kernel, a group of
replicates per compiled call): the public entry ``fedsim.engine.run_batch`` in the same
processes, after one call in the parent (compile time excluded, as for the quadratic
cells); where it has no replay it loops ``run`` (``path=loop``), so its ratio measures only
the process split.  ``vs_per_replicate`` compares with ``fedsim.engine.run`` of the same
checkout; issue 19's ratios are against the baseline commit's engine, whose
``engine_updates_per_s`` a run of its own ``benchmarks/replicates.py`` prints (run it in the
same shell session).  ``--models softmax`` (not in the default list): a Table 4 arm of the
paper suite, softmax on digits (:func:`softmax_scenario`; ``--softmax-arms``, default the
FedAsync and AREA arms; R=8, and 64 without ``--quick``); its time horizon gives each
replicate its own step count, so its figures use the replicates' mean (``mean_steps``).
The baseline checkout has no such cell: time its engine on the same scenario
(``softmax_scenario(...).to_dict()`` run there) in the same shell command.  One line per
cell::

    model=quadratic n=100 d=10 Q=10 R=1024 updates_per_s=... vs_per_replicate=... peak_mb=...

``updates_per_s`` = R * steps / wall time (setup included: streams, timelines);
``vs_per_replicate`` = that / the engine's updates/s measured in this run; ``peak_mb`` the
largest resident set of the processes doing the work (``ru_maxrss``).  The same figures per
CPU second (``updates_per_cpu_s``: R * steps / the workers' summed CPU time;
``cpu_vs_per_replicate``: that / the engine's updates per CPU second) are less sensitive to
other load on a shared machine: on an idle machine with ``procs`` cores the wall figure
approaches ``procs`` times the CPU one.  Quadratic cells also print ``draws_only_s``: the
wall time of building the same per-replicate noise streams and drawing the same number
of normals (``steps Q d`` per replicate) with NumPy in the same processes, and
``vs_draws`` = the replay's time / that floor (issue 19); ``draws_compiled_s`` and
``vs_draws_compiled``: the same numbers drawn as the replay draws them (PCG64 state rows
in compiled code, :mod:`fedsim.rng.streams`; about 3.5x faster than NumPy's
``standard_normal(out=)`` here).  Wall-clock times
on a shared machine are noisy: compare ratios from one run.  Steps default to a realistic
horizon (30,000; setup -- streams, timelines -- is spread over it); ``--quick``: 3,000
steps, the quadratic cells and one cell of each other model (R=8 and 64 logistic, R=64 AREA on
Theorem 7's quadratic, R=1024 for the norm family; a few minutes on a loaded 2-core
machine).  Each run prints the load average first.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from fedsim.config import Scenario  # noqa: E402
from fedsim.engine import run, run_batch, supports  # noqa: E402
from fedsim.jit import jit  # noqa: E402
from fedsim.rng.seeding import client_bitgens  # noqa: E402
from fedsim.rng.streams import client_states, stream  # noqa: E402


def scenario(n: int, d: int, Q: int, steps: int) -> Scenario:
    """The cell's scenario (the one of benchmarks/engine.py)."""
    return Scenario.from_dict({
        "name": f"bench-n{n}-d{d}-Q{Q}", "seed": 1,
        "problem": {"kind": "quadratic", "n": n, "dim": d, "mu": 0.1, "L": 1.0,
                    "heterogeneity": 1.0, "noise_sd": 0.1, "shared_hessian": True, "seed": 0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": Q,
                      "eta": 0.5 / (n * Q), "beta": 1.0},
        "delays": {"download": {"kind": "exponential", "rate": 10.0},
                   "compute": {"kind": "exponential", "rate": 1.0},
                   "upload": {"kind": "exponential", "rate": 10.0}},
        "horizon": {"steps": steps},
        "record": {"every": 1, "metrics": ["grad_sq"]},
    })


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _work(args: tuple[Scenario, list[int], bool]) -> tuple[float, int, float]:
    sc, reps, direct = args
    c0 = _cpu()
    if direct:
        w = float(np.sum(run_batch(sc, reps, output="records").final_w))
    else:
        w = float(sum(np.sum(t.final_w) for t in run_batch(sc, reps)))
    return w, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _cpu() - c0


def _draws(args: tuple[Scenario, list[int], int, int]) -> tuple[float, int, float]:
    """The draws alone: each replicate's ``steps Q d`` normals from its own n client
    ``noise`` streams (built as the replay builds them), split evenly over the streams."""
    sc, reps, n, d = args
    c0 = _cpu()
    per = int(sc.horizon.steps) * int(sc.algorithm.get("Q")) * d // n
    buf = np.empty(per)
    acc = 0.0
    for row in client_bitgens(sc.seed, reps, n, "noise"):
        for bg in row:
            np.random.Generator(bg).standard_normal(out=buf)
            acc += buf[0]
    return acc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _cpu() - c0


@jit
def _normals_rows(states, per, buf):
    acc = 0.0
    for i in range(states.shape[0]):
        gen = stream(states, i)
        for k in range(per):
            buf[k] = gen.standard_normal()
        acc += buf[0]
    return acc


def _draws_compiled(args: tuple[Scenario, list[int], int, int]) -> tuple[float, int, float]:
    """The same numbers as :func:`_draws`, drawn as the replay draws them: from the streams'
    PCG64 state rows in compiled code (:mod:`fedsim.rng.streams`)."""
    sc, reps, n, d = args
    c0 = _cpu()
    per = int(sc.horizon.steps) * int(sc.algorithm.get("Q")) * d // n
    buf = np.empty(per)
    acc = 0.0
    for rows in client_states(sc.seed, reps, n, "noise"):
        acc += _normals_rows(rows, per, buf)
    return acc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _cpu() - c0


def floor(sc: Scenario, R: int, procs: int, n: int, d: int, fn=_draws) -> float:
    """Wall seconds of :func:`_draws` (or ``fn``) for R replicates in ``procs`` processes."""
    reps = list(range(R))
    t0 = time.perf_counter()
    parts = [reps[k * R // procs:(k + 1) * R // procs] for k in range(procs)]
    with mp.get_context("fork").Pool(procs) as pool:
        pool.map(fn, [(sc, p, n, d) for p in parts])
    return time.perf_counter() - t0


def batched(sc: Scenario, R: int, procs: int, direct: bool = True) -> tuple[float, float, float]:
    """(wall seconds, peak MB, CPU seconds of the workers) for R replicates in ``procs``
    processes (``direct``: ``run_batch``'s records; else its traces)."""
    reps = list(range(R))
    t0 = time.perf_counter()
    if procs <= 1 or R < 2:
        _, rss, cpu = _work((sc, reps, direct))
    else:
        parts = [reps[k * R // procs:(k + 1) * R // procs] for k in range(procs)]
        with mp.get_context("fork").Pool(procs) as pool:
            out = pool.map(_work, [(sc, p, direct) for p in parts])
        rss = max(o[1] for o in out)
        cpu = sum(o[2] for o in out)
    return time.perf_counter() - t0, rss / 1024.0, cpu


def engine(sc: Scenario, reps: int) -> tuple[float, float]:
    """Per-replicate engine (updates per wall second, updates per CPU second), one process:
    ``reps`` replicates, more while under one wall second."""
    run(sc.with_seed(sc.seed), 0)  # warm the problem cache
    t0, c0 = time.perf_counter(), time.process_time()
    done = r = 0
    while r < reps or (time.perf_counter() - t0 < 1.0 and r < 1000):
        done += run(sc, r).steps_done
        r += 1
    return done / (time.perf_counter() - t0), done / (time.process_time() - c0)


def logistic_scenario(steps: int) -> Scenario:
    """FedAsync on logistic data, n=100 clients x 32 rows, d=64, Q=10, minibatch 8."""
    return Scenario.from_dict({
        "name": "bench-logistic", "seed": 1,
        "problem": {"kind": "logistic", "n_clients": 100, "dim": 64, "samples_per_client": 32,
                    "seed": 0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 10, "eta": 0.01,
                      "beta": 1.0, "batch": 8},
        "delays": {"download": {"kind": "exponential", "rate": 10.0},
                   "compute": {"kind": "exponential", "rate": 1.0},
                   "upload": {"kind": "exponential", "rate": 10.0}},
        "horizon": {"steps": steps},
        "record": {"every": max(1, steps // 10), "metrics": ["grad_sq"]}})


def softmax_scenario(family: str, n: int = 4) -> Scenario:
    """A Table 4 arm of the paper suite ([A] Sec. 5, ``M = 50``, batch 32, horizon t_h = 2):
    softmax regression on scikit-learn's bundled digits (``load_digits``, no download), n
    clients, IID split, ``lambda_i = 10``, the grid's middle step ``2/L``; ``family`` one of
    the table's algorithms (``fedasync``, ``area``, ...).  It records ``test_acc``,
    ``test_loss`` and ``f_gap`` at every server step, as the suite does."""
    from fedsim.validation.paper.area import tables_experiment

    exp = tables_experiment(50, ns=(n,), splits=("iid",), rate_kinds=("fixed",))
    arm, = [a for a in exp.settings[0].arms if a.family == family and a.grid == 2.0]
    return Scenario.from_dict(arm.scenario)


def area_scenario(steps: int) -> Scenario:
    """The AREA iterate model on [A] Theorem 7's validation instance (validation.scenarios)."""
    from fedsim.validation.scenarios.area import theorem7_case

    case = theorem7_case("L1", horizons=[steps], replicates=2)
    return Scenario.from_dict(case.runs[0].scenario)


def norm_scenario(steps: int) -> Scenario:
    """[A] Theorem 8's norm family f_i(x) = B |x - c| at n=30 clients (AREA iterate model,
    M=10, constant step, ergodic gap at K)."""
    return Scenario.from_dict({
        "name": "bench-norm", "seed": 1,
        "problem": {"kind": "norm", "B": 1.0, "n": 30, "dim": 1},
        "algorithm": {"name": "area", "model": "iterate_model", "client_rule": "area", "M": 10,
                      "batch": 1, "alpha": {"kind": "constant", "value": 0.01}, "w0": 1.0},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "trigger": {"kind": "poisson", "rate": 4.0},
        "horizon": {"steps": steps},
        "record": {"every": steps, "metrics": ["ergodic_f_gap"]}})


def _line(label: str, R: int, steps: float, dt: float, mb: float, cpu: float, eng: float,
          eng_cpu: float, path: str) -> str:
    ups, ucpu = R * steps / dt, R * steps / cpu
    return (f"{label} R={R} updates_per_s={ups:.0f} vs_per_replicate={ups / eng:.1f} "
            f"peak_mb={mb:.0f} updates_per_cpu_s={ucpu:.0f} "
            f"cpu_vs_per_replicate={ucpu / eng_cpu:.1f} path={path}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--engine-reps", type=int, default=3)
    ap.add_argument("--R", type=int, nargs="*", default=[1, 64, 256, 1024])
    ap.add_argument("--Q", type=int, nargs="*", default=[1, 10])
    ap.add_argument("--models", nargs="*", default=["quadratic", "logistic", "area", "norm"],
                    choices=["quadratic", "logistic", "area", "norm", "softmax"])
    ap.add_argument("--softmax-arms", nargs="*", default=["fedasync", "area"],
                    help="the Table 4 families the softmax cell times")
    a = ap.parse_args(argv)
    steps = a.steps or (3000 if a.quick else 30000)
    n, d = 100, 10
    with open("/proc/loadavg") as f:
        print(f"loadavg={f.read().split()[0]} procs={a.procs} steps={steps} "
              f"cpus={os.cpu_count()}", flush=True)
    for Q in a.Q if "quadratic" in a.models else []:
        sc = scenario(n, d, Q, steps)
        eng, eng_cpu = engine(sc, a.engine_reps)
        print(f"model=quadratic n={n} d={d} Q={Q} engine_updates_per_s={eng:.0f} "
              f"engine_updates_per_cpu_s={eng_cpu:.0f}", flush=True)
        for R in a.R:
            batched(sc, min(R, 2), a.procs)  # compiled code loaded in the parent
            dt, mb, cpu = batched(sc, R, a.procs)
            fl = floor(sc, R, max(a.procs, 1), n, d)
            _draws_compiled((sc, [0], n, d))  # compiled in the parent
            fc = floor(sc, R, max(a.procs, 1), n, d, _draws_compiled)
            print(_line(f"model=quadratic n={n} d={d} Q={Q}", R, steps, dt, mb, cpu, eng,
                        eng_cpu, "replay") + f" draws_only_s={fl:.3f} vs_draws={dt / fl:.2f}"
                  f" draws_compiled_s={fc:.3f} vs_draws_compiled={dt / fc:.2f}", flush=True)
    others = {  # label, scenario, steps, R grid (quick: one cell)
        "logistic": ("model=logistic n=100 d=64 Q=10 batch=8", logistic_scenario,
                     min(steps, 300), [8, 64] if a.quick else [1, 8, 64]),
        "area": ("model=area_iterate n=3 d=2 M=1", area_scenario, min(steps, 3000),
                 [64] if a.quick else [1, 64, 256]),
        "norm": ("model=theorem8_norm n=30 d=1 M=10", norm_scenario, 122,
                 [1024] if a.quick else [1, 64, 256, 1024]),
    }
    for name in [m for m in a.models if m in others]:
        label, make, k, grid = others[name]
        sc = make(k)
        eng, eng_cpu = engine(sc, a.engine_reps)
        print(f"{label} engine_updates_per_s={eng:.0f} engine_updates_per_cpu_s={eng_cpu:.0f}",
              flush=True)
        path = "replay" if supports(sc) else "loop"
        run_batch(sc, [0])  # compiled code loaded in the parent (the workers fork from it)
        for R in grid:
            dt, mb, cpu = batched(sc, R, a.procs, direct=False)
            print(_line(label, R, k, dt, mb, cpu, eng, eng_cpu, path), flush=True)
    for fam in a.softmax_arms if "softmax" in a.models else []:
        sc = softmax_scenario(fam)
        label = f"model=softmax_digits table4 arm={fam} n=4 M=50 batch=32"
        eng, eng_cpu = engine(sc, a.engine_reps)
        print(f"{label} engine_updates_per_s={eng:.0f} engine_updates_per_cpu_s={eng_cpu:.0f}",
              flush=True)
        for R in [8] if a.quick else [8, 64]:
            # a time horizon: the replicates' mean step count (this call also loads the
            # compiled code in the parent, as for the other models)
            k = sum(t.steps_done for t in run_batch(sc, list(range(R)))) / R
            dt, mb, cpu = batched(sc, R, a.procs, direct=False)
            print(_line(label, R, k, dt, mb, cpu, eng, eng_cpu,
                        "replay" if supports(sc) else "loop") + f" mean_steps={k:.1f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
