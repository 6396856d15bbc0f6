"""LogisticProblem: oracles, the THEORY_SPEC 9.2 constants, solvers and certificates (9.4)."""

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.special import expit
from scipy.stats import chisquare

from fedsim.errors import ConfigError, FedsimError
from fedsim.problems.constants import Tag
from fedsim.problems.logistic import (
    S2_SUP,
    Z_S2_ARGMAX,
    LogisticProblem,
    newton_minimize,
)

# 8th-order central difference: error O(h^8), round-off O(eps/h)
_C8 = (4 / 5, -1 / 5, 4 / 105, -1 / 280)


def fd_grad(fun, w, h):
    g = np.zeros_like(w)
    for k in range(w.size):
        e = np.zeros_like(w)
        e[k] = h
        g[k] = sum(c * (fun(w + (j + 1) * e) - fun(w - (j + 1) * e)) for j, c in enumerate(_C8))
        g[k] /= h
    return g


def random_problem(seed, n, d, m_max, scale, nu, anchors=False):
    rng = np.random.default_rng(seed)
    X = [scale * rng.normal(size=(int(rng.integers(1, m_max + 1)), d)) for _ in range(n)]
    y = [rng.choice([-1.0, 1.0], size=x.shape[0]) for x in X]
    if anchors:
        X = [np.vstack([x, np.eye(d), np.eye(d)]) for x in X]
        y = [np.concatenate([t, np.ones(d), -np.ones(d)]) for t in y]
    return LogisticProblem(X, y, nu_reg=nu), rng


def s2(z):
    s = expit(z)
    return s * (1 - s) * (1 - 2 * s)


# ---- sup |s''| (THEORY_SPEC 9.2 derivations, 12 item 3) -----------------------------------
def test_sup_abs_s2_numerically_and_closed_form():
    res = minimize_scalar(lambda z: -abs(s2(z)), bounds=(0.0, 5.0), method="bounded",
                          options={"xatol": 1e-12})
    assert abs(-res.fun - S2_SUP) <= 1e-12
    assert abs(res.x - Z_S2_ARGMAX) <= 1e-5  # argmax is flat: value error ~ (arg error)^2
    assert abs(abs(s2(Z_S2_ARGMAX)) - S2_SUP) <= 1e-15
    assert abs(abs(s2(-Z_S2_ARGMAX)) - S2_SUP) <= 1e-15
    assert abs(S2_SUP - 0.0962250448649376) <= 1e-16
    grid = np.linspace(-20, 20, 400001)
    assert np.max(np.abs(s2(grid))) <= S2_SUP * (1 + 1e-15)


# ---- a hand-computed instance ----------------------------------------------------------------
def test_hand_computed_one_dimensional_client():
    """d=1, rows x = 1, -2, labels +1, +1: f(w) = (log(1+e^-w) + log(1+e^{2w}))/2."""
    p = LogisticProblem([np.array([[1.0], [-2.0]])], [np.array([1.0, 1.0])])
    w0 = np.zeros(1)
    assert p.loss(0, w0) == pytest.approx(math.log(2), abs=1e-15)
    assert p.grad(0, w0)[0] == pytest.approx(0.25, abs=1e-15)
    assert p.hess(0, w0)[0, 0] == pytest.approx(0.625, abs=1e-15)
    c = p.constants
    assert c["L"].value == pytest.approx(0.625, rel=1e-14) and c["L"].tag is Tag.EXACT
    assert c["mu"].value == 0.0 and c["mu"].tag is Tag.EXACT
    assert c["rho"].value == pytest.approx(4.5 / (6 * math.sqrt(3)), rel=1e-14)
    assert c["G"].value == pytest.approx(1.5, rel=1e-14) and c["G"].tag is Tag.UPPER
    assert c["B"].value == c["G"].value
    assert c["sigma_g2"].value == pytest.approx(2.5, rel=1e-14)
    assert c["sigma_h2"].value == pytest.approx(17 / 32, rel=1e-14)
    assert c["gamma_g2"].value == pytest.approx(2.25, rel=1e-14)
    assert c["gamma_h2"].value == pytest.approx(0.625 ** 2, rel=1e-14)
    # minimiser: s(-w) = 2 s(2w), solved independently by bracketing
    w_star = brentq(lambda w: -expit(-w) + 2 * expit(2 * w), -5, 5, xtol=1e-15)
    x, fstar, cert = p.solve_global()
    assert abs(x[0] - w_star) <= 1e-13
    assert cert.valid and cert.dist_bound < 1e-12
    f_hand = 0.5 * (math.log1p(math.exp(-w_star)) + math.log1p(math.exp(2 * w_star)))
    assert abs(fstar - f_hand) <= 1e-15
    assert c["f_star_A"].value == pytest.approx(f_hand, abs=1e-15)
    assert c["f_star_P"].value == pytest.approx(f_hand, abs=1e-15)
    assert c["zeta"].value <= 1e-12  # one client: u_1* = x*


