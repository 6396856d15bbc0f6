"""QuadraticProblem: closed forms and exact constants (THEORY_SPEC 9.1, 12 items 1-2)."""

import numpy as np
import pytest

from fedsim.errors import ConfigError
from fedsim.problems.base import Problem
from fedsim.problems.quadratic import QuadraticProblem


def test_hand_computed_two_clients_diagonal():
    """d=1, A=(1, 3), b=(0, 2), c=(1, 0): every quantity by hand."""
    p = QuadraticProblem([[[1.0]], [[3.0]]], [[0.0], [2.0]], c=[1.0, 0.0],
                         noise_cov=[[0.5]])
    # Abar = 2, m = (0 + 6)/2 = 3, x* = 1.5
    assert p.x_star[0] == 1.5
    # f(x*) = mean(0.5*1*2.25 + 1, 0.5*3*0.25 + 0) = (2.125 + 0.375)/2 = 1.25
    assert p.f_star == pytest.approx(1.25, abs=1e-15)
    t = p.constants
    assert t.value("L") == 3.0 and t.value("mu") == 1.0
    assert t.value("gamma_h2") == 1.0 and t.value("sigma_g2") == 0.5
    assert t.value("f_star_P") == 0.0 and t.value("zeta") == 1.5
    assert np.isinf(t.value("gamma_g2")) and t["gamma_g2"].tag.value == "INFINITE"
    # MAML alpha=0.25: Hb = a(1-a/4)^2 = (9/16, 3/16)
    m = p.maml(0.25)
    assert m.H[0][0, 0] == pytest.approx(9 / 16, abs=1e-15)
    assert m.H[1][0, 0] == pytest.approx(3 / 16, abs=1e-15)
    assert m.L_true == pytest.approx(9 / 16, abs=1e-15)
    # ME lam=1: Hc = a/(1+a) = (1/2, 3/4)
    e = p.me(1.0)
    assert e.H[1][0, 0] == pytest.approx(0.75, abs=1e-15)
    assert p.theta_hat(1, np.array([0.0]), 1.0)[0] == pytest.approx(1.5, abs=1e-15)


@pytest.mark.parametrize("shared", [True, False])
def test_closed_forms_match_base_class(shared):
    p = QuadraticProblem.random(5, 4, 0.3, 2.0, shared_hessian=shared, seed=3)
    w = np.random.default_rng(0).normal(size=4) * 2
    assert np.allclose(p.grad_F_maml(w, 0.2), Problem.grad_F_maml(p, w, 0.2), atol=1e-13)
    assert p.F_maml(w, 0.2) == pytest.approx(Problem.F_maml(p, w, 0.2), abs=1e-13)
    assert np.allclose(p.grad_F_me(w, 9.0), Problem.grad_F_me(p, w, 9.0), atol=1e-13)
    assert p.F_me(w, 9.0) == pytest.approx(Problem.F_me(p, w, 9.0), abs=1e-13)


def test_indefinite_rejected():
    with pytest.raises(ConfigError, match=r"A\[1\] must be positive semidefinite, got min "
                                          r"eigenvalue -0.5"):
        QuadraticProblem([np.eye(2), np.diag([1.0, -0.5])], np.zeros((2, 2)))
