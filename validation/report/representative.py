"""The representative-run PAGES: staleness histogram and concurrency curve of one run per scenario.
"""

from __future__ import annotations

import math

import numpy as np
from fedsim.validation.compare import is_exact_row
from fedsim.validation.report.layout import (
    FONT,
    SMALL,
    chars_in_axes,
    draw_wrapped,
    fmt_value,
    new_page,
    wrap_ident,
)
from fedsim.validation.report.plan import REPR_PER_PAGE, Run
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = ["representative_page"]


def _no_data(ax: Axes, why: str) -> None:
    """An empty panel: no axes, the reason wrapped to the panel's width."""
    ax.set_axis_off()
    width = chars_in_axes(ax)
    ax.text(0.5, 0.5, "\n".join(wrap_ident(why, width)), ha="center", va="center",
            transform=ax.transAxes, fontsize=SMALL,
            bbox=dict(facecolor="#f4f4f4", edgecolor="#bbbbbb", pad=4.0))


def representative_page(run: Run, th: str, scs: list[str]) -> Figure:
    fig = new_page(f"{th}: a representative run per scenario (staleness and concurrency)")
    if not scs:
        fig.text(0.03, 0.85, "No scenario recorded for this theorem.", fontsize=FONT)
        return fig
    # rows as tall as on a full page, whatever the count (a lone run is not stretched)
    gs = fig.add_gridspec(max(REPR_PER_PAGE, len(scs)), 2, left=0.08, right=0.97, top=0.87,
                          bottom=0.16, hspace=0.65, wspace=0.22)
    for r, sc in enumerate(scs):
        rep = (run.meta.get((th, sc)) or {}).get("representative")
        a1, a2 = fig.add_subplot(gs[r, 0]), fig.add_subplot(gs[r, 1])
        for ax in (a1, a2):
            ax.tick_params(labelsize=SMALL)
        if not rep:
            v = run.verdicts
            sub = v[(v["theorem"] == th) & (v["scenario"] == sc)]
            why = ("exact rows only, nothing simulated"
                   if len(sub) and is_exact_row(sub).all()
                   else "no representative run was recorded")
            for ax in (a1, a2):
                _no_data(ax, f"{sc}: {why}")
            continue
        stale = np.asarray(rep.get("staleness_steps", []), dtype=float)
        stale = stale[np.isfinite(stale)]
        if stale.size:
            top = int(stale.max())
            a1.hist(stale, bins=np.arange(-0.5, top + 1.5, max(1, math.ceil((top + 1) / 60))),
                    color="#4c72b0", edgecolor="white", linewidth=0.3)
            a1.axvline(stale.mean(), color="#c62828", lw=1, ls="--")
            a1.xaxis.set_major_locator(MaxNLocator(integer=True))  # staleness is a count
            if top < 2:  # under two steps wide the locator falls back to fractions
                a1.set_xticks(range(top + 1))
            what = f" - dashed: mean {fmt_value(stale.mean())}, max {top}"
        else:
            _no_data(a1, "no staleness recorded for this run (e.g. a synchronous or "
                     "iterate-model run has no server-step staleness log)")
            what = ""
        a1.set_title("\n".join(wrap_ident(f"{sc}: staleness t - Omega(t) (server steps)"
                                           + what, 60)), fontsize=FONT)
        a1.set_xlabel("staleness (steps)", fontsize=SMALL)
        a1.set_ylabel("count", fontsize=SMALL)
        what = ""
        t = np.asarray(rep.get("concurrency_time", []), dtype=float)
        b = np.asarray(rep.get("concurrency_busy", []), dtype=float)
        if t.size and t.size == b.size and (t.size < 2 or t.max() == t.min()):
            a2.axhline(b[-1], color="#4c72b0", lw=1.2)
            a2.set_xticks([])
            a2.set_ylim(-0.03, 1.05)
            a2.text(0.5, 0.45, f"busy fraction {fmt_value(b[-1])} from t = {fmt_value(t[0])} on "
                    "(no change recorded)", ha="center", transform=a2.transAxes, fontsize=SMALL)
        elif t.size and t.size == b.size:
            a2.step(t, b, where="post", color="#4c72b0", lw=0.8)
            cm = rep.get("concurrency_mean")
            if cm is not None:
                a2.axhline(float(cm), color="#c62828", ls="--", lw=1)
                what = f" - dashed: time-weighted mean {fmt_value(cm)}"
            a2.set_ylim(-0.03, 1.05)
        else:
            _no_data(a2, "no busy-fraction curve: this execution model records no client "
                     "busy periods (the window and iterate models count steps, not "
                     "simulated time)")
        a2.set_title("\n".join(wrap_ident(f"{sc}: clients busy (fraction) vs simulated time"
                                           + what, 60)), fontsize=FONT)
        a2.set_xlabel("simulated time", fontsize=SMALL)
        a2.set_ylabel("busy fraction", fontsize=SMALL)
    draw_wrapped(fig, 0.04, 0.09, "Left: histogram of the staleness t - Omega(t) of each server "
                 "step (in server steps) in one simulated run; dashed red: its mean (value in the "
                 "title). Right: fraction of clients busy computing as a step function of "
                 "simulated time; dashed red: time-weighted mean (value in the title).", 0.92,
                 size=SMALL, max_lines=3, color="#333333")
    return fig
