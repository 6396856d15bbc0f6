"""Tests of theory/oracle/ (THEORY_SPEC section 10, 7.d, 12.4-12.5).

Four kinds:
* exact: block recursions == independent dense forms (explicit T_J, u_J, N_J; matrix powers
  and direct sums instead of eigenbasis formulas) to 1e-12; hand-computed small cases;
  enumeration == moment recursion for deterministic quadratics; the 7.d table;
* property (hypothesis): random small instances, block == dense, covariance PSD;
* statistical: Monte Carlo of the literal algorithms (independent numpy simulators written
  here) against the oracles, with the false-alarm rate stated in each docstring;
* bounds: the certified Theorem 7 bound of theory/area/ is >= the exact oracle at every k.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fedsim.theory import oracle as orc
from fedsim.theory.area import step_size, theorem7
from fedsim.theory.oracle import _common as ocm
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError, FedsimError
from fedsim.problems.nonsmooth import NormProblem
from fedsim.problems.quadratic import QuadraticProblem

# ---------------------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------------------


def rand_spd(rng: np.random.Generator, d: int, lo: float, hi: float) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * rng.uniform(lo, hi, d)) @ q.T


def rand_quad(seed: int, n: int, d: int, noise: str = "additive", lo: float = 0.3,
              hi: float = 2.0, shared: bool = False) -> QuadraticProblem:
    """Random quadratic clients with per-client random SPD noise covariances."""
    rng = np.random.default_rng(seed)
    if shared:
        A = [rand_spd(rng, d, lo, hi)] * n
    else:
        A = [rand_spd(rng, d, lo, hi) for _ in range(n)]
    b = rng.standard_normal((n, d)) * 1.5
    S = [rand_spd(rng, d, 0.05, 0.4) for _ in range(n)]
    return QuadraticProblem(A, b, noise=noise, noise_cov=S)


def rand_probs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    w = rng.uniform(0.5, 2.0, n + 1)
    w /= w.sum()
    p = w[:n]
    return p, 1.0 - float(p.sum())


# ---------------------------------------------------------------------------------------
# independent dense references
# ---------------------------------------------------------------------------------------


def dense_local_map(H: np.ndarray, Ceff: np.ndarray, a: float, M: int):
    """R = (I - aH)^M and Sig = a^2 sum_m (I-aH)^m Ceff (I-aH)^m by direct products."""
    d = H.shape[0]
    B = np.eye(d) - a * H
    R = np.linalg.matrix_power(B, M)
    Sig = np.zeros((d, d))
    Bm = np.eye(d)
    for _ in range(M):
        Sig += Bm @ Ceff @ Bm.T
        Bm = B @ Bm
    return R, a * a * Sig


def mix(events, mu, P):
    """Generic mixture formula of THEORY_SPEC 10.1 for events (prob, T, u, N)."""
    mu2 = np.zeros_like(mu)
    P2 = np.zeros_like(P)
    for pr, T, u, N in events:
        m = T @ mu
        mu2 += pr * (m + u)
        P2 += pr * (T @ P @ T.T + np.outer(m, u) + np.outer(u, m) + np.outer(u, u) + N)
    return mu2, P2


def area_dense(q, p, p_s, M, sched, x0, K, batch=1):
    """Dense AREA moments with state (x_1..x_n, y_1..y_n, x_s, Ssum), explicit T_J/u_J/N_J."""
    n, d = q.n, q.dim
    A = [np.asarray(a) for a in q.A]
    b = [np.asarray(v) for v in q.b]
    xs = np.asarray(q.x_star)
    N = (2 * n + 2) * d
    ix = lambda i: slice(i * d, (i + 1) * d)
    iy = lambda i: slice((n + i) * d, (n + i + 1) * d)
    is_ = slice(2 * n * d, (2 * n + 1) * d)
    iS = slice((2 * n + 1) * d, N)
    mu = np.concatenate([np.tile(x0 - xs, 2 * n + 1), np.zeros(d)])
    P = np.outer(mu, mu)
    Abar = np.mean(A, axis=0)
    g = [A[i] @ (xs - b[i]) for i in range(n)]
    out = []

    def rec(k):
        a = sched(k)
        row = {"k": k, "sq_dist": np.trace(P[is_, is_]), "f_gap": 0.5 * np.sum(Abar * P[is_, is_]),
               "ergodic_f_gap": 0.5 * np.sum(Abar * P[iS, iS]) / k**2 if k else np.nan}
        for i in range(n):
            for nm, sl in (("ux", ix(i)), ("uy", iy(i))):
                row[f"{nm}_{i}"] = (np.trace(P[sl, sl]) + 2 * a * M * g[i] @ mu[sl]
                                    + (a * M) ** 2 * g[i] @ g[i])
        out.append(row)

    rec(0)
    for k in range(K):
        a = sched(k)
        events = []
        for i in range(n):
            R, Sig = dense_local_map(A[i], q.grad_noise_cov(i) / batch, a, M)
            T = np.eye(N)
            T[ix(i), :] = 0
            T[ix(i), is_] = R
            T[iy(i), :] = 0
            T[iy(i), ix(i)] = np.eye(d)
            T[iS, is_] += np.eye(d)
            u = np.zeros(N)
            u[ix(i)] = (np.eye(d) - R) @ (b[i] - xs)
            Nn = np.zeros((N, N))
            Nn[ix(i), ix(i)] = Sig
            events.append((p[i], T, u, Nn))
        T = np.eye(N)
        T[is_, :] = 0
        for j in range(n):
            T[is_, iy(j)] = np.eye(d) / n
        T[iS, is_] += np.eye(d)
        events.append((p_s, T, np.zeros(N), np.zeros((N, N))))
        mu, P = mix(events, mu, P)
        rec(k + 1)
        cov = P - np.outer(mu, mu)
        assert np.linalg.eigvalsh(0.5 * (cov + cov.T))[0] >= -1e-12 * np.trace(P)
    return out


def option_mats(q, option, alpha=None, lam=None, batch=1, batch_inner=None):
    """H_i and per-step noise covariance Ceff_i of Options A/B/C by direct matrix algebra."""
    d = q.dim
    Hs, Cs = [], []
    for i in range(q.n):
        A = np.asarray(q.A[i])
        C = q.grad_noise_cov(i)
        eye = np.eye(d)
        if option == "A":
            H, Ce = A, C / batch
        elif option == "B":
            E = eye - alpha * A
            H = A @ E @ E
            bi = batch if batch_inner is None else batch_inner
            Ce = E @ (C / batch + alpha**2 * A @ C @ A / bi) @ E
        else:
            Inv = np.linalg.inv(A + lam * eye)
            H = lam * A @ Inv
            Ce = lam**2 * Inv @ (C / batch) @ Inv
        Hs.append(0.5 * (H + H.T))
        Cs.append(Ce)
    return Hs, Cs


def fedasync_dense(q, option, Q, eta, beta, T, w0, *, pmf=None, rates=None, **kw):
    """Dense window (pmf) or exp-cycle (rates) moments with explicit event matrices."""
    n, d = q.n, q.dim
    Hs, Cs = option_mats(q, option, **kw)
    Hbar = np.mean(Hs, axis=0)
    wst = np.linalg.solve(Hbar, np.mean([Hs[i] @ q.b[i] for i in range(n)], axis=0))
    G, c, Sig = [], [], []
    for i in range(n):
        R, S = dense_local_map(Hs[i], Cs[i], eta, Q)
        G.append(np.eye(d) - R)
        c.append((np.eye(d) - R) @ (q.b[i] - wst))
        Sig.append(S)
    blk = lambda j: slice(j * d, (j + 1) * d)
    if pmf is not None:
        L = len(pmf)
        events = []
        for i in range(n):
            for s in range(L):
                Tm = np.zeros((L * d, L * d))
                Tm[blk(0), blk(0)] = np.eye(d)
                Tm[blk(0), blk(s)] += -beta * G[i]
                for j in range(1, L):
                    Tm[blk(j), blk(j - 1)] = np.eye(d)
                u = np.zeros(L * d)
                u[blk(0)] = beta * c[i]
                Nn = np.zeros((L * d, L * d))
                Nn[blk(0), blk(0)] = beta**2 * Sig[i]
                events.append((pmf[s] / n, Tm, u, Nn))
        nb = L
    else:
        pi = np.asarray(rates) / np.sum(rates)
        nb = n + 1
        events = []
        for i in range(n):
            Tm = np.eye(nb * d)
            row = np.zeros((d, nb * d))
            row[:, blk(0)] = np.eye(d)
            row[:, blk(i + 1)] += -beta * G[i]
            Tm[blk(0), :] = row
            Tm[blk(i + 1), :] = row
            u = np.zeros(nb * d)
            u[blk(0)] = u[blk(i + 1)] = beta * c[i]
            Nn = np.zeros((nb * d, nb * d))
            for a_ in (0, i + 1):
                for b_ in (0, i + 1):
                    Nn[blk(a_), blk(b_)] = beta**2 * Sig[i]
            events.append((pi[i], Tm, u, Nn))
    mu = np.tile(w0 - wst, nb)
    P = np.outer(mu, mu)
    gsq, sq = [], []
    for t in range(T + 1):
        gsq.append(np.sum((Hbar @ Hbar) * P[:d, :d]))
        sq.append(np.trace(P[:d, :d]))
        if t < T:
            mu, P = mix(events, mu, P)
    return np.array(gsq), np.array(sq), wst


# ---------------------------------------------------------------------------------------
# AREA: block form vs dense form, hand cases
# ---------------------------------------------------------------------------------------


def compare_area(df, ref, rtol=1e-12):
    for row in ref:
        got = df[df.k == row["k"]].iloc[0]
        for key, val in row.items():
            if key == "k" or (isinstance(val, float) and math.isnan(val)):
                continue
            scale = max(abs(val), 1e-300)
            assert abs(got[key] - val) <= rtol * max(scale, abs(row["sq_dist"])), (key, row["k"])


@pytest.mark.parametrize("noise", ["additive", "sampling"])
@pytest.mark.parametrize("n,d,M", [(1, 1, 1), (2, 2, 3), (3, 2, 2), (3, 1, 5)])
def test_area_block_equals_dense(n, d, M, noise):
    """Block recursion (10.1) == dense T_J/u_J/N_J form to 1e-12, varying alpha_k, batch 2."""
    q = rand_quad(10 * n + d + M, n, d, noise)
    rng = np.random.default_rng(n * 7 + M)
    p, ps = rand_probs(rng, n)
    sched = lambda k: 0.4 / (1.0 + 0.3 * k)
    x0 = rng.standard_normal(d) * 2
    K = 9
    df = orc.area_moments(q, p, ps, M, sched, x0, K, lyapunov=True, psd_every=1, batch=2)
    ref = area_dense(q, p, ps, M, sched, x0, K, batch=2)
    compare_area(df, ref)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 3), d=st.integers(1, 2),
       M=st.integers(1, 4), const=st.booleans())
def test_area_block_equals_dense_property(seed, n, d, M, const):
    """Property: on random small instances block == dense (1e-12); the dense covariance stays
    PSD (asserted inside area_dense) and area_moments' own PSD check never fires."""
    q = rand_quad(seed, n, d)
    rng = np.random.default_rng(seed + 1)
    p, ps = rand_probs(rng, n)
    a0 = float(rng.uniform(0.05, 0.9))
    sched = a0 if const else (lambda k: a0 / (1.0 + k))
    x0 = rng.standard_normal(d)
    df = orc.area_moments(q, p, ps, M, sched, x0, 6, psd_every=1, lyapunov=True)
    ref = area_dense(q, p, ps, M, sched if callable(sched) else (lambda k: a0), x0, 6)
    compare_area(df, ref)


