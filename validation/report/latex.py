"""``fedsim report RUN --latex DIR``: the verdicts as LaTeX tables and every panel as a
vector figure, for a paper.

* ``DIR/verdicts-<theorem>.tex``: one booktabs ``tabular`` per theorem, a row per (scenario,
  mode, horizon): mean, its CI, the bound, bound / mean, the bound's status and the verdict
  (needs ``\\usepackage{booktabs}``);
* ``DIR/summary.tex``: one row per (theorem, scenario, mode) with the verdict counts;
* ``DIR/figures/<theorem>__<scenario>__<mode>.pdf`` and ``.svg``: the report's panel
  (:func:`fedsim.validation.report.plots.draw_panel`) alone, as vector graphics.

Every text is escaped for LaTeX; file names keep letters, digits, ``-`` and ``_``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from fedsim.validation.report.layout import STATUS_ORDER, fmt_value  # noqa: E402
from fedsim.validation.report.plan import load_run  # noqa: E402
from fedsim.validation.report.plots import draw_panel, meta_for  # noqa: E402
from fedsim.validation.report.summary import group_verdict  # noqa: E402
from fedsim.validation.rundir import check_run_dir  # noqa: E402

from fedsim.safefile import atomic_writer  # noqa: E402

__all__ = ["write_latex", "tex_escape", "file_stem"]

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def tex_escape(text: object) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX.get(c, c) for c in str(text))


def file_stem(*parts: str) -> str:
    """``theorem__scenario__mode`` with anything but letters, digits, ``-`` and ``_`` as
    ``-`` (an empty mode is left out)."""
    return "__".join(re.sub(r"[^A-Za-z0-9_-]+", "-", p) for p in parts if p)


def _tabular(cols: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
             " & ".join(tex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(tex_escape(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)


def write_latex(run_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
                progress: bool = False) -> list[Path]:
    """Write the tables and figures of ``run_dir`` (checked first, as ``build_report``
    does) into ``out_dir``; returns the files written.  ``progress``: a ``latex figures``
    bar on stderr, one step per panel (``fedsim report --latex``)."""
    check_run_dir(run_dir)
    run = load_run(run_dir)
    bar = None
    if progress:
        import sys

        from tqdm import tqdm

        bar = tqdm(total=sum(len(run.groups[th]) for th in run.theorems),
                   desc="latex figures", unit="figure", file=sys.stderr, mininterval=0.5,
                   leave=False)
    out = Path(out_dir)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    v = run.verdicts
    written: list[Path] = []
    summary = []
    for th in run.theorems:
        rows = []
        for sc, md in run.groups[th]:
            sub = v[(v["theorem"] == th) & (v["scenario"] == sc) & (v["mode"] == md)]
            sub = sub.sort_values("horizon")
            for _, r in sub.iterrows():
                rows.append([sc, md or "-", fmt_value(r["horizon"]), fmt_value(r["mean"]),
                             f"[{fmt_value(r['ci_low'])}, {fmt_value(r['ci_high'])}]",
                             fmt_value(r["bound"]), fmt_value(r["tightness"]),
                             str(r["status"]), str(r["verdict"]).replace("_", " ")])
            counts = [str(int((sub["verdict"] == k).sum())) for k in STATUS_ORDER]
            summary.append([th, sc, md or "-", str(len(sub)), *counts,
                            group_verdict(list(sub["verdict"])).replace("_", " ")])
            meta = {**meta_for(run, th), **run.meta.get((th, sc), {})}
            fig, ax = plt.subplots(figsize=(3.6, 2.7))
            draw_panel(ax, sub, meta)
            ax.set_title(f"{sc} [{md}]" if md else sc, fontsize=8)
            fig.tight_layout()
            for ext in ("pdf", "svg"):
                p = out / "figures" / f"{file_stem(th, sc, md)}.{ext}"
                with atomic_writer(p, "wb") as fh:
                    fig.savefig(fh, format=ext)
                written.append(p)
            plt.close(fig)
            if bar is not None:
                bar.update(1)
        p = out / f"verdicts-{file_stem(th)}.tex"
        _write(p, f"% {tex_escape(th)}: fedsim verdicts (needs \\usepackage{{booktabs}})\n"
               + _tabular("llrrlrrll", ["scenario", "mode", "T/K", "mean", "CI", "bound",
                                        "bound/mean", "status", "verdict"], rows))
        written.append(p)
    p = out / "summary.tex"
    _write(p, "% fedsim verdict summary (needs \\usepackage{booktabs})\n"
           + _tabular("lllr" + "r" * len(STATUS_ORDER) + "l",
                      ["theorem", "scenario", "mode", "#T/K",
                       *[k.replace("_", " ") for k in STATUS_ORDER], "overall"], summary))
    written.append(p)
    if bar is not None:
        bar.close()
    return written
