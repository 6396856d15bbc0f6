"""The PEP engine: issue 32's prototype figures, PEPit's own formulation, the two
solvers, and exact hand cases."""

import math

import numpy as np
import pytest

from fedsim.errors import FedsimError
from fedsim.worstcase import FedAsync, FedBuff, FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.door import AGREE_RTOL

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)


def pepit_delayed_gd(delays, L, mu, gamma, measure, Q=1, beta=1.0):
    """The same PEP written point by point with PEPit 0.5.1 (its GD examples' shape)."""
    from PEPit import PEP
    from PEPit.functions import SmoothFunction, SmoothStronglyConvexFunction

    problem = PEP()
    if mu is None:
        f = problem.declare_function(SmoothFunction, L=L)
    else:
        f = problem.declare_function(SmoothStronglyConvexFunction, L=L, mu=mu)
        xs = f.stationary_point()
        fs = f(xs)
    x0 = problem.set_initial_point()
    x = [x0]
    for k, tau in enumerate(delays):
        y = x[max(0, k - tau)]
        y0 = y
        for _ in range(Q):
            y = y - gamma * f.gradient(y)
        x.append(x[-1] - beta * (y0 - y))
    if measure == "dist_sq":
        problem.set_initial_condition((x0 - xs) ** 2 <= 1)
        problem.set_performance_metric((x[-1] - xs) ** 2)
    else:  # min_grad_sq
        for xk in x:
            problem.set_performance_metric(f.gradient(xk) ** 2)
        if mu is None:
            problem.set_initial_condition(f(x0) - f(x[-1]) <= 1)
        else:
            problem.set_initial_condition(f(x0) - fs <= 1)
    return problem.solve(wrapper="cvxpy", solver="CLARABEL", verbose=0)


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b))


@pytest.mark.parametrize("K, expected", [(5, 0.7722), (10, 0.5954)])
def test_prototype_figures_tau1(K, expected):
    """Issue 32's table: delayed GD, L = 1, mu = 0.1, gamma = 1/(2(tau+1)), tau = 1."""
    r = solve_pep(delayed_gd(0.25), SC, Schedule.constant(1, K), "dist_sq")
    assert r.status.startswith("optimal")
    assert round(r.value, 4) == expected
    # the dual certificate bounds the value (weak duality) and is tight (strong duality)
    assert rel(r.certificate.value, r.value) < 1e-5
    assert np.all(r.certificate.interpolation >= -1e-7)
    assert np.linalg.eigvalsh(r.certificate.psd).min() >= -1e-7


@pytest.mark.parametrize("case", [
    dict(delays=[1, 1, 1, 1, 1, 1], mu=0.1, measure="dist_sq"),
    dict(delays=[0, 2, 1, 2, 0, 2], mu=0.1, measure="dist_sq"),
    dict(delays=[1, 1, 1, 1], mu=0.1, measure="dist_sq", Q=2, beta=0.5),
    dict(delays=[0, 1, 2, 1, 0], mu=0.1, measure="min_grad_sq"),
    dict(delays=[0, 1, 1, 1, 1], mu=None, measure="min_grad_sq"),
])
def test_matches_pepit(case):
    """The vectorised SDP is PEPit's, constraint for constraint: same value."""
    gamma, Q, beta = 0.25, case.get("Q", 1), case.get("beta", 1.0)
    ref = pepit_delayed_gd(case["delays"], 1.0, case["mu"], gamma, case["measure"], Q, beta)
    fc = (FunctionClass(kind="nonconvex", L=1.0) if case["mu"] is None
          else FunctionClass(kind="strongly_convex", L=1.0, mu=case["mu"]))
    m = FedAsync(eta=gamma, Q=Q, beta=beta)
    r = solve_pep(m, fc, Schedule.from_delays(case["delays"]), case["measure"], solver="SCS")
    assert rel(r.value, ref) < AGREE_RTOL


@pytest.mark.parametrize("measure", ["dist_sq", "f_gap", "min_grad_sq", "avg_grad_sq"])
def test_clarabel_and_scs_agree(measure):
    s = Schedule.cyclic([0, 2, 1], 8, n=3)
    a = solve_pep(delayed_gd(1 / 6), SC, s, measure, solver="CLARABEL")
    b = solve_pep(delayed_gd(1 / 6), SC, s, measure, solver="SCS")
    assert a.status.startswith("optimal") and b.status.startswith("optimal")
    assert rel(a.value, b.value) < AGREE_RTOL


