"""Tests of theory/area/: AREA Theorems 7-8 (THEORY_SPEC sections 6, 7, 8, 12 items 5 and 7).

Golden values are computed here with independent float64 arithmetic (scalar Python, per-client
loops), not by calling the code under test, and the most important ones are also pinned as
literals.  The certified Theorem 7 bound is checked against an exact first/second-moment
recursion of the AREA model (2.2) on 1-d quadratics, written in this file.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fedsim.theory.area import (
    SCHEDULE,
    area_constants,
    optimal_server_rate,
    step_size,
    theorem7,
    theorem8,
)
from fedsim.theory.area import certified as area_certified
from fedsim.theory.result import Status
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError

# golden instance of the brief: n=2, p=(0.3,0.3), p_s=0.4, L=2, mu=1, M=3, sigma=0.5, zeta=1
G = dict(L=2.0, mu=1.0, M=3, p=[0.3, 0.3], p_s=0.4, sigma=0.5, zeta=1.0)


def _sum_terms(res) -> float | np.ndarray:
    skip = {"value_if_hypotheses_ignored", "B8_general_alpha"}
    return sum(v for k, v in res.terms.items() if k not in skip)


# ------------------------------------------------------------------------------------------
# hand computation of the golden instance
# ------------------------------------------------------------------------------------------


def _hand_constants():
    L, mu, M, ps, p = 2.0, 1.0, 3, 0.4, [0.3, 0.3]
    gamma = 2 * mu * L / (mu + L)  # 4/3
    D_entries = [
        2 / (M * (mu + L)),  # 2/9
        gamma / (L**2 * (M - 1)),  # 1/6
        math.sqrt(M * gamma**2 / (64 * L**4 * (M - 1) ** 3)),  # sqrt(1/1536)
        (gamma / (32 * L**4 * (M - 1) ** 3)) ** (1 / 3),  # cbrt(1/3072)
    ]
    D = min(D_entries)
    p_min = 0.3
    c = 48 / (p_min * M * gamma)  # 40
    d = c / D
    alpha0 = c / d
    beta0 = 1 - alpha0 * M * gamma / 4
    qbar = (1 / 0.3 + 1 / 0.3) / 2
    kappa, delta = L / mu, 1 - 1 / M
    chat_sigma = (1 + gamma / (4 * L)) * M
    chat_zeta = L**2 * M * (M - 1) / 2
    ct_paper = 1 + 2 * kappa * delta + 4 * L**2 * delta / (M * (mu + L) ** 2)
    ct_corr = 1 + 2 * kappa * delta**3 + 4 * L**2 * delta**3 / (mu + L) ** 2
    c_sigma = 2 * M * max(ct_paper, ct_corr)
    c_zeta = 4 * L**4 * (M - 1) ** 3 * (2 / gamma + 2 / (mu + L))
    psi = 1 / ps + qbar * (beta0 ** (-2 / 3) + beta0 ** (-1 / 3))
    c1 = 2 * c * L * M
    c3 = 2 * c**2 * c_sigma
    return dict(
        gamma=gamma,
        D_entries=D_entries,
        D=D,
        c=c,
        d=d,
        alpha_0=alpha0,
        beta_0=beta0,
        qbar=qbar,
        chat_sigma=chat_sigma,
        chat_zeta=chat_zeta,
        ctil_sigma_paper=ct_paper,
        ctil_sigma_corr=ct_corr,
        c_sigma=c_sigma,
        c_zeta=c_zeta,
        psi=psi,
        c1=c1,
        c3=c3,
        c8=math.sqrt(psi * c * chat_sigma * c1 / 6),
        c8_paper=math.sqrt((1 + qbar) * chat_sigma * c1 / 12),
        p=p,
        ps=ps,
        L=L,
        M=M,
        p_min=p_min,
    )


def test_area_constants_golden_hand():
    h = _hand_constants()
    cs = area_constants(**G)
    for k in (
        "gamma",
        "D",
        "c",
        "d",
        "alpha_0",
        "beta_0",
        "qbar",
        "chat_sigma",
        "chat_zeta",
        "ctil_sigma_paper",
        "ctil_sigma_corr",
        "c_sigma",
        "c_zeta",
        "psi",
        "c1",
        "c3",
        "c8",
    ):
        assert cs[k] == pytest.approx(h[k], rel=1e-14), k
    np.testing.assert_allclose(cs["D_entries"], h["D_entries"], rtol=1e-14)
    assert cs["ctil_sigma"] == max(cs["ctil_sigma_paper"], cs["ctil_sigma_corr"])
    assert cs["r_p"] == pytest.approx(0.4 / 0.3, rel=1e-15)
    assert cs["p_min"] == 0.3
    # pinned literals (THEORY_SPEC 6.b/6.c for the golden instance)
    assert cs["gamma"] == pytest.approx(4 / 3, rel=1e-15)
    assert cs["c"] == pytest.approx(40.0, rel=1e-14)
    assert cs["D"] == pytest.approx(math.sqrt(1 / 1536), rel=1e-14)  # third entry is the min
    assert cs["D"] == pytest.approx(0.025515518153991, rel=1e-12)
    assert cs["d"] == pytest.approx(1567.6734353812342, rel=1e-12)
    assert cs["beta_0"] == pytest.approx(0.9744844818460086, rel=1e-12)
    assert cs["ctil_sigma"] == pytest.approx(4.061728395061729, rel=1e-12)
    assert cs["psi"] == pytest.approx(9.253444057731908, rel=1e-12)
    assert cs["c8"] == pytest.approx(321.9294541457762, rel=1e-12)
    paper = area_constants(**G, corrected=False)
    assert paper["psi"] == pytest.approx(1 + h["qbar"], rel=1e-15)
    assert paper["c8"] == pytest.approx(h["c8_paper"], rel=1e-14)
    assert paper["ctil_sigma"] == pytest.approx(h["ctil_sigma_paper"], rel=1e-15)


def test_M1_D_is_first_entry_and_d_lower_bound():
    cs = area_constants(L=3.0, mu=1.0, M=1, p=[0.5], p_s=0.5, sigma=1.0, zeta=0.0)
    assert cs["D"] == pytest.approx(2 / 4)
    assert np.all(np.isinf(cs["D_entries"][1:]))
    assert cs["d"] >= 24 / cs["p_min"] * (1 - 1e-12)  # 6.b fact d >= 24/p_min
    assert cs["c_zeta"] == 0.0 and cs["chat_zeta"] == 0.0


def test_step_size_schedule():
    h = _hand_constants()
    ks = np.array([0, 1, 2, 1000])
    a = step_size(ks, L=2.0, mu=1.0, M=3, p_min=0.3)
    expect = 1 / (0.3 * 3 * h["gamma"] * ks / 48 + 1 / h["D"])  # H7.4 as printed in [A]
    np.testing.assert_allclose(a, expect, rtol=1e-13)
    assert step_size(0, L=2.0, mu=1.0, M=3, p_min=0.3) == pytest.approx(h["D"], rel=1e-14)
    assert isinstance(step_size(5, L=2.0, mu=1.0, M=3, p_min=0.3), float)
    assert np.all(np.diff(a) < 0)


# ------------------------------------------------------------------------------------------
# certified level: hand iteration of (C1) and (C2)
# ------------------------------------------------------------------------------------------


def _hand_certified(h, r, R0, sigma, zeta, K):
    """Plain scalar transcription of 6.d (C1)/(C2); returns lists over k = 0..K."""
    L, M, gamma, c, d, ps, p = h["L"], h["M"], h["gamma"], h["c"], h["d"], h["ps"], h["p"]
    n = len(p)
    hh = L * M * zeta

    def alpha(k):
        return c / (k + d)

    Ux = [ri**2 for ri in r]
    Uy = list(Ux)
    Vx = list(r)
    Vy = list(r)
    Us, Vs = R0**2, R0
    b0 = 1 - alpha(0) * M * gamma / 4
    w0 = b0 ** (-2 / 3) + b0 ** (-1 / 3)
    Lam = sum(w0 / (n * p[i]) * r[i] ** 2 for i in range(n)) + R0**2 / ps
    lam = sum(w0 / (n * p[i]) * r[i] for i in range(n)) + R0 / ps
    c1s, c2s = [Us], [ps * Lam]
    for k in range(K):
        a = alpha(k)
        Da = alpha(k) - alpha(k + 1)
        bk = 1 - a * M * gamma / 4
        nUx, nUy, nVx, nVy = [], [], [], []
        for i in range(n):
            pi = p[i]
            nUx.append(
                (1 - pi) * Ux[i]
                + 2 * (1 - pi) * Da * hh * Vx[i]
                + pi * bk * Us
                + 2 * pi * Da * hh * (1 - a * M * gamma / 2) * Vs
                + (1 + pi) * Da**2 * hh**2
                + pi * a**2 * h["c_sigma"] * sigma**2
                + pi * a**3 * h["c_zeta"] * zeta**2
            )
            nUy.append(
                (1 - pi) * Uy[i]
                + 2 * (1 - pi) * Da * hh * Vy[i]
                + pi * Ux[i]
                + 2 * pi * Da * hh * Vx[i]
                + Da**2 * hh**2
            )
            nVx.append(
                (1 - pi) * Vx[i]
                + Da * hh
                + pi * bk * Vs
                + pi * a**2 * h["chat_zeta"] * zeta
                + pi * a * h["chat_sigma"] * sigma
            )
            nVy.append((1 - pi) * Vy[i] + pi * Vx[i] + Da * hh)
        Us = (1 - ps) * Us + ps / n * sum(Uy)
        Vs = (1 - ps) * Vs + ps / n * sum(Vy)
        Ux, Uy, Vx, Vy = nUx, nUy, nVx, nVy
        rho = 1 - h["p_min"] + h["p_min"] * bk ** (1 / 3)
        wc = h["qbar"] * (bk ** (-2 / 3) + bk ** (-1 / 3))
        wp = bk ** (-2 / 3)
        Lam, lam = (
            rho * Lam
            + 2 * Da * hh * rho * lam
            + 2 * wc * Da**2 * hh**2
            + wp * (a**2 * h["c_sigma"] * sigma**2 + a**3 * h["c_zeta"] * zeta**2),
            rho * lam
            + wc * Da * hh
            + wp * (a**2 * h["chat_zeta"] * zeta + a * h["chat_sigma"] * sigma),
        )
        c1s.append(Us)
        c2s.append(ps * Lam)
    return c1s, c2s


def test_certified_golden_K012_hand():
    h = _hand_constants()
    R0 = 1.0
    r = [R0 + h["alpha_0"] * 3 * 2.0 * 1.0] * 2  # default bound r_i <= R0 + alpha_0 M L zeta
    c1s, c2s = _hand_certified(h, r, R0, 0.5, 1.0, 2)
    res = theorem7(**G, R0=R0, K=[0, 1, 2])
    assert res.status is Status.CERTIFIED_CORRECTED and res.is_bound
    np.testing.assert_allclose(res.terms["C1_vector"], c1s, rtol=1e-12)
    np.testing.assert_allclose(res.terms["C2_scalar"], c2s, rtol=1e-12)
    np.testing.assert_allclose(res.value, np.minimum(c1s, c2s), rtol=1e-12)
    assert res.value[0] == 1.0
    # pinned literals
    # K=1 by pen: 0.6*R0^2 + 0.4*r^2 with r = 1 + 6*alpha_0 (C1 is the smaller)
    assert res.value[1] == pytest.approx(0.6 + 0.4 * (1 + 6 * h["alpha_0"]) ** 2, rel=1e-14)
    np.testing.assert_allclose(res.value, [1.0, 1.131849487139159, 1.2110492112038655], rtol=1e-10)
    assert res.derived_constants["Lam0"] == pytest.approx(11.479539396319288, rel=1e-10)
    far = theorem7(**G, R0=R0, K=[10**4, 10**5])
    np.testing.assert_allclose(far.value, [0.06808620682164832, 0.00522763237029323], rtol=1e-9)
    np.testing.assert_allclose(
        far.terms["C2_scalar"], [0.3189055320469144, 0.02526546328147573], rtol=1e-9
    )
    assert res.step_sizes["schedule"] == SCHEDULE == "alpha_k = c/(k+d)"
    assert res.step_sizes["d"] == pytest.approx(h["d"], rel=1e-14)
    assert any("K >> d" in w or "K not >> d" in w for w in res.warnings)


def test_certified_hand_longer_with_exact_r_and_distinct_p():
    """Hand loop vs code for 60 steps with distinct p_i and exact r_i (both C1 code paths)."""
    h = _hand_constants()
    h = dict(h)
    p = [0.25, 0.35]
    h["p"], h["ps"], h["p_min"] = p, 0.4, 0.25
    h["qbar"] = (1 / 0.25 + 1 / 0.35) / 2
    h["c"] = 48 / (0.25 * 3 * h["gamma"])
    h["d"] = h["c"] / h["D"]
    h["alpha_0"] = h["c"] / h["d"]
    r = [1.3, 0.7]
    c1s, c2s = _hand_certified(h, r, 1.1, 0.5, 1.0, 60)
    kw = dict(G, p=p, R0=1.1, K=np.arange(61), r_init=r)
    res = theorem7(**kw)
    np.testing.assert_allclose(res.terms["C1_vector"], c1s, rtol=1e-12)
    np.testing.assert_allclose(res.terms["C2_scalar"], c2s, rtol=1e-12)
    old = area_certified._DENSE_MAX_DIM
    try:
        area_certified._DENSE_MAX_DIM = 0  # force the per-step vector loop
        res2 = theorem7(**kw)
    finally:
        area_certified._DENSE_MAX_DIM = old
    np.testing.assert_allclose(res2.terms["C1_vector"], c1s, rtol=1e-12)


def test_code_paths_and_chunking_agree(monkeypatch):
    """Dense and vector (C1) paths, and any chunk sizes, give the same curve (K crosses chunks)."""
    kw = dict(G, p=[0.1, 0.2, 0.3], p_s=0.4, R0=2.0, K=np.arange(0, 1301, 13), r_init=[1, 2, 3])
    ref = theorem7(**kw)
    monkeypatch.setattr(area_certified, "_CHUNK", 7)
    monkeypatch.setattr(area_certified, "_SEQ_CHUNK", 11)
    small = theorem7(**kw)
    monkeypatch.setattr(area_certified, "_DENSE_MAX_DIM", 0)
    loop = theorem7(**kw)
    for res in (small, loop):
        np.testing.assert_allclose(res.terms["C1_vector"], ref.terms["C1_vector"], rtol=1e-12)
        np.testing.assert_allclose(res.terms["C2_scalar"], ref.terms["C2_scalar"], rtol=1e-13)


def test_grouping_equal_p_matches_distinct_clients():
    """Merging clients with equal p_i (linearity) equals running them separately."""
    kw = dict(G, p=[0.2, 0.2, 0.2], R0=0.8, K=np.arange(0, 400, 7), r_init=[0.5, 1.0, 2.0])
    a = theorem7(**kw).value
    h = _hand_constants()
    h = dict(h, p=[0.2, 0.2, 0.2], ps=0.4, p_min=0.2, qbar=5.0)
    h["c"] = 48 / (0.2 * 3 * h["gamma"])
    h["d"] = h["c"] / h["D"]
    c1s, c2s = _hand_certified(h, [0.5, 1.0, 2.0], 0.8, 0.5, 1.0, 399)
    np.testing.assert_allclose(a, np.minimum(c1s, c2s)[::7], rtol=1e-12)


# ------------------------------------------------------------------------------------------
# certified level vs the exact expectation of the AREA model on 1-d quadratics
# ------------------------------------------------------------------------------------------


def _exact_area_msd(a, u, p, ps, M, sigma, xs0, c, d, K):
    """Exact E||x_{s,k} - x*||^2, k = 0..K, of model (5)-(7) (THEORY_SPEC 2.2).

    1-d quadratics f_i = a_i/2 (x-u_i)^2, additive N(0, sigma^2) gradient noise, i.i.d. events.
    State z = (x_1..x_n, y_1..y_n, x_s, 1); exact recursion of m = E z and S = E z z^T.
    """
    n = len(a)
    a, u, p = np.asarray(a, float), np.asarray(u, float), np.asarray(p, float)
    xstar = float(np.sum(a * u) / np.sum(a))
    dim = 2 * n + 2
    z0 = np.concatenate([np.full(2 * n + 1, xs0), [1.0]])
    m, S = z0.copy(), np.outer(z0, z0)
    iS, one = 2 * n, 2 * n + 1
    out = [S[iS, iS] - 2 * xstar * m[iS] + xstar**2]
    for k in range(K):
        alpha = c / (k + d)
        m_new = np.zeros(dim)
        S_new = np.zeros((dim, dim))
        for J in range(n + 1):
            A = np.eye(dim)
            noise = 0.0
            if J < n:
                # G^M: x <- (1 - alpha a) x + alpha a u - alpha e; composed M times from x_s
                q = 1 - alpha * a[J]
                A[J, :] = 0.0
                A[J, iS] = q**M
                A[J, one] = u[J] * (1 - q**M)
                noise = alpha**2 * sigma**2 * sum(q ** (2 * j) for j in range(M))
                A[n + J, :] = 0.0
                A[n + J, J] = 1.0
                pj = p[J]
            else:
                A[iS, :] = 0.0
                A[iS, n : 2 * n] = 1.0 / n
                pj = ps
            m_new += pj * (A @ m)
            SA = A @ S @ A.T
            if J < n:
                SA[J, J] += noise
            S_new += pj * SA
        m, S = m_new, S_new
        out.append(S[iS, iS] - 2 * xstar * m[iS] + xstar**2)
    return np.array(out), xstar


def _instance_bound_vs_exact(a, u, p, ps, M, sigma, xs0, K):
    a = np.asarray(a, float)
    L, mu = float(a.max()), float(a.min())
    xstar = float(np.sum(a * np.asarray(u)) / np.sum(a))
    zeta = float(np.max(np.abs(xstar - np.asarray(u))))
    cs = area_constants(L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta)
    exact, _ = _exact_area_msd(a, u, p, ps, M, sigma, xs0, cs["c"], cs["d"], K)
    grads = a * (xstar - np.asarray(u))
    r_exact = np.abs(xs0 - xstar + cs["alpha_0"] * M * grads)
    R0 = abs(xs0 - xstar)
    Ks = np.arange(K + 1)
    res = theorem7(
        L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta, R0=R0, K=Ks, r_init=r_exact
    )
    bound_norms = theorem7(
        L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta, R0=R0, K=Ks,
        grad_norms_at_xstar=np.abs(grads),
    )  # fmt: skip
    return exact, res, bound_norms


def test_exact_moment_oracle_matches_monte_carlo():
    """Validates the in-test oracle: sample mean of (x_{s,k}-x*)^2 vs exact, 20000 replicates.

    Statistical test: |z| < 5 at two checkpoints; false-alarm rate < 2 * 5.7e-7 ~ 1.2e-6
    (normal approximation of the sample mean; the seed is fixed, so the run is reproducible).
    """
    a, u, p, ps, M, sigma, xs0 = (
        np.array([1.0, 3.0]),
        np.array([-1.0, 2.0]),
        [0.3, 0.3],
        0.4,
        3,
        0.5,
        2.5,
    )
    cs = area_constants(L=3.0, mu=1.0, M=M, p=p, p_s=ps, sigma=sigma, zeta=1.5)
    K = 40
    exact, xstar = _exact_area_msd(a, u, p, ps, M, sigma, xs0, cs["c"], cs["d"], K)
    rng = np.random.default_rng(20261121)
    R, n = 20000, 2
    x = np.full((R, n), xs0)
    y = np.full((R, n), xs0)
    xs = np.full(R, xs0)
    probs = np.array(p + [ps])
    sq = {}
    for k in range(K):
        alpha = cs["c"] / (k + cs["d"])
        J = rng.choice(n + 1, size=R, p=probs)
        new_xs = xs.copy()
        for i in range(n):
            sel = J == i
            z = xs[sel].copy()
            for _ in range(M):
                z = z - alpha * (a[i] * (z - u[i]) + sigma * rng.standard_normal(z.size))
            y[sel, i] = x[sel, i]
            x[sel, i] = z
        sel = J == n
        new_xs[sel] = y[sel].mean(axis=1)
        xs = new_xs
        if k + 1 in (10, K):
            sq[k + 1] = (xs - xstar) ** 2
    for k, v in sq.items():
        z = (v.mean() - exact[k]) / (v.std(ddof=1) / math.sqrt(R))
        assert abs(z) < 5.0, (k, z)


def test_paper_theorem8_violated_by_exact_enumeration():
    """THEORY_SPEC 7.d: f_i = |x|, x_{s,0} = 1, sign subgradient, paper step; enumerate events."""

    def exact(M, K, alpha, n=2, p=(0.3, 0.3), ps=0.4):
        X = np.ones((1, n))
        Y = np.ones((1, n))
        XS, S, P = np.ones(1), np.zeros(1), np.ones(1)
        for _ in range(K):
            S = S + XS
            parts = []
            for J in range(n + 1):
                X2, Y2, XS2 = X.copy(), Y.copy(), XS.copy()
                if J < n:
                    z = XS.copy()
                    for _ in range(M):
                        z = z - alpha * np.sign(z)
                    Y2[:, J], X2[:, J], pj = X[:, J], z, p[J]
                else:
                    XS2, pj = Y.mean(axis=1), ps
                parts.append((X2, Y2, XS2, S, P * pj))
            X, Y, XS, S, P = (np.concatenate([q[j] for q in parts]) for j in range(5))
        return float(np.sum(P * np.abs(S / K)))

    for M, K, e in [(50, 9, 0.819411), (10, 8, 0.883030)]:
        paper = theorem8(M=M, K=K, mode="paper", **T8)
        corr = theorem8(M=M, K=K, **T8)
        val = exact(M, K, paper.step_sizes["alpha_prescribed"])
        assert round(val, 6) == e
        assert val > paper.value  # the paper's statement is violated
        assert val <= corr.value  # the corrected one holds here


def test_certified_dominates_exact_moments_fixed_instance():
    exact, res, loose = _instance_bound_vs_exact(
        a=[1.0, 3.0], u=[-1.0, 2.0], p=[0.3, 0.3], ps=0.4, M=3, sigma=0.5, xs0=2.5, K=300
    )
    assert np.all(res.value >= exact * (1 - 1e-12))
    assert np.all(loose.value >= res.value * (1 - 1e-12))  # triangle bound is looser
    assert res.value[0] == pytest.approx(exact[0], rel=1e-12)  # tight at k = 0


@pytest.mark.slow
@pytest.mark.parametrize("M", [1, 2, 5])
@pytest.mark.parametrize("kappa", [1.5, 10.0])
def test_certified_dominates_exact_moments_long(M, kappa):
    """THEORY_SPEC 6.d validation grid: M in {1,2,5}, kappa in {1.5,10}, K = 20000."""
    exact, res, _ = _instance_bound_vs_exact(
        a=[1.0, kappa], u=[0.5, -1.0], p=[0.35, 0.25], ps=0.4, M=M, sigma=0.3, xs0=1.5, K=20000
    )
    ratio = res.value / exact
    assert np.all(ratio >= 1 - 1e-12)
    assert ratio[-1] > 1.0  # strictly above far out


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.floats(0.3, 4.0), min_size=1, max_size=3),
    st.integers(1, 4),
    st.floats(0.0, 2.0),
    st.floats(-3.0, 3.0),
    st.floats(0.1, 0.6),
    st.integers(0, 2**31 - 1),
)
@example([1.9375, 4.0, 3.5], 1, 0.0, -1.625, 0.5, 197953)  # x_0 near x*: rounding case
def test_certified_dominates_exact_moments_random(a, M, sigma, xs0, ps, seed):
    """THEORY_SPEC 12.5: min(C1, C2) >= exact E||x_{s,k}-x*||^2 at every k (rel tol 1e-12)."""
    rng = np.random.default_rng(seed)
    n = len(a)
    if n > 1 and max(a) == min(a):
        a = [a[0] * (1 + 0.5 * j) for j in range(n)]
    if n == 1 and M == 1:
        M = 2  # avoid mu = L, M = 1 (H7.5 edge case)
    w = rng.uniform(0.5, 1.5, size=n)
    p = (1 - ps) * w / w.sum()
    ps = 1 - float(p.sum())
    u = rng.normal(scale=2.0, size=n)
    exact, res, _ = _instance_bound_vs_exact(a, u, p, ps, M, sigma, xs0, K=120)
    assert res.status is Status.CERTIFIED_CORRECTED
    # The oracle forms E(x - x*)^2 as S - 2 x* m + x*^2 (second moments), so its absolute
    # rounding error is ~eps (|x| + |x*|)^2 whatever the size of the result: when x_0 is
    # close to x* (R0^2 = 5.4e-5 against x*^2 = 2.7 in the case hypothesis found), a purely
    # relative 1e-12 is below that error.  The noise-free iterates stay in the hull of
    # x_0 and the u_i, so 64 eps (max(|x_0|, |u_i|) + |x*|)^2 bounds it.
    xstar = float(np.dot(a, u) / np.sum(a))
    atol = 64 * np.finfo(float).eps * (max(abs(xs0), float(np.max(np.abs(u)))) + abs(xstar)) ** 2
    assert np.all(res.value >= exact * (1 - 1e-12) - atol)


# ------------------------------------------------------------------------------------------
# properties of theorem7
# ------------------------------------------------------------------------------------------

_probs = st.tuples(st.integers(1, 4), st.floats(0.05, 0.6), st.integers(0, 2**31 - 1))


def _p_from(spec):
    n, ps, seed = spec
    w = np.random.default_rng(seed).uniform(0.2, 1.0, size=n)
    p = (1 - ps) * w / w.sum()
    return p, 1 - float(p.sum())


@settings(max_examples=30, deadline=None)
@given(_probs, st.floats(0.0, 5.0), st.integers(0, 2**31 - 1))
def test_value_at_K0(spec, R0, seed):
    p, ps = _p_from(spec)
    r = np.random.default_rng(seed).uniform(0, 3, size=p.size)
    res = theorem7(L=2.0, mu=0.5, M=2, p=p, p_s=ps, sigma=0.3, zeta=1.0, R0=R0, K=0, r_init=r)
    Lam0 = res.derived_constants["Lam0"]
    assert res.value <= ps * Lam0 * (1 + 1e-12)
    assert res.value >= R0**2 * (1 - 1e-12)


@settings(max_examples=25, deadline=None)
@given(
    _probs,
    st.floats(0.1, 3.0),
    st.floats(0.0, 2.0),
    st.floats(0.0, 2.0),
    st.floats(0.0, 3.0),
    st.floats(0.0, 1.0),
    st.sampled_from(["sigma", "zeta", "R0"]),
)
def test_certified_monotone(spec, kappa, sigma, zeta, R0, bump, which):
    p, ps = _p_from(spec)
    kw = dict(L=1.0 * kappa + 1.0, mu=1.0, M=2, p=p, p_s=ps, sigma=sigma, zeta=zeta, R0=R0)
    Ks = np.array([0, 1, 5, 50, 400])
    lo = theorem7(**kw, K=Ks).value
    kw[which] = kw[which] + bump
    hi = theorem7(**kw, K=Ks).value
    assert np.all(hi >= lo * (1 - 1e-12))


@settings(max_examples=30, deadline=None)
@given(
    _probs,
    st.floats(1.01, 20.0),
    st.integers(1, 6),
    st.floats(0.0, 3.0),
    st.floats(0.0, 3.0),
    st.booleans(),
)
def test_leading_terms_and_rate_shape_are_never_bounds(spec, kappa, M, sigma, zeta, literal):
    p, ps = _p_from(spec)
    kw = dict(L=kappa, mu=1.0, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta, R0=1.0)
    Ks = np.array([1, 10, 10**4])
    lt = theorem7(**kw, K=Ks, level="leading_terms", paper_literal=literal)
    assert lt.status is Status.ASYMPTOTIC_LEADING_TERMS and not lt.is_bound
    assert lt.remainder and "NOT evaluated" in lt.remainder
    assert any("NOT an upper bound" in w for w in lt.warnings)
    np.testing.assert_allclose(lt.value, _sum_terms(lt), rtol=1e-14)
    rs = theorem7(**kw, K=Ks, level="rate_shape", paper_literal=literal)
    assert rs.status is Status.RATE_SHAPE_ONLY and not rs.is_bound
    np.testing.assert_allclose(rs.value, _sum_terms(rs), rtol=1e-14)


def test_leading_terms_hand_golden():
    """(B) value for the golden instance at K = 100, computed from 6.d by hand."""
    h = _hand_constants()
    res = theorem7(**G, R0=1.0, K=100, level="leading_terms")
    cs = area_constants(**G)
    Lam0, lam0 = res.derived_constants["Lam0"], res.derived_constants["lam0"]
    # Lam0 by hand: r_i = R0 + alpha_0*M*L*zeta, weights (b0^-2/3 + b0^-1/3)/(n p_i)
    r = 1.0 + h["alpha_0"] * 6.0
    w0 = h["beta_0"] ** (-2 / 3) + h["beta_0"] ** (-1 / 3)
    assert Lam0 == pytest.approx(2 * w0 / (2 * 0.3) * r**2 + 1 / 0.4, rel=1e-13)
    assert lam0 == pytest.approx(2 * w0 / (2 * 0.3) * r + 1 / 0.4, rel=1e-13)
    d, c1 = h["d"], h["c1"]
    Kt = 100 + d - 1
    psi = h["psi"]
    c5 = math.sqrt(psi) * (d - 1) ** 2
    c6 = (d - 1) ** 2 * math.sqrt(2 * psi * c1)
    Q = 4 * h["c"] * h["qbar"] * 2.0 * 3 + 2 * h["c"] ** 2 * h["chat_zeta"]
    c4 = 2 * h["c"] ** 3 * h["c_zeta"]
    c7 = math.sqrt(psi * (c1 * Q + c4) / 2)
    c9 = math.sqrt(psi * h["c3"] / 3)
    s, z = 0.5, 1.0
    Lam28 = (
        (d - 1) ** 4 * Lam0 / Kt**4
        + c1 * z * (c5 * math.sqrt(Lam0) + c6 * math.sqrt(z * lam0)) / Kt**3
        + (c1 * c7 + c4) * z**2 / (2 * Kt**2)
        + c1 * z * (h["c8"] * math.sqrt(s * z) + c9 * s) / (2 * Kt**1.5)
        + h["c3"] * s**2 / (3 * Kt)
    )
    assert res.value == pytest.approx(0.4 * Lam28, rel=1e-12)
    assert cs["c7"] == pytest.approx(c7, rel=1e-13)
    # 6.d: leading constant of the sigma^2 term p_s*c3/3 = 3072 r_p ctil_sigma/(p_min M gamma^2)
    lead = 3072 * cs["r_p"] * cs["ctil_sigma"] / (0.3 * 3 * cs["gamma"] ** 2)
    assert 0.4 * cs["c3"] / 3 == pytest.approx(lead, rel=1e-13)


@settings(max_examples=25, deadline=None)
@given(_probs, st.floats(1.01, 20.0), st.integers(1, 6), st.floats(0.0, 3.0), st.floats(0.0, 3.0))
def test_leading_terms_paper_bounds_init_dominates_exact(spec, kappa, M, zeta, R0):
    """The paper's Lam0/lam0 bounds and sqrt splits (6.d (B)) only increase every term."""
    p, ps = _p_from(spec)
    kw = dict(L=kappa, mu=1.0, M=M, p=p, p_s=ps, sigma=0.5, zeta=zeta, R0=R0, K=[0, 50, 10**5])
    ex = theorem7(**kw, level="leading_terms")
    pb = theorem7(**kw, level="leading_terms", init="paper_bounds")
    assert np.all(pb.value >= ex.value * (1 - 1e-12))
    for name in ("transient", "sync_K^-3"):
        assert np.all(pb.terms[name] >= ex.terms[name] * (1 - 1e-12))
    qbar, h0 = float(np.mean(1 / p)), ex.step_sizes["alpha_0"] * kappa * M * zeta
    lam_b = (1 / ps + 8 * qbar) * R0**2 + 8 * h0**2 * qbar
    assert pb.derived_constants["Lam0_paper_bound"] == pytest.approx(lam_b, rel=1e-13)
    np.testing.assert_allclose(pb.value, _sum_terms(pb), rtol=1e-14)


