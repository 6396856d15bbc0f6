"""The plot PAGES of one theorem: log-log panels of the Monte-Carlo mean with its CI, the bound,
the exact oracle and the theorem's order vs T or K.
"""

from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from fedsim.validation.compare import CI_LEVEL, CI_METHOD, is_exact_row
from fedsim.validation.report.layout import (
    FONT,
    INK,
    SMALL,
    chars_fitting,
    chars_in_axes,
    draw_wrapped,
    fmt_horizon,
    fmt_range,
    fmt_value,
    new_page,
    wrap_ident,
)
from fedsim.validation.report.plan import Run
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

__all__ = ["plots_page", "meta_for", "draw_panel", "growing_term"]


_CERTIFIED = {"CERTIFIED_PAPER", "CERTIFIED_CORRECTED", "PROOF_LEVEL", "VACUOUS"}


def meta_for(run: Run, th: str) -> dict:
    """The metadata of the theorem's first scenario that has one, plus a shared ``title``:
    the common beginning of its scenarios' titles (cut at a word boundary)."""
    metas = [run.meta[(th, sc)] for sc in run.scenarios.get(th, []) if (th, sc) in run.meta]
    if not metas:
        return {}
    titles = [str(m.get("title", "")) for m in metas]
    common = os.path.commonprefix(titles)
    whole_word = all(len(t) == len(common) or not t[len(common)].isalnum() for t in titles)
    if len(set(titles)) > 1 and not whole_word:
        common = common[: max(common.rfind(","), common.rfind(" "), 0)]
    common = common.rstrip(" ,;:-")
    return {**metas[0], "title": common if len(common) >= 4 else titles[0]}


