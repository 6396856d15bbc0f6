"""The per-client phases a home's reference writer records (fedsim.engine.timeline_phases):
hand-computed timelines, the writer's table unchanged by the record, and the phases'
agreement with the table (arrival order, read versions, step times)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from phases_cases import (
    FEDASYNC,
    FEDAVG,
    assert_agrees_with_table,
    assert_rounds_chain,
    assert_tables_equal,
    const,
    scenario,
    table_trace,
)

from fedsim.algorithms import get_algorithm
from fedsim.config import HorizonConfig
from fedsim.engine import problem_for, timeline_phases
from fedsim.engine.models.area.simpy_writer import area_table
from fedsim.engine.models.asypfl import asypfl_table
from fedsim.engine.models.physical.simpy_writer import AsyncRun
from fedsim.engine.models.sync.rounds import rounds_timeline
from fedsim.engine.models.sync.simpy_writer import sync_timeline
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup
from fedsim.errors import ConfigError
from fedsim.rng import Streams

NAN = math.nan
#: client 0: download 1, compute 2, upload 1, no think; client 1: 0.5, 1, 1, think 0.5
HAND_DELAYS = {"download": const(1.0), "compute": const(2.0), "upload": const(1.0),
               "override": [{"clients": [1], "download": const(0.5), "compute": const(1.0),
                             "think": const(0.5)}]}


def _rows(ph) -> list[tuple]:
    return [tuple(x.item() for x in r) for r in zip(
        ph.client, ph.round, ph.start, ph.download_end, ph.compute_end, ph.upload_end,
        ph.think_end, ph.upload, ph.read, strict=True)]


def _same(rows, want) -> None:
    assert len(rows) == len(want)
    for r, w in zip(rows, want, strict=True):
        assert r[:6] == w[:6] and r[7:] == w[7:] and (r[6] == w[6] or (r[6] != r[6]
                                                                      and w[6] != w[6])), r


def test_fedasync_by_hand():
    """Client 1 uploads at 2.5 (step 1, read 0), thinks to 3, reads 1, uploads at 5.5
    (step 3); client 0 uploads at 4 (step 2, read 0), reads 2 and uploads at 8 (step 4,
    the horizon); client 1's third round (from 6, read 3) is in flight at the stop."""
    sc = scenario(algorithm=FEDASYNC, delays=HAND_DELAYS)
    ph = timeline_phases(sc, 0)
    _same(_rows(ph), [
        (0, 0, 0.0, 1.0, 3.0, 4.0, NAN, 1, 0),
        (1, 0, 0.0, 0.5, 1.5, 2.5, 3.0, 0, 0),
        (1, 1, 3.0, 3.5, 4.5, 5.5, 6.0, 2, 1),
        (0, 1, 4.0, 5.0, 7.0, 8.0, NAN, 3, 2),
        (1, 2, 6.0, 6.5, 7.5, 8.5, NAN, -1, -1),
    ])
    tb = ph.table
    assert tb.time.tolist() == [2.5, 4.0, 5.5, 8.0]
    assert tb.client.tolist() == [1, 0, 1, 0]
    assert tb.c_read.tolist() == [0, 0, 1, 2]
    assert tb.staleness_steps.tolist() == [0, 1, 1, 1]
    assert not ph.sync and ph.n == 2


def test_fedavg_by_hand():
    """Both clients start each round when the last ended: round 0 ends at 4 (client 1
    arrives first, at 2.5), round 1 at 8 (client 1 at 6.5)."""
    delays = dict(HAND_DELAYS, override=[{k: v for k, v in HAND_DELAYS["override"][0].items()
                                          if k != "think"}])
    sc = scenario(algorithm=FEDAVG, delays=delays, steps=2)
    ph = timeline_phases(sc, 0)
    _same(_rows(ph), [
        (0, 0, 0.0, 1.0, 3.0, 4.0, NAN, 1, 0),
        (1, 0, 0.0, 0.5, 1.5, 2.5, NAN, 0, 0),
        (0, 1, 4.0, 5.0, 7.0, 8.0, NAN, 3, 1),
        (1, 1, 4.0, 4.5, 5.5, 6.5, NAN, 2, 1),
    ])
    assert ph.sync and ph.table.time.tolist() == [4.0, 8.0]
    assert ph.table.c_read.tolist() == [0, 0, 1, 1]


