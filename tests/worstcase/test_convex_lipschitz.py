"""The convex L-Lipschitz class (Taylor, Hendrickx & Glineur 2017, SIAM J. Optim. 27(3),
Thm 3.5; PEPit's ConvexLipschitzFunction): the subgradient method's tight value and
PEPit's formulation."""

import math

import pytest

from fedsim.errors import FedsimError
from fedsim.worstcase import FunctionClass, Schedule, delayed_gd, solve_pep


@pytest.mark.parametrize("M, K", [(1.0, 3), (2.0, 5)])
def test_subgradient_method_is_M_R_over_sqrt_K_plus_1(M, K):
    """Step R/(M sqrt(K+1)) with R = ||x_0 - x_*|| = 1: min_{k<=K} f(x_k) - f_* <= M R /
    sqrt(K+1), and the bound is attained (PEPit 0.5.1, examples/unconstrained_convex_
    minimization/subgradient_method.py: "The **tight** bound ... M/sqrt(n+1) ||x_0 - x_*||")."""
    fc = FunctionClass(kind="convex_lipschitz", L=M)
    step = 1.0 / (M * math.sqrt(K + 1))
    for solver in ("CLARABEL", "SCS"):
        r = solve_pep(delayed_gd(step), fc, Schedule.constant(0, K), "min_f_gap_over_dist",
                      solver=solver)
        assert r.accurate and r.value == pytest.approx(M / math.sqrt(K + 1), rel=1e-6)


@pytest.mark.parametrize("reuse", [True, False])
def test_delayed_subgradient_against_pepit(reuse):
    """A deterministic oracle (one subgradient per point, as fedsim's problems have) is
    PEPit's ``reuse_gradient=True``: equal to 1e-3.  PEPit's default for a nonsmooth class
    draws a new subgradient at every call, so reading x_0 twice (tau = 1) lets the adversary
    pick two: its value is larger (0.8197 against 0.8113)."""
    from PEPit import PEP
    from PEPit.functions import ConvexLipschitzFunction

    M, K, tau, step = 1.0, 4, 1, 0.3
    problem = PEP()
    f = problem.declare_function(ConvexLipschitzFunction, M=M, reuse_gradient=reuse)
    xs = f.stationary_point()
    fs = f(xs)
    x = [problem.set_initial_point()]
    for k in range(K):
        x.append(x[-1] - step * f.gradient(x[max(0, k - tau)]))
    problem.set_initial_condition((x[0] - xs) ** 2 <= 1)
    problem.set_performance_metric(f(x[-1]) - fs)
    ref = problem.solve(wrapper="cvxpy", solver="CLARABEL", verbose=0)
    ours = solve_pep(delayed_gd(step), FunctionClass(kind="convex_lipschitz", L=M),
                     Schedule.constant(tau, K), "f_gap_over_dist")
    if reuse:
        assert ours.value == pytest.approx(ref, rel=1e-3)
    else:
        assert ref > ours.value * (1 + 5e-3)


def test_class_asks_for_its_measures_and_has_no_witness():
    import fedsim

    fc = FunctionClass(kind="convex_lipschitz", L=1.0)
    with pytest.raises(FedsimError, match="convex Lipschitz"):
        solve_pep(delayed_gd(0.1), fc, Schedule.constant(0, 3), "dist_sq")
    wc = fedsim.worst_case(function_class="convex_lipschitz", step=0.5, delays=[0, 0, 0],
                           measure="min_f_gap_over_dist")
    assert wc.witness is None and wc.gram is None
    assert wc.value == pytest.approx(0.5, rel=1e-6)      # M R / sqrt(K + 1), K = 3
