"""Batched FedAsync replay: per replicate bitwise equal to ``fedsim.engine.run``; rows
independent."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.engine.replay import replay_fedasync, supports

TRACE_COLS = ("time", "kind_code", "client", "staleness_steps", "staleness_time",
              "buffer_fill", "metric_steps", "client_updates", "concurrency_time",
              "concurrency_busy")


def _E(rate: float) -> dict:
    return {"kind": "exponential", "rate": rate}


BASE = {"download": _E(10.0), "compute": _E(1.0), "upload": _E(10.0)}


def scenario(delays: dict = BASE, steps: int | None = 600, time: float | None = None,
             n: int = 12, Q: int = 3, every: int = 1, shared: bool = True, beta: float = 1.0,
             eta: float = 0.05, noise_sd: float = 0.1) -> Scenario:
    horizon = {"steps": steps} if time is None else {"time": time}
    return Scenario.from_dict({
        "name": "rp", "seed": 5,
        "problem": {"kind": "quadratic", "n": n, "dim": 4, "mu": 0.1, "L": 1.0, "seed": 0,
                    "shared_hessian": shared, "noise_sd": noise_sd},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": Q, "eta": eta,
                      "beta": beta},
        "delays": delays, "horizon": horizon,
        "record": {"every": every, "metrics": ["grad_sq", "dist_sq", "f_gap"]}})


def assert_matches_engine(sc: Scenario, reps: list[int], **kw) -> None:
    res = replay_fedasync(sc, reps, keep_timeline=True, **kw)
    for k, r in enumerate(reps):
        a, b = run(sc, r), res.trace(k)
        for c in TRACE_COLS:
            assert np.array_equal(getattr(a, c), getattr(b, c)), c
        assert (a.diverged, a.diverged_step, a.steps_done, a.sim_time) == (
            b.diverged, b.diverged_step, b.steps_done, b.sim_time)
        assert a.concurrency_mean == pytest.approx(b.concurrency_mean, rel=0, abs=0) or (
            np.isnan(a.concurrency_mean) and np.isnan(b.concurrency_mean))
        assert set(a.metrics) == set(b.metrics)
        for m in a.metrics:
            x, y = a.metrics[m], b.metrics[m]
            fin = np.isfinite(x)
            assert np.array_equal(fin, np.isfinite(y)), m
            np.testing.assert_allclose(y[fin], x[fin], rtol=1e-10, atol=0, err_msg=m)
        if not a.diverged:
            np.testing.assert_allclose(b.final_w, a.final_w, rtol=1e-10, atol=1e-300)
        # the replay calls the engine's rule and metric functions: equal bit for bit
        assert a.equals(b)


CASES = {
    "basic": dict(),
    "record_every_7": dict(every=7, steps=500),
    "not_shared_beta": dict(shared=False, beta=0.7, steps=300),
    "arrival_think_time_horizon": dict(delays={"download": _E(3.0), "compute": _E(1.0),
                                               "think": _E(2.0), "read_at": "arrival"},
                                       steps=None, time=40.0),
    "constant_ties_think": dict(delays={"compute": {"kind": "constant", "value": 1.0},
                                        "think": {"kind": "constant", "value": 0.5}},
                                steps=300),
    "q1_no_noise": dict(Q=1, noise_sd=0.0),
    "per_step_compute": dict(delays={"compute": _E(2.0), "compute_per": "step"}, steps=300),
    "diverges": dict(eta=25.0, steps=400),
    # not Constant/Exponential: the vectorised merge (replay.timeline), not the event loop
    "uniform_think_merge": dict(delays={"compute": {"kind": "uniform", "low": 0.5, "high": 1.5},
                                        "think": _E(2.0)}, steps=300),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_equals_engine(name: str) -> None:
    assert_matches_engine(scenario(**CASES[name]), [0, 3], chunk=64)


def test_diverging_engine_run_is_marked_and_frozen() -> None:
    sc = scenario(eta=25.0, steps=400)
    res = replay_fedasync(sc, [0, 1])
    assert res.diverged.all()
    for k in range(2):
        assert res.diverged_step[k] == run(sc, k).diverged_step


def test_one_diverging_replicate_leaves_the_others_bitwise_unchanged() -> None:
    sc = scenario(steps=400)
    reps = list(range(6))
    ref = replay_fedasync(sc, reps, chunk=50)
    w0 = np.zeros((6, 4))
    w0[2] = np.nan  # replicate 2 diverges at its first step
    res = replay_fedasync(sc, reps, chunk=50, w0=w0)
    assert res.diverged.tolist() == [False, False, True, False, False, False]
    assert res.diverged_step[2] == 1 and res.steps_done[2] == 1
    for k in (0, 1, 3, 4, 5):
        assert np.array_equal(res.final_w[k], ref.final_w[k])
        for m in res.metric_names:
            assert np.array_equal(res.grid[m][k], ref.grid[m][k])


@pytest.mark.parametrize("shared", [True, False])
def test_batch_size_does_not_change_a_replicate(shared: bool) -> None:
    sc = scenario(steps=200, shared=shared, n=8)
    big = replay_fedasync(sc, list(range(64)), chunk=37)
    for k in (0, 17, 63):
        one = replay_fedasync(sc, [k], chunk=64)
        assert np.array_equal(one.final_w[0], big.final_w[k])
        for m in one.metric_names:
            assert np.array_equal(one.grid[m][0], big.grid[m][k])


def test_supports() -> None:
    assert supports(scenario())
    sc = Scenario.from_dict({**scenario().to_dict(),
                             "algorithm": {"name": "fedbuff", "client_rule": "sgd", "Q": 2,
                                           "eta": 0.1, "buffer": 1}})
    assert not supports(sc)


def test_groups_and_chunks_do_not_change_a_replicate() -> None:
    sc = scenario(steps=300, n=8, every=5)
    ref = replay_fedasync(sc, list(range(10)), chunk=300)
    for kw in (dict(group=3, chunk=41), dict(group=4, mem_mb=0.05)):
        res = replay_fedasync(sc, list(range(10)), **kw)
        assert np.array_equal(res.final_w, ref.final_w)
        assert np.array_equal(res.client_updates, ref.client_updates)
        assert np.array_equal(res.grid_steps, ref.grid_steps)
        for m in res.metric_names:
            assert np.array_equal(res.grid[m], ref.grid[m])


def test_time_horizon_groups_merge() -> None:
    sc = scenario(**CASES["arrival_think_time_horizon"])
    res = replay_fedasync(sc, [0, 1, 2, 3], group=2, chunk=64, keep_timeline=True)
    for k in range(4):
        a, b = run(sc, k), res.trace(k)
        assert (a.steps_done, a.sim_time) == (b.steps_done, b.sim_time)
        np.testing.assert_allclose(b.metrics["grad_sq"], a.metrics["grad_sq"], rtol=1e-10)


def test_expcycle_runs_on_the_same_runner_and_replays_bitwise() -> None:
    """``supports`` reads the registry: FedAsync's ``expcycle`` model uses the same engine
    runner as ``physical``, so the replay covers it, bit for bit."""
    d = scenario(delays={"compute": _E(1.0)}, steps=300).to_dict()
    d["algorithm"]["model"] = "expcycle"
    sc = Scenario.from_dict(d)
    assert supports(sc)
    assert_matches_engine(sc, [0, 4], chunk=100)
