"""QuadraticProblem: closed forms and exact constants (THEORY_SPEC 9.1, 12 items 1-2)."""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.problems import QuadraticProblem as ReExported
from fedsim.problems.base import Problem
from fedsim.problems.constants import Tag
from fedsim.problems.quadratic import QuadraticProblem, max_quadratic_on_ball

SETTINGS = settings(max_examples=30, deadline=None)


def _instance(seed, n, d, shared, noise="additive", singular=False, scale=1.0):
    """A random PSD instance built independently of ``QuadraticProblem.random``."""
    rng = np.random.default_rng(seed)
    mats = []
    base = None
    for _ in range(n):
        if shared and base is not None:
            mats.append(base)
            continue
        x = rng.normal(size=(d, d - 1 if singular and d > 1 else d))
        a = scale * x @ x.T / d
        base = a
        mats.append(a)
    b = rng.normal(size=(n, d)) * 2
    c = rng.uniform(-1, 1, size=n)
    covs = []
    for _ in range(n):
        y = rng.normal(size=(d, d))
        covs.append(0.2 * y @ y.T / d)
    return QuadraticProblem(mats, b, c, noise=noise, noise_cov=covs), mats, b, c, covs


# --------------------------------------------------------------------------------------------
# hand-computed exact cases
# --------------------------------------------------------------------------------------------
def test_hand_computed_two_clients_one_dimension():
    """d=1, A=(1, 3), b=(0, 2), c=(1, 0), S=0.5: every quantity by hand."""
    p = QuadraticProblem([[[1.0]], [[3.0]]], [[0.0], [2.0]], c=[1.0, 0.0], noise_cov=[[0.5]])
    # Abar = 2, m = (0 + 6)/2 = 3, x* = 1.5
    assert p.x_star[0] == pytest.approx(1.5, abs=1e-15)
    # f(x*) = mean(0.5*1*2.25 + 1, 0.5*3*0.25 + 0) = (2.125 + 0.375)/2 = 1.25
    assert p.f_star == pytest.approx(1.25, abs=1e-15)
    assert p.f(np.array([0.0])) == pytest.approx((1.0 + 6.0) / 2, abs=1e-15)
    assert p.grad_f(np.array([0.0]))[0] == -3.0
    assert p.grad(1, np.array([0.0]))[0] == -6.0 and p.hvp(1, np.zeros(1), np.ones(1))[0] == 3.0
    t = p.constants
    assert t.value("L") == 3.0 and t.value("mu") == 1.0
    assert t.value("gamma_h2") == 1.0 and t.value("sigma_g2") == 0.5
    assert t.value("rho") == 0.0 and t.value("sigma_h2") == 0.0
    assert t.value("f_star_P") == 0.0 and t.value("zeta") == pytest.approx(1.5, abs=1e-15)
    assert np.isinf(t.value("gamma_g2")) and t["gamma_g2"].tag is Tag.INFINITE
    assert "A_i differ" in t["gamma_g2"].reason
    assert t["G"].tag is Tag.INFINITE and t["B"].tag is Tag.INFINITE
    assert np.allclose(p.grad_at_xstar, [[1.5], [-1.5]], atol=1e-14)
    # MAML alpha=0.25: Hb = a(1-a/4)^2 = (9/16, 3/16); Hbbar = 3/8, mb = 3/16 -> w* = 1/2
    m = p.maml(0.25)
    assert m.H[0][0, 0] == pytest.approx(9 / 16, abs=1e-15)
    assert m.H[1][0, 0] == pytest.approx(3 / 16, abs=1e-15)
    assert m.L_true == pytest.approx(9 / 16, abs=1e-15) and np.isinf(m.gamma2_true)
    assert m.w_star[0] == pytest.approx(0.5, abs=1e-15) and m.bias == 0.0
    # F_min = mean(1 + 0.5*9/16*1/4, 0 + 0.5*3/16*9/4) = (1 + 9/128 + 27/128)/2
    assert m.F_min == pytest.approx((1 + 36 / 128) / 2, abs=1e-15)
    # MSE_B(|D|=2,|D'|=4), client 0: (1-1/4)^2*0.5/2 + (1/16)*1*(3/4)^2*0.5/4
    mse0 = 0.5625 * 0.25 + 0.0625 * 0.5625 * 0.125
    assert m.estimator_mse_clients(2, 4)[0] == pytest.approx(mse0, abs=1e-15)
    # ME lam=1: Hc = a/(1+a) = (1/2, 3/4); theta_hat_1(0) = (3*2 + 0)/(3+1) = 1.5
    e = p.me(1.0)
    assert e.H[1][0, 0] == pytest.approx(0.75, abs=1e-15)
    assert e.L_true == pytest.approx(0.75, abs=1e-15)
    assert p.theta_hat(1, np.array([0.0]), 1.0)[0] == pytest.approx(1.5, abs=1e-15)
    # MSE_C(|D|=5), client 1: (1/(3+1))^2 * 0.5/5
    assert e.estimator_mse_clients(5)[1] == pytest.approx(0.5 / 16 / 5, abs=1e-15)


