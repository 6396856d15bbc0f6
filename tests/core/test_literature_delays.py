"""Pareto and rare-straggler delays: analytic moments and supports, sample moments,
dictionary round trips, bad parameters, and the engine's staleness bound they imply."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedsim.delays import Delay, Pareto, Straggler
from fedsim.errors import ConfigError


def test_pareto_analytic_values():
    d = Pareto(shape=3.0, scale=2.0)
    assert d.mean == 3.0                       # 3 * 2 / 2
    assert d.variance == 4.0 * 3.0 / (4.0 * 1.0)  # 3
    assert (d.lower, d.upper) == (2.0, math.inf)
    assert Pareto(shape=1.0, scale=1.0).mean == math.inf
    assert Pareto(shape=2.0, scale=1.0).variance == math.inf


def test_straggler_analytic_values():
    d = Straggler(base={"kind": "constant", "value": 1.0}, p=0.1, m=10.0)
    assert d.mean == pytest.approx(1.9)              # 0.9 + 0.1 * 10
    assert d.variance == pytest.approx(0.9 + 10.0 - 1.9 ** 2)   # E X^2 = 0.9 + 10
    assert (d.lower, d.upper) == (1.0, 10.0)
    assert Straggler(base={"kind": "constant", "value": 1.0}, p=0.0, m=10.0).upper == 1.0


@pytest.mark.parametrize("d", [Pareto(shape=4.5, scale=1.0),
                               Straggler(base={"kind": "uniform", "low": 1.0, "high": 2.0},
                                         p=0.05, m=8.0)])
def test_sample_moments_match_analytic(d):
    # 5-sigma tolerance on the mean of 200000 draws: false alarm about 6e-7
    x = np.asarray(d.sample(np.random.default_rng(11), size=200_000))
    assert x.min() >= d.lower and x.max() <= d.upper
    assert abs(x.mean() - d.mean) <= 5.0 * math.sqrt(d.variance / x.size)


def test_round_trip_and_golden_draws():
    for d in (Pareto(shape=2.5, scale=0.5),
              Straggler(base={"kind": "exponential", "rate": 2.0}, p=0.2, m=5.0)):
        assert Delay.from_dict(d.to_dict()) == d
    # Pareto: scale (1 + Lomax); straggler: base block, then the uniform block
    rng = np.random.default_rng(0)
    want = 0.5 * (1.0 + rng.pareto(2.5, 3))
    np.testing.assert_array_equal(Pareto(shape=2.5, scale=0.5).sample(
        np.random.default_rng(0), size=3), want)
    rng = np.random.default_rng(1)
    base, u = rng.exponential(0.5, 4), rng.random(4)
    got = Straggler(base={"kind": "exponential", "rate": 2.0}, p=0.5, m=3.0).sample(
        np.random.default_rng(1), size=4)
    np.testing.assert_array_equal(got, np.where(u < 0.5, 3.0 * base, base))


@pytest.mark.parametrize("d, field", [
    ({"kind": "pareto", "shape": 0.0, "scale": 1.0}, "shape"),
    ({"kind": "pareto", "shape": 2.0, "scale": -1.0}, "scale"),
    ({"kind": "straggler", "base": {"kind": "constant", "value": 1.0}, "p": 1.5, "m": 2.0}, "p"),
    ({"kind": "straggler", "base": {"kind": "constant", "value": 1.0}, "p": 0.1, "m": 0.5}, "m"),
    ({"kind": "straggler", "base": {"kind": "nope"}, "p": 0.1, "m": 2.0}, "base.kind"),
])
def test_bad_parameters(d, field):
    with pytest.raises(ConfigError, match=field):
        Delay.from_dict(d, "delays.compute")


def test_engine_staleness_bound_reads_the_supports():
    from fedsim.config import Scenario
    from fedsim.engine.staleness import physical_staleness_bound

    def bound(compute):
        sc = Scenario.from_dict({
            "problem": {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0},
            "algorithm": {"name": "fedasync", "Q": 1, "eta": 0.1},
            "delays": {"compute": compute}, "trigger": {"kind": "every_upload"},
            "horizon": {"steps": 10}})
        return physical_staleness_bound(sc.delays, 3, 1, False, 1)

    assert bound({"kind": "pareto", "shape": 3.0, "scale": 1.0}) == math.inf
    few = bound({"kind": "straggler", "base": {"kind": "uniform", "low": 1.0, "high": 1.5},
                 "p": 0.01, "m": 2.0})
    many = bound({"kind": "straggler", "base": {"kind": "uniform", "low": 1.0, "high": 1.5},
                  "p": 0.01, "m": 20.0})
    assert math.isfinite(few) and math.isfinite(many) and many > few
