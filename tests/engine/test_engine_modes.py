"""Engine modes: FedBuff/FedAsync identity, AREA, sync FedAvg, window, exp-cycle, bounds.

Statistical tests state their false-alarm rate in the docstring.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fedsim.config import Scenario
from fedsim.engine import problem_for, run, run_batch
from fedsim.engine.models.area.schedule import event_probabilities

QP = {"kind": "quadratic", "n": 4, "dim": 3, "mu": 0.3, "L": 1.0, "heterogeneity": 1.0,
      "noise_sd": 0.1, "seed": 0}


def S(alg: dict, **kw) -> Scenario:
    d = {"name": "m", "seed": 7, "problem": dict(QP), "algorithm": alg,
         "horizon": {"steps": 300}, "record": {"metrics": ["grad_sq", "dist_sq"]}}
    for k, v in kw.items():
        d[k] = {**d[k], **v} if isinstance(v, dict) and isinstance(d.get(k), dict) else v
    return Scenario.from_dict(d)


EXP = {"download": {"kind": "exponential", "rate": 4.0},
       "compute": {"kind": "exponential", "rate": 1.0},
       "upload": {"kind": "exponential", "rate": 4.0}}


def test_fedbuff_buffer_one_equals_fedasync_bit_for_bit():
    a = run(S({"name": "fedasync", "Q": 3, "eta": 0.05, "beta": 0.7}, delays=EXP))
    b = run(S({"name": "fedbuff", "Q": 3, "eta": 0.05, "buffer": 1, "server_lr": 0.7},
              delays=EXP))
    assert np.array_equal(a.final_w, b.final_w)
    for col in ("time", "client", "staleness_steps", "staleness_time", "buffer_fill"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    for m in a.metrics:
        assert np.array_equal(a.metrics[m], b.metrics[m], equal_nan=True)
    assert set(b.kind[1:]) == {"aggregate"}


@pytest.mark.parametrize("model, trigger", [
    ("iterate_model", {"kind": "poisson", "rate": 2.0}),
    ("algorithm", {"kind": "poisson", "rate": 2.0}),
    ("algorithm", {"kind": "every_k", "count": 3}),
    ("algorithm", {"kind": "period", "period": 0.5}),
    ("algorithm", {"kind": "every_upload"}),
])
def test_area_invariant_after_every_event(model, trigger):
    """x_s + u_s - mean_i y_i = 0 to 1e-12 after every event ([A] Appendix A)."""
    sc = S({"name": "area", "model": model, "M": 2,
            "alpha": {"kind": "c_over_k_plus_d", "c": 3.0, "d": 10.0}},
           trigger=trigger, problem={"shared_hessian": False, "heterogeneity": 3.0})
    tr, = run_batch(sc, [0], diagnostics=True)
    assert tr.steps_done == 300 and not tr.diverged
    assert tr.info["invariant_max"] <= 1e-12
    assert set(tr.kind[1:]) == {"client", "server"}


def test_area_iterate_model_event_shares_match_poisson_probabilities():
    """Share of events from client i vs lambda_i / (lambda_s + sum_j lambda_j) ([A] Ex. 3).

    Chi-square goodness of fit over the n+1 event types (exactly i.i.d. categorical
    events); rejects at p < 1e-4, so the false-alarm rate is 1e-4.
    """
    rates = [0.5, 1.0, 2.0, 4.0]
    over = [{"clients": [i], "compute": {"kind": "exponential", "rate": r}}
            for i, r in enumerate(rates)]
    sc = S({"name": "area", "model": "iterate_model", "M": 1,
            "alpha": {"kind": "constant", "value": 0.05}},
           trigger={"kind": "poisson", "rate": 1.5}, delays={"override": over},
           horizon={"steps": 20000}, record={"every": 1000, "metrics": ["dist_sq"]})
    tr = run(sc)
    p, ps = event_probabilities(sc)
    np.testing.assert_allclose(p, np.array(rates) / 9.0)
    assert ps == pytest.approx(1.5 / 9.0)
    kinds, cl = tr.kind[1:], tr.client[1:]
    obs = [int(np.sum((kinds == "client") & (cl == i))) for i in range(4)]
    obs.append(int(np.sum(kinds == "server")))
    assert sum(obs) == 20000
    assert stats.chisquare(obs, np.append(p, ps) * 20000).pvalue > 1e-4


def test_expcycle_staleness_is_geometric_with_mean_n_minus_1():
    """n identical always-busy exponential clients: staleness ~ Geometric(1/n), mean n-1.

    Batch means (20 batches of 2000 steps after a burn-in); |t| < 5 with 19 d.o.f. gives a
    false-alarm rate of about 8e-5.  Also P(staleness = 0) = 1/n, z < 5 (rate < 1e-6).
    """
    n = 5
    sc = S({"name": "fedasync", "model": "expcycle", "Q": 1, "eta": 0.01},
           problem={"n": n}, horizon={"steps": 40500},
           record={"every": 10000, "metrics": ["grad_sq"]})
    tr = run(sc)
    s = tr.staleness_steps[501:].astype(float)
    b = s.reshape(20, -1).mean(axis=1)
    t = (b.mean() - (n - 1)) / (b.std(ddof=1) / math.sqrt(len(b)))
    assert abs(t) < 5
    p0 = float(np.mean(s == 0))
    assert abs(p0 - 1 / n) < 5 * math.sqrt((1 / n) * (1 - 1 / n) / len(s)) * 3
    assert math.isinf(tr.staleness_bound)


BOUNDED = {"download": {"kind": "uniform", "low": 0.1, "high": 0.3},
           "compute": {"kind": "normal", "mean": 0.5, "sd": 0.3, "low": 0.2, "high": 1.0},
           "upload": {"kind": "uniform", "low": 0.05, "high": 0.4},
           "think": {"kind": "uniform", "low": 0.0, "high": 0.2}}


@pytest.mark.parametrize("read_at, per, seed", [("request", "round", 1), ("arrival", "step", 2),
                                                ("request", "step", 3)])
def test_measured_staleness_never_exceeds_the_provable_bound(read_at, per, seed):
    sc = S({"name": "fedasync", "Q": 3, "eta": 0.05},
           delays={**BOUNDED, "read_at": read_at, "compute_per": per,
                   "override": [{"clients": [0],
                                 "compute": {"kind": "uniform", "low": 0.05, "high": 0.1}}]},
           horizon={"steps": 3000}, seed=seed)
    tr = run(sc)
    assert math.isfinite(tr.staleness_bound)
    assert 0 < tr.staleness_steps.max() <= tr.staleness_bound
    fb = run(S({"name": "fedbuff", "Q": 3, "eta": 0.05, "buffer": 2},
               delays={**BOUNDED, "read_at": read_at, "compute_per": per},
               horizon={"steps": 1500}, seed=seed))
    assert math.isfinite(fb.staleness_bound)
    assert fb.staleness_steps.max() <= fb.staleness_bound


def test_bound_is_attained_with_constant_delays():
    """Negative control for the bound's tightness: equal constant delays, 3 clients; every
    upload sees the other two (ties at the same instant) so the measured maximum is 2."""
    const = {"download": {"kind": "constant", "value": 0.0},
             "compute": {"kind": "constant", "value": 1.0},
             "upload": {"kind": "constant", "value": 0.0}}
    tr = run(S({"name": "fedasync", "Q": 1, "eta": 0.05}, problem={"n": 3}, delays=const,
               horizon={"steps": 30}))
    assert tr.staleness_steps.max() == 2
    assert tr.staleness_bound == 4.0  # (floor(1/1) + 1) per other client


def test_window_model_distributions():
    """Window model: uploader uniform and s_t ~ pmf (chi-square, each rejects at p < 1e-4:
    false-alarm rate 2e-4 in total); staleness never exceeds tau; time = step index."""
    pmf = [0.1, 0.2, 0.3, 0.4]
    sc = S({"name": "fedasync", "model": "window", "tau": 3, "delay_pmf": pmf, "Q": 1,
            "eta": 0.01}, horizon={"steps": 8000}, record={"every": 100, "metrics": ["grad_sq"]})
    tr = run(sc)
    assert tr.staleness_bound == 3.0 and tr.staleness_steps.max() <= 3
    np.testing.assert_array_equal(tr.time, np.arange(8001.0))
    s = tr.staleness_steps[4:]
    obs = np.bincount(s, minlength=4)
    assert stats.chisquare(obs, np.array(pmf) * len(s)).pvalue > 1e-4
    cnt = np.bincount(tr.client[1:], minlength=4)
    assert stats.chisquare(cnt).pvalue > 1e-4
    assert np.array_equal(cnt, tr.client_updates)


def test_window_tau_zero_one_client_is_q_step_gd():
    sc = S({"name": "fedasync", "model": "window", "tau": 0, "Q": 4, "eta": 0.1},
           problem={"n": 1, "noise_sd": 0.0}, horizon={"steps": 5})
    a = run(sc)
    b = run(S({"name": "fedasync", "Q": 4, "eta": 0.1}, problem={"n": 1, "noise_sd": 0.0},
              horizon={"steps": 5}))
    assert np.array_equal(a.final_w, b.final_w)


def test_sync_fedavg_rounds():
    sc = S({"name": "fedavg", "Q": 2, "eta": 0.05, "participation": 0.5}, delays=EXP)
    tr = run(sc)
    assert tr.info["clients_per_round"] == 2
    assert np.all(tr.staleness_steps == 0) and tr.staleness_bound == 0.0
    assert np.all(tr.buffer_fill[1:] == 2) and tr.client_updates.sum() == 600
    assert 0 < tr.concurrency_mean < 0.5 + 1e-12
    one = run(S({"name": "fedavg", "Q": 3, "eta": 0.1}, problem={"n": 1, "noise_sd": 0.0},
                horizon={"steps": 6}))
    ref = run(S({"name": "fedasync", "Q": 3, "eta": 0.1}, problem={"n": 1, "noise_sd": 0.0},
                horizon={"steps": 6}))
    assert np.array_equal(one.final_w, ref.final_w)


@pytest.mark.parametrize("alg", [
    {"name": "area", "M": 1, "alpha": {"kind": "constant", "value": 50.0}},
    {"name": "fedavg", "Q": 2, "eta": 30.0},
    {"name": "fedasync", "model": "window", "tau": 2, "eta": 30.0},
    {"name": "fedbuff", "buffer": 2, "eta": 30.0},
])
def test_diverging_step_marks_every_mode(alg):
    extra = {"trigger": {"kind": "poisson", "rate": 1.0}} if alg["name"] == "area" else {}
    tr = run(S(alg, horizon={"steps": 5000}, **extra))
    assert tr.diverged and tr.steps_done == tr.diverged_step < 5000


@pytest.mark.parametrize("alg, extra", [
    ({"name": "area", "model": "iterate_model", "M": 2,
      "alpha": {"kind": "constant", "value": 0.1}}, {"trigger": {"kind": "poisson", "rate": 1.0}}),
    ({"name": "area", "M": 2, "alpha": {"kind": "constant", "value": 0.1}},
     {"trigger": {"kind": "every_k", "count": 2}}),
    ({"name": "fedavg", "Q": 2}, {}),
    ({"name": "fedasync", "model": "window", "tau": 2}, {}),
    ({"name": "asfedavg", "buffer": 2}, {}),
])
def test_seed_determinism_every_mode(alg, extra):
    a, b = run(S(alg, **extra)), run(S(alg, **extra))
    assert a.equals(b)
    c = run(S(alg, seed=8, **extra))
    assert not np.array_equal(a.final_w, c.final_w)


def _mc_vs(values: np.ndarray, exact: float) -> float:
    return abs(values.mean() - exact) / (values.std(ddof=1) / math.sqrt(len(values)))


def test_area_iterate_model_matches_exact_oracle():
    """Monte Carlo (300 runs) of E||x_{s,K} - x*||^2 vs theory.oracle.area_moments, K = 40.

    |z| < 5 (false-alarm rate ~6e-7 under the normal approximation of the mean)."""
    from fedsim.theory.oracle import area_moments

    sc = S({"name": "area", "model": "iterate_model", "M": 2,
            "alpha": {"kind": "c_over_k_plus_d", "c": 2.0, "d": 5.0}},
           trigger={"kind": "poisson", "rate": 1.0},
           problem={"n": 2, "dim": 2, "shared_hessian": False, "noise_sd": 0.3},
           horizon={"steps": 40}, record={"every": 40, "metrics": ["dist_sq"]})
    vals = np.array([run(sc, r).metrics["dist_sq"][-1] for r in range(300)])
    p, ps = event_probabilities(sc)
    ex = area_moments(problem_for(sc), p, ps, 2, lambda k: 2.0 / (k + 5.0), np.zeros(2), 40,
                      record_every=40)
    assert _mc_vs(vals, float(ex["sq_dist"].iloc[-1])) < 5


@pytest.mark.parametrize("model", ["window", "expcycle"])
def test_fedasync_models_match_exact_oracle(model):
    """Monte Carlo (300 runs) of (1/T) sum_{t<T} ||grad f(w^t)||^2 vs the exact oracle, T=30.

    |z| < 5 (false-alarm rate ~6e-7 under the normal approximation of the mean)."""
    from fedsim.theory import oracle

    alg = {"name": "fedasync", "model": model, "Q": 2, "eta": 0.2, "beta": 1.0}
    if model == "window":
        alg.update(tau=2, delay_pmf=[0.3, 0.3, 0.4])
    sc = S(alg, problem={"n": 3, "dim": 2, "noise_sd": 0.5, "heterogeneity": 2.0},
           horizon={"steps": 30}, record={"every": 1, "metrics": ["grad_sq"]})
    vals = np.array([run(sc, r).metrics["avg_grad_sq"][-1] for r in range(300)])
    prob = problem_for(sc)
    if model == "window":
        ex = oracle.fedasync_window_moments(prob, "A", 2, 0.2, 1.0, [0.3, 0.3, 0.4], 30,
                                            np.zeros(2))
    else:
        ex = oracle.fedasync_expcycle_moments(prob, "A", 2, 0.2, 1.0, [1.0] * 3, 30,
                                              np.zeros(2))
    assert _mc_vs(vals, float(ex["avg_grad_sq"].iloc[-1])) < 5


@pytest.mark.parametrize("option", ["B", "C"])
def test_window_options_b_c_match_exact_oracle(option):
    """Window model, Options B (MAML, exact Hessian) and C (Moreau, exact inner solve):
    Monte Carlo (250 runs) of (1/T) sum_{t<T} ||grad F(w^t)||^2 vs the oracle, T = 20.

    |z| < 5 (false-alarm rate ~6e-7 under the normal approximation of the mean)."""
    from fedsim.theory import oracle

    alg = {"name": "fedasync", "model": "window", "tau": 1, "delay_pmf": [0.5, 0.5], "Q": 2,
           "eta": 0.2, "batch": 2}
    if option == "B":
        alg.update(client_rule="maml", alpha=0.2)
        metric, kw = "grad_maml_sq", {"alpha": 0.2}
    else:
        alg.update(client_rule="moreau", lam=5.0, inner_solver="exact")
        metric, kw = "grad_me_sq", {"lam": 5.0}
    sc = S(alg, problem={"n": 2, "dim": 2, "noise_sd": 0.5, "heterogeneity": 2.0},
           horizon={"steps": 20}, record={"every": 1, "metrics": [metric]})
    vals = np.array([run(sc, r).metrics[f"avg_{metric}"][-1] for r in range(250)])
    ex = oracle.fedasync_window_moments(problem_for(sc), option, 2, 0.2, 1.0, [0.5, 0.5], 20,
                                        np.zeros(2), batch=2, **kw)
    assert _mc_vs(vals, float(ex["avg_grad_sq"].iloc[-1])) < 5


@pytest.mark.slow
@pytest.mark.parametrize("model", ["window", "expcycle", "area"])
def test_models_match_exact_oracle_many_runs(model):
    """Slow version: 3000 runs, several horizons; |z| < 5 at each of 4 checkpoints
    (false-alarm rate ~2.3e-6)."""
    from fedsim.theory import oracle

    if model == "area":
        sc = S({"name": "area", "model": "iterate_model", "M": 3,
                "alpha": {"kind": "constant", "value": 0.3}},
               trigger={"kind": "poisson", "rate": 1.0},
               problem={"n": 3, "dim": 2, "shared_hessian": False, "noise_sd": 0.3},
               horizon={"steps": 80}, record={"every": 20, "metrics": ["dist_sq"]})
        p, ps = event_probabilities(sc)
        ex = oracle.area_moments(problem_for(sc), p, ps, 3, 0.3, np.zeros(2), 80,
                                 record_every=20)["sq_dist"].to_numpy()
        key = "dist_sq"
    else:
        alg = {"name": "fedasync", "model": model, "Q": 2, "eta": 0.2}
        if model == "window":
            alg.update(tau=3, delay_pmf=[0.1, 0.2, 0.3, 0.4])
        sc = S(alg, problem={"n": 3, "dim": 2, "noise_sd": 0.5, "heterogeneity": 2.0},
               horizon={"steps": 80}, record={"every": 20, "metrics": ["grad_sq"]})
        prob = problem_for(sc)
        if model == "window":
            ex = oracle.fedasync_window_moments(prob, "A", 2, 0.2, 1.0, [0.1, 0.2, 0.3, 0.4],
                                                80, np.zeros(2), record_every=20)
        else:
            ex = oracle.fedasync_expcycle_moments(prob, "A", 2, 0.2, 1.0, [1.0] * 3, 80,
                                                  np.zeros(2), record_every=20)
        ex = ex["grad_sq"].to_numpy()
        key = "grad_sq"
    runs = np.array([run(sc, r).metrics[key] for r in range(3000)])
    for k in range(1, runs.shape[1]):
        assert _mc_vs(runs[:, k], float(ex[k])) < 5, k


def _uniform(lo: float, width: float) -> dict:
    return {"kind": "uniform", "low": lo, "high": lo + width}


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 5), Q=st.integers(1, 3), seed=st.integers(0, 1000),
       read_at=st.sampled_from(["request", "arrival"]), per=st.sampled_from(["round", "step"]),
       lows=st.lists(st.floats(0.01, 1.0), min_size=4, max_size=4),
       widths=st.lists(st.floats(0.0, 2.0), min_size=4, max_size=4),
       slow=st.floats(0.05, 3.0), buffer=st.integers(1, 3))
def test_staleness_bound_property(n, Q, seed, read_at, per, lows, widths, slow, buffer):
    """Any bounded supports (one client with its own compute law): measured <= bound."""
    delays = {k: _uniform(lo, wd) for k, lo, wd in
              zip(("download", "compute", "upload", "think"), lows, widths, strict=True)}
    delays.update(read_at=read_at, compute_per=per,
                  override=[{"clients": [0], "compute": _uniform(slow, slow)}])
    alg = ({"name": "fedasync", "Q": Q, "eta": 0.01} if buffer == 1 else
           {"name": "fedbuff", "Q": Q, "eta": 0.01, "buffer": buffer})
    tr = run(S(alg, problem={"n": n}, delays=delays, horizon={"steps": 300}, seed=seed,
               record={"every": 100, "metrics": ["grad_sq"]}))
    assert math.isfinite(tr.staleness_bound)
    assert tr.staleness_steps.max() <= tr.staleness_bound