def test_hand_computed_shared_hessian_and_sampling_noise():
    """A = diag(2, 1) shared, b = (1,0),(−1,0),(0,3); sampling noise S = I."""
    A = np.diag([2.0, 1.0])
    p = QuadraticProblem([A, A, A], [[1, 0], [-1, 0], [0, 3]], noise="sampling",
                         noise_cov=np.eye(2))
    assert p.shared_hessian
    assert np.allclose(p.x_star, [0.0, 1.0], atol=1e-15)
    # gamma_g2 = mean ||A(b_i - bbar)||^2 = (4+1 + 4+1 + 0+4)/3 = 14/3
    assert p.constants.value("gamma_g2") == pytest.approx(14 / 3, abs=1e-14)
    assert p.constants["gamma_g2"].tag is Tag.EXACT
    assert p.constants.value("gamma_h2") == 0.0
    # sampling: C_i = A S A = diag(4, 1), sigma_g2 = 5
    assert np.array_equal(p.grad_noise_cov(2), np.diag([4.0, 1.0]))
    assert p.constants.value("sigma_g2") == 5.0
    # MAML alpha = 1/2 makes the first eigenvalue's factor 2(1-1)^2 = 0: Hb = diag(0, 1/4)
    m = p.maml(0.5)
    assert np.allclose(m.Hbar, np.diag([0.0, 0.25]), atol=1e-16)
    assert np.allclose(m.w_star, [0.0, 1.0], atol=1e-15)  # min-norm solution (pinv)
    assert np.allclose(m.grad(m.w_star), 0.0, atol=1e-15)
    # gamma_b_true2 = mean ||Hb (b_i - bbar)||^2 = (1/16)(1 + 1 + 4)/3 = 1/8
    assert m.gamma2_true == pytest.approx(1 / 8, abs=1e-15)
    assert ReExported is QuadraticProblem


# --------------------------------------------------------------------------------------------
# closed forms vs generic and numerical versions (THEORY_SPEC 12 item 1)
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 4), st.booleans(),
       st.booleans(), st.floats(0.0, 1.5), st.floats(0.2, 20.0))
def test_closed_forms_agree_with_base_class(seed, n, d, shared, singular, alpha, lam):
    p, *_ = _instance(seed, n, d, shared, singular=singular)
    w = np.random.default_rng(seed + 1).normal(size=d) * 3
    tol = 1e-12 * (1 + np.linalg.norm(w)) ** 2
    assert np.allclose(p.grad_F_maml(w, alpha), Problem.grad_F_maml(p, w, alpha), rtol=0,
                       atol=tol)
    assert p.F_maml(w, alpha) == pytest.approx(Problem.F_maml(p, w, alpha), abs=tol)
    assert np.allclose(p.grad_F_me(w, lam), Problem.grad_F_me(p, w, lam), atol=tol, rtol=0)
    assert p.F_me(w, lam) == pytest.approx(Problem.F_me(p, w, lam), abs=tol)
    assert np.allclose(p.grad_f(w), Problem.grad_f(p, w), atol=tol, rtol=0)
    assert p.f(w) == pytest.approx(Problem.f(p, w), abs=tol)
    assert p.f_gap(w) == pytest.approx(p.f(w) - p.f_star, abs=tol)
    assert p.grad_f_sq(w) == pytest.approx(float(np.sum(p.grad_f(w) ** 2)), rel=1e-12, abs=tol)
    g = p.grad_F_maml(w, alpha)
    assert p.grad_F_maml_sq(w, alpha) == pytest.approx(float(g @ g), rel=1e-12, abs=tol)
    g = p.grad_F_me(w, lam)
    assert p.grad_F_me_sq(w, lam) == pytest.approx(float(g @ g), rel=1e-12, abs=tol)
    assert p.dist_sq(w) == pytest.approx(float(np.sum((w - p.x_star) ** 2)), rel=1e-14)


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 4), st.booleans(),
       st.floats(0.0, 1.0))