def test_area_hand_case_n1():
    """n = 1, d = 1, A = a, b = 0: x_s changes first at k = 3, iff events (1, 1, s).

    E x_{s,3}^2 = (1 - q) x0^2 + q (R^2 x0^2 + Sig), q = p^2 p_s, R = (1 - alpha a)^M,
    Sig = alpha^2 S sum_{m<M} (1 - alpha a)^{2m}; E f(xbar_4) = a/2 [(1-q) x0^2
    + q ((3 + R)^2 x0^2 + Sig)/16]."""
    a, S, al, M, x0 = 1.5, 0.2, 0.1, 3, 2.0
    q = QuadraticProblem([[[a]]], [[0.0]], noise_cov=[[[S]]])
    p, ps = 0.6, 0.4
    df = orc.area_moments(q, [p], ps, M, al, [x0], 4)
    R = (1 - al * a) ** M
    Sig = al**2 * S * sum((1 - al * a) ** (2 * m) for m in range(M))
    qq = p * p * ps
    assert df.sq_dist.iloc[:3].tolist() == pytest.approx([x0**2] * 3, rel=1e-15)
    assert df.sq_dist.iloc[3] == pytest.approx((1 - qq) * x0**2 + qq * (R**2 * x0**2 + Sig),
                                               rel=1e-13)
    assert df.f_gap.iloc[3] == pytest.approx(0.5 * a * df.sq_dist.iloc[3], rel=1e-13)
    exp4 = 0.5 * a * ((1 - qq) * x0**2 + qq * ((3 + R) ** 2 * x0**2 + Sig) / 16)
    assert df.ergodic_f_gap.iloc[4] == pytest.approx(exp4, rel=1e-13)
    assert math.isnan(df.ergodic_f_gap.iloc[0])
    assert df.ergodic_f_gap.iloc[1] == pytest.approx(0.5 * a * x0**2, rel=1e-15)


