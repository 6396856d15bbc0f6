"""Engine vs exact oracle: Monte Carlo agreement (THEORY_SPEC 10.1, 10.2, 10.3, 12.4).

Each test runs ``fedsim.engine.run`` for R replicates of a small scenario and compares the
replicate mean of a recorded metric with the exact expectation from ``fedsim.theory.oracle`` by a
z-score ``(mean - exact) / (sd / sqrt(R))``.  The exact value is the true mean, so under a
correct engine each z is approximately N(0, 1); every assertion ``|z| < 4.5`` has a false
alarm rate of 6.8e-6 (normal approximation), and each test's docstring states the
Bonferroni total over its z-scores.  Seeds are fixed, so outcomes are deterministic.

A negative control shows the check has power: AREA's literal Algorithm 1 ("algorithm"
mode, first message a real update, E-A11) is *not* the Appendix A model, and the same
z-test must reject it against the model's oracle.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from fedsim.theory.area import step_size
from fedsim.theory.oracle import (
    area_moments,
    expcycle_staleness_pmf,
    fedasync_expcycle_moments,
    fedasync_window_moments,
)

from fedsim.config import Scenario
from fedsim.engine import initial_model, problem_for, run
from fedsim.engine.models.area.schedule import event_probabilities

ZMAX = 4.5


def zscore(vals: np.ndarray, exact: float) -> float:
    return float((vals.mean() - exact) / (vals.std(ddof=1) / math.sqrt(len(vals))))


def collect(sc: Scenario, R: int, metric: str, steps: list[int]) -> np.ndarray:
    """(R, len(steps)) array of ``metric`` at the given steps, one row per replicate."""
    out = np.empty((R, len(steps)))
    for r in range(R):
        tr = run(sc, r)
        assert not tr.diverged
        idx = np.searchsorted(tr.metric_steps, steps)
        assert np.array_equal(tr.metric_steps[idx], steps)
        out[r] = tr.metrics[metric][idx]
    return out


def collect_many(sc: Scenario, R: int, metrics: list[str], steps: list[int]):
    res = {m: np.empty((R, len(steps))) for m in metrics}
    traces_stale = []
    for r in range(R):
        tr = run(sc, r)
        assert not tr.diverged
        idx = np.searchsorted(tr.metric_steps, steps)
        assert np.array_equal(tr.metric_steps[idx], steps)
        for m in metrics:
            res[m][r] = tr.metrics[m][idx]
        traces_stale.append(np.asarray(tr.staleness_steps))
    return res, traces_stale


# ---------------------------------------------------------------------------------------
# AREA (iterate model = [A] Appendix A; the Poisson model is the i.i.d. event model)
# ---------------------------------------------------------------------------------------


def area_scenario(K: int, *, model: str = "iterate_model", alpha: dict | None = None,
                  n: int = 3, dim: int = 2, M: int = 3, rates=(1.0, 2.0, 0.7),
                  rate_s: float = 1.5, seed: int = 3) -> Scenario:
    over = [{"clients": [i], "compute": {"kind": "exponential", "rate": float(r)}}
            for i, r in enumerate(rates)]
    return Scenario.from_dict({
        "seed": seed,
        "problem": {"kind": "quadratic", "n": n, "dim": dim, "mu": 0.5, "L": 2.0,
                    "noise_sd": 0.3, "shared_hessian": False, "heterogeneity": 2.0,
                    "seed": 4},
        "algorithm": {"name": "area", "model": model, "client_rule": "area", "batch": 2,
                      "M": M, "alpha": alpha or {"kind": "c_over_k_plus_d", "c": 3.0,
                                                 "d": 10.0}},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}, "override": over},
        "trigger": {"kind": "poisson", "rate": rate_s},
        "horizon": {"steps": K},
        "record": {"every": 1, "metrics": ["dist_sq", "f_gap", "ergodic_f_gap"]},
    })


def area_exact(sc: Scenario, sched) -> Any:
    q = problem_for(sc)
    p, ps = event_probabilities(sc)
    a = sc.algorithm
    return area_moments(q, p, ps, int(a.get("M")), sched, initial_model(q),
                        sc.horizon.steps, batch=int(a.get("batch"))).set_index("k")


AREA_METRICS = [("dist_sq", "sq_dist"), ("f_gap", "f_gap"), ("ergodic_f_gap", "ergodic_f_gap")]


def area_zs(sc: Scenario, ex, R: int, ks: list[int]) -> list[tuple[str, int, float]]:
    res, _ = collect_many(sc, R, [m for m, _ in AREA_METRICS], ks)
    return [(m, k, zscore(res[m][:, j], ex.loc[k, col]))
            for m, col in AREA_METRICS for j, k in enumerate(ks)]


def test_area_engine_matches_oracle():
    """AREA iterate model, alpha_k = 3/(k+10), batch 2: 400 runs, 3 metrics x 3 k's.

    9 z-scores, |z| < 4.5: false-alarm rate <= 9 * 6.8e-6 = 6.1e-5."""
    sc = area_scenario(40)
    ex = area_exact(sc, lambda k: 3.0 / (k + 10.0))
    for m, k, z in area_zs(sc, ex, 400, [8, 20, 40]):
        assert abs(z) < ZMAX, (m, k, z)


def test_area_negative_control_algorithm_mode_differs():
    """Power check: Algorithm 1 literally ("algorithm" mode; the first message is a real update
    and alpha is shifted, E-A11) must be rejected against the Appendix A oracle: some
    |z| > 8 on the same grid (400 runs).  A failure here means the z-test has lost power."""
    sc = area_scenario(40, model="algorithm")
    ref = area_scenario(40)
    ex = area_exact(ref, lambda k: 3.0 / (k + 10.0))
    zs = area_zs(sc, ex, 400, [8, 20, 40])
    assert max(abs(z) for _, _, z in zs) > 8.0, zs


@pytest.mark.slow
def test_area_engine_matches_oracle_theorem7_schedule_long():
    """Thm 7 schedule (from the problem's L, mu and p_min), n = 4, M = 2, K = 240, 2000 runs.

    3 metrics x 4 k's = 12 z-scores, |z| < 4.5: false-alarm rate <= 8.2e-5."""
    sc = area_scenario(240, alpha={"kind": "theorem7"}, n=4, M=2, rates=(1.0, 2.0, 0.7, 1.3),
                       rate_s=2.0)
    q = problem_for(sc)
    p, ps = event_probabilities(sc)
    cons = q.constants
    L, mu = float(cons["L"].value), float(cons["mu"].value)
    pm = float(min(p.min(), ps))
    ex = area_exact(sc, lambda k: float(step_size(k, L=L, mu=mu, M=2, p_min=pm)))
    for m, k, z in area_zs(sc, ex, 2000, [20, 80, 160, 240]):
        assert abs(z) < ZMAX, (m, k, z)


# ---------------------------------------------------------------------------------------
# FedAsync: window model (10.2(a)) and exponential always-busy cycles (10.2(b))
# ---------------------------------------------------------------------------------------

OPTIONS = {
    "A": ({"client_rule": "sgd"}, {}, "grad_sq"),
    "B": ({"client_rule": "maml", "alpha": 0.3}, {"alpha": 0.3}, "grad_maml_sq"),
    "C": ({"client_rule": "moreau", "lam": 2.5, "inner_solver": "exact"}, {"lam": 2.5},
          "grad_me_sq"),
}
RATES = (0.5, 1.0, 2.0)


def fedasync_scenario(option: str, model: str, T: int, *, seed: int = 5) -> Scenario:
    rule, _, metric = OPTIONS[option]
    alg = {"name": "fedasync", "model": model, "Q": 2, "eta": 0.2, "batch": 2, "beta": 0.9,
           **rule}
    d: dict[str, Any] = {
        "seed": seed,
        "problem": {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 2.0,
                    "noise_sd": 0.4, "shared_hessian": False, "heterogeneity": 2.0,
                    "seed": 6},
        "horizon": {"steps": T},
        "record": {"every": 1, "metrics": [metric, "dist_sq"]},
    }
    if model == "window":
        alg.update(tau=2, delay_pmf=[0.3, 0.3, 0.4])
    else:
        d["delays"] = {"compute": {"kind": "exponential", "rate": 1.0},
                       "override": [{"clients": [i], "compute": {"kind": "exponential",
                                                                 "rate": r}}
                                    for i, r in enumerate(RATES)]}
    d["algorithm"] = alg
    return Scenario.from_dict(d)


def fedasync_exact(sc: Scenario, option: str):
    q = problem_for(sc)
    a = sc.algorithm
    _, kw, _ = OPTIONS[option]
    args = (q, option, int(a.get("Q")), float(a.get("eta")), float(a.get("beta")))
    if a.model == "window":
        return fedasync_window_moments(*args, a.get("delay_pmf"), sc.horizon.steps,
                                       initial_model(q), batch=int(a.get("batch")), **kw)
    return fedasync_expcycle_moments(*args, list(RATES), sc.horizon.steps, initial_model(q),
                                     batch=int(a.get("batch")), **kw)


def fedasync_check(option: str, model: str, T: int, R: int, ts: list[int]) -> list:
    sc = fedasync_scenario(option, model, T)
    ex = fedasync_exact(sc, option)
    metric = OPTIONS[option][2]
    res, stale = collect_many(sc, R, [metric, "avg_" + metric, "dist_sq"], ts)
    zs = [(metric, t, zscore(res[metric][:, j], ex.grad_sq.iloc[t])) for j, t in enumerate(ts)]
    zs.append(("avg_" + metric, ts[-1], zscore(res["avg_" + metric][:, -1],
                                               ex.avg_grad_sq.iloc[ts[-1]])))
    if option == "A":          # dist_sq is to x* = the option's minimiser only for Option A
        zs.append(("dist_sq", ts[-1], zscore(res["dist_sq"][:, -1], ex.sq_dist.iloc[ts[-1]])))
    return zs, ex, stale


@pytest.mark.parametrize("option", ["A", "B", "C"])
@pytest.mark.parametrize("model", ["window", "expcycle"])
def test_fedasync_engine_matches_oracle(option, model):
    """Options A (SGD), B (MAML, exact HVP), C (Moreau, exact inner solve); 400 runs, T = 12.

    Up to 5 z-scores per case, 6 cases: false-alarm rate <= 30 * 6.8e-6 = 2.0e-4 in total."""
    zs, ex, _ = fedasync_check(option, model, 12, 400, [3, 7, 12])
    for name, t, z in zs:
        assert abs(z) < ZMAX, (name, t, z)
    assert ex.attrs["assumption1_holds"] is (model == "window")


def test_expcycle_engine_staleness_is_geometric_mixture():
    """Engine staleness in the exp-cycle model follows P(s) = sum_i pi_i^2 (1-pi_i)^s
    (unbounded: [P] Asm 1 fails).  150 runs x 40 uploads = 6000 (dependent within a run)
    staleness values; cells s = 0..4 must be within 6 binomial sd (inflated for the
    within-run dependence; nominal per-cell false-alarm rate 2e-9)."""
    sc = fedasync_scenario("A", "expcycle", 40)
    vals = []
    for r in range(150):
        tr = run(sc, r)
        vals.append(np.asarray(tr.staleness_steps)[1:])
    s = np.concatenate(vals)
    N = len(s)
    for sv in range(5):
        pr = float(expcycle_staleness_pmf(list(RATES), sv))
        emp = float(np.mean(s == sv))
        assert abs(emp - pr) < 6 * math.sqrt(pr * (1 - pr) / N), (sv, emp, pr)
    assert s.max() > 4                                   # no bound tau in sight


@pytest.mark.slow
@pytest.mark.parametrize("option", ["A", "B", "C"])
@pytest.mark.parametrize("model", ["window", "expcycle"])
def test_fedasync_engine_matches_oracle_long(option, model):
    """As the fast test with 4000 runs and T = 40: false-alarm rate <= 2.0e-4 in total."""
    zs, _, _ = fedasync_check(option, model, 40, 4000, [5, 20, 40])
    for name, t, z in zs:
        assert abs(z) < ZMAX, (name, t, z)
