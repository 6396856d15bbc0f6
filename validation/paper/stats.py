"""From replicate records to the measured table, the claims' intervals and the verdict.

The suite is a two-stage design (:mod:`fedsim.validation.paper.common`):

* :func:`select` -- stage 1, the hyper-parameter rule: per setting and family, the grid
  arm with the best mean ``exp.select_metric`` over the *tuning* replicates (seeds
  disjoint from the measurement's), among the arms where no tuning replicate diverged;
* :func:`judge` -- stage 2, a claim's paired 99% interval over the *measurement*
  replicates of the selected arms (:func:`fedsim.validation.paper.intervals.paired_ci`; the
  one-sample interval for a threshold claim) and its status ``holds`` (interval on the
  claimed side), ``reversed`` (entirely on the other side) or ``unresolved``;
* :func:`verdict_of` -- the experiment's verdict: ``reproduced`` iff every claim holds,
  ``not reproduced`` iff one is reversed, ``inconclusive`` otherwise;
* :func:`summarise` -- everything the report page needs, as plain JSON-able data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.validation.compare import summarize
from fedsim.validation.paper.common import Arm, Claim, Contrast, Experiment, task_id
from fedsim.validation.paper.intervals import claim_status, one_sample_ci, paired_ci

__all__ = ["VERDICTS", "select", "judge", "judge_contrast", "summarise", "arm_values", "verdict_of",
           "selection_table", "support", "edge_picks"]

VERDICTS = ("reproduced", "not reproduced", "inconclusive")


def _records(exp: Experiment, arm: Arm, recs: dict[str, dict],
             stage: str = "measure") -> list[dict | None]:
    """The arm's records of ``stage``, one slot per replicate (None if missing)."""
    R = exp.tune_replicates if stage == "tune" else exp.replicates
    out: list[dict | None] = []
    for r in range(R):
        rec = recs.get(task_id(exp, arm, r, stage))
        out.append(rec if rec is not None and rec.get("value") is not None else None)
    return out


def arm_values(exp: Experiment, arm: Arm, recs: dict[str, dict], metric: str,
               stat: str = "final", stage: str = "measure") -> np.ndarray:
    """One value per replicate (NaN where missing): the final metric (NaN if diverged), the
    time to its target capped at the horizon, or the mean busy fraction
    (``stat = "mean"``)."""
    vals = []
    for rec in _records(exp, arm, recs, stage):
        if rec is None:
            vals.append(math.nan)
            continue
        v = rec["value"]
        if stat == "final":
            x = v["final"].get(metric, math.nan) if rec["status"] == "ok" else math.nan
        elif stat == "time_to":
            x = min(float(v["time_to"].get(metric, math.inf)), exp.horizon)
        else:
            x = float(v["concurrency_mean"])
        vals.append(float(x))
    return np.asarray(vals, dtype=np.float64)


def _families(setting) -> dict[str, list[Arm]]:
    fams: dict[str, list[Arm]] = {}
    for a in setting.arms:
        fams.setdefault(a.family, []).append(a)
    return fams


def selection_table(exp: Experiment, recs: dict[str, dict]) -> dict[str, dict[str, list]]:
    """``setting -> family -> [{key, grid, mean, finite, chosen}]``: stage 1 as measured."""
    chosen = select(exp, recs)
    out: dict[str, dict[str, list]] = {}
    for s in exp.settings:
        out[s.key] = {}
        for fam, arms in _families(s).items():
            if len(arms) == 1:
                continue
            out[s.key][fam] = []
            grids = [a.grid for a in arms if a.grid is not None]
            for a in arms:
                v = arm_values(exp, a, recs, exp.select_metric, stage="tune")
                edge = None
                if a.grid is not None and len(set(grids)) > 1:
                    edge = ("top" if a.grid == max(grids) else
                            "bottom" if a.grid == min(grids) else None)
                out[s.key][fam].append({
                    "key": a.key, "grid": a.grid, "label": a.label,
                    "mean": float(np.mean(v)) if np.all(np.isfinite(v)) else math.nan,
                    "finite": int(np.sum(np.isfinite(v))), "of": int(v.size),
                    "chosen": a.key == chosen[s.key][fam], "edge": edge})
    return out


