"""fedsim.testing: strategies of family points, the verdict record, the assertion, the plugin.

Hand-computed: THEORY_SPEC 7.d's instance (n = 2, p_i = 0.3, p_s = 0.4, M = 50, K = 9):
exact E f(xbar_K) - f* = 0.819411 against the paper bound 0.720726 (violated) and the
corrected bound 1.009218 (holds); the Student-t interval of (1, 2, 3) (t_{0.995,2} = 9.925).
Statistical: the engine Monte-Carlo check of a point with an exact oracle contains the exact
value (a 99% interval: false-alarm rate 1%, at a fixed seed, so the test is deterministic).
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from fedsim.validation.compare import measured_verdict
from hypothesis import given, settings
from hypothesis import strategies as hs

from fedsim.errors import ConfigError
from fedsim.testing import (
    PROFILE,
    BoundCheck,
    BoundViolated,
    Point,
    assert_bound_holds,
    check_bound,
    fedsim_profile,
    points,
)

SPEC_7D = {"n": 2, "p": [0.3, 0.3], "p_s": 0.4, "M": 50, "K": 9, "sigma2": 1e-4}


@settings(fedsim_profile, max_examples=40)
@given(points("theorem8-norm", n="1..5", p_s="0.1..0.9", M="[1,10,50]", K=hs.integers(2, 7),
              mode="corrected", B=2.0))
def test_points_follow_the_space_syntax(point):
    assert isinstance(point, Point) and point.family == "theorem8-norm"
    q = point.params
    assert set(q) == {"n", "p_s", "M", "K", "mode", "B"}
    assert 1 <= q["n"] <= 5 and isinstance(q["n"], int)
    assert 0.1 <= q["p_s"] <= 0.9 and q["M"] in (1, 10, 50) and 2 <= q["K"] <= 7
    assert q["mode"] == "corrected" and q["B"] == 2.0
    full = point.full()
    assert full["centre_spread"] == 0.0 and full["sigma2"] == 0.0   # the defaults
    assert point.build().params["n"] == q["n"]


def test_points_refuse_unknown_names_and_bad_specs_at_once():
    with pytest.raises(ConfigError, match="has no parameter 'q'"):
        points("theorem8-norm", q="1..3")
    with pytest.raises(ConfigError, match="family"):
        points("no-such-family", n="1..3")
    with pytest.raises(ConfigError, match="lo <= hi"):
        points("theorem8-norm", n="5..1")
    with pytest.raises(ConfigError, match="mode"):
        points("theorem8-norm", mode="literal")


def test_check_bound_on_the_7d_instance_by_hand():
    paper = check_bound(Point(family="theorem8-norm", params={**SPEC_7D, "mode": "paper"}))
    assert isinstance(paper, BoundCheck)
    assert paper.method == "exact" and paper.n == 0
    assert paper.measured == pytest.approx(0.819411, abs=1e-6)
    assert paper.bound == pytest.approx(0.720726, abs=1e-6)
    assert paper.ci_low == paper.ci_high == paper.measured
    assert paper.verdict == "violated" and paper.status == "PAPER_LITERAL_KNOWN_ERRATUM"
    assert paper.ratio == pytest.approx(0.819411 / 0.720726, rel=1e-5)
    assert paper.tightness == pytest.approx(1 / paper.ratio, rel=1e-12)
    with pytest.raises(BoundViolated) as err:
        assert_bound_holds(Point(family="theorem8-norm", params={**SPEC_7D, "mode": "paper"}))
    assert err.value.record == paper and "violated" in str(err.value)
    corr = assert_bound_holds(Point(family="theorem8-norm",
                                    params={**SPEC_7D, "mode": "corrected"}))
    assert corr.verdict == "holds" and corr.bound == pytest.approx(1.009218, abs=1e-6)


def test_exact_needs_an_oracle_and_the_default_falls_back_to_mc():
    logistic = Point(family="theorem2-logistic", params={"n": 2, "T_factor": 1e-4})
    with pytest.raises(ConfigError, match="method must be 'mc'"):
        check_bound(logistic, method="exact")
    with pytest.raises(ConfigError, match="method"):
        check_bound(logistic, method="simulate")
    with pytest.raises(ConfigError, match="replicates"):
        check_bound(logistic, replicates=1)


def test_mc_interval_contains_the_exact_value():
    pt = Point(family="theorem8-norm", params={"n": 1, "M": 4, "K": 4, "p_s": 0.5,
                                                "mode": "paper"})
    ex = check_bound(pt, method="exact")
    mc = check_bound(pt, method="mc", replicates=400, seed=3)
    assert mc.method == "mc" and mc.n == 400 and mc.level == 0.99
    assert mc.ci_low <= ex.measured <= mc.ci_high
    assert mc.bound == ex.bound and mc.status == ex.status
    again = check_bound(pt, method="mc", replicates=400, seed=3)
    assert again == mc                                   # a function of (point, seed)
    assert mc.verdict in ("violated", "inconclusive")    # 0.9758 vs 0.9682: within ~1%


def test_not_applicable_when_a_hypothesis_fails():
    rec = check_bound(Point(family="theorem1-window", params={"eta_mult": 3.0, "T": 40}),
                      replicates=4)
    assert rec.verdict == "not_applicable" and rec.failing_hypotheses


def test_measured_verdict_by_hand():
    m = measured_verdict(bound=10.0, certified=True, hypotheses_hold=True,
                         values=[1.0, 2.0, 3.0])
    half = 9.924843200918271 * 1.0 / math.sqrt(3)
    assert m["mean"] == 2.0 and m["ci_high"] == pytest.approx(2 + half, rel=1e-12)
    assert m["verdict"] == "holds" and m["ratio"] == 0.2 and m["tightness"] == 5.0
    assert measured_verdict(bound=2.0, certified=True, hypotheses_hold=True,
                            values=[1.0, 2.0, 3.0])["verdict"] == "inconclusive"
    assert measured_verdict(bound=1.0, certified=True, hypotheses_hold=None,
                            exact=1.5)["verdict"] == "violated"
    # an oracle with an error bound compares its interval
    assert measured_verdict(bound=1.0, certified=True, hypotheses_hold=True, exact=1.05,
                            exact_error=0.1)["verdict"] == "inconclusive"
    assert measured_verdict(bound=1.0, certified=False, hypotheses_hold=True,
                            exact=5.0)["verdict"] == "not_applicable"
    assert measured_verdict(bound=5.0, certified=True, hypotheses_hold=True,
                            values=[1.0, 2.0, math.inf])["verdict"] == "inconclusive"
    with pytest.raises(ConfigError):
        measured_verdict(bound=1.0, certified=True, hypotheses_hold=True)


def test_pytest_plugin_registers_the_marker_and_the_profile(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\nfrom hypothesis import settings\n\n"
        "@pytest.mark.fedsim\ndef test_profile():\n"
        "    assert settings.default.derandomize and settings.default.database is None\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--strict-markers", f"--hypothesis-profile={PROFILE}", "-m", "fedsim",
                          str(tmp_path / "test_x.py")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout
