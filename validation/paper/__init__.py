"""``fedsim validate --suite paper``: the seed papers' own experiments, claim against measure.

Each experiment (:mod:`fedsim.validation.paper.common`) quotes one claim of a paper with its
table or figure and runs in two stages through :func:`fedsim.validation.montecarlo.run_tasks`
(process pool, one record per replicate, resumable: re-running the same command keeps the
finished records): stage 1 tunes the step size on its own replicates, stage 2 measures the
kept arms on fresh replicates with common random numbers, and the verdict comes from
paired 99% intervals (:mod:`fedsim.validation.paper.stats`,
:mod:`fedsim.validation.paper.intervals`).
Outputs under ``out``: ``paper/<experiment>.json`` (everything a report page shows),
``paper_verdicts.csv`` (one row per claim) and the PDF
(:mod:`fedsim.validation.report.paper_pages`).

Experiments (``EXPERIMENTS``; ``small=True`` gives the end-to-end test forms):

* ``area_bias``        -- [A]'s thesis: AREA reaches x* under uneven rates, others keep a bias;
* ``area_table3``      -- [A] Table 3 analogue (digits, M = 1);
* ``area_table4``      -- [A] Table 4 analogue (digits, M = 50);
* ``perfedavg_table1`` -- Per-FedAvg Table 1 analogue (digits, n = 50, r = 0.2);
* ``persafl_fig2a``    -- [P] Fig. 2(a), concurrency async vs sync, with a Gantt chart;
* ``persafl_fig2b``    -- [P] Fig. 2(b) analogue (digits, personalised accuracy, six methods);
* ``asypfl_fig2``      -- AsyPFL Fig. 2 (lambda = 0 against the best lambda, on test rows);
* ``asypfl_fig3``      -- AsyPFL Fig. 3 analogue (a share of straggling clients).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from fedsim.validation.montecarlo import Task, atomic_write_json, run_tasks
from fedsim.validation.montecarlo_store import lock_run_dir
from fedsim.validation.paper.area import bias_experiment, tables_experiment
from fedsim.validation.paper.asypfl import fig2_experiment, fig3_experiment
from fedsim.validation.paper.common import Experiment, replicate_index, task_id, tuned_families
from fedsim.validation.paper.literature import LITERATURE
from fedsim.validation.paper.perfedavg import table1_experiment
from fedsim.validation.paper.persafl import fig2a_experiment, fig2b_experiment
from fedsim.validation.paper.previous import beside_previous
from fedsim.validation.paper.stats import select, summarise

from fedsim.errors import require
from fedsim.safefile import atomic_writer

__all__ = ["EXPERIMENTS", "build_experiments", "paper_tasks", "run_paper_suite"]


def _small_tables(M: int) -> Experiment:
    return tables_experiment(M, replicates=2, grid=(2.0, 8.0), ns=(4,), splits=("iid",),
                             rate_kinds=("normal",), horizon=3.0 if M == 1 else 0.5)


#: name -> builder(small) -> Experiment
EXPERIMENTS: dict[str, Callable[[bool], Experiment]] = {
    "area_bias": lambda small: bias_experiment(replicates=2, horizon=20.0, n=4) if small
    else bias_experiment(),
    "area_table3": lambda small: _small_tables(1) if small else tables_experiment(1),
    "area_table4": lambda small: _small_tables(50) if small else tables_experiment(50),
    "perfedavg_table1": lambda small: table1_experiment(
        replicates=2, n=10, horizon=20.0, grid=(2.0,), rows=((4, 1.0),)) if small
    else table1_experiment(),
    "persafl_fig2a": lambda small: fig2a_experiment(replicates=2, n=6, horizon=30.0) if small
    else fig2a_experiment(),
    "persafl_fig2b": lambda small: fig2b_experiment(replicates=2, n=6, horizon=12.0, Q=2)
    if small else fig2b_experiment(),
    "asypfl_fig2": lambda small: fig2_experiment(replicates=2, n=6, horizon=6.0, lams=(4.0,),
                                                 grid=(1.0, 2.0)) if small
    else fig2_experiment(),
    "asypfl_fig3": lambda small: fig3_experiment(replicates=2, n=6, horizon=25.0,
                                                 shares=(0.0, 0.5), grid=(1.0, 2.0)) if small
    else fig3_experiment(),
}


def build_experiments(only: list[str] | None = None, small: bool = False) -> list[Experiment]:
    """The experiments named in ``only`` (default: all), full or small."""
    known = {**EXPERIMENTS, **LITERATURE}  # the literature suite's experiments by name too
    names = list(EXPERIMENTS) if not only else only
    for nm in names:
        require(nm in known, "experiment", nm, f"must be one of {list(known)}")
    exps = [known[nm](small) for nm in names]
    return [replace(e, tune_replicates=1) for e in exps] if small else exps


def _task(e: Experiment, arm, r: int, stage: str) -> Task:
    payload = {"scenario": arm.scenario, "replicate": replicate_index(r, stage),
               "grid": e.grid.tolist(), "metrics": list(e.metrics), "targets": dict(e.targets),
               "curve": [e.curve_metric]}
    if arm.alias:
        payload["alias"] = dict(arm.alias)
    return Task(task_id(e, arm, r, stage), "fedsim.validation.paper.worker:run_arm", payload)


def _arm_of(t: Task) -> str:
    return t.task_id.rsplit("/r", 1)[0]


def _tuning_cost(e: Experiment, arm, recs: dict[str, dict]) -> float:
    """Mean CPU seconds of ``arm``'s tuning replicates (``inf`` for an arm that was not
    tuned, or whose records say nothing): the cost estimate of its stage-2 replicates."""
    cpu = [(recs.get(task_id(e, arm, r, "tune")) or {}).get("value") or {}
           for r in range(e.tune_replicates)]
    vals = [float(v["cpu_seconds"]) for v in cpu if "cpu_seconds" in v]
    return sum(vals) / len(vals) if vals else float("inf")


def _ordered(tasks: list[Task], cost: dict[str, float] | None = None) -> list[Task]:
    """The arms in a fixed order -- by decreasing ``cost`` (arm -> estimated seconds per
    replicate; default all equal), ties in a pseudo-random order fixed by the arm's key --
    so that the costly arms start first and the cheap ones fill the pool's last chunks; the
    replicates of an arm stay together, in order, so that they share a chunk and one
    batched run (:func:`fedsim.validation.paper.worker.run_arms`).  The order decides the
    chunks only, never a record."""
    cost = cost or {}
    return sorted(tasks, key=lambda t: (-cost.get(_arm_of(t), 0.0),
                                        hashlib.sha256(_arm_of(t).encode()).hexdigest(),
                                        t.payload["replicate"]))


def paper_tasks(exps: list[Experiment], stage: str = "measure",
                recs: dict[str, dict] | None = None) -> list[Task]:
    """Stage 1 (``"tune"``): every replicate of every arm of a tuned family.  Stage 2
    (``"measure"``): the replicates of the arms :func:`fedsim.validation.paper.stats.select` keeps
    from the tuning records ``recs`` (every arm of an untuned family), the arms that cost
    most in stage 1 first and the untuned ones before them (:func:`_ordered`)."""
    tasks: list[Task] = []
    cost: dict[str, float] = {}
    for e in exps:
        if stage == "tune":
            tasks += [_task(e, a, r, "tune") for a in tuned_families(e)
                      for r in range(e.tune_replicates)]
            continue
        chosen = select(e, recs or {})
        for s in e.settings:
            keep = set(chosen[s.key].values())
            for a in s.arms:
                if a.key in keep:
                    arm_tasks = [_task(e, a, r, "measure") for r in range(e.replicates)]
                    cost[_arm_of(arm_tasks[0])] = _tuning_cost(e, a, recs or {})
                    tasks += arm_tasks
    return _ordered(tasks, cost)


def _rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"experiment": summary["name"], "source": summary["source"],
             "verdict": summary["verdict"], "setting": c["setting"], "claim": c["text"],
             "metric": c["metric"], "stat": c["stat"], "diff": c["diff"], "ci_low": c["lo"],
             "ci_high": c["hi"], "status": c["status"]} for c in summary["claims"]]


def run_paper_suite(*, out: str | os.PathLike = "runs/paper",
                    report: str | os.PathLike | None = "reports/paper-experiments.pdf",
                    workers: int | None = None, dask: str | None = None,
                    progress: bool = True, small: bool = False,
                    only: list[str] | None = None, replicates: int | None = None,
                    dask_security: Any = None) -> dict[str, Any]:
    """Run the paper experiments into ``out`` (resumable); write the summaries and the PDF.

    ``replicates`` overrides every experiment's measurement replicate count (>= 2);
    ``dask_security``: a ``distributed.Security`` for a ``tls://`` scheduler (as
    :func:`fedsim.validation.suites.run_suite`).
    """
    t0 = time.perf_counter()
    out = Path(out)
    from fedsim.notice import notice_after

    with notice_after("building the paper suite's experiments (scenarios and step-size "
                      "grids)...", enabled=progress):
        exps = build_experiments(only, small)
    if replicates is not None:
        require(int(replicates) >= 2, "replicates", replicates, "must be >= 2")
        exps = [replace(e, replicates=int(replicates)) for e in exps]
    if progress:
        sys.stderr.write(f"fedsim: paper suite, {len(exps)} experiments built in "
                         f"{time.perf_counter() - t0:.1f} s\n")
    net = {"workers": workers, "dask": dask, "progress": progress, "overwrite": True,
           "dask_security": dask_security}
    with lock_run_dir(out):  # one writer per run directory, for the whole suite
        return _run_paper(exps, out, report, small, net, t0)


def _run_paper(exps: list[Experiment], out: Path, report: str | os.PathLike | None,
               small: bool, net: dict[str, Any], t0: float) -> dict[str, Any]:
    progress = net["progress"]
    tune = run_tasks(paper_tasks(exps, "tune"), out, desc="paper stage 1 (tuning)", **net)
    recs = run_tasks(paper_tasks(exps, "measure", tune), out,
                     desc="paper stage 2 (measurement)", **net)
    recs.update(tune)
    rows = []
    for e in exps:
        s = summarise(e, recs)
        atomic_write_json(out / "paper" / f"{e.name}.json", s)
        atomic_write_json(out / "paper" / f"{e.name}.scenarios.json",
                          {a.key: a.scenario for st in e.settings for a in st.arms})
        rows += _rows(s)
    csv = out / "paper_verdicts.csv"
    with atomic_writer(csv) as fh:
        pd.DataFrame(rows).to_csv(fh, index=False)
    if not small:  # issue 22: every verdict beside the previous design's
        with atomic_writer(out / "paper_vs_previous.csv") as fh:
            pd.DataFrame(beside_previous(rows)).to_csv(fh, index=False)
    atomic_write_json(out / "paper" / "index.json", {"experiments": [e.name for e in exps],
                                                     "small": small})
    pdf = None
    if report is not None:
        from fedsim.validation.report.paper_pages import build_paper_report

        pdf = Path(report)
        pdf.parent.mkdir(parents=True, exist_ok=True)
        build_paper_report(out, pdf)
    result = {"verdicts": str(csv), "report": str(pdf) if pdf else None,
              "seconds": time.perf_counter() - t0,
              "experiments": {r["experiment"]: r["verdict"] for r in rows},
              "controls_ok": True, "in_regime_ok": True}
    atomic_write_json(out / "paper_summary.json", result)
    if progress:
        sys.stderr.write(json.dumps(result["experiments"], indent=1) + "\n")
    return result