def test_hand_computed_regularised_constants():
    p = LogisticProblem([np.array([[1.0], [-2.0]])], [np.array([1.0, 1.0])], nu_reg=0.5)
    c = p.constants
    assert c["L"].value == pytest.approx(1.125, rel=1e-14)
    assert c["mu"].value == 0.5 and c["mu"].tag is Tag.EXACT
    assert c["G"].tag is Tag.INFINITE and math.isinf(c["G"].value)
    assert c["B"].tag is Tag.INFINITE
    assert c["gamma_g2"].value == pytest.approx(2.25, rel=1e-14)  # nu_reg w cancels
    assert p.grad(0, np.array([2.0]))[0] == pytest.approx(
        -0.5 * expit(-2.0) + expit(4.0) + 1.0, rel=1e-14)


# ---- constants dominate sampled quantities (THEORY_SPEC 12 item 3) ---------------------------
instances = st.tuples(st.integers(0, 10**6), st.integers(1, 3), st.integers(1, 4),
                      st.integers(1, 10), st.sampled_from([0.1, 0.7, 1.0, 3.0]),
                      st.sampled_from([0.0, 0.3]))


@settings(max_examples=40, deadline=None)
@given(instances)
def test_L_attained_at_zero_and_mu_is_infimum(inst):
    p, rng = random_problem(*inst)
    nu = p.nu_reg
    for i in range(p.n):
        lmax = np.linalg.eigvalsh(p.hess(i, np.zeros(p.dim)))[-1]
        assert abs(lmax - p.L_i[i]) <= 1e-10 * max(1.0, p.L_i[i])
        for _ in range(3):
            w = rng.normal(size=p.dim) * 3
            ev = np.linalg.eigvalsh(p.hess(i, w))
            assert ev[-1] <= p.L_i[i] * (1 + 1e-12)
            assert ev[0] >= nu - 1e-12
        # inf over w is nu_reg: along a generic direction u every margin grows, s' -> 0
        u = rng.normal(size=p.dim)
        proj = np.abs(p.X[i] @ u)
        t = 60.0 / np.min(proj[proj > 0]) if np.any(proj > 0) else 1.0
        far = np.linalg.eigvalsh(p.hess(i, t * u))
        assert far[-1] - nu <= 1e-14 * max(1.0, p.L_i[i])  # s'(60) ~ 1e-26, + eigvalsh round-off
    assert p.constants["L"].value == pytest.approx(np.max(p.L_i), rel=1e-15)


