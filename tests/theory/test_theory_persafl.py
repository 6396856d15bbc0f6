"""Tests of theory.persafl: [P] Theorems 1-3 and the Lemma 1-7 constants.

Golden values are computed by hand below with exact rational arithmetic
(``fractions.Fraction``) and closed forms chosen so that every square root is
rational (or factors out, e.g. sqrt(38880) = 36 sqrt(30)); they transcribe
THEORY_SPEC 3.c/3.d/4.c-4.e/5.c-5.e independently of the implementation.
No test here is statistical (the evaluators are deterministic).
"""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from fedsim.theory.persafl import maml_constants, me_constants, theorem1, theorem2, theorem3
from fedsim.theory.result import Status
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError

INF = math.inf
REL = 1e-12
S30 = math.sqrt(30.0)


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=0.0)


def terms_sum(r) -> float | np.ndarray:
    s = 0.0
    for k, v in r.terms.items():
        if k != "value_if_hypotheses_ignored":
            s = s + v
    return s


def failing(r) -> list[str]:
    return [h.name for h in r.failing_hypotheses]


# ----------------------------------------------------------------------------- Theorem 1
G1 = dict(L=1.0, Q=2, tau=2, b=1, sigma_g2=0.2, gamma_g2=1.0, f_gap=50.0, T=38880)


def test_thm1_paper_golden_at_threshold():
    """T = 160*1*9*27 = 38880 = 1296*30, sqrt(T) = 36 sqrt(30); s2 = 6/5."""
    r = theorem1(**G1)
    assert r.status is Status.CERTIFIED_PAPER and r.is_bound
    gap = 50 / (9 * S30)  # 4*50/(36 sqrt30)
    noise = 4 / (15 * S30)  # 8*(6/5)/(36 sqrt30)
    stale = 1 / 27  # 80*1*3*5*(6/5)/38880 = 1440/38880
    assert close(r.terms["gap"], gap)
    assert close(r.terms["noise_diversity"], noise)
    assert close(r.terms["staleness"], stale)
    assert close(r.value, gap + noise + stale)
    assert close(r.value, 1.100024519, rel=1e-9)
    assert close(r.step_sizes["eta"], 1 / (72 * S30))  # 1/(2*36 sqrt30)
    assert r.step_sizes["beta"] == 1.0
    assert r.derived_constants["T_min"] == 38880.0
    assert close(r.derived_constants["eta_max"], 1 / 12)
    # c_T1 = 3/2 - 4 eta Q - 16 eta^2 Q^2 (1+2Q) tau'(tau+1)^2 (1+4 eta): with eta = 1/(72 sqrt30)
    c = 1.5 - 1 / (9 * S30) - (1 / 27) * (1 + 1 / (18 * S30))
    assert close(r.derived_constants["c_T1"], c)
    assert r.derived_constants["c_T1"] >= 0.5
    assert r.theorem == "PersA-FL Theorem 1" and r.mode == "paper"
    assert r.errata_applied == []
    assert "value_if_hypotheses_ignored" not in r.terms
    simulator = [h for h in r.hypotheses if h.holds is None]
    assert any(h.name.startswith("Asm 1") for h in simulator)


@pytest.mark.parametrize(
    "L, f, sg2, gg2, b, T, terms, eta, c",
    [
        # L = 4: L T = 25600, sqrt(L/T) = 1/40; s2 = 1/2; T_min = 160*4*8 = 5120
        (4.0, 3.0, 0.5, 0.25, 2, 6400, (Fr(3, 10), Fr(1, 10), Fr(1, 20)), Fr(1, 160),
         1 - 4 * Fr(1, 160) * 4 - 16 * Fr(1, 160) ** 2 * 16 * 3 * (1 + 4 * Fr(4, 160))),
        # L = 1/100: L T = 1 (eta = 1), sqrt(L/T) = 1/100; s2 = 1; T_min = 12.8
        (0.01, 5.0, 1.0, 0.0, 1, 100, (Fr(1, 5), Fr(2, 25), Fr(2, 125)), Fr(1),
         1 - 4 * Fr(1, 100) - 16 * Fr(1, 100) ** 2 * 3 * (1 + 4 * Fr(1, 100))),
    ],
)
def test_thm1_paper_golden_other_scales(L, f, sg2, gg2, b, T, terms, eta, c):
    """Q = 1, tau = 0 (tau' = 1, E-P6) away from L = 1 (THEORY_SPEC 1.3)."""
    r = theorem1(L=L, Q=1, tau=0, b=b, sigma_g2=sg2, gamma_g2=gg2, f_gap=f, T=T)
    assert r.status is Status.CERTIFIED_PAPER
    for k, x in zip(("gap", "noise_diversity", "staleness"), terms, strict=True):
        assert close(r.terms[k], float(x)), k
    assert close(r.value, float(sum(terms)))
    assert close(r.step_sizes["eta"], float(eta))
    assert close(r.derived_constants["T_min"], 160 * L * 8)
    assert close(r.derived_constants["c_T1"], float(c))


