"""The PDF page of ``fedsim search`` (issue 11 item 3): worst instance and a ratio heat map.

One A4-landscape page: on the left the worst instance (largest ``ratio`` of the search's
objective) with its parameters, bound and status, measured value and method, and -- if it
was confirmed -- validate's verdict with the 99% CI of the confirmation run; on the right a
heat map of the ratio over two chosen parameters (the maximum over every other parameter,
grid points only; refinement points overlaid as dots), with ratio = 1 marked.
"""

from __future__ import annotations

import math
import os
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from fedsim.validation.report.layout import FONT, INK, PAGE_SIZE, SMALL  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from fedsim.safefile import atomic_writer  # noqa: E402

__all__ = ["search_page", "heat_axes"]

_SKIP = {"point", "theorem", "horizon", "bound", "status", "claim", "unknown_hypotheses",
         "failing_hypotheses", "measured", "error", "method", "oracle", "n_oracle", "phase",
         "seconds", "violation_ratio", "ratio", "verdict", "ci_low", "ci_high", "mc_mean",
         "oracle_z", "params", "mode"}


def heat_axes(df: pd.DataFrame, searched: list[str]) -> tuple[str, str] | None:
    """The two searched parameters with the most distinct grid values (None if < 2)."""
    grid = df[df["phase"] == "grid"]
    cand = sorted((c for c in searched if c in grid.columns and grid[c].nunique() > 1),
                  key=lambda c: -grid[c].nunique())
    return (cand[0], cand[1]) if len(cand) >= 2 else None


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _distinct_labels(values: list[float]) -> list[str]:
    """The fewest significant digits (3 to 8) that tell every value apart."""
    for digits in range(3, 9):
        out = [f"{v:.{digits}g}" for v in values]
        if len(set(out)) == len(out):
            return out
    return out


def _ratio_ticks(vmin: float, vmax: float) -> tuple[list[float], list[str]]:
    """Colour-bar ticks of a scale centred at ratio 1 (TwoSlopeNorm): 1, the two ends and two
    more on each half, so each half is labelled however unequal the halves' ranges are."""
    ticks = sorted({*np.linspace(vmin, 1.0, 4).tolist(), *np.linspace(1.0, vmax, 4).tolist()})
    return ticks, _distinct_labels(ticks)


def _overlay_refinement(ax: Any, df: pd.DataFrame, x: str, y: str, xs: list, ys: list) -> None:
    """Refinement points as dots on the heat map: each coordinate placed between the cells of
    its neighbouring grid levels (linear in the level index); numeric axes only."""
    ref = df[(df["phase"] != "grid") & np.isfinite(df["ratio"].astype(float))]
    if ref.empty or not all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                            for v in xs + ys):
        return
    px = np.interp(ref[x].astype(float), np.asarray(xs, float), np.arange(len(xs)))
    py = np.interp(ref[y].astype(float), np.asarray(ys, float), np.arange(len(ys)))
    ax.scatter(px, py, s=9, c="black", marker=".", label="refinement points")


def _excess_line(df: pd.DataFrame) -> str:
    """How many points have measured > bound, and how many of them were confirmed by engine
    Monte Carlo (a ``verdict``) or left unconfirmed (not re-run)."""
    over = df["violation_ratio"].astype(float) > 1
    verdict = (df["verdict"].astype(object).where(df["verdict"].notna(), "").astype(str)
               if "verdict" in df.columns else pd.Series([""] * len(df), index=df.index))
    done = over & ~verdict.isin(["", "nan"])
    said = ", ".join(f"{k} {n}" for k, n in verdict[done].value_counts().items())
    return (f"measured > bound at {int(over.sum())} points: {int(done.sum())} confirmed by "
            f"engine Monte Carlo" + (f" (verdict: {said})" if said else "")
            + f", {int((over & ~done).sum())} unconfirmed (not re-run)")


