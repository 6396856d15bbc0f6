"""Named validation suites and their orchestration (``fedsim validate``).

A suite is a list of :class:`fedsim.validation.scenarios.Case` objects, built when the suite
runs (:mod:`fedsim.validation.suite_grids`: every registered theorem's grid for the suite,
each case a family at a point and horizons, then the family rows).  :func:`run_suite`

1. builds the cases (theory bounds and exact oracles for exactly the simulated constants;
   oracle values are cached in ``<out>/store.sqlite`` so a resumed suite skips them),
2. runs every replicate of every run set through :func:`fedsim.validation.montecarlo.run_tasks`
   (process pool by default, or Dask; resumable, one record per replicate),
3. turns the records into verdict rows (:mod:`fedsim.validation.suite_verdicts`,
   :func:`fedsim.validation.compare.verdict_table`
   (Student-t 99% CI of the mean over replicates; ``holds`` iff the CI's upper end is at
   or under the bound, in a scenario whose checkable hypotheses hold),
4. adds the negative controls and checks that each got the verdict it must get:

   * (a) out-of-regime variants must be ``not_applicable`` with the failing hypothesis named;
   * (b) for one in-regime scenario per theorem, the same data against the bound divided by
     1000 (mode ``<mode>/1000``) must be ``violated``;
   * (c) THEORY_SPEC 7.d: the paper-literal Theorem 8 bound must be ``violated`` and the
     corrected one must hold; the other counterexample rows (AsyPFL CE1/CE3, and the exact
     rows of Per-FedAvg E-F1 and AsyPFL R2-4, measured by the exact oracle, not simulated:
     :class:`fedsim.validation.cases.ExactSpec`) must get their stated verdicts,

5. writes ``verdicts.csv``, ``meta/*.json`` (hypotheses, tagged constants, representative
   run), the manifest ``suite.json`` (:mod:`fedsim.validation.rundir`), the PDF report and
   ``summary.json`` (which counts the stored records and oracle-cache entries that failed
   verification and were recomputed).

The run directory is locked while a suite writes it: a second ``fedsim validate`` on
the same ``--out`` is refused at once with the first one's pid.

``quick`` covers every theorem at two scales and every control with R = 64 per in-regime run
set (about a minute on two cores); ``full`` uses larger grids and R, enough for tightness
ratios to about 10%.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
from fedsim.validation import scenarios as S
from fedsim.validation.cases import oracle_cache_stats
from fedsim.validation.compare import write_verdicts
from fedsim.validation.montecarlo import Task, atomic_write_json, run_tasks
from fedsim.validation.montecarlo_store import lock_run_dir
from fedsim.validation.rundir import write_manifest
from fedsim.validation.suite_grids import (
    SUITES,
    Suite,
    build_cases,
    case_grids,
    check_selection,
    div1000_pairs,
    register_grid,
    unregister_grid,
)
from fedsim.validation.suite_verdicts import collect, in_regime_rows, say_failures
from fedsim.validation.worker import task_function

from fedsim.errors import ConfigError, require

__all__ = ["SUITES", "Suite", "build_cases", "run_suite", "run_cases", "case_tasks", "collect",
           "check_selection", "say_failures", "in_regime_rows", "div1000_pairs",
           "case_grids", "register_grid", "unregister_grid"]


def case_tasks(cases: list[S.Case]) -> list[Task]:
    """The Monte-Carlo tasks of ``cases``: one per replicate of each run set (replicate 0 of
    the longest run set of a case is its representative run)."""
    tasks = []
    fn = task_function()  # the replay where it applies, else the engine (validation.worker)
    for case in cases:
        if not case.runs:  # exact rows only (ExactSpec): nothing to simulate
            continue
        rep_key = max(case.runs, key=lambda r: max(r.horizons)).key
        for run in case.runs:
            for r in range(run.replicates):
                tasks.append(Task(f"{run.key}/r{r}", fn,
                                  {"scenario": run.scenario, "replicate": r,
                                   "metric": run.metric, "horizons": list(run.horizons),
                                   "representative": r == 0 and run.key == rep_key}))
    return tasks


def _say_records(audit: dict[str, Any], progress: bool) -> None:
    """One stderr line about the stored records; always when some were damaged."""
    if audit["damaged"]:
        why = "; ".join(f"{n} {r}" for r, n in sorted(audit["damaged_reasons"].items(),
                                                      key=lambda kv: -kv[1]))
        sys.stderr.write(f"fedsim: {audit['damaged']} stored record(s) failed verification "
                         f"and will be recomputed ({why}), e.g. "
                         f"{audit['damaged_examples'][0]}\n")
    if progress and audit["tasks"] > audit["missing"]:
        sys.stderr.write(f"fedsim: resuming: {audit['reused']} of {audit['tasks']} records "
                         "reused\n")


def run_cases(cases: list[S.Case], out: str | os.PathLike, *, workers: int | None = None,
              dask: str | None = None, div1000: tuple = (), report: str | os.PathLike | None
              = None, progress: bool = True, desc: str = "replicates",
              dask_security: Any = None, stats: dict | None = None) -> pd.DataFrame:
    """Run ``cases`` into ``out`` (resumable): records, verdicts.csv, meta/ and the PDF.

    ``stats``, if given, receives ``"records"``: what the run found in ``out`` before it
    started (reused, computed, damaged records recomputed and why; the runner's single read
    of the records, :func:`fedsim.validation.montecarlo.run_tasks`) and ``"seconds"``: the
    wall seconds of the phases ``read``, ``warmup``, ``tasks``, ``verdicts`` (and
    ``report`` when this call writes the PDF).
    """
    out = Path(out)
    keys = [(c.theorem, c.scenario) for c in cases]
    if len(set(keys)) != len(keys):
        raise ConfigError("a suite must not repeat a (theorem, scenario) pair")
    tasks = case_tasks(cases)
    stats = stats if stats is not None else {}
    with lock_run_dir(out):
        # overwrite=True: a record computed from an older payload (the suite's scenarios
        # changed since) is recomputed instead of refused; verdicts only read current tasks.
        recs = run_tasks(tasks, out, workers=workers, dask=dask, progress=progress,
                         desc=desc, overwrite=True, dask_security=dask_security,
                         stats=stats, on_audit=lambda audit: _say_records(audit, progress))
        t0 = time.perf_counter()
        table, metas = collect(cases, recs, div1000)
        from fedsim.worstcase.verdict import worst_case_columns  # issue 32: <= 10 s of PEP
        table = worst_case_columns(table, cases, out)
        say_failures(table)
        write_verdicts(table, out / "verdicts.csv")
        for (th, sc), meta in metas.items():
            atomic_write_json(out / "meta" / f"{th}__{sc}.json", meta)
        stats["seconds"]["verdicts"] = time.perf_counter() - t0
        if report is not None:
            t0 = time.perf_counter()
            _build_report(out, report)
            stats["seconds"]["report"] = time.perf_counter() - t0
    return table


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process so far (the pool's workers are the
    forkserver's children, not counted here)."""
    t = os.times()
    return round(t.user + t.system, 2)


