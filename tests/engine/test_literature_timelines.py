"""The recorded-schedule and uniform-assignment timeline writers (Koloskova et al. 2022,
Example 3 and Algorithm 2): hand-computed tables, their errors, and end-to-end runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.engine.models.recorded import read_schedule, recorded_table, schedule_clients
from fedsim.engine.models.uniform_assign import uniform_assign_table
from fedsim.errors import ConfigError
from fedsim.rng import Streams


def _scenario(model: str, steps: int, n: int = 3, **alg) -> Scenario:
    return Scenario.from_dict({
        "seed": 5,
        "problem": {"kind": "quadratic", "n": n, "dim": 2, "mu": 0.5, "L": 1.0,
                    "noise": "additive", "noise_sd": 0.1, "seed": 1},
        "algorithm": {"name": "async_sgd", "model": model, "Q": 1, "eta": 0.1, "tau_C": n,
                      **alg},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "trigger": {"kind": "every_upload"},
        "horizon": {"steps": steps},
        "record": {"every": 1, "metrics": ["f_gap"]},
    })


def test_schedule_clients_hand_case():
    # 2 workers: steps read versions 0, 0, 1, 3, 2 (tau = 0, 1, 1, 0, 2)
    # step 1 -> worker 0, step 2 -> worker 1, step 3 reads v1 (step 1's) -> worker 0,
    # step 4 reads v3 (step 3's) -> worker 0, step 5 reads v2 (step 2's) -> worker 1
    clients, reads = schedule_clients(np.array([0, 1, 1, 0, 2]), 2)
    assert reads.tolist() == [0, 0, 1, 3, 2]
    assert clients.tolist() == [0, 1, 0, 0, 1]


@pytest.mark.parametrize("tau, n, why", [([0, 2], 2, "exceeds"), ([0, 1, 2], 2, "workers"),
                                         ([0, 0, 1], 3, "second time")])
def test_inconsistent_schedules_are_config_errors(tau, n, why):
    with pytest.raises(ConfigError, match=why):
        schedule_clients(np.array(tau), n)


def test_recorded_table_and_run(tmp_path):
    path = tmp_path / "tau.csv"
    path.write_text("# staleness per step\n0\n1\n1\n\n0\n2\n")
    assert read_schedule(path).tolist() == [0, 1, 1, 0, 2]
    sc = _scenario("recorded", 5, n=2, schedule=str(path), tau_C=2)
    tab = recorded_table(sc, type("P", (), {"n": 2})())
    assert tab.c_stale.tolist() == [0, 1, 1, 0, 2] and tab.c_client.tolist() == [0, 1, 0, 0, 1]
    assert tab.staleness_bound == 2.0
    tr = run(sc)
    assert tr.steps_done == 5 and not tr.diverged
    with pytest.raises(ConfigError, match="horizon.steps"):
        run(_scenario("recorded", 6, n=2, schedule=str(path), tau_C=2))
    bad = tmp_path / "bad.csv"
    bad.write_text("0\n-1\n")
    with pytest.raises(ConfigError, match="non-negative integer"):
        read_schedule(bad)


def test_uniform_assign_concurrency_and_staleness():
    sc = _scenario("uniform_assign", 200, n=5, tau_C=3)
    tab = uniform_assign_table(sc, type("P", (), {"n": 5})(), Streams(sc.seed, 0))
    assert tab.steps_done == 200 and math.isinf(tab.staleness_bound)
    # in flight after step t: tau_C jobs; each step consumes one read made earlier
    t = np.arange(1, 201)
    assert np.all(tab.c_read <= t - 1) and np.all(tab.c_stale == t - 1 - tab.c_read)
    # every version 0..199 is assigned once, 3 of them to version 0: reads are a permutation
    # of the assignments minus the tau_C still in flight
    counts = np.bincount(tab.c_read, minlength=200)
    assert counts[0] <= 3 and np.all(counts[1:] <= 1)
    assert np.all(np.diff(tab.time) >= 0)
    tr = run(sc)
    assert tr.steps_done == 200 and not tr.diverged
    # same seed, same table; the writer is deterministic
    tab2 = uniform_assign_table(sc, type("P", (), {"n": 5})(), Streams(sc.seed, 0))
    assert np.array_equal(tab.c_read, tab2.c_read) and np.array_equal(tab.time, tab2.time)


def test_uniform_assign_rejects_tau_c_above_n():
    with pytest.raises(ConfigError, match="tau_C"):
        run(_scenario("uniform_assign", 10, n=3, tau_C=4))
