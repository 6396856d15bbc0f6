"""Client rules: exact hand cases, round == Q x step bit for bit, estimators vs closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedsim.local.sgd as sgd_mod
from fedsim.errors import ConfigError
from fedsim.local import AreaClients, MAMLRule, MoreauRule, SGDRule
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.quadratic import QuadraticProblem

# the Moreau rule's compiled forms are shared by these modules: one worker compiles each once
pytestmark = pytest.mark.xdist_group("moreau_kernels")


def quad(noise_sd=0.1, noise="additive", shared=True, n=3, d=4, seed=0):
    return QuadraticProblem.random(n, d, 0.2, 1.0, heterogeneity=1.0, noise_sd=noise_sd,
                                   noise=noise, shared_hessian=shared, seed=seed)


@settings(max_examples=30, deadline=None)
@given(noise=st.sampled_from(["iso", "zero", "sampling"]), shared=st.booleans(),
       Q=st.integers(1, 8), eta=st.floats(0.0, 0.5), seed=st.integers(0, 10**6))
def test_round_equals_q_steps_bit_for_bit(noise, shared, Q, eta, seed):
    p = quad(noise_sd=0.0 if noise == "zero" else 0.2,
             noise="sampling" if noise == "sampling" else "additive", shared=shared)
    rule = SGDRule(p, eta, Q, batch=2)
    w0 = np.random.default_rng(seed).standard_normal(p.dim)
    out = np.empty(p.dim)
    rule.round(1, w0, out, np.random.default_rng(seed))
    w = w0.copy()
    rng = np.random.default_rng(seed)
    for _ in range(Q):
        rule.step(1, w, rng)
    assert np.array_equal(out, w)


def test_sgd_step_is_paper_formula_with_the_same_noise():
    """One step equals w - eta (A (w - b) + e) with e = sqrt(s2/b) z, z the stream's normals."""
    p = quad(noise_sd=0.3)
    eta, b = 0.1, 3
    rule = SGDRule(p, eta, 1, batch=b)
    w = np.array([0.5, -1.0, 2.0, 0.25])
    got = rule.step(2, w.copy(), np.random.default_rng(5))
    z = np.random.default_rng(5).standard_normal(p.dim)
    e = np.sqrt(0.09 / b) * z
    want = w - eta * (p.A[2] @ (w - p.b[2]) + e)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_sgd_noise_covariance_is_C_over_b():
    """Sample covariance of the step noise vs C_i/b (sampling noise, non-isotropic C).

    Statistic: max entrywise |Shat - C/b| / se with se from the Wishart variance; threshold 5
    standard errors over 10 entries -> false-alarm rate below 1e-5 (normal approximation).
    """
    p = quad(noise_sd=0.5, noise="sampling", n=1, d=4)
    eta, b, N = 0.1, 2, 20000
    rule = SGDRule(p, eta, 1, batch=b)
    rng = np.random.default_rng(11)
    w0 = np.zeros(p.dim)
    mean_step = w0 - eta * p.A[0] @ (w0 - p.b[0])
    E = np.empty((N, p.dim))
    for k in range(N):
        E[k] = (rule.step(0, w0.copy(), rng) - mean_step) / -eta
    C = p.grad_noise_cov(0) / b
    S = np.cov(E.T, bias=True)
    se = np.sqrt((C ** 2 + np.outer(np.diag(C), np.diag(C))) / N)
    iu = np.triu_indices(p.dim)
    assert np.max(np.abs(S - C)[iu] / se[iu]) < 5.0
    assert np.all(np.abs(E.mean(axis=0)) < 5 * np.sqrt(np.diag(C) / N))


def test_generic_path_logistic_round_equals_steps(monkeypatch):
    p = LogisticProblem.synthetic(3, 3, 10, seed=1)
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    rule = SGDRule(p, 0.3, 4, batch=2)
    assert not rule.fast
    w0 = np.array([0.1, -0.2, 0.3])
    out = rule.round(0, w0, np.empty(3), np.random.default_rng(3))
    w = w0.copy()
    rng = np.random.default_rng(3)
    for _ in range(4):
        rule.step(0, w, rng)
    assert np.array_equal(out, w)
    rng = np.random.default_rng(3)
    w = w0.copy()
    for _ in range(4):
        w = w - 0.3 * p.batch_grad(0, w, p.sample_batch(0, 2, rng))
    np.testing.assert_allclose(out, w, rtol=1e-14)


@pytest.mark.parametrize("variant", ["maml", "hfmaml"])
def test_maml_direction_noise_free_is_exact_gradient(variant):
    """Noise-free quadratic: [P] eq. (9) equals grad F_i^(b)(w) = Hb_i (w - b_i) exactly."""
    p = quad(noise_sd=0.0, shared=False)
    alpha = 0.3
    rule = MAMLRule(p, 0.1, 1, 1, alpha, variant, hf_delta=1e-3)
    w = np.array([1.0, -2.0, 0.5, 0.0])
    got = rule.direction(1, w, np.random.default_rng(0))
    want = p.maml(alpha).H[1] @ (w - p.b[1])
    np.testing.assert_allclose(got, want, rtol=1e-9 if variant == "hfmaml" else 1e-13,
                               atol=1e-12)


