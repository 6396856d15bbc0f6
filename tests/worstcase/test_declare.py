"""A plug-in family declares its method's first-order form and gets the worst-case columns
(fedsim.worstcase.declare): a toy plug-in -- gradient descent on a strongly convex
quadratic, with a sharp bound it proves -- defined here, nothing of it in fedsim."""

import math

import numpy as np
import pandas as pd
import pytest
from fedsim.theory.result import BoundResult, Hypothesis, Status
from fedsim.validation.families import (
    Family,
    Instance,
    Measurement,
    Param,
    engine_scenario,
    get_family,
    register_family,
    unregister_family,
)

from fedsim.worstcase import FirstOrderForm, FunctionClass, Schedule, delayed_gd, verdict
from fedsim.worstcase.declare import register_first_order, unregister_first_order

THEOREM = "toy_gd_sharp"


def _toy_bound(*, mu, L, eta, R0, K, factor=1.0):
    """Toy theorem: for f mu-strongly convex and L-smooth and ``0 < eta <= 2/(mu+L)``,
    gradient descent has ``||x_K - x*||^2 <= q^(2K) R0^2`` with ``q = 1 - eta mu``
    (Nesterov 2004, Thm 2.1.12: the map ``x - eta grad f(x)`` contracts by q); ``factor``
    < 1 makes it a wrong bound (the negative control)."""
    q = 1.0 - eta * mu
    ok = 0 < eta <= 2.0 / (mu + L)
    return BoundResult(value=factor * q ** (2 * K) * R0**2,
                       status=Status.CERTIFIED_PAPER if ok else Status.NOT_APPLICABLE,
                       hypotheses=[Hypothesis("step", ok, f"eta = {eta:g}")],
                       theorem="toy GD", mode="sharp", terms={}, step_sizes={"eta": eta},
                       derived_constants={"R0": R0})


def _build(p):
    mu, L, K, eta = p["mu"], p["L"], p["K"], p["eta_mult"] / p["L"]
    pcfg = {"kind": "quadratic", "n": 1, "dim": 1, "mu": mu, "L": mu, "heterogeneity": 0.0,
            "noise_sd": 0.0, "seed": 0}
    alg = {"name": "fedavg", "client_rule": "sgd", "Q": 1, "eta": eta}
    sc = engine_scenario(f"toy-K{K}", pcfg, alg, K, ["dist_sq"], every=K)
    sc["problem"]["L_class"] = L
    return Instance(family="toy-gd", theorem=THEOREM, mode="sharp", params=dict(p),
                    bound=_toy_bound(mu=mu, L=L, eta=eta, R0=2.0, K=K, factor=p["factor"]),
                    scenario=sc, metric="dist_sq", horizon=K, quantity="||x_K - x*||^2",
                    description="toy", constants=[],
                    exact=lambda _m: Measurement(4.0 * (1 - eta * mu) ** (2 * K), "exact"))


FAMILY = Family(name="toy-gd", theorem=THEOREM, title="toy GD", doc="toy plug-in",
                params=(Param("mu", "float", 0.1, "mu"), Param("L", "float", 1.0, "L"),
                        Param("K", "int", 6, "steps", low=1),
                        Param("eta_mult", "float", 1.0, "eta L"),
                        Param("factor", "float", 1.0, "bound factor")),
                builder=_build, modes=("sharp",), horizon="K")


def _form(scenario, result, horizon):
    """The toy plug-in's declaration: GD = delayed GD with no delay, over F_{mu,L}."""
    p, a = scenario["problem"], scenario["algorithm"]
    if p["noise_sd"] > 0:
        return "sigma > 0: not the sigma = 0 core"
    return FirstOrderForm(method=delayed_gd(a["eta"]),
                          function_class=FunctionClass(kind="strongly_convex",
                                                       L=p["L_class"], mu=p["mu"]),
                          schedule=Schedule.constant(0, horizon), measure="dist_sq",
                          scale=float(result.derived_constants["R0"]) ** 2,
                          witness="1-D quadratic of curvature mu")


@pytest.fixture
def plugin():
    register_family(FAMILY, replace=True)
    register_first_order(THEOREM, _form, replace=True)
    yield get_family("toy-gd")
    unregister_first_order(THEOREM)
    unregister_family("toy-gd")


def _columns(inst, out):
    case = inst.case(2)
    table = pd.DataFrame([{"theorem": THEOREM, "scenario": case.scenario, "mode": "sharp",
                           "horizon": inst.horizon, "bound": inst.bound_value,
                           "mean": inst.measure().value}])
    return verdict.worst_case_columns(table, [case], out).iloc[0]


def test_declared_form_gets_the_column(plugin, tmp_path):
    inst = plugin.build({"K": 6})
    r = _columns(inst, tmp_path)
    exact = 4.0 * 0.9 ** 12          # GD at eta = 1/L: max(|1 - eta mu|, |1 - eta L|)^(2K)
    assert r["worst_case_status"] == "optimal"
    assert r["worst_case"] == pytest.approx(exact, rel=1e-3)
    assert r["bound_over_worst"] == pytest.approx(1.0, rel=1e-3)   # the bound is sharp
    assert r["worst_over_measured"] == pytest.approx(1.0, rel=1e-3)
    assert r["worst_case_witness"] == "1-D quadratic of curvature mu"
    # the bound equals the worst case: within the solver's 1e-3 neither holds nor violated
    assert r["worst_case_verdict"] == "inconclusive"
    assert list((tmp_path / "worstcase").glob("*.json"))            # cached
    assert _columns(plugin.build({"K": 6, "factor": 1.01}), tmp_path)[
        "worst_case_verdict"] == "holds"


def test_wrong_bound_is_violated(plugin, tmp_path):
    r = _columns(plugin.build({"K": 6, "factor": 0.5}), tmp_path)   # negative control
    assert r["worst_case_verdict"] == "violated"


def test_undeclared_and_broken_forms_are_notes(plugin, tmp_path):
    unregister_first_order(THEOREM)
    r = _columns(plugin.build({"K": 6}), tmp_path)
    assert r["worst_case_note"] == "no first-order form declared"
    assert math.isnan(r["worst_case"])
    register_first_order(THEOREM, lambda s, r, h: 1 / 0)
    r = _columns(plugin.build({"K": 6}), tmp_path)
    assert r["worst_case_note"].startswith("first-order form of 'toy_gd_sharp' failed")
    assert r["worst_case_status"] == ""


def test_form_checks_its_inputs():
    with pytest.raises(Exception, match="measure"):
        FirstOrderForm(method=delayed_gd(0.5), function_class=FunctionClass(
            kind="strongly_convex", L=1.0, mu=0.1), schedule=Schedule.constant(0, 2),
            measure="nope")
    assert np.isfinite(FirstOrderForm(method=delayed_gd(0.5), function_class=FunctionClass(
        kind="strongly_convex", L=1.0, mu=0.1), schedule=Schedule.constant(0, 2),
        measure="dist_sq").key()["scale"])
