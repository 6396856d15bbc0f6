"""Per-FedAvg Theorem 4.5: golden values (both readers, exact Fractions), hypothesis flips,
the exact oracle in regime and the E-F1 counterexample (docs/theory/per-fedavg.md)."""

import math

import numpy as np
import pytest
from fedsim.theory.perfedavg import perfedavg_quadratic_exact, theorem4_5
from fedsim.theory.registry import get_theorem
from fedsim.theory.result import Status

G1 = dict(L=2, rho=3, B=1.5, alpha=0.25, sigma_G2=0.8, sigma_H2=0.6, gamma_G2=0.4,
          gamma_H2=0.3, D=8, Dp=16, Dpp=4, tau=4, K=50, n=10, beta=0.002, f_gap=2.5)
G2 = dict(L=1, alpha=0.5, sigma_G2=4, gamma_G2=1, D=2, Dp=1, tau=10, K=100, n=2, f_gap=0)


def test_golden_G1():
    r = theorem4_5(**G1)
    assert r.value == pytest.approx(378.5348063, rel=1e-13)
    assert r.status is Status.CERTIFIED_CORRECTED
    assert r.derived_constants["sigma_F2"] == pytest.approx(12357 / 12800, rel=1e-14)
    assert r.derived_constants["gamma_F2"] == pytest.approx(49233 / 640, rel=1e-14)
    assert r.terms["drift"] == pytest.approx(56479017483 / 160000000, rel=1e-13)
    assert theorem4_5(**G1, mode="proof_level").value == pytest.approx(108.188902230036, rel=1e-12)
    lit = theorem4_5(**{**G1, "r": 0.2}, mode="paper_literal")
    assert lit.value == pytest.approx(381.030645883333, rel=1e-12)
    assert lit.status is Status.PAPER_LITERAL_KNOWN_ERRATUM


def test_golden_G2_and_oracle():
    r = theorem4_5(**G2)
    assert r.value == pytest.approx(75908 / 25, rel=1e-14)
    assert r.step_sizes["beta"] == pytest.approx(0.0025)
    assert theorem4_5(**G2, mode="proof_level").value == pytest.approx(793.142857142857,
                                                                        rel=1e-12)
    ex = perfedavg_quadratic_exact(A=[[1.0]], centers=[[1.0], [-1.0]], Sigma=[[4.0]],
                                   alpha=0.5, beta=0.0025, tau=10, K=100, w0=[0.0], D=2, Dp=1)
    assert ex == pytest.approx(7.542244541759e-05, rel=1e-11)
    assert r.value / ex > 4e7


@pytest.mark.parametrize("change,hyp", [
    ({"r": 0.5}, "H9"), ({"beta": 0.01}, "H8"), ({"alpha": 1.5}, "H6"),
    ({"gamma_G2": math.inf}, "H5"), ({"f_gap": math.inf}, "H1"), ({"rho": math.inf}, "H3"),
    ({"sigma_G2": math.inf}, "H4")])
def test_each_hypothesis_flips(change, hyp):
    r = theorem4_5(**{**G2, **change})
    assert r.status is Status.NOT_APPLICABLE
    assert any(h.name.startswith(hyp) and h.holds is False for h in r.hypotheses)


def test_counterexample_E_F1_literal_violated():
    """r = 1/2, tau = 1e4, beta = 1e-12: the appendix constant is 0.688x the exact value."""
    kw = dict(L=1.0, alpha=1e-3, sigma_G2=0.0, gamma_G2=1.0, gamma_H2=0.25, rho=1.0, B=2.5,
              f_gap=0.0, tau=10000, K=10**11, n=2, r=0.5, beta=1e-12)
    lit = theorem4_5(**kw, mode="paper_literal")
    ex = perfedavg_quadratic_exact(A=[[1.0]], centers=[[-1.0], [1.0]], alpha=1e-3,
                                   beta=1e-12, tau=10000, K=1e11, w0=[0.0], s=1)
    assert ex == pytest.approx(4.96758486855365e-09, rel=1e-10)
    assert lit.value == pytest.approx(3.4183798484351e-09, rel=1e-9)
    assert lit.value / ex == pytest.approx(0.688137181123, rel=1e-8)
    assert theorem4_5(**kw).status is Status.NOT_APPLICABLE


def test_oracle_matches_brute_force_partial_participation():
    """Closed form vs an exact enumeration of all 2^K sampling paths (n = 2, s = 1)."""
    a, alpha, beta, tau, K = 1.0, 0.1, 0.05, 3, 4
    h = a * (1 - alpha * a) ** 2
    p = 1 - beta * h
    total = 0.0
    for path in range(2**K):
        w, acc = 0.3, 0.0
        for k in range(K):
            c = [-1.0, 1.0][(path >> k) & 1]
            for t in range(tau):
                acc += (h * (c + p**t * (w - c) - 0.0)) ** 2
            w = c + p**tau * (w - c)
        total += acc / (tau * K)
    brute = total / 2**K
    ex = perfedavg_quadratic_exact(A=[[a]], centers=[[-1.0], [1.0]], alpha=alpha, beta=beta,
                                   tau=tau, K=K, w0=[0.3], s=1)
    assert ex == pytest.approx(brute, rel=1e-12)


def test_oracle_below_bound_in_regime_random():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.uniform(0.2, 2.0)
        cen = rng.normal(size=(3, 1))
        alpha = rng.uniform(0, 1 / a)
        tau = int(rng.integers(1, 6))
        K = int(rng.integers(1, 50))
        gG2 = float(np.mean((a * (cen - cen.mean())) ** 2))
        Ia = 1 - alpha * a
        fgap = 0.5 * a * Ia**2 * float(cen.mean()) ** 2
        r = theorem4_5(L=a, alpha=alpha, sigma_G2=1.0, gamma_G2=gG2, f_gap=fgap, tau=tau,
                       K=K, n=3)
        ex = perfedavg_quadratic_exact(A=[[a]], centers=cen, Sigma=[[1.0]], alpha=alpha,
                                       beta=r.step_sizes["beta"], tau=tau, K=K, w0=[0.0])
        assert ex <= r.value


def test_registered_and_rate_shape_status():
    assert get_theorem("perfedavg_theorem4_5").horizon == "K"
    assert theorem4_5(**G2, mode="rate_shape").status is Status.RATE_SHAPE_ONLY
    assert theorem4_5(**{**G2, "r": 0.5}, mode="rate_shape").status is \
        Status.PAPER_LITERAL_KNOWN_ERRATUM
