"""The report LAYOUT: page size, fonts, verdict colours, and the text and table primitives.

Every page of :mod:`fedsim.validation.report` is an A4-landscape matplotlib figure drawn in figure
coordinates with these helpers (fonts >= 8 pt); they know nothing about verdicts or theorems.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = ["PAGE_SIZE", "FONT", "SMALL", "FILL", "INK", "STATUS_ORDER", "STATUS_SHORT",
           "FOOTER_TOP", "fmt_value", "fmt_horizon", "fmt_range", "truncate", "shorten_middle",
           "wrap_ident",
           "chars_fitting", "chars_in_axes", "wrapped_lines", "draw_wrapped", "row_lines",
           "row_height", "draw_table", "new_page"]


PAGE_SIZE = (11.69, 8.27)  # A4 landscape, inches
FONT = 9
SMALL = 8
#: the top of the footer line (:func:`fedsim.validation.report.plan.draw_footer`, at y = 0.015)
FOOTER_TOP = 0.03

FILL = {"holds": "#b9e3b2", "violated": "#f4a9a8", "inconclusive": "#fde3a7",
        "not_applicable": "#dcdcdc", "error": "#c9a0dc"}
INK = {"holds": "#2e7d32", "violated": "#c62828", "inconclusive": "#e08a00",
       "not_applicable": "#7f7f7f", "error": "#6a1b9a"}
STATUS_ORDER = ("holds", "violated", "inconclusive", "not_applicable", "error")
STATUS_SHORT = {"holds": "holds", "violated": "violated", "inconclusive": "inconcl.",
                "not_applicable": "n/a", "error": "ERROR"}


def fmt_value(v: Any, digits: int = 3) -> str:
    """A table cell: ``digits`` significant digits, ``-`` for None/NaN, ``yes``/``no`` for
    booleans, the first four items of a list."""
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
        head = ", ".join(fmt_value(x, digits) for x in v[:4])
        return "[" + head + (", ...]" if len(v) > 4 else "]")
    return str(v)


def fmt_horizon(x: float) -> str:
    """A horizon: integers in full (10000, not 1e+04)."""
    x = float(x)
    return f"{int(x)}" if math.isfinite(x) and x == int(x) and abs(x) < 1e7 else fmt_value(x)


def truncate(s: str, n: int) -> str:
    """``s`` on one line, cut to ``n`` characters with an ellipsis at the end."""
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: max(1, n - 1)] + "\u2026"


def shorten_middle(s: str, n: int) -> str:
    """Shorten an identifier in the middle, keeping its (distinguishing) end."""
    s = " ".join(str(s).split())
    if len(s) <= n:
        return s
    head = max(1, (n - 1) // 2)
    return s[:head] + "\u2026" + s[len(s) - (n - 1 - head):]


_BREAKS = re.compile(r"(?<=[/ ])|(?<=_)(?![{(])|(?<=-)(?=[A-Za-z])")


def wrap_ident(text: str, n: int, lines: int | None = None) -> list[str]:
    """``text`` in lines of at most ``n`` characters, broken at spaces; a word longer than a
    line is broken after ``_ /`` or a ``-`` before a letter, never inside a subscript such as
    ``x_{k+1}`` (identifiers such as ``counterexample-M50-K9`` or
    ``PAPER_LITERAL_KNOWN_ERRATUM`` wrap whole, never cut, and a word that fits on a line is
    never split: ``[paper_literal]`` stays whole); a piece longer than a line is split.  With
    ``lines``, more lines than that end in an ellipsis (callers size their boxes so this does
    not happen)."""
    s = " ".join(str(text).split())
    if "_" in s and sum(c.isupper() for c in s) > len(s) / 2:  # capitals: wider than 0.62 em
        n = max(3, int(n * 0.62 / 0.72))
    out: list[str] = []
    cur = ""
    for word in s.split(" "):
        pieces = [word] if len(word) <= n else [p for p in _BREAKS.split(word) if p]
        for k, piece in enumerate(pieces):
            sep = " " if k == 0 and cur else ""
            if cur and len(cur) + len(sep) + len(piece) > n:
                out.append(cur)
                cur, sep = "", ""
            while len(cur) + len(sep) + len(piece) > n:     # only when piece alone is too long
                room = n - len(cur) - len(sep)
                out.append(cur + sep + piece[:room])
                cur, sep, piece = "", "", piece[room:]
            cur += sep + piece
    if cur or not out:
        out.append(cur)
    if lines is not None and len(out) > lines:
        out = out[:lines - 1] + [truncate(" ".join(out[lines - 1:]), n)]
    return out


def chars_fitting(width_frac: float, size: float = SMALL) -> int:
    """How many characters of a ``size``-pt font fit in ``width_frac`` of the page width."""
    return max(3, int((width_frac * PAGE_SIZE[0] * 72 - 5.0) / (0.62 * size)))


def chars_in_axes(ax: Any, size: float = SMALL) -> int:
    """How many characters of a ``size``-pt font fit across the axes ``ax`` (its gridspec
    position on the page), less a margin."""
    return max(12, chars_fitting(ax.get_position().width, size) - 2)


def wrapped_lines(text: str, width: float, size: float = FONT) -> list[str]:
    """``text`` wrapped to ``width`` (page fraction) at ``size`` pt, as :func:`draw_wrapped`
    writes it."""
    return textwrap.wrap(" ".join(str(text).split()), chars_fitting(width, size)) or [""]


def draw_wrapped(fig: Figure, x: float, y: float, text: str, width: float, size: float = FONT,
          max_lines: int | None = 4, **kw: Any) -> float:
    """Write wrapped text from (x, y) downwards (all of it with ``max_lines=None``); return
    the y below it."""
    lines = wrapped_lines(text, width, size)
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = truncate(lines[-1] + " ...", chars_fitting(width, size))
    fig.text(x, y, "\n".join(lines), fontsize=size, va="top", ha="left", **kw)
    return y - len(lines) * size * 1.45 / 72 / PAGE_SIZE[1]


def row_lines(cells: Sequence[str], widths: Sequence[float], size: float = SMALL) -> int:
    """How many lines the tallest cell of a table row needs, each cell wrapped whole
    (:func:`wrap_ident`) to its column."""
    return max([len(wrap_ident(str(t), chars_fitting(w, size) - 1))
                for t, w in zip(cells, widths, strict=True)] or [1])


def row_height(n_lines: int, size: float = SMALL, row_h: float = 0.027) -> float:
    """The height (page fraction) of a table row of ``n_lines`` lines (:func:`draw_table`)."""
    return row_h + (max(1, n_lines) - 1) * size * 1.3 / 72 / PAGE_SIZE[1]


def draw_table(fig: Figure, x0: float, y_top: float, widths: Sequence[float], header: Sequence[str],
           rows: Sequence[Sequence[str]], fills: Sequence[Sequence[str | None]] | None = None,
           size: float = SMALL, row_h: float = 0.027, max_rows: int | None = None,
           lines: int | None = 1) -> float:
    """Draw a table in figure coordinates; return the bottom y.

    Cells are wrapped to at most ``lines`` lines (body rows) and truncated with an ellipsis;
    with ``lines=None`` each row is as tall as its tallest cell (:func:`row_lines`): nothing
    is cut.
    """
    rows = [list(r) for r in rows]
    fills = [list(f) for f in fills] if fills is not None else [[None] * len(widths)] * len(rows)
    if max_rows is not None and len(rows) > max_rows:
        more = len(rows) - (max_rows - 1)
        rows = rows[: max_rows - 1] + [[f"... {more} more rows not shown"] +
                                       [""] * (len(widths) - 1)]
        fills = fills[: max_rows - 1] + [[None] * len(widths)]
    y = y_top
    for r, (cells, fill) in enumerate([(header, ["#e8eaf0"] * len(widths))] +
                                      list(zip(rows, fills, strict=True))):
        n_lines = 1 if r == 0 else (lines or row_lines(cells, widths, size))
        h = row_height(n_lines, size, row_h)
        x = x0
        for c, (w, txt) in enumerate(zip(widths, cells, strict=True)):
            colour = fill[c] if c < len(fill) else None
            fig.add_artist(Rectangle((x, y - h), w, h, transform=fig.transFigure,
                                     facecolor=colour or "white", edgecolor="#9a9a9a",
                                     linewidth=0.4))
            is_last_note = r > 0 and str(cells[0]).startswith("... ") and c == 0
            n = chars_fitting(sum(widths) if is_last_note else w, size) - 1
            fig.text(x + 0.004, y - h / 2, _fit(txt, n, 1 if r == 0 else lines), fontsize=size,
                     va="center", ha="left", weight="bold" if r == 0 else "normal",
                     linespacing=1.15)
            x += w
        y -= h
    return y


def _fit(text: str, n: int, lines: int | None) -> str:
    """``text`` wrapped to ``n`` characters per line (:func:`wrap_ident`), at most ``lines``
    lines."""
    return "\n".join(wrap_ident(text, n, lines))


def new_page(title: str, subtitle: str = "") -> Figure:
    """A blank report page with its title and a wrapped subtitle."""
    fig = plt.figure(figsize=PAGE_SIZE)
    # a long title gets a smaller font (down to 9 pt), then wraps: never cut
    size = 14.0
    fits = int(0.94 * PAGE_SIZE[0] * 72 / (0.66 * size))
    if len(title) > fits:
        size = max(9.0, size * fits / len(title))
    text = "\n".join(wrap_ident(title, int(0.94 * PAGE_SIZE[0] * 72 / (0.66 * size))))
    fig.text(0.03, 0.965, text, fontsize=size, weight="bold", va="top")
    if subtitle:
        draw_wrapped(fig, 0.03, 0.925, subtitle, 0.94, size=FONT, max_lines=3, color="#333333")
    return fig


def fmt_range(x: pd.Series) -> str:
    """``min to max`` of the finite values (one number when they agree, ``-`` when none);
    "to", not a dash, so that a range wrapped over two lines never reads as a negative
    number ("3.67 -" / "- 4.34")."""
    x = x[np.isfinite(x.to_numpy(dtype=float))]
    if x.empty:
        return "-"
    lo, hi = float(x.min()), float(x.max())
    return fmt_value(lo) if lo == hi else f"{fmt_value(lo)} to {fmt_value(hi)}"