def test_maml_gradient_vs_central_finite_differences(seed, n, d, shared, alpha):
    """grad F^(b) closed form vs central differences of F_maml: error < 1e-8."""
    p, *_ = _instance(seed, n, d, shared)
    w = np.random.default_rng(seed).normal(size=d)
    h = 1e-4
    fd = np.array([(p.F_maml(w + h * e, alpha) - p.F_maml(w - h * e, alpha)) / (2 * h)
                   for e in np.eye(d)])
    assert np.max(np.abs(fd - p.grad_F_maml(w, alpha))) < 1e-8
    # and vs the generic base-class F_maml (independent of the closed form)
    fd2 = np.array([(Problem.F_maml(p, w + h * e, alpha) - Problem.F_maml(p, w - h * e, alpha))
                    / (2 * h) for e in np.eye(d)])
    assert np.max(np.abs(fd2 - p.grad_F_maml(w, alpha))) < 1e-8


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 4), st.floats(0.1, 30.0))
def test_moreau_closed_forms_vs_linear_solve_and_minimize(seed, n, d, lam):
    """theta_hat, F^(c), grad F^(c) vs an independent solve: errors < 1e-12 (scaled)."""
    p, mats, b, c, _ = _instance(seed, n, d, shared=False)
    w = np.random.default_rng(seed).normal(size=d) * 2
    tot_f, tot_g = 0.0, np.zeros(d)
    for i in range(n):
        th_solve = scipy.linalg.solve(mats[i] + lam * np.eye(d), mats[i] @ b[i] + lam * w,
                                      assume_a="pos")
        th = p.theta_hat(i, w, lam)
        assert np.max(np.abs(th - th_solve)) < 1e-12 * (1 + np.max(np.abs(th_solve)))
        r = th_solve - b[i]
        tot_f += 0.5 * r @ mats[i] @ r + c[i] + 0.5 * lam * np.sum((th_solve - w) ** 2)
        tot_g += lam * (w - th_solve)  # envelope identity
    scale = 1 + abs(tot_f / n) + np.max(np.abs(tot_g / n))
    assert abs(p.F_me(w, lam) - tot_f / n) < 1e-12 * scale
    assert np.max(np.abs(p.grad_F_me(w, lam) - tot_g / n)) < 1e-12 * scale
    # finite differences of F^(c) (tolerance for the O(eps/h) rounding of a quadratic)
    h = 1e-4
    fd = np.array([(p.F_me(w + h * e, lam) - p.F_me(w - h * e, lam)) / (2 * h)
                   for e in np.eye(d)])
    assert np.max(np.abs(fd - p.grad_F_me(w, lam))) < 1e-8


def test_theta_hat_vs_scipy_minimize():
    p, mats, b, c, _ = _instance(7, 3, 3, shared=False)
    w, lam = np.array([0.3, -1.0, 2.0]), 4.0
    for i in range(3):
        def obj(t, i=i):
            r = t - b[i]
            return 0.5 * r @ mats[i] @ r + 0.5 * lam * (t - w) @ (t - w)

        res = scipy.optimize.minimize(
            obj, w, jac=lambda t, i=i: mats[i] @ (t - b[i]) + lam * (t - w),
            hess=lambda t, i=i: mats[i] + lam * np.eye(3), method="trust-exact",
            options={"gtol": 1e-14})
        assert np.max(np.abs(res.x - p.theta_hat(i, w, lam))) < 1e-12


# --------------------------------------------------------------------------------------------
# exact constants recomputed independently (THEORY_SPEC 12 item 2)
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 4), st.booleans(),
       st.booleans(), st.sampled_from(["additive", "sampling"]),
       st.sampled_from([1e-3, 1.0, 1e3]))
def test_exact_constants_recomputed_independently(seed, n, d, shared, singular, noise, scale):
    p, mats, b, c, covs = _instance(seed, n, d, shared, noise=noise, singular=singular,
                                    scale=scale)
    t = p.constants
    eig = [np.sort(np.real(np.linalg.eigvals(a))) for a in mats]  # general (non-symmetric) routine
    top = max(e[-1] for e in eig)
    assert t.value("L") == pytest.approx(top, rel=1e-10, abs=1e-10 * top)
    assert t.value("mu") == pytest.approx(max(min(e[0] for e in eig), 0.0), abs=1e-10 * top)
    cmat = covs if noise == "additive" else [a @ s @ a for a, s in zip(mats, covs, strict=True)]
    assert t.value("sigma_g2") == pytest.approx(max(np.trace(x) for x in cmat), rel=1e-12)
    abar = sum(mats) / n
    gh = np.mean([np.linalg.norm(a - abar, 2) ** 2 for a in mats])
    assert t.value("gamma_h2") == pytest.approx(gh, rel=1e-9, abs=1e-12 * top ** 2)
    # x* by least squares (min-norm), f* by direct evaluation
    xs = np.linalg.lstsq(abar, sum(a @ bi for a, bi in zip(mats, b, strict=True)) / n,
                         rcond=None)[0]
    assert np.allclose(p.x_star, xs, atol=1e-8 * (1 + np.abs(xs).max()))
    fx = np.mean([0.5 * (xs - bi) @ a @ (xs - bi) + ci
                  for a, bi, ci in zip(mats, b, c, strict=True)])
    assert t.value("f_star_A") == pytest.approx(fx, abs=1e-9 * (1 + abs(fx)))
    assert t.value("f_star_P") == np.min(c)
    rng = np.random.default_rng(seed)
    for _ in range(3):  # f* is a lower bound on f
        assert p.f(rng.normal(size=d) * 5) >= t.value("f_star_A") - 1e-10 * (1 + abs(fx))
    assert np.allclose(p.grad_f(p.x_star), 0.0, atol=1e-10 * (1 + top * np.abs(b).max()))
    assert t.value("zeta") == pytest.approx(max(np.linalg.norm(p.x_star - bi) for bi in b),
                                            rel=1e-12)
    # gamma_g2 by brute averaging at random w
    ws = [rng.normal(size=d) * s for s in (0.1, 10.0, 1e3)]
    brute = [np.mean([np.sum((p.grad(i, w) - p.grad_f(w)) ** 2) for i in range(n)])
             for w in ws]
    assert p.shared_hessian == (shared or n == 1)
    if p.shared_hessian:
        assert t["gamma_g2"].tag is Tag.EXACT
        for v in brute:
            assert v == pytest.approx(t.value("gamma_g2"), rel=1e-8, abs=1e-10 * top ** 2)
    else:
        assert t["gamma_g2"].tag is Tag.INFINITE
        # sup is +inf: the diversity grows without bound along the direction of H_gam
        hg = sum((a - abar) @ (a - abar) for a in mats) / n
        ev, vec = np.linalg.eigh(hg)
        if ev[-1] > 1e-12 * top ** 2:
            far = p.x_star + 1e6 * vec[:, -1]
            v = np.mean([np.sum((p.grad(i, far) - p.grad_f(far)) ** 2) for i in range(n)])
            assert v >= 0.5 * 1e12 * ev[-1]


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 5), st.booleans(),
       st.floats(1e-3, 1.0), st.floats(1.0, 100.0))