def edge_picks(selection: dict[str, dict[str, list]]) -> list[dict[str, Any]]:
    """The stage-1 picks that sit at an end of their family's grid (``edge`` "top" or
    "bottom"), from :func:`selection_table`: a grid that may not contain the best step.
    Issue 22's design extended the grids once where the previous picks sat at the top; a
    pick at the new edge is reported, never answered by extending again."""
    return [{"setting": st, "family": fam, "grid": c["grid"], "edge": c["edge"]}
            for st, fams in selection.items() for fam, cands in fams.items()
            for c in cands if c["chosen"] and c.get("edge")]


def select(exp: Experiment, recs: dict[str, dict]) -> dict[str, dict[str, str]]:
    """``setting -> family -> arm key`` chosen by the stage-1 rule (module docstring); a
    family whose every arm diverged keeps its first arm (reported as such on the page)."""
    sign = -1.0 if exp.select_max else 1.0
    out: dict[str, dict[str, str]] = {}
    for s in exp.settings:
        out[s.key] = {}
        for fam, arms in _families(s).items():
            best, best_v = arms[0].key, math.inf
            if len(arms) > 1:
                for a in arms:
                    v = arm_values(exp, a, recs, exp.select_metric, stage="tune")
                    if v.size == 0 or not np.all(np.isfinite(v)):
                        continue
                    score = sign * float(np.mean(v))
                    if score < best_v:
                        best, best_v = a.key, score
            out[s.key][fam] = best
    return out


def _censored(exp: Experiment, x: np.ndarray, stat: str) -> bool:
    return stat == "time_to" and bool(np.any(x[np.isfinite(x)] >= exp.horizon))


def judge_contrast(exp: Experiment, c: Contrast, chosen: dict[str, dict[str, str]],
                   recs: dict[str, dict]) -> dict[str, Any]:
    """A :class:`Contrast`: per replicate ``r`` the value ``sum_j c_j x_{j,r}`` of the
    selected arms (they share replicate r's streams, so the values are i.i.d. over r),
    then the 99% Student-t interval of its mean and its status."""
    setting = next(s for s in exp.settings if s.key == c.setting)
    arms = {a.key: a for a in setting.arms}
    cols = [float(k) * arm_values(exp, arms[chosen[c.setting][fam]], recs, c.metric)
            for k, fam in c.terms]
    x = np.sum(cols, axis=0)  # NaN where any arm's replicate is missing or diverged
    d, lo, hi = one_sample_ci(x)
    return {"setting": c.setting, "text": c.text, "metric": c.metric, "stat": c.stat,
            "a": c.terms[0][1], "b": None, "rel": c.rel, "factor": None,
            "threshold": 0.0, "terms": [[float(k), f] for k, f in c.terms], "diff": d,
            "lo": lo, "hi": hi, "status": claim_status(c.rel, lo, hi),
            "pairs": int(np.sum(np.isfinite(x))), "a_nonfinite": int(np.sum(~np.isfinite(x)))}


def judge(exp: Experiment, claim: Claim | Contrast, chosen: dict[str, dict[str, str]],
          recs: dict[str, dict]) -> dict[str, Any]:
    """One claim's measured difference, paired interval and status (module docstring)."""
    if isinstance(claim, Contrast):
        return judge_contrast(exp, claim, chosen, recs)
    setting = next(s for s in exp.settings if s.key == claim.setting)
    arms = {a.key: a for a in setting.arms}
    a = arm_values(exp, arms[chosen[claim.setting][claim.a]], recs, claim.metric, claim.stat)
    if claim.b is not None:
        b = arm_values(exp, arms[chosen[claim.setting][claim.b]], recs, claim.metric,
                       claim.stat)
        d, lo, hi, pairs = paired_ci(a, b, claim.factor)
        ok = np.isfinite(a) & np.isfinite(b)
        b_cens = _censored(exp, b[ok], claim.stat)
        a_used = a[ok]
    else:
        m, lo0, hi0 = one_sample_ci(a)
        d, lo, hi = m - claim.threshold, lo0 - claim.threshold, hi0 - claim.threshold
        pairs, b_cens, a_used = int(np.sum(np.isfinite(a))), False, a
    status = claim_status(claim.rel, lo, hi, a_censored=_censored(exp, a_used, claim.stat),
                          b_censored=b_cens)
    return {"setting": claim.setting, "text": claim.text, "metric": claim.metric,
            "stat": claim.stat, "a": claim.a, "b": claim.b, "rel": claim.rel,
            "factor": claim.factor, "threshold": claim.threshold, "diff": d, "lo": lo,
            "hi": hi, "status": status, "pairs": pairs,
            "a_nonfinite": int(np.sum(~np.isfinite(a)))}