def test_area_lyapunov_initial_values_and_scale_invariance():
    """ux_i(0) = uy_i(0) = r_i^2 = ||x_s0 - x* + alpha_0 M grad f_i(x*)||^2 (THEORY_SPEC 6.c);
    rescaling x by s (b, x0 by s, noise covariance by s^2) scales every second moment by s^2
    exactly, for s = 1e-6 and 1e6 (the PSD guard is scale-relative and must not fire)."""
    rng = np.random.default_rng(9)
    A = [rand_spd(rng, 2, 0.5, 2.0) for _ in range(3)]
    b = rng.standard_normal((3, 2))
    S = [rand_spd(rng, 2, 0.1, 0.3) for _ in range(3)]
    p, ps = [0.2, 0.3, 0.1], 0.4
    sched = lambda k: 0.3 / (1 + 0.1 * k)
    x0 = np.array([1.0, 2.0])
    base = orc.area_moments(QuadraticProblem(A, b, noise_cov=S), p, ps, 2, sched, x0, 30,
                            lyapunov=True, psd_every=1)
    q = QuadraticProblem(A, b, noise_cov=S)
    for i in range(3):
        r = np.linalg.norm(x0 - q.x_star + 0.3 * 2 * q.grad(i, q.x_star))
        assert base[f"ux_{i}"].iloc[0] == pytest.approx(r**2, rel=1e-14)
        assert base[f"uy_{i}"].iloc[0] == pytest.approx(r**2, rel=1e-14)
    for sc in (1e-6, 1e6):
        qs = QuadraticProblem(A, sc * b, noise_cov=[sc**2 * m for m in S])
        df = orc.area_moments(qs, p, ps, 2, sched, sc * x0, 30, lyapunov=True, psd_every=1)
        for col in base.columns[1:]:
            np.testing.assert_allclose(df[col].to_numpy()[1:] / sc**2,
                                       base[col].to_numpy()[1:], rtol=1e-11)