@settings(max_examples=40, deadline=None)
@given(instances)
def test_sampled_quantities_below_upper_constants(inst):
    """G, rho, sigma_g2, sigma_h2, gamma_g2, gamma_h2 dominate sampled values (9.2)."""
    p, rng = random_problem(*inst)
    dc = p._data_constants()  # the per-instance values; the table entries are checked below
    tab = {k: v for k, v in zip(
        ["rho", "G", "sigma_g2", "sigma_h2", "gamma_g2", "gamma_h2"],
        [float(np.max(dc["rho"])), float(np.max(dc["G"])), float(np.max(dc["sigma_g2"])),
         float(np.max(dc["sigma_h2"])), float(np.mean(dc["G"] ** 2)),
         float(np.max(dc["l_data"])) ** 2], strict=True)}
    tol = 1 + 1e-12
    for _ in range(4):
        sc = rng.choice([0.1, 1.0, 5.0])
        w = sc * rng.normal(size=p.dim)
        u = w + rng.choice([1e-3, 0.1, 2.0]) * rng.normal(size=p.dim)
        grads = np.array([p.grad(i, w) for i in range(p.n)])
        if p.nu_reg == 0.0:
            assert np.max(np.linalg.norm(grads, axis=1)) <= tab["G"] * tol
        gbar = grads.mean(axis=0)
        assert np.mean(np.sum((grads - gbar) ** 2, axis=1)) <= tab["gamma_g2"] * tol + 1e-15
        Hs = [p.hess(i, w) for i in range(p.n)]
        Hbar = np.mean(Hs, axis=0)
        div_h = np.mean([np.linalg.norm(H - Hbar, 2) ** 2 for H in Hs])
        assert div_h <= tab["gamma_h2"] * tol + 1e-15
        for i in range(p.n):
            ratio = np.linalg.norm(p.hess(i, w) - p.hess(i, u), 2) / np.linalg.norm(w - u)
            assert ratio <= tab["rho"] * tol
            rows = p.y[i][:, None] * p.X[i]
            z = rows @ w
            per_g = -(expit(-z)[:, None] * rows) + p.nu_reg * w
            assert np.allclose(per_g.mean(axis=0), grads[i], rtol=1e-12, atol=1e-14)
            var_g = np.mean(np.sum((per_g - grads[i]) ** 2, axis=1))
            assert var_g <= tab["sigma_g2"] * tol
            sp = expit(z) * expit(-z)
            per_h = sp[:, None, None] * np.einsum("ja,jb->jab", p.X[i], p.X[i])
            var_h = np.mean(np.sum((per_h - per_h.mean(axis=0)) ** 2, axis=(1, 2)))
            assert var_h <= tab["sigma_h2"] * tol
    for k, v in tab.items():
        if k in p.constants and p.constants[k].tag is not Tag.INFINITE:
            assert p.constants[k].value == v and p.constants[k].tag is Tag.UPPER


def test_rho_bound_is_nearly_attained_on_one_row():
    """One row x = e_1: the Hessian is s'(w_1); its Lipschitz constant is sup|s''| = rho."""
    p = LogisticProblem([np.array([[1.0, 0.0]])], [np.array([1.0])])
    assert p._data_constants()["rho"][0] == pytest.approx(S2_SUP, rel=1e-15)
    w, u = np.array([Z_S2_ARGMAX - 1e-6, 0]), np.array([Z_S2_ARGMAX + 1e-6, 0])
    ratio = np.linalg.norm(p.hess(0, w) - p.hess(0, u), 2) / 2e-6
    assert ratio == pytest.approx(S2_SUP, rel=1e-6)


# ---- oracles vs finite differences -------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(instances)
def test_oracles_match_finite_differences(inst):
    p, rng = random_problem(*inst)
    w = rng.normal(size=p.dim)
    v = rng.normal(size=p.dim)
    for i in range(p.n):
        g = p.grad(i, w)
        assert np.allclose(fd_grad(lambda t, i=i: p.loss(i, t), w, 1e-2), g,
                           rtol=1e-8, atol=1e-9)
        H = p.hess(i, w)
        Hfd = np.array([fd_grad(lambda t, i=i, k=k: p.grad(i, t)[k], w, 1e-2)
                        for k in range(p.dim)])
        assert np.allclose(Hfd, H, rtol=1e-8, atol=1e-9)
        assert np.allclose(p.hvp(i, w, v), H @ v, rtol=1e-12, atol=1e-14)
        full = np.arange(p.m[i])
        assert np.allclose(p.batch_grad(i, w, full), g, rtol=1e-12, atol=1e-14)
        assert np.allclose(p.batch_hvp(i, w, v, full), H @ v, rtol=1e-12, atol=1e-14)
    assert p.f(w) == pytest.approx(np.mean([p.loss(i, w) for i in range(p.n)]), rel=1e-13)
    assert np.allclose(p.grad_f(w), np.mean([p.grad(i, w) for i in range(p.n)], axis=0),
                       rtol=1e-12, atol=1e-14)
    assert np.allclose(p.hess_f(w), np.mean([p.hess(i, w) for i in range(p.n)], axis=0),
                       rtol=1e-12, atol=1e-14)


def test_pickle_round_trip_keeps_solutions():
    p, rng = random_problem(2, 2, 3, 8, 1.0, 0.1, anchors=True)
    x = p.x_star
    q = pickle.loads(pickle.dumps(p))
    w = rng.normal(size=3)
    assert np.array_equal(q.grad_f(w), p.grad_f(w)) and np.array_equal(q.x_star, x)


