"""Hypothesis properties of every built-in scenario family (validation/families).

For a point drawn inside the family's declared parameter ranges (``Param.low``/``high``,
``choices``; sizes capped so that a build stays cheap -- n <= 6, horizons <= a few hundred
steps unless the theorem's threshold sets them, see ``_CAP``):

* the build either raises :class:`~fedsim.errors.ConfigError` (a point the family refuses,
  with a message) or gives an instance whose scenario ``fedsim.config.Scenario.from_dict``
  accepts, whose theorem, mode and horizon are the family's and the scenario's, and whose
  scenario is plain JSON (it is stored in the search's point records);
* the build is a function of the point: building it again gives the same scenario, bound,
  status, hypotheses and constants (the problem-generation ``seed`` is part of the point);
* the problem seed reaches the problem: another seed changes the quadratic optima and nothing
  else of the quadratic families' scenarios;
* :meth:`Instance.case` is validate's one-run, one-row Case of that scenario.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from fedsim.validation.families import (
    BUILTIN,
    Family,
    build_problem_from,
    get_family,
    params_digest,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as hs

from fedsim.config import Scenario
from fedsim.errors import ConfigError
from fedsim.testing import points

# per-parameter caps (inclusive) keeping a build and its scenario small
_CAP = {"n": 6, "M": 60, "K": 200, "Q": 4, "tau": 3, "T": 300, "b": 5, "seed": 2**16,
        "B": 5.0, "sigma2": 5.0, "centre_spread": 2.5, "kappa": 20.0, "L": 5.0,
        "heterogeneity": 5.0, "noise_sd": 2.0, "eta_mult": 3.0, "alpha": 2.0,
        "feature_scale": 3.0, "lam_over_L": 20.0, "nu": 1e-3, "rate_s": 10.0, "p_s": 1.0,
        # T = ceil(T_factor T_min): T_min reaches ~1e6 for the window families at the caps
        "T_factor": 1e-3, "c_mult": 20.0, "trigger_every": 3, "tau_sim": 3, "alpha_L": 1.5,
        "noise_rel": 1.0, "r": 1.0, "beta_mult": 3.0, "w0": 10.0, "mu_over_L": 1.0, "dim": 4,
        "compute_low": 2.0, "compute_high": 2.0, "think_high": 1.0, "alpha_mult": 3.0,
        "eta": 1.0, "period": 6, "offset": 5, "burst": 6, "f_gap": 5.0}
# between the lower end point (drawn too, one time in ten) and these floors the values are
# numerically absurd: theory.area's Theorem-7 constants overflow (OverflowError) at p_s ~
# 1e-246 or L ~ 1e-111, the window step 1/(Q sqrt(L T)) divides by zero at L ~ 1e-220
_FLOOR = {"p_s": 1e-6, "L": 1e-6, "B": 1e-6, "feature_scale": 1e-3, "eta_mult": 1e-6,
          "compute_low": 1e-3, "compute_high": 1e-3}
_SETTINGS = settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _value(p) -> hs.SearchStrategy:
    if p.kind == "choice":
        return hs.sampled_from(p.choices)
    cap = _CAP[p.name]
    lo = 0 if p.low is None else p.low
    hi = cap if p.high is None else min(p.high, cap)
    if p.kind == "int":
        return hs.integers(int(lo), int(hi))
    floor = max(float(lo), _FLOOR.get(p.name, float(lo)))
    inner = hs.floats(floor, float(hi), allow_nan=False, allow_subnormal=False)
    # the lower end point itself (often refused: L = 0, p_s = 0) one draw in ten
    return hs.integers(0, 9).flatmap(lambda k: hs.just(float(lo)) if k == 0 else inner)


@hs.composite
def family_points(draw, fam: Family) -> dict:
    """A point of ``fam``'s space (:func:`fedsim.testing.points` over the scalar parameters,
    each drawn or left at its default); the event law of the AREA families given as p_s, as
    (rates, rate_s) or as p."""
    drawn = {p.name: _value(p) for p in fam.params
             if p.kind != "list" and p.name != "rate_s" and draw(hs.integers(0, 3)) > 0}
    q: dict = dict(draw(points(fam, **drawn)).params)
    if any(p.name == "T" for p in fam.params) and draw(hs.booleans()):
        q["T"] = None
    if any(p.name == "rates" for p in fam.params):
        n = q.get("n", fam.defaults()["n"])
        law = draw(hs.sampled_from(["p_s", "rates", "p"]))
        if law == "rates":
            q.pop("p_s", None)
            q["rates"] = draw(hs.lists(hs.floats(0.05, 10.0), min_size=n, max_size=n))
            q["rate_s"] = draw(hs.floats(0.05, 10.0))
        elif law == "p":
            w = np.array(draw(hs.lists(hs.floats(0.05, 1.0), min_size=n + 1, max_size=n + 1)))
            w = w / w.sum()
            q["p"] = [float(v) for v in w[:n]]
            q["p_s"] = 1.0 - float(w[:n].sum())
    return q


def _build(fam: Family, q: dict):
    try:
        return fam.build(q)
    except ConfigError as e:
        event(f"refused: {str(e).split(',')[0][:70]}")
        return None


def _same(a, b) -> bool:
    return (a == b) or (isinstance(a, float) and isinstance(b, float)
                        and math.isnan(a) and math.isnan(b))


def _check_point(fam: Family, q: dict) -> None:
    inst = _build(fam, q)
    if inst is None:
        return
    event(f"built: {inst.status}")
    assert inst.family == fam.name and inst.theorem == fam.theorem
    assert inst.mode in fam.modes
    if inst.scenario is None:                       # measured by the exact oracle only
        _check_exact_only(fam, q, inst)
        return
    sc = Scenario.from_dict(inst.scenario)          # the engine accepts it
    assert sc is not None
    assert inst.horizon == inst.scenario["horizon"]["steps"] >= 1
    assert json.loads(json.dumps(inst.scenario)) == inst.scenario
    full = fam.complete(q)
    assert {k: v for k, v in inst.params.items() if k != "T"} == \
        {k: v for k, v in full.items() if k != "T"}
    # a function of the point
    again = fam.build(q)
    assert again.scenario == inst.scenario
    assert _same(again.bound_value, inst.bound_value)
    assert again.status == inst.status
    assert [(h.name, h.holds) for h in again.bound.hypotheses] == \
        [(h.name, h.holds) for h in inst.bound.hypotheses]
    assert json.dumps(again.constants, default=str) == json.dumps(inst.constants, default=str)
    # validate's Case of the instance
    case = inst.case(7)
    (run,) = case.runs
    (row,) = case.rows
    assert run.scenario == inst.scenario and run.replicates == 7
    assert run.horizons == (inst.horizon,) and run.metric == inst.metric
    assert case.scenario == f"{fam.name}-{params_digest(inst.params)}"
    assert row.run_key == run.key and row.horizon == inst.horizon
    assert _same(row.bound, inst.bound_value) and row.result is inst.bound


def _check_exact_only(fam: Family, q: dict, inst) -> None:
    """A point no simulation reaches: its rows are the exact oracle's values."""
    assert inst.exact is not None and inst.mc is None
    case = inst.case(7)
    assert case.runs == [] and [e.horizons for e in case.exacts] == [(inst.horizon,)]
    (row,) = case.rows
    assert row.exact == case.exacts[0].values[0] == inst.exact(0).value
    assert math.isfinite(row.exact) and _same(row.bound, inst.bound_value)
    again = fam.build(q)
    assert _same(again.bound_value, inst.bound_value) and again.exact(0) == inst.exact(0)


