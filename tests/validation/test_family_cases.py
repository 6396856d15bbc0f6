"""``families.cases.family_case`` and ``families.base.instances_case``: a suite scenario from a
family, a point, horizons and modes.  Hand-checked on [P] Theorem 3's window family (two modes
share one run set), Theorem 1's (one run set per horizon), Theorem 7's curve family (one run
read at every horizon) and the exact-only families (no run, exact rows); errors on bad input;
every built-in theorem's suite cases equal to the family's own instances (scenario, bound,
exact value)."""

from __future__ import annotations

import math

import pytest
from fedsim.validation import cases as common
from fedsim.validation.families import get_family
from fedsim.validation.families.base import instances_case
from fedsim.validation.families.cases import family_case, family_instances
from fedsim.validation.scenarios import (
    asypfl_case,
    asypfl_counterexample,
    asypfl_periods_counterexample,
    perfedavg_case,
    perfedavg_counterexample,
    theorem1_case,
    theorem3_case,
    theorem7_case,
    theorem8_case,
    theorem8_counterexample,
)

from fedsim.errors import ConfigError

_T3 = dict(n=4, L=0.01, kappa=2.0, Q=2, tau=1, heterogeneity=3.0, seed=5, lam_over_L=8.0)


def test_modes_at_one_horizon_share_a_run_set_and_horizons_do_not():
    fam = get_family("theorem3-window")
    case = family_case(fam, name="q", point=_T3, horizons=[240, 480],
                       modes=("corrected", "paper_literal"), replicates=3, exact=False,
                       expected_slope=-0.5, x_label="T")
    assert [r.key for r in case.runs] == ["theorem3/q/H240", "theorem3/q/H480"]
    assert [r.horizons for r in case.runs] == [(240,), (480,)]
    assert all(r.replicates == 3 for r in case.runs)
    assert [(r.mode, r.horizon, r.run_key) for r in case.rows] == [
        ("corrected", 240, "theorem3/q/H240"), ("paper_literal", 240, "theorem3/q/H240"),
        ("corrected", 480, "theorem3/q/H480"), ("paper_literal", 480, "theorem3/q/H480")]
    assert all(math.isnan(r.exact) for r in case.rows)
    assert case.family == "theorem3-window" and case.expected_slope == -0.5
    # the inner-accuracy check appears once although four instances carry it
    assert [c.kind for c in case.sim_checks].count("inner_failures") == 1


def test_rows_carry_each_instances_bound_and_the_cached_exact_value(tmp_path):
    fam = get_family("theorem1-window")
    pt = dict(L=0.01, Q=2, tau=3)
    common.set_oracle_cache(tmp_path)
    try:
        case = family_case(fam, name="q", point=pt, horizons=[1000, 2000], replicates=2,
                           control="c", expected_verdict="holds")
        again = family_case(fam, name="q", point=pt, horizons=[1000, 2000], replicates=2)
        assert common.oracle_cache_stats() == {"hits": 2, "computed": 2, "damaged": 0}
    finally:
        common.set_oracle_cache(None)
    for row, T in zip(case.rows, (1000, 2000), strict=True):
        inst = fam.build(dict(pt, T=T))
        assert row.bound == inst.bound_value
        assert row.exact == inst.exact(0).value
        assert (row.control, row.expected_verdict) == ("c", "holds")
    assert [r.exact for r in again.rows] == [r.exact for r in case.rows]
    assert case.control == "c" and case.expected_verdict == "holds"


def test_a_curve_family_reads_one_run_at_every_horizon():
    """Theorem 7's schedule does not depend on K: one run (steps = max K, recorded every
    gcd), a row per horizon with that horizon's bound and exact value."""
    fam = get_family("theorem7-quad")
    hs = [20, 50, 100]
    case = family_case(fam, name="c", point={"n": 2, "p_s": 0.3}, horizons=hs, replicates=2)
    (run,) = case.runs
    assert run.horizons == (20, 50, 100) and run.scenario["horizon"]["steps"] == 100
    assert run.scenario["record"]["every"] == 10
    for row, K in zip(case.rows, hs, strict=True):
        alone = fam.build({"n": 2, "p_s": 0.3, "K": K})
        assert row.horizon == K and row.run_key == run.key
        assert row.bound == pytest.approx(alone.bound_value, rel=1e-14)
        assert row.exact == pytest.approx(alone.exact(0).value, rel=1e-12)
    with pytest.raises(ConfigError, match="horizons must be increasing"):
        fam.build_curve({}, [50, 20])
    with pytest.raises(ConfigError, match="no curve builder"):
        get_family("theorem8-norm").build_curve({}, [5, 9])