def test_thm1_paper_threshold_eta_beta():
    below = theorem1(**{**G1, "T": 38879})
    assert below.status is Status.NOT_APPLICABLE
    assert failing(below) == ["T >= 160 L (Q+7)(tau+1)^3"]
    assert below.terms["value_if_hypotheses_ignored"] == below.value == terms_sum(below)
    eta_ok = theorem1(**G1, eta=1 / (72 * S30))
    assert eta_ok.status is Status.CERTIFIED_PAPER
    eta_bad = theorem1(**G1, eta=1e-3)
    assert eta_bad.status is Status.NOT_APPLICABLE
    assert failing(eta_bad) == ["eta == 1/(Q sqrt(L T))"]
    assert eta_bad.value == theorem1(**G1).value  # the paper formula ignores eta
    beta_bad = theorem1(**G1, beta=0.9)
    assert failing(beta_bad) == ["beta == 1"]


def test_thm1_general_eta_golden():
    """eta = 1/100, T = 38880: c = 3/2 - 2/25 - (576/10^4)(104/100) = 0.82096."""
    eta = Fr(1, 100)
    L, Q, tau, taup, s2, gap, T = 1, 2, 2, 2, Fr(6, 5), 50, 38880
    c = Fr(2 * Q - 1, Q) - 4 * eta * L * Q - 16 * eta**2 * L**2 * Q**2 * (1 + 2 * Q) * taup * (
        tau + 1
    ) ** 2 * (1 + 4 * eta * L)
    assert c == Fr(82096, 100000)
    n_gap = 2 * gap / (eta * Q * T)
    n_noise = 4 * eta * L * Q * s2
    n_drift = 16 * eta**2 * L**2 * Q**2 * (1 + 2 * Q) * (tau**2 + 1) * (1 + 4 * eta * L) * s2
    r = theorem1(**G1, eta=0.01, mode="general_eta")
    assert r.status is Status.PROOF_LEVEL and r.mode == "general_eta"
    assert close(r.derived_constants["c_T1"], float(c))
    assert close(r.terms["gap"], float(n_gap / c))
    assert close(r.terms["noise_diversity"], float(n_noise / c))
    assert close(r.terms["drift_staleness"], float(n_drift / c))
    assert close(r.value, float((n_gap + n_noise + n_drift) / c))
    assert set(r.errata_applied) == {"E-P4", "E-P5", "E-P6"}
    # no T threshold in the proof-level bound: a short horizon is fine
    assert theorem1(**{**G1, "T": 100}, eta=0.01, mode="general_eta").status is Status.PROOF_LEVEL
    # eta above 1/(4L(Q+1)) = 1/12 -> NOT_APPLICABLE
    big = theorem1(**G1, eta=0.1, mode="general_eta")
    assert big.status is Status.NOT_APPLICABLE
    assert any(n.startswith("eta <= 1/(4 L (Q+1))") for n in failing(big))


def test_thm1_tau0_uses_taup_one():
    """E-P6: at tau = 0 the coefficient uses tau' = 1: c = 1 - 4e - 16 e^2 *1*3*1*1*(1+4e)."""
    e = Fr(1, 50)
    c = 1 - 4 * e - 16 * e**2 * 3 * (1 + 4 * e)
    r = theorem1(L=1, Q=1, tau=0, b=1, sigma_g2=0, gamma_g2=1, f_gap=1, T=10, eta=0.02,
                 mode="general_eta")
    assert close(r.derived_constants["c_T1"], float(c))