def test_gradient_descent_tau0_exact():
    """tau = 0 is gradient descent: worst case max(|1 - gamma mu|, |1 - gamma L|)^(2K)
    (Taylor et al. 2017, the contraction of GD on the class; attained by quadratics)."""
    K, g = 6, 0.5
    r = solve_pep(delayed_gd(g), SC, Schedule.constant(0, K), "dist_sq")
    assert rel(r.value, max(abs(1 - g * 0.1), abs(1 - g)) ** (2 * K)) < 1e-5


def test_fedbuff_one_upload_is_fedasync():
    """A buffer of one upload with weight 1 and server_lr = beta is FedAsync."""
    s = Schedule.constant(1, 6)
    a = solve_pep(FedBuff(eta=0.2, Q=2, server_lr=0.5), SC, s, "dist_sq")
    b = solve_pep(FedAsync(eta=0.2, Q=2, beta=0.5), SC, s, "dist_sq")
    assert rel(a.value, b.value) < 1e-6


def test_heterogeneity_grows_the_worst_case():
    """One function per client with heterogeneity at x*: zeta^2 = 0 is the shared-function
    worst case; zeta^2 > 0 can only raise it."""
    s = Schedule.constant(2, 6, n=3)
    shared = solve_pep(delayed_gd(1 / 6), SC, s, "dist_sq")
    z0 = solve_pep(delayed_gd(1 / 6), SC, s, "dist_sq", zeta_sq=0.0, solver="SCS")
    z1 = solve_pep(delayed_gd(1 / 6), SC, s, "dist_sq", zeta_sq=0.01, solver="SCS")
    assert rel(z0.value, shared.value) < AGREE_RTOL
    assert z1.value > shared.value * (1 + AGREE_RTOL)


def test_failed_solve_is_shown_not_hidden():
    """A solver that cannot answer gives NaN and its status, never a number."""
    from fedsim.worstcase.pep import build_pep, solve_data

    data = build_pep(delayed_gd(0.25), SC, Schedule.constant(1, 4), "dist_sq")
    data.init_G[:] = 0.0  # no initial condition: the worst case is unbounded
    r = solve_data(data, "CLARABEL")
    assert not r.accurate and math.isnan(r.value) and r.certificate is None
    assert "unbounded" in r.status or "infeasible" in r.status


def test_schedule_from_delays_conventions():
    s = Schedule.from_delays([1, 1, 3, 0])
    assert s.reads() == [[0], [0], [0], [3]]
    assert [c.stale for cs in s.steps for c in cs] == [0, 1, 2, 0]
    with pytest.raises(FedsimError):
        Schedule.from_delays([-1])


@pytest.mark.parametrize("measure, kind", [("dist_sq", "strongly_convex"),
                                           ("f_gap_over_dist", "strongly_convex"),
                                           ("avg_grad_sq", "nonconvex")])
def test_solved_at_unit_L_is_the_direct_solve(measure, kind):
    """solve_pep rescales to L = 1; the unscaled SDP at L = 2 gives the same value."""
    from fedsim.worstcase.pep import build_pep, solve_data

    fc = FunctionClass(kind=kind, L=2.0, mu=0.2)
    s = Schedule.constant(1, 5)
    direct = solve_data(build_pep(delayed_gd(0.1), fc, s, measure), "SCS")
    scaled = solve_pep(delayed_gd(0.1), fc, s, measure, solver="SCS")
    assert rel(direct.value, scaled.value) < AGREE_RTOL


def test_result_reports_its_size_and_where_the_time_went():
    """Hand count at tau = 1, K = 10: step k reads x_{k-1} (x_{-1} = x_0), so the gradients
    are taken at x_0 .. x_8; with x_* that is 10 points of one function, 10 * 9 ordered
    pairs, and a Gram of the basis x_0 - x_* and 9 gradients; cvxpy's rows are the pairs,
    the metric's epigraph, the initial condition and the PSD cone's triangle 10 * 11 / 2."""
    r = solve_pep(delayed_gd(0.25), SC, Schedule.constant(1, 10), "dist_sq")
    assert r.size["gram"] == 10 and r.size["interpolation_rows"] == 90
    assert r.size["constraints"] == 90 + 1 + 1 + 55
    assert set(r.timing) == {"assembly", "canonicalisation", "solve"}
    assert all(0 <= v <= r.seconds for v in r.timing.values())
