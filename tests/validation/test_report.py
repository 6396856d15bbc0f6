"""report.py: PDF from a synthetic run directory, page plan, legibility, missing inputs."""

from __future__ import annotations

import json
import re

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from fedsim.validation import report
from fedsim.validation._selftest import write_synthetic_run
from fedsim.validation.compare import VERDICT_COLUMNS, write_verdicts
from fedsim.validation.report import layout
from fedsim.validation.report.details import details_parts
from matplotlib.text import Text

from fedsim.errors import FedsimError

# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_report")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    write_synthetic_run(d, seed=1, replicates=12)
    return d


def _pdf_pages(path) -> int:
    return len(re.findall(rb"/Type\s*/Page[^s]", path.read_bytes()))


def test_synthetic_run_page_plan(run_dir):
    # summary 1; ThmA: 4 panels -> 1 plot page, 3 details, 1 representative page;
    # ThmB: 1 plot page, 1 details, 1 representative page  => 9
    assert report.expected_pages(run_dir) == 9
    kinds = [k for k, _ in report._plan(report.load_run(run_dir))]
    assert kinds == ["summary", "plots", "details", "details", "details", "repr",
                     "plots", "details", "repr"]


@pytest.mark.slow
def test_report_builds_with_expected_page_count(run_dir, tmp_path):
    """Full 9-page build with PNG previews (~5 s on a loaded 2-core box)."""
    pdf = tmp_path / "out" / "r.pdf"
    n = report.build_report(run_dir, pdf, png_dir=tmp_path / "png", png_dpi=30)
    assert n == 9 and _pdf_pages(pdf) == 9
    assert pdf.read_bytes().startswith(b"%PDF")
    assert len(list((tmp_path / "png").glob("page-*.png"))) == 9
    assert not list(pdf.parent.glob(".tmp-*"))


def test_verdict_colours_and_negative_control_in_synthetic_run(run_dir):
    run = report.load_run(run_dir)
    v = run.verdicts
    assert set(v[v.scenario == "too_small_bound"].verdict) == {"violated"}
    assert set(v[v.scenario == "unequal_hessians"].verdict) == {"not_applicable"}
    assert set(v[v.scenario == "quad_shared"].verdict) == {"holds"}
    assert run.theorems == ["ThmA", "ThmB"]
    cells = {sc: report._control_cell(v[v.scenario == sc]) for sc in set(v.scenario)}
    assert cells["too_small_bound"] == ("violated: ok", report.FILL["holds"])
    assert cells["unequal_hessians"] == ("n/a: ok", report.FILL["holds"])
    assert cells["quad_shared"] == ("-", None)
    broken = v[v.scenario == "too_small_bound"].assign(verdict="holds")
    assert report._control_cell(broken) == ("violated: FAILED", report.FILL["violated"])
    assert run.groups["ThmA"][:2] == [("quad_shared", "paper"),
                                      ("quad_shared", "proof_general_eta")]


def _figures(run):
    for kind, arg in report._plan(run):
        if kind == "summary":
            yield report._summary_page(run, arg)
        elif kind == "plots":
            yield report._plots_page(run, *arg)
        elif kind == "details":
            yield report._details_page(run, *arg)
        else:
            yield report._repr_page(run, *arg)


def test_every_text_is_at_least_8pt_and_missing_representative_is_stated(run_dir):
    run = report.load_run(run_dir)
    texts = []
    for fig in _figures(run):
        for t in fig.findobj(Text):
            if t.get_text().strip():
                assert t.get_fontsize() >= 8, t.get_text()
                texts.append(t.get_text())
        plt.close(fig)
    assert any("ThmB" not in t and "area_quadratic: no representative run" in t for t in texts)
    assert any("Student-t" in t for t in texts)  # CI method stated on the pages


def test_page_plan_counts_by_hand(tmp_path):
    """30 (scenario, mode) groups of one theorem with 7 scenarios, no meta:
    summary ceil(30/10)=3 (rows of up to three wrapped lines), plots ceil(30/6)=5,
    details 7, representative ceil(7/3)=3."""
    rows = []
    for s in range(7):
        for m in range(5 if s < 2 else 4):
            for h in (10, 100):
                rows.append(dict(theorem="T1", scenario=f"s{s}", mode=f"m{m}", horizon=h,
                                 mean=1.0 / h, ci_low=0.9 / h, ci_high=1.1 / h, bound=2.0 / h,
                                 status="CERTIFIED_PAPER", verdict="holds", tightness=2.0,
                                 slope=-1.0, exact=float("nan")))
    df = pd.DataFrame(rows)[VERDICT_COLUMNS]
    assert df.groupby(["scenario", "mode"]).ngroups == 30
    write_verdicts(df, tmp_path / "verdicts.csv")
    assert report.expected_pages(tmp_path) == 3 + 5 + 7 + 3


