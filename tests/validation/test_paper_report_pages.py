"""The paper report's pages (fedsim.validation.report.paper_pages / paper_previous): each
page is closed once written, and a moved claim's change cell is coloured by its outcome
against the paper."""

from __future__ import annotations

import json
import warnings

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from fedsim.validation.report.paper_pages import build_paper_report
from fedsim.validation.report.paper_previous import OUTCOME_FILL, previous_pages
from matplotlib.colors import to_hex
from matplotlib.patches import Rectangle


def _summary(name: str) -> dict:
    """A small experiment summary (the fields ``experiment_page`` draws; no curves)."""
    claim = {"text": f"{name}: a < b", "diff": -0.1, "lo": -0.2, "hi": -0.05, "pairs": 8,
             "status": "holds"}
    row = {"setting": "s", "label": "algo (1/L)", "f_gap": [0.5, 0.4, 0.6], "busy": [1, 1, 1],
           "n": 8, "n_diverged": 0}
    return {"name": name, "title": f"Experiment {name}", "source": "a paper", "claim": "a < b",
            "analogue": "a small analogue", "rule": "a rule", "verdict": "reproduced",
            "replicates": 8, "tune_replicates": 0, "selection": {}, "extra": {},
            "grid": [0.0, 1.0], "curves": {}, "curve_metric": "f_gap", "curve_log": False,
            "metrics": ["f_gap"], "table": [row], "targets": {}, "claims": [claim],
            "horizon": 1.0}


def test_the_report_closes_each_page_once_written(tmp_path):
    """The report opens at most one page at a time here: with matplotlib's open-figure
    warning at 1, building 1 + 3 pages warns nothing, and no figure is left open (the
    report used to draw all pages first: the "more than 20 figures" warning)."""
    names = ["e1", "e2", "e3"]
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "index.json").write_text(json.dumps({"experiments": names}))
    for nm in names:
        (tmp_path / "paper" / f"{nm}.json").write_text(json.dumps(_summary(nm)))
    before = plt.get_fignums()
    with matplotlib.rc_context({"figure.max_open_warning": 1}), \
            warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert build_paper_report(tmp_path, tmp_path / "r.pdf") == 1 + len(names)
    assert plt.get_fignums() == before
    assert (tmp_path / "r.pdf").read_bytes()[:5] == b"%PDF-"


def _change_fills(fig) -> dict[str, list[str]]:
    """``change text -> [fill colour of its cell, ...]`` for the moved-claims table (the
    last column, right of x = 0.9)."""
    rects = [a for a in fig.artists if isinstance(a, Rectangle)]
    out: dict[str, list[str]] = {}
    for t in fig.texts:
        x, y = t.get_position()
        if x < 0.9:
            continue
        for r in rects:
            (x0, y0), w, h = r.get_xy(), r.get_width(), r.get_height()
            if x0 <= x <= x0 + w and y0 <= y <= y0 + h:
                out.setdefault(t.get_text(), []).append(to_hex(r.get_facecolor()))
    return out


def test_change_is_coloured_by_the_outcome_against_the_paper(tmp_path):
    """Resolved as reversed is red, resolved as holds green, unresolved now grey, a flip to
    reversed red, a dropped claim white; the change column keeps its text."""
    def row(claim, old, new, change):
        return {"experiment": "x", "setting": "s", "claim": claim, "old_verdict": "v",
                "new_verdict": "v" if new else "", "old_status": old, "new_status": new,
                "old_diff": 0.1, "old_ci_low": 0.0, "old_ci_high": 0.2, "new_diff": 0.1,
                "new_ci_low": 0.0, "new_ci_high": 0.2, "change": change}

    pd.DataFrame([row("c1", "unresolved", "reversed", "resolved"),
                  row("c2", "unresolved", "holds", "resolved"),
                  row("c3", "holds", "unresolved", "unresolved now"),
                  row("c4", "holds", "reversed", "flipped"),
                  row("c5", "holds", "", "dropped"),
                  row("c6", "holds", "holds", "same")]).to_csv(
        tmp_path / "paper_vs_previous.csv", index=False)
    pages = previous_pages(tmp_path)
    try:
        fills = _change_fills(pages[0])
    finally:
        for f in pages:
            plt.close(f)
    assert fills["resolved"] == [OUTCOME_FILL["reversed"], OUTCOME_FILL["holds"]]
    assert fills["unresolved now"] == [OUTCOME_FILL["unresolved"]]
    assert fills["flipped"] == [OUTCOME_FILL["reversed"]]
    assert fills["dropped"] == ["#ffffff"]
    assert "same" not in fills  # unmoved claims are in the CSV only
    assert OUTCOME_FILL == {"holds": "#b9e3b2", "reversed": "#f4a9a8", "unresolved": "#dddddd"}
