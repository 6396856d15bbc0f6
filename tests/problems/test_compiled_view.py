"""The compiled-view interface (fedsim.problems.compiled) and the quadratic's view."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.problems import QuadraticProblem
from fedsim.problems.compiled import CompiledView, compiled_view, has_compiled_view


def _quad(noise_cov=None) -> QuadraticProblem:
    A = [np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([[1.0, 0.0], [0.0, 3.0]])]
    return QuadraticProblem(A, [[1.0, -1.0], [0.5, 2.0]], noise_cov=noise_cov)


@pytest.mark.parametrize("cov", [None, np.eye(2) * 0.25, np.array([[0.5, 0.1], [0.1, 0.3]])])
def test_quadratic_view_draws_and_gradients_are_the_interpreted_oracles(cov):
    p = _quad(cov)
    cv = p.compiled_view(3)
    assert isinstance(cv, CompiledView) and cv.normal_block and cv.dtype is np.float64
    assert cv.draws == (0 if cov is None else 2)
    w = np.array([0.3, -0.7])
    for i in range(2):
        z = np.empty(cv.draws)
        gen = np.random.default_rng(7)
        cv.draw(cv.data, i, gen, z)  # a numba-typed NumPy Generator
        ref = np.random.default_rng(7)
        batch = p.sample_batch(i, 3, ref)
        np.testing.assert_array_equal(z, np.random.default_rng(7).standard_normal(cv.draws))
        if cov is not None:  # the generator is left where sample_batch leaves it (without
            # noise the view draws nothing: the noise stream serves nothing else)
            assert gen.bit_generator.state == ref.bit_generator.state
        g = np.empty(2)
        cv.grad(cv.data, i, w, z, g)
        if cov is None or cov[0, 1] == 0.0:
            np.testing.assert_allclose(g, p.batch_grad(i, w, batch), rtol=1e-13, atol=1e-15)
        else:  # the view's factor is the symmetric root, sample_batch's Cholesky: the same
            # law N(0, C_i / m), other numbers
            e = g - p.A_stack[i] @ (w - p.b_stack[i])
            F = cv.data[5][i]
            np.testing.assert_allclose(F @ F.T, p.grad_noise_cov(i) / 3, rtol=1e-12)
            np.testing.assert_allclose(e, F @ z, rtol=1e-13, atol=1e-15)


def test_quadratic_view_metrics_by_name():
    p = _quad()
    cv = compiled_view(p, 1)
    w = np.array([1.5, 0.25])
    out = np.empty(3)
    cv.metrics(cv.mdata, cv.codes(["f_gap", "grad_sq", "dist_sq"]), w, out)
    np.testing.assert_allclose(out, [p.f_gap(w), p.grad_f_sq(w), p.dist_sq(w)], rtol=1e-14)
    assert cv.has_metrics(["grad_sq"]) and not cv.has_metrics(["grad_sq", "test_acc"])


def test_a_problem_without_a_compiled_view_has_none():
    assert compiled_view(object(), 1) is None and not has_compiled_view(object())


def _scenario(problem: dict, metrics=("grad_sq",)) -> Scenario:
    return Scenario.from_dict({
        "name": "cv", "seed": 1, "problem": problem,
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 2, "eta": 0.01,
                      "beta": 1.0},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": 10}, "record": {"every": 1, "metrics": list(metrics)}})


def supports(sc: Scenario) -> bool:
    """Whether the replay evaluates every recorded metric of ``sc`` in compiled code."""
    from fedsim.engine import problem_for
    from fedsim.engine.setup import metric_params
    from fedsim.problems.compiled import compiled_view

    cv = compiled_view(problem_for(sc), 1)
    alpha, lam = metric_params(sc)
    return cv is not None and cv.has_metrics(sc.record.metrics, maml_alpha=alpha, me_lam=lam)


def test_supports_reads_the_compiled_view_and_its_metrics():
    quad = {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.1, "L": 1.0, "seed": 0}
    assert supports(_scenario(quad))
    assert supports(_scenario(quad, ("grad_sq", "dist_sq", "f_gap")))
    assert not supports(_scenario(quad, ("grad_sq", "ergodic_f_gap")))


def test_the_view_stands_for_the_oracles_of_its_class():
    """``compiled_view`` gives ``None`` when a subclass or the instance replaces an oracle
    of the class the view stands for (the one that sets ``compiled_view_base``, else the
    one that defines ``compiled_view``), and for a wrapper that forwards attributes."""

    class Mixin:
        def compiled_view(self, batch):
            return ("view", batch)

        def batch_grad(self, i, w, batch):
            return 0

    class Prob(Mixin):
        compiled_view_base = True

        def sample_batch(self, i, size, rng):
            return None

    class Same(Prob):  # replaces nothing
        pass

    class Sub(Prob):
        def sample_batch(self, i, size, rng):
            return 1

    class Unmarked(Mixin):  # no marker: the view stands for Mixin's oracles,
        def loss(self, i, w):  # and this loss is not Mixin's
            return 0.0

    class Proxy:
        def __init__(self, p):
            self.p = p

        def __getattr__(self, name):
            return getattr(self.p, name)

    assert compiled_view(Prob(), 2) == ("view", 2) and compiled_view(Same(), 3) == ("view", 3)
    assert compiled_view(Sub(), 2) is None and compiled_view(Unmarked(), 2) is None
    inst = Prob()
    inst.batch_grad = lambda i, w, batch: 1
    assert compiled_view(inst, 2) is None and compiled_view(Proxy(Prob()), 2) is None

    class Counting(type(_quad())):
        def sample_batch(self, i, size, rng):
            return super().sample_batch(i, size, rng)

    q = _quad()
    assert compiled_view(q, 1) is not None
    q.__class__ = Counting
    assert compiled_view(q, 1) is None and not has_compiled_view(q)
