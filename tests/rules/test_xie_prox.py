"""Xie's regularised local step (fedsim.local.xie_prox): a hand-computed run at rho > 0,
rho = 0 is local SGD bit for bit, the exact contraction towards the proximal point on a
quadratic (a property), compiled equal to interpreted, and the config's rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.config import Scenario
from fedsim.errors import ConfigError
from fedsim.local import get_client_rule
from fedsim.local.sgd import RngSteps, problem_sample_grad, sgd_round
from fedsim.local.xie_prox import XieProxRule, xie_prox_round
from fedsim.problems import QuadraticProblem
from fedsim.problems.quadratic_view import quadratic_sample_grad, quadratic_view


def two_clients(noise_cov=None):
    A = [np.diag([1.0, 2.0]), np.array([[2.0, 1.0], [1.0, 3.0]])]
    b = [np.array([1.0, -1.0]), np.array([0.0, 2.0])]
    return QuadraticProblem(A, b, noise_cov=noise_cov)


def test_hand_run_rho_positive():
    # client 1 (A = [[2, 1], [1, 3]], b = (0, 2)) from x_read = (1, 1), eta = 0.5, rho = 1
    # (the code's --rho = eta rho = 0.5), Q = 2; step: w (1 - 0.5) + 0.5 x_read - 0.5 g(w)
    # step 1: w = x_read, g = A (1, -1) = (1, -2): w = (0.5, 0.5) + (0.5, 0.5) - (0.5, -1)
    #         = (0.5, 2) (the proximal term is 0 at x_read: SGD's step)
    # step 2: g = A (0.5, 0) = (1, 0.5): w = (0.25, 1) + (0.5, 0.5) - (0.5, 0.25) = (0.25, 1.25)
    #         (= w - eta (g + rho (w - x_read)); plain SGD gives (0, 1.75))
    view = quadratic_view(two_clients(), 1)
    out, g = np.empty(2), np.empty(2)
    x_read = np.array([1.0, 1.0])
    xie_prox_round.py_func(quadratic_sample_grad.py_func, view, 1, x_read, out,
                           np.empty((2, 0)), 0.5, 1.0, 2, g)
    np.testing.assert_array_equal(out, [0.25, 1.25])
    np.testing.assert_array_equal(x_read, [1.0, 1.0])          # the anchor is only read


def test_rho_zero_is_local_sgd_bitwise():
    p = two_clients(noise_cov=np.array([[0.5, 0.1], [0.1, 0.2]]))
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal(2)
    a, b, g = np.empty(2), np.empty(2), np.empty(2)
    for i in (0, 1):
        sgd_round.py_func(problem_sample_grad, (p, 2), i, w0, a, RngSteps(np.random.default_rng(9)),
                          0.3, 5, g)
        xie_prox_round.py_func(problem_sample_grad, (p, 2), i, w0, b,
                               RngSteps(np.random.default_rng(9)), 0.3, 0.0, 5, g)
        assert np.array_equal(a, b)


@settings(max_examples=40, deadline=None)
@given(eta=st.floats(0.01, 0.4), rho=st.floats(0.0, 2.0), mu=st.floats(0.1, 2.0),
       Q=st.integers(1, 6), x=st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3))
def test_contracts_to_the_proximal_point(eta, rho, mu, Q, x):
    """f = (mu/2)||w||^2: w_q - p = (1 - eta (mu + rho))^q (x_read - p), p = rho x_read /
    (mu + rho), the minimiser of f + (rho/2)||w - x_read||^2."""
    x_read = np.array(x)

    def grad(view, i, w, z, g):
        g[:] = mu * w
        return 0

    out, g = np.empty(3), np.empty(3)
    xie_prox_round.py_func(grad, None, 0, x_read, out, [None] * Q, eta, rho, Q, g)
    p = rho * x_read / (mu + rho)
    want = p + (1.0 - eta * (mu + rho)) ** Q * (x_read - p)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12 * (1 + np.abs(x_read).max()))


def test_rule_compiled_equals_interpreted_bitwise(monkeypatch):
    p = two_clients(noise_cov=0.3 * np.eye(2))
    fast = XieProxRule(p, eta=0.2, Q=3, batch=2, rho=0.7)
    assert fast.fast
    monkeypatch.setattr("fedsim.local.sgd._COMPILED", False)
    slow = XieProxRule(p, eta=0.2, Q=3, batch=2, rho=0.7)
    assert not slow.fast
    w0 = np.array([0.4, -1.1])
    a = fast.round(1, w0, np.empty(2), np.random.default_rng(4))
    b = slow.round(1, w0, np.empty(2), np.random.default_rng(4))
    assert np.array_equal(a, b)
    c = w0.copy()                    # in place: the anchor is the round's start
    fast.round(1, c, c, np.random.default_rng(4))
    assert np.array_equal(a, c)


def _scenario(**alg):
    return Scenario.from_dict({
        "seed": 7,
        "problem": {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0,
                    "noise": "additive", "noise_sd": 0.1, "seed": 2},
        "algorithm": {"name": "fedasync_xie", "Q": 2, "eta": 0.2, **alg},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": 20},
        "record": {"every": 1, "metrics": ["f_gap"]},
    })


def test_config_rules():
    assert get_client_rule("xie_prox").keys == ("Q", "eta", "batch")
    s = _scenario(client_rule="xie_prox", rho=0.5)
    assert s.algorithm.get("rho") == 0.5 and s.algorithm.client_rule == "xie_prox"
    assert _scenario().algorithm.client_rule == "sgd"          # the default stays SGD
    assert _scenario().algorithm.get("rho") == 0.0
    with pytest.raises(ConfigError, match=r"algorithm\.client_rule"):
        _scenario(rho=0.5)                                     # rho > 0 with plain SGD
    with pytest.raises(ConfigError, match=r"algorithm\.rho"):
        _scenario(client_rule="xie_prox", rho=-1.0)
    with pytest.raises(ConfigError, match=r"algorithm\.rho"):
        XieProxRule(two_clients(), eta=0.1, Q=1, rho=math.inf)
    with pytest.raises(ConfigError, match="lone step"):
        XieProxRule(two_clients(), eta=0.1, Q=1, rho=1.0).step(0, np.zeros(2),
                                                                 np.random.default_rng(0))


@pytest.mark.slow  # compiles a replay kernel of its own (~40-120 s cold): make slow
def test_engine_rho_zero_is_sgd_and_rho_positive_differs():
    from fedsim.engine import run

    def fg(**alg):
        return np.asarray(run(_scenario(**alg)).metrics["f_gap"])

    ref = fg()
    assert np.array_equal(fg(client_rule="xie_prox", rho=0.0), ref)
    assert not np.array_equal(fg(client_rule="xie_prox", rho=2.0), ref)
