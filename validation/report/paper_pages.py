"""``reports/paper-experiments.pdf``: one page per paper experiment (``--suite paper``).

Reads ``<run_dir>/paper/<experiment>.json`` (:func:`fedsim.validation.paper.stats.summarise`) and
draws, per experiment: the quoted claim with its table/figure, what the analogue cannot
test, the step-size rule; the curves against simulated time (mean and 99% band over
replicates, one panel per setting, at most four); the measured table of the selected arms
and the claims with their paired 99% intervals; the stage-1 selection (every grid value's
mean selection metric over the tuning replicates, the kept one marked); the verdict.
The PersA-FL Fig. 2(a) page also draws the per-client Gantt charts (download / compute /
upload) of its first replicate (:func:`fedsim.plot.client_timeline`).
A first page lists every verdict; the next ones set them beside the previous design's
(:mod:`fedsim.validation.report.paper_previous`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from fedsim.validation.report.layout import FONT, draw_table, draw_wrapped, new_page  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from fedsim.safefile import atomic_writer  # noqa: E402

__all__ = ["build_paper_report", "experiment_page", "summary_page", "VERDICT_FILL"]

VERDICT_FILL = {"reproduced": "#b9e3b2", "not reproduced": "#f4a9a8",
                "inconclusive": "#fde3a7"}
STATUS_FILL = {"holds": "#b9e3b2", "reversed": "#f4a9a8", "unresolved": "#fde3a7"}


def _num(x: Any, d: int = 3) -> str:
    if x is None:
        return "-"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{d}g}"


def _ci(v: list) -> str:
    if not v:
        return "-"
    return f"{_num(v[0])} [{_num(v[1])}, {_num(v[2])}]"


def summary_page(summaries: list[dict]) -> Figure:
    """Every experiment's verdict and claims tally."""
    fig = new_page("Paper experiments: claimed ordering against measured (99% CIs)",
                   "fedsim validate --suite paper. Each row: one experiment, its source, its "
                   "verdict (reproduced iff every claim's paired 99% interval lies on the "
                   "claimed side; not reproduced iff one lies entirely on the other side; else "
                   "inconclusive).  Two stages: the step size is tuned on R1 replicates, the "
                   "claims are measured on R fresh ones with common random numbers.")
    rows, fills = [], []
    for s in summaries:
        st = [c["status"] for c in s["claims"]]
        tuned = any(s.get("selection", {}).values())
        r1 = s.get("tune_replicates", 0) if tuned else "-"
        rows.append([s["title"], s["source"], s["verdict"],
                     f"{st.count('holds')} hold / {st.count('reversed')} reversed / "
                     f"{st.count('unresolved')} unresolved",
                     f"{r1} / {s['replicates']}"])
        fills.append([None, None, VERDICT_FILL[s["verdict"]], None, None])
    draw_table(fig, 0.03, 0.85, [0.29, 0.26, 0.11, 0.21, 0.07],
               ["experiment", "source", "verdict", "claims", "R1 / R"], rows, fills, size=8,
               row_h=0.04, lines=2)
    return fig