def test_exact_only_families_give_exact_rows_with_one_verdict_per_mode():
    case = family_case(get_family("asypfl1-periods"), name="r", point={}, horizons=[40, 80],
                       modes=("paper_literal", "corrected"), replicates=2,
                       expected_verdict={"paper_literal": "violated"})
    assert case.runs == [] and [e.horizons for e in case.exacts] == [(40, 80)]
    assert [(r.mode, r.horizon, r.expected_verdict) for r in case.rows] == [
        ("paper_literal", 40, "violated"), ("paper_literal", 80, "violated"),
        ("corrected", 40, ""), ("corrected", 80, "")]
    assert case.exacts[0].values == tuple(r.exact for r in case.rows[:2])
    assert "tick_oracle" in case.exacts[0].oracle
    # Instance.case (search's confirmation) measures an exact-only point by its oracle
    one = get_family("perfedavg-cx").build({"tau": 4096}).case(2)
    assert one.runs == [] and one.rows[0].exact == one.exacts[0].values[0] > 0


def test_different_scenarios_at_one_horizon_get_one_run_set_each():
    fam = get_family("theorem8-norm")
    insts = family_instances(fam, {}, [9], ("paper", "corrected"))
    assert insts[0].scenario != insts[1].scenario         # each mode runs its own step
    case = instances_case(insts, name="ce", replicates=2)
    assert [r.key for r in case.runs] == ["theorem8/ce/H9/paper", "theorem8/ce/H9/corrected"]
    assert [r.run_key for r in case.rows] == [r.key for r in case.runs]


def test_bad_input_is_refused():
    fam1, fam8 = get_family("theorem1-window"), get_family("theorem8-norm")
    with pytest.raises(ConfigError, match="instances"):
        instances_case([], name="x", replicates=2)
    with pytest.raises(ConfigError, match="must all be of theorem"):
        instances_case([fam1.build({"T": 10}), fam8.build()], name="x", replicates=2)
    with pytest.raises(ConfigError, match="exacts"):
        instances_case([fam8.build()], name="x", replicates=2, exacts=[1.0, 2.0])
    with pytest.raises(ConfigError, match="no parameter"):
        family_case(fam1, name="x", point={"bogus": 1}, horizons=[10], replicates=2)
    with pytest.raises(ConfigError, match="horizons"):
        family_case(fam1, name="x", point={}, horizons=[], replicates=2)


def _same(case, fam, point, modes=("",)):
    """Every row of ``case`` is ``fam`` at ``point`` (and the row's mode and horizon)."""
    for row in case.rows:
        q = dict(point, **{fam.horizon: row.horizon})
        if "mode" in fam.defaults():
            q["mode"] = row.mode
        inst = fam.build(q)
        assert row.bound == pytest.approx(inst.bound_value, rel=1e-14), (case.scenario, row)
        assert [h.holds for h in row.result.hypotheses] == \
            [h.holds for h in inst.bound.hypotheses]
    assert case.family == fam.name