def test_geom_sum_edge_cases():
    """The geometric kernel handles r = 1 (singular A), r = 0, r < 0 and r -> 1 exactly."""
    lp = np.array([0.0, 1.0, 3.0, 1e-9, 2.0])
    for M in (1, 2, 7):
        got = ocm.geom_sum(1.0 if M else 0, lp, lp, M)
        for j, l in enumerate(lp):
            r = (1 - l) ** 2
            assert got[j] == pytest.approx(sum(r**m for m in range(M)), rel=1e-14)
    # near r = 1 the closed form (1 - r^M)/(1 - r) loses digits; ours does not
    a, lam_, M = 1e-9, 1e-3, 50
    r = (1 - a * lam_) ** 2
    exact = sum(r**m for m in range(M))
    assert ocm.geom_sum(a, np.array([lam_]), np.array([lam_]), M)[0] == pytest.approx(exact,
                                                                                      rel=1e-15)


def test_area_record_every_and_attrs():
    q = rand_quad(1, 2, 2)
    df = orc.area_moments(q, [0.3, 0.3], 0.4, 2, 0.2, np.zeros(2), 10, record_every=4)
    assert df.k.tolist() == [0, 4, 8, 10]
    full = orc.area_moments(q, [0.3, 0.3], 0.4, 2, 0.2, np.zeros(2), 10)
    assert np.array_equal(full.set_index("k").loc[[0, 4, 8, 10]].sq_dist.values,
                          df.sq_dist.values)
    assert df.attrs["state_dim"] == 10 and df.attrs["exact"] is True
    assert list(df.columns) == ["k", "sq_dist", "f_gap", "ergodic_f_gap"]


def test_psd_check_fires():
    """The PSD guard is able to fail: a matrix with a negative eigenvalue raises."""
    bad = np.diag([1.0, -1e-6])
    with pytest.raises(FedsimError, match="semidefinite"):
        ocm.check_psd(bad, 1.0, "here")
    ocm.check_psd(np.diag([1.0, -1e-11]), 1.0, "fine")


# ---------------------------------------------------------------------------------------
# AREA: Monte Carlo of the literal model
# ---------------------------------------------------------------------------------------


def simulate_area(q, p, ps, M, sched, x0, K, reps, seed, record, batch=1):
    """Vectorised simulation of [A] eqs (5)-(7): R independent replicates, fresh noise per step."""
    rng = np.random.default_rng(seed)
    n, d = q.n, q.dim
    A = np.asarray(q.A)
    b = np.asarray(q.b)
    Lc = np.linalg.cholesky(np.stack([q.grad_noise_cov(i) / batch for i in range(n)]))
    x = np.tile(x0, (reps, n, 1))
    y = x.copy()
    s = np.tile(x0, (reps, 1))
    S = np.zeros((reps, d))
    probs = np.append(p, ps)
    res = {}
    ar = np.arange(reps)
    for k in range(K + 1):
        if k in record:
            e = S / max(k, 1) - q.x_star
            res[k] = (np.sum((s - q.x_star) ** 2, axis=1),
                      0.5 * np.einsum("ra,ab,rb->r", e, q.Abar, e) if k else None)
        if k == K:
            break
        a = sched(k)
        J = rng.choice(n + 1, size=reps, p=probs)
        cl = np.minimum(J, n - 1)
        z = s.copy()
        for _ in range(M):
            e = np.einsum("rab,rb->ra", Lc[cl], rng.standard_normal((reps, d)))
            z = z - a * (np.einsum("rab,rb->ra", A[cl], z - b[cl]) + e)
        S = S + s
        is_c = J < n
        newx = x.copy()
        newx[ar[is_c], cl[is_c]] = z[is_c]
        y[ar[is_c], cl[is_c]] = x[ar[is_c], cl[is_c]]
        x = newx
        srv = J == n
        s = np.where(srv[:, None], y.mean(axis=1), s)
    return res


