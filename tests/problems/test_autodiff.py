"""AutogradProblem: autograd oracles vs LogisticProblem and closed forms; constants."""

import math
import pickle

import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.problems.autodiff import AutogradProblem, logistic_batch_loss
from fedsim.problems.constants import Constant, Tag
from fedsim.problems.logistic import LogisticProblem

_C8 = (4 / 5, -1 / 5, 4 / 105, -1 / 280)


def fd_grad(fun, w, h):
    g = np.zeros_like(w)
    for k in range(w.size):
        e = np.zeros_like(w)
        e[k] = h
        g[k] = sum(c * (fun(w + (j + 1) * e) - fun(w - (j + 1) * e)) for j, c in enumerate(_C8))
        g[k] /= h
    return g


def logistic_data(seed, n, d, m_max, scale):
    rng = np.random.default_rng(seed)
    X = [scale * rng.normal(size=(int(rng.integers(1, m_max + 1)), d)) for _ in range(n)]
    y = [rng.choice([-1.0, 1.0], size=x.shape[0]) for x in X]
    return X, y, rng


def close(a, b, tol=1e-12):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.max(np.abs(a - b)) <= tol * max(1.0, np.max(np.abs(b)))


# ---- matches LogisticProblem to 1e-12 ---------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 3), st.integers(1, 4), st.integers(1, 8),
       st.sampled_from([0.3, 1.0, 3.0]), st.sampled_from([0.0, 0.25]))
def test_logistic_loss_matches_logistic_problem(seed, n, d, m_max, scale, nu):
    X, y, rng = logistic_data(seed, n, d, m_max, scale)
    lp = LogisticProblem(X, y, nu_reg=nu)
    ap = AutogradProblem(X, y, batch_loss=logistic_batch_loss, ridge=nu)
    assert (ap.n, ap.dim) == (lp.n, lp.dim)
    w, v = rng.normal(size=d), rng.normal(size=d)
    for i in range(n):
        assert close(ap.loss(i, w), lp.loss(i, w))
        assert close(ap.grad(i, w), lp.grad(i, w))
        assert close(ap.hess(i, w), lp.hess(i, w))
        assert close(ap.hvp(i, w, v), lp.hvp(i, w, v))
        batch = lp.sample_batch(i, 5, np.random.default_rng(seed))
        assert np.array_equal(batch, ap.sample_batch(i, 5, np.random.default_rng(seed)))
        assert close(ap.batch_grad(i, w, batch), lp.batch_grad(i, w, batch))
        assert close(ap.batch_hvp(i, w, v, batch), lp.batch_hvp(i, w, v, batch))
    assert close(ap.f(w), lp.f(w)) and close(ap.grad_f(w), lp.grad_f(w))
    assert close(ap.grad_F_maml(w, 0.2), lp.grad_F_maml(w, 0.2))
    assert close(ap.grad_F_me(w, 2.0), lp.grad_F_me(w, 2.0))


def test_per_sample_loss_equals_batched_loss():
    X, y, rng = logistic_data(3, 2, 3, 6, 1.0)

    def one(w, x, t):
        return anp.logaddexp(0.0, -t * anp.dot(x, w))

    a1 = AutogradProblem(X, y, loss=one, ridge=0.1)
    a2 = AutogradProblem(X, y, batch_loss=logistic_batch_loss, ridge=0.1)
    assert not a1.batched and a2.batched
    w, v = rng.normal(size=3), rng.normal(size=3)
    for i in range(2):
        assert close(a1.loss(i, w), a2.loss(i, w), 1e-14)
        assert close(a1.grad(i, w), a2.grad(i, w), 1e-14)
        assert close(a1.hess(i, w), a2.hess(i, w), 1e-14)
        assert close(a1.hvp(i, w, v), a2.hvp(i, w, v), 1e-14)


# ---- hand-computed least squares --------------------------------------------------------------
def ls_loss(w, X, y):
    r = anp.dot(X, w) - y
    return 0.5 * anp.mean(r * r)