def test_thm1_status_infinite_constants():
    """12.7: unequal A_i -> gamma_g = inf -> Asm 4 fails globally -> NOT_APPLICABLE."""
    r = theorem1(**{**G1, "gamma_g2": INF})
    assert r.status is Status.NOT_APPLICABLE
    assert failing(r) == ["Asm 4 gradient diversity <= gamma_g2"]
    assert r.terms["value_if_hypotheses_ignored"] == INF
    r = theorem1(**{**G1, "sigma_g2": INF})
    assert failing(r) == ["Asm 3 per-sample gradient variance <= sigma_g2"]
    r = theorem1(**{**G1, "f_gap": INF})  # indefinite quadratic: f_star_P = -inf
    assert failing(r) == ["Asm 2 each f_i bounded below"]
    r = theorem1(**{**G1, "gamma_g2": INF}, eta=0.01, mode="general_eta")
    assert r.status is Status.NOT_APPLICABLE and r.value == INF


def test_thm1_array_of_T():
    Ts = [1000.0, 38880.0, 1e6]
    r = theorem1(**{**G1, "T": Ts})
    assert isinstance(r.value, np.ndarray) and r.value.shape == (3,)
    assert r.status is Status.NOT_APPLICABLE  # worst over horizons
    assert r.derived_constants["status_per_T"] == [
        "NOT_APPLICABLE", "CERTIFIED_PAPER", "CERTIFIED_PAPER"]
    for i, T in enumerate(Ts):
        single = theorem1(**{**G1, "T": T})
        assert close(r.value[i], single.value)
        assert close(r.step_sizes["eta"][i], single.step_sizes["eta"])
    np.testing.assert_array_equal(r.value, terms_sum(r))
    ok = theorem1(**{**G1, "T": np.array([38880.0, 1e6])})
    assert ok.status is Status.CERTIFIED_PAPER


# ----------------------------------------------------------------------------- Lemmas 1-4
G2 = dict(L=1.0, rho=1.75, G=2.0, alpha=0.5, sigma_g2=0.2, sigma_h2=0.3, gamma_g2=1.0,
          gamma_h2=0.4, b=4)
G2_RUN = dict(Q=2, tau=2, F_gap=10.0, T=1024)


def _g2_by_hand():
    L, rho, G, a = Fr(1), Fr(7, 4), Fr(2), Fr(1, 2)
    sg2, sh2, gg2, gh2, b = Fr(1, 5), Fr(3, 10), Fr(1), Fr(2, 5), 4
    one = 1 + a * L  # 3/2
    L_b = L * one**2 + a * rho * G  # 9/4 + 7/4 = 4
    mu_b2 = a**2 * L**2 * one**2 * sg2 / b  # 9/320
    bf = Fr(1, b) + a**2 * L**2 / b
    sigma_b2 = 3 * one**2 * sg2 * bf + 3 * a**2 * G**2 * sh2 / b + 3 * a**2 * sg2 * sh2 / b * bf
    gamma_b2 = 12 * one**2 * (1 + a**2 * L**2) * gg2 + 12 * a**2 * G**2 * gh2
    G_b = one * G
    return dict(L_b=L_b, mu_b2=mu_b2, sigma_b2=sigma_b2, gamma_b2=gamma_b2, G_b=G_b)


def test_maml_constants_golden():
    h = _g2_by_hand()
    assert h["L_b"] == 4 and h["sigma_b2"] == Fr(650390625, 10**9)
    assert h["gamma_b2"] == Fr(3855, 100) and h["G_b"] == 3
    c = maml_constants(**G2)
    assert close(c["L_b"], 4.0)
    assert close(c["mu_b"] ** 2, float(h["mu_b2"]))
    assert close(c["sigma_b2"], 0.650390625)
    assert close(c["gamma_b2"], 38.55)
    assert close(c["G_b"], 3.0)


def test_maml_constants_zero_times_inf():
    """1.5: rho = sigma_h = gamma_h = 0 kill their G-products; quadratic-like input."""
    c = maml_constants(L=2.0, rho=0.0, G=INF, alpha=0.25, sigma_g2=1.0, sigma_h2=0.0,
                       gamma_g2=0.5, gamma_h2=0.0, b=2)
    assert close(c["L_b"], 2.0 * 1.5**2)  # alpha rho G = 0
    assert close(c["sigma_b2"], 3 * 2.25 * 1.0 * (1 / 2 + (0.25**2 * 2**2) / 2))
    assert close(c["gamma_b2"], 12 * 2.25 * (1 + 0.25) * 0.5)
    assert c["G_b"] == INF
    z = maml_constants(L=1.0, rho=INF, G=INF, alpha=0.0, sigma_g2=INF, sigma_h2=INF,
                       gamma_g2=1.0, gamma_h2=INF, b=1)
    assert z["L_b"] == 1.0 and z["mu_b"] == 0.0 and z["gamma_b2"] == 12.0  # alpha = 0
    g = maml_constants(L=1.0, rho=1.0, G=INF, alpha=0.1, sigma_g2=1.0, sigma_h2=0.0,
                       gamma_g2=1.0, gamma_h2=1.0, b=1)
    assert g["L_b"] == INF and g["gamma_b2"] == INF


