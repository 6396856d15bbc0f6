"""The example plug-in, installed: fedsim finds its theorem, family and suite rows, and the
bound holds on every point hypothesis tries (exact oracle: no sampling error).

Hand-computed: on a 1-d quadratic (dim = 1, so the spectrum is {mu} and mu = L) bound (1) is
an equality; a step 1.9/L fails the textbook step hypothesis.  Statistical: the engine's
Monte Carlo agrees with the exact oracle (99% interval, false-alarm rate 1%, fixed seed).
"""

from __future__ import annotations

import pytest
from fedsim.theory.registry import get_theorem
from fedsim.validation.families import get_family
from fedsim.validation.rows import suite_rows
from hypothesis import given

from fedsim.testing import assert_bound_holds, check_bound, fedsim_profile, points

SPACE = dict(dim="2..4", mu="0.05..1.0", eta_mult="0.05..1.0", noise_sd="0..1.0",
             K="1..300", seed="0..50")


def test_fedsim_finds_the_plugin():
    assert get_theorem("sgd_quadratic").horizon == "K"
    assert get_family("sgd-quadratic").theorem == "sgd_quadratic"
    assert get_family("sgd-quadratic").horizon == "K"
    assert {"sgd-textbook", "sgd-sharp", "sgd-step-too-large"} <= \
        {r.name for r in suite_rows("quick")}


@fedsim_profile
@given(points("sgd-quadratic", **SPACE, mode="textbook"))
def test_textbook_bound_holds(point):
    rec = assert_bound_holds(point, method="exact", check_replicates=2)
    assert rec.verdict == "holds", rec


@fedsim_profile
@given(points("sgd-quadratic", **SPACE, mode="sharp"))
def test_sharp_bound_holds(point):
    rec = assert_bound_holds(point, method="exact", check_replicates=2)
    assert rec.verdict in ("holds", "inconclusive"), rec   # equality when A = mu I
    assert not rec.ratio > 1.0 + 1e-9          # NaN when both are 0 (q = 0, no noise)


def test_sharp_bound_is_attained_when_the_hessian_is_mu():
    """dim = 1 and mu = L: f = mu/2 (x - x*)^2, so (1) holds with equality."""
    rec = check_bound(get_family("sgd-quadratic").build(
        {"dim": 1, "mu": 0.5, "L": 0.5, "eta_mult": 0.8, "K": 7, "mode": "sharp"}))
    assert rec.ratio == pytest.approx(1.0, rel=1e-12)
    assert rec.verdict == "inconclusive"          # exactly tight: within the rounding band


def test_a_step_past_1_over_L_is_not_applicable():
    rec = check_bound(get_family("sgd-quadratic").build({"eta_mult": 1.9}), method="exact")
    assert rec.verdict == "not_applicable" and rec.failing_hypotheses == ("step_size",)


def test_the_measured_hypothesis_needs_a_simulation():
    """Fresh gradients are measured (the engine's staleness): with nothing simulated the
    hypothesis stays unknown and the point is not a claim; two runs settle it."""
    inst = get_family("sgd-quadratic").build({"K": 20})
    alone = check_bound(inst, method="exact", check_replicates=0)
    assert alone.verdict == "not_applicable" and not alone.claim
    assert "fresh gradients: staleness <= 0 (measured)" in alone.unknown_hypotheses
    assert "can only be settled by a simulation" in alone.note
    ran = check_bound(inst, method="exact", check_replicates=2)
    assert ran.verdict == "holds" and ran.claim and not ran.unknown_hypotheses


def test_engine_monte_carlo_agrees_with_the_exact_oracle():
    inst = get_family("sgd-quadratic").build({"K": 20, "dim": 3})
    ex = check_bound(inst, method="exact")
    mc = check_bound(inst, method="mc", replicates=400, seed=5)
    assert mc.ci_low <= ex.measured <= mc.ci_high