def test_rate_shape_slope_and_literal_third_term():
    Ks = np.array([10**6, 10**7])
    rs = theorem7(**G, R0=1.0, K=Ks, level="rate_shape")
    slope = np.diff(np.log(rs.value)) / np.diff(np.log(Ks))
    assert slope[0] == pytest.approx(-1.0, abs=0.01)
    lit = theorem7(**G, R0=1.0, K=Ks, level="rate_shape", paper_literal=True)
    cs = area_constants(**G)
    ratio = lit.terms["sqrt_sigma_zeta3_K^-1.5"] / rs.terms["sqrt_sigma_zeta3_K^-1.5"]
    np.testing.assert_allclose(ratio, math.sqrt(0.3 * cs["gamma"]), rtol=1e-13)


def test_curve_is_sampled_from_one_run():
    Ks = np.array([5, 0, 17, 3])
    curve = theorem7(**G, R0=1.0, K=Ks).value
    single = [theorem7(**G, R0=1.0, K=int(k)).value for k in Ks]
    np.testing.assert_allclose(curve, single, rtol=0, atol=0)
    assert isinstance(single[0], float)


# ------------------------------------------------------------------------------------------
# status logic (THEORY_SPEC 12.7) and bad inputs
# ------------------------------------------------------------------------------------------


