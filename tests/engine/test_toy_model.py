"""EXTENDING's claim, checked: a new execution model is its home plus one registration line.

The home below is a whole execution model written in this test file -- a round-robin
server that hears client ``(t - 1) mod n`` at step ``t``, which read ``w^{t-1}`` (no
staleness; time = the step index) -- with its writer (no algebra: a
:class:`~fedsim.engine.steplog.TableLog`) and its memory estimate.  One
``register_model`` line adds it; an algorithm reusing FedAsync's rules names it (its
declaration plus one ``register_algorithm`` line).  Nothing in ``fedsim`` is touched:
``run``, ``run_batch`` (traces and records) and the memory budget then serve it, and its
iterates are [P] Algorithm 1 line 4 replayed by hand in exact arithmetic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from fractions import Fraction as Fr
from typing import Any

import numpy as np
import pytest

from fedsim.algorithms import get_algorithm, register_algorithm, unregister_algorithm
from fedsim.config import Scenario
from fedsim.config.budget import estimate_bytes, set_memory_budget
from fedsim.engine import run, run_batch
from fedsim.engine.dispatch import check_memory
from fedsim.engine.models import (
    ExecutionModel,
    Staleness,
    model_of,
    register_model,
    unregister_model,
)
from fedsim.engine.replay.table import EventTable
from fedsim.engine.steplog import TableLog
from fedsim.errors import ConfigError
from fedsim.trace import KINDS
from tests.engine.paths import model_path
from tests.engine.test_fidelity_audit import grad_step, two_clients

# --- the toy model's home ------------------------------------------------------------


def round_robin_tables(scenario: Scenario, problem: Any, replicates: Sequence[int]
                       ) -> list[EventTable]:
    """Step t (1-based): client ``(t - 1) mod n`` uploads the round it ran from
    ``w^{t-1}``; the same table for every replicate (nothing is random)."""
    n, T = problem.n, int(scenario.horizon.steps)
    Q = int(scenario.algorithm.get("Q"))
    out = []
    for _ in replicates:
        log = TableLog(T)
        for t in range(T):
            i = t % n
            log.upload(i)
            log.contribute(i, t, Q, 0)
            log.step(float(t + 1), KINDS.index("upload"), i, 0, 0.0, 1)
        table = log.table(n=n, sim_time=float(T), every=int(scenario.record.every),
                          staleness_bound=0.0)
        out.append(dataclasses.replace(table, concurrency_time=np.empty(0),
                                       concurrency_busy=np.empty(0)))
    return out


def round_robin_memory(scenario: Scenario, d: float) -> dict[str, float]:
    """A made-up part, to see the budget read the model's own estimate."""
    return {"round_robin": 8.0 * d}


def round_robin_staleness(scenario: Scenario) -> Staleness:
    """Every client reads the model of the step before its own: staleness 0."""
    return Staleness(0.0, "round robin: each update is computed from the newest model")


ROUND_ROBIN = ExecutionModel(key="round_robin", write=round_robin_tables,
                             memory=round_robin_memory, staleness=round_robin_staleness)


# --- the test ------------------------------------------------------------------------


@pytest.fixture()
def toy():
    register_model(ROUND_ROBIN)  # the one registration line of the model
    try:
        register_algorithm(dataclasses.replace(  # an algorithm reusing FedAsync's rules
            get_algorithm("fedasync"), name="rr_fedasync", runners={"physical": "round_robin"},
            mode_keys={}, timeless_modes=()))
        yield
    finally:
        unregister_algorithm("rr_fedasync")
        unregister_model("round_robin")


def _scenario(steps: int, dim: int = 1) -> Scenario:
    """Two clients; ``dim = 1`` for the hand case (its problem is given), ``dim = 2`` for a
    problem the config builds."""
    return Scenario.from_dict({
        "name": "toy-model", "seed": 5,
        "problem": {"kind": "quadratic", "n": 2, "dim": dim, "mu": 1.0, "L": 2.0,
                    "noise_sd": 0.0 if dim == 1 else 0.1, "seed": 0},
        "algorithm": {"name": "rr_fedasync", "Q": 2, "eta": 0.5, "beta": 0.5},
        "delays": {"compute": {"kind": "constant", "value": 1.0}},
        "horizon": {"steps": steps}, "record": {"metrics": ["f_gap"], "every": 1}})


def test_a_toy_model_is_its_home_plus_one_line(toy) -> None:
    sc = _scenario(6)
    # [P] Algorithm 1 line 4 along the round robin, by hand, on two 1-d quadratics:
    # w^t = w^{t-1} - beta (w^{t-1} - G_i(w^{t-1})), G_i the client's Q = 2 gradient steps
    w = [Fr(0)]
    for t in range(6):
        w.append(w[-1] - Fr(1, 2) * (w[-1] - grad_step(t % 2, w[-1], Fr(1, 2), 2)))
    hand = model_path(sc, two_clients())
    assert hand.final_w[0] == pytest.approx(float(w[-1]), abs=1e-15)
    assert hand.client.tolist() == [-1, 0, 1, 0, 1, 0, 1]
    assert hand.time.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # both doors serve it, the same bits
    sc = _scenario(20, dim=2)
    tr = run(sc, 3)
    traces = run_batch(sc, [0, 3])
    assert traces[1].equals(tr)
    rec = run_batch(sc, [0, 3], output="records")
    assert np.array_equal(rec.final_w[1], tr.final_w)
    assert np.array_equal(rec.runs[1].metrics["f_gap"], tr.metrics["f_gap"])


def test_the_budget_reads_the_toy_models_estimate(toy) -> None:
    sc = _scenario(6, dim=2)
    parts = estimate_bytes(sc, model_of(sc).memory)
    assert parts["round_robin"] == 8.0 * 2.0 and "window" not in parts
    assert check_memory(sc) == sum(parts.values())
    set_memory_budget(int(sum(parts.values())) - 1)
    try:
        with pytest.raises(ConfigError, match="over the budget"):
            run(sc, 0)
    finally:
        set_memory_budget(None)


def test_what_reads_a_model_asks_its_declaration(toy) -> None:
    """The provable staleness and the per-client phases come from the model's own
    declaration (``ExecutionModel.staleness`` / ``rounds``), not from its name."""
    from fedsim.plot import client_timeline

    sc = _scenario(6, dim=2)
    assert model_of(sc).staleness(sc).bound == 0.0
    with pytest.raises(ConfigError, match="no phases in simulated time"):
        client_timeline(sc, t_end=3.0)
    with pytest.raises(ConfigError, match="rounds"):
        ExecutionModel(key="bad", write=round_robin_tables, rounds="sometimes")
