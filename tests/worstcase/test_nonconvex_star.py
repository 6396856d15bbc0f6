"""The nonconvex PEP normalised by f(x_0) - f_* (``nonconvex_norm = "f_star"``): a point x_*
with zero gradient and f_* <= f(x_i) - ||g_i||^2/(2L) at every point (a relaxation)."""

import pytest

from fedsim.errors import FedsimError
from fedsim.worstcase import FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.gram_witness import gram_witness

NC = FunctionClass(kind="nonconvex", L=1.0)


@pytest.mark.parametrize("L, K", [(1.0, 3), (2.0, 4)])
def test_gradient_descent_by_hand(L, K):
    """GD with step 1/L: the descent lemma gives sum_{k<K} ||g_k||^2 <= 2L (f(x_0) - f_*),
    and f = L x^2/2 from x_0 = 1 attains it (g_0^2 = L^2, then x_1 = 0): exactly 2L/K."""
    r = solve_pep(delayed_gd(1.0 / L), FunctionClass(kind="nonconvex", L=L),
                  Schedule.constant(0, K), "avg_grad_sq", nonconvex_norm="f_star")
    assert r.accurate and r.value == pytest.approx(2.0 * L / K, rel=1e-6)


@pytest.mark.parametrize("step, K, measure", [(1.0, 6, "min_grad_sq"),
                                              (0.25, 6, "avg_grad_sq")])
def test_tighter_than_f_K_and_attained_by_its_interpolant(step, K, measure):
    """Delayed GD, tau = 1: the f_star value is below the f(x_0) - f(x_K) one (1.333 ->
    0.800, 0.773 -> 0.681), Clarabel and SCS agree, and its Gram interpolant -- a function
    of the class, measured with its exact minimum -- certifies it to 1e-3: the worst case
    is pinned from both sides.  The f_K PEP's interpolant certifies only 0.494 / 0.511."""
    m, sched = delayed_gd(step), Schedule.constant(1, K)
    loose = solve_pep(m, NC, sched, measure)
    tight = solve_pep(m, NC, sched, measure, nonconvex_norm="f_star")
    scs = solve_pep(m, NC, sched, measure, solver="SCS", nonconvex_norm="f_star")
    assert tight.accurate and scs.accurate
    assert tight.value == pytest.approx(scs.value, rel=1e-3)
    assert tight.value < loose.value * (1 - 0.1)
    w = gram_witness(m, NC, sched, measure, tight)
    assert w.reproduces                                   # the PEP's own normalisation
    assert w.value == pytest.approx(tight.value, rel=1e-3)   # ... and the true f_*
    assert w.value <= tight.value * (1 + 1e-6)
    w_loose = gram_witness(m, NC, sched, measure, loose)
    assert w_loose.value < 0.7 * loose.value              # what f_star closes


def test_only_known_normalisations():
    with pytest.raises(FedsimError, match="nonconvex_norm"):
        solve_pep(delayed_gd(0.25), NC, Schedule.constant(1, 3), "avg_grad_sq",
                  nonconvex_norm="f_min")


def test_matches_pepit_written_point_by_point():
    """The same relaxation in PEPit 0.5.1: a stationary point, f_* <= f(x_k) - ||g_k||^2/(2L)
    at every iterate, f(x_0) - f_* <= 1 (delayed GD, tau = 1, K = 6: 0.680985)."""
    from PEPit import PEP
    from PEPit.functions import SmoothFunction

    L, gamma, delays = 1.0, 0.25, [0, 1, 1, 1, 1, 1]
    problem = PEP()
    f = problem.declare_function(SmoothFunction, L=L)
    fs = f(f.stationary_point())
    x = [problem.set_initial_point()]
    for k, tau in enumerate(delays):
        x.append(x[-1] - gamma * f.gradient(x[max(0, k - tau)]))
    for xk in x:
        g, fk = f.oracle(xk)
        problem.add_constraint(fs <= fk - g ** 2 / (2 * L))
    problem.set_initial_condition(f(x[0]) - fs <= 1)
    avg = None
    for xk in x[:-1]:
        t = f.gradient(xk) ** 2 / len(delays)
        avg = t if avg is None else avg + t
    problem.set_performance_metric(avg)
    ref = problem.solve(wrapper="cvxpy", solver="CLARABEL", verbose=0)
    ours = solve_pep(delayed_gd(gamma), NC, Schedule.from_delays(delays), "avg_grad_sq",
                     nonconvex_norm="f_star")
    assert ours.value == pytest.approx(ref, rel=1e-3)