def test_random_generator_hits_mu_and_L(seed, n, d, shared, frac, L):
    # one matrix of dimension 1 cannot carry two different eigenvalues
    mu = L if d == 1 and (shared or n == 1) else frac * L
    p = QuadraticProblem.random(n, d, mu, L, shared_hessian=shared, seed=seed)
    eig = np.concatenate([scipy.linalg.eigvalsh(a) for a in p.A])
    assert abs(eig.max() - L) <= 1e-10 * L and abs(eig.min() - mu) <= 1e-10 * L
    assert abs(p.constants.value("L") - L) <= 1e-10 * L
    assert abs(p.constants.value("mu") - mu) <= 1e-10 * L
    assert eig.min() >= mu - 1e-10 * L and eig.max() <= L + 1e-10 * L
    if shared or n == 1:
        assert p.shared_hessian
    elif mu != L:  # (mu == L gives L*I for every client, equal or not up to rounding)
        assert not p.shared_hessian
    assert np.allclose(p.noise_cov[0], 0.01 * np.eye(d), rtol=1e-15, atol=0)
    q = QuadraticProblem.random(n, d, mu, L, shared_hessian=shared, seed=seed)
    assert np.array_equal(p.A_stack, q.A_stack) and np.array_equal(p.b_stack, q.b_stack)


# --------------------------------------------------------------------------------------------
# Lemma constants dominate the exact ones (THEORY_SPEC 4.c, 5.c inline; 12 item 2)
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 4), st.floats(0.0, 2.0),
       st.floats(1.05, 30.0), st.integers(1, 64), st.sampled_from(["additive", "sampling"]))
def test_lemma_constants_dominate_exact_constants(seed, n, d, alpha_L, lam_L, bsize, noise):
    p, *_ = _instance(seed, n, d, shared=True, noise=noise)
    t = p.constants
    L, sg2, gg2 = t.value("L"), t.value("sigma_g2"), t.value("gamma_g2")
    if L == 0.0:
        return
    alpha, lam = alpha_L / L, lam_L * L
    m, e = p.maml(alpha), p.me(lam)
    tol = 1 + 1e-12
    # Lemma 1 (rho = 0): L_b = L (1 + alpha L)^2
    assert L * (1 + alpha * L) ** 2 * tol >= m.L_true
    # Lemma 2 (sigma_h = 0): sigma_b2 = 3 (1+aL)^2 sigma_g2 (1/b + a^2 L^2/b); bias 0 <= mu_b
    sigma_b2 = 3 * (1 + alpha * L) ** 2 * sg2 * (1 / bsize + alpha ** 2 * L ** 2 / bsize)
    assert sigma_b2 * tol >= m.estimator_mse(bsize, bsize)
    assert m.bias == 0.0 <= alpha * L * (1 + alpha * L) * math.sqrt(sg2 / bsize)
    # Lemma 3 (gamma_h = 0 for shared A): gamma_b2 = 12 (1+aL)^2 (1+a^2L^2) gamma_g2
    assert 12 * (1 + alpha * L) ** 2 * (1 + alpha ** 2 * L ** 2) * gg2 * tol + 1e-300 \
        >= m.gamma2_true
    # Lemma 5 (default kappa = lam/L): L_c = lam L/(lam - L)
    assert lam * L / (lam - L) * tol >= e.L_true
    # Lemma 6 (nu = 0): sigma_c2 = 2 lam^2/(lam-L)^2 sigma_g2/b
    assert 2 * lam ** 2 / (lam - L) ** 2 * sg2 / bsize * tol >= e.estimator_mse(bsize)
    # Lemma 7 (lam >= 7L): gamma_c2 = 16 lam^2/(lam^2 - 48 L^2) gamma_g2
    if lam >= 7 * L:
        assert 16 * lam ** 2 / (lam ** 2 - 48 * L ** 2) * gg2 * tol + 1e-300 >= e.gamma2_true