def _build_report(out: Path, report: str | os.PathLike) -> None:
    from fedsim.validation.report import build_report

    pdf = Path(report)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    build_report(out, pdf)


def run_suite(suite: str, *, replicates: int | None = None, workers: int | None = None,
              dask: str | None = None, out: str | os.PathLike = "runs/quick",
              report: str | os.PathLike | None = "reports/validation-quick.pdf",
              progress: bool = True, dask_security: Any = None,
              theorem: str | list[str] | None = None,
              family: str | list[str] | None = None) -> dict[str, Any]:
    """Run ``suite`` into ``out`` (resumable) and write verdicts.csv, meta/ and the PDF.

    ``theorem`` / ``family`` select part of the suite (:func:`build_cases`): checking one
    theorem costs that theorem's time.

    ``suite = "paper"`` runs :func:`fedsim.validation.paper.run_paper_suite` instead (the default
    ``out`` and ``report`` become ``runs/paper`` and ``reports/paper-experiments.pdf``) and
    returns its summary.

    The run directory is locked for the whole run (a second process writing it is refused,
    :func:`fedsim.validation.montecarlo_store.lock_run_dir`).  ``suite.json`` (the manifest that
    ``fedsim report`` checks, :mod:`fedsim.validation.rundir`) is written before the PDF.
    Returns ``{"verdicts": path, "report": path or None, "seconds": float,
    "controls_ok": bool, "in_regime_ok": bool, "records": {...}, "oracle_cache": {...},
    "phase_seconds": {...}, "parent_cpu_seconds": float}`` (``records``: reused / computed
    / damaged-and-recomputed counts; ``oracle_cache``: hits / computed /
    damaged-and-recomputed entries; ``phase_seconds``: wall seconds of ``build``, ``read``,
    ``warmup``, ``tasks``, ``verdicts``, ``report``); also written to ``summary.json``.
    """
    if suite == "paper":  # the papers' own experiments: claimed ordering against measured
        from fedsim.validation.paper import run_paper_suite

        return run_paper_suite(
            out="runs/paper" if str(out) == "runs/quick" else out,
            report=("reports/paper-experiments.pdf"
                    if str(report) == "reports/validation-quick.pdf" else report),
            workers=workers, dask=dask, progress=progress, replicates=replicates,
            dask_security=dask_security)
    require(suite in SUITES, "suite", suite, f"must be one of {sorted([*SUITES, 'paper'])}")
    check_selection(theorem=theorem, family=family)   # before anything is written
    with lock_run_dir(out):
        return _run_suite(suite, replicates=replicates, workers=workers, dask=dask,
                          out=Path(out), report=report, progress=progress,
                          dask_security=dask_security, theorem=theorem, family=family)


