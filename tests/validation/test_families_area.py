"""[A] AREA families (validation/families/area.py): a point of the space -> its scenario.

Hand-computed: the event law from rates (p_i = rate_i / total, THEORY_SPEC 2.2) and the
engine's Poisson clocks that realise it; the centres, the median interval and R; [A] Theorem
8's constants ``A = 1/p_s + 2 mean(1/p_i)``, ``C_B`` (paper ``sigma2 + (M+1)B^2/2``, corrected
``sigma2 + M B^2``), step ``alpha = sqrt(A R^2/(C_B M K))`` and bound ``sqrt(A C_B R^2/(M
K))``; the exact oracle at K = 4 by enumerating the only event paths that move x_s before the
last event; Theorem 7's problem (client-specific Hessians with spectra in [L/kappa, L], the
tagged L, mu, sigma_g2) and its exact oracle at K = 1 (``||x*||^2``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fedsim.validation.families import build_problem_from, get_family, norm_centres

from fedsim.config import Scenario

F7 = get_family("theorem7-quad")
F8 = get_family("theorem8-norm")


def _consts(inst) -> dict[str, tuple[float, str]]:
    return {r["name"]: (float(r["value"]), str(r["tag"])) for r in inst.constants}


def test_theorem8_point_by_hand():
    """n = 4, rates (1, 1, 2, 2), rate_s 4: p = (.1, .1, .2, .2), p_s = .4; spread 1: centres
    -1 + (i/3 - 1/2) = (-1.5, -7/6, -5/6, -.5), median interval [-7/6, -5/6], R = 5/6."""
    q = {"n": 4, "rates": [1, 1, 2, 2], "rate_s": 4, "M": 4, "K": 6, "B": 2.0,
         "centre_spread": 1.0, "sigma2": 0.5, "mode": "corrected"}
    inst = F8.build(q)
    sc = inst.scenario
    # the engine's clocks run at the given rates (the same event law p as normalised ones)
    assert sc["delays"] == {"compute": {"kind": "exponential", "rate": 1.0},
                            "override": [{"clients": [2], "compute": {"kind": "exponential",
                                                                      "rate": 2.0}},
                                         {"clients": [3], "compute": {"kind": "exponential",
                                                                      "rate": 2.0}}]}
    assert sc["trigger"] == {"kind": "poisson", "rate": 4.0}
    # given probabilities instead: the clocks run at p_i, p_s
    sp = F8.build({**{k: v for k, v in q.items() if k not in ("rates", "rate_s")},
                   "p": [0.1, 0.1, 0.2, 0.2], "p_s": 0.4}).scenario
    assert sp["trigger"] == {"kind": "poisson", "rate": 0.4}
    assert sp["delays"]["compute"] == {"kind": "exponential", "rate": 0.1}
    assert sc["problem"] == {"kind": "norm", "B": 2.0, "n": 4, "dim": 1,
                             "centers": [[-1.5], [-7 / 6], [-5 / 6], [-0.5]]}
    assert np.allclose(norm_centres(4, 1.0)[:, 0], [-1.5, -7 / 6, -5 / 6, -0.5], rtol=1e-15)
    c = _consts(inst)
    assert c["B"] == (2.0, "EXACT") and c["G"] == (2.0, "EXACT")
    R = 5 / 6
    qbar = np.mean([10, 10, 5, 5])
    A = 1 / 0.4 + 2 * qbar
    CB = 0.5 + 4 * 2.0**2
    d = inst.bound.derived_constants
    assert d["A"] == pytest.approx(A, rel=1e-12) and d["C_B"] == pytest.approx(CB, rel=1e-12)
    alpha = math.sqrt(A * R**2 / (CB * 4 * 6))
    assert sc["algorithm"] == {"name": "area", "model": "iterate_model", "client_rule": "area",
                               "M": 4, "batch": 1,
                               "alpha": {"kind": "constant",
                                         "value": pytest.approx(alpha, rel=1e-12)}}
    assert inst.bound_value == pytest.approx(math.sqrt(A * CB * R**2 / (4 * 6)), rel=1e-12)
    assert inst.status == "CERTIFIED_CORRECTED" and inst.hypotheses_hold is True
    assert sc["horizon"] == {"steps": 6} and sc["record"] == {"every": 6,
                                                               "metrics": ["ergodic_f_gap"]}
    assert inst.metric == "ergodic_f_gap" and inst.horizon == 6
    paper = F8.build({**q, "mode": "paper"})
    assert paper.bound.derived_constants["C_B"] == pytest.approx(0.5 + 5 * 4.0 / 2, rel=1e-12)
    # the same law given as probabilities: the same scenario and bound
    as_p = F8.build({**{k: v for k, v in q.items() if k not in ("rates", "rate_s")},
                     "p": [0.1, 0.1, 0.2, 0.2], "p_s": 0.4})
    assert as_p.bound_value == pytest.approx(inst.bound_value, rel=1e-12)
    assert as_p.scenario["trigger"]["rate"] == pytest.approx(0.4, rel=1e-15)
    Scenario.from_dict(sc)


def _norm_f(x: float, c: np.ndarray, B: float) -> float:
    return float(B * np.mean(np.abs(x - c)))


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_theorem8_exact_oracle_at_K4_by_hand(mode):
    """x_{s,0} = y_j = x_j = 0.  The ergodic sum before event 4 is x_s(e1..e3) summed; x_s
    moves only at a server event, to mean_j y_j, and y_i becomes the *previous* x_i, which is
    not 0 only after client i fired twice.  So within 4 events only the paths (i, i, s, *)
    move x_s, to G_i/n with G_i = M subgradient steps of size h = alpha B from 0 towards c_i;
    xbar_4 = G_i/(4n) on them and 0 elsewhere."""
    q = {"n": 4, "rates": [1, 1, 2, 2], "rate_s": 4, "M": 4, "K": 4, "B": 2.0,
         "centre_spread": 1.0, "mode": mode}
    inst = F8.build(q)
    c = norm_centres(4, 1.0)[:, 0]
    p, ps, B = np.array([0.1, 0.1, 0.2, 0.2]), 0.4, 2.0
    h = inst.scenario["algorithm"]["alpha"]["value"] * B
    f_star = _norm_f(-1.0, c, B)                     # any point of [-7/6, -5/6]
    want, moved = 0.0, 0.0
    for i in range(4):
        z = 0.0
        for _ in range(4):                           # explicit subgradient steps
            z -= h * float(np.sign(z - c[i]))
        prob = p[i] ** 2 * ps
        want += prob * (_norm_f(z / 16, c, B) - f_star)
        moved += prob
    want += (1 - moved) * (_norm_f(0.0, c, B) - f_star)
    m = inst.measure()
    assert m.method == "exact"
    assert m.value == pytest.approx(want, rel=1e-12, abs=1e-15)
    # K = 1 and K = 2: x_s never moves before the last event
    for K in (1, 2):
        mk = F8.build({**q, "K": K}).measure()
        assert mk.value == pytest.approx(_norm_f(0.0, c, B) - f_star, rel=1e-12)


def test_theorem7_point_by_hand():
    q = {"n": 3, "rates": [1, 2, 3], "rate_s": 2, "M": 3, "K": 50, "kappa": 5.0, "L": 2.0,
         "heterogeneity": 0.5, "noise_sd": 0.4, "seed": 5}
    inst = F7.build(q)
    sc = inst.scenario
    assert sc["problem"] == {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.4, "L": 2.0,
                             "heterogeneity": 0.5, "noise_sd": 0.4, "shared_hessian": False,
                             "seed": 5}
    assert sc["algorithm"] == {"name": "area", "model": "iterate_model", "client_rule": "area",
                               "M": 3, "batch": 1, "alpha": {"kind": "theorem7"}}
    assert sc["trigger"] == {"kind": "poisson", "rate": 2.0}
    over = {o["clients"][0]: o["compute"]["rate"] for o in sc["delays"]["override"]}
    assert sc["delays"]["compute"]["rate"] == 1.0 and over == {1: 2.0, 2: 3.0}
    assert sc["horizon"] == {"steps": 50} and sc["record"] == {"every": 50,
                                                                "metrics": ["dist_sq"]}
    c = _consts(inst)
    assert c["L"] == (pytest.approx(2.0, rel=1e-12), "EXACT")
    assert c["mu"] == (pytest.approx(0.4, rel=1e-12), "EXACT")
    assert c["sigma_g2"] == (pytest.approx(2 * 0.16, rel=1e-12), "EXACT")
    prob = build_problem_from(sc["problem"])
    eig = [np.linalg.eigvalsh(np.asarray(a)) for a in prob.A]
    assert all(e.min() >= 0.4 * (1 - 1e-12) and e.max() <= 2.0 * (1 + 1e-12) for e in eig)
    assert not all(np.array_equal(np.asarray(prob.A[0]), np.asarray(a)) for a in prob.A)
    d = inst.bound.derived_constants
    assert d["n"] == 3 and d["p_s"] == pytest.approx(0.25, rel=1e-15)
    assert d["kappa"] == pytest.approx(5.0, rel=1e-12)
    assert inst.bound.step_sizes["c"] == d["c"] and inst.bound.step_sizes["d"] == d["d"]
    # H7.2 and H7.3 settled by the construction; the default point is a claim
    held = {h.name: h.holds for h in inst.bound.hypotheses}
    assert held["H7.2"] is True and held["H7.3"] is True
    assert inst.mode == "certified" and inst.theorem == "theorem7"
    Scenario.from_dict(sc)


def test_theorem7_exact_oracle_at_K1_is_the_initial_distance():
    """After one event x_s is still x_{s,0} = 0 (a server event averages y_j = 0), so
    E||x_{s,1} - x*||^2 = ||x*||^2, with x* = (sum A_i)^{-1} sum A_i b_i."""
    inst = F7.build({"K": 1, "n": 3, "seed": 8, "heterogeneity": 2.0})
    prob = build_problem_from(inst.scenario["problem"])
    A = [np.asarray(a) for a in prob.A]
    xs = np.linalg.solve(sum(A), sum(a @ np.asarray(b) for a, b in zip(A, prob.b,
                                                                        strict=True)))
    m = inst.measure()
    assert m.method == "exact"
    assert m.value == pytest.approx(float(xs @ xs), rel=1e-12)