def test_exact_smoothness_of_personalised_objectives_is_attained():
    """L_true is the largest Hessian eigenvalue of each F_i^(b), F_i^(c) (not a bound)."""
    p = QuadraticProblem.random(3, 4, 0.5, 4.0, shared_hessian=False, seed=2)
    for alpha in (0.0, 0.1, 0.6):
        m = p.maml(alpha)
        ev = max(np.linalg.eigvalsh(a @ (np.eye(4) - alpha * a) @ (np.eye(4) - alpha * a))[-1]
                 for a in p.A)
        assert m.L_true == pytest.approx(ev, rel=1e-12)
    lam = 30.0
    ev = max(np.linalg.eigvalsh(lam * a @ np.linalg.inv(a + lam * np.eye(4)))[-1] for a in p.A)
    assert p.me(lam).L_true == pytest.approx(ev, rel=1e-12)


# --------------------------------------------------------------------------------------------
# stochastic oracles: Monte Carlo with stated false-alarm rates
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["additive", "sampling"])
def test_batch_grad_noise_covariance_matches_C_over_m(noise):
    """Sample covariance of batch_grad - grad vs C_i/m.

    Each of the d(d+1)/2 entries is standardised with its exact Gaussian standard error
    sqrt((C_jj C_kk + C_jk^2)/N) (known zero mean) and must satisfy |z| < 4.5; per entry the
    two-sided false-alarm rate is 6.8e-6, so <= 1e-4 overall (Bonferroni over 6 entries x 2
    clients x 2 models).  The mean is checked the same way.  Seeds are fixed.
    """
    d, m, N = 3, 5, 20_000
    p, *_ = _instance(11, 2, d, shared=False, noise=noise)
    rng = np.random.default_rng(123)
    w = np.array([0.5, -1.0, 2.0])
    for i in range(2):
        g = p.grad(i, w)
        x = np.array([p.batch_grad(i, w, p.sample_batch(i, m, rng)) - g for _ in range(N)])
        C = p.grad_noise_cov(i) / m
        emp = x.T @ x / N
        se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C ** 2) / N)
        z = (emp - C) / se
        assert np.max(np.abs(z[np.triu_indices(d)])) < 4.5
        zm = x.mean(axis=0) / np.sqrt(np.diag(C) / N)
        assert np.max(np.abs(zm)) < 4.5


def test_covariance_check_detects_wrong_batch_scaling():
    """Negative control: the same statistic flags noise scaled as C_i (batch size ignored)."""
    d, m, N = 3, 5, 20_000
    p, *_ = _instance(11, 2, d, shared=False)
    rng = np.random.default_rng(5)
    x = np.array([p.sample_batch(0, 1, rng) for _ in range(N)])  # size-1 batches
    C = p.grad_noise_cov(0) / m
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C ** 2) / N)
    assert np.max(np.abs((x.T @ x / N - C) / se)) > 4.5


@pytest.mark.parametrize("noise", ["additive", "sampling"])
def test_option_b_and_c_estimators_match_exact_mse_and_are_unbiased(noise):
    """Option-B/C estimates built from batches: mean error 0, mean ||err||^2 = MSE, covariance.

    z-tests with |z| < 4.5 (two-sided false alarm 6.8e-6 each; 3 coordinates + 1 MSE + 6
    covariance entries per option and model, so < 3e-4 overall, CLT approximation with
    N = 20000).  Seeds are fixed.
    """
    d, N, alpha, lam, bo, bi = 3, 20_000, 0.3, 6.0, 2, 3
    p, *_ = _instance(4, 2, d, shared=False, noise=noise)
    rng = np.random.default_rng(99)
    w = np.array([1.0, 0.0, -0.5])
    i = 1
    exact_b = p.maml(alpha).H[i] @ (w - p.b[i])
    exact_c = p.me(lam).H[i] @ (w - p.b[i])
    eb, ec = np.empty((N, d)), np.empty((N, d))
    for k in range(N):
        Dp, D, Dpp = (p.sample_batch(i, bi, rng), p.sample_batch(i, bo, rng),
                      p.sample_batch(i, bo, rng))
        inner = w - alpha * p.batch_grad(i, w, Dp)
        g = p.batch_grad(i, inner, D)
        eb[k] = g - alpha * p.batch_hvp(i, w, g, Dpp) - exact_b
        th = p.batch_theta_hat(i, w, lam, p.sample_batch(i, bo, rng))
        ec[k] = lam * (w - th) - exact_c
    for err, mse in ((eb, p.maml(alpha).estimator_mse_clients(bo, bi)[i]),
                     (ec, p.me(lam).estimator_mse_clients(bo)[i])):
        sq = np.sum(err ** 2, axis=1)
        assert abs(sq.mean() - mse) / (sq.std() / math.sqrt(N)) < 4.5
        # full covariance (errors are Gaussian): entrywise z with the exact standard error
        cov = (p.maml(alpha).estimator_cov(i, bo, bi) if err is eb
               else p.me(lam).estimator_cov(i, bo))
        assert np.trace(cov) == pytest.approx(mse, rel=1e-12)
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / N)
        assert np.max(np.abs(((err.T @ err) / N - cov) / se)[np.triu_indices(d)]) < 4.5
        zm = err.mean(axis=0) / (err.std(axis=0) / math.sqrt(N))
        assert np.max(np.abs(zm)) < 4.5


