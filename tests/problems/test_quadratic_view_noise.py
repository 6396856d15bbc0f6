"""The quadratic's compiled stochastic gradient is ``batch_grad(i, w, sample_batch(i, m,
rng))`` on the same standard normals, up to rounding, for both noise models and for
isotropic and anisotropic noise (the view applies the factor ``sample_batch`` applies)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.problems.quadratic import QuadraticProblem


def _problem(noise: str, iso: bool, d: int = 3, n: int = 2) -> QuadraticProblem:
    rng = np.random.default_rng(11)
    mats, covs = [], []
    for _ in range(n):
        q = rng.standard_normal((d, d))
        mats.append(q @ q.T + np.eye(d))
        c = rng.standard_normal((d, d))
        covs.append(0.09 * np.eye(d) if iso else 0.1 * (c @ c.T) + 0.01 * np.eye(d))
    return QuadraticProblem(mats, rng.standard_normal((n, d)), None, noise=noise,
                            noise_cov=covs)


@pytest.mark.parametrize("noise", ["additive", "sampling"])
@pytest.mark.parametrize("iso", [True, False])
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 9), i=st.integers(0, 1))
def test_compiled_sample_grad_is_the_engines_on_the_same_normals(noise, iso, seed, m, i):
    prob = _problem(noise, iso)
    cv = prob.compiled_view(m)
    w = np.random.default_rng(seed ^ 1).standard_normal(prob.dim)
    expected = prob.batch_grad(i, w, prob.sample_batch(i, m, np.random.default_rng(seed)))
    z = np.random.default_rng(seed).standard_normal(prob.dim)
    g = np.empty(prob.dim)
    cv.grad.py_func(cv.data, i, w, z, g)
    assert np.allclose(g, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    g2 = np.empty(prob.dim)
    cv.grad(cv.data, i, w, z, g2)
    assert np.allclose(g2, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_the_sign_of_the_sampling_noise():
    # one client, d = 1, A = 2, b = 0, S = 1, m = 1: xibar = z, grad = 2 (w - z)
    prob = QuadraticProblem([np.array([[2.0]])], np.zeros((1, 1)), None, noise="sampling",
                            noise_cov=[np.array([[1.0]])])
    cv = prob.compiled_view(1)
    g = np.empty(1)
    cv.grad(cv.data, 0, np.array([0.5]), np.array([0.25]), g)
    assert g[0] == 2.0 * (0.5 - 0.25)