def test_fomaml_drops_the_hessian_term_and_draws_two_batches():
    p = quad(noise_sd=0.2)
    alpha = 0.3
    w = np.array([1.0, -2.0, 0.5, 0.0])
    fo = MAMLRule(p, 0.1, 1, 1, alpha, "fomaml")
    rng = np.random.default_rng(4)
    got = fo.direction(0, w, rng)
    r2 = np.random.default_rng(4)
    D = p.sample_batch(0, 1, r2)
    D1 = p.sample_batch(0, 1, r2)
    want = p.batch_grad(0, w - alpha * p.batch_grad(0, w, D1), D)
    np.testing.assert_array_equal(got, want)
    assert rng.standard_normal() == r2.standard_normal()  # same stream position: 2 batches
    full = MAMLRule(p, 0.1, 1, 1, alpha, "maml")
    rng3 = np.random.default_rng(4)
    full.direction(0, w, rng3)
    r4 = np.random.default_rng(4)
    for _ in range(3):  # D, D', D''
        p.sample_batch(0, 1, r4)
    assert rng3.standard_normal() == r4.standard_normal()


def test_maml_mean_matches_closed_form_bias():
    """E[eq. (9)] = Hb_i (w - b_i) for quadratics with additive noise (the inner-batch bias
    vanishes in expectation because the gradient is affine).  z-test at 5 sigma per
    coordinate, 4 coordinates: false-alarm rate below 3e-6."""
    p = quad(noise_sd=0.5)
    alpha = 0.2
    rule = MAMLRule(p, 0.1, 1, 1, alpha, "maml")
    rng = np.random.default_rng(9)
    w = np.array([1.0, 0.0, -1.0, 0.5])
    X = np.array([rule.direction(0, w, rng) for _ in range(4000)])
    want = p.maml(alpha).H[0] @ (w - p.b[0])
    se = X.std(axis=0) / np.sqrt(len(X))
    assert np.all(np.abs(X.mean(axis=0) - want) < 5 * se)


def test_moreau_gd_meets_nu_and_counts_iterations():
    p = quad(noise_sd=0.0, shared=False)
    lam, nu, eta = 8.0, 1e-10, 0.05
    rule = MoreauRule(p, eta, 1, 1, lam, nu=nu, inner_max_iter=500, solver="gd", L=1.0)
    w = np.array([1.0, -1.0, 2.0, 0.0])
    D = p.sample_batch(2, 1, np.random.default_rng(0))
    th = rule.theta_tilde(2, w, D)
    g = p.batch_grad(2, th, D) + lam * (th - w)
    assert np.linalg.norm(g) <= nu
    assert rule.inner_iters > 0 and rule.inner_failures == 0
    np.testing.assert_allclose(th, p.me(lam).theta_hat(2, w), atol=1e-10)
    w1 = rule.step(2, w.copy(), np.random.default_rng(1))
    want = w - eta * p.me(lam).H[2] @ (w - p.b[2])
    np.testing.assert_allclose(w1, want, atol=1e-10)


def test_moreau_exact_solver_and_failures():
    p = quad(noise_sd=0.3)
    lam = 8.0
    ex = MoreauRule(p, 0.05, 3, 1, lam, nu=0.0, solver="exact")
    gd = MoreauRule(p, 0.05, 3, 1, lam, nu=1e-12, inner_max_iter=10000, solver="gd", L=1.0)
    w0 = np.array([1.0, -1.0, 2.0, 0.0])
    a = ex.round(0, w0, np.empty(4), np.random.default_rng(2))
    b = gd.round(0, w0, np.empty(4), np.random.default_rng(2))
    np.testing.assert_allclose(a, b, atol=1e-11)
    capped = MoreauRule(p, 0.05, 1, 1, lam, nu=1e-14, inner_max_iter=1, solver="gd", L=1.0)
    capped.step(0, w0.copy(), np.random.default_rng(2))
    assert capped.inner_failures == 1
    with pytest.raises(ConfigError, match="algorithm.lam must be > L"):
        MoreauRule(p, 0.05, 1, 1, 0.9, solver="gd", L=1.0)
    with pytest.raises(ConfigError, match="algorithm.nu must be > 0"):
        MoreauRule(p, 0.05, 1, 1, 8.0, nu=0.0, solver="gd", L=1.0)


def test_area_client_message_and_memory():
    p = quad(noise_sd=0.0)
    sgd = SGDRule(p, 0.0, 2)
    x0 = np.zeros(p.dim)
    cl = AreaClients(x0, p.n, sgd)
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    # Algorithm 2: compute, then send
    m = cl.event(1, xs, 0.1, np.random.default_rng(0), False).copy()
    R = np.eye(p.dim) - 0.1 * p.A[1]
    want = R @ (R @ xs + 0.1 * p.A[1] @ p.b[1]) + 0.1 * p.A[1] @ p.b[1]
    np.testing.assert_allclose(cl.x[1], want, rtol=1e-14)
    np.testing.assert_array_equal(m, cl.x[1] - x0)  # [A] Alg. 2: m_i = x_i - y_i, y_i = x0
    np.testing.assert_array_equal(cl.y[1], cl.x[1])
    # the Appendix A model: send (x_i - y_i = 0 now), then compute from the new x_s
    m = cl.event(1, np.zeros(p.dim), 0.1, np.random.default_rng(0), True)
    np.testing.assert_array_equal(m, np.zeros(p.dim))
    np.testing.assert_allclose(cl.x[1], 0.1 * (R + np.eye(p.dim)) @ p.A[1] @ p.b[1],
                               rtol=1e-14)
    np.testing.assert_array_equal(cl.y[0], x0)  # other clients untouched


def test_rule_validation():
    p = quad()
    with pytest.raises(ConfigError, match="algorithm.eta"):
        SGDRule(p, -1.0, 1)
    with pytest.raises(ConfigError, match="algorithm.Q"):
        SGDRule(p, 0.1, 0)
    with pytest.raises(ConfigError, match="algorithm.hf_delta"):
        MAMLRule(p, 0.1, 1, 1, 0.1, "hfmaml", hf_delta=0.0)