def test_minimal_run_dir_without_meta_builds(tmp_path):
    df = pd.DataFrame([dict(theorem="T", scenario="s", mode="", horizon=10, mean=float("nan"),
                            ci_low=-float("inf"), ci_high=float("inf"), bound=float("inf"),
                            status="VACUOUS", verdict="inconclusive", tightness=float("nan"),
                            slope=float("nan"), exact=float("nan"))])
    write_verdicts(df, tmp_path / "verdicts.csv")
    assert report.build_report(tmp_path) == 4  # summary, plots, details, representative
    assert (tmp_path / "report.pdf").is_file()


def test_missing_or_bad_inputs_raise(tmp_path):
    with pytest.raises(FedsimError, match="no verdicts.csv"):
        report.build_report(tmp_path, tmp_path / "r.pdf")
    write_synthetic_run(tmp_path, replicates=3)
    (tmp_path / "meta" / "broken.json").write_text("{not json")
    with pytest.raises(FedsimError, match="not valid JSON"):
        report.expected_pages(tmp_path)
    (tmp_path / "meta" / "broken.json").write_text(json.dumps({"theorem": "x"}))
    with pytest.raises(FedsimError, match="theorem and scenario"):
        report.expected_pages(tmp_path)


# ----------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("argv, needle", [
    (["validate", "--suite", "huge"], "invalid choice: 'huge'"),
    (["validate"], "required: --suite"),
    (["validate", "--suite", "quick", "--replicates", "1"], "replicates must be >= 2"),
    (["validate", "--suite", "quick", "--replicates", "two"], "replicates must be an integer"),
    (["validate", "--suite", "quick", "--workers", "0"], "workers must be >= 1"),
    (["validate", "--suite", "quick", "--dask", "nowhere"], "dask must be 'local'"),
    (["report"], "required: DIR"),
])
def test_cli_bad_arguments_exit_2_with_one_line(argv, needle, capsys):
    from fedsim.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fedsim: error:") and needle in err


def test_cli_report_missing_dir_exit_2(tmp_path, capsys):
    from fedsim.cli import main

    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err


def test_cli_validate_calls_run_suite(tmp_path, monkeypatch, capsys):
    """validate forwards the options to validation.suites.run_suite (a stand-in here)."""
    import sys
    import types

    from fedsim.cli import main

    calls = []

    def run_suite(suite, *, replicates, workers, dask, out, report):
        calls.append(dict(suite=suite, replicates=replicates, workers=workers, dask=dask,
                          out=out, report=report))
        write_synthetic_run(out, replicates=3)
        return None

    monkeypatch.setitem(sys.modules, "fedsim.validation.suites",
                        types.SimpleNamespace(run_suite=run_suite))
    out, pdf = tmp_path / "run", tmp_path / "r.pdf"
    rc = main(["validate", "--suite", "full", "--replicates", "3", "--workers", "2", "--dask",
               "tcp://10.0.0.1:8786", "--out", str(out), "--report", str(pdf), "--no-progress"])
    assert rc == 0
    assert calls == [dict(suite="full", replicates=3, workers=2, dask="tcp://10.0.0.1:8786",
                          out=out, report=pdf)]
    printed = capsys.readouterr().out
    assert f"verdicts: {out / 'verdicts.csv'}" in printed and f"report:   {pdf}" in printed
    assert "holds 14, violated 5, inconclusive 0, not_applicable 5" in printed


