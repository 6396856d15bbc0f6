"""SoftmaxProblem: oracles against autograd, constants against sampled values, Newton, inputs."""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad as agrad
from autograd.scipy.special import logsumexp as alse
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.problems.constants import Tag
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.softmax import SoftmaxProblem

N, D, C = 3, 4, 3


def _random_problem(seed: int = 0, reg: float = 0.1, n: int = N, d: int = D, c: int = C,
                    scale: float = 1.0) -> SoftmaxProblem:
    rng = np.random.default_rng(seed)
    X = [scale * (rng.standard_normal((m, d)) + rng.standard_normal(d))
         for m in rng.integers(8, 20, size=n)]
    y = [rng.integers(0, c, size=x.shape[0]) for x in X]
    return SoftmaxProblem.from_arrays(X, y, c, reg)


@pytest.fixture(scope="module")
def prob() -> SoftmaxProblem:
    return _random_problem()


def _ag_loss(X, y, reg, d, c):
    onehot = np.eye(c)[y]

    def loss(w):
        Z = anp.dot(X, anp.reshape(w, (d, c)))
        return anp.mean(alse(Z, axis=1) - anp.sum(Z * onehot, axis=1)) + 0.5 * reg * anp.sum(w * w)
    return loss


def _close(a, b, tol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    assert np.max(np.abs(a - b)) <= tol * max(1.0, float(np.max(np.abs(b)))), np.max(np.abs(a - b))


# ---------------------------------------------------------------------------- oracles
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.1, 1.0, 5.0]))
def test_oracles_match_autograd(prob, seed, scale):
    rng = np.random.default_rng(seed)
    w = scale * rng.standard_normal(prob.dim)
    v = rng.standard_normal(prob.dim)
    for i in range(prob.n):
        lf = _ag_loss(prob.X[i], prob.y[i], prob.reg, prob.d, prob.n_classes)
        _close(prob.loss(i, w), lf(w))
        _close(prob.grad(i, w), agrad(lf)(w))
        hv = agrad(lambda u, lf=lf: anp.dot(agrad(lf)(u), v))(w)
        _close(prob.hvp(i, w, v), hv)
        _close(prob.hess(i, w) @ v, hv)
        batch = prob.sample_batch(i, 7, rng)
        lb = _ag_loss(prob.X[i][batch], prob.y[i][batch], prob.reg, prob.d, prob.n_classes)
        _close(prob.batch_grad(i, w, batch), agrad(lb)(w))
        hb = agrad(lambda u, lb=lb: anp.dot(agrad(lb)(u), v))(w)
        _close(prob.batch_hvp(i, w, v, batch), hb)
    _close(prob.f(w), np.mean([prob.loss(i, w) for i in range(prob.n)]))
    _close(prob.grad_f(w), np.mean([prob.grad(i, w) for i in range(prob.n)], axis=0))


def test_grad_F_maml_matches_autograd(prob):
    rng = np.random.default_rng(3)
    w = rng.standard_normal(prob.dim)
    alpha = 0.05
    losses = [_ag_loss(prob.X[i], prob.y[i], prob.reg, prob.d, prob.n_classes)
              for i in range(prob.n)]

    def F(u):
        return sum(lf(u - alpha * agrad(lf)(u)) for lf in losses) / len(losses)

    _close(prob.F_maml(w, alpha), F(w))
    _close(prob.grad_F_maml(w, alpha), agrad(F)(w))


def test_stable_for_huge_logits(prob):
    w = 1e6 * np.random.default_rng(1).standard_normal(prob.dim)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        assert np.isfinite(prob.f(w))
        assert np.all(np.isfinite(prob.grad_f(w)))
        assert np.all(np.isfinite(prob.hvp(0, w, w)))
        assert np.all(np.isfinite(prob.batch_grad(0, w, np.arange(3))))