def verdict_of(statuses: list[str]) -> str:
    """``reproduced`` / ``not reproduced`` / ``inconclusive`` from the claims' statuses."""
    if statuses and all(s == "holds" for s in statuses):
        return "reproduced"
    if any(s == "reversed" for s in statuses):
        return "not reproduced"
    return "inconclusive"


def _curve(exp: Experiment, arm: Arm, recs: dict[str, dict], metric: str) -> dict[str, list]:
    rows = [rec["value"]["curves"][metric] if metric != "busy" else rec["value"]["busy"]
            for rec in _records(exp, arm, recs) if rec is not None]
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


def support(metric: str) -> tuple[float, float]:
    """The range a metric's values live in: accuracies and busy fractions in [0, 1],
    losses and squared distances in [0, inf); anything else unbounded."""
    if "acc" in metric or metric == "busy":
        return 0.0, 1.0
    if "loss" in metric or metric in ("dist_sq", "grad_sq"):
        return 0.0, math.inf
    return -math.inf, math.inf


def _mean_ci(x: np.ndarray, metric: str) -> list[float]:
    """``[mean, lo, hi]``: the Student-t interval of the mean intersected with the metric's
    support (the true mean lies in the support, so the intersection keeps the coverage)."""
    sm = summarize(x)
    lo_s, hi_s = support(metric)
    return [sm["mean"], min(max(sm["ci_low"], lo_s), hi_s), max(min(sm["ci_high"], hi_s), lo_s)]


def _row(exp: Experiment, s, fam: str, arm: Arm, recs: dict[str, dict]) -> dict[str, Any]:
    row: dict[str, Any] = {"setting": s.label, "setting_key": s.key, "family": fam,
                           "label": arm.label, "grid": arm.grid}
    for m in exp.metrics:
        row[m] = _mean_ci(arm_values(exp, arm, recs, m), m)
    for m in exp.targets:
        t = arm_values(exp, arm, recs, m, "time_to")
        sm = summarize(t)  # a time lies in [0, horizon] (capped): cut the interval to it
        row[f"time_to_{m}"] = [sm["mean"], min(max(sm["ci_low"], 0.0), exp.horizon),
                               max(min(sm["ci_high"], exp.horizon), 0.0),
                               int(np.sum(t < exp.horizon))]
    row["busy"] = _mean_ci(arm_values(exp, arm, recs, "busy", "mean"), "busy")
    got = [r for r in _records(exp, arm, recs) if r is not None]
    row["n"] = len(got)
    row["n_diverged"] = int(sum(r["status"] != "ok" for r in got))
    return row


def summarise(exp: Experiment, recs: dict[str, dict]) -> dict[str, Any]:
    """Selected arms, their table rows and curves, the claims and the verdict (JSON-able)."""
    chosen = select(exp, recs)
    selection = selection_table(exp, recs)
    claims = [judge(exp, c, chosen, recs) for c in exp.claims]
    verdict = verdict_of([c["status"] for c in claims])
    table, curves = [], {}
    for s in exp.settings:
        arms = {a.key: a for a in s.arms}
        for fam, key in chosen[s.key].items():
            arm = arms[key]
            table.append(_row(exp, s, fam, arm, recs))
            curves[f"{s.key}|{fam}"] = {"label": arm.label, "setting": s.label,
                                        "curve": _curve(exp, arm, recs, exp.curve_metric),
                                        "busy": _curve(exp, arm, recs, "busy")}
    return {"name": exp.name, "title": exp.title, "source": exp.source, "claim": exp.claim,
            "analogue": exp.analogue, "rule": exp.rule, "horizon": exp.horizon,
            "replicates": exp.replicates, "tune_replicates": exp.tune_replicates,
            "select_metric": exp.select_metric, "select_max": exp.select_max,
            "curve_metric": exp.curve_metric, "curve_log": exp.curve_log,
            "grid": exp.grid.tolist(), "metrics": list(exp.metrics),
            "targets": dict(exp.targets), "chosen": chosen,
            "selection": selection, "edge_picks": edge_picks(selection), "table": table,
            "curves": curves,
            "claims": claims, "verdict": verdict, "extra": dict(exp.extra)}