def test_area_monte_carlo_agreement():
    """Exact oracle vs 20000 simulated runs of the literal model at 4 k's, two quantities.

    |z| < 4.5 for each of 8 (correlated) z-scores: false-alarm rate <= 8 * 6.8e-6 = 5.4e-5
    (Bonferroni, normal approximation).  Seeded, so the outcome is deterministic."""
    q = rand_quad(5, 3, 2)
    p, ps = np.array([0.15, 0.25, 0.35]), 0.25
    sched = lambda k: 0.3 / (1 + 0.05 * k)
    x0 = np.array([2.0, -1.0])
    ks = [5, 20, 40, 60]
    df = orc.area_moments(q, p, ps, 3, sched, x0, 60).set_index("k")
    sim = simulate_area(q, p, ps, 3, sched, x0, 60, 20000, 11, set(ks))
    for k in ks:
        for col, vals in (("sq_dist", sim[k][0]), ("ergodic_f_gap", sim[k][1])):
            z = (vals.mean() - df.loc[k, col]) / (vals.std(ddof=1) / math.sqrt(len(vals)))
            assert abs(z) < 4.5, (k, col, z)


# ---------------------------------------------------------------------------------------
# AREA: certified Theorem 7 bound >= exact oracle
# ---------------------------------------------------------------------------------------


def thm7_ratio(M, kappa, seed, K, record_every=1):
    mu, L = 1.0, kappa
    q = QuadraticProblem.random(3, 2, mu, L, shared_hessian=False, seed=seed, noise_sd=0.3)
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.5, 3.0, 3)
    rs = 1.2
    tot = rates.sum() + rs
    p, ps = rates / tot, rs / tot
    p_min = min(p.min(), ps)
    sched = lambda k: float(step_size(k, L=L, mu=mu, M=M, p_min=p_min))
    x0 = q.x_star + rng.standard_normal(2) * 3
    df = orc.area_moments(q, p, ps, M, sched, x0, K, record_every=record_every)
    sigma = math.sqrt(max(np.trace(q.grad_noise_cov(i)) for i in range(3)))
    zeta = float(np.max(np.linalg.norm(np.asarray(q.b) - q.x_star, axis=1)))
    a0 = sched(0)
    r = [float(np.linalg.norm(x0 - q.x_star + a0 * M * q.grad(i, q.x_star))) for i in range(3)]
    res = theorem7(L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta,
                   R0=float(np.linalg.norm(x0 - q.x_star)), K=df.k.to_numpy(), r_init=r)
    return np.asarray(res.value) / df.sq_dist.to_numpy(), res


@pytest.mark.parametrize("M", [1, 2, 5])
@pytest.mark.parametrize("kappa", [1.5, 10.0])
def test_theorem7_certified_bound_dominates_exact(M, kappa):
    """Certified (C) bound >= exact E||x_{s,k}-x*||^2 for every k <= 1500 (rel. tol 1e-12)."""
    ratio, res = thm7_ratio(M, kappa, seed=3 * M + int(kappa), K=1500)
    assert res.status.value == "CERTIFIED_CORRECTED"
    assert ratio[0] == pytest.approx(1.0, rel=1e-12)           # exact initial value
    assert np.all(ratio >= 1.0 - 1e-12), ratio.min()


@pytest.mark.slow
@pytest.mark.parametrize("M", [1, 2, 5])
@pytest.mark.parametrize("kappa", [1.5, 10.0])
def test_theorem7_certified_bound_dominates_exact_long(M, kappa):
    """As above up to K = 2e4 (spec 6.d: min ratio about 1.00002, near k = 1)."""
    ratio, _ = thm7_ratio(M, kappa, seed=3 * M + int(kappa), K=20000)
    assert np.all(ratio >= 1.0 - 1e-12), ratio.min()


# ---------------------------------------------------------------------------------------
# enumeration oracle
# ---------------------------------------------------------------------------------------


def paper_alpha8(p, ps, M, K, B=1.0, sigma2=1e-4, R=1.0, corrected=False):
    qbar = float(np.mean(1.0 / np.asarray(p)))
    CB = sigma2 + (M * B**2 if corrected else (M + 1) * B**2 / 2)
    return math.sqrt((1 / ps + 2 * qbar) * R**2 / (CB * M * K)), qbar, CB


@pytest.mark.parametrize("M,K,exact,paper,corr", [(50, 9, 0.819411, 0.720726, 1.009218),
                                                  (10, 8, 0.883030, 0.793864, 1.070441)])
def test_enumeration_reproduces_thm8_counterexample(M, K, exact, paper, corr):
    """THEORY_SPEC 7.d table: f_i = |x|, n = 2, p_i = 0.3, p_s = 0.4, paper step alpha."""
    pr = NormProblem(B=1.0, n=2, dim=1)
    p, ps = [0.3, 0.3], 0.4
    alpha, qbar, CB = paper_alpha8(p, ps, M, K)
    df = orc.enumerate_events(pr, p, ps, M, alpha, [1.0], K)
    val = df.ergodic_f_gap.iloc[-1]
    assert val == pytest.approx(exact, abs=6e-7)
    assert df.attrs["total_prob"] == pytest.approx(1.0, abs=1e-12)
    b_paper = math.sqrt((1 / ps + 2 * qbar) * CB / (M * K))
    _, _, CBc = paper_alpha8(p, ps, M, K, corrected=True)
    b_corr = math.sqrt((1 / ps + 2 * qbar) * CBc / (M * K))
    assert b_paper == pytest.approx(paper, abs=6e-7)
    assert b_corr == pytest.approx(corr, abs=6e-7)
    assert b_paper < val < b_corr            # paper statement violated; corrected one holds


