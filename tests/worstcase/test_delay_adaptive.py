"""Per-step step factors (fedsim.worstcase.methods.DelayAdaptive, the async_sgd rules):
a hand-computed recursion, the PEP against every quadratic, and fedsim's engine."""

import numpy as np
import pytest

from fedsim.errors import FedsimError
from fedsim.worstcase import DelayAdaptive, FunctionClass, Schedule, solve_pep
from fedsim.worstcase.engine_witness import simulate_interpolant
from fedsim.worstcase.gram_witness import GRAM_MATCH_RTOL, gram_witness
from fedsim.worstcase.schedule_witness import recorded_witness
from fedsim.worstcase.witness import curvature_grid

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)
NC = FunctionClass(kind="nonconvex", L=1.0)
DELAYS = [0, 1, 2, 2, 1, 3]     # every version >= 1 read at most once: a recorded timeline


@pytest.mark.parametrize("rule, tau_c, want", [
    # f(tau) = 1, 1, 1/2, 1/3 (eq. (11), eta_t = eta / tau_t beyond tau_C = 1)
    ("koloskova", 1, [1.0, 0.5, 0.0, -0.25, -0.25 - 0.5 / 3]),
    # f(tau) = 1, 1, 0, 0: the late gradients dropped
    ("koloskova_drop", 1, [1.0, 0.5, 0.0, 0.0, 0.0]),
    # f(tau) = 2 / max(2, tau) = 1, 1, 1, 2/3
    ("mishchenko", 2, [1.0, 0.5, 0.0, -0.5, -0.5 - 0.5 * 2 / 3]),
])
def test_hand_computed_recursion(rule, tau_c, want):
    """f = x^2/2 (grad x), eta = 0.5, x_0 = 1, delays 0, 1, 2, 3: every step reads x_0, so
    x_{k+1} = x_k - 0.5 f(tau_k)."""
    m = DelayAdaptive(eta=0.5, tau_c=tau_c, rule=rule)
    xs = m.iterates(Schedule.from_delays([0, 1, 2, 3]), lambda i, x: x, 1.0)
    assert xs == pytest.approx(want, abs=1e-15)


def test_factor_is_the_engines():
    from fedsim.servers.delay_adaptive import DelayAdaptiveRule

    for rule in ("koloskova", "koloskova_drop", "mishchenko"):
        m = DelayAdaptive(eta=0.1, tau_c=3, rule=rule, beta=0.7)
        eng = DelayAdaptiveRule(beta=0.7, tau_c=3, rule=rule)
        for tau in range(8):   # the engine's server on read = 1, new = 0: w -= beta f(tau)
            w, _ = eng.apply(np.zeros(1), [type("U", (), {"read": np.ones(1),
                                                           "new": np.zeros(1),
                                                           "staleness": tau})()])
            assert -w[0] == pytest.approx(0.7 * m.factor(tau), abs=0)


@pytest.mark.parametrize("rule, tau_c, quadratic", [("koloskova", 1, True),
                                                    ("mishchenko", 2, False)])
def test_pep_is_at_least_every_quadratic(rule, tau_c, quadratic):
    """Koloskova's factors here: a 1-D quadratic is the worst case (0.628056); Mishchenko's
    with tau_C = 2: the worst case (0.53946) is above every quadratic (0.5329), so only the
    Gram interpolant attains it (the engine test below)."""
    m = DelayAdaptive(eta=0.5, tau_c=tau_c, rule=rule)
    sched = Schedule.from_delays(DELAYS)
    r = solve_pep(m, SC, sched, "dist_sq")
    _, vals = curvature_grid(m, sched, SC, "dist_sq", 2001)
    assert r.accurate and r.value >= vals.max() * (1 - 1e-6)
    if quadratic:
        assert r.value == pytest.approx(vals.max(), rel=1e-4)
    else:
        assert r.value > vals.max() * (1 + 1e-3)


@pytest.mark.parametrize("fclass, measure, rule, tau_c", [
    (SC, "dist_sq", "mishchenko", 2), (NC, "avg_grad_sq", "koloskova", 1)])
