"""Layout rules of the report pages (issue 34 item 5): no truncated name, no blank panel
without a note, a non-positive bound marked on the log axis, a single horizon drawn as an
interval."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from fedsim.validation import report  # noqa: E402
from fedsim.validation._selftest import write_synthetic_run  # noqa: E402
from fedsim.validation.compare import VERDICT_COLUMNS, write_verdicts  # noqa: E402
from fedsim.validation.report.layout import wrap_ident  # noqa: E402
from fedsim.validation.report.plots import growing_term  # noqa: E402

LONG_SC = "counterexample-EF1-tau4096-with-a-very-long-scenario-name"
LONG_TH = "perfedavg_theorem4_5_with_suffix"
#: a bound 0.1 -> 0.3 = contraction 0.05 -> 0.01 + noise_ball 0.05 -> 0.29 (the suite's meta)
GROW_META = {"theorem": LONG_TH, "scenario": "grow", "bound_terms": {"corrected": {
    "horizons": [10, 100], "bound": [0.1, 0.3],
    "terms": {"contraction": [0.05, 0.01], "noise_ball": [0.05, 0.29]}}}}


def _row(sc, md, h, bound, status="CERTIFIED_CORRECTED", verdict="holds"):
    return dict(theorem=LONG_TH, scenario=sc, mode=md, horizon=h, mean=0.5 / h,
                ci_low=0.4 / h, ci_high=0.6 / h, bound=bound, status=status,
                verdict=verdict, tightness=2.0, slope=-1.0, exact=float("nan"))


# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_report_layout")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("lay")
    rows = [_row(LONG_SC, "paper_literal", 8, -0.03, "PAPER_LITERAL_KNOWN_ERRATUM",
                 "not_applicable"),
            _row("quad-L1", "corrected", 10, 0.2), _row("quad-L1", "corrected", 100, 0.02),
            _row("single", "corrected", 50, 0.1),
            _row("grow", "corrected", 10, 0.1), _row("grow", "corrected", 100, 0.3)]
    write_verdicts(pd.DataFrame(rows)[VERDICT_COLUMNS], d / "verdicts.csv")
    (d / "meta").mkdir()
    (d / "meta" / "grow.json").write_text(json.dumps(GROW_META))
    return report.load_run(d)


def _pages(run, kinds=("summary", "plots", "repr")):
    for kind, arg in report._plan(run):
        if kind not in kinds:
            continue
        if kind == "summary":
            yield kind, report._summary_page(run, arg)
        elif kind == "plots":
            yield kind, report._plots_page(run, *arg)
        elif kind == "repr":
            yield kind, report._repr_page(run, *arg)


def _texts(fig):
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
        out += [ax.get_title(), ax.get_title(loc="left"), ax.get_ylabel(), ax.get_xlabel()]
    return out


def test_wrap_never_cuts_and_keeps_every_character():
    for s, n in (("PAPER_LITERAL_KNOWN_ERRATUM", 12), (LONG_SC, 14), ("a b c", 1)):
        lines = wrap_ident(s, n)
        assert "".join(lines).replace(" ", "") == s.replace(" ", "")
        assert all(len(ln) <= n for ln in lines)


def test_no_truncated_label(run):
    for kind, fig in _pages(run):
        for t in _texts(fig):
            assert "\u2026" not in t, (kind, t)
        whole = "\n".join(_texts(fig)).replace("\n", "")
        if kind in ("summary", "plots"):
            assert LONG_SC.replace("-", "") in whole.replace("-", "")
        plt.close(fig)


def blank_panels(fig) -> list[str]:
    """Titles of the panels of ``fig`` that show nothing and say nothing about why."""
    bad = []
    for ax in fig.axes:
        drawn = bool(ax.lines or ax.collections or ax.patches or ax.images)
        if ax.axison:          # a drawn panel shows data or says why it has none
            ok = drawn or ax.texts
        else:                  # a hidden one is a note, or an unused, empty grid slot
            ok = ax.texts or (not drawn and not ax.get_title())
        if not ok:
            bad.append(ax.get_title())
    return bad


def test_no_blank_panel_without_a_note(run):
    for kind, fig in _pages(run):
        assert blank_panels(fig) == [], kind
        plt.close(fig)


def test_blank_panel_check_fails_on_an_empty_panel():
    fig = plt.figure()
    fig.add_subplot(1, 2, 1).set_title("busy fraction")             # empty, no note
    fig.add_subplot(1, 2, 2).text(0.5, 0.5, "no curve: nothing recorded")
    assert blank_panels(fig) == ["busy fraction"]
    plt.close(fig)


def test_non_positive_bound_marked_and_single_horizon_interval(run):
    figs = [f for k, f in _pages(run) if k == "plots"]
    texts = "\n".join(t for f in figs for t in _texts(f))
    assert "bound <= 0 (-0.03)" in texts.replace("\n", " ")
    single = [ax for f in figs for ax in f.axes if ax.get_title().startswith("single")]
    assert single and any(t.get_text().startswith("bound 0.1") for t in single[0].texts)
    for f in figs:
        plt.close(f)


def test_synthetic_run_pages_keep_the_rules(tmp_path):
    write_synthetic_run(tmp_path, seed=1, replicates=12)
    run = report.load_run(tmp_path)
    for kind, fig in _pages(run):
        assert not any("\u2026" in t for t in _texts(fig)), kind
        plt.close(fig)


def outside_the_page(fig) -> list[str]:
    """The axes (by title) or figure texts of ``fig`` whose drawn extent -- tick labels in
    view, labels, titles, notes -- leaves the page (a cut label); [] if none."""
    renderer = fig.canvas.get_renderer()
    page = fig.bbox

    def out(e) -> bool:
        return e.x0 < page.x0 - 1 or e.x1 > page.x1 + 1 or e.y0 < page.y0 - 1 \
            or e.y1 > page.y1 + 1

    bad = [f"axes {ax.get_title()!r}" for ax in fig.axes if out(ax.get_tightbbox(renderer))]
    return bad + [t.get_text() for t in fig.texts if t.get_text().strip()
                  and out(t.get_window_extent(renderer))]


def test_every_text_inside_the_page(run):
    from fedsim.validation.report.layout import FOOTER_TOP

    for kind, fig in _pages(run, kinds=("summary", "plots", "repr")):
        if kind != "summary":
            assert outside_the_page(fig) == [], kind
        assert above_the_footer(fig, FOOTER_TOP + 0.01) == [], kind   # clear of the footer
        plt.close(fig)


def test_text_inside_the_page_check_fails_on_a_cut_label():
    fig = plt.figure(figsize=(4, 3))
    ax = fig.add_axes((0.02, 0.2, 0.9, 0.7))   # no room left of the axes for the label
    ax.set_yscale("log")
    ax.set_ylim(2e-9, 7e-9)
    ax.set_ylabel("(1/(tau K)) sum E||grad F(wbar_{k+1,t})||^2")
    assert outside_the_page(fig) != []
    plt.close(fig)


def test_growing_bound_names_its_rising_term(run):
    figs = [f for k, f in _pages(run, kinds=("plots",))]
    grow = [ax for f in figs for ax in f.axes if ax.get_title().startswith("grow")]
    note = " ".join(t.get_text() for t in grow[0].texts).replace("\n", " ")
    assert "bound grows with T: term noise_ball: 0.05 -> 0.29" in note  # wrapped at spaces
    falls = [ax for f in figs for ax in f.axes if ax.get_title().startswith("quad-L1")]
    assert not any("grows" in t.get_text() for t in falls[0].texts)   # 0.2 -> 0.02: no note
    for f in figs:
        plt.close(f)


def test_growing_term_by_hand():
    h = np.array([10.0, 100.0])
    assert growing_term(h, GROW_META, "corrected") == "term noise_ball: 0.05 -> 0.29"
    assert growing_term(h, GROW_META, "paper") == ""                    # no terms for it
    assert growing_term(np.array([10.0, 50.0]), GROW_META, "corrected") == ""
    one_two = np.array([1.0, 2.0])

    def meta(bound, **terms):
        return {"bound_terms": {"m": {"horizons": [1, 2], "bound": bound, "terms": terms}}}

    # a sum (0+0+1 = 1, 1+3+0 = 4): the summand that rises most
    assert growing_term(one_two, meta([1, 4], a=[0, 1], b=[0, 3], c=[1, 0]), "m") == \
        "term b: 0 -> 3, 1 other(s) rise less"
    # a minimum (AREA Theorem 7's min(C1, C2)): the term that is the bound at the end
    assert growing_term(one_two, meta([1, 2], C1=[5, 3], C2=[1, 2]), "m") == \
        "term C2 (min of C1, C2): 1 -> 2"
    # neither (a product 1*1, 2*4): the largest relative rise, said to be no sum
    assert growing_term(one_two, meta([1, 8], a=[1, 2], f=[1, 4]), "m") == \
        "term f (the bound is no sum of its terms): 1 -> 4"
    assert growing_term(one_two, meta([2, 3], a=[2, 1]), "m").startswith(
        "no single term rises")


def test_wrap_breaks_at_spaces_before_splitting_a_word():
    """A word that fits on a line is never split at its ``_`` ("[paper_" / "literal]" on a
    panel title); only a word longer than a line is broken inside."""
    assert wrap_ident("counterexample-EF1-tau10000 [paper_literal]", 36) == \
        ["counterexample-EF1-tau10000", "[paper_literal]"]
    assert wrap_ident("bound grows with T: term noise_ball: 0.0609 -> 0.125", 34) == \
        ["bound grows with T: term", "noise_ball: 0.0609 -> 0.125"]
    long = wrap_ident("x counterexample-R2-4-periods-5-8", 14)
    assert all(len(ln) <= 14 for ln in long) and "".join(long).replace(" ", "") == \
        "xcounterexample-R2-4-periods-5-8"


def range_cut(fig) -> list[str]:
    """Texts of ``fig`` with a line that starts with a dash and a number: a range
    "a - b" wrapped before its dash reads as a negative number ("- 4.34")."""
    import re

    return [t for t in _texts(fig) if any(re.match(r"\s*[-\u2013]\s+[-\d.]", ln)
                                          for ln in t.split("\n"))]


def test_no_range_wrapped_into_a_negative_number(tmp_path):
    rows = [_row("quad-L1-with-a-longer-name", "corrected", h, 0.2 / h) for h in (10, 100)]
    rows[0]["tightness"], rows[1]["tightness"] = 3.67, 4.34
    rows[0]["slope"] = rows[1]["slope"] = -0.288
    write_verdicts(pd.DataFrame(rows)[VERDICT_COLUMNS], tmp_path / "verdicts.csv")
    run = report.load_run(tmp_path)
    for kind, fig in _pages(run, kinds=("summary", "plots")):
        assert range_cut(fig) == [], kind
        plt.close(fig)
    fig = plt.figure()
    fig.text(0.1, 0.5, "slope -0.288 (order -1), bound/mean 3.67\n- 4.34")
    assert range_cut(fig) != []                     # the check itself catches the defect
    plt.close(fig)


def above_the_footer(fig, footer_top: float) -> list[str]:
    """Texts of ``fig`` (other than the footer line itself, drawn at y = 0.015) that reach
    below ``footer_top`` (page fraction): a caption run into the footer."""
    r = fig.canvas.get_renderer()
    h = fig.bbox.height
    return [t.get_text()[:40] for t in fig.texts if t.get_text().strip()
            and t.get_position()[1] > 0.02 and t.get_window_extent(r).y0 < footer_top * h]


def test_summary_caption_keeps_clear_of_the_footer(tmp_path):
    """Ten summary rows that each wrap to three lines (long scenario names, modes such as
    paper_literal/1000) leave the full caption no room: it must not run into the footer."""
    from fedsim.validation.report.layout import FOOTER_TOP
    from fedsim.validation.report.plan import draw_footer

    rows = [_row(f"counterexample-R2-4-periods-{k}-8-long", "paper_literal/1000", 10, 0.1)
            for k in range(20)]
    write_verdicts(pd.DataFrame(rows)[VERDICT_COLUMNS], tmp_path / "verdicts.csv")
    run = report.load_run(tmp_path)
    pages = [f for k, f in _pages(run, kinds=("summary",))]
    assert len(pages) == 2
    for i, fig in enumerate(pages):
        draw_footer(fig, i + 1, 2, run)
        assert above_the_footer(fig, FOOTER_TOP + 0.01) == [], i
        plt.close(fig)


def test_representative_rows_keep_their_height(run):
    """A page with one representative run draws it as tall as a full page's rows, not
    stretched over the page."""
    from fedsim.validation.report.representative import representative_page

    one = representative_page(run, LONG_TH, ["quad-L1"])
    three = representative_page(run, LONG_TH, ["quad-L1", "single", "grow"])
    h1, h3 = (f.axes[0].get_position().height for f in (one, three))
    assert h1 == pytest.approx(h3)
    for f in (one, three):
        plt.close(f)
