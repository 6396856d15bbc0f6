"""The details PAGE of one (theorem, scenario): hypotheses, tagged constants, step sizes,
tightness and slope per mode, oracle z-tests and notes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from fedsim.validation.compare import ORACLE_FAR, is_exact_row
from fedsim.validation.report.layout import (
    FILL,
    FONT,
    SMALL,
    STATUS_SHORT,
    chars_fitting,
    draw_table,
    draw_wrapped,
    fmt_horizon,
    fmt_range,
    fmt_value,
    new_page,
    shorten_middle,
)
from fedsim.validation.report.plan import Run, unique
from fedsim.validation.report.summary import group_verdict
from matplotlib.figure import Figure
from scipy import stats

__all__ = ["details_page"]


_HYP_ROWS = 8  # hypothesis rows on a details page (failing ones first when more)
_Z_CRIT = float(stats.norm.ppf(1 - ORACLE_FAR / 2))  # the oracle test's |z| threshold


def _failure(sub: pd.DataFrame, meta: dict) -> str:
    """The count and first message of the scenario's failed replicates ("" if none)."""
    if "failure" in sub.columns:
        msgs = [str(m) for m in sub["failure"] if isinstance(m, str) and m]
        if msgs:
            return msgs[0]
    return str(meta.get("failure", "") or "")


def details_page(run: Run, th: str, sc: str) -> Figure:
    meta = run.meta.get((th, sc))
    title = f"{th} / {sc}: hypotheses, constants, tightness and slope"
    if meta is None:
        fig = new_page(title)
        fig.text(0.03, 0.9, "No metadata (meta/*.json) was recorded for this scenario.",
                 fontsize=FONT)
        meta = {}
    else:
        fig = new_page(title, " ".join(x for x in (meta.get("title", ""),
                                                 meta.get("description", "")) if x))
    hyps = list(meta.get("hypotheses", []) or [])
    if len(hyps) > _HYP_ROWS:  # what does not fit must not be a failing hypothesis
        hyps.sort(key=lambda hh: {False: 0, None: 1}.get(hh.get("holds"), 2))
    hrows, hfill = [], []
    for hyp in hyps:
        holds = hyp.get("holds")
        word = {True: "holds", False: "FAILS", None: "unknown"}.get(holds, str(holds))
        hrows.append([str(hyp.get("name", "")), word, str(hyp.get("detail", ""))])
        hfill.append([None, {True: FILL["holds"], False: FILL["violated"]}.get(holds,
                                                                               FILL["inconclusive"]),
                      None])
    fig.text(0.03, 0.84, "Hypotheses", fontsize=FONT + 1, weight="bold")
    draw_table(fig, 0.03, 0.83, [0.15, 0.06, 0.35], ["hypothesis", "status", "detail"], hrows,
           hfill, max_rows=_HYP_ROWS, lines=2)
    crows = [[str(c.get("name", "")), fmt_value(c.get("value"), 4), str(c.get("tag", "")),
              str(c.get("reason", ""))] for c in meta.get("constants", []) or []]
    fig.text(0.6, 0.84, "Constants (tag: EXACT, UPPER, NUMERIC, INFINITE)", fontsize=FONT + 1,
             weight="bold")
    draw_table(fig, 0.6, 0.83, [0.07, 0.065, 0.065, 0.17], ["constant", "value", "tag", "reason"],
           crows, max_rows=14)
    v = run.verdicts
    sub = v[(v["theorem"] == th) & (v["scenario"] == sc)]
    trows, tfill = [], []
    for md in unique(list(sub["mode"])):
        s = sub[sub["mode"] == md]
        es = s["expected_slope"].iloc[0] if "expected_slope" in s.columns else \
            meta.get("expected_slope")
        se = s["slope_stderr"].iloc[0] if "slope_stderr" in s.columns else math.nan
        ov = group_verdict(list(s["verdict"]))
        ex = s["exact"].to_numpy(float)
        if len(s) and is_exact_row(s).all():
            oracle = "exact: no MC, no CI"
        elif np.isfinite(ex).any() and "oracle_z" in s.columns:
            z = s["oracle_z"].to_numpy(float)[np.isfinite(ex)]
            npass = int(np.sum(np.abs(z) <= _Z_CRIT))
            oracle = f"{npass}/{z.size} pass, max|z| {fmt_value(np.nanmax(np.abs(z)), 2)}"
        else:
            oracle = "no oracle"
        bad_rows = np.zeros(len(s))
        for col in ("n_nonfinite", "n_failed"):
            if col in s.columns:
                bad_rows = bad_rows + s[col].fillna(0).to_numpy(float)
        bad = int(bad_rows.max()) if len(s) else 0
        span = f"{fmt_horizon(s['horizon'].min())} - {fmt_horizon(s['horizon'].max())}"
        slope = f"{fmt_value(s['slope'].iloc[0])} +- {fmt_value(se, 2)}"
        trows.append([shorten_middle(md, chars_fitting(0.11) - 1) or "-", str(s["status"].iloc[0]),
                      f"{span} ({len(s)})", fmt_range(s["tightness"]), slope,
                      fmt_value(es), oracle, str(bad), STATUS_SHORT[ov]])
        tfill.append([None] * 8 + [FILL[ov]])
    fig.text(0.03, 0.395, "Tightness (bound / MC mean) and log-log slope per mode",
             fontsize=FONT + 1, weight="bold")
    draw_table(fig, 0.03, 0.385, [0.11, 0.15, 0.12, 0.1, 0.11, 0.065, 0.14, 0.06, 0.07],
           ["mode", "bound status", "horizons (#)", "tightness", "slope +- se", "expected",
            "exact oracle", "failed", "overall"], trows, tfill, max_rows=5)
    draw_wrapped(fig, 0.03, 0.385 - 0.027 * (min(len(trows), 5) + 1) - 0.01,
          f"tightness = bound / MC mean (range over horizons); slope = log-log least squares "
          f"+- its standard error; exact oracle: z-tests of the MC mean against the exact "
          f"expectation at false-alarm rate {ORACLE_FAR:g} each; failed = replicates that "
          f"raised, diverged or gave NaN/inf at the worst horizon (excluded from the mean; a "
          f"horizon with a non-finite replicate is never 'holds')."
          + (" Exact rows: the measured value is the exact oracle value (nothing simulated, "
             "no CI); tightness = bound / exact." if is_exact_row(sub).any() else ""),
          0.94, size=SMALL, max_lines=3, color="#333333")
    steps = meta.get("step_sizes", {}) or {}
    st_txt = ", ".join(f"{k} = {fmt_value(val, 4)}" for k, val in steps.items()) or "-"
    y = draw_wrapped(fig, 0.03, 0.2, f"Step sizes: {st_txt}", 0.94, size=SMALL, max_lines=2)
    bs = meta.get("bound_status")
    if bs:
        y = draw_wrapped(fig, 0.03, y - 0.005, f"Bound status (theory): {bs}", 0.94, size=SMALL,
                  max_lines=1)
    failure = _failure(sub, meta)
    if failure:
        y = draw_wrapped(fig, 0.03, y - 0.005, f"Replicate failures: {failure}", 0.94, size=SMALL,
                  max_lines=2, color="#6a1b9a")
    notes = meta.get("notes", []) or []
    if notes:
        draw_wrapped(fig, 0.03, y - 0.005, "Notes: " + " | ".join(map(str, notes)), 0.94,
              size=SMALL, max_lines=4, color="#333333")
    return fig
