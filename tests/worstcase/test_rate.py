"""The Lyapunov rate certificate: exact for gradient descent, issue 32's AutoLyap table,
and sound against the PEP worst case."""

import pytest

from fedsim.worstcase import FedAsync, FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.rate import rate_certificate

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)


def test_tau0_is_gradient_descents_contraction():
    """tau = 0, gamma = 1/2: (1 - gamma mu)^2 = 0.9025 (GD's exact rate on the class)."""
    r = rate_certificate(delayed_gd(0.5), SC, [0])
    assert r.rho == pytest.approx(0.9025, abs=2e-6)


@pytest.mark.parametrize("tau, rho", [(1, 0.94934), (2, 0.96578)])
def test_issue_table(tau, rho):
    """Issue 32's AutoLyap figures, gamma = 1/(2(tau + 1))."""
    r = rate_certificate(delayed_gd(1 / (2 * (tau + 1))), SC, [tau])
    assert r.status == "optimal"
    assert round(r.rho, 5) == rho


@pytest.mark.parametrize("pattern, method", [
    ([1], delayed_gd(0.25)),
    ([0, 2, 1], delayed_gd(1 / 6)),
    ([1], FedAsync(eta=0.2, Q=2, beta=0.5)),
])
def test_certificate_bounds_the_worst_case(pattern, method):
    """||x_K - x*||^2 <= C rho^K ||x_0 - x*||^2 for every function: so the PEP worst case
    at K is below it (and the rate is below 1)."""
    r = rate_certificate(method, SC, pattern)
    assert r.rho < 1
    K = 3 * len(pattern) * 3
    pep = solve_pep(method, SC, Schedule.cyclic(pattern, K), "dist_sq", solver="SCS")
    assert pep.value <= r.C * r.rho ** K * (1 + 1e-4)


def test_a_divergent_step_gets_no_certificate():
    r = rate_certificate(delayed_gd(3.0), SC, [1])
    assert r.rho != r.rho and r.P is None  # NaN: nothing certified below 1