def test_enumeration_equals_moments_for_deterministic_quadratic():
    """sigma = 0: enumeration (7.d) and the moment recursion (10.1) agree to 1e-12 at every k."""
    rng = np.random.default_rng(4)
    A = [rand_spd(rng, 2, 0.5, 2.0) for _ in range(2)]
    b = rng.standard_normal((2, 2))
    q = QuadraticProblem(A, b)
    p, ps = [0.25, 0.35], 0.4
    sched = lambda k: 0.3 / (1 + 0.2 * k)
    x0 = np.array([1.0, -2.0])
    en = orc.enumerate_events(q, p, ps, 3, sched, x0, 8)
    mo = orc.area_moments(q, p, ps, 3, sched, x0, 8)
    for col in ("sq_dist", "f_gap", "ergodic_f_gap"):
        np.testing.assert_allclose(en[col].to_numpy()[1:], mo[col].to_numpy()[1:], rtol=1e-12)
    assert en.n_states.iloc[-1] > 1


def test_enumeration_hand_case():
    """n = 1, f = |x|, M = 1, alpha = 0.25, x0 = 1: after (1, 1, s) x_s = 0.75 at k = 3."""
    pr = NormProblem(B=1.0, n=1, dim=1)
    df = orc.enumerate_events(pr, [0.5], 0.5, 1, 0.25, [1.0], 3, subgrad=lambda i, x: np.sign(x))
    assert df.sq_dist.tolist()[:3] == [1.0, 1.0, 1.0]
    assert df.sq_dist.iloc[3] == pytest.approx(0.875 * 1.0 + 0.125 * 0.75**2, rel=1e-15)
    assert df.n_states.tolist() == [1, 2, 3, 4]   # merges: (x,y,s,S) bit-identical


# ---------------------------------------------------------------------------------------
# FedAsync oracles
# ---------------------------------------------------------------------------------------

OPTS = [("A", {}), ("B", {"alpha": 0.3, "batch_inner": 3}), ("C", {"lam": 2.5})]


