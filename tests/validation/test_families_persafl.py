"""[P] PersA-FL families (validation/families/persafl.py): a point of the space -> its scenario.

Hand-computed: the horizon ``T = ceil(T_factor * T_min)`` with [P] Theorem 1's
``T_min = 160 L (Q+7)(tau+1)^3``, Theorem 3's ``288 L_c (Q+7)(tau+1)^{3|2}`` with
``L_c = lam L/(lam - L)`` (Lemma 5), Theorem 2's ``64 L_b`` with ``L_b = L(1+aL)^2 + a rho G``
(Lemma 1, eq. (21)); the step ``eta = eta_mult/(Q sqrt(L' T))``; the window model's uniform
staleness pmf on {0..tau}; the problem's tagged constants (L, mu EXACT for the quadratics, the
shared Hessian's spectrum); Theorem 1's bound at the default point from its closed form
``4 sqrt(L) f_gap/sqrt(T) + 8 sqrt(L) s2/sqrt(T) + 80 L (1+Q)(tau^2+1) s2/T`` with
``s2 = sigma_g2/b + gamma_g2`` computed from the gradients; the exact oracles of Theorems 1 and
3 at one client, tau = 0, T = 2, worked out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fedsim.theory import persafl
from fedsim.validation.families import build_problem_from, get_family

from fedsim.config import Scenario

F1 = get_family("theorem1-window")
F2 = get_family("theorem2-logistic")
F3 = get_family("theorem3-window")


def _consts(inst) -> dict[str, tuple[float, str]]:
    return {r["name"]: (float(r["value"]), str(r["tag"])) for r in inst.constants}


def _window_checks(inst, *, Q: int, tau: int, T: int, eta: float, rule: str) -> None:
    alg = inst.scenario["algorithm"]
    assert alg["name"] == "fedasync" and alg["model"] == "window"
    assert alg["Q"] == Q and alg["tau"] == tau and alg["beta"] == 1.0
    assert alg["client_rule"] == rule
    assert alg["delay_pmf"] == [1.0 / (tau + 1)] * (tau + 1)
    assert alg["eta"] == pytest.approx(eta, rel=1e-15)
    assert inst.bound.step_sizes["eta"] == pytest.approx(eta, rel=1e-15)
    assert inst.horizon == T and inst.scenario["horizon"] == {"steps": T}
    assert inst.params["T"] == T
    assert inst.scenario["record"] == {"every": 1,
                                       "metrics": [inst.metric.removeprefix("avg_")]}
    staleness = inst.sim_checks[0]
    assert staleness.name.startswith("H1.4") and staleness.limit == tau
    assert staleness.kind == "max_staleness"
    Scenario.from_dict(inst.scenario)


def _shared_hessian_problem(inst, *, n: int, L: float, kappa: float, sd: float, seed: int):
    pc = inst.scenario["problem"]
    assert pc == {"kind": "quadratic", "n": n, "dim": 2, "mu": L / kappa, "L": L,
                  "heterogeneity": pc["heterogeneity"], "noise_sd": sd,
                  "shared_hessian": True, "seed": seed}
    prob = build_problem_from(pc)
    c = _consts(inst)
    assert c["L"] == (pytest.approx(L, rel=1e-12), "EXACT")
    assert c["mu"] == (pytest.approx(L / kappa, rel=1e-12), "EXACT")
    # one Hessian for every client, spectrum exactly [L/kappa, L] (d = 2)
    for i in range(n):
        assert np.array_equal(np.asarray(prob.A[i]), np.asarray(prob.A[0]))
    assert np.linalg.eigvalsh(np.asarray(prob.A[0])) == pytest.approx([L / kappa, L],
                                                                      rel=1e-12)
    # additive noise N(0, sd^2 I): per-sample variance tr = d sd^2
    assert c["sigma_g2"] == (pytest.approx(2 * sd * sd, rel=1e-12), "EXACT")
    return prob


def _diversity(prob) -> float:
    """(1/n) sum_i ||grad f_i(w) - grad f(w)||^2, the same at every w for a shared Hessian."""
    vals = []
    for w in (np.zeros(2), np.array([0.7, -1.3])):
        g = np.array([prob.grad(i, w) for i in range(prob.n)])
        vals.append(float(np.mean(np.sum((g - g.mean(axis=0)) ** 2, axis=1))))
    assert vals[0] == pytest.approx(vals[1], rel=1e-10)
    return vals[0]


def test_theorem1_default_point_by_hand():
    inst = F1.build()
    L, Q, tau, b = 1.0, 1, 1, 1
    T = 160 * 8 * 8                                   # 160 L (Q+7)(tau+1)^3 = 10240
    eta = 1.0 / math.sqrt(T)
    _window_checks(inst, Q=Q, tau=tau, T=T, eta=eta, rule="sgd")
    assert inst.scenario["algorithm"]["batch"] == b
    prob = _shared_hessian_problem(inst, n=4, L=L, kappa=2.0, sd=0.3, seed=3)
    gamma = _diversity(prob)
    c = _consts(inst)
    assert c["gamma_g2"][0] == pytest.approx(gamma, rel=1e-10)
    f_gap = float(np.mean([prob.loss(i, np.zeros(2)) for i in range(4)])) - 0.0  # c_i = 0
    s2 = 0.18 / b + gamma
    bound = (4 * math.sqrt(L) * f_gap / math.sqrt(T) + 8 * math.sqrt(L) * s2 / math.sqrt(T)
             + 80 * L * (1 + Q) * (tau**2 + 1) * s2 / T)
    assert inst.bound_value == pytest.approx(bound, rel=1e-10)
    assert inst.status == "CERTIFIED_PAPER" and inst.hypotheses_hold is True
    assert inst.is_claim and inst.unknown == []
    assert inst.bound.derived_constants["T_min"] == T


def test_theorem1_other_point_horizon_and_step():
    q = {"n": 3, "Q": 3, "tau": 2, "L": 2.0, "kappa": 4.0, "T_factor": 1.5, "seed": 9,
         "noise_sd": 0.5, "heterogeneity": 0.7}
    inst = F1.build(q)
    T_min = 160 * 2.0 * (3 + 7) * 3**3                # 86400
    T = math.ceil(1.5 * T_min)                        # 129600
    _window_checks(inst, Q=3, tau=2, T=T, eta=1.0 / (3 * math.sqrt(2.0 * T)), rule="sgd")
    _shared_hessian_problem(inst, n=3, L=2.0, kappa=4.0, sd=0.5, seed=9)
    assert inst.scenario["problem"]["heterogeneity"] == 0.7
    assert inst.is_claim
    # below the threshold the statement is not applicable, and the row says why
    short = F1.build({**q, "T_factor": 0.5})
    assert short.horizon == T_min // 2 and not short.is_claim
    assert [h.name for h in short.bound.hypotheses if h.holds is False] == [
        "T >= 160 L (Q+7)(tau+1)^3"]
    # an explicit T wins over T_factor
    assert F1.build({**q, "T": 77}).horizon == 77


def test_theorem3_point_by_hand():
    q = {"lam_over_L": 8.0, "L": 1.0, "Q": 1, "tau": 1}
    inst = F3.build(q)
    lam, L = 8.0, 1.0
    Lc = lam * L / (lam - L)                          # 8/7
    T = math.ceil(288 * Lc * 8 * 2**3)               # 21066
    assert T == 21066
    _window_checks(inst, Q=1, tau=1, T=T, eta=1.0 / math.sqrt(Lc * T), rule="moreau")
    alg = inst.scenario["algorithm"]
    assert alg["lam"] == lam and alg["nu"] == 1e-8 and alg["batch"] == 1
    assert inst.bound.derived_constants["L_c"] == pytest.approx(Lc, rel=1e-15)
    prob = _shared_hessian_problem(inst, n=4, L=L, kappa=2.0, sd=0.3, seed=3)
    assert inst.scenario["problem"]["heterogeneity"] == 0.1       # this family's default
    # the theorem is called with F_gap = F^(c)(0) - f_star_P, F^(c)_i(0) = 0.5 b_i^T Hc b_i
    # (c_i = 0, [P] eq. (10)), and sigma_g2 = d sd^2, gamma_g2 from the gradients
    A = np.asarray(prob.A[0])
    Hc = lam * A @ np.linalg.inv(A + lam * np.eye(2))
    F_gap = float(np.mean([0.5 * bi @ Hc @ bi for bi in np.asarray(prob.b)]))
    want = persafl.theorem3(L=L, lam=lam, nu=1e-8, sigma_g2=0.18, gamma_g2=_diversity(prob),
                            b=1, Q=1, tau=1, F_gap=F_gap, T=T, affine_additive=True,
                            eta=1.0 / math.sqrt(Lc * T), mode="corrected")
    assert inst.bound_value == pytest.approx(float(want.value), rel=1e-10)
    assert inst.status == "CERTIFIED_CORRECTED" and inst.is_claim
    assert inst.unknown == ["inner accuracy ||grad h_tilde|| <= nu"]
    names = [c.name for c in inst.sim_checks]
    assert names[1].startswith("inner accuracy") and inst.sim_checks[1].kind == \
        "inner_failures"
    sq = F3.build({**q, "T_rule": "square"})
    assert sq.horizon == math.ceil(288 * Lc * 8 * 2**2) == 10533
    lit = F3.build({**q, "mode": "paper_literal"})
    assert lit.mode == "paper_literal" and lit.bound.mode == "paper_literal"
    with pytest.raises(Exception, match="lam_over_L"):
        F3.build({"lam_over_L": 1.0})


def test_theorem2_point_by_hand():
    q = {"n": 3, "Q": 2, "tau": 2, "alpha": 0.25, "b": 3, "feature_scale": 0.5, "seed": 4,
         "heterogeneity": 0.5}
    inst = F2.build(q)
    pc = inst.scenario["problem"]
    assert pc == {"kind": "logistic", "n_clients": 3, "dim": 3, "samples_per_client": 20,
                  "heterogeneity": 0.5, "seed": 4, "anchors": "all", "anchor_scale": 0.5,
                  "feature_scale": 0.5}
    c = _consts(inst)
    assert c["L"][1] == "EXACT" and c["rho"][1] == "UPPER" and c["G"][1] == "UPPER"
    prob = build_problem_from(pc)
    assert prob.n == 3
    assert c["L"][0] == float(prob.constants.values()["L"])
    a = 0.25
    Lb = c["L"][0] * (1 + a * c["L"][0]) ** 2 + a * c["rho"][0] * c["G"][0]   # Lemma 1
    assert inst.bound.derived_constants["L_b"] == pytest.approx(Lb, rel=1e-12)
    _window_checks(inst, Q=2, tau=2, T=200, eta=1.0 / (2 * math.sqrt(Lb * 200)),
                   rule="maml")
    alg = inst.scenario["algorithm"]
    assert alg["alpha"] == a and alg["batch"] == 3
    assert inst.exact is None and inst.mc is not None
    # without T: T = ceil(T_factor * 64 L_b)
    auto = F2.build({**q, "T": None, "T_factor": 2.0})
    assert auto.horizon == math.ceil(2.0 * 64 * Lb)
    assert F2.build({**q, "eta_mult": 2.0}).is_claim is False


@pytest.mark.parametrize("fam", [F1, F3], ids=lambda f: f.name)
def test_exact_oracle_one_client_two_steps_by_hand(fam):
    """n = 1, tau = 0, Q = 1, T = 2, w^0 = 0, f(w) = 0.5 (w-b)^T A (w-b), noise e ~ N(0, sd^2 I).

    Theorem 1 (SGD): g(w) = A(w - b); w^1 = -eta (g(0) + e), so
    E||g(w^1)||^2 = ||(I - eta A) A b||^2 + eta^2 sd^2 ||A||_F^2.
    Theorem 3 (exact Moreau step, lam): the client's gradient is
    lam (A + lam I)^{-1}(A(w - b) + e) = Hc (w - b) + lam (A + lam I)^{-1} e, Hc = lam A (A +
    lam I)^{-1}; grad F^(c)(w) = Hc (w - b), so the same formula with A -> Hc and the noise
    matrix Hc lam (A + lam I)^{-1}.  The metric is the mean of t = 0, 1.
    """
    extra = {"lam_over_L": 8.0} if fam is F3 else {}
    inst = fam.build({"n": 1, "tau": 0, "Q": 1, "T": 2, **extra})
    assert inst.horizon == 2
    prob = build_problem_from(inst.scenario["problem"])
    A, b, sd = np.asarray(prob.A[0]), np.asarray(prob.b[0]), 0.3
    eta = inst.scenario["algorithm"]["eta"]
    assert eta == 1.0 / math.sqrt((8.0 / 7.0 if fam is F3 else 1.0) * 2)
    if fam is F3:
        R = np.linalg.inv(A + 8.0 * np.eye(2))
        H, N = 8.0 * A @ R, 8.0 * A @ R @ (8.0 * R)
    else:
        H, N = A, A
    g0 = H @ b
    g1 = (np.eye(2) - eta * H) @ H @ b
    want = (g0 @ g0 + g1 @ g1 + eta**2 * sd**2 * float(np.sum(N * N))) / 2
    m = inst.measure()
    assert m.method == "exact" and m.error == 0.0
    assert m.value == pytest.approx(want, rel=1e-12)