def test_least_squares_closed_forms():
    """f(w) = mean 0.5 (x^T w - y)^2: grad X^T(Xw-y)/m, Hessian X^T X/m, prox in closed form."""
    X = [np.array([[1.0, 2.0], [3.0, -1.0], [0.0, 1.0]])]
    y = [np.array([1.0, 0.0, 2.0])]
    p = AutogradProblem(X, y, batch_loss=ls_loss, ridge=0.5)
    w = np.array([0.5, -1.0])
    r = X[0] @ w - y[0]  # (-2.5, 2.5, -3)
    assert p.loss(0, w) == pytest.approx(0.5 * np.mean(r ** 2) + 0.25 * 1.25, abs=1e-15)
    H = X[0].T @ X[0] / 3 + 0.5 * np.eye(2)
    assert close(p.grad(0, w), X[0].T @ r / 3 + 0.5 * w, 1e-15)
    assert close(p.hess(0, w), H, 1e-15)
    lam = 3.0
    th = np.linalg.solve(H + lam * np.eye(2), X[0].T @ y[0] / 3 + lam * w)
    got, gnorm = p.theta_hat_with_bound(0, w, lam)
    assert close(got, th, 1e-13) and gnorm <= 1e-13
    assert len(p.constants) == 0  # nothing supplied, nothing estimated yet


def test_nonconvex_loss_gradients_and_prox():
    """Cauchy loss log(1 + r^2) (non-convex): FD check and a stationary, locally optimal prox."""
    def cauchy(w, X, y):
        r = anp.tanh(anp.dot(X, w)) - y
        return anp.mean(anp.log1p(r * r))

    rng = np.random.default_rng(5)
    X = [rng.normal(size=(6, 3)) for _ in range(2)]
    y = [rng.normal(size=6) for _ in range(2)]
    p = AutogradProblem(X, y, batch_loss=cauchy)
    w = rng.normal(size=3)
    for i in range(2):
        assert np.allclose(fd_grad(lambda t, i=i: p.loss(i, t), w, 1e-2), p.grad(i, w),
                           rtol=1e-8, atol=1e-9)
        Hfd = np.array([fd_grad(lambda t, i=i, k=k: p.grad(i, t)[k], w, 1e-2) for k in range(3)])
        assert np.allclose(Hfd, p.hess(i, w), rtol=1e-7, atol=1e-8)
        lam = 0.2  # small lam: the inner problem may be non-convex
        th, gn = p.theta_hat_with_bound(i, w, lam)
        assert gn <= 1e-13 * max(1.0, np.linalg.norm(p.grad(i, w)))
        hval = lambda t, i=i, lam=lam: p.loss(i, t) + 0.5 * lam * np.sum((t - w) ** 2)
        assert np.linalg.eigvalsh(p.hess(i, th) + lam * np.eye(3))[0] > -1e-10
        for _ in range(20):
            assert hval(th + 1e-4 * rng.normal(size=3)) >= hval(th) - 1e-14
    fd = fd_grad(lambda t: p.F_maml(t, 0.1), w, 1e-2)
    assert np.max(np.abs(fd - p.grad_F_maml(w, 0.1))) < 1e-8


# ---- constants ----------------------------------------------------------------------------------
def test_user_constants_and_no_exact():
    X, y, _ = logistic_data(0, 2, 2, 5, 1.0)
    p = AutogradProblem(X, y, batch_loss=logistic_batch_loss, constants={
        "L": (1.0, "UPPER", "my bound"), "G": Constant("G", 2.0, Tag.NUMERIC, "measured"),
        "mu": (math.inf, Tag.INFINITE, "not strongly convex")})
    assert p.constants["L"].value == 1.0 and p.constants["L"].tag is Tag.UPPER
    assert p.constants["G"].tag is Tag.NUMERIC and p.constants["mu"].tag is Tag.INFINITE
    with pytest.raises(ConfigError, match="EXACT"):
        AutogradProblem(X, y, batch_loss=logistic_batch_loss,
                        constants={"L": (1.0, "EXACT", "claimed")})
    with pytest.raises(ConfigError, match="EXACT"):
        AutogradProblem(X, y, batch_loss=logistic_batch_loss,
                        constants={"L": Constant("L", 1.0, Tag.EXACT, "claimed")})
    bad = [{"Lip": (1.0, "UPPER", "x")}, {"L": (1.0, "LOWER", "x")}, {"L": (1.0, "UPPER")},
           {"L": (math.inf, "UPPER", "x")}, {"L": ("big", "UPPER", "x")},
           {"L": (1.0, "UPPER", "")}, {"G": Constant("L", 1.0, Tag.UPPER, "x")}, [1, 2]]
    for c in bad:
        with pytest.raises(ConfigError):
            AutogradProblem(X, y, batch_loss=logistic_batch_loss, constants=c)


