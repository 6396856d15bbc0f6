"""The compiled logistic objective value and gap (logistic_view.logistic_f / logistic_f_gap)
against what the Recorder records as ``f_gap``: ``LogisticProblem.f(w) - f_star``
(NumPy's logaddexp and BLAS sums), within 1e-12 relative."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.problems.compiled import compiled_view
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.logistic_view import logistic_f, logistic_f_gap
from fedsim.trace import metric_functions


def _problem(seed: int, n: int, d: int, nu: float) -> LogisticProblem:
    rng = np.random.default_rng(seed)
    X = [rng.standard_normal((int(rng.integers(3, 12)), d)) for _ in range(n)]
    y = [np.where(rng.random(x.shape[0]) < 0.5, -1.0, 1.0) for x in X]
    return LogisticProblem(X, y, nu_reg=nu)


def _mview(p: LogisticProblem) -> tuple:
    return compiled_view(p, 1).mdata  # logistic_metric_view of the problem's rows


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 5), d=st.integers(1, 9),
       nu=st.sampled_from([0.0, 1e-3, 0.5]), scale=st.sampled_from([0.0, 0.1, 3.0, 60.0]))
def test_compiled_f_is_the_problem_f(seed, n, d, nu, scale):
    p = _problem(seed, n, d, nu)
    w = scale * np.random.default_rng(seed + 1).standard_normal(d)
    want = p.f(w)
    assert logistic_f(_mview(p), w) == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert logistic_f.py_func(_mview(p), w) == pytest.approx(want, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_f_gap_is_the_recorded_f_gap(seed):
    """Away from the minimiser (the gap is O(1)): relative 1e-12; near it, where the
    difference cancels, the absolute error stays at rounding of f (1e-12 |f|)."""
    p = _problem(seed, 3, 4, 1e-2)
    recorded = dict(metric_functions(p, ["f_gap"], None, None))["f_gap"]
    mv = _mview(p)
    rng = np.random.default_rng(seed)
    for scale in (0.5, 2.0, 10.0):
        w = scale * rng.standard_normal(4)
        got, want = logistic_f_gap(mv, p.f_star, w), recorded(w)
        assert want > 1e-3 and got == pytest.approx(want, rel=1e-12)
    x = p.solve_global().x
    got, want = logistic_f_gap(mv, p.f_star, x), recorded(x)
    assert abs(got - want) <= 1e-12 * abs(p.f(x))
