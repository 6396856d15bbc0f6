"""Layout rules of the report pages (issue 34 item 5): no truncated name, no blank panel
without a note, a non-positive bound marked on the log axis, a single horizon drawn as an
interval."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from fedsim.validation import report  # noqa: E402
from fedsim.validation._selftest import write_synthetic_run  # noqa: E402
from fedsim.validation.compare import VERDICT_COLUMNS, write_verdicts  # noqa: E402
from fedsim.validation.report.layout import wrap_ident  # noqa: E402

LONG_SC = "counterexample-EF1-tau4096-with-a-very-long-scenario-name"
LONG_TH = "perfedavg_theorem4_5_with_suffix"


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
            _row("single", "corrected", 50, 0.1)]
    write_verdicts(pd.DataFrame(rows)[VERDICT_COLUMNS], d / "verdicts.csv")
    return report.load_run(d)


def _pages(run):
    for kind, arg in report._plan(run):
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


def test_no_blank_panel_without_a_note(run):
    for kind, fig in _pages(run):
        for ax in fig.axes:
            drawn = bool(ax.lines or ax.collections or ax.patches or ax.images)
            if ax.axison:          # a drawn panel shows data or says why it has none
                assert drawn or ax.texts, (kind, ax.get_title())
            else:                  # a hidden one is a note, or an unused, empty grid slot
                assert ax.texts or (not drawn and not ax.get_title()), (kind, ax.get_title())
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