def test_mu_zero_not_applicable():
    res = theorem7(**dict(G, mu=0.0), R0=1.0, K=[1, 2])
    assert res.status is Status.NOT_APPLICABLE and not res.is_bound
    assert [h.name for h in res.failing_hypotheses][:1] == ["H7.1"]
    assert "value_if_hypotheses_ignored" in res.terms


def test_h75_edge_case_not_applicable():
    res = theorem7(L=1.0, mu=1.0, M=1, p=[0.5], p_s=0.5, sigma=0.1, zeta=0.0, R0=1.0, K=10)
    assert res.status is Status.NOT_APPLICABLE
    assert "H7.5" in [h.name for h in res.failing_hypotheses]
    assert math.isfinite(res.terms["value_if_hypotheses_ignored"])
    ok = theorem7(L=1.0, mu=1.0, M=2, p=[0.5], p_s=0.5, sigma=0.1, zeta=0.0, R0=1.0, K=10)
    assert ok.status is Status.CERTIFIED_CORRECTED


def test_hypotheses_listed():
    res = theorem7(**G, R0=1.0, K=10)
    by = {h.name: h.holds for h in res.hypotheses}
    assert by == {"H7.1": True, "H7.2": None, "H7.3": None, "H7.4": True, "H7.5": True}


def test_infinite_sigma_not_applicable():
    res = theorem7(**dict(G, sigma=math.inf), R0=1.0, K=10)
    assert res.status is Status.NOT_APPLICABLE and res.value == math.inf


