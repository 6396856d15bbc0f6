"""The Gram interpolant simulated by fedsim's engine (the door ``fedsim.run`` uses, with the
problem swapped): the schedule's event table, fedsim's own rules, the PEP value back."""

import numpy as np
import pytest

from fedsim.worstcase import FedAsync, FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.engine_witness import InterpolantProblem, simulate_interpolant
from fedsim.worstcase.gram_witness import GRAM_MATCH_RTOL, gram_witness
from fedsim.worstcase.schedule_witness import recorded_witness

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)
NC = FunctionClass(kind="nonconvex", L=1.0)


def check(w, method, fclass, sched, measure, pep):
    assert w.same_schedule and w.schedule.reads() == sched.reads()
    assert w.gap <= GRAM_MATCH_RTOL and w.reproduces
    # the engine's iterates are the worst-case package's own replay of the same rules
    py = gram_witness(method, fclass, sched, measure, pep)
    np.testing.assert_allclose(w.trace.final_w, py.iterates[-1], rtol=0, atol=1e-12)
    assert w.value == pytest.approx(py.value, rel=1e-10)
    # certified (over f(x0) - f*) never above the PEP's normalisation (f(x0) - f(xK))
    assert w.value <= w.replayed * (1 + 1e-12)


@pytest.mark.parametrize("fclass, measure, given", [(SC, "dist_sq", True),
                                                     (NC, "avg_grad_sq", False)])
def test_recorded_timeline_reproduces_the_pep_value(tmp_path, fclass, measure, given):
    """A delay list (every version >= 1 read once): its recorded-model scenario
    (:func:`recorded_witness`, async_sgd whose step factor is 1), given or written by
    :func:`simulate_interpolant` itself, with the problem swapped for the interpolant; the
    engine's table is the PEP's schedule."""
    import fedsim

    method, sched = delayed_gd(0.25), Schedule.from_delays([0, 1, 2, 2, 1, 3])
    pep = solve_pep(method, fclass, sched, measure)
    sc = None
    if given:
        sc = fedsim.load(recorded_witness(method, fclass, sched, measure, 1.0, tmp_path,
                                          points=11)["toml"])
    w = simulate_interpolant(method, fclass, sched, measure, pep, scenario=sc)
    check(w, method, fclass, sched, measure, pep)


def test_a_schedule_no_timeline_realises_says_so():
    """Version 1 read twice: not a one-job-per-worker timeline, no scenario, one line."""
    from fedsim.errors import FedsimError

    method, sched = delayed_gd(0.25), Schedule.from_delays([0, 0, 1, 2])
    pep = solve_pep(method, SC, sched, "dist_sq")
    with pytest.raises(FedsimError, match="no fedsim scenario realises it"):
        simulate_interpolant(method, SC, sched, "dist_sq", pep)


@pytest.mark.slow
@pytest.mark.parametrize("fclass, measure, method", [
    (SC, "dist_sq", delayed_gd(0.25)),
    (NC, "avg_grad_sq", delayed_gd(0.25)),
    (SC, "f_gap", FedAsync(eta=0.25, Q=2, beta=0.5)),
])
def test_physical_timeline_reproduces_the_pep_value(fclass, measure, method):
    """Constant tau = 1 as tau + 1 clients of constant compute time in the physical model
    (slow: its compiled table writer costs about 12 s cold)."""
    sched = Schedule.constant(1, 4)
    pep = solve_pep(method, fclass, sched, measure)
    check(simulate_interpolant(method, fclass, sched, measure, pep), method, fclass, sched,
          measure, pep)


def test_another_timeline_is_caught_and_does_not_reproduce(tmp_path):
    """Negative control: a delay list's interpolant run on another list's timeline."""
    import fedsim

    method = delayed_gd(0.25)
    sched = Schedule.from_delays([0, 1, 2, 2, 1, 3])
    pep = solve_pep(method, SC, sched, "dist_sq")
    rw = recorded_witness(method, SC, Schedule.constant(1, 6), "dist_sq", 1.0, tmp_path,
                          points=11)
    w = simulate_interpolant(method, SC, sched, "dist_sq", pep,
                             scenario=fedsim.load(rw["toml"]))
    assert not w.same_schedule and not w.reproduces
    assert w.gap > GRAM_MATCH_RTOL


def test_interpolant_problem_is_first_order_only():
    sched = Schedule.constant(1, 3)
    pep = solve_pep(delayed_gd(0.25), SC, sched, "dist_sq")
    from fedsim.problems.compiled import compiled_view
    from fedsim.worstcase.interpolant import interpolants_of

    (f,), V = interpolants_of(pep, SC)
    p = InterpolantProblem(function=f, n=2, dim=V.shape[0])
    assert compiled_view(p, 1) is None           # the engine's interpreted path
    assert p.f(p.x_star) == pytest.approx(p.f_star, abs=1e-9)
    assert np.linalg.norm(p.grad(0, p.x_star)) < 1e-4       # the inner QP's accuracy
    rng = np.random.default_rng(0)
    assert all(p.f(p.x_star + 0.1 * rng.standard_normal(p.dim)) >= p.f_star - 1e-12
               for _ in range(20))
    with pytest.raises(NotImplementedError, match="Hessian"):
        p.hess(0, p.x_star)