@pytest.mark.parametrize("noise", ["additive", "sampling"])
def test_batch_theta_hat_solves_the_stochastic_inner_problem(noise):
    """Option C: the returned theta zeroes grad f_tilde_i(theta, D) + lam (theta - w)."""
    p, *_ = _instance(8, 3, 4, shared=False, noise=noise)
    rng = np.random.default_rng(0)
    w, lam = rng.normal(size=4), 3.0
    for i in range(3):
        D = p.sample_batch(i, 2, rng)
        th = p.batch_theta_hat(i, w, lam, D)
        assert np.max(np.abs(p.batch_grad(i, th, D) + lam * (th - w))) < 1e-12
        if noise == "additive":  # f_tilde(theta, D) = f_i(theta) + e_D^T theta
            assert np.allclose(p.batch_grad(i, th, D), p.grad(i, th) + D, atol=1e-14)
        r = rng.normal(size=4)  # controlled inexactness: grad h_tilde = r exactly
        th = p.batch_theta_hat(i, w, lam, D, residual=r)
        assert np.max(np.abs(p.batch_grad(i, th, D) + lam * (th - w) - r)) < 1e-12


def test_sample_batch_is_deterministic_in_the_generator_and_shapes():
    p = QuadraticProblem.random(2, 3, 0.5, 2.0, noise="sampling", seed=1)
    a = p.sample_batch(0, 4, np.random.default_rng(7))
    b = p.sample_batch(0, 4, np.random.default_rng(7))
    assert a.shape == (3,) and a.dtype == np.float64 and np.array_equal(a, b)
    det = QuadraticProblem([np.eye(2)], [[1.0, 2.0]])  # default noise_cov = 0: exact oracle
    assert np.array_equal(det.batch_grad(0, np.zeros(2), det.sample_batch(0, 3, np.random
                                                                          .default_rng(0))),
                          det.grad(0, np.zeros(2)))


def test_internal_arrays_are_read_only():
    p = QuadraticProblem.random(2, 2, 0.5, 2.0, seed=0)
    with pytest.raises(ValueError):
        p.hess(0, np.zeros(2))[0, 0] = 5.0
    with pytest.raises(ValueError):
        p.x_star[0] = 1.0


# --------------------------------------------------------------------------------------------
# local (heuristic) diagnostics: exact trust-region maximum
# --------------------------------------------------------------------------------------------
def _grid_max(H, h, k, R, num=200_001):
    th = np.linspace(0, 2 * np.pi, num)
    V = R * np.stack([np.cos(th), np.sin(th)], axis=1)
    return np.max(np.einsum("ni,ij,nj->n", V, H, V) + 2 * V @ h + k)


@SETTINGS
@given(st.integers(0, 10_000), st.floats(0.01, 100.0))
@example(827, 95.5)  # the root t was 3e-12 short: ||v(t)|| < R lowered the value to 1st order
def test_max_quadratic_on_ball_vs_dense_grid(seed, R):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2, 2))
    H, h, k = X @ X.T, rng.normal(size=2), float(rng.normal())
    exact = max_quadratic_on_ball(H, h, k, R)
    grid = _grid_max(H, h, k, R)
    scale = np.linalg.norm(H, 2) * R * R + np.linalg.norm(h) * R + abs(k)
    assert exact >= grid - 1e-12 * scale
    assert exact <= grid + 1e-8 * scale


