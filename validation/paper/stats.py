"""From replicate records to the measured table, the claims' intervals and the verdict.

* :func:`select` -- the step-size rule of :mod:`validation.paper.common` (lowest mean
  training gap at the horizon among grid values with no diverged replicate);
* :func:`diff_ci` -- Welch's 99% interval for a difference of two means;
* :func:`judge` -- a claim's status: ``holds`` (interval on the claimed side),
  ``reversed`` (entirely on the other side) or ``unresolved``; the experiment's verdict
  is ``reproduced`` iff every claim holds, ``not reproduced`` iff one is reversed,
  ``inconclusive`` otherwise;
* :func:`summarise` -- everything the report page needs, as plain JSON-able data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as st

from validation.compare import CI_LEVEL, summarize
from validation.paper.common import Arm, Claim, Experiment

__all__ = ["VERDICTS", "diff_ci", "select", "judge", "summarise", "arm_values"]

VERDICTS = ("reproduced", "not reproduced", "inconclusive")


def _records(exp: Experiment, arm: Arm, recs: dict[str, dict]) -> list[dict]:
    out = []
    for r in range(exp.replicates):
        rec = recs.get(f"paper/{exp.name}/{arm.key}/r{r}")
        if rec is not None and rec.get("value") is not None:
            out.append(rec)
    return out


def arm_values(exp: Experiment, arm: Arm, recs: dict[str, dict], metric: str,
               stat: str = "final") -> np.ndarray:
    """One value per replicate: the final metric (NaN if diverged), the time to its target
    capped at the horizon, or the mean busy fraction (``metric = "busy"``)."""
    vals = []
    for rec in _records(exp, arm, recs):
        v = rec["value"]
        if stat == "final":
            x = v["final"].get(metric, math.nan) if rec["status"] == "ok" else math.nan
        elif stat == "time_to":
            x = min(float(v["time_to"].get(metric, math.inf)), exp.horizon)
        else:
            x = float(v["concurrency_mean"])
        vals.append(float(x))
    return np.asarray(vals, dtype=np.float64)


def select(exp: Experiment, recs: dict[str, dict]) -> dict[str, dict[str, str]]:
    """``setting -> family -> arm key`` chosen by the grid rule (module docstring)."""
    out: dict[str, dict[str, str]] = {}
    for s in exp.settings:
        fams: dict[str, list[Arm]] = {}
        for a in s.arms:
            fams.setdefault(a.family, []).append(a)
        out[s.key] = {}
        for fam, arms in fams.items():
            if len(arms) == 1:
                out[s.key][fam] = arms[0].key
                continue
            best, best_v = arms[0].key, math.inf
            for a in arms:
                v = arm_values(exp, a, recs, "f_gap")
                if v.size == 0 or not np.all(np.isfinite(v)):
                    continue
                if float(np.mean(v)) < best_v:
                    best, best_v = a.key, float(np.mean(v))
            out[s.key][fam] = best
    return out


def diff_ci(a: np.ndarray, b: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float, float]:
    """``(mean(a) - mean(b), lo, hi)``: Welch's ``level`` interval (non-finite values
    dropped; fewer than two values on a side gives an infinite interval)."""
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        d = float(np.mean(a) - np.mean(b)) if a.size and b.size else math.nan
        return d, -math.inf, math.inf
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    d = float(a.mean() - b.mean())
    se = math.sqrt(va + vb)
    if se == 0.0:
        return d, d, d
    dof = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = float(st.t.ppf(0.5 + level / 2.0, dof)) * se
    return d, d - half, d + half


def judge(exp: Experiment, claim: Claim, chosen: dict[str, dict[str, str]],
          recs: dict[str, dict]) -> dict[str, Any]:
    """One claim's measured difference, interval and status (module docstring)."""
    setting = next(s for s in exp.settings if s.key == claim.setting)
    arms = {a.key: a for a in setting.arms}
    a = arm_values(exp, arms[chosen[claim.setting][claim.a]], recs, claim.metric, claim.stat)
    if claim.b is not None:
        b = arm_values(exp, arms[chosen[claim.setting][claim.b]], recs, claim.metric,
                       claim.stat)
        d, lo, hi = diff_ci(a, b)
    else:
        s = summarize(a)
        d, lo, hi = (s["mean"] - claim.threshold, s["ci_low"] - claim.threshold,
                     s["ci_high"] - claim.threshold)
    if claim.rel == ">":
        status = "holds" if lo > 0 else ("reversed" if hi < 0 else "unresolved")
    else:
        status = "holds" if hi < 0 else ("reversed" if lo > 0 else "unresolved")
    n_bad = int(np.sum(~np.isfinite(a)))
    return {"setting": claim.setting, "text": claim.text, "metric": claim.metric,
            "stat": claim.stat, "a": claim.a, "b": claim.b, "rel": claim.rel,
            "threshold": claim.threshold, "diff": d, "lo": lo, "hi": hi, "status": status,
            "a_nonfinite": n_bad}


