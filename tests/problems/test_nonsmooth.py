"""NormProblem: f_i(x) = B||x - c_i|| (the Theorem 8 counterexample objective, THEORY_SPEC 7.d)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.problems.nonsmooth import NormProblem


def test_one_dimensional_abs_hand_values():
    p = NormProblem(B=2.0, n=2, dim=1)
    assert p.loss(0, np.array([-1.5])) == 3.0
    assert p.grad(1, np.array([-1.5]))[0] == -2.0
    assert p.grad(1, np.array([0.0]))[0] == 0.0  # fixed selection at the kink
    assert p.f_star == 0.0 and p.x_star[0] == 0.0
    # prox of f/lam: soft threshold by B/lam = 0.5
    assert p.theta_hat(0, np.array([2.0]), 4.0)[0] == 1.5
    assert p.theta_hat(0, np.array([0.3]), 4.0)[0] == 0.0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.floats(0.1, 10), st.integers(0, 10_000))
def test_subgradient_inequality_and_lipschitz(n, dim, B, seed):
    """Convexity (subgradient inequality) and ||g|| <= B at random points."""
    rng = np.random.default_rng(seed)
    p = NormProblem(B=B, n=n, dim=dim, centers=rng.normal(size=(n, dim)))
    for _ in range(5):
        x, y = rng.normal(size=dim) * 3, rng.normal(size=dim) * 3
        for i in range(n):
            g = p.grad(i, x)
            assert np.linalg.norm(g) <= B * (1 + 1e-12)
            assert p.loss(i, y) >= p.loss(i, x) + g @ (y - x) - 1e-10 * (1 + abs(p.loss(i, y)))
            assert abs(p.loss(i, x) - p.loss(i, y)) <= B * np.linalg.norm(x - y) * (1 + 1e-12)


def test_geometric_median_is_a_minimiser():
    rng = np.random.default_rng(0)
    p = NormProblem(B=1.0, n=5, dim=2, centers=rng.normal(size=(5, 2)))
    xs = p.x_star
    for _ in range(50):
        assert p.f(xs + 1e-4 * rng.normal(size=2)) >= p.f(xs) - 1e-12


@pytest.mark.parametrize("kw", [dict(B=0.0), dict(B=np.inf), dict(n=0), dict(dim=0),
                                dict(n=2, dim=1, centers=np.zeros((3, 1))),
                                dict(n=1, dim=1, centers=np.array([[np.nan]]))])
def test_bad_inputs_raise(kw):
    with pytest.raises(ConfigError):
        NormProblem(**kw)