def _curves(fig: Figure, s: dict, rect: tuple[float, float, float, float]) -> None:
    grid = s["grid"]
    settings: dict[str, list] = {}
    for c in s["curves"].values():
        settings.setdefault(c["setting"], []).append(c)
    names = list(settings)
    if len(names) > 4:
        step = len(names) / 4
        names = [names[int(k * step)] for k in range(4)]
    x0, y0, w, h = rect
    k = len(names)
    colour: dict[str, str] = {}  # one colour per algorithm on every panel of the page
    for c in s["curves"].values():
        colour.setdefault(c["label"].split(" (")[0], f"C{len(colour) % 10}")
    unit = s["curve_metric"] == "busy" or "acc" in s["curve_metric"]
    panels: list[plt.Axes] = []
    for j, name in enumerate(names):
        ax = fig.add_axes([x0 + j * w / k + 0.03, y0, w / k - 0.045, h])
        for c in settings[name]:
            cur = c["busy"] if s["curve_metric"] == "busy" else c["curve"]
            if not cur["mean"]:
                continue
            name_ = c["label"].split(" (")[0]
            line, = ax.plot(grid, cur["mean"], label=name_, lw=1.2, color=colour[name_])
            lo = [a if math.isfinite(a) else m for a, m in zip(cur["lo"], cur["mean"],
                                                               strict=True)]
            hi = [a if math.isfinite(a) else m for a, m in zip(cur["hi"], cur["mean"],
                                                               strict=True)]
            if s["curve_log"]:  # a lower end <= 0 cannot be drawn: clip at mean / 10
                lo = [max(v, 0.1 * m) for v, m in zip(lo, cur["mean"], strict=True)]
            if unit:  # accuracies and busy fractions live in [0, 1]
                lo = [min(max(v, 0.0), 1.0) for v in lo]
                hi = [min(max(v, 0.0), 1.0) for v in hi]
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        if s["curve_log"]:
            ax.set_yscale("log")
            lo_y, hi_y = ax.get_ylim()
            if lo_y > 0 and hi_y >= 10 * lo_y:  # a decade shown: its powers of 10 suffice
                ax.yaxis.set_minor_formatter(NullFormatter())  # (long minor labels overflow)
        if unit:
            ax.set_ylim(0.0, 1.02)
        for fk, fv in s["extra"].get("floor", {}).items():  # the untrained model's score
            ax.axhline(fv, color="#555555", lw=0.8, ls=":")
            ax.text(grid[-1], fv, f"w=0: {fk.replace('pers_acc_', '')}", fontsize=5,
                    ha="right", va="bottom", color="#555555")
        ax.set_title(name, fontsize=7)
        ax.set_xlabel("simulated time", fontsize=7)
        if j == 0:
            ax.set_ylabel(s["curve_metric"], fontsize=7)
        ax.tick_params(which="both", labelsize=6)  # a log axis labels its minor ticks too
        panels.append(ax)
    # the last panel's legend, and one on each panel naming an arm no legend names yet
    last = panels[-1] if panels else None
    shown = set(last.get_legend_handles_labels()[1]) if last is not None else set()
    for ax in panels:
        labels = ax.get_legend_handles_labels()[1]
        if ax is last or any(lb not in shown for lb in labels):
            ax.legend(fontsize=6, loc="upper right")
            shown.update(labels)


def _gantt(fig: Figure, s: dict, rect: tuple[float, float, float, float],
           run_dir: Path) -> None:
    """Per-client timelines of the first replicate of the arms named in ``extra.gantt``."""
    from fedsim import config
    from fedsim.plot import client_timeline, draw_gantt

    keys = s["extra"].get("gantt", [])
    window = float(s["extra"].get("gantt_window", s["horizon"]))
    scen = json.loads((run_dir / "paper" / f"{s['name']}.scenarios.json").read_text())
    x0, y0, w, h = rect
    for j, key in enumerate(keys):
        sc = config.Scenario.from_dict(scen[key])
        tl = client_timeline(sc, 0, window)
        ax = fig.add_axes([x0 + j * w / len(keys) + 0.03, y0, w / len(keys) - 0.045, h])
        draw_gantt(ax, tl, sc.problem.n, window)
        ax.set_title(f"{key}: per-client timeline, replicate 0", fontsize=7)
        ax.tick_params(labelsize=6)