def test_estimated_constants_are_numeric_and_below_logistic_bounds():
    X, y, _ = logistic_data(8, 2, 3, 6, 1.0)
    lp = LogisticProblem(X, y)
    ap = AutogradProblem(X, y, batch_loss=logistic_batch_loss,
                         constants={"G": (5.0, "UPPER", "user")})
    tab = ap.estimate_constants(np.random.default_rng(0), n_points=4, scale=2.0)
    assert tab is ap.constants
    for name in ("L", "sigma_g2", "gamma_g2"):
        c = tab[name]
        assert c.tag is Tag.NUMERIC and "NOT a bound" in c.reason
        assert c.value <= lp.constants[name].value * (1 + 1e-12)
    # the centre w = 0 is sampled and the logistic L is attained there (9.2)
    assert tab["L"].value == pytest.approx(lp.constants["L"].value, rel=1e-8)
    assert tab["G"].value == 5.0 and tab["G"].reason == "user"  # user value wins
    assert all(tab[k].tag is not Tag.EXACT for k in tab)
    again = AutogradProblem(X, y, batch_loss=logistic_batch_loss).estimate_constants(
        np.random.default_rng(0), n_points=4, scale=2.0)
    assert again["L"].value == tab["L"].value  # deterministic given the generator
    with pytest.raises(ConfigError):
        ap.estimate_constants(np.random.default_rng(0), n_points=0)


def test_pickle_round_trip_with_module_level_loss():
    """Process-pool workers receive problems by pickling (validation.montecarlo)."""
    X, y, rng = logistic_data(2, 2, 3, 5, 1.0)
    p = AutogradProblem(X, y, batch_loss=logistic_batch_loss, ridge=0.1,
                        constants={"L": (9.0, "UPPER", "user")})
    q = pickle.loads(pickle.dumps(p))
    w, v = rng.normal(size=3), rng.normal(size=3)
    assert np.array_equal(q.grad(1, w), p.grad(1, w))
    assert np.array_equal(q.hvp(0, w, v), p.hvp(0, w, v))
    assert q.constants["L"].value == 9.0


# ---- bad inputs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["both", "neither", "vector_loss", "dim", "nan", "ridge",
                                  "ylen", "not_list", "shape", "raises"])
def test_bad_inputs_raise(case):
    X, y, _ = logistic_data(1, 2, 2, 4, 1.0)
    kw = dict(batch_loss=logistic_batch_loss)
    if case == "both":
        kw["loss"] = logistic_batch_loss
    elif case == "neither":
        kw = {}
    elif case == "vector_loss":
        kw = dict(batch_loss=lambda w, X, y: anp.dot(X, w))
    elif case == "dim":
        kw["dim"] = 3
    elif case == "nan":
        X[0] = X[0].copy()
        X[0][0, 0] = np.nan
    elif case == "ridge":
        kw["ridge"] = -0.1
    elif case == "ylen":
        y[1] = np.ones(y[1].size + 1)
    elif case == "not_list":
        X = X[0]
    elif case == "shape":
        X[1] = np.ones((2, 5))
    elif case == "raises":
        kw = dict(batch_loss=lambda w, X, y: anp.dot(X, w[:5]).sum() + 1 / 0)
    with pytest.raises(ConfigError):
        AutogradProblem(X, y, **kw)


def test_bad_lam_and_batch_size():
    X, y, _ = logistic_data(1, 1, 2, 4, 1.0)
    p = AutogradProblem(X, y, batch_loss=logistic_batch_loss)
    with pytest.raises(ConfigError):
        p.theta_hat(0, np.zeros(2), -1.0)
    with pytest.raises(ConfigError):
        p.sample_batch(0, 0, np.random.default_rng(0))
