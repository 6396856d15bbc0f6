"""The compiled event-loop timeline (replay.event_timeline) gives the rows of the
vectorised merge (models.physical.merge), which equals the SimPy engine's event sequence (its own
tests), bit for bit, for every Constant/Exponential case, whatever the chunks."""

from __future__ import annotations

import numpy as np
import pytest
from test_replay_timeline import CASES, scenario

from fedsim.engine import run
from fedsim.engine.models.physical.event_loop import EventTimeline, supports_plan
from fedsim.engine.models.physical.merge import FedAsyncTimeline
from fedsim.rng.delays import DelayPlan

FIELDS = ("time", "client", "omega", "t_read", "round", "b_time", "b_delta", "b_gate",
          "b_before")
SUPPORTED = sorted(k for k in CASES if supports_plan(DelayPlan(scenario(CASES[k]))))


def test_only_constant_and_exponential_plans_are_supported():
    assert set(CASES) - set(SUPPORTED) == {"uniform_think", "empirical_two_random"}


def _cat(parts, f):
    return np.concatenate([getattr(p, f) for p in parts])


@pytest.mark.parametrize("horizon", [{"steps": 1500}, {"steps": None, "time": 40.0}])
@pytest.mark.parametrize("name", SUPPORTED)
def test_event_loop_rows_equal_the_vectorised_merge(name, horizon):
    sc = scenario(CASES[name], **horizon)
    a, b = FedAsyncTimeline(sc, 2), EventTimeline(sc, 2)
    pa, pb = [], []
    for k in (1, 7, 300, 1192, 10**5):
        pa.append(a.take(k))
        pb.append(b.take(k))
        assert pb[-1].step0 == pa[-1].step0
        lo = b.oldest_read()  # a lower bound on every later omega
        later = b.__class__(sc, 2)
        later.take(pb[-1].step0 + pb[-1].time.size)
        nxt = later.take(500)
        assert nxt.omega.size == 0 or lo <= nxt.omega.min()
    for f in FIELDS:
        assert np.array_equal(_cat(pa, f), _cat(pb, f)), f
    if "time" in horizon:
        assert b.done and np.all(_cat(pb, "time") < 40.0)


def test_event_loop_equals_the_engine_with_ties():
    sc = scenario(CASES["constant_ties_think"], steps=800)
    tr = run(sc, 1)
    tl = EventTimeline(sc, 1).take(tr.steps_done)
    assert np.array_equal(tl.time, tr.time[1:])
    assert np.array_equal(tl.client, tr.client[1:])
    assert np.array_equal(np.arange(tr.steps_done) - tl.omega, tr.staleness_steps[1:])