def verdict_of(statuses: list[str]) -> str:
    """``reproduced`` / ``not reproduced`` / ``inconclusive`` from the claims' statuses."""
    if statuses and all(s == "holds" for s in statuses):
        return "reproduced"
    if any(s == "reversed" for s in statuses):
        return "not reproduced"
    return "inconclusive"


def _curve(exp: Experiment, arm: Arm, recs: dict[str, dict], metric: str) -> dict[str, list]:
    rows = [rec["value"]["curves"][metric] if metric != "busy" else rec["value"]["busy"]
            for rec in _records(exp, arm, recs)]
    if not rows:
        return {"mean": [], "lo": [], "hi": []}
    M = np.asarray(rows, dtype=np.float64)
    mean, lo, hi = [], [], []
    for col in M.T:
        s = summarize(col)
        mean.append(s["mean"])
        lo.append(s["ci_low"])
        hi.append(s["ci_high"])
    return {"mean": mean, "lo": lo, "hi": hi}


def summarise(exp: Experiment, recs: dict[str, dict]) -> dict[str, Any]:
    """Selected arms, their table rows and curves, the claims and the verdict (JSON-able)."""
    chosen = select(exp, recs)
    claims = [judge(exp, c, chosen, recs) for c in exp.claims]
    verdict = verdict_of([c["status"] for c in claims])
    table, curves = [], {}
    for s in exp.settings:
        arms = {a.key: a for a in s.arms}
        for fam, key in chosen[s.key].items():
            arm = arms[key]
            row: dict[str, Any] = {"setting": s.label, "setting_key": s.key, "family": fam,
                                   "label": arm.label, "grid": arm.grid}
            for m in exp.metrics:
                sm = summarize(arm_values(exp, arm, recs, m))
                row[m] = [sm["mean"], sm["ci_low"], sm["ci_high"]]
            for m in exp.targets:
                t = arm_values(exp, arm, recs, m, "time_to")
                reached = int(np.sum(t < exp.horizon))
                sm = summarize(t)
                row[f"time_to_{m}"] = [sm["mean"], sm["ci_low"], sm["ci_high"], reached]
            bm = summarize(arm_values(exp, arm, recs, "busy", "mean"))
            row["busy"] = [bm["mean"], bm["ci_low"], bm["ci_high"]]
            row["n"] = int(len(_records(exp, arm, recs)))
            row["n_diverged"] = int(sum(r["status"] != "ok" for r in _records(exp, arm, recs)))
            table.append(row)
            curves[f"{s.key}|{fam}"] = {"label": arm.label, "setting": s.label,
                                        "curve": _curve(exp, arm, recs, exp.curve_metric),
                                        "busy": _curve(exp, arm, recs, "busy")}
    return {"name": exp.name, "title": exp.title, "source": exp.source, "claim": exp.claim,
            "analogue": exp.analogue, "rule": exp.rule, "horizon": exp.horizon,
            "replicates": exp.replicates, "curve_metric": exp.curve_metric,
            "curve_log": exp.curve_log, "grid": exp.grid.tolist(), "metrics": list(exp.metrics),
            "targets": dict(exp.targets), "chosen": chosen, "table": table, "curves": curves,
            "claims": claims, "verdict": verdict, "extra": dict(exp.extra)}
