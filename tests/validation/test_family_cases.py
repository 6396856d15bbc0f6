"""``families.cases.family_case`` and ``families.base.instances_case``: a suite scenario from
family points.  Hand-checked on [P] Theorem 3's window family (two modes share one run set)
and Theorem 1's (one run set per horizon), errors on bad input, and the suites' Theorem 1-3
cases equal to the family's own instances (bound, exact value, scenario)."""

from __future__ import annotations

import math

import pytest
from fedsim.validation import cases as common
from fedsim.validation.families import get_family
from fedsim.validation.families.base import instances_case
from fedsim.validation.families.cases import family_case
from fedsim.validation.scenarios import theorem1_case, theorem3_case

from fedsim.errors import ConfigError

_T3 = dict(n=4, L=0.01, kappa=2.0, Q=2, tau=1, heterogeneity=3.0, seed=5, lam_over_L=8.0)


def test_modes_at_one_horizon_share_a_run_set_and_horizons_do_not():
    fam = get_family("theorem3-window")
    pts = [dict(_T3, T=T, mode=m) for T in (240, 480) for m in ("corrected", "paper_literal")]
    case = family_case(fam, name="q", points=pts, replicates=3, exact=False,
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
    pts = [dict(L=0.01, Q=2, tau=3, T=T) for T in (1000, 2000)]
    common.set_oracle_cache(tmp_path)
    try:
        case = family_case(fam, name="q", points=pts, replicates=2, control="c",
                           expected_verdict="holds")
        again = family_case(fam, name="q", points=pts, replicates=2)
        assert common.oracle_cache_stats() == {"hits": 2, "computed": 2, "damaged": 0}
    finally:
        common.set_oracle_cache(None)
    for row, p in zip(case.rows, pts, strict=True):
        inst = fam.build(p)
        assert row.bound == inst.bound_value
        assert row.exact == inst.exact(0).value
        assert (row.control, row.expected_verdict) == ("c", "holds")
    assert [r.exact for r in again.rows] == [r.exact for r in case.rows]
    assert case.control == "c" and case.expected_verdict == "holds"


def test_different_scenarios_at_one_horizon_get_one_run_set_each():
    fam = get_family("theorem8-norm")
    insts = [fam.build(dict(K=9, mode=m)) for m in ("paper", "corrected")]
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
        family_case(fam1, name="x", points=[{"bogus": 1}], replicates=2)


def test_suite_cases_are_the_family_instances():
    """The suites' [P] Theorem 1 and 3 cases are family points: same scenario, same bound."""
    c1 = theorem1_case("Lsmall", horizons=[1000], replicates=2, variant="step10x")
    i1 = get_family("theorem1-window").build(dict(L=0.01, Q=2, tau=3, eta_mult=10.0, T=1000))
    assert c1.runs[0].scenario == i1.scenario and c1.rows[0].bound == i1.bound_value
    assert c1.family == "theorem1-window" and c1.control == "out_of_regime:step10x"
    c3 = theorem3_case("Lsmall", horizons=[312], replicates=2, variant="lam_lt_7L")
    i3 = get_family("theorem3-window").build(dict(_T3, lam_over_L=3.0, T=312))
    assert c3.runs[0].scenario == i3.scenario
    assert [r.mode for r in c3.rows] == ["corrected", "paper_literal"]
    # a hand-built control keeps its builder
    assert theorem1_case("Lsmall", horizons=[1000], replicates=2,
                         variant="tau_small").family == ""
