"""``fedsim.engine.run_batch``: per replicate equal to ``fedsim.engine.run``.

The replayed path (FedAsync physical on a quadratic) must give the engine's timeline bit
for bit and its metrics to 1e-10 relative; the fallback path (every other scenario) is the
engine itself, so it must be bitwise equal.  ``supports`` must say which path runs.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from fedsim.config import Scenario, load
from fedsim.engine import run, run_batch, supports
from fedsim.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TIMELINE = ("time", "kind_code", "client", "staleness_steps", "staleness_time",
            "buffer_fill", "metric_steps", "client_updates", "concurrency_time",
            "concurrency_busy")


def _fedasync(steps: int = 400, n: int = 8, Q: int = 4, eta: float = 0.05,
              delays: dict | None = None, problem: str = "quadratic") -> Scenario:
    prob = ({"kind": "quadratic", "n": n, "dim": 5, "mu": 0.1, "L": 1.0, "seed": 1,
             "shared_hessian": True, "noise_sd": 0.2} if problem == "quadratic" else
            {"kind": "logistic", "n_clients": n, "dim": 5, "samples_per_client": 20,
             "seed": 1})
    metrics = ["grad_sq", "dist_sq", "f_gap"] if problem == "quadratic" else ["grad_sq"]
    return Scenario.from_dict({
        "name": "batch", "seed": 11, "problem": prob,
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": Q, "eta": eta,
                      "beta": 0.8},
        "delays": delays or {"download": {"kind": "exponential", "rate": 5.0},
                             "compute": {"kind": "exponential", "rate": 1.0},
                             "upload": {"kind": "exponential", "rate": 5.0}},
        "horizon": {"steps": steps},
        "record": {"every": 3, "metrics": metrics}})


def _assert_close(a, b, bitwise: bool) -> None:
    for c in TIMELINE:
        assert np.array_equal(getattr(a, c), getattr(b, c)), c
    assert (a.diverged, a.diverged_step, a.steps_done, a.sim_time) == (
        b.diverged, b.diverged_step, b.steps_done, b.sim_time)
    assert a.staleness_bound == b.staleness_bound or (
        math.isnan(a.staleness_bound) and math.isnan(b.staleness_bound))
    assert set(a.metrics) == set(b.metrics)
    assert a.info == b.info
    if bitwise:
        assert a.equals(b)
        return
    for m in a.metrics:
        x, y = a.metrics[m], b.metrics[m]
        fin = np.isfinite(x)
        assert np.array_equal(fin, np.isfinite(y)), m
        np.testing.assert_allclose(y[fin], x[fin], rtol=1e-10, atol=0, err_msg=m)
    if not a.diverged:
        np.testing.assert_allclose(b.final_w, a.final_w, rtol=1e-10, atol=1e-300)


SUPPORTED = {
    "exponential": _fedasync(),
    "bounded_delays": _fedasync(delays={"download": {"kind": "uniform", "low": 0.1,
                                                     "high": 0.3},
                                        "compute": {"kind": "uniform", "low": 0.5,
                                                    "high": 1.5},
                                        "upload": {"kind": "constant", "value": 0.1}}),
    "diverges": _fedasync(eta=30.0),
}


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_replayed_scenarios_equal_the_engine(name: str) -> None:
    sc = SUPPORTED[name]
    assert supports(sc)
    reps = [0, 2, 5]
    traces = run_batch(sc, reps)
    assert len(traces) == len(reps)
    for r, b in zip(reps, traces, strict=True):
        _assert_close(run(sc, r), b, bitwise=True)  # the same rule and metric functions


def test_bounded_delays_give_the_engines_finite_staleness_bound() -> None:
    sc = SUPPORTED["bounded_delays"]
    (b,) = run_batch(sc, [1])
    assert math.isfinite(b.staleness_bound)
    assert b.staleness_bound == run(sc, 1).staleness_bound
    assert b.staleness_steps.max() <= b.staleness_bound


def test_the_replay_actually_runs_when_supported(monkeypatch) -> None:
    """The replay equals the engine bit for bit, so check the path itself: with the
    engine's ``run`` disabled, ``run_batch`` still gives the engine's traces."""
    import fedsim.engine.batch as batch_module

    sc = SUPPORTED["exponential"]
    reps = list(range(4))
    looped = run_batch(sc, reps, replay=False)

    def boom(*args, **kwargs):
        raise AssertionError("run_batch fell back to the engine")

    monkeypatch.setattr(batch_module, "run", boom)
    batched = run_batch(sc, reps)
    assert all(a.equals(b) for a, b in zip(batched, looped, strict=True))


@pytest.mark.parametrize("name", ["fedbuff_quadratic.toml", "asfedavg_logistic.toml",
                                  "perfedavg_sync.toml", "area_algorithm.toml"])
def test_buffered_physical_examples_are_replayed_bitwise(name: str, monkeypatch) -> None:
    """FedBuff, AS-FedAvg, Per-FedAvg's rounds and AREA's Algorithm 2 write a table per
    replicate and replay it, the traces of the per-replicate loop bit for bit (the
    engine's ``run`` disabled while ``run_batch`` replays)."""
    import fedsim.engine.batch as batch_module

    sc = load(EXAMPLES / name)
    assert supports(sc)
    reps = [0, 3, 4]
    looped = run_batch(sc, reps, replay=False)
    monkeypatch.setattr(batch_module, "run", lambda *a, **k: 1 / 0)
    batched = run_batch(sc, reps)
    assert all(a.equals(b) for a, b in zip(batched, looped, strict=True))
    assert run_batch(sc, [4])[0].equals(batched[2])  # independent of the other replicates


def test_the_area_iterate_model_example_is_replayed_bitwise(monkeypatch) -> None:
    """AREA's iterate model on a quadratic (Theorem 7's schedule, noisy oracle) runs on the
    replay (``fedsim.engine.models.area``), bit for bit the engine's traces."""
    import fedsim.engine.batch as batch_module

    sc = load(EXAMPLES / "area_iterate_model.toml")
    assert supports(sc)
    reps = [0, 3]
    looped = run_batch(sc, reps, replay=False)
    monkeypatch.setattr(batch_module, "run", lambda *a, **k: 1 / 0)
    batched = run_batch(sc, reps)
    assert all(a.equals(b) for a, b in zip(batched, looped, strict=True))


def test_logistic_fedasync_is_replayed_bitwise(monkeypatch) -> None:
    """Logistic regression has a compiled view (``fedsim.problems.logistic_view``), so
    FedAsync on it runs on the replay, bit for bit the engine's traces (the engine's
    ``run`` disabled while ``run_batch`` replays)."""
    import fedsim.engine.batch as batch_module

    sc = _fedasync(problem="logistic", steps=60)
    assert supports(sc)
    reps = [4, 5]
    looped = [run(sc, r) for r in reps]
    monkeypatch.setattr(batch_module, "run", lambda *a, **k: 1 / 0)
    for a, b in zip(looped, run_batch(sc, reps), strict=True):
        _assert_close(a, b, bitwise=True)


def test_bad_replicates_raise_and_empty_is_empty() -> None:
    sc = SUPPORTED["exponential"]
    assert run_batch(sc, []) == []
    with pytest.raises(ConfigError):
        run_batch(sc, [-1])
    with pytest.raises(ConfigError):
        run_batch(sc, [1.5])
    with pytest.raises(ConfigError):
        supports("not a scenario")