def test_binary_softmax_equals_logistic():
    """C = 2 with W = [w/2, -w/2] is the binary logistic loss at w (label 0 <-> +1)."""
    from sklearn.datasets import load_breast_cancer

    X, t = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    Xs, ts = [X[:200], X[200:]], [t[:200], t[200:]]
    sm = SoftmaxProblem.from_arrays(Xs, ts, 2, 0.1)
    # reg/2 ||W||^2 = (reg/4) ||w||^2, so nu_reg = reg/2
    lg = LogisticProblem(Xs, [np.where(k == 0, 1.0, -1.0) for k in ts], nu_reg=0.05)
    w = np.random.default_rng(0).standard_normal(X.shape[1]) * 0.3
    W = np.stack([w / 2, -w / 2], axis=1).ravel()
    for i in range(2):
        _close(sm.loss(i, W), lg.loss(i, w), 1e-12)


# ---------------------------------------------------------------------------- constants
@pytest.fixture(scope="module")
def table(prob):
    return prob.constants


def test_tags(table):
    tags = {k: c.tag for k, c in table.items()}
    assert tags["L"] is Tag.UPPER and tags["mu"] is Tag.EXACT and tags["rho"] is Tag.UPPER
    assert tags["G"] is Tag.INFINITE and tags["B"] is Tag.INFINITE
    for k in ("sigma_g2", "sigma_h2", "gamma_g2", "gamma_h2"):
        assert tags[k] is Tag.UPPER
    for k in ("f_star_A", "f_star_P", "zeta"):
        assert tags[k] is Tag.NUMERIC


def _per_sample(prob, i, w):
    """Per-row data gradients (m, dC) and data Hessians (m, dC, dC)."""
    from scipy.special import softmax

    X, y = prob.X[i], prob.y[i]
    P = softmax(X @ w.reshape(prob.d, prob.n_classes), axis=1)
    R = P.copy()
    R[np.arange(len(y)), y] -= 1.0
    g = np.einsum("jk,jc->jkc", X, R).reshape(len(y), -1)
    A = np.einsum("jc,cd->jcd", P, np.eye(prob.n_classes)) - np.einsum("jc,jd->jcd", P, P)
    H = np.einsum("jk,jl,jcd->jkcld", X, X, A).reshape(len(y), prob.dim, prob.dim)
    return g, H


def _point(prob, seed, scale, kind):
    rng = np.random.default_rng(seed)
    if kind == "random":
        return scale * rng.standard_normal(prob.dim)
    # "two-class": logits of two classes tie, the rest very negative (sup of A's spectrum)
    W = np.zeros((prob.d, prob.n_classes))
    W[:, 2:] = -scale * 10
    W[:, :2] += 0.01 * scale * rng.standard_normal((prob.d, 2))
    return W.ravel()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.0, 0.3, 1.0, 3.0, 10.0]),
       kind=st.sampled_from(["random", "two-class"]))
def test_upper_constants_dominate_sampled_values(prob, table, seed, scale, kind):
    w = _point(prob, seed, scale, kind)
    u = w + np.random.default_rng(seed + 1).standard_normal(prob.dim) * (0.01 + scale / 10)
    n = prob.n
    tol = 1e-10
    Hs = [prob.hess(i, w) for i in range(n)]
    for i in range(n):
        ev = np.linalg.eigvalsh(Hs[i])
        assert ev[-1] <= table.value("L") + tol
        assert ev[0] >= table.value("mu") - tol
        assert abs(ev[0] - prob.reg) <= 1e-9  # mu is EXACT: attained at every w
        diff = np.linalg.norm(prob.hess(i, u) - Hs[i], 2)
        assert diff <= table.value("rho") * np.linalg.norm(u - w) + tol
        g, H = _per_sample(prob, i, w)
        assert np.mean(np.sum((g - g.mean(0)) ** 2, axis=1)) <= table.value("sigma_g2") + tol
        assert np.mean(np.sum((H - H.mean(0)) ** 2, axis=(1, 2))) <= (
            table.value("sigma_h2") + tol)
    G = np.array([prob.grad(i, w) for i in range(n)])
    assert np.mean(np.sum((G - G.mean(0)) ** 2, axis=1)) <= table.value("gamma_g2") + tol
    Hbar = np.mean(Hs, axis=0)
    assert np.mean([np.linalg.norm(H - Hbar, 2) ** 2 for H in Hs]) <= (
        table.value("gamma_h2") + tol)


