"""The vectorised FedAsync timeline equals the SimPy engine's event sequence bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.engine.models.physical.merge import FedAsyncTimeline, timeline_arrays


def _E(rate: float) -> dict:
    return {"kind": "exponential", "rate": rate}


def scenario(delays: dict, steps: int | None = 1500, time: float | None = None,
             n: int = 15, Q: int = 3) -> Scenario:
    horizon = {"steps": steps} if time is None else {"time": time}
    return Scenario.from_dict({
        "name": "tl", "seed": 11,
        "problem": {"kind": "quadratic", "n": n, "dim": 3, "mu": 0.1, "L": 1.0, "seed": 0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": Q, "eta": 0.01},
        "delays": delays, "horizon": horizon, "record": {"every": 1, "metrics": ["grad_sq"]}})


CASES = {
    "exp": {"download": _E(10.0), "compute": _E(1.0), "upload": _E(10.0)},
    "per_step": {"compute": _E(1.0), "compute_per": "step"},
    "arrival_think": {"download": _E(3.0), "compute": _E(1.0), "think": _E(2.0),
                      "read_at": "arrival"},
    "uniform_think": {"compute": {"kind": "uniform", "low": 0.5, "high": 1.5}, "think": _E(2.0)},
    "constant_ties": {"compute": {"kind": "constant", "value": 1.0}},
    "constant_ties_think": {"compute": {"kind": "constant", "value": 1.0},
                            "download": {"kind": "constant", "value": 0.5},
                            "think": {"kind": "constant", "value": 0.25}, "read_at": "arrival"},
    "empirical_two_random": {"compute": {"kind": "empirical", "samples": [0.5, 1.0, 2.0]},
                             "upload": _E(4.0)},
    "override": {"compute": _E(1.0), "override": [{"clients": [0, 1], "compute": _E(5.0)}]},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_timeline_bitwise_equals_engine(name: str) -> None:
    sc = scenario(CASES[name])
    tr = run(sc, 2)
    T = tr.steps_done
    tl = timeline_arrays(sc, 2, T, chunk=257)
    assert tl.time.size == T
    assert np.array_equal(tl.time, tr.time[1:])
    assert np.array_equal(tl.client, tr.client[1:])
    assert np.array_equal(np.arange(T) - tl.omega, tr.staleness_steps[1:])
    assert np.array_equal(tl.time - tl.t_read, tr.staleness_time[1:])
    # round numbers: the k-th upload of a client is its round k
    for i in range(sc.problem.n):
        assert np.array_equal(tl.round[tl.client == i], np.arange(np.sum(tl.client == i)))


def test_timeline_time_horizon() -> None:
    sc = scenario(CASES["arrival_think"], steps=None, time=40.0)
    tr = run(sc, 1)
    tl = timeline_arrays(sc, 1, 10**9)
    assert tl.time.size == tr.steps_done
    assert np.array_equal(tl.time, tr.time[1:])
    assert np.all(tl.time < 40.0)


def test_timeline_chunks_do_not_matter_and_memory_is_bounded() -> None:
    sc = scenario(CASES["exp"], steps=4000)
    whole = timeline_arrays(sc, 0, 4000, chunk=4000)
    tl = FedAsyncTimeline(sc, 0)
    parts = []
    for k in (1, 7, 100, 892, 3000):
        parts.append(tl.take(k))
        pending = int(tl.cnt.sum())
        # about two generations per client, not the run
        assert pending < 3 * tl.rounds * tl.e * sc.problem.n
        assert tl.cap <= 6 * tl.rounds * tl.e
    assert np.array_equal(np.concatenate([p.time for p in parts]), whole.time)
    assert np.array_equal(np.concatenate([p.omega for p in parts]), whole.omega)
    assert [p.step0 for p in parts] == [0, 1, 8, 108, 1000]
