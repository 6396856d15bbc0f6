"""fedsim.validation.paper.{intervals,stats}: intervals by hand, the two-stage rule, censoring,
a false-alarm check of the paired interval, verdicts and a negative control."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fedsim.validation.paper.common import TUNE_BASE, Arm, Claim, Experiment, Setting, task_id
from fedsim.validation.paper.intervals import claim_status, diff_ci, one_sample_ci, paired_ci
from fedsim.validation.paper.stats import judge, select, selection_table, summarise, verdict_of
from scipy import stats as st


def test_diff_ci_by_hand():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.0, 1.0, 1.0])
    d, lo, hi = diff_ci(a, b)
    va, vb = 1.0 / 3, (1.0 / 3) / 4
    dof = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 3)
    half = st.t.ppf(0.995, dof) * math.sqrt(va + vb)
    assert d == pytest.approx(1.5) and lo == pytest.approx(1.5 - half)
    assert hi == pytest.approx(1.5 + half)


def test_diff_ci_needs_two_values_a_side():
    assert diff_ci(np.array([1.0]), np.array([0.0, 1.0]))[1:] == (-math.inf, math.inf)
    assert diff_ci(np.array([1.0, np.nan, 2.0]), np.array([0.0, 0.0]))[0] == 1.5


def test_paired_ci_by_hand_with_factor_and_a_dropped_pair():
    a = np.array([1.0, 2.0, 3.0, np.nan])
    b = np.array([0.0, 0.0, 2.0, 5.0])
    d, lo, hi, pairs = paired_ci(a, b, factor=0.5)  # d = 1, 2, 2 (the NaN pair is dropped)
    half = st.t.ppf(0.995, 2) * math.sqrt(1.0 / 3) / math.sqrt(3)
    assert pairs == 3 and d == pytest.approx(5.0 / 3)
    assert (lo, hi) == (pytest.approx(5.0 / 3 - half), pytest.approx(5.0 / 3 + half))
    with pytest.raises(ValueError, match="one value per replicate"):
        paired_ci(a, b[:3])
    assert one_sample_ci(np.array([2.0, 2.0])) == (2.0, 2.0, 2.0)
    assert one_sample_ci(np.array([2.0]))[1:] == (-math.inf, math.inf)


def test_paired_is_narrower_than_welch_for_correlated_arms():
    rng = np.random.default_rng(0)
    common = rng.normal(0.0, 1.0, 12)
    a, b = common + 0.3 + rng.normal(0, 0.05, 12), common + rng.normal(0, 0.05, 12)
    _, lo_p, hi_p, _ = paired_ci(a, b)
    _, lo_w, hi_w = diff_ci(a, b)
    assert hi_p - lo_p < 0.2 * (hi_w - lo_w)
    assert lo_p > 0 and lo_w < 0  # only the paired design resolves this difference


def test_paired_false_alarm_rate_is_the_nominal_one_percent():
    """Equal means, correlated skewed pairs, R = 10: the 99% paired interval excludes 0 in
    1% of samples.  The acceptance band is the binomial(4000, 0.01) 1e-4 and 1 - 1e-4
    quantiles (false-alarm rate of this test 2e-4; fixed seed, so it is deterministic)."""
    rng = np.random.default_rng(12345)
    N, R, bad = 4000, 10, 0
    for _ in range(N):
        z = rng.normal(size=R)
        a = z + rng.normal(size=R)
        b = z + rng.normal(size=R)
        _, lo, hi, _ = paired_ci(a, b)
        bad += lo > 0 or hi < 0
    assert st.binom.ppf(1e-4, N, 0.01) <= bad <= st.binom.ppf(1 - 1e-4, N, 0.01)


@pytest.mark.parametrize("rel,lo,hi,ac,bc,status", [
    ("<", -2.0, -1.0, False, False, "holds"), ("<", 1.0, 2.0, False, False, "reversed"),
    ("<", -1.0, 1.0, False, False, "unresolved"),
    ("<", -2.0, -1.0, True, False, "unresolved"),  # a censored: the true a may be larger
    ("<", -2.0, -1.0, False, True, "holds"),       # b censored: conservative, still holds
    ("<", 1.0, 2.0, False, True, "unresolved"),    # b censored: the true b may be larger
    (">", 1.0, 2.0, False, True, "unresolved"), (">", 1.0, 2.0, True, False, "holds"),
    (">", -2.0, -1.0, True, False, "unresolved")])
def test_claim_status_and_censoring(rel, lo, hi, ac, bc, status):
    assert claim_status(rel, lo, hi, a_censored=ac, b_censored=bc) == status


@pytest.mark.parametrize("statuses,verdict", [
    (["holds", "holds"], "reproduced"), (["holds", "reversed"], "not reproduced"),
    (["holds", "unresolved"], "inconclusive"), ([], "inconclusive")])
def test_verdict_of(statuses, verdict):
    assert verdict_of(statuses) == verdict


def _exp(values: dict[str, list[float]], fgap: dict[str, list[float]] | None = None,
         claims=(), tune: dict[str, list[float]] | None = None, horizon: float = 1.0):
    """A fake experiment whose arms' measurement records hold the given final values and
    whose tuning records hold ``tune`` training gaps."""
    arms = tuple(Arm(k, k.split("@")[0], k, {}, float(k.split("@")[1]) if "@" in k else None)
                 for k in values)
    exp = Experiment("fake", "t", "s", "c", "a", (Setting("s", "s", arms),), tuple(claims),
                     horizon=horizon, replicates=len(next(iter(values.values()))),
                     curve_metric="m", metrics=("m", "f_gap"), targets={"m": 0.5},
                     tune_replicates=len(next(iter((tune or {"x": [0.0]}).values()))))
    recs = {}

    def rec(v, fg):
        return {"status": "ok" if math.isfinite(fg) else "diverged",
                "value": {"final": {"m": v, "f_gap": fg}, "time_to": {"m": v},
                          "busy": [0.0] * 41, "curves": {"m": [v] * 41, "f_gap": [fg] * 41},
                          "concurrency_mean": 0.5}}
    for a in arms:
        for r, v in enumerate(values[a.key]):
            recs[task_id(exp, a, r)] = rec(v, (fgap or {}).get(a.key, [0.0] * 99)[r])
        for r, fg in enumerate((tune or {}).get(a.key, [])):
            recs[task_id(exp, a, r, "tune")] = rec(0.0, fg)
    return exp, recs


def test_task_ids_keep_the_stages_apart():
    exp, _ = _exp({"x@1": [0.0, 0.0]})
    a = exp.settings[0].arms[0]
    assert task_id(exp, a, 0) == "paper/fake/x@1/r0"
    assert task_id(exp, a, 0, "tune") == "paper/fake/tune/x@1/r0"
    assert TUNE_BASE >= 10 ** 6  # no measurement replicate index reaches the tuning seeds


def test_grid_rule_uses_tuning_records_only_and_skips_diverged():
    # measurement gaps say x@1 is best; the tuning records (the rule's input) say x@2
    exp, recs = _exp({"x@1": [0.5, 0.5], "x@2": [0.9, 0.9], "x@4": [0.99, 0.99]},
                     {"x@1": [0.0, 0.0], "x@2": [9.0, 9.0], "x@4": [9.0, 9.0]},
                     tune={"x@1": [0.3, 0.3], "x@2": [0.1, 0.2], "x@4": [0.0, math.inf]})
    assert select(exp, recs) == {"s": {"x": "x@2"}}
    tab = selection_table(exp, recs)["s"]["x"]
    assert [t["chosen"] for t in tab] == [False, True, False]
    assert math.isnan(tab[2]["mean"]) and tab[2]["finite"] == 1


def test_select_max_picks_the_largest():
    from dataclasses import replace

    exp, recs = _exp({"x@1": [0.5, 0.5], "x@2": [0.9, 0.9]},
                     tune={"x@1": [0.3, 0.3], "x@2": [0.1, 0.2]})
    assert select(replace(exp, select_max=True), recs) == {"s": {"x": "x@1"}}


def test_claims_and_negative_control():
    good = Claim("s", "m", "a", ">", "b", text="a > b")
    bad = Claim("s", "m", "b", ">", "a", text="b > a (false)")
    tie = Claim("s", "m", "a", ">", "c", text="a > c (equal means)")
    thr = Claim("s", "m", "a", ">", threshold=0.5, text="a > 0.5")
    half = Claim("s", "m", "b", "<", "a", factor=0.5, text="b < a / 2 (false: 0.5 > 0.45)")
    exp, recs = _exp({"a": [0.90, 0.91, 0.92, 0.90], "b": [0.50, 0.52, 0.51, 0.50],
                      "c": [0.85, 0.97, 0.89, 0.93]}, claims=(good, bad, tie, thr, half))
    ch = select(exp, recs)
    assert judge(exp, good, ch, recs)["status"] == "holds"
    assert judge(exp, bad, ch, recs)["status"] == "reversed"  # the machinery must flag it
    assert judge(exp, tie, ch, recs)["status"] == "unresolved"
    assert judge(exp, thr, ch, recs)["status"] == "holds"
    assert judge(exp, half, ch, recs)["status"] == "reversed"
    s = summarise(exp, recs)
    assert s["verdict"] == "not reproduced"
    assert [c["status"] for c in s["claims"]] == ["holds", "reversed", "unresolved", "holds",
                                                  "reversed"]


def test_time_to_claim_with_censored_baseline_cannot_be_reversed():
    # a reaches the target at 0.9 (horizon 1.0); b never does (capped at 1.0): a < 0.5 b
    # looks false on the capped values, but b's true time is unknown -> unresolved
    c = Claim("s", "m", "a", "<", "b", stat="time_to", factor=0.5, text="a < b / 2")
    exp, recs = _exp({"a": [0.9, 0.91, 0.92], "b": [math.inf] * 3}, claims=(c,))
    assert judge(exp, c, select(exp, recs), recs)["status"] == "unresolved"
    exp, recs = _exp({"a": [0.9, 0.91, 0.92], "b": [0.5, 0.52, 0.51]}, claims=(c,))
    assert judge(exp, c, select(exp, recs), recs)["status"] == "reversed"


def test_table_intervals_are_cut_to_the_metric_support():
    from fedsim.validation.paper.stats import _mean_ci, support

    assert support("test_acc") == (0.0, 1.0) and support("test_loss") == (0.0, math.inf)
    assert support("f_gap") == (-math.inf, math.inf)
    m, lo, hi = _mean_ci(np.array([0.99, 1.0, 0.95]), "pers_acc_me")
    assert hi == 1.0 and lo < m < hi
    m, lo, hi = _mean_ci(np.array([0.1, 8.0, 0.2]), "dist_sq")
    assert lo == 0.0 and hi > m
    m, lo, hi = _mean_ci(np.array([-1.0, 1.0, 0.5]), "f_gap")
    assert lo < -1.0  # unbounded metrics keep the plain interval
