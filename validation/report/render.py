"""The report's pages drawn and written to one PDF, over several processes where that pays.

Drawing is most of a report's time (matplotlib lays out every text and tick of about a
hundred pages), and the pages are independent: each is a function of the run and of its
place in the plan (:func:`draw_page`).  :func:`write_pages` draws them in order into one
``PdfPages`` (one process), or, with ``workers > 1`` on a platform that forks, gives
contiguous chunks of pages to forked processes (only from a process whose other threads,
if any, are tqdm's monitor, which holds no lock the drawing needs: a Dask client's loop
keeps the drawing in one process; a fork needs no ``__main__`` guard in a user's script, as
a forkserver or spawn would), each writing its chunk to a PDF of its own, and joins the
chunks in plan order with ``pypdf`` (a well-kept PDF library: joining
PDFs by hand would mean rewriting their object tables).  Each page is drawn by the same
code in either case, so the pages are the same; only the PDF's object layout differs.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import matplotlib.pyplot as plt
from fedsim.validation.report.details import details_page
from fedsim.validation.report.plan import draw_footer
from fedsim.validation.report.plots import plots_page
from fedsim.validation.report.representative import representative_page
from fedsim.validation.report.summary import summary_page
from matplotlib.backends.backend_pdf import PdfPages

from fedsim.worstcase.report import worst_case_page

__all__ = ["draw_page", "write_pages", "default_workers", "MIN_PARALLEL_PAGES"]

#: fewer pages than this are drawn in one process (a fork costs more than it saves)
MIN_PARALLEL_PAGES = 12

#: what a forked worker draws (set in the parent just before the fork)
_JOB: dict[str, Any] = {}


def draw_page(run: Any, plan: list, i: int) -> Any:
    """The figure of page ``i`` (1-based) of ``plan``, footer included."""
    kind, arg = plan[i - 1]
    if kind == "summary":
        fig = summary_page(run, arg)
    elif kind == "plots":
        fig = plots_page(run, *arg)
    elif kind == "details":
        fig = details_page(run, *arg)
    elif kind == "worstcase":
        fig = worst_case_page(run.verdicts, arg)
    else:
        fig = representative_page(run, *arg)
    draw_footer(fig, i, len(plan), run)
    return fig


def default_workers(pages: int) -> int:
    """Processes :func:`write_pages` uses by default: the machine's cores (at most 4) for
    a plan of at least :data:`MIN_PARALLEL_PAGES` pages in a process that may fork (module
    docstring; not a daemonic one, which may start none), else 1."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if (pages < MIN_PARALLEL_PAGES or mp.current_process().daemon
            or "fork" not in mp.get_all_start_methods()
            or any(t.name != "tqdm_monitor" for t in others)):
        return 1
    return max(1, min(4, os.cpu_count() or 1))


def _draw_into(pdf: PdfPages, run: Any, plan: list, pages: range, png_dir: Path | None,
               png_dpi: int) -> None:
    for i in pages:
        fig = draw_page(run, plan, i)
        pdf.savefig(fig)
        if png_dir is not None:
            fig.savefig(png_dir / f"page-{i:02d}.png", dpi=png_dpi)
        plt.close(fig)


def _chunk(bounds: tuple[int, int]) -> tuple[str, int]:
    """Worker: pages ``bounds[0] .. bounds[1] - 1`` into a PDF of their own."""
    job = _JOB
    lo, hi = bounds
    path = Path(job["dir"]) / f"pages-{lo:04d}.pdf"
    with plt.rc_context(job["rc"]), PdfPages(path) as pdf:
        _draw_into(pdf, job["run"], job["plan"], range(lo, hi), job["png_dir"],
                   job["png_dpi"])
    return str(path), hi - lo


def write_pages(run: Any, plan: list, fh: IO[bytes], *, rc: dict, metadata: dict,
                png_dir: Path | None = None, png_dpi: int = 60, workers: int = 1,
                tick: Callable[[int], None] | None = None) -> None:
    """Every page of ``plan`` into the PDF file ``fh`` (module docstring); ``tick(k)``
    after each ``k`` pages drawn (a progress bar's update)."""
    n = len(plan)
    if workers <= 1 or n < 2:
        with plt.rc_context(rc), PdfPages(fh, metadata=metadata) as pdf:
            for i in range(1, n + 1):
                _draw_into(pdf, run, plan, range(i, i + 1), png_dir, png_dpi)
                if tick is not None:
                    tick(1)
        return
    from pypdf import PdfWriter

    size = max(1, math.ceil(n / (4 * workers)))  # small chunks even out uneven pages
    bounds = [(lo, min(lo + size, n + 1)) for lo in range(1, n + 1, size)]
    with tempfile.TemporaryDirectory(prefix="fedsim-report-") as tmp:
        _JOB.update(run=run, plan=plan, rc=rc, dir=tmp, png_dir=png_dir, png_dpi=png_dpi)
        try:
            with mp.get_context("fork").Pool(min(workers, len(bounds))) as pool:
                parts = []
                for path, k in pool.imap(_chunk, bounds):
                    parts.append(path)
                    if tick is not None:
                        tick(k)
        finally:
            _JOB.clear()
        writer = PdfWriter()
        for path in parts:
            writer.append(path)
        writer.add_metadata({f"/{k}": str(v) for k, v in metadata.items()})
        writer.write(fh)
