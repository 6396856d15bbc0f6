"""The rules written once (issue 19): compiled and interpreted (``py_func``) runs agree bit
for bit, hand-computed two-client cases, and the SimPy engine calls the same functions."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.local.sgd import RngSteps, SGDRule, problem_sample_grad, sgd_round
from fedsim.problems import QuadraticProblem
from fedsim.problems.quadratic_view import (
    draws_per_step,
    quadratic_metric_view,
    quadratic_metrics,
    quadratic_sample_grad,
    quadratic_view,
)
from fedsim.servers.fedasync import fedasync_apply


def two_clients(noise_cov=None):
    A = [np.diag([1.0, 2.0]), np.array([[2.0, 1.0], [1.0, 3.0]])]
    b = [np.array([1.0, -1.0]), np.array([0.0, 2.0])]
    return QuadraticProblem(A, b, noise_cov=noise_cov)


def test_two_clients_hand_case_no_noise():
    p = two_clients()
    view = quadratic_view(p, 1)
    assert draws_per_step(view) == 0
    Z = np.empty((2, 0))
    out, g = np.empty(2), np.empty(2)
    # client 1 from w = (1, 1), eta = 0.5, Q = 2:
    # step 1: g = A (w - b) = [[2,1],[1,3]] (1, -1) = (1, -2); w = (0.5, 2)
    # step 2: g = A (0.5, 0) = (1, 0.5); w = (0, 1.75)
    sgd_round(quadratic_sample_grad, view, 1, np.array([1.0, 1.0]), out, Z, 0.5, 2, g)
    np.testing.assert_array_equal(out, [0.0, 1.75])
    # the FedAsync server step with beta = 0.5 from w = (2, 2):
    # w - 0.5 ((1, 1) - (0, 1.75)) = (1.5, 2.375)
    w = np.array([2.0, 2.0])
    fedasync_apply(w, np.array([1.0, 1.0]), out, 0.5)
    np.testing.assert_array_equal(w, [1.5, 2.375])


def test_two_clients_hand_case_isotropic_noise():
    p = two_clients(noise_cov=4.0 * np.eye(2))  # C_i = 4 I, batch 4: e = 1 * z
    view = quadratic_view(p, 4)
    assert view[3] == 1 and list(view[4]) == [1.0, 1.0]
    Z = np.array([[0.5, -0.5]])
    out, g = np.empty(2), np.empty(2)
    # client 0 from w = (0, 0), eta = 0.25: g = diag(1,2) (-1, 1) + (0.5, -0.5) = (-0.5, 1.5)
    sgd_round(quadratic_sample_grad, view, 0, np.zeros(2), out, Z, 0.25, 1, g)
    np.testing.assert_array_equal(out, [0.125, -0.375])


@pytest.mark.parametrize("noise", ["iso", "general", "none"])
def test_compiled_equals_interpreted_bitwise(noise):
    cov = {"iso": 0.3 * np.eye(2), "general": np.array([[0.5, 0.1], [0.1, 0.2]]),
           "none": None}[noise]
    p = two_clients(noise_cov=cov)
    view = quadratic_view(p, 2)
    k = draws_per_step(view)
    rng = np.random.default_rng(5)
    for i in (0, 1):
        Z = rng.standard_normal((7, k))
        w0 = rng.standard_normal(2)
        a, b, g = np.empty(2), np.empty(2), np.empty(2)
        sgd_round(quadratic_sample_grad, view, i, w0, a, Z, 0.1, 7, g)
        sgd_round.py_func(quadratic_sample_grad.py_func, view, i, w0, b, Z, 0.1, 7, g)
        assert np.array_equal(a, b)
        np.testing.assert_allclose(a, b, rtol=0)
    mv = quadratic_metric_view(p)
    codes = np.array([0, 1, 2])
    w = rng.standard_normal(2)
    m1, m2 = np.empty(3), np.empty(3)
    quadratic_metrics(mv, codes, w, m1)
    quadratic_metrics.py_func(mv, codes, w, m2)
    assert np.array_equal(m1, m2)
    np.testing.assert_allclose(m1, [p.grad_f_sq(w), p.dist_sq(w), p.f_gap(w)], rtol=1e-12,
                               atol=1e-15)


def test_interpreted_rule_equals_the_problem_oracle_path():
    """The generic (interpreted) path is ``sample_batch`` then ``batch_grad`` per step."""
    p = two_clients(noise_cov=0.3 * np.eye(2))
    w0 = np.array([0.3, -0.2])
    out, g = np.empty(2), np.empty(2)
    sgd_round.py_func(problem_sample_grad, (p, 3), 1, w0, out, RngSteps(np.random.default_rng(2)),
                      0.1, 4, g)
    rng, w = np.random.default_rng(2), w0.copy()
    for _ in range(4):
        w -= 0.1 * p.batch_grad(1, w, p.sample_batch(1, 3, rng))
    assert np.array_equal(out, w)


def test_sgd_rule_round_is_q_steps_and_draws_qd_normals():
    p = QuadraticProblem.random(3, 4, 0.2, 1.0, noise_sd=0.2, seed=1)
    rule = SGDRule(p, 0.1, 5, 2)
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    out = rule.round(2, np.ones(4), np.empty(4), a)
    w = np.ones(4)
    for _ in range(5):
        rule.step(2, w, b)
    assert np.array_equal(out, w)
    c = np.random.default_rng(9)
    c.standard_normal(5 * 4)  # a round takes Q d = 20 normals, as Q steps do
    nxt = c.standard_normal()
    assert a.standard_normal() == nxt and b.standard_normal() == nxt
