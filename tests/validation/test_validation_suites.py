"""End-to-end validation: scenario builders, negative controls, the smoke suite, resume.

The smoke suite is the quick suite's scenario list at its smallest horizons; it runs every
theorem and every negative-control kind:
(a) out-of-regime variants -> not_applicable with the failing hypothesis named,
(b) the same data against bound/1000 -> violated,
(c) THEORY_SPEC 7.d: paper-literal Theorem 8 -> violated, corrected -> holds.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from fedsim.validation import scenarios as S
from fedsim.validation import suites
from fedsim.validation.compare import VERDICT_COLUMNS
from fedsim.validation.report import expected_pages

# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_validation_suites")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    res = suites.run_suite("smoke", workers=2, out=out, report=out / "report.pdf",
                           progress=False)
    return out, res, pd.read_csv(out / "verdicts.csv")


def test_smoke_outputs(smoke):
    out, res, df = smoke
    assert list(df.columns[: len(VERDICT_COLUMNS)]) == VERDICT_COLUMNS
    assert set(df["theorem"]) == {"theorem1", "theorem2", "theorem3", "theorem7", "theorem8",
                                  "perfedavg_theorem4_5", "asypfl_theorem1", "asypfl_theorem2"}
    pdf = out / "report.pdf"
    assert pdf.exists() and pdf.stat().st_size > 10_000
    assert res["controls_ok"], df[df["control_ok"].astype(object).eq(False)].to_string()
    assert res["in_regime_ok"]


def _pages_in_pdf(path) -> int:
    """Number of /Type /Page objects in a PDF (matplotlib writes one per page)."""
    return len(re.findall(rb"/Type\s*/Page[^s]", path.read_bytes()))


def test_smoke_pdf_page_count(smoke):
    out, _, _ = smoke
    assert _pages_in_pdf(out / "report.pdf") == expected_pages(out)


def test_every_negative_control_gets_its_verdict(smoke):
    _, _, df = smoke
    ctrl = df[df["control"].fillna("") != ""]
    kinds = set(ctrl["control"].str.split(":").str[0])
    assert kinds == {"out_of_regime", "bound_div_1000", "counterexample"}
    oor = ctrl[ctrl["control"].str.startswith("out_of_regime")]
    assert set(oor["control"]) == {"out_of_regime:step10x",
                                   "out_of_regime:tau_smaller_than_staleness",
                                   "out_of_regime:lam_lt_7L",
                                   "out_of_regime:fixed_count_aggregation",
                                   # Per-FedAvg r = 1/2: H9 r == 1 fails (E-F1: the
                                   # bound is false for r < 1)
                                   "out_of_regime:partial_participation"}
    assert (oor["verdict"] == "not_applicable").all()
    assert (oor["failing_hypotheses"].fillna("") != "").all()
    div = ctrl[ctrl["control"] == "bound_div_1000"]
    assert set(div["theorem"]) == {"theorem1", "theorem2", "theorem3", "theorem7", "theorem8",
                                   "perfedavg_theorem4_5", "asypfl_theorem1"}
    assert (div["verdict"] == "violated").all(), div.to_string()
    ce = ctrl[(ctrl["control"] == "counterexample")
              & (ctrl["theorem"] == "theorem8")].set_index("mode")
    assert ce.loc["paper", "verdict"] == "violated"
    assert ce.loc["corrected", "verdict"] == "holds"
    # AsyPFL CE1 (E-Y2) / CE3 (E-Y4): the literal bound is violated at every horizon
    ay = ctrl[(ctrl["control"] == "counterexample") & ctrl["theorem"].str.startswith("asypfl")]
    lit = ay[ay["mode"] == "paper_literal"]
    assert set(lit["theorem"]) == {"asypfl_theorem1", "asypfl_theorem2"}
    assert (lit["verdict"] == "violated").all(), lit.to_string()
    assert (ay[ay["theorem"] == "asypfl_theorem2"].query("mode == 'corrected'")["verdict"]
            == "holds").all()


def test_in_regime_certified_rows_hold(smoke):
    _, _, df = smoke
    rows = df[(df["control"].fillna("") == "")
              & df["status"].isin(["CERTIFIED_PAPER", "CERTIFIED_CORRECTED"])]
    assert len(rows) >= 5
    assert (rows["verdict"] == "holds").all(), rows.to_string()


def test_monte_carlo_agrees_with_exact_oracles(smoke):
    """MC mean vs exact oracle, two-sided z-test at false-alarm rate 1e-3 per row."""
    _, _, df = smoke
    rows = df[np.isfinite(df["exact"]) & (df["control"].fillna("") == "")]
    assert len(rows) >= 3
    assert rows["oracle_pass"].astype(bool).all(), rows[["theorem", "scenario", "horizon",
                                                          "mean", "exact", "oracle_z"]]


def test_resume_recomputes_nothing(smoke, monkeypatch):
    """A re-run of a finished suite finds every record and runs no task."""
    out, _, df = smoke
    import fedsim.validation.montecarlo as mc

    calls = []
    monkeypatch.setattr(mc, "execute_task", lambda *a, **k: calls.append(a) or None)
    suites.run_suite("smoke", workers=1, out=out, report=None, progress=False)
    assert calls == []
    assert pd.read_csv(out / "verdicts.csv").equals(df)


def test_out_of_regime_statuses_from_theory():
    """Controls (a) are flagged by the bound evaluation itself, before any simulation."""
    c = S.theorem1_case("Lsmall", horizons=[1000], replicates=2, variant="step10x")
    assert c.rows[0].result.status.value == "NOT_APPLICABLE"
    assert any("eta" in h.name for h in c.rows[0].result.failing_hypotheses)
    c = S.theorem3_case("Lsmall", horizons=[312], replicates=2, variant="lam_lt_7L")
    assert any("7 L" in h.name for h in c.rows[0].result.failing_hypotheses)
    c = S.theorem7_case("L1", horizons=[100], replicates=2, variant="fixed_count")
    assert c.rows[0].result.status.value == "NOT_APPLICABLE"
    c = S.theorem8_case("L1", horizons=[100], replicates=2, variant="step10x")
    assert c.rows[0].result.status.value == "NOT_APPLICABLE"


def test_in_regime_builders_satisfy_every_checkable_hypothesis():
    for case in (S.theorem1_case("Lsmall", horizons=[1000], replicates=2),
                 S.theorem2_case("L1", horizons=[200], replicates=2),
                 S.theorem3_case("Lsmall", horizons=[240], replicates=2),
                 S.theorem7_case("L1", horizons=[100], replicates=2),
                 S.theorem8_case("L1", horizons=[100], replicates=2)):
        for row in case.rows:
            want = ("PAPER_LITERAL_KNOWN_ERRATUM" if row.mode == "paper_literal"
                    else "CERTIFIED")
            assert row.result.status.value.startswith(want), (case.scenario, row.mode)
            assert not row.result.failing_hypotheses


def test_counterexample_exact_values_match_spec():
    """THEORY_SPEC 7.d table: exact E f(xbar_K) - f* and both bounds, 6 decimals."""
    c = S.theorem8_counterexample(M=50, K=9, replicates=2)
    rows = {r.mode: r for r in c.rows}
    assert math.isclose(rows["paper"].exact, 0.819411, abs_tol=5e-7)
    assert math.isclose(rows["paper"].bound, 0.720726, abs_tol=5e-7)
    assert math.isclose(rows["corrected"].bound, 1.009218, abs_tol=5e-7)


def test_process_pool_and_dask_localcluster_give_identical_verdicts(tmp_path, capfd):
    """Same cases on a 2-process pool and on a Dask LocalCluster: byte-identical CSVs; the
    Dask run's shutdown prints no traceback (issue 34 item 7)."""
    pytest.importorskip("dask.distributed")
    cases = [S.theorem8_counterexample(M=10, K=8, replicates=24),
             S.theorem7_case("L1", horizons=[100, 300], replicates=6)]
    suites.run_cases(cases, tmp_path / "pool", workers=2, progress=False)
    capfd.readouterr()
    suites.run_cases(cases, tmp_path / "dask", workers=2, dask="local", progress=False)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ERROR" not in err, err
    assert err.count("closing Dask failed") <= 1
    suites.run_cases(cases, tmp_path / "inproc", workers=1, progress=False)
    a = (tmp_path / "pool" / "verdicts.csv").read_bytes()
    assert a == (tmp_path / "dask" / "verdicts.csv").read_bytes()
    assert a == (tmp_path / "inproc" / "verdicts.csv").read_bytes()