def search_page(df: pd.DataFrame, pdf: str | os.PathLike, *, title: str, objective: str,
                axes: tuple[str, str] | None = None, searched: list[str] | None = None) -> Path:
    """Write the one-page PDF of a search table (``search.csv`` rows) to ``pdf``."""
    pdf = Path(pdf)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    searched = searched or [c for c in df.columns if c not in _SKIP]
    axes = axes or heat_axes(df, searched)
    fig = plt.figure(figsize=PAGE_SIZE)
    fig.suptitle(title, fontsize=FONT + 4, x=0.03, ha="left")
    ok = df[np.isfinite(df["ratio"].astype(float))]
    lines = [f"objective: {objective} (ratio = "
             f"{'measured / bound' if objective == 'violation' else 'bound / measured'})",
             f"{len(df)} points ({int((df['phase'] == 'grid').sum())} grid, "
             f"{int((df['phase'] != 'grid').sum())} refinement); methods: "
             + ", ".join(f"{k} {v}" for k, v in df["method"].value_counts().items()),
             _excess_line(df), ""]
    colour = "black"
    if len(ok):
        w = ok.iloc[int(np.argmax(ok["ratio"].to_numpy(float)))]
        lines += ["worst instance:"] + [f"  {c} = {_fmt(w[c])}" for c in searched if c in w]
        lines += [f"  bound = {_fmt(w['bound'])}  [{w['status']}]",
                  f"  measured = {_fmt(w['measured'])} +- {_fmt(w['error'])}  ({w['method']},"
                  f" {w['oracle']})", f"  ratio = {_fmt(w['ratio'])}"]
        v = str(w.get("verdict", "") or "")
        if v and v != "nan":
            colour = INK.get(v, "black")
            lines += [f"  confirmation (engine, validate's 99% CI): {v}",
                      f"  CI [{_fmt(w['ci_low'])}, {_fmt(w['ci_high'])}] vs bound "
                      f"{_fmt(w['bound'])}"]
        elif w["violation_ratio"] > 1:
            lines.append("  not confirmed (confirmation cap reached or disabled)")
    lines += ["", "terms:",
              "  stopped: the time budget stopped the point before its oracle finished; "
              "it has no measurement and is not a violation",
              "  refused: the point is outside the theorem's or the oracle's domain",
              "  confirmed: a point with measured > bound re-run by engine Monte Carlo; "
              "its verdict (validate's 99% CI) is the one that counts",
              "  unconfirmed (measured > bound, not re-run: cap reached): NOT evidence that the "
              "bound holds there, nor a violation: an unchecked oracle excess"]
    width = int(0.36 * PAGE_SIZE[0] * 72 / (0.6 * (SMALL + 1)))   # monospace column
    lines = [w for ln in lines for w in (textwrap.wrap(ln, width, subsequent_indent="    ")
                                         or [""])]
    ax_t = fig.add_axes((0.03, 0.05, 0.36, 0.85))
    ax_t.axis("off")
    ax_t.text(0, 1, "\n".join(lines), va="top", ha="left", fontsize=SMALL + 1,
              family="monospace", color=colour, transform=ax_t.transAxes, wrap=True)
    ax = fig.add_axes((0.47, 0.1, 0.45, 0.78))
    grid = df[(df["phase"] == "grid") & np.isfinite(df["ratio"].astype(float))]
    piv, why = None, "heat map needs two searched parameters with several grid values"
    if axes is not None and not set(axes) <= set(df.columns):
        why = f"no column {', '.join(a for a in axes if a not in df.columns)} in the table"
    elif axes is not None:
        piv = grid.pivot_table(index=axes[1], columns=axes[0], values="ratio", aggfunc="max")
        why = ("" if np.isfinite(piv.to_numpy(float)).any() else
               f"no grid point with a finite ratio and values of {axes[0]}, {axes[1]}")
    if why:
        ax.axis("off")
        ax.text(0.5, 0.5, why, ha="center", fontsize=FONT)
    else:
        x, y = axes
        vals = piv.to_numpy(float)
        lo, hi = np.nanmin(vals), np.nanmax(vals)
        norm = TwoSlopeNorm(1.0, min(lo, 0.999), max(hi, 1.001)) if lo < 1 < hi else None
        im = ax.imshow(vals, origin="lower", aspect="auto", cmap="RdBu_r", norm=norm)
        ax.set_xticks(range(len(piv.columns)), [_fmt(v) for v in piv.columns],
                      fontsize=SMALL, rotation=45)
        ax.set_yticks(range(len(piv.index)), [_fmt(v) for v in piv.index], fontsize=SMALL)
        ax.set_xlabel(x, fontsize=FONT)
        ax.set_ylabel(y, fontsize=FONT)
        ax.set_title("max ratio over the other parameters (grid); 1 = white; black dots: "
                     "refinement points", fontsize=FONT)
        for (i, j), v in np.ndenumerate(vals):
            if np.isfinite(v) and vals.size <= 120:   # over the dots, readable on any cell
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=SMALL, zorder=5,
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.75, pad=1.0))
        _overlay_refinement(ax, df, x, y, list(piv.columns), list(piv.index))
        cbar = fig.colorbar(im, ax=ax, fraction=0.04)
        if norm is not None:
            ticks, labels = _ratio_ticks(norm.vmin, norm.vmax)
            cbar.set_ticks(ticks, labels=labels, fontsize=SMALL)
        cbar.set_label("ratio", fontsize=SMALL)
    with atomic_writer(pdf, "wb") as fh, PdfPages(fh) as pp:
        pp.savefig(fig)
    plt.close(fig)
    return pdf