# ----------------------------------------------------------------------------- Theorem 2
def test_thm2_paper_golden():
    h = _g2_by_hand()
    Q, tau, F, T = 2, 2, 10, 1024  # sqrt(L_b) = 2, sqrt(T) = 32
    gap = Fr(4 * 2 * F, 32)  # 5/2
    noise = Fr(8 * 2, 32) * (h["sigma_b2"] + h["gamma_b2"])
    stale = 20 * Q * h["L_b"] * (h["G_b"] ** 2 + h["sigma_b2"]) * (tau**2 + 1) / T
    bias = 4 * Q * h["mu_b2"]  # = 4 Q alpha^2 L^2 (1+alpha L)^2 sigma_g2/b = 9/40
    assert bias == Fr(9, 40) and gap == Fr(5, 2)
    r = theorem2(**G2, **G2_RUN)
    assert r.status is Status.CERTIFIED_PAPER
    assert close(r.terms["gap"], float(gap))
    assert close(r.terms["noise_diversity"], float(noise))
    assert close(r.terms["staleness"], float(stale))
    assert close(r.terms["bias"], float(bias))
    assert close(r.value, float(gap + noise + stale + bias))
    assert gap + noise + stale + bias == Fr(489301, 16384)  # = 29.86456298828125
    assert close(r.step_sizes["eta"], 1 / 128)  # 1/(Q sqrt(4*1024))
    assert close(r.derived_constants["T_min"], 256.0)
    assert close(r.derived_constants["c_T2"], 1.25)  # 3/2 - 4*(1/128)*4*2
    assert r.theorem == "PersA-FL Theorem 2"


def test_thm2_general_eta_golden():
    h = _g2_by_hand()
    Q, tau, F, T, eta, L_b = 2, 2, 10, 1024, Fr(1, 128), 4
    c = Fr(2 * Q - 1, Q) - 4 * eta * L_b * Q
    n = [
        2 * F / (eta * Q * T),
        8 * eta**2 * Q**3 * L_b**2 * (1 + 2 * eta * L_b) * (h["G_b"] ** 2 + h["sigma_b2"])
        * (tau**2 + 1),
        4 * eta * L_b * Q * (h["sigma_b2"] + h["gamma_b2"]),
        2 * Q * h["mu_b2"],
    ]
    r = theorem2(**G2, **G2_RUN, mode="general_eta")
    assert r.status is Status.PROOF_LEVEL
    got = [r.terms[k] for k in ("gap", "drift_staleness", "noise_diversity", "bias")]
    for g, x in zip(got, n, strict=True):
        assert close(g, float(x / c))
    assert close(r.value, float(sum(n) / c))
    assert close(r.step_sizes["eta"], 1 / 128) and close(r.derived_constants["T_min"], 256.0)
    assert close(r.derived_constants["c_T2"], float(c))
    assert "E-P19" in r.errata_applied
    big = theorem2(**G2, **G2_RUN, eta=0.2, mode="general_eta")  # c = 3/2 - 6.4 < 0
    assert big.status is Status.NOT_APPLICABLE and big.value == INF


def test_thm2_status_logic():
    """12.7: quadratic (rho = sigma_h = 0, G = inf) -> VACUOUS; L_b = inf -> NOT_APPLICABLE."""
    quad = dict(G2, rho=0.0, G=INF, sigma_h2=0.0)
    r = theorem2(**quad, **G2_RUN)
    assert r.status is Status.VACUOUS and r.value == INF and r.is_bound
    assert failing(r) == []
    asm6 = next(h for h in r.hypotheses if h.name.startswith("Asm 6"))
    assert asm6.holds is True and "VACUOUS" in asm6.detail
    assert theorem2(**dict(quad, gamma_h2=0.0), **G2_RUN).status is Status.VACUOUS
    logi = theorem2(**dict(G2, G=INF), **G2_RUN)  # rho > 0, G = inf: L_b = inf
    assert logi.status is Status.NOT_APPLICABLE
    assert failing(logi) == ["T >= 64 L_b"]
    assert theorem2(**dict(G2, gamma_g2=INF), **G2_RUN).status is Status.NOT_APPLICABLE
    short = theorem2(**G2, **dict(G2_RUN, T=255))
    assert failing(short) == ["T >= 64 L_b"]
    assert theorem2(**G2, **dict(G2_RUN, T=256)).status is Status.CERTIFIED_PAPER


