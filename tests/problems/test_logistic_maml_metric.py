"""The compiled MAML metric of the logistic view (``logistic_view.logistic_grad_maml``,
``grad_maml_sq``): ``grad F^(b)(w) = (1/n) sum_i [I - alpha H_i(w)] grad f_i(w - alpha grad
f_i(w))`` ([P] eq. (5)) against a hand-computed case and against the interpreted
``Problem.grad_F_maml`` (NumPy/BLAS sums: equal up to rounding)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import FedsimError
from fedsim.problems.base import Problem
from fedsim.problems.compiled import compiled_view
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.logistic_view import logistic_grad_maml
from fedsim.problems.quadratic import QuadraticProblem
from fedsim.trace import metric_functions


def _problem(seed: int, n: int, d: int, nu: float) -> LogisticProblem:
    """``n`` clients of 1..8 Gaussian rows in dimension ``d``, labels +-1 at random."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, size=n)
    return LogisticProblem([rng.standard_normal((int(k), d)) for k in sizes],
                           [rng.choice([-1.0, 1.0], size=int(k)) for k in sizes], nu_reg=nu)


def _sig(t: float) -> float:
    return 1.0 / (1.0 + math.exp(-t))


@pytest.mark.parametrize("x, y, nu, w, alpha", [(2.0, 1.0, 0.0, 0.3, 0.5),
                                                (-1.5, -1.0, 0.25, -0.7, 1.0),
                                                (0.5, 1.0, 0.1, 0.0, 0.0)])
def test_one_client_one_row_by_hand(x, y, nu, w, alpha):
    """d = 1, one row: f(w) = log(1 + exp(-r w)) + nu/2 w^2 with r = y x, so
    f'(w) = -r s(-r w) + nu w, f''(w) = r^2 s(r w) s(-r w) + nu and
    F'(w) = (1 - alpha f''(w)) f'(w - alpha f'(w))."""
    p = LogisticProblem([np.array([[x]])], [np.array([y])], nu_reg=nu)
    r = y * x

    def g(v):
        return -r * _sig(-r * v) + nu * v

    h = r * r * _sig(r * w) * _sig(-r * w) + nu
    want = ((1.0 - alpha * h) * g(w - alpha * g(w))) ** 2
    assert p.grad_F_maml_sq(np.array([w]), alpha) == pytest.approx(want, rel=1e-14)


def _terms_scale(p: LogisticProblem, w: np.ndarray, alpha: float) -> float:
    """``(1/n) sum_i (||g_i|| + alpha ||H_i|| ||g_i||)``, ``g_i = grad f_i(w - alpha grad
    f_i(w))``: the size of the summands, which bounds the rounding of their mean."""
    tot = 0.0
    for i in range(p.n):
        gi = p.grad(i, w - alpha * p.grad(i, w))
        tot += np.linalg.norm(gi) * (1.0 + alpha * np.linalg.norm(p.hess(i, w), 2))
    return tot / p.n


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 5), d=st.integers(1, 7),
       nu=st.sampled_from([0.0, 1e-3, 0.5]), scale=st.sampled_from([0.0, 0.3, 3.0, 40.0]),
       alpha=st.sampled_from([0.0, 1e-3, 0.1, 0.5, 2.0]))
def test_compiled_maml_gradient_is_the_python_one(seed, n, d, nu, scale, alpha):
    """The compiled gradient equals ``Problem.grad_F_maml`` (the interpreted per-client
    grad + hvp) to 1e-13 of the summands' size per coordinate; its squared norm, the
    recorded ``grad_maml_sq``, to 1e-10 relative unless the mean cancels the summands
    below 1e-2 of their size (then to the absolute bound the vector bound implies)."""
    p = _problem(seed, n, d, nu)
    w = scale * np.random.default_rng(seed + 1).standard_normal(d)
    ref = Problem.grad_F_maml(p, w, alpha)
    cv = compiled_view(p, 1)
    md = cv.metric_data(maml_alpha=alpha)
    g = np.empty(d)
    logistic_grad_maml(md, w, g)
    S = _terms_scale(p, w, alpha)
    assert np.all(np.abs(g - ref) <= 1e-13 * S + 1e-300)
    got, want = p.grad_F_maml_sq(w, alpha), float(np.sum(ref ** 2))
    assert got == pytest.approx(float(np.sum(g * g)), rel=1e-14, abs=1e-300)
    if math.sqrt(want) >= 1e-2 * S:
        assert got == pytest.approx(want, rel=1e-10, abs=1e-300)
    else:
        assert abs(got - want) <= 2e-13 * S * (2.0 * math.sqrt(want) + 1e-13 * S) * d + 1e-300
    # the interpreted copy of the compiled function: the same formula, same order
    g2 = np.empty(d)
    logistic_grad_maml.py_func(md, w, g2)
    assert np.all(np.abs(g2 - g) <= 1e-14 * S + 1e-300)


