"""Verdict rows of a suite's cases from their records (the one verdict path of the suites).

:func:`collect` turns the replicate records of :class:`fedsim.validation.cases.Case` objects
into the verdict table of :func:`fedsim.validation.compare.verdict_table` (Student-t 99% CI
of the mean over replicates; ``holds`` iff the CI's upper end is at or under the bound, in a
scenario whose checkable hypotheses hold), with the simulation-only hypotheses measured on
the records (:class:`fedsim.validation.cases.SimCheck`), the replicate failures counted, the
negative controls' bound/1000 rows added and each control's required verdict checked.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from fedsim.theory.result import Hypothesis
from fedsim.validation.cases import CLAIM_STATUSES, Case
from fedsim.validation.compare import verdict_table
from fedsim.validation.verdict import Target, evaluate_checks, merged_hypotheses

__all__ = ["collect", "say_failures", "in_regime_rows"]


def _hyp_dict(h: Hypothesis) -> dict[str, Any]:
    return {"name": h.name, "holds": h.holds, "detail": h.detail}


def _bound_terms(case: Case) -> dict[str, dict[str, list]]:
    """Per mode, the bound's own terms (:attr:`BoundResult.terms`) at each row's horizon:
    ``{mode: {"horizons": [...], "bound": [...], "terms": {name: [...]}}}`` (what the report's
    growing-bound note reads).  A curve result's array term is indexed by the row's place among
    the rows sharing that result."""
    out: dict[str, dict[str, list]] = {}
    seen: dict[int, int] = {}
    for row in case.rows:
        i = seen.get(id(row.result), 0)
        seen[id(row.result)] = i + 1
        d = out.setdefault(row.mode, {"horizons": [], "bound": [], "terms": {}})
        d["horizons"].append(row.horizon)
        d["bound"].append(float(row.bound))
        for name, v in row.result.terms.items():
            a = np.asarray(v, dtype=np.float64).reshape(-1)
            d["terms"].setdefault(name, []).append(float(a[i] if a.size > i else a[-1]))
    for d in out.values():   # a term missing at some horizon cannot be compared along it
        d["terms"] = {k: v for k, v in d["terms"].items() if len(v) == len(d["horizons"])}
    return out


def _records(case: Case, recs: dict[str, dict]) -> list[dict]:
    """The value dicts of the case's finished replicates (what its checks read)."""
    return [rec["value"] for run in case.runs for r in range(run.replicates)
            if (rec := recs.get(f"{run.key}/r{r}")) and rec.get("value")]


def collect(cases: list[Case], recs: dict[str, dict], div1000: tuple = ()
            ) -> tuple[pd.DataFrame, dict[tuple[str, str], dict]]:
    """Verdict table and per-(theorem, scenario) metadata from the records."""
    samples, bounds, metas = [], [], {}
    for case in cases:
        sim = evaluate_checks(case.sim_checks, _records(case, recs))
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
            # an exact row simulates nothing: its simulation checks stay unknown (judge)
            simulated = row.run_key not in exact_keys
            target = Target.of_bound(row.result, row.bound, case.sim_checks)
            base = dict(theorem=case.theorem, scenario=case.scenario, horizon=row.horizon,
                        exact=row.exact, expected_slope=case.expected_slope,
                        n_failed=n_failed, failing_hypotheses="", failure=failure,
                        outcomes=sim if simulated else None)
            bounds.append(dict(base, mode=row.mode, bound=row.bound, target=target,
                               control=row.control, expected_verdict=row.expected_verdict,
                               **({} if simulated else {"measured_exactly": True})))
            if (case.theorem, case.scenario) in div1000 and simulated:
                samples += [(t, s, f"{row.mode}/1000", h, v) for (t, s, m, h, v) in samples
                            if (t, s, m, h) == (case.theorem, case.scenario, row.mode,
                                                row.horizon)]
                bounds.append(dict(base, mode=f"{row.mode}/1000", bound=row.bound / 1000,
                                   target=replace(target, bound=row.bound / 1000),
                                   control="bound_div_1000", expected_verdict="violated",
                                   exact=math.nan))
        r0 = case.rows[0].result
        metas[(case.theorem, case.scenario)] = {
            "theorem": case.theorem, "scenario": case.scenario,
            "mode": ", ".join(dict.fromkeys(r.mode for r in case.rows)),
            "title": case.title, "description": case.description, "x_label": case.x_label,
            "quantity": case.quantity, "expected_slope": case.expected_slope,
            "hypotheses": [_hyp_dict(h) for h in merged_hypotheses(
                Target.of_bound(case.rows[-1].result, case.rows[-1].bound, case.sim_checks),
                sim if case.rows[-1].run_key not in exact_keys else None)],
            "constants": case.constants,
            "bound_status": ", ".join(dict.fromkeys(r.result.status.value for r in case.rows)),
            "step_sizes": {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                           for k, v in r0.step_sizes.items()},
            "errata_applied": list(r0.errata_applied),
            "notes": case.notes + list(dict.fromkeys(r0.warnings)),
            "control": case.control,
            "failure": failure,
            "bound_terms": _bound_terms(case),
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


def in_regime_rows(table: pd.DataFrame) -> pd.Series:
    """The rows ``summary.json``'s ``in_regime_ok`` requires to hold: every non-control row
    whose verdict could be wrong -- it claims a bound (status in ``CLAIM_STATUSES``), or a
    hypothesis failed, or replicates failed, or its verdict is ``error``."""
    claim = table["status"].isin([s.value for s in CLAIM_STATUSES])
    failing = table["failing_hypotheses"].fillna("").astype(str) != ""
    failed = pd.to_numeric(table["n_failed"], errors="coerce").fillna(0) > 0
    return ((table["control"].fillna("") == "")
            & (claim | failing | failed | (table["verdict"] == "error")))


