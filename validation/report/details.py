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
    PAGE_SIZE,
    SMALL,
    STATUS_SHORT,
    draw_table,
    draw_wrapped,
    fmt_horizon,
    fmt_range,
    fmt_value,
    new_page,
    row_height,
    row_lines,
    wrapped_lines,
)
from fedsim.validation.report.plan import Run, unique
from fedsim.validation.report.summary import group_verdict
from matplotlib.figure import Figure
from scipy import stats

__all__ = ["details_page", "details_parts"]


_Z_CRIT = float(stats.norm.ppf(1 - ORACLE_FAR / 2))  # the oracle test's |z| threshold


def _failure(sub: pd.DataFrame, meta: dict) -> str:
    """The count and first message of the scenario's failed replicates ("" if none)."""
    if "failure" in sub.columns:
        msgs = [str(m) for m in sub["failure"] if isinstance(m, str) and m]
        if msgs:
            return msgs[0]
    return str(meta.get("failure", "") or "")


_TOP, _BOTTOM = 0.845, 0.04      # the flow area of a details page (page fractions)
_TOP_NEXT = 0.9                   # a continuation page has no subtitle
_TITLE_H = 0.028                  # a table's title line
_GAP = 0.008
_ROW_H = 0.021                    # a one-line table row (8 pt text with its padding)
_HYP_W = [0.28, 0.06, 0.6]
_CONST_W = [0.12, 0.08, 0.08, 0.66]
_TIGHT_W = [0.11, 0.15, 0.12, 0.1, 0.11, 0.065, 0.14, 0.06, 0.075]
_TEXT_W = 0.94


def _hypothesis_table(meta: dict) -> dict:
    """Every hypothesis, failing ones first, then unknown ones (none is ever left out)."""
    hyps = sorted(meta.get("hypotheses", []) or [],
                  key=lambda hh: {False: 0, None: 1}.get(hh.get("holds"), 2))
    rows, fills = [], []
    for hyp in hyps:
        holds = hyp.get("holds")
        word = {True: "holds", False: "FAILS", None: "unknown"}.get(holds, str(holds))
        rows.append([str(hyp.get("name", "")), word, str(hyp.get("detail", ""))])
        fills.append([None, {True: FILL["holds"], False: FILL["violated"]}.get(
            holds, FILL["inconclusive"]), None])
    return dict(kind="table", title="Hypotheses (failing first, then unknown)", widths=_HYP_W,
                header=["hypothesis", "status", "detail"], rows=rows, fills=fills)


def _constant_table(meta: dict) -> dict:
    rows = [[str(c.get("name", "")), fmt_value(c.get("value"), 4), str(c.get("tag", "")),
             str(c.get("reason", ""))] for c in meta.get("constants", []) or []]
    return dict(kind="table", title="Constants (tag: EXACT, UPPER, NUMERIC, INFINITE)",
                widths=_CONST_W, header=["constant", "value", "tag", "reason"], rows=rows,
                fills=[[None] * 4 for _ in rows])


def _tightness_table(sub: pd.DataFrame, meta: dict) -> dict:
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
        trows.append([md or "-", str(s["status"].iloc[0]), f"{span} ({len(s)})",
                      fmt_range(s["tightness"]), slope, fmt_value(es), oracle, str(bad),
                      STATUS_SHORT[ov]])
        tfill.append([None] * 8 + [FILL[ov]])
    return dict(kind="table", title="Tightness (bound / MC mean) and log-log slope per mode",
                widths=_TIGHT_W, header=["mode", "bound status", "horizons (#)", "tightness",
                                         "slope +- se", "expected", "exact oracle", "failed",
                                         "overall"], rows=trows, fills=tfill)


def _texts(sub: pd.DataFrame, meta: dict) -> list[dict]:
    cap = ("Columns as on the summary page; exact oracle: z-tests of the MC mean against "
           f"the exact expectation at false-alarm rate {ORACLE_FAR:g} each; failed = "
           "replicates that raised, diverged or gave NaN/inf at the worst horizon (excluded "
           "from the mean; such a horizon is never 'holds')."
           + (" Exact rows: the measured value is the exact oracle value (nothing simulated, "
              "no CI); tightness = bound / exact." if is_exact_row(sub).any() else ""))
    steps = meta.get("step_sizes", {}) or {}
    st_txt = ", ".join(f"{k} = {fmt_value(val, 4)}" for k, val in steps.items()) or "-"
    bs = f"; bound status (theory): {meta['bound_status']}" if meta.get("bound_status") else ""
    out = [dict(kind="text", text=cap, color="#333333"),
           dict(kind="text", text=f"Step sizes: {st_txt}{bs}", color="black")]
    failure = _failure(sub, meta)
    if failure:
        out.append(dict(kind="text", text=f"Replicate failures: {failure}", color="#6a1b9a"))
    notes = meta.get("notes", []) or []
    if notes:
        out.append(dict(kind="text", text="Notes: " + " | ".join(map(str, notes)),
                        color="#333333"))
    return out


