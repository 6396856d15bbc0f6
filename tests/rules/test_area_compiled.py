"""AREA's rules and the norm family's oracles written once (issue 19): hand-computed
cases, compiled = interpreted bit for bit, and the compiled metrics against NumPy."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.local.area import area_update
from fedsim.local.sgd import sgd_round
from fedsim.problems import NormProblem
from fedsim.problems.compiled import compiled_view
from fedsim.problems.norm_view import norm_metrics, norm_sample_grad
from fedsim.servers.area import area_apply


def test_area_apply_by_hand() -> None:
    x, u = np.array([1.0, 2.0]), np.zeros(2)
    area_apply(x, u, np.array([3.0, -6.0]), 3.0, True)   # u += m / 3
    np.testing.assert_array_equal(u, [1.0, -2.0])
    area_apply(x, u, np.array([0.5, 0.5]), 2.0, True)
    np.testing.assert_array_equal(u, [1.25, -1.75])
    area_apply(x, u, u, 2.0, False)                      # x += u, u = 0
    np.testing.assert_array_equal(x, [2.25, 0.25])
    np.testing.assert_array_equal(u, [0.0, 0.0])


def test_norm_oracle_by_hand() -> None:
    p = NormProblem(B=5.0, n=2, dim=2, centers=np.array([[0.0, 0.0], [1.0, 1.0]]))
    cv = compiled_view(p, 5)
    grad, view = cv.grad, cv.data
    assert grad is norm_sample_grad and cv.draws == 0 and cv.normal_block
    g = np.empty(2)
    grad(view, 0, np.array([3.0, 4.0]), np.empty(0), g)  # 5 (3, 4) / 5
    np.testing.assert_array_equal(g, [3.0, 4.0])
    grad(view, 1, np.array([1.0, 1.0]), np.empty(0), g)  # the kink: 0
    np.testing.assert_array_equal(g, [0.0, 0.0])
    np.testing.assert_array_equal(p.grad(0, np.array([3.0, 4.0])), [3.0, 4.0])
    assert p.loss(0, np.array([3.0, 4.0])) == 25.0


def test_area_client_event_on_the_norm_family_by_hand() -> None:
    """f_i = |x - c_i| (d = 1), c = (0, 10), x_s = 1, alpha = 0.4, M = 3: client 0's
    iterate-model event sends x_0 - y_0 = 0, then x_0: 1 -> 0.6 -> 0.2 -> -0.2 (the kink
    passed on the last step)."""
    p = NormProblem(B=1.0, n=2, dim=1, centers=np.array([[0.0], [10.0]]))
    cv = compiled_view(p, 1)
    grad, view = cv.grad, cv.data
    state = np.ones((2, 2, 1))
    m, g = np.empty(1), np.empty(1)
    area_update(sgd_round, grad, view, 0, np.array([1.0]), state[0, 0], state[1, 0], m,
                np.empty((3, 0)), 0.4, 3, g, True)
    assert m[0] == 0.0 and state[1, 0, 0] == 1.0
    np.testing.assert_allclose(state[0, 0], [-0.2], rtol=0, atol=1e-15)
    # the next event of client 0 sends x_0 - y_0 = -0.2 - 1, remembers -0.2 and computes
    # 5 -> 4 -> 3 -> 2 with alpha = 1
    x_prev = state[0, 0, 0]
    area_update(sgd_round, grad, view, 0, np.array([5.0]), state[0, 0], state[1, 0], m,
                np.empty((3, 0)), 1.0, 3, g, True)
    assert m[0] == x_prev - 1.0 and state[1, 0, 0] == x_prev and state[0, 0, 0] == 2.0
    assert np.array_equal(state[:, 1], np.ones((2, 1)))  # client 1 untouched


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 5), d=st.integers(1, 4),
       iterate=st.booleans())
def test_area_update_compiled_equals_interpreted(seed, n, d, iterate) -> None:
    rng = np.random.default_rng(seed)
    p = NormProblem(B=float(rng.uniform(0.5, 2.0)), n=n, dim=d,
                    centers=rng.standard_normal((n, d)))
    cv = compiled_view(p, 1)
    grad, view = cv.grad, cv.data
    a = rng.standard_normal((2, n, d))
    b = a.copy()
    x_s = rng.standard_normal(d)
    m1, m2, g = np.empty(d), np.empty(d), np.empty(d)
    i = int(rng.integers(0, n))
    Z = np.empty((4, 0))
    area_update(sgd_round, grad, view, i, x_s, a[0, i], a[1, i], m1, Z, 0.1, 4, g, iterate)
    area_update.py_func(sgd_round.py_func, grad.py_func, view, i, x_s, b[0, i], b[1, i], m2, Z,
                        0.1, 4, g,
                        iterate)
    assert np.array_equal(a, b) and np.array_equal(m1, m2)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 6), d=st.integers(1, 4))
def test_norm_metrics_against_numpy(seed, n, d) -> None:
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, d))
    p = NormProblem(B=1.5, n=n, dim=d, centers=C)
    w = rng.standard_normal(d)
    out = np.empty(3)
    cv = compiled_view(p, 1)
    assert cv.metrics is norm_metrics
    cv.metrics(cv.mdata, cv.codes(["grad_sq", "dist_sq", "f_gap"]), w, out)
    sub = [1.5 * (w - c) / np.linalg.norm(w - c) for c in C]
    f = np.mean([1.5 * np.linalg.norm(w - c) for c in C])
    np.testing.assert_allclose(out[0], np.sum(np.mean(sub, axis=0) ** 2), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(out[1], np.sum((w - p.x_star) ** 2), rtol=1e-14)
    np.testing.assert_allclose(out[2], f - p.f_star, rtol=1e-12, atol=1e-14)
    assert p.f_gap(p.x_star) == 0.0 and out[2] >= -1e-12
    assert (out[0], out[1], out[2]) == (p.grad_f_sq(w), p.dist_sq(w), p.f_gap(w))


def test_a_subclass_that_replaces_an_oracle_runs_interpreted() -> None:
    class Counting(NormProblem):
        calls = 0

        def batch_grad(self, i, w, batch):
            Counting.calls += 1
            return super().batch_grad(i, w, batch)

    p = Counting(B=1.0, n=2, dim=1)
    assert compiled_view(p, 1) is None
    assert compiled_view(NormProblem(B=1.0, n=2, dim=1), 1) is not None
    inst = NormProblem(B=1.0, n=2, dim=1)
    inst.grad = lambda i, w: np.zeros(1)  # the instance replaces an oracle
    assert compiled_view(inst, 1) is None
    from fedsim.local import AreaClients
    from fedsim.local.sgd import SGDRule

    cl = AreaClients(np.ones(1), 2, SGDRule(p, 0.0, 3))
    cl.event(0, np.ones(1), 0.1, np.random.default_rng(0), True)
    assert Counting.calls == 3 and cl.x[0, 0] == 1.0 - 0.1 - 0.1 - 0.1
