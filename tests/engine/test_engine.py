"""End-to-end tests of fedsim.engine (asynchronous physical model)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedsim import config
from fedsim.engine import run
from fedsim.problems.quadratic import QuadraticProblem


def scen(**over):
    d = {
        "name": "t", "seed": 3,
        "problem": {"kind": "quadratic", "n": 4, "dim": 3, "mu": 0.2, "L": 1.0,
                    "heterogeneity": 1.0, "noise_sd": 0.1, "seed": 0},
        "algorithm": {"name": "fedasync", "Q": 3, "eta": 0.05},
        "delays": {"download": {"kind": "exponential", "rate": 5.0},
                   "compute": {"kind": "exponential", "rate": 1.0},
                   "upload": {"kind": "exponential", "rate": 5.0}},
        "horizon": {"steps": 200},
        "record": {"metrics": ["grad_sq", "dist_sq", "f_gap"]},
    }
    for k, v in over.items():
        if isinstance(v, dict) and k in d:
            d[k] = {**d[k], **v}
        else:
            d[k] = v
    return config.Scenario.from_dict(d)


def test_one_client_no_noise_equals_q_step_gd():
    """n=1, sigma=0, beta=1: each server step is exactly Q steps of GD."""
    sc = scen(problem={"n": 1, "noise_sd": 0.0}, horizon={"steps": 7})
    tr = run(sc)
    p = QuadraticProblem.random(1, 3, 0.2, 1.0, heterogeneity=1.0, noise_sd=0.0, seed=0)
    A, b = p.A[0], p.b[0]
    w = [0.0, 0.0, 0.0]
    w_paper = np.zeros(3)
    for _ in range(7 * 3):
        # the rule's arithmetic, in its order: g_k = sum_j A_kj (w_j - b_j); w_k -= eta g_k
        g = [0.0, 0.0, 0.0]
        for k in range(3):
            acc = 0.0
            for j in range(3):
                acc += float(A[k, j]) * (w[j] - float(b[j]))
            g[k] = acc
        w = [w[k] - g[k] * 0.05 for k in range(3)]
        w_paper = w_paper - 0.05 * (A @ (w_paper - b))
    assert np.array_equal(tr.final_w, np.array(w))
    np.testing.assert_allclose(tr.final_w, w_paper, rtol=1e-13, atol=1e-15)
    assert np.all(tr.staleness_steps == 0)
    assert tr.staleness_bound == 0.0 or math.isinf(tr.staleness_bound)


def test_same_seed_identical_different_seed_differs():
    a, b = run(scen()), run(scen())
    assert a.equals(b)
    c = run(scen(seed=4))
    assert not np.array_equal(a.time, c.time)
    assert not np.array_equal(a.final_w, c.final_w)
    assert not a.equals(run(scen(), replicate=1))


def test_diverging_step_marks_trace():
    sc = scen(algorithm={"eta": 50.0}, horizon={"steps": 5000})
    tr = run(sc)
    assert tr.diverged and tr.diverged_step is not None
    assert tr.steps_done == tr.diverged_step < 5000
    assert tr.time.size == tr.steps_done + 1


def test_trace_columns_and_metrics():
    tr = run(scen(record={"every": 7}))
    assert tr.steps_done == 200
    assert tr.metric_steps[0] == 0 and tr.metric_steps[-1] == 200
    assert np.all(np.diff(tr.metric_steps) > 0)
    assert np.all(np.diff(tr.time) >= 0)
    assert tr.kind[0] == "init" and set(tr.kind[1:]) == {"upload"}
    assert tr.client_updates.sum() == 200
    df = tr.to_pandas()
    assert len(df) == 201
    mf = tr.metrics_frame()
    assert list(mf.columns[:2]) == ["step", "time"]
    assert "avg_grad_sq" in mf
    assert tr.concurrency_mean == 1.0


def test_time_horizon_stops():
    tr = run(scen(horizon={"steps": 10**6, "time": 5.0}))
    assert tr.sim_time == 5.0
    assert tr.time[-1] < 5.0


def test_running_and_ergodic_averages_by_hand():
    """One client, no noise, tau = 0: w_k is Q-step GD; check avg_* and ergodic_f_gap."""
    sc = config.Scenario.from_dict({
        "problem": {"kind": "quadratic", "n": 1, "dim": 2, "mu": 0.5, "L": 1.0,
                    "noise_sd": 0.0, "seed": 1},
        "algorithm": {"name": "fedasync", "model": "window", "tau": 0, "Q": 2, "eta": 0.1},
        "horizon": {"steps": 12},
        "record": {"metrics": ["grad_sq", "f_gap", "dist_sq", "ergodic_f_gap"]}})
    tr = run(sc)
    p = QuadraticProblem.random(1, 2, 0.5, 1.0, noise_sd=0.0, seed=1)
    ws = [np.zeros(2)]
    R, c = np.eye(2) - 0.1 * p.A[0], 0.1 * (p.A[0] @ p.b[0])
    for _ in range(12):
        w = ws[-1]
        for _ in range(2):
            w = R @ w + c
        ws.append(w)
    g = np.array([p.grad_f_sq(w) for w in ws])
    np.testing.assert_allclose(tr.metrics["grad_sq"], g, rtol=1e-12)
    np.testing.assert_allclose(tr.metrics["avg_grad_sq"][1:],
                               np.cumsum(g)[:-1] / np.arange(1, 13), rtol=1e-12)
    assert math.isnan(tr.metrics["avg_grad_sq"][0])
    erg = [p.f_gap(np.mean(ws[:k], axis=0)) for k in range(1, 13)]
    np.testing.assert_allclose(tr.metrics["ergodic_f_gap"][1:], erg, rtol=1e-10)
    assert tr.metrics["f_gap"][-1] == pytest.approx(p.f_gap(tr.final_w), rel=1e-12)
    assert tr.metrics["dist_sq"][-1] == pytest.approx(p.dist_sq(tr.final_w), rel=1e-12)


def test_busy_fraction_with_think_time():
    """Always-busy clients except while thinking: compute Exp(1), think Exp(1), no
    communication delay -> time-weighted busy fraction 1/2 (renewal-reward).  Tolerance
    0.03 is > 6 standard errors (n=10 clients x ~1000 cycles): false-alarm rate < 1e-8."""
    sc = scen(problem={"n": 10}, delays={"download": {"kind": "constant", "value": 0.0},
                                         "upload": {"kind": "constant", "value": 0.0},
                                         "think": {"kind": "exponential", "rate": 1.0}},
              horizon={"steps": 10**7, "time": 2000.0}, record={"every": 1000})
    tr = run(sc)
    assert abs(tr.concurrency_mean - 0.5) < 0.03
    assert np.all((tr.concurrency_busy >= 0) & (tr.concurrency_busy <= 1))
    assert np.all(np.diff(tr.concurrency_time) > 0)


def test_lean_streams_are_fedsim_rng_streams():
    """fedsim.rng.seeding.lean_bitgen gives the very bits of fedsim.rng's client streams, and a
    DelaySampler wrapping a bare bit generator draws what one wrapping the Generator does."""
    from fedsim.rng import Streams, stream
    from fedsim.rng.delays import DelaySampler
    from fedsim.rng.seeding import lean_bitgen

    cases = [(0, 0, 0, "noise"), (1, 3, 7, "delays"), (12345, 2, 999, "noise")]
    for seed, rep, i, purpose in cases:
        lean = np.random.Generator(lean_bitgen(Streams(seed, rep), i, purpose))
        full = stream(seed, rep, i, purpose)
        assert lean.bit_generator.state == full.bit_generator.state
        assert np.array_equal(lean.standard_normal(50), full.standard_normal(50))
    sc = scen(delays={"think": {"kind": "uniform", "low": 0.0, "high": 1.0}})
    models = sc.delays.for_client(0)
    a = DelaySampler(models, stream(3, 0, 0, "delays"), 2)
    b = DelaySampler(models, lean_bitgen(Streams(3, 0), 0, "delays"), 2)
    for _ in range(3):
        ca, (cb, th) = a.block(), b.block_flat()
        assert list(cb) == list(ca[0] + ca[1] + ca[2]) and list(th) == list(ca[3])


def test_progress_bar_path_gives_the_same_trace():
    """With a progress bar the hot path records metrics through StepLog.hook instead of
    inline; the trace must not change."""
    sc = scen(record={"every": 1, "metrics": ["grad_sq", "f_gap"]})
    assert run(sc).equals(run(sc, progress=True))


def test_engine_state_per_client_is_small():
    """Regression guard for the per-client footprint (tracemalloc, n=400 clients, d=10):
    ~2.4 KB on numpy 2.x; a retained SeedSequence or per-client Generator copies would
    push it past 3.5 KB."""
    import tracemalloc

    from fedsim.algorithms import get_algorithm
    from fedsim.engine import problem_for
    from fedsim.engine.models.physical.simpy_writer import AsyncRun
    from fedsim.rng import Streams

    n = 400
    sc = scen(problem={"n": n, "dim": 10}, algorithm={"Q": 10, "eta": 0.001},
              horizon={"steps": 10})
    p = problem_for(sc)
    spec = get_algorithm(sc.algorithm.name)
    warm = AsyncRun(sc, p, Streams(1, 1), False, spec)  # the first compile's imports are not state
    warm.start()
    warm.env.run(until=warm.env.peek() + 1e-12)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        r = AsyncRun(sc, p, Streams(1, 0), False, spec)
        r.start()
        r.env.run(until=r.env.peek() + 1e-12)
        per_client = (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()
    assert per_client < 3500, per_client