def test_loss_is_stable_for_huge_margins():
    p = LogisticProblem([np.array([[1.0], [1.0]])], [np.array([1.0, -1.0])])
    w = np.array([800.0])  # exp(800) overflows; logaddexp does not
    assert p.loss(0, w) == pytest.approx(400.0, rel=1e-15)
    assert np.all(np.isfinite(p.grad(0, w))) and np.all(np.isfinite(p.hess(0, w)))
    assert p.grad(0, w)[0] == pytest.approx(0.5, rel=1e-15)


# ---- minibatches --------------------------------------------------------------------------------
def test_sample_batch_uniform_with_replacement():
    """Chi-square goodness of fit of 60000 indices over m = 7 rows.

    False-alarm rate: 1e-6 (p-value threshold) for a correct sampler; seeded, so deterministic.
    """
    p, _ = random_problem(1, 2, 2, 1, 1.0, 0.0)
    X = [np.ones((7, 2)), np.ones((3, 2))]
    y = [np.ones(7), -np.ones(3)]
    p = LogisticProblem(X, y)
    rng = np.random.default_rng(12345)
    idx = p.sample_batch(0, 60000, rng)
    assert idx.dtype.kind == "i" and idx.min() >= 0 and idx.max() <= 6
    assert chisquare(np.bincount(idx, minlength=7)).pvalue > 1e-6
    b = p.sample_batch(1, 20, rng)
    assert len(b) == 20 and len(np.unique(b)) <= 3  # with replacement: repeats allowed
    with pytest.raises(ConfigError):
        p.sample_batch(0, 0, rng)


def test_batch_gradient_unbiased_and_variance_below_sigma_g2_over_b():
    """Mean of 20000 batch gradients (b = 4) vs grad: |z| < 5.5 per coordinate.

    False-alarm rate (normal approximation, d = 3 coordinates, Bonferroni): < 1.2e-7.  The
    empirical variance must not exceed sigma_g2/b by more than 6 standard errors
    (false-alarm rate < 1e-8 one-sided, normal approximation).
    """
    p, _ = random_problem(7, 1, 3, 10, 1.0, 0.2)
    rng = np.random.default_rng(99)
    w = np.array([0.3, -0.5, 1.0])
    b, R = 4, 20000
    G = np.array([p.batch_grad(0, w, p.sample_batch(0, b, rng)) for _ in range(R)])
    g = p.grad(0, w)
    se = G.std(axis=0, ddof=1) / math.sqrt(R)
    assert np.all(np.abs(G.mean(axis=0) - g) <= 5.5 * se)
    sq = np.sum((G - g) ** 2, axis=1)
    bound = p.constants["sigma_g2"].value / b
    assert sq.mean() <= bound + 6 * sq.std(ddof=1) / math.sqrt(R)


# ---- solvers, separability, certificates (THEORY_SPEC 9.4) ---------------------------------
@pytest.mark.parametrize("nu", [0.0, 0.05])
def test_anchor_rows_make_data_coercive_and_certificate_valid(nu):
    p, _ = random_problem(3, 3, 4, 30, 2.0, nu, anchors=True)
    rep = p.separability_report()
    assert all(s.kind == "coercive" and s.lp_max == 0.0 for s in rep.clients)
    assert rep.whole.coercive and rep.whole.minimiser_exists
    x, fstar, cert = p.solve_global()
    g0 = np.linalg.norm(p.grad_f(np.zeros(p.dim)))
    assert np.linalg.norm(p.grad_f(x)) <= 1e-13 * max(1.0, g0)
    assert cert.valid and cert.dist_bound < 1e-10 and cert.f_gap_bound < 1e-20
    ref = minimize(p.f, np.ones(p.dim), jac=p.grad_f, hess=p.hess_f, method="trust-exact",
                   options={"gtol": 1e-12})
    assert fstar <= p.f(ref.x) + 1e-15
    # strong convexity on the certified ball: ||ref - x*|| <= ||grad f(ref)||/mu_loc
    assert np.linalg.norm(ref.x - x) <= (np.linalg.norm(p.grad_f(ref.x)) / cert.mu_loc
                                         + cert.dist_bound) * (1 + 1e-6)
    for i in range(p.n):
        u, fi, ci = p.solve_client(i)
        assert ci.valid and np.linalg.norm(p.grad(i, u)) <= 1e-12
    tab = p.constants
    assert tab["f_star_A"].tag is Tag.NUMERIC and "certified" in tab["f_star_A"].reason
    assert tab["f_star_P"].value == pytest.approx(min(p.f_i_star), abs=0)
    assert tab["f_star_P"].value <= fstar
    zeta = max(np.linalg.norm(x - u) for u in p.u_star)
    assert tab["zeta"].value == pytest.approx(zeta, rel=1e-15)
    assert p.grad_at_xstar.mean(axis=0) == pytest.approx(np.zeros(p.dim), abs=1e-13)
    assert p.solve_global() is p.solve_global()  # cached


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.floats(-7, -1), st.sampled_from([0.0, 0.1]))
def test_certificate_bounds_hold_at_perturbed_points(seed, log_delta, nu):
    """A valid certificate at xhat must bound the true distance and f-gap (negative control)."""
    p, rng = random_problem(seed, 2, 3, 15, 1.0, nu, anchors=True)
    x, fstar, _ = p.solve_global()
    dlt = rng.normal(size=p.dim)
    dlt *= 10 ** log_delta / np.linalg.norm(dlt)
    cert = p.certify(x + dlt)
    if cert.valid:
        assert np.linalg.norm(dlt) <= cert.dist_bound * (1 + 1e-9) + 1e-14
        assert p.f(x + dlt) - fstar <= cert.f_gap_bound * (1 + 1e-9) + 1e-15
    else:
        assert math.isinf(cert.dist_bound)