@pytest.mark.parametrize(
    "change",
    [
        dict(L=-1.0),
        dict(mu=-0.5),
        dict(mu=3.0),  # mu > L
        dict(M=0),
        dict(M=2.5),
        dict(p=[0.3, 0.2]),  # does not sum to 1 with p_s
        dict(p=[0.6, 0.0], p_s=0.4),
        dict(p_s=0.0, p=[0.5, 0.5]),
        dict(sigma=-0.1),
        dict(zeta=-1.0),
        dict(R0=-1.0),
        dict(K=-1),
        dict(K=[1, -2]),
        dict(K=1.5),
        dict(level="bogus"),
        dict(r_init=[1.0]),
        dict(r_init=[1.0, 1.0], grad_norms_at_xstar=[0.1, 0.1]),
        dict(level="certified", paper_literal=True),
        dict(level="certified", init="paper_bounds"),
        dict(level="leading_terms", init="bogus"),
    ],
)
def test_theorem7_bad_inputs(change):
    kw = dict(G, R0=1.0, K=5)
    kw.update(change)
    with pytest.raises(ConfigError):
        theorem7(**kw)


def test_error_message_names_field_value_rule():
    with pytest.raises(ConfigError, match=r"^M must be >= 1, got M=0$"):
        area_constants(**dict(G, M=0))
    with pytest.raises(ConfigError, match=r"p .*sum to 1"):
        theorem8(M=1, p=[0.3], p_s=0.3, sigma2=1.0, B=1.0, R=1.0, K=5)