# ----------------------------------------------------------------------------- Lemmas 5-7
G3 = dict(L=1.0, lam=10.0, nu=0.1, sigma_g2=0.2, gamma_g2=1.0, b=2)
G3_RUN = dict(Q=1, tau=1, F_gap=5.0, T=23040)  # L_c T = 25600 = 160^2


def test_me_constants_golden():
    c = me_constants(L=1.0, lam=10.0, nu=0.1, sigma_g2=0.2, b=2, gamma_g2=1.0)
    assert close(c["L_c"], 10 / 9)
    assert close(c["mu_c"], 1 / 9)
    assert close(c["sigma_c2"], 22 / 81)  # 2*100/81*(1/10 + 1/100)
    assert close(c["mu_c_safe"], math.sqrt(22) / 9)
    assert close(c["gamma_c2"], 400 / 13)  # 16*100/(100-48)
    assert close(c["kappa_me"], 10.0)
    assert c["mu_c_used"] == c["mu_c_safe"]
    assert me_constants(**dict(G3, gamma_g2=1.0), affine_additive=True)["mu_c_used"] == c["mu_c"]
    k = me_constants(L=1.0, lam=8.0, nu=0.0, sigma_g2=0.0, b=1, gamma_g2=1.0, kappa_me=3.0)
    assert k["L_c"] == 4.0 and k["sigma_c2"] == 0.0
    assert close(k["gamma_c2"], 16 * 64 / 16)  # lam^2 - 48 = 16
    lam7 = me_constants(L=1.0, lam=7.0, nu=0.0, sigma_g2=0.0, b=1, gamma_g2=1.0)
    assert close(lam7["gamma_c2"], 784.0)  # E-P9: 16*49 at lam = 7L
    low = me_constants(L=1.0, lam=6.0, nu=0.0, sigma_g2=0.0, b=1, gamma_g2=1.0)
    assert low["gamma_c2"] == INF  # lam^2 <= 48 L^2: Lemma 7 gives nothing
    assert me_constants(L=1.0, lam=6.0, nu=0.0, sigma_g2=0.0, b=1, gamma_g2=0.0)["gamma_c2"] == 0


# ----------------------------------------------------------------------------- Theorem 3
def _g3_by_hand(affine: bool):
    L_c, sc2, gc2, gg2 = Fr(10, 9), Fr(22, 81), Fr(400, 13), Fr(1)
    Q, tau, F, T, lam, nu, L = 1, 1, 5, 23040, 10, Fr(1, 10), 1
    r = Fr(160, 23040)  # sqrt(L_c)/sqrt(T) = sqrt(L_c T)/T = 1/144
    mu2 = Fr(1, 81) if affine else sc2
    corrected = [4 * r * F, 8 * r * (sc2 + gc2),
                 144 * L_c * (1 + Q) * (tau**2 + 1) * (sc2 + gc2) / T, 4 * Q * mu2]
    literal = corrected[:2] + [144 * L_c * (1 + Q) * (tau**2 + 1) * (sc2 + gg2) / T,
                               4 * Q * lam**2 * nu**2 / (lam - L) ** 2]
    eta = Fr(1, 160)
    c = (Fr(2 * Q - 1, Q) - 4 * eta * Q * L_c
         - 32 * eta**2 * Q**2 * L_c**2 * (1 + 2 * Q) * 1 * (tau + 1) ** 2 * (1 + 2 * eta * L_c))
    general = [2 * F / (eta * Q * T) / c, 2 * Q * mu2 / c,
               32 * eta**2 * Q**2 * L_c**2 * (1 + 2 * Q) * (tau**2 + 1) * (1 + 2 * eta * L_c)
               * (sc2 + gc2) / c,
               4 * eta * Q * L_c * (sc2 + gc2) / c]
    return corrected, literal, general, c