def _async_table(sc, r: int) -> EventTable:
    spec = get_algorithm(sc.algorithm.name)
    return AsyncRun(sc, problem_for(sc), Streams(sc.seed, r), False, spec).table()


_LAWS = {
    "exp": lambda m: {"kind": "exponential", "rate": 1.0 / m},
    "uniform": lambda m: {"kind": "uniform", "low": 0.5 * m, "high": 1.5 * m},
    "const": lambda m: const(m),
}


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), law=st.sampled_from(sorted(_LAWS)),
       read_at=st.sampled_from(["request", "arrival"]), think=st.booleans(),
       trigger=st.sampled_from(["every_upload", "every_k", "poisson"]),
       per_step=st.booleans(), horizon=st.sampled_from(["steps", "time", "both"]),
       r=st.integers(0, 3))
def test_physical_phases_agree_with_the_table(n, law, read_at, think, trigger, per_step,
                                              horizon, r):
    """The asynchronous physical model on random delays, triggers and horizons: the table
    written with the record equals the one written without it, bit for bit, and the
    phases chain and agree with it."""
    f = _LAWS[law]
    delays = {"download": f(0.2), "compute": f(1.0), "upload": f(0.3), "read_at": read_at,
              "compute_per": "step" if per_step else "round"}
    if think:
        delays["think"] = f(0.4)
    algorithm = dict(FEDASYNC, Q=2)
    trig = {"kind": trigger}
    if trigger != "every_upload":  # FedBuff: a buffer of 2, or a Poisson timer
        algorithm = {"name": "fedbuff", "client_rule": "sgd", "Q": 2, "eta": 0.05,
                     "buffer": 2, "server_lr": 1.0}
        trig.update({"count": 2} if trigger == "every_k" else {"rate": 2.0})
    steps = None if horizon == "time" else 12
    time = None if horizon == "steps" else 6.0
    sc = scenario(algorithm=algorithm, delays=delays, n=n, steps=steps, time=time,
                  trigger=trig)
    ph = timeline_phases(sc, r)
    assert_tables_equal(ph.table, _async_table(sc, r))
    assert_rounds_chain(ph)
    assert_agrees_with_table(ph, count={"every_upload": 1, "every_k": 2}.get(trigger))
    # an oracle: each client's rounds drawn again from its delays stream, the times added
    # as a client process adds them
    samplers = RunSetup(sc, problem_for(sc), Streams(sc.seed, r), False,
                        table=True).make_samplers(lean=True)
    for j in range(ph.client.size):
        dl, cp, ul, th = samplers[int(ph.client[j])].next_round()
        t = ph.start[j] + dl
        assert ph.download_end[j] == t
        for c in cp:
            t = t + c
        assert (ph.compute_end[j], ph.upload_end[j]) == (t, t + ul)
        if np.isfinite(ph.think_end[j]):
            assert ph.think_end[j] == ph.upload_end[j] + th


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 5), part=st.sampled_from([0.2, 0.5, 1.0]),
       law=st.sampled_from(sorted(_LAWS)), time=st.sampled_from([None, 7.0]),
       r=st.integers(0, 3))
def test_sync_phases_agree_with_the_table(n, part, law, time, r):
    """Synchronous rounds: the SimPy writer's table is the same with the record and equals
    the loop's (the one runs take); each round starts at the last one's step, its rows are
    the round's contributions, and the step is at its slowest arrival."""
    f = _LAWS[law]
    sc = scenario(algorithm=dict(FEDAVG, participation=part), n=n, steps=6, time=time,
                  delays={"download": f(0.2), "compute": f(1.0), "upload": f(0.3)})
    ph = timeline_phases(sc, r)
    streams = Streams(sc.seed, r)
    assert_tables_equal(ph.table, EventTable(**sync_timeline(sc, n, streams)))
    assert_tables_equal(ph.table, EventTable(**rounds_timeline(sc, n, Streams(sc.seed, r))))
    tb = ph.table
    up = ph.arrived()
    assert np.array_equal(ph.client[up], tb.u_client)
    starts = np.concatenate(([0.0], tb.time))
    for k in range(int(ph.round.max()) + 1):
        rows = np.flatnonzero(ph.round == k)
        assert np.all(ph.start[rows] == starts[k])
        if k < tb.steps_done:
            assert ph.client[rows].tolist() == tb.c_client[tb.ptr[k]:tb.ptr[k + 1]].tolist()
            assert np.all(ph.read[rows] == k)
            assert tb.time[k] == ph.upload_end[rows].max()