def test_p_sum_tolerance():
    p = [0.3, 0.3 + 5e-13]
    area_constants(**dict(G, p=p))  # within 1e-12
    with pytest.raises(ConfigError):
        area_constants(**dict(G, p=[0.3, 0.3 + 5e-12]))


# ------------------------------------------------------------------------------------------
# Theorem 8
# ------------------------------------------------------------------------------------------

T8 = dict(p=[0.3, 0.3], p_s=0.4, sigma2=1e-4, B=1.0, R=1.0)


@pytest.mark.parametrize(
    "M,K,paper,corr",
    [(50, 9, 0.720726, 1.009218), (10, 8, 0.793864, 1.070441)],
)
def test_theorem8_table_7d(M, K, paper, corr):
    rp = theorem8(M=M, K=K, mode="paper", **T8)
    rc = theorem8(M=M, K=K, **T8)
    assert round(rp.value, 6) == paper and round(rc.value, 6) == corr
    assert rp.status is Status.PAPER_LITERAL_KNOWN_ERRATUM and rp.is_bound is False
    assert rc.status is Status.CERTIFIED_CORRECTED and rc.is_bound
    # hand: sqrt((1/p_s + 2 qbar) C_B R^2/(M K))
    A = 1 / 0.4 + 2 * (1 / 0.3)
    assert rp.value == pytest.approx(math.sqrt(A * (1e-4 + (M + 1) / 2) / (M * K)), rel=1e-14)
    assert rc.value == pytest.approx(math.sqrt(A * (1e-4 + M) / (M * K)), rel=1e-14)
    assert rp.value == pytest.approx(_sum_terms(rp), rel=1e-15)
    alpha = rp.step_sizes["alpha_prescribed"]
    assert alpha == pytest.approx(math.sqrt(A / ((1e-4 + (M + 1) / 2) * M * K)), rel=1e-14)