def test_thm3_corrected_golden():
    corr, _, _, c = _g3_by_hand(affine=False)
    r = theorem3(**G3, **G3_RUN)
    assert r.status is Status.CERTIFIED_CORRECTED and r.mode == "corrected"
    for k, x in zip(("gap", "noise_diversity", "staleness", "bias"), corr, strict=True):
        assert close(r.terms[k], float(x)), k
    assert close(r.value, float(sum(corr)))
    assert sum(corr) == Fr(48169, 12636) and close(r.value, 3.81204495093384)
    assert close(r.step_sizes["eta"], 1 / 160)
    assert close(r.derived_constants["T_min"], 20480.0)  # 288*(10/9)*8*8
    assert close(r.derived_constants["T_min_paper"], 10240.0)
    assert close(r.derived_constants["eta_max"], 9 / 80)
    assert close(r.derived_constants["c_T3"], float(c))
    assert {"E-P1", "E-P2", "E-P3", "E-P10"} <= set(r.errata_applied)
    aff, _, _, _ = _g3_by_hand(affine=True)
    ra = theorem3(**G3, **G3_RUN, affine_additive=True)
    assert close(ra.terms["bias"], 4 / 81) and close(ra.value, float(sum(aff)))
    assert "E-P10" not in ra.errata_applied


def test_thm3_literal_and_general_golden():
    _, lit, gen, c = _g3_by_hand(affine=False)
    r = theorem3(**G3, **G3_RUN, mode="paper_literal")
    assert r.status is Status.PAPER_LITERAL_KNOWN_ERRATUM and not r.is_bound
    for k, x in zip(("gap", "noise_diversity", "staleness", "bias"), lit, strict=True):
        assert close(r.terms[k], float(x)), k
    assert close(r.value, float(sum(lit)))
    g = theorem3(**G3, **G3_RUN, mode="general_eta")
    assert g.status is Status.PROOF_LEVEL
    for k, x in zip(("gap", "bias", "drift_staleness", "noise_diversity"), gen, strict=True):
        assert close(g.terms[k], float(x)), k
    assert close(g.value, float(sum(gen)))
    for res in (r, g):
        assert close(res.step_sizes["eta"], 1 / 160)
        assert close(res.derived_constants["T_min_paper"], 10240.0)
        assert close(res.derived_constants["T_min"], 20480.0)
        assert close(res.derived_constants["c_T3"], float(c))
    # literal mode below the paper's own (tau+1)^2 threshold -> NOT_APPLICABLE
    lo = theorem3(**G3, **dict(G3_RUN, T=10000), mode="paper_literal")
    assert failing(lo) == ["T >= 288 L_c (Q+7)(tau+1)^2 (paper's threshold)"]


def _thm3_at_paper_threshold(Q, tau):
    L_c = 10 / 9
    T = 288 * L_c * (Q + 7) * (tau + 1) ** 2
    return theorem3(**G3, Q=Q, tau=tau, F_gap=1.0, T=T)


def test_thm3_E_P3():
    """(10,20) at the paper's threshold: c_T3 = -0.848 -> NOT_APPLICABLE (E-P3); (10,10): 0.522."""
    bad = _thm3_at_paper_threshold(10, 20)
    assert bad.status is Status.NOT_APPLICABLE
    assert close(bad.derived_constants["c_T3"], -0.8481938742, rel=1e-8)
    [h] = bad.failing_hypotheses
    assert "E-P3" in h.name and h.detail.startswith("E-P3")
    good = _thm3_at_paper_threshold(10, 10)
    assert close(good.derived_constants["c_T3"], 0.5218974017, rel=1e-8)
    assert good.status is Status.CERTIFIED_CORRECTED and failing(good) == []
    worst = _thm3_at_paper_threshold(100, 100)
    assert close(worst.derived_constants["c_T3"], -18.88252329, rel=1e-8)
    # the literal statement accepts (10,20) at its own threshold: that is the erratum
    lit = theorem3(**G3, Q=10, tau=20, F_gap=1.0, T=288 * (10 / 9) * 17 * 441,
                   mode="paper_literal")
    assert lit.status is Status.PAPER_LITERAL_KNOWN_ERRATUM
    # the corrected threshold (tau+1)^3 certifies
    ok = theorem3(**G3, Q=10, tau=20, F_gap=1.0, T=288 * (10 / 9) * 17 * 21**3)
    assert ok.status is Status.CERTIFIED_CORRECTED and ok.derived_constants["c_T3"] >= 0.5


