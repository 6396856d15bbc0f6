"""End-to-end tests of fedsim.engine (asynchronous physical model)."""

from __future__ import annotations

import math

import numpy as np

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
    w = np.zeros(3)
    R = np.eye(3) - 0.05 * A
    c = 0.05 * (A @ b)
    w_paper = np.zeros(3)
    for _ in range(7 * 3):
        w = R @ w + c
        w_paper = w_paper - 0.05 * (A @ (w_paper - b))
    assert np.array_equal(tr.final_w, w)
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