def test_theorem8_M1_paper_is_certified():
    r = theorem8(M=1, K=20, mode="paper", **T8)
    c = theorem8(M=1, K=20, **T8)
    assert r.status is Status.CERTIFIED_PAPER
    assert r.value == pytest.approx(c.value, rel=1e-15)


def test_ea6_counterexample_step_level():
    """E-A6: f_i(x) = B x, deterministic, M=3, alpha=0.1, x_s=5: ||G^M x_s||^2 = 22.09."""
    B, M, alpha, xs = 1.0, 3, 0.1, 5.0
    x = xs
    for _ in range(M):
        x -= alpha * B
    lhs = x**2
    res = theorem8(M=M, p=[0.5], p_s=0.5, sigma2=0.0, B=B, R=1.0, K=1)
    step = lambda CB: xs**2 - 2 * alpha * M * (B * xs - 0.0) + alpha**2 * M * CB
    paper = step(res.derived_constants["C_B_paper"])
    corr = step(res.derived_constants["C_B_corrected"])
    assert lhs == pytest.approx(22.09, abs=1e-12)
    assert paper == pytest.approx(22.06, abs=1e-12) and lhs > paper + 0.02  # violated
    assert corr == pytest.approx(22.09, abs=1e-12) and lhs <= corr + 1e-12  # equality