def test_engine_runs_the_rule_along_the_schedule_and_reproduces_the_pep(fclass, measure,
                                                                        rule, tau_c):
    """fedsim's async_sgd (its delay-adaptive server, recorded timeline) on the Gram
    interpolant: the same iterates as the first-order form, the PEP value back to 1e-3."""
    m = DelayAdaptive(eta=0.5, tau_c=tau_c, rule=rule)
    sched = Schedule.from_delays(DELAYS)
    pep = solve_pep(m, fclass, sched, measure)
    w = simulate_interpolant(m, fclass, sched, measure, pep)
    assert w.same_schedule and w.gap <= GRAM_MATCH_RTOL
    py = gram_witness(m, fclass, sched, measure, pep)
    np.testing.assert_allclose(w.trace.final_w, py.iterates[-1], rtol=0, atol=1e-12)


def test_engine_with_another_rule_does_not_reproduce(tmp_path):
    """Negative control: the koloskova PEP's interpolant run by the engine with the drop
    rule (same timeline)."""
    import fedsim

    m = DelayAdaptive(eta=0.5, tau_c=1, rule="koloskova")
    sched = Schedule.from_delays(DELAYS)
    pep = solve_pep(m, SC, sched, "dist_sq")
    other = DelayAdaptive(eta=0.5, tau_c=1, rule="koloskova_drop")
    sc = fedsim.load(recorded_witness(other, SC, sched, "dist_sq", 1.0, tmp_path,
                                      points=3)["toml"])
    w = simulate_interpolant(m, SC, sched, "dist_sq", pep, scenario=sc)
    assert w.same_schedule and not w.reproduces and w.gap > GRAM_MATCH_RTOL


def test_only_one_local_step():
    with pytest.raises(FedsimError, match="Q"):
        DelayAdaptive(eta=0.1, tau_c=1, Q=2)


@pytest.mark.slow
def test_fedsim_run_of_the_quadratic_witness_is_the_recursion(tmp_path):
    """The engine's compiled run (sigma = 0, `fedsim run` on the TOML) of the best
    quadratic equals the first-order form's recursion (slow: compiled replay, cold)."""
    import fedsim

    m = DelayAdaptive(eta=0.5, tau_c=2, rule="mishchenko")
    sched = Schedule.from_delays(DELAYS)
    got = recorded_witness(m, SC, sched, "dist_sq", 1.0, tmp_path, points=201)
    df = fedsim.run(fedsim.load(got["toml"])).to_pandas()
    ratio = df["dist_sq"].iloc[-1] / df["dist_sq"].iloc[0]
    h = got["h"]
    xs = m.iterates(sched, lambda i, x: h * x, 1.0)
    assert ratio == pytest.approx(xs[-1] ** 2, rel=1e-12)


def test_door_and_scenario_give_the_method():
    import fedsim
    from fedsim.config import Scenario
    from fedsim.worstcase.door import method_from_scenario

    wc = fedsim.worst_case(method="async_sgd", step=0.5, tau_c=1, step_rule="koloskova",
                           mu=0.1, delays=DELAYS, witness=False)
    direct = solve_pep(DelayAdaptive(eta=0.5, tau_c=1), SC, Schedule.from_delays(DELAYS))
    assert wc.value == pytest.approx(direct.value, rel=1e-9)
    with pytest.raises(FedsimError, match="tau_C"):
        fedsim.worst_case(method="async_sgd", step=0.5, mu=0.1, delays=DELAYS)
    sc = Scenario.from_dict({
        "name": "a", "seed": 0,
        "problem": {"kind": "quadratic", "n": 2, "dim": 1, "mu": 0.1, "L": 1.0, "seed": 0},
        "algorithm": {"name": "async_sgd", "client_rule": "sgd", "Q": 1, "eta": 0.3,
                      "batch": 1, "tau_C": 2, "step_rule": "mishchenko", "beta": 0.5},
        "delays": {"download": {"kind": "constant", "value": 0.0},
                   "compute": {"kind": "constant", "value": 1.0},
                   "upload": {"kind": "constant", "value": 0.0}},
        "trigger": {"kind": "every_upload"}, "horizon": {"steps": 4}})
    assert method_from_scenario(sc) == DelayAdaptive(eta=0.3, tau_c=2, rule="mishchenko",
                                                     beta=0.5)
