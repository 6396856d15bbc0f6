"""The validation report: a PDF built with matplotlib alone (issue 6 item 6).

Input is a run directory holding ``verdicts.csv`` (``compare.VERDICT_COLUMNS`` plus
extras) and ``meta/*.json``, one per (theorem, scenario) pair, with the keys
``theorem, scenario, mode, title, description, x_label, expected_slope,
hypotheses [{name, holds, detail}], constants [{name, value, tag, reason}],
bound_status, step_sizes {...}, notes [str], representative {staleness_steps,
concurrency_time, concurrency_busy, concurrency_mean}`` (``representative`` may be
missing; the page then says so).  Optional keys: ``quantity`` (the y-axis label),
``bound_terms {mode: {horizons, bound, terms {name: [...]}}}`` (the bound's own terms per
horizon, written by ``suite_verdicts.collect``: a growing bound's panel names the term that
makes it grow, ``plots.growing_term``).

Page plan (deterministic; :func:`expected_pages` computes it without drawing):

1. summary: ``ceil(G / SUMMARY_ROWS)`` pages (at least 1), G = number of
   (theorem, scenario, mode) groups in verdicts.csv; a colour-coded table
   theorem x scenario x mode with the verdict counts over horizons and totals;
2. for each theorem, in order of first appearance (verdicts first, then meta):

   * ``ceil(P / PANELS_PER_PAGE)`` plot pages, P = its (scenario, mode) groups in
     verdicts.csv: log-log panels of the MC mean with CI error bars, the bound,
     the exact oracle and the theorem's order vs T or K;
   * the details of each scenario (union of verdicts and meta): every hypothesis,
     every constant with its tag, tightness and slope per mode, step sizes, notes, on
     as many pages as they need (``details.details_parts``; a table continues on the
     next page, nothing is cut);
   * ``max(1, ceil(S / REPR_PER_PAGE))`` representative-run pages, S = its
     scenarios: staleness histogram and concurrency curve of one run per scenario.

A4 landscape, fonts >= 8 pt.  ``build_report(..., png_dir=...)`` also saves every
page as a PNG (the same figures), for previewing without a PDF rasteriser.

The package: :mod:`~validation.report.layout` (page grid, styles, text boxes, tables),
:mod:`~validation.report.plan` (loading a run directory, the page plan) and one module
per kind of PAGE: :mod:`~validation.report.summary`, :mod:`~validation.report.plots`,
:mod:`~validation.report.details`, :mod:`~validation.report.representative`.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from fedsim.validation.report.details import details_page, details_parts  # noqa: E402
from fedsim.validation.report.layout import (  # noqa: E402
    FILL,
    FONT,
    INK,
    PAGE_SIZE,
    SMALL,
    fmt_horizon,
    fmt_value,
    shorten_middle,
)
from fedsim.validation.report.plan import (  # noqa: E402
    PANELS_PER_PAGE,
    REPR_PER_PAGE,
    SUMMARY_ROWS,
    Run,
    load_run,
    page_plan,
)
from fedsim.validation.report.plots import meta_for, plots_page  # noqa: E402
from fedsim.validation.report.render import default_workers, write_pages  # noqa: E402
from fedsim.validation.report.representative import representative_page  # noqa: E402
from fedsim.validation.report.summary import control_cell, summary_page  # noqa: E402
from fedsim.validation.rundir import check_run_dir  # noqa: E402

from fedsim.safefile import atomic_writer  # noqa: E402

__all__ = [
    "build_report",
    "expected_pages",
    "load_run",
    "PAGE_SIZE",
    "SUMMARY_ROWS",
    "PANELS_PER_PAGE",
    "REPR_PER_PAGE",
]

# the names of the single-module report (before the split into layout and pages), kept for
# callers and tests that reach into it
_REEXPORTED = (FILL, INK, SMALL, Run, fmt_value, fmt_horizon, shorten_middle)
_summary_page, _plots_page = summary_page, plots_page


def _plan(run: Run) -> list:
    """:func:`page_plan` with the details module's page count (tests reach into it)."""
    return page_plan(run, details_parts)



_details_page, _repr_page = details_page, representative_page
_control_cell, _meta_for = control_cell, meta_for


def expected_pages(run_dir: str | os.PathLike) -> int:
    """Number of pages :func:`build_report` will write for ``run_dir`` (see module doc)."""
    return len(page_plan(load_run(run_dir), details_parts))


def build_report(run_dir: str | os.PathLike, pdf_path: str | os.PathLike | None = None, *,
                 png_dir: str | os.PathLike | None = None, png_dpi: int = 60,
                 progress: bool = False, workers: int | None = None) -> int:
    """Write the PDF report of ``run_dir`` to ``pdf_path`` (default ``run_dir/report.pdf``).

    Returns the number of pages (== :func:`expected_pages`).  With ``png_dir`` every
    page is also saved as ``page-NN.png`` at ``png_dpi``.  The PDF is written to a
    temporary file and renamed, so an interrupted build leaves no partial report.
    The run directory is checked first (:func:`fedsim.validation.rundir.check_run_dir`: against
    its ``suite.json``, structure of verdicts.csv and meta/*.json); a damaged one raises
    :class:`fedsim.errors.FedsimError` with a one-line reason and nothing is drawn.
    ``progress``: a ``report pages`` bar on stderr (``fedsim report``).  ``workers``:
    processes drawing the pages (default :func:`~fedsim.validation.report.render.
    default_workers`: the cores, for a report of a dozen pages or more; the pages are the
    same whatever the number).
    """
    check_run_dir(run_dir)
    run = load_run(run_dir)
    pdf_path = Path(pdf_path) if pdf_path is not None else run.run_dir / "report.pdf"
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    if png_dir is not None:
        Path(png_dir).mkdir(parents=True, exist_ok=True)
    plan = page_plan(run, details_parts)
    rc = {"font.size": FONT, "axes.titlesize": FONT, "legend.fontsize": SMALL,
          "pdf.fonttype": 42, "legend.loc": "upper right"}   # "best" is slow and warns
    bar = None
    if progress:
        import sys

        from tqdm import tqdm

        bar = tqdm(total=len(plan), desc="report pages", unit="page", file=sys.stderr,
                   mininterval=0.5, leave=False)
    with atomic_writer(pdf_path, "wb") as fh:
        write_pages(run, plan, fh, rc=rc,
                    metadata={"Title": "fedsim validation report", "Creator": "fedsim"},
                    png_dir=Path(png_dir) if png_dir is not None else None, png_dpi=png_dpi,
                    workers=default_workers(len(plan)) if workers is None else int(workers),
                    tick=bar.update if bar is not None else None)
    if bar is not None:
        bar.close()
    return len(plan)