def experiment_page(s: dict, run_dir: Path) -> list[Figure]:
    """The page (and continuation pages when the table is long) of one experiment."""
    tuning = (f"Tuning replicates R1={s.get('tune_replicates', 0)}"
              if any(s.get("selection", {}).values()) else "No tuning stage (no grid)")
    fig = new_page(s["title"], f"Source: {s['source']}.  {tuning}, measurement replicates "
                   f"R={s['replicates']}; "
                   "curves: mean and 99% Student-t band over the measurement replicates against "
                   "simulated time; claims: paired 99% Student-t interval of the per-replicate "
                   "differences (common random numbers).")
    fig.text(0.80, 0.965, f"verdict: {s['verdict']}", fontsize=12, weight="bold", va="top",
             bbox={"facecolor": VERDICT_FILL[s["verdict"]], "edgecolor": "#777777"})
    y = draw_wrapped(fig, 0.03, 0.87, "Claim: " + s["claim"], 0.94, size=FONT, max_lines=3)
    y = draw_wrapped(fig, 0.03, y - 0.005, "Analogue (what it cannot test): " + s["analogue"], 0.94,
                     size=8, max_lines=8, color="#333333")
    y = draw_wrapped(fig, 0.03, y - 0.005, "Hyper-parameter rule: " + s["rule"], 0.94, size=8,
                     max_lines=4, color="#333333")
    # the curves get a fixed height below the text; the tables start under them
    height = 0.22
    bottom = y - 0.07 - height
    if s["extra"].get("gantt"):
        _curves(fig, s, (0.0, bottom, 0.34, height))
        _gantt(fig, s, (0.34, bottom, 0.66, height), run_dir)
    else:
        _curves(fig, s, (0.0, bottom, 1.0, height))
    metrics = s["metrics"][:2]
    rows = []
    for r in s["table"]:
        cells = [r["setting"], r["label"]]
        cells += [_ci(r[m]) for m in metrics]
        if s["targets"]:
            m = next(iter(s["targets"]))
            t = r[f"time_to_{m}"]
            cells.append(f"{_num(t[0])} ({t[3]}/{r['n']})")
        else:
            cells.append(_ci(r["busy"]))
        cells.append(f"{r['n'] - r['n_diverged']}/{r['n']}")
        rows.append(cells)
    last = (f"mean time to {next(iter(s['targets']))} >= "
            f"{next(iter(s['targets'].values()))}, capped at t_h (runs that reached it)"
            if s["targets"] else "busy fraction [99% CI]")
    header = ["setting", "algorithm (selected step)"] + [
        f"{m} at t_h [99% CI]" for m in metrics] + [last, "finite"]
    widths = [0.17, 0.19] + [0.38 / len(metrics)] * len(metrics) + [0.18, 0.05]
    crow = [[c["text"], _num(c["diff"]), f"[{_num(c['lo'])}, {_num(c['hi'])}]",
             str(c.get("pairs", "-")), c["status"]] for c in s["claims"]]
    cfill = [[None, None, None, None, STATUS_FILL[c["status"]]] for c in s["claims"]]
    srow = _selection_rows(s)
    blocks = [(["claim (a - factor b, or a - threshold)", "difference", "paired 99% CI",
                "pairs", "status"], [0.52, 0.1, 0.2, 0.05, 0.1], crow, cfill),
              (header, widths, rows, [[None] * len(widths)] * len(rows))]
    if srow:
        sel = "max" if s.get("select_max") else "min"
        blocks.append((["stage 1: setting / algorithm", f"grid -> mean {s['select_metric']} "
                        f"over R1 tuning replicates ({sel} kept, *)"], [0.3, 0.66], srow,
                       [[None, None]] * len(srow)))
    pages = [fig]
    y, row_h = bottom - 0.05, 0.022
    for head, wid, body, fill in blocks:
        k = 0
        while k < len(body):
            fit = int((y - 0.03) / row_h) - 1
            if fit < 2:
                fig = new_page(s["title"] + " (continued)", f"Source: {s['source']}")
                pages.append(fig)
                y = 0.88
                continue
            part = slice(k, k + fit)
            y = draw_table(fig, 0.02, y, wid, head, body[part], fill[part], size=6.5,
                           row_h=row_h) - 0.015
            k += fit
    return pages


def _arm_tag(c: dict) -> str:
    """What tells a family's grid arms apart: the label's parenthesis (e.g. ``lambda=4,
    g=0.5``) when it has one, else the grid value."""
    lab = str(c.get("label", ""))
    if "(" in lab and lab.endswith(")"):
        return lab[lab.rindex("(") + 1:-1]
    return _num(c["grid"])


def _selection_rows(s: dict) -> list[list[str]]:
    """One row per tuned (setting, family): every grid value's mean, the kept one starred."""
    rows = []
    for setting, fams in s.get("selection", {}).items():
        for fam, cands in fams.items():
            cells = [f"{'*' if c['chosen'] else ''}{_arm_tag(c)}: {_num(c['mean'])}"
                     + ("" if c["finite"] == c["of"] else f" ({c['of'] - c['finite']} div.)")
                     + (f" [{c['edge']} edge]" if c["chosen"] and c.get("edge") else "")
                     for c in cands]
            for j in range(0, len(cells), 4):  # four candidates a line, so none is cut off
                rows.append([f"{setting} / {fam}" if j == 0 else "",
                             "   ".join(cells[j:j + 4])])
    return rows


def build_paper_report(run_dir: str | os.PathLike, pdf_path: str | os.PathLike) -> int:
    """Write the PDF from ``run_dir/paper/*.json``; returns the number of pages."""
    run_dir = Path(run_dir)
    index = json.loads((run_dir / "paper" / "index.json").read_text())
    sums = [json.loads((run_dir / "paper" / f"{nm}.json").read_text())
            for nm in index["experiments"]]
    n = 0
    with atomic_writer(pdf_path, "wb") as fh, PdfPages(fh) as pdf:
        for group in _page_groups(sums, run_dir):
            try:
                for fig in group:
                    pdf.savefig(fig)
                    n += 1
            finally:  # every page is closed once written, so few are ever open at once
                for fig in group:
                    plt.close(fig)
    return n


def _page_groups(sums: list[dict], run_dir: Path) -> Iterator[list[Figure]]:
    """The report's pages, a group at a time (the summary, the previous design's pages,
    then each experiment's), each group drawn only when the one before has been written."""
    from fedsim.validation.report.paper_previous import previous_pages

    yield [summary_page(sums)]
    yield previous_pages(run_dir)
    for s in sums:
        yield experiment_page(s, run_dir)