def test_area_and_asypfl_phases_agree_with_their_tables():
    """AREA (Algorithm 2 on physical delays, a count trigger; the iterate model) and AsyPFL
    record their phases from their SimPy writers; the tables are the writers' own."""
    d = {"download": {"kind": "exponential", "rate": 5.0},
         "compute": {"kind": "exponential", "rate": 1.0},
         "upload": {"kind": "exponential", "rate": 5.0}}
    area = {"name": "area", "client_rule": "area", "M": 2,
            "alpha": {"kind": "constant", "value": 0.1}}
    for model, trig in (("algorithm", {"kind": "every_k", "count": 2}),
                        ("iterate_model", {"kind": "poisson", "rate": 1.0})):
        delays = d if model == "algorithm" else {"compute": d["compute"]}
        sc = scenario(algorithm=dict(area, model=model), delays=delays, n=3, steps=30,
                      trigger=trig)
        ph = timeline_phases(sc, 1)
        assert_tables_equal(ph.table, area_table(sc, problem_for(sc), Streams(sc.seed, 1)))
        assert_rounds_chain(ph)
        up = ph.arrived()
        assert np.array_equal(ph.client[up], ph.table.u_client)
        client_steps = np.flatnonzero(ph.table.kind == ph.table.kind[ph.table.client >= 0][0])
        assert np.array_equal(ph.table.time[client_steps], ph.upload_end[up])
        assert np.array_equal(ph.read[up], ph.table.c_read)
    sc = scenario(algorithm={"name": "asypfl", "client_rule": "asypfl", "E": 2, "eta": 0.05,
                             "delta": 0.1, "gamma": 0.001, "lam": 1.0},
                  delays=dict(d, compute_per="step"), n=3, steps=20)
    ph = timeline_phases(sc, 0)
    tb, _ = asypfl_table(sc, problem_for(sc), Streams(sc.seed, 0))
    assert_tables_equal(ph.table, tb)
    assert_rounds_chain(ph)
    assert_agrees_with_table(ph, count=1)


def test_a_model_without_phases_is_refused():
    """The window model's clients have no phases in simulated time: a one-line refusal."""
    sc = scenario(algorithm=dict(FEDASYNC, model="window", tau=2,
                                 delay_pmf=[0.5, 0.25, 0.25]), delays={}, n=3)
    with pytest.raises(ConfigError, match="no timeline for the 'window' execution model"):
        timeline_phases(sc, 0)


def test_matches_flags_another_run():
    """Phases.matches: the trace of the phases' table matches, also stopped early by a
    divergence; another replicate's, one with a step time moved by one ulp, or one longer
    than the table, does not (negative controls; the run's own trace:
    tests/plot/test_plot_run.py)."""
    sc = scenario(algorithm=FEDASYNC, delays={"download": {"kind": "exponential",
                                                           "rate": 4.0}}, n=3, steps=15)
    ph = timeline_phases(sc, 2)
    tr = table_trace(ph.table)
    assert ph.matches(tr) and ph.matches(table_trace(ph.table, 7))
    assert not ph.matches(table_trace(timeline_phases(sc, 3).table))
    t = tr.time.copy()
    t[5] = np.nextafter(t[5], np.inf)
    assert not ph.matches(dataclasses.replace(tr, time=t))
    longer = timeline_phases(dataclasses.replace(sc, horizon=HorizonConfig(steps=16)), 2)
    assert not ph.matches(table_trace(longer.table))