def test_max_quadratic_on_ball_hard_case_and_degenerate():
    H, h = np.diag([1.0, 3.0]), np.array([1.0, 0.0])  # h orthogonal to the top eigenvector
    # v1 = 1/(3-1) = 0.5, the rest of R^2 = 100 on e2: 0.25 + 2*0.5 + 3*99.75 + k
    assert max_quadratic_on_ball(H, h, 2.0, 10.0) == pytest.approx(0.25 + 1 + 299.25 + 2,
                                                                    rel=1e-14)
    assert max_quadratic_on_ball(H, h, 2.0, 10.0) == pytest.approx(_grid_max(H, h, 2.0, 10.0),
                                                                    rel=1e-9)
    assert max_quadratic_on_ball(np.zeros((2, 2)), np.array([3.0, 4.0]), 1.0, 2.0) == \
        pytest.approx(1 + 2 * 5 * 2, rel=1e-14)
    assert max_quadratic_on_ball(H, np.zeros(2), 1.0, 2.0) == pytest.approx(13.0, rel=1e-14)
    assert max_quadratic_on_ball(H, h, 1.0, 0.0) == 1.0


def test_local_diagnostics():
    ps = QuadraticProblem.random(4, 3, 0.5, 2.0, shared_hessian=True, seed=4)
    for R in (0.0, 1.0, 10.0):  # shared A: diversity is constant, local = global
        assert ps.local_gamma_g2(R) == pytest.approx(ps.constants.value("gamma_g2"), rel=1e-12)
    p = QuadraticProblem.random(4, 2, 0.5, 2.0, shared_hessian=False, seed=4)
    rng = np.random.default_rng(0)
    vals = [p.local_gamma_g2(R) for R in (0.0, 0.5, 2.0, 8.0)]
    assert vals[0] == pytest.approx(np.mean(np.sum(p.grad_at_xstar ** 2, axis=1)), rel=1e-12)
    assert all(a <= b for a, b in zip(vals, vals[1:], strict=False))
    for _ in range(200):  # sampled points in the ball never exceed the maximum
        v = rng.normal(size=2)
        w = p.x_star + 2.0 * rng.uniform() * v / np.linalg.norm(v)
        div = np.mean([np.sum((p.grad(i, w) - p.grad_f(w)) ** 2) for i in range(p.n)])
        gmax = max(np.linalg.norm(p.grad(i, w)) for i in range(p.n))
        assert div <= vals[2] * (1 + 1e-12)
        assert gmax <= p.local_G(2.0) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------
