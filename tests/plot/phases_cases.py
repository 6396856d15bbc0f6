"""Scenarios and checks shared by the timeline tests: tiny runs whose phases the homes'
reference writers record (:func:`fedsim.engine.timeline_phases`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.table import EventTable


def const(v: float) -> dict:
    return {"kind": "constant", "value": float(v)}


def scenario(*, algorithm: dict, delays: dict, n: int = 2, steps: int | None = 4,
             time: float | None = None, trigger: dict | None = None, seed: int = 3,
             problem: dict | None = None) -> Scenario:
    """A quadratic scenario of ``n`` clients (dimension 2)."""
    horizon = {} if steps is None else {"steps": steps}
    if time is not None:
        horizon["time"] = time
    d = {"name": "timeline", "seed": seed,
         "problem": problem or {"kind": "quadratic", "n": n, "dim": 2, "mu": 0.5, "L": 1.0,
                                "seed": 0, "noise_sd": 0.1},
         "algorithm": algorithm, "delays": delays, "horizon": horizon,
         "record": {"every": 1, "metrics": ["grad_sq"]}}
    if trigger is not None:
        d["trigger"] = trigger
    return Scenario.from_dict(d)


FEDASYNC = {"name": "fedasync", "client_rule": "sgd", "Q": 1, "eta": 0.05, "beta": 1.0}
FEDAVG = {"name": "fedavg", "client_rule": "sgd", "Q": 1, "eta": 0.05,
          "participation": 1.0}


def assert_tables_equal(a: EventTable, b: EventTable) -> None:
    """Every column, dtype and scalar of two tables equal, bit for bit."""
    for f in dataclasses.fields(EventTable):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        elif f.name == "info":
            assert x.keys() == y.keys(), f.name
            for k in x:
                assert np.array_equal(np.asarray(x[k]), np.asarray(y[k])), (f.name, k)
        else:
            assert x == y or (x != x and y != y), f.name


def assert_rounds_chain(ph) -> None:
    """Each row's phases are ordered, and each client's next round starts where its last
    ended (its think pause's end, else its upload's arrival), exactly."""
    assert np.all(ph.start <= ph.download_end)
    assert np.all(ph.download_end <= ph.compute_end)
    assert np.all(ph.compute_end <= ph.upload_end)
    thought = np.isfinite(ph.think_end)
    assert np.all(ph.think_end[thought] > ph.upload_end[thought])
    for i in range(ph.n):
        rows = np.flatnonzero(ph.client == i)
        assert np.array_equal(ph.round[rows], np.arange(rows.size))
        ends = np.where(np.isfinite(ph.think_end[rows]), ph.think_end[rows],
                        ph.upload_end[rows])
        assert np.array_equal(ph.start[rows[1:]], ends[:-1])
        if rows.size:
            assert ph.start[rows[0]] == 0.0


def assert_agrees_with_table(ph, *, count: int | None) -> None:
    """The phases agree with the writer's table: the arrival order is the table's upload
    order, the uploads consumed (arrival order) carry the table's read versions, and a
    count trigger's step happens at its last upload's arrival (a timer's after it)."""
    tb = ph.table
    up = ph.arrived()
    assert np.array_equal(ph.upload[up], np.arange(up.size))
    assert np.array_equal(ph.client[up], tb.u_client)
    assert np.all(np.diff(ph.upload_end[up]) >= 0.0)
    c = tb.c_client.size
    assert np.array_equal(ph.client[up[:c]], tb.c_client)
    assert np.array_equal(ph.read[up[:c]], tb.c_read)
    last = ph.upload_end[up[tb.ptr[1:] - 1]]
    if count is None:
        assert np.all(tb.time >= last)
    else:
        assert np.array_equal(tb.time, last)
    # rounds that never arrived were still in flight when the run stopped
    assert np.all(ph.upload_end[ph.upload < 0] >= tb.sim_time)
    assert np.all(ph.read[ph.upload < 0] == -1)


def table_trace(table: EventTable, steps: int | None = None):
    """The Trace a run of ``table`` makes (its timeline columns; no metric replayed),
    stopped at step ``steps`` as a divergence would stop it."""
    t = table.steps_done if steps is None else int(steps)
    ms = table.metric_steps[table.metric_steps <= t]
    return table.trace(metric_steps=ms, metrics={"grad_sq": np.ones(ms.size)},
                       final_w=np.zeros(2), diverged_step=steps)