def test_L_at_least_value_at_zero(prob, table):
    lam0 = max(np.linalg.eigvalsh(prob.hess(i, np.zeros(prob.dim)))[-1] for i in range(prob.n))
    assert lam0 <= table.value("L")
    assert table.value("L") <= prob.n_classes / 2 * (lam0 - prob.reg) + prob.reg + 1e-9


# ---------------------------------------------------------------------------- minimisers
def test_newton_solutions(prob, table):
    xs = prob.x_star
    assert np.linalg.norm(prob.grad_f(xs)) <= 1e-12
    rng = np.random.default_rng(5)
    for _ in range(5):
        assert prob.f(xs + 0.1 * rng.standard_normal(prob.dim)) > table.value("f_star_A")
    us = prob.u_star
    for i in range(prob.n):
        assert np.linalg.norm(prob.grad(i, us[i])) <= 1e-12
    assert table.value("f_star_P") == pytest.approx(min(prob.loss(i, u) for i, u in
                                                        enumerate(us)), abs=1e-14)
    assert table.value("zeta") == pytest.approx(max(np.linalg.norm(xs - u) for u in us))


def test_theta_hat_and_moreau(prob):
    rng = np.random.default_rng(7)
    w = rng.standard_normal(prob.dim)
    lam = 2.0
    for i in range(prob.n):
        th = prob.theta_hat(i, w, lam)
        assert np.linalg.norm(prob.grad(i, th) + lam * (th - w)) <= 1e-12
    # grad F_me against central differences of F_me
    v = rng.standard_normal(prob.dim)
    h = 1e-5
    fd = (prob.F_me(w + h * v, lam) - prob.F_me(w - h * v, lam)) / (2 * h)
    assert fd == pytest.approx(prob.grad_F_me(w, lam) @ v, rel=1e-6)


def test_digits_problem_and_test_split():
    p0 = SoftmaxProblem.digits(5, split="iid", seed=3, reg=1e-2)
    p1 = SoftmaxProblem.digits(5, split="iid", seed=3, reg=1e-2, test_fraction=0.25)
    assert p0.dim == 65 * 10 and p0.X_test is None
    assert sum(p0.m) == 1797 and sum(p1.m) + sum(len(y) for y in p1.y_test) == 1797
    for i in range(5):
        both = np.vstack([np.column_stack([p1.X[i], p1.y[i]]),
                          np.column_stack([p1.X_test[i], p1.y_test[i]])])
        all0 = np.column_stack([p0.X[i], p0.y[i]])
        key = lambda a: a[np.lexsort(a.T[::-1])]
        np.testing.assert_array_equal(key(both), key(all0))
    assert np.linalg.norm(p1.grad_f(p1.x_star)) <= 1e-12


# ---------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("kwargs, field", [
    (dict(reg=0.0), "reg"), (dict(reg=-1.0), "reg"), (dict(reg=float("nan")), "reg"),
    (dict(n_classes=1), "n_classes"), (dict(n_classes=2.0), "n_classes"),
    (dict(y=[np.array([0, 5])]), "y[0]"), (dict(y=[np.array([0.5, 1.0])]), "y[0]"),
    (dict(X=[np.ones((2, 2)), np.ones((2, 3))], y=[np.zeros(2, int)] * 2), "X[1].shape"),
    (dict(y=[np.zeros(3, int)]), "y[0].shape"),
    (dict(X=[np.array([[np.inf, 0.0], [0.0, 1.0]])]), "X[0]"),
    (dict(X=np.ones((2, 2))), "X"),
])
def test_bad_inputs(kwargs, field):
    args = dict(X=[np.ones((2, 2))], y=[np.array([0, 1])], n_classes=2, reg=0.1)
    args.update(kwargs)
    with pytest.raises(ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
        SoftmaxProblem.from_arrays(args["X"], args["y"], args["n_classes"], args["reg"])


def test_bad_calls(prob):
    with pytest.raises(ConfigError, match="w.shape"):
        prob.loss(0, np.zeros(3))
    with pytest.raises(ConfigError, match="size"):
        prob.sample_batch(0, 0, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="lam"):
        prob.theta_hat(0, np.zeros(prob.dim), 0.0)
    with pytest.raises(ConfigError, match="max_features"):
        SoftmaxProblem.digits(2, max_features=0)