def test_cli_validate_failed_control_exits_3_with_one_line(tmp_path, monkeypatch, capsys):
    """A failing negative control is never silent and never looks like success: exit 3
    (the fuzz oracle's "finished, result is a failure"), one line on stderr, documented in
    ``fedsim validate --help``."""
    import sys
    import types

    from fedsim.cli import main

    def run_suite(suite, **kw):
        return {"verdicts": str(tmp_path / "v.csv"), "report": None, "controls_ok": False}

    monkeypatch.setitem(sys.modules, "fedsim.validation.suites",
                        types.SimpleNamespace(run_suite=run_suite))
    assert main(["validate", "--suite", "quick", "--out", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "negative control" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    helptext = " ".join(capsys.readouterr().out.split())
    assert "3 a negative control did not get its required verdict" in helptext


def test_cli_report_rebuilds_pdf(tmp_path, capsys):
    from fedsim.cli import main

    df = pd.DataFrame([dict(theorem="T", scenario="s", mode="m", horizon=h, mean=1.0 / h,
                            ci_low=0.9 / h, ci_high=1.1 / h, bound=2.0 / h,
                            status="CERTIFIED_PAPER", verdict="holds", tightness=2.0,
                            slope=-1.0, exact=float("nan")) for h in (10, 100)])
    write_verdicts(df, tmp_path / "verdicts.csv")
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "x.pdf")]) == 0
    assert "(4 pages)" in capsys.readouterr().out
    assert _pdf_pages(tmp_path / "x.pdf") == 4


def test_theorem_title_is_the_common_title_of_its_scenarios(run_dir):
    run = report.load_run(run_dir)
    run.meta[("ThmA", "quad_shared")] = {**run.meta[("ThmA", "quad_shared")],
                                         "title": "[A] Thm 8, AREA, logistic"}
    run.meta[("ThmA", "too_small_bound")] = {**run.meta[("ThmA", "too_small_bound")],
                                             "title": "[A] Thm 8 counterexample, M=10"}
    run.meta[("ThmA", "unequal_hessians")] = {**run.meta[("ThmA", "unequal_hessians")],
                                              "title": "[A] Thm 8, AREA, quadratic"}
    assert report._meta_for(run, "ThmA")["title"] == "[A] Thm 8"
    assert report._meta_for(run, "nope") == {}
    assert layout.fmt_horizon(10000.0) == "10000" and layout.fmt_horizon(0.5) == "0.5"
    assert layout.shorten_middle("scenario_with_a_long_name_7", 12) == "scena\u2026name_7"


def test_details_page_never_hides_a_failing_hypothesis(run_dir):
    run = report.load_run(run_dir)
    hyps = [{"name": f"ok{i}", "holds": True, "detail": "fine"} for i in range(20)]
    hyps.append({"name": "the_failing_one", "holds": False, "detail": "gamma = inf"})
    run.meta[("ThmA", "quad_shared")] = {**run.meta[("ThmA", "quad_shared")],
                                         "hypotheses": hyps}
    fig = report._details_page(run, "ThmA", "quad_shared")
    texts = [t.get_text() for t in fig.findobj(Text)]
    plt.close(fig)
    assert "the_failing_one" in texts                      # on the first details page
    parts = details_parts(run, "ThmA", "quad_shared")
    assert parts >= 2                                      # 21 rows continue, none left out
    every = []
    for k in range(parts):
        fig = report._details_page(run, "ThmA", "quad_shared", k)
        every += [t.get_text() for t in fig.findobj(Text)]
        plt.close(fig)
    assert all(f"ok{i}" in every for i in range(20))
    assert not any("not shown" in t for t in every)


def test_pages_drawn_by_two_processes_are_the_pages_one_draws(run_dir, tmp_path):
    """``write_pages`` over forked processes joins the chunks in plan order, and each page
    is what one process draws: the same PNG bytes, the same text, the same page count."""
    import io

    from fedsim.validation.report.render import write_pages
    from pypdf import PdfReader

    run = report.load_run(run_dir)
    plan = report._plan(run)[:2]
    out = {}
    for w in (1, 2):
        png = tmp_path / f"png{w}"
        png.mkdir()
        buf = io.BytesIO()
        ticks = []
        write_pages(run, plan, buf, rc={}, metadata={"Title": "t"}, png_dir=png, png_dpi=20,
                    workers=w, tick=ticks.append)
        pages = PdfReader(io.BytesIO(buf.getvalue())).pages
        out[w] = ([p.extract_text() for p in pages],
                  [(png / f"page-{i:02d}.png").read_bytes() for i in range(1, 3)])
        assert len(pages) == 2 and sum(ticks) == 2
    assert out[1] == out[2]
