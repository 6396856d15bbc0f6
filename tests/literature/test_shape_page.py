"""The koloskova_shape report page's curve panels (fedsim.validation.report.paper_pages,
``_curves``): every panel's arms are named by a legend on the page, and no y tick label of
a log panel spanning more than a decade leaves the page (round eleven's tau_C panel had no
legend and its minor tick labels, "4x10^-3", were cut at the left edge)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from fedsim.validation.report.paper_pages import experiment_page


def _curve(setting: str, label: str, top: float, floor: float) -> dict:
    mean = [top, top / 2, floor, floor]
    return {"setting": setting, "label": label,
            "curve": {"mean": mean, "lo": [0.9 * m for m in mean], "hi": [1.1 * m for m in mean]},
            "busy": {"mean": [1.0] * 4, "lo": [1.0] * 4, "hi": [1.0] * 4}}


def _summary() -> dict:
    """Two settings with disjoint arm labels (the page's tau_C and tau_max panels), the
    first on a log axis from 1.5e-4 to 5e-3."""
    curves = {"a": _curve("tau_C = n grown", "const steps, n = 2", 5e-3, 1.6e-4),
              "b": _curve("tau_C = n grown", "const steps, n = 16", 4e-3, 2e-3),
              "c": _curve("tau_max grown", "adapt steps, m = 1", 1e-2, 9e-4),
              "d": _curve("tau_max grown", "adapt steps, m = 32", 9e-3, 8e-4)}
    claim = {"text": "slope < 1", "diff": -0.1, "lo": -0.2, "hi": -0.05, "pairs": 8,
             "status": "holds"}
    row = {"setting": "s", "label": "const steps, n = 2", "avg_grad_sq": [1e-3, 9e-4, 1.1e-3],
           "busy": [1, 1, 1], "n": 8, "n_diverged": 0}
    return {"name": "koloskova_shape", "title": "rate shapes", "source": "Koloskova et al.",
            "claim": "c", "analogue": "a", "rule": "r", "verdict": "reproduced",
            "replicates": 8, "tune_replicates": 0, "selection": {}, "extra": {},
            "grid": [0.0, 1.0, 2.0, 3.0], "curves": curves, "curve_metric": "avg_grad_sq",
            "curve_log": True, "metrics": ["avg_grad_sq"], "table": [row], "targets": {},
            "claims": [claim], "horizon": 3.0}


def test_every_panel_is_named_and_its_tick_labels_stay_on_the_page(tmp_path: Path):
    fig = experiment_page(_summary(), tmp_path)[0]
    try:
        fig.canvas.draw()
        panels = [ax for ax in fig.axes if ax.get_lines()]
        assert len(panels) == 2
        named = set()
        for ax in panels:
            leg = ax.get_legend()
            if leg is not None:
                named.update(t.get_text() for t in leg.get_texts())
        for ax in panels:
            assert set(ax.get_legend_handles_labels()[1]) <= named
        page = fig.bbox
        renderer = fig.canvas.get_renderer()
        for ax in panels:
            for t in ax.yaxis.get_ticklabels(which="both"):
                if not t.get_visible() or not t.get_text():
                    continue
                box = t.get_window_extent(renderer)
                assert box.x0 >= page.x0 and box.x1 <= page.x1, t.get_text()
    finally:
        plt.close(fig)