def test_thm3_status_logic():
    r = theorem3(**dict(G3, lam=6.5), **G3_RUN)
    assert r.status is Status.NOT_APPLICABLE and "lam >= 7 L" in failing(r)
    assert r.terms["value_if_hypotheses_ignored"] == INF  # lam^2 < 48: gamma_c2 = inf
    r = theorem3(**dict(G3, gamma_g2=INF), **G3_RUN)
    assert failing(r) == ["Asm 4 gradient diversity <= gamma_g2"]
    r = theorem3(**G3, **G3_RUN, beta=1.2)
    assert failing(r) == ["beta == 1"]
    r = theorem3(**G3, **G3_RUN, eta=0.001)
    assert failing(r) == ["eta == 1/(Q sqrt(L_c T))"]


# ----------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "fn, kw, field",
    [
        (theorem1, dict(L=0.0), "L"), (theorem1, dict(L=-1.0), "L"),
        (theorem1, dict(L=math.nan), "L"), (theorem1, dict(L=INF), "L"),
        (theorem1, dict(Q=0), "Q"), (theorem1, dict(Q=1.5), "Q"),
        (theorem1, dict(tau=-1), "tau"), (theorem1, dict(b=0), "b"),
        (theorem1, dict(T=0), "T"), (theorem1, dict(T=-5.0), "T"),
        (theorem1, dict(T=math.nan), "T"), (theorem1, dict(T=[]), "T"),
        (theorem1, dict(T=[10.0, INF]), "T"), (theorem1, dict(sigma_g2=-1.0), "sigma_g2"),
        (theorem1, dict(gamma_g2=math.nan), "gamma_g2"), (theorem1, dict(f_gap=-1.0), "f_gap"),
        (theorem1, dict(beta=0.0), "beta"), (theorem1, dict(eta=-0.1), "eta"),
        (theorem1, dict(eta=math.nan), "eta"), (theorem1, dict(mode="corrected"), "mode"),
        (theorem2, dict(alpha=-0.1), "alpha"), (theorem2, dict(rho=-1.0), "rho"),
        (theorem2, dict(G=math.nan), "G"), (theorem2, dict(F_gap=-2.0), "F_gap"),
        (theorem2, dict(sigma_h2=-1.0), "sigma_h2"), (theorem2, dict(mode="paper_literal"), "mode"),
        (theorem3, dict(lam=1.0), "lam"), (theorem3, dict(lam=0.5), "lam"),
        (theorem3, dict(nu=-0.1), "nu"), (theorem3, dict(kappa_me=1.0), "kappa_me"),
        (theorem3, dict(kappa_me=11.0), "kappa_me"), (theorem3, dict(mode="paper"), "mode"),
        (theorem3, dict(affine_additive="yes"), "affine_additive"),
    ],
)
def test_bad_inputs_raise_config_error(fn, kw, field):
    base = {theorem1: G1, theorem2: {**G2, **G2_RUN}, theorem3: {**G3, **G3_RUN}}[fn]
    with pytest.raises(ConfigError) as e:
        fn(**{**base, **kw})
    msg = str(e.value)
    assert msg.startswith(field + " ") and "got" in msg


# ----------------------------------------------------------------------------- properties
pos = st.floats(1e-3, 1e3)
nonneg = st.floats(0.0, 50.0)
Ts = st.floats(1.0, 1e9)


@settings(max_examples=40, deadline=None)
@given(L=pos, Q=st.integers(1, 20), tau=st.integers(0, 20), b=st.integers(1, 8), s=nonneg,
       g=nonneg, f=nonneg, T=Ts, d=st.floats(1e-6, 10.0), eta=st.floats(1e-7, 1.0),
       gen=st.booleans())
def test_thm1_monotone(L, Q, tau, b, s, g, f, T, d, eta, gen):
    """Nondecreasing in sigma_g2, gamma_g2, tau and f_gap (paper mode: eta does not depend on
    them; general_eta: eta fixed)."""
    kw = dict(L=L, Q=Q, tau=tau, b=b, sigma_g2=s, gamma_g2=g, f_gap=f, T=T)
    extra = dict(eta=eta, mode="general_eta") if gen else {}
    v0 = theorem1(**kw, **extra).value
    for ch in (dict(sigma_g2=s + d), dict(gamma_g2=g + d), dict(tau=tau + 1), dict(f_gap=f + d)):
        v1 = theorem1(**{**kw, **ch}, **extra).value
        assert v1 >= v0 * (1 - REL), ch


@settings(max_examples=30, deadline=None)
@given(L=pos, rho=st.floats(0.0, 10.0), G=st.floats(0.0, 10.0), a=st.floats(0.0, 2.0),
       sh=nonneg, gh=nonneg, Q=st.integers(1, 10), tau=st.integers(0, 10), b=st.integers(1, 8),
       s=nonneg, g=nonneg, f=nonneg, T=Ts, d=st.floats(1e-6, 10.0), eta=st.floats(1e-7, 1.0),
       gen=st.booleans())
