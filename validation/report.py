"""The validation report: a PDF built with matplotlib alone (issue 6 item 6).

Input is a run directory holding ``verdicts.csv`` (``compare.VERDICT_COLUMNS`` plus
extras) and ``meta/*.json``, one per (theorem, scenario) pair, with the keys
``theorem, scenario, mode, title, description, x_label, expected_slope,
hypotheses [{name, holds, detail}], constants [{name, value, tag, reason}],
bound_status, step_sizes {...}, notes [str], representative {staleness_steps,
concurrency_time, concurrency_busy, concurrency_mean}`` (``representative`` may be
missing; the page then says so).  Optional keys: ``quantity`` (the y-axis label).

Page plan (deterministic; :func:`expected_pages` computes it without drawing):

1. summary: ``ceil(G / SUMMARY_ROWS)`` pages (at least 1), G = number of
   (theorem, scenario, mode) groups in verdicts.csv; a colour-coded table
   theorem x scenario x mode with the verdict counts over horizons and totals;
2. for each theorem, in order of first appearance (verdicts first, then meta):

   * ``ceil(P / PANELS_PER_PAGE)`` plot pages, P = its (scenario, mode) groups in
     verdicts.csv: log-log panels of the MC mean with CI error bars, the bound,
     the exact oracle and the theorem's order vs T or K;
   * one details page per scenario (union of verdicts and meta): hypotheses table,
     constants with their tags, step sizes, tightness and slope per mode, notes;
   * ``max(1, ceil(S / REPR_PER_PAGE))`` representative-run pages, S = its
     scenarios: staleness histogram and concurrency curve of one run per scenario.

A4 landscape, fonts >= 8 pt.  ``build_report(..., png_dir=...)`` also saves every
page as a PNG (the same figures), for previewing without a PDF rasteriser.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
from scipy import stats  # noqa: E402

from fedsim.errors import FedsimError  # noqa: E402
from validation.compare import CI_LEVEL, CI_METHOD, ORACLE_FAR, read_verdicts  # noqa: E402

__all__ = [
    "build_report",
    "expected_pages",
    "load_run",
    "PAGE_SIZE",
    "SUMMARY_ROWS",
    "PANELS_PER_PAGE",
    "REPR_PER_PAGE",
]

PAGE_SIZE = (11.69, 8.27)  # A4 landscape, inches
SUMMARY_ROWS = 20
PANELS_PER_PAGE = 6
REPR_PER_PAGE = 3
FONT = 9
SMALL = 8

FILL = {"holds": "#b9e3b2", "violated": "#f4a9a8", "inconclusive": "#fde3a7",
        "not_applicable": "#dcdcdc"}
INK = {"holds": "#2e7d32", "violated": "#c62828", "inconclusive": "#e08a00",
       "not_applicable": "#7f7f7f"}
_ORDER = ("holds", "violated", "inconclusive", "not_applicable")
_SHORT = {"holds": "holds", "violated": "violated", "inconclusive": "inconcl.",
          "not_applicable": "n/a"}
_HYP_ROWS = 8  # hypothesis rows on a details page (failing ones first when more)
_Z_CRIT = float(stats.norm.ppf(1 - ORACLE_FAR / 2))  # the oracle test's |z| threshold
_CERTIFIED = {"CERTIFIED_PAPER", "CERTIFIED_CORRECTED", "PROOF_LEVEL", "VACUOUS"}


# ----------------------------------------------------------------------------- loading


@dataclass
class Run:
    """What a run directory holds, in report order."""

    run_dir: Path
    verdicts: pd.DataFrame
    meta: dict[tuple[str, str], dict]
    theorems: list[str] = field(default_factory=list)
    scenarios: dict[str, list[str]] = field(default_factory=dict)
    groups: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def _uniq(seq: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(seq))


def load_run(run_dir: str | os.PathLike) -> Run:
    """Read verdicts.csv and meta/*.json and fix the order of theorems and scenarios."""
    run_dir = Path(run_dir)
    vpath = run_dir / "verdicts.csv"
    if not vpath.is_file():
        raise FedsimError(f"no verdicts.csv in run directory {run_dir}")
    v = read_verdicts(vpath)
    meta: dict[tuple[str, str], dict] = {}
    for p in sorted((run_dir / "meta").glob("*.json")):
        try:
            m = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise FedsimError(f"meta file {p} is not valid JSON: {exc}") from exc
        if not isinstance(m, dict) or "theorem" not in m or "scenario" not in m:
            raise FedsimError(f"meta file {p} must be an object with theorem and scenario")
        meta[(str(m["theorem"]), str(m["scenario"]))] = m
    run = Run(run_dir, v, meta)
    run.theorems = _uniq(list(v["theorem"]) + [k[0] for k in meta])
    for th in run.theorems:
        sub = v[v["theorem"] == th]
        run.scenarios[th] = _uniq(list(sub["scenario"]) + [k[1] for k in meta if k[0] == th])
        run.groups[th] = _uniq(zip(sub["scenario"], sub["mode"], strict=True))
    return run


def _plan(run: Run) -> list[tuple[str, Any]]:
    """The page list: (kind, argument) in output order."""
    n_groups = sum(len(g) for g in run.groups.values())
    pages: list[tuple[str, Any]] = []
    for i in range(max(1, math.ceil(n_groups / SUMMARY_ROWS))):
        pages.append(("summary", i))
    for th in run.theorems:
        g = run.groups[th]
        for i in range(math.ceil(len(g) / PANELS_PER_PAGE)):
            pages.append(("plots", (th, g[i * PANELS_PER_PAGE:(i + 1) * PANELS_PER_PAGE])))
        for sc in run.scenarios[th]:
            pages.append(("details", (th, sc)))
        scs = run.scenarios[th]
        for i in range(max(1, math.ceil(len(scs) / REPR_PER_PAGE))):
            pages.append(("repr", (th, scs[i * REPR_PER_PAGE:(i + 1) * REPR_PER_PAGE])))
    return pages


def expected_pages(run_dir: str | os.PathLike) -> int:
    """Number of pages :func:`build_report` will write for ``run_dir`` (see module doc)."""
    return len(_plan(load_run(run_dir)))


# ----------------------------------------------------------------------------- formatting


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, float, np.integer, np.floating)):
        x = float(v)
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "+inf" if x > 0 else "-inf"
        return f"{x:.{digits}g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x, digits) for x in v[:4]) + (", ...]" if len(v) > 4 else "]")
    return str(v)


def _hfmt(x: float) -> str:
    """A horizon: integers in full (10000, not 1e+04)."""
    x = float(x)
    return f"{int(x)}" if math.isfinite(x) and x == int(x) and abs(x) < 1e7 else _fmt(x)


def _trunc(s: str, n: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: max(1, n - 1)] + "\u2026"


def _mid(s: str, n: int) -> str:
    """Shorten an identifier in the middle, keeping its (distinguishing) end."""
    s = " ".join(str(s).split())
    if len(s) <= n:
        return s
    head = max(1, (n - 1) // 2)
    return s[:head] + "\u2026" + s[len(s) - (n - 1 - head):]


def _chars(width_frac: float, size: float = SMALL) -> int:
    """How many characters of a ``size``-pt font fit in ``width_frac`` of the page width."""
    return max(3, int((width_frac * PAGE_SIZE[0] * 72 - 5.0) / (0.62 * size)))


def _wrap(fig: Figure, x: float, y: float, text: str, width: float, size: float = FONT,
          max_lines: int = 4, **kw: Any) -> float:
    """Write wrapped text from (x, y) downwards; return the y below it."""
    lines = textwrap.wrap(" ".join(str(text).split()), _chars(width, size)) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = _trunc(lines[-1] + " ...", _chars(width, size))
    fig.text(x, y, "\n".join(lines), fontsize=size, va="top", ha="left", **kw)
    return y - len(lines) * size * 1.45 / 72 / PAGE_SIZE[1]


def _table(fig: Figure, x0: float, y_top: float, widths: Sequence[float], header: Sequence[str],
           rows: Sequence[Sequence[str]], fills: Sequence[Sequence[str | None]] | None = None,
           size: float = SMALL, row_h: float = 0.027, max_rows: int | None = None,
           lines: int = 1) -> float:
    """Draw a table in figure coordinates; return the bottom y.

    Cells are wrapped to at most ``lines`` lines (body rows) and truncated with an ellipsis.
    """
    rows = [list(r) for r in rows]
    fills = [list(f) for f in fills] if fills is not None else [[None] * len(widths)] * len(rows)
    if max_rows is not None and len(rows) > max_rows:
        more = len(rows) - (max_rows - 1)
        rows = rows[: max_rows - 1] + [[f"... {more} more rows not shown"] +
                                       [""] * (len(widths) - 1)]
        fills = fills[: max_rows - 1] + [[None] * len(widths)]
    y = y_top
    line_h = size * 1.3 / 72 / PAGE_SIZE[1]
    body_h = row_h + (lines - 1) * line_h
    for r, (cells, fill) in enumerate([(header, ["#e8eaf0"] * len(widths))] +
                                      list(zip(rows, fills, strict=True))):
        h = row_h if r == 0 else body_h
        x = x0
        for c, (w, txt) in enumerate(zip(widths, cells, strict=True)):
            colour = fill[c] if c < len(fill) else None
            fig.add_artist(Rectangle((x, y - h), w, h, transform=fig.transFigure,
                                     facecolor=colour or "white", edgecolor="#9a9a9a",
                                     linewidth=0.4))
            is_last_note = r > 0 and str(cells[0]).startswith("... ") and c == 0
            n = _chars(sum(widths) if is_last_note else w, size) - 1
            fig.text(x + 0.004, y - h / 2, _fit(txt, n, 1 if r == 0 else lines), fontsize=size,
                     va="center", ha="left", weight="bold" if r == 0 else "normal",
                     linespacing=1.15)
            x += w
        y -= h
    return y


def _fit(text: str, n: int, lines: int) -> str:
    """``text`` wrapped to ``n`` characters per line, at most ``lines`` lines."""
    if lines <= 1:
        return _trunc(text, n)
    out = textwrap.wrap(" ".join(str(text).split()), n) or [""]
    if len(out) > lines:
        out = out[: lines - 1] + [_trunc(" ".join(out[lines - 1:]), n)]
    return "\n".join(out)


def _page(title: str, subtitle: str = "") -> Figure:
    fig = plt.figure(figsize=PAGE_SIZE)
    fig.text(0.03, 0.965, _trunc(title, int(0.94 * PAGE_SIZE[0] * 72 / (0.66 * 14))),
             fontsize=14, weight="bold", va="top")
    if subtitle:
        _wrap(fig, 0.03, 0.925, subtitle, 0.94, size=FONT, max_lines=3, color="#333333")
    return fig


def _footer(fig: Figure, i: int, n: int, run: Run) -> None:
    fig.text(0.03, 0.015, f"fedsim validation report  -  run directory: {run.run_dir.name}",
             fontsize=SMALL, color="#555555")
    fig.text(0.97, 0.015, f"page {i} / {n}", fontsize=SMALL, color="#555555", ha="right")


# ----------------------------------------------------------------------------- pages


def _group_verdict(verdicts: Sequence[str]) -> str:
    vs = set(verdicts)
    if "violated" in vs:
        return "violated"
    if vs <= {"not_applicable"}:
        return "not_applicable"
    if vs <= {"holds", "not_applicable"}:
        return "holds"
    return "inconclusive"


def _rng(x: pd.Series) -> str:
    x = x[np.isfinite(x.to_numpy(dtype=float))]
    if x.empty:
        return "-"
    lo, hi = float(x.min()), float(x.max())
    return _fmt(lo) if lo == hi else f"{_fmt(lo)} - {_fmt(hi)}"


def _present(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and \
        str(x).strip().lower() not in ("", "false", "0", "nan", "none")


def _control_cell(sub: pd.DataFrame) -> tuple[str, str | None]:
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
            return (f"{_SHORT.get(want, want)}: {'ok' if ok else 'FAILED'}",  # fits 0.11
                    FILL["holds"] if ok else FILL["violated"])
    if "control" in sub.columns:
        kinds = [str(k) for k in sub["control"] if _present(k)]
        if kinds:
            return _mid(kinds[0] if kinds[0].lower() not in ("true", "1") else "control",
                        _chars(0.11) - 1), FILL["not_applicable"]
    return "-", None


def _summary_page(run: Run, idx: int) -> Figure:
    v = run.verdicts
    counts = {k: int((v["verdict"] == k).sum()) for k in _ORDER}
    fig = _page("Validation summary: theorems x scenarios x verdicts",
                f"{len(run.theorems)} theorem(s), {sum(len(g) for g in run.groups.values())} "
                f"(scenario, mode) group(s), {len(v)} comparison(s) (one per horizon). "
                f"Each comparison: Monte-Carlo mean with a {CI_LEVEL:.0%} {CI_METHOD} confidence "
                "interval vs the theorem's bound.")
    x = 0.03
    for k in _ORDER:
        fig.add_artist(Rectangle((x, 0.862), 0.018, 0.022, transform=fig.transFigure,
                                 facecolor=FILL[k], edgecolor="#888888", linewidth=0.5))
        fig.text(x + 0.023, 0.873, f"{k.replace('_', ' ')}: {counts[k]}", fontsize=FONT,
                 va="center")
        x += 0.16
    rows, fills = [], []
    allg = [(th, sc, md) for th in run.theorems for sc, md in run.groups[th]]
    for th, sc, md in allg[idx * SUMMARY_ROWS:(idx + 1) * SUMMARY_ROWS]:
        sub = v[(v["theorem"] == th) & (v["scenario"] == sc) & (v["mode"] == md)]
        c = [int((sub["verdict"] == k).sum()) for k in _ORDER]
        overall = _group_verdict(list(sub["verdict"]))
        es = sub["expected_slope"].iloc[0] if "expected_slope" in sub.columns else math.nan
        ctext, cfill = _control_cell(sub)
        rows.append([_mid(th, _chars(0.08) - 1), _mid(sc, _chars(0.14) - 1),
                     _mid(md, _chars(0.08) - 1) or "-",
                     _mid(_uniq(list(sub["status"].astype(str)))[0], _chars(0.15) - 1),
                     str(len(sub)), "/".join(str(n) for n in c), _SHORT[overall].upper(),
                     _rng(sub["tightness"]), f"{_fmt(sub['slope'].iloc[0])} ({_fmt(es)})",
                     ctext])
        fills.append([None] * 6 + [FILL[overall], None, None, cfill])
    widths = [0.08, 0.14, 0.08, 0.15, 0.04, 0.08, 0.07, 0.1, 0.09, 0.11]
    y = _table(fig, 0.03, 0.835, widths,
               ["theorem", "scenario", "mode", "bound status", "#T/K", "h/v/i/na",
                "overall", "tightness", "slope (exp)", "control"], rows, fills)
    note = (f"#T/K: number of horizons; h/v/i/na: how many of them hold, are violated, "
            f"inconclusive, not applicable. "
            f"Verdict per horizon: holds = CI upper end <= bound; violated = CI lower end > "
            f"bound; inconclusive = otherwise (or a replicate diverged / gave NaN); n/a = not "
            f"applicable (a hypothesis fails, or the status is not a certified bound, e.g. "
            f"NOT_APPLICABLE, ASYMPTOTIC_LEADING_TERMS, RATE_SHAPE_ONLY). Overall: violated "
            f"if any horizon is violated, holds if all applicable horizons hold. Tightness = "
            f"bound / MC mean (range over horizons). Slope = least-squares log-log slope of "
            f"the MC mean vs T or K; in brackets the theorem's order. CI: {CI_METHOD}, level "
            f"{CI_LEVEL}; oracle z-tests at false-alarm rate {ORACLE_FAR:g}. Control: for a "
            f"deliberate negative control, the verdict it must get and whether it got it.")
    _wrap(fig, 0.03, y - 0.03, note, 0.94, size=SMALL, max_lines=8, color="#333333")
    return fig


def _meta_for(run: Run, th: str) -> dict:
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


def _plots_page(run: Run, th: str, groups: list[tuple[str, str]]) -> Figure:
    m0 = _meta_for(run, th)
    fig = _page(f"{th}: measured vs bound" + (f"  -  {m0['title']}" if m0.get("title") else ""),
                f"Horizontal axis: {m0.get('x_label', 'T')}. One panel per (scenario, mode); "
                "the scenarios' hypotheses, constants and step sizes follow on the next pages.")
    v = run.verdicts
    ncol, nrow = 3, 2
    gs = fig.add_gridspec(nrow, ncol, left=0.07, right=0.98, top=0.78, bottom=0.2,
                          hspace=0.62, wspace=0.28)
    for k, (sc, md) in enumerate(groups):
        ax = fig.add_subplot(gs[k // ncol, k % ncol])
        meta = run.meta.get((th, sc), {})
        sub = v[(v["theorem"] == th) & (v["scenario"] == sc) & (v["mode"] == md)]
        sub = sub.sort_values("horizon")
        _panel(ax, sub, meta)
        status = str(sub["status"].iloc[0]) if len(sub) else "-"
        es = sub["expected_slope"].iloc[0] if "expected_slope" in sub.columns and len(sub) \
            else meta.get("expected_slope", math.nan)
        width = _chars(0.27, SMALL)
        sl = _fmt(sub["slope"].iloc[0] if len(sub) else None)
        ax.set_title("\n".join([_mid(f"{sc} [{md}]" if md else sc, width),
                                _trunc(f"{status}", width),
                                _trunc(f"slope {sl} (order {_fmt(es, 2)}), bound/mean "
                                       f"{_rng(sub['tightness'])}", width)]), fontsize=SMALL)
    for k in range(len(groups), nrow * ncol):
        fig.add_subplot(gs[k // ncol, k % ncol]).set_axis_off()
    fig.legend(handles=_legend_handles(), loc="upper center", ncol=8, fontsize=SMALL,
               bbox_to_anchor=(0.5, 0.9), frameon=False, handletextpad=0.3, columnspacing=1.0)
    cap = (f"Dots: Monte-Carlo mean over the replicates with {CI_LEVEL:.0%} {CI_METHOD} CI "
           "error bars (a lower end <= 0 is drawn to the panel floor), coloured by the verdict at "
           "that horizon. Blue line: the theorem's bound at the scenario's constants (solid: "
           "certified; dashed: not a certified bound). Black crosses: exact expectation (oracle). "
           "Dotted grey: the theorem's order, anchored at the first MC mean. Title lines: "
           "scenario [mode]; bound status; fitted log-log slope (expected order), bound / mean.")
    _wrap(fig, 0.04, 0.125, cap, 0.92, size=SMALL, max_lines=5, color="#333333")
    return fig


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


def _panel(ax: plt.Axes, sub: pd.DataFrame, meta: dict) -> None:
    ax.tick_params(labelsize=SMALL)
    xl = meta.get("x_label", "T")
    ax.set_xlabel(xl, fontsize=FONT)
    ax.set_ylabel(_trunc(meta.get("quantity", "measured quantity"), 40), fontsize=SMALL)
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
        ax.set_xticks(hs, [_hfmt(x) for x in hs])
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
    ax.scatter(h[ok], mean[ok], c=colours, s=22, zorder=3)
    status = str(sub["status"].iloc[0])
    gb = np.isfinite(bound) & (bound > 0)
    if gb.any():
        ax.plot(h[gb], bound[gb], color="#1f5fbf", lw=1.5, ls="-" if status in _CERTIFIED
                else "--", marker="D", ms=3, zorder=1)
    if np.isinf(bound).any():
        ax.text(0.02, 0.02, "bound = +inf at some horizon", transform=ax.transAxes,
                fontsize=SMALL, color="#1f5fbf")
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
    ax.set_ylim(floor, top)
    if top / floor > 100.0:  # several decades: major labels suffice
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", lw=0.3, color="#dddddd")


def _details_page(run: Run, th: str, sc: str) -> Figure:
    meta = run.meta.get((th, sc))
    title = f"{th} / {sc}: hypotheses, constants, tightness and slope"
    if meta is None:
        fig = _page(title)
        fig.text(0.03, 0.9, "No metadata (meta/*.json) was recorded for this scenario.",
                 fontsize=FONT)
        meta = {}
    else:
        fig = _page(title, " ".join(x for x in (meta.get("title", ""),
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
    _table(fig, 0.03, 0.83, [0.15, 0.06, 0.35], ["hypothesis", "status", "detail"], hrows,
           hfill, max_rows=_HYP_ROWS, lines=2)
    crows = [[str(c.get("name", "")), _fmt(c.get("value"), 4), str(c.get("tag", "")),
              str(c.get("reason", ""))] for c in meta.get("constants", []) or []]
    fig.text(0.6, 0.84, "Constants (tag: EXACT, UPPER, NUMERIC, INFINITE)", fontsize=FONT + 1,
             weight="bold")
    _table(fig, 0.6, 0.83, [0.07, 0.065, 0.065, 0.17], ["constant", "value", "tag", "reason"],
           crows, max_rows=14)
    v = run.verdicts
    sub = v[(v["theorem"] == th) & (v["scenario"] == sc)]
    trows, tfill = [], []
    for md in _uniq(list(sub["mode"])):
        s = sub[sub["mode"] == md]
        es = s["expected_slope"].iloc[0] if "expected_slope" in s.columns else \
            meta.get("expected_slope")
        se = s["slope_stderr"].iloc[0] if "slope_stderr" in s.columns else math.nan
        ov = _group_verdict(list(s["verdict"]))
        ex = s["exact"].to_numpy(float)
        if np.isfinite(ex).any() and "oracle_z" in s.columns:
            z = s["oracle_z"].to_numpy(float)[np.isfinite(ex)]
            npass = int(np.sum(np.abs(z) <= _Z_CRIT))
            oracle = f"{npass}/{z.size} pass, max|z| {_fmt(np.nanmax(np.abs(z)), 2)}"
        else:
            oracle = "no oracle"
        bad_rows = np.zeros(len(s))
        for col in ("n_nonfinite", "n_failed"):
            if col in s.columns:
                bad_rows = bad_rows + s[col].fillna(0).to_numpy(float)
        bad = int(bad_rows.max()) if len(s) else 0
        trows.append([_mid(md, _chars(0.11) - 1) or "-", str(s["status"].iloc[0]),
                      f"{_hfmt(s['horizon'].min())} - {_hfmt(s['horizon'].max())} ({len(s)})",
                      _rng(s["tightness"]), f"{_fmt(s['slope'].iloc[0])} +- {_fmt(se, 2)}",
                      _fmt(es), oracle, str(bad), _SHORT[ov]])
        tfill.append([None] * 8 + [FILL[ov]])
    fig.text(0.03, 0.395, "Tightness (bound / MC mean) and log-log slope per mode",
             fontsize=FONT + 1, weight="bold")
    _table(fig, 0.03, 0.385, [0.11, 0.15, 0.12, 0.1, 0.11, 0.065, 0.14, 0.06, 0.07],
           ["mode", "bound status", "horizons (#)", "tightness", "slope +- se", "expected",
            "exact oracle", "failed", "overall"], trows, tfill, max_rows=5)
    _wrap(fig, 0.03, 0.385 - 0.027 * (min(len(trows), 5) + 1) - 0.01,
          f"tightness = bound / MC mean (range over horizons); slope = log-log least squares "
          f"+- its standard error; exact oracle: z-tests of the MC mean against the exact "
          f"expectation at false-alarm rate {ORACLE_FAR:g} each; failed = replicates that "
          f"raised, diverged or gave NaN/inf at the worst horizon (excluded from the mean; a "
          f"horizon with a non-finite replicate is never 'holds').",
          0.94, size=SMALL, max_lines=2, color="#333333")
    steps = meta.get("step_sizes", {}) or {}
    st_txt = ", ".join(f"{k} = {_fmt(val, 4)}" for k, val in steps.items()) or "-"
    y = _wrap(fig, 0.03, 0.2, f"Step sizes: {st_txt}", 0.94, size=SMALL, max_lines=2)
    bs = meta.get("bound_status")
    if bs:
        y = _wrap(fig, 0.03, y - 0.005, f"Bound status (theory): {bs}", 0.94, size=SMALL,
                  max_lines=1)
    notes = meta.get("notes", []) or []
    if notes:
        _wrap(fig, 0.03, y - 0.005, "Notes: " + " | ".join(map(str, notes)), 0.94,
              size=SMALL, max_lines=4, color="#333333")
    return fig


def _repr_page(run: Run, th: str, scs: list[str]) -> Figure:
    fig = _page(f"{th}: a representative run per scenario (staleness and concurrency)")
    if not scs:
        fig.text(0.03, 0.85, "No scenario recorded for this theorem.", fontsize=FONT)
        return fig
    n = len(scs)
    gs = fig.add_gridspec(n, 2, left=0.08, right=0.97, top=0.87, bottom=0.16,
                          hspace=0.65, wspace=0.22)
    for r, sc in enumerate(scs):
        rep = (run.meta.get((th, sc)) or {}).get("representative")
        a1, a2 = fig.add_subplot(gs[r, 0]), fig.add_subplot(gs[r, 1])
        for ax in (a1, a2):
            ax.tick_params(labelsize=SMALL)
        if not rep:
            for ax in (a1, a2):
                ax.set_axis_off()
                ax.text(0.5, 0.5, f"{sc}: no representative run was recorded", ha="center",
                        va="center", fontsize=FONT, transform=ax.transAxes)
            continue
        stale = np.asarray(rep.get("staleness_steps", []), dtype=float)
        stale = stale[np.isfinite(stale)]
        if stale.size:
            top = int(stale.max())
            a1.hist(stale, bins=np.arange(-0.5, top + 1.5, max(1, math.ceil((top + 1) / 60))),
                    color="#4c72b0", edgecolor="white", linewidth=0.3)
            a1.axvline(stale.mean(), color="#c62828", lw=1, ls="--",
                       label=f"mean {_fmt(stale.mean())}, max {top}")
            a1.legend(fontsize=SMALL)
        a1.set_title(_trunc(f"{sc}: staleness t - Omega(t) (server steps)", 60), fontsize=FONT)
        a1.set_xlabel("staleness (steps)", fontsize=SMALL)
        a1.set_ylabel("count", fontsize=SMALL)
        t = np.asarray(rep.get("concurrency_time", []), dtype=float)
        b = np.asarray(rep.get("concurrency_busy", []), dtype=float)
        if t.size and t.size == b.size and (t.size < 2 or t.max() == t.min()):
            a2.axhline(b[-1], color="#4c72b0", lw=1.2)
            a2.set_xticks([])
            a2.set_ylim(-0.03, 1.05)
            a2.text(0.5, 0.45, f"busy fraction {_fmt(b[-1])} from t = {_fmt(t[0])} on "
                    "(no change recorded)", ha="center", transform=a2.transAxes, fontsize=SMALL)
        elif t.size and t.size == b.size:
            a2.step(t, b, where="post", color="#4c72b0", lw=0.8, label="busy fraction")
            cm = rep.get("concurrency_mean")
            if cm is not None:
                a2.axhline(float(cm), color="#c62828", ls="--", lw=1,
                           label=f"time-weighted mean {_fmt(cm)}")
            a2.set_ylim(-0.03, 1.05)
            a2.legend(fontsize=SMALL, loc="lower right")
        a2.set_title(_trunc(f"{sc}: clients busy (fraction) vs simulated time", 60),
                     fontsize=FONT)
        a2.set_xlabel("simulated time", fontsize=SMALL)
        a2.set_ylabel("busy fraction", fontsize=SMALL)
    _wrap(fig, 0.04, 0.09, "Left: histogram of the staleness t - Omega(t) of each server step "
          "(in server steps) in one simulated run; dashed red: its mean. Right: fraction of "
          "clients busy computing as a step function of simulated time; dashed red: "
          "time-weighted mean.", 0.92, size=SMALL, max_lines=3, color="#333333")
    return fig


def build_report(run_dir: str | os.PathLike, pdf_path: str | os.PathLike | None = None, *,
                 png_dir: str | os.PathLike | None = None, png_dpi: int = 60) -> int:
    """Write the PDF report of ``run_dir`` to ``pdf_path`` (default ``run_dir/report.pdf``).

    Returns the number of pages (== :func:`expected_pages`).  With ``png_dir`` every
    page is also saved as ``page-NN.png`` at ``png_dpi``.  The PDF is written to a
    temporary file and renamed, so an interrupted build leaves no partial report.
    """
    run = load_run(run_dir)
    pdf_path = Path(pdf_path) if pdf_path is not None else run.run_dir / "report.pdf"
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    if png_dir is not None:
        Path(png_dir).mkdir(parents=True, exist_ok=True)
    plan = _plan(run)
    tmp = pdf_path.with_name(f".tmp-{os.getpid()}-{pdf_path.name}")
    rc = {"font.size": FONT, "axes.titlesize": FONT, "legend.fontsize": SMALL,
          "pdf.fonttype": 42}
    try:
        with plt.rc_context(rc), PdfPages(tmp, metadata={"Title": "fedsim validation report",
                                                          "Creator": "fedsim"}) as pdf:
            for i, (kind, arg) in enumerate(plan, start=1):
                if kind == "summary":
                    fig = _summary_page(run, arg)
                elif kind == "plots":
                    fig = _plots_page(run, *arg)
                elif kind == "details":
                    fig = _details_page(run, *arg)
                else:
                    fig = _repr_page(run, *arg)
                _footer(fig, i, len(plan), run)
                pdf.savefig(fig)
                if png_dir is not None:
                    fig.savefig(Path(png_dir) / f"page-{i:02d}.png", dpi=png_dpi)
                plt.close(fig)
        os.replace(tmp, pdf_path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(plan)