def test_certificate_invalid_far_away():
    p, _ = random_problem(5, 1, 2, 10, 1.0, 0.0, anchors=True)
    cert = p.certify(np.array([50.0, -50.0]))
    x = p.x_star
    assert (not cert.valid) or cert.dist_bound >= np.linalg.norm(x - [50.0, -50.0])


def test_strictly_separable_client_flagged():
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(20, 2))
    ys = np.where(Xs[:, 0] > 0, 1.0, -1.0)
    Xa = np.vstack([rng.normal(size=(10, 2)), np.eye(2), np.eye(2)])
    ya = np.concatenate([rng.choice([-1.0, 1.0], 10), np.ones(2), -np.ones(2)])
    p = LogisticProblem([Xs, Xa], [ys, ya])
    rep = p.separability_report()
    assert rep.clients[0].kind == "strictly_separable" and rep.clients[0].lp_max > 0
    assert rep.clients[1].kind == "coercive"
    assert rep.whole.kind == "coercive"  # anchors in one client suffice globally
    assert p.solve_client(0).x is None and p.solve_client(0).f == 0.0
    tab = p.constants
    assert tab["f_star_P"].value == 0.0 and "FLAG" in tab["f_star_P"].reason
    assert "strictly separable" in tab["f_star_P"].reason
    assert tab["zeta"].tag is Tag.INFINITE
    assert tab["f_star_A"].tag is Tag.NUMERIC and tab["f_star_A"].value > 0
    # regularised: every f_i has a minimiser again
    q = LogisticProblem([Xs, Xa], [ys, ya], nu_reg=0.1)
    assert q.solve_client(0).x is not None and q.solve_client(0).certificate.valid
    assert q.constants["zeta"].tag is Tag.NUMERIC


def test_globally_separable_has_no_x_star():
    rng = np.random.default_rng(1)
    X = [rng.normal(size=(8, 3)) for _ in range(2)]
    y = [np.where(x @ [1.0, -2.0, 0.5] > 0, 1.0, -1.0) for x in X]
    p = LogisticProblem(X, y)
    assert p.separability_report().whole.strictly_separable
    with pytest.raises(FedsimError):
        _ = p.x_star
    tab = p.constants
    assert tab["f_star_A"].value == 0.0 and "NOT attained" in tab["f_star_A"].reason
    # f really approaches 0 along the separator
    assert p.f(1e3 * np.array([1.0, -2.0, 0.5])) < 1e-100


