"""validation.paper.stats: Welch intervals by hand, the grid rule, verdicts, negative control."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from validation.paper.common import Arm, Claim, Experiment, Setting
from validation.paper.stats import diff_ci, judge, select, summarise, verdict_of


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


@pytest.mark.parametrize("statuses,verdict", [
    (["holds", "holds"], "reproduced"), (["holds", "reversed"], "not reproduced"),
    (["holds", "unresolved"], "inconclusive"), ([], "inconclusive")])
def test_verdict_of(statuses, verdict):
    assert verdict_of(statuses) == verdict


def _exp(values: dict[str, list[float]], fgap: dict[str, list[float]] | None = None,
         claims=()):
    """A fake experiment whose arms' records hold the given final values."""
    arms = tuple(Arm(k, k.split("@")[0], k, {}, float(k.split("@")[1]) if "@" in k else None)
                 for k in values)
    exp = Experiment("fake", "t", "s", "c", "a", (Setting("s", "s", arms),), tuple(claims),
                     horizon=1.0, replicates=len(next(iter(values.values()))),
                     curve_metric="m", metrics=("m",))
    recs = {}
    for k, vals in values.items():
        for r, v in enumerate(vals):
            fg = (fgap or {}).get(k, [0.0] * len(vals))[r]
            recs[f"paper/fake/{k}/r{r}"] = {
                "status": "ok" if math.isfinite(fg) else "diverged",
                "value": {"final": {"m": v, "f_gap": fg}, "time_to": {}, "busy": [0.0] * 41,
                          "curves": {"m": [v] * 41}, "concurrency_mean": 0.5}}
    return exp, recs


def test_grid_rule_takes_lowest_training_gap_and_skips_diverged():
    exp, recs = _exp({"x@1": [0.5, 0.5], "x@2": [0.9, 0.9], "x@4": [0.99, 0.99]},
                     {"x@1": [0.3, 0.3], "x@2": [0.1, 0.2], "x@4": [0.0, math.inf]})
    assert select(exp, recs) == {"s": {"x": "x@2"}}


def test_claims_and_negative_control():
    good = Claim("s", "m", "a", ">", "b", text="a > b")
    bad = Claim("s", "m", "b", ">", "a", text="b > a (false)")
    tie = Claim("s", "m", "a", ">", "c", text="a > c (equal means)")
    thr = Claim("s", "m", "a", ">", threshold=0.5, text="a > 0.5")
    exp, recs = _exp({"a": [0.90, 0.91, 0.92, 0.90], "b": [0.50, 0.52, 0.51, 0.50],
                      "c": [0.85, 0.97, 0.89, 0.93]}, claims=(good, bad, tie, thr))
    ch = select(exp, recs)
    assert judge(exp, good, ch, recs)["status"] == "holds"
    assert judge(exp, bad, ch, recs)["status"] == "reversed"  # the machinery must flag it
    assert judge(exp, tie, ch, recs)["status"] == "unresolved"
    assert judge(exp, thr, ch, recs)["status"] == "holds"
    s = summarise(exp, recs)
    assert s["verdict"] == "not reproduced"
    assert [c["status"] for c in s["claims"]] == ["holds", "reversed", "unresolved", "holds"]
