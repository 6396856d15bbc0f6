"""The paper report's "beside the previous design" pages (issue 22's reporting rule).

Reads ``<run_dir>/paper_vs_previous.csv`` (:func:`fedsim.validation.paper.previous.beside_previous`)
and draws each experiment's verdict under the previous design and this run's with the
changes counted, then every claim whose status moved (flipped, resolved, unresolved now,
new, dropped) with both designs' differences and paired 99% intervals; the change cell is
coloured by the claim's outcome against the paper in this run (:data:`OUTCOME_FILL`: holds
green, reversed red, unresolved grey), so a claim resolved as reversed is red.  Claims whose
status did not move are in the CSV.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from fedsim.validation.report.layout import draw_table, draw_wrapped, new_page
from matplotlib.figure import Figure

__all__ = ["previous_pages", "OUTCOME_FILL", "CHANGES"]

#: the changes, in the order the verdict table counts them
CHANGES = ("same", "flipped", "resolved", "unresolved now", "new", "dropped")
#: a moved claim's change cell is coloured by its outcome against the paper in this run
#: (``new_status``); a dropped claim has none and stays white
OUTCOME_FILL = {"holds": "#b9e3b2", "reversed": "#f4a9a8", "unresolved": "#dddddd"}


def _num(x: object) -> float:
    return float(x) if x not in (None, "") else math.nan


def _cell(status: str, d: object, lo: object, hi: object) -> str:
    """``status  diff [lo, hi]`` (``-`` for a design without the claim)."""
    if not status:
        return "-"
    d, lo, hi = _num(d), _num(lo), _num(hi)
    return f"{status}  {d:.3g} [{lo:.3g}, {hi:.3g}]" if math.isfinite(d) else status


def previous_pages(run_dir: str | Path) -> list[Figure]:
    """The pages, or none when the run directory has no ``paper_vs_previous.csv``."""
    path = Path(run_dir) / "paper_vs_previous.csv"
    if not path.is_file():
        return []
    df = pd.read_csv(path, keep_default_na=False,
                     dtype={"old_status": str, "new_status": str, "change": str})
    fig = new_page("Beside the previous design: verdicts and every claim that moved",
                   "Previous design: R = 10 (16 for Per-FedAvg), seeds 0..R-1, Per-FedAvg grid "
                   "{1,4}/L, Table 3 grid {2,8,32}/L, Fig. 2(b) t_h = 60.  This run: the "
                   "design of issue 22, fixed before it ran (R = 40, 64 for Per-FedAvg, fresh "
                   "seeds, grids extended once past the edge picks, Fig. 2(b) t_h until the "
                   "synchronous methods complete 30 rounds).  Never re-run to change a verdict.")
    rows, fills = [], []
    for exp, g in df.groupby("experiment", sort=False):
        ch = g["change"].value_counts()
        old_v = next((v for v in g["old_verdict"] if v), "-")
        new_v = next((v for v in g["new_verdict"] if v), "-")
        rows.append([exp, old_v, new_v, ", ".join(f"{k} {ch[k]}" for k in CHANGES if k in ch)])
        fills.append([None, None, None, None])
    y = draw_table(fig, 0.03, 0.85, [0.2, 0.16, 0.16, 0.44],
                   ["experiment", "previous verdict", "this run", "claims"], rows, fills,
                   size=8, row_h=0.032) - 0.015
    y = draw_wrapped(fig, 0.01, y, "Every claim that moved.  The change cell is coloured by "
                     "the claim's outcome against the paper in this run: holds green, "
                     "reversed red, unresolved grey (none: dropped).", 0.98, size=7,
                     max_lines=2) - 0.01
    moved = df[df["change"] != "same"]
    body = [[r.experiment, f"{r.setting}: {r.claim}"[:90],
             _cell(r.old_status, r.old_diff, r.old_ci_low, r.old_ci_high),
             _cell(r.new_status, r.new_diff, r.new_ci_low, r.new_ci_high),
             r.change] for r in moved.itertuples()]
    bfill = [[None, None, None, None, OUTCOME_FILL.get(st)] for st in moved["new_status"]]
    pages, k, row_h = [fig], 0, 0.021
    head = ["experiment", "setting: claim", "previous: status, diff [99% CI]",
            "this run: status, diff [99% CI]", "change"]
    wid = [0.12, 0.4, 0.19, 0.19, 0.08]
    while k < len(body):
        fit = int((y - 0.03) / row_h) - 1
        if fit < 2:
            fig = new_page("Beside the previous design (continued)", "")
            pages.append(fig)
            y = 0.88
            continue
        y = draw_table(fig, 0.01, y, wid, head, body[k:k + fit], bfill[k:k + fit], size=5.5,
                       row_h=row_h) - 0.015
        k += fit
    return pages