def test_weakly_separable_and_rank_deficient_cases():
    # rows y x = (1,0), (-1,0), (0,1): w = (0,1) has margins 0, 0, 1 -> weakly separable
    p = LogisticProblem([np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])],
                        [np.array([1.0, -1.0, 1.0])])
    s = p.separability_report().clients[0]
    assert s.kind == "weakly_separable" and not s.strictly_separable and s.lp_max > 0
    assert s.separable_rows == (2,)
    u, f_inf, cert = p.solve_client(0)
    assert u is None and cert.valid and math.isinf(cert.dist_bound)
    # inf f = min_{w_1} (log(1+e^-w1) + log(1+e^w1))/3 = 2 log 2 / 3, approached as w_2 -> inf
    assert f_inf == pytest.approx(2 * math.log(2) / 3, abs=1e-15)
    tab = p.constants
    assert tab["f_star_P"].value == f_inf and "NOT attained" in tab["f_star_P"].reason
    assert tab["f_star_A"].value == f_inf and tab["f_star_A"].tag is Tag.NUMERIC
    assert tab["zeta"].tag is Tag.INFINITE
    # rows y x = (1,0), (-1,0): rank 1, not separable: minimum log 2 on the line w_1 = 0
    q = LogisticProblem([np.array([[1.0, 0.0], [1.0, 0.0]])], [np.array([1.0, -1.0])])
    s = q.separability_report().clients[0]
    assert s.kind == "attained_not_unique" and s.minimiser_exists and not s.coercive
    x, f, cert = q.solve_global()
    assert np.allclose(x, 0.0, atol=1e-14) and f == pytest.approx(math.log(2), abs=1e-15)
    assert cert.valid and "NOT unique" in cert.note


def test_weakly_separable_infimum_matches_independent_computation():
    """Rows in the (e1, e2) plane with anchors are non-separable; extra rows with a positive
    e3 component and label +1 are separated by w = e3.  inf f is the minimum of the plane
    part (checked with scipy) and is approached along e3, never undercut at random points."""
    rng = np.random.default_rng(4)
    plane = np.hstack([rng.normal(size=(12, 2)), np.zeros((12, 1))])
    yp = rng.choice([-1.0, 1.0], 12)
    anchors = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 1.0, 0], [0, 1.0, 0]])
    ya = np.array([1.0, -1.0, 1.0, -1.0])
    sep = np.hstack([rng.normal(size=(5, 2)), rng.uniform(0.5, 2.0, size=(5, 1))])
    X = np.vstack([plane, anchors, sep])
    y = np.concatenate([yp, ya, np.ones(5)])
    p = LogisticProblem([X], [y])
    s = p.separability_report().clients[0]
    assert s.kind == "weakly_separable" and s.separable_rows == tuple(range(16, 21))
    rows = (np.concatenate([yp, ya])[:, None] * np.vstack([plane, anchors]))[:, :2]
    g = lambda v: np.sum(np.logaddexp(0.0, -(rows @ v))) / 21
    ref = minimize(g, np.zeros(2), method="BFGS", options={"gtol": 1e-12})
    f_inf = p.solve_client(0).f
    assert f_inf == pytest.approx(ref.fun, abs=1e-13)
    w_plane = np.array([*ref.x, 0.0])
    assert p.f(w_plane + 60.0 * np.array([0, 0, 1.0])) - f_inf < 1e-12
    for _ in range(200):
        assert p.f(rng.normal(size=3) * rng.choice([0.1, 1, 10])) >= f_inf - 1e-15


def test_newton_minimize_on_a_rosenbrock_like_nonconvex_function():
    f = lambda x: (1 - x[0]) ** 2 + 10 * (x[1] - x[0] ** 2) ** 2
    g = lambda x: np.array([-2 * (1 - x[0]) - 40 * x[0] * (x[1] - x[0] ** 2),
                            20 * (x[1] - x[0] ** 2)])
    H = lambda x: np.array([[2 - 40 * x[1] + 120 * x[0] ** 2, -40 * x[0]],
                            [-40 * x[0], 20.0]])
    res = newton_minimize(f, g, H, np.array([-1.2, 1.0]))
    assert res.converged and np.allclose(res.x, [1.0, 1.0], atol=1e-12)


# ---- personalised objectives -------------------------------------------------------------------
@pytest.mark.parametrize("nu", [0.0, 0.2])
def test_moreau_envelope_gradient_vs_finite_differences(nu):
    """grad F^(c) agrees with an 8th-order FD of F_me to 1e-12 (THEORY_SPEC 9.4)."""
    p, rng = random_problem(11, 3, 3, 12, 0.8, nu)
    lam = 1.5
    for _ in range(3):
        w = rng.normal(size=p.dim)
        g, err = p.grad_F_me_with_bound(w, lam)
        assert err < 1e-12
        assert np.allclose(g, p.grad_F_me(w, lam), rtol=0, atol=1e-15)
        fd = fd_grad(lambda t: p.F_me(t, lam), w, 0.05)
        assert np.max(np.abs(fd - g)) < 1e-12
        for i in range(p.n):
            th = p.theta_hat(i, w, lam)
            assert np.linalg.norm(p.grad(i, th) + lam * (th - w)) <= 1e-13 * max(
                1.0, np.linalg.norm(p.grad(i, w)))