def test_theorem8_general_alpha_and_non_prescribed():
    K = np.array([10, 100])
    g = theorem8(M=3, K=K, alpha=0.05, mode="general_alpha", **T8)
    assert g.status is Status.PROOF_LEVEL and g.is_bound
    A, CB = 1 / 0.4 + 2 / 0.3, 1e-4 + 3
    expect = A / (2 * 0.05 * 3 * K) + 0.05 * CB / 2
    np.testing.assert_allclose(g.value, expect, rtol=1e-14)
    np.testing.assert_allclose(g.value, _sum_terms(g), rtol=1e-15)
    c = theorem8(M=3, K=K, alpha=0.05, **T8)
    assert c.status is Status.NOT_APPLICABLE
    np.testing.assert_allclose(c.terms["B8_general_alpha"], expect, rtol=1e-14)
    assert "prescribed_step" in [h.name for h in c.failing_hypotheses]
    # the prescribed alpha passed explicitly is the theorem
    a_star = theorem8(M=3, K=50, **T8).step_sizes["alpha_prescribed"]
    assert theorem8(M=3, K=50, alpha=a_star, **T8).status is Status.CERTIFIED_CORRECTED
    # general alpha without alpha uses the corrected prescription
    g0 = theorem8(M=3, K=50, mode="general_alpha", **T8)
    assert g0.value == pytest.approx(theorem8(M=3, K=50, **T8).value, rel=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    _probs,
    st.integers(1, 20),
    st.floats(0.0, 4.0),
    st.floats(0.01, 5.0),
    st.floats(0.0, 5.0),
    st.integers(1, 10**6),
    st.floats(1e-4, 10.0),
)
def test_theorem8_properties(spec, M, sigma2, B, R, K, alpha):
    p, ps = _p_from(spec)
    kw = dict(M=M, p=p, p_s=ps, sigma2=sigma2, B=B, R=R, K=K)
    corr = theorem8(**kw)
    paper = theorem8(**kw, mode="paper")
    assert corr.value == pytest.approx(_sum_terms(corr), rel=1e-15)
    assert corr.value >= paper.value * (1 - 1e-15)  # M B^2 >= (M+1) B^2 / 2
    # the prescribed step minimises B8(alpha)
    gen = theorem8(**kw, alpha=alpha, mode="general_alpha")
    assert gen.value >= corr.value * (1 - 1e-12)


