"""compare.py: Student-t CIs, verdicts, tightness, slopes, oracle z-tests, verdict tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from fedsim.validation import compare as cmp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fedsim.errors import ConfigError


def test_mean_ci_hand_computed():
    # mean 3, sd = sqrt(2.5), sem = sqrt(0.5); t_{0.995, 4} = 4.6040949 (t table)
    m, lo, hi, n = cmp.mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 4.604094871 * math.sqrt(0.5)
    assert (m, n) == (3.0, 5)
    assert lo == pytest.approx(3.0 - half, abs=1e-8) and hi == pytest.approx(3.0 + half, abs=1e-8)
    # same via scipy, other level
    m, lo, hi, n = cmp.mean_ci([1.0, 2.0, 3.0, 4.0, 5.0], level=0.95)
    assert hi - m == pytest.approx(stats.t.ppf(0.975, 4) * math.sqrt(0.5), rel=1e-14)
    assert cmp.CI_METHOD == "Student-t" and cmp.CI_LEVEL == 0.99


def test_mean_ci_nonfinite_excluded_and_counted():
    s = cmp.summarize([1.0, np.nan, 3.0, np.inf, -np.inf])
    assert (s["mean"], s["n_ok"], s["n_nonfinite"]) == (2.0, 2, 3)
    assert cmp.mean_ci([1.0, np.nan, 3.0])[3] == 2
    assert cmp.mean_ci([7.0]) == (7.0, -math.inf, math.inf, 1)
    m, lo, hi, n = cmp.mean_ci([np.nan])
    assert math.isnan(m) and (lo, hi, n) == (-math.inf, math.inf, 0)
    assert cmp.mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0, 3)
    with pytest.raises(ConfigError, match="level must be in"):
        cmp.mean_ci([1.0, 2.0], level=1.5)


def test_ci_coverage_statistical():
    """99% t-interval covers the true mean: misses over 2000 normal samples of size 8 are
    Binomial(2000, 0.01); we accept 5..40 misses. False-alarm rate of this test
    P(X<5)+P(X>40) = 2.1e-5 (computed below)."""
    far = stats.binom.cdf(4, 2000, 0.01) + stats.binom.sf(40, 2000, 0.01)
    assert far < 1e-4
    rng = np.random.default_rng(20261121)
    x = rng.normal(1.5, 2.0, size=(2000, 8))
    misses = 0
    for row in x:
        _, lo, hi, _ = cmp.mean_ci(row)
        misses += not (lo <= 1.5 <= hi)
    assert 5 <= misses <= 40


@pytest.mark.parametrize(
    "lo, hi, bound, cert, hyp, expected",
    [
        (1.0, 2.0, 2.0, True, True, "holds"),  # upper end == bound holds
        (1.0, 2.0, 3.0, True, None, "holds"),  # unknown hypothesis does not block
        (2.5, 3.0, 2.0, True, True, "violated"),
        (2.0, 3.0, 2.0, True, True, "inconclusive"),  # lower end == bound not violated
        (1.0, 3.0, 2.0, True, True, "inconclusive"),
        (1.0, 2.0, 3.0, True, False, "not_applicable"),
        (2.5, 3.0, 2.0, False, True, "not_applicable"),  # uncertified never violated/holds
        (1.0, 2.0, math.inf, True, True, "holds"),  # VACUOUS +inf bound
        (1.0, 2.0, math.nan, True, True, "inconclusive"),
        (-math.inf, math.inf, 2.0, True, True, "inconclusive"),
    ],
)
def test_verdict_table_of_cases(lo, hi, bound, cert, hyp, expected):
    assert cmp.verdict(lo, hi, bound, cert, hyp) == expected


def test_tightness_cases():
    assert cmp.tightness(4.0, 2.0) == 2.0
    assert math.isnan(cmp.tightness(4.0, 0.0)) and math.isnan(cmp.tightness(4.0, -1.0))
    assert cmp.tightness(math.inf, 2.0) == math.inf
    assert math.isnan(cmp.tightness(math.nan, 2.0))
    np.testing.assert_array_equal(cmp.tightness([2.0, 3.0], [1.0, 0.0]), [2.0, np.nan])


def test_loglog_slope_exact_power_law_and_edge_cases():
    T = np.array([10.0, 100.0, 1000.0, 10000.0])
    s, se = cmp.loglog_slope(T, 3.0 * T ** -0.5)
    assert s == pytest.approx(-0.5, abs=1e-14) and se == pytest.approx(0.0, abs=1e-14)
    s, se = cmp.loglog_slope([1.0, 10.0], [5.0, 0.5])
    assert s == pytest.approx(-1.0, abs=1e-15) and math.isnan(se)
    # non-positive values ignored; one usable point -> nan
    assert all(math.isnan(v) for v in cmp.loglog_slope([1.0, 10.0], [1.0, -1.0]))
    assert all(math.isnan(v) for v in cmp.loglog_slope([5.0, 5.0], [1.0, 2.0]))
    s, _ = cmp.loglog_slope([1.0, 2.0, 4.0, 8.0], [1.0, 0.5, 0.0, 0.125])
    assert s == pytest.approx(-1.0, abs=1e-14)
    # hand computed: points (1,1), (e,e^2)... slope of (0,0),(1,2),(2,2) in logs = 1, se = ...
    e = math.e
    s, se = cmp.loglog_slope([1.0, e, e * e], [1.0, e * e, e * e])
    # x = 0,1,2; y = 0,2,2: slope = 1, resid = (-1/3, 2/3, -1/3), SSR = 2/3, Sxx = 2
    assert s == pytest.approx(1.0, abs=1e-14)
    assert se == pytest.approx(math.sqrt((2 / 3) / 1 / 2), abs=1e-14)


@settings(max_examples=40, deadline=None)
@given(st.floats(-3, 3), st.floats(1e-3, 1e3), st.lists(st.floats(1, 1e6), min_size=2,
                                                          max_size=8, unique=True))
def test_loglog_slope_recovers_power(a, c, hs):
    h = np.array(hs)
    if np.ptp(np.log(h)) < 1e-3:
        return
    s, _ = cmp.loglog_slope(h, c * h ** a)
    assert s == pytest.approx(a, abs=1e-8)


def test_oracle_test_hand_and_statistical():
    z, ok = cmp.oracle_test(1.1, 0.05, 1.0)
    assert z == pytest.approx(2.0) and ok  # |2| <= 3.29
    z, ok = cmp.oracle_test(1.2, 0.05, 1.0)
    assert z == pytest.approx(4.0) and not ok
    assert cmp.oracle_test(1.0, 0.0, 1.0) == (0.0, True)
    assert cmp.oracle_test(1.5, 0.0, 1.0) == (math.inf, False)
    # zero spread = deterministic comparison, exact up to EXACT_RTOL (relative 1e-9)
    assert cmp.oracle_test(119.21496539792389, 0.0, 119.21496539792386) == (0.0, True)
    assert cmp.oracle_test(100.0 * (1 + 5e-10), 0.0, 100.0) == (0.0, True)
    assert cmp.oracle_test(100.0 * (1 - 2e-9), 0.0, 100.0) == (-math.inf, False)
    assert not cmp.oracle_test(1.2, 0.05, 1.0, far=0.5)[1] and cmp.oracle_test(1.1, 0.05, 1.0,
                                                                               far=0.5)[1] is False
    # MC mean of 400 exponential(2) draws against the exact mean 2; false-alarm rate 1e-3
    rng = np.random.default_rng(7)
    x = rng.exponential(2.0, 400)
    s = cmp.summarize(x)
    assert cmp.oracle_test(s["mean"], s["sem"], 2.0)[1]
    assert not cmp.oracle_test(s["mean"], s["sem"], 2.5)[1]  # negative control


def test_oracle_test_uses_the_student_t_critical_value():
    """At n = 6 the statistic 4.0 fails the normal 3.29 but passes t_5's 6.87; and the
    false-alarm rate at far = 0.05 on Gaussian samples of 6 is 0.05 with the t value
    (0.12 with the normal one).  Acceptance band: binomial(4000, 0.05) 1e-4 quantiles
    (false-alarm rate of this test 2e-4; fixed seed)."""
    from scipy import stats as st

    assert not cmp.oracle_test(1.2, 0.05, 1.0)[1]
    assert cmp.oracle_test(1.2, 0.05, 1.0, n=6)[1]
    assert not cmp.oracle_test(1.4, 0.05, 1.0, n=6)[1]  # 8.0 > 6.87
    rng = np.random.default_rng(2024)
    N, bad_t, bad_z = 4000, 0, 0
    for _ in range(N):
        x = rng.normal(1.0, 2.0, 6)
        s = cmp.summarize(x)
        bad_t += not cmp.oracle_test(s["mean"], s["sem"], 1.0, far=0.05, n=6)[1]
        bad_z += not cmp.oracle_test(s["mean"], s["sem"], 1.0, far=0.05)[1]
    lo, hi = st.binom.ppf(1e-4, N, 0.05), st.binom.ppf(1 - 1e-4, N, 0.05)
    assert lo <= bad_t <= hi
    assert bad_z > hi  # the normal critical value is anti-conservative at n = 6


def _frames(true_mean: float = 1.0):
    rng = np.random.default_rng(3)
    rows, brows = [], []
    for T in (10, 100, 1000):
        for v in true_mean * T ** -0.5 * (1 + 0.01 * rng.standard_normal(20)):
            rows.append(("thm1", "sc", "paper", T, v))
        brows.append(("thm1", "sc", "paper", T, 2.0 * T ** -0.5, "CERTIFIED_PAPER", True, True,
                      true_mean * T ** -0.5, -0.5, "x"))
        # a deliberately wrong bound (negative control): half the mean
        brows.append(("thm1", "ctl", "paper", T, 0.5 * T ** -0.5, "CERTIFIED_PAPER", True, True,
                      math.nan, -0.5, "y"))
    for T in (10, 100, 1000):
        for v in true_mean * T ** -0.5 * (1 + 0.01 * rng.standard_normal(20)):
            rows.append(("thm1", "ctl", "paper", T, v))
    samples = pd.DataFrame(rows, columns=["theorem", "scenario", "mode", "horizon", "value"])
    bounds = pd.DataFrame(brows, columns=["theorem", "scenario", "mode", "horizon", "bound",
                                          "status", "bound_is_certified", "hypotheses_hold",
                                          "exact", "expected_slope", "control"])
    return samples, bounds


def test_verdict_table_end_to_end_with_negative_control(tmp_path):
    samples, bounds = _frames()
    df = cmp.verdict_table(samples, bounds)
    assert list(df.columns[:13]) == cmp.VERDICT_COLUMNS
    assert "control" in df.columns and len(df) == 6
    good = df[df.scenario == "sc"]
    bad = df[df.scenario == "ctl"]
    assert (good.verdict == "holds").all() and (bad.verdict == "violated").all()
    assert good.tightness.to_numpy() == pytest.approx(2.0, rel=0.01)
    assert good.slope.iloc[0] == pytest.approx(-0.5, abs=0.01)
    assert (good.n_ok == 20).all() and good.oracle_pass.all()
    assert bad.oracle_pass.isna().all() and bad.exact.isna().all()
    # divergence: one +inf replicate -> never "holds"
    s2 = samples.copy()
    s2.loc[0, "value"] = math.inf
    df2 = cmp.verdict_table(s2, bounds)
    row = df2[(df2.scenario == "sc") & (df2.horizon == 10)].iloc[0]
    assert row.verdict == "inconclusive" and row.n_nonfinite == 1 and row.n_ok == 19
    # not applicable status passes through
    b3 = bounds.assign(bound_is_certified=False, status="RATE_SHAPE_ONLY")
    assert (cmp.verdict_table(samples, b3).verdict == "not_applicable").all()
    # missing values given as None are NaN (object columns from the caller)
    b4 = bounds.astype(object).assign(exact=None, expected_slope=None)
    d4 = cmp.verdict_table(samples, b4)
    assert d4.exact.isna().all() and d4.oracle_pass.isna().all()
    assert (d4[d4.scenario == "sc"].verdict == "holds").all()
    # CSV round trip keeps inf/nan and column order
    df.loc[0, "bound"] = math.inf
    p = cmp.write_verdicts(df, tmp_path / "verdicts.csv")
    back = cmp.read_verdicts(p)
    assert list(back.columns[:13]) == cmp.VERDICT_COLUMNS
    assert back.loc[0, "bound"] == math.inf and back["mean"].to_numpy() == pytest.approx(
        df["mean"].to_numpy(), rel=1e-15)
    assert not list(tmp_path.glob(".tmp-*"))


def test_verdict_table_rejects_bad_frames():
    samples, bounds = _frames()
    with pytest.raises(ConfigError, match="must have 'value'"):
        cmp.verdict_table(samples.drop(columns="value"), bounds)
    with pytest.raises(ConfigError, match="one row per"):
        cmp.verdict_table(samples, pd.concat([bounds, bounds.iloc[:1]]))
