"""The ``fedsim search`` PDF page (validation/report/search_page.py): end to end and degenerate.

A small search is run for real (theorem8-norm, n = 2, exact lumped oracle, no confirmation:
a few seconds), then the page is built and its matplotlib figure is inspected (axes, the heat
map's cells against the table's max-over-the-other-parameters, the text panel) and the PDF
checked (one page, > 10 kB).  Degenerate tables -- a search whose budget ends before the first
point, an objective that is NaN everywhere, a single point, partly NaN cells, heat axes that
are not columns -- must give a page, not an exception.
"""

from __future__ import annotations

import math
import re

import fedsim.validation.report.search_page as sp
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from fedsim.validation.report.layout import INK
from fedsim.validation.search import SearchSettings, run_search
from matplotlib.colors import TwoSlopeNorm

FAST = dict(refine=0, confirm=0, workers=1, progress=False)


@pytest.fixture
def figures(monkeypatch):
    """The figures search_page closes (kept open for inspection, closed at teardown)."""
    close = plt.close
    got: list = []
    monkeypatch.setattr(sp.plt, "close", lambda fig=None: got.append(fig))
    yield got
    for f in got:
        close(f)


def _pages(pdf) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf.read_bytes()))


def _text(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def _heat(fig):
    ims = [ax for ax in fig.axes if ax.images]
    assert len(ims) == 1
    return ims[0], ims[0].images[0]


# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_search_page")


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A real 2 x 3 x 3 grid search (M x K x p_s), exact oracle at every point."""
    out = tmp_path_factory.mktemp("search")
    st = SearchSettings(budget=120, grid=18, **FAST)
    df = run_search("theorem8-norm", "K=3..9, p_s=0.3..0.5, M=[10,50]", st, out=out,
                    fixed={"n": 2})
    return df, out


def test_end_to_end_page_has_the_heat_map_of_the_table(searched, figures, tmp_path):
    df, out = searched
    assert len(df) == 18 and (df["method"] == "exact").all() and (df["phase"] == "grid").all()
    pdf = sp.search_page(df, tmp_path / "p.pdf", title="t8", objective="violation",
                         searched=["K", "p_s", "M"])
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000
    assert _pages(pdf) == 1
    (fig,) = figures
    assert len(fig.axes) == 3                       # text panel, heat map, colour bar
    # the default heat axes: the two searched parameters with the most grid levels
    assert sp.heat_axes(df, ["K", "p_s", "M"]) in {("K", "p_s"), ("p_s", "K")}
    ax, im = _heat(fig)
    x, y = ax.get_xlabel(), ax.get_ylabel()
    assert {x, y} == {"K", "p_s"}
    vals = np.asarray(im.get_array(), dtype=float)
    assert vals.shape == (df[y].nunique(), df[x].nunique()) == (3, 3)
    # each cell is the maximum ratio over M at that (x, y): recomputed from the table
    for i, yv in enumerate(sorted(df[y].unique())):
        for j, xv in enumerate(sorted(df[x].unique())):
            cell = df[(df[x] == xv) & (df[y] == yv)]
            assert len(cell) == 2
            assert vals[i, j] == cell["ratio"].max()
    assert len(ax.texts) == 9                       # every cell annotated
    # the text panel names the worst point of the table
    w = df.iloc[0]
    assert w["ratio"] == df["ratio"].max()
    txt = _text(fig)
    assert "18 points (18 grid, 0 refinement); methods: exact 18" in txt
    assert f"  ratio = {w['ratio']:.4g}" in txt and f"  K = {w['K']}" in txt
    assert f"measured > bound at {int((df['violation_ratio'] > 1).sum())} points" in txt
    # the table read back from disk (10 significant digits) gives the same page
    again = pd.read_csv(out / "search.csv")
    sp.search_page(again, tmp_path / "q.pdf", title="t8", objective="violation",
                   searched=["K", "p_s", "M"])
    back = np.asarray(_heat(figures[1])[1].get_array(), dtype=float)
    assert np.allclose(back, vals, rtol=1e-9, atol=0)


def test_colour_scale_is_centred_at_one_when_ratios_straddle_it(searched, figures, tmp_path):
    df = searched[0].copy()
    df["ratio"] = np.linspace(0.5, 1.5, len(df))
    sp.search_page(df, tmp_path / "p.pdf", title="t", objective="violation", axes=("K", "p_s"))
    norm = _heat(figures[0])[1].norm
    assert isinstance(norm, TwoSlopeNorm) and norm.vcenter == 1.0
    df["ratio"] = np.linspace(0.1, 0.9, len(df))
    sp.search_page(df, tmp_path / "q.pdf", title="t", objective="violation", axes=("K", "p_s"))
    assert not isinstance(_heat(figures[1])[1].norm, TwoSlopeNorm)


@pytest.mark.parametrize("lo, hi", [(0.1, 1.14), (0.5, 1.5), (0.9, 40.0), (0.02, 1.003)])
def test_colour_bar_has_ticks_on_both_sides_of_one(searched, figures, tmp_path, lo, hi):
    """A ratio scale centred at 1 (TwoSlopeNorm) gives each half its own ticks: with the
    default locator a range [0.1, 1.14] had no tick above 1."""
    df = searched[0].copy()
    cell = df.groupby(["K", "p_s"]).ngroup().to_numpy()      # the same ratio for every M
    df["ratio"] = np.linspace(lo, hi, cell.max() + 1)[cell]
    sp.search_page(df, tmp_path / "p.pdf", title="t", objective="violation", axes=("K", "p_s"))
    fig = figures[0]
    ax, im = _heat(fig)
    assert isinstance(im.norm, TwoSlopeNorm) and (im.norm.vmin, im.norm.vmax) == (lo, hi)
    (cax,) = [a for a in fig.axes if a is not ax and a.get_ylim() != (0.0, 1.0)]
    ticks = [t for t in cax.get_yticks() if im.norm.vmin <= t <= im.norm.vmax]
    assert any(t > 1 for t in ticks) and any(t < 1 for t in ticks) and 1.0 in ticks
    labels = [t.get_text() for t in cax.get_yticklabels() if t.get_text()]
    assert len(labels) == len(set(labels)) >= 3         # distinct, readable labels


def test_verdict_and_unconfirmed_lines(searched, figures, tmp_path):
    df = searched[0].copy()
    top = df["ratio"].idxmax()
    df["violation_ratio"] = df["violation_ratio"].astype(float)
    df.loc[top, "violation_ratio"] = 1.5
    sp.search_page(df, tmp_path / "a.pdf", title="t", objective="violation")
    assert "not confirmed (confirmation cap reached or disabled)" in _text(figures[0])
    df.loc[top, ["verdict", "ci_low", "ci_high"]] = ["violated", 2.0, 3.0]
    sp.search_page(df, tmp_path / "b.pdf", title="t", objective="violation")
    txt = _text(figures[1])
    assert "confirmation (engine, validate's 99% CI): violated" in txt
    assert "CI [2, 3] vs bound" in txt and "not confirmed" not in txt
    n_over = int((df["violation_ratio"] > 1).sum())
    assert (f"measured > bound at {n_over} points: 1 confirmed by engine Monte Carlo "
            f"(verdict: violated 1), {n_over - 1} unconfirmed (not re-run)") in \
        " ".join(txt.split())
    panel = next(t for ax in figures[1].axes for t in ax.texts if "worst instance" in
                 t.get_text())
    assert panel.get_color() == INK["violated"]


def test_budget_spent_before_the_first_point(tmp_path, figures):
    """Zero points: the search writes an empty table (with its columns) and the page says so."""
    st = SearchSettings(budget=1e-9, grid=4, **FAST)
    df = run_search("theorem8-norm", "K=3..8, p_s=0.3..0.5, M=[10]", st, out=tmp_path,
                    fixed={"n": 2})
    assert df.empty
    for col in ("K", "p_s", "bound", "measured", "ratio", "phase", "point"):
        assert col in df.columns
    csv = pd.read_csv(tmp_path / "search.csv")
    assert csv.empty and list(csv.columns) == list(df.columns)
    import json

    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["points"] == 0 and s["violations"] == 0 and s["budget_exhausted"]
    for i, (table, axes) in enumerate([(df, None), (csv, ("K", "p_s"))]):
        pdf = sp.search_page(table, tmp_path / f"e{i}.pdf", title="t", objective="violation",
                             axes=axes, searched=["K", "p_s"])
        assert pdf.stat().st_size > 5_000 and _pages(pdf) == 1
        fig = figures[i]
        assert len(fig.axes) == 2 and not any(ax.images for ax in fig.axes)
        txt = _text(fig)
        assert "0 points (0 grid, 0 refinement)" in txt and "worst instance" not in txt
    assert "no grid point with a finite ratio" in _text(figures[1])


def test_all_nan_objective(searched, figures, tmp_path):
    df = searched[0].copy()
    df["ratio"] = math.nan
    for i, axes in enumerate([None, ("K", "p_s")]):
        pdf = sp.search_page(df, tmp_path / f"n{i}.pdf", title="t", objective="looseness",
                             axes=axes)
        assert pdf.stat().st_size > 5_000
        txt = _text(figures[i])
        assert len(figures[i].axes) == 2 and "worst instance" not in txt
        assert "no grid point with a finite ratio" in txt
        assert "ratio = bound / measured" in txt


def test_partly_nan_cells_are_blank(searched, figures, tmp_path):
    df = searched[0].copy()
    df = df[df["M"] == 10].copy()
    kmax = df["K"].max()
    df.loc[df["K"] == kmax, "ratio"] = math.nan      # one whole column of the heat map
    sp.search_page(df, tmp_path / "p.pdf", title="t", objective="violation", axes=("K", "p_s"))
    ax, im = _heat(figures[0])
    vals = np.asarray(im.get_array(), dtype=float)
    assert vals.shape == (3, 2)                      # the NaN column has no grid point left
    assert np.isfinite(vals).all() and len(ax.texts) == 6


def test_single_point(tmp_path, figures):
    st = SearchSettings(budget=60, grid=1, **FAST)
    df = run_search("theorem8-norm", "K=[5], M=[10]", st, out=tmp_path, fixed={"n": 2})
    assert len(df) == 1
    assert sp.heat_axes(df, ["K", "M"]) is None
    sp.search_page(df, tmp_path / "a.pdf", title="t", objective="violation",
                   searched=["K", "M"])
    fig = figures[0]
    assert len(fig.axes) == 2 and "heat map needs two searched parameters" in _text(fig)
    assert "  K = 5" in _text(fig) and "  M = 10" in _text(fig)
    sp.search_page(df, tmp_path / "b.pdf", title="t", objective="violation", axes=("K", "M"))
    ax, im = _heat(figures[1])
    assert np.asarray(im.get_array()).shape == (1, 1)
    assert float(np.asarray(im.get_array())[0, 0]) == df["ratio"].iloc[0]


def test_heat_axes_not_in_the_table(searched, figures, tmp_path):
    """``--heat p,K``: ``p`` is a list parameter: an empty (None) column of search.csv when it
    is not given, no column when it is (list values are kept out of the table)."""
    sp.search_page(searched[0], tmp_path / "p.pdf", title="t", objective="violation",
                   axes=("p", "K"))
    assert "no grid point with a finite ratio and values of p, K" in _text(figures[0])
    sp.search_page(searched[0].drop(columns="p"), tmp_path / "q.pdf", title="t",
                   objective="violation", axes=("p", "K"))
    assert "no column p in the table" in _text(figures[1])


def test_heat_axes_choice():
    df = pd.DataFrame({"a": [1, 2, 3, 1, 2, 3], "b": [1, 1, 2, 2, 1, 1], "c": [5] * 6,
                       "phase": ["grid"] * 5 + ["refine"], "ratio": [1.0] * 6})
    assert sp.heat_axes(df, ["c", "b", "a"]) == ("a", "b")
    assert sp.heat_axes(df, ["c", "a"]) is None                 # c has one value
    # refinement points do not count: b's grid values are {1, 2}, a refine-only value is not
    df2 = df.assign(b=[1, 1, 1, 1, 1, 9])
    assert sp.heat_axes(df2, ["a", "b"]) is None


def _between(v: float, levels: list[float]) -> float:
    """Index position of v between its neighbouring levels, by hand."""
    for j in range(len(levels) - 1):
        if levels[j] <= v <= levels[j + 1]:
            return j + (v - levels[j]) / (levels[j + 1] - levels[j])
    raise AssertionError((v, levels))


def test_refinement_points_are_dots_between_their_grid_levels(tmp_path, figures):
    st = SearchSettings(budget=40, grid=9, refine=1, refine_iter=1, confirm=0, workers=1,
                        progress=False)
    df = run_search("theorem8-norm", "K=3..9, p_s=0.3..0.5, M=[10]", st, out=tmp_path,
                    fixed={"n": 2})
    ref = df[df["phase"] == "refine"]
    assert len(ref) > 0 and (df["phase"] == "grid").sum() == 9
    sp.search_page(df, tmp_path / "p.pdf", title="t", objective="violation",
                   axes=("K", "p_s"))
    ax, _ = _heat(figures[0])
    (dots,) = ax.collections
    off = np.asarray(dots.get_offsets(), dtype=float)
    assert len(off) == len(ref)
    kx = sorted(df.loc[df["phase"] == "grid", "K"].unique())
    py = sorted(df.loc[df["phase"] == "grid", "p_s"].unique())
    for (a, b), (_, r) in zip(off, ref.iterrows(), strict=True):
        assert a == pytest.approx(_between(float(r["K"]), kx), abs=1e-12)
        assert b == pytest.approx(_between(float(r["p_s"]), py), abs=1e-12)
    # a categorical axis gets no dots (there is no position between two categories)
    cat = df.assign(mode=np.where(df["K"] > 5, "paper", "corrected"))
    sp.search_page(cat, tmp_path / "q.pdf", title="t", objective="violation",
                   axes=("mode", "p_s"))
    assert not _heat(figures[1])[0].collections