def test_maml_gradient_vs_finite_differences():
    p, rng = random_problem(12, 3, 3, 12, 1.0, 0.1)
    alpha = 0.3
    for _ in range(3):
        w = rng.normal(size=p.dim)
        fd = fd_grad(lambda t: p.F_maml(t, alpha), w, 0.02)
        assert np.max(np.abs(fd - p.grad_F_maml(w, alpha))) < 1e-8


# ---- bad inputs ---------------------------------------------------------------------------------
def _ok():
    return [np.ones((2, 2)), np.ones((3, 2))], [np.array([1.0, -1.0]), np.array([1.0, 1.0, -1.0])]


def test_label_message_names_client_and_value():
    X, y = _ok()
    y[1] = np.array([1.0, 0.0, -1.0])
    with pytest.raises(ConfigError, match=r"^y\[1\] must contain only -1/\+1 labels, got 0\.0$"):
        LogisticProblem(X, y)


@pytest.mark.parametrize("case", ["nan_x", "inf_y", "shape_y", "ndim_x", "cols", "empty",
                                  "neg_nu", "nan_nu", "not_list", "len", "no_clients", "str"])
def test_bad_inputs_raise(case):
    X, y = _ok()
    nu = 0.0
    if case == "nan_x":
        X[0][0, 0] = np.nan
    elif case == "inf_y":
        y[0] = np.array([1.0, np.inf])
    elif case == "shape_y":
        y[0] = np.array([1.0, -1.0, 1.0])
    elif case == "ndim_x":
        X[0] = np.ones(2)
    elif case == "cols":
        X[1] = np.ones((3, 3))
    elif case == "empty":
        X[1], y[1] = np.ones((0, 2)), np.ones(0)
    elif case == "neg_nu":
        nu = -1.0
    elif case == "nan_nu":
        nu = float("nan")
    elif case == "not_list":
        X = np.ones((2, 2))
    elif case == "len":
        y = y[:1]
    elif case == "no_clients":
        X, y = [], []
    elif case == "str":
        X[0] = [["a", "b"], ["c", "d"]]
    with pytest.raises(ConfigError):
        LogisticProblem(X, y, nu_reg=nu)


def test_negative_nu_reg_message():
    X, y = _ok()
    with pytest.raises(ConfigError, match=r"nu_reg must be finite and >= 0, got nu_reg=-1\.0"):
        LogisticProblem(X, y, nu_reg=-1.0)


def test_bad_lam_and_client_index():
    X, y = _ok()
    p = LogisticProblem(X, y, nu_reg=0.1)
    with pytest.raises(ConfigError):
        p.theta_hat(0, np.zeros(2), 0.0)
    with pytest.raises(ConfigError):
        p.solve_client(5)


# ---- builders over data.py ----------------------------------------------------------------------
def test_synthetic_builder_with_anchors():
    data = pytest.importorskip("fedsim.problems.data")
    p = LogisticProblem.synthetic(3, 4, 20, seed=0, nu_reg=0.0, anchors="all")
    assert p.n == 3 and p.dim == 4
    X, _ = data.synthetic_logistic(3, 4, 20, seed=0)
    assert all(p.m[i] == X[i].shape[0] + 2 * 4 for i in range(3))
    assert all(s.coercive for s in p.separability_report().clients)
    assert p.constants["zeta"].tag is Tag.NUMERIC
    with pytest.raises(ConfigError):
        LogisticProblem.synthetic(3, 4, 20, anchors="some")


def test_digits_builder_first_client_anchors():
    pytest.importorskip("fedsim.problems.data")
    pytest.importorskip("sklearn")
    p = LogisticProblem.digits(4, nu_reg=0.0, anchors="first", max_features=8, seed=0)
    assert p.n == 4 and p.dim == 8
    rep = p.separability_report()
    assert rep.clients[0].coercive and rep.whole.coercive
    x, f, cert = p.solve_global()
    assert cert.valid and np.linalg.norm(p.grad_f(x)) <= 1e-12
    q = LogisticProblem.digits(4, nu_reg=0.01, anchors=None, max_features=8, seed=0)
    assert q.constants["mu"].value == 0.01 and q.constants["zeta"].tag is Tag.NUMERIC
