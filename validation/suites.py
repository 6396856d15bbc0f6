"""Named validation suites and their orchestration (``fedsim validate``).

A suite is a list of :class:`fedsim.validation.scenarios.Case` objects, built when the suite
runs: every registered theorem (:mod:`fedsim.theory.registry`, in its order) contributes the
cases of its grid for the suite (:func:`case_grids`: the scenario modules' ``GRIDS`` tables,
:func:`register_grid`), which also names its bound/1000 control scenarios; the family rows
(:mod:`fedsim.validation.rows`) follow.  :func:`run_suite`

1. builds the cases (theory bounds and exact oracles for exactly the simulated constants;
   oracle values are cached in ``<out>/store.sqlite`` so a resumed suite skips them),
2. runs every replicate of every run set through :func:`fedsim.validation.montecarlo.run_tasks`
   (process pool by default, or Dask; resumable, one record per replicate),
3. turns the records into verdict rows with :func:`fedsim.validation.compare.verdict_table`
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

``quick`` covers every theorem at two scales and every control with small R (minutes on two
cores); ``full`` uses larger grids and R, enough for tightness ratios to about 10%.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from fedsim.theory.registry import theorems
from fedsim.theory.result import Hypothesis, Status
from fedsim.validation import scenarios as S
from fedsim.validation.cases import oracle_cache_stats
from fedsim.validation.compare import verdict_table, write_verdicts
from fedsim.validation.montecarlo import Task, atomic_write_json, run_tasks
from fedsim.validation.montecarlo_store import audit_records, lock_run_dir
from fedsim.validation.rows import suite_rows
from fedsim.validation.rundir import write_manifest
from fedsim.validation.worker import task_function

from fedsim.errors import ConfigError, check_integer, require

__all__ = ["SUITES", "Suite", "build_cases", "run_suite", "run_cases", "collect",
           "check_selection", "say_failures", "in_regime_rows", "div1000_pairs",
           "case_grids", "register_grid", "unregister_grid"]


@dataclass(frozen=True)
class Suite:
    """A named suite: default replicates, the case list, and the /1000 control scenarios
    (both read from the grids when asked, not when this module is imported)."""

    name: str
    replicates: int
    cases: Callable[..., list[S.Case]]
    description: str

    @property
    def div1000(self) -> tuple[tuple[str, str], ...]:
        """The (theorem, scenario) pairs whose bound / 1000 must be violated (control (b))."""
        return _div1000(self.name)


_EXTRA_GRIDS: dict[str, S.CaseGrid] = {}


def register_grid(grid: S.CaseGrid, *, replace: bool = False) -> None:
    """Add a theorem's grids beside the built-in ones
    (:data:`fedsim.validation.scenarios.GRIDS`)."""
    require(isinstance(grid, S.CaseGrid), "grid", grid, "must be a CaseGrid")
    if grid.theorem in case_grids() and not replace:
        raise ConfigError(f"theorem {grid.theorem!r} already has grids, got "
                          f"theorem={grid.theorem!r}")
    _EXTRA_GRIDS[grid.theorem] = grid


def unregister_grid(theorem: str) -> None:
    """Remove grids added with :func:`register_grid`."""
    _EXTRA_GRIDS.pop(theorem, None)


def case_grids() -> dict[str, S.CaseGrid]:
    """Every theorem's grids by theorem name: the built-in tables, then :func:`register_grid`'s,
    then (for plug-ins written against it) what
    :func:`fedsim.theory.registry.register_scenarios` attached to a theorem."""
    out = {g.theorem: g for g in S.GRIDS}
    out.update(_EXTRA_GRIDS)
    for th in theorems():
        if th.scenarios and th.name not in out:
            out[th.name] = S.CaseGrid(theorem=th.name, builders=dict(th.scenarios),
                                      div1000=tuple(dict.fromkeys(
                                          s for c in th.controls.values() for s in c)))
    return out


def _ctrl_r(R: int) -> int:
    return max(2, min(R, 4))


def _from_registry(suite: str) -> Callable[..., list[S.Case]]:
    """The cases of ``suite``: every registered theorem's builder for it, in registry order
    (only the theorems named in ``only``, when given: the others' builders never run)."""

    def cases(R: int, only: frozenset[str] | None = None) -> list[S.Case]:
        c = _ctrl_r(R)
        out: list[S.Case] = []
        grids = case_grids()
        for th in theorems():
            builder = grids[th.name].builders.get(suite) if th.name in grids else None
            if builder is not None and (only is None or th.name in only):
                out += builder(R, c)
        return out

    return cases


def _names(field: str, given: str | list[str] | tuple[str, ...], known: list[str]
           ) -> frozenset[str]:
    """The comma-separated names of ``given``, each checked against ``known`` (one-line
    ConfigError listing the known names)."""
    names = [n.strip() for n in (given.split(",") if isinstance(given, str) else given)]
    names = [n for n in names if n]
    require(bool(names), field, given, "must name at least one")
    for n in names:
        require(n in known, field, n, f"must be one of {', '.join(known)}")
    return frozenset(names)


def check_selection(*, theorem: str | list[str] | None = None,
                    family: str | list[str] | None = None
                    ) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The theorem names (None: every theorem) and family names of a partial suite, each
    checked against the registered ones (one-line ConfigError listing them)."""
    only = None if theorem is None else _names("theorem", theorem,
                                                [t.name for t in theorems()])
    fams: frozenset[str] = frozenset()
    if family is not None:
        from fedsim.validation.families import families

        fams = _names("family", family, [f.name for f in families()])
    return only, fams


def _row_cases(suite: str, R: int, only: frozenset[str] | None, fams: frozenset[str]
               ) -> list[S.Case]:
    """The family rows of ``suite`` (:func:`fedsim.validation.rows.suite_rows`, read now):
    all of them for the whole suite; with a selection, those of the named families or of
    the named theorems, plus each named family without a row at its default point."""
    from fedsim.validation.families import get_family

    whole = only is None and not fams
    rows = [r for r in suite_rows(suite)
            if whole or r.family in fams
            or (only is not None and get_family(r.family).theorem in only)]
    out = [r.case(R) for r in rows]
    have = {r.family for r in rows}
    out += [get_family(f).build().case(R, key=f"{f}-default") for f in sorted(fams - have)]
    return out


def div1000_pairs(suite: str) -> tuple[tuple[str, str], ...]:
    """The (theorem, scenario) pairs whose bound / 1000 must be violated: the theorems'
    (:attr:`Suite.div1000`) and the family rows' (``SuiteRow.div1000``)."""
    from fedsim.validation.families import get_family

    return SUITES[suite].div1000 + tuple((get_family(r.family).theorem, r.name)
                                         for r in suite_rows(suite) if r.div1000)


def _div1000(suite: str) -> tuple[tuple[str, str], ...]:
    """The (theorem, scenario) pairs whose bound / 1000 must be violated (control (b))."""
    grids = case_grids()
    return tuple((th.name, sc) for th in theorems() if th.name in grids
                 and suite in grids[th.name].builders for sc in grids[th.name].div1000)


#: the named suites; each one's cases and /1000 controls come from the theorem registry
SUITES: dict[str, Suite] = {
    name: Suite(name, R, _from_registry(name), text)
    for name, R, text in (
        ("quick", 16, "every theorem at L ~ 1 and L << 1, every negative control, small R"),
        ("smoke", 6, "the quick scenarios at their smallest horizons (end-to-end test)"),
        ("full", 200, "larger horizon grids; replicates per scenario sized (R = 200 default) "
                      "for 99% CIs of about +-10% of the mean"),
    )
}


def build_cases(suite: str, replicates: int | None = None, *,
                theorem: str | list[str] | None = None,
                family: str | list[str] | None = None) -> list[S.Case]:
    """The cases of ``suite`` with ``replicates`` per in-regime run set (suite default).

    The theorems' cases come first, then the family rows (:mod:`fedsim.validation.rows`,
    e.g. a plug-in's).  ``theorem`` (names, or one comma-separated string) keeps the cases
    and rows of those theorems only, and builds nothing else; ``family`` (names) adds those
    families' rows (a family with no row in the suite: its default point, ``replicates``
    replicates, one horizon).  With ``family`` alone, only the family rows run.  An unknown
    name is a one-line ConfigError listing the known ones.
    """
    require(suite in SUITES, "suite", suite, f"must be one of {sorted(SUITES)}")
    R = SUITES[suite].replicates if replicates is None else check_integer(
        "replicates", replicates)
    require(R >= 2, "replicates", replicates, "must be >= 2 (a CI needs two values)")
    only, fams = check_selection(theorem=theorem, family=family)
    cases = [] if family is not None and theorem is None else SUITES[suite].cases(R, only)
    return cases + _row_cases(suite, R, only, fams)


def _tasks(cases: list[S.Case]) -> list[Task]:
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


def _hyp_dict(h: Hypothesis) -> dict[str, Any]:
    return {"name": h.name, "holds": h.holds, "detail": h.detail}


def _case_hypotheses(case: S.Case, recs: dict[str, dict]) -> list[tuple]:
    """The simulation-side checks of a case, evaluated on its records:
    ``(name, holds, detail, replaces)`` tuples."""
    out = []
    for chk in case.sim_checks:
        field = "max_staleness" if chk.kind == "max_staleness" else "inner_failures"
        vals = [rec["value"].get(field, 0) for run in case.runs
                for r in range(run.replicates)
                if (rec := recs.get(f"{run.key}/r{r}")) and rec.get("value")]
        if not vals:
            out.append((chk.name, None, chk.detail + "; no replicate finished", chk.replaces))
            continue
        m = max(vals) if chk.kind == "max_staleness" else sum(vals)
        what = "max staleness" if chk.kind == "max_staleness" else "inner-solve failures"
        out.append((chk.name, bool(m <= chk.limit),
                    f"{chk.detail}; measured {what} {m:g} over {len(vals)} replicates",
                    chk.replaces))
    return out


def _merged(row: S.Row, sim: list[tuple]) -> list[Hypothesis]:
    """Theory hypotheses with the simulator-only ones (holds=None) replaced by measurements."""
    hyps = list(row.result.hypotheses)
    if sim:
        drop = tuple(p for c in sim for p in c[3])
        hyps = [h for h in hyps if not (h.holds is None and drop and h.name.startswith(drop))]
        hyps += [Hypothesis(*c[:3]) for c in sim]
    return hyps


def collect(cases: list[S.Case], recs: dict[str, dict], div1000: tuple = ()
            ) -> tuple[pd.DataFrame, dict[tuple[str, str], dict]]:
    """Verdict table and per-(theorem, scenario) metadata from the records."""
    samples, bounds, metas = [], [], {}
    for case in cases:
        sim = _case_hypotheses(case, recs)
        exact_keys = case.exact_keys()
        n_failed, first_failure = 0, ""
        rep = None
        for run in case.runs:
            for r in range(run.replicates):
                rec = recs.get(f"{run.key}/r{r}")
                if rec is None or rec["status"] == "error":
                    n_failed += 1
                    first_failure = first_failure or (
                        "no record" if rec is None else str(rec.get("reason") or "error"))
                    continue
                val = rec.get("value") or {}
                if val.get("staleness_steps") is not None:
                    rep = {k: val[k] for k in ("staleness_steps", "concurrency_time",
                                               "concurrency_busy", "concurrency_mean")
                           if k in val}
                for h, v in zip(run.horizons, val.get("values", []), strict=True):
                    if rec["status"] == "diverged":
                        v = math.inf
                    for row in case.rows:
                        if row.run_key == run.key and row.horizon == h:
                            samples.append((case.theorem, case.scenario, row.mode, h, v))
        n_tasks = sum(run.replicates for run in case.runs)
        failure = (f"{n_failed} of {n_tasks} replicates failed; first: {first_failure}"
                   if n_failed else "")
        for row in case.rows:
            hyps = _merged(row, sim)
            hold = not any(h.holds is False for h in hyps)
            failing = "; ".join(h.name for h in hyps if h.holds is False)
            status = row.result.status
            if not hold and status is not Status.NOT_APPLICABLE:
                status = Status.NOT_APPLICABLE
            base = dict(theorem=case.theorem, scenario=case.scenario, horizon=row.horizon,
                        status=status.value, hypotheses_hold=hold, exact=row.exact,
                        expected_slope=case.expected_slope, n_failed=n_failed,
                        failing_hypotheses=failing, failure=failure)
            claim = status in S.CLAIM_STATUSES and hold
            bounds.append(dict(base, mode=row.mode, bound=row.bound, bound_is_certified=claim,
                               control=row.control, expected_verdict=row.expected_verdict,
                               **({"measured_exactly": True} if row.run_key in exact_keys
                                  else {})))
            if (case.theorem, case.scenario) in div1000 and row.run_key not in exact_keys:
                samples += [(t, s, f"{row.mode}/1000", h, v) for (t, s, m, h, v) in samples
                            if (t, s, m, h) == (case.theorem, case.scenario, row.mode,
                                                row.horizon)]
                bounds.append(dict(base, mode=f"{row.mode}/1000", bound=row.bound / 1000,
                                   bound_is_certified=claim, control="bound_div_1000",
                                   expected_verdict="violated", exact=math.nan))
        r0 = case.rows[0].result
        metas[(case.theorem, case.scenario)] = {
            "theorem": case.theorem, "scenario": case.scenario,
            "mode": ", ".join(dict.fromkeys(r.mode for r in case.rows)),
            "title": case.title, "description": case.description, "x_label": case.x_label,
            "quantity": case.quantity, "expected_slope": case.expected_slope,
            "hypotheses": [_hyp_dict(h) for h in _merged(case.rows[-1], sim)],
            "constants": case.constants,
            "bound_status": ", ".join(dict.fromkeys(r.result.status.value for r in case.rows)),
            "step_sizes": {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                           for k, v in r0.step_sizes.items()},
            "errata_applied": list(r0.errata_applied),
            "notes": case.notes + list(dict.fromkeys(r0.warnings)),
            "control": case.control,
            "failure": failure,
        }
        if rep is not None:
            metas[(case.theorem, case.scenario)]["representative"] = rep
    sdf = pd.DataFrame(samples, columns=["theorem", "scenario", "mode", "horizon", "value"])
    table = verdict_table(sdf, pd.DataFrame(bounds))
    exp = table["expected_verdict"].fillna("")
    ok = (exp == "") | (table["verdict"] == exp)
    # (a) must also name the failing hypothesis
    oor = table["control"].fillna("").str.startswith("out_of_regime")
    ok &= ~oor | (table["failing_hypotheses"].fillna("") != "")
    table["control_ok"] = np.where(exp == "", None, ok)
    return table, metas


def say_failures(table: pd.DataFrame) -> None:
    """One stderr line per (theorem, scenario) whose replicates failed: the count and the
    first failure's message (printed whatever ``--no-progress`` says)."""
    if "failure" not in table.columns:
        return
    bad = table[table["failure"].fillna("") != ""]
    for (th, sc), sub in bad.groupby(["theorem", "scenario"], sort=False):
        err = " (no replicate finished: error row)" if (sub["verdict"] == "error").any() \
            else ""
        sys.stderr.write(f"fedsim: {th} {sc}: {sub['failure'].iloc[0]}{err}\n")


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

    ``stats``, if given, receives ``"records"``: what
    :func:`fedsim.validation.montecarlo_store.audit_records` found before the run (reused,
    computed, damaged records recomputed and why).
    """
    out = Path(out)
    keys = [(c.theorem, c.scenario) for c in cases]
    if len(set(keys)) != len(keys):
        raise ConfigError("a suite must not repeat a (theorem, scenario) pair")
    tasks = _tasks(cases)
    with lock_run_dir(out):
        audit = audit_records(out, tasks)
        audit["computed"] = audit["tasks"] - audit["reused"]
        _say_records(audit, progress)
        if stats is not None:
            stats["records"] = audit
        # overwrite=True: a record computed from an older payload (the suite's scenarios
        # changed since) is recomputed instead of refused; verdicts only read current tasks.
        recs = run_tasks(tasks, out, workers=workers, dask=dask, progress=progress,
                         desc=desc, overwrite=True, dask_security=dask_security)
        table, metas = collect(cases, recs, div1000)
        say_failures(table)
        write_verdicts(table, out / "verdicts.csv")
        for (th, sc), meta in metas.items():
            atomic_write_json(out / "meta" / f"{th}__{sc}.json", meta)
        if report is not None:
            _build_report(out, report)
    return table


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
    "controls_ok": bool, "in_regime_ok": bool, "records": {...}, "oracle_cache": {...}}``
    (``records``: reused / computed / damaged-and-recomputed counts; ``oracle_cache``:
    hits / computed / damaged-and-recomputed entries); also written to ``summary.json``.
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


def in_regime_rows(table: pd.DataFrame) -> pd.Series:
    """The rows ``summary.json``'s ``in_regime_ok`` requires to hold: every non-control row
    whose verdict could be wrong -- it claims a bound (status in ``CLAIM_STATUSES``), or a
    hypothesis failed, or replicates failed, or its verdict is ``error``."""
    claim = table["status"].isin([s.value for s in S.CLAIM_STATUSES])
    failing = table["failing_hypotheses"].fillna("").astype(str) != ""
    failed = pd.to_numeric(table["n_failed"], errors="coerce").fillna(0) > 0
    return ((table["control"].fillna("") == "")
            & (claim | failing | failed | (table["verdict"] == "error")))


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
    if progress:
        sys.stderr.write(f"fedsim: {len(cases)} scenarios built in "
                         f"{time.perf_counter() - t0:.1f} s\n")
    stats: dict[str, Any] = {}
    table = run_cases(cases, out, workers=workers, dask=dask, div1000=div1000_pairs(suite),
                      report=None, progress=progress, desc=f"{suite} replicates",
                      dask_security=dask_security, stats=stats)
    write_manifest(out, suite=suite, replicates=replicates, seed=S.SEED,
                   tasks=int(sum(r.replicates for c in cases for r in c.runs)))
    if report is not None:
        _build_report(out, report)
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
              "oracle_cache": cache}
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
