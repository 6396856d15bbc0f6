"""Exact rows: verdict rows whose measured value is an exact oracle value (no simulation).

* the machinery by hand (``compare.verdict_table`` with ``measured_exactly``; a toy case
  through ``suites.run_cases`` and the PDF report);
* the suite's exact rows against the numbers of docs/theory/per-fedavg.md section 4 (E-F1)
  and docs/theory/asypfl.md R2-4;
* end to end: the quick suite holds them, and running them gives the expected verdicts
  (a wrong expectation makes ``control_ok`` False, so ``fedsim validate`` would fail).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from fedsim.theory.result import BoundResult, Status
from fedsim.validation import scenarios as S
from fedsim.validation import suites
from fedsim.validation.compare import (
    EXACT_BOUND_RTOL,
    exact_verdict,
    is_exact_row,
    read_verdicts,
    verdict_table,
)
from fedsim.validation.report import build_report, expected_pages
from fedsim.validation.rundir import write_manifest
from hypothesis import given
from hypothesis import strategies as st

_SAMPLES = pd.DataFrame(columns=["theorem", "scenario", "mode", "horizon", "value"])


def _bounds(rows: list[tuple[float, float]], certified: bool = True) -> pd.DataFrame:
    return pd.DataFrame([dict(theorem="toy", scenario="s", mode="m", horizon=h + 1, bound=b,
                              status="CERTIFIED_CORRECTED", bound_is_certified=certified,
                              hypotheses_hold=True, exact=x, measured_exactly=True)
                         for h, (x, b) in enumerate(rows)])


def test_toy_exact_rows_by_hand():
    """exact 2 vs bound 1 -> violated; exact 1 vs bound 2 -> holds; no CI, no replicate."""
    t = verdict_table(_SAMPLES, _bounds([(2.0, 1.0), (1.0, 2.0)]))
    assert list(t["verdict"]) == ["violated", "holds"]
    assert list(t["mean"]) == [2.0, 1.0]
    assert list(t["ci_low"]) == [2.0, 1.0] and list(t["ci_high"]) == [2.0, 1.0]
    assert list(t["exact"]) == [2.0, 1.0]
    assert list(t["tightness"]) == [0.5, 2.0]
    assert list(t["n_ok"]) == [0, 0] and list(t["sem"]) == [0.0, 0.0]
    assert t["ci_level"].isna().all() and t["oracle_z"].isna().all()
    assert "measured_exactly" not in t.columns
    assert is_exact_row(t).all()
    # two horizons 1, 2 with means 2, 1: slope exactly -1
    assert t["slope"].iloc[0] == pytest.approx(-1.0, abs=1e-14)


def test_exact_rows_not_certified_are_not_applicable():
    t = verdict_table(_SAMPLES, _bounds([(2.0, 1.0)], certified=False))
    assert list(t["verdict"]) == ["not_applicable"]
    assert t["tightness"].iloc[0] == 0.5   # the finding stays visible in the row


def test_rounding_band():
    b = 3.0
    assert exact_verdict(b, b, True, True) == "inconclusive"
    assert exact_verdict(b * (1 + 0.5 * EXACT_BOUND_RTOL), b, True, True) == "inconclusive"
    assert exact_verdict(b * (1 + 2 * EXACT_BOUND_RTOL), b, True, True) == "violated"
    assert exact_verdict(b * (1 - 2 * EXACT_BOUND_RTOL), b, True, True) == "holds"
    assert exact_verdict(1.0, math.inf, True, True) == "holds"
    assert exact_verdict(1.0, -0.5, True, True) == "violated"
    assert exact_verdict(math.nan, 1.0, True, True) == "inconclusive"
    assert exact_verdict(2.0, 1.0, True, False) == "not_applicable"


@given(st.floats(1e-300, 1e300), st.floats(1e-300, 1e300))
def test_exact_verdict_is_the_comparison_outside_the_band(x, b):
    v = exact_verdict(x, b, True, True)
    band = EXACT_BOUND_RTOL * b
    if abs(x - b) > band * (1 + 1e-6):
        assert v == ("violated" if x > b else "holds")
    elif abs(x - b) < band * (1 - 1e-6):
        assert v == "inconclusive"   # equal up to rounding


@given(st.floats(1e-300, 1e300), st.floats(-1.0, 1.0))
def test_exact_verdict_near_the_bound(b, u):
    """x = b (1 + 3u * rtol): inside the band (|u| < 1/3) inconclusive, outside decided."""
    x = b * (1 + 3 * u * EXACT_BOUND_RTOL)
    v = exact_verdict(x, b, True, True)
    if abs(u) < 0.33:
        assert v == "inconclusive"
    elif abs(u) > 0.34:
        assert v == ("violated" if u > 0 else "holds")


def test_simulated_rows_are_unchanged_and_not_exact():
    """A simulated row (samples) next to an exact one keeps its CI; an empty simulated row
    has sem NaN, so it is never taken for an exact row."""
    samples = pd.DataFrame([dict(theorem="toy", scenario="sim", mode="m", horizon=1, value=v)
                            for v in (1.0, 1.2, 0.8, 1.1)])
    sim = pd.DataFrame([dict(theorem="toy", scenario="sim", mode="m", horizon=h, bound=5.0,
                             status="CERTIFIED_CORRECTED", bound_is_certified=True,
                             hypotheses_hold=True, exact=math.nan) for h in (1, 2)])
    alone = verdict_table(samples, sim)
    both = verdict_table(samples, pd.concat([sim, _bounds([(2.0, 1.0)])], ignore_index=True))
    pd.testing.assert_frame_equal(both.iloc[:2][alone.columns], alone, check_dtype=False)
    assert list(is_exact_row(both)) == [False, False, True]
    assert both["n_ok"].tolist() == [4, 0, 0] and math.isnan(both["sem"].iloc[1])


def _toy_case(exact: float, bound: float, expected: str, scenario: str) -> S.Case:
    res = BoundResult(theorem="toy", mode="corrected", value=bound,
                      status=Status.CERTIFIED_CORRECTED)
    spec = S.ExactSpec("toy/exact", (10,), (exact,), "hand")
    row = S.Row("corrected", 10, spec.key, res, bound, exact, "counterexample", expected)
    return S.Case("theorem1", scenario, "toy", "toy exact case", "T", "q", math.nan, [],
                  [row], [], exacts=[spec])


def test_toy_case_through_run_cases_and_report(tmp_path):
    out = tmp_path / "run"
    t = suites.run_cases([_toy_case(2.0, 1.0, "violated", "toy-a"),
                          _toy_case(1.0, 2.0, "violated", "toy-b")],
                         out, workers=1, progress=False)
    assert list(t["verdict"]) == ["violated", "holds"]
    # the second expectation is wrong: the control is flagged, so `fedsim validate` fails
    assert list(t["control_ok"]) == [True, False]
    v = read_verdicts(out / "verdicts.csv")
    assert is_exact_row(v).all() and list(v["mean"]) == [2.0, 1.0]
    write_manifest(out, suite="toy", replicates=None, seed=S.SEED, tasks=0)
    pages = build_report(out, tmp_path / "r.pdf", png_dir=tmp_path / "png")
    assert pages == expected_pages(out) and (tmp_path / "r.pdf").stat().st_size > 5000


def test_asypfl_r2_4_rows_match_the_docs():
    """docs/theory/asypfl.md R2-4: exact 8.4805e-6 vs bound 5.0283e-6 at T = 40 (ratio
    1.687), ratio 2.844 at T = 80."""
    case = S.asypfl_periods_counterexample()
    assert case.runs == [] and case.exact_keys() == {case.rows[0].run_key}
    rows = {(r.mode, r.horizon): r for r in case.rows}
    lit, cor = rows[("paper_literal", 40)], rows[("corrected", 40)]
    assert lit.exact == pytest.approx(8.4805e-6, rel=1e-4)
    assert lit.bound == pytest.approx(5.0283e-6, rel=1e-4)
    assert lit.exact / lit.bound == pytest.approx(1.687, rel=1e-3)
    assert rows[("paper_literal", 80)].exact / rows[("paper_literal", 80)].bound == \
        pytest.approx(2.844, rel=1e-3)
    assert cor.bound == lit.bound and cor.result.status is Status.NOT_APPLICABLE
    assert any(h.name.startswith("H12") and h.holds is False for h in cor.result.hypotheses)
    assert {r.expected_verdict for r in case.rows if r.mode == "paper_literal"} == {"violated"}


def test_perfedavg_e_f1_rows_match_the_docs():
    """docs/theory/per-fedavg.md section 4: exact 4.96758486855365e-9 and B_45 3.41837985e-9
    at tau = 1e4 (ratio 0.688); at tau = 4096 the bound is above the exact value."""
    hi = S.perfedavg_counterexample(10000, "violated").rows[0]
    assert hi.exact == pytest.approx(4.96758486855365e-9, rel=1e-10)
    assert hi.bound == pytest.approx(3.41837985e-9, rel=1e-8)
    assert hi.bound / hi.exact == pytest.approx(0.688, abs=5e-4)
    assert hi.horizon == 10**11 and hi.result.status is Status.PAPER_LITERAL_KNOWN_ERRATUM
    lo = S.perfedavg_counterexample(4096, "holds").rows[0]
    assert lo.bound / lo.exact == pytest.approx(1.5402, rel=1e-4)


_EXPECTED = {("perfedavg_theorem4_5", "counterexample-EF1-tau4096"): {"holds"},
             ("perfedavg_theorem4_5", "counterexample-EF1-tau10000"): {"violated"},
             ("asypfl_theorem1", "counterexample-R2-4-periods-5-8"):
                 {"violated", "not_applicable"}}


# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_exact_rows")


@pytest.fixture(scope="module")
def quick_exact(tmp_path_factory):
    cases = [c for c in suites.build_cases("quick", 2) if c.exacts]
    out = tmp_path_factory.mktemp("exact")
    return cases, suites.run_cases(cases, out, workers=1, progress=False)


def test_quick_suite_holds_the_exact_rows(quick_exact):
    cases, _ = quick_exact
    assert {(c.theorem, c.scenario) for c in cases} == set(_EXPECTED)
    assert all(not c.runs for c in cases)   # nothing is simulated for them
    for c in cases:
        assert {r.expected_verdict for r in c.rows} == _EXPECTED[(c.theorem, c.scenario)]
        assert all(r.control == "counterexample" for r in c.rows)
    for name in ("smoke", "full"):
        keys = {(c.theorem, c.scenario) for c in suites.build_cases(name, 2) if c.exacts}
        assert keys == set(_EXPECTED), name


def test_quick_exact_rows_get_their_verdicts(quick_exact):
    _, t = quick_exact
    assert len(t) == 6 and is_exact_row(t).all()
    assert (t["verdict"] == t["expected_verdict"]).all(), t[["scenario", "mode", "verdict"]]
    assert t["control_ok"].astype(bool).all()
    r24 = t[(t["scenario"] == "counterexample-R2-4-periods-5-8") & (t["horizon"] == 40)]
    assert set(r24["verdict"]) == {"violated", "not_applicable"}
    assert np.allclose(r24["tightness"], 5.0283e-6 / 8.4805e-6, rtol=1e-4)
    na = r24[r24["mode"] == "corrected"]
    assert na["failing_hypotheses"].iloc[0].startswith("H12")