def plots_page(run: Run, th: str, groups: list[tuple[str, str]]) -> Figure:
    m0 = meta_for(run, th)
    fig = new_page(f"{th}: measured vs bound" + (f"  -  {m0['title']}" if m0.get("title") else ""),
                   f"Horizontal axis: {m0.get('x_label', 'T')}. One panel per (scenario, mode); "
                   "the scenarios' hypotheses, constants and step sizes follow on the next pages.")
    v = run.verdicts
    ncol, nrow = 3, 2
    # left margin and gaps leave room for two-line y labels beside 10^-9-wide tick labels
    gs = fig.add_gridspec(nrow, ncol, left=0.1, right=0.98, top=0.78, bottom=0.2,
                          hspace=0.62, wspace=0.42)
    for k, (sc, md) in enumerate(groups):
        ax = fig.add_subplot(gs[k // ncol, k % ncol])
        meta = run.meta.get((th, sc), {})
        sub = v[(v["theorem"] == th) & (v["scenario"] == sc) & (v["mode"] == md)]
        sub = sub.sort_values("horizon")
        draw_panel(ax, sub, meta)
        status = str(sub["status"].iloc[0]) if len(sub) else "-"
        es = sub["expected_slope"].iloc[0] if "expected_slope" in sub.columns and len(sub) \
            else meta.get("expected_slope", math.nan)
        width = chars_fitting(0.24, SMALL)
        sl = fmt_value(sub["slope"].iloc[0] if len(sub) else None)
        exact = len(sub) > 0 and bool(is_exact_row(sub).all())
        last = (f"EXACT value, no CI; bound/exact {fmt_range(sub['tightness'])}" if exact else
                f"slope {sl} (order {fmt_value(es, 2)}), bound/mean {fmt_range(sub['tightness'])}")
        title = [*wrap_ident(f"{sc} [{md}]" if md else sc, width), *wrap_ident(status, width),
                 *wrap_ident(last, width)]           # wrapped whole, never cut
        ax.set_title("\n".join(title), fontsize=SMALL)
    for k in range(len(groups), nrow * ncol):
        fig.add_subplot(gs[k // ncol, k % ncol]).set_axis_off()
    fig.legend(handles=_legend_handles(), loc="upper center", ncol=8, fontsize=SMALL,
               bbox_to_anchor=(0.5, 0.9), frameon=False, handletextpad=0.3, columnspacing=1.0)
    cap = (f"Dots: Monte-Carlo mean over the replicates with {CI_LEVEL:.0%} {CI_METHOD} CI "
           "error bars (a lower end <= 0 is drawn to the panel floor), coloured by the verdict at "
           "that horizon. Blue line: the theorem's bound at the scenario's constants (solid: "
           "certified; dashed: not a certified bound). Black crosses: exact expectation (oracle). "
           "Dotted grey: the theorem's order, anchored at the first MC mean. Title lines: "
           "scenario [mode]; bound status; fitted log-log slope (expected order), bound / mean."
           + (" Squares: an exact oracle value (nothing simulated, no CI)."
              if is_exact_row(v).any() else ""))
    draw_wrapped(fig, 0.04, 0.125, cap, 0.92, size=SMALL, max_lines=5, color="#333333")
    return fig


def growing_term(horizons: np.ndarray, meta: dict, mode: str) -> str:
    """What makes a bound grow from the first to the last of ``horizons``, read from the
    bound's own :attr:`~fedsim.theory.result.BoundResult.terms` (the meta's ``bound_terms``
    of ``mode``: horizons, bound and terms, written by the suite): for a sum of the terms,
    the summand that rises most; for their minimum (maximum), the term that is the bound at
    the last horizon; else the term with the largest relative rise, said to be no sum.
    ``""`` when the meta carries no terms at these horizons."""
    entry = (meta.get("bound_terms") or {}).get(mode) or {}
    at = {float(x): i for i, x in enumerate(entry.get("horizons", []))}
    idx = [at.get(float(x)) for x in (horizons[0], horizons[-1])]
    terms = {k: np.asarray(v, dtype=np.float64) for k, v in (entry.get("terms") or {}).items()}
    if None in idx or not terms:
        return ""
    ends = {k: (float(v[idx[0]]), float(v[idx[1]])) for k, v in terms.items()}
    rise = {k: (b - a, a, b) for k, (a, b) in ends.items()
            if math.isfinite(a) and math.isfinite(b) and b > a}
    bound = np.asarray(entry.get("bound", []), dtype=np.float64)
    stack = np.vstack([v[idx] for v in terms.values()])
    how, name = "", ""
    if bound.size > max(idx):
        want = bound[idx]
        for label, comb in (("sum", stack.sum(axis=0)), ("min", stack.min(axis=0)),
                            ("max", stack.max(axis=0))):
            if np.allclose(comb, want, rtol=1e-9, atol=0.0):
                how = label
                break
    if how in ("min", "max"):
        name = list(terms)[int(np.argmin(np.abs(stack[:, 1] - bound[idx[1]])))]
        a, b = ends[name]
        return (f"term {name} ({how} of {', '.join(terms)}): {fmt_value(a)} -> "
                f"{fmt_value(b)}")
    if not rise:
        return "no single term rises (their combination does; terms on the details page)"
    if how == "sum":
        name = max(rise, key=lambda k: rise[k][0])
    else:   # not a sum of its terms: the largest relative rise
        name = max(rise, key=lambda k: rise[k][2] / rise[k][1] if rise[k][1] > 0 else math.inf)
    others = f", {len(rise) - 1} other(s) rise less" if len(rise) > 1 and how == "sum" else ""
    kind = "" if how == "sum" else " (the bound is no sum of its terms)"
    return (f"term {name}{kind}: {fmt_value(rise[name][1])} -> {fmt_value(rise[name][2])}"
            f"{others}")


def _note_growth(ax: plt.Axes, h: np.ndarray, bound: np.ndarray, meta: dict, xl: str,
                 mode: str) -> bool:
    """A bound that grows with the horizon says so and names the term that grows
    (:func:`growing_term`); True when the note was written (at the top of the panel)."""
    if h.size < 2 or not bound[-1] > 1.05 * bound[0]:
        return False
    what = growing_term(h, meta, mode) or "terms: details page"
    width = chars_in_axes(ax)
    ax.text(0.02, 0.97, "\n".join(wrap_ident(f"bound grows with {xl}: {what}", width)),
            transform=ax.transAxes, fontsize=SMALL, color="#1f5fbf", va="top",
            bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1.0))
    return True


def _legend_handles() -> list[Line2D]:
    dot = dict(ls="none", marker="o", ms=5)
    return [Line2D([], [], color=INK["holds"], label="MC mean, CI: holds", **dot),
            Line2D([], [], color=INK["violated"], label="violated", **dot),
            Line2D([], [], color=INK["inconclusive"], label="inconclusive", **dot),
            Line2D([], [], color=INK["not_applicable"], label="not applicable", **dot),
            Line2D([], [], color="#1f5fbf", lw=1.5, marker="D", ms=3, label="bound (certified)"),
            Line2D([], [], color="#1f5fbf", lw=1.5, ls="--", marker="D", ms=3,
                   label="bound (not certified)"),
            Line2D([], [], color="black", ls="none", marker="x", label="exact oracle"),
            Line2D([], [], color="#888888", ls=":", lw=1.2, label="theorem's order")]


def draw_panel(ax: plt.Axes, sub: pd.DataFrame, meta: dict) -> None:
    """One (scenario, mode) panel: MC means with CIs, the bound, the exact oracle, the
    order (the plot pages and the --latex figures)."""
    ax.tick_params(labelsize=SMALL)
    xl = meta.get("x_label", "T")
    ax.set_xlabel(xl, fontsize=FONT)
    ax.set_ylabel("\n".join(wrap_ident(meta.get("quantity", "measured quantity"), 34)),
                  fontsize=SMALL)
    h = sub["horizon"].to_numpy(float)
    mean = sub["mean"].to_numpy(float)
    lo, hi = sub["ci_low"].to_numpy(float), sub["ci_high"].to_numpy(float)
    ok = np.isfinite(mean) & (mean > 0) & (h > 0)
    if not ok.any():
        ax.text(0.5, 0.5, "no positive finite MC mean to plot", ha="center", va="center",
                transform=ax.transAxes, fontsize=SMALL)
        return
    ax.set_xscale("log")
    ax.set_yscale("log")
    hmin, hmax = float(h[ok].min()), float(h[ok].max())
    pad = 1.6 if hmin < hmax else 3.0  # a single horizon still gets a readable axis
    ax.set_xlim(hmin / pad, hmax * pad)
    hs = np.unique(h[ok])
    ax.xaxis.set_minor_formatter(NullFormatter())
    if hs.size <= 6:  # label the simulated horizons themselves
        ax.set_xticks(hs, [fmt_horizon(x) for x in hs])
    positive = np.concatenate([mean[ok], hi[ok & np.isfinite(hi) & (hi > 0)]])
    bound = sub["bound"].to_numpy(float)
    exact = sub["exact"].to_numpy(float)
    for arr in (bound, exact):
        good = np.isfinite(arr) & (arr > 0)
        positive = np.concatenate([positive, arr[good]])
    top = positive.max() * 2.0
    floor = positive.min() / 2.0
    lo_c = np.where(np.isfinite(lo) & (lo > floor), lo, floor)
    hi_c = np.where(np.isfinite(hi), hi, mean)
    yerr = np.vstack([mean - lo_c, hi_c - mean])[:, ok]
    ax.errorbar(h[ok], mean[ok], yerr=np.clip(yerr, 0, None), fmt="none", ecolor="#555555",
                elinewidth=0.9, capsize=2.5, zorder=2)
    colours = [INK.get(str(x), "#000000") for x in sub["verdict"].to_numpy()[ok]]
    ax.scatter(h[ok], mean[ok], c=colours, s=22, zorder=3,
               marker="s" if bool(is_exact_row(sub).all()) else "o")
    status = str(sub["status"].iloc[0])
    noted = False
    gb = np.isfinite(bound) & (bound > 0)
    if gb.any() and hs.size == 1:  # one horizon: the CI as an interval bar, the bound a level
        i = int(np.flatnonzero(ok)[0])
        ax.vlines(h[i], lo_c[i], hi_c[i], color="#9aa9c9", lw=10, alpha=0.6, zorder=1)
        ax.axhline(bound[gb][0], color="#1f5fbf", lw=1.5,
                   ls="-" if status in _CERTIFIED else "--", zorder=1)
        ax.annotate(f"bound {fmt_value(bound[gb][0])}", (0.02, bound[gb][0]),
                    xycoords=("axes fraction", "data"), fontsize=SMALL, color="#1f5fbf",
                    va="bottom")
        word = "exact" if bool(is_exact_row(sub).all()) else "MC mean"
        ax.annotate(f"{word} {fmt_value(mean[i])}", (h[i], mean[i]), xytext=(8, 0),
                    textcoords="offset points", fontsize=SMALL, va="center")
    elif gb.any():
        ax.plot(h[gb], bound[gb], color="#1f5fbf", lw=1.5, ls="-" if status in _CERTIFIED
                else "--", marker="D", ms=3, zorder=1)
        mode = str(sub["mode"].iloc[0]) if "mode" in sub.columns else ""
        noted = _note_growth(ax, h[gb], bound[gb], meta, xl, mode)
    nonpos = np.isfinite(bound) & (bound <= 0)
    if nonpos.any():  # not drawable on a log axis: a marker on the floor with its value
        ax.scatter(h[nonpos], np.full(int(nonpos.sum()), floor * 1.15), marker="v",
                   color="#1f5fbf", s=36, zorder=5)
        txt = ("bound <= 0 (" + ", ".join(fmt_value(b) for b in bound[nonpos][:3])
               + "): the triangles on the floor")
        ax.text(0.02, 0.1, "\n".join(wrap_ident(txt, 34)), transform=ax.transAxes,
                fontsize=SMALL, color="#1f5fbf", va="bottom")
    if np.isinf(bound).any():
        where = "every horizon" if np.isinf(bound).all() else "some horizon"
        ax.text(0.02, 0.02, "\n".join(wrap_ident(f"bound = +inf at {where} (why: the "
                                                  "details page)", chars_in_axes(ax))),
                transform=ax.transAxes, fontsize=SMALL, color="#1f5fbf")
    ge = np.isfinite(exact) & (exact > 0)
    if ge.any():
        ax.plot(h[ge], exact[ge], ls="none", marker="x", color="black", ms=6, zorder=4)
    es = sub["expected_slope"].iloc[0] if "expected_slope" in sub.columns else math.nan
    if not math.isfinite(float(es)):
        es = meta.get("expected_slope", math.nan)
    es = float(es) if es is not None else math.nan
    if math.isfinite(es):
        i0 = int(np.flatnonzero(ok)[0])
        hh = np.array([h[ok].min(), h[ok].max()])
        ax.plot(hh, mean[i0] * (hh / h[i0]) ** es, ls=":", color="#888888", lw=1.2)
    if noted:  # the note takes the top of the panel: the data keep the lower 70 %
        top = floor * (top / floor) ** (1 / 0.7)
    ax.set_ylim(floor, top)
    if top / floor > 100.0:  # several decades: major labels suffice
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", lw=0.3, color="#dddddd")