def _run_suite(suite: str, *, replicates: int | None, workers: int | None, dask: str | None,
               out: Path, report: str | os.PathLike | None, progress: bool,
               dask_security: Any, theorem: str | list[str] | None = None,
               family: str | list[str] | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    S.set_oracle_cache(out)  # table oracle of out/store.sqlite
    if progress:
        sys.stderr.write(f"fedsim: building the {suite} suite (bounds and exact oracles; "
                         f"cached in {out / 'store.sqlite'})...\n")
    try:
        cases = build_cases(suite, replicates, theorem=theorem, family=family)
    finally:
        cache = oracle_cache_stats()
        S.set_oracle_cache(None)
    built = time.perf_counter() - t0
    if progress:
        sys.stderr.write(f"fedsim: {len(cases)} scenarios built in {built:.1f} s\n")
    stats: dict[str, Any] = {"seconds": {"build": built}}
    table = run_cases(cases, out, workers=workers, dask=dask, div1000=div1000_pairs(suite),
                      report=None, progress=progress, desc=f"{suite} replicates",
                      dask_security=dask_security, stats=stats)
    write_manifest(out, suite=suite, replicates=replicates, seed=S.SEED,
                   tasks=int(sum(r.replicates for c in cases for r in c.runs)))
    if report is not None:
        t1 = time.perf_counter()
        _build_report(out, report)
        stats["seconds"]["report"] = time.perf_counter() - t1
    ctrl = table["control_ok"].dropna()
    in_reg = table[in_regime_rows(table)]
    rec = stats["records"]
    result = {"verdicts": str(out / "verdicts.csv"),
              "report": str(report) if report is not None else None,
              "seconds": time.perf_counter() - t0,
              "controls_ok": bool(ctrl.astype(bool).all()),
              "in_regime_ok": bool((in_reg["verdict"] == "holds").all()),
              "in_regime_rows": int(len(in_reg)),
              "error_rows": int((table["verdict"] == "error").sum()),
              "failed_replicates": int(table.drop_duplicates(["theorem", "scenario"])
                                       ["n_failed"].fillna(0).sum()),
              "records": {k: rec[k] for k in ("tasks", "reused", "computed", "damaged",
                                              "damaged_reasons", "errors_retried",
                                              "stale_payload")},
              "oracle_cache": cache,
              "phase_seconds": {k: round(v, 3) for k, v in stats["seconds"].items()},
              "parent_cpu_seconds": _cpu_seconds()}
    if cache["damaged"]:
        sys.stderr.write(f"fedsim: {cache['damaged']} damaged oracle cache entr"
                         f"{'y was' if cache['damaged'] == 1 else 'ies were'} recomputed\n")
    # --no-progress hides progress only: these lines always print
    for _, r in table[table["control_ok"].astype(object).eq(False)].iterrows():
        sys.stderr.write(f"fedsim: CONTROL FAILED {r['theorem']} {r['scenario']} "
                         f"{r['mode']} T/K={r['horizon']}: got {r['verdict']}, expected "
                         f"{r['expected_verdict']}\n")
    for _, r in in_reg[in_reg["verdict"] != "holds"].iterrows():
        sys.stderr.write(f"fedsim: in-regime row not 'holds': {r['theorem']} "
                         f"{r['scenario']} {r['mode']} T/K={r['horizon']} -> "
                         f"{r['verdict']} (mean {r['mean']:.4g}, CI [{r['ci_low']:.4g}, "
                         f"{r['ci_high']:.4g}], bound {r['bound']:.4g})\n")
    atomic_write_json(out / "summary.json", result)
    return result


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run_suite(sys.argv[1] if len(sys.argv) > 1 else "quick"), indent=1))
