"""FedAsync through ``run_batch``: traces and records per replicate bitwise equal to
``fedsim.engine.run`` and to SimPy's table replayed; rows independent of the batch, its
pieces and the writer's chunks."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import problem_for, run, run_batch
from fedsim.engine.dispatch import check_replay
from fedsim.engine.models import model_of
from fedsim.engine.models.physical.upload_tables import fedasync_tables
from fedsim.engine.replay.driver import replay_records, replay_table
from tests.engine.paths import simpy_path

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


def assert_traces_equal(a, b) -> None:
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


def assert_records_are_traces(res, traces) -> None:
    """``run_batch``'s records hold its traces' numbers (grid rows, ends, final models)."""
    for k, tr in enumerate(traces):
        rp = res.runs[k]
        assert np.array_equal(rp.metric_steps, tr.metric_steps)
        assert (rp.steps_done, rp.diverged_step) == (tr.steps_done, tr.diverged_step)
        assert np.array_equal(res.final_w[k], tr.final_w)
        assert res.sim_time[k] == tr.sim_time
        assert np.array_equal(res.client_updates[k], tr.client_updates)
        for m in res.metric_names:
            assert np.array_equal(rp.metrics[m], tr.metrics[m], equal_nan=True), m


def assert_matches_engine(sc: Scenario, reps: list[int], chunk: int | None = None) -> None:
    """``run_batch``'s traces are ``run``'s and SimPy's table replayed; its records are its
    traces'; with ``chunk``, the per-replicate writer's tables in chunks replay the same."""
    traces = run_batch(sc, reps)
    p = problem_for(sc)
    for k, r in enumerate(reps):
        assert_traces_equal(run(sc, r), traces[k])
        assert_traces_equal(simpy_path(sc, p, r), traces[k])
    assert_records_are_traces(run_batch(sc, reps, output="records"), traces)
    if chunk is not None:
        tabs = fedasync_tables(sc, reps, n=p.n, Q=int(sc.algorithm.get("Q")), chunk=chunk)
        for a, b in zip(replay_table(sc, tabs, replicates=reps, problem=p), traces,
                        strict=True):
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
    # not Constant/Exponential: the vectorised merge (models.physical.merge), not the event loop
    "uniform_think_merge": dict(delays={"compute": {"kind": "uniform", "low": 0.5, "high": 1.5},
                                        "think": _E(2.0)}, steps=300),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_equals_engine(name: str) -> None:
    assert_matches_engine(scenario(**CASES[name]), [0, 3], chunk=64)


def test_diverging_engine_run_is_marked_and_frozen() -> None:
    sc = scenario(eta=25.0, steps=400)
    res = run_batch(sc, [0, 1], output="records")
    assert res.diverged.all()
    for k in range(2):
        assert res.diverged_step[k] == run(sc, k).diverged_step


def test_one_diverging_replicate_leaves_the_others_bitwise_unchanged() -> None:
    """The model's tables replayed with replicate 2 started from NaN (it diverges at its
    first step): the other rows are the records of ``run_batch`` bit for bit."""
    sc = scenario(steps=400)
    reps = list(range(6))
    ref = run_batch(sc, reps, output="records")
    p = problem_for(sc)
    check_replay(sc, p)
    w = model_of(sc).write(sc, p, reps)
    w0 = np.zeros((6, 4))
    w0[2] = np.nan
    got = replay_records(sc, w.tables, replicates=reps, problem=p, w0=w0, groups=w.groups)
    assert [rp.diverged_step for rp in got] == [None, None, 1, None, None, None]
    for k in (0, 1, 3, 4, 5):
        rp = got[k]
        assert np.array_equal(rp.final_w, ref.final_w[k])
        for m in ref.metric_names:
            assert np.array_equal(rp.metrics[m], ref.runs[k].metrics[m]), m


@pytest.mark.parametrize("shared", [True, False])
def test_batch_size_does_not_change_a_replicate(shared: bool) -> None:
    sc = scenario(steps=200, shared=shared, n=8)
    big = run_batch(sc, list(range(64)), output="records")
    for k in (0, 17, 63):
        one = run_batch(sc, [k], output="records")
        assert np.array_equal(one.final_w[0], big.final_w[k])
        for m in one.metric_names:
            assert np.array_equal(one.grid[m][0], big.grid[m][k])


def test_pieces_do_not_change_a_replicate() -> None:
    """Records and traces written and replayed ``group`` replicates at a time: the same
    bits for any ``group``, with either writer (a step horizon: the group writer; a time
    horizon: the per-replicate one)."""
    for sc in (scenario(steps=300, n=8, every=5), scenario(**CASES["arrival_think_time_horizon"])):
        reps = list(range(10))
        ref = run_batch(sc, reps, output="records")
        traces = run_batch(sc, reps)
        assert_records_are_traces(ref, traces)
        for group in (1, 3, 4):
            res = run_batch(sc, reps, output="records", group=group)
            assert res.info["group"] == group
            assert np.array_equal(res.final_w, ref.final_w)
            assert np.array_equal(res.sim_time, ref.sim_time)
            assert np.array_equal(res.client_updates, ref.client_updates)
            assert np.array_equal(res.grid_steps, ref.grid_steps)
            for m in res.metric_names:
                assert np.array_equal(res.grid[m], ref.grid[m], equal_nan=True)
        assert all(a.equals(b) for a, b in zip(run_batch(sc, reps, group=3), traces,
                                               strict=True))


def test_expcycle_runs_on_the_same_runner_and_replays_bitwise() -> None:
    """FedAsync's ``expcycle`` mode runs on the same execution model as ``physical`` (the
    registry), so the same writers serve it, bit for bit."""
    d = scenario(delays={"compute": _E(1.0)}, steps=300).to_dict()
    d["algorithm"]["model"] = "expcycle"
    sc = Scenario.from_dict(d)
    assert model_of(sc) is model_of(scenario())
    assert_matches_engine(sc, [0, 4], chunk=100)


def test_a_norm_family_problem_replays_bitwise() -> None:
    """The norm family's compiled view (no draws, allocation-free metrics) runs in the
    FedAsync replay kernel too: the engine's trace bit for bit."""
    sc = Scenario.from_dict({
        "name": "rp_norm", "seed": 3,
        "problem": {"kind": "norm", "n": 5, "dim": 3, "B": 1.0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 2, "eta": 0.05,
                      "beta": 0.5, "w0": 1.0},
        "delays": BASE, "horizon": {"steps": 200},
        "record": {"every": 7, "metrics": ["grad_sq", "dist_sq", "f_gap"]}})
    assert_matches_engine(sc, [0, 3])
    f_gap = run(sc, 0).metrics["f_gap"]
    assert f_gap[0] > 1.0 and f_gap[-1] < 0.5  # the model moved


def test_a_softmax_problem_replays_bitwise() -> None:
    """The softmax view (row indices drawn by ``integers`` from the stream rows, BLAS on
    the view's work arrays) runs in the replay kernel: the engine's trace bit for bit."""
    sc = Scenario.from_dict({
        "name": "rp_softmax", "seed": 11,
        "problem": {"kind": "softmax", "n_clients": 6, "split": "dirichlet", "a": 0.3,
                    "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 5, "eta": 0.3,
                      "batch": 7, "beta": 0.5},
        "delays": BASE, "horizon": {"steps": 40},
        "record": {"every": 4, "metrics": ["grad_sq"]}})
    assert_matches_engine(sc, [1, 2])