#: the families whose points are cheap enough for ``_SETTINGS`` (theorem2-logistic and
#: theorem8-logistic, whose builds solve a logistic problem, have a smaller budget below)
_CHEAP = ("theorem8-norm", "theorem7-quad", "theorem1-window", "theorem3-window",
          "theorem1-physical", "perfedavg-quad", "perfedavg-cx", "asypfl1-quad",
          "asypfl2-quad", "asypfl1-periods")


@pytest.mark.parametrize("name", _CHEAP)
@_SETTINGS
@given(data=hs.data())
def test_family_points(name, data):
    fam = get_family(name)
    _check_point(fam, data.draw(family_points(fam)))


@pytest.mark.parametrize("name", ("theorem2-logistic", "theorem8-logistic"))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=hs.data())
def test_logistic_points(name, data):
    fam = get_family(name)
    _check_point(fam, data.draw(family_points(fam)))


@settings(max_examples=20, deadline=None)
@given(hs.sampled_from(["theorem7-quad", "theorem1-window", "theorem3-window"]),
       hs.integers(0, 2**16), hs.integers(1, 2**16), hs.floats(0.1, 5.0))
def test_problem_seed_reaches_the_problem_and_nothing_else(name, seed, shift, het):
    fam = get_family(name)
    a = fam.build({"seed": seed, "heterogeneity": het})
    b = fam.build({"seed": seed + shift, "heterogeneity": het})
    assert a.scenario["problem"]["seed"] == seed
    assert b.scenario["problem"]["seed"] == seed + shift
    strip = [{**s, "problem": {k: v for k, v in s["problem"].items() if k != "seed"}}
             for s in (a.scenario, b.scenario)]
    assert strip[0] == strip[1]                    # the simulation's seed is not the point's
    pa, pb = (build_problem_from(s["problem"]) for s in (a.scenario, b.scenario))
    assert not np.array_equal(np.asarray(pa.b), np.asarray(pb.b))


def test_refused_points_are_config_errors():
    """Points inside the declared ranges that a family refuses say why (no other exception):
    L = 0 divides (window families), nu = 0 has no engine inner solve, p_s = 1 leaves no
    client event, B = 0 is not a norm problem."""
    refused = [("theorem1-window", {"L": 0.0}, "L must be > 0"),
               ("theorem3-window", {"L": 0.0}, "L must be > 0"),
               ("theorem3-window", {"nu": 0.0}, "nu must be > 0"),
               ("theorem7-quad", {"L": 0.0}, "L must be > 0"),
               ("theorem8-norm", {"p_s": 1.0}, "p_s must be < 1"),
               ("theorem8-norm", {"B": 0.0}, "B must be"),
               ("theorem8-norm", {"centre_spread": 2.0}, "centre_spread")]
    for name, q, msg in refused:
        try:
            get_family(name).build(q)
        except ConfigError as e:
            assert msg in str(e), (name, q, str(e))
        else:
            raise AssertionError(f"{name} built {q}")


def test_every_builtin_family_is_covered():
    # theorem1-schedule's points solve a PEP each: tests/worstcase/test_schedule_family.py
    covered = {*_CHEAP, "theorem2-logistic", "theorem8-logistic", "theorem1-schedule"}
    assert {f.name for f in BUILTIN} == covered
    for f in BUILTIN:                              # every parameter has a cap or choices
        for p in f.params:
            assert p.kind in ("list", "choice") or p.name in _CAP, (f.name, p.name)