def test_theorem8_array_K_and_B_inf():
    K = np.array([1, 10, 100])
    r = theorem8(M=2, K=K, **T8)
    assert r.value.shape == (3,) and np.all(np.diff(r.value) < 0)
    assert r.step_sizes["alpha_prescribed"].shape == (3,)
    inf = theorem8(M=2, K=K, **dict(T8, B=math.inf))
    assert inf.status is Status.NOT_APPLICABLE and not inf.is_bound
    assert np.all(np.isinf(inf.terms["value_if_hypotheses_ignored"]))
    assert inf.failing_hypotheses[0].name == "convex_lipschitz"


def test_theorem8_degenerate_zero():
    r = theorem8(M=2, K=5, **dict(T8, R=0.0))
    assert r.value == 0.0 and r.status is Status.CERTIFIED_CORRECTED
    z = theorem8(M=2, K=5, **dict(T8, B=0.0, sigma2=0.0))
    assert z.value == 0.0


@pytest.mark.parametrize(
    "change",
    [dict(M=0), dict(K=0), dict(K=-3), dict(R=-1.0), dict(B=-1.0), dict(sigma2=-1.0),
     dict(alpha=0.0), dict(alpha=-0.1), dict(mode="x"), dict(p=[0.5, 0.5])],
)  # fmt: skip
def test_theorem8_bad_inputs(change):
    kw = dict(T8, M=2, K=5)
    kw.update(change)
    with pytest.raises(ConfigError):
        theorem8(**kw)


# ------------------------------------------------------------------------------------------
# optimal server rate
# ------------------------------------------------------------------------------------------


def test_optimal_server_rate_hand():
    assert optimal_server_rate([1.0, 1.0]) == pytest.approx(1 / math.sqrt(1.0))
    # rates (1, 4): sum 5, (2/2)(1 + 1/4) = 1.25 -> sqrt(4) = 2
    assert optimal_server_rate([1.0, 4.0]) == pytest.approx(2.0, rel=1e-15)
    with pytest.raises(ConfigError):
        optimal_server_rate([1.0, -1.0])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.05, 20.0), min_size=1, max_size=6))
def test_optimal_server_rate_minimises_theorem8(rates):
    """Per-iteration Thm 8 bound as a function of rate_s is minimised at rate_s*."""
    rates = np.asarray(rates)

    def bound(rs):
        tot = rs + rates.sum()
        p, ps = rates / tot, rs / tot
        ps = 1 - float(p.sum())
        return theorem8(M=2, p=p, p_s=ps, sigma2=1.0, B=1.0, R=1.0, K=100).value

    star = optimal_server_rate(rates)
    b = bound(star)
    for f in (0.8, 0.95, 1.05, 1.25):
        assert bound(star * f) >= b * (1 - 1e-9)
