"""The summary PAGE: a colour-coded table theorem x scenario x mode with the verdict counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from fedsim.validation.compare import (
    CI_LEVEL,
    CI_METHOD,
    EXACT_BOUND_RTOL,
    ORACLE_FAR,
    is_exact_row,
)
from fedsim.validation.report.layout import (
    FILL,
    FONT,
    FOOTER_TOP,
    PAGE_SIZE,
    SMALL,
    STATUS_ORDER,
    STATUS_SHORT,
    draw_table,
    draw_wrapped,
    fmt_range,
    fmt_value,
    new_page,
    wrapped_lines,
)
from fedsim.validation.report.plan import SUMMARY_ROWS, Run, unique
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = ["summary_page", "control_cell", "group_verdict"]


def group_verdict(verdicts: Sequence[str]) -> str:
    vs = set(verdicts)
    if "error" in vs:
        return "error"
    if "violated" in vs:
        return "violated"
    if vs <= {"not_applicable"}:
        return "not_applicable"
    if vs <= {"holds", "not_applicable"}:
        return "holds"
    return "inconclusive"


def _present(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and \
        str(x).strip().lower() not in ("", "false", "0", "nan", "none")


def control_cell(sub: pd.DataFrame) -> tuple[str, str | None]:
    """Text and fill of the summary's control column for one group."""
    if "expected_verdict" in sub.columns:
        exp = [str(e) for e in sub["expected_verdict"] if _present(e)]
        if exp:
            want = exp[0]
            got = sub["verdict"][[_present(e) for e in sub["expected_verdict"]]]
            ok = bool((got == want).all())
            if "control_ok" in sub.columns:
                flags = [str(f).lower() for f in sub["control_ok"] if _present(f) or
                         str(f).lower() == "false"]
                ok = ok and "false" not in flags
            return (f"{STATUS_SHORT.get(want, want)}: {'ok' if ok else 'FAILED'}",  # fits 0.11
                    FILL["holds"] if ok else FILL["violated"])
    if "control" in sub.columns:
        kinds = [str(k) for k in sub["control"] if _present(k)]
        if kinds:
            return (kinds[0] if kinds[0].lower() not in ("true", "1") else "control",
                    FILL["not_applicable"])
    return "-", None


def summary_page(run: Run, idx: int) -> Figure:
    v = run.verdicts
    counts = {k: int((v["verdict"] == k).sum()) for k in STATUS_ORDER}
    fig = new_page("Validation summary: theorems x scenarios x verdicts",
                f"{len(run.theorems)} theorem(s), {sum(len(g) for g in run.groups.values())} "
                f"(scenario, mode) group(s), {len(v)} comparison(s) (one per horizon). "
                f"Each comparison: Monte-Carlo mean with a {CI_LEVEL:.0%} {CI_METHOD} confidence "
                "interval vs the theorem's bound" + (
                    f"; {int(is_exact_row(v).sum())} rows marked 'exact': the exact oracle "
                    "value itself (nothing simulated, no CI) vs the bound."
                    if is_exact_row(v).any() else "."))
    x = 0.03
    for k in STATUS_ORDER:
        fig.add_artist(Rectangle((x, 0.862), 0.018, 0.022, transform=fig.transFigure,
                                 facecolor=FILL[k], edgecolor="#888888", linewidth=0.5))
        fig.text(x + 0.023, 0.873, f"{k.replace('_', ' ')}: {counts[k]}", fontsize=FONT,
                 va="center")
        x += 0.16
    rows, fills = [], []
    allg = [(th, sc, md) for th in run.theorems for sc, md in run.groups[th]]
    for th, sc, md in allg[idx * SUMMARY_ROWS:(idx + 1) * SUMMARY_ROWS]:
        sub = v[(v["theorem"] == th) & (v["scenario"] == sc) & (v["mode"] == md)]
        c = [int((sub["verdict"] == k).sum()) for k in STATUS_ORDER]
        overall = group_verdict(list(sub["verdict"]))
        es = sub["expected_slope"].iloc[0] if "expected_slope" in sub.columns else math.nan
        ctext, cfill = control_cell(sub)
        exact = len(sub) > 0 and bool(is_exact_row(sub).all())
        slope = "exact, no CI" if exact else f"{fmt_value(sub['slope'].iloc[0])} ({fmt_value(es)})"
        status = unique(list(sub["status"].astype(str)))[0]
        rows.append([th, sc, md or "-", status,
                     str(len(sub)), "/".join(str(n) for n in c), STATUS_SHORT[overall].upper(),
                     fmt_range(sub["tightness"]), slope,
                     ctext])
        fills.append([None] * 6 + [FILL[overall], None, None, cfill])
    widths = [0.08, 0.14, 0.08, 0.15, 0.04, 0.08, 0.07, 0.1, 0.09, 0.11]
    # names wrap, never cut: each row as tall as its tallest cell
    y = draw_table(fig, 0.03, 0.835, widths,
               ["theorem", "scenario", "mode", "bound status", "#T/K", "h/v/i/na/e",
                "overall", "tightness", "slope (exp)", "control"], rows, fills,
               lines=None)
    note = (f"#T/K: number of horizons; h/v/i/na/e: how many of them hold, are violated, "
            f"inconclusive, not applicable, error (every replicate failed; the details page "
            f"gives the first failure). "
            f"Verdict per horizon: holds = CI upper end <= bound; violated = CI lower end > "
            f"bound; inconclusive = otherwise (or a replicate diverged / gave NaN); n/a = not "
            f"applicable (a hypothesis fails, or the status is not a certified bound, e.g. "
            f"NOT_APPLICABLE, ASYMPTOTIC_LEADING_TERMS, RATE_SHAPE_ONLY). Overall: violated "
            f"if any horizon is violated, holds if all applicable horizons hold. Tightness = "
            f"bound / MC mean (range over horizons). Slope = least-squares log-log slope of "
            f"the MC mean vs T or K; in brackets the theorem's order. CI: {CI_METHOD}, level "
            f"{CI_LEVEL}; oracle z-tests at false-alarm rate {ORACLE_FAR:g}. Control: for a "
            f"deliberate negative control, the verdict it must get and whether it got it. "
            f"'exact, no CI' (slope column): the measured value is an exact oracle value (a "
            f"counterexample no simulation reaches), no CI: holds = exact <= bound, violated = "
            f"exact > bound, beyond a rounding band of {EXACT_BOUND_RTOL:g} x |bound|; "
            f"tightness = bound / exact.")
    note, size = _fitting_note(note, y - 0.03, idx)
    draw_wrapped(fig, 0.03, y - 0.03, note, 0.94, size=size, max_lines=None, color="#333333")
    return fig


def _fitting_note(note: str, y: float, idx: int) -> tuple[str, float]:
    """The note under the table and its font size, kept clear of the footer: the full note
    at the largest size from SMALL down to 6 pt that fits between ``y`` and the footer; on a
    later summary page where none fits, a pointer to the first page's note."""
    room = y - FOOTER_TOP - 0.015
    size = float(SMALL)
    while size >= 6:
        if len(wrapped_lines(note, 0.94, size)) * size * 1.45 / 72 / PAGE_SIZE[1] <= room:
            return note, size
        size -= 0.5
    if idx > 0:
        return ("Columns, verdict rules, tightness and control: see the note under the table "
                "on the first summary page."), float(SMALL)
    return note, 6.0