def _blocks(run: Run, th: str, sc: str) -> list[dict]:
    meta = run.meta.get((th, sc)) or {}
    v = run.verdicts
    sub = v[(v["theorem"] == th) & (v["scenario"] == sc)]
    return [_hypothesis_table(meta), _constant_table(meta), _tightness_table(sub, meta),
            *_texts(sub, meta)]


def _subtitle(meta: dict | None) -> str:
    return " ".join(x for x in ((meta or {}).get("title", ""),
                                (meta or {}).get("description", "")) if x)


def _first_top(meta: dict | None) -> float:
    """Where the flow starts on the first page: under the subtitle (at most 3 lines)."""
    n = min(3, len(wrapped_lines(_subtitle(meta), 0.94, FONT))) if _subtitle(meta) else 0
    return 0.925 - n * FONT * 1.45 / 72 / PAGE_SIZE[1] - 0.012


def _paginate(blocks: list[dict], top: float = _TOP) -> list[list[dict]]:
    """The blocks page by page: a table whose rows do not fit continues on the next page
    under its title and header again; text blocks are never split."""
    line = SMALL * 1.45 / 72 / PAGE_SIZE[1]
    pages: list[list[dict]] = [[]]
    y = top
    for b in blocks:
        if b["kind"] == "text":
            h = len(wrapped_lines(b["text"], _TEXT_W, SMALL)) * line + 0.006
            if y - h < _BOTTOM and pages[-1]:
                pages.append([])
                y = _TOP_NEXT
            pages[-1].append(b)
            y -= h
            continue
        heights = [row_height(row_lines(r, b["widths"]), row_h=_ROW_H) for r in b["rows"]]
        head = _TITLE_H + _ROW_H
        i, first = 0, True
        while True:
            n, used = 0, 0.0
            while i + n < len(heights) and y - head - used - heights[i + n] >= _BOTTOM:
                used += heights[i + n]
                n += 1
            if n == 0 and (i < len(heights) or y - head < _BOTTOM) and pages[-1]:
                pages.append([])     # not one row (or not the header) fits here
                y = _TOP_NEXT
                continue
            if n == 0 and i < len(heights):  # a row taller than a page: drawn whole anyway
                n, used = 1, heights[i]
            pages[-1].append({**b, "rows": b["rows"][i:i + n], "fills": b["fills"][i:i + n],
                              "continued": not first})
            y -= head + used + _GAP
            i, first = i + n, False
            if i >= len(heights):
                break
            pages.append([])
            y = _TOP_NEXT
    return pages


def details_parts(run: Run, th: str, sc: str) -> int:
    """How many pages the details of (``th``, ``sc``) take (:func:`details_page`)."""
    return len(_paginate(_blocks(run, th, sc), _first_top(run.meta.get((th, sc)))))


def details_page(run: Run, th: str, sc: str, part: int = 0) -> Figure:
    """Page ``part`` of the details of (``th``, ``sc``): every hypothesis and constant, the
    tightness and slope per mode, step sizes and notes, nothing cut (tables continue on the
    next page)."""
    meta = run.meta.get((th, sc))
    top = _first_top(meta)
    pages = _paginate(_blocks(run, th, sc), top)
    title = f"{th} / {sc}: hypotheses, constants, tightness and slope"
    if len(pages) > 1:
        title += f" ({part + 1}/{len(pages)})"
    y = top if part == 0 else _TOP_NEXT
    if meta is None:
        fig = new_page(title)
        fig.text(0.03, 0.9, "No metadata (meta/*.json) was recorded for this scenario.",
                 fontsize=FONT)
    else:
        fig = new_page(title, _subtitle(meta) if part == 0 else "")
    for b in pages[part]:
        if b["kind"] == "text":
            y = draw_wrapped(fig, 0.03, y, b["text"], _TEXT_W, size=SMALL, max_lines=None,
                             color=b["color"]) - 0.006
            continue
        fig.text(0.03, y - 0.004, b["title"] + (" (continued)" if b["continued"] else ""),
                 fontsize=FONT + 1, weight="bold", va="top")
        y = draw_table(fig, 0.03, y - _TITLE_H, b["widths"], b["header"], b["rows"], b["fills"],
                       row_h=_ROW_H, lines=None) - _GAP
    return fig