def test_thm2_monotone(L, rho, G, a, sh, gh, Q, tau, b, s, g, f, T, d, eta, gen):
    kw = dict(L=L, rho=rho, G=G, alpha=a, sigma_g2=s, sigma_h2=sh, gamma_g2=g, gamma_h2=gh, b=b,
              Q=Q, tau=tau, F_gap=f, T=T)
    extra = dict(eta=eta, mode="general_eta") if gen else {}
    v0 = theorem2(**kw, **extra).value
    for ch in (dict(sigma_g2=s + d), dict(gamma_g2=g + d), dict(tau=tau + 1), dict(F_gap=f + d)):
        assert theorem2(**{**kw, **ch}, **extra).value >= v0 * (1 - REL), ch


@settings(max_examples=30, deadline=None)
@given(L=pos, r=st.floats(1.05, 30.0), nu=st.floats(0.0, 2.0), Q=st.integers(1, 10),
       tau=st.integers(0, 10), b=st.integers(1, 8), s=nonneg, g=nonneg, f=nonneg, T=Ts,
       d=st.floats(1e-6, 10.0), eta=st.floats(1e-7, 1.0),
       mode=st.sampled_from(["corrected", "paper_literal", "general_eta"]), aff=st.booleans())
def test_thm3_monotone(L, r, nu, Q, tau, b, s, g, f, T, d, eta, mode, aff):
    kw = dict(L=L, lam=r * L, nu=nu, sigma_g2=s, gamma_g2=g, b=b, Q=Q, tau=tau, F_gap=f, T=T,
              affine_additive=aff, mode=mode)
    extra = dict(eta=eta) if mode == "general_eta" else {}
    v0 = theorem3(**kw, **extra).value
    for ch in (dict(sigma_g2=s + d), dict(gamma_g2=g + d), dict(tau=tau + 1), dict(F_gap=f + d)):
        assert theorem3(**{**kw, **ch}, **extra).value >= v0 * (1 - REL), ch


maybe_inf = st.one_of(nonneg, st.just(INF))


@settings(max_examples=50, deadline=None)
@given(which=st.sampled_from([1, 2, 3]), L=pos, Q=st.integers(1, 10), tau=st.integers(0, 10),
       b=st.integers(1, 4), s=maybe_inf, g=maybe_inf, f=maybe_inf, G=maybe_inf,
       rho=st.one_of(st.just(0.0), pos), sh=maybe_inf, gh=maybe_inf, a=st.floats(0.0, 1.0),
       r=st.floats(1.05, 30.0), T=st.one_of(Ts, st.lists(Ts, min_size=1, max_size=4)),
       beta=st.sampled_from([1.0, 1.0, 0.5]), eta=st.one_of(st.none(), st.floats(1e-7, 1.0)),
       k=st.integers(0, 2))
def test_status_and_sum_invariants(which, L, Q, tau, b, s, g, f, G, rho, sh, gh, a, r, T, beta,
                                   eta, k):
    """value == sum(terms); NOT_APPLICABLE iff a checkable hypothesis fails; VACUOUS iff inf."""
    common = dict(Q=Q, tau=tau, b=b, sigma_g2=s, gamma_g2=g, T=T, beta=beta, eta=eta)
    if which == 1:
        res = theorem1(L=L, f_gap=f, mode=["paper", "general_eta", "paper"][k], **common)
    elif which == 2:
        res = theorem2(L=L, rho=rho, G=G, alpha=a, sigma_h2=sh, gamma_h2=gh, F_gap=f,
                       mode=["paper", "general_eta", "paper"][k], **common)
    else:
        res = theorem3(L=L, lam=r * L, nu=a, F_gap=f, affine_additive=bool(k % 2),
                       mode=["corrected", "paper_literal", "general_eta"][k], **common)
    val = np.asarray(res.value)
    assert not np.isnan(val).any()
    np.testing.assert_array_equal(val, np.asarray(terms_sum(res)))
    fails = bool(res.failing_hypotheses)
    assert (res.status is Status.NOT_APPLICABLE) == fails
    assert ("value_if_hypotheses_ignored" in res.terms) == fails
    if not fails:
        assert (res.status is Status.VACUOUS) == bool(np.isinf(val).any())
    assert isinstance(res.value, np.ndarray) == isinstance(T, list)