@pytest.mark.parametrize("option,kw", OPTS)
@pytest.mark.parametrize("pmf", [[1.0], [0.2, 0.5, 0.3], [0.0, 0.0, 1.0]])
def test_window_equals_dense(option, kw, pmf):
    """Window model (10.2(a)): fast recursion == explicit per-(i, s) event matrices, 1e-12."""
    q = rand_quad(21, 3, 2, noise="sampling" if option == "B" else "additive")
    w0 = np.array([3.0, -1.0])
    df = orc.fedasync_window_moments(q, option, 3, 0.15, 0.9, pmf, 12, w0, batch=2, **kw)
    gsq, sq, wst = fedasync_dense(q, option, 3, 0.15, 0.9, 12, w0, pmf=pmf, batch=2, **kw)
    np.testing.assert_allclose(df.grad_sq, gsq, rtol=1e-12)
    np.testing.assert_allclose(df.sq_dist, sq, rtol=1e-12)
    avg = np.concatenate([[np.nan], np.cumsum(gsq)[:-1] / np.arange(1, 13)])
    np.testing.assert_allclose(df.avg_grad_sq[1:], avg[1:], rtol=1e-12)
    assert df.attrs["assumption1_holds"] is True and df.attrs["tau"] == len(pmf) - 1
    ref = {"A": lambda: q.x_star, "B": lambda: q.maml(kw.get("alpha", 0)).w_star,
           "C": lambda: q.me(kw.get("lam", 1)).w_star}[option]()
    np.testing.assert_allclose(wst, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("option,kw", OPTS)
@pytest.mark.parametrize("rates", [[1.0, 1.0, 1.0], [0.5, 1.0, 3.0]])
def test_expcycle_equals_dense(option, kw, rates):
    """Exp-cycle model (10.2(b)): fast recursion == explicit event matrices, 1e-12; flags."""
    q = rand_quad(22, 3, 2)
    w0 = np.array([-2.0, 1.0])
    df = orc.fedasync_expcycle_moments(q, option, 2, 0.2, 0.7, rates, 10, w0, **kw)
    gsq, sq, _ = fedasync_dense(q, option, 2, 0.2, 0.7, 10, w0, rates=rates, **kw)
    np.testing.assert_allclose(df.grad_sq, gsq, rtol=1e-12)
    np.testing.assert_allclose(df.sq_dist, sq, rtol=1e-12)
    assert df.attrs["assumption1_holds"] is False
    assert df.attrs["staleness_bound"] == math.inf
    assert df.attrs["uploader_uniform"] is (len(set(rates)) == 1)


def test_window_hand_case():
    """n = 1, d = 1, tau = 0, noise-free Option A: w^t - b = (1 - beta(1-(1-eta a)^Q))^t (w0-b)."""
    a, bb, eta, beta, Q, w0 = 2.0, 0.5, 0.1, 0.8, 3, 2.5
    q = QuadraticProblem([[[a]]], [[bb]])
    df = orc.fedasync_window_moments(q, "A", Q, eta, beta, [1.0], 5, [w0])
    rho = 1 - beta * (1 - (1 - eta * a) ** Q)
    e = (w0 - bb) * rho ** np.arange(6)
    np.testing.assert_allclose(df.sq_dist, e**2, rtol=1e-14)
    np.testing.assert_allclose(df.grad_sq, (a * e) ** 2, rtol=1e-14)
    assert df.avg_grad_sq.iloc[3] == pytest.approx(np.mean((a * e[:3]) ** 2), rel=1e-14)


def simulate_fedasync(q, option, Q, eta, beta, T, w0, reps, seed, *, pmf=None, rates=None,
                      batch=1, batch_inner=None, alpha=None, lam=None):
    """Literal PersA-FL local updates (THEORY_SPEC 2.1), vectorised over replicates.

    Window: uploader Uniform[n], delay s ~ pmf, the update computed from w^{max(t-s,0)}.
    Exp-cycle: uploader i.i.d. rate_i/sum, computed from that client's last download."""
    rng = np.random.default_rng(seed)
    n, d = q.n, q.dim
    A = np.asarray(q.A)
    b = np.asarray(q.b)
    Lc = np.linalg.cholesky(np.stack([q.grad_noise_cov(i) for i in range(n)]))
    ar = np.arange(reps)

    def noise(cl, m):
        return np.einsum("rab,rb->ra", Lc[cl], rng.standard_normal((reps, d))) / math.sqrt(m)

    def Av(cl, v):
        return np.einsum("rab,rb->ra", A[cl], v)

    def local(cl, x):
        for _ in range(Q):
            if option == "A":
                dirn = Av(cl, x - b[cl]) + noise(cl, batch)
            elif option == "B":
                g_in = Av(cl, x - b[cl]) + noise(cl, batch_inner or batch)     # batch D'
                g_out = Av(cl, x - alpha * g_in - b[cl]) + noise(cl, batch)     # batch D
                dirn = g_out - alpha * Av(cl, g_out)                            # Hessian exact
            else:
                e = noise(cl, batch)
                rhs = Av(cl, b[cl]) - e + lam * x
                theta = np.linalg.solve(A[cl] + lam * np.eye(d), rhs[:, :, None])[:, :, 0]
                dirn = lam * (x - theta)
            x = x - eta * dirn
        return x

    if pmf is not None:
        L = len(pmf)
        hist = np.tile(w0, (reps, L, 1))
    else:
        pi = np.asarray(rates) / np.sum(rates)
        w = np.tile(w0, (reps, 1))
        dl = np.tile(w0, (reps, n, 1))
    out = []
    for t in range(T + 1):
        cur = hist[:, 0] if pmf is not None else w
        out.append(cur.copy())
        if t == T:
            break
        if pmf is not None:
            cl = rng.integers(0, n, reps)
            s = rng.choice(L, size=reps, p=pmf)
            x0 = hist[ar, s]
            new = cur - beta * (x0 - local(cl, x0))
            hist = np.concatenate([new[:, None], hist[:, :-1]], axis=1)
        else:
            cl = rng.choice(n, size=reps, p=pi)
            x0 = dl[ar, cl]
            w = cur - beta * (x0 - local(cl, x0))
            dl[ar, cl] = w
    return np.stack(out, axis=1)          # (reps, T+1, d)


@pytest.mark.parametrize("model", ["window", "expcycle"])
@pytest.mark.parametrize("option,kw", OPTS)
def test_fedasync_monte_carlo_agreement(model, option, kw):
    """Oracle vs 6000 literal runs: grad_sq at t in {3, 8, 15} and avg_grad_sq at T = 15.

    4 z-scores per case, |z| < 4.5 each: false-alarm rate <= 4 * 6.8e-6 = 2.7e-5 per case,
    1.6e-4 over the 6 cases (Bonferroni, normal approximation).  Seeded."""
    q = rand_quad(31, 3, 2)
    w0 = np.array([2.5, -2.0])
    T = 15
    extra = {"pmf": [0.3, 0.3, 0.4]} if model == "window" else {"rates": [0.5, 1.0, 2.0]}
    fn = orc.fedasync_window_moments if model == "window" else orc.fedasync_expcycle_moments
    arg = extra.get("pmf", extra.get("rates"))
    df = fn(q, option, 2, 0.2, 1.0, arg, T, w0, batch=2, **kw)
    W = simulate_fedasync(q, option, 2, 0.2, 1.0, T, w0, 6000, 99, batch=2, **extra, **kw)
    Hbar = {"A": lambda: q.Abar, "B": lambda: q.maml(kw.get("alpha", 0)).Hbar,
            "C": lambda: q.me(kw.get("lam", 1)).Hbar}[option]()
    wst = np.asarray(df.attrs["w_star"])
    g = np.einsum("ab,rtb->rta", Hbar, W - wst)
    gsq = np.sum(g**2, axis=2)                              # (reps, T+1)
    checks = [(gsq[:, t], df.grad_sq.iloc[t]) for t in (3, 8, 15)]
    checks.append((gsq[:, :T].mean(axis=1), df.avg_grad_sq.iloc[T]))
    for vals, exact in checks:
        z = (vals.mean() - exact) / (vals.std(ddof=1) / math.sqrt(len(vals)))
        assert abs(z) < 4.5, (vals.mean(), exact, z)


def test_expcycle_staleness_law():
    """Geometric mixture: sums to 1, mean n - 1, equal rates (1/n)(1-1/n)^s; and matches an
    exponential-race simulation (chi-square-free check: |emp - pmf| < 5 binomial sd for
    s <= 6, per-cell false-alarm rate 5.7e-7, 7 cells: 4e-6)."""
    s = np.arange(0, 3000)
    for rates in ([1.0, 1.0, 1.0, 1.0], [0.2, 1.0, 5.0]):
        pmf = orc.expcycle_staleness_pmf(rates, s)
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
        assert (s * pmf).sum() == pytest.approx(len(rates) - 1, rel=1e-9)
    np.testing.assert_allclose(orc.expcycle_staleness_pmf([2.0] * 4, s[:5]),
                               0.25 * 0.75 ** s[:5], rtol=1e-15)
    rates = np.array([0.2, 1.0, 5.0])
    rng = np.random.default_rng(8)
    nxt = rng.exponential(1 / rates)
    last = np.zeros(3, dtype=int)
    stale = []
    for t in range(60000):
        i = int(np.argmin(nxt))
        stale.append(t - last[i])
        last[i] = t + 1
        nxt[i] += rng.exponential(1 / rates[i])
    stale = np.array(stale)
    N = len(stale)
    for sv in range(7):
        pr = float(orc.expcycle_staleness_pmf(rates, sv))
        emp = np.mean(stale == sv)
        assert abs(emp - pr) < 5 * math.sqrt(pr * (1 - pr) / N), sv


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------


def test_bad_inputs_raise_config_error():
    q = rand_quad(2, 2, 2)
    ok = dict(p=[0.3, 0.3], p_s=0.4, M=2, alpha_schedule=0.1, x_s0=np.zeros(2), K=3)
    cases = [
        ({"p": [0.3, 0.4]}, "p "), ({"p": [0.6, -0.2]}, "p "), ({"p_s": 0.0}, "p_s"),
        ({"M": 0}, "M must"), ({"K": -1}, "K must"), ({"alpha_schedule": -0.1}, "alpha"),
        ({"alpha_schedule": lambda k: -1.0}, r"alpha_schedule\(0\)"),
        ({"x_s0": np.zeros(3)}, "x_s0"), ({"K": 2.5}, "K must"),
    ]
    for change, msg in cases:
        with pytest.raises(ConfigError, match=msg):
            orc.area_moments(q, **{**ok, **change})
    with pytest.raises(ConfigError, match="problem"):
        orc.area_moments(NormProblem(n=2, dim=2), **ok)
    with pytest.raises(ConfigError, match="record_every"):
        orc.area_moments(q, **ok, record_every=0)
    w = np.zeros(2)
    with pytest.raises(ConfigError, match="option"):
        orc.fedasync_window_moments(q, "D", 2, 0.1, 1.0, [1.0], 3, w)
    with pytest.raises(ConfigError, match="alpha"):
        orc.fedasync_window_moments(q, "B", 2, 0.1, 1.0, [1.0], 3, w)
    with pytest.raises(ConfigError, match="lam"):
        orc.fedasync_window_moments(q, "C", 2, 0.1, 1.0, [1.0], 3, w)
    with pytest.raises(ConfigError, match="lam"):
        orc.fedasync_window_moments(q, "A", 2, 0.1, 1.0, [1.0], 3, w, lam=1.0)
    with pytest.raises(ConfigError, match="delay_pmf"):
        orc.fedasync_window_moments(q, "A", 2, 0.1, 1.0, [0.5, 0.6], 3, w)
    with pytest.raises(ConfigError, match="delay_pmf"):
        orc.fedasync_window_moments(q, "A", 2, 0.1, 1.0, [1.2, -0.2], 3, w)
    with pytest.raises(ConfigError, match="eta"):
        orc.fedasync_window_moments(q, "A", 2, 0.0, 1.0, [1.0], 3, w)
    with pytest.raises(ConfigError, match="rates"):
        orc.fedasync_expcycle_moments(q, "A", 2, 0.1, 1.0, [1.0], 3, w)
    with pytest.raises(ConfigError, match="rates"):
        orc.fedasync_expcycle_moments(q, "A", 2, 0.1, 1.0, [1.0, 0.0], 3, w)
    with pytest.raises(ConfigError, match="max_states"):
        orc.enumerate_events(NormProblem(n=2, dim=1), [0.3, 0.3], 0.4, 2, 0.1, [1.0], 6,
                             max_states=10)