# bad problems raise ConfigError naming field, value and rule
# --------------------------------------------------------------------------------------------
def test_indefinite_rejected_with_min_eigenvalue():
    with pytest.raises(ConfigError, match=r"A\[1\] must be positive semidefinite, got min "
                                          r"eigenvalue -0.5"):
        QuadraticProblem([np.eye(2), np.diag([1.0, -0.5])], np.zeros((2, 2)))


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(A=[[[1.0, 1.0], [0.0, 1.0]]], b=[[0.0, 0.0]]), r"A\[0\] must be symmetric"),
    (dict(A=[np.eye(2), np.eye(3)], b=np.zeros((2, 2))), r"A\[1\]\.shape"),
    (dict(A=[np.ones((2, 3))], b=np.zeros((1, 2))), r"A\[0\]\.shape .*square"),
    (dict(A=[np.eye(2)], b=np.zeros((1, 3))), r"b\.shape"),
    (dict(A=[np.eye(2)] * 2, b=np.zeros((3, 2))), r"b\.shape"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0, 2.0]]), r"b\.shape"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], c=[1.0, 2.0]), r"c\.shape"),
    (dict(A=[np.diag([1.0, np.nan])], b=[[0.0, 1.0]]), r"A\[0\] must be finite"),
    (dict(A=[np.diag([1.0, np.inf])], b=[[0.0, 1.0]]), r"A\[0\] must be finite"),
    (dict(A=[np.eye(2)], b=[[0.0, np.inf]]), r"b must be finite"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], c=[np.nan]), r"c must be finite"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], noise_cov=np.diag([1.0, np.nan])),
     r"noise_cov\[0\] must be finite"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], noise_cov=-np.eye(2)),
     r"noise_cov\[0\] must be positive semidefinite, got min eigenvalue -1"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], noise_cov=[[1.0, 2.0], [0.0, 1.0]]),
     r"noise_cov\[0\] must be symmetric"),
    (dict(A=[np.eye(2)] * 2, b=np.zeros((2, 2)), noise_cov=[np.eye(2)] * 3),
     r"len\(noise_cov\) must equal the number of clients n = 2"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], noise_cov=np.eye(3)), r"noise_cov\[0\]\.shape"),
    (dict(A=[np.eye(2)], b=[[0.0, 1.0]], noise="gaussian"),
     r"noise must be one of \['additive', 'sampling'\], got noise='gaussian'"),
    (dict(A=[], b=[]), r"A must hold at least one matrix"),
    (dict(A=[np.eye(2)], b=[[0.0], [1.0, 2.0]]), r"^b must be"),
])
def test_bad_problems_raise_config_error(kwargs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        QuadraticProblem(**kwargs)


def test_bad_arguments_of_methods_and_generator():
    p = QuadraticProblem.random(2, 2, 0.5, 2.0, seed=0)
    with pytest.raises(ConfigError, match="alpha must be a finite number >= 0, got alpha=-0.1"):
        p.maml(-0.1)
    with pytest.raises(ConfigError, match="lam must be a finite number > 0, got lam=0.0"):
        p.me(0.0)
    with pytest.raises(ConfigError, match="batch size must be an integer >= 1, got batch size=0"):
        p.sample_batch(0, 0, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="batch size"):
        p.maml(0.1).estimator_mse(0, 1)
    with pytest.raises(ConfigError, match=r"mu must be in \[0, L=1.0\], got mu=2.0"):
        QuadraticProblem.random(2, 2, 2.0, 1.0)
    with pytest.raises(ConfigError, match="dim must be >= 2"):
        QuadraticProblem.random(2, 1, 0.5, 1.0)
    with pytest.raises(ConfigError, match="noise must be one of"):
        QuadraticProblem.random(2, 2, 0.5, 1.0, noise="x")
    with pytest.raises(ConfigError, match="L must be a number, got L='2'"):
        QuadraticProblem.random(2, 2, 0.5, "2")
    with pytest.raises(ConfigError, match="shared_hessian must be a bool"):
        QuadraticProblem.random(2, 2, 0.5, 2.0, shared_hessian="yes")
    with pytest.raises(ConfigError, match="n must be an integer >= 1, got n=0"):
        QuadraticProblem.random(0, 2, 0.5, 2.0)
    with pytest.raises(ConfigError, match="R must be finite and >= 0"):
        p.local_gamma_g2(-1.0)


def test_sampling_model_per_sample_loss_averages_to_f_i():
    """E ell_i(w, xi) = f_i(w) with ell_i = 0.5 (w-xi)^T A_i (w-xi) + c_i', xi ~ N(b_i, S_i).

    z-test |z| < 4.5 (two-sided false-alarm rate 6.8e-6 per client, 2 clients), N = 20000.
    """
    p, mats, b, c, covs = _instance(21, 2, 3, shared=False, noise="sampling")
    rng = np.random.default_rng(3)
    w = np.array([0.2, 1.0, -1.0])
    for i in range(2):
        xi = rng.multivariate_normal(b[i], covs[i], size=20_000)
        r = w - xi
        ell = 0.5 * np.einsum("ni,ij,nj->n", r, mats[i], r) + p.per_sample_c[i]
        assert abs(ell.mean() - p.loss(i, w)) / (ell.std() / math.sqrt(len(ell))) < 4.5
    assert np.allclose(p.per_sample_c, c - 0.5 * np.array([np.trace(a @ s) for a, s in
                                                          zip(mats, covs, strict=True)]))


def test_rank_deficient_hessians_give_mu_exactly_zero_and_min_norm_minimiser():
    x = np.array([[1.0], [2.0], [-1.0]])
    A = x @ x.T  # rank 1: two eigenvalues are 0 up to rounding
    p = QuadraticProblem([A, 2 * A], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert p.constants.value("mu") == 0.0
    assert p.constants.value("L") == pytest.approx(12.0, rel=1e-14)
    # min-norm minimiser lies in range(Abar) = span(x)
    assert np.allclose(np.cross(p.x_star, x[:, 0]), 0.0, atol=1e-14)
    assert np.allclose(p.grad_f(p.x_star), 0.0, atol=1e-13)
    assert p.f_gap(p.x_star + np.array([2.0, -1.0, 0.0])) == pytest.approx(0.0, abs=1e-13)


def test_estimator_covariances_vs_direct_matrix_formulas():
    """THEORY_SPEC 10.2 per-step covariances, recomputed with explicit inverses."""
    for noise in ("additive", "sampling"):
        p, mats, b, c, covs = _instance(5, 3, 3, shared=False, noise=noise)
        alpha, lam, bo, bi = 0.2, 8.0, 3, 7
        for i in range(3):
            a, C = mats[i], p.grad_noise_cov(i)
            P = np.eye(3) - alpha * a
            cov_b = P @ (C / bo + alpha ** 2 * a @ C @ a / bi) @ P
            K = lam * np.linalg.inv(a + lam * np.eye(3))
            cov_c = K @ C @ K / bo
            assert np.allclose(p.maml(alpha).estimator_cov(i, bo, bi), cov_b, rtol=1e-12,
                               atol=1e-14)
            assert np.allclose(p.me(lam).estimator_cov(i, bo), cov_c, rtol=1e-12, atol=1e-14)
            assert p.maml(alpha).estimator_mse_clients(bo, bi)[i] == pytest.approx(
                np.trace(cov_b), rel=1e-12)
            assert p.me(lam).estimator_mse_clients(bo)[i] == pytest.approx(np.trace(cov_c),
                                                                           rel=1e-12)