def test_the_metric_codes_and_the_recorder():
    """``grad_maml_sq`` is code 1 of the view, computed once per call however often asked;
    the Recorder's function is the compiled one (bitwise), ``grad_sq`` is unchanged."""
    p = _problem(3, 4, 3, 1e-3)
    cv = compiled_view(p, 2)
    w = np.array([0.3, -1.0, 0.5])
    md = cv.metric_data(maml_alpha=0.5)
    out = np.empty(3)
    cv.metrics(md, cv.codes(["grad_maml_sq", "grad_sq", "grad_maml_sq"]), w, out)
    assert out[0] == out[2] == p.grad_F_maml_sq(w, 0.5)
    assert out[1] == p.grad_f_sq(w)
    (_, fn), = metric_functions(p, ["grad_maml_sq"], 0.5, None)
    assert fn(w) == out[0]
    # alpha = 0: F^(b) = f, the same gradient (summed per client instead of per row)
    assert p.grad_F_maml_sq(w, 0.0) == pytest.approx(p.grad_f_sq(w), rel=1e-13)


def test_the_metric_needs_its_parameter():
    """Without ``maml_alpha`` the view does not claim ``grad_maml_sq`` (the Python path then
    raises the ConfigError naming ``record.maml_alpha``); the default metric data carry no
    alpha (NaN); a view without parameterised metrics returns its ``mdata`` as is."""
    p = _problem(4, 3, 2, 0.0)
    cv = compiled_view(p, 1)
    assert not cv.has_metrics(["grad_sq", "grad_maml_sq"])
    assert cv.has_metrics(["grad_sq", "grad_maml_sq"], maml_alpha=0.1)
    assert not cv.has_metrics(["grad_me_sq"], maml_alpha=0.1, me_lam=1.0)
    out = np.empty(1)
    cv.metrics(cv.mdata, cv.codes(["grad_maml_sq"]), np.zeros(2), out)
    assert math.isnan(out[0])
    q = QuadraticProblem.random(n=3, dim=2, mu=0.5, L=1.0, seed=0)
    qv = compiled_view(q, 1)
    assert qv.metric_data(maml_alpha=0.1, me_lam=1.0) is qv.mdata
    with pytest.raises(FedsimError, match="record.maml_alpha"):
        metric_functions(p, ["grad_maml_sq"], None, None)
    with pytest.raises(FedsimError, match="alpha"):
        p.grad_F_maml_sq(np.zeros(2), math.nan)


def test_replaced_oracles_take_the_interpreted_path():
    """A subclass or instance whose ``grad``/``hvp`` differ from the class's gets
    ``||grad_F_maml||^2`` through its own oracles, not the compiled formula."""
    p = _problem(5, 3, 2, 0.1)

    class Doubled(LogisticProblem):
        def hvp(self, i, w, v):
            return 2.0 * super().hvp(i, w, v)

    q = Doubled(p.X, p.y, nu_reg=0.1)
    w = np.array([0.4, -0.2])
    assert q.grad_F_maml_sq(w, 0.5) == float(np.sum(Problem.grad_F_maml(q, w, 0.5) ** 2))
    assert q.grad_F_maml_sq(w, 0.5) != pytest.approx(p.grad_F_maml_sq(w, 0.5), rel=1e-6)
    r = _problem(5, 3, 2, 0.1)
    r.grad = lambda i, v: 3.0 * LogisticProblem.grad(r, i, v)
    assert r.grad_F_maml_sq(w, 0.5) == float(np.sum(Problem.grad_F_maml(r, w, 0.5) ** 2))


def test_the_metric_runs_without_reference_counting():
    """The replay compiles its loops with ``_nrt=False``: the MAML metric allocates
    nothing and gives the numbers of the ordinary call."""
    import numba

    p = _problem(6, 4, 3, 0.0)
    cv = compiled_view(p, 2)
    metrics = cv.metrics

    def loop(mdata, codes, W, out):
        for r in range(W.shape[0]):
            metrics(mdata, codes, W[r], out[r])
        return 0

    bare = numba.njit(_nrt=False)(loop)
    W = np.random.default_rng(7).standard_normal((5, 3))
    out = np.empty((5, 2))
    bare(cv.metric_data(maml_alpha=0.3), cv.codes(["grad_maml_sq", "grad_sq"]), W, out)
    for r in range(5):
        assert out[r, 0] == p.grad_F_maml_sq(W[r], 0.3)
        assert out[r, 1] == p.grad_f_sq(W[r])