def test_suite_cases_are_the_family_instances():
    """Every built-in theorem's suite cases are family points: same scenario, same bound."""
    c1 = theorem1_case("Lsmall", horizons=[1000], replicates=2, variant="step10x")
    i1 = get_family("theorem1-window").build(dict(L=0.01, Q=2, tau=3, eta_mult=10.0, T=1000))
    assert c1.runs[0].scenario == i1.scenario and c1.rows[0].bound == i1.bound_value
    assert c1.family == "theorem1-window" and c1.control == "out_of_regime:step10x"
    c3 = theorem3_case("Lsmall", horizons=[312], replicates=2, variant="lam_lt_7L")
    i3 = get_family("theorem3-window").build(dict(_T3, lam_over_L=3.0, T=312))
    assert c3.runs[0].scenario == i3.scenario
    assert [r.mode for r in c3.rows] == ["corrected", "paper_literal"]
    small = theorem1_case("Lsmall", horizons=[1000], replicates=2, variant="tau_small")
    assert small.family == "theorem1-window"
    assert small.runs[0].scenario["algorithm"]["tau"] == 3          # simulated window
    assert small.sim_checks[0].limit == 1 and small.sim_checks[0].replaces == ("Asm 1",)
    assert theorem1_case("Lsmall", replicates=2, variant="physical").family == \
        "theorem1-physical"
    _same(theorem7_case("L1", horizons=[100, 300], replicates=2, variant="fixed_count"),
          get_family("theorem7-quad"), dict(n=3, rates=[1.0, 2.0, 4.0], rate_s=1.5, seed=11,
                                            trigger_every=2))
    _same(theorem8_case("Lsmall", horizons=[100], replicates=2),
          get_family("theorem8-logistic"), dict(feature_scale=0.1))
    _same(theorem8_counterexample(M=10, K=8, replicates=2), get_family("theorem8-norm"),
          dict(n=2, rates=[3.0, 3.0], rate_s=4.0, M=10, sigma2=1e-4))
    _same(perfedavg_case("L1", horizons=[10, 40], replicates=2, variant="r_half"),
          get_family("perfedavg-quad"), dict(r=0.5))
    _same(perfedavg_counterexample(4096, "holds"), get_family("perfedavg-cx"), dict(tau=4096))
    _same(asypfl_case("asypfl_theorem2", "Lsmall", horizons=[10], replicates=2),
          get_family("asypfl2-quad"), dict(L=0.01))
    _same(asypfl_counterexample("asypfl_theorem1"), get_family("asypfl1-quad"),
          dict(L=2.0, dim=1, heterogeneity=0.0, seed=0, mu_over_L=1.0, noise_sd=1.0))
    _same(asypfl_periods_counterexample(), get_family("asypfl1-periods"), {})


def test_a_suite_row_is_a_family_a_point_horizons_and_modes():
    """``SuiteRow`` (a plug-in's rows) goes through ``family_case`` as the grids do."""
    from fedsim.validation.families.base import Family
    from fedsim.validation.rows import SuiteRow

    curve = SuiteRow(name="t7", family="theorem7-quad", point={"n": 2}, horizons=(20, 40))
    case = curve.case(3)
    assert len(case.runs) == 1 and [r.horizon for r in case.rows] == [20, 40]
    assert case.runs[0].replicates == 3 and all(math.isfinite(r.exact) for r in case.rows)
    ce = SuiteRow(name="ce", family="theorem8-norm", point={"M": 10}, horizons=(8,),
                  modes=("paper", "corrected"), expected_verdict="violated").case(2)
    assert [r.mode for r in ce.rows] == ["paper", "corrected"] and len(ce.runs) == 2
    assert {r.control for r in ce.rows} == {"counterexample"}
    one = SuiteRow(name="one", family="theorem1-window", point={"T": 50}).case(2)
    assert [r.horizon for r in one.rows] == [50]
    # a family naming no horizon parameter: the point's own horizon, no horizons list
    base = get_family("theorem8-norm")
    plain = Family(
        name="plain-norm",
        theorem="theorem8",
        title="t",
        doc="d",
        params=base.params,
        builder=base.builder,
    )
    from fedsim.validation import families as vf

    vf.register_family(plain)
    try:
        assert [r.horizon for r in SuiteRow(name="p", family="plain-norm").case(2).rows] == [9]
        with pytest.raises(ConfigError, match="horizon parameter"):
            SuiteRow(name="p", family="plain-norm", horizons=(5,)).case(2)
    finally:
        vf.unregister_family("plain-norm")


def test_an_exact_only_point_is_checked_exactly_and_refuses_monte_carlo():
    from fedsim.testing import check_bound

    inst = get_family("perfedavg-cx").build({"tau": 10000})
    rec = check_bound(inst)
    assert rec.method == "exact" and rec.verdict == "violated"
    assert rec.bound / rec.measured == pytest.approx(0.688, abs=5e-4)   # E-F1, section 4
    with pytest.raises(ConfigError, match="cannot be Monte Carlo"):
        check_bound(inst, method="mc")
