"""The quadratic problem split over modules (``quadratic`` + ``quadratic_stochastic``)
keeps its public names and its compiled view: the batch oracles live in a base class, and
the class the view stands for is still :class:`QuadraticProblem` itself."""

from __future__ import annotations

import numpy as np

from fedsim.problems.compiled import compiled_view, has_compiled_view, view_base


def test_public_names_and_imports_are_unchanged():
    import fedsim.problems as fp
    from fedsim.problems.quadratic import (
        MamlExact,
        MoreauExact,
        QuadraticProblem,
        max_quadratic_on_ball,
    )

    assert fp.QuadraticProblem is QuadraticProblem
    assert callable(max_quadratic_on_ball) and MamlExact and MoreauExact
    for name in ("sample_batch", "batch_grad", "batch_hvp", "batch_theta_hat",
                 "compiled_view", "grad", "loss"):
        assert callable(getattr(QuadraticProblem, name)), name


def test_the_compiled_view_stands_for_the_quadratic_class():
    """Without ``compiled_view_base`` the view's class would be the base holding
    ``compiled_view``, whose ``grad``/``loss`` are not the problem's: every quadratic would
    silently run interpreted."""
    from fedsim.problems.quadratic import QuadraticProblem

    p = QuadraticProblem.random(n=3, dim=2, mu=0.5, L=2.0, seed=1)
    assert view_base(QuadraticProblem) is QuadraticProblem
    assert has_compiled_view(p) and compiled_view(p, 1) is not None

    class Counting(QuadraticProblem):
        def batch_grad(self, i, w, batch):
            return super().batch_grad(i, w, batch)

    q = Counting.random(n=3, dim=2, mu=0.5, L=2.0, seed=1)
    assert compiled_view(q, 1) is None  # an overridden oracle: interpreted


def test_the_batch_oracles_by_hand():
    from fedsim.problems.quadratic import QuadraticProblem

    A = [np.diag([2.0, 1.0]), np.diag([1.0, 3.0])]
    p = QuadraticProblem(A, [[1.0, 0.0], [0.0, -1.0]], noise="additive",
                         noise_cov=np.diag([4.0, 1.0]))
    z = np.random.default_rng(5).standard_normal(2)
    e = p.sample_batch(0, 4, np.random.default_rng(5))
    np.testing.assert_array_equal(e, np.array([2.0 * z[0], z[1]]) * 0.5)
    w = np.array([0.5, 0.5])
    np.testing.assert_array_equal(p.batch_grad(0, w, e), np.array([-1.0, 0.5]) + e)
    np.testing.assert_array_equal(p.batch_hvp(1, w, np.ones(2), e), [1.0, 3.0])
